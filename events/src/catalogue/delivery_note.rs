//! Events of delivery notes (remitos, stream type `delivery_note`): created (each event carries the
//! note's whole state, with the stock it moved) and deleted (carrying the changes that put the stock
//! back). A note documents goods leaving: from scratch (`custom`, it moves the stock), for a sale whose
//! stock already moved (`sale`, it moves nothing), or for part or all of an order (`order`, it moves the
//! stock, consumes the order's reservation and raises what the order has delivered).

use super::stock::{StockChange, StockEffect, iso_date};
use crate::domain::Quantity;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::Date;
use uuid::Uuid;

/// What the ledger names a delivery note's changes.
pub const DELIVERY_NOTE_CAUSE: &str = "delivery_note";

/// What a delivery note documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DeliveryOrigin {
    Custom,
    Sale { sale_id: Uuid },
    Order { order_id: Uuid },
}

impl DeliveryOrigin {
    pub const NAMES: &[&str] = &["custom", "sale", "order"];

    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Custom => "custom",
            Self::Sale { .. } => "sale",
            Self::Order { .. } => "order",
        }
    }
}

/// A line as delivered: a product variant (a combo, whose components moved) or free text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryLine {
    pub variant_id: Option<Uuid>,
    pub name: String,
    pub quantity: Quantity,
    /// The order line it delivers (origin `order`).
    pub order_line_id: Option<Uuid>,
    /// Where its stock left from (none when it moved none), so a delete puts it back there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warehouse_id: Option<Uuid>,
}

/// A delivery note's whole state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryNoteState {
    pub origin: DeliveryOrigin,
    pub point_of_sale_id: Uuid,
    pub point_of_sale_number: i32,
    /// Gap-free per point of sale, never reused after a delete.
    pub number: i64,
    #[serde(with = "iso_date")]
    pub date: Date,
    pub customer_id: Uuid,
    pub customer_name: String,
    /// Where the goods left from (none when the note moved nothing).
    pub warehouse_id: Option<Uuid>,
    pub lines: Vec<DeliveryLine>,
    pub notes: Option<String>,
    /// What the note did to stock (components for combos; none for origin `sale`).
    pub changes: Vec<StockChange>,
}

/// A deleted note: its state, and the changes that restored the stock it had moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryNoteDeleted {
    pub note: DeliveryNoteState,
    #[serde(with = "iso_date")]
    pub deleted_on: Date,
    pub restored: Vec<StockChange>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryNoteEvent {
    DeliveryNoteCreated(Box<DeliveryNoteState>),
    DeliveryNoteDeleted(Box<DeliveryNoteDeleted>),
}

payloads!(DeliveryNoteEvent, "delivery_note", DeliveryNoteCreated(Box), DeliveryNoteDeleted(Box));

impl super::MovesStock for DeliveryNoteEvent {
    const CAUSES: &'static [&'static str] = &[DELIVERY_NOTE_CAUSE];

    fn stock_effect(self) -> Option<StockEffect> {
        let (occurred_on, changes) = match self {
            Self::DeliveryNoteCreated(note) => (note.date, note.changes),
            Self::DeliveryNoteDeleted(deleted) => (deleted.deleted_on, deleted.restored),
        };
        (!changes.is_empty()).then_some(StockEffect::Changes {
            cause_type: DELIVERY_NOTE_CAUSE,
            cause_id: None,
            occurred_on,
            changes,
        })
    }
}

/// The public object of a delivery note (`fulfillment.created` carries it for notes of an order).
pub fn public_delivery_note(id: Uuid, note: &DeliveryNoteState) -> Value {
    let origin = match &note.origin {
        DeliveryOrigin::Custom => serde_json::json!({ "type": "custom" }),
        DeliveryOrigin::Sale { sale_id } => serde_json::json!({ "type": "sale", "sale_id": sale_id }),
        DeliveryOrigin::Order { order_id } => serde_json::json!({ "type": "order", "order_id": order_id }),
    };
    serde_json::json!({
        "object": "delivery_note",
        "id": id,
        "origin": origin,
        "point_of_sale_id": note.point_of_sale_id,
        "number": note.number,
        "formatted_number": formatted_number(note),
        "date": note.date.to_string(),
        "customer_id": note.customer_id,
        "customer_name": note.customer_name,
        "warehouse_id": note.warehouse_id,
        "notes": note.notes,
        "lines": note.lines.iter().map(|l| serde_json::json!({
            "product_id": l.variant_id,
            "name": l.name,
            "quantity": l.quantity.to_string(),
            "order_line_id": l.order_line_id,
        })).collect::<Vec<_>>(),
    })
}

/// `R-0003-00000042`: the point of sale's number and the note's.
pub fn formatted_number(note: &DeliveryNoteState) -> String {
    format!("R-{:04}-{:08}", note.point_of_sale_number, note.number)
}
