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

/// A consumer delivered to within this long has a projector attached, even with no pull request
/// waiting at the moment (a projector working through a backlog has its requests answered at once).
/// Projectors' pull requests expire after 30 s.
pub const ATTACHED_WITHIN: time::Duration = time::Duration::seconds(35);

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
    /// The durable consumer's name, none when no projector ever started this projection (or NATS did
    /// not answer).
    pub consumer: Option<String>,
    /// Event-store position of the newest event applied for the partition's organizations (a
    /// rebuild's floor included).
    pub position: Option<i64>,
    /// Stream sequence up to which every message is acknowledged.
    pub stream_sequence: Option<u64>,
    /// Messages the consumer still has to deliver or see acknowledged (none: NATS did not answer).
    pub lag_events: Option<u64>,
    /// How long it has been behind: age of its oldest unacknowledged message (0 when caught up).
    pub lag_seconds: Option<f64>,
    /// When it last acknowledged a message, as the server saw it.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_progress_at: Option<OffsetDateTime>,
    /// Whether a projector is attached: a pull request waiting, or a delivery within the last
    /// [`ATTACHED_WITHIN`] (none: NATS did not answer).
    pub running: Option<bool>,
    /// Messages the server has yet to deliver (JetStream's `num_pending`).
    pub pending: Option<u64>,
    /// Messages delivered but not yet acknowledged (`num_ack_pending`).
    pub ack_pending: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WebhookQueue {
    /// Deliveries not attempted yet.
    pub pending: i64,
    /// Deliveries attempted, failed, and waiting for their next attempt.
    pub retrying: i64,
}

