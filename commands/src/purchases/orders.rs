//! Purchase orders: what a business orders from a supplier, then receives in one or more receipts.
//!
//! States and moves (an illegal move is 409 `STATE_CONFLICT` naming the current state):
//!
//! | from | operation | to |
//! |---|---|---|
//! | (none) | create | `draft` (numbered, gap-free per organization) |
//! | `draft` | confirm | `confirmed` |
//! | `confirmed`, `partially_received` | receipt | `partially_received`, or `received` once every line arrived |
//! | `draft`, `confirmed`, `partially_received` | close | `closed` (nothing more arrives) |
//! | `closed` | reopen | the state it was closed from |
//!
//! A receipt raises stock for what arrived (in the order's warehouse unless it names another) and may
//! not exceed what is pending on a line unless it says `allow_over_receipt`.

use super::checks::{add_stock, stocked_lines, supplier_blocker, warehouse_blocker};
use super::{Blocker, ItemInput, currency_rate, parse_items, price_lines};
use super::{blocked, product_blockers};
use crate::aggregate::{Aggregate, BusinessDetail, Rejection};
use crate::engine::{ExecuteError, NoFollowUps, WithId, append_together};
use crate::lookups::load_products;
use crate::reply::CommandReply;
use crate::validate::{FieldError, ObjectReader, camel_case_keys};
use events::catalogue::{
    PurchaseOrderClosed, PurchaseOrderCreated, PurchaseOrderEvent, PurchaseOrderReceived, StockLine, iso_date,
    iso_date_option,
};
pub use events::catalogue::{PurchaseOrderState as PurchaseOrder, PurchaseOrderStatus, Receipt};
use events::domain::ExchangeRate;
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

impl Aggregate for PurchaseOrder {
    type Command = OrderCommand;
    type Event = PurchaseOrderEvent;

    /// The moves that need nothing beyond the order's state: confirm, close, reopen. Creation and
    /// receipts are decided in [`run`], where the lookups they need are made.
    fn decide(state: Option<&Self>, command: &OrderCommand) -> Result<Vec<PurchaseOrderEvent>, Rejection> {
        let Some(order) = state else { return Err(Rejection::not_found("purchase order")) };
        let refuse = |what: &str, allowed: &str| {
            Rejection::state_conflict(
                "ORDER_STATE",
                order.status.as_str(),
                format!("the purchase order is {}: only {allowed} can be {what}", order.status.as_str()),
            )
        };
        match command {
            OrderCommand::Confirm { .. } => match order.status {
                PurchaseOrderStatus::Draft => Ok(vec![PurchaseOrderEvent::PurchaseOrderConfirmed]),
                _ => Err(refuse("confirmed", "a draft")),
            },
            OrderCommand::Close { reason, .. } => match order.status {
                PurchaseOrderStatus::Draft
                | PurchaseOrderStatus::Confirmed
                | PurchaseOrderStatus::PartiallyReceived => {
                    Ok(vec![PurchaseOrderEvent::PurchaseOrderClosed(PurchaseOrderClosed { reason: reason.clone() })])
                }
                PurchaseOrderStatus::Received | PurchaseOrderStatus::Closed => {
                    Err(refuse("closed", "a draft, confirmed or partially received order"))
                }
            },
            OrderCommand::Reopen { .. } => match order.status {
                PurchaseOrderStatus::Closed => Ok(vec![PurchaseOrderEvent::PurchaseOrderReopened]),
                _ => Err(refuse("reopened", "a closed order")),
            },
            OrderCommand::Receive { .. } => match order.status {
                PurchaseOrderStatus::Confirmed | PurchaseOrderStatus::PartiallyReceived => Ok(Vec::new()),
                _ => Err(refuse("received", "a confirmed or partially received order")),
            },
            OrderCommand::Create { .. } => {
                Err(Rejection::conflict("ALREADY_EXISTS", "the purchase order already exists"))
            }
        }
    }

