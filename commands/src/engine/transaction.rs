//! Commands that run in a transaction of their own: under an idempotency key (the stored outcome is
//! replayed, or written with the events), or because they keep write-model rows beside their events.
//! Also the per-stream turns that keep commands on one stream from racing each other.

use crate::aggregate::Rejection;
use crate::engine::execute::{CONFLICT_RETRIES, Conn, ExecuteError, Sink};
use crate::protocol::{CommandReply, CommandRequest, Idempotency};
use events::Metadata;
use sqlx::PgPool;
use uuid::Uuid;

/// Runs a command carrying an idempotency key: in one transaction, holding a lock on the key, either
/// replay the stored outcome, refuse a different request, or run the command and store its outcome
/// with its events. A rejected command stores nothing.
pub(crate) async fn run_idempotent(
    pool: &PgPool,
    request: &CommandRequest,
    claim: &Idempotency,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    for _ in 0..CONFLICT_RETRIES {
        let mut tx = pool.begin().await?;
        let locked: bool = sqlx::query_scalar("select pg_try_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("idempotency {} {}", request.org_id, claim.key))
            .fetch_one(&mut *tx)
            .await?;
        if !locked {
            return Err(in_progress());
        }
        let stored: Option<(String, Vec<u8>, serde_json::Value)> = sqlx::query_as(
            "select operation, request_hash, response from idempotency_keys where org_id = $1 and key = $2",
        )
        .bind(request.org_id)
        .bind(&claim.key)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((operation, hash, response)) = stored {
            // Ended here, not dropped: a dropped transaction rolls back (and lets go of the key's lock)
            // only when its connection is next used, so an immediate retry would find the key busy.
            tx.rollback().await?;
            return replay(request.org_id, claim, &operation, &hash, response);
        }
        match request.command.run(&mut Conn::Open(&mut tx), &Sink::Transaction, request.org_id, metadata).await {
            Ok(reply) => {
                let hash = hex::decode(&claim.request_hash).unwrap_or_default();
                sqlx::query(
                    "insert into idempotency_keys (org_id, key, operation, request_hash, response)
                     values ($1, $2, $3, $4, $5)",
                )
                .bind(request.org_id)
                .bind(&claim.key)
                .bind(&claim.operation)
                .bind(hash)
                .bind(serde_json::to_value(&reply).unwrap_or_default())
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                return Ok(reply);
            }
            Err(error) => {
                // Lets go of the key's lock now (see above).
                let _ = tx.rollback().await;
                match error {
                    ExecuteError::Contended(_) => {
                        super::observe::retried();
                        continue;
                    }
                    other => return Err(other),
                }
            }
        }
    }
    Err(ExecuteError::Contended(request.org_id))
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

/// The answer to a key whose outcome is stored: the outcome, marked replayed, when the request is the
/// one that stored it; 409 `IDEMPOTENCY_CONFLICT` when it is another.
pub(crate) fn replay(
    org_id: Uuid,
    claim: &Idempotency,
    operation: &str,
    hash: &[u8],
    response: serde_json::Value,
) -> Result<CommandReply, ExecuteError> {
    if operation != claim.operation || hex::encode(hash) != claim.request_hash {
        return Err(Rejection::Idempotency {
            code: "IDEMPOTENCY_CONFLICT".into(),
            message: "this idempotency key was already used for a different request".into(),
            retryable: false,
        }
        .into());
    }
    let mut reply: CommandReply =
        serde_json::from_value(response).map_err(|e| ExecuteError::Corrupt(org_id, e.to_string()))?;
    if let CommandReply::Accepted { replayed, .. } = &mut reply {
        *replayed = true;
    }
    Ok(reply)
}

/// Runs a command without an idempotency key in its own transaction (for commands that write rows
/// beside their events), starting over when a concurrent write to its stream won.
pub(crate) async fn run_in_transaction(
    pool: &PgPool,
    request: &CommandRequest,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    for _ in 0..CONFLICT_RETRIES {
        let mut tx = pool.begin().await?;
        match request.command.run(&mut Conn::Open(&mut tx), &Sink::Transaction, request.org_id, metadata).await {
            Ok(reply) => {
                tx.commit().await?;
                return Ok(reply);
            }
            Err(ExecuteError::Contended(_)) => {
                super::observe::retried();
                continue;
            }
            Err(other) => return Err(other),
        }
    }
    Err(ExecuteError::Contended(request.command.stream_id()))
}

/// Commands on one stream queue behind each other in this process instead of racing to append and
/// retrying on version conflicts (which a busy stream would exhaust). Striped by stream id.
static STREAM_TURNS: std::sync::LazyLock<Vec<tokio::sync::Mutex<()>>> =
    std::sync::LazyLock::new(|| (0..1024).map(|_| tokio::sync::Mutex::new(())).collect());

pub(crate) fn stream_turn(stream_id: Uuid) -> &'static tokio::sync::Mutex<()> {
    let bytes = stream_id.as_bytes();
    // The last bytes of a v7 id are random.
    let stripe = u16::from_be_bytes([bytes[14], bytes[15]]) as usize % STREAM_TURNS.len();
    &STREAM_TURNS[stripe]
}
