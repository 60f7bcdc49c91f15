//! Retention of idempotency outcomes. The worker stores the outcome of each keyed command with its
//! events (`worker.rs`); this keeps the table to the retention window.

use sqlx::PgPool;
use std::time::Duration;

/// How long a keyed command's outcome is kept. Within it, a retry under the same key replays the
/// outcome (or is refused if the request differs); after it, the key is free and a request under it
/// runs anew.
pub const RETENTION: Duration = Duration::from_secs(24 * 60 * 60);
/// How often each command worker process removes expired outcomes.
const PURGE_EVERY: Duration = Duration::from_secs(10 * 60);
/// Rows removed per statement, so a large backlog never holds many row locks or one long transaction.
const PURGE_BATCH: i64 = 5_000;

/// Removes the outcomes stored more than `retention` ago, oldest first, in short statements; returns
/// how many. Any number of workers may run it at once: rows another statement is removing are skipped.
pub async fn purge_expired(pool: &PgPool, retention: Duration) -> Result<u64, sqlx::Error> {
    let mut purged = 0;
    loop {
        let removed = sqlx::query(
            "delete from idempotency_keys k
             using (select org_id, key from idempotency_keys
                    where created_at < now() - make_interval(secs => $1)
                    order by created_at
                    limit $2
                    for update skip locked) expired
             where k.org_id = expired.org_id and k.key = expired.key",
        )
        .bind(retention.as_secs_f64())
        .bind(PURGE_BATCH)
        .execute(pool)
        .await?
        .rows_affected();
        purged += removed;
        if removed < PURGE_BATCH as u64 {
            return Ok(purged);
        }
    }
}

/// Purges expired outcomes every [`PURGE_EVERY`], for ever (the first time shortly after start).
pub async fn purge_forever(pool: PgPool) {
    let mut interval = tokio::time::interval(PURGE_EVERY);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        match purge_expired(&pool, RETENTION).await {
            Ok(0) => {}
            Ok(purged) => tracing::info!(purged, "expired idempotency outcomes removed"),
            Err(error) => tracing::warn!(%error, "could not remove expired idempotency outcomes"),
        }
    }
}
