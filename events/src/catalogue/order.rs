//! Events of orders (stream type `order`): created (from a quote, or by the service's own channel)
//! and changed whole (each of these events carries the order's whole state), cancelled and completed.
//! An order's stock reservation lives in its own stream (`stock_reservation`, owner kind `order`) and
//! changes in the same transactions.
//!
//! States: `open` when created; `cancelled` by its operation (nothing delivered or billed yet);
//! `completed` by its operation, or by itself once every line is fully delivered and billed (and `open`
//! again when a deleted delivery note or a credit note takes back what completed it). Only an open
//! order is edited, delivered or billed (a credit note un-bills any). `fulfillment_status` follows the
//! delivered quantities.

use super::quote::QuoteDiscount;
use crate::domain::{Cents, Quantity, VatRate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::Date;
use uuid::Uuid;

named_enum! {
    pub enum OrderStatus { Open = "open", Completed = "completed", Cancelled = "cancelled" }
}

named_enum! {
    pub enum FulfillmentStatus {
        Unfulfilled = "unfulfilled", PartiallyFulfilled = "partially_fulfilled", Fulfilled = "fulfilled",
    }
}

impl FulfillmentStatus {
    /// What the delivered quantities of `lines` make of an order.
    pub fn of(lines: &[OrderLine]) -> Self {
        if lines.iter().all(|l| l.delivered >= l.quantity) {
            Self::Fulfilled
        } else if lines.iter().any(|l| l.delivered > Quantity::ZERO) {
            Self::PartiallyFulfilled
        } else {
            Self::Unfulfilled
        }
    }
}

/// A line as stored: a product variant or free text, its net unit price, and how much of it was
/// delivered and billed so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderLine {
    /// Stable across edits: an edit names the lines it keeps by it.
    pub id: Uuid,
    /// The product variant (none on a free-text line).
    pub variant_id: Option<Uuid>,
    /// The free text of a line without a product.
    pub name: Option<String>,
    pub quantity: Quantity,
    /// In cents, on the order's price basis: gross when the order was made with VAT-inclusive prices
    /// (`prices_include_tax`), else net. Read it net through [`OrderState::net_unit_price`].
    pub unit_price: Cents,
    pub tax_rate_id: VatRate,
    /// Where the line's goods leave from (and are reserved in); none: the order's
    /// `assigned_warehouse_id`.
    pub warehouse_id: Option<Uuid>,
    pub discount: Option<QuoteDiscount>,
    /// Whether the line's product is physical (only physical lines reserve and move stock).
    pub physical: bool,
    pub delivered: Quantity,
    pub billed: Quantity,
}

impl OrderLine {
    /// What is still to deliver.
    pub fn pending(&self) -> Quantity {
        self.quantity.remaining_after(self.delivered)
    }

    /// What is still to bill.
    pub fn unbilled(&self) -> Quantity {
        self.quantity.remaining_after(self.billed)
    }

    /// How much of the line's stock has left: a unit leaves once, with its delivery or its bill,
    /// whichever comes first.
    pub fn moved(&self) -> Quantity {
        self.delivered.max(self.billed)
    }

    /// What has not left yet: what the order's reservation holds for the line.
    pub fn unmoved(&self) -> Quantity {
        self.quantity.remaining_after(self.moved())
    }
}

/// The order's reservation of what has not left yet: held while the order is open, through `reserved_through_date` when one
/// was given (none: until the order is delivered, completed or cancelled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderReservation {
    pub enabled: bool,
    #[serde(default, with = "super::stock::iso_date_option")]
    pub reserved_through_date: Option<Date>,
}

/// An order's whole state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderState {
    pub number: i64,
    pub status: OrderStatus,
    pub fulfillment_status: FulfillmentStatus,
    pub customer_id: Uuid,
    pub customer_name: String,
    pub assigned_warehouse_id: Option<Uuid>,
    pub delivery_method: Option<String>,
    pub notes: Option<String>,
    pub global_discount_amount: Option<Cents>,
    pub lines: Vec<OrderLine>,
    pub reservation: Option<OrderReservation>,
    /// The quote the order was converted from.
    pub quote_id: Option<Uuid>,
    /// Whether the prices the order was made with included VAT (a quote's do): its lines then store
    /// gross unit prices, and the API and webhooks show them net either way.
    pub prices_include_tax: bool,
    pub subtotal: Cents,
    pub tax_amount: Cents,
    pub discount_amount: Cents,
    pub total: Cents,
}

