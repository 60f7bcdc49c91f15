//! Delivery notes (remitos; Style A, snake_case): created from scratch (`custom`: the goods leave a
//! warehouse), for a sale whose stock already moved (`sale`: the note moves nothing, one per sale), or
//! for part or all of an open order (`order`: the goods leave the order's warehouse, its reservation is
//! consumed and its lines' `delivered` rise), numbered gap-free per point of sale; and deleted, which
//! restores exactly what the note did (stock back, and for an order its `delivered` and reservation).
//!
//! The domain has the document shape ([`crate::document`]): here the body's parsing, the facts
//! ([`NoteFacts`]) and the pure [`decide`]; in `handler.rs` the loads and the write.

mod handler;

pub use handler::DeliveryNotes;

use crate::aggregate::{BusinessDetail, Rejection, reject_fields};
use crate::inventory::reservations::ReservationChange;
use crate::inventory::{Move, WantedMove, expand_combos, retired_component};
use crate::lookups::VariantFacts;
use crate::orders::{served, settled, wanted};
use crate::validate::{FieldError, ObjectReader};
use events::catalogue::{
    DeliveryLine, DeliveryNoteState, DeliveryOrigin, OrderEvent, OrderState, OrderStatus, SaleRecorded, StockLine,
};
use events::domain::Quantity;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// The most lines one note lists.
pub const MAX_LINES: usize = 200;

const KNOWN: &[&str] = &["origin", "customer_id", "point_of_sale_id", "warehouse_id", "items", "notes"];
const KNOWN_ITEM: &[&str] = &["product_id", "is_custom", "name", "order_line_id", "quantity"];

/// An item as sent: a product or free text (`custom`), or an order line (`order`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemInput {
    pub variant_id: Option<Uuid>,
    pub name: Option<String>,
    pub order_line_id: Option<Uuid>,
    pub quantity: Quantity,
}

/// A delivery note as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteInput {
    pub origin: DeliveryOrigin,
    pub customer_id: Option<Uuid>,
    pub point_of_sale_id: Uuid,
    pub warehouse_id: Option<Uuid>,
    /// `order`: none means every pending quantity.
    pub items: Vec<ItemInput>,
    pub notes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NoteCommand {
    Create { id: Uuid, input: NoteInput },
    Delete { id: Uuid },
}

impl NoteCommand {
    pub fn note_id(&self) -> Uuid {
        match self {
            Self::Create { id, .. } | Self::Delete { id } => *id,
        }
    }
}

/// What the workers answer: the note, and whether it is deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteOutcome {
    pub id: Uuid,
    pub note: DeliveryNoteState,
    pub deleted: bool,
    pub warnings: Vec<crate::inventory::StockShortfall>,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// Parses a delivery note's body: unknown fields are named, every bad field reported at once.