    fn evolve(state: Option<Self>, event: &PurchaseOrderEvent, at: OffsetDateTime) -> Option<Self> {
        PurchaseOrder::fold(state, event, at)
    }
}

impl WithId for PurchaseOrder {
    type FollowUps = NoFollowUps;

    fn with_id(self, id: Uuid) -> Self {
        PurchaseOrder { id, ..self }
    }
}

/// A purchase order as sent for creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderInput {
    pub supplier_id: Uuid,
    pub warehouse_id: Uuid,
    pub voucher_type: i32,
    pub currency: String,
    pub exchange_rate: Option<ExchangeRate>,
    #[serde(default, with = "iso_date_option")]
    pub expected_on: Option<Date>,
    pub notes: Option<String>,
    pub items: Vec<ItemInput>,
}

/// A receipt as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptInput {
    pub warehouse_id: Option<Uuid>,
    #[serde(with = "iso_date")]
    pub occurred_on: Date,
    pub lines: Vec<StockLine>,
    pub allow_over_receipt: bool,
    pub notes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OrderCommand {
    Create { id: Uuid, input: OrderInput },
    Confirm { id: Uuid },
    Close { id: Uuid, reason: Option<String> },
    Reopen { id: Uuid },
    Receive { id: Uuid, receipt_id: Uuid, input: ReceiptInput },
}

impl OrderCommand {
    pub fn order_id(&self) -> Uuid {
        match self {
            Self::Create { id, .. }
            | Self::Confirm { id }
            | Self::Close { id, .. }
            | Self::Reopen { id }
            | Self::Receive { id, .. } => *id,
        }
    }
}

/// Parses a purchase order (camelCase; snake_case spellings accepted): `supplierId`, `warehouseId`
/// (where receipts arrive), `voucherType` (1 by default), `currency` and `exchangeRate`, `expectedOn`,
/// `notes`, `items`.
pub fn parse_order(body: &Value) -> Result<OrderInput, Vec<FieldError>> {
    let (body, mut spelled) = camel_case_keys(body, "");
    let mut r = ObjectReader::new(&body, "");
    r.errors.append(&mut spelled);
    let supplier_id = r.required_uuid("supplierId");
    let warehouse_id = r.required_uuid("warehouseId");
    let voucher_type = r.optional_int("voucherType", 1, 95).unwrap_or(1) as i32;
    let currency = r.optional_enum("currency", super::CURRENCIES).unwrap_or_else(|| "PES".to_owned());
    let exchange_rate = match r.value("exchangeRate") {
        None => None,
        Some(value) => match ExchangeRate::parse(value) {
            Ok(rate) => Some(rate),
            Err(error) => {
                r.reject("exchangeRate", "invalid_value", error.to_string());
                None
            }
        },
    };
    let expected_on = r.optional_date("expectedOn");
    let notes = r.optional_str("notes", 1000);
    let items = parse_items(&mut r);
    let input = OrderInput {
        supplier_id: supplier_id.unwrap_or_default(),
        warehouse_id: warehouse_id.unwrap_or_default(),
        voucher_type,
        currency,
        exchange_rate,
        expected_on,
        notes,
        items,
    };
    r.finish(input)
}

