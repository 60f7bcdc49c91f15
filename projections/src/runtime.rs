//! The projector runtime: one durable JetStream consumer per projection partition, batches applied in
//! one Postgres transaction together with the per-organization checkpoints (so a redelivered event has
//! no second effect), progress published after each batch.

use crate::progress::{LocalProgress, Progress};
use crate::{
    CacheKey, EventHead, Folds, Partition, Projection, ProjectionError, ProjectionId, RenderedFold, StreamType, Target,
};
use async_nats::jetstream::consumer::{self, PullConsumer};
use async_nats::jetstream::stream::Stream as JsStream;
use events::bus::{Bus, header_commit_key};
use events::{CommitKey, RecordedEvent};
use futures::{FutureExt, StreamExt};
use sqlx::{PgConnection, PgPool};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// Most events folded in one transaction.
pub const BATCH: usize = 1_000;
/// How often an idle projector repeats its progress, for gateways that started after the last batch.
const HEARTBEAT: Duration = Duration::from_secs(2);
/// Batches that wrote nothing announce their progress at most this often (the last one at the latest
/// this long after it): only writes ever wait on progress, and no write waits on events passed over.
const QUIET_PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// Messages are acknowledged at most this often, or after this many (well below the consumer's
/// `max_ack_pending`).
const ACK_EVERY: Duration = Duration::from_millis(100);
const ACK_EVERY_MESSAGES: usize = 2_000;

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

pub fn consumer_name(projection: ProjectionId, partition: Partition) -> String {
    format!("{projection}-p{}of{}", partition.index, partition.count)
}

/// What a projection's consumer asks the server for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerFilter {
    /// One subject: one aggregate's events, or every event.
    Subject(String),
    /// One subject per aggregate (a consumer's `filter_subjects`).
    Subjects(Vec<String>),
}

/// The subjects (`<prefix>.events.<org>.<aggregate>.<type>`) a projection folding `folds` subscribes to
/// on a server of `server_version`: exactly its aggregates', except for several aggregates on a server
/// older than NATS 2.10, which has no `filter_subjects` (it would ignore the field and deliver
/// everything). That consumer takes every event, and the projector passes over the others
/// client-side, undecoded, as it always checks each message against what the projection folds.
pub fn consumer_filter(folds: Folds, prefix: &str, server_version: &str) -> ConsumerFilter {
    let subject = |stream_type: &StreamType| format!("{prefix}.events.*.{}.>", stream_type.as_str());
    match folds {
        Folds::Only([only]) => ConsumerFilter::Subject(subject(only)),
        Folds::Only(several) if supports_filter_subjects(server_version) => {
            ConsumerFilter::Subjects(several.iter().map(subject).collect())
        }
        Folds::Only(_) | Folds::Every => ConsumerFilter::Subject(format!("{prefix}.events.>")),
    }
}

/// Whether a server reporting `version` in its INFO (`2.10.7`, `2.11.0-RC.1`) honours a consumer's
/// `filter_subjects`, which NATS added in 2.10. A version that cannot be read counts as older.
fn supports_filter_subjects(version: &str) -> bool {
    fn leading_number(part: Option<&str>) -> Option<u64> {
        let part = part?;
        let digits = part.find(|c: char| !c.is_ascii_digit()).map_or(part, |end| &part[..end]);
        digits.parse().ok()
    }
    let mut parts = version.trim().trim_start_matches('v').split('.');
    match (leading_number(parts.next()), leading_number(parts.next())) {
        (Some(major), Some(minor)) => (major, minor) >= (2, 10),
        _ => false,
    }
}

