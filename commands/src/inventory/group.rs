//! Keyed stock movements of one organization that reach a worker in one batch run together, in one
//! transaction, each decided exactly as if it had come alone:
//!
//! 1. one statement claims every key (`claim_keys`, as a lone command claims its own: each key's lock,
//!    then its stored outcome); a key held elsewhere answers `IDEMPOTENCY_IN_PROGRESS`, a stored one
//!    is replayed (or conflicts);
//! 2. one statement reads the warehouses (their streams), the products and the policy, and the
//!    references are checked for all of them;
//! 3. every level any of them touches is locked by one statement, in key order, as a lone command
//!    locks its own; when none of them is a count, that statement also adds all their quantities;
//! 4. each movement is planned in batch order against the levels the ones before it left, and a
//!    refused one (a shortfall under `block`, a level out of bounds) leaves them as they were;
//! 5. the levels are written where the plans left them (only after a count or a refusal: otherwise the
//!    locking statement put them there), then every accepted movement's event (one append) and every
//!    accepted outcome under its key (one insert), and the transaction commits.
//!
//! Seven statements for the whole group (begin and commit included), where a lone movement takes ten
//! of its own. A refusal writes nothing of its own and stores no outcome, as alone. A failure of the
//! group as a whole (an error from the database) rolls everything back and the engine runs the
//! movements one by one.

use super::levels::{self, Key};
use super::movement::{
    References, movement_event, movement_moves, movement_references, movement_reply, products_verdict,
    warehouse_verdict,
};
use super::{StockMovementCommand, apply_policy, plan};
use crate::engine::{ExecuteError, reject_fields};
use crate::reply::{CommandReply, Idempotency};
use events::EventPayload;
use events::catalogue::{StockMovementEvent, ar_date};
use events::domain::Quantity;
use events::store::{AppendError, AppendRequest, StreamRef};
use sqlx::PgPool;
use std::collections::{BTreeMap, BTreeSet};
use time::OffsetDateTime;
use uuid::Uuid;

/// One movement of the group, with its key and the metadata its event carries.
pub type Member<'a> = crate::handler::Member<'a, StockMovementCommand>;

/// The movements' [`Handler::TOGETHER`](crate::handler::Handler::TOGETHER): [`run_movements`].
pub(crate) fn run_together<'a>(
    pool: &'a PgPool,
    org_id: Uuid,
    members: &'a [Member<'a>],
) -> futures::future::BoxFuture<'a, crate::handler::GroupResult> {
    Box::pin(run_movements(pool, org_id, members))
}

