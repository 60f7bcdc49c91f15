//! Events of purchasing: purchases (stream type `purchase`, one event per purchase, written once) and
//! purchase orders (`purchase_order`: created, confirmed, received in receipts, closed, reopened). Every
//! amount is integer cents, in the document's currency and in pesos; quantities are exact. Events that
//! raise stock list their [`StockChange`]s with the on-hand each left, like every stock event.

use super::stock::{StockChange, StockLine, iso_date, iso_date_option};
use crate::domain::{Cents, ExchangeRate, Quantity, VatRate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// A line of a purchase or purchase order as stored, with its canonical amounts (from the tax engine)
/// in the document's currency and in pesos.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseLine {
    pub variant_id: Uuid,
    pub quantity: Quantity,
    /// Cents of the document's currency: net of VAT on A vouchers, VAT included otherwise.
    pub unit_cost: Cents,
    pub tax_rate_id: VatRate,
    pub net: Cents,
    pub vat: Cents,
    pub total: Cents,
    pub net_ars: Cents,
    pub vat_ars: Cents,
    pub total_ars: Cents,
}

/// A document's totals in its currency and in pesos (`subtotal + tax_amount = total`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseAmounts {
    pub subtotal: Cents,
    pub tax_amount: Cents,
    pub total: Cents,
    pub subtotal_ars: Cents,
    pub tax_amount_ars: Cents,
    pub total_ars: Cents,
}

/// A product's last cost moved by a purchase (recorded on the product's own stream as well).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostUpdate {
    pub variant_id: Uuid,
    /// In pesos.
    pub previous: Cents,
    pub current: Cents,
}

/// A supplier's invoice, recorded with its lines and, when the goods arrived with it, the stock it
/// raised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseRecorded {
    pub supplier_id: Uuid,
    pub voucher_type: i32,
    pub supplier_invoice_number: String,
    #[serde(with = "iso_date")]
    pub invoice_date: Date,
    #[serde(default, with = "iso_date_option")]
    pub due_date: Option<Date>,
    pub currency: String,
    pub exchange_rate: ExchangeRate,
    pub products_received: bool,
    pub warehouse_id: Option<Uuid>,
    pub notes: Option<String>,
    pub lines: Vec<PurchaseLine>,
    pub amounts: PurchaseAmounts,
    /// Stock raised (empty unless `products_received`).
    pub changes: Vec<StockChange>,
    pub cost_updates: Vec<CostUpdate>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurchaseEvent {
    PurchaseRecorded(Box<PurchaseRecorded>),
}

/// A purchase order as created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseOrderCreated {
    /// Gap-free per organization, from 1.
    pub number: i64,
    pub supplier_id: Uuid,
    /// Where receipts arrive unless they say otherwise.
    pub warehouse_id: Uuid,
    pub voucher_type: i32,
    pub currency: String,
    pub exchange_rate: ExchangeRate,
    #[serde(default, with = "iso_date_option")]
    pub expected_on: Option<Date>,
    pub notes: Option<String>,
    pub lines: Vec<PurchaseLine>,
    pub amounts: PurchaseAmounts,
}

/// Goods of a purchase order that arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseOrderReceived {
    pub receipt_id: Uuid,
    pub warehouse_id: Uuid,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    /// Received per variant.
    pub lines: Vec<StockLine>,
    /// The receipt allowed receiving more than was pending.
    pub over_receipt: bool,
    pub notes: Option<String>,
    pub changes: Vec<StockChange>,
}

/// Why an order was closed (optional).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseOrderClosed {
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PurchaseOrderEvent {
    PurchaseOrderCreated(Box<PurchaseOrderCreated>),
    PurchaseOrderConfirmed,
    PurchaseOrderReceived(PurchaseOrderReceived),
    PurchaseOrderClosed(PurchaseOrderClosed),
    PurchaseOrderReopened,
}

named_enum! {
    /// Where a purchase order stands.
    pub enum PurchaseOrderStatus {
        Draft = "draft", Confirmed = "confirmed", PartiallyReceived = "partially_received", Received = "received",
        Closed = "closed",
    }
}

