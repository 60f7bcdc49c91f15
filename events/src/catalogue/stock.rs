//! Events of stock: manual movements (stream type `stock_movement`), transfers between warehouses
//! (`stock_transfer`) and reservations (`stock_reservation`). Each event that changes on-hand lists
//! its [`StockChange`]s: the variant and warehouse, the signed quantity and the on-hand it left, so the
//! inventory ledger and the stock levels are pure folds of the store. Quantities are exact
//! [`Quantity`]s (decimal strings in JSON).

use super::{DecodeError, EventPayload};
use crate::domain::Quantity;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::{Date, OffsetDateTime, UtcOffset};
use uuid::Uuid;

time::serde::format_description!(pub iso_date, Date, "[year]-[month]-[day]");

/// A date written `YYYY-MM-DD`: RFC 3339's full date, four digits of year and no sign. time's `[year]`
/// alone also reads a signed year (`-9999-01-01`, `+2026-01-02`); Postgres holds no date before 4713 BC,
/// so such a date, once recorded, would fail every read model that folds it. Every parser of a date
/// sent to the service reads it here.
pub fn parse_date(text: &str) -> Option<Date> {
    let unsigned = text.starts_with(|c: char| c.is_ascii_digit());
    unsigned.then(|| Date::parse(text, &time::macros::format_description!("[year]-[month]-[day]")).ok()).flatten()
}

/// `Option<Date>` as `YYYY-MM-DD` or `null` (missing reads as `None` with `#[serde(default)]`).
pub mod iso_date_option {
    use serde::{Deserialize, Deserializer, Serializer};
    use time::Date;

    pub fn serialize<S: Serializer>(date: &Option<Date>, serializer: S) -> Result<S::Ok, S::Error> {
        match date {
            Some(date) => super::iso_date::serialize(date, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Date>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            None => Ok(None),
            Some(text) => Date::parse(&text, &time::macros::format_description!("[year]-[month]-[day]"))
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// The organization's calendar: Argentina, UTC-3 all year.
pub const AR_OFFSET: UtcOffset = time::macros::offset!(-3);

/// The date in the organization's calendar at `at`.
pub fn ar_date(at: OffsetDateTime) -> Date {
    at.to_offset(AR_OFFSET).date()
}

/// What caused a change of stock, as the ledger names it (every one: [`STOCK_CAUSES`]).
pub mod cause {
    pub const OPENING_STOCK: &str = "opening_stock";
    pub const STOCK_MOVEMENT: &str = "stock_movement";
    pub const STOCK_TRANSFER: &str = "stock_transfer";
    pub const PURCHASE: &str = "purchase";
    pub const PURCHASE_ORDER_RECEIPT: &str = "purchase_order_receipt";
    /// A sale's stock out, or a credit note's stock back in.
    pub const SALE: &str = "sale";
}

/// The most changes of on-hand one event carries: the inventory ledger numbers an event's rows from its
/// position × this (`seq`), so a larger event would share numbers with the next one. A command that
/// would make more (200 lines of combos of 50 components can) is refused.
pub const MAX_STOCK_CHANGES: usize = 1_000;

/// One change of on-hand of one variant in one warehouse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockChange {
    pub variant_id: Uuid,
    pub warehouse_id: Uuid,
    /// Signed: positive adds stock, negative takes it.
    pub quantity: Quantity,
    /// On hand after the change.
    pub on_hand: Quantity,
}

/// A variant and a quantity (a line as requested, or as moved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockLine {
    pub variant_id: Uuid,
    pub quantity: Quantity,
}

/// A manual movement: `in` adds, `out` takes, `count` sets on-hand to what was counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockMovementRecorded {
    pub movement_type: String,
    pub warehouse_id: Uuid,
    pub reason: Option<String>,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    /// As requested (for `count`, the counted quantities).
    pub lines: Vec<StockLine>,
    /// What changed (a count that matched on-hand changes nothing for its line).
    pub changes: Vec<StockChange>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockMovementEvent {
    StockMovementRecorded(StockMovementRecorded),
}

/// A transfer between two warehouses. `items` are the lines as requested (combos included); `lines` the
/// variants that moved, combos replaced by their components, multiplied and aggregated per variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StockTransferred {
    pub origin_warehouse_id: Uuid,
    pub destination_warehouse_id: Uuid,
    pub items: Vec<StockLine>,
    pub lines: Vec<StockLine>,
    pub notes: Option<String>,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    pub changes: Vec<StockChange>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockTransferEvent {
    StockTransferred(StockTransferred),
}

/// Who a reservation belongs to (a quote or an order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationOwner {
    pub kind: String,
    pub id: Uuid,
}

/// One reserved line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservedLine {
    pub variant_id: Uuid,
    pub warehouse_id: Uuid,
    pub quantity: Quantity,
}

