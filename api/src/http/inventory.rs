//! Inventory (Style A): stock levels per variant and warehouse, the ledger of every change, manual stock
//! movements (`in`, `out`, `count`) and stock transfers between warehouses (combos moved as their
//! components). Quantities are exact decimals, written as decimal text in every response.

use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::list::ListEnvelope;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, ListAt, PageParams, decode_state};
use crate::http::routes_group::routes;
use crate::http::schema::{Blank, QuantityIn, QuantityText};
use crate::http::shared_filters::{Filters, binding, date_schema, id_filter, search, uuid_schema};
use crate::http::shared_operations::operations;
use crate::http::shared_pages::tagged;
use crate::http::shared_responses::responses;
use crate::http::tags::{TagData, tags_of_one};
use crate::http::{ApiTags, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use commands::inventory::{
    MovementOutcome, MovementType, StockShortfall, TransferOutcome, parse_movement, parse_transfer,
};
use commands::protocol::{Command, CommandKind};
use commands::tags::Taggable;
use events::catalogue::{STOCK_CAUSES, StockLine, ar_date};
use events::domain::{Quantity, Scope};
use poem_openapi::param::Query;
use poem_openapi::{Enum, Object};
use projections::ProjectionId;
use projections::inventory::{self as read, LevelFilter, LevelRow, MovementFilter, MovementRow, TransferRow};
use serde::{Deserialize, Serialize};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

const WHY_INSUFFICIENT: &str = "The organization blocks negative stock and a line asks for more than is available \
                                (`INSUFFICIENT_STOCK`): one detail per short line, with `product_id`, \
                                `warehouse_id`, `requested_quantity` and `available_quantity` in its `metadata`; \
                                nothing was written";

// The operations this module serves (see `operations.rs`).
operations! {
    InventoryApi, INPUT_RULES;
    LIST_INVENTORY = read("listInventory", Some(Scope::InventoryRead));
    LIST_INVENTORY_MOVEMENTS = read("listInventoryMovements", Some(Scope::InventoryRead));
    CREATE_STOCK_MOVEMENT =
        write("createStockMovement", Scope::InventoryWrite, Idempotency::Required, CommandKind::StockMovement)
            .unprocessable(WHY_INSUFFICIENT);
    LIST_STOCK_TRANSFERS = read("listStockTransfers", Some(Scope::TransfersRead));
    CREATE_STOCK_TRANSFER =
        write("createStockTransfer", Scope::TransfersWrite, Idempotency::Optional, CommandKind::StockTransfer)
            .unprocessable(WHY_INSUFFICIENT);
    GET_STOCK_TRANSFER = read("getStockTransfer", Some(Scope::TransfersRead));
}

/// Stock movements and levels: writes wait on the inventory projection.
const INVENTORY: Kind = Kind::new("inventory", ProjectionId::Inventory, "/api/v1/inventory", "inventory");

const TRANSFERS: Kind =
    Kind::new("stock transfer", ProjectionId::Inventory, "/api/v1/stock-transfers", "stock_transfers");

/// The organization's calendar date now (UTC-3).
fn today() -> Date {
    ar_date(OffsetDateTime::now_utc())
}

/// A warehouse named in an inventory row.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct WarehouseRef {
    pub id: Uuid,
    pub name: Nullable<String>,
}

/// A variant's stock in one warehouse.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct InventoryData {
    /// Always `inventory_level`.
    pub object: String,
    /// The variant.
    pub product_id: Uuid,
    pub sku: Nullable<String>,
    pub name: Nullable<String>,
    pub warehouse: WarehouseRef,
    pub on_hand: QuantityText,
    /// Held by active reservations (quotes, orders) through today.
    pub reserved: QuantityText,
    /// `on_hand` − `reserved`; negative when short.
    pub available: QuantityText,
    /// The product's minimum, in units.
    pub stock_minimum: Nullable<QuantityText>,
    /// `available` is below `stock_minimum`.
    pub below_minimum: bool,
}