/// One receipt as the order remembers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    pub id: Uuid,
    pub warehouse_id: Uuid,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    pub lines: Vec<StockLine>,
    pub over_receipt: bool,
    pub notes: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A purchase order's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurchaseOrderState {
    pub id: Uuid,
    pub number: i64,
    pub status: PurchaseOrderStatus,
    pub supplier_id: Uuid,
    pub warehouse_id: Uuid,
    pub voucher_type: i32,
    pub currency: String,
    pub exchange_rate: ExchangeRate,
    #[serde(default, with = "iso_date_option")]
    pub expected_on: Option<Date>,
    pub notes: Option<String>,
    pub lines: Vec<PurchaseLine>,
    pub amounts: PurchaseAmounts,
    pub receipts: Vec<Receipt>,
    /// The state a closed order returns to when reopened.
    pub closed_from: Option<PurchaseOrderStatus>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl PurchaseOrderState {
    /// Ordered per variant (lines of one product summed, held at [`Quantity::MAX_UNITS`] as a comparison
    /// with what was received needs), in order of first appearance.
    pub fn ordered(&self) -> Vec<(Uuid, Quantity)> {
        let mut out: Vec<(Uuid, Quantity)> = Vec::new();
        for line in &self.lines {
            match out.iter_mut().find(|(v, _)| *v == line.variant_id) {
                Some((_, q)) => *q = q.saturating_add(line.quantity),
                None => out.push((line.variant_id, line.quantity)),
            }
        }
        out
    }

    /// Received so far per variant (held at [`Quantity::MAX_UNITS`], as [`Self::ordered`] is).
    pub fn received(&self) -> BTreeMap<Uuid, Quantity> {
        let mut out: BTreeMap<Uuid, Quantity> = BTreeMap::new();
        for line in self.receipts.iter().flat_map(|r| &r.lines) {
            let q = out.entry(line.variant_id).or_default();
            *q = q.saturating_add(line.quantity);
        }
        out
    }

    /// Still to arrive per variant (never negative).
    pub fn pending(&self) -> Vec<(Uuid, Quantity)> {
        let received = self.received();
        self.ordered()
            .into_iter()
            .map(|(v, q)| {
                let got = received.get(&v).copied().unwrap_or_default();
                (v, q.remaining_after(got))
            })
            .collect()
    }

    fn fully_received(&self) -> bool {
        self.pending().iter().all(|(_, q)| q.is_zero())
    }

    /// The order after `event` (recorded at `at`): the one fold the command side and the read side share.
    pub fn fold(state: Option<Self>, event: &PurchaseOrderEvent, at: OffsetDateTime) -> Option<Self> {
        match (state, event) {
            (_, PurchaseOrderEvent::PurchaseOrderCreated(created)) => Some(PurchaseOrderState {
                id: Uuid::nil(),
                number: created.number,
                status: PurchaseOrderStatus::Draft,
                supplier_id: created.supplier_id,
                warehouse_id: created.warehouse_id,
                voucher_type: created.voucher_type,
                currency: created.currency.clone(),
                exchange_rate: created.exchange_rate,
                expected_on: created.expected_on,
                notes: created.notes.clone(),
                lines: created.lines.clone(),
                amounts: created.amounts.clone(),
                receipts: Vec::new(),
                closed_from: None,
                created_at: at,
                updated_at: at,
            }),
            (None, _) => None,
            (Some(order), PurchaseOrderEvent::PurchaseOrderConfirmed) => {
                Some(PurchaseOrderState { status: PurchaseOrderStatus::Confirmed, updated_at: at, ..order })
            }
            (Some(mut order), PurchaseOrderEvent::PurchaseOrderReceived(received)) => {
                order.receipts.push(Receipt {
                    id: received.receipt_id,
                    warehouse_id: received.warehouse_id,
                    occurred_on: received.occurred_on,
                    lines: received.lines.clone(),
                    over_receipt: received.over_receipt,
                    notes: received.notes.clone(),
                    created_at: at,
                });
                order.status = if order.fully_received() {
                    PurchaseOrderStatus::Received
                } else {
                    PurchaseOrderStatus::PartiallyReceived
                };
                order.updated_at = at;
                Some(order)
            }
            (Some(order), PurchaseOrderEvent::PurchaseOrderClosed(_)) => Some(PurchaseOrderState {
                closed_from: Some(order.status),
                status: PurchaseOrderStatus::Closed,
                updated_at: at,
                ..order
            }),
            (Some(order), PurchaseOrderEvent::PurchaseOrderReopened) => Some(PurchaseOrderState {
                status: order.closed_from.unwrap_or(PurchaseOrderStatus::Draft),
                closed_from: None,
                updated_at: at,
                ..order
            }),
        }
    }
}

