//! Sales: both creation contracts (the historical Style B body, and the dated contract selected by
//! `Service-Version: 2026-08-20`), the voucher types a sale may be, its canonical amounts (the tax
//! engine's), the stock it moves and its authorization by the tax authority (`handler.rs`,
//! `invoicing.rs`).
//!
//! The two contracts differ in three ways: the dated one refuses unknown fields and the amounts the
//! service computes (`subtotal`, `tax_amount`, ...), requires `total` and refuses a request whose total
//! differs from the canonical one (422 `TOTAL_MISMATCH`, nothing durable); the historical one accepts
//! client totals for compatibility (never stored) and prices lines as the organization's
//! `prices_include_tax` setting says, where the dated one follows the voucher (A: net; B, 90: VAT
//! included). Both accept camelCase and snake_case spellings.

mod handler;
pub mod invoicing;

pub use handler::{InvoiceSales, SaleOutcome, Sales};

use crate::tax::{self, PriceBasis};
use crate::validate::{FieldError, ObjectReader, camel_case_keys};
use events::catalogue::{FiscalStatus, SaleFiscal, iso_date, iso_date_option};
use events::domain::{Cents, Percentage, Quantity};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::Date;
use uuid::Uuid;

/// The dated contract this build understands (`Service-Version`).
pub const DATED_CONTRACT: &str = "2026-08-20";
/// The most lines one sale lists.
pub const MAX_LINES: usize = 200;
/// The largest amount a sale body may carry (JavaScript's largest safe integer).
pub const MAX_SAFE: i64 = 9_007_199_254_740_991;

/// The kind and letter of a voucher type a sale may be (receipts are not sales).
pub fn voucher_kind(code: i32) -> Option<(&'static str, Option<&'static str>)> {
    Some(match code {
        1 | 51 => ("invoice", Some(if code == 1 { "A" } else { "M" })),
        2 | 52 => ("debit_note", Some(if code == 2 { "A" } else { "M" })),
        3 | 53 => ("credit_note", Some(if code == 3 { "A" } else { "M" })),
        5 => ("cash_sale_note", Some("A")),
        6 => ("invoice", Some("B")),
        7 => ("debit_note", Some("B")),
        8 => ("credit_note", Some("B")),
        10 => ("cash_sale_note", Some("B")),
        11 => ("invoice", Some("C")),
        12 => ("debit_note", Some("C")),
        13 => ("credit_note", Some("C")),
        19 => ("invoice", Some("E")),
        20 => ("debit_note", Some("E")),
        21 => ("credit_note", Some("E")),
        90 => ("quote", None),
        _ => return None,
    })
}

/// The fields the dated contract refuses (the service computes them), in camelCase.
pub const FORBIDDEN_DATED: &[&str] = &[
    "subtotal",
    "taxAmount",
    "exemptAmount",
    "nonTaxedAmount",
    "tributesAmount",
    "discountAmount",
    "taxIncludedOverride",
    "roundingAdjustment",
];

/// The fields a dated sale body may carry.
const KNOWN_DATED: &[&str] = &[
    "voucherType",
    "pointOfSaleId",
    "invoiceDate",
    "items",
    "customerId",
    "dueDate",
    "serviceFrom",
    "serviceTo",
    "concept",
    "discountType",
    "discountValue",
    "notes",
    "fiscalNotes",
    "paymentMethods",
    "integrationSource",
    "integrationId",
    "total",
    "invoice",
    "associatedSaleId",
];
const KNOWN_ITEM: &[&str] =
    &["productId", "warehouseId", "name", "quantity", "unitPrice", "taxRateId", "unitCost", "discountPercentage"];
const KNOWN_PAYMENT: &[&str] = &["methodId", "amount", "description", "reference", "registerId", "safeId"];

/// A line as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineInput {
    pub variant_id: Option<Uuid>,
    pub warehouse_id: Option<Uuid>,
    pub name: Option<String>,
    pub quantity: Quantity,
    pub unit_price: Cents,
    pub tax_rate_id: Option<i32>,
    pub unit_cost: Option<Cents>,
    /// Hundredths of a percent.
    pub discount_hundredths: Option<i64>,
}

