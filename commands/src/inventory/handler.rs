//! How the workers run stock movements and transfers: in a transaction of their own, checking the
//! warehouses and products, locking the levels they touch, deciding under the organization's policy,
//! then writing the levels and appending the document's one event.

use super::levels::{self, Key};
use super::movement::{
    movement_event, movement_moves, movement_references, movement_reply, products_verdict, warehouse_verdict,
};
use super::{
    Move, NegativeStock, StockMovementCommand, StockTransferCommand, TransferOutcome, WantedMove, apply_policy,
    expand_combos, plan, retired_component,
};
use crate::aggregate::Rejection;
use crate::engine::{ExecuteError, load, reject_fields};
use crate::handler::{Batching, Commit, handler};
use crate::records::Warehouse;
use crate::reply::CommandReply;
use crate::validate::FieldError;
use events::catalogue::{ProductType, StockLine, StockMovementEvent, StockTransferEvent, StockTransferred, ar_date};
use events::store::{AppendRequest, StreamRef};
use events::unnest::Unnest;
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use std::collections::{BTreeMap, HashMap};
use time::OffsetDateTime;
use uuid::Uuid;

/// The organization's negative-stock policy (read in the command's transaction); the default for an
/// organization without a registry row. A stored name the type does not know is an error.
pub async fn negative_stock_policy(conn: &mut PgConnection, org_id: Uuid) -> Result<NegativeStock, sqlx::Error> {
    let policy: Option<NegativeStock> = sqlx::query_scalar("select negative_stock from organizations where id = $1")
        .bind(org_id)
        .fetch_optional(conn)
        .await?;
    Ok(policy.unwrap_or_default())
}

