//! Orders (Style A, snake_case): made of a quote (its conversion, moving the quote's reservation to the
//! order in one transaction) or created for the service's own channel, with lines of products or free
//! text, canonical amounts from the tax engine, and an optional stock reservation of what is still to
//! deliver. An open order's notes are edited alone, or its structure (lines, warehouse, delivery
//! method, global discount) as a whole against the `updated_at` the editor read; it is cancelled
//! (nothing delivered or billed yet) or completed, each releasing what is still reserved.
//!
//! | from | edit | cancel | complete |
//! |---|---|---|---|
//! | open | open | cancelled (nothing delivered or billed) | completed |
//! | completed, cancelled | 409 | 409 | 409 |
//!
//! The domain has the document shape ([`crate::document`]): here the body's parsing, the facts
//! ([`OrderFacts`]) and the pure [`decide`]; in `handler.rs` the loads and the write.

mod handler;

pub use handler::{Orders, load_order};

use crate::aggregate::{Rejection, reject_fields};
use crate::inventory::reservations::{ReservationChange, Wanted, of_components, through_in_past};
use crate::inventory::{StockShortfall, retired_component};
use crate::lookups::VariantFacts;
use crate::quotes::{amounts, read_discount, tax_line};
use crate::tax::PriceBasis;
use crate::validate::{FieldEdit, FieldError, ObjectReader};
use events::catalogue::{
    FulfillmentStatus, OrderEvent, OrderLine, OrderReservation, OrderState, OrderStatus, QuoteDiscount, QuoteState,
    ReservedLine, StockLine,
};
use events::domain::{Cents, Quantity, VatRate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// The most lines one order lists.
pub const MAX_LINES: usize = 200;
/// The date an order's reservation holds through when it names none: until the order closes.
pub const UNTIL_CLOSED: Date = time::macros::date!(9999 - 12 - 31);

/// What an order body may not carry: computed or server-assigned fields.
pub const READ_ONLY: &[&str] = &[
    "object",
    "id",
    "number",
    "status",
    "fulfillment_status",
    "quote_id",
    "prices_include_tax",
    "subtotal",
    "tax_amount",
    "discount_amount",
    "total",
    "created_at",
    "updated_at",
];
const KNOWN: &[&str] = &[
    "customer_id",
    "lines",
    "assigned_warehouse_id",
    "delivery_method",
    "notes",
    "global_discount_amount",
    "reservation",
];
const KNOWN_EDIT: &[&str] =
    &["lines", "assigned_warehouse_id", "delivery_method", "notes", "global_discount_amount", "expected_updated_at"];
const KNOWN_LINE: &[&str] = &["id", "product_id", "name", "quantity", "unit_price", "tax_rate_id", "discount"];
const READ_ONLY_LINE: &[&str] = &["reserved", "delivered", "billed", "warehouse_id"];

/// A line as sent: an existing line's `id` (edits), a product or free text, the quantity, the net unit
/// price and a discount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineInput {
    pub id: Option<Uuid>,
    pub variant_id: Option<Uuid>,
    pub name: Option<String>,
    pub quantity: Quantity,
    pub unit_price: Cents,
    pub tax_rate_id: Option<VatRate>,
    pub discount: Option<QuoteDiscount>,
}

/// A new order as sent (`POST /api/v1/orders`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderInput {
    pub customer_id: Uuid,
    pub lines: Vec<LineInput>,
    pub assigned_warehouse_id: Option<Uuid>,
    pub delivery_method: Option<String>,
    pub notes: Option<String>,
    pub global_discount_amount: Option<Cents>,
    pub reservation: Option<OrderReservation>,
}

/// A structural edit: the complete lines and warehouse, and optional fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderEdit {
    pub lines: Vec<LineInput>,
    pub assigned_warehouse_id: Uuid,
    pub delivery_method: FieldEdit<String>,
    pub notes: FieldEdit<String>,
    pub global_discount_amount: FieldEdit<Cents>,
    #[serde(with = "time::serde::rfc3339")]
    pub expected_updated_at: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OrderCommand {
    Create {
        id: Uuid,
        input: OrderInput,
    },
    /// Makes order `id` of quote `quote_id`.
    Convert {
        id: Uuid,
        quote_id: Uuid,
    },
    /// A `PATCH` carrying only `notes` (`None`: cleared).
    EditNotes {
        id: Uuid,
        notes: Option<String>,
    },
    Edit {
        id: Uuid,
        edit: OrderEdit,
    },
    Cancel {
        id: Uuid,
    },
    Complete {
        id: Uuid,
    },
}

impl OrderCommand {
    pub fn order_id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } | Self::Convert { id, .. } | Self::EditNotes { id, .. } => *id,
            Self::Edit { id, .. } | Self::Cancel { id } | Self::Complete { id } => *id,
        }
    }
}

/// What the workers answer: the order, the stock shortfalls the policy let through, and the quote it
/// was converted from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderOutcome {
    pub id: Uuid,
    pub order: OrderState,
    pub warnings: Vec<StockShortfall>,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