/// Runs one partition of a projection for ever, restarting from its durable consumer after errors.
/// Its progress goes to `local`'s listeners (a gateway in this process) first, then over the bus.
pub async fn run(pool: PgPool, bus: Bus, projection: Arc<dyn Projection>, partition: Partition, local: LocalProgress) {
    let mut backoff = Duration::from_millis(100);
    loop {
        match run_until_error(&pool, &bus, &local, projection.as_ref(), partition).await {
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
///
/// The new consumer's filter may differ from the old one's (a release changed what the projection
/// folds, or NATS was upgraded to a version with `filter_subjects`): the ack floor is a position in the
/// whole stream, so delivery still resumes right after it. Caveat: a projection that starts folding an
/// aggregate it did not fold before is never sent that aggregate's events at or below the floor (and its
/// checkpoints have moved past them anyway), so it needs a rebuild.
async fn reset_consumer(stream: &JsStream, name: &str, filter: ConsumerFilter) -> Result<PullConsumer, RunError> {
    let deliver_policy = match stream.get_consumer::<consumer::pull::Config>(name).await {
        Ok(existing) => {
            let info = existing.get_info().await.map_err(nats)?;
            let floor = info.ack_floor.stream_sequence;
            stream.delete_consumer(name).await.map_err(nats)?;
            consumer::DeliverPolicy::ByStartSequence { start_sequence: floor + 1 }
        }
        Err(_) => consumer::DeliverPolicy::All,
    };
    let (filter_subject, filter_subjects) = match filter {
        ConsumerFilter::Subject(subject) => (subject, Vec::new()),
        ConsumerFilter::Subjects(subjects) => (String::new(), subjects),
    };
    stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some(name.to_owned()),
            ack_policy: consumer::AckPolicy::All,
            ack_wait: Duration::from_secs(60),
            max_ack_pending: 20_000,
            deliver_policy,
            filter_subject,
            filter_subjects,
            ..Default::default()
        })
        .await
        .map_err(nats)
}

async fn run_until_error(
    pool: &PgPool,
    bus: &Bus,
    local: &LocalProgress,
    projection: &dyn Projection,
    partition: Partition,
) -> Result<(), RunError> {
    while !bus.is_connected() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stream = bus.ensure_event_stream().await.map_err(nats)?;
    let name = consumer_name(projection.id(), partition);
    let folds = projection.folds();
    // The version of the server this connection last heard from, which is the one that will get the
    // consumer: the loop re-creates it (and asks again) after any error, a reconnection included.
    let version = bus.client.server_info().version;
    let filter = consumer_filter(folds, bus.prefix(), &version);
    tracing::debug!(projection = projection.name(), ?filter, "subscribing");
    if let (Folds::Only(several), ConsumerFilter::Subject(_)) = (folds, &filter)
        && several.len() > 1
    {
        // Measured in BENCHMARKS.md ("Which NATS"): on such a server every write costs a delivery to each
        // projection of several aggregates, about a fifth of a customer create's throughput.
        tracing::warn!(
            projection = projection.name(),
            server = %version,
            "this NATS has no filter_subjects (2.10 or later): the projection receives every event and passes over the others"
        );
    }
    let consumer = reset_consumer(&stream, &name, filter).await?;
    // A connection of its own: batches follow each other without checking one out of the pool.
    let mut conn = pool.acquire().await?.detach();
    // Batches commit without waiting for the WAL flush: a message is acknowledged only once the flush
    // has passed its batch (see [`LazyAck`]), so a batch a crash takes back is simply delivered again.
    sqlx::raw_sql("set synchronous_commit = off").execute(&mut conn).await?;
    if let Some(fold) = projection.rendered() {
        // Rendered batches write their values as string literals, whose backslashes this setting keeps
        // as written.
        sqlx::raw_sql("set standard_conforming_strings = on").execute(&mut conn).await?;
        for statement in fold.prepare() {
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement)).execute(&mut conn).await?;
        }
    }
    let mut known = KnownCheckpoints::default();
    let partition_label = format!("{}/{}", partition.index, partition.count);
    let labels = [("projection", projection.name().to_owned()), ("partition", partition_label)];
    let applied_total = metrics::counter!("backoffice_projection_events_applied_total", &labels);
    let batch_duration = metrics::histogram!("backoffice_projection_batch_duration_seconds", &labels);
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
    let mut last_published = tokio::time::Instant::now();
    let mut unpublished = false;
    let mut acks = LazyAck::new();
    let linger = projection.linger();
    loop {
        let wait = if unpublished { QUIET_PROGRESS_EVERY.saturating_sub(last_published.elapsed()) } else { HEARTBEAT };
        let wait = acks.due_in().map_or(wait, |due| wait.min(due));
        let first = match tokio::time::timeout(wait, messages.next()).await {
            Err(_) => {
                acks.round(&mut conn).await?;
                if let Some(key) = last_key
                    && (unpublished || last_published.elapsed() >= HEARTBEAT)
                {
                    publish_progress(bus, local, projection.id(), partition, key, Vec::new(), false).await;
                    last_published = tokio::time::Instant::now();
                    unpublished = false;
                }
                continue;
            }
            Ok(None) => return Err(RunError::Nats("consumer stream ended".into())),
            Ok(Some(Err(error))) if error.kind() == consumer::pull::MessagesErrorKind::MissingHeartbeat => continue,
            Ok(Some(Err(error))) => return Err(nats(error)),
            Ok(Some(Ok(message))) => message,
        };
        let mut batch = vec![first];
        let lingers_until = tokio::time::Instant::now() + linger;
        while batch.len() < BATCH {
            let next = if linger.is_zero() {
                messages.next().now_or_never()
            } else {
                tokio::time::timeout_at(lingers_until, messages.next()).await.ok()
            };
            match next {
                Some(Some(Ok(message))) => batch.push(message),
                Some(Some(Err(error))) if error.kind() == consumer::pull::MessagesErrorKind::MissingHeartbeat => break,
                Some(Some(Err(error))) => return Err(nats(error)),
                _ => break,
            }
        }

        let mut wanted = Vec::new();
        let mut heads = Vec::new();
        let mut batch_key = None;
        for message in &batch {
            let key = header_commit_key(message.headers.as_ref())
                .ok_or_else(|| RunError::Nats(format!("message on {} has no commit key", message.subject)))?;
            batch_key = Some(key);
            // Subject: <prefix>.events.<org>.<stream type>.<event type>
            let mut parts = message.subject.strip_prefix(subject_prefix.as_str()).unwrap_or_default().split('.');
            let org = parts.next().and_then(|o| Uuid::parse_str(o).ok());
            let stream_type = parts.next().unwrap_or_default();
            if let Some(org_id) = org.filter(|o| partition.owns(*o))
                && folds.includes(stream_type)
            {
                wanted.push((message, key));
                heads.push(EventHead { org_id, stream_type });
            }
        }
        let started = std::time::Instant::now();
        let changed = !heads.is_empty() && !projection.passes_over(&mut conn, &heads).await?;
        let invalidate = if changed {
            let owned = wanted
                .iter()
                .map(|(message, key)| {
                    serde_json::from_slice::<RecordedEvent>(&message.payload)
                        .map_err(|e| ProjectionError::Undecodable { position: key.position, reason: e.to_string() })
                })
                .collect::<Result<Vec<_>, _>>()?;
            match projection.rendered() {
                Some(fold) => apply_rendered(&mut conn, projection.name(), fold, &owned, &mut known).await?,
                None => apply_batch(&mut conn, projection, &owned).await?,
            }
        } else {
            Vec::new()
        };
        if changed {
            applied_total.increment(heads.len() as u64);
            batch_duration.record(started.elapsed().as_secs_f64());
        }
        tracing::debug!(
            projection = projection.name(),
            messages = batch.len(),
            applied = if changed { heads.len() } else { 0 },
            elapsed_ms = started.elapsed().as_millis() as u64,
            "batch applied"
        );
        let key = batch_key.unwrap_or_default();
        last_key = Some(key);
        if changed || !invalidate.is_empty() || last_published.elapsed() >= QUIET_PROGRESS_EVERY {
            publish_progress(bus, local, projection.id(), partition, key, invalidate, changed).await;
            last_published = tokio::time::Instant::now();
            unpublished = false;
        } else {
            unpublished = true;
        }
        acks.taken(&mut conn, batch).await?;
    }
}

