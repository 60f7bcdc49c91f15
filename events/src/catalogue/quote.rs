//! Events of quotes (stream type `quote`): created and replaced whole (each event carries the quote's
//! whole state), deleted, sent, accepted, rejected, converted into an order, and expired by the
//! sweeper once `expires_at` has passed. A quote's stock reservation lives in its own stream
//! (`stock_reservation`) and changes in the same transactions.

use super::stock::{iso_date, iso_date_option};
use crate::domain::{Cents, Percentage, Quantity, VatRate};
use serde::{Deserialize, Serialize};
use time::Date;
use uuid::Uuid;

named_enum! {
    /// Where a quote stands: `draft` when created; `sent`, then `accepted` or `rejected`, by its
    /// operations; `converted` once an order was made of it; `expired` by itself once `expires_at` has
    /// passed (a draft or a sent quote).
    pub enum QuoteStatus {
        Draft = "draft", Sent = "sent", Accepted = "accepted", Rejected = "rejected", Expired = "expired",
        Converted = "converted",
    }
}

/// A line's discount: an amount in cents or a percentage (stored as hundredths).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuoteDiscount {
    Amount(Cents),
    Percentage(#[serde(with = "crate::domain::hundredths")] Percentage),
}

/// A line as stored: what was sent (lines store no computed amounts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteLine {
    pub variant_id: Uuid,
    pub quantity: Quantity,
    pub unit_price: Cents,
    pub tax_rate_id: VatRate,
    pub warehouse_id: Option<Uuid>,
    pub discount: Option<QuoteDiscount>,
}

/// The reservation a quote asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteReservation {
    pub enabled: bool,
    #[serde(default, with = "iso_date_option")]
    pub reserved_through_date: Option<Date>,
}

/// A quote's whole state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteState {
    pub number: i64,
    pub status: QuoteStatus,
    pub customer_id: Uuid,
    pub customer_name: String,
    pub items: Vec<QuoteLine>,
    pub price_list_id: Option<Uuid>,
    pub salesperson_member_id: Option<Uuid>,
    #[serde(default, with = "iso_date_option")]
    pub expires_at: Option<Date>,
    pub notes: Option<String>,
    pub global_discount_amount: Option<Cents>,
    pub reservation: Option<QuoteReservation>,
    pub subtotal: Cents,
    pub tax_amount: Cents,
    pub discount_amount: Cents,
    pub total: Cents,
    /// The order made of the quote (absent until it is converted; absent in events stored before
    /// conversions existed, which is the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub converted_order_id: Option<Uuid>,
}

/// The order a quote was converted into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteConverted {
    pub order_id: Uuid,
}

/// When a quote passed its expiry date.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteExpired {
    #[serde(with = "iso_date")]
    pub expired_on: Date,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuoteEvent {
    QuoteCreated(Box<QuoteState>),
    QuoteReplaced(Box<QuoteState>),
    QuoteDeleted,
    QuoteExpired(QuoteExpired),
    QuoteSent,
    QuoteAccepted,
    QuoteRejected,
    QuoteConverted(QuoteConverted),
}

payloads!(
    QuoteEvent,
    "quote",
    QuoteCreated(Box),
    QuoteReplaced(Box),
    QuoteDeleted,
    QuoteExpired(_),
    QuoteSent,
    QuoteAccepted,
    QuoteRejected,
    QuoteConverted(_),
);

/// A quote's state after `event` (none once deleted): the fold both sides share.
pub fn fold_quote(state: Option<QuoteState>, event: &QuoteEvent) -> Option<QuoteState> {
    match (state, event) {
        (_, QuoteEvent::QuoteCreated(q) | QuoteEvent::QuoteReplaced(q)) => Some((**q).clone()),
        (_, QuoteEvent::QuoteDeleted) => None,
        (state, QuoteEvent::QuoteExpired(_)) => state.map(|q| QuoteState { status: QuoteStatus::Expired, ..q }),
        (state, QuoteEvent::QuoteSent) => state.map(|q| QuoteState { status: QuoteStatus::Sent, ..q }),
        (state, QuoteEvent::QuoteAccepted) => state.map(|q| QuoteState { status: QuoteStatus::Accepted, ..q }),
        (state, QuoteEvent::QuoteRejected) => state.map(|q| QuoteState { status: QuoteStatus::Rejected, ..q }),
        (state, QuoteEvent::QuoteConverted(c)) => {
            state.map(|q| QuoteState { status: QuoteStatus::Converted, converted_order_id: Some(c.order_id), ..q })
        }
    }
}