fn refuse_unknown(r: &mut ObjectReader, body: &Value, known: &[&str], read_only: &[&str], what: &str) {
    if let Some(object) = body.as_object() {
        for key in object.keys() {
            if read_only.contains(&key.as_str()) {
                r.reject(key, "read_only", "is set by the service and must not be sent");
            } else if !known.contains(&key.as_str()) {
                r.reject(key, "unknown_field", format!("is not a field of {what}"));
            }
        }
    }
}

/// The `lines` of a body, every bad field reported on `r`.
fn read_lines(r: &mut ObjectReader, body_lines: &[Value]) -> Vec<LineInput> {
    let mut lines = Vec::new();
    for (i, item) in body_lines.iter().enumerate() {
        let path = format!("lines[{i}]");
        let mut line = ObjectReader::new(item, &path);
        refuse_unknown(&mut line, item, KNOWN_LINE, READ_ONLY_LINE, "an order line");
        let id = line.optional_uuid("id");
        // A line is a product or free text: neither is ever null.
        let null = |line: &ObjectReader, field: &str| line.has(field) && line.value(field).is_none();
        if null(&line, "product_id") {
            line.reject("product_id", "invalid_type", "must not be null: omit it");
        }
        let variant_id = line.optional_uuid("product_id");
        // A free-text line says what it is.
        let name = line.has("name").then(|| line.required_str("name", 1, 200)).filter(|n| !n.is_empty());
        match (line.has("product_id"), line.has("name")) {
            (true, true) => line.reject("name", "both_kinds", "a line names a product or free text, not both"),
            (false, false) => line.reject("product_id", "required", "a line names a product_id or a name"),
            _ => {}
        }
        let quantity = line.required_quantity("quantity", true);
        let unit_price = line.required_cents("unit_price");
        let tax_rate_id = line.optional_vat_rate("tax_rate_id");
        let discount = read_discount(&mut line, &path);
        r.errors.append(&mut line.errors);
        if let (Some(quantity), Some(unit_price)) = (quantity, unit_price) {
            lines.push(LineInput { id, variant_id, name, quantity, unit_price, tax_rate_id, discount });
        }
    }
    lines
}

/// Parses a new order's body: every read-only and unknown field is named, every bad field reported at
/// once. A reservation's date is checked against the organization's date when the order is decided.
pub fn parse_order(body: &Value) -> Result<OrderInput, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    refuse_unknown(&mut r, body, KNOWN, READ_ONLY, "an order");
    let customer_id = r.required_uuid("customer_id");
    let assigned_warehouse_id = r.optional_uuid("assigned_warehouse_id");
    let delivery_method = r.optional_str("delivery_method", 100);
    let notes = r.optional_str("notes", 2000);
    let global_discount_amount =
        r.value("global_discount_amount").and_then(|_| r.required_cents("global_discount_amount"));
    let mut reservation = None;
    if let Some(value) = r.value("reservation") {
        let mut res = ObjectReader::new(value, "reservation");
        res.refuse_unknown(value, &["enabled", "reserved_through_date"], "a reservation");
        let enabled = res.optional_bool("enabled").unwrap_or(false);
        let through = res.optional_date("reserved_through_date");
        r.errors.append(&mut res.errors);
        reservation = Some(OrderReservation { enabled, reserved_through_date: through });
    }
    let body_lines = r.required_array("lines", 1, MAX_LINES);
    let lines = read_lines(&mut r, body_lines);
    for (i, line) in lines.iter().enumerate().filter(|(_, l)| l.id.is_some()) {
        let _ = line;
        r.errors.push(FieldError::new(format!("lines[{i}].id"), "read_only", "a new order's lines have no id yet"));
    }
    let input = OrderInput {
        customer_id: customer_id.unwrap_or_default(),
        lines,
        assigned_warehouse_id,
        delivery_method,
        notes,
        global_discount_amount,
        reservation,
    };
    r.finish(input)
}

/// What a `PATCH` body asks: `Ok(Err(notes))` for a body with only `notes` (the historical contract),
/// `Ok(Ok(edit))` for a structural edit.
pub fn parse_patch(body: &Value) -> Result<Result<OrderEdit, Option<String>>, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    refuse_unknown(&mut r, body, KNOWN_EDIT, READ_ONLY, "an order edit");
    let notes_only = body.as_object().is_some_and(|o| o.keys().all(|k| k == "notes"));
    // `""` (or null) clears the notes.
    let notes = r.has("notes").then(|| r.optional_str("notes", 2000));
    if notes_only {
        if !r.has("notes") {
            r.reject("notes", "required", "send notes, or a structural edit");
        }
        return r.finish(Err(notes.flatten()));
    }
    let assigned = r.required_uuid("assigned_warehouse_id");
    let expected = match r.value("expected_updated_at") {
        None | Some(Value::Null) => {
            r.reject("expected_updated_at", "required", "a structural edit sends the updated_at it read");
            None
        }
        Some(Value::String(text)) => {
            match OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339) {
                Ok(at) => Some(at),
                Err(_) => {
                    r.reject("expected_updated_at", "invalid_format", "must be an RFC 3339 timestamp");
                    None
                }
            }
        }
        Some(_) => {
            r.reject("expected_updated_at", "invalid_type", "must be an RFC 3339 timestamp");
            None
        }
    };
    let delivery_method = r.has("delivery_method").then(|| r.optional_str("delivery_method", 100));
    let global_discount_amount = match r.value("global_discount_amount") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(_) => r.required_cents("global_discount_amount").map(|c| (c != Cents::ZERO).then_some(c)),
    };
    let body_lines = r.required_array("lines", 1, MAX_LINES);
    let lines = read_lines(&mut r, body_lines);
    let (Some(assigned_warehouse_id), Some(expected_updated_at)) = (assigned, expected) else {
        return Err(r.finish(()).err().unwrap_or_default());
    };
    r.finish(Ok(OrderEdit {
        lines,
        assigned_warehouse_id,
        delivery_method: FieldEdit::of(delivery_method),
        notes: FieldEdit::of(notes),
        global_discount_amount: FieldEdit::of(global_discount_amount),
        expected_updated_at,
    }))
}