pub fn parse_note(body: &Value) -> Result<NoteInput, Vec<FieldError>> {
    let mut r = ObjectReader::new(body, "");
    if let Some(object) = body.as_object() {
        for key in object.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
            r.reject(key, "unknown_field", "is not a field of a delivery note");
        }
    }
    let origin = match r.value("origin") {
        None | Some(Value::Null) => {
            r.reject("origin", "required", "is required");
            None
        }
        Some(value) => {
            let mut o = ObjectReader::new(value, "origin");
            if let Some(object) = value.as_object() {
                for key in object.keys().filter(|k| !["type", "sale_id", "order_id"].contains(&k.as_str())) {
                    o.reject(key, "unknown_field", "is not a field of an origin");
                }
            }
            let kind = o.required_str("type", 1, 20);
            let origin = match kind.as_str() {
                "custom" => Some(DeliveryOrigin::Custom),
                "sale" => o.required_uuid("sale_id").map(|sale_id| DeliveryOrigin::Sale { sale_id }),
                "order" => o.required_uuid("order_id").map(|order_id| DeliveryOrigin::Order { order_id }),
                "" => None,
                _ => {
                    o.reject("type", "invalid_value", "must be one of: custom, sale, order");
                    None
                }
            };
            r.errors.append(&mut o.errors);
            origin
        }
    };
    let customer_id = r.optional_uuid("customer_id");
    let point_of_sale_id = r.required_uuid("point_of_sale_id");
    let warehouse_id = r.optional_uuid("warehouse_id");
    let notes = r.optional_str("notes", 2000);
    let mut items = Vec::new();
    match &origin {
        Some(DeliveryOrigin::Custom) => {
            if customer_id.is_none() && !r.has("customer_id") {
                r.reject("customer_id", "required", "a custom delivery note names its customer");
            }
            for (i, item) in r.required_array("items", 1, MAX_LINES).iter().enumerate() {
                let mut line = ObjectReader::new(item, &format!("items[{i}]"));
                refuse_unknown_item(&mut line, item);
                // A line is a product or a custom one: `product_id` is never null.
                if line.has("product_id") && line.value("product_id").is_none() {
                    line.reject("product_id", "invalid_type", "must not be null: omit it on a custom line");
                }
                let variant_id = line.optional_uuid("product_id");
                let is_custom = line.optional_bool("is_custom").unwrap_or(false);
                let name = line.optional_str("name", 200);
                match (line.has("product_id"), is_custom) {
                    (true, true) => line.reject("is_custom", "both_kinds", "a line names a product or is custom"),
                    (false, false) => line.reject("product_id", "required", "send product_id, or is_custom and name"),
                    (false, true) if name.is_none() => line.reject("name", "required", "a custom line needs a name"),
                    _ => {}
                }
                if line.has("order_line_id") {
                    line.reject("order_line_id", "not_allowed", "only a delivery note for an order names its lines");
                }
                let quantity = line.required_quantity("quantity", true);
                r.errors.append(&mut line.errors);
                if let Some(quantity) = quantity {
                    items.push(ItemInput { variant_id, name, order_line_id: None, quantity });
                }
            }
        }
        Some(DeliveryOrigin::Order { .. }) if r.has("items") => {
            for (i, item) in r.required_array("items", 1, MAX_LINES).iter().enumerate() {
                let mut line = ObjectReader::new(item, &format!("items[{i}]"));
                refuse_unknown_item(&mut line, item);
                for field in ["product_id", "is_custom", "name"] {
                    if line.has(field) {
                        line.reject(field, "not_allowed", "an order's lines are named by order_line_id");
                    }
                }
                let order_line_id = line.required_uuid("order_line_id");
                let quantity = line.required_quantity("quantity", true);
                r.errors.append(&mut line.errors);
                if let (Some(id), Some(quantity)) = (order_line_id, quantity) {
                    items.push(ItemInput { variant_id: None, name: None, order_line_id: Some(id), quantity });
                }
            }
        }
        Some(DeliveryOrigin::Order { .. }) => {}
        Some(DeliveryOrigin::Sale { .. }) => {
            for field in ["items", "warehouse_id", "customer_id"] {
                if r.has(field) {
                    r.reject(field, "not_allowed", "a delivery note for a sale documents the sale's own goods");
                }
            }
        }
        None => {}
    }
    let input = NoteInput {
        origin: origin.unwrap_or(DeliveryOrigin::Custom),
        customer_id,
        point_of_sale_id: point_of_sale_id.unwrap_or_default(),
        warehouse_id,
        items,
        notes,
    };
    r.finish(input)
}

fn refuse_unknown_item(line: &mut ObjectReader, item: &Value) {
    if let Some(object) = item.as_object() {
        for key in object.keys().filter(|k| !KNOWN_ITEM.contains(&k.as_str())) {
            line.reject(key, "unknown_field", "is not a field of a delivery note item");
        }
    }
}

