//! The inventory read model: stock levels per variant and warehouse (`inventory_levels`), the active
//! reservations counted in `reserved` (`inventory_reservations`), the ledger with one row per change of
//! on-hand (`inventory_movements`) and the stock transfers (`stock_transfers_view`). Every event that
//! moves stock records the on-hand it left, so a level is set, never summed: the projection can only
//! agree with the write model. Reads join the products and warehouses read models for names.

use crate::{Folded, Folds, ProjectionError, Rendered, RenderedFold, StreamType, Target, contains_pattern, json_fold};
use events::catalogue::{StockEffect, StockTransferEvent, ar_date, cause, iso_date, stock_effect};
use events::domain::{Quantity, WholeUnits};
use events::{EventPayload, RecordedEvent};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use std::collections::BTreeMap;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

pub const LEVELS: &str = "inventory_levels";
pub const RESERVATIONS: &str = "inventory_reservations";
pub const MOVEMENTS: &str = "inventory_movements";
pub const TRANSFERS: &str = "stock_transfers_view";

pub struct InventoryProjection;

projection!(InventoryProjection {
    id: Inventory,
    tables: &[LEVELS, RESERVATIONS, MOVEMENTS, TRANSFERS],
    folds: Folds::Only(StreamType::stock_moving()),

    fn rendered(&self) -> Option<&dyn RenderedFold> {
        Some(self)
    }
});

/// What a batch changes, one list per statement: the levels it leaves (one row per level, at the
/// on-hand of its last change), its ledger rows, the reservations it touches (cleared, then their
/// lines as the batch leaves them) and its transfers. Live batches render these as literals for the
/// statements [`RenderedFold::prepare`] made; rebuilds bind them to the same SQL on the shadow tables.
#[derive(Default)]
struct Batch {
    levels: Vec<LevelJson>,
    ledger: Vec<LedgerJson>,
    reservations: Vec<ReservationKey>,
    reserved: Vec<ReservedJson>,
    transfers: Vec<TransferJson>,
}

#[derive(serde::Serialize)]
struct LevelJson {
    org_id: Uuid,
    variant_id: Uuid,
    warehouse_id: Uuid,
    /// Thousandths the batch moved the level by.
    moved: i64,
    #[serde(with = "time::serde::rfc3339")]
    updated_at: OffsetDateTime,
}

/// One ledger row. The ledger is ordered as it is folded: by its event's transaction, then `seq`.
#[derive(serde::Serialize)]
struct LedgerJson {
    org_id: Uuid,
    transaction_id: i64,
    seq: i64,
    id: Uuid,
    variant_id: Uuid,
    warehouse_id: Uuid,
    cause_type: &'static str,
    cause_id: Uuid,
    quantity: i64,
    on_hand: i64,
    #[serde(with = "iso_date")]
    occurred_on: Date,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
}

#[derive(serde::Serialize, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
struct ReservationKey {
    org_id: Uuid,
    reservation_id: Uuid,
}

#[derive(serde::Serialize)]
struct ReservedJson {
    org_id: Uuid,
    reservation_id: Uuid,
    variant_id: Uuid,
    warehouse_id: Uuid,
    quantity: i64,
    #[serde(with = "iso_date")]
    reserved_through: Date,
}

#[derive(serde::Serialize)]
struct TransferJson {
    org_id: Uuid,
    id: Uuid,
    origin_warehouse_id: Uuid,
    destination_warehouse_id: Uuid,
    #[serde(with = "iso_date")]
    occurred_on: Date,
    doc: Value,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
}

/// A ledger row's `seq` is its event's position × this + the change's index.
const CHANGES_PER_EVENT: i64 = events::catalogue::MAX_STOCK_CHANGES as i64;

