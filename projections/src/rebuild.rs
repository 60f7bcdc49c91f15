//! Rebuilding a projection from the Postgres event store into shadow tables, then swapping them in
//! within one short transaction. It may run while projectors and the gateway serve traffic: readers see
//! the old tables until the swap and the new ones after it, never a half-built table.

use crate::runtime::lock_projection;
use crate::{Projection, ProjectionError, Target};
use events::follower;
use events::{CommitKey, RecordedEvent};
use sqlx::PgPool;
use std::time::{Duration, Instant};
use uuid::Uuid;

const READ_BATCH: i64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RebuildReport {
    /// Events folded into the new tables.
    pub events: u64,
    pub elapsed: Duration,
}

/// Rebuilds one projection. `on_progress` is called after each batch with the events folded so far.
pub async fn rebuild(
    pool: &PgPool,
    projection: &dyn Projection,
    mut on_progress: impl FnMut(u64),
) -> Result<RebuildReport, ProjectionError> {
    let started = Instant::now();
    let tables: Vec<String> = projection.tables().iter().map(|t| (*t).to_owned()).collect();
    sqlx::query("select projection_shadow_create($1)").bind(&tables).execute(pool).await?;

    // Fill the shadow from the committed history, in short transactions (a long one would hold back
    // the commit horizon every follower waits on). The next batch is read (on another connection)
    // while this one is decoded and written, so neither side waits for the other.
    let mut folded = 0_u64;
    let mut reached = CommitKey::ZERO;
    // Progress for operators watching the rebuilding process's metrics: how far through the store.
    let target: i64 = sqlx::query_scalar("select coalesce(max(position), 0) from events").fetch_one(pool).await?;
    let labels = [("projection", projection.name().to_owned())];
    metrics::gauge!("backoffice_projection_rebuild_target_position", &labels).set(target as f64);
    let reached_gauge = metrics::gauge!("backoffice_projection_rebuild_position", &labels);
    let folded_gauge = metrics::gauge!("backoffice_projection_rebuild_events", &labels);
    reached_gauge.set(0.0);
    folded_gauge.set(0.0);
    let mut furthest = 0_i64;
    let mut batch = follower::read_committed_after(pool, reached, READ_BATCH).await?;
    while let Some(last) = batch.last() {
        reached = last.key();
        // Commit order is not position order: the gauge shows the furthest position read so far.
        furthest = furthest.max(reached.position);
        reached_gauge.set(furthest as f64);
        let (next, written) = tokio::join!(
            follower::read_committed_after(pool, reached, READ_BATCH),
            fold_into_shadow(pool, projection, &batch)
        );
        folded += written?;
        folded_gauge.set(folded as f64);
        on_progress(folded);
        batch = next?;
    }
    sqlx::query("select projection_shadow_seal($1)").bind(&tables).execute(pool).await?;

    // Swap: stop the live projectors for a moment, catch the shadow up to wherever they got, make their
    // checkpoints a single floor at that point, and rename the tables.
    let mut tx = pool.begin().await?;
    lock_projection(&mut tx, projection.name(), true).await?;
    let live: Option<(i64, i64)> = sqlx::query_as(
        "select transaction_id::text::int8, position from projection_checkpoints where projection = $1
         order by transaction_id desc, position desc limit 1",
    )
    .bind(projection.name())
    .fetch_optional(&mut *tx)
    .await?;
    let live = live.map(|(t, p)| CommitKey::new(t, p)).unwrap_or_default();
    while reached < live {
        let batch: Vec<RecordedEvent> = follower::read_committed_after(pool, reached, READ_BATCH)
            .await?
            .into_iter()
            .filter(|e| e.key() <= live)
            .collect();
        let Some(last) = batch.last() else { break };
        reached = last.key();
        let relevant = relevant(projection, &batch);
        if !relevant.is_empty() {
            projection.apply(&mut tx, Target::Shadow, &relevant).await?;
            folded += relevant.len() as u64;
        }
    }
    sqlx::query("delete from projection_checkpoints where projection = $1")
        .bind(projection.name())
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "insert into projection_checkpoints (projection, org_id, transaction_id, position)
         values ($1, $2, $3::int8::text::xid8, $4)",
    )
    .bind(projection.name())
    .bind(Uuid::nil())
    .bind(reached.transaction_id)
    .bind(reached.position)
    .execute(&mut *tx)
    .await?;
    sqlx::query("select projection_shadow_swap($1)").bind(&tables).execute(&mut *tx).await?;
    tx.commit().await?;
    on_progress(folded);
    Ok(RebuildReport { events: folded, elapsed: started.elapsed() })
}

fn relevant(projection: &dyn Projection, batch: &[RecordedEvent]) -> Vec<RecordedEvent> {
    let folds = projection.folds();
    batch.iter().filter(|e| folds.includes(&e.stream_type)).cloned().collect()
}

async fn fold_into_shadow(
    pool: &PgPool,
    projection: &dyn Projection,
    batch: &[RecordedEvent],
) -> Result<u64, ProjectionError> {
    let relevant = relevant(projection, batch);
    if relevant.is_empty() {
        return Ok(0);
    }
    let mut tx = pool.begin().await?;
    projection.apply(&mut tx, Target::Shadow, &relevant).await?;
    tx.commit().await?;
    Ok(relevant.len() as u64)
}
