//! Orders (Style A, snake_case, `object: "order"`): created for the service's own channel or by
//! converting a quote (`POST /api/v1/quotes/{quote_id}/convert`, in `quotes.rs`), read, listed, edited
//! (notes alone, or the structure against `expected_updated_at`), cancelled and completed. Amounts are
//! canonical; a reservation holds what is still to deliver.

use crate::http::body::RawJson;
use crate::http::discounts::{QuoteDiscountData, QuoteDiscountInput};
use crate::http::error::ApiError;
use crate::http::idempotency;
use crate::http::inventory::StockWarning;
use crate::http::list::ListEnvelope;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::presence::{Nullable, Optional};
use crate::http::routes_group::routes;
use crate::http::resource::{Call, Kind, PageParams, Write, decode_state};
use crate::http::schema::{Blank, Cents, QuantityIn, QuantityText, Text, VatCode, rules};
use crate::http::shared_filters::{Filters, date_schema, uuid_schema};
use crate::http::shared_operations::operations;
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, Style, ar_time};
use crate::state::AppState;
use commands::orders::{OrderCommand, OrderOutcome, READ_ONLY, parse_order, parse_patch};
use commands::protocol::{Command, CommandKind};
use events::catalogue::{FulfillmentStatus, OrderState, OrderStatus};
use events::domain::{Quantity, Scope};
use poem_openapi::param::Query;
use poem_openapi::{Enum, Object};
use projections::ProjectionId;
use projections::orders::{self as read, OrderFilter, OrderRow};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

const WHY: &str = "The organization blocks negative stock and the reservation asks for more than is available \
                   (`INSUFFICIENT_STOCK`, one detail per short line), or a line would drop below what was \
                   already delivered or billed, or such a line would name another product (`PRECONDITION_FAILED`, \
                   naming the line); nothing was saved";

operations! {
    OrdersApi, INPUT_RULES;
    LIST_ORDERS = read("listOrders", Some(Scope::OrdersRead));
    GET_ORDER = read("getOrder", Some(Scope::OrdersRead));
    CREATE_ORDER =
        write("createOrder", Scope::OrdersWrite, Idempotency::Required, CommandKind::Order).unprocessable(WHY);
    UPDATE_ORDER =
        write("updateOrder", Scope::OrdersWrite, Idempotency::Optional, CommandKind::Order).unprocessable(WHY);
    CANCEL_ORDER = write("cancelOrder", Scope::OrdersWrite, Idempotency::Required, CommandKind::Order);
    COMPLETE_ORDER = write("completeOrder", Scope::OrdersWrite, Idempotency::Required, CommandKind::Order);
}

pub(crate) const ORDERS: Kind = Kind::new("order", ProjectionId::Orders, "/api/v1/orders", "orders");

/// `open`, `completed` or `cancelled`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum OrderStatusData {
    Open,
    Completed,
    Cancelled,
}

impl From<OrderStatus> for OrderStatusData {
    fn from(s: OrderStatus) -> Self {
        match s {
            OrderStatus::Open => Self::Open,
            OrderStatus::Completed => Self::Completed,
            OrderStatus::Cancelled => Self::Cancelled,
        }
    }
}

/// `unfulfilled`, `partially_fulfilled` or `fulfilled`, from the delivered quantities.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum FulfillmentStatusData {
    Unfulfilled,
    PartiallyFulfilled,
    Fulfilled,
}

impl From<FulfillmentStatus> for FulfillmentStatusData {
    fn from(s: FulfillmentStatus) -> Self {
        match s {
            FulfillmentStatus::Unfulfilled => Self::Unfulfilled,
            FulfillmentStatus::PartiallyFulfilled => Self::PartiallyFulfilled,
            FulfillmentStatus::Fulfilled => Self::Fulfilled,
        }
    }
}

