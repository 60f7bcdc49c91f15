//! Keyed stock movements of one organization that reach a worker in one batch run together, in one
//! transaction, each decided exactly as if it had come alone:
//!
//! 1. one statement claims every key (`idempotency_claims`: each key's lock, then its stored outcome)
//!    and reads the organization's policy; a key held elsewhere answers `IDEMPOTENCY_IN_PROGRESS`, a
//!    stored one is replayed (or conflicts);
//! 2. the warehouses (one load each) and the products (one statement) are checked for all of them;
//! 3. every level any of them touches is locked by one statement, in key order, as a lone command
//!    locks its own; when none of them is a count, that statement also adds all their quantities;
//! 4. each movement is planned in batch order against the levels the ones before it left, and a
//!    refused one (a shortfall under `block`, a level out of bounds) leaves them as they were;
//! 5. the levels are written where the plans left them (only after a count or a refusal: otherwise the
//!    locking statement put them there), then every accepted movement's event (one append) and every
//!    accepted outcome under its key (one insert), and the transaction commits.
//!
//! About eight statements for the whole group, where a lone movement takes ten of its own. A refusal
//! writes nothing of its own and stores no outcome, as alone. A failure of the group as a whole (an
//! error from the database) rolls everything back and the engine runs the movements one by one.

