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

mod batches;
mod handler;
pub mod invoicing;

pub use handler::{InvoiceSales, SaleOutcome, Sales};

use crate::aggregate::{BusinessDetail, Rejection};
use crate::contacts::Customer;
use crate::inventory::reservations::ReservationChange;
use crate::inventory::{Move, NegativeStock, WantedMove, expand_combos, retired_component};
use crate::lookups::{Groups, VariantFacts};
use crate::orders::{served, settled, wanted};
use crate::tax::{self, PriceBasis};
use crate::validate::{FieldError, ObjectReader, camel_case_keys};
use events::catalogue::{
    FiscalStatus, OrderEvent, OrderState, OrderStatus, SaleCustomer, SaleDiscount, SaleFiscal, SaleLine, SalePayment,
    SaleRecorded, SaleVat, StockLine, iso_date, iso_date_option,
};
use events::domain::{Cents, Percentage, Quantity, VatRate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use time::Date;
use uuid::Uuid;

/// The dated contract this build understands (`Service-Version`).
pub const DATED_CONTRACT: &str = "2026-08-20";
/// The most lines one sale lists.
pub const MAX_LINES: usize = 200;
/// The largest amount a sale body may carry (JavaScript's largest safe integer).
pub const MAX_SAFE: i64 = 9_007_199_254_740_991;

/// The kind and letter of a voucher type a sale may be. Receipts are not sales, and export vouchers
/// (E, 19 to 21) are not either: the authority authorizes them through its export service, not WSFEv1,
/// the one this service speaks, so such a sale would be refused by the authority every time.
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
        90 => ("quote", None),
        _ => return None,
    })
}

/// Export vouchers (E: invoice 19, debit note 20, credit note 21), which WSFEv1 does not authorize.
fn is_export(code: i32) -> bool {
    (19..=21).contains(&code)
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
    "orderId",
];
const KNOWN_ITEM: &[&str] = &[
    "productId",
    "warehouseId",
    "name",
    "quantity",
    "unitPrice",
    "taxRateId",
    "unitCost",
    "discountPercentage",
    "orderLineId",
];
const KNOWN_PAYMENT: &[&str] =
    &["methodId", "amount", "description", "reference", "registerId", "safeId", "bankAccountId"];

/// A line as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineInput {
    pub variant_id: Option<Uuid>,
    pub warehouse_id: Option<Uuid>,
    pub name: Option<String>,
    pub quantity: Quantity,
    pub unit_price: Cents,
    pub tax_rate_id: Option<VatRate>,
    pub unit_cost: Option<Cents>,
    #[serde(default, with = "events::domain::hundredths_option")]
    pub discount_hundredths: Option<Percentage>,
    /// The line of the sale's order it bills.
    #[serde(default)]
    pub order_line_id: Option<Uuid>,
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
    pub discount: Option<SaleDiscount>,
    pub exempt: Cents,
    pub non_taxed: Cents,
    /// The expected total (required by the dated contract).
    pub total: Option<Cents>,
    /// As sent, and as the sale records them.
    pub payments: Vec<SalePayment>,
    pub notes: Option<String>,
    pub fiscal_notes: Option<String>,
    pub integration_source: Option<String>,
    pub integration_id: Option<String>,
    /// Ask the authority for authorization now (default true); false records it as not invoiced.
    pub invoice: bool,
    pub associated_sale_id: Option<Uuid>,
    /// The order it bills (its items name the lines by `orderLineId`).
    #[serde(default)]
    pub order_id: Option<Uuid>,
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
    /// The delegated user recording the sale (none for an API key): its payment is theirs.
    #[serde(default)]
    pub created_by: Option<String>,
}

/// The command for `POST /api/v1/sales/{sale_id}/invoice`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvoiceCommand {
    pub sale_id: Uuid,
}

/// An amount the sale records: a whole number of cents from 0 to [`MAX_SAFE`] (the bound the interface
/// states) that is also money a sale can hold (at most [`Cents::MAX`]).
fn safe_amount(r: &mut ObjectReader<'_>, name: &str) -> Option<Cents> {
    let n = interface_amount(r, name)?;
    match Cents::new(n) {
        Ok(cents) => Some(cents),
        Err(_) => {
            let most = Cents::MAX;
            r.reject(name, "out_of_range", format!("is beyond the money a sale holds: at most {most} cents, not {n}"));
            None
        }
    }
}