impl InventoryData {
    fn from_row(row: LevelRow) -> Self {
        Self {
            object: "inventory_level".into(),
            product_id: row.variant_id,
            below_minimum: row.below_minimum(),
            available: row.available().into(),
            stock_minimum: row.stock_minimum.map(|minimum| QuantityText(minimum.quantity())).into(),
            sku: row.sku.into(),
            name: row.name.into(),
            warehouse: WarehouseRef { id: row.warehouse_id, name: row.warehouse_name.into() },
            on_hand: row.on_hand.into(),
            reserved: row.reserved.into(),
        }
    }
}

/// One change of on-hand in the ledger.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct InventoryMovementData {
    /// Always `inventory_movement`.
    pub object: String,
    pub id: Uuid,
    /// The variant.
    pub product_id: Uuid,
    pub warehouse_id: Uuid,
    /// What caused it: `opening_stock` (a product's creation), `stock_movement`, `stock_transfer`.
    pub cause_type: String,
    /// The product, stock movement or stock transfer.
    pub cause_id: Uuid,
    /// Signed: positive adds stock, negative takes it.
    pub quantity: QuantityText,
    /// On hand after the change.
    pub on_hand: QuantityText,
    /// The business date (UTC-3).
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl InventoryMovementData {
    fn from_row(row: MovementRow) -> Self {
        Self {
            object: "inventory_movement".into(),
            id: row.id,
            product_id: row.variant_id,
            warehouse_id: row.warehouse_id,
            cause_type: row.cause_type,
            cause_id: row.cause_id,
            quantity: row.quantity.into(),
            on_hand: row.on_hand.into(),
            occurred_on: row.occurred_on,
            created_at: ar_time(row.created_at),
        }
    }
}

/// A line that asked for more than was available, let through because the organization allows
/// negative stock.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct StockWarning {
    pub product_id: Uuid,
    pub warehouse_id: Uuid,
    pub requested_quantity: QuantityText,
    pub available_quantity: QuantityText,
}

impl From<StockShortfall> for StockWarning {
    fn from(s: StockShortfall) -> Self {
        Self {
            product_id: s.product_id,
            warehouse_id: s.warehouse_id,
            requested_quantity: s.requested_quantity.into(),
            available_quantity: s.available_quantity.into(),
        }
    }
}

/// `in`, `out` or `count`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Enum)]
#[serde(rename_all = "lowercase")]
#[oai(rename_all = "lowercase")]
pub enum MovementKind {
    /// Adds the quantities.
    In,
    /// Takes the quantities.
    Out,
    /// Sets on-hand to the counted quantities.
    Count,
}

impl From<MovementType> for MovementKind {
    fn from(t: MovementType) -> Self {
        match t {
            MovementType::In => Self::In,
            MovementType::Out => Self::Out,
            MovementType::Count => Self::Count,
        }
    }
}

/// A line of a stock movement as recorded.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct MovementLineData {
    pub product_id: Uuid,
    /// As sent (for `count`, what was counted).
    pub quantity: QuantityText,
    /// The signed change of on-hand (0 when a count matched).
    pub change: QuantityText,
    /// On hand after the movement.
    pub on_hand: QuantityText,
}

/// A manual stock movement.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct StockMovementData {
    /// Always `stock_movement`.
    pub object: String,
    pub id: Uuid,
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub movement_type: MovementKind,
    pub warehouse_id: Uuid,
    pub reason: Nullable<String>,
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    pub lines: Vec<MovementLineData>,
    /// Lines that took more than was available (the organization allows negative stock).
    pub warnings: Vec<StockWarning>,
    /// True when this is the stored outcome of an earlier request with the same key and body.
    pub idempotent_replay: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl StockMovementData {
    fn from_outcome(outcome: MovementOutcome, replayed: bool) -> Self {
        let lines = outcome
            .lines
            .iter()
            .map(|line| {
                let change = outcome.changes.iter().find(|c| c.variant_id == line.variant_id);
                MovementLineData {
                    product_id: line.variant_id,
                    quantity: line.quantity.into(),
                    change: change.map_or(Quantity::ZERO, |c| c.quantity).into(),
                    // A count that matched leaves on-hand at what was counted.
                    on_hand: change.map_or(line.quantity, |c| c.on_hand).into(),
                }
            })
            .collect();
        Self {
            object: "stock_movement".into(),
            id: outcome.id,
            movement_type: outcome.movement_type.into(),
            warehouse_id: outcome.warehouse_id,
            reason: outcome.reason.into(),
            occurred_on: outcome.occurred_on,
            lines,
            warnings: outcome.warnings.into_iter().map(StockWarning::from).collect(),
            idempotent_replay: replayed,
            created_at: ar_time(outcome.created_at),
        }
    }
}