impl OrderState {
    /// A line's unit price net of VAT, as the API and webhooks show it whatever the order's price basis.
    pub fn net_unit_price(&self, line: &OrderLine) -> Cents {
        if self.prices_include_tax { line.tax_rate_id.net_of(line.unit_price) } else { line.unit_price }
    }

    /// Whether anything of the order was delivered or billed.
    pub fn started(&self) -> bool {
        self.lines.iter().any(|l| l.delivered > Quantity::ZERO || l.billed > Quantity::ZERO)
    }
}

/// Every order event carries the order's whole state after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderEvent {
    OrderCreated(Box<OrderState>),
    /// An edit, or what a delivery or a bill changed.
    OrderUpdated(Box<OrderState>),
    /// Appended after the update that moved `fulfillment_status` (its new value is in the state).
    OrderFulfillmentChanged(Box<OrderState>),
    OrderCancelled(Box<OrderState>),
    OrderCompleted(Box<OrderState>),
}

payloads!(
    OrderEvent,
    "order",
    OrderCreated(Box),
    OrderUpdated(Box),
    OrderFulfillmentChanged(Box),
    OrderCancelled(Box),
    OrderCompleted(Box),
);

impl OrderEvent {
    /// The order's state after the event.
    pub fn state(&self) -> &OrderState {
        match self {
            Self::OrderCreated(o)
            | Self::OrderUpdated(o)
            | Self::OrderFulfillmentChanged(o)
            | Self::OrderCancelled(o)
            | Self::OrderCompleted(o) => o,
        }
    }

    /// The public event it makes: `order.created`, `order.updated`, `order.cancelled`,
    /// `order.completed`, and `order.partially_fulfilled` or `order.fulfilled` when the order enters
    /// that fulfilment state (none when a deleted delivery note takes it back to `unfulfilled`).
    pub fn public_name(&self) -> Option<&'static str> {
        Some(match self {
            Self::OrderCreated(_) => "order.created",
            Self::OrderUpdated(_) => "order.updated",
            Self::OrderFulfillmentChanged(o) => match o.fulfillment_status {
                FulfillmentStatus::PartiallyFulfilled => "order.partially_fulfilled",
                FulfillmentStatus::Fulfilled => "order.fulfilled",
                FulfillmentStatus::Unfulfilled => return None,
            },
            Self::OrderCancelled(_) => "order.cancelled",
            Self::OrderCompleted(_) => "order.completed",
        })
    }
}

/// An order's state after `event`: the fold both sides share.
pub fn fold_order(_: Option<OrderState>, event: &OrderEvent) -> Option<OrderState> {
    Some(event.state().clone())
}

/// The public order object webhook events (`order.*`) carry: snake_case, amounts in cents (also
/// together as `amounts`, as the spec shows the object), unit prices net of VAT, quantities as decimal
/// text; the API's order without the per-line `reserved` (read it from the order).
pub fn public_order(id: Uuid, order: &OrderState) -> Value {
    serde_json::json!({
        "object": "order",
        "id": id,
        "number": order.number,
        "status": order.status.as_str(),
        "fulfillment_status": order.fulfillment_status.as_str(),
        "customer_id": order.customer_id,
        "customer_name": order.customer_name,
        "assigned_warehouse_id": order.assigned_warehouse_id,
        "delivery_method": order.delivery_method,
        "notes": order.notes,
        "global_discount_amount": order.global_discount_amount,
        "quote_id": order.quote_id,
        "subtotal": order.subtotal,
        "tax_amount": order.tax_amount,
        "discount_amount": order.discount_amount,
        "total": order.total,
        "amounts": {
            "discount": order.discount_amount,
            "subtotal": order.subtotal,
            "tax": order.tax_amount,
            "total": order.total,
        },
        "lines": order.lines.iter().map(|l| serde_json::json!({
            "id": l.id,
            "product_id": l.variant_id,
            "name": l.name,
            "quantity": l.quantity.to_string(),
            "unit_price": order.net_unit_price(l),
            "delivered": l.delivered.to_string(),
            "billed": l.billed.to_string(),
        })).collect::<Vec<_>>(),
    })
}
