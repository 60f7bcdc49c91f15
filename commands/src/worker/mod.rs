//! The command worker: serves the `commands` queue group (single requests and batches) with the
//! registry's commands, on the engine's machinery, and starts the background jobs every domain
//! declares. It names no domain: what a command does, whether it runs in a group and which jobs exist
//! all come from the registry.
//!
//! - `single`: one request run as if it had come alone, and its reply;
//! - `batch`: a batch's requests, with the groups that run together.

mod batch;
mod single;

use crate::engine::{APPEND_LANES, Appender, RelayNudge, Services, with_services};
use crate::handler::Job;
use crate::protocol::{CommandBatchReply, CommandReply, FailureCause, QUEUE_GROUP};
use batch::{Decoded, handle_all};
use events::bus::Bus;
use futures::StreamExt;
use single::runs_in_own_transaction;
use sqlx::PgPool;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// One message's requests, each decoded on its own: in a batch, a request this worker cannot read (a
/// command only a newer gateway knows, say) is answered as malformed in its place while the others run.
/// A batch whose envelope does not decode is one malformed reply, which the gateway answers for all.
fn decode(batched: bool, payload: &[u8]) -> Vec<Decoded> {
    #[derive(serde::Deserialize)]
    struct Requests<'a> {
        #[serde(borrow)]
        requests: Vec<&'a serde_json::value::RawValue>,
    }
    let decoded = if batched {
        match serde_json::from_slice::<Requests<'_>>(payload) {
            Ok(batch) => batch.requests.into_iter().map(|raw| serde_json::from_str(raw.get())).collect(),
            Err(error) => vec![Err(error)],
        }
    } else {
        vec![serde_json::from_slice(payload)]
    };
    for error in decoded.iter().filter_map(|request| request.as_ref().err()) {
        tracing::warn!(%error, batched, "malformed command request");
    }
    decoded
}

/// The reply to a request that did not decode.
fn malformed(error: &serde_json::Error) -> CommandReply {
    CommandReply::Failed {
        retryable: false,
        message: format!("malformed command: {error}"),
        cause: FailureCause::Internal,
    }
}

/// Every background job of a command-worker process: the platform's (idempotency outcomes past their
/// retention) and each domain's, as the registry's handlers declare them.
pub fn jobs() -> Vec<Job> {
    let mut jobs =
        vec![Job { name: "idempotency_purge", run: |pool, _| Box::pin(crate::idempotency::purge_forever(pool)) }];
    jobs.extend(crate::registered::jobs());
    jobs
}

/// Serves the `commands` queue group (single requests and batches) until the subscriptions end. Each
/// request runs on its own task, at most `concurrency` at once (a batch takes a permit per request);
/// after a commit the relay is woken. Commands run with `services` in scope.
pub async fn run(
    pool: PgPool,
    bus: Bus,
    relay: events::relay::RelayWake,
    concurrency: usize,
    services: Services,
) -> Result<(), async_nats::SubscribeError> {
    let singles = bus.client.queue_subscribe(bus.command_subject(), QUEUE_GROUP.to_owned()).await?;
    let batches = bus.client.queue_subscribe(bus.command_batch_subject(), QUEUE_GROUP.to_owned()).await?;
    let mut messages = futures::stream::select(singles.map(|m| (false, m)), batches.map(|m| (true, m)));
    let permits = Arc::new(Semaphore::new(concurrency));
    let nudge = RelayNudge::start(bus.clone(), relay);
    let appender = Appender::start(pool.clone(), APPEND_LANES, nudge.clone());
    while let Some((batched, message)) = messages.next().await {
        let requests = decode(batched, &message.payload);
        let wanted = requests.len().clamp(1, concurrency) as u32;
        let Ok(permit) = permits.clone().acquire_many_owned(wanted).await else { break };
        let pool = pool.clone();
        let bus = bus.clone();
        let nudge = nudge.clone();
        let appender = appender.clone();
        let services = services.clone();
        tokio::spawn(with_services(services, async move {
            let _permit = permit;
            let own_transaction: Vec<bool> =
                requests.iter().map(|request| request.as_ref().is_ok_and(runs_in_own_transaction)).collect();
            let replies = handle_all(&pool, &appender, requests).await;
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