/// An order line.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct SalesOrderLineData {
    /// Stable across edits: a structural edit names the lines it keeps by it.
    pub id: Uuid,
    /// The product variant (null on a free-text line).
    pub product_id: Nullable<Uuid>,
    /// The free text of a line without a product (null otherwise).
    pub name: Nullable<String>,
    pub quantity: QuantityText,
    /// Cents, net of VAT (also when the order was made with VAT-inclusive prices: send it back as read).
    pub unit_price: i64,
    pub tax_rate_id: i32,
    /// The warehouse the line's goods leave from (the order's `assigned_warehouse_id` unless a
    /// converted quote named another); a structural edit keeps it unless it names another
    /// `assigned_warehouse_id`.
    pub warehouse_id: Nullable<Uuid>,
    pub discount: Nullable<QuoteDiscountData>,
    /// Held for the line now, out of what has neither been delivered nor billed (a unit leaves the
    /// warehouse once, with its delivery note or its sale, whichever comes first). A combo holds no
    /// stock: its line shows 0, and the reservation holds its components (their stock levels show it).
    pub reserved: QuantityText,
    pub delivered: QuantityText,
    pub billed: QuantityText,
}

/// An order's amounts, integer cents.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct OrderAmountsData {
    pub discount: i64,
    pub subtotal: i64,
    pub tax: i64,
    pub total: i64,
}

/// An order.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct OrderData {
    /// Always `order`.
    pub object: String,
    pub id: Uuid,
    /// Gap-free per organization, from 1.
    pub number: i64,
    /// `PED-00000042`.
    pub formatted_number: String,
    pub status: OrderStatusData,
    pub fulfillment_status: FulfillmentStatusData,
    pub customer_id: Uuid,
    pub customer_name: String,
    pub assigned_warehouse_id: Nullable<Uuid>,
    pub delivery_method: Nullable<String>,
    pub notes: Nullable<String>,
    pub global_discount_amount: Nullable<i64>,
    pub lines: Vec<SalesOrderLineData>,
    /// Whether the order was made with VAT-inclusive prices (a converted quote's); `unit_price` is net
    /// either way and the amounts are computed on the prices as made.
    pub prices_include_tax: bool,
    pub subtotal: i64,
    pub tax_amount: i64,
    pub discount_amount: i64,
    pub total: i64,
    /// The same amounts grouped, as the spec's order object and the order webhooks carry them.
    pub amounts: OrderAmountsData,
    /// The quote the order was converted from.
    pub quote_id: Nullable<Uuid>,
    /// Whether the order holds stock for what is still to deliver.
    pub reserving: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Send it back as `expected_updated_at` in a structural edit.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// Write answers only: true when this is the stored outcome of an earlier request with the same key
    /// and body.
    pub idempotent_replay: Option<bool>,
    /// Write answers only: reserved lines that asked for more than was available (negative stock
    /// allowed).
    pub warnings: Option<Vec<StockWarning>>,
}

impl OrderData {
    fn from_state(
        id: Uuid,
        o: &OrderState,
        reserved: &mut HashMap<(Uuid, Uuid), Quantity>,
        created_at: OffsetDateTime,
        updated_at: OffsetDateTime,
    ) -> Self {
        let lines = o
            .lines
            .iter()
            .map(|l| {
                let warehouse = l.warehouse_id.or(o.assigned_warehouse_id);
                // What the reservation holds for the line's product and warehouse, line by line.
                let held = match (l.variant_id, warehouse) {
                    (Some(v), Some(w)) => {
                        let left = reserved.entry((v, w)).or_default();
                        // Between zero and what is left, so what stays is a quantity too.
                        let take = (*left).min(l.unmoved()).max(Quantity::ZERO);
                        *left = left.saturating_sub(take);
                        take
                    }
                    _ => Quantity::ZERO,
                };
                SalesOrderLineData {
                    id: l.id,
                    product_id: l.variant_id.into(),
                    name: l.name.clone().into(),
                    quantity: l.quantity.into(),
                    unit_price: o.net_unit_price(l).get(),
                    tax_rate_id: l.tax_rate_id.code(),
                    warehouse_id: warehouse.into(),
                    discount: l.discount.map(QuoteDiscountData::from).into(),
                    reserved: held.into(),
                    delivered: l.delivered.into(),
                    billed: l.billed.into(),
                }
            })
            .collect();
        Self {
            object: "order".into(),
            id,
            number: o.number,
            formatted_number: format!("PED-{:08}", o.number),
            status: o.status.into(),
            fulfillment_status: o.fulfillment_status.into(),
            customer_id: o.customer_id,
            customer_name: o.customer_name.clone(),
            assigned_warehouse_id: o.assigned_warehouse_id.into(),
            delivery_method: o.delivery_method.clone().into(),
            notes: o.notes.clone().into(),
            global_discount_amount: o.global_discount_amount.map(events::domain::Cents::get).into(),
            lines,
            prices_include_tax: o.prices_include_tax,
            subtotal: o.subtotal.get(),
            tax_amount: o.tax_amount.get(),
            discount_amount: o.discount_amount.get(),
            total: o.total.get(),
            amounts: OrderAmountsData {
                discount: o.discount_amount.get(),
                subtotal: o.subtotal.get(),
                tax: o.tax_amount.get(),
                total: o.total.get(),
            },
            quote_id: o.quote_id.into(),
            reserving: o.reservation.as_ref().is_some_and(|r| r.enabled),
            created_at: ar_time(created_at),
            updated_at: ar_time(updated_at),
            idempotent_replay: None,
            warnings: None,
        }
    }
}