/// Acknowledges lazily, and only what Postgres has made durable. One ack covers every earlier message,
/// sent at most every [`ACK_EVERY`] or [`ACK_EVERY_MESSAGES`]; a redelivery after a restart is harmless
/// (the checkpoints pass over what was applied), and an ack per batch would cost a bus message per
/// batch.
///
/// Rendered batches commit without waiting for their WAL flush: their checkpoints move in the same
/// transaction, so a batch a crash takes back is simply applied again when it is redelivered. It is only
/// redelivered if it was never acknowledged, so each round notes the WAL insert position beside the last
/// message taken (every batch before it committed below that position) and acknowledges the message
/// once the WAL is flushed that far: at once when it already is, otherwise at a later round.
struct LazyAck {
    /// The last message taken since the last round.
    last: Option<async_nats::jetstream::Message>,
    /// A message waiting for the WAL flush to pass its position.
    noted: Option<(async_nats::jetstream::Message, i64)>,
    unacked: usize,
    since: tokio::time::Instant,
}

impl LazyAck {
    fn new() -> Self {
        Self { last: None, noted: None, unacked: 0, since: tokio::time::Instant::now() }
    }

    /// How long until the next round is due, when a message waits for one.
    fn due_in(&self) -> Option<Duration> {
        (self.last.is_some() || self.noted.is_some()).then(|| ACK_EVERY.saturating_sub(self.since.elapsed()))
    }