/// Everything outside the command that deciding an order reads, loaded by the handler.
#[derive(Debug, Clone, Default)]
pub struct OrderFacts {
    /// The order as its stream has it (none: no such order), the stream's version and when its last
    /// event was recorded.
    pub current: Option<OrderState>,
    pub version: i32,
    pub updated_at: Option<OffsetDateTime>,
    /// Conversions: the quote as its stream has it.
    pub quote: Option<QuoteState>,
    /// The name of the order's customer, when it is an active customer of the organization.
    pub customer: Option<String>,
    /// The facts of each product variant the order names that is the organization's.
    pub products: BTreeMap<Uuid, VariantFacts>,
    /// Whether each warehouse the order names is an active warehouse of the organization.
    pub warehouses: BTreeMap<Uuid, bool>,
    /// The components of every combo the order names.
    pub components: BTreeMap<Uuid, Vec<StockLine>>,
    /// The components no longer active of each combo the order's lines name that has any (not read for a
    /// conversion): a line naming it is refused, unless it is kept naming it.
    pub retired_components: BTreeMap<Uuid, Vec<Uuid>>,
    /// The organization's date.
    pub today: Option<Date>,
}

/// What an order command decided: its events, the quote's event of a conversion, and what becomes of
/// the order's reservation (a conversion moves the quote's to it).
#[derive(Debug, Clone)]
pub struct OrderDecision {
    pub events: Vec<OrderEvent>,
    pub quote_event: Option<events::catalogue::QuoteEvent>,
    pub reservation: ReservationChange,
}

fn closed(order: &OrderState, what: &str) -> Rejection {
    let current = order.status.as_str();
    Rejection::state_conflict(
        "ORDER_NOT_OPEN",
        current,
        format!("the order is {current}: only an open order is {what}"),
    )
}

/// The amounts of `lines` with `global` off, on the order's price basis.
fn priced(mut order: OrderState) -> Result<OrderState, Rejection> {
    let basis = if order.prices_include_tax { PriceBasis::Gross } else { PriceBasis::Net };
    let lines: Vec<crate::tax::Line> =
        order.lines.iter().map(|l| tax_line(l.quantity, l.unit_price, l.tax_rate_id, l.discount)).collect();
    let computed = amounts(basis, &lines, order.global_discount_amount, "lines")?;
    order.subtotal = computed.subtotal;
    order.tax_amount = computed.tax_amount;
    order.discount_amount = computed.discount_amount;
    order.total = computed.total;
    Ok(order)
}

/// What the order wants reserved: what has not left yet (neither delivered nor billed) of its
/// physical lines, and of its combo lines as their components (`combos`, each combo's among them), in
/// each line's warehouse, while it is open and asks for a reservation.
pub fn wanted(order: &OrderState, combos: &BTreeMap<Uuid, Vec<StockLine>>) -> Result<Option<Wanted>, Rejection> {
    let Some(OrderReservation { enabled: true, reserved_through_date }) = &order.reservation else { return Ok(None) };
    if order.status != OrderStatus::Open {
        return Ok(None);
    }
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in order.lines.iter().enumerate() {
        let Some(variant_id) = line.variant_id.filter(|v| line.physical || combos.contains_key(v)) else { continue };
        let unmoved = line.unmoved();
        if unmoved == Quantity::ZERO {
            continue;
        }
        match line.warehouse_id.or(order.assigned_warehouse_id) {
            Some(warehouse_id) => lines
                .push((ReservedLine { variant_id, warehouse_id, quantity: unmoved }, format!("lines[{i}].quantity"))),
            None => errors.push(FieldError::new(
                "assigned_warehouse_id",
                "required",
                "a reservation needs the warehouse the physical lines leave from",
            )),
        }
    }
    if !errors.is_empty() {
        errors.truncate(1);
        return Err(Rejection::Invalid { errors });
    }
    let lines = of_components(lines, combos)?;
    Ok((!lines.is_empty()).then(|| Wanted { reserved_through: reserved_through_date.unwrap_or(UNTIL_CLOSED), lines }))
}