payloads!(PurchaseEvent, "purchase", PurchaseRecorded(Box));

payloads!(
    PurchaseOrderEvent,
    "purchase_order",
    PurchaseOrderCreated(Box),
    PurchaseOrderConfirmed,
    PurchaseOrderReceived(_),
    PurchaseOrderClosed(_),
    PurchaseOrderReopened,
);

impl super::MovesStock for PurchaseEvent {
    const CAUSES: &'static [&'static str] = &[super::cause::PURCHASE];

    fn stock_effect(self) -> Option<super::StockEffect> {
        match self {
            PurchaseEvent::PurchaseRecorded(p) if !p.changes.is_empty() => Some(super::StockEffect::Changes {
                cause_type: super::cause::PURCHASE,
                cause_id: None,
                occurred_on: p.invoice_date,
                changes: p.changes,
            }),
            PurchaseEvent::PurchaseRecorded(_) => None,
        }
    }
}

impl super::MovesStock for PurchaseOrderEvent {
    const CAUSES: &'static [&'static str] = &[super::cause::PURCHASE_ORDER_RECEIPT];

    fn stock_effect(self) -> Option<super::StockEffect> {
        match self {
            PurchaseOrderEvent::PurchaseOrderReceived(r) => Some(super::StockEffect::Changes {
                cause_type: super::cause::PURCHASE_ORDER_RECEIPT,
                cause_id: Some(r.receipt_id),
                occurred_on: r.occurred_on,
                changes: r.changes,
            }),
            PurchaseOrderEvent::PurchaseOrderCreated(_)
            | PurchaseOrderEvent::PurchaseOrderConfirmed
            | PurchaseOrderEvent::PurchaseOrderClosed(_)
            | PurchaseOrderEvent::PurchaseOrderReopened => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::EventPayload;

    #[test]
    fn purchase_events_round_trip() {
        let (variant, warehouse) = (Uuid::now_v7(), Uuid::now_v7());
        let line = PurchaseLine {
            variant_id: variant,
            quantity: "2.5".parse().expect("q"),
            unit_cost: Cents::of(1000),
            tax_rate_id: VatRate::GENERAL,
            net: Cents::of(2500),
            vat: Cents::of(525),
            total: Cents::of(3025),
            net_ars: Cents::of(2500),
            vat_ars: Cents::of(525),
            total_ars: Cents::of(3025),
        };
        let event = PurchaseEvent::PurchaseRecorded(Box::new(PurchaseRecorded {
            supplier_id: Uuid::now_v7(),
            voucher_type: 1,
            supplier_invoice_number: "0001-00001234".into(),
            invoice_date: time::macros::date!(2026 - 11 - 20),
            due_date: None,
            currency: "PES".into(),
            exchange_rate: ExchangeRate::ONE,
            products_received: true,
            warehouse_id: Some(warehouse),
            notes: None,
            lines: vec![line.clone()],
            amounts: PurchaseAmounts {
                subtotal: Cents::of(2500),
                tax_amount: Cents::of(525),
                total: Cents::of(3025),
                ..Default::default()
            },
            changes: vec![StockChange {
                variant_id: variant,
                warehouse_id: warehouse,
                quantity: line.quantity,
                on_hand: line.quantity,
            }],
            cost_updates: vec![],
        }));
        let data = event.to_data().expect("encodes");
        assert_eq!(data["invoice_date"], "2026-11-20");
        assert_eq!(data["exchange_rate"], "1");
        assert_eq!(data["due_date"], serde_json::Value::Null);
        assert_eq!(PurchaseEvent::decode("PurchaseRecorded", 1, data).expect("decodes"), event);
        let confirmed = PurchaseOrderEvent::PurchaseOrderConfirmed;
        assert_eq!(
            PurchaseOrderEvent::decode(confirmed.event_type(), 1, confirmed.to_data().expect("encodes")).expect("decodes"),
            confirmed
        );
    }
}
