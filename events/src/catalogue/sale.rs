//! Events of sales (stream type `sale`): a sale recorded whole (its lines with canonical amounts, the
//! stock it moved, its payments and its fiscal state), then the outcome of its authorization by the
//! tax authority when that came later (issued, deferred again, or finally rejected).

use super::stock::{StockChange, iso_date, iso_date_option};
use super::treasury::{LocationKind, LocationRef};
use crate::domain::{Cents, Percentage, Quantity, VatRate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::Date;
use uuid::Uuid;

named_enum! {
    /// Where a sale stands with the tax authority.
    pub enum FiscalStatus {
        /// Recorded without authorization (`invoice: false`, imported sales): invoice it later.
        NotInvoiced = "not_invoiced",
        /// Authorized: it has the authority's number, CAE and CAE expiry.
        Issued = "issued",
        /// The authority was unavailable or its answer was lost: a worker retries (consulting first).
        Deferred = "deferred",
        /// The authority refused it for good while it was deferred.
        Rejected = "rejected",
        /// Numbered by the service itself (a manual point of sale, or a voucher the authority never sees).
        Internal = "internal",
    }
}

/// The customer as the sale recorded them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleCustomer {
    pub id: Uuid,
    pub name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub tax_id: Option<String>,
    pub tax_id_type: Option<String>,
    pub tax_category: Option<String>,
    pub address: Option<String>,
    pub apartment: Option<String>,
    pub city: Option<String>,
    pub province: Option<String>,
}

/// One line of a sale with its canonical amounts (cents).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleLine {
    pub id: Uuid,
    /// The product variant, or none for a free-text line.
    pub variant_id: Option<Uuid>,
    pub name: String,
    pub sku: Option<String>,
    pub quantity: Quantity,
    pub unit_price: Cents,
    pub unit_cost: Option<Cents>,
    pub tax_rate_id: VatRate,
    #[serde(default, with = "crate::domain::hundredths_option")]
    pub discount_hundredths: Option<Percentage>,
    /// Where its stock moved (product lines).
    pub warehouse_id: Option<Uuid>,
    pub amount: Cents,
    pub discount: Cents,
    pub global_discount: Cents,
    pub net: Cents,
    pub vat: Cents,
    pub total: Cents,
    /// The order line it bills (absent otherwise, and in sales stored before orders existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_line_id: Option<Uuid>,
}

/// VAT by rate code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleVat {
    pub code: VatRate,
    pub base: Cents,
    pub amount: Cents,
}

/// A payment received with the sale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SalePayment {
    pub method_id: Uuid,
    pub amount: Cents,
    pub description: Option<String>,
    pub reference: Option<String>,
    pub register_id: Option<Uuid>,
    pub safe_id: Option<Uuid>,
    /// The bank account it landed in (absent when a register or safe took it, and in sales stored
    /// before payments posted to the treasury).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_account_id: Option<Uuid>,
}

impl SalePayment {
    /// Where the payment lands, with the field that names it: the register, else the safe, else the
    /// bank account (none named: none).
    pub fn location(&self) -> Option<(&'static str, LocationRef)> {
        match (self.register_id, self.safe_id, self.bank_account_id) {
            (Some(id), _, _) => Some(("registerId", LocationRef { kind: LocationKind::CashRegister, id })),
            (None, Some(id), _) => Some(("safeId", LocationRef { kind: LocationKind::Safe, id })),
            (None, None, Some(id)) => Some(("bankAccountId", LocationRef { kind: LocationKind::BankAccount, id })),
            (None, None, None) => None,
        }
    }
}

/// The authority's authorization of a voucher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleAuthorization {
    pub number: i64,
    pub cae: String,
    #[serde(with = "iso_date")]
    pub cae_due: Date,
    pub observations: Vec<(i64, String)>,
}

/// A sale's fiscal state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleFiscal {
    pub status: FiscalStatus,
    pub authorization: Option<SaleAuthorization>,
    /// After a lost answer: the number the authority may have approved (to be consulted before asking
    /// again).
    pub unconfirmed_number: Option<i64>,
    /// The authority's final refusal (code, message) of a deferred voucher.
    pub rejection: Vec<(i64, String)>,
}