/// Runs `members` (keyed movements of `org_id`, distinct keys) together: each one's result, in order, or
/// the error that stopped the group (nothing written).
pub async fn run_movements(
    pool: &PgPool,
    org_id: Uuid,
    members: &[Member<'_>],
) -> Result<Vec<Result<CommandReply, ExecuteError>>, ExecuteError> {
    let mut results: Vec<Option<Result<CommandReply, ExecuteError>>> = members.iter().map(|_| None).collect();
    let mut tx = pool.begin().await?;

    // 1. The keys, claimed as a lone command claims its own.
    let keys: Vec<&str> = members.iter().map(|m| m.claim.key.as_str()).collect();
    let claims = crate::engine::claim_keys(&mut tx, org_id, &keys).await?;
    let mut running = Vec::with_capacity(members.len());
    for (i, (member, claim)) in members.iter().zip(claims).enumerate() {
        match claim.answer(org_id, member.claim) {
            Some(answer) => results[i] = Some(answer),
            None => running.push(i),
        }
    }

    // 2. The references (and the policy), read by one statement.
    let warehouses: Vec<Uuid> =
        running.iter().map(|&i| members[i].command.warehouse_id).collect::<BTreeSet<_>>().into_iter().collect();
    let variants: Vec<Uuid> = running
        .iter()
        .flat_map(|&i| members[i].command.lines.iter().map(|l| l.variant_id))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let References { warehouses: active, types, policy } =
        movement_references(&mut tx, org_id, &warehouses, &variants).await?;
    let mut checked = Vec::with_capacity(running.len());
    for i in running {
        let command = members[i].command;
        let mut errors = Vec::new();
        warehouse_verdict(active.get(&command.warehouse_id).copied().flatten(), "warehouse_id", &mut errors);
        products_verdict(&types, &command.lines, "lines", false, &mut errors);
        let verdict = reject_fields(errors);
        match verdict {
            Ok(()) => checked.push(i),
            Err(refused) => results[i] = Some(Err(refused)),
        }
    }

    if checked.is_empty() {
        tx.rollback().await?;
        return Ok(answers(results));
    }

    // 3 and 4. The levels, and each movement's plan in turn. When every movement adds or
    // takes (none counts), the locking statement adds all their quantities at once, as a lone
    // movement's does; the levels are written again only if a refusal makes them end elsewhere.
    let now = OffsetDateTime::now_utc();
    let wanted: Vec<_> = checked
        .into_iter()
        .map(|i| {
            let (deltas, moves) = movement_moves(members[i].command);
            (i, deltas, moves)
        })
        .collect();
    let deltas: Option<BTreeMap<Key, i64>> = wanted.iter().try_fold(BTreeMap::new(), |mut all, (_, own, _)| {
        for (key, delta) in own.as_ref()? {
            *all.entry(*key).or_default() += delta;
        }
        Some(all)
    });
    let mut levels = match &deltas {
        Some(deltas) => levels::lock_adding(&mut tx, org_id, deltas, ar_date(now)).await?,
        None => {
            let touched = wanted.iter().flat_map(|(_, _, moves)| moves.iter().map(|m| m.key)).collect::<Vec<_>>();
            levels::lock(&mut tx, org_id, touched, ar_date(now)).await?
        }
    };
    let mut planned = Vec::with_capacity(wanted.len());
    let mut refusals = false;
    for (i, _, moves) in wanted {
        let before = levels.clone();
        let decided = plan(&mut levels, &moves)
            .and_then(|(changes, shortfalls)| Ok((changes, apply_policy(policy, shortfalls)?)));
        match decided {
            Ok((own, warnings)) => planned.push((i, own, warnings)),
            Err(refused) => {
                levels = before;
                refusals = true;
                results[i] = Some(Err(refused.into()));
            }
        }
    }

    // 5. The writes: the levels where they ended (unless the locking statement already put them
    // there), every accepted movement's event, every accepted outcome.
    if planned.is_empty() {
        tx.rollback().await?;
    } else {
        if deltas.is_none() || refusals {
            let ended: BTreeMap<Key, Quantity> = levels.iter().map(|(key, level)| (*key, level.on_hand)).collect();
            levels::write_on_hand(&mut tx, org_id, &ended).await?;
        }
        let appends: Vec<AppendRequest> = planned
            .iter()
            .map(|(i, own, _)| {
                let member = &members[*i];
                let stream = StreamRef {
                    org_id,
                    stream_type: StockMovementEvent::STREAM_TYPE,
                    stream_id: member.command.id,
                    expected_version: 0,
                };
                let event = movement_event(member.command, own.clone()).to_new_event()?;
                Ok(AppendRequest { stream, events: vec![event], metadata: member.metadata.clone() })
            })
            .collect::<Result<_, serde_json::Error>>()?;
        let appended = match events::store::append_many(&mut tx, &appends).await {
            Ok(appended) => appended,
            Err(AppendError::Conflict { stream_id, .. }) => return Err(ExecuteError::Contended(stream_id)),
            Err(AppendError::Database(error)) => return Err(error.into()),
        };
        let mut outcomes = Vec::with_capacity(appended.len());
        for ((i, own, warnings), appended) in planned.into_iter().zip(appended) {
            let member = &members[i];
            outcomes.push((i, movement_reply(member.command, own, warnings, appended.key, appended.recorded_at)?));
        }
        let stored: Vec<(&Idempotency, &CommandReply)> =
            outcomes.iter().map(|(i, reply)| (members[*i].claim, reply)).collect();
        crate::engine::store_outcomes(&mut tx, org_id, &stored).await?;
        tx.commit().await?;
        for (i, reply) in outcomes {
            results[i] = Some(Ok(reply));
        }
    }
    Ok(answers(results))
}

/// Every member's result (each was given one; a gap would be a bug, answered as a storage failure).
fn answers(results: Vec<Option<Result<CommandReply, ExecuteError>>>) -> Vec<Result<CommandReply, ExecuteError>> {
    results.into_iter().map(|result| result.unwrap_or_else(|| Err(sqlx::Error::RowNotFound.into()))).collect()
}