/// Checks the references of a body's lines against the facts and builds the lines (new lines get ids
/// derived from the order and `seed`, so a decision stays pure); `errors` holds what the rest of the
/// body already broke, reported with the lines' own.
fn build_lines(
    id: Uuid,
    seed: i32,
    input: &[LineInput],
    current: Option<&OrderState>,
    facts: &OrderFacts,
    prices_include_tax: bool,
    mut errors: Vec<FieldError>,
) -> Result<Vec<OrderLine>, Rejection> {
    let mut lines = Vec::with_capacity(input.len());
    // Kept lines that were delivered or billed and now name another product (or free text).
    let mut moved = Vec::new();
    for (i, item) in input.iter().enumerate() {
        let existing = match item.id {
            None => None,
            Some(line_id) if input[..i].iter().any(|earlier| earlier.id == Some(line_id)) => {
                errors.push(FieldError::new(format!("lines[{i}].id"), "duplicate", "an earlier line keeps this line"));
                continue;
            }
            Some(line_id) => match current.and_then(|o| o.lines.iter().find(|l| l.id == line_id)) {
                Some(line) => Some(line),
                None => {
                    errors.push(FieldError::new(format!("lines[{i}].id"), "not_found", "the order has no such line"));
                    continue;
                }
            },
        };
        let fact = match item.variant_id {
            None => None,
            Some(variant) => match facts.products.get(&variant).filter(|f| f.is_active) {
                Some(fact) => match facts.retired_components.get(&variant) {
                    // A combo reserves its components: one deactivated since refuses the line as an inactive
                    // product does, and a kept line may still name the combo as it may such a product.
                    Some(components) if existing.is_none_or(|l| l.variant_id != Some(variant)) => {
                        errors.push(retired_component(format!("lines[{i}].product_id"), components));
                        continue;
                    }
                    _ => Some(fact),
                },
                // A kept line may still name a product deactivated since.
                None if existing.is_some_and(|l| l.variant_id == Some(variant)) => None,
                None => {
                    errors.push(FieldError::new(
                        format!("lines[{i}].product_id"),
                        "not_found",
                        "no active product of this organization has this id",
                    ));
                    continue;
                }
            },
        };
        // Omitted, a kept line's rate stays; a new line (or one naming another product) takes its product's.
        let kept = existing.filter(|l| l.variant_id == item.variant_id);
        let code = item
            .tax_rate_id
            .or(kept.map(|l| l.tax_rate_id))
            .or(fact.map(|f| f.tax_rate_id))
            .or(existing.map(|l| l.tax_rate_id))
            .unwrap_or(VatRate::GENERAL);
        // Lines carry net prices on the wire; an order made with VAT-inclusive prices keeps an
        // untouched line's stored price exactly (same net, same rate).
        let unit_price = match (prices_include_tax, existing) {
            (false, _) => item.unit_price,
            (true, Some(line))
                if line.tax_rate_id == code && line.tax_rate_id.net_of(line.unit_price) == item.unit_price =>
            {
                line.unit_price
            }
            (true, _) => match code.gross_of(item.unit_price) {
                Some(gross) => gross,
                None => {
                    errors.push(FieldError::new(format!("lines[{i}].unit_price"), "out_of_range", "is too large"));
                    continue;
                }
            },
        };
        // A quantity below what the line delivered or billed is checked after the references: a business
        // rule, answered 422 below (only a kept line has a floor, so it names the line's own id).
        let (delivered, billed) = existing.map_or((Quantity::ZERO, Quantity::ZERO), |l| (l.delivered, l.billed));
        if existing.is_some_and(|l| l.variant_id != item.variant_id) && delivered.max(billed) > Quantity::ZERO {
            moved.push(i);
        }
        lines.push(OrderLine {
            id: existing.map_or_else(|| Uuid::new_v5(&id, format!("line-{seed}-{i}").as_bytes()), |l| l.id),
            variant_id: item.variant_id,
            name: item.name.clone(),
            quantity: item.quantity,
            unit_price,
            tax_rate_id: code,
            warehouse_id: None,
            discount: item.discount,
            physical: fact.map_or_else(
                || existing.is_some_and(|l| l.physical && l.variant_id == item.variant_id),
                |f| f.product_type.is_physical(),
            ),
            delivered,
            billed,
        });
    }
    reject_fields(errors)?;
    // What a delivery note or a sale took stays what the line is: a delete of the note or a credit
    // note gives back the line's product.
    let moved: Vec<_> = moved
        .into_iter()
        .map(|i| crate::aggregate::BusinessDetail {
            field: Some(format!("lines[{i}].product_id")),
            code: "FULFILLED_LINE_PRODUCT".into(),
            message: format!(
                "line {} already has {} delivered and {} billed: it keeps its product",
                lines[i].id, lines[i].delivered, lines[i].billed
            ),
            metadata: BTreeMap::from([("line_id".to_owned(), serde_json::json!(lines[i].id))]),
        })
        .collect();
    let below: Vec<_> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.quantity < l.delivered.max(l.billed))
        .map(|(i, l)| crate::aggregate::BusinessDetail {
            field: Some(format!("lines[{i}].quantity")),
            code: "BELOW_FULFILLED".into(),
            message: format!(
                "line {} already has {} delivered and {} billed: its quantity may not drop below that",
                l.id, l.delivered, l.billed
            ),
            metadata: BTreeMap::from([
                ("line_id".to_owned(), serde_json::json!(l.id)),
                ("delivered".to_owned(), serde_json::json!(l.delivered.to_string())),
                ("billed".to_owned(), serde_json::json!(l.billed.to_string())),
            ]),
        })
        .collect();
    if !moved.is_empty() || !below.is_empty() {
        return Err(Rejection::Unprocessable {
            code: "PRECONDITION_FAILED".into(),
            message: "a line already delivered or billed keeps its product and may not drop below that".into(),
            details: moved.into_iter().chain(below).collect(),
        });
    }
    // Every line that was delivered or billed must be kept.
    if let Some(order) = current {
        let kept: Vec<Uuid> = lines.iter().map(|l| l.id).collect();
        let dropped: Vec<_> = order
            .lines
            .iter()
            .filter(|l| !kept.contains(&l.id) && (l.delivered > Quantity::ZERO || l.billed > Quantity::ZERO))
            .map(|l| crate::aggregate::BusinessDetail {
                field: Some("lines".into()),
                code: "BELOW_FULFILLED".into(),
                message: format!("line {} was delivered or billed and may not be removed", l.id),
                metadata: BTreeMap::from([("line_id".to_owned(), serde_json::json!(l.id))]),
            })
            .collect();
        if !dropped.is_empty() {
            return Err(Rejection::Unprocessable {
                code: "PRECONDITION_FAILED".into(),
                message: "a line already delivered or billed may not be removed".into(),
                details: dropped,
            });
        }
    }
    Ok(lines)
}