/// The batch's changes, from its events in commit order.
fn fold(events: &[RecordedEvent]) -> Result<Batch, ProjectionError> {
    // What the batch moves each level by, and when it last did. Summed, not the on-hand of the level's
    // last change: the batch is in transaction order, which need not be the order the levels were
    // locked in (a command that wrote before it waited for a level commits after the one it waited
    // for, yet reads first), and a sum does not depend on it.
    let mut moved: BTreeMap<(Uuid, Uuid, Uuid), (i64, OffsetDateTime)> = BTreeMap::new();
    // A reservation ends the batch in the state of its last event (`None`: gone).
    let mut reservations: BTreeMap<ReservationKey, Option<events::catalogue::Reservation>> = BTreeMap::new();
    let mut batch = Batch::default();
    for event in events {
        let effect = stock_effect(&event.stream_type, &event.event_type, event.schema_version, &event.data)
            .map_err(|e| ProjectionError::undecodable(event, e))?;
        // The cause is the event's document (a movement, a transfer), or for opening stock the variant.
        let mut changed = |index: usize,
                           variant: Uuid,
                           warehouse: Uuid,
                           cause: (&'static str, Uuid),
                           quantity: Quantity,
                           on_hand: Quantity,
                           occurred_on: Date| {
            let level = moved.entry((event.org_id, variant, warehouse)).or_insert((0, event.recorded_at));
            *level = (level.0 + quantity.thousandths(), level.1.max(event.recorded_at));
            batch.ledger.push(LedgerJson {
                org_id: event.org_id,
                transaction_id: event.transaction_id,
                seq: event.position * CHANGES_PER_EVENT + index as i64,
                id: Uuid::new_v5(&event.event_id, &(index as u32).to_be_bytes()),
                variant_id: variant,
                warehouse_id: warehouse,
                cause_type: cause.0,
                cause_id: cause.1,
                quantity: quantity.thousandths(),
                on_hand: on_hand.thousandths(),
                occurred_on,
                created_at: event.recorded_at,
            });
        };
        match effect {
            None => {}
            // Opening stock is the first stock a new variant ever has: on-hand is the quantity.
            Some(StockEffect::Opening(stock)) => {
                for (i, s) in stock.iter().enumerate() {
                    let day = ar_date(event.recorded_at);
                    let cause = (cause::OPENING_STOCK, s.variant_id);
                    changed(i, s.variant_id, s.warehouse_id, cause, s.quantity, s.quantity, day);
                }
            }
            Some(StockEffect::Changes { cause_type, cause_id, occurred_on, changes }) => {
                // Past the limit, rows of two events would share a `seq` and one would be lost.
                if changes.len() as i64 > CHANGES_PER_EVENT {
                    return Err(ProjectionError::undecodable(event, "more stock changes than a ledger numbers"));
                }
                for (i, c) in changes.iter().enumerate() {
                    let cause = (cause_type, cause_id.unwrap_or(event.stream_id));
                    changed(i, c.variant_id, c.warehouse_id, cause, c.quantity, c.on_hand, occurred_on);
                }
            }
            Some(StockEffect::Reservation(state)) => {
                reservations.insert(ReservationKey { org_id: event.org_id, reservation_id: event.stream_id }, state);
            }
        }
        if event.stream_type == StockTransferEvent::STREAM_TYPE {
            let StockTransferEvent::StockTransferred(t) = crate::decode(event)?;
            batch.transfers.push(TransferJson {
                org_id: event.org_id,
                id: event.stream_id,
                origin_warehouse_id: t.origin_warehouse_id,
                destination_warehouse_id: t.destination_warehouse_id,
                occurred_on: t.occurred_on,
                doc: json!({"items": t.lines, "requested_items": t.items, "notes": t.notes}),
                created_at: event.recorded_at,
            });
        }
    }
    batch.levels = moved
        .into_iter()
        .map(|((org_id, variant_id, warehouse_id), (moved, updated_at))| LevelJson {
            org_id,
            variant_id,
            warehouse_id,
            moved,
            updated_at,
        })
        .collect();
    for (key, state) in reservations {
        batch.reservations.push(key);
        for line in state.iter().flat_map(|s| s.lines.iter().map(move |l| (s.reserved_through, l))) {
            batch.reserved.push(ReservedJson {
                org_id: key.org_id,
                reservation_id: key.reservation_id,
                variant_id: line.1.variant_id,
                warehouse_id: line.1.warehouse_id,
                quantity: line.1.quantity.thousandths(),
                reserved_through: line.0,
            });
        }
    }
    Ok(batch)
}

/// The names of the batch's statements, in [`statements`]' order (live ones are prepared as
/// `inventory_<name>_fold`).
const STATEMENTS: [&str; 5] = ["levels", "ledger", "reservations", "reserved", "transfers"];

/// The batch's statements on `tables` (the live ones or a rebuild's shadows), each reading its rows
/// as a JSON array from `$1`, in the order they run; a statement whose list is empty is left out.
fn statements(levels: &str, reservations: &str, movements: &str, transfers: &str) -> [String; 5] {
    [
        format!(
            "insert into {levels} as l (org_id, variant_id, warehouse_id, on_hand, updated_at)
                 select * from json_to_recordset($1::json)
                     as t(org_id uuid, variant_id uuid, warehouse_id uuid, moved bigint, updated_at timestamptz)
                 on conflict (org_id, variant_id, warehouse_id)
                 do update set on_hand = l.on_hand + excluded.on_hand, updated_at = greatest(l.updated_at, excluded.updated_at)"
        ),
        format!(
            "insert into {movements} (org_id, transaction_id, seq, id, variant_id, warehouse_id, cause_type, cause_id,
                                          quantity, on_hand, occurred_on, created_at)
                 select * from json_to_recordset($1::json)
                     as t(org_id uuid, transaction_id bigint, seq bigint, id uuid, variant_id uuid, warehouse_id uuid,
                          cause_type text, cause_id uuid, quantity bigint, on_hand bigint, occurred_on date,
                          created_at timestamptz)
                 on conflict (org_id, transaction_id, seq) do nothing"
        ),
        format!(
            "delete from {reservations} r using json_to_recordset($1::json) as t(org_id uuid, reservation_id uuid)
                 where r.org_id = t.org_id and r.reservation_id = t.reservation_id"
        ),
        format!(
            "insert into {reservations} (org_id, reservation_id, variant_id, warehouse_id, quantity, reserved_through)
                 select * from json_to_recordset($1::json)
                     as t(org_id uuid, reservation_id uuid, variant_id uuid, warehouse_id uuid, quantity bigint,
                          reserved_through date)"
        ),
        format!(
            "insert into {transfers} (org_id, id, origin_warehouse_id, destination_warehouse_id, occurred_on, doc,
                                          created_at)
                 select * from json_to_recordset($1::json)
                     as t(org_id uuid, id uuid, origin_warehouse_id uuid, destination_warehouse_id uuid,
                          occurred_on date, doc jsonb, created_at timestamptz)
                 on conflict (org_id, id) do nothing"
        ),
    ]
}