    /// Records a processed batch; runs a round when one is due.
    async fn taken(
        &mut self,
        conn: &mut PgConnection,
        mut batch: Vec<async_nats::jetstream::Message>,
    ) -> Result<(), RunError> {
        self.unacked += batch.len();
        if let Some(last) = batch.pop() {
            self.last = Some(last);
        }
        if self.unacked >= ACK_EVERY_MESSAGES || self.since.elapsed() >= ACK_EVERY {
            self.round(conn).await?;
        }
        Ok(())
    }

    /// Acknowledges the noted message if the WAL is flushed past it, and notes the last one taken.
    async fn round(&mut self, conn: &mut PgConnection) -> Result<(), RunError> {
        self.since = tokio::time::Instant::now();
        if self.last.is_none() && self.noted.is_none() {
            return Ok(());
        }
        let (flushed, inserted): (i64, i64) = sqlx::query_as(
            "select (pg_current_wal_flush_lsn() - '0/0')::int8, (pg_current_wal_insert_lsn() - '0/0')::int8",
        )
        .fetch_one(&mut *conn)
        .await?;
        if let Some((message, at)) = self.noted.take() {
            if at <= flushed {
                message.ack().await.map_err(nats)?;
            } else {
                self.noted = Some((message, at));
            }
        }
        if self.noted.is_none()
            && let Some(last) = self.last.take()
        {
            self.unacked = 0;
            if inserted <= flushed {
                last.ack().await.map_err(nats)?;
            } else {
                self.noted = Some((last, inserted));
            }
        }
        Ok(())
    }
}

async fn publish_progress(
    bus: &Bus,
    local: &LocalProgress,
    projection: ProjectionId,
    partition: Partition,
    key: CommitKey,
    invalidate: Vec<CacheKey>,
    changed: bool,
) {
    for mut progress in progress_messages(projection, partition, key, invalidate, changed) {
        local.deliver(&mut progress);
        let Ok(body) = serde_json::to_vec(&progress) else { continue };
        if let Err(error) = bus.client.publish(bus.progress_subject(projection.as_str()), body.into()).await {
            tracing::warn!(projection = projection.as_str(), %error, "could not publish progress");
        }
    }
}

/// Most invalidations one progress message carries: a large batch (a bulk adjustment touches
/// thousands of variants) would otherwise exceed the bus's message size and be lost with its key.
const INVALIDATIONS_PER_MESSAGE: usize = 2_000;

/// The progress messages announcing `key` with `invalidate` (and whether the batch wrote anything):
/// the invalidations in chunks, and the key only on the last message, so a reader woken by the key
/// finds every stale entry already dropped.
fn progress_messages(
    projection: ProjectionId,
    partition: Partition,
    key: CommitKey,
    mut invalidate: Vec<CacheKey>,
    changed: bool,
) -> Vec<Progress> {
    let mut messages = Vec::new();
    while invalidate.len() > INVALIDATIONS_PER_MESSAGE {
        let rest = invalidate.split_off(INVALIDATIONS_PER_MESSAGE);
        let chunk = std::mem::replace(&mut invalidate, rest);
        messages.push(Progress {
            projection,
            partition,
            key: CommitKey::ZERO,
            invalidate: chunk,
            changed,
            heard_by: None,
        });
    }
    messages.push(Progress { projection, partition, key, invalidate, changed, heard_by: None });
    messages
}

