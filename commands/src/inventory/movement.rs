//! The checks and plan of one stock movement, shared by a movement run alone ([`super::handler`]) and
//! movements run together ([`super::group`]): its references read in one statement, the verdicts on
//! its warehouse and products, the moves it wants, its event and its reply.

use super::levels::Key;
use super::{Move, MovementOutcome, MovementType, NegativeStock, StockMovementCommand, WantedMove};
use crate::engine::ExecuteError;
use crate::records::Warehouse;
use crate::reply::CommandReply;
use crate::validate::FieldError;
use events::catalogue::{ProductType, StockChange, StockLine, StockMovementEvent, StockMovementRecorded};
use sqlx::PgConnection;
use std::collections::{BTreeMap, HashMap};
use time::OffsetDateTime;
use uuid::Uuid;

/// [`check_warehouse`]'s verdict on the warehouse (`None`: not of the organization; else whether it is
/// active): a missing or an inactive one is unknown to a movement (404 on `field`, the spec's rule for
/// every reference, as quotes, orders and purchases have it).
pub(super) fn warehouse_verdict(active: Option<bool>, field: &str, errors: &mut Vec<FieldError>) {
    if active != Some(true) {
        errors.push(FieldError::new(field, "not_found", "no active warehouse of this organization has this id"));
    }
}

/// What movements (a group or a lone one) check before they lock, read by one statement: each
/// warehouse's state (`None`: not of the organization; else whether it is active), the product type
/// of each variant of the organization, and the negative-stock policy. The warehouses are folded from
/// their streams, as [`load`] does one.
pub(super) struct References {
    pub warehouses: HashMap<Uuid, Option<bool>>,
    pub types: HashMap<Uuid, ProductType>,
    pub policy: NegativeStock,
}

pub(super) async fn movement_references(
    conn: &mut PgConnection,
    org_id: Uuid,
    warehouses: &[Uuid],
    variants: &[Uuid],
) -> Result<References, ExecuteError> {
    use sqlx::Row;
    // One row for the organization's part (policy and products), joined to every event of the
    // warehouses' streams (none: one row without an event). Only the stream ids are in the events'
    // condition, for the `(stream_id, version)` index (see `events::store::load_stream`); the
    // organization is checked on the rows.
    let sql = format!(
        "select o.policy, o.types, e.*
         from (select (select negative_stock from organizations where id = $1) as policy,
                      (select coalesce(json_object_agg(variant_id, product_type), '{{}}') from product_variants
                       where org_id = $1 and variant_id = any($2) and is_active) as types) o
         left join lateral (select {columns} from events e where e.stream_id = any($3)) e on true
         order by e.stream_id, e.version",
        columns = events::store::EVENT_COLUMNS
    );
    let rows =
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(variants).bind(warehouses).fetch_all(conn).await?;
    let first = rows.first().ok_or(sqlx::Error::RowNotFound)?;
    // None only for an organization without a registry row: the default policy.
    let policy = first.try_get::<Option<NegativeStock>, _>("policy")?.unwrap_or_default();
    let types = first.try_get::<sqlx::types::Json<HashMap<Uuid, ProductType>>, _>("types")?.0;
    let mut streams: HashMap<Uuid, Vec<events::RecordedEvent>> = HashMap::new();
    for row in &rows {
        if row.try_get::<Option<Uuid>, _>("stream_id")?.is_some() {
            let event = events::store::event_from_row(row)?;
            if event.org_id == org_id {
                streams.entry(event.stream_id).or_default().push(event);
            }
        }
    }
    let mut states = HashMap::with_capacity(warehouses.len());
    for &id in warehouses {
        let stored = streams.remove(&id).unwrap_or_default();
        let warehouse = crate::engine::fold_stream::<Warehouse>(id, &stored)?.0;
        states.insert(id, warehouse.map(|w| w.fields.is_active));
    }
    Ok(References { warehouses: states, types, policy })
}

/// [`check_products`]'s verdict on the lines, given the product type of every variant of the
/// organization among them: the combos among the lines.
pub(super) fn products_verdict(
    types: &HashMap<Uuid, ProductType>,
    lines: &[StockLine],
    field: &str,
    combos_allowed: bool,
    errors: &mut Vec<FieldError>,
) -> Vec<Uuid> {
    let mut combos = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let path = format!("{field}[{i}].product_id");
        match types.get(&line.variant_id) {
            None => errors.push(FieldError::new(path, "not_found", "no active product of this organization has this id")),
            Some(ProductType::Service) => {
                errors.push(FieldError::new(path, "not_stocked", "a service holds no stock"));
            }
            Some(ProductType::Combo) if !combos_allowed => errors.push(FieldError::new(
                path,
                "not_stocked",
                "a combo holds no stock of its own: move its components",
            )),
            Some(ProductType::Combo) => combos.push(line.variant_id),
            Some(ProductType::Product) => {}
        }
    }
    combos
}

/// What a movement asks of the levels: its moves, in line order, and, for a movement in or out, the
/// quantity it adds to each level (a count sets levels to what it finds, which only the plan knows).
pub(super) fn movement_moves(command: &StockMovementCommand) -> (Option<BTreeMap<Key, i64>>, Vec<WantedMove>) {
    let warehouse = command.warehouse_id;
    // In and out add or take known quantities: the locking statement can write them too, and the plan
    // (from the levels as they were) ends exactly there.
    let sign = match command.movement_type {
        MovementType::In => Some(1),
        MovementType::Out => Some(-1),
        MovementType::Count => None,
    };
    let deltas = sign.map(|sign| {
        let mut deltas = BTreeMap::new();
        for line in &command.lines {
            *deltas.entry((line.variant_id, warehouse)).or_default() += sign * line.quantity.thousandths();
        }
        deltas
    });
    let moves = command
        .lines
        .iter()
        .enumerate()
        .map(|(i, line)| WantedMove {
            key: (line.variant_id, warehouse),
            action: match command.movement_type {
                MovementType::In => Move::Add(line.quantity),
                MovementType::Out => Move::Take(line.quantity),
                MovementType::Count => Move::Set(line.quantity),
            },
            field: format!("lines[{i}].quantity"),
        })
        .collect();
    (deltas, moves)
}

/// The movement's one event, with the changes its plan made.
pub(super) fn movement_event(command: &StockMovementCommand, changes: Vec<StockChange>) -> StockMovementEvent {
    StockMovementEvent::StockMovementRecorded(StockMovementRecorded {
        movement_type: command.movement_type.as_str().to_owned(),
        warehouse_id: command.warehouse_id,
        reason: command.reason.clone(),
        occurred_on: command.occurred_on,
        lines: command.lines.clone(),
        changes,
    })
}

/// The reply to a recorded movement.
pub(super) fn movement_reply(
    command: &StockMovementCommand,
    changes: Vec<StockChange>,
    warnings: Vec<super::StockShortfall>,
    commit: events::CommitKey,
    created_at: OffsetDateTime,
) -> Result<CommandReply, serde_json::Error> {
    let outcome = MovementOutcome {
        id: command.id,
        movement_type: command.movement_type,
        warehouse_id: command.warehouse_id,
        reason: command.reason.clone(),
        occurred_on: command.occurred_on,
        lines: command.lines.clone(),
        changes,
        warnings,
        created_at,
    };
    CommandReply::accepted(Some(commit), true, &outcome, Vec::new())
}