/// Everything outside the command that deciding a note reads, loaded by the handler.
#[derive(Debug, Clone, Default)]
pub struct NoteFacts {
    /// The note as its stream has it (and whether it was deleted), and the stream's version.
    pub current: Option<(DeliveryNoteState, bool)>,
    pub version: i32,
    /// The point of sale's number, when it is an active one of the organization.
    pub point_of_sale: Option<i32>,
    /// The customer's name, when it is an active customer of the organization.
    pub customer: Option<String>,
    /// The product variants the note names, and each one's display name.
    pub products: BTreeMap<Uuid, (VariantFacts, String)>,
    /// The components of every combo among them.
    pub components: BTreeMap<Uuid, Vec<StockLine>>,
    /// Origin `custom`: the components no longer active of each combo the items name that has any (its
    /// items are refused).
    pub retired_components: BTreeMap<Uuid, Vec<Uuid>>,
    /// Whether each warehouse the note may leave from is an active one of the organization.
    pub warehouses: BTreeMap<Uuid, bool>,
    pub default_warehouse: Option<Uuid>,
    /// Origin `sale`: the sale (none: no such sale of the organization).
    pub sale: Option<SaleRecorded>,
    /// Origin `order` (or a deleted note's order): the order and its stream's version.
    pub order: Option<(OrderState, i32)>,
    pub today: Option<Date>,
}

/// What a note command decided: the note's state, the stock it moves, and what becomes of its order.
#[derive(Debug, Clone)]
pub struct NoteDecision {
    pub note: DeliveryNoteState,
    pub deleted: bool,
    pub moves: Vec<WantedMove>,
    /// The order's events and its reservation as the note leaves it.
    pub order: Option<(Vec<OrderEvent>, ReservationChange)>,
}

fn not_found(field: &str, what: &str) -> FieldError {
    FieldError::new(field, "not_found", format!("no active {what} of this organization has this id"))
}

/// Decides a note command against the facts: pure.
pub fn decide(command: &NoteCommand, facts: &NoteFacts) -> Result<NoteDecision, Rejection> {
    match (command, &facts.current) {
        (NoteCommand::Create { .. }, Some(_)) => {
            Err(Rejection::conflict("ALREADY_EXISTS", "the delivery note already exists"))
        }
        (NoteCommand::Delete { .. }, None) => Err(Rejection::not_found("delivery_note")),
        (NoteCommand::Delete { .. }, Some((_, true))) => Err(Rejection::not_found("delivery_note")),
        (NoteCommand::Delete { .. }, Some((note, false))) => delete(note, facts),
        (NoteCommand::Create { input, .. }, None) => create(input, facts),
    }
}