/// A whole number of cents from 0 to [`MAX_SAFE`], as the interface states it. Alone, for the
/// historical contract's compatibility amounts: checked, never stored, so never held to the range of
/// money.
fn interface_amount(r: &mut ObjectReader<'_>, name: &str) -> Option<i64> {
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

fn percentage(r: &mut ObjectReader<'_>, name: &str) -> Option<Percentage> {
    let value = r.value(name)?;
    match Percentage::parse(value) {
        Ok(p) => Some(p),
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
        for name in ["subtotal", "taxAmount", "discountAmount", "total"] {
            interface_amount(&mut r, name);
        }
    }
    let voucher_type = r.required_int("voucherType", 1, 95).map(|v| v as i32);
    if let Some(code) = voucher_type
        && voucher_kind(code).is_none()
    {
        let message = if is_export(code) {
            "is an export voucher (E), which WSFEv1, the tax authority's service used here, does not authorize"
        } else {
            "is not a voucher type a sale can be (see /api/v1/voucher-types)"
        };
        r.reject("voucherType", "invalid_value", message);
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
        let tax_rate_id = line.optional_vat_rate("taxRateId");
        let unit_cost = line.value("unitCost").and_then(|_| line.required_cents("unitCost"));
        let discount_hundredths = percentage(&mut line, "discountPercentage");
        let order_line_id = line.optional_uuid("orderLineId");
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
                order_line_id,
            });
        }
    }
    let discount =
        match (r.optional_enum("discountType", &["percentage", "fixed"]).as_deref(), r.value("discountValue")) {
            (None, None) => None,
            (Some("percentage"), Some(_)) => percentage(&mut r, "discountValue").map(SaleDiscount::Percentage),
            (Some(_), Some(_)) => safe_amount(&mut r, "discountValue").map(SaleDiscount::Fixed),
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
        (Cents::ZERO, Cents::ZERO)
    } else {
        let exempt = safe_amount(&mut r, "exemptAmount").unwrap_or(Cents::ZERO);
        (exempt, safe_amount(&mut r, "nonTaxedAmount").unwrap_or(Cents::ZERO))
    };
    // The dated contract's expected total; the historical one's is a compatibility amount (above).
    let total = if dated.is_some() { safe_amount(&mut r, "total") } else { None };
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
                    let amount = p.required_positive_cents("amount");
                    let description = p.optional_str("description", 200);
                    let reference = p.optional_str("reference", 100);
                    let register_id = p.optional_uuid("registerId");
                    let safe_id = p.optional_uuid("safeId");
                    let bank_account_id = p.optional_uuid("bankAccountId");
                    // The payment lands in exactly one location of the treasury.
                    let named = [register_id, safe_id, bank_account_id];
                    match named.iter().flatten().count() {
                        0 => p.reject(
                            "registerId",
                            "required",
                            "name the location the payment lands in: registerId, safeId or bankAccountId",
                        ),
                        1 => {}
                        _ => p.reject(
                            "registerId",
                            "conflict",
                            "name one location: registerId, safeId or bankAccountId, not several",
                        ),
                    }
                    r.errors.append(&mut p.errors);
                    if let (Some(method_id), Some(amount)) = (method_id, amount) {
                        payments.push(SalePayment {
                            method_id,
                            amount,
                            description,
                            reference,
                            register_id,
                            safe_id,
                            bank_account_id,
                        });
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
    let order_id = r.optional_uuid("orderId");
    // A null `orderId` is none: lines naming an order line would bill nothing while their stock left
    // again. Only a malformed one (already reported) spares the lines their own error.
    if order_id.is_none() && r.value("orderId").is_none() {
        for (i, item) in items.iter().enumerate().filter(|(_, item)| item.order_line_id.is_some()) {
            let _ = item;
            r.errors.push(FieldError::new(
                format!("items[{i}].orderLineId"),
                "requires_order",
                "name the sale's orderId",
            ));
        }
    }
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
        order_id,
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
pub fn compute(input: &SaleInput, basis: PriceBasis, codes: &[VatRate]) -> Result<tax::Computed, Vec<FieldError>> {
    let mut lines = Vec::with_capacity(input.items.len());
    for (item, code) in input.items.iter().zip(codes) {
        let unit_price = item.unit_price;
        let discount = item.discount_hundredths.filter(|p| !p.is_zero()).map(tax::Discount::Percentage);
        lines.push(tax::Line { quantity: item.quantity, unit_price, vat_code: *code, discount });
    }
    let global_discount = input.discount.map(|discount| match discount {
        SaleDiscount::Percentage(percentage) => tax::Discount::Percentage(percentage),
        SaleDiscount::Fixed(cents) => tax::Discount::Fixed(cents),
    });
    let adjustments = tax::Adjustments { global_discount, exempt: input.exempt, non_taxed: input.non_taxed };
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

/// What a sale needs of its organization.
#[derive(Debug, Clone)]
pub struct OrgFacts {
    pub negative_stock: NegativeStock,
    pub prices_include_tax: bool,
    pub default_customer: Option<Uuid>,
}

/// Everything outside the command that deciding a sale reads, loaded by the handler.
#[derive(Debug, Clone)]
pub struct SaleFacts {
    pub org: OrgFacts,
    /// The point of sale's number and kind (`electronic` or `manual`), when it is the organization's.
    pub point: Option<(i32, String)>,
    /// The sale's customer (the organization's default one when none is named), as stored.
    pub customer: Option<Customer>,
    /// The facts of each product variant the sale names that is the organization's, and their groups.
    pub products: BTreeMap<Uuid, VariantFacts>,
    pub groups: Groups,
    pub default_warehouse: Option<Uuid>,
    /// Whether each warehouse the sale may move stock in is an active warehouse of the organization.
    pub warehouses: BTreeMap<Uuid, bool>,
    /// Whether each payment method the sale names is an active one of the organization.
    pub payment_methods: BTreeMap<Uuid, bool>,
    /// The sale a credit or debit note corrects, with its stream version.
    pub associated: Option<(SaleRecorded, i32)>,
    /// The components of every combo the sale or its order names.
    pub components: BTreeMap<Uuid, Vec<StockLine>>,
    /// The components no longer active of each combo the sale names that has any: its lines are refused.
    pub retired_components: BTreeMap<Uuid, Vec<Uuid>>,
    /// The order the sale bills, with its stream version.
    pub order: Option<(OrderState, i32)>,
}

/// What a sale command decided: the sale as it is recorded (its stock changes, number and fiscal state
/// are the handler's to write), the stock it moves, and whether the authority numbers its voucher.
#[derive(Debug, Clone)]
pub struct SaleDecision {
    pub sale: SaleRecorded,
    pub moves: Vec<WantedMove>,
    pub fiscal_voucher: bool,
    pub letter: Option<&'static str>,
    /// The billed order's events and its reservation as the sale leaves it.
    pub order: Option<(Vec<OrderEvent>, ReservationChange)>,
}

/// What billing an order does: per sale line, how much of it leaves the warehouse (a unit leaves
/// once, with its delivery or its bill), and the order's events and reservation.
struct Billed {
    leaving: Vec<Quantity>,
    order: (Vec<OrderEvent>, ReservationChange),
}

/// Bills the sale's order (a credit note unbills it, only what the sale it corrects billed, and opens
/// again an order its lines completed; a debit note, which charges more for what was already billed,
/// leaves it as it is): each line naming an order line raises (lowers) its `billed`, never past the
/// ordered quantity (nor below zero): 422 naming the item.
fn bill_order(
    input: &SaleInput,
    kind: &str,
    facts: &SaleFacts,
    errors: &mut Vec<FieldError>,
) -> Result<Option<Billed>, Rejection> {
    let Some(order_id) = input.order_id else { return Ok(None) };
    let Some((order, _)) = &facts.order else {
        errors.push(not_found("orderId", "order"));
        return Ok(None);
    };
    // The sale is the order's customer's (taken when it names none; a note's is its corrected sale's):
    // another customer would owe, or be credited, what this one ordered.
    if let Some(customer) = &facts.customer
        && customer.id != order.customer_id
    {
        errors.push(FieldError::new(
            "customerId",
            "not_in_order",
            format!("the order is customer {}'s: a sale of it (or a note correcting one) is theirs", order.customer_id),
        ));
    }
    if kind == "debit_note" {
        return Ok(None);
    }
    let credit = kind == "credit_note";
    if !credit && order.status != OrderStatus::Open {
        let current = order.status.as_str();
        return Err(Rejection::state_conflict(
            "ORDER_NOT_OPEN",
            current,
            format!("the order is {current}: only an open order is billed"),
        ));
    }
    let mut next = order.clone();
    let mut leaving = Vec::with_capacity(input.items.len());
    let mut over = Vec::new();
    for (i, item) in input.items.iter().enumerate() {
        let Some(line_id) = item.order_line_id else {
            leaving.push(item.quantity);
            continue;
        };
        let Some(line) = next.lines.iter_mut().find(|l| l.id == line_id) else {
            errors.push(FieldError::new(format!("items[{i}].orderLineId"), "not_found", "the order has no such line"));
            leaving.push(Quantity::ZERO);
            continue;
        };
        // What leaves for the line (and what a credit note brings back) is the line's own product: a
        // line of another product, or free text, would move other stock than the order's deliveries.
        if item.variant_id != line.variant_id {
            let message = match line.variant_id {
                Some(product) => format!("order line {line_id} is product {product}: bill it with that productId"),
                None => format!("order line {line_id} is free text: bill it without a productId"),
            };
            errors.push(FieldError::new(format!("items[{i}].productId"), "not_in_order", message));
            leaving.push(Quantity::ZERO);
            continue;
        }
        let moved_before = line.moved();
        let billed =
            if credit { line.billed.checked_sub(item.quantity) } else { line.billed.checked_add(item.quantity) };
        match billed.filter(|b| !b.is_negative() && *b <= line.quantity) {
            Some(billed) => line.billed = billed,
            None => {
                let (left, what) = if credit { (line.billed, "billed") } else { (line.unbilled(), "left to bill") };
                over.push(BusinessDetail {
                    field: Some(format!("items[{i}].quantity")),
                    code: "EXCEEDS_ORDERED".into(),
                    message: format!("order line {line_id} has {left} {what}"),
                    metadata: BTreeMap::from([
                        ("order_line_id".to_owned(), serde_json::json!(line_id)),
                        ("available_quantity".to_owned(), serde_json::json!(left.to_string())),
                    ]),
                });
                leaving.push(Quantity::ZERO);
                continue;
            }
        }
        leaving.push(if credit {
            moved_before.remaining_after(line.moved())
        } else {
            line.moved().remaining_after(moved_before)
        });
    }
    // Once every field names what exists, a credit note un-bills only what the sale it corrects billed.
    if credit
        && errors.is_empty()
        && let Some((corrected, _)) = &facts.associated
    {
        billed_by_corrected(input, order_id, corrected)?;
    }
    if !over.is_empty() {
        return Err(Rejection::Unprocessable {
            code: "PRECONDITION_FAILED".into(),
            message: format!("the sale bills order {order_id} past what it ordered; nothing was recorded"),
            details: over,
        });
    }
    // Un-billed, an order its lines completed opens again, to be billed again, as a deleted delivery
    // note's order does (one completed by hand stays closed).
    if credit && order.status == OrderStatus::Completed && served(order) && !served(&next) {
        next.status = OrderStatus::Open;
    }
    let (events, after) = settled(order, next);
    Ok(Some(Billed { leaving, order: (events, ReservationChange::Set(wanted(&after, &facts.components)?)) }))
}

/// What a credit note un-bills of its order is what the sale it corrects billed of it: that order (a
/// debit or credit note bills none), and of each line at most what that sale billed, this note's earlier
/// items counted. Else 422 `PRECONDITION_FAILED` naming each item at fault (`ASSOCIATED_SALE_ORDER`):
/// the note would un-bill what another sale billed, and the order would count less billed than its sales
/// bill.
fn billed_by_corrected(input: &SaleInput, order_id: Uuid, corrected: &SaleRecorded) -> Result<(), Rejection> {
    let detail = |field: String, message: String, metadata: BTreeMap<String, Value>| BusinessDetail {
        field: Some(field),
        code: "ASSOCIATED_SALE_ORDER".into(),
        message,
        metadata,
    };
    let bills = !matches!(corrected.document_kind.as_str(), "credit_note" | "debit_note");
    let billed_order = corrected.order_id.filter(|_| bills);
    let mut details = Vec::new();
    if billed_order != Some(order_id) {
        let message = match billed_order {
            Some(other) => format!("the sale it corrects billed order {other}, not {order_id}"),
            None => format!("the sale it corrects billed no order, not {order_id}"),
        };
        let metadata = BTreeMap::from([("associated_sale_order_id".to_owned(), serde_json::json!(billed_order))]);
        details.push(detail("orderId".to_owned(), message, metadata));
    } else {
        // What the corrected sale billed of each line, less what this note's earlier items un-bill.
        let mut left: BTreeMap<Uuid, Quantity> = BTreeMap::new();
        for line in &corrected.lines {
            if let Some(line_id) = line.order_line_id {
                let billed = left.entry(line_id).or_insert(Quantity::ZERO);
                *billed = billed.saturating_add(line.quantity);
            }
        }
        for (i, item) in input.items.iter().enumerate() {
            let Some(line_id) = item.order_line_id else { continue };
            let metadata = |available: Quantity| {
                BTreeMap::from([
                    ("order_line_id".to_owned(), serde_json::json!(line_id)),
                    ("available_quantity".to_owned(), serde_json::json!(available.to_string())),
                ])
            };
            match left.get(&line_id).copied() {
                None => details.push(detail(
                    format!("items[{i}].orderLineId"),
                    format!("the sale it corrects did not bill order line {line_id}"),
                    metadata(Quantity::ZERO),
                )),
                Some(available) if item.quantity > available => details.push(detail(
                    format!("items[{i}].quantity"),
                    format!("the sale it corrects leaves {available} of order line {line_id} to un-bill"),
                    metadata(available),
                )),
                Some(available) => {
                    left.insert(line_id, available.remaining_after(item.quantity));
                }
            }
        }
    }
    if details.is_empty() {
        return Ok(());
    }
    Err(Rejection::Unprocessable {
        code: "PRECONDITION_FAILED".into(),
        message: format!(
            "a credit note un-bills only what the sale it corrects billed of order {order_id}; nothing was recorded"
        ),
        details,
    })
}

fn not_found(field: impl Into<String>, what: &str) -> FieldError {
    FieldError::new(field, "not_found", format!("no active {what} of this organization has this id"))
}

/// Decides a sale against the facts: pure. References, canonical amounts, the dated contract's total,
/// the payments, the stock it moves and the sale as recorded.
pub fn decide(command: &SaleCommand, facts: &SaleFacts) -> Result<SaleDecision, Rejection> {
    let input = &command.input;
    let (kind, letter) = voucher_kind(input.voucher_type).unwrap_or(("invoice", None));
    let mut errors = Vec::new();

    // The point of sale, and whether the authority numbers its vouchers.
    let point = &facts.point;
    if point.is_none() {
        errors.push(not_found("pointOfSaleId", "point of sale"));
    }
    let electronic = point.as_ref().is_none_or(|(_, kind)| kind == "electronic");

    // The customer (the organization's default one when none is named).
    let customer = facts.customer.clone().filter(|c| c.is_active);
    if customer.is_none() {
        errors.push(not_found("customerId", "customer"));
    }

    // Products, their warehouses (the default one when a line names none) and payment methods.
    let (products, groups) = (&facts.products, &facts.groups);
    let mut lines = Vec::with_capacity(input.items.len());
    let mut codes = Vec::with_capacity(input.items.len());
    for (i, item) in input.items.iter().enumerate() {
        let fact = item.variant_id.and_then(|v| products.get(&v));
        if item.variant_id.is_some() && fact.is_none_or(|f| !f.is_active) {
            errors.push(not_found(format!("items[{i}].productId"), "product"));
        } else if let Some(components) = item.variant_id.and_then(|v| facts.retired_components.get(&v)) {
            // A combo leaves as its components: one deactivated is refused as an inactive product is.
            errors.push(retired_component(format!("items[{i}].productId"), components));
        }
        let stocked = fact.is_some_and(|f| f.product_type.is_stocked());
        // A line billing an order line leaves from where the order holds it (the line's warehouse, or
        // the order's), so the units its reservation held are the ones that leave.
        let of_order = item.order_line_id.and_then(|line_id| {
            let (order, _) = facts.order.as_ref()?;
            let line = order.lines.iter().find(|l| l.id == line_id)?;
            line.warehouse_id.or(order.assigned_warehouse_id)
        });
        let warehouse =
            if stocked { item.warehouse_id.or(of_order).or(facts.default_warehouse) } else { item.warehouse_id };
        if let Some(w) = warehouse {
            let usable = facts.warehouses.get(&w).copied().unwrap_or(false);
            if !usable {
                errors.push(not_found(format!("items[{i}].warehouseId"), "warehouse"));
            }
        } else if stocked {
            errors.push(FieldError::new(
                format!("items[{i}].warehouseId"),
                "required",
                "the organization has no default warehouse: name one",
            ));
        }
        let group = fact.and_then(|f| groups.get(&f.group_id)).map(|state| &state.group);
        let variant = item.variant_id.and_then(|v| group.and_then(|g| g.variants.iter().find(|x| x.id == v)));
        let code = item.tax_rate_id.or(fact.map(|f| f.tax_rate_id)).unwrap_or(VatRate::GENERAL);
        codes.push(code);
        lines.push((
            item,
            warehouse.filter(|_| stocked),
            group.map(|g| g.shared.name.clone()),
            variant.map(|v| v.sku.clone()),
        ));
    }
    if kind == "credit_note" && !input.payments.is_empty() {
        errors.push(FieldError::new(
            "paymentMethods",
            "not_allowed",
            "a credit note receives no payment: it lowers what the sale it corrects owes, or stays on account",
        ));
    }
    for (i, payment) in input.payments.iter().enumerate() {
        if !facts.payment_methods.get(&payment.method_id).copied().unwrap_or(false) {
            errors.push(not_found(format!("paymentMethods[{i}].methodId"), "payment method"));
        }
    }
    if input.associated_sale_id.is_some() && facts.associated.is_none() {
        errors.push(FieldError::new("associatedSaleId", "not_found", "no sale of this organization has this id"));
    }
    let billed = bill_order(input, kind, facts, &mut errors)?;
    if !errors.is_empty() {
        return Err(Rejection::Invalid { errors });
    }
    // A note corrects what one customer owes: its own customer's account is the one it moves.
    if let (Some((corrected, _)), Some(customer)) = (&facts.associated, &customer)
        && corrected.customer.id != customer.id
    {
        return Err(Rejection::Unprocessable {
            code: "PRECONDITION_FAILED".into(),
            message: "a credit or debit note is for the customer of the sale it corrects".into(),
            details: vec![crate::aggregate::BusinessDetail {
                field: Some("customerId".into()),
                code: "ASSOCIATED_SALE_CUSTOMER".into(),
                message: format!("the sale it corrects is {}'s (customer {})", corrected.customer.name, corrected.customer.id),
                metadata: BTreeMap::from([("customer_id".to_owned(), serde_json::json!(corrected.customer.id))]),
            }],
        });
    }

    // Canonical amounts; the dated contract's total must match them.
    let basis = price_basis(input, facts.org.prices_include_tax);
    let computed = compute(input, basis, &codes).map_err(|errors| Rejection::Invalid { errors })?;
    if input.is_dated()
        && let Some(total) = input.total
        && total != computed.total
    {
        return Err(Rejection::Unprocessable {
            code: "TOTAL_MISMATCH".into(),
            message: format!(
                "total is {total} but the canonical total is {}; nothing was recorded",
                computed.total.get()
            ),
            details: vec![BusinessDetail {
                field: Some("total".into()),
                code: "TOTAL_MISMATCH".into(),
                message: "the total differs from the canonical calculation".into(),
                metadata: BTreeMap::from([
                    ("expected_total".to_owned(), serde_json::Value::from(computed.total.get())),
                    ("sent_total".to_owned(), serde_json::Value::from(total.get())),
                ]),
            }],
        });
    }
    // Payments whose sum leaves the range exceed any total.
    let balance = Cents::checked_sum(input.payments.iter().map(|p| p.amount))
        .and_then(|paid| computed.total.checked_sub(paid))
        .filter(|balance| !balance.is_negative());
    let Some(balance) = balance else {
        return Err(Rejection::Invalid {
            errors: vec![FieldError::new(
                "paymentMethods",
                "exceeds_total",
                "the payments add up to more than the total",
            )],
        });
    };

    // Stock: product lines leave their warehouse (a credit note brings them back; a debit note charges
    // more for goods already gone and moves none); combos move their components, services nothing.
    let returns = kind == "credit_note";
    let moves_stock = kind != "debit_note";
    let mut wanted: BTreeMap<Uuid, Vec<StockLine>> = BTreeMap::new();
    let mut fields: HashMap<(Uuid, Uuid), String> = HashMap::new();
    for (i, (item, warehouse, _, _)) in lines.iter().enumerate().filter(|_| moves_stock) {
        // A line of an order moves only what its delivery has not taken already.
        let quantity = billed.as_ref().and_then(|b| b.leaving.get(i).copied()).unwrap_or(item.quantity);
        if let (Some(warehouse), Some(variant), true) = (warehouse, item.variant_id, quantity.is_positive()) {
            wanted.entry(*warehouse).or_default().push(StockLine { variant_id: variant, quantity });
            fields.entry((variant, *warehouse)).or_insert_with(|| format!("items[{i}].quantity"));
        }
    }
    let mut moves = Vec::new();
    for (warehouse, stock_lines) in &wanted {
        let expanded =
            expand_combos(stock_lines, &facts.components, "items").map_err(|errors| Rejection::Invalid { errors })?;
        for line in expanded {
            let field = fields.get(&(line.variant_id, *warehouse)).cloned().unwrap_or_else(|| "items".to_owned());
            let action = if returns { Move::Add(line.quantity) } else { Move::Take(line.quantity) };
            moves.push(WantedMove { key: (line.variant_id, *warehouse), action, field });
        }
    }
    let customer = customer.map(|c| SaleCustomer {
        id: c.id,
        name: c.fields.name,
        email: c.fields.email,
        phone: c.fields.phone,
        tax_id: c.fields.tax_id,
        tax_id_type: c.fields.tax_id_type,
        tax_category: c.fields.tax_category,
        address: c.fields.address,
        apartment: c.fields.apartment,
        city: c.fields.city,
        province: c.fields.province,
    });
    let point = point.as_ref().ok_or_else(|| Rejection::not_found("point of sale"))?;
    let sale_lines = lines
        .iter()
        .zip(&computed.lines)
        .zip(&codes)
        .map(|(((item, warehouse, name, sku), amounts), code)| SaleLine {
            id: Uuid::now_v7(),
            variant_id: item.variant_id,
            name: item.name.clone().or_else(|| name.clone()).unwrap_or_default(),
            sku: sku.clone(),
            quantity: item.quantity,
            unit_price: item.unit_price,
            unit_cost: item.unit_cost,
            tax_rate_id: *code,
            discount_hundredths: item.discount_hundredths,
            warehouse_id: *warehouse,
            amount: amounts.amount,
            discount: amounts.discount,
            global_discount: amounts.global_discount,
            net: amounts.net,
            vat: amounts.vat,
            total: amounts.total,
            order_line_id: item.order_line_id,
        })
        .collect();
    let concept = input.concept.unwrap_or_else(|| {
        let services = input
            .items
            .iter()
            .filter(|i| i.variant_id.and_then(|v| products.get(&v)).is_some_and(|f| !f.product_type.is_stocked()))
            .count();
        if services == 0 {
            1
        } else if services == input.items.len() {
            2
        } else {
            3
        }
    });
    let sale = SaleRecorded {
        contract: input.contract.clone(),
        voucher_type: input.voucher_type,
        document_kind: kind.to_owned(),
        letter: letter.map(str::to_owned),
        point_of_sale_id: input.point_of_sale_id,
        point_of_sale_number: point.0,
        number: None,
        invoice_date: input.invoice_date,
        due_date: input.due_date,
        service_from: input.service_from,
        service_to: input.service_to,
        concept,
        currency: "PES".into(),
        customer: customer.unwrap_or_default(),
        prices_include_tax: facts.org.prices_include_tax,
        lines: sale_lines,
        discount: input.discount,
        exempt: computed.exempt,
        non_taxed: computed.non_taxed,
        subtotal: computed.subtotal,
        tax_amount: computed.tax_amount,
        discount_amount: computed.discount_amount,
        total: computed.total,
        vat: computed.breakdown.iter().map(|v| SaleVat { code: v.code, base: v.base, amount: v.amount }).collect(),
        payments: input.payments.clone(),
        balance,
        notes: input.notes.clone(),
        fiscal_notes: input.fiscal_notes.clone(),
        integration_source: input.integration_source.clone(),
        integration_id: input.integration_id.clone(),
        associated_sale_id: input.associated_sale_id,
        changes: Vec::new(),
        order_id: input.order_id,
        fiscal: fiscal(FiscalStatus::NotInvoiced),
    };

    let fiscal_voucher = letter.is_some() && electronic;
    let order = billed.map(|b| b.order);
    Ok(SaleDecision { sale, moves, fiscal_voucher, letter, order })
}

#[cfg(test)]
mod tests;