/// A sale's global discount: a percentage of what the lines come to after their own discounts, or a
/// fixed amount. A command carries it as `{"type": "percentage", "value": 1250}` (hundredths of a
/// percent, or cents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum SaleDiscount {
    Percentage(#[serde(with = "crate::domain::hundredths")] Percentage),
    Fixed(Cents),
}

/// A sale's discount in the two fields its event has always had, `discount_type` and `discount_value`;
/// a type without its value, a value without its type or a value out of its type's range is an error.
mod recorded_discount {
    use super::SaleDiscount;
    use crate::domain::{Cents, Percentage};
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    struct Fields<'a> {
        discount_type: Option<&'a str>,
        discount_value: Option<i64>,
    }

    pub fn serialize<S: Serializer>(discount: &Option<SaleDiscount>, serializer: S) -> Result<S::Ok, S::Error> {
        let (discount_type, discount_value) = match discount {
            None => (None, None),
            Some(SaleDiscount::Percentage(p)) => (Some("percentage"), Some(i64::from(p.hundredths()))),
            Some(SaleDiscount::Fixed(c)) => (Some("fixed"), Some(c.get())),
        };
        Fields { discount_type, discount_value }.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<SaleDiscount>, D::Error> {
        #[derive(Deserialize)]
        struct Owned {
            discount_type: Option<String>,
            discount_value: Option<i64>,
        }
        let Owned { discount_type, discount_value } = Owned::deserialize(deserializer)?;
        match (discount_type.as_deref(), discount_value) {
            (None, None) => Ok(None),
            (Some("percentage"), Some(hundredths)) => {
                Percentage::from_hundredths(hundredths).map(|p| Some(SaleDiscount::Percentage(p))).map_err(D::Error::custom)
            }
            (Some("fixed"), Some(cents)) => {
                Cents::new(cents).map(|c| Some(SaleDiscount::Fixed(c))).map_err(D::Error::custom)
            }
            (kind, value) => Err(D::Error::custom(format!("discount_type {kind:?} does not go with discount_value {value:?}"))),
        }
    }
}

/// A sale as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleRecorded {
    /// `historical` (no `Service-Version`) or the dated contract's version.
    pub contract: String,
    pub voucher_type: i32,
    /// `invoice`, `credit_note`, `debit_note`, `quote` (voucher 90) or another kind of the reference.
    pub document_kind: String,
    pub letter: Option<String>,
    pub point_of_sale_id: Uuid,
    pub point_of_sale_number: i32,
    /// The voucher number: the authority's for an issued voucher, the service's for internal ones;
    /// none until then.
    pub number: Option<i64>,
    #[serde(with = "iso_date")]
    pub invoice_date: Date,
    #[serde(default, with = "iso_date_option")]
    pub due_date: Option<Date>,
    #[serde(default, with = "iso_date_option")]
    pub service_from: Option<Date>,
    #[serde(default, with = "iso_date_option")]
    pub service_to: Option<Date>,
    /// 1 products, 2 services, 3 both.
    pub concept: i32,
    pub currency: String,
    pub customer: SaleCustomer,
    pub prices_include_tax: bool,
    pub lines: Vec<SaleLine>,
    /// Recorded as two fields, `discount_type` (`percentage` or `fixed`) and `discount_value`
    /// (hundredths of a percent, or cents), both null without one.
    #[serde(flatten, with = "recorded_discount")]
    pub discount: Option<SaleDiscount>,
    pub exempt: Cents,
    pub non_taxed: Cents,
    pub subtotal: Cents,
    pub tax_amount: Cents,
    pub discount_amount: Cents,
    pub total: Cents,
    pub vat: Vec<SaleVat>,
    pub payments: Vec<SalePayment>,
    /// What is still owed: the total minus the payments.
    pub balance: Cents,
    pub notes: Option<String>,
    pub fiscal_notes: Option<String>,
    pub integration_source: Option<String>,
    pub integration_id: Option<String>,
    /// The sale a credit or debit note corrects.
    pub associated_sale_id: Option<Uuid>,
    pub changes: Vec<StockChange>,
    /// The order it bills (absent otherwise, and in sales stored before orders existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_id: Option<Uuid>,
    pub fiscal: SaleFiscal,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaleEvent {
    SaleRecorded(Box<SaleRecorded>),
    /// A later outcome of the sale's authorization (issued, deferred again with a new unconfirmed
    /// number, or finally rejected), carrying the sale's whole state after it, so every subscriber (the
    /// webhook sender among them) folds a single event without history.
    SaleFiscalChanged(Box<SaleRecorded>),
}