/// What the active reservations of orders `ids` hold, by order and (product, warehouse).
async fn held(
    state: &AppState,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, HashMap<(Uuid, Uuid), Quantity>>, ApiError> {
    let held = crate::http::inventory::held_by_owner(state, org_id, ids).await?;
    Ok(held
        .into_iter()
        .map(|(order, lines)| {
            let mut by_level: HashMap<(Uuid, Uuid), Quantity> = HashMap::new();
            for (variant, warehouse, quantity, _) in lines {
                let held = by_level.entry((variant, warehouse)).or_default();
                *held = held.saturating_add(quantity);
            }
            (order, by_level)
        })
        .collect())
}

/// Stored orders with what their reservations hold (read for all of them at once).
async fn render_rows(state: &AppState, org_id: Uuid, rows: Vec<OrderRow>) -> Result<Vec<OrderData>, ApiError> {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut held = held(state, org_id, &ids).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let mut reserved = held.remove(&row.id).unwrap_or_default();
            OrderData::from_state(row.id, &row.order, &mut reserved, row.created_at, row.updated_at)
        })
        .collect())
}

/// A line of an order body: a product or free text.
#[derive(Debug, Object)]
pub struct OrderLineInput {
    /// Structural edits: the `id` of an existing line to keep, each at most once (omitted: a new line;
    /// existing lines left out are removed, unless delivered or billed).
    pub id: Optional<Uuid>,
    /// An active product variant of the organization; or send `name` for a free-text line.
    pub product_id: Option<Uuid>,
    /// The text of a line without a product.
    pub name: Option<Text<200>>,
    pub quantity: QuantityIn<true>,
    /// Cents, net of VAT.
    pub unit_price: Cents,
    /// A VAT rate code (`GET /api/v1/tax-rates`); default: the product's, or 5 (21%) on free text.
    pub tax_rate_id: Optional<VatCode>,
    /// Either an `amount` (cents) or a `percentage` (0 to 100, decimals allowed), not both.
    pub discount: Optional<QuoteDiscountInput>,
}

/// Whether and until when stock is held for the order.
#[derive(Debug, Object)]
pub struct OrderReservationInput {
    pub enabled: Optional<bool>,
    /// Today's Argentine date or later; omitted: held until the order is delivered, completed or
    /// cancelled.
    pub reserved_through_date: Optional<Date>,
}

/// A new order. The read-only fields and unknown fields are refused.
#[derive(Debug, Object)]
pub struct OrderInput {
    /// An active customer of the organization.
    pub customer_id: Uuid,
    /// At least one line, at most 200.
    #[oai(validator(min_items = 1, max_items = 200))]
    pub lines: Vec<OrderLineInput>,
    /// An active warehouse of the organization: where the physical lines leave from (required to
    /// reserve).
    pub assigned_warehouse_id: Optional<Uuid>,
    pub delivery_method: Optional<Blank<100>>,
    pub notes: Optional<Blank<2000>>,
    /// Cents, off the total.
    pub global_discount_amount: Optional<Cents>,
    /// Omitted: no reservation.
    pub reservation: Optional<OrderReservationInput>,
}

