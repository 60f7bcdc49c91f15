//! The vouchers the invoicing code asks to authorize and what the authority answers about them, in
//! our terms (integer cents, `time::Date`), with their translation to and from the wire.

use events::domain::{Cents, Percentage};
use time::Date;

use super::decimal::{Amount, Rate};
use super::wire;

/// One voucher to authorize, as the sales code fills it. Amounts are [`Cents`]; the adapter
/// writes them as the authority's two-place decimals and does no arithmetic on them, so totals that
/// do not add up reach the authority as they are (it rejects them with 10048 and friends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoucherRequest {
    /// The authority's point of sale number (`PtoVta`), 1 to 99998.
    pub point_of_sale: i32,
    /// The voucher type code (1 invoice A, 6 invoice B, 11 invoice C, 3/8/13 credit notes, ...).
    pub voucher_type: i32,
    /// The number asked for: the series' last authorized number + 1.
    pub number: i64,
    /// 1 products, 2 services, 3 both; 2 and 3 need `service_from`, `service_to` and `payment_due`.
    pub concept: i32,
    /// 80 CUIT, 86 CUIL, 96 DNI, 99 other (consumidor final, with number 0).
    pub doc_type: i32,
    pub doc_number: i64,
    /// The voucher date, in the Argentine calendar.
    pub date: Date,
    /// `ImpTotal` = `non_taxed` + `net` + `exempt` + `other_taxes` + `vat`.
    pub total: Cents,
    /// Taxed net (`ImpNeto`): the sum of the VAT lines' bases. For class C, the subtotal.
    pub net: Cents,
    /// Exempt (`ImpOpEx`); 0 for class C.
    pub exempt: Cents,
    /// Not taxed (`ImpTotConc`); 0 for class C.
    pub non_taxed: Cents,
    /// Other taxes (`ImpTrib`): the sum of `other_tax_lines`.
    pub other_taxes: Cents,
    /// VAT (`ImpIVA`): the sum of the VAT lines' amounts; 0 for class C.
    pub vat: Cents,
    /// The VAT by rate (`Iva`); empty for class C.
    pub vat_lines: Vec<VatLine>,
    /// Other taxes in detail (`Tributos`); usually empty.
    pub other_tax_lines: Vec<OtherTaxLine>,
    /// `PES` pesos, `DOL` US dollars, `060` euros.
    pub currency: String,
    /// The exchange rate; exactly [`Rate::ONE`] for `PES`.
    pub rate: Rate,
    /// The receiver's VAT condition (`CondicionIVAReceptorId`): 1 Responsable Inscripto, 4 Exento,
    /// 5 Consumidor Final, 6 Monotributo, ... It must fit the letter: A only to 1, 6, 13 and 16.
    pub receiver_vat_condition: i32,
    /// For credit and debit notes: the vouchers they correct (`CbtesAsoc`).
    pub associated: Vec<AssociatedVoucher>,
    pub service_from: Option<Date>,
    pub service_to: Option<Date>,
    pub payment_due: Option<Date>,
}

/// The VAT of one rate (`AlicIva`), in cents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VatLine {
    /// The VAT rate code: 3 (0%), 4 (10.5%), 5 (21%), 6 (27%), 8 (5%), 9 (2.5%).
    pub code: i32,
    pub base: Cents,
    pub amount: Cents,
}

/// One other tax (`Tributo`): its base and amount, and its rate (`Alic`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherTaxLine {
    pub code: i32,
    pub description: Option<String>,
    pub base: Cents,
    pub rate: Percentage,
    pub amount: Cents,
}

/// A voucher a note corrects (`CbteAsoc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssociatedVoucher {
    pub voucher_type: i32,
    pub point_of_sale: i32,
    pub number: i64,
    /// The issuer of the associated voucher, when it is not the same.
    pub issuer_cuit: Option<i64>,
    pub date: Option<Date>,
}

