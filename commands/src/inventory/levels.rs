//! The stock write model: `stock_levels` (on hand per variant and warehouse) and the active
//! reservations that count against it, read and written inside a command's transaction.

use events::catalogue::StockChange;
use events::domain::Quantity;
use events::unnest::Unnest;
use sqlx::PgConnection;
use std::collections::BTreeMap;
use time::Date;
use uuid::Uuid;

/// (variant, warehouse).
pub type Key = (Uuid, Uuid);

/// One stock level as a command sees it under its lock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Level {
    pub on_hand: Quantity,
    /// Active reservations (counting through `today` or later).
    pub reserved: Quantity,
}

impl Level {
    /// On hand − active reservations (negative when over-reserved or short).
    pub fn available(&self) -> Quantity {
        self.on_hand.saturating_sub(self.reserved)
    }
}

/// Locks the levels of `keys` for the rest of the transaction (creating missing ones at zero) and
/// returns them with the reservations active on `today`. Rows are locked in key order by one
/// statement, so two commands touching the same levels never deadlock: the second waits for the
/// first to commit or roll back, then reads what it left, its reservations included (read once every
/// level is locked by `stock_reserved_now`, `schema/0042`, not from the statement's older snapshot).
pub async fn lock(
    conn: &mut PgConnection,
    org_id: Uuid,
    keys: impl IntoIterator<Item = Key>,
    today: Date,
) -> Result<BTreeMap<Key, Level>, sqlx::Error> {
    let nothing: BTreeMap<Key, i64> = keys.into_iter().map(|key| (key, 0)).collect();
    lock_adding(conn, org_id, &nothing, today).await
}

/// [`lock`], adding `deltas` (thousandths, per level) in the same statement: the rows hold their new
/// on-hand at once, and the levels returned are as they were before, for the command to plan from. A
/// command whose every move adds or takes a quantity (a movement in or out) then needs no second
/// statement under the locks to write what its plan computed (the plan ends where the deltas do); one
/// that fails rolls the rows back with everything else.
pub async fn lock_adding(
    conn: &mut PgConnection,
    org_id: Uuid,
    deltas: &BTreeMap<Key, i64>,
    today: Date,
) -> Result<BTreeMap<Key, Level>, sqlx::Error> {
    let (mut variants, mut warehouses, mut amounts) = (Vec::new(), Vec::new(), Vec::new());
    for (&(variant, warehouse), &delta) in deltas {
        variants.push(variant);
        warehouses.push(warehouse);
        amounts.push(delta);
    }
    let rows: Vec<(Uuid, Uuid, i64, Quantity)> = sqlx::query_as(
        "with locked as (
             insert into stock_levels (org_id, variant_id, warehouse_id, on_hand)
             select $1, v, w, d from unnest($2::uuid[], $3::uuid[], $4::bigint[]) with ordinality as k(v, w, d, n)
             order by n
             on conflict (org_id, variant_id, warehouse_id) do update set on_hand = stock_levels.on_hand + excluded.on_hand
             returning variant_id, warehouse_id, on_hand),
         keys as (select array_agg(variant_id) as v, array_agg(warehouse_id) as w from locked)
         select l.variant_id, l.warehouse_id, l.on_hand, coalesce(r.reserved, 0)
         from locked l
         left join stock_reserved_now($1, (select v from keys), (select w from keys), $5) r
           on r.variant_id = l.variant_id and r.warehouse_id = l.warehouse_id",
    )
    .bind(org_id)
    .bind(&variants)
    .bind(&warehouses)
    .bind(&amounts)
    .bind(today)
    .fetch_all(&mut *conn)
    .await?;
    rows.into_iter()
        .map(|(v, w, after, reserved)| {
            let before = after - deltas.get(&(v, w)).copied().unwrap_or(0);
            // A stored level beyond a quantity's range is a broken row, not zero stock.
            let on_hand = Quantity::from_thousandths(before).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
            Ok(((v, w), Level { on_hand, reserved }))
        })
        .collect()
}

/// The levels of `keys` as they are now, without locking or creating anything (a preview's view: what a
/// command would start from if it ran at once). Missing levels read as zero.
pub async fn peek(
    conn: &mut PgConnection,
    org_id: Uuid,
    keys: impl IntoIterator<Item = Key>,
    today: Date,
) -> Result<BTreeMap<Key, Level>, sqlx::Error> {
    let keys: std::collections::BTreeSet<Key> = keys.into_iter().collect();
    let (variants, warehouses): (Vec<Uuid>, Vec<Uuid>) = keys.iter().copied().unzip();
    let rows: Vec<(Uuid, Uuid, Quantity, Quantity)> = sqlx::query_as(
        "select k.v, k.w, coalesce(l.on_hand, 0),
                coalesce((select sum(r.quantity) from stock_reservations r
                          where r.org_id = $1 and r.variant_id = k.v and r.warehouse_id = k.w
                            and r.reserved_through >= $4), 0)::bigint
         from unnest($2::uuid[], $3::uuid[]) as k(v, w)
         left join stock_levels l on l.org_id = $1 and l.variant_id = k.v and l.warehouse_id = k.w",
    )
    .bind(org_id)
    .bind(&variants)
    .bind(&warehouses)
    .bind(today)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows.into_iter().map(|(v, w, on_hand, reserved)| ((v, w), Level { on_hand, reserved })).collect())
}

/// Writes the on-hand each change left (the last change of a level wins).
pub async fn write(conn: &mut PgConnection, org_id: Uuid, changes: &[StockChange]) -> Result<(), sqlx::Error> {
    let mut last: BTreeMap<Key, Quantity> = BTreeMap::new();
    for change in changes {
        last.insert((change.variant_id, change.warehouse_id), change.on_hand);
    }
    write_on_hand(conn, org_id, &last).await
}

/// Sets each level of `on_hand` to its quantity.
pub async fn write_on_hand(
    conn: &mut PgConnection,
    org_id: Uuid,
    on_hand: &BTreeMap<Key, Quantity>,
) -> Result<(), sqlx::Error> {
    if on_hand.is_empty() {
        return Ok(());
    }
    let (mut variants, mut warehouses, mut quantities) = (Vec::new(), Vec::new(), Vec::new());
    for (&(v, w), q) in on_hand {
        variants.push(v);
        warehouses.push(w);
        quantities.push(q.thousandths());
    }
    sqlx::query(
        "update stock_levels s set on_hand = t.q
         from unnest($2::uuid[], $3::uuid[], $4::bigint[]) as t(v, w, q)
         where s.org_id = $1 and s.variant_id = t.v and s.warehouse_id = t.w",
    )
    .bind(org_id)
    .bind(&variants)
    .bind(&warehouses)
    .bind(&quantities)
    .execute(conn)
    .await?;
    Ok(())
}

/// Adds opening stock of new variants (no lock needed: nobody else can know them yet).
pub async fn add_opening(
    conn: &mut PgConnection,
    org_id: Uuid,
    stock: &[events::catalogue::OpeningStock],
) -> Result<(), sqlx::Error> {
    Unnest::new(stock)
        .constant("org_id", org_id)
        .column("variant_id", |s| s.variant_id)
        .column("warehouse_id", |s| s.warehouse_id)
        .column("on_hand", |s| s.quantity.thousandths())
        .execute(
            conn,
            "insert into stock_levels",
            "on conflict (org_id, variant_id, warehouse_id) do update set on_hand = stock_levels.on_hand + excluded.on_hand",
        )
        .await?;
    Ok(())
}