fn create(input: &NoteInput, facts: &NoteFacts) -> Result<NoteDecision, Rejection> {
    let mut errors = Vec::new();
    let point_of_sale_number = facts.point_of_sale.unwrap_or_default();
    if facts.point_of_sale.is_none() {
        errors.push(not_found("point_of_sale_id", "point of sale"));
    }
    let today = facts.today.unwrap_or(Date::MIN);
    let mut note = DeliveryNoteState {
        origin: input.origin.clone(),
        point_of_sale_id: input.point_of_sale_id,
        point_of_sale_number,
        number: 0,
        date: today,
        customer_id: Uuid::nil(),
        customer_name: String::new(),
        warehouse_id: None,
        lines: Vec::new(),
        notes: input.notes.clone(),
        changes: Vec::new(),
    };
    let mut order_change = None;
    let mut stocked: Vec<(StockLine, Uuid, String)> = Vec::new();
    match &input.origin {
        DeliveryOrigin::Custom => {
            match (&facts.customer, input.customer_id) {
                (Some(name), Some(id)) => (note.customer_id, note.customer_name) = (id, name.clone()),
                _ => errors.push(not_found("customer_id", "customer")),
            }
            let warehouse = input.warehouse_id.or(facts.default_warehouse);
            match warehouse {
                Some(w) if facts.warehouses.get(&w).copied().unwrap_or(false) => note.warehouse_id = Some(w),
                Some(_) => errors.push(not_found("warehouse_id", "warehouse")),
                None => errors.push(FieldError::new(
                    "warehouse_id",
                    "required",
                    "the organization has no default warehouse: name one",
                )),
            }
            for (i, item) in input.items.iter().enumerate() {
                let name = match item.variant_id {
                    None => item.name.clone().unwrap_or_default(),
                    Some(variant) => match facts.products.get(&variant).filter(|(f, _)| f.is_active) {
                        Some((fact, name)) => {
                            // A combo leaves as its components: one deactivated is refused as an inactive
                            // product is.
                            if let Some(components) = facts.retired_components.get(&variant) {
                                errors.push(retired_component(format!("items[{i}].product_id"), components));
                                continue;
                            }
                            if let (true, Some(w)) = (fact.product_type.is_stocked(), note.warehouse_id) {
                                let line = StockLine { variant_id: variant, quantity: item.quantity };
                                stocked.push((line, w, format!("items[{i}].quantity")));
                            }
                            item.name.clone().unwrap_or_else(|| name.clone())
                        }
                        None => {
                            errors.push(not_found(&format!("items[{i}].product_id"), "product"));
                            continue;
                        }
                    },
                };
                let moved = item.variant_id.is_some_and(|v| stocked.iter().any(|(l, _, _)| l.variant_id == v));
                note.lines.push(DeliveryLine {
                    variant_id: item.variant_id,
                    name,
                    quantity: item.quantity,
                    order_line_id: None,
                    warehouse_id: note.warehouse_id.filter(|_| moved),
                });
            }
        }
        DeliveryOrigin::Sale { .. } => {
            let Some(sale) = &facts.sale else {
                errors.push(not_found("origin.sale_id", "sale"));
                return Err(Rejection::Invalid { errors });
            };
            // A remito documents goods the sale sent out: a credit note brings them back and a debit note
            // moves none, so neither is delivered (nor takes the one note of a sale).
            if matches!(sale.document_kind.as_str(), "credit_note" | "debit_note") {
                let kind = sale.document_kind.as_str();
                let message =
                    format!("the sale is a {kind}, which sends out no goods: only a sale that does is delivered");
                return Err(Rejection::state_conflict("SALE_SENDS_NO_GOODS", kind, message).on("origin.sale_id"));
            }
            note.customer_id = sale.customer.id;
            note.customer_name = sale.customer.name.clone();
            note.lines = sale
                .lines
                .iter()
                .map(|l| DeliveryLine {
                    variant_id: l.variant_id,
                    name: l.name.clone(),
                    quantity: l.quantity,
                    order_line_id: None,
                    warehouse_id: None,
                })
                .collect();
        }
        DeliveryOrigin::Order { .. } => {
            let Some((order, _)) = &facts.order else {
                errors.push(not_found("origin.order_id", "order"));
                return Err(Rejection::Invalid { errors });
            };
            if order.status != OrderStatus::Open {
                let current = order.status.as_str();
                return Err(Rejection::state_conflict(
                    "ORDER_NOT_OPEN",
                    current,
                    format!("the order is {current}: only an open order is delivered"),
                ));
            }
            // The note is for the order's customer: another one sent is refused rather than dropped.
            if let Some(sent) = input.customer_id
                && sent != order.customer_id
            {
                errors.push(FieldError::new(
                    "customer_id",
                    "not_in_order",
                    format!("the order is customer {}'s: send that one or none", order.customer_id),
                ));
            }
            note.customer_id = order.customer_id;
            note.customer_name = order.customer_name.clone();
            let warehouse = input.warehouse_id.or(order.assigned_warehouse_id).or(facts.default_warehouse);
            if let Some(w) = input.warehouse_id
                && !facts.warehouses.get(&w).copied().unwrap_or(false)
            {
                errors.push(not_found("warehouse_id", "warehouse"));
            }
            let wanted_items: Vec<(usize, Uuid, Option<Quantity>)> = if input.items.is_empty() {
                order.lines.iter().enumerate().map(|(i, l)| (i, l.id, None)).collect()
            } else {
                input
                    .items
                    .iter()
                    .enumerate()
                    .map(|(i, it)| (i, it.order_line_id.unwrap_or_default(), Some(it.quantity)))
                    .collect()
            };
            let mut next = order.clone();
            let mut over = Vec::new();
            for (i, line_id, quantity) in wanted_items {
                let Some(line) = next.lines.iter_mut().find(|l| l.id == line_id) else {
                    errors.push(FieldError::new(
                        format!("items[{i}].order_line_id"),
                        "not_found",
                        "the order has no such line",
                    ));
                    continue;
                };
                let pending = line.pending();
                let quantity = quantity.unwrap_or(pending);
                if quantity.is_zero() {
                    continue;
                }
                if quantity > pending {
                    over.push(BusinessDetail {
                        field: Some(format!("items[{i}].quantity")),
                        code: "EXCEEDS_PENDING".into(),
                        message: format!("line {} has {pending} left to deliver", line.id),
                        metadata: BTreeMap::from([
                            ("order_line_id".to_owned(), serde_json::json!(line.id)),
                            ("pending_quantity".to_owned(), serde_json::json!(pending.to_string())),
                        ]),
                    });
                    continue;
                }
                // A unit leaves once: with its delivery, unless its bill already took it.
                let moved_before = line.moved();
                // Within the line's quantity, as no more than was pending is delivered: refused rather than
                // held if that ever fails.
                let Some(delivered) = line.delivered.checked_add(quantity) else {
                    errors.push(FieldError::new(
                        format!("items[{i}].quantity"),
                        "out_of_range",
                        "would take the line's delivered quantity beyond its bounds",
                    ));
                    continue;
                };
                line.delivered = delivered;
                let leaving = line.moved().remaining_after(moved_before);
                // A warehouse the request names wins over the one a converted quote's line kept.
                let line_warehouse = input.warehouse_id.or(line.warehouse_id).or(warehouse);
                let moved_now = line.variant_id.is_some()
                    && (line.physical || facts.components.contains_key(&line.variant_id.unwrap_or_default()))
                    && leaving.is_positive();
                if let (Some(variant), true) = (line.variant_id, moved_now) {
                    match line_warehouse {
                        Some(w) if facts.warehouses.get(&w).copied().unwrap_or(false) => stocked.push((
                            StockLine { variant_id: variant, quantity: leaving },
                            w,
                            format!("items[{i}].quantity"),
                        )),
                        // The order's warehouse closed since (or the one named, already reported): no
                        // stock leaves an inactive warehouse; the note may name an active one.
                        Some(_) => {
                            if !errors.iter().any(|e| e.field == "warehouse_id") {
                                errors.push(not_found("warehouse_id", "warehouse"));
                            }
                        }
                        None => errors.push(FieldError::new(
                            "warehouse_id",
                            "required",
                            "the order names no warehouse: name one",
                        )),
                    }
                }
                note.lines.push(DeliveryLine {
                    variant_id: line.variant_id,
                    name: line
                        .name
                        .clone()
                        .or_else(|| line.variant_id.and_then(|v| facts.products.get(&v)).map(|(_, n)| n.clone()))
                        .unwrap_or_default(),
                    quantity,
                    order_line_id: Some(line.id),
                    warehouse_id: line_warehouse.filter(|_| moved_now),
                });
            }
            reject_fields(errors.clone())?;
            if !over.is_empty() {
                return Err(Rejection::Unprocessable {
                    code: "PRECONDITION_FAILED".into(),
                    message: "a delivery may not pass what is left to deliver of an order line".into(),
                    details: over,
                });
            }
            if note.lines.is_empty() {
                return Err(Rejection::Invalid {
                    errors: vec![FieldError::new("items", "nothing_pending", "the order has nothing left to deliver")],
                });
            }
            note.warehouse_id = warehouse.filter(|_| !stocked.is_empty());
            let (events, after) = settled(order, next);
            order_change = Some((events, ReservationChange::Set(wanted(&after, &facts.components)?)));
        }
    }
    reject_fields(errors)?;
    let moves = take_moves(&stocked, &facts.components)?;
    if moves.is_empty() {
        note.warehouse_id = note.warehouse_id.filter(|_| matches!(note.origin, DeliveryOrigin::Custom));
    }
    Ok(NoteDecision { note, deleted: false, moves, order: order_change })
}