/// An order edit. A body with only `notes` edits the notes (`""` clears them) and needs no key. Any
/// other field makes it a structural edit, which needs the complete `lines`, `assigned_warehouse_id`,
/// `expected_updated_at` and an `Idempotency-Key`; omitted optional fields keep their value, `0`
/// clears the global discount and `""` the notes or the delivery method.
#[derive(Debug, Object)]
pub struct OrderEditInput {
    pub notes: Optional<Blank<2000>>,
    /// Structural edits: every line the order keeps or gains.
    #[oai(validator(min_items = 1, max_items = 200))]
    pub lines: Option<Vec<OrderLineInput>>,
    /// Structural edits: when it is not the order's, every line's pending work and its reservation
    /// move to it; the order's own leaves each kept line in its `warehouse_id`.
    pub assigned_warehouse_id: Option<Uuid>,
    pub delivery_method: Optional<Blank<100>>,
    pub global_discount_amount: Optional<Cents>,
    /// Structural edits: the `updated_at` of the order as read; another value is 409 `CONFLICT`.
    pub expected_updated_at: Option<OffsetDateTime>,
}

#[derive(Debug, Serialize, Object)]
pub struct OrderEnvelope {
    pub request_id: String,
    pub data: OrderData,
}

responses! {
    Created: Created(RawJson<OrderEnvelope>) = 201, "The order, open.";
    Single: Ok(RawJson<OrderEnvelope>) = 200, "The order.";
    Orders: Ok(RawJson<ListEnvelope<OrderData>>) = 200, "A page of orders, newest first.";
}

/// A line discount is an amount or a percentage, not both; a line is a product or free text; the
/// read-only fields are refused.
fn order_shapes() -> serde_json::Value {
    serde_json::json!({ "allOf": [
        rules::refused(READ_ONLY),
        line_shapes(),
    ] })
}

/// A line is a product or free text, and its discount an amount or a percentage, not both.
fn line_shapes() -> serde_json::Value {
    serde_json::json!({ "properties": { "lines": { "items": {
        "oneOf": [
            { "required": ["product_id"], "not": { "required": ["name"] } },
            { "required": ["name"], "not": { "required": ["product_id"] } },
        ],
        "properties": { "discount": { "anyOf": [
            { "required": ["amount"], "not": { "required": ["percentage"] } },
            { "required": ["percentage"], "not": { "required": ["amount"] } },
        ] } },
    } } } })
}

pub struct OrdersApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "OrderInput", rule: order_shapes },
    InputRule::Body { schema: "OrderEditInput", rule: line_shapes },
    InputRule::Closed { schema: "OrderInput" },
    InputRule::Closed { schema: "OrderEditInput" },
    InputRule::Closed { schema: "OrderLineInput" },
    InputRule::Closed { schema: "OrderReservationInput" },
    InputRule::Query { operation: "listOrders", parameter: "customer_id", schema: uuid_schema },
    InputRule::Query { operation: "listOrders", parameter: "created_from", schema: date_schema },
    InputRule::Query { operation: "listOrders", parameter: "created_to", schema: date_schema },
    InputRule::Query {
        operation: "listOrders",
        parameter: "status",
        schema: || serde_json::json!({ "type": "string", "enum": OrderStatus::NAMES }),
    },
    InputRule::Query {
        operation: "listOrders",
        parameter: "fulfillment_status",
        schema: || serde_json::json!({ "type": "string", "enum": FulfillmentStatus::NAMES }),
    },
];