/// A variant and a quantity.
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct TransferLineData {
    pub product_id: Uuid,
    pub quantity: QuantityText,
}

fn transfer_lines(lines: &[StockLine]) -> Vec<TransferLineData> {
    lines.iter().map(|l| TransferLineData { product_id: l.variant_id, quantity: l.quantity.into() }).collect()
}

/// A transfer of stock between two warehouses.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, Object)]
pub struct StockTransferData {
    /// Always `stock_transfer`.
    pub object: String,
    pub id: Uuid,
    pub origin_warehouse_id: Uuid,
    pub destination_warehouse_id: Uuid,
    /// What moved: combos replaced by their components, quantities multiplied and summed per variant.
    pub items: Vec<TransferLineData>,
    /// The lines as sent (combos included).
    pub requested_items: Vec<TransferLineData>,
    pub notes: Nullable<String>,
    #[serde(with = "events::catalogue::iso_date")]
    pub occurred_on: Date,
    /// Ordered by name; archived tags included.
    pub tags: Vec<TagData>,
    /// Creation answers only: lines that took more than was available (negative stock allowed).
    pub warnings: Option<Vec<StockWarning>>,
    /// Creation answers only: true when this is the stored outcome of an earlier request with the same
    /// key and body.
    pub idempotent_replay: Option<bool>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl StockTransferData {
    fn from_outcome(outcome: TransferOutcome, replayed: bool) -> Self {
        Self {
            object: "stock_transfer".into(),
            id: outcome.id,
            origin_warehouse_id: outcome.origin_warehouse_id,
            destination_warehouse_id: outcome.destination_warehouse_id,
            items: transfer_lines(&outcome.items),
            requested_items: transfer_lines(&outcome.requested_items),
            notes: outcome.notes.into(),
            occurred_on: outcome.occurred_on,
            tags: Vec::new(),
            warnings: Some(outcome.warnings.into_iter().map(StockWarning::from).collect()),
            idempotent_replay: Some(replayed),
            created_at: ar_time(outcome.created_at),
        }
    }

    fn from_row(row: TransferRow, tags: Vec<TagData>) -> Result<Self, ApiError> {
        let lines =
            |key: &str| -> Result<Vec<StockLine>, ApiError> { decode_state(row.doc[key].clone(), "stock transfer") };
        Ok(Self {
            object: "stock_transfer".into(),
            id: row.id,
            origin_warehouse_id: row.origin_warehouse_id,
            destination_warehouse_id: row.destination_warehouse_id,
            items: transfer_lines(&lines("items")?),
            requested_items: transfer_lines(&lines("requested_items")?),
            notes: row.doc["notes"].as_str().map(str::to_owned).into(),
            occurred_on: row.occurred_on,
            tags,
            warnings: None,
            idempotent_replay: None,
            created_at: ar_time(row.created_at),
        })
    }
}

/// A line of a stock movement or transfer.
#[derive(Debug, Object)]
pub struct StockLineInput {
    /// A product variant of the organization that holds stock (a combo only in transfers).
    pub product_id: Uuid,
    /// Positive (zero allowed in a `count`), three decimals at most; a combo moves in whole units.
    pub quantity: QuantityIn<false>,
}

/// A manual stock movement in one warehouse.
#[derive(Debug, Object)]
pub struct StockMovementInput {
    #[oai(rename = "type")]
    pub movement_type: MovementKind,
    /// An active warehouse of the organization.
    pub warehouse_id: Uuid,
    /// 1 to 100 lines, each product once.
    #[oai(validator(min_items = 1, max_items = 100))]
    pub lines: Vec<StockLineInput>,
    /// At most 500 characters.
    pub reason: Optional<Blank<500>>,
    /// The business date (UTC-3), today by default; never later than today.
    pub occurred_on: Optional<Date>,
}

/// A transfer between two different active warehouses of the organization.
#[derive(Debug, Object)]
pub struct StockTransferInput {
    pub origin_warehouse_id: Uuid,
    /// Not the origin.
    pub destination_warehouse_id: Uuid,
    /// 1 to 100 lines; a product may repeat (its quantities are summed); a combo moves in whole units.
    #[oai(validator(min_items = 1, max_items = 100))]
    pub items: Vec<StockLineInput>,
    /// At most 1000 characters.
    pub notes: Optional<Blank<1000>>,
}

#[derive(Debug, Serialize, Object)]
pub struct StockMovementEnvelope {
    pub request_id: String,
    pub data: StockMovementData,
}

#[derive(Debug, Serialize, Object)]
pub struct StockTransferEnvelope {
    pub request_id: String,
    pub data: StockTransferData,
}

responses! {
    Levels: Ok(RawJson<ListEnvelope<InventoryData>>) = 200, "A page of stock levels, by variant then warehouse.";
    Ledger: Ok(RawJson<ListEnvelope<InventoryMovementData>>) = 200, "A page of the ledger, oldest change first.";
    MovementCreated: Created(RawJson<StockMovementEnvelope>) =
        201, "The movement, as recorded (also on a replay of the same key and body).";
    TransferCreated: Created(RawJson<StockTransferEnvelope>) = 201, "The transfer, as recorded.";
    Transfer: Ok(RawJson<StockTransferEnvelope>) = 200, "The transfer.";
    Transfers: Ok(RawJson<ListEnvelope<StockTransferData>>) = 200, "A page of transfers, oldest first.";
}

/// `in` and `out` lines move positive quantities; a `count` may count zero.
fn movement_shapes() -> serde_json::Value {
    let positive =
        serde_json::to_value(<QuantityIn<true> as poem_openapi::types::Type>::schema_ref()).unwrap_or_default();
    serde_json::json!({ "anyOf": [
        { "required": ["type"], "properties": { "type": { "enum": ["count"] } } },
        { "properties": { "lines": { "items": { "properties": { "quantity": positive } } } } },
    ] })
}

/// Transfer lines move positive quantities.
fn transfer_shapes() -> serde_json::Value {
    let positive =
        serde_json::to_value(<QuantityIn<true> as poem_openapi::types::Type>::schema_ref()).unwrap_or_default();
    serde_json::json!({ "properties": { "items": { "items": { "properties": { "quantity": positive } } } } })
}

pub struct InventoryApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "StockMovementInput", rule: movement_shapes },
    InputRule::Body { schema: "StockTransferInput", rule: transfer_shapes },
    InputRule::Query { operation: "listInventory", parameter: "warehouse_id", schema: uuid_schema },
    InputRule::Query { operation: "listInventory", parameter: "product_id", schema: uuid_schema },
    InputRule::Query { operation: "listInventoryMovements", parameter: "warehouse_id", schema: uuid_schema },
    InputRule::Query { operation: "listInventoryMovements", parameter: "product_id", schema: uuid_schema },
    InputRule::Query {
        operation: "listInventoryMovements",
        parameter: "cause_type",
        schema: || serde_json::json!({ "type": "string", "enum": *STOCK_CAUSES }),
    },
    InputRule::Query { operation: "listInventoryMovements", parameter: "date_from", schema: date_schema },
    InputRule::Query { operation: "listInventoryMovements", parameter: "date_to", schema: date_schema },
    InputRule::Query { operation: "listStockTransfers", parameter: "warehouse_id", schema: uuid_schema },
];

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Inventory")]
    InventoryApi {}
    writes: {
        /// Record a stock movement
        ///
        /// Scope `inventory:write`; `Idempotency-Key` required (a replay with the same key and body answers
        /// the recorded movement with `idempotent_replay: true`). `in` adds, `out` takes and `count` sets
        /// on-hand to the counted quantities, in one warehouse, all lines or none. A line that takes more than
        /// is available (on hand − active reservations) is a warning when the organization allows negative
        /// stock, and a 422 with nothing written when it blocks it.
        create_movement("/stock-movements", "createStockMovement", "post")
            ("Required: a retry with the same key and body returns the first outcome.")
            -> MovementCreated::Created = CREATE_STOCK_MOVEMENT, |call, write, body: StockMovementInput| {
                let command = parse_movement(&body.value, today()).map_err(ApiError::validation)?;
                call
                    .write(&INVENTORY, write, Command::StockMovement(command), |accepted| {
                        let outcome: MovementOutcome = decode_state(accepted.state, "stock movement")?;
                        let data = StockMovementData::from_outcome(outcome, accepted.replayed);
                        Style::a(&StockMovementEnvelope { request_id: call.request_id.to_owned(), data })
                    })
                    .await?
            }

        /// Transfer stock between warehouses
        ///
        /// Scope `transfers:write`; `Idempotency-Key` optional (without one, a repeated request transfers
        /// again). Moves every line from the origin to the destination, all or nothing; a combo moves its
        /// components (its quantity, a whole number, times each component's), and the answer lists what
        /// moved per variant. Shortfalls at the origin follow the organization's negative-stock policy.
        /// An inactive product, or a combo with an inactive component, is unknown to a transfer (404).
        create_transfer("/stock-transfers", "createStockTransfer", "post")
            ("Optional: a retry with the same key and body returns the first outcome.")
            -> TransferCreated::Created = CREATE_STOCK_TRANSFER, |call, write, body: StockTransferInput| {
                let command = parse_transfer(&body.value, today()).map_err(ApiError::validation)?;
                call
                    .write_then_read(&TRANSFERS, write, Command::StockTransfer(command), async |accepted| {
                        let outcome: TransferOutcome = decode_state(accepted.state, "stock transfer")?;
                        let mut data = StockTransferData::from_outcome(outcome, accepted.replayed);
                        data.tags = tags_of_one(call.state, call.org_id(), Taggable::StockTransfer, data.id).await?;
                        Style::a(&StockTransferEnvelope { request_id: call.request_id.to_owned(), data })
                    })
                    .await?
            }
    }
    cursor_lists: {
        /// List stock levels
        ///
        /// Scope `inventory:read`. One row per variant and warehouse that ever held stock, ordered by variant
        /// then warehouse. `query` matches the product's name or SKU; `below_minimum=true` keeps the rows
        /// whose available stock is under the product's `stockMinimum` (false: the others).
        list("/inventory", "listInventory") -> Levels = LIST_INVENTORY, levels {
            warehouse_id: Query<Option<String>>,
            product_id: Query<Option<String>>,
            query: Query<Option<String>>,
            below_minimum: Query<Option<bool>>,
        };

        /// List the inventory ledger
        ///
        /// Scope `inventory:read`. One row per change of on-hand, oldest first, with its cause and the on-hand
        /// it left. `date_from` and `date_to` (inclusive) filter on `occurred_on`.
        ledger("/inventory/movements", "listInventoryMovements") -> Ledger = LIST_INVENTORY_MOVEMENTS, ledger {
            product_id: Query<Option<String>>,
            warehouse_id: Query<Option<String>>,
            cause_type: Query<Option<String>>,
            date_from: Query<Option<String>>,
            date_to: Query<Option<String>>,
        };

        /// List stock transfers
        ///
        /// Scope `transfers:read`. Oldest first; `warehouse_id` keeps transfers from or to that warehouse.
        list_transfers("/stock-transfers", "listStockTransfers") -> Transfers = LIST_STOCK_TRANSFERS, transfers {
            warehouse_id: Query<Option<String>>,
        };
    }
    gets: {
        /// Get a stock transfer
        ///
        /// Scope `transfers:read`.
        get_transfer("/stock-transfers/:transfer_id", "getStockTransfer")
            -> Transfer = GET_STOCK_TRANSFER, TRANSFERS, transfer_id => stock_transfer;
    }
}

