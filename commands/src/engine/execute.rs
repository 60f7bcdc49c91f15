//! Running one decision against one aggregate instance: the connection a command runs on, where its
//! events go, loading a stream, deciding and appending with optimistic concurrency, and the small
//! lookups several domains share.

use crate::aggregate::{Aggregate, Rejection};
use crate::engine::append::Appender;
use crate::reply::CommandReply;
use crate::validate::FieldError;
use events::store::{self, AppendError, AppendRequest, Appended, StreamRef};
use events::{CommitKey, EventPayload, Metadata, RecordedEvent};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

/// How many times a command is re-decided after losing an optimistic-concurrency race.
pub(crate) const CONFLICT_RETRIES: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error("the outcome could not be stored: {0}")]
    Storage(#[from] sqlx::Error),
    #[error("stored events of stream {0} could not be decoded: {1}")]
    Corrupt(Uuid, String),
    #[error("gave up after repeated concurrent updates of stream {0}")]
    Contended(Uuid),
    /// A decided event or the reply did not encode as JSON: nothing is written.
    #[error("the command's events or reply could not be encoded: {0}")]
    Unencodable(#[from] serde_json::Error),
}

/// The result of a command that was accepted.
#[derive(Debug, Clone)]
pub struct Executed<A> {
    pub state: A,
    pub commit: Option<CommitKey>,
    pub created: bool,
}

/// Where decided events go: the group appender (each command its own statement, committed at once), or
/// the caller's open transaction (committed with whatever else the caller writes).
pub enum Sink<'a> {
    Group(&'a Appender),
    Transaction,
}

/// The connection a command runs on: the caller's open transaction, or one taken from the pool only
/// when the command first needs it. A creation that checks nothing goes straight to the group appender
/// and never holds a pool connection (whose every release costs a round trip to the server).
pub enum Conn<'a> {
    Lazy(&'a PgPool, Option<sqlx::pool::PoolConnection<sqlx::Postgres>>),
    Open(&'a mut PgConnection),
}

impl Conn<'_> {
    pub async fn get(&mut self) -> Result<&mut PgConnection, sqlx::Error> {
        match self {
            Conn::Open(conn) => Ok(conn),
            Conn::Lazy(pool, slot) => {
                if slot.is_none() {
                    *slot = Some(pool.acquire().await?);
                }
                slot.as_deref_mut().ok_or(sqlx::Error::PoolClosed)
            }
        }
    }
}

/// Loads one aggregate instance of this organization (a foreign or unknown id loads as `None`).
pub async fn load<A>(conn: &mut PgConnection, org_id: Uuid, stream_id: Uuid) -> Result<(Option<A>, i32), ExecuteError>
where
    A: Aggregate + WithId,
{
    let stored = store::load_stream(conn, org_id, stream_id).await?;
    fold_stream(stream_id, &stored)
}

/// One aggregate instance from its stream's events, loaded in version order (none: `None`); a stream
/// of another type is not this aggregate (`None`).
pub fn fold_stream<A>(stream_id: Uuid, stored: &[RecordedEvent]) -> Result<(Option<A>, i32), ExecuteError>
where
    A: Aggregate + WithId,
{
    let version = stored.last().map(|e| e.version).unwrap_or(0);
    let mut state: Option<A> = None;
    for event in stored {
        if event.stream_type != A::Event::STREAM_TYPE {
            return Ok((None, version));
        }
        let decoded = A::Event::decode(&event.event_type, event.schema_version, event.data.clone())
            .map_err(|e| ExecuteError::Corrupt(stream_id, e.to_string()))?;
        state = A::evolve(state, &decoded, event.recorded_at);
    }
    Ok((state.map(|s| s.with_id(stream_id)), version))
}

/// Runs a command against one aggregate instance: load, decide, append with optimistic concurrency.
/// Nothing is half-written: the events of one command are appended by one statement.
///
/// `is_creation` skips loading the stream for commands that start a new one with a fresh id.
#[allow(clippy::too_many_arguments, reason = "one call site per sink; a parameter struct would only rename them")]
pub async fn execute<A>(
    conn: &mut Conn<'_>,
    sink: &Sink<'_>,
    org_id: Uuid,
    stream_id: Uuid,
    command: &A::Command,
    is_creation: bool,
    metadata: &Metadata,
) -> Result<Executed<A>, ExecuteError>
where
    A: Aggregate + WithId,
{
    for _ in 0..CONFLICT_RETRIES {
        let (state, version) =
            if is_creation { (None, 0) } else { load::<A>(conn.get().await?, org_id, stream_id).await? };
        let decided = A::decide(state.as_ref(), command)?;
        if decided.is_empty() {
            let state = state.ok_or_else(|| Rejection::not_found(A::Event::STREAM_TYPE))?;
            return Ok(Executed { state, commit: None, created: false });
        }
        let new_events: Vec<_> = decided.iter().map(EventPayload::to_new_event).collect::<Result<_, _>>()?;
        let stream = StreamRef { org_id, stream_type: A::Event::STREAM_TYPE, stream_id, expected_version: version };
        let request = AppendRequest { stream, events: new_events, metadata: metadata.clone() };
        let mut requests = vec![request];
        requests.extend(A::FollowUps::follow_ups(conn, org_id, stream_id, &decided, metadata).await?);
        let appended = match sink {
            Sink::Group(appender) => super::observe::appending(appender.append(requests)).await,
            Sink::Transaction => super::observe::appending(store::append_many(conn.get().await?, &requests)).await,
        }
        .and_then(|all| {
            // The write is readable once the last of its events (follow-ups included) is.
            let main = all.first().copied().ok_or(AppendError::Database(sqlx::Error::RowNotFound))?;
            let last = all.iter().map(|a| a.key).max().unwrap_or(main.key);
            Ok(Appended { key: last, ..main })
        });
        match appended {
            Ok(appended) => {
                let created = state.is_none();
                let mut next = state;
                for event in &decided {
                    next = A::evolve(next, event, appended.recorded_at);
                }
                let state = next.ok_or_else(|| Rejection::not_found(A::Event::STREAM_TYPE))?.with_id(stream_id);
                return Ok(Executed { state, commit: Some(appended.key), created });
            }
            Err(AppendError::Conflict { .. }) if is_creation => {
                return Err(Rejection::conflict("ALREADY_EXISTS", "a resource with this id already exists").into());
            }
            // In a transaction the failed statement aborted it: the caller starts over.
            Err(AppendError::Conflict { .. }) if matches!(sink, Sink::Transaction) => {
                return Err(ExecuteError::Contended(stream_id));
            }
            Err(AppendError::Conflict { .. }) => {
                super::observe::retried();
                continue;
            }
            Err(AppendError::Database(e)) => return Err(e.into()),
        }
    }
    Err(ExecuteError::Contended(stream_id))
}

/// What the worker needs of an aggregate beyond deciding: its id comes from the stream it lives in,
/// and a decision may require events in other streams, appended atomically with its own.
pub trait WithId: Aggregate {
    /// The appends to other streams a decision brings ([`NoFollowUps`] for most aggregates).
    type FollowUps: FollowUps<Self>;

    fn with_id(self, id: Uuid) -> Self;
}

/// Appends to other streams that must accompany the events an aggregate `A` decided, in the same
/// statement as its own.
pub trait FollowUps<A: Aggregate> {
    fn follow_ups(
        conn: &mut Conn<'_>,
        org_id: Uuid,
        stream_id: Uuid,
        decided: &[A::Event],
        metadata: &Metadata,
    ) -> impl std::future::Future<Output = Result<Vec<AppendRequest>, ExecuteError>> + Send;
}

/// A decision that touches no other stream.
pub struct NoFollowUps;

impl<A: Aggregate> FollowUps<A> for NoFollowUps
where
    A::Event: Sync,
{
    async fn follow_ups(
        _: &mut Conn<'_>,
        _: Uuid,
        _: Uuid,
        _: &[A::Event],
        _: &Metadata,
    ) -> Result<Vec<AppendRequest>, ExecuteError> {
        Ok(Vec::new())
    }
}

/// The reply to an accepted command: its aggregate's state after it.
pub fn accepted<A: Serialize>(executed: Executed<A>) -> Result<CommandReply, ExecuteError> {
    Ok(CommandReply::accepted(executed.commit, executed.created, &executed.state, Vec::new())?)
}

/// Appends events to several streams in one statement inside the caller's transaction (all or none);
/// the commit key of the last, if any. A version conflict asks the caller to start over.
pub async fn append_together(
    conn: &mut PgConnection,
    requests: &[AppendRequest],
    operation: Uuid,
) -> Result<Option<CommitKey>, ExecuteError> {
    Ok(append_typed(conn, requests, operation).await?.key)
}

/// What [`append_typed`] committed.
pub struct Committed {
    /// The commit key of the last event, if any.
    pub key: Option<CommitKey>,
    /// The last key of each stream type written.
    pub keys: Vec<crate::reply::StreamKey>,
    /// When the events were recorded (the transaction's start), as reads show them: a write's answer
    /// and its replay carry this time, not the clock after the append (nothing appended: the clock).
    pub recorded_at: OffsetDateTime,
}

/// [`append_together`], also answering the last key of each stream type written: a command writing
/// several types replies with them ([`crate::reply::StreamKey`]) so the gateway waits on each
/// projection for the events it folds.
pub async fn append_typed(
    conn: &mut PgConnection,
    requests: &[AppendRequest],
    operation: Uuid,
) -> Result<Committed, ExecuteError> {
    if requests.is_empty() {
        return Ok(Committed { key: None, keys: Vec::new(), recorded_at: OffsetDateTime::now_utc() });
    }
    match super::observe::appending(store::append_many(conn, requests)).await {
        Ok(appended) => {
            let mut keys: Vec<crate::reply::StreamKey> = Vec::new();
            for (request, done) in requests.iter().zip(&appended) {
                let stream_type = request.stream.stream_type;
                match keys.iter_mut().find(|k| k.stream_type == stream_type) {
                    Some(k) => k.key = k.key.max(done.key),
                    None => keys.push(crate::reply::StreamKey { stream_type: stream_type.to_owned(), key: done.key }),
                }
            }
            let key = appended.iter().map(|a| a.key).max();
            let recorded_at = appended.first().map_or_else(OffsetDateTime::now_utc, |a| a.recorded_at);
            Ok(Committed { key, keys, recorded_at })
        }
        Err(AppendError::Conflict { .. }) => Err(ExecuteError::Contended(operation)),
        Err(AppendError::Database(e)) => Err(e.into()),
    }
}

/// Whether another stream of `stream_type` is named `name` (case-insensitively) by the latest of its
/// `naming` events (the events that carry a `name`).
pub async fn name_taken(
    conn: &mut PgConnection,
    org_id: Uuid,
    stream_type: &str,
    naming: &[&str],
    name: &str,
    except: Uuid,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "select exists(select 1 from (select distinct on (stream_id) stream_id, data->>'name' as name
                                      from events where org_id = $1 and stream_type = $2 and event_type = any($3)
                                      order by stream_id, version desc) latest
                       where lower(name) = lower($4) and stream_id <> $5)",
    )
    .bind(org_id)
    .bind(stream_type)
    .bind(naming)
    .bind(name)
    .bind(except)
    .fetch_one(conn)
    .await
}

/// A rejection naming every offending field, or nothing when there are none.
pub fn reject_fields(errors: Vec<FieldError>) -> Result<(), ExecuteError> {
    Ok(crate::aggregate::reject_fields(errors)?)
}
