//! The per-organization hash chain: the canonical form of an event, the sealer that chains events in
//! commit order right after they commit, and verification for auditors.

use crate::envelope::{CommitKey, RecordedEvent};
use crate::follower::{self, Checkpoint};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use std::collections::HashMap;
use uuid::Uuid;

/// The hash a chain starts from.
pub const GENESIS: [u8; 32] = [0; 32];

/// Canonical JSON of everything an auditor must be able to trust about an event: keys sorted at
/// every level, no whitespace, `recorded_at` as integer microseconds since the Unix epoch.
pub fn canonical_bytes(event: &RecordedEvent) -> Vec<u8> {
    let recorded_at_us = (event.recorded_at.unix_timestamp_nanos() / 1_000) as i64;
    // The envelope's keys in sorted order, written straight out rather than through a document built
    // (and cloned into) first.
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(b"{\"data\":");
    write_canonical(&event.data, &mut out);
    write_field(&mut out, "event_id", &event.event_id);
    write_field(&mut out, "event_type", &event.event_type);
    out.extend_from_slice(b",\"metadata\":");
    write_canonical(&event.metadata, &mut out);
    write_field(&mut out, "org_id", &event.org_id);
    write_field(&mut out, "position", &event.position);
    write_field(&mut out, "recorded_at_us", &recorded_at_us);
    write_field(&mut out, "schema_version", &event.schema_version);
    write_field(&mut out, "stream_id", &event.stream_id);
    write_field(&mut out, "stream_type", &event.stream_type);
    write_field(&mut out, "version", &event.version);
    out.push(b'}');
    out
}

/// `,"name":value` for a scalar value.
fn write_field<T: serde::Serialize>(out: &mut Vec<u8>, name: &str, value: &T) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    // Writing a scalar JSON value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Canonical JSON of any value: keys sorted at every level, no whitespace.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(&Value::String(key.clone()), out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

fn write_scalar(value: &Value, out: &mut Vec<u8>) {
    // Writing a scalar JSON value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The hash of an event given the hash before it in its organization's chain.
pub fn chain_hash(previous: &[u8], event: &RecordedEvent) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(previous);
    hasher.update(canonical_bytes(event));
    hasher.finalize().into()
}

pub const SEALER: &str = "sealer";

/// Chains committed events per organization, in commit order. One sealer runs per database (under the
/// sealer's leadership lock); it keeps the chain heads in memory and writes each batch of seals, the
/// new heads and its checkpoint in one statement.
pub struct Sealer {
    conn: sqlx::PgConnection,
    heads: HashMap<Uuid, (i64, Vec<u8>)>,
    checkpoint: CommitKey,
}

impl Sealer {
    pub async fn start(pool: &PgPool) -> Result<Self, sqlx::Error> {
        let mut conn = pool.acquire().await?.detach();
        // Losing the last sealed batch in a crash only means sealing it again (the checkpoint goes with
        // it), so the sealer does not wait for its commits to be flushed.
        sqlx::query("set synchronous_commit = off").execute(&mut conn).await?;
        let checkpoint = follower::load_checkpoint(pool, SEALER).await?.key;
        Ok(Self { conn, heads: HashMap::new(), checkpoint })
    }

    /// Seals every committed event not yet sealed, in batches; returns how many were sealed.
    pub async fn seal_pending(&mut self, batch: i64) -> Result<usize, sqlx::Error> {
        let mut total = 0;
        loop {
            // Read on the sealer's own connection: no pool checkout (and its round trip) per look.
            let rows = follower::read_committed_rows_after(&mut self.conn, self.checkpoint, batch).await?;
            if rows.is_empty() {
                return Ok(total);
            }
            let count = rows.len();
            if let Err(error) = self.seal_batch(rows).await {
                // The heads in memory may be ahead of what was stored.
                self.heads.clear();
                return Err(error);
            }
            total += count;
            if (count as i64) < batch {
                return Ok(total);
            }
        }
    }

