//! What a sale's or a purchase's PDF prints, built from its recorded event and the organization's
//! fiscal profile: the one place the commercial read models turn into [`VoucherDocument`]s.

use super::{Authorization, DocumentLine, ExchangeRate, Party, QrData, VatLine, VoucherDocument};
use events::catalogue::{FiscalStatus, PurchaseRecorded, SaleRecorded};
use events::domain::{Quantity, VatRate};
use sqlx::PgConnection;
use uuid::Uuid;

/// A name and three optional texts (tax id, category, address), as rows give them.
pub type PartyRow = (String, Option<String>, Option<String>, Option<String>);

/// The organization's row as its vouchers print it.
#[derive(sqlx::FromRow)]
struct IssuerRow {
    name: String,
    legal_name: Option<String>,
    tax_id: Option<String>,
    tax_category: Option<String>,
    commercial_address: Option<String>,
    gross_income_number: Option<String>,
    activity_start: Option<time::Date>,
}

/// The organization as vouchers print it: name (legal name when set), CUIT, tax category, commercial
/// address, gross-income tax number and activity start date.
pub async fn issuer(conn: &mut PgConnection, org_id: Uuid) -> Result<Party, sqlx::Error> {
    let row: Option<IssuerRow> = sqlx::query_as(
        "select name, legal_name, tax_id, tax_category, commercial_address, gross_income_number, activity_start
         from organizations where id = $1",
    )
    .bind(org_id)
    .fetch_optional(conn)
    .await?;
    Ok(row.map_or_else(Party::default, |row| Party {
        name: row.legal_name.unwrap_or(row.name),
        tax_id: row.tax_id,
        tax_category: row.tax_category,
        address: row.commercial_address,
        gross_income_number: row.gross_income_number,
        activity_start: row.activity_start,
    }))
}

/// A rate as the voucher prints it: `21%`, `10,5%`.
fn vat_label(rate: VatRate) -> String {
    format!("{}%", rate.percentage().to_string().replace('.', ","))
}

fn title(kind: &str) -> &'static str {
    match kind {
        "credit_note" => "NOTA DE CRÉDITO",
        "debit_note" => "NOTA DE DÉBITO",
        "quote" => "PRESUPUESTO",
        "cash_sale_note" => "NOTA DE VENTA AL CONTADO",
        _ => "FACTURA",
    }
}

fn quantity_text(q: Quantity) -> String {
    q.to_string()
}

/// The PDF of a sale once it carries a number (issued by the authority, or numbered by the service);
/// none before.
/// `corrected` is the voucher a note corrects, as its sale reads (document kind and formatted number).
pub fn sale_document(
    sale: &SaleRecorded,
    issuer: &Party,
    corrected: Option<&(String, Option<String>)>,
) -> Option<VoucherDocument> {
    let number = sale.number?;
    if !matches!(sale.fiscal.status, FiscalStatus::Issued | FiscalStatus::Internal) {
        return None;
    }
    let lines = sale
        .lines
        .iter()
        .map(|l| DocumentLine {
            description: l.name.clone(),
            quantity: quantity_text(l.quantity),
            unit_price_cents: l.unit_price,
            discount: l.discount_hundredths.filter(|p| !p.is_zero()).map(|p| {
                let (whole, fraction) = (p.hundredths() / 100, p.hundredths() % 100);
                if fraction == 0 { format!("{whole}%") } else { format!("{whole},{fraction:02}%") }
            }),
            vat_label: Some(vat_label(l.tax_rate_id)),
            amount_cents: l.total,
        })
        .collect();
    // A vouchers show VAT by rate, and so do M vouchers (A's, issued subject to withholding); the rest
    // show their total.
    let vat_breakdown = if matches!(sale.letter.as_deref(), Some("A" | "M")) {
        sale.vat
            .iter()
            .map(|v| VatLine {
                label: format!("IVA {}", vat_label(v.code)),
                base_cents: v.base,
                amount_cents: v.amount,
            })
            .collect()
    } else {
        Vec::new()
    };
    let cuit: Option<i64> = issuer.tax_id.as_deref().and_then(|t| t.parse().ok());
    let authorization = match (&sale.fiscal.authorization, cuit) {
        (Some(auth), Some(cuit)) => {
            let (doc_type, doc_number) = match (sale.customer.tax_id_type.as_deref(), sale.customer.tax_id.as_deref()) {
                (Some("CUIL/CUIT"), Some(id)) => (Some(80), id.parse().ok()),
                (Some("DNI"), Some(id)) => (Some(96), id.parse().ok()),
                _ => (None, None),
            };
            Some(Authorization {
                cae: auth.cae.clone(),
                cae_due: auth.cae_due,
                qr: QrData {
                    ver: 1,
                    fecha: sale.invoice_date,
                    cuit,
                    pto_vta: sale.point_of_sale_number,
                    tipo_cmp: sale.voucher_type,
                    nro_cmp: number,
                    importe_cents: sale.total.get(),
                    moneda: "PES".into(),
                    ctz: ExchangeRate::ONE,
                    tipo_doc_rec: doc_type,
                    nro_doc_rec: doc_number,
                    tipo_cod_aut: "E".into(),
                    cod_aut: auth.cae.parse().unwrap_or(0),
                },
            })
        }
        _ => None,
    };
    // The receiver's address as one line: street (and apartment), city, province.
    let customer = &sale.customer;
    let street = match (&customer.address, &customer.apartment) {
        (Some(street), Some(apartment)) => Some(format!("{street} {apartment}")),
        (street, _) => street.clone(),
    };
    let parts: Vec<String> = [street, customer.city.clone(), customer.province.clone()].into_iter().flatten().collect();
    let receiver = Party {
        name: customer.name.clone(),
        tax_id: customer.tax_id.clone(),
        tax_category: customer.tax_category.clone(),
        address: (!parts.is_empty()).then(|| parts.join(", ")),
        ..Party::default()
    };
    Some(VoucherDocument {
        title: title(&sale.document_kind).to_owned(),
        letter: sale.letter.clone(),
        voucher_code: sale.letter.as_ref().map(|_| sale.voucher_type),
        point_of_sale: sale.point_of_sale_number,
        number,
        date: sale.invoice_date,
        issuer: issuer.clone(),
        receiver,
        lines,
        vat_breakdown,
        subtotal_cents: sale.subtotal,
        tax_cents: sale.tax_amount,
        total_cents: sale.total,
        currency: sale.currency.clone(),
        exchange_rate: None,
        authorization,
        notes: sale.notes.clone(),
        // A note names the voucher it corrects as printed (kind, letter, point of sale and number).
        reference: sale.associated_sale_id.map(|id| match corrected {
            Some((kind, Some(number))) => format!("Corrige {} {number}", title(kind)),
            _ => format!("Corrige la venta {id}"),
        }),
    })
}

