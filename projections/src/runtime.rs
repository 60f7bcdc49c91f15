//! The projector runtime: one durable JetStream consumer per projection partition, batches applied in
//! one Postgres transaction together with the per-organization checkpoints (so a redelivered event has
//! no second effect), progress published after each batch.

use crate::progress::Progress;
use crate::{CacheKey, Partition, Projection, ProjectionError, Target};
use async_nats::jetstream::consumer::{self, PullConsumer};
use async_nats::jetstream::stream::Stream as JsStream;
use events::bus::{Bus, header_commit_key};
use events::{CommitKey, RecordedEvent};
use futures::{FutureExt, StreamExt};
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// Most events folded in one transaction.
pub const BATCH: usize = 1_000;
/// How often an idle projector repeats its progress, for gateways that started after the last batch.
const HEARTBEAT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error("nats: {0}")]
    Nats(String),
}

fn nats<E: std::fmt::Display>(error: E) -> RunError {
    RunError::Nats(error.to_string())
}

pub fn consumer_name(projection: &str, partition: Partition) -> String {
    format!("{projection}-p{}of{}", partition.index, partition.count)
}

/// Runs one partition of a projection for ever, restarting from its durable consumer after errors.
pub async fn run(pool: PgPool, bus: Bus, projection: Arc<dyn Projection>, partition: Partition) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match run_until_error(&pool, &bus, projection.as_ref(), partition).await {
            Ok(()) => backoff = Duration::from_millis(100),
            Err(error) => {
                tracing::warn!(projection = projection.name(), %error, "projector paused; restarting");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// Re-creates the durable consumer so delivery restarts right after the last acknowledged message, in
/// order. Messages a dead process had in flight would otherwise be redelivered only after newer ones,
/// and per-organization checkpoints would then pass them over.
async fn reset_consumer(stream: &JsStream, bus: &Bus, name: &str) -> Result<PullConsumer, RunError> {
    let deliver_policy = match stream.get_consumer::<consumer::pull::Config>(name).await {
        Ok(existing) => {
            let info = existing.get_info().await.map_err(nats)?;
            let floor = info.ack_floor.stream_sequence;
            stream.delete_consumer(name).await.map_err(nats)?;
            consumer::DeliverPolicy::ByStartSequence { start_sequence: floor + 1 }
        }
        Err(_) => consumer::DeliverPolicy::All,
    };
    stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some(name.to_owned()),
            ack_policy: consumer::AckPolicy::All,
            ack_wait: Duration::from_secs(60),
            max_ack_pending: 20_000,
            deliver_policy,
            filter_subject: bus.events_wildcard(),
            ..Default::default()
        })
        .await
        .map_err(nats)
}

async fn run_until_error(
    pool: &PgPool,
    bus: &Bus,
    projection: &dyn Projection,
    partition: Partition,
) -> Result<(), RunError> {
    while !bus.is_connected() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stream = bus.ensure_event_stream().await.map_err(nats)?;
    let name = consumer_name(projection.name(), partition);
    let consumer = reset_consumer(&stream, bus, &name).await?;
    let mut messages = consumer
        .stream()
        .max_messages_per_batch(BATCH)
        .heartbeat(Duration::from_secs(5))
        .expires(Duration::from_secs(30))
        .messages()
        .await
        .map_err(nats)?;
    let subject_prefix = format!("{}.events.", bus.prefix());
    let mut last_key: Option<CommitKey> = None;
    loop {
        let first = match tokio::time::timeout(HEARTBEAT, messages.next()).await {
            Err(_) => {
                if let Some(key) = last_key {
                    publish_progress(bus, projection.name(), partition, key, Vec::new()).await;
                }
                continue;
            }
            Ok(None) => return Err(RunError::Nats("consumer stream ended".into())),
            Ok(Some(Err(error))) if error.kind() == consumer::pull::MessagesErrorKind::MissingHeartbeat => continue,
            Ok(Some(Err(error))) => return Err(nats(error)),
            Ok(Some(Ok(message))) => message,
        };
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match messages.next().now_or_never() {
                Some(Some(Ok(message))) => batch.push(message),
                Some(Some(Err(error))) => return Err(nats(error)),
                _ => break,
            }
        }

        let mut owned = Vec::new();
        let mut batch_key = None;
        for message in &batch {
            let key = header_commit_key(message.headers.as_ref())
                .ok_or_else(|| RunError::Nats(format!("message on {} has no commit key", message.subject)))?;
            batch_key = Some(key);
            // Subject: <prefix>.events.<org>.<stream type>.<event type>
            let mut parts = message.subject.strip_prefix(subject_prefix.as_str()).unwrap_or_default().split('.');
            let org = parts.next().and_then(|o| Uuid::parse_str(o).ok());
            let stream_type = parts.next().unwrap_or_default();
            let wanted = org.is_some_and(|o| partition.owns(o)) && projection.stream_types().contains(&stream_type);
            if wanted {
                let event: RecordedEvent = serde_json::from_slice(&message.payload)
                    .map_err(|e| ProjectionError::Undecodable { position: key.position, reason: e.to_string() })?;
                owned.push(event);
            }
        }
        let invalidate = if owned.is_empty() { Vec::new() } else { apply_batch(pool, projection, &owned).await? };
        let key = batch_key.unwrap_or_default();
        last_key = Some(key);
        publish_progress(bus, projection.name(), partition, key, invalidate).await;
        if let Some(last) = batch.last() {
            last.ack().await.map_err(nats)?;
        }
    }
}

