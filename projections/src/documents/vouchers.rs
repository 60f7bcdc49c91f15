//! What a sale's or a purchase's PDF prints, built from its recorded event and the organization's
//! fiscal profile: the one place the commercial read models turn into [`VoucherDocument`]s.

use super::{Authorization, DocumentLine, ExchangeRate, Party, QrData, VatLine, VoucherDocument};
use events::catalogue::{FiscalStatus, PurchaseRecorded, SaleRecorded, vat_percentage};
use events::domain::Quantity;
use sqlx::PgConnection;
use uuid::Uuid;

/// The organization as vouchers print it: name (legal name when set), CUIT and tax category.
/// A name and three optional texts (tax id, category, address or legal name), as rows give them.
pub type PartyRow = (String, Option<String>, Option<String>, Option<String>);

pub async fn issuer(conn: &mut PgConnection, org_id: Uuid) -> Result<Party, sqlx::Error> {
    let row: Option<PartyRow> =
        sqlx::query_as("select name, legal_name, tax_id, tax_category from organizations where id = $1")
            .bind(org_id)
            .fetch_optional(conn)
            .await?;
    let (name, legal_name, tax_id, tax_category) = row.unwrap_or_default();
    Ok(Party { name: legal_name.unwrap_or(name), tax_id, tax_category, address: None })
}

fn vat_label(code: i32) -> Option<String> {
    vat_percentage(code).map(|p| format!("{}%", p.to_string().replace('.', ",")))
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
pub fn sale_document(sale: &SaleRecorded, issuer: &Party) -> Option<VoucherDocument> {
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
            discount: l.discount_hundredths.filter(|h| *h != 0).map(|h| {
                let (whole, fraction) = (h / 100, h % 100);
                if fraction == 0 { format!("{whole}%") } else { format!("{whole},{fraction:02}%") }
            }),
            vat_label: vat_label(l.tax_rate_id),
            amount_cents: l.total,
        })
        .collect();
    // Only A vouchers show VAT by rate.
    let vat_breakdown = if sale.letter.as_deref() == Some("A") {
        sale.vat
            .iter()
            .map(|v| VatLine {
                label: format!("IVA {}", vat_label(v.code).unwrap_or_default()),
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
    let receiver = Party {
        name: sale.customer.name.clone(),
        tax_id: sale.customer.tax_id.clone(),
        tax_category: sale.customer.tax_category.clone(),
        address: sale.customer.address.clone(),
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
        reference: sale.associated_sale_id.map(|id| format!("Corrige la venta {id}")),
    })
}

/// The PDF of a purchase: the supplier's invoice as recorded (the supplier issued it; the
/// organization received it).
pub fn purchase_document(
    purchase: &PurchaseRecorded,
    supplier: Party,
    organization: Party,
    number: i64,
    names: &dyn Fn(Uuid) -> String,
) -> Option<VoucherDocument> {
    let lines = purchase
        .lines
        .iter()
        .map(|l| DocumentLine {
            description: names(l.variant_id),
            quantity: quantity_text(l.quantity),
            unit_price_cents: l.unit_cost,
            discount: None,
            vat_label: vat_label(l.tax_rate_id),
            amount_cents: l.total,
        })
        .collect();
    let mut vat: Vec<VatLine> = Vec::new();
    for line in &purchase.lines {
        let label = format!("IVA {}", vat_label(line.tax_rate_id).unwrap_or_default());
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
        point_of_sale: 0,
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