/// One stock transfer with its tags, in its envelope.
async fn stock_transfer(call: &Call<'_>, id: Uuid) -> Result<Option<bytes::Bytes>, ApiError> {
    let Some(row) = read::transfer(&call.state.pool, call.org_id(), id).await? else { return Ok(None) };
    let tags = tags_of_one(call.state, call.org_id(), Taggable::StockTransfer, id).await?;
    let data = StockTransferData::from_row(row, tags)?;
    Ok(Some(Style::a(&StockTransferEnvelope { request_id: call.request_id.to_owned(), data })?))
}

/// A page of stock levels, by variant then warehouse.
async fn levels(
    call: &Call<'_>,
    params: PageParams,
    warehouse_id: Option<String>,
    product_id: Option<String>,
    query: Option<String>,
    below_minimum: Option<bool>,
) -> Result<Bytes, ApiError> {
    let filter = LevelFilter {
        warehouse_id: id_filter(warehouse_id, "warehouse_id")?,
        variant_id: id_filter(product_id, "product_id")?,
        query: search(query),
        below_minimum,
    };
    let bound = binding("inventory", &[&filter.warehouse_id, &filter.variant_id, &filter.query, &filter.below_minimum]);
    call.cursor_list(
        params,
        INVENTORY.list.bound(&bound),
        async |after, n| Ok(read::levels(&call.state.pool, call.org_id(), &filter, today(), after, n).await?),
        |row: &LevelRow| (row.variant_id, row.warehouse_id),
        async |rows| Ok(rows.into_iter().map(InventoryData::from_row).collect()),
    )
    .await
}