/// A reservation's whole state after a reserve or an adjustment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub owner: ReservationOwner,
    /// The last date (organization calendar) the reservation counts.
    #[serde(with = "iso_date")]
    pub reserved_through: Date,
    pub lines: Vec<ReservedLine>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockReservationEvent {
    StockReserved(Reservation),
    ReservationAdjusted(Reservation),
    ReservationReleased,
    /// Recorded by the sweeper once `reserved_through` has passed.
    ReservationExpired,
}

payloads!(StockMovementEvent, "stock_movement", StockMovementRecorded(_));
payloads!(StockTransferEvent, "stock_transfer", StockTransferred(_));

payloads!(
    StockReservationEvent,
    "stock_reservation",
    StockReserved(_),
    ReservationAdjusted(_),
    ReservationReleased,
    ReservationExpired,
);

/// What one stored event does to stock, for every event of the catalogue that moves or reserves it:
/// the one reading the inventory projection and the stock write model's rebuild share, so the ledger,
/// the levels and the rebuild can never disagree on what an event meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockEffect {
    /// Changes of on-hand, each a row of the ledger naming `cause_type` and `cause_id` (the event's
    /// stream when `None`).
    Changes { cause_type: &'static str, cause_id: Option<Uuid>, occurred_on: Date, changes: Vec<StockChange> },
    /// Opening stock of new variants (no previous level: on-hand starts at the quantity).
    Opening(Vec<super::OpeningStock>),
    /// The reservation's whole state after the event (`None`: released or expired).
    Reservation(Option<Reservation>),
}

/// An aggregate whose events may move or reserve stock. It implements this beside its events and is
/// listed once in [`stock_moving!`]; the ledger's causes, the stream types that carry stock, what each
/// stored event does to stock and the inventory projection's folds all come from that one list, so a
/// stock-moving aggregate cannot be left out of any of them.
pub trait MovesStock: EventPayload {
    /// The causes its changes name in the ledger (none for reservations).
    const CAUSES: &'static [&'static str];

    /// What this event does to stock (`None`: nothing).
    fn stock_effect(self) -> Option<StockEffect>;
}

/// The one list of stock-moving aggregates (see [`MovesStock`]).
macro_rules! stock_moving {
    ($($payload:ty,)+) => {
        /// The stream types whose events may carry a [`StockEffect`], in list order.
        pub const STOCK_STREAM_TYPES: &[&str] = &[$(<$payload as EventPayload>::STREAM_TYPE,)+];

        /// Every cause type the ledger names, in list order.
        pub static STOCK_CAUSES: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
            [$(<$payload as MovesStock>::CAUSES,)+].into_iter().flatten().copied().collect()
        });

        /// The stock effect of a stored event, if it has one. Events of aggregates that do not move
        /// stock have none.
        pub fn stock_effect(
            stream_type: &str,
            event_type: &str,
            schema_version: i32,
            data: &Value,
        ) -> Result<Option<StockEffect>, DecodeError> {
            $(
                if stream_type == <$payload as EventPayload>::STREAM_TYPE {
                    return Ok(<$payload>::decode(event_type, schema_version, data.clone())?.stock_effect());
                }
            )+
            Ok(None)
        }
    };
}