/// A warehouse a command moves stock in: of the organization and active (else `not_found` on `field`).
async fn check_warehouse(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Result<(), ExecuteError> {
    let active = load::<Warehouse>(conn, org_id, id).await?.0.map(|w| w.fields.is_active);
    warehouse_verdict(active, field, errors);
    Ok(())
}

/// The product type of each of `ids` that is a variant of the organization.
pub async fn product_types(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, ProductType>, sqlx::Error> {
    types_of(conn, org_id, ids, false).await
}

/// The product type of each of `ids` that is an active variant of the organization: what stock
/// commands may move (an inactive product is refused as a missing one).
pub async fn active_product_types(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, ProductType>, sqlx::Error> {
    types_of(conn, org_id, ids, true).await
}

async fn types_of(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: &[Uuid],
    active_only: bool,
) -> Result<HashMap<Uuid, ProductType>, sqlx::Error> {
    let rows: Vec<(Uuid, ProductType)> = sqlx::query_as(
        "select variant_id, product_type from product_variants
         where org_id = $1 and variant_id = any($2) and (is_active or not $3)",
    )
    .bind(org_id)
    .bind(ids)
    .bind(active_only)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().collect())
}

/// The components of each combo among `ids`.
pub async fn combo_components(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<BTreeMap<Uuid, Vec<StockLine>>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    let rows: Vec<(Uuid, Uuid, events::domain::Quantity)> = sqlx::query_as(
        "select combo_id, component_id, quantity from product_components
         where org_id = $1 and combo_id = any($2) order by combo_id, component_id",
    )
    .bind(org_id)
    .bind(ids)
    .fetch_all(conn)
    .await?;
    let mut out: BTreeMap<Uuid, Vec<StockLine>> = BTreeMap::new();
    for (combo, component, quantity) in rows {
        out.entry(combo).or_default().push(StockLine { variant_id: component, quantity });
    }
    Ok(out)
}

/// The components that are no active product of the organization (deactivated after a combo listed
/// them) of each combo among `ids` that has any, in id order; combos whose components are all active
/// are left out. Such a combo is refused where it would move stock ([`super::retired_component`]).
pub async fn inactive_components(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<BTreeMap<Uuid, Vec<Uuid>>, sqlx::Error> {
    Ok(combos_and_retired(conn, org_id, ids).await?.1)
}

/// [`combo_components`] and [`inactive_components`] of `ids` together, in one read of the components.
#[allow(clippy::type_complexity, reason = "the two maps the two functions answer")]
pub async fn combos_and_retired(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<(BTreeMap<Uuid, Vec<StockLine>>, BTreeMap<Uuid, Vec<Uuid>>), sqlx::Error> {
    if ids.is_empty() {
        return Ok((BTreeMap::new(), BTreeMap::new()));
    }
    let rows: Vec<(Uuid, Uuid, events::domain::Quantity, bool)> = sqlx::query_as(
        "select c.combo_id, c.component_id, c.quantity, coalesce(v.is_active, false) from product_components c
         left join product_variants v on v.variant_id = c.component_id and v.org_id = c.org_id
         where c.org_id = $1 and c.combo_id = any($2)
         order by c.combo_id, c.component_id",
    )
    .bind(org_id)
    .bind(ids)
    .fetch_all(conn)
    .await?;
    let (mut components, mut retired): (BTreeMap<Uuid, Vec<StockLine>>, BTreeMap<Uuid, Vec<Uuid>>) = Default::default();
    for (combo, component, quantity, active) in rows {
        components.entry(combo).or_default().push(StockLine { variant_id: component, quantity });
        if !active {
            retired.entry(combo).or_default().push(component);
        }
    }
    Ok((components, retired))
}

/// Keeps `product_components` in step with a product write: the components of each of `variants` (a
/// combo has one variant; other products have none).
pub async fn write_components(
    conn: &mut PgConnection,
    org_id: Uuid,
    variants: impl Iterator<Item = Uuid>,
    components: &[events::catalogue::ComboComponent],
) -> Result<(), sqlx::Error> {
    let variants: Vec<Uuid> = variants.collect();
    sqlx::query("delete from product_components where org_id = $1 and combo_id = any($2)")
        .bind(org_id)
        .bind(&variants)
        .execute(&mut *conn)
        .await?;
    // Every combo variant holds every component.
    let rows: Vec<(Uuid, &events::catalogue::ComboComponent)> =
        variants.iter().flat_map(|combo| components.iter().map(|c| (*combo, c))).collect();
    Unnest::new(&rows)
        .constant("org_id", org_id)
        .column("combo_id", |(combo, _)| *combo)
        .column("component_id", |(_, c)| c.variant_id)
        .column("quantity", |(_, c)| c.quantity.thousandths())
        .execute(conn, "insert into product_components", "")
        .await?;
    Ok(())
}

/// Each line's product must be a variant of the organization (`not_found`) that holds stock: not a
/// service, and not a combo unless `combos_allowed`.
async fn check_products(
    conn: &mut PgConnection,
    org_id: Uuid,
    lines: &[StockLine],
    field: &str,
    combos_allowed: bool,
    errors: &mut Vec<FieldError>,
) -> Result<Vec<Uuid>, ExecuteError> {
    let ids: Vec<Uuid> = lines.iter().map(|l| l.variant_id).collect();
    let types = active_product_types(conn, org_id, &ids).await?;
    Ok(products_verdict(&types, lines, field, combos_allowed, errors))
}

/// Manual stock movements (`POST /api/v1/stock-movements`).
pub struct StockMovements;

handler! {
    impl Handler for StockMovements {
        type Command = StockMovementCommand;
        COMMIT: Commit::OwnTransaction,
        BATCHING: Batching::Shared,
        TOGETHER: Some(super::group::run_together),
        JOBS: &[super::reservations::SWEEP_RESERVATIONS];

        stream_id(command) {
            command.id
        }

        check_references(command, conn, org_id) {
            // One statement for the warehouse and the products, as a group reads them.
            let conn = conn.get().await?;
            let variants: Vec<Uuid> = command.lines.iter().map(|l| l.variant_id).collect();
            let found = movement_references(conn, org_id, &[command.warehouse_id], &variants).await?;
            let mut errors = Vec::new();
            let active = found.warehouses.get(&command.warehouse_id).copied().flatten();
            warehouse_verdict(active, "warehouse_id", &mut errors);
            products_verdict(&found.types, &command.lines, "lines", false, &mut errors);
            reject_fields(errors)
        }

        run_on(command, conn, org_id, metadata) {
            run_movement(command, conn, org_id, metadata).await
        }
    }
}

/// Moves the stock of one manual movement under the organization's policy and appends its event.
async fn run_movement(
    command: &StockMovementCommand,
    conn: &mut PgConnection,
    org_id: Uuid,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let now = OffsetDateTime::now_utc();
    let policy = negative_stock_policy(conn, org_id).await?;
    let (deltas, moves) = movement_moves(command);
    let mut locked = match &deltas {
        Some(deltas) => levels::lock_adding(conn, org_id, deltas, ar_date(now)).await?,
        None => {
            levels::lock(conn, org_id, command.lines.iter().map(|l| (l.variant_id, command.warehouse_id)), ar_date(now))
                .await?
        }
    };
    let (changes, shortfalls) = plan(&mut locked, &moves)?;
    let warnings = apply_policy(policy, shortfalls)?;
    if deltas.is_none() {
        levels::write(conn, org_id, &changes).await?;
    }
    let event = movement_event(command, changes.clone());
    let (commit, created_at) =
        append_document(conn, org_id, StockMovementEvent::STREAM_TYPE, command.id, event.to_new_event()?, metadata)
            .await?;
    Ok(movement_reply(command, changes, warnings, commit, created_at)?)
}

/// Appends the one event of a new document stream (a movement, a transfer): its commit key and when
/// it was recorded (the document's `created_at`, as reads show it).
pub(crate) async fn append_document(
    conn: &mut PgConnection,
    org_id: Uuid,
    stream_type: &'static str,
    id: Uuid,
    event: events::NewEvent,
    metadata: &Metadata,
) -> Result<(events::CommitKey, OffsetDateTime), ExecuteError> {
    let stream = StreamRef { org_id, stream_type, stream_id: id, expected_version: 0 };
    let request = AppendRequest { stream, events: vec![event], metadata: metadata.clone() };
    match events::store::append_many(conn, &[request]).await {
        Ok(appended) => {
            let first = appended.first().ok_or(ExecuteError::Contended(id))?;
            Ok((first.key, first.recorded_at))
        }
        Err(events::store::AppendError::Conflict { .. }) => Err(ExecuteError::Contended(id)),
        Err(events::store::AppendError::Database(e)) => Err(e.into()),
    }
}

/// Stock transfers between two warehouses (`POST /api/v1/stock-transfers`).
pub struct StockTransfers;

handler! {
    impl Handler for StockTransfers {
        type Command = StockTransferCommand;
        COMMIT: Commit::OwnTransaction,
        BATCHING: Batching::Shared,
        TOGETHER: None,
        JOBS: &[super::reservations::SWEEP_RESERVATIONS];

        stream_id(command) {
            command.id
        }

        check_references(command, conn, org_id) {
            let conn = conn.get().await?;
            let mut errors = Vec::new();
            check_warehouse(conn, org_id, command.origin_warehouse_id, "origin_warehouse_id", &mut errors).await?;
            check_warehouse(conn, org_id, command.destination_warehouse_id, "destination_warehouse_id", &mut errors)
                .await?;
            let combos = check_products(conn, org_id, &command.items, "items", true, &mut errors).await?;
            // A combo moves as its components: one no longer active refuses the combo's items.
            let retired = inactive_components(conn, org_id, &combos).await?;
            for (i, item) in command.items.iter().enumerate() {
                if let Some(components) = retired.get(&item.variant_id) {
                    errors.push(retired_component(format!("items[{i}].product_id"), components));
                }
            }
            reject_fields(errors)
        }

        run_on(command, conn, org_id, metadata) {
            run_transfer(command, conn, org_id, metadata).await
        }
    }
}

/// Moves the stock of one transfer, out of the origin and into the destination, under the
/// organization's policy, and appends its event.
async fn run_transfer(
    command: &StockTransferCommand,
    conn: &mut PgConnection,
    org_id: Uuid,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let now = OffsetDateTime::now_utc();
    let ids: Vec<Uuid> = command.items.iter().map(|l| l.variant_id).collect();
    let combos = combo_components(conn, org_id, &ids).await?;
    let lines = expand_combos(&command.items, &combos, "items").map_err(|errors| Rejection::Invalid { errors })?;
    let policy = negative_stock_policy(conn, org_id).await?;
    let (origin, destination) = (command.origin_warehouse_id, command.destination_warehouse_id);
    let keys = lines.iter().flat_map(|l| [(l.variant_id, origin), (l.variant_id, destination)]);
    let mut locked = levels::lock(conn, org_id, keys, ar_date(now)).await?;
    // A moved line names the request item it came from (the first one holding the variant, or the
    // combo that brought it).
    let field_of = |variant: Uuid| -> String {
        let index = command
            .items
            .iter()
            .position(|item| item.variant_id == variant)
            .or_else(|| {
                command.items.iter().position(|item| {
                    combos.get(&item.variant_id).is_some_and(|c| c.iter().any(|c| c.variant_id == variant))
                })
            })
            .unwrap_or(0);
        format!("items[{index}].quantity")
    };
    let mut moves = Vec::with_capacity(lines.len() * 2);
    for line in &lines {
        let (from, to): (Key, Key) = ((line.variant_id, origin), (line.variant_id, destination));
        moves.push(WantedMove { key: from, action: Move::Take(line.quantity), field: field_of(line.variant_id) });
        moves.push(WantedMove { key: to, action: Move::Add(line.quantity), field: field_of(line.variant_id) });
    }
    let (changes, shortfalls) = plan(&mut locked, &moves)?;
    let warnings = apply_policy(policy, shortfalls)?;
    levels::write(conn, org_id, &changes).await?;
    let event = StockTransferEvent::StockTransferred(StockTransferred {
        origin_warehouse_id: origin,
        destination_warehouse_id: destination,
        items: command.items.clone(),
        lines: lines.clone(),
        notes: command.notes.clone(),
        occurred_on: command.occurred_on,
        changes,
    });
    let (commit, created_at) =
        append_document(conn, org_id, StockTransferEvent::STREAM_TYPE, command.id, event.to_new_event()?, metadata)
            .await?;
    let outcome = TransferOutcome {
        id: command.id,
        origin_warehouse_id: origin,
        destination_warehouse_id: destination,
        items: lines,
        requested_items: command.items.clone(),
        notes: command.notes.clone(),
        occurred_on: command.occurred_on,
        warnings,
        created_at,
    };
    Ok(CommandReply::accepted(Some(commit), true, &outcome, Vec::new())?)
}