/// The takes of `stocked` lines from their warehouses, combos as their components.
fn take_moves(
    stocked: &[(StockLine, Uuid, String)],
    components: &BTreeMap<Uuid, Vec<StockLine>>,
) -> Result<Vec<WantedMove>, Rejection> {
    let mut moves = Vec::new();
    for (line, warehouse, field) in stocked {
        let expanded = expand_combos(std::slice::from_ref(line), components, "items")
            .map_err(|errors| Rejection::Invalid { errors })?;
        for part in expanded {
            moves.push(WantedMove {
                key: (part.variant_id, *warehouse),
                action: Move::Take(part.quantity),
                field: field.clone(),
            });
        }
    }
    Ok(moves)
}

/// The warehouse `note` took `variant` from (a combo's first component stands for it), as its
/// recorded changes say: the one warehouse it took that variant from, or `line_warehouse` among
/// several; none when it took none of it.
fn taken_from(
    note: &DeliveryNoteState,
    variant: Uuid,
    line_warehouse: Option<Uuid>,
    components: &BTreeMap<Uuid, Vec<StockLine>>,
) -> Option<Uuid> {
    let stocked = components.get(&variant).and_then(|c| c.first()).map_or(variant, |c| c.variant_id);
    let taken: std::collections::BTreeSet<Uuid> = note
        .changes
        .iter()
        .filter(|c| c.variant_id == stocked && c.quantity.is_negative())
        .map(|c| c.warehouse_id)
        .collect();
    match (taken.len(), line_warehouse) {
        (1, _) => taken.first().copied(),
        (_, Some(w)) if taken.contains(&w) => Some(w),
        _ => None,
    }
}