payloads!(SaleEvent, "sale", SaleRecorded(Box), SaleFiscalChanged(Box));

/// A sale's whole state after `event` (every sale event carries it; the fold the command side and the
/// read side share).
pub fn fold_sale(state: Option<SaleRecorded>, event: &SaleEvent) -> Option<SaleRecorded> {
    let _ = state;
    match event {
        SaleEvent::SaleRecorded(sale) | SaleEvent::SaleFiscalChanged(sale) => Some((**sale).clone()),
    }
}

/// The public sale object webhook events (`sale.created`, `sale.updated`) carry: snake_case, amounts
/// in cents, quantities as decimal text. A credit note is a sale with `document_kind` `credit_note`.
pub fn public_sale(id: Uuid, sale: &SaleRecorded) -> Value {
    let authorization = sale.fiscal.authorization.as_ref();
    serde_json::json!({
        "object": "sale",
        "id": id,
        "document_kind": sale.document_kind,
        "voucher_type": sale.voucher_type,
        "letter": sale.letter,
        "point_of_sale": sale.point_of_sale_number,
        "invoice_number": sale.number,
        "invoice_date": sale.invoice_date.to_string(),
        "status": sale.fiscal.status.as_str(),
        "cae": authorization.map(|a| a.cae.clone()),
        "cae_due_date": authorization.map(|a| a.cae_due.to_string()),
        "customer": { "id": sale.customer.id, "name": sale.customer.name },
        "currency": sale.currency,
        "subtotal": sale.subtotal,
        "tax_amount": sale.tax_amount,
        "total": sale.total,
        "balance": sale.balance,
        "integration_source": sale.integration_source,
        "integration_id": sale.integration_id,
        "associated_sale_id": sale.associated_sale_id,
        "items": sale.lines.iter().map(|l| serde_json::json!({
            "product_id": l.variant_id,
            "name": l.name,
            "quantity": l.quantity.to_string(),
            "unit_price": l.unit_price,
            "total": l.total,
        })).collect::<Vec<_>>(),
    })
}

impl super::MovesStock for SaleEvent {
    const CAUSES: &'static [&'static str] = &[super::cause::SALE];

    fn stock_effect(self) -> Option<super::StockEffect> {
        match self {
            SaleEvent::SaleRecorded(s) if !s.changes.is_empty() => Some(super::StockEffect::Changes {
                cause_type: super::cause::SALE,
                cause_id: None,
                occurred_on: s.invoice_date,
                changes: s.changes,
            }),
            SaleEvent::SaleRecorded(_) | SaleEvent::SaleFiscalChanged(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The discount between two other fields, as in a sale's event.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Recorded {
        before: i32,
        #[serde(flatten, with = "recorded_discount")]
        discount: Option<SaleDiscount>,
        after: i32,
    }

    #[test]
    fn a_discount_is_recorded_as_the_two_fields_it_always_was() {
        let percentage = SaleDiscount::Percentage(Percentage::from_hundredths(1250).expect("in range"));
        for (discount, text) in [
            (None, r#"{"before":1,"discount_type":null,"discount_value":null,"after":2}"#),
            (Some(percentage), r#"{"before":1,"discount_type":"percentage","discount_value":1250,"after":2}"#),
            (Some(SaleDiscount::Fixed(Cents::of(2100))), r#"{"before":1,"discount_type":"fixed","discount_value":2100,"after":2}"#),
        ] {
            let recorded = Recorded { before: 1, discount, after: 2 };
            assert_eq!(serde_json::to_string(&recorded).expect("encodes"), text);
            assert_eq!(serde_json::from_str::<Recorded>(text).expect("decodes"), recorded);
        }
    }

    #[test]
    fn a_recorded_discount_that_is_not_one_is_an_error_not_a_guess() {
        for (kind, value) in [
            (json!("percentage"), json!(null)),
            (json!(null), json!(100)),
            (json!("markup"), json!(100)),
            (json!("percentage"), json!(10_001)),
            (json!("fixed"), json!(Cents::MAX + 1)),
        ] {
            let stored = json!({ "before": 1, "discount_type": kind, "discount_value": value, "after": 2 });
            assert!(serde_json::from_value::<Recorded>(stored.clone()).is_err(), "{stored}");
        }
    }
}
