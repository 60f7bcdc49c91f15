//! Gap-free reads of the event store in commit order, checkpoints of the followers that use them, the
//! settled position an export pages by, and the leadership lock that keeps each follower
//! single-instance per database.
//!
//! Transactions commit out of order, so "every position below N" is not a stable set while writers
//! run. A follower only reads rows whose transaction id is below the xmin of the current snapshot
//! (every such transaction has finished), ordered by `(transaction_id, position)`. A transaction
//! still running holds the horizon back; nothing behind it can be skipped.

use crate::envelope::{CommitKey, RecordedEvent};
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection, PgPool, Row};
use std::time::Duration;
use uuid::Uuid;

/// The columns of a stored event, read from `events e` (see [`event_from_row`]).
pub const EVENT_COLUMNS: &str = "e.position, e.transaction_id::text::int8 as transaction_id, e.org_id, \
     e.stream_type, e.stream_id, e.version, e.event_id, e.event_type, e.schema_version, e.data, e.metadata, \
     e.recorded_at";

/// An event from a row holding [`EVENT_COLUMNS`].
pub fn event_from_row(row: &PgRow) -> Result<RecordedEvent, sqlx::Error> {
    RecordedEvent::from_row(row)
}

/// The rows (with `columns` of `events e`) committed after `after` in commit order, at most `limit`,
/// never skipping one that commits later (see the module comment).
async fn committed_rows_after<'c, E>(
    executor: E,
    columns: &str,
    after: CommitKey,
    limit: i64,
) -> Result<Vec<PgRow>, sqlx::Error>
where
    E: sqlx::Executor<'c, Database = sqlx::Postgres>,
{
    let sql = format!(
        "select {columns} from events e
         where (e.transaction_id, e.position) > ($1::int8::text::xid8, $2)
           and e.transaction_id < pg_snapshot_xmin(pg_current_snapshot())
         order by e.transaction_id, e.position
         limit $3"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(after.transaction_id)
        .bind(after.position)
        .bind(limit)
        .fetch_all(executor)
        .await
}

/// [`read_committed_after`], as rows not yet decoded (see [`event_from_row`]), for callers that decode
/// them off the async runtime.
pub(crate) async fn read_committed_rows_after(
    conn: &mut PgConnection,
    after: CommitKey,
    limit: i64,
) -> Result<Vec<PgRow>, sqlx::Error> {
    committed_rows_after(conn, EVENT_COLUMNS, after, limit).await
}

/// Committed events after `after` in commit order, at most `limit`, never skipping one that commits
/// later (see the module comment).
pub async fn read_committed_after<'c, E>(
    executor: E,
    after: CommitKey,
    limit: i64,
) -> Result<Vec<RecordedEvent>, sqlx::Error>
where
    E: sqlx::Executor<'c, Database = sqlx::Postgres>,
{
    let rows = committed_rows_after(executor, EVENT_COLUMNS, after, limit).await?;
    rows.iter().map(event_from_row).collect()
}

/// An event as the relay publishes it: what the subject and headers need, and the bus payload (the
/// JSON form of [`RecordedEvent`]) written straight from the stored text, never decoded.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub key: CommitKey,
    pub event_id: Uuid,
    pub org_id: Uuid,
    pub stream_type: String,
    pub event_type: String,
    pub payload: Vec<u8>,
}

/// Committed events after `after` in commit order, at most `limit`, as bus payloads (same order and
/// horizon as [`read_committed_after`]).
pub async fn read_outgoing_after(
    conn: &mut PgConnection,
    after: CommitKey,
    limit: i64,
) -> Result<Vec<Outgoing>, sqlx::Error> {
    // The stored JSON as text: copied into the payload without being parsed.
    const COLUMNS: &str = "e.position, e.transaction_id::text::int8 as transaction_id, e.org_id, e.stream_type, \
         e.stream_id, e.version, e.event_id, e.event_type, e.schema_version, e.data::text as data, \
         e.metadata::text as metadata, e.recorded_at";
    let rows = committed_rows_after(conn, COLUMNS, after, limit).await?;
    rows.iter().map(outgoing_from_row).collect()
}

fn outgoing_from_row(row: &PgRow) -> Result<Outgoing, sqlx::Error> {
    let key = CommitKey::new(row.try_get("transaction_id")?, row.try_get("position")?);
    let event_id: Uuid = row.try_get("event_id")?;
    let org_id: Uuid = row.try_get("org_id")?;
    let stream_type: String = row.try_get("stream_type")?;
    let event_type: String = row.try_get("event_type")?;
    let stream_id: Uuid = row.try_get("stream_id")?;
    let version: i32 = row.try_get("version")?;
    let schema_version: i32 = row.try_get("schema_version")?;
    let data: &str = row.try_get("data")?;
    let metadata: &str = row.try_get("metadata")?;
    let recorded_at: time::OffsetDateTime = row.try_get("recorded_at")?;
    let payload = envelope_payload(
        &RawEnvelope {
            key,
            org_id,
            stream_type: &stream_type,
            stream_id,
            version,
            event_id,
            event_type: &event_type,
            schema_version,
            recorded_at,
        },
        data,
        metadata,
    )
    .map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
    Ok(Outgoing { key, event_id, org_id, stream_type, event_type, payload })
}