/// Parses a receipt: `lines` [{`productId`, `quantity`}] (each product once), `warehouseId` (the
/// order's by default), `occurredOn` (today by default, never later), `allowOverReceipt`, `notes`.
pub fn parse_receipt(body: &Value, today: Date) -> Result<ReceiptInput, Vec<FieldError>> {
    let (body, mut spelled) = camel_case_keys(body, "");
    let mut r = ObjectReader::new(&body, "");
    r.errors.append(&mut spelled);
    let warehouse_id = r.optional_uuid("warehouseId");
    let occurred_on = r.optional_date("occurredOn");
    if occurred_on.is_some_and(|d| d > today) {
        r.reject("occurredOn", "in_future", format!("must not be after today ({today})"));
    }
    let allow_over_receipt = r.optional_bool("allowOverReceipt").unwrap_or(false);
    let notes = r.optional_str("notes", 1000);
    let mut lines: Vec<StockLine> = Vec::new();
    for (i, item) in r.required_array("lines", 1, super::MAX_LINES).iter().enumerate() {
        let mut line = ObjectReader::new(item, &format!("lines[{i}]"));
        let variant_id = line.required_uuid("productId");
        let quantity = line.required_quantity("quantity", true);
        if let Some(id) = variant_id
            && lines.iter().any(|l| l.variant_id == id)
        {
            line.reject("productId", "duplicate", "each product may appear once");
        }
        r.errors.append(&mut line.errors);
        if let (Some(variant_id), Some(quantity)) = (variant_id, quantity) {
            lines.push(StockLine { variant_id, quantity });
        }
    }
    let input =
        ReceiptInput { warehouse_id, occurred_on: occurred_on.unwrap_or(today), lines, allow_over_receipt, notes };
    r.finish(input)
}

/// Runs an order command in the caller's transaction, `state` and `version` being the order's as loaded.
pub(crate) async fn run(
    conn: &mut PgConnection,
    org_id: Uuid,
    command: &OrderCommand,
    state: Option<PurchaseOrder>,
    version: i32,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let id = command.order_id();
    let events = match (command, &state) {
        (OrderCommand::Create { input, .. }, None) => vec![create(conn, org_id, input).await?],
        (OrderCommand::Receive { receipt_id, input, .. }, Some(order)) => {
            PurchaseOrder::decide(state.as_ref(), command)?;
            vec![receive(conn, org_id, order, *receipt_id, input).await?]
        }
        _ => PurchaseOrder::decide(state.as_ref(), command)?,
    };
    let stream =
        StreamRef { org_id, stream_type: PurchaseOrderEvent::STREAM_TYPE, stream_id: id, expected_version: version };
    let new = events.iter().map(EventPayload::to_new_event).collect::<Result<_, _>>()?;
    let key = append_together(conn, &[AppendRequest { stream, events: new, metadata: metadata.clone() }], id).await?;
    let now = OffsetDateTime::now_utc();
    let mut next = state.clone();
    for event in &events {
        next = PurchaseOrder::evolve(next, event, now);
    }
    let order = next.ok_or_else(|| Rejection::not_found("purchase order"))?.with_id(id);
    let created = state.is_none();
    Ok(CommandReply::accepted(key, created, &order, Vec::new())?)
}

/// Assesses a new order (supplier, products, warehouse, currency), prices its lines and takes the next
/// number of the organization's series (a row lock keeps numbers gap-free: a refused order rolls back).
async fn create(conn: &mut PgConnection, org_id: Uuid, input: &OrderInput) -> Result<PurchaseOrderEvent, ExecuteError> {
    let variants: Vec<Uuid> = input.items.iter().map(|i| i.variant_id).collect();
    let (facts, _) = load_products(conn, org_id, &variants).await?;
    let mut blockers: Vec<Blocker> = supplier_blocker(conn, org_id, input.supplier_id).await?.into_iter().collect();
    blockers.extend(warehouse_blocker(conn, org_id, input.warehouse_id, "warehouseId").await?);
    blockers.extend(product_blockers(variants.iter().copied(), &facts));
    let rate = currency_rate(&input.currency, input.exchange_rate, &mut blockers);
    if !blockers.is_empty() {
        return Err(blocked(blockers).into());
    }
    let (lines, amounts) =
        price_lines(input.voucher_type, rate, &input.items, &facts).map_err(|errors| Rejection::Invalid { errors })?;
    let number: i64 = sqlx::query_scalar(
        "insert into document_numbers (org_id, series, last) values ($1, 'purchase_order', 1)
         on conflict (org_id, series) do update set last = document_numbers.last + 1 returning last",
    )
    .bind(org_id)
    .fetch_one(&mut *conn)
    .await?;
    Ok(PurchaseOrderEvent::PurchaseOrderCreated(Box::new(PurchaseOrderCreated {
        number,
        supplier_id: input.supplier_id,
        warehouse_id: input.warehouse_id,
        voucher_type: input.voucher_type,
        currency: input.currency.clone(),
        exchange_rate: rate,
        expected_on: input.expected_on,
        notes: input.notes.clone(),
        lines,
        amounts,
    })))
}