/// The customer's name and what the facts refuse of the customer (when `check_customer`) and the
/// warehouses a body names, as field errors (reported with the lines' own).
fn header_errors(facts: &OrderFacts, check_customer: bool, warehouses: &[(&str, Uuid)]) -> (String, Vec<FieldError>) {
    let mut errors = Vec::new();
    if check_customer && facts.customer.is_none() {
        errors.push(FieldError::new("customer_id", "not_found", "no active customer of this organization has this id"));
    }
    for (field, id) in warehouses {
        if !facts.warehouses.get(id).copied().unwrap_or(false) {
            errors.push(FieldError::new(*field, "not_found", "no active warehouse of this organization has this id"));
        }
    }
    (facts.customer.clone().unwrap_or_default(), errors)
}

/// The order a quote makes: its customer, lines (VAT-inclusive prices, kept exactly), warehouse (the
/// first line's), discount and reservation (held until the order closes).
fn of_quote(id: Uuid, quote_id: Uuid, quote: &QuoteState, facts: &OrderFacts) -> Result<OrderState, Rejection> {
    crate::quotes::convertible(quote)?;
    let (customer_name, errors) = header_errors(facts, true, &[]);
    reject_fields(errors)?;
    let lines = quote
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| OrderLine {
            id: Uuid::new_v5(&id, format!("line-0-{i}").as_bytes()),
            variant_id: Some(item.variant_id),
            name: None,
            quantity: item.quantity,
            unit_price: item.unit_price,
            tax_rate_id: item.tax_rate_id,
            warehouse_id: item.warehouse_id,
            discount: item.discount,
            physical: facts.products.get(&item.variant_id).is_some_and(|f| f.product_type.is_physical()),
            delivered: Quantity::ZERO,
            billed: Quantity::ZERO,
        })
        .collect();
    let reservation = quote
        .reservation
        .as_ref()
        .filter(|r| r.enabled)
        .map(|_| OrderReservation { enabled: true, reserved_through_date: None });
    priced(OrderState {
        number: 0,
        status: OrderStatus::Open,
        fulfillment_status: FulfillmentStatus::Unfulfilled,
        customer_id: quote.customer_id,
        customer_name,
        assigned_warehouse_id: quote.items.iter().find_map(|i| i.warehouse_id),
        delivery_method: None,
        notes: quote.notes.clone(),
        global_discount_amount: quote.global_discount_amount,
        lines,
        reservation,
        quote_id: Some(quote_id),
        prices_include_tax: true,
        subtotal: Cents::ZERO,
        tax_amount: Cents::ZERO,
        discount_amount: Cents::ZERO,
        total: Cents::ZERO,
    })
}

/// The events of an open order's change from `before` to `next`: the update, the move of its
/// fulfilment state when the delivered quantities moved it, and its completion once every line is
/// fully delivered and billed. Returns them with the order's final state. Deliveries and bills settle
/// through it too.
pub fn settled(before: &OrderState, next: OrderState) -> (Vec<OrderEvent>, OrderState) {
    let fulfillment_status = FulfillmentStatus::of(&next.lines);
    let next = OrderState { fulfillment_status, ..next };
    let mut events = vec![OrderEvent::OrderUpdated(Box::new(next.clone()))];
    if fulfillment_status != before.fulfillment_status {
        events.push(OrderEvent::OrderFulfillmentChanged(Box::new(next.clone())));
    }
    if served(&next) && next.status == OrderStatus::Open {
        let completed = OrderState { status: OrderStatus::Completed, ..next };
        events.push(OrderEvent::OrderCompleted(Box::new(completed.clone())));
        return (events, completed);
    }
    (events, next)
}