/// The supplier's point of sale and voucher number, from its invoice number as written
/// (`0001-00001234`, or the number alone): each zero where the text does not give it, and the
/// document's reference line shows the number as written.
fn supplier_number(text: &str) -> (i32, i64) {
    fn digits<T: std::str::FromStr + PartialOrd>(text: &str, most: T) -> Option<T> {
        let text = text.trim();
        let all_digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        all_digits.then(|| text.parse().ok()).flatten().filter(|n| *n <= most)
    }
    let mut parts = text.rsplit('-');
    let Some(number) = parts.next().and_then(|n| digits(n, 99_999_999_i64)) else { return (0, 0) };
    (parts.next().and_then(|p| digits(p, 99_999_i32)).unwrap_or(0), number)
}

/// The PDF of a purchase: the supplier's invoice as recorded (the supplier issued it; the
/// organization received it).
pub fn purchase_document(
    purchase: &PurchaseRecorded,
    supplier: Party,
    organization: Party,
    names: &dyn Fn(Uuid) -> String,
) -> Option<VoucherDocument> {
    let (point_of_sale, number) = supplier_number(&purchase.supplier_invoice_number);
    let lines = purchase
        .lines
        .iter()
        .map(|l| DocumentLine {
            description: names(l.variant_id),
            quantity: quantity_text(l.quantity),
            unit_price_cents: l.unit_cost,
            discount: None,
            vat_label: Some(vat_label(l.tax_rate_id)),
            amount_cents: l.total,
        })
        .collect();
    let mut vat: Vec<VatLine> = Vec::new();
    for line in &purchase.lines {
        let label = format!("IVA {}", vat_label(line.tax_rate_id));
        match vat.iter_mut().find(|v| v.label == label) {
            Some(v) => {
                // Within the purchase's subtotal and tax, which are in range.
                v.base_cents = v.base_cents.checked_add(line.net)?;
                v.amount_cents = v.amount_cents.checked_add(line.vat)?;
            }
            None => vat.push(VatLine { label, base_cents: line.net, amount_cents: line.vat }),
        }
    }
    Some(VoucherDocument {
        title: "COMPRA".into(),
        letter: None,
        voucher_code: Some(purchase.voucher_type),
        point_of_sale,
        number,
        date: purchase.invoice_date,
        issuer: supplier,
        receiver: organization,
        lines,
        vat_breakdown: vat,
        subtotal_cents: purchase.amounts.subtotal,
        tax_cents: purchase.amounts.tax_amount,
        total_cents: purchase.amounts.total,
        currency: purchase.currency.clone(),
        exchange_rate: (!purchase.exchange_rate.is_one()).then(|| purchase.exchange_rate.to_string()),
        authorization: None,
        notes: purchase.notes.clone(),
        reference: Some(format!("Factura del proveedor {}", purchase.supplier_invoice_number)),
    })
}

