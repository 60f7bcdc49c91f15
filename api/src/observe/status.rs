//! Where every follower of the event store stands, computed from the database and NATS alone: what
//! `backoffice status` prints and what each role's `/metrics` reports at scrape time, so any process
//! (or an operator's shell) sees a stopped projector, which cannot report on itself.

use events::bus::Bus;
use futures::StreamExt;
use projections::{Partition, ProjectionId};
use serde::Serialize;
use sqlx::PgPool;
use std::collections::HashMap;
use time::OffsetDateTime;

/// Events counted behind a follower at most (a count past it reads as this figure).
pub const LAG_COUNT_CAP: i64 = 100_000;

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    #[serde(with = "time::serde::rfc3339")]
    pub observed_at: OffsetDateTime,
    pub event_store: EventStore,
    /// The relay (event store to NATS) and the sealer (hash chain).
    pub followers: Vec<Follower>,
    /// The JetStream stream, when NATS answered.
    pub stream: Option<StreamState>,
    /// Every projection partition with a durable consumer, and every projection without one.
    pub projections: Vec<ProjectionPartition>,
    pub webhooks: WebhookQueue,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventStore {
    /// The highest position appended (0 when empty).
    pub head_position: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Follower {
    pub name: &'static str,
    /// Position of the last event it has handled, in commit order.
    pub position: i64,
    /// Committed events it has not handled yet (capped at [`LAG_COUNT_CAP`]).
    pub lag_events: i64,
    /// Age of the oldest committed event it has not handled (0 when none).
    pub lag_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StreamState {
    pub name: String,
    pub last_sequence: u64,
    pub messages: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProjectionPartition {
    pub projection: &'static str,
    /// `i/N`; `0/1` for a projection with no consumer yet.
    pub partition: String,
    /// The durable consumer's name, none when no projector ever started this projection.
    pub consumer: Option<String>,
    /// Event-store position of the newest event applied for the partition's organizations.
    pub position: Option<i64>,
    /// Stream sequence up to which every message is acknowledged.
    pub stream_sequence: Option<u64>,
    /// Messages the consumer still has to deliver or see acknowledged.
    pub lag_events: u64,
    /// How long it has been behind: age of the first message past the acknowledged floor (0 when
    /// nothing is pending).
    pub lag_seconds: f64,
    /// When it last acknowledged a message, as the server saw it.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_progress_at: Option<OffsetDateTime>,
    /// Whether a projector is pulling from the consumer right now.
    pub running: bool,
    /// Messages the server has yet to deliver (JetStream's `num_pending`).
    pub pending: u64,
    /// Messages delivered but not yet acknowledged (`num_ack_pending`).
    pub ack_pending: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct WebhookQueue {
    /// Deliveries not attempted yet.
    pub pending: i64,
    /// Deliveries attempted, failed, and waiting for their next attempt.
    pub retrying: i64,
}

/// Reads the status. NATS unreachable leaves the stream unknown and every projection's consumer
/// absent from the answer's JetStream figures (the database's are still there).
pub async fn read(pool: &PgPool, bus: Option<&Bus>) -> Result<Status, sqlx::Error> {
    let observed_at = OffsetDateTime::now_utc();
    let head_position: i64 =
        sqlx::query_scalar("select coalesce(max(position), 0) from events").fetch_one(pool).await?;
    let mut followers = Vec::new();
    for name in [events::relay::RELAY, events::chain::SEALER] {
        followers.push(follower(pool, name, observed_at).await?);
    }
    let (pending, retrying): (i64, i64) = sqlx::query_as(
        "select count(*) filter (where attempts = 0), count(*) filter (where attempts > 0)
         from webhook_deliveries where status = 'pending'",
    )
    .fetch_one(pool)
    .await?;
    let checkpoints: Vec<(String, uuid::Uuid, i64)> =
        sqlx::query_as("select projection, org_id, position from projection_checkpoints where org_id <> $1")
            .bind(uuid::Uuid::nil())
            .fetch_all(pool)
            .await?;
    let (stream, consumers) = match bus {
        Some(bus) if bus.is_connected() => jetstream(bus).await,
        _ => (None, Vec::new()),
    };
    let mut projections = Vec::new();
    for id in ProjectionId::ALL {
        let name = id.as_str();
        let mut mine: Vec<&Consumer> = consumers.iter().filter(|c| c.projection == *id).collect();
        mine.sort_by_key(|c| (c.partition.count, c.partition.index));
        let position_of = |partition: Partition| {
            checkpoints
                .iter()
                .filter(|(projection, org, _)| projection == name && partition.owns(*org))
                .map(|(_, _, position)| *position)
                .max()
        };
        if mine.is_empty() {
            // Never started (or NATS did not answer): everything in the stream is still to fold.
            projections.push(ProjectionPartition {
                projection: name,
                partition: "0/1".into(),
                consumer: None,
                position: position_of(Partition::WHOLE),
                stream_sequence: None,
                lag_events: stream.as_ref().map_or(0, |s| s.messages),
                lag_seconds: 0.0,
                last_progress_at: None,
                running: false,
                pending: 0,
                ack_pending: 0,
            });
        }
        for consumer in mine {
            projections.push(ProjectionPartition {
                projection: name,
                partition: format!("{}/{}", consumer.partition.index, consumer.partition.count),
                consumer: Some(consumer.name.clone()),
                position: position_of(consumer.partition),
                stream_sequence: Some(consumer.floor),
                lag_events: consumer.pending + consumer.ack_pending,
                lag_seconds: consumer.behind_since.map_or(0.0, |since| seconds_between(since, observed_at)),
                last_progress_at: consumer.last_ack,
                running: consumer.waiting > 0,
                pending: consumer.pending,
                ack_pending: consumer.ack_pending,
            });
        }
    }
    Ok(Status {
        observed_at,
        event_store: EventStore { head_position },
        followers,
        stream,
        projections,
        webhooks: WebhookQueue { pending, retrying },
    })
}

async fn follower(pool: &PgPool, name: &'static str, now: OffsetDateTime) -> Result<Follower, sqlx::Error> {
    let checkpoint = events::follower::load_checkpoint(pool, name).await?.key;
    // Committed rows only (below the snapshot horizon), in commit order, as the follower reads them.
    let (lag_events, oldest): (i64, Option<OffsetDateTime>) = sqlx::query_as(
        "select count(*), min(recorded_at) from (
             select recorded_at from events
             where (transaction_id, position) > ($1::int8::text::xid8, $2)
               and transaction_id < pg_snapshot_xmin(pg_current_snapshot())
             order by transaction_id, position
             limit $3
         ) behind",
    )
    .bind(checkpoint.transaction_id)
    .bind(checkpoint.position)
    .bind(LAG_COUNT_CAP)
    .fetch_one(pool)
    .await?;
    Ok(Follower {
        name,
        position: checkpoint.position,
        lag_events,
        lag_seconds: oldest.map_or(0.0, |oldest| seconds_between(oldest, now)),
    })
}

fn seconds_between(earlier: OffsetDateTime, later: OffsetDateTime) -> f64 {
    (later - earlier).as_seconds_f64().max(0.0)
}

/// One projection partition's durable consumer, as the server describes it.
struct Consumer {
    name: String,
    projection: ProjectionId,
    partition: Partition,
    floor: u64,
    pending: u64,
    ack_pending: u64,
    waiting: usize,
    last_ack: Option<OffsetDateTime>,
    /// Publication time of the first message past the acknowledged floor, when anything is pending.
    behind_since: Option<OffsetDateTime>,
}

/// Parses `<projection>-p<i>of<N>` (see `projections::runtime::consumer_name`).
fn parse_consumer_name(name: &str) -> Option<(ProjectionId, Partition)> {
    let (projection, partition) = name.rsplit_once("-p")?;
    let (index, count) = partition.split_once("of")?;
    let partition = Partition { index: index.parse().ok()?, count: count.parse().ok()? };
    Some((projection.parse().ok()?, partition))
}

async fn jetstream(bus: &Bus) -> (Option<StreamState>, Vec<Consumer>) {
    let Ok(mut stream) = bus.js.get_stream(bus.stream_name()).await else { return (None, Vec::new()) };
    let Ok(info) = stream.info().await.cloned() else { return (None, Vec::new()) };
    let state = StreamState {
        name: info.config.name.clone(),
        last_sequence: info.state.last_sequence,
        messages: info.state.messages,
    };
    let mut consumers = Vec::new();
    let mut listed = stream.consumers();
    while let Some(Ok(consumer)) = listed.next().await {
        let Some((projection, partition)) = parse_consumer_name(&consumer.name) else { continue };
        let floor = consumer.ack_floor.stream_sequence;
        let pending = consumer.num_pending;
        let ack_pending = consumer.num_ack_pending as u64;
        let behind_since = if pending + ack_pending > 0 {
            match stream.get_raw_message(floor + 1).await {
                Ok(message) => Some(message.time),
                Err(_) => consumer.ack_floor.last_active,
            }
        } else {
            None
        };
        consumers.push(Consumer {
            name: consumer.name.clone(),
            projection,
            partition,
            floor,
            pending,
            ack_pending,
            waiting: consumer.num_waiting,
            last_ack: consumer.ack_floor.last_active,
            behind_since,
        });
    }
    (Some(state), consumers)
}

/// The status as an operator's table.
pub fn table(status: &Status) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "event store head position {}", status.event_store.head_position);
    match &status.stream {
        Some(stream) => {
            let _ = writeln!(
                out,
                "stream {}: last sequence {}, {} messages",
                stream.name, stream.last_sequence, stream.messages
            );
        }
        None => {
            let _ = writeln!(out, "stream: NATS did not answer");
        }
    }
    let _ = writeln!(out, "\n{:<10} {:>12} {:>12} {:>12}", "FOLLOWER", "POSITION", "LAG EVENTS", "LAG SECONDS");
    for f in &status.followers {
        let _ = writeln!(out, "{:<10} {:>12} {:>12} {:>12.1}", f.name, f.position, f.lag_events, f.lag_seconds);
    }
    let _ = writeln!(
        out,
        "\n{:<22} {:<9} {:<8} {:>10} {:>10} {:>10} {:>11}  LAST PROGRESS",
        "PROJECTION", "PARTITION", "RUNNING", "POSITION", "SEQUENCE", "LAG EVENTS", "LAG SECONDS"
    );
    let dash = || "-".to_owned();
    for p in &status.projections {
        let _ = writeln!(
            out,
            "{:<22} {:<9} {:<8} {:>10} {:>10} {:>10} {:>11.1}  {}",
            p.projection,
            p.partition,
            if p.consumer.is_none() {
                "never"
            } else if p.running {
                "yes"
            } else {
                "no"
            },
            p.position.map_or_else(dash, |v| v.to_string()),
            p.stream_sequence.map_or_else(dash, |v| v.to_string()),
            p.lag_events,
            p.lag_seconds,
            p.last_progress_at
                .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
                .unwrap_or_else(dash),
        );
    }
    let _ = writeln!(
        out,
        "\nwebhook deliveries: {} pending, {} retrying",
        status.webhooks.pending, status.webhooks.retrying
    );
    out
}

/// Each projection's consumers by name, for readiness: whether a projector pulls from every one.
pub fn running_by_projection(status: &Status) -> HashMap<&'static str, bool> {
    let mut running: HashMap<&'static str, bool> = HashMap::new();
    for p in &status.projections {
        *running.entry(p.projection).or_insert(false) |= p.running;
    }
    running
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_names_read_back_as_projection_and_partition() {
        for id in ProjectionId::ALL {
            let partition = Partition { index: 1, count: 3 };
            let name = projections::runtime::consumer_name(*id, partition);
            assert_eq!(parse_consumer_name(&name), Some((*id, partition)), "{name}");
        }
        assert_eq!(parse_consumer_name("stranger"), None);
        assert_eq!(parse_consumer_name("nothing-p1ofx"), None);
    }
}