/// Reads the status. With NATS unreachable (or no bus, as in an operator command) the stream and every
/// figure that comes from JetStream are unknown (`None`); the database's are still there.
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
    let (stream, consumers) = match bus {
        Some(bus) if bus.is_connected() => jetstream(bus, observed_at).await,
        _ => (None, Vec::new()),
    };
    let mut counts: Vec<u32> = consumers.iter().map(|c| c.partition.count).collect();
    counts.push(1);
    counts.sort_unstable();
    counts.dedup();
    let positions = positions(pool, &counts).await?;
    let mut projections = Vec::new();
    for id in ProjectionId::ALL {
        let name = id.as_str();
        let mut mine: Vec<&Consumer> = consumers.iter().filter(|c| c.projection == id).collect();
        mine.sort_by_key(|c| (c.partition.count, c.partition.index));
        if mine.is_empty() {
            // Never started (everything in the stream is still to fold), or NATS did not answer.
            let known = stream.is_some();
            projections.push(ProjectionPartition {
                projection: name,
                partition: "0/1".into(),
                consumer: None,
                position: positions.of(name, Partition::WHOLE),
                stream_sequence: None,
                lag_events: stream.as_ref().map(|s| s.messages),
                lag_seconds: known.then_some(0.0),
                last_progress_at: None,
                running: known.then_some(false),
                pending: None,
                ack_pending: None,
            });
        }
        for consumer in mine {
            projections.push(ProjectionPartition {
                projection: name,
                partition: format!("{}/{}", consumer.partition.index, consumer.partition.count),
                consumer: Some(consumer.name.clone()),
                position: positions.of(name, consumer.partition),
                stream_sequence: Some(consumer.floor),
                lag_events: Some(consumer.pending + consumer.ack_pending),
                lag_seconds: Some(consumer.behind_since.map_or(0.0, |since| seconds_between(since, observed_at))),
                last_progress_at: consumer.last_ack,
                running: Some(consumer.attached),
                pending: Some(consumer.pending),
                ack_pending: Some(consumer.ack_pending),
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

/// Checkpoint positions: each projection's rebuild floor, and the newest checkpoint of the
/// organizations of each partition, for every partition count in use, aggregated in SQL. The hash is
/// `Partition::of`'s: the id's last eight bytes, big-endian and unsigned, modulo the count.
struct Positions {
    floors: HashMap<String, i64>,
    by_partition: HashMap<(String, u32, u32), i64>,
}

impl Positions {
    fn of(&self, projection: &str, partition: Partition) -> Option<i64> {
        let floor = self.floors.get(projection).copied();
        let owned = self.by_partition.get(&(projection.to_owned(), partition.count, partition.index)).copied();
        floor.max(owned)
    }
}

async fn positions(pool: &PgPool, counts: &[u32]) -> Result<Positions, sqlx::Error> {
    let floors: Vec<(String, i64)> = sqlx::query_as(
        "select projection, max(position) from projection_checkpoints where org_id = $1 group by projection",
    )
    .bind(uuid::Uuid::nil())
    .fetch_all(pool)
    .await?;
    let counts: Vec<i64> = counts.iter().map(|c| i64::from(*c)).collect();
    let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
        "with hashed as (
             select projection, position,
                    ('x' || encode(substring(uuid_send(org_id) from 9 for 8), 'hex'))::bit(64)::bigint as h
             from projection_checkpoints where org_id <> $1
         ), unsigned as (
             select projection, position,
                    case when h < 0 then h::numeric + 18446744073709551616 else h::numeric end as u
             from hashed
         )
         select projection, n, (u % n)::bigint, max(position)
         from unsigned cross join unnest($2::bigint[]) as counts(n)
         group by projection, n, u % n",
    )
    .bind(uuid::Uuid::nil())
    .bind(&counts)
    .fetch_all(pool)
    .await?;
    Ok(Positions {
        floors: floors.into_iter().collect(),
        by_partition: rows
            .into_iter()
            .map(|(projection, count, index, position)| ((projection, count as u32, index as u32), position))
            .collect(),
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
    attached: bool,
    last_ack: Option<OffsetDateTime>,
    /// Publication time of its oldest unacknowledged message, when anything is pending.
    behind_since: Option<OffsetDateTime>,
}

/// Parses `<projection>-p<i>of<N>` (see `projections::runtime::consumer_name`).
fn parse_consumer_name(name: &str) -> Option<(ProjectionId, Partition)> {
    let (projection, partition) = name.rsplit_once("-p")?;
    let (index, count) = partition.split_once("of")?;
    let partition = Partition { index: index.parse().ok()?, count: count.parse().ok()? };
    Some((projection.parse().ok()?, partition))
}

async fn jetstream(bus: &Bus, now: OffsetDateTime) -> (Option<StreamState>, Vec<Consumer>) {
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
            oldest_unacknowledged(&stream, &consumer.config, floor).await.or(consumer.ack_floor.last_active)
        } else {
            None
        };
        let recently = consumer.delivered.last_active.is_some_and(|at| now - at <= ATTACHED_WITHIN);
        consumers.push(Consumer {
            name: consumer.name.clone(),
            projection,
            partition,
            floor,
            pending,
            ack_pending,
            attached: consumer.num_waiting > 0 || recently,
            last_ack: consumer.ack_floor.last_active,
            behind_since,
        });
    }
    (Some(state), consumers)
}

/// When the consumer's first message past its acknowledged floor was published: the first message
/// after `floor` on each subject it filters (a projection takes only its aggregates' events), the
/// oldest of them.
async fn oldest_unacknowledged(
    stream: &async_nats::jetstream::stream::Stream,
    config: &async_nats::jetstream::consumer::Config,
    floor: u64,
) -> Option<OffsetDateTime> {
    let mut subjects = config.filter_subjects.clone();
    if !config.filter_subject.is_empty() {
        subjects.push(config.filter_subject.clone());
    }
    if subjects.is_empty() {
        return stream.get_raw_message(floor + 1).await.ok().map(|message| message.time);
    }
    let mut oldest: Option<OffsetDateTime> = None;
    for subject in subjects {
        let next = stream.raw_message_builder().sequence(floor + 1).next_by_subject(subject).send().await;
        if let Ok(message) = next {
            oldest = Some(oldest.map_or(message.time, |o| o.min(message.time)));
        }
    }
    oldest
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
            let _ = writeln!(out, "stream: NATS did not answer (JetStream figures unknown)");
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
        let running = match (p.running, &p.consumer) {
            (None, _) => "?",
            (Some(_), None) => "never",
            (Some(true), _) => "yes",
            (Some(false), _) => "no",
        };
        let _ = writeln!(
            out,
            "{:<22} {:<9} {:<8} {:>10} {:>10} {:>10} {:>11}  {}",
            p.projection,
            p.partition,
            running,
            p.position.map_or_else(dash, |v| v.to_string()),
            p.stream_sequence.map_or_else(dash, |v| v.to_string()),
            p.lag_events.map_or_else(dash, |v| v.to_string()),
            p.lag_seconds.map_or_else(dash, |v| format!("{v:.1}")),
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

/// The projections without a projector attached to every partition of their current layout (the
/// largest partition count with a projector attached; consumers an older layout left on the server do
/// not count). `None` when NATS did not answer.
pub fn unattached(status: &Status) -> Option<Vec<&'static str>> {
    status.stream.as_ref()?;
    let count_of = |p: &ProjectionPartition| p.partition.split_once('/').and_then(|(_, n)| n.parse::<usize>().ok());
    let mut missing = Vec::new();
    for id in ProjectionId::ALL {
        let mine: Vec<&ProjectionPartition> =
            status.projections.iter().filter(|p| p.projection == id.as_str() && p.consumer.is_some()).collect();
        let attached =
            |count: usize| mine.iter().filter(|p| count_of(p) == Some(count) && p.running == Some(true)).count();
        let layout = mine.iter().filter(|p| p.running == Some(true)).filter_map(|p| count_of(p)).max();
        if layout.is_none_or(|count| attached(count) != count) {
            missing.push(id.as_str());
        }
    }
    Some(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_names_read_back_as_projection_and_partition() {
        for id in ProjectionId::ALL {
            let partition = Partition { index: 1, count: 3 };
            let name = projections::runtime::consumer_name(id, partition);
            assert_eq!(parse_consumer_name(&name), Some((id, partition)), "{name}");
        }
        assert_eq!(parse_consumer_name("stranger"), None);
        assert_eq!(parse_consumer_name("nothing-p1ofx"), None);
    }

    fn partition(projection: &'static str, partition: &str, running: bool) -> ProjectionPartition {
        ProjectionPartition {
            projection,
            partition: partition.to_owned(),
            consumer: Some(format!("{projection}-{partition}")),
            position: None,
            stream_sequence: Some(0),
            lag_events: Some(0),
            lag_seconds: Some(0.0),
            last_progress_at: None,
            running: Some(running),
            pending: Some(0),
            ack_pending: Some(0),
        }
    }

    fn status_with(customers: Vec<ProjectionPartition>, nats: bool) -> Status {
        let mut projections: Vec<ProjectionPartition> = ProjectionId::ALL
            .iter()
            .filter(|id| **id != ProjectionId::Customers)
            .map(|id| partition(id.as_str(), "0/1", true))
            .collect();
        projections.extend(customers);
        Status {
            observed_at: OffsetDateTime::UNIX_EPOCH,
            event_store: EventStore { head_position: 0 },
            followers: Vec::new(),
            stream: nats.then(|| StreamState { name: "S".into(), last_sequence: 0, messages: 0 }),
            projections,
            webhooks: WebhookQueue { pending: 0, retrying: 0 },
        }
    }

    #[test]
    fn readiness_wants_every_partition_of_the_current_layout_attached() {
        let customers = "customers";
        // Both partitions of the two-way layout attached; the one-way layout's old consumer is not.
        let moved = status_with(
            vec![
                partition(customers, "0/1", false),
                partition(customers, "0/2", true),
                partition(customers, "1/2", true),
            ],
            true,
        );
        assert_eq!(unattached(&moved), Some(Vec::new()));
        // One of the two partitions has no projector: its organizations' writes would wait in vain.
        let half = status_with(vec![partition(customers, "0/2", true), partition(customers, "1/2", false)], true);
        assert_eq!(unattached(&half), Some(vec![customers]));
        let none = status_with(vec![partition(customers, "0/1", false)], true);
        assert_eq!(unattached(&none), Some(vec![customers]));
        // Without NATS nothing can be said.
        assert_eq!(unattached(&status_with(Vec::new(), false)), None);
    }
}