/// The checkpoints a projector last read or wrote, per organization (the nil organization holds the
/// rebuild floor). They only decide which events of a batch to render; the batch moves each checkpoint
/// only from where this copy says it is (`projection_batch_move`), so a stale copy costs a retry, never
/// a wrong fold.
#[derive(Default)]
struct KnownCheckpoints(HashMap<Uuid, CommitKey>);

/// The SQLSTATE `projection_batch_move` raises when the checkpoints moved under the projector.
const CHECKPOINTS_MOVED: &str = "BOCP1";

impl KnownCheckpoints {
    /// Reads the checkpoints of the organizations (and the floor) not known yet.
    async fn load_missing(
        &mut self,
        conn: &mut PgConnection,
        projection: &str,
        events: &[RecordedEvent],
    ) -> Result<(), sqlx::Error> {
        let mut missing = batch_organizations(events);
        missing.retain(|org| !self.0.contains_key(org));
        if missing.is_empty() {
            return Ok(());
        }
        let rows: Vec<(Uuid, i64, i64)> = sqlx::query_as(
            "select org_id, transaction_id::text::int8, position from projection_checkpoints
             where projection = $1 and org_id = any($2)",
        )
        .bind(projection)
        .bind(&missing)
        .fetch_all(conn)
        .await?;
        for org in missing {
            self.0.insert(org, CommitKey::ZERO);
        }
        for (org, transaction_id, position) in rows {
            self.0.insert(org, CommitKey::new(transaction_id, position));
        }
        Ok(())
    }

    fn get(&self, org: Uuid) -> CommitKey {
        self.0.get(&org).copied().unwrap_or_default()
    }
}

/// The organizations of a batch, and the nil organization (the rebuild floor), sorted.
fn batch_organizations(events: &[RecordedEvent]) -> Vec<Uuid> {
    let mut orgs: Vec<Uuid> = events.iter().map(|e| e.org_id).chain([Uuid::nil()]).collect();
    orgs.sort_unstable();
    orgs.dedup();
    orgs
}

/// The events above both the floor and their organization's checkpoint in `checkpoints`: the batch
/// itself when all are (a redelivery is rare, and a copy of every event's payload was a measurable share
/// of a projector's CPU), a copy of those events otherwise.
fn unapplied<'e>(events: &'e [RecordedEvent], checkpoints: &HashMap<Uuid, CommitKey>) -> Cow<'e, [RecordedEvent]> {
    let at = |org: &Uuid| checkpoints.get(org).copied().unwrap_or_default();
    let floor = at(&Uuid::nil());
    let fresh = |e: &RecordedEvent| e.key() > floor && e.key() > at(&e.org_id);
    if events.iter().all(fresh) {
        Cow::Borrowed(events)
    } else {
        Cow::Owned(events.iter().filter(|e| fresh(e)).cloned().collect())
    }
}

/// Each organization's last event key in a batch (in commit order): where its checkpoint moves to.
fn last_keys(events: &[RecordedEvent]) -> Vec<(Uuid, CommitKey)> {
    let mut last: HashMap<Uuid, CommitKey> = HashMap::new();
    for event in events {
        last.insert(event.org_id, event.key());
    }
    last.into_iter().collect()
}

/// `'{a,b}'::type[]` for values whose text form needs no quoting (ids and integers).
fn array_literal<T: std::fmt::Display>(values: impl Iterator<Item = T>, sql_type: &str) -> String {
    let items: Vec<String> = values.map(|v| v.to_string()).collect();
    format!("'{{{}}}'::{sql_type}[]", items.join(","))
}

