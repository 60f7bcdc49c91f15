//! One request, run exactly as if it had come alone: its stream's turn in this process, then under its
//! idempotency key, in a transaction of its own, or through the group appender; the outcome turned
//! into its reply.

use crate::engine::{
    Appender, CONFLICT_RETRIES, Conn, ExecuteError, KeyClaim, Sink, claim_keys, in_progress, observed, retried,
    store_outcomes,
};
use crate::protocol::{CommandReply, CommandRequest, FailureCause, Idempotency};
use events::Metadata;
use sqlx::PgPool;
use tracing::Instrument;
use uuid::Uuid;

/// Executes one request and turns the outcome into a reply.
pub(crate) async fn handle(pool: &PgPool, appender: &Appender, request: CommandRequest) -> CommandReply {
    let kind = request.command.kind().name();
    // Every log line of the command carries its type, organization and request (no personal data).
    let span =
        tracing::info_span!("command", command = kind, org_id = %request.org_id, request_id = %request.request_id);
    observed(kind, handle_observed(pool, appender, &request)).instrument(span).await
}

async fn handle_observed(pool: &PgPool, appender: &Appender, request: &CommandRequest) -> CommandReply {
    let started = std::time::Instant::now();
    let _turn = stream_turn(request.command.stream_id()).lock().await;
    let metadata = metadata_of(request);
    let result = match &request.idempotency {
        Some(claim) => run_idempotent(pool, request, claim, &metadata).await,
        None if request.command.needs_transaction() => run_in_transaction(pool, request, &metadata).await,
        None => {
            let mut conn = Conn::Lazy(pool, None);
            request.command.run(&mut conn, &Sink::Group(appender), request.org_id, &metadata).await
        }
    };
    tracing::debug!(
        org.id = %request.org_id,
        request.id = %request.request_id,
        elapsed_ms = started.elapsed().as_millis() as u64,
        ok = result.is_ok(),
        "command handled"
    );
    reply_of(request, result)
}

/// The metadata every event of `request` carries.
pub(crate) fn metadata_of(request: &CommandRequest) -> Metadata {
    Metadata {
        actor: request.actor.name.clone(),
        credential_id: request.actor.credential_id,
        request_id: Some(request.request_id.clone()),
        idempotency_key: request.idempotency.as_ref().map(|i| i.key.clone()),
        ..Metadata::default()
    }
}

/// The reply to `request` for what running it came to: a rejection as such, a failure as retryable or
/// not with its cause.
pub(crate) fn reply_of(request: &CommandRequest, result: Result<CommandReply, ExecuteError>) -> CommandReply {
    match result {
        Ok(reply) => reply,
        Err(ExecuteError::Rejected(rejection)) => CommandReply::Rejected { rejection },
        Err(error) => {
            tracing::error!(org.id = %request.org_id, request.id = %request.request_id, %error, "command failed");
            let retryable = matches!(error, ExecuteError::Storage(_) | ExecuteError::Contended(_));
            let cause = match &error {
                ExecuteError::Storage(error) if storage_unavailable(error) => FailureCause::StorageUnavailable,
                ExecuteError::Contended(_) => FailureCause::Contended,
                _ => FailureCause::Internal,
            };
            CommandReply::Failed { retryable, message: "the command could not be completed".into(), cause }
        }
    }
}

/// Whether `error` says the event store could not be reached, rather than that it refused something:
/// a broken or refused connection, no free connection, or the server going down or refusing new
/// sessions (SQLSTATE classes 08 connection exception, 53 insufficient resources, 57P operator
/// intervention).
fn storage_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            db.code().is_some_and(|code| code.starts_with("08") || code.starts_with("53") || code.starts_with("57P"))
        }
        _ => false,
    }
}

/// Whether `request` runs in a transaction of its own rather than through the group appender (the
/// same choice [`handle`] makes).
pub(crate) fn runs_in_own_transaction(request: &CommandRequest) -> bool {
    request.idempotency.is_some() || request.command.needs_transaction()
}

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
        let found = claim_keys(&mut tx, request.org_id, &[claim.key.as_str()]).await?;
        match found.into_iter().next().ok_or(sqlx::Error::RowNotFound)? {
            KeyClaim::Free => {}
            KeyClaim::Busy => return Err(in_progress()),
            stored @ KeyClaim::Stored { .. } => {
                // Ended here, not dropped: a dropped transaction rolls back (and lets go of the key's
                // lock) only when its connection is next used, so an immediate retry would find the key
                // busy.
                tx.rollback().await?;
                return stored.answer(request.org_id, claim).unwrap_or(Err(sqlx::Error::RowNotFound.into()));
            }
        }
        match request.command.run(&mut Conn::Open(&mut tx), &Sink::Transaction, request.org_id, metadata).await {
            Ok(reply) => {
                store_outcomes(&mut tx, request.org_id, &[(claim, &reply)]).await?;
                tx.commit().await?;
                return Ok(reply);
            }
            Err(error) => {
                // Lets go of the key's lock now (see above).
                let _ = tx.rollback().await;
                match error {
                    ExecuteError::Contended(_) => {
                        retried();
                        continue;
                    }
                    other => return Err(other),
                }
            }
        }
    }
    Err(ExecuteError::Contended(request.org_id))
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
                retried();
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

fn stream_turn(stream_id: Uuid) -> &'static tokio::sync::Mutex<()> {
    let bytes = stream_id.as_bytes();
    // The last bytes of a v7 id are random.
    let stripe = u16::from_be_bytes([bytes[14], bytes[15]]) as usize % STREAM_TURNS.len();
    &STREAM_TURNS[stripe]
}

#[cfg(test)]
mod tests {
    use super::storage_unavailable;

    #[test]
    fn only_an_unreachable_store_counts_as_unavailable() {
        let reset = || std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(storage_unavailable(&sqlx::Error::Io(reset())));
        assert!(storage_unavailable(&sqlx::Error::PoolTimedOut));
        assert!(storage_unavailable(&sqlx::Error::PoolClosed));
        assert!(storage_unavailable(&sqlx::Error::Protocol("the connection broke".into())));
        assert!(!storage_unavailable(&sqlx::Error::RowNotFound));
        assert!(!storage_unavailable(&sqlx::Error::ColumnNotFound("position".into())));
    }
}