/// Whether every line of the order is delivered and billed: what completes it.
pub fn served(order: &OrderState) -> bool {
    order.lines.iter().all(|l| l.delivered >= l.quantity && l.billed >= l.quantity)
}

/// Decides an order command against the facts: pure.
pub fn decide(command: &OrderCommand, facts: &OrderFacts) -> Result<OrderDecision, Rejection> {
    let current = facts.current.as_ref();
    let decision = |events: Vec<OrderEvent>, reservation| Ok(OrderDecision { events, quote_event: None, reservation });
    match (command, current) {
        (OrderCommand::Convert { .. }, Some(_)) => {
            // The order's id derives from the quote's: a converted quote says so.
            facts.quote.as_ref().map_or(Ok(()), crate::quotes::convertible)?;
            Err(Rejection::conflict("ALREADY_EXISTS", "the order already exists"))
        }
        (OrderCommand::Create { .. }, Some(_)) => {
            Err(Rejection::conflict("ALREADY_EXISTS", "the order already exists"))
        }
        (OrderCommand::Create { id, input }, None) => {
            let warehouses: Vec<_> =
                input.assigned_warehouse_id.map(|w| ("assigned_warehouse_id", w)).into_iter().collect();
            let (customer_name, mut errors) = header_errors(facts, true, &warehouses);
            errors.extend(through_in_past(input.reservation.as_ref().and_then(|r| r.reserved_through_date), facts.today));
            let lines = build_lines(*id, 0, &input.lines, None, facts, false, errors)?;
            let order = priced(OrderState {
                number: 0,
                status: OrderStatus::Open,
                fulfillment_status: FulfillmentStatus::Unfulfilled,
                customer_id: input.customer_id,
                customer_name,
                assigned_warehouse_id: input.assigned_warehouse_id,
                delivery_method: input.delivery_method.clone(),
                notes: input.notes.clone(),
                global_discount_amount: input.global_discount_amount,
                lines,
                reservation: input.reservation.clone(),
                quote_id: None,
                prices_include_tax: false,
                subtotal: Cents::ZERO,
                tax_amount: Cents::ZERO,
                discount_amount: Cents::ZERO,
                total: Cents::ZERO,
            })?;
            let wanted = wanted(&order, &facts.components)?;
            decision(vec![OrderEvent::OrderCreated(Box::new(order))], ReservationChange::Set(wanted))
        }
        (OrderCommand::Convert { id, quote_id }, None) => {
            let quote = facts.quote.as_ref().ok_or_else(|| Rejection::not_found("quote"))?;
            let order = of_quote(*id, *quote_id, quote, facts)?;
            let wanted = wanted(&order, &facts.components)?;
            let quote_event =
                events::catalogue::QuoteEvent::QuoteConverted(events::catalogue::QuoteConverted { order_id: *id });
            Ok(OrderDecision {
                events: vec![OrderEvent::OrderCreated(Box::new(order))],
                quote_event: Some(quote_event),
                reservation: ReservationChange::Set(wanted),
            })
        }
        (_, None) => Err(Rejection::not_found("order")),
        (_, Some(order)) if order.status != OrderStatus::Open => {
            let what = match command {
                OrderCommand::Cancel { .. } => "cancelled",
                OrderCommand::Complete { .. } => "completed",
                _ => "edited",
            };
            Err(closed(order, what))
        }
        (OrderCommand::EditNotes { notes, .. }, Some(order)) => {
            let next = OrderState { notes: notes.clone(), ..order.clone() };
            decision(vec![OrderEvent::OrderUpdated(Box::new(next))], ReservationChange::Keep)
        }
        (OrderCommand::Edit { id, edit }, Some(order)) => {
            if facts.updated_at != Some(edit.expected_updated_at) {
                return Err(Rejection::conflict(
                    "CONFLICT",
                    "the order changed since expected_updated_at: read it again and resend the edit",
                ));
            }
            let (_, errors) = header_errors(facts, false, &[("assigned_warehouse_id", edit.assigned_warehouse_id)]);
            let basis = order.prices_include_tax;
            let lines = build_lines(*id, facts.version, &edit.lines, Some(order), facts, basis, errors)?;
            // Another warehouse takes every line's pending work (and its reservation) with it; the order's
            // own leaves each kept line where it was (a converted quote's line may leave from another).
            let moved = order.assigned_warehouse_id != Some(edit.assigned_warehouse_id);
            let lines = lines
                .into_iter()
                .map(|l| {
                    let own = order.lines.iter().find(|kept| kept.id == l.id).and_then(|kept| kept.warehouse_id);
                    OrderLine { warehouse_id: own.filter(|_| !moved), ..l }
                })
                .collect();
            let next = priced(OrderState {
                lines,
                assigned_warehouse_id: Some(edit.assigned_warehouse_id),
                delivery_method: edit.delivery_method.apply(&order.delivery_method),
                notes: edit.notes.apply(&order.notes),
                global_discount_amount: edit.global_discount_amount.apply(&order.global_discount_amount),
                ..order.clone()
            })?;
            let (events, next) = settled(order, next);
            decision(events, ReservationChange::Set(wanted(&next, &facts.components)?))
        }
        (OrderCommand::Cancel { .. }, Some(order)) => {
            if order.started() {
                return Err(Rejection::state_conflict(
                    "ORDER_STARTED",
                    order.status.as_str(),
                    "the order was delivered or billed in part: complete it instead",
                ));
            }
            let next = OrderState { status: OrderStatus::Cancelled, ..order.clone() };
            decision(vec![OrderEvent::OrderCancelled(Box::new(next))], ReservationChange::Set(None))
        }
        (OrderCommand::Complete { .. }, Some(order)) => {
            let next = OrderState { status: OrderStatus::Completed, ..order.clone() };
            decision(vec![OrderEvent::OrderCompleted(Box::new(next))], ReservationChange::Set(None))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TODAY: Date = time::macros::date!(2026 - 11 - 27);

    fn facts_for(input: &OrderInput) -> OrderFacts {
        let products = input
            .lines
            .iter()
            .filter_map(|l| l.variant_id)
            .map(|v| (v, VariantFacts::plain_product(v)))
            .collect();
        let warehouses = input.assigned_warehouse_id.into_iter().map(|w| (w, true)).collect();
        OrderFacts { customer: Some("Ana".into()), products, warehouses, today: Some(TODAY), ..OrderFacts::default() }
    }

    fn input() -> OrderInput {
        parse_order(
            &json!({"customer_id": Uuid::now_v7(), "assigned_warehouse_id": Uuid::now_v7(),
                    "reservation": {"enabled": true},
                    "lines": [{"product_id": Uuid::now_v7(), "quantity": 3, "unit_price": 1000},
                              {"name": "Flete", "quantity": 1, "unit_price": 500, "tax_rate_id": 4}]}),
        )
        .expect("an order")
    }

    #[test]
    fn a_new_order_is_priced_net_and_reserves_its_physical_lines_until_it_closes() {
        let input = input();
        let id = Uuid::now_v7();
        let decision = decide(&OrderCommand::Create { id, input: input.clone() }, &facts_for(&input)).expect("decided");
        let order = decision.events[0].state();
        // 3 × 10.00 at 21% and 5.00 at 10.5%: 35.00 net, 6.30 + 0.53 VAT.
        assert_eq!((order.subtotal.get(), order.tax_amount.get(), order.total.get()), (3500, 683, 4183));
        let ReservationChange::Set(Some(wanted)) = decision.reservation else { panic!("a reservation") };
        assert_eq!(wanted.reserved_through, UNTIL_CLOSED);
        assert_eq!(wanted.lines.len(), 1, "the free-text line reserves nothing");
        assert_eq!(wanted.lines[0].0.quantity, Quantity::from_units(3).expect("3"));
    }

    #[test]
    fn a_combo_whose_component_was_deactivated_is_refused_unless_a_kept_line_names_it() {
        let input = input();
        let id = Uuid::now_v7();
        let mut facts = facts_for(&input);
        let created = decide(&OrderCommand::Create { id, input: input.clone() }, &facts).expect("created");
        let order = created.events[0].state().clone();
        let combo = input.lines[0].variant_id.expect("a product line");
        let retired = Uuid::now_v7();
        facts.retired_components.insert(combo, vec![retired]);
        let fields = |errors: &Vec<FieldError>| errors.iter().map(|e| e.field.clone()).collect::<Vec<_>>();
        // A new order naming the combo is refused on its line, naming the component.
        let Err(Rejection::Invalid { errors }) = decide(&OrderCommand::Create { id, input }, &facts) else {
            panic!("refused")
        };
        assert_eq!(fields(&errors), ["lines[0].product_id"]);
        assert_eq!(errors[0].code, "not_found");
        assert!(errors[0].message.contains(&retired.to_string()), "names the component: {errors:?}");

        // An edit keeps the line already naming it, as it keeps one naming an inactive product; a new line
        // naming it is refused.
        let at = OffsetDateTime::now_utc();
        facts.current = Some(order.clone());
        facts.updated_at = Some(at);
        let expected = at.format(&time::format_description::well_known::Rfc3339).expect("formats");
        let kept = json!({"id": order.lines[0].id, "product_id": combo, "quantity": 3, "unit_price": 1000});
        let new = json!({"product_id": combo, "quantity": 1, "unit_price": 1000});
        let edit = |lines: Value| {
            let body = json!({"lines": lines, "assigned_warehouse_id": order.assigned_warehouse_id,
                              "expected_updated_at": expected});
            let Ok(Ok(change)) = parse_patch(&body) else { panic!("an edit") };
            OrderCommand::Edit { id, edit: change }
        };
        decide(&edit(json!([kept])), &facts).expect("the kept line is kept");
        let Err(Rejection::Invalid { errors }) = decide(&edit(json!([kept, new])), &facts) else { panic!("refused") };
        assert_eq!(fields(&errors), ["lines[1].product_id"]);
    }

    #[test]
    fn unknown_read_only_and_half_lines_are_named() {
        let errors = parse_order(
            &json!({"customer_id": Uuid::now_v7(), "total": 1, "colour": "red",
                    "lines": [{"quantity": 1, "unit_price": 1}, {"product_id": Uuid::now_v7(), "name": "x",
                               "quantity": 1, "unit_price": 1, "delivered": 1}]}),
        )
        .expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["colour", "total", "lines[0].product_id", "lines[1].delivered", "lines[1].name"]);
    }

    #[test]
    fn a_patch_of_notes_alone_is_the_historical_edit_and_a_structural_one_needs_its_version() {
        assert_eq!(parse_patch(&json!({"notes": "llamar antes"})), Ok(Err(Some("llamar antes".into()))));
        assert_eq!(parse_patch(&json!({"notes": ""})), Ok(Err(None)));
        let errors = parse_patch(&json!({"lines": [{"name": "x", "quantity": 1, "unit_price": 1}],
                                         "assigned_warehouse_id": Uuid::now_v7()}))
        .expect_err("no version");
        assert_eq!(errors[0].field, "expected_updated_at");
    }

    #[test]
    fn edits_keep_what_was_delivered_and_only_open_orders_change() {
        let input = input();
        let id = Uuid::now_v7();
        let mut facts = facts_for(&input);
        let created = decide(&OrderCommand::Create { id, input: input.clone() }, &facts).expect("created");
        let mut order = created.events[0].state().clone();
        order.lines[0].delivered = Quantity::from_units(2).expect("2");
        let at = OffsetDateTime::now_utc();
        facts.current = Some(order.clone());
        facts.updated_at = Some(at);
        let line = |quantity: i64| json!({"id": order.lines[0].id, "product_id": order.lines[0].variant_id, "quantity": quantity, "unit_price": 1000});
        let body = |quantity: i64, at: OffsetDateTime| {
            json!({"lines": [line(quantity)], "assigned_warehouse_id": input.assigned_warehouse_id,
                   "expected_updated_at": at.format(&time::format_description::well_known::Rfc3339).expect("formats")})
        };
        let Ok(Ok(edit)) = parse_patch(&body(1, at)) else { panic!("an edit") };
        let below = decide(&OrderCommand::Edit { id, edit }, &facts).expect_err("below delivered");
        assert!(
            matches!(below, Rejection::Unprocessable { ref details, .. } if details[0].field.as_deref() == Some("lines[0].quantity"))
        );
        let Ok(Ok(stale)) = parse_patch(&body(2, at - time::Duration::seconds(1))) else { panic!("an edit") };
        assert!(matches!(decide(&OrderCommand::Edit { id, edit: stale }, &facts), Err(Rejection::Conflict { .. })));
        let Ok(Ok(edit)) = parse_patch(&body(2, at)) else { panic!("an edit") };
        let decided = decide(&OrderCommand::Edit { id, edit }, &facts).expect("edited");
        let names: Vec<_> = decided.events.iter().filter_map(OrderEvent::public_name).collect();
        assert_eq!(names, ["order.updated", "order.fulfilled"]);
        assert_eq!(decided.reservation, ReservationChange::Set(None), "nothing left to deliver");
        let refused = decide(&OrderCommand::Cancel { id }, &facts).expect_err("started");
        assert!(matches!(refused, Rejection::StateConflict { .. }));
        facts.current = Some(OrderState { status: OrderStatus::Completed, ..order });
        let closed = decide(&OrderCommand::EditNotes { id, notes: None }, &facts).expect_err("closed");
        assert!(matches!(closed, Rejection::StateConflict { .. }));
    }

    #[test]
    fn a_kept_line_keeps_its_warehouse_unless_the_edit_names_another() {
        let input = input();
        let id = Uuid::now_v7();
        let mut facts = facts_for(&input);
        let created = decide(&OrderCommand::Create { id, input: input.clone() }, &facts).expect("created");
        let mut order = created.events[0].state().clone();
        // A converted quote's line may leave from another warehouse than the order's.
        let branch = Uuid::now_v7();
        order.lines[0].warehouse_id = Some(branch);
        let at = OffsetDateTime::now_utc();
        facts.current = Some(order.clone());
        facts.updated_at = Some(at);
        let (assigned, other) = (input.assigned_warehouse_id.expect("a warehouse"), Uuid::now_v7());
        facts.warehouses.insert(other, true);
        let (line_id, variant) = (order.lines[0].id, order.lines[0].variant_id);
        let edit = |warehouse: Uuid| {
            let body = json!({"lines": [{"id": line_id, "product_id": variant, "quantity": 4, "unit_price": 1000}],
                "assigned_warehouse_id": warehouse,
                "expected_updated_at": at.format(&time::format_description::well_known::Rfc3339).expect("formats")});
            let Ok(Ok(edit)) = parse_patch(&body) else { panic!("an edit") };
            OrderCommand::Edit { id, edit }
        };
        let kept = decide(&edit(assigned), &facts).expect("edited");
        assert_eq!(kept.events[0].state().lines[0].warehouse_id, Some(branch));
        let ReservationChange::Set(Some(wanted)) = kept.reservation else { panic!("a reservation") };
        assert_eq!(wanted.lines[0].0.warehouse_id, branch);
        let moved = decide(&edit(other), &facts).expect("edited");
        assert_eq!(moved.events[0].state().lines[0].warehouse_id, None, "the order's, now `other`");
    }
}