/// The arguments `(projection, orgs, transaction ids, positions)` of the batch functions.
fn checkpoint_arguments(projection: &str, checkpoints: &[(Uuid, CommitKey)]) -> String {
    format!(
        "{}, {}, {}, {}",
        crate::sql_literal(projection),
        array_literal(checkpoints.iter().map(|(org, _)| org), "uuid"),
        array_literal(checkpoints.iter().map(|(_, key)| key.transaction_id), "xid8"),
        array_literal(checkpoints.iter().map(|(_, key)| key.position), "bigint"),
    )
}

/// Applies a batch through the projection's rendered fold: transaction, the projection's shared lock,
/// fold, and the checked checkpoint moves, in one simple query. When the checkpoints moved under it (a rebuild swapped the
/// tables, another instance applied events), it reloads them and tries once more.
async fn apply_rendered(
    conn: &mut PgConnection,
    projection: &str,
    fold: &dyn RenderedFold,
    events: &[RecordedEvent],
    known: &mut KnownCheckpoints,
) -> Result<Vec<CacheKey>, RunError> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        known.load_missing(conn, projection, events).await?;
        let fresh = unapplied(events, &known.0);
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let rendered = fold.render(&fresh)?;
        let moves: Vec<(Uuid, CommitKey, CommitKey)> =
            last_keys(&fresh).into_iter().map(|(org, to)| (org, known.get(org), to)).collect();
        let floor = known.get(Uuid::nil());
        let sql = format!(
            "begin;
             {};
             {};
             select projection_batch_move({}, '{}'::xid8, {}, {}, {}, {}, {}, {});
             commit",
            shared_lock_statement(projection),
            rendered.sql,
            crate::sql_literal(projection),
            floor.transaction_id,
            floor.position,
            array_literal(moves.iter().map(|(org, _, _)| org), "uuid"),
            array_literal(moves.iter().map(|(_, from, _)| from.transaction_id), "xid8"),
            array_literal(moves.iter().map(|(_, from, _)| from.position), "bigint"),
            array_literal(moves.iter().map(|(_, _, to)| to.transaction_id), "xid8"),
            array_literal(moves.iter().map(|(_, _, to)| to.position), "bigint"),
        );
        match sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut *conn).await {
            Ok(_) => {
                known.0.extend(moves.into_iter().map(|(org, _, to)| (org, to)));
                return Ok(rendered.invalidate);
            }
            Err(error) => {
                // Leave no failed transaction open on a connection that will be reused.
                let _ = sqlx::raw_sql("rollback").execute(&mut *conn).await;
                let checkpoints_moved = matches!(&error, sqlx::Error::Database(db)
                    if db.code().as_deref() == Some(CHECKPOINTS_MOVED));
                if !checkpoints_moved || attempts > 1 {
                    return Err(error.into());
                }
                tracing::info!(projection, "checkpoints moved under the projector; reloading them");
                known.0.clear();
            }
        }
    }
}

/// [`lock_projection`]'s shared lock as a statement of a simple query (same key).
fn shared_lock_statement(projection: &str) -> String {
    format!(
        "select pg_advisory_xact_lock_shared(hashtextextended({}, 0))",
        crate::sql_literal(&format!("projection {projection}"))
    )
}

/// Takes the projection's shared lock; a rebuild's swap takes it exclusively. Every batch takes it
/// before it touches a read table; [`shared_lock_statement`] is the same lock for simple queries.
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
///
/// The statements around the projection's own are sent as multi-statement simple queries (three round
/// trips per batch in all); the values inlined there are ids and integers this code formats itself.
pub async fn apply_batch(
    conn: &mut PgConnection,
    projection: &dyn Projection,
    events: &[RecordedEvent],
) -> Result<Vec<CacheKey>, RunError> {
    let result = apply_batch_inner(conn, projection, events).await;
    if result.is_err() {
        // Leave no transaction open on a connection that will be reused.
        let _ = sqlx::raw_sql("rollback").execute(&mut *conn).await;
    }
    result
}