    async fn seal_batch(&mut self, rows: Vec<PgRow>) -> Result<(), sqlx::Error> {
        let mut unknown = Vec::new();
        for row in &rows {
            let org: Uuid = row.try_get("org_id")?;
            if !self.heads.contains_key(&org) {
                unknown.push(org);
            }
        }
        unknown.sort_unstable();
        unknown.dedup();
        if !unknown.is_empty() {
            let rows: Vec<(Uuid, i64, Vec<u8>)> =
                sqlx::query_as("select org_id, seq, hash from chain_heads where org_id = any($1)")
                    .bind(&unknown)
                    .fetch_all(&mut self.conn)
                    .await?;
            for (org, seq, hash) in rows {
                self.heads.insert(org, (seq, hash));
            }
        }
        // Decoding and hashing a batch is a few milliseconds of CPU: done on a blocking thread, it never
        // holds up the runtime's workers (and every request they serve). Should that task fail, the
        // heads are gone from memory, which only means loading them again.
        let mut heads = std::mem::take(&mut self.heads);
        let (heads, seals) = tokio::task::spawn_blocking(move || {
            let seals = chain_rows(&mut heads, &rows);
            (heads, seals)
        })
        .await
        .map_err(|error| sqlx::Error::Protocol(format!("the sealer's hashing stopped: {error}")))?;
        self.heads = heads;
        let seals = seals?;
        let last = seals.last.unwrap_or(self.checkpoint);
        sqlx::query(
            "with seals as (
                 insert into event_seals (org_id, seq, position, hash)
                 select * from unnest($1::uuid[], $2::int8[], $3::int8[], $4::bytea[])
             ), heads as (
                 insert into chain_heads (org_id, seq, hash)
                 select * from unnest($5::uuid[], $6::int8[], $7::bytea[])
                 on conflict (org_id) do update set seq = excluded.seq, hash = excluded.hash
             )
             insert into follower_checkpoints (name, transaction_id, position)
             values ($8, $9::int8::text::xid8, $10)
             on conflict (name) do update set transaction_id = excluded.transaction_id, position = excluded.position",
        )
        .bind(&seals.org)
        .bind(&seals.seq)
        .bind(&seals.position)
        .bind(&seals.hash)
        .bind(&seals.touched)
        .bind(&seals.head_seq)
        .bind(&seals.head_hash)
        .bind(SEALER)
        .bind(last.transaction_id)
        .bind(last.position)
        .execute(&mut self.conn)
        .await?;
        self.checkpoint = last;
        Ok(())
    }
}

/// A batch's seals and the chain heads they leave, as statement arrays.
#[derive(Default)]
struct Seals {
    org: Vec<Uuid>,
    seq: Vec<i64>,
    position: Vec<i64>,
    hash: Vec<Vec<u8>>,
    touched: Vec<Uuid>,
    head_seq: Vec<i64>,
    head_hash: Vec<Vec<u8>>,
    last: Option<CommitKey>,
}

/// Decodes `rows` (in commit order) and chains each onto its organization's head in `heads`.
fn chain_rows(heads: &mut HashMap<Uuid, (i64, Vec<u8>)>, rows: &[PgRow]) -> Result<Seals, sqlx::Error> {
    let mut seals = Seals::default();
    for row in rows {
        let event = follower::event_from_row(row)?;
        let head = heads.entry(event.org_id).or_insert_with(|| (0, GENESIS.to_vec()));
        let hash = chain_hash(&head.1, &event);
        head.0 += 1;
        head.1 = hash.to_vec();
        seals.org.push(event.org_id);
        seals.seq.push(head.0);
        seals.position.push(event.position);
        seals.hash.push(hash.to_vec());
        seals.touched.push(event.org_id);
        seals.last = Some(event.key());
    }
    seals.touched.sort_unstable();
    seals.touched.dedup();
    seals.head_seq = seals.touched.iter().map(|o| heads[o].0).collect();
    seals.head_hash = seals.touched.iter().map(|o| heads[o].1.clone()).collect();
    Ok(seals)
}

/// Seals everything pending once (for tools and tests; the service runs a long-lived [`Sealer`]).
pub async fn seal_pending(pool: &PgPool, batch: i64) -> Result<usize, sqlx::Error> {
    Sealer::start(pool).await?.seal_pending(batch).await
}

/// The outcome of verifying one organization's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// Every sealed event matches its hash; `events` were checked, `unsealed` committed events are not
    /// yet chained (the sealer has not reached them).
    Intact { events: u64, unsealed: u64 },
    /// The first position where the stored history no longer matches the chain.
    Broken { position: i64, reason: String },
}

