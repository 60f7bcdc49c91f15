//! A batch's commands, each run as if it had come alone, except keyed commands of a kind whose handler
//! runs them together ([`Handler::TOGETHER`](crate::handler::Handler::TOGETHER)): two or more of one
//! kind and one organization in a batch run as one group, which its domain runs in one transaction. A
//! group that fails as a whole (the database, never a command's own refusal) is run again command by
//! command.

use super::malformed;
use super::single::{handle, metadata_of, reply_of};
use crate::engine::{Appender, record};
use crate::protocol::{CommandKind, CommandReply, CommandRequest, FailureCause};
use crate::registered::run_together;
use sqlx::PgPool;
use std::collections::{BTreeMap, HashSet};
use uuid::Uuid;

/// Runs `requests` (one NATS message's worth) and answers their replies in order: a request that did not
/// decode is answered as malformed in its place, and the others run.
pub(crate) async fn handle_all(pool: &PgPool, appender: &Appender, requests: Vec<Decoded>) -> Vec<CommandReply> {
    // Keyed commands that run together, by kind and organization; a key seen twice in the batch runs
    // alone (after its twin, or beside it: the key's lock decides, as for any two requests with one key).
    let mut groups: BTreeMap<(CommandKind, Uuid), Vec<usize>> = BTreeMap::new();
    let mut keys = HashSet::new();
    for (i, request) in requests.iter().enumerate() {
        let Ok(request) = request else { continue };
        let kind = request.command.kind();
        if let Some(claim) = &request.idempotency
            && kind.runs_together()
            && keys.insert((request.org_id, claim.key.as_str()))
        {
            groups.entry((kind, request.org_id)).or_default().push(i);
        }
    }
    groups.retain(|_, members| members.len() >= 2);
    if groups.is_empty() {
        return futures::future::join_all(requests.into_iter().map(|request| handle_decoded(pool, appender, request)))
            .await;
    }
    let grouped: HashSet<usize> = groups.values().flatten().copied().collect();
    let mut slots: Vec<Option<Decoded>> = requests.into_iter().map(Some).collect();
    let mut replies: Vec<Option<CommandReply>> = vec![None; slots.len()];
    let mut runs: Vec<futures::future::BoxFuture<'_, Vec<(usize, CommandReply)>>> = Vec::new();
    for ((kind, org_id), members) in groups {
        let members: Vec<(usize, CommandRequest)> =
            members.into_iter().filter_map(|i| slots[i].take()?.ok().map(|request| (i, request))).collect();
        runs.push(Box::pin(run_group(pool, appender, kind, org_id, members)));
    }
    for (i, slot) in slots.iter_mut().enumerate() {
        if let Some(request) = slot.take().filter(|_| !grouped.contains(&i)) {
            runs.push(Box::pin(async move { vec![(i, handle_decoded(pool, appender, request).await)] }));
        }
    }
    for (i, reply) in futures::future::join_all(runs).await.into_iter().flatten() {
        replies[i] = Some(reply);
    }
    replies
        .into_iter()
        .map(|reply| {
            reply.unwrap_or_else(|| CommandReply::Failed {
                retryable: true,
                message: "the command could not be completed".into(),
                cause: FailureCause::Internal,
            })
        })
        .collect()
}

/// A request as decoded, or why it could not be.
pub(crate) type Decoded = Result<CommandRequest, serde_json::Error>;

async fn handle_decoded(pool: &PgPool, appender: &Appender, request: Decoded) -> CommandReply {
    match request {
        Ok(request) => handle(pool, appender, request).await,
        Err(error) => malformed(&error),
    }
}

/// One organization's keyed commands of one kind, together; command by command if the group fails.
async fn run_group(
    pool: &PgPool,
    appender: &Appender,
    kind: CommandKind,
    org_id: Uuid,
    members: Vec<(usize, CommandRequest)>,
) -> Vec<(usize, CommandReply)> {
    let started = std::time::Instant::now();
    let group = members
        .iter()
        .filter_map(|(_, request)| {
            request.idempotency.as_ref().map(|claim| (&request.command, claim, metadata_of(request)))
        })
        .collect();
    match run_together(kind, pool, org_id, group).await {
        Some(Ok(results)) if results.len() == members.len() => {
            let elapsed = started.elapsed();
            tracing::debug!(%org_id, command = kind.name(), commands = members.len(), elapsed_ms = elapsed.as_millis() as u64, "commands run together");
            members
                .iter()
                .zip(results)
                .map(|((i, request), result)| {
                    let reply = reply_of(request, result);
                    record(kind.name(), &reply, elapsed, 0, std::time::Duration::ZERO);
                    (*i, reply)
                })
                .collect()
        }
        outcome => {
            if let Some(Err(error)) = outcome {
                tracing::warn!(%org_id, command = kind.name(), %error, "commands could not run together; running them one by one");
            }
            let alone =
                members.into_iter().map(|(i, request)| async move { (i, handle(pool, appender, request).await) });
            futures::future::join_all(alone).await
        }
    }
}