async fn apply_batch_inner(
    conn: &mut PgConnection,
    projection: &dyn Projection,
    events: &[RecordedEvent],
) -> Result<Vec<CacheKey>, RunError> {
    use sqlx::Row;
    let name = projection.name();
    let org_list: Vec<String> = batch_organizations(events).iter().map(|o| format!("'{o}'")).collect();
    let begin = format!(
        "begin;
         {};
         select org_id, transaction_id::text::int8 as transaction_id, position from projection_checkpoints
         where projection = '{name}' and org_id in ({}) for update",
        shared_lock_statement(name),
        org_list.join(",")
    );
    let rows = sqlx::raw_sql(sqlx::AssertSqlSafe(begin)).fetch_all(&mut *conn).await?;
    let mut applied: HashMap<Uuid, CommitKey> = HashMap::new();
    for row in rows.iter().filter(|r| r.len() == 3) {
        let key = CommitKey::new(row.try_get("transaction_id")?, row.try_get("position")?);
        applied.insert(row.try_get("org_id")?, key);
    }
    let fresh = unapplied(events, &applied);
    if fresh.is_empty() {
        sqlx::raw_sql("commit").execute(&mut *conn).await?;
        return Ok(Vec::new());
    }
    let invalidate = projection.apply(&mut *conn, Target::Live, &fresh).await?;
    let finish = format!("select projection_batch_end({}); commit", checkpoint_arguments(name, &last_keys(&fresh)));
    sqlx::raw_sql(sqlx::AssertSqlSafe(finish)).execute(&mut *conn).await?;
    Ok(invalidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_invalidations_are_split_and_the_key_comes_last() {
        let key = CommitKey { position: 42, transaction_id: 7 };
        let keys: Vec<CacheKey> = (0..4_500)
            .map(|_| CacheKey { resource: crate::CacheResource::Product, org_id: Uuid::now_v7(), id: Uuid::now_v7() })
            .collect();
        let messages = progress_messages(ProjectionId::Products, Partition::WHOLE, key, keys.clone(), true);
        assert_eq!(messages.len(), 3);
        assert!(messages.iter().all(|m| m.changed), "every chunk says the batch wrote");
        assert!(messages[..2].iter().all(|m| m.key == CommitKey::ZERO), "the key waits for the last message");
        assert_eq!(messages[2].key, key);
        let carried: Vec<CacheKey> = messages.iter().flat_map(|m| m.invalidate.clone()).collect();
        assert_eq!(carried, keys, "every invalidation, in order");
        for message in &messages {
            assert!(serde_json::to_vec(message).expect("json").len() < 512 * 1024, "well under the bus limit");
        }
        assert_eq!(progress_messages(ProjectionId::Products, Partition::WHOLE, key, Vec::new(), false).len(), 1);
    }

    #[test]
    fn several_subjects_are_filtered_by_the_server_from_nats_2_10_on() {
        for old in ["2.9.10", "2.9.25", "1.4.1", "2.2", "", "2", "nats", "x.10.0"] {
            assert!(!supports_filter_subjects(old), "{old:?}");
        }
        for new in ["2.10.0", "2.10.24", "2.11.0-RC.1", "v2.12.1", "3.0.0", "2.10"] {
            assert!(supports_filter_subjects(new), "{new:?}");
        }
    }

    #[test]
    fn a_consumer_asks_for_exactly_the_aggregates_folded_where_the_server_can_filter_them() {
        use events::catalogue::{CustomerEvent, SupplierEvent};
        const ONE: Folds = Folds::Only(&[StreamType::of::<CustomerEvent>()]);
        const TWO: Folds = Folds::Only(&[StreamType::of::<CustomerEvent>(), StreamType::of::<SupplierEvent>()]);
        let one = ConsumerFilter::Subject("bo.events.*.customer.>".into());
        let every = ConsumerFilter::Subject("bo.events.>".into());
        let two = ConsumerFilter::Subjects(vec!["bo.events.*.customer.>".into(), "bo.events.*.supplier.>".into()]);
        for version in ["2.9.10", "2.10.0"] {
            assert_eq!(consumer_filter(ONE, "bo", version), one, "one aggregate on {version}");
            assert_eq!(consumer_filter(Folds::Every, "bo", version), every, "every aggregate on {version}");
        }
        assert_eq!(consumer_filter(TWO, "bo", "2.9.10"), every, "the projector passes over the rest");
        assert_eq!(consumer_filter(TWO, "bo", "2.10.0"), two);
    }
}