/// A payment as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentInput {
    pub method_id: Uuid,
    pub amount: Cents,
    pub description: Option<String>,
    pub reference: Option<String>,
    pub register_id: Option<Uuid>,
    pub safe_id: Option<Uuid>,
}

/// A global discount: a percentage (hundredths) or a fixed amount (cents).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum GlobalDiscount {
    Percentage(i64),
    Fixed(i64),
}

/// A sale as sent, either contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleInput {
    /// `historical`, or the dated contract's version.
    pub contract: String,
    pub voucher_type: i32,
    pub point_of_sale_id: Uuid,
    #[serde(with = "iso_date")]
    pub invoice_date: Date,
    #[serde(default, with = "iso_date_option")]
    pub due_date: Option<Date>,
    #[serde(default, with = "iso_date_option")]
    pub service_from: Option<Date>,
    #[serde(default, with = "iso_date_option")]
    pub service_to: Option<Date>,
    pub concept: Option<i32>,
    pub customer_id: Option<Uuid>,
    pub items: Vec<LineInput>,
    pub discount: Option<GlobalDiscount>,
    pub exempt: i64,
    pub non_taxed: i64,
    /// The expected total (required by the dated contract).
    pub total: Option<i64>,
    pub payments: Vec<PaymentInput>,
    pub notes: Option<String>,
    pub fiscal_notes: Option<String>,
    pub integration_source: Option<String>,
    pub integration_id: Option<String>,
    /// Ask the authority for authorization now (default true); false records it as not invoiced.
    pub invoice: bool,
    pub associated_sale_id: Option<Uuid>,
}

impl SaleInput {
    pub fn is_dated(&self) -> bool {
        self.contract != "historical"
    }
}

/// The command for `POST /api/v1/sales`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SaleCommand {
    pub id: Uuid,
    pub input: SaleInput,
}

/// The command for `POST /api/v1/sales/{sale_id}/invoice`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvoiceCommand {
    pub sale_id: Uuid,
}

/// A positive amount in cents no larger than [`MAX_SAFE`] (the bound the interface states; amounts
/// beyond `Cents::MAX` are refused later as out of range).
fn safe_amount(r: &mut ObjectReader<'_>, name: &str) -> Option<i64> {
    let value = r.value(name)?;
    match value.as_i64() {
        Some(n) if (0..=MAX_SAFE).contains(&n) => Some(n),
        Some(_) => {
            r.reject(name, "out_of_range", format!("must be between 0 and {MAX_SAFE}"));
            None
        }
        None => {
            r.reject(name, "invalid_type", "must be a whole number of cents");
            None
        }
    }
}

fn percentage(r: &mut ObjectReader<'_>, name: &str) -> Option<i64> {
    let value = r.value(name)?;
    match Percentage::parse(value) {
        Ok(p) => Some(i64::from(p.hundredths())),
        Err(error) => {
            r.reject(name, "invalid_value", error.to_string());
            None
        }
    }
}

/// Fields an object may not carry: under the dated contract, the ones it refuses by name and any it
/// does not know.
fn refuse_unknown(body: &Value, prefix: &str, known: &[&str], forbidden: &[&str], errors: &mut Vec<FieldError>) {
    let Some(object) = body.as_object() else { return };
    for key in object.keys() {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        if forbidden.contains(&key.as_str()) {
            errors.push(FieldError::new(path, "forbidden", "computed by the service: must not be sent"));
        } else if !known.contains(&key.as_str()) {
            errors.push(FieldError::new(path, "unknown_field", "is not a field of this contract"));
        }
    }
}