/// Sends an order command and answers the order as it decided, once the read side has it.
pub(crate) async fn saved(call: &Call<'_>, write: Write<'_>, command: OrderCommand) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let accepted = call.dispatch(write, Command::Order(command)).await?;
    call.await_reads(&accepted, [ProjectionId::Orders, ProjectionId::Inventory, ProjectionId::Quotes]).await?;
    let replayed = accepted.replayed;
    let outcome: OrderOutcome = decode_state(accepted.state, "order")?;
    let org_id = call.org_id();
    let mut reserved = held(state, org_id, &[outcome.id]).await?.remove(&outcome.id).unwrap_or_default();
    // Write answers show the order as stored by this request (a replay shows the original).
    let row = read::get(&state.pool, org_id, outcome.id).await?;
    let created_at = row.as_ref().map_or(outcome.at, |r| r.created_at);
    let updated_at = row.as_ref().filter(|_| !replayed).map_or(outcome.at, |r| r.updated_at);
    let mut data = OrderData::from_state(outcome.id, &outcome.order, &mut reserved, created_at, updated_at);
    data.idempotent_replay = Some(replayed);
    data.warnings = Some(outcome.warnings.into_iter().map(Into::into).collect());
    Style::a(&OrderEnvelope { request_id: call.request_id.to_owned(), data })
}

/// The start of `date` in UTC-3.
fn day_start(date: Date) -> OffsetDateTime {
    date.midnight().assume_offset(events::catalogue::AR_OFFSET)
}

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Orders")]
    OrdersApi {}
    writes: {
        /// Create an order
        ///
        /// Scope `orders:write`; `Idempotency-Key` required (a retry with the same key and body answers the
        /// stored order with `idempotent_replay: true`; another body is 409 `IDEMPOTENCY_CONFLICT`). For the
        /// service's own channel: lines of products or free text with net unit prices, line and global
        /// discounts as on quotes, amounts from the tax engine. A new order is `open` and `unfulfilled`
        /// with a gap-free `number`. With `reservation.enabled`, what is to deliver of every physical line
        /// is held in `assigned_warehouse_id` in the same transaction: shortfalls are `warnings` when the
        /// organization allows negative stock and 422 with nothing saved when it blocks it.
        /// An inactive product, or a combo with an inactive component, is unknown to an order (404).
        ///
        /// States: `open` → `completed` (`POST .../complete`, or by itself once every line is fully
        /// delivered and billed, and back to `open` when a deleted delivery note or a credit note takes
        /// back what completed it) or `cancelled` (`POST .../cancel`, while nothing was delivered or billed).
        /// Only an open order is edited, cancelled or completed; anything else is 409 `STATE_CONFLICT`
        /// naming the current state. Both ends release what is still reserved.
        create("/orders", "createOrder", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> Created::Created = CREATE_ORDER, |call, write, body: OrderInput| {
                let input = parse_order(&body.value).map_err(ApiError::validation)?;
                let command = OrderCommand::Create { id: Uuid::now_v7(), input };
                saved(&call, write, command).await?
            }

        /// Edit an order
        ///
        /// Scope `orders:write`. A body with only `notes` edits them (`""` clears) and needs no key. A
        /// structural edit sends the complete `lines` (existing ones by `id`, with the net `unit_price` as
        /// read), `assigned_warehouse_id`, `expected_updated_at` equal to the order's `updated_at`, and an
        /// `Idempotency-Key` (400 without either); a stale `expected_updated_at` is 409 `CONFLICT` with
        /// nothing written. A line may not drop below what was delivered or billed, nor may such a line be
        /// removed or name another product (422 `PRECONDITION_FAILED` naming it); a line `id` sent twice
        /// is 400. The reservation follows the new lines and
        /// warehouse in the same transaction: another `assigned_warehouse_id` takes every line's pending
        /// work with it, the order's own leaves each kept line in its `warehouse_id`, and a reservation
        /// past its `reserved_through_date` stays ended (nothing is held again). Omitted optional fields
        /// keep their value; `0` clears the
        /// global discount and `""` the notes or the delivery method. A completed or cancelled order is 409
        /// `STATE_CONFLICT`. An inactive product, or a combo with an inactive component, is unknown to an
        /// order (404), though a kept line may still name the one it named.
        update("/orders/:order_id", "updateOrder", "patch")
            (order_id, "Required on structural edits; a retry with the same key and body returns the first outcome.")
            -> Single::Ok = UPDATE_ORDER, |call, write, body: OrderEditInput| {
                let id = call.id(&ORDERS, &order_id.0)?;
                let command = match parse_patch(&body.value).map_err(ApiError::validation)? {
                    Err(notes) => OrderCommand::EditNotes { id, notes },
                    Ok(edit) => {
                        if write.key.is_none() {
                            return Err(idempotency::key_required());
                        }
                        OrderCommand::Edit { id, edit }
                    }
                };
                saved(&call, write, command).await?
            }
    }
    cursor_lists: {
        /// List orders
        ///
        /// Scope `orders:read`. Newest first (`created_at`, then `id`); `status`, `fulfillment_status` and
        /// `customer_id` filter; `created_from` and `created_to` (inclusive, Argentine dates) bound the
        /// creation date.
        list("/orders", "listOrders") -> Orders = LIST_ORDERS, orders {
            status: Query<Option<String>>,
            fulfillment_status: Query<Option<String>>,
            customer_id: Query<Option<String>>,
            created_from: Query<Option<String>>,
            created_to: Query<Option<String>>,
        };
    }
    gets: {
        /// Get an order
        ///
        /// Scope `orders:read`. With its lines (what each has reserved, delivered and billed), amounts and
        /// `updated_at` (what a structural edit sends back as `expected_updated_at`).
        get("/orders/:order_id", "getOrder") -> Single = GET_ORDER, ORDERS, order_id => order;
    }
    actions: {
        /// Cancel an order
        ///
        /// Scope `orders:write`; `Idempotency-Key` required. An open order of which nothing was delivered or
        /// billed becomes `cancelled` and its reservation is released; otherwise 409 `STATE_CONFLICT`.
        cancel("/orders/:order_id/cancel", "cancelOrder")
            -> Single = CANCEL_ORDER, ORDERS, order_id
            => saved(|id| OrderCommand::Cancel { id });

        /// Complete an order
        ///
        /// Scope `orders:write`; `Idempotency-Key` required. Closes an open order early: it becomes
        /// `completed` and what it still holds is released; a closed order is 409 `STATE_CONFLICT`.
        complete("/orders/:order_id/complete", "completeOrder")
            -> Single = COMPLETE_ORDER, ORDERS, order_id
            => saved(|id| OrderCommand::Complete { id });
    }
}