async fn publish_progress(
    bus: &Bus,
    projection: &str,
    partition: Partition,
    key: CommitKey,
    invalidate: Vec<CacheKey>,
) {
    let progress = Progress { projection: projection.to_owned(), partition, key, invalidate };
    if let Ok(body) = serde_json::to_vec(&progress) {
        let _ = bus.client.publish(bus.progress_subject(projection), body.into()).await;
    }
}

/// Takes the projection's shared lock; a rebuild's swap takes it exclusively.
pub(crate) async fn lock_projection(
    conn: &mut PgConnection,
    projection: &str,
    exclusive: bool,
) -> Result<(), sqlx::Error> {
    let sql = if exclusive {
        "select pg_advisory_xact_lock(hashtextextended('projection ' || $1, 0))"
    } else {
        "select pg_advisory_xact_lock_shared(hashtextextended('projection ' || $1, 0))"
    };
    sqlx::query(sql).bind(projection).execute(conn).await?;
    Ok(())
}

/// Applies events (in commit order) that the projection has not applied yet, and moves the checkpoints
/// of their organizations, in one transaction. Returns the cached reads made stale.
pub async fn apply_batch(
    pool: &PgPool,
    projection: &dyn Projection,
    events: &[RecordedEvent],
) -> Result<Vec<CacheKey>, RunError> {
    let mut tx = pool.begin().await?;
    lock_projection(&mut tx, projection.name(), false).await?;
    let mut orgs: Vec<Uuid> = events.iter().map(|e| e.org_id).collect();
    orgs.push(Uuid::nil());
    orgs.sort_unstable();
    orgs.dedup();
    let rows: Vec<(Uuid, i64, i64)> = sqlx::query_as(
        "select org_id, transaction_id::text::int8, position from projection_checkpoints
         where projection = $1 and org_id = any($2) for update",
    )
    .bind(projection.name())
    .bind(&orgs)
    .fetch_all(&mut *tx)
    .await?;
    let mut applied: HashMap<Uuid, CommitKey> = rows.into_iter().map(|(o, t, p)| (o, CommitKey::new(t, p))).collect();
    let floor = applied.get(&Uuid::nil()).copied().unwrap_or_default();
    let fresh: Vec<RecordedEvent> = events
        .iter()
        .filter(|e| e.key() > floor && e.key() > applied.get(&e.org_id).copied().unwrap_or_default())
        .cloned()
        .collect();
    if fresh.is_empty() {
        return Ok(Vec::new());
    }
    let invalidate = projection.apply(&mut tx, Target::Live, &fresh).await?;
    for event in &fresh {
        applied.insert(event.org_id, event.key());
    }
    let touched: Vec<(Uuid, CommitKey)> = {
        let mut seen: Vec<Uuid> = fresh.iter().map(|e| e.org_id).collect();
        seen.sort_unstable();
        seen.dedup();
        seen.into_iter().map(|org| (org, applied[&org])).collect()
    };
    sqlx::query(
        "insert into projection_checkpoints (projection, org_id, transaction_id, position)
         select $1, o, t::text::xid8, p from unnest($2::uuid[], $3::int8[], $4::int8[]) as u(o, t, p)
         on conflict (projection, org_id) do update
         set transaction_id = excluded.transaction_id, position = excluded.position",
    )
    .bind(projection.name())
    .bind(touched.iter().map(|(o, _)| *o).collect::<Vec<_>>())
    .bind(touched.iter().map(|(_, k)| k.transaction_id).collect::<Vec<_>>())
    .bind(touched.iter().map(|(_, k)| k.position).collect::<Vec<_>>())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(invalidate)
}