impl VoucherRequest {
    /// The header and detail of `FECAESolicitar` for this voucher alone.
    pub fn to_wire(&self) -> (wire::CabRequest, wire::DetRequest) {
        let header = wire::CabRequest { count: 1, point_of_sale: self.point_of_sale, voucher_type: self.voucher_type };
        let detail = wire::DetRequest {
            concept: self.concept,
            doc_type: self.doc_type,
            doc_number: self.doc_number,
            number_from: self.number,
            number_to: self.number,
            date: Some(self.date),
            total: amount(self.total),
            non_taxed: amount(self.non_taxed),
            net: amount(self.net),
            exempt: amount(self.exempt),
            other_taxes: amount(self.other_taxes),
            vat: amount(self.vat),
            service_from: self.service_from,
            service_to: self.service_to,
            payment_due: self.payment_due,
            currency: self.currency.clone(),
            rate: Some(self.rate),
            receiver_vat_condition: Some(self.receiver_vat_condition),
            associated: self
                .associated
                .iter()
                .map(|a| wire::AssociatedVoucher {
                    voucher_type: a.voucher_type,
                    point_of_sale: a.point_of_sale,
                    number: a.number,
                    cuit: a.issuer_cuit,
                    date: a.date,
                })
                .collect(),
            other_tax_lines: self
                .other_tax_lines
                .iter()
                .map(|t| wire::OtherTax {
                    code: t.code,
                    description: t.description.clone(),
                    base: amount(t.base),
                    rate: Amount::from_cents(i64::from(t.rate.hundredths())),
                    amount: amount(t.amount),
                })
                .collect(),
            vat_lines: self
                .vat_lines
                .iter()
                .map(|v| wire::VatRate { code: v.code, base: amount(v.base), amount: amount(v.amount) })
                .collect(),
        };
        (header, detail)
    }
}

/// Money as the wire writes it: the same cents, with two places.
fn amount(cents: Cents) -> Amount {
    Amount::from_cents(cents.get())
}

/// Whether `cae` is a CAE as the authority issues one: 14 digits (what the printed voucher's QR code
/// carries as a number).
pub(super) fn well_formed_cae(cae: &str) -> bool {
    cae.len() == 14 && cae.bytes().all(|b| b.is_ascii_digit())
}

/// The wire's amount as [`Cents`]; one beyond their range is the authority's error, named by `field`.
fn cents(field: &str, amount: Amount) -> Result<Cents, String> {
    Cents::new(amount.cents()).map_err(|_| format!("ResultGet's {field} {amount} is out of range"))
}

/// An approved voucher: what the sale stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// The CAE: 14 digits.
    pub cae: String,
    /// The CAE's expiry date.
    pub cae_due: Date,
    /// The voucher number the authority approved (the one asked for).
    pub number: i64,
    /// Non-blocking observations (`Obs`): code and message.
    pub observations: Vec<(i64, String)>,
}

impl From<Authorization> for events::catalogue::SaleAuthorization {
    fn from(auth: Authorization) -> Self {
        Self { number: auth.number, cae: auth.cae, cae_due: auth.cae_due, observations: auth.observations }
    }
}

/// A voucher as the authority holds it (`FECompConsultar`), in our terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVoucher {
    pub point_of_sale: i32,
    pub voucher_type: i32,
    pub number: i64,
    pub date: Date,
    pub concept: i32,
    pub doc_type: i32,
    pub doc_number: i64,
    pub total: Cents,
    pub net: Cents,
    pub exempt: Cents,
    pub non_taxed: Cents,
    pub other_taxes: Cents,
    pub vat: Cents,
    pub currency: String,
    pub rate: Option<Rate>,
    /// `A` for an approved voucher.
    pub result: String,
    /// The CAE (`CodAutorizacion`).
    pub cae: String,
    /// The CAE's expiry (`FchVto`).
    pub cae_due: Date,
    pub observations: Vec<(i64, String)>,
}

impl StoredVoucher {
    /// Whether the authority approved it.
    pub fn is_approved(&self) -> bool {
        self.result == "A"
    }

    /// Whether this is the voucher `request` asked for: same series and number, date, receiver and
    /// amounts. After a lost reply, a stored voucher that matches is ours, and its CAE is the
    /// authorization; one that does not was issued by someone else under that number.
    pub fn matches(&self, request: &VoucherRequest) -> bool {
        self.point_of_sale == request.point_of_sale
            && self.voucher_type == request.voucher_type
            && self.number == request.number
            && self.date == request.date
            && self.concept == request.concept
            && self.doc_type == request.doc_type
            && self.doc_number == request.doc_number
            && self.total == request.total
            && self.net == request.net
            && self.exempt == request.exempt
            && self.non_taxed == request.non_taxed
            && self.other_taxes == request.other_taxes
            && self.vat == request.vat
            && self.currency == request.currency
    }