/// Recomputes an organization's chain from the stored events and compares it with the stored seals.
pub async fn verify(pool: &PgPool, org: Uuid) -> Result<Verification, sqlx::Error> {
    let sealed_upto: Checkpoint = follower::load_checkpoint(pool, SEALER).await?;
    let mut after = CommitKey::ZERO;
    let mut previous = GENESIS.to_vec();
    let mut expected_seq = 1_i64;
    let mut checked = 0_u64;
    let mut unsealed = 0_u64;
    loop {
        let rows = follower::read_org_with_seals(pool, org, after, 5_000).await?;
        let Some((last, _)) = rows.last() else { break };
        after = last.key();
        for (event, seal) in &rows {
            match seal {
                None if event.key() > sealed_upto.key => unsealed += 1,
                None => {
                    return Ok(Verification::Broken {
                        position: event.position,
                        reason: "event is missing from the hash chain".into(),
                    });
                }
                Some((seq, hash)) => {
                    if *seq != expected_seq {
                        return Ok(Verification::Broken {
                            position: event.position,
                            reason: format!("chain sequence {seq} found where {expected_seq} was expected"),
                        });
                    }
                    let computed = chain_hash(&previous, event);
                    if computed.as_slice() != hash.as_slice() {
                        return Ok(Verification::Broken {
                            position: event.position,
                            reason: "stored event does not match its hash".into(),
                        });
                    }
                    previous = hash.clone();
                    expected_seq += 1;
                    checked += 1;
                }
            }
        }
    }
    // A seal whose event disappeared breaks the chain at that seal's position.
    let orphan: Option<i64> = sqlx::query_scalar(
        "select s.position from event_seals s left join events e on e.position = s.position
         where s.org_id = $1 and e.position is null order by s.seq limit 1",
    )
    .bind(org)
    .fetch_optional(pool)
    .await?;
    if let Some(position) = orphan {
        return Ok(Verification::Broken { position, reason: "a sealed event is missing".into() });
    }
    Ok(Verification::Intact { events: checked, unsealed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::OffsetDateTime;

    fn sample() -> RecordedEvent {
        RecordedEvent {
            position: 7,
            transaction_id: 900,
            org_id: Uuid::nil(),
            stream_type: "customer".into(),
            stream_id: Uuid::nil(),
            version: 1,
            event_id: Uuid::nil(),
            event_type: "CustomerCreated".into(),
            schema_version: 1,
            data: serde_json::json!({"name": "Ana", "b": [1, {"z": 1, "a": 2}]}),
            metadata: serde_json::json!({"actor": "admin"}),
            recorded_at: OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("valid time"),
        }
    }

    #[test]
    fn canonical_form_sorts_keys_at_every_level() {
        let text = String::from_utf8(canonical_bytes(&sample())).expect("utf8");
        assert!(text.starts_with(r#"{"data":{"b":[1,{"a":2,"z":1}],"name":"Ana"},"event_id":"#), "{text}");
        assert!(text.contains(r#""recorded_at_us":1700000000000000"#));
    }

    #[test]
    fn canonical_form_is_the_sorted_document_of_the_envelope() {
        let event = sample();
        let document = serde_json::json!({
            "data": event.data,
            "event_id": event.event_id,
            "event_type": event.event_type,
            "metadata": event.metadata,
            "org_id": event.org_id,
            "position": event.position,
            "recorded_at_us": 1_700_000_000_000_000_i64,
            "schema_version": event.schema_version,
            "stream_id": event.stream_id,
            "stream_type": event.stream_type,
            "version": event.version,
        });
        assert_eq!(canonical_bytes(&event), canonical_json(&document));
    }

    #[test]
    fn any_change_to_an_event_changes_its_hash() {
        let base = sample();
        let hash = chain_hash(&GENESIS, &base);
        let mut edited = base.clone();
        edited.data["name"] = Value::String("Ane".into());
        assert_ne!(hash, chain_hash(&GENESIS, &edited));
        assert_ne!(hash, chain_hash(&[1; 32], &base), "the previous hash is covered");
        assert_eq!(hash, chain_hash(&GENESIS, &base.clone()), "hashing is deterministic");
    }
}