/// Parses a sale of either contract (`dated`: the `Service-Version` sent). Checks each field on its
/// own; what depends on the organization's data is checked by the worker.
pub fn parse_sale(body: &Value, dated: Option<&str>, today: Date) -> Result<SaleInput, Vec<FieldError>> {
    let (body, mut spelled) = camel_case_keys(body, "");
    let mut r = ObjectReader::new(&body, "");
    r.errors.append(&mut spelled);
    if dated.is_some() {
        refuse_unknown(&body, "", KNOWN_DATED, FORBIDDEN_DATED, &mut r.errors);
        for (i, item) in r.value("items").and_then(Value::as_array).into_iter().flatten().enumerate() {
            refuse_unknown(item, &format!("items[{i}]"), KNOWN_ITEM, &[], &mut r.errors);
        }
        for (i, payment) in r.value("paymentMethods").and_then(Value::as_array).into_iter().flatten().enumerate() {
            refuse_unknown(payment, &format!("paymentMethods[{i}]"), KNOWN_PAYMENT, &[], &mut r.errors);
        }
    } else {
        // Compatibility fields: read and checked, never stored as truth.
        for name in ["subtotal", "taxAmount", "discountAmount"] {
            safe_amount(&mut r, name);
        }
    }
    let voucher_type = r.required_int("voucherType", 1, 95).map(|v| v as i32);
    if let Some(code) = voucher_type
        && voucher_kind(code).is_none()
    {
        r.reject("voucherType", "invalid_value", "is not a voucher type a sale can be (see /api/v1/voucher-types)");
    }
    let point_of_sale_id = r.required_uuid("pointOfSaleId");
    let invoice_date = r.required_date("invoiceDate");
    if invoice_date.is_some_and(|d| d > today) {
        r.reject("invoiceDate", "in_future", format!("must not be after today ({today})"));
    }
    let due_date = r.optional_date("dueDate");
    let service_from = r.optional_date("serviceFrom");
    let service_to = r.optional_date("serviceTo");
    if let (Some(from), Some(to)) = (service_from, service_to)
        && from > to
    {
        r.reject("serviceTo", "before_service_from", "must not be before serviceFrom");
    }
    let concept = r.optional_int("concept", 1, 3).map(|c| c as i32);
    let customer_id = r.optional_uuid("customerId");
    let mut items = Vec::new();
    for (i, item) in r.required_array("items", 1, MAX_LINES).iter().enumerate() {
        let mut line = ObjectReader::new(item, &format!("items[{i}]"));
        let variant_id = line.optional_uuid("productId");
        let warehouse_id = line.optional_uuid("warehouseId");
        let name = line.optional_str("name", 200);
        if variant_id.is_none() && name.is_none() && line.value("productId").is_none() {
            line.reject("name", "required", "a line without productId is a free-text line and needs a name");
        }
        let quantity = line.required_quantity("quantity", true);
        let unit_price = line.required_cents("unitPrice");
        let tax_rate_id = line.optional_int("taxRateId", 0, 99).map(|c| c as i32);
        if let Some(code) = tax_rate_id
            && events::catalogue::vat_hundredths(code).is_none()
        {
            line.reject("taxRateId", "invalid_value", "must be a VAT rate code (see /api/v1/tax-rates)");
        }
        let unit_cost = line.value("unitCost").and_then(|_| line.required_cents("unitCost"));
        let discount_hundredths = percentage(&mut line, "discountPercentage");
        r.errors.append(&mut line.errors);
        if let (Some(quantity), Some(unit_price)) = (quantity, unit_price) {
            items.push(LineInput {
                variant_id,
                warehouse_id,
                name,
                quantity,
                unit_price,
                tax_rate_id,
                unit_cost,
                discount_hundredths,
            });
        }
    }
    let discount =
        match (r.optional_enum("discountType", &["percentage", "fixed"]).as_deref(), r.value("discountValue")) {
            (None, None) => None,
            (Some("percentage"), Some(_)) => percentage(&mut r, "discountValue").map(GlobalDiscount::Percentage),
            (Some(_), Some(_)) => safe_amount(&mut r, "discountValue").map(GlobalDiscount::Fixed),
            (Some(_), None) => {
                r.reject("discountValue", "required", "discountType needs its discountValue");
                None
            }
            (None, Some(_)) => {
                r.reject("discountType", "required", "discountValue needs its discountType: percentage or fixed");
                None
            }
        };
    let (exempt, non_taxed) = if dated.is_some() {
        (0, 0)
    } else {
        (safe_amount(&mut r, "exemptAmount").unwrap_or(0), safe_amount(&mut r, "nonTaxedAmount").unwrap_or(0))
    };
    let total = safe_amount(&mut r, "total");
    if dated.is_some() && r.value("total").is_none() {
        r.reject("total", "required", "the expected final total is required by this contract");
    }
    let mut payments = Vec::new();
    if let Some(value) = r.value("paymentMethods") {
        match value.as_array() {
            None => r.reject("paymentMethods", "invalid_type", "must be an array"),
            Some(list) => {
                for (i, item) in list.iter().enumerate() {
                    let mut p = ObjectReader::new(item, &format!("paymentMethods[{i}]"));
                    let method_id = p.required_uuid("methodId");
                    let amount = p.required_cents("amount");
                    let description = p.optional_str("description", 200);
                    let reference = p.optional_str("reference", 100);
                    let register_id = p.optional_uuid("registerId");
                    let safe_id = p.optional_uuid("safeId");
                    r.errors.append(&mut p.errors);
                    if let (Some(method_id), Some(amount)) = (method_id, amount) {
                        payments.push(PaymentInput { method_id, amount, description, reference, register_id, safe_id });
                    }
                }
            }
        }
    }
    let notes = r.optional_str("notes", 1000);
    let fiscal_notes = r.optional_str("fiscalNotes", 1000);
    let integration_source = r.optional_str("integrationSource", 50);
    let integration_id = r.optional_str("integrationId", 100);
    let invoice = r.optional_bool("invoice").unwrap_or(true);
    let associated_sale_id = r.optional_uuid("associatedSaleId");
    if let Some((kind, _)) = voucher_type.and_then(voucher_kind)
        && matches!(kind, "credit_note" | "debit_note")
        && associated_sale_id.is_none()
    {
        r.reject("associatedSaleId", "required", "a credit or debit note names the sale it corrects");
    }
    let input = SaleInput {
        contract: dated.map_or_else(|| "historical".to_owned(), str::to_owned),
        voucher_type: voucher_type.unwrap_or(1),
        point_of_sale_id: point_of_sale_id.unwrap_or_default(),
        invoice_date: invoice_date.unwrap_or(today),
        due_date,
        service_from,
        service_to,
        concept,
        customer_id,
        items,
        discount,
        exempt,
        non_taxed,
        total,
        payments,
        notes,
        fiscal_notes,
        integration_source,
        integration_id,
        invoice,
        associated_sale_id,
    };
    r.finish(input)
}