impl Batch {
    /// Each statement's rows as a JSON array, in [`statements`]' order (`None` for an empty list).
    fn rows(&self) -> Result<[Option<String>; 5], ProjectionError> {
        fn json<T: serde::Serialize>(rows: &[T]) -> Result<Option<String>, ProjectionError> {
            if rows.is_empty() { Ok(None) } else { json_fold::rows_json(rows).map(Some) }
        }
        Ok([
            json(&self.levels)?,
            json(&self.ledger)?,
            json(&self.reservations)?,
            json(&self.reserved)?,
            json(&self.transfers)?,
        ])
    }
}

impl RenderedFold for InventoryProjection {
    fn prepare(&self) -> Vec<String> {
        STATEMENTS
            .iter()
            .zip(statements(LEVELS, RESERVATIONS, MOVEMENTS, TRANSFERS))
            .map(|(name, sql)| json_fold::prepare(&format!("inventory_{name}"), &sql))
            .collect()
    }

    fn render(&self, events: &[RecordedEvent]) -> Result<Rendered, ProjectionError> {
        let rows = fold(events)?.rows()?;
        let sql: Vec<String> = STATEMENTS
            .iter()
            .zip(rows)
            .filter_map(|(name, rows)| rows.map(|rows| json_fold::execute(&format!("inventory_{name}"), &rows)))
            .collect();
        // Inventory reads are not cached.
        Ok(Rendered {
            sql: if sql.is_empty() { "select 1".to_owned() } else { sql.join(";\n") },
            invalidate: Vec::new(),
        })
    }
}

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let rows = fold(events)?.rows()?;
    let tables = statements(
        &target.table(LEVELS),
        &target.table(RESERVATIONS),
        &target.table(MOVEMENTS),
        &target.table(TRANSFERS),
    );
    for (sql, rows) in tables.into_iter().zip(rows) {
        if let Some(rows) = rows {
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(rows).execute(&mut *conn).await?;
        }
    }
    // Inventory reads are not cached.
    Ok(Vec::new())
}

/// One inventory row: a variant in a warehouse.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LevelRow {
    pub variant_id: Uuid,
    pub warehouse_id: Uuid,
    pub sku: Option<String>,
    pub name: Option<String>,
    pub warehouse_name: Option<String>,
    pub on_hand: Quantity,
    pub reserved: Quantity,
    /// As the product states it.
    pub stock_minimum: Option<WholeUnits>,
}

impl LevelRow {
    /// On hand − active reservations (negative when over-reserved or short).
    pub fn available(&self) -> Quantity {
        self.on_hand.saturating_sub(self.reserved)
    }

