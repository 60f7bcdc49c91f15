//! The command engine, which holds no domain code: takes commands from the NATS queue group, runs each
//! through its registered [`Handler`](crate::handler::Handler) (reference checks, load, pure decide,
//! append with optimistic concurrency, write-model rows) and replies.
//!
//! - `execute`: one decision against one aggregate instance, and the lookups domains share;
//! - `append`: group commit of concurrent appends;
//! - `relay`: waking the relay after commits;
//! - `transaction`: idempotent and transactional runs, and per-stream turns;
//! - here: serving the queue group and turning outcomes into replies.

mod append;
mod execute;
mod group;
mod observe;
mod relay;
mod transaction;

pub use append::Appender;
pub use execute::{
    Conn, ExecuteError, Executed, FollowUps, NoFollowUps, Sink, WithId, accepted, append_together, append_typed,
    execute, fold_stream, load, name_taken, reject_fields, run_aggregate,
};

use crate::protocol::{CommandBatch, CommandBatchReply, CommandReply, CommandRequest, FailureCause, QUEUE_GROUP};
use append::APPEND_LANES;
use events::Metadata;
use events::bus::Bus;
use futures::StreamExt;
use relay::RelayNudge;
use sqlx::PgPool;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tracing::Instrument;
pub(crate) use transaction::{claim_keys, store_outcomes};
use transaction::{run_idempotent, run_in_transaction, stream_turn};

/// Executes one request and turns the outcome into a reply.
pub async fn handle(pool: &PgPool, appender: &Appender, request: CommandRequest) -> CommandReply {
    let kind = request.command.kind().name();
    // Every log line of the command carries its type, organization and request (no personal data).
    let span =
        tracing::info_span!("command", command = kind, org_id = %request.org_id, request_id = %request.request_id);
    observe::observed(kind, handle_observed(pool, appender, &request)).instrument(span).await
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
fn metadata_of(request: &CommandRequest) -> Metadata {
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
fn reply_of(request: &CommandRequest, result: Result<CommandReply, ExecuteError>) -> CommandReply {
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

/// Serves the `commands` queue group (single requests and batches) until the subscriptions end. Each
/// request runs on its own task, at most `concurrency` at once (a batch takes a permit per request);
/// after a commit the relay is woken. Sales speak to `fiscal`, the tax authority (none: they defer).
pub async fn run(
    pool: PgPool,
    bus: Bus,
    relay: events::relay::RelayWake,
    concurrency: usize,
    fiscal: Option<crate::fiscal::FiscalClient>,
) -> Result<(), async_nats::SubscribeError> {
    let singles = bus.client.queue_subscribe(bus.command_subject(), QUEUE_GROUP.to_owned()).await?;
    let batches = bus.client.queue_subscribe(bus.command_batch_subject(), QUEUE_GROUP.to_owned()).await?;
    let mut messages = futures::stream::select(singles.map(|m| (false, m)), batches.map(|m| (true, m)));
    let permits = Arc::new(Semaphore::new(concurrency));
    let nudge = RelayNudge::start(bus.clone(), relay);
    let appender = Appender::start(pool.clone(), APPEND_LANES, nudge.clone());
    while let Some((batched, message)) = messages.next().await {
        let requests = if batched {
            serde_json::from_slice::<CommandBatch>(&message.payload).map(|batch| batch.requests)
        } else {
            serde_json::from_slice::<CommandRequest>(&message.payload).map(|request| vec![request])
        };
        let wanted = requests.as_ref().map_or(1, Vec::len).clamp(1, concurrency) as u32;
        let Ok(permit) = permits.clone().acquire_many_owned(wanted).await else { break };
        let pool = pool.clone();
        let bus = bus.clone();
        let nudge = nudge.clone();
        let appender = appender.clone();
        let fiscal = fiscal.clone();
        tokio::spawn(crate::sales::invoicing::with_authority(fiscal, async move {
            let _permit = permit;
            let mut own_transaction = Vec::new();
            let replies = match requests {
                Ok(requests) => {
                    own_transaction = requests.iter().map(runs_in_own_transaction).collect();
                    group::handle_all(&pool, &appender, requests).await
                }
                Err(error) => {
                    tracing::warn!(%error, batched, "malformed command request");
                    vec![CommandReply::Failed {
                        retryable: false,
                        message: format!("malformed command: {error}"),
                        cause: FailureCause::Internal,
                    }]
                }
            };
            // Appends through the group appender woke the relay as they committed; commands that ran in
            // a transaction of their own wake it here.
            let newest = replies
                .iter()
                .zip(&own_transaction)
                .filter_map(|(reply, own)| match reply {
                    CommandReply::Accepted { commit: Some(key), .. } if *own => Some(key.transaction_id),
                    _ => None,
                })
                .max();
            if let Some(transaction_id) = newest {
                nudge.committed(transaction_id);
            }
            if let Some(reply_to) = message.reply {
                let body = if batched {
                    serde_json::to_vec(&CommandBatchReply { replies })
                } else {
                    serde_json::to_vec(&replies[0])
                };
                if let Err(error) = bus.client.publish(reply_to, body.unwrap_or_default().into()).await {
                    tracing::warn!(%error, "could not send a command reply");
                }
            }
        }));
    }
    Ok(())
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
fn runs_in_own_transaction(request: &CommandRequest) -> bool {
    request.idempotency.is_some() || request.command.needs_transaction()
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