/// How a sale's unit prices relate to VAT: the dated contract follows the voucher; the historical one
/// the organization's setting (C vouchers carry no VAT either way).
pub fn price_basis(input: &SaleInput, prices_include_tax: bool) -> PriceBasis {
    let by_voucher = PriceBasis::of_voucher(input.voucher_type);
    if input.is_dated() || by_voucher == PriceBasis::GrossWithoutVat {
        by_voucher
    } else if prices_include_tax {
        PriceBasis::Gross
    } else {
        PriceBasis::Net
    }
}

/// The canonical amounts of a sale's lines.
pub fn compute(input: &SaleInput, basis: PriceBasis, codes: &[i32]) -> Result<tax::Computed, Vec<FieldError>> {
    let mut errors = Vec::new();
    let mut lines = Vec::with_capacity(input.items.len());
    for (i, (item, code)) in input.items.iter().zip(codes).enumerate() {
        let unit_price = item.unit_price;
        let discount = match item.discount_hundredths.map(Percentage::from_hundredths).transpose() {
            Ok(percentage) => percentage.filter(|p| !p.is_zero()).map(tax::Discount::Percentage),
            Err(e) => {
                errors.push(FieldError::new(format!("items[{i}].discount"), "out_of_range", e.to_string()));
                continue;
            }
        };
        lines.push(tax::Line { quantity: item.quantity, unit_price, vat_code: *code, discount });
    }
    let cents = |value: i64, field: &str, errors: &mut Vec<FieldError>| match Cents::new(value) {
        Ok(c) => c,
        Err(e) => {
            errors.push(FieldError::new(field, "out_of_range", e.to_string()));
            Cents::ZERO
        }
    };
    let global_discount = match input.discount {
        None => None,
        Some(GlobalDiscount::Percentage(h)) => match Percentage::from_hundredths(h) {
            Ok(percentage) => Some(tax::Discount::Percentage(percentage)),
            Err(e) => {
                errors.push(FieldError::new("discountValue", "out_of_range", e.to_string()));
                None
            }
        },
        Some(GlobalDiscount::Fixed(c)) => Some(tax::Discount::Fixed(cents(c, "discountValue", &mut errors))),
    };
    let adjustments = tax::Adjustments {
        global_discount,
        exempt: cents(input.exempt, "exemptAmount", &mut errors),
        non_taxed: cents(input.non_taxed, "nonTaxedAmount", &mut errors),
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    tax::compute(basis, &lines, &adjustments).map_err(|e| {
        let field = match e {
            tax::TaxError::GlobalDiscountTooLarge { .. } => "discountValue".to_owned(),
            _ => "items".to_owned(),
        };
        vec![FieldError::new(field, "invalid_value", e.to_string())]
    })
}

/// A sale's fiscal state before any authorization.
pub fn fiscal(status: FiscalStatus) -> SaleFiscal {
    SaleFiscal { status, authorization: None, unconfirmed_number: None, rejection: Vec::new() }
}

/// `A 00001-00000042`: the letter (`X` for vouchers without one), the point of sale and the number.
pub fn formatted_number(letter: Option<&str>, point_of_sale: i32, number: Option<i64>) -> Option<String> {
    number.map(|n| format!("{} {point_of_sale:05}-{n:08}", letter.unwrap_or("X")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TODAY: Date = time::macros::date!(2026 - 11 - 25);

    fn body() -> Value {
        json!({"voucherType": 6, "pointOfSaleId": Uuid::now_v7(), "invoiceDate": "2026-11-25",
               "items": [{"productId": Uuid::now_v7(), "quantity": 2, "unitPrice": 12100}], "total": 24200})
    }

    #[test]
    fn the_dated_contract_refuses_computed_and_unknown_fields_in_both_spellings() {
        let mut sent = body();
        sent["tax_amount"] = json!(4200);
        sent["subtotal"] = json!(20000);
        sent["color"] = json!("rojo");
        sent["items"][0]["tributes"] = json!(1);
        let errors = parse_sale(&sent, Some(DATED_CONTRACT), TODAY).expect_err("refused");
        let fields: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code.as_str())).collect();
        assert!(fields.contains(&("taxAmount", "forbidden")), "{fields:?}");
        assert!(fields.contains(&("subtotal", "forbidden")), "{fields:?}");
        assert!(fields.contains(&("color", "unknown_field")), "{fields:?}");
        assert!(fields.contains(&("items[0].tributes", "unknown_field")), "{fields:?}");
        let mut no_total = body();
        no_total.as_object_mut().map(|o| o.remove("total"));
        let errors = parse_sale(&no_total, Some(DATED_CONTRACT), TODAY).expect_err("refused");
        assert_eq!(errors[0].field, "total");
        // The historical contract reads the same body without the header, totals optional.
        let mut historical = no_total.clone();
        historical["subtotal"] = json!(20000);
        historical["color"] = json!("rojo");
        let input = parse_sale(&historical, None, TODAY).expect("historical");
        assert_eq!((input.contract.as_str(), input.invoice, input.total), ("historical", true, None));
    }

    #[test]
    fn notes_need_their_sale_and_lines_need_a_product_or_a_name() {
        let mut note = body();
        note["voucherType"] = json!(8);
        note["items"] = json!([{"quantity": 1, "unitPrice": 100}]);
        let errors = parse_sale(&note, None, TODAY).expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["items[0].name", "associatedSaleId"]);
        assert_eq!(formatted_number(Some("B"), 3, Some(42)).as_deref(), Some("B 00003-00000042"));
        assert!(voucher_kind(4).is_none(), "receipts are not sales");
    }
}