#[cfg(test)]
mod tests {
    use super::{sale_document, supplier_number};
    use events::catalogue::{
        FiscalStatus, SaleAuthorization, SaleCustomer, SaleFiscal, SaleLine, SaleRecorded, SaleVat,
    };
    use events::domain::{Cents, Quantity, VatRate};
    use time::macros::date;
    use uuid::Uuid;

    /// An issued invoice of `voucher_type` and `letter`: one line of 10.000,00 net at 21%.
    fn invoice(voucher_type: i32, letter: &str) -> SaleRecorded {
        let line = SaleLine {
            id: Uuid::nil(),
            variant_id: None,
            name: "Heladera".into(),
            sku: None,
            quantity: Quantity::ONE,
            unit_price: Cents::of(1_000_000),
            unit_cost: None,
            tax_rate_id: VatRate::GENERAL,
            discount_hundredths: None,
            warehouse_id: None,
            amount: Cents::of(1_000_000),
            discount: Cents::ZERO,
            global_discount: Cents::ZERO,
            net: Cents::of(1_000_000),
            vat: Cents::of(210_000),
            total: Cents::of(1_210_000),
            order_line_id: None,
        };
        let authorization = SaleAuthorization {
            number: 42,
            cae: "74123456789012".into(),
            cae_due: date!(2026 - 08 - 30),
            observations: vec![],
        };
        SaleRecorded {
            contract: "2026-08-20".into(),
            voucher_type,
            document_kind: "invoice".into(),
            letter: Some(letter.into()),
            point_of_sale_id: Uuid::nil(),
            point_of_sale_number: 1,
            number: Some(42),
            invoice_date: date!(2026 - 08 - 20),
            due_date: None,
            service_from: None,
            service_to: None,
            concept: 1,
            currency: "PES".into(),
            customer: SaleCustomer {
                name: "Ñandú S.A.".into(),
                tax_id: Some("20055361682".into()),
                tax_id_type: Some("CUIL/CUIT".into()),
                tax_category: Some("Responsable Inscripto".into()),
                ..SaleCustomer::default()
            },
            prices_include_tax: false,
            lines: vec![line],
            discount: None,
            exempt: Cents::ZERO,
            non_taxed: Cents::ZERO,
            subtotal: Cents::of(1_000_000),
            tax_amount: Cents::of(210_000),
            discount_amount: Cents::ZERO,
            total: Cents::of(1_210_000),
            vat: vec![SaleVat { code: VatRate::GENERAL, base: Cents::of(1_000_000), amount: Cents::of(210_000) }],
            payments: vec![],
            balance: Cents::of(1_210_000),
            notes: None,
            fiscal_notes: None,
            integration_source: None,
            integration_id: None,
            associated_sale_id: None,
            changes: vec![],
            order_id: None,
            fiscal: SaleFiscal {
                status: FiscalStatus::Issued,
                authorization: Some(authorization),
                unconfirmed_number: None,
                rejection: vec![],
            },
        }
    }

    #[test]
    fn a_and_m_vouchers_show_vat_by_rate_and_b_vouchers_their_total() {
        let issuer = super::Party { name: "Emisor".into(), tax_id: Some("20267565393".into()), ..Default::default() };
        let breakdown = |sale: &SaleRecorded| {
            let document = sale_document(sale, &issuer, None).expect("an issued voucher prints");
            document.vat_breakdown.iter().map(|v| (v.label.clone(), v.base_cents, v.amount_cents)).collect::<Vec<_>>()
        };
        let by_rate = vec![("IVA 21%".to_owned(), Cents::of(1_000_000), Cents::of(210_000))];
        assert_eq!(breakdown(&invoice(1, "A")), by_rate);
        assert_eq!(breakdown(&invoice(51, "M")), by_rate, "M is A issued subject to withholding");
        assert_eq!(breakdown(&invoice(6, "B")), vec![]);
    }

    #[test]
    fn a_supplier_number_gives_its_point_of_sale_and_number_where_written_so() {
        assert_eq!(supplier_number("0001-00001234"), (1, 1_234));
        assert_eq!(supplier_number("00012 - 00001234"), (12, 1_234));
        assert_eq!(supplier_number("1234"), (0, 1_234));
        assert_eq!(supplier_number("B-0001"), (0, 1), "a letter is no point of sale");
        assert_eq!(supplier_number("123456-1"), (0, 1), "a point of sale has at most five digits");
        assert_eq!(supplier_number("0001-ABC"), (0, 0));
        assert_eq!(supplier_number("1-123456789"), (0, 0), "a number has at most eight digits");
        assert_eq!(supplier_number("0001-+12"), (0, 0));
    }
}