stock_moving! {
    super::ProductEvent,
    StockMovementEvent,
    StockTransferEvent,
    StockReservationEvent,
    super::PurchaseEvent,
    super::PurchaseOrderEvent,
    super::SaleEvent,
    super::DeliveryNoteEvent,
}

impl MovesStock for StockMovementEvent {
    const CAUSES: &'static [&'static str] = &[cause::STOCK_MOVEMENT];

    fn stock_effect(self) -> Option<StockEffect> {
        match self {
            StockMovementEvent::StockMovementRecorded(m) => Some(StockEffect::Changes {
                cause_type: cause::STOCK_MOVEMENT,
                cause_id: None,
                occurred_on: m.occurred_on,
                changes: m.changes,
            }),
        }
    }
}

impl MovesStock for StockTransferEvent {
    const CAUSES: &'static [&'static str] = &[cause::STOCK_TRANSFER];

    fn stock_effect(self) -> Option<StockEffect> {
        match self {
            StockTransferEvent::StockTransferred(t) => Some(StockEffect::Changes {
                cause_type: cause::STOCK_TRANSFER,
                cause_id: None,
                occurred_on: t.occurred_on,
                changes: t.changes,
            }),
        }
    }
}

impl MovesStock for StockReservationEvent {
    const CAUSES: &'static [&'static str] = &[];

    fn stock_effect(self) -> Option<StockEffect> {
        match self {
            StockReservationEvent::StockReserved(r) | StockReservationEvent::ReservationAdjusted(r) => {
                Some(StockEffect::Reservation(Some(r)))
            }
            StockReservationEvent::ReservationReleased | StockReservationEvent::ReservationExpired => {
                Some(StockEffect::Reservation(None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        text.parse().expect("quantity")
    }

    #[test]
    fn a_date_has_four_digits_of_year_and_no_sign() {
        assert_eq!(parse_date("2026-11-25"), Some(time::macros::date!(2026 - 11 - 25)));
        assert_eq!(parse_date("0001-01-01"), Some(time::macros::date!(0001 - 01 - 01)));
        for refused in ["-9999-01-01", "+2026-01-02", "-0001-01-01", "2026-02-30", "26-01-01", "2026-1-1", " 2026-01-01", ""] {
            assert_eq!(parse_date(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn stock_events_round_trip_with_exact_decimal_strings() {
        let (variant, warehouse) = (Uuid::now_v7(), Uuid::now_v7());
        let event = StockMovementEvent::StockMovementRecorded(StockMovementRecorded {
            movement_type: "out".into(),
            warehouse_id: warehouse,
            reason: Some("rotura".into()),
            occurred_on: time::macros::date!(2026 - 11 - 25),
            lines: vec![StockLine { variant_id: variant, quantity: q("1.5") }],
            changes: vec![StockChange {
                variant_id: variant,
                warehouse_id: warehouse,
                quantity: q("-1.5"),
                on_hand: q("8.5"),
            }],
        });
        let data = event.to_data().expect("encodes");
        assert_eq!(data["occurred_on"], "2026-11-25");
        assert_eq!(data["changes"][0]["quantity"], "-1.5");
        assert_eq!(data["changes"][0]["on_hand"], "8.5");
        assert_eq!(StockMovementEvent::decode("StockMovementRecorded", 1, data.clone()).expect("decodes"), event);
        assert!(StockMovementEvent::decode("StockMovementRecorded", 2, data).is_err());
        let released = StockReservationEvent::ReservationReleased;
        assert_eq!(
            StockReservationEvent::decode(released.event_type(), 1, released.to_data().expect("encodes")).expect("decodes"),
            released
        );
    }

    #[test]
    fn the_calendar_date_is_argentinas() {
        let late_evening = time::macros::datetime!(2026-11-26 01:30 UTC);
        assert_eq!(ar_date(late_evening), time::macros::date!(2026 - 11 - 25));
    }
}
