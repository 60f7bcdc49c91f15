//! The relay (transactional outbox): follows the event store in commit order and publishes every
//! committed event to JetStream, advancing its checkpoint only after the publish acks. A NATS outage
//! only pauses it; it catches up by itself when NATS returns. The sealer (hash chain) runs the same way.

use crate::bus::{Bus, header_commit_key};
use crate::chain;
use crate::envelope::CommitKey;
use crate::follower::{self, Leadership};
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

pub const RELAY: &str = "relay";
const BATCH: i64 = 1_000;
/// Followers poll this often even when nobody wakes them.
const IDLE_POLL: Duration = Duration::from_millis(250);
/// How soon the relay looks again when a commit it was told of is still behind the read horizon (an
/// older transaction was still open when it read). Nobody wakes the relay when the older transaction
/// ends, and every writer may be waiting for exactly those events. The pause doubles while that lasts,
/// up to [`HELD_BACK_POLL_MAX`] (a long transaction costs a few reads a second).
const HELD_BACK_POLL: Duration = Duration::from_millis(1);
const HELD_BACK_POLL_MAX: Duration = Duration::from_millis(50);

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

/// How committers wake the relay: directly while it leads in their own process, otherwise over NATS
/// (`<prefix>.relay.wake`, payload: the committing transaction's id), which every standing-by or
/// leading relay listens to. It also remembers the newest transaction known to have committed events,
/// so the relay can tell a read that the horizon held back from one that found everything.
#[derive(Clone, Default)]
pub struct RelayWake {
    notify: Arc<Notify>,
    leading_here: Arc<AtomicBool>,
    newest_commit: Arc<AtomicI64>,
}

impl RelayWake {
    /// Whether the relay of this process leads, so a local wake-up reaches it.
    pub fn is_local(&self) -> bool {
        self.leading_here.load(Ordering::Acquire)
    }

    /// Records that transaction `transaction_id` committed events.
    pub fn committed(&self, transaction_id: i64) {
        self.newest_commit.fetch_max(transaction_id, Ordering::AcqRel);
    }

    /// The newest transaction known to have committed events (0 when none is known).
    pub fn newest_commit(&self) -> i64 {
        self.newest_commit.load(Ordering::Acquire)
    }

    /// Wakes the relay of this process.
    pub fn wake_local(&self) {
        self.notify.notify_one();
    }