/// A receipt: every line a product of the order, within what is pending unless allowed beyond; the
/// stock rises in the receipt's warehouse.
async fn receive(
    conn: &mut PgConnection,
    org_id: Uuid,
    order: &PurchaseOrder,
    receipt_id: Uuid,
    input: &ReceiptInput,
) -> Result<PurchaseOrderEvent, ExecuteError> {
    let pending = order.pending();
    let mut errors = Vec::new();
    let mut exceeded = Vec::new();
    for (i, line) in input.lines.iter().enumerate() {
        match pending.iter().find(|(v, _)| *v == line.variant_id) {
            None => errors.push(FieldError::new(
                format!("lines[{i}].productId"),
                "not_in_order",
                "this product is not on the purchase order",
            )),
            Some((_, left)) if line.quantity > *left && !input.allow_over_receipt => exceeded.push(BusinessDetail {
                field: Some(format!("lines[{i}].quantity")),
                code: "RECEIPT_EXCEEDS_PENDING".into(),
                message: format!(
                    "{} received but only {left} pending; send allowOverReceipt to receive more",
                    line.quantity
                ),
                metadata: BTreeMap::from([
                    ("product_id".to_owned(), Value::String(line.variant_id.to_string())),
                    ("pending_quantity".to_owned(), Value::String(left.to_string())),
                    ("received_quantity".to_owned(), Value::String(line.quantity.to_string())),
                ]),
            }),
            Some(_) => {}
        }
    }
    if !errors.is_empty() {
        return Err(Rejection::Invalid { errors }.into());
    }
    if !exceeded.is_empty() {
        return Err(Rejection::Unprocessable {
            code: "RECEIPT_EXCEEDS_PENDING".into(),
            message: "a line receives more than is pending on the order; nothing was received".into(),
            details: exceeded,
        }
        .into());
    }
    let warehouse = input.warehouse_id.unwrap_or(order.warehouse_id);
    if let Some(blocker) = warehouse_blocker(conn, org_id, warehouse, "warehouseId").await? {
        return Err(blocked(vec![blocker]).into());
    }
    let over_receipt =
        input.lines.iter().any(|l| pending.iter().any(|(v, left)| *v == l.variant_id && l.quantity > *left));
    let variants: Vec<Uuid> = input.lines.iter().map(|l| l.variant_id).collect();
    let (facts, _) = load_products(conn, org_id, &variants).await?;
    let stocked = stocked_lines(conn, org_id, input.lines.iter().map(|l| (l.variant_id, l.quantity)), &facts).await?;
    let changes = add_stock(conn, org_id, warehouse, &stocked, true).await?;
    Ok(PurchaseOrderEvent::PurchaseOrderReceived(PurchaseOrderReceived {
        receipt_id,
        warehouse_id: warehouse,
        occurred_on: input.occurred_on,
        lines: input.lines.clone(),
        over_receipt,
        notes: input.notes.clone(),
        changes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use events::catalogue::{PurchaseAmounts, PurchaseLine};
    use events::domain::{Quantity, VatRate};

    fn order(lines: &[(Uuid, &str)]) -> PurchaseOrder {
        let now = OffsetDateTime::now_utc();
        let created = PurchaseOrderCreated {
            number: 1,
            supplier_id: Uuid::now_v7(),
            warehouse_id: Uuid::now_v7(),
            voucher_type: 1,
            currency: "PES".into(),
            exchange_rate: ExchangeRate::ONE,
            expected_on: None,
            notes: None,
            lines: lines
                .iter()
                .map(|(v, q)| PurchaseLine {
                    variant_id: *v,
                    quantity: q.parse().expect("q"),
                    unit_cost: events::domain::Cents::of(100),
                    tax_rate_id: VatRate::GENERAL,
                    net: events::domain::Cents::of(0),
                    vat: events::domain::Cents::of(0),
                    total: events::domain::Cents::of(0),
                    net_ars: events::domain::Cents::of(0),
                    vat_ars: events::domain::Cents::of(0),
                    total_ars: events::domain::Cents::of(0),
                })
                .collect(),
            amounts: PurchaseAmounts::default(),
        };
        PurchaseOrder::evolve(None, &PurchaseOrderEvent::PurchaseOrderCreated(Box::new(created)), now).expect("created")
    }

    fn received(lines: &[(Uuid, &str)]) -> PurchaseOrderEvent {
        PurchaseOrderEvent::PurchaseOrderReceived(PurchaseOrderReceived {
            receipt_id: Uuid::now_v7(),
            warehouse_id: Uuid::now_v7(),
            occurred_on: time::macros::date!(2026 - 11 - 25),
            lines: lines.iter().map(|(v, q)| StockLine { variant_id: *v, quantity: q.parse().expect("q") }).collect(),
            over_receipt: false,
            notes: None,
            changes: Vec::new(),
        })
    }

    #[test]
    fn orders_move_through_their_states_and_refuse_illegal_moves() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let now = OffsetDateTime::now_utc();
        let draft = order(&[(a, "10"), (b, "2.5"), (a, "5")]);
        assert_eq!(draft.ordered(), [(a, "15".parse().expect("q")), (b, "2.5".parse().expect("q"))]);
        let id = Uuid::now_v7();
        let receive = OrderCommand::Receive {
            id,
            receipt_id: Uuid::now_v7(),
            input: ReceiptInput {
                warehouse_id: None,
                occurred_on: time::macros::date!(2026 - 11 - 25),
                lines: vec![],
                allow_over_receipt: false,
                notes: None,
            },
        };
        let refused = PurchaseOrder::decide(Some(&draft), &receive).expect_err("a draft receives nothing");
        assert!(
            matches!(&refused, Rejection::StateConflict { details, .. } if details[0].metadata["current_state"] == "draft")
        );
        let confirmed = PurchaseOrder::decide(Some(&draft), &OrderCommand::Confirm { id }).expect("confirmed");
        let mut state = PurchaseOrder::evolve(Some(draft), &confirmed[0], now).expect("state");
        assert_eq!(state.status, PurchaseOrderStatus::Confirmed);
        assert!(PurchaseOrder::decide(Some(&state), &OrderCommand::Confirm { id }).is_err(), "confirmed once");
        state = PurchaseOrder::evolve(Some(state), &received(&[(a, "15")]), now).expect("state");
        assert_eq!(state.status, PurchaseOrderStatus::PartiallyReceived);
        assert_eq!(state.pending(), [(a, Quantity::ZERO), (b, "2.5".parse().expect("q"))]);
        let closed = PurchaseOrder::decide(Some(&state), &OrderCommand::Close { id, reason: None }).expect("closed");
        state = PurchaseOrder::evolve(Some(state), &closed[0], now).expect("state");
        assert_eq!(state.status, PurchaseOrderStatus::Closed);
        let reopened = PurchaseOrder::decide(Some(&state), &OrderCommand::Reopen { id }).expect("reopened");
        state = PurchaseOrder::evolve(Some(state), &reopened[0], now).expect("state");
        assert_eq!(state.status, PurchaseOrderStatus::PartiallyReceived, "back to where it was closed from");
        state = PurchaseOrder::evolve(Some(state), &received(&[(b, "2.5")]), now).expect("state");
        assert_eq!(state.status, PurchaseOrderStatus::Received);
        assert!(PurchaseOrder::decide(Some(&state), &OrderCommand::Close { id, reason: None }).is_err());
    }
}