/// One order, in its envelope.
async fn order(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let Some(row) = read::get(&call.state.pool, call.org_id(), id).await? else { return Ok(None) };
    let data = render_rows(call.state, call.org_id(), vec![row]).await?.remove(0);
    Ok(Some(Style::a(&OrderEnvelope { request_id: call.request_id.to_owned(), data })?))
}

/// A page of orders, newest first.
async fn orders(
    call: &Call<'_>,
    params: PageParams,
    status: Option<String>,
    fulfillment_status: Option<String>,
    customer_id: Option<String>,
    created_from: Option<String>,
    created_to: Option<String>,
) -> Result<bytes::Bytes, ApiError> {
    let state = call.state;
    let mut filters = Filters::default();
    let filter = OrderFilter {
        status: filters.one_of(status, "status", OrderStatus::NAMES),
        fulfillment_status: filters.one_of(fulfillment_status, "fulfillment_status", FulfillmentStatus::NAMES),
        customer_id: filters.id(customer_id, "customer_id"),
        created_from: filters.date(created_from, "created_from").map(day_start),
        created_to: filters.date(created_to, "created_to").and_then(|d| d.next_day()).map(day_start),
    };
    filters.check()?;
    let bound = format!("orders{filter:?}");
    call.cursor_list(
        params,
        ORDERS.list.bound(&bound),
        async |after, n| Ok(read::list(&state.pool, call.org_id(), &filter, after, n).await?),
        |row: &OrderRow| (row.created_at, row.id),
        async |rows| render_rows(state, call.org_id(), rows).await,
    )
    .await
}