    /// Available stock is under the product's minimum.
    pub fn below_minimum(&self) -> bool {
        self.stock_minimum.is_some_and(|minimum| self.available() < minimum.quantity())
    }
}

/// What an inventory list may be filtered by.
#[derive(Debug, Clone, Default)]
pub struct LevelFilter {
    pub warehouse_id: Option<Uuid>,
    pub variant_id: Option<Uuid>,
    /// Part of the product's name or SKU.
    pub query: Option<String>,
    pub below_minimum: Option<bool>,
}

/// Up to `limit` inventory rows after `after` (variant, warehouse), in that order; reservations count
/// through `today` (the organization's date).
pub async fn levels(
    pool: &PgPool,
    org_id: Uuid,
    filter: &LevelFilter,
    today: Date,
    after: Option<(Uuid, Uuid)>,
    limit: i64,
) -> Result<Vec<LevelRow>, sqlx::Error> {
    sqlx::query_as(
        "select * from (
             select l.variant_id, l.warehouse_id, l.on_hand, p.sku, p.name, p.stock_minimum, w.name as warehouse_name,
                    coalesce((select sum(r.quantity) from inventory_reservations r
                              where r.org_id = l.org_id and r.variant_id = l.variant_id
                                and r.warehouse_id = l.warehouse_id and r.reserved_through >= $7), 0)::bigint as reserved
             from inventory_levels l
             left join products_view p on p.org_id = l.org_id and p.id = l.variant_id
             left join warehouses_view w on w.org_id = l.org_id and w.id = l.warehouse_id
             where l.org_id = $1 and ($2::uuid is null or l.warehouse_id = $2) and ($3::uuid is null or l.variant_id = $3)
               and ($4::text is null or p.name ilike $4 or p.sku ilike $4)
               and ($5::uuid is null or (l.variant_id, l.warehouse_id) > ($5, $6))
             order by l.variant_id, l.warehouse_id) rows
         where $8::boolean is null
            or $8 = (stock_minimum is not null and on_hand - reserved < stock_minimum * 1000)
         limit $9",
    )
    .bind(org_id)
    .bind(filter.warehouse_id)
    .bind(filter.variant_id)
    .bind(filter.query.as_deref().map(contains_pattern))
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(today)
    .bind(filter.below_minimum)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// One row of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MovementRow {
    /// The transaction of the event that made the row, as the event store's commit order reads it.
    pub transaction_id: i64,
    pub seq: i64,
    pub id: Uuid,
    pub variant_id: Uuid,
    pub warehouse_id: Uuid,
    pub cause_type: String,
    pub cause_id: Uuid,
    pub quantity: Quantity,
    pub on_hand: Quantity,
    pub occurred_on: Date,
    pub created_at: OffsetDateTime,
}

/// What the ledger may be filtered by (dates inclusive).
#[derive(Debug, Clone, Default)]
pub struct MovementFilter {
    pub variant_id: Option<Uuid>,
    pub warehouse_id: Option<Uuid>,
    pub cause_type: Option<String>,
    pub date_from: Option<Date>,
    pub date_to: Option<Date>,
}

/// Up to `limit` ledger rows after `after` (a `(transaction_id, seq)`), in the order they were folded:
/// commit order, oldest first. Positions alone are not that order (a transaction can hold a lower
/// position than one that commits before it), and only that order puts every row still to be folded
/// after every row already served, so a client paging by cursor while stock moves misses none.
pub async fn movements(
    pool: &PgPool,
    org_id: Uuid,
    filter: &MovementFilter,
    after: Option<(i64, i64)>,
    limit: i64,
) -> Result<Vec<MovementRow>, sqlx::Error> {
    sqlx::query_as(
        "select transaction_id, seq, id, variant_id, warehouse_id, cause_type, cause_id, quantity, on_hand,
                occurred_on, created_at
         from inventory_movements
         where org_id = $1 and ($2::uuid is null or variant_id = $2) and ($3::uuid is null or warehouse_id = $3)
           and ($4::text is null or cause_type = $4) and ($5::date is null or occurred_on >= $5)
           and ($6::date is null or occurred_on <= $6)
           and ($7::bigint is null or (transaction_id, seq) > ($7, $8::bigint))
         order by transaction_id, seq limit $9",
    )
    .bind(org_id)
    .bind(filter.variant_id)
    .bind(filter.warehouse_id)
    .bind(&filter.cause_type)
    .bind(filter.date_from)
    .bind(filter.date_to)
    .bind(after.map(|(transaction_id, _)| transaction_id))
    .bind(after.map(|(_, seq)| seq))
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// A stock transfer as stored for reads.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct TransferRow {
    pub id: Uuid,
    pub origin_warehouse_id: Uuid,
    pub destination_warehouse_id: Uuid,
    pub occurred_on: Date,
    /// `items` (the moved lines), `requested_items`, `notes`.
    pub doc: Value,
    pub created_at: OffsetDateTime,
}