    /// Listens for wake-ups that other processes send over NATS.
    pub async fn listen(&self, bus: &Bus) -> Result<(), async_nats::SubscribeError> {
        use futures::StreamExt;
        let mut wakes = bus.client.subscribe(bus.relay_wake_subject()).await?;
        let wake = self.clone();
        tokio::spawn(async move {
            while let Some(message) = wakes.next().await {
                if let Some(transaction_id) = std::str::from_utf8(&message.payload).ok().and_then(|t| t.parse().ok()) {
                    wake.committed(transaction_id);
                }
                wake.notify.notify_one();
            }
        });
        Ok(())
    }
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
pub async fn run_relay(pool: PgPool, bus: Bus, wake: RelayWake) {
    run_relay_polling(pool, bus, wake, IDLE_POLL).await
}

/// [`run_relay`], polling every `idle_poll` when nobody wakes it.
pub async fn run_relay_polling(pool: PgPool, bus: Bus, wake: RelayWake, idle_poll: Duration) {
    struct Leading<'a>(&'a AtomicBool);
    impl Drop for Leading<'_> {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }
    loop {
        let mut leadership = lead(&pool, RELAY).await;
        tracing::info!("relay leading");
        wake.leading_here.store(true, Ordering::Release);
        let _leading = Leading(&wake.leading_here);
        let mut backoff = Duration::from_millis(100);
        loop {
            match relay_until_error(&pool, &bus, &wake, idle_poll, &mut leadership).await {
                Ok(()) => break, // lost the lock: go back to standing by
                Err(error) => {
                    if matches!(error, RelayError::Nats(_)) {
                        metrics::counter!("backoffice_relay_publish_failures_total").increment(1);
                    }
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
    wake: &RelayWake,
    idle_poll: Duration,
    leadership: &mut Leadership,
) -> Result<(), RelayError> {
    while !bus.is_connected() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stream = bus.ensure_event_stream().await.map_err(nats)?;
    // The stream is the truth about what was published. Every message names its predecessor
    // (Nats-Expected-Last-Msg-Id), so the stream is always an exact prefix of the commit order: a lost
    // publish can never be overtaken by a later one.
    let (mut cursor, mut last_id) = last_published(&stream).await?;
    let checkpoint = follower::load_checkpoint(pool, RELAY).await?.key;
    // A connection of its own: reads follow each other without a pool checkout.
    let mut conn = pool.acquire().await?.detach();
    if cursor < checkpoint {
        tracing::warn!(published = %cursor, %checkpoint, "event stream is behind the relay checkpoint; republishing");
    }

    // Acks are awaited in order by a second task, so publishing never waits for a round trip; the
    // checkpoint follows the acks.
    let (acks_tx, acks_rx) = tokio::sync::mpsc::channel(MAX_IN_FLIGHT_BATCHES);
    let failed = Arc::new(Notify::new());
    let acker = tokio::spawn(await_acks(pool.clone(), acks_rx, failed.clone()));
    let _stop_acker = AbortOnDrop(acker);

    let mut last_lock_check = tokio::time::Instant::now();
    // Read at once after a full batch; otherwise wait for a wake-up (commits made while reading or
    // publishing leave one behind, so none is missed) or the idle poll, or look again shortly when a
    // commit the relay was told of is still behind the read horizon.
    let mut full = true;
    let mut held_back_pause = HELD_BACK_POLL;
    loop {
        if last_lock_check.elapsed() > Duration::from_secs(5) {
            if !leadership.still_held().await {
                return Ok(());
            }
            last_lock_check = tokio::time::Instant::now();
        }
        if !full {
            let pause = if cursor.transaction_id < wake.newest_commit() {
                let pause = held_back_pause;
                held_back_pause = (held_back_pause * 2).min(HELD_BACK_POLL_MAX).min(idle_poll);
                pause
            } else {
                held_back_pause = HELD_BACK_POLL;
                idle_poll
            };
            tokio::select! {
                _ = tokio::time::timeout(pause, wake.notify.notified()) => {}
                _ = failed.notified() => return Err(RelayError::Nats("a publish was not acknowledged".into())),
            }
        }
        let events = follower::read_outgoing_after(&mut conn, cursor, BATCH).await?;
        full = events.len() as i64 == BATCH;
        if events.is_empty() {
            continue;
        }
        if !bus.is_connected() {
            return Err(RelayError::Nats("not connected".into()));
        }
        // Only the last message of a batch asks for an ack. Each message names its predecessor, so the
        // stream accepts it only right after that one: the last message's ack proves the whole batch
        // stored in order, and a message lost or refused before it makes the last one fail too (the
        // relay then resumes from the stream's last message).
        let mut acks = Vec::with_capacity(1);
        let count = events.len();
        for (i, event) in events.into_iter().enumerate() {
            let subject = bus.event_subject(event.org_id, &event.stream_type, &event.event_type);
            let mut headers = Bus::event_headers(event.event_id, event.key);
            if let Some(previous) = &last_id {
                headers.insert(async_nats::header::NATS_EXPECTED_LAST_MESSAGE_ID, previous.as_str());
            }
            if i + 1 < count {
                bus.client.publish_with_headers(subject, headers, event.payload.into()).await.map_err(nats)?;
            } else {
                let ack = bus.js.publish_with_headers(subject, headers, event.payload.into()).await.map_err(nats)?;
                acks.push(ack);
            }
            last_id = Some(event.event_id.to_string());
            cursor = event.key;
        }
        tokio::select! {
            sent = acks_tx.send((cursor, acks, count)) => sent.map_err(|_| RelayError::Nats("ack task stopped".into()))?,
            _ = failed.notified() => return Err(RelayError::Nats("a publish was not acknowledged".into())),
        }
    }
}

/// Batches published but not yet acknowledged, at most.
const MAX_IN_FLIGHT_BATCHES: usize = 8;
/// The relay checkpoint is informational (the stream is authoritative), so it is written at most this
/// often, without waiting for the commit to be flushed.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// A published batch: its last key, the ack it asked for, and how many events it holds.
type AckBatch = (CommitKey, Vec<async_nats::jetstream::context::PublishAckFuture>, usize);

async fn await_acks(pool: PgPool, mut batches: tokio::sync::mpsc::Receiver<AckBatch>, failed: Arc<Notify>) {
    let mut last_saved = tokio::time::Instant::now();
    let mut pending: Option<CommitKey> = None;
    loop {
        let next = if pending.is_some() {
            match tokio::time::timeout(CHECKPOINT_EVERY, batches.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    save_relay_checkpoint(&pool, &mut pending).await;
                    continue;
                }
            }
        } else {
            batches.recv().await
        };
        let Some((key, acks, count)) = next else { return };
        for ack in acks {
            if let Err(error) = ack.await {
                tracing::warn!(%error, "publish not acknowledged");
                failed.notify_one();
                return;
            }
        }
        // Counted once stored: a batch that failed is published again from the stream's last message.
        metrics::counter!("backoffice_relay_published_total").increment(count as u64);
        pending = Some(key);
        if last_saved.elapsed() >= CHECKPOINT_EVERY {
            save_relay_checkpoint(&pool, &mut pending).await;
            last_saved = tokio::time::Instant::now();
        }
    }
}

async fn save_relay_checkpoint(pool: &PgPool, pending: &mut Option<CommitKey>) {
    let Some(key) = *pending else { return };
    let saved = async {
        let mut tx = pool.begin().await?;
        sqlx::query("set local synchronous_commit = off").execute(&mut *tx).await?;
        follower::save_checkpoint(&mut tx, RELAY, key).await?;
        tx.commit().await
    };
    match saved.await {
        Ok(()) => *pending = None,
        Err(error) => tracing::warn!(%error, "could not save the relay checkpoint"),
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The key and event id of the last event the stream holds (zero and none for an empty stream).
async fn last_published(
    stream: &async_nats::jetstream::stream::Stream,
) -> Result<(CommitKey, Option<String>), RelayError> {
    let info = stream.get_info().await.map_err(nats)?;
    if info.state.messages == 0 {
        return Ok((CommitKey::ZERO, None));
    }
    let message = stream.get_raw_message(info.state.last_sequence).await.map_err(nats)?;
    let key = header_commit_key(Some(&message.headers)).unwrap_or(CommitKey::ZERO);
    let id = message.headers.get(async_nats::header::NATS_MESSAGE_ID).map(|v| v.as_str().to_owned());
    Ok((key, id))
}

/// How often the sealer looks for new events. Sealing is off the write path, so it works in large
/// batches rather than chasing every commit.
const SEAL_INTERVAL: Duration = Duration::from_millis(100);

/// Runs the sealer for ever: chains committed events per organization shortly after they commit.
pub async fn run_sealer(pool: PgPool) {
    loop {
        let mut leadership = lead(&pool, chain::SEALER).await;
        tracing::info!("sealer leading");
        let mut sealer = match chain::Sealer::start(&pool).await {
            Ok(sealer) => sealer,
            Err(error) => {
                tracing::warn!(%error, "sealer could not start; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let mut last_lock_check = tokio::time::Instant::now();
        loop {
            if last_lock_check.elapsed() > Duration::from_secs(5) {
                if !leadership.still_held().await {
                    break;
                }
                last_lock_check = tokio::time::Instant::now();
            }
            match sealer.seal_pending(5_000).await {
                Ok(_) => tokio::time::sleep(SEAL_INTERVAL).await,
                Err(error) => {
                    tracing::warn!(%error, "sealer paused; restarting");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    break;
                }
            }
        }
    }
}
