//! A batch's commands, each run as if it had come alone, except keyed stock movements of one
//! organization: two or more of them in a batch run together in one transaction
//! ([`crate::inventory::group`]), which locks their levels once, plans them in order and writes them with
//! a handful of statements instead of ten each. A group that fails as a whole (the database, never a
//! command's own refusal) is run again command by command.

use super::{Appender, handle, metadata_of, observe, reply_of};
use crate::protocol::{CommandReply, CommandRequest};
use crate::registry::Command;
use sqlx::PgPool;
use std::collections::{BTreeMap, HashSet};
use uuid::Uuid;

/// Runs `requests` (one NATS message's worth) and answers their replies in order.
pub(crate) async fn handle_all(pool: &PgPool, appender: &Appender, requests: Vec<CommandRequest>) -> Vec<CommandReply> {
    // Keyed stock movements by organization; a key seen twice in the batch runs alone (after its twin,
    // or beside it: the key's lock decides, as for any two requests with one key).
    let mut groups: BTreeMap<Uuid, Vec<usize>> = BTreeMap::new();
    let mut keys = HashSet::new();
    for (i, request) in requests.iter().enumerate() {
        if let (Command::StockMovement(_), Some(claim)) = (&request.command, &request.idempotency)
            && keys.insert((request.org_id, claim.key.as_str()))
        {
            groups.entry(request.org_id).or_default().push(i);
        }
    }
    groups.retain(|_, members| members.len() >= 2);
    if groups.is_empty() {
        return futures::future::join_all(requests.into_iter().map(|request| handle(pool, appender, request))).await;
    }
    let grouped: HashSet<usize> = groups.values().flatten().copied().collect();
    let mut slots: Vec<Option<CommandRequest>> = requests.into_iter().map(Some).collect();
    let mut replies: Vec<Option<CommandReply>> = vec![None; slots.len()];
    let mut runs: Vec<futures::future::BoxFuture<'_, Vec<(usize, CommandReply)>>> = Vec::new();
    for members in groups.into_values() {
        let members: Vec<(usize, CommandRequest)> =
            members.into_iter().filter_map(|i| slots[i].take().map(|request| (i, request))).collect();
        runs.push(Box::pin(run_group(pool, appender, members)));
    }
    for (i, slot) in slots.iter_mut().enumerate() {
        if let Some(request) = slot.take().filter(|_| !grouped.contains(&i)) {
            runs.push(Box::pin(async move { vec![(i, handle(pool, appender, request).await)] }));
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
                cause: crate::protocol::FailureCause::Internal,
            })
        })
        .collect()
}

/// One organization's keyed stock movements, together; command by command if the group fails.
async fn run_group(
    pool: &PgPool,
    appender: &Appender,
    members: Vec<(usize, CommandRequest)>,
) -> Vec<(usize, CommandReply)> {
    let started = std::time::Instant::now();
    let movements: Vec<crate::inventory::group::Member<'_>> = members
        .iter()
        .filter_map(|(_, request)| match (&request.command, &request.idempotency) {
            (Command::StockMovement(command), Some(claim)) => {
                Some(crate::inventory::group::Member { command, claim, metadata: metadata_of(request) })
            }
            _ => None,
        })
        .collect();
    let org_id = members.first().map(|(_, request)| request.org_id).unwrap_or_default();
    match crate::inventory::group::run_movements(pool, org_id, &movements).await {
        Ok(results) if results.len() == members.len() => {
            let elapsed = started.elapsed();
            tracing::debug!(%org_id, commands = members.len(), elapsed_ms = elapsed.as_millis() as u64, "movements run together");
            members
                .iter()
                .zip(results)
                .map(|((i, request), result)| {
                    let reply = reply_of(request, result);
                    observe::record(request.command.kind().name(), &reply, elapsed, 0, std::time::Duration::ZERO);
                    (*i, reply)
                })
                .collect()
        }
        outcome => {
            if let Err(error) = outcome {
                tracing::warn!(%org_id, %error, "movements could not run together; running them one by one");
            }
            let alone =
                members.into_iter().map(|(i, request)| async move { (i, handle(pool, appender, request).await) });
            futures::future::join_all(alone).await
        }
    }
}