const TRANSFER_COLUMNS: &str = "id, origin_warehouse_id, destination_warehouse_id, occurred_on, doc, created_at";

pub async fn transfer(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<TransferRow>, sqlx::Error> {
    crate::row_by_id(pool, "stock_transfers_view", TRANSFER_COLUMNS, org_id, id).await
}

/// Up to `limit` transfers after `after`, oldest first, optionally touching one warehouse (as origin
/// or destination).
pub async fn transfers(
    pool: &PgPool,
    org_id: Uuid,
    warehouse_id: Option<Uuid>,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<TransferRow>, sqlx::Error> {
    let sql = format!(
        "select {TRANSFER_COLUMNS} from stock_transfers_view
         where org_id = $1 and ($2::uuid is null or origin_warehouse_id = $2 or destination_warehouse_id = $2)
           and ($3::uuid is null or id > $3)
         order by id limit $4"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(warehouse_id)
        .bind(after)
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// The active reservations `reservation_ids` (of quotes, orders), as this read model holds them, in one
/// query: per line its reservation, product, warehouse, quantity and the date it is held through, by
/// reservation and then by product and warehouse.
pub async fn active_reservations(
    pool: &PgPool,
    org_id: Uuid,
    reservation_ids: &[Uuid],
    today: time::Date,
) -> Result<Vec<(Uuid, Uuid, Uuid, Quantity, time::Date)>, sqlx::Error> {
    sqlx::query_as(
        "select reservation_id, variant_id, warehouse_id, quantity, reserved_through from inventory_reservations
         where org_id = $1 and reservation_id = any($2) and reserved_through >= $3
         order by reservation_id, variant_id, warehouse_id",
    )
    .bind(org_id)
    .bind(reservation_ids)
    .bind(today)
    .fetch_all(pool)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use events::EventPayload;
    use events::catalogue::{StockChange, StockLine, StockMovementEvent, StockMovementRecorded};

    /// A movement at `position` changing `count` levels by one each.
    fn movement(org_id: Uuid, position: i64, count: usize) -> RecordedEvent {
        let warehouse = Uuid::now_v7();
        let one = Quantity::from_thousandths(1_000).expect("one");
        let variants: Vec<Uuid> = (0..count).map(|_| Uuid::now_v7()).collect();
        let event = StockMovementEvent::StockMovementRecorded(StockMovementRecorded {
            movement_type: "in".into(),
            warehouse_id: warehouse,
            reason: None,
            occurred_on: time::macros::date!(2026 - 12 - 07),
            lines: variants.iter().map(|v| StockLine { variant_id: *v, quantity: one }).collect(),
            changes: variants
                .iter()
                .map(|v| StockChange { variant_id: *v, warehouse_id: warehouse, quantity: one, on_hand: one })
                .collect(),
        });
        let new = event.to_new_event().expect("encodes");
        RecordedEvent {
            position,
            transaction_id: 7,
            org_id,
            stream_type: StockMovementEvent::STREAM_TYPE.into(),
            stream_id: Uuid::now_v7(),
            version: 1,
            event_id: new.event_id,
            event_type: new.event_type.into(),
            schema_version: new.schema_version,
            data: new.data,
            metadata: serde_json::json!({}),
            recorded_at: OffsetDateTime::now_utc(),
        }
    }

    #[test]
    fn every_change_of_the_largest_event_has_a_ledger_row_of_its_own() {
        let org = Uuid::now_v7();
        let most = events::catalogue::MAX_STOCK_CHANGES;
        let batch = fold(&[movement(org, 1, most), movement(org, 2, 10)]).expect("folds");
        let seqs: std::collections::BTreeSet<i64> = batch.ledger.iter().map(|row| row.seq).collect();
        assert_eq!(seqs.len(), most + 10, "no two rows share a seq");
        // One more would collide with the next event's rows: never lost silently.
        assert!(fold(&[movement(org, 1, most + 1)]).is_err());
    }
}