/// A note's delete: the stock it moved back (for an order, what leaves the order's lines unmoved
/// again: a unit its bill took stays out), and the order's `delivered` and reservation restored.
fn delete(note: &DeliveryNoteState, facts: &NoteFacts) -> Result<NoteDecision, Rejection> {
    let add = |key, quantity| WantedMove { key, action: Move::Add(quantity), field: "id".into() };
    let (DeliveryOrigin::Order { .. }, Some((order, _))) = (&note.origin, &facts.order) else {
        let moves = note
            .changes
            .iter()
            .map(|c| add((c.variant_id, c.warehouse_id), -c.quantity))
            .collect();
        return Ok(NoteDecision { note: note.clone(), deleted: true, moves, order: None });
    };
    let mut next = order.clone();
    // Its goods were not delivered after all: an order its lines completed opens again, to be delivered
    // again (one completed by hand stays closed).
    if order.status == OrderStatus::Completed && served(order) {
        next.status = OrderStatus::Open;
    }
    let mut back: Vec<(StockLine, Uuid, String)> = Vec::new();
    for delivered in &note.lines {
        let Some(line) = next.lines.iter_mut().find(|l| Some(l.id) == delivered.order_line_id) else { continue };
        let moved_before = line.moved();
        line.delivered = line.delivered.remaining_after(delivered.quantity);
        let returning = moved_before.remaining_after(line.moved());
        let stocked = line.physical || line.variant_id.is_some_and(|v| facts.components.contains_key(&v));
        // Back where the note took it from, even if the order's warehouse changed since.
        let fallback = line.warehouse_id.or(note.warehouse_id).or(order.assigned_warehouse_id);
        // The line's own record first (notes record where each line's stock left from).
        let warehouse = delivered
            .warehouse_id
            .or_else(|| line.variant_id.and_then(|v| taken_from(note, v, line.warehouse_id, &facts.components)));
        let warehouse = warehouse.or(fallback);
        if let (Some(variant), Some(warehouse), true, true) =
            (line.variant_id, warehouse, stocked, returning.is_positive())
        {
            back.push((StockLine { variant_id: variant, quantity: returning }, warehouse, "id".into()));
        }
    }
    let moves = take_moves(&back, &facts.components)?
        .into_iter()
        .map(|m| match m.action {
            Move::Take(quantity) => add(m.key, quantity),
            Move::Add(_) | Move::Set(_) => m,
        })
        .collect();
    let (events, after) = settled(order, next);
    // Only an open order holds stock again.
    let reservation = ReservationChange::Set(wanted(&after, &facts.components)?);
    Ok(NoteDecision { note: note.clone(), deleted: true, moves, order: Some((events, reservation)) })
}