    /// Reads `ResultGet`; the error names what is missing.
    pub(super) fn from_wire(detail: wire::StoredDetail) -> Result<Self, String> {
        let date = detail.date.ok_or("ResultGet has no CbteFch")?;
        let cae_due = detail.authorization_due.ok_or("ResultGet has no FchVto")?;
        if detail.result == "A" && !well_formed_cae(&detail.authorization_code) {
            return Err("ResultGet approved the voucher with a malformed CodAutorizacion".into());
        }
        Ok(StoredVoucher {
            point_of_sale: detail.point_of_sale,
            voucher_type: detail.voucher_type,
            number: detail.number_from,
            date,
            concept: detail.concept,
            doc_type: detail.doc_type,
            doc_number: detail.doc_number,
            total: cents("ImpTotal", detail.total)?,
            net: cents("ImpNeto", detail.net)?,
            exempt: cents("ImpOpEx", detail.exempt)?,
            non_taxed: cents("ImpTotConc", detail.non_taxed)?,
            other_taxes: cents("ImpTrib", detail.other_taxes)?,
            vat: cents("ImpIVA", detail.vat)?,
            currency: detail.currency,
            rate: detail.rate,
            result: detail.result,
            cae: detail.authorization_code,
            cae_due,
            observations: detail.observations.into_iter().map(|m| (m.code, m.msg)).collect(),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use time::macros::date;

    /// An A invoice of 100.00 net at 21%, number 12 of point of sale 3: what the fiscal tests ask for.
    pub(crate) fn invoice() -> VoucherRequest {
        VoucherRequest {
            point_of_sale: 3,
            voucher_type: 1,
            number: 12,
            concept: 1,
            doc_type: 80,
            doc_number: 20267565393,
            date: date!(2026 - 03 - 02),
            total: Cents::of(12_100),
            net: Cents::of(10_000),
            exempt: Cents::ZERO,
            non_taxed: Cents::ZERO,
            other_taxes: Cents::ZERO,
            vat: Cents::of(2_100),
            vat_lines: vec![VatLine { code: 5, base: Cents::of(10_000), amount: Cents::of(2_100) }],
            other_tax_lines: vec![],
            currency: "PES".into(),
            rate: Rate::ONE,
            receiver_vat_condition: 1,
            associated: vec![],
            service_from: None,
            service_to: None,
            payment_due: None,
        }
    }

    /// What the authority would hold for `request`, as `FECompConsultar` answers it.
    fn stored(request: &VoucherRequest) -> wire::StoredDetail {
        let (header, detail) = request.to_wire();
        let authorization = wire::StoredAuthorization {
            result: "A".into(),
            code: "76123456789012".into(),
            due: date!(2026 - 03 - 12),
            processed_at: "20260302120000".into(),
            observations: vec![],
        };
        wire::StoredDetail::of(detail, &header, authorization)
    }

    #[test]
    fn a_voucher_reads_back_in_cents_and_matches_its_request() {
        let request = invoice();
        let (_, detail) = request.to_wire();
        assert_eq!(
            (detail.total.to_string(), detail.vat_lines[0].base.to_string()),
            ("121.00".into(), "100.00".into())
        );
        let voucher = StoredVoucher::from_wire(stored(&request)).expect("read");
        assert_eq!((voucher.total, voucher.net, voucher.vat), (Cents::of(12_100), Cents::of(10_000), Cents::of(2_100)));
        assert!(voucher.is_approved() && voucher.matches(&request));
        assert!(!voucher.matches(&VoucherRequest { vat: Cents::of(2_101), ..request }));
    }

    #[test]
    fn an_amount_beyond_cents_is_the_authoritys_error_naming_its_field() {
        let mut detail = stored(&invoice());
        detail.total = Amount::from_cents(Cents::MAX + 1);
        let error = StoredVoucher::from_wire(detail).expect_err("out of range");
        assert!(error.contains("ImpTotal") && error.contains("10000000000.01"), "{error}");
    }

    #[test]
    fn an_approval_without_a_cae_of_fourteen_digits_is_the_authoritys_error() {
        let mut detail = stored(&invoice());
        detail.authorization_code = "7612345678901X".into();
        let error = StoredVoucher::from_wire(detail).expect_err("malformed");
        assert!(error.contains("CodAutorizacion"), "{error}");
        let mut rejected = stored(&invoice());
        (rejected.result, rejected.authorization_code) = ("R".into(), String::new());
        assert!(StoredVoucher::from_wire(rejected).is_ok(), "a rejected voucher has no CAE");
    }
}