use super::handler::{
    movement_event, movement_moves, movement_reply, product_types, products_verdict, warehouse_verdict,
};
use super::levels::{self, Key};
use super::{NegativeStock, StockMovementCommand, apply_policy, plan};
use crate::engine::{ExecuteError, load, reject_fields};
use crate::protocol::{CommandReply, Idempotency};
use crate::records::Warehouse;
use events::catalogue::{StockChange, StockMovementEvent, ar_date};
use events::domain::Quantity;
use events::store::{AppendError, AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgPool;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use time::OffsetDateTime;
use uuid::Uuid;

/// One movement of the group, with its key and the metadata its event carries.
pub struct Member<'a> {
    pub command: &'a StockMovementCommand,
    pub claim: &'a Idempotency,
    pub metadata: Metadata,
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

    // 1. The keys.
    let keys: Vec<&str> = members.iter().map(|m| m.claim.key.as_str()).collect();
    // The organization's policy comes with them (read earlier than alone, in the same transaction).
    type Claim = (bool, Option<String>, Option<Vec<u8>>, Option<serde_json::Value>, Option<String>);
    let claims: Vec<Claim> = sqlx::query_as(
        "select c.locked, c.operation, c.request_hash, c.response, o.negative_stock
         from idempotency_claims($1, $2) with ordinality as c(locked, operation, request_hash, response, n)
         left join organizations o on o.id = $1
         order by c.n",
    )
    .bind(org_id)
    .bind(&keys)
    .fetch_all(&mut *tx)
    .await?;
    if claims.len() != members.len() {
        return Err(sqlx::Error::RowNotFound.into());
    }
    let policy =
        claims.first().and_then(|c| c.4.as_deref()).and_then(NegativeStock::parse).unwrap_or(NegativeStock::Allow);
    let mut running = Vec::with_capacity(members.len());
    for (i, (member, claim)) in members.iter().zip(claims).enumerate() {
        match claim {
            (false, ..) => results[i] = Some(Err(crate::engine::in_progress())),
            (true, Some(operation), Some(hash), Some(response), _) => {
                results[i] = Some(crate::engine::replay(org_id, member.claim, &operation, &hash, response));
            }
            (true, ..) => running.push(i),
        }
    }

    // 2. The references.
    let warehouses: BTreeSet<Uuid> = running.iter().map(|&i| members[i].command.warehouse_id).collect();
    let mut active = HashMap::with_capacity(warehouses.len());
    for warehouse in warehouses {
        let found = load::<Warehouse>(&mut tx, org_id, warehouse).await?.0;
        active.insert(warehouse, found.map(|w| w.fields.is_active));
    }
    let variants: BTreeSet<Uuid> =
        running.iter().flat_map(|&i| members[i].command.lines.iter().map(|l| l.variant_id)).collect();
    let types = product_types(&mut tx, org_id, &variants.into_iter().collect::<Vec<_>>()).await?;
    let mut checked = Vec::with_capacity(running.len());
    for i in running {
        let command = members[i].command;
        let mut errors = Vec::new();
        let verdict = warehouse_verdict(
            active.get(&command.warehouse_id).copied().flatten(),
            command.warehouse_id,
            "warehouse_id",
            &mut errors,
        )
        .and_then(|()| {
            products_verdict(&types, &command.lines, "lines", false, &mut errors);
            reject_fields(errors)
        });
        match verdict {
            Ok(()) => checked.push(i),
            Err(refused) => results[i] = Some(Err(refused)),
        }
    }

    if checked.is_empty() {
        tx.rollback().await?;
        return Ok(results
            .into_iter()
            .map(|result| result.unwrap_or_else(|| Err(sqlx::Error::RowNotFound.into())))
            .collect());
    }

    // 3 and 4. The levels, and each movement's plan in turn. When every movement adds or takes (none
    // counts), the locking statement adds all their quantities at once, as a lone movement's does; the
    // levels are written again only if a refusal makes them end elsewhere.
    let now = OffsetDateTime::now_utc();
    let mut deltas: Option<BTreeMap<Key, i64>> = Some(BTreeMap::new());
    for &i in &checked {
        let command = members[i].command;
        match (movement_moves(command).0, deltas.as_mut()) {
            (Some(own), Some(all)) => {
                for (key, delta) in own {
                    *all.entry(key).or_default() += delta;
                }
            }
            _ => deltas = None,
        }
    }
    let mut levels = match &deltas {
        Some(deltas) => levels::lock_adding(&mut tx, org_id, deltas, ar_date(now)).await?,
        None => {
            let mut touched = Vec::new();
            for &i in &checked {
                let command = members[i].command;
                touched.extend(command.lines.iter().map(|l| (l.variant_id, command.warehouse_id)));
            }
            levels::lock(&mut tx, org_id, touched, ar_date(now)).await?
        }
    };
    let mut planned = Vec::with_capacity(checked.len());
    let mut refusals = false;
    for i in checked {
        let command = members[i].command;
        let (_, moves) = movement_moves(command);
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
            let ended: Vec<StockChange> = levels
                .iter()
                .map(|(&(variant_id, warehouse_id), level)| StockChange {
                    variant_id,
                    warehouse_id,
                    quantity: Quantity::default(),
                    on_hand: level.on_hand,
                })
                .collect();
            levels::write(&mut tx, org_id, &ended).await?;
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
                let event = movement_event(member.command, own.clone()).to_new_event();
                AppendRequest { stream, events: vec![event], metadata: member.metadata.clone() }
            })
            .collect();
        let appended = match events::store::append_many(&mut tx, &appends).await {
            Ok(appended) => appended,
            Err(AppendError::Conflict { stream_id, .. }) => return Err(ExecuteError::Contended(stream_id)),
            Err(AppendError::Database(error)) => return Err(error.into()),
        };
        let (mut stored_keys, mut operations, mut hashes, mut responses) = (vec![], vec![], vec![], vec![]);
        for ((i, own, warnings), appended) in planned.into_iter().zip(appended) {
            let member = &members[i];
            let reply = movement_reply(member.command, own, warnings, appended.key, appended.recorded_at);
            stored_keys.push(member.claim.key.as_str());
            operations.push(member.claim.operation.as_str());
            hashes.push(hex::decode(&member.claim.request_hash).unwrap_or_default());
            responses.push(serde_json::to_string(&reply).unwrap_or_default());
            results[i] = Some(Ok(reply));
        }
        sqlx::query(
            "insert into idempotency_keys (org_id, key, operation, request_hash, response)
             select $1, k, o, h, r::jsonb from unnest($2::text[], $3::text[], $4::bytea[], $5::text[]) as t(k, o, h, r)",
        )
        .bind(org_id)
        .bind(&stored_keys)
        .bind(&operations)
        .bind(&hashes)
        .bind(&responses)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    }
    Ok(results.into_iter().map(|result| result.unwrap_or_else(|| Err(sqlx::Error::RowNotFound.into()))).collect())
}
