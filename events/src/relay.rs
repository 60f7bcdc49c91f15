//! The relay (transactional outbox): follows the event store in commit order and publishes every
//! committed event to JetStream, advancing its checkpoint only after the publish acks. A NATS outage
//! only pauses it; it catches up by itself when NATS returns. The sealer (hash chain) runs the same way.

use crate::bus::{Bus, header_commit_key};
use crate::chain;
use crate::envelope::CommitKey;
use crate::follower::{self, Leadership};
use sqlx::PgPool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

pub const RELAY: &str = "relay";
const BATCH: i64 = 1_000;
/// Followers poll this often even when nobody wakes them.
const IDLE_POLL: Duration = Duration::from_millis(250);

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error("nats: {0}")]
    Nats(String),
}

fn nats<E: std::fmt::Display>(error: E) -> RelayError {
    RelayError::Nats(error.to_string())
}

/// Wakes followers when the command side reports commits (`<prefix>.relay.wake`).
pub async fn wake_on_commits(bus: &Bus, notify: Arc<Notify>) -> Result<(), async_nats::SubscribeError> {
    use futures::StreamExt;
    let mut wakes = bus.client.subscribe(bus.relay_wake_subject()).await?;
    tokio::spawn(async move {
        while wakes.next().await.is_some() {
            notify.notify_waiters();
            notify.notify_one();
        }
    });
    Ok(())
}

/// Waits until this process leads `name` (retrying every second).
async fn lead(pool: &PgPool, name: &str) -> Leadership {
    loop {
        match follower::try_lead(pool, name).await {
            Ok(Some(leadership)) => return leadership,
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, follower = name, "could not take the follower lock"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Runs the relay for ever: one relay per database publishes, others stand by.
pub async fn run_relay(pool: PgPool, bus: Bus, wake: Arc<Notify>) {
    loop {
        let mut leadership = lead(&pool, RELAY).await;
        tracing::info!("relay leading");
        let mut backoff = Duration::from_millis(100);
        loop {
            match relay_until_error(&pool, &bus, &wake, &mut leadership).await {
                Ok(()) => break, // lost the lock: go back to standing by
                Err(error) => {
                    tracing::warn!(%error, "relay paused; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        }
    }
}

async fn relay_until_error(
    pool: &PgPool,
    bus: &Bus,
    wake: &Notify,
    leadership: &mut Leadership,
) -> Result<(), RelayError> {
    while !bus.is_connected() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stream = bus.ensure_event_stream().await.map_err(nats)?;
    let mut checkpoint = follower::load_checkpoint(pool, RELAY).await?.key;
    // The stream is the truth about what was published: a crash between the ack and the checkpoint
    // must not republish (beyond the duplicate window), and a stream that lost messages must be refilled.
    let published = last_published(&stream).await?;
    if published != checkpoint {
        if published < checkpoint {
            tracing::warn!(%published, %checkpoint, "event stream is behind the relay checkpoint; republishing");
        }
        checkpoint = published;
        let mut conn = pool.acquire().await?;
        follower::save_checkpoint(&mut conn, RELAY, checkpoint).await?;
    }
    let mut last_lock_check = tokio::time::Instant::now();
    loop {
        if last_lock_check.elapsed() > Duration::from_secs(5) {
            if !leadership.still_held().await {
                return Ok(());
            }
            last_lock_check = tokio::time::Instant::now();
        }
        let events = follower::read_committed_after(pool, checkpoint, BATCH).await?;
        if events.is_empty() {
            let _ = tokio::time::timeout(IDLE_POLL, wake.notified()).await;
            continue;
        }
        if !bus.is_connected() {
            return Err(RelayError::Nats("not connected".into()));
        }
        let mut acks = Vec::with_capacity(events.len());
        for event in &events {
            let subject = bus.event_subject(event.org_id, &event.stream_type, &event.event_type);
            let payload = serde_json::to_vec(event).map_err(nats)?;
            let ack =
                bus.js.publish_with_headers(subject, Bus::event_headers(event), payload.into()).await.map_err(nats)?;
            acks.push(ack);
        }
        for ack in acks {
            ack.await.map_err(nats)?;
        }
        checkpoint = events.last().map(|e| e.key()).unwrap_or(checkpoint);
        let mut conn = pool.acquire().await?;
        follower::save_checkpoint(&mut conn, RELAY, checkpoint).await?;
    }
}

/// The key of the last event the stream holds (zero for an empty stream).
async fn last_published(stream: &async_nats::jetstream::stream::Stream) -> Result<CommitKey, RelayError> {
    let info = stream.get_info().await.map_err(nats)?;
    if info.state.messages == 0 {
        return Ok(CommitKey::ZERO);
    }
    let message = stream.get_raw_message(info.state.last_sequence).await.map_err(nats)?;
    Ok(header_commit_key(Some(&message.headers)).unwrap_or(CommitKey::ZERO))
}

/// Runs the sealer for ever: chains committed events per organization right after they commit.
pub async fn run_sealer(pool: PgPool, wake: Arc<Notify>) {
    loop {
        let mut leadership = lead(&pool, chain::SEALER).await;
        tracing::info!("sealer leading");
        let mut last_lock_check = tokio::time::Instant::now();
        loop {
            if last_lock_check.elapsed() > Duration::from_secs(5) {
                if !leadership.still_held().await {
                    break;
                }
                last_lock_check = tokio::time::Instant::now();
            }
            match chain::seal_pending(&pool, 2_000).await {
                Ok(0) => {
                    let _ = tokio::time::timeout(IDLE_POLL, wake.notified()).await;
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "sealer paused; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }
}