/// A page of the ledger, oldest first: in the order its rows are folded, commit order (the event's
/// transaction, then `seq`), so every row still to come sorts after any cursor already issued.
async fn ledger(
    call: &Call<'_>,
    params: PageParams,
    product_id: Option<String>,
    warehouse_id: Option<String>,
    cause_type: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
) -> Result<Bytes, ApiError> {
    let mut filters = Filters::default();
    let filter = MovementFilter {
        variant_id: filters.id(product_id, "product_id"),
        warehouse_id: filters.id(warehouse_id, "warehouse_id"),
        date_from: filters.date(date_from, "date_from"),
        date_to: filters.date(date_to, "date_to"),
        cause_type: filters.one_of(cause_type, "cause_type", &STOCK_CAUSES),
    };
    filters.check()?;
    let bound = binding(
        "inventory_movements",
        &[&filter.variant_id, &filter.warehouse_id, &filter.cause_type, &filter.date_from, &filter.date_to],
    );
    call.cursor_list(
        params,
        ListAt { url: "/api/v1/inventory/movements", binding: &bound },
        async |after, n| Ok(read::movements(&call.state.pool, call.org_id(), &filter, after, n).await?),
        |row: &MovementRow| (row.transaction_id, row.seq),
        async |rows| Ok(rows.into_iter().map(InventoryMovementData::from_row).collect()),
    )
    .await
}

