//! Idempotency keys claimed in the transaction of the command (or group of commands) they guard: each
//! key's lock, then its stored outcome, replayed or refused; outcomes stored with the events.

use crate::aggregate::Rejection;
use crate::engine::execute::ExecuteError;
use crate::reply::{CommandReply, Idempotency};
use events::unnest::Unnest;
use uuid::Uuid;

/// What claiming an idempotency key found.
pub(crate) enum KeyClaim {
    /// Another transaction holds the key.
    Busy,
    /// The key is this transaction's, and an outcome is stored under it.
    Stored { operation: String, hash: Vec<u8>, response: serde_json::Value },
    /// The key is this transaction's, and nothing is stored under it yet: the command runs.
    Free,
}

impl KeyClaim {
    /// The answer a busy or stored key gives `claim` (none for a free key: the command runs).
    pub(crate) fn answer(self, org_id: Uuid, claim: &Idempotency) -> Option<Result<CommandReply, ExecuteError>> {
        match self {
            KeyClaim::Busy => Some(Err(in_progress())),
            KeyClaim::Stored { operation, hash, response } => Some(replay(org_id, claim, &operation, &hash, response)),
            KeyClaim::Free => None,
        }
    }
}

/// Claims `keys` of `org_id` for the caller's transaction, in order, with one statement
/// (`idempotency_claims`): each key's transaction-scoped advisory lock, then, once held, its stored
/// outcome, read with a snapshot taken after the lock.
pub(crate) async fn claim_keys(
    conn: &mut sqlx::PgConnection,
    org_id: Uuid,
    keys: &[&str],
) -> Result<Vec<KeyClaim>, sqlx::Error> {
    type Row = (bool, Option<String>, Option<Vec<u8>>, Option<serde_json::Value>);
    let rows: Vec<Row> = sqlx::query_as(
        "select c.locked, c.operation, c.request_hash, c.response
         from idempotency_claims($1, $2) with ordinality as c(locked, operation, request_hash, response, n)
         order by c.n",
    )
    .bind(org_id)
    .bind(keys)
    .fetch_all(conn)
    .await?;
    if rows.len() != keys.len() {
        return Err(sqlx::Error::RowNotFound);
    }
    Ok(rows
        .into_iter()
        .map(|row| match row {
            (false, ..) => KeyClaim::Busy,
            (true, Some(operation), Some(hash), Some(response)) => KeyClaim::Stored { operation, hash, response },
            (true, ..) => KeyClaim::Free,
        })
        .collect())
}

/// Stores each accepted command's outcome under its key (in the transaction that wrote its events).
pub(crate) async fn store_outcomes(
    conn: &mut sqlx::PgConnection,
    org_id: Uuid,
    outcomes: &[(&Idempotency, &CommandReply)],
) -> Result<(), ExecuteError> {
    let mut rows = Vec::with_capacity(outcomes.len());
    for (claim, reply) in outcomes {
        rows.push((claim, claim.request_hash.as_bytes(), serde_json::to_value(reply)?));
    }
    Unnest::new(&rows)
        .constant("org_id", org_id)
        .column("key", |(claim, ..)| claim.key.as_str())
        .column("operation", |(claim, ..)| claim.operation.as_str())
        .column("request_hash", |(_, hash, _)| *hash)
        .column("response", |(.., response)| response)
        .execute(conn, "insert into idempotency_keys", "")
        .await?;
    Ok(())
}

/// The refusal of a key another request holds right now.
pub(crate) fn in_progress() -> ExecuteError {
    Rejection::Idempotency {
        code: "IDEMPOTENCY_IN_PROGRESS".into(),
        message: "a request with this idempotency key is still running; retry shortly".into(),
        retryable: true,
    }
    .into()
}

/// The refusal of `claim` when its key of `org_id` already stands for another request, read outside any
/// command's transaction: for a request the gateway refuses before it reaches a worker.
pub async fn stored_conflict(
    pool: &sqlx::PgPool,
    org_id: Uuid,
    claim: &Idempotency,
) -> Result<Option<Rejection>, sqlx::Error> {
    let stored: Option<(String, Vec<u8>)> =
        sqlx::query_as("select operation, request_hash from idempotency_keys where org_id = $1 and key = $2")
            .bind(org_id)
            .bind(&claim.key)
            .fetch_optional(pool)
            .await?;
    Ok(stored.filter(|(operation, hash)| !claim.is_request(operation, hash)).map(|_| key_conflict()))
}

/// The refusal of a key already used for another request.
fn key_conflict() -> Rejection {
    Rejection::Idempotency {
        code: "IDEMPOTENCY_CONFLICT".into(),
        message: "this idempotency key was already used for a different request".into(),
        retryable: false,
    }
}

/// The answer to a key whose outcome is stored: the outcome, marked replayed, when the request is the
/// one that stored it; 409 `IDEMPOTENCY_CONFLICT` when it is another.
fn replay(
    org_id: Uuid,
    claim: &Idempotency,
    operation: &str,
    hash: &[u8],
    response: serde_json::Value,
) -> Result<CommandReply, ExecuteError> {
    if !claim.is_request(operation, hash) {
        return Err(key_conflict().into());
    }
    let mut reply: CommandReply =
        serde_json::from_value(response).map_err(|e| ExecuteError::Corrupt(org_id, e.to_string()))?;
    if let CommandReply::Accepted { replayed, .. } = &mut reply {
        *replayed = true;
    }
    Ok(reply)
}
