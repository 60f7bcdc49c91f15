//! Rebuilding the stock write model (`stock_levels`, `stock_reservations`) from the event store: the
//! proof that those rows are derived, never authoritative. Levels are the sum of every change and
//! opening stock (so a rebuild also checks that each event's recorded on-hand agrees with its
//! predecessors'); reservations are the last state of each reservation stream.

use super::levels::Key;
use events::catalogue::{STOCK_STREAM_TYPES, StockEffect, stock_effect};
use events::domain::Quantity;
use events::unnest::Unnest;
use futures::TryStreamExt;
use serde::Serialize;
use sqlx::PgPool;
use std::collections::BTreeMap;
use time::Date;
use uuid::Uuid;

/// What a rebuild found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RebuildReport {
    /// Events read that carry a stock effect.
    pub events: u64,
    pub levels: usize,
    pub reservations: usize,
    /// Rows whose rebuilt value differed from the live one (added, removed or changed).
    pub corrected: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error("event at position {position} cannot be read: {reason}")]
    Undecodable { position: i64, reason: String },
    #[error("stock of {variant} in {warehouse} leaves the quantity bounds")]
    OutOfRange { variant: Uuid, warehouse: Uuid },
}

type Reservations = BTreeMap<(Uuid, Uuid), (Date, BTreeMap<Key, Quantity>)>;

/// Folds every stock event into fresh levels and reservations and replaces the live rows with them, in
/// one transaction holding the tables exclusively (stock commands wait meanwhile; reads do not).
/// `progress` is called every 10,000 events with the count so far.
pub async fn rebuild(pool: &PgPool, mut progress: impl FnMut(u64)) -> Result<RebuildReport, RebuildError> {
    let mut tx = pool.begin().await?;
    sqlx::query("lock table stock_levels, stock_reservations in exclusive mode").execute(&mut *tx).await?;
    let mut levels: BTreeMap<(Uuid, Key), Quantity> = BTreeMap::new();
    let mut reservations: Reservations = BTreeMap::new();
    let mut report = RebuildReport::default();
    {
        let mut rows = sqlx::query_as::<_, (i64, Uuid, String, Uuid, String, i32, serde_json::Value)>(
            "select position, org_id, stream_type, stream_id, event_type, schema_version, data from events
             where stream_type = any($1) order by stream_id, version",
        )
        .bind(STOCK_STREAM_TYPES)
        .fetch(&mut *tx);
        while let Some((position, org_id, stream_type, stream_id, event_type, schema_version, data)) =
            rows.try_next().await?
        {
            let effect = stock_effect(&stream_type, &event_type, schema_version, &data)
                .map_err(|e| RebuildError::Undecodable { position, reason: e.to_string() })?;
            let Some(effect) = effect else { continue };
            report.events += 1;
            if report.events % 10_000 == 0 {
                progress(report.events);
            }
            let mut add = |variant: Uuid, warehouse: Uuid, quantity: Quantity| {
                let level = levels.entry((org_id, (variant, warehouse))).or_default();
                *level = level.checked_add(quantity).ok_or(RebuildError::OutOfRange { variant, warehouse })?;
                Ok::<(), RebuildError>(())
            };
            match effect {
                StockEffect::Opening(stock) => {
                    for s in stock {
                        add(s.variant_id, s.warehouse_id, s.quantity)?;
                    }
                }
                StockEffect::Changes { changes, .. } => {
                    for c in changes {
                        add(c.variant_id, c.warehouse_id, c.quantity)?;
                    }
                }
                StockEffect::Reservation(None) => {
                    reservations.remove(&(org_id, stream_id));
                }
                StockEffect::Reservation(Some(r)) => {
                    let lines = r.lines.iter().map(|l| ((l.variant_id, l.warehouse_id), l.quantity)).collect();
                    reservations.insert((org_id, stream_id), (r.reserved_through, lines));
                }
            }
        }
    }
    progress(report.events);
    let before: Vec<(Uuid, Uuid, Uuid, i64)> =
        sqlx::query_as("select org_id, variant_id, warehouse_id, on_hand from stock_levels")
            .fetch_all(&mut *tx)
            .await?;
    let before_reservations: Vec<(Uuid, Uuid, Uuid, Uuid, i64, Date)> = sqlx::query_as(
        "select org_id, reservation_id, variant_id, warehouse_id, quantity, reserved_through from stock_reservations",
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut live: BTreeMap<(Uuid, Key), i64> = before.into_iter().map(|(o, v, w, q)| ((o, (v, w)), q)).collect();
    // Levels a lock created but nothing moved stay at zero: the same as no row.
    live.retain(|_, q| *q != 0);
    let rebuilt: BTreeMap<(Uuid, Key), i64> =
        levels.iter().filter(|(_, q)| !q.is_zero()).map(|(k, q)| (*k, q.thousandths())).collect();
    report.corrected += differences(&live, &rebuilt);
    let live_reservations: BTreeMap<_, _> =
        before_reservations.into_iter().map(|(o, r, v, w, q, d)| ((o, r, v, w), (q, d))).collect();
    let rebuilt_reservations: BTreeMap<_, _> = reservations
        .iter()
        .flat_map(|((o, r), (d, lines))| lines.iter().map(move |((v, w), q)| ((*o, *r, *v, *w), (q.thousandths(), *d))))
        .collect();
    report.corrected += differences(&live_reservations, &rebuilt_reservations);
    report.levels = rebuilt.len();
    report.reservations = reservations.len();

    sqlx::query("delete from stock_levels").execute(&mut *tx).await?;
    sqlx::query("delete from stock_reservations").execute(&mut *tx).await?;
    let levels: Vec<_> = rebuilt.iter().collect();
    Unnest::new(&levels)
        .column("org_id", |((o, _), _)| *o)
        .column("variant_id", |((_, (v, _)), _)| *v)
        .column("warehouse_id", |((_, (_, w)), _)| *w)
        .column("on_hand", |(_, q)| **q)
        .execute(&mut tx, "insert into stock_levels", "")
        .await?;
    let reservations: Vec<_> = rebuilt_reservations.iter().collect();
    Unnest::new(&reservations)
        .column("org_id", |((o, ..), _)| *o)
        .column("reservation_id", |((_, r, ..), _)| *r)
        .column("variant_id", |((_, _, v, _), _)| *v)
        .column("warehouse_id", |((.., w), _)| *w)
        .column("quantity", |(_, (q, _))| *q)
        .column("reserved_through", |(_, (_, d))| *d)
        .execute(&mut tx, "insert into stock_reservations", "")
        .await?;
    tx.commit().await?;
    Ok(report)
}

/// How many keys differ between two maps (present in one only, or with another value).
fn differences<K: Ord, V: PartialEq>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> usize {
    let missing = a.keys().filter(|k| !b.contains_key(k)).count();
    let other = b.iter().filter(|(k, v)| a.get(k) != Some(v)).count();
    missing + other
}