/// The envelope fields of a stored event, for [`envelope_payload`].
pub(crate) struct RawEnvelope<'a> {
    pub key: CommitKey,
    pub org_id: Uuid,
    pub stream_type: &'a str,
    pub stream_id: Uuid,
    pub version: i32,
    pub event_id: Uuid,
    pub event_type: &'a str,
    pub schema_version: i32,
    pub recorded_at: time::OffsetDateTime,
}

/// The JSON of [`RecordedEvent`] with `data` and `metadata` copied in as stored (the `json` column
/// guarantees they are valid JSON), so publishing never builds a value tree.
pub(crate) fn envelope_payload(
    envelope: &RawEnvelope<'_>,
    data: &str,
    metadata: &str,
) -> Result<Vec<u8>, serde_json::Error> {
    use std::io::Write;
    let recorded_at = envelope
        .recorded_at
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(|e| <serde_json::Error as serde::ser::Error>::custom(e.to_string()))?;
    let mut out = Vec::with_capacity(data.len() + metadata.len() + 384);
    let io = |e: std::io::Error| serde_json::Error::io(e);
    write!(
        out,
        r#"{{"position":{},"transaction_id":{},"org_id":"{}","stream_type":"#,
        envelope.key.position, envelope.key.transaction_id, envelope.org_id
    )
    .map_err(io)?;
    serde_json::to_writer(&mut out, envelope.stream_type)?;
    write!(
        out,
        r#","stream_id":"{}","version":{},"event_id":"{}","event_type":"#,
        envelope.stream_id, envelope.version, envelope.event_id
    )
    .map_err(io)?;
    serde_json::to_writer(&mut out, envelope.event_type)?;
    write!(out, r#","schema_version":{},"data":{data},"metadata":{metadata},"recorded_at":"#, envelope.schema_version)
        .map_err(io)?;
    serde_json::to_writer(&mut out, &recorded_at)?;
    out.push(b'}');
    Ok(out)
}

/// The commit-order key below which every event is committed and visible right now.
pub async fn committed_horizon(pool: &PgPool) -> Result<CommitKey, sqlx::Error> {
    let key: Option<(i64, i64)> = sqlx::query_as(
        "select transaction_id::text::int8, position from events
         where transaction_id < pg_snapshot_xmin(pg_current_snapshot())
         order by transaction_id desc, position desc limit 1",
    )
    .fetch_optional(pool)
    .await?;
    Ok(key.map(|(t, p)| CommitKey::new(t, p)).unwrap_or(CommitKey::ZERO))
}

/// How often [`settled_position`] looks again at the writers it waits for.
const SETTLE_POLL: Duration = Duration::from_millis(20);

/// The highest position at or below which the store is settled: every event that will ever hold such a
/// position is committed, and visible to any statement that starts after this returns. An export pages
/// by position, which commit order does not follow, so it reads up to this and the next one goes on
/// from the position after it.
///
/// Every position up to the highest one visible now was taken before that event committed. A writer
/// holds its lock on `events` from before it takes a position until its transaction ends, so the
/// writers holding that lock a moment later are the only ones that can still add an event below it:
/// this waits (polling) until each of them has ended, and tells `on_wait` how many there are first.
/// Positions come from the table's identity sequence, which caches one value: taken in order.
pub async fn settled_position(pool: &PgPool, on_wait: impl FnOnce(usize)) -> Result<i64, sqlx::Error> {
    let highest: i64 = sqlx::query_scalar("select coalesce(max(position), 0) from events").fetch_one(pool).await?;
    // Prepared transactions have no pid, hence `is distinct from`.
    let writers: Vec<String> = sqlx::query_scalar(
        "select distinct virtualtransaction from pg_locks
         where locktype = 'relation' and mode = 'RowExclusiveLock' and granted
           and database = (select oid from pg_database where datname = current_database())
           and relation = 'events'::regclass
           and virtualtransaction is not null
           and pid is distinct from pg_backend_pid()",
    )
    .fetch_all(pool)
    .await?;
    if writers.is_empty() {
        return Ok(highest);
    }
    on_wait(writers.len());
    loop {
        // A transaction holds a lock on its own virtual id until it ends.
        let running: bool =
            sqlx::query_scalar("select exists (select 1 from pg_locks where virtualtransaction = any($1::text[]))")
                .bind(&writers)
                .fetch_one(pool)
                .await?;
        if !running {
            return Ok(highest);
        }
        tokio::time::sleep(SETTLE_POLL).await;
    }
}

/// One organization's events after `after` in commit order, with their seal (chain seq and hash)
/// when sealed. Only committed rows below the horizon are returned.
pub(crate) async fn read_org_with_seals(
    pool: &PgPool,
    org: Uuid,
    after: CommitKey,
    limit: i64,
) -> Result<Vec<(RecordedEvent, Option<(i64, Vec<u8>)>)>, sqlx::Error> {
    let sql = format!(
        "select {EVENT_COLUMNS}, s.seq, s.hash from events e
         left join event_seals s on s.position = e.position
         where e.org_id = $1
           and (e.transaction_id, e.position) > ($2::int8::text::xid8, $3)
           and e.transaction_id < pg_snapshot_xmin(pg_current_snapshot())
         order by e.transaction_id, e.position
         limit $4"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(org)
        .bind(after.transaction_id)
        .bind(after.position)
        .bind(limit)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|row| {
            let event = event_from_row(row)?;
            let seq: Option<i64> = row.try_get("seq")?;
            let hash: Option<Vec<u8>> = row.try_get("hash")?;
            Ok((event, seq.zip(hash)))
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Checkpoint {
    pub key: CommitKey,
}

pub async fn load_checkpoint(pool: &PgPool, name: &str) -> Result<Checkpoint, sqlx::Error> {
    let key: Option<(i64, i64)> =
        sqlx::query_as("select transaction_id::text::int8, position from follower_checkpoints where name = $1")
            .bind(name)
            .fetch_optional(pool)
            .await?;
    Ok(Checkpoint { key: key.map(|(t, p)| CommitKey::new(t, p)).unwrap_or(CommitKey::ZERO) })
}

pub async fn save_checkpoint(conn: &mut PgConnection, name: &str, key: CommitKey) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into follower_checkpoints (name, transaction_id, position)
         values ($1, $2::int8::text::xid8, $3)
         on conflict (name) do update set transaction_id = excluded.transaction_id, position = excluded.position",
    )
    .bind(name)
    .bind(key.transaction_id)
    .bind(key.position)
    .execute(conn)
    .await?;
    Ok(())
}

/// A session-level advisory lock held on a dedicated connection: while it is held this process is the
/// only one running the named follower against this database. Dropping it (or losing the connection,
/// for instance when the process dies) releases it.
pub struct Leadership {
    conn: PgConnection,
}

impl Leadership {
    /// Whether the lock is still held (its connection is alive).
    pub async fn still_held(&mut self) -> bool {
        sqlx::query("select 1").execute(&mut self.conn).await.is_ok()
    }
}

/// Tries once to become the single runner of `name`.
pub async fn try_lead(pool: &PgPool, name: &str) -> Result<Option<Leadership>, sqlx::Error> {
    // Detached: the lock lives and dies with this connection, never back in the pool.
    let mut conn: PgConnection = pool.acquire().await?.detach();
    let got: bool = sqlx::query_scalar("select pg_try_advisory_lock(hashtextextended($1, 0))")
        .bind(format!("backoffice follower {name}"))
        .fetch_one(&mut conn)
        .await?;
    Ok(got.then_some(Leadership { conn }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_written_from_stored_text_decode_to_the_recorded_event() {
        let data = r#"{"name": "O'Brien \"Ana\"", "tags": ["ñ", 1, null], "nested": {"b": 2, "a": 1.5}}"#;
        let metadata = r#"{"actor":"api_key","request_id":"req_1"}"#;
        let recorded_at = time::macros::datetime!(2026-11-21 10:20:30.123456 UTC);
        let envelope = RawEnvelope {
            key: CommitKey::new(77, 1234),
            org_id: Uuid::now_v7(),
            stream_type: "customer",
            stream_id: Uuid::now_v7(),
            version: 3,
            event_id: Uuid::now_v7(),
            event_type: "CustomerReplaced",
            schema_version: 2,
            recorded_at,
        };
        let payload = envelope_payload(&envelope, data, metadata).expect("payload");
        let decoded: RecordedEvent = serde_json::from_slice(&payload).expect("valid JSON of an envelope");
        let expected = RecordedEvent {
            position: 1234,
            transaction_id: 77,
            org_id: envelope.org_id,
            stream_type: "customer".into(),
            stream_id: envelope.stream_id,
            version: 3,
            event_id: envelope.event_id,
            event_type: "CustomerReplaced".into(),
            schema_version: 2,
            data: serde_json::from_str(data).expect("data"),
            metadata: serde_json::from_str(metadata).expect("metadata"),
            recorded_at,
        };
        assert_eq!(decoded, expected);
        let through_serde: serde_json::Value = serde_json::to_value(&expected).expect("value");
        let ours: serde_json::Value = serde_json::from_slice(&payload).expect("value");
        assert_eq!(ours, through_serde, "the same document serde would write");
    }
}