/// A page of stock transfers, oldest first.
async fn transfers(call: &Call<'_>, params: PageParams, warehouse_id: Option<String>) -> Result<Bytes, ApiError> {
    let warehouse = id_filter(warehouse_id, "warehouse_id")?;
    let bound = binding(TRANSFERS.list.binding, &[&warehouse]);
    call.cursor_list(
        params,
        TRANSFERS.list.bound(&bound),
        async |after, n| Ok(read::transfers(&call.state.pool, call.org_id(), warehouse, after, n).await?),
        |row: &TransferRow| row.id,
        async |rows| {
            let rows = tagged(call.state, call.org_id(), Taggable::StockTransfer, rows, |r| r.id).await?;
            rows.into_iter().map(|(row, tags)| StockTransferData::from_row(row, tags)).collect()
        },
    )
    .await
}

/// A line an owner's active reservation holds: product, warehouse, quantity and the date it holds
/// through.
pub type HeldLine = (Uuid, Uuid, Quantity, Date);

/// What the active reservations of owners `ids` (quotes, orders) hold, by owner, from the inventory
/// read model in one query, each owner's lines by product and warehouse.
pub async fn held_by_owner(
    state: &AppState,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<std::collections::HashMap<Uuid, Vec<HeldLine>>, ApiError> {
    let mut held: std::collections::HashMap<Uuid, Vec<HeldLine>> = std::collections::HashMap::new();
    if ids.is_empty() {
        return Ok(held);
    }
    let today = ar_date(OffsetDateTime::now_utc());
    let owners: std::collections::HashMap<Uuid, Uuid> =
        ids.iter().map(|id| (commands::inventory::reservations::reservation_id(*id), *id)).collect();
    let reservations: Vec<Uuid> = owners.keys().copied().collect();
    for (reservation, variant, warehouse, quantity, through) in
        read::active_reservations(&state.pool, org_id, &reservations, today).await?
    {
        if let Some(owner) = owners.get(&reservation) {
            held.entry(*owner).or_default().push((variant, warehouse, quantity, through));
        }
    }
    Ok(held)
}
