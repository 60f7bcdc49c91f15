//! The checks and stock steps purchases and purchase orders share: the products and their latest
//! groups, the supplier and warehouse a document names, blockers into one refusal, the stock lines a
//! document raises and the cost updates it records.

use super::{Blocker, VariantFacts};
use crate::aggregate::Rejection;
use crate::contacts::Supplier;
use crate::engine::{ExecuteError, load};
use crate::inventory::levels::{self, Key, Level};
use crate::inventory::{Move, WantedMove, combo_components, expand_combos, plan};
use crate::lookups::Groups;
use crate::records::Warehouse;
use events::catalogue::{CostUpdate, ProductEvent, StockChange, StockLine, ar_date};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use std::collections::BTreeMap;
use time::OffsetDateTime;
use uuid::Uuid;

/// Where a warehouse stands for a document that moves stock there.
pub(crate) async fn warehouse_blocker(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    path: &str,
) -> Result<Option<Blocker>, ExecuteError> {
    Ok(match load::<Warehouse>(conn, org_id, id).await?.0 {
        None => Some(Blocker::new(path, "INVENTORY", "not_found", "no warehouse of this organization has this id")),
        Some(w) if !w.fields.is_active => {
            Some(Blocker::new(path, "INVENTORY", "inactive", "the warehouse is inactive"))
        }
        Some(_) => None,
    })
}

/// The supplier must be one of the organization's, and active.
pub(crate) async fn supplier_blocker(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
) -> Result<Option<Blocker>, ExecuteError> {
    Ok(match load::<Supplier>(conn, org_id, id).await?.0 {
        None => {
            Some(Blocker::new("supplierId", "SUPPLIER", "not_found", "no supplier of this organization has this id"))
        }
        Some(s) if !s.is_active => Some(Blocker::new("supplierId", "SUPPLIER", "inactive", "the supplier is inactive")),
        Some(_) => None,
    })
}

/// The stock a document raises in `warehouse`: products as they are, combos as their components (whole
/// units), services not at all.
pub(crate) async fn stocked_lines(
    conn: &mut PgConnection,
    org_id: Uuid,
    lines: impl Iterator<Item = (Uuid, events::domain::Quantity)>,
    facts: &BTreeMap<Uuid, VariantFacts>,
) -> Result<Vec<StockLine>, ExecuteError> {
    let lines: Vec<StockLine> = lines
        .filter(|(variant, _)| facts.get(variant).is_some_and(|f| f.product_type.is_stocked()))
        .map(|(variant_id, quantity)| StockLine { variant_id, quantity })
        .collect();
    let combos: Vec<Uuid> = lines
        .iter()
        .filter(|l| facts.get(&l.variant_id).is_some_and(|f| f.product_type.is_combo()))
        .map(|l| l.variant_id)
        .collect();
    let components = combo_components(conn, org_id, &combos).await?;
    expand_combos(&lines, &components, "items").map_err(|errors| Rejection::Invalid { errors }.into())
}

/// Adds `lines` to the levels of `warehouse`: locked and written when `commit`, otherwise only read
/// (a preview takes no lock and writes nothing). The changes, each with the on-hand it leaves.
pub(crate) async fn add_stock(
    conn: &mut PgConnection,
    org_id: Uuid,
    warehouse: Uuid,
    lines: &[StockLine],
    commit: bool,
) -> Result<Vec<StockChange>, ExecuteError> {
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    let today = ar_date(OffsetDateTime::now_utc());
    let keys = lines.iter().map(|l| (l.variant_id, warehouse));
    let mut current: BTreeMap<Key, Level> = if commit {
        levels::lock(conn, org_id, keys, today).await?
    } else {
        levels::peek(conn, org_id, keys, today).await?
    };
    let moves: Vec<WantedMove> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| WantedMove {
            key: (l.variant_id, warehouse),
            action: Move::Add(l.quantity),
            field: format!("items[{i}].quantity"),
        })
        .collect();
    let (changes, _) = plan(&mut current, &moves)?;
    if commit {
        levels::write(conn, org_id, &changes).await?;
    }
    Ok(changes)
}

/// The event of every group whose costs a document moves (prices under automatic margin pricing
/// follow), carrying only the variants that changed ([`crate::products::variants_updated`]), each
/// expecting the version it was read at.
pub(crate) fn cost_appends(
    org_id: Uuid,
    updates: &[CostUpdate],
    facts: &BTreeMap<Uuid, VariantFacts>,
    groups: &Groups,
    metadata: &Metadata,
) -> Result<Vec<AppendRequest>, ExecuteError> {
    let mut by_group: BTreeMap<Uuid, Vec<&CostUpdate>> = BTreeMap::new();
    for update in updates {
        if let Some(fact) = facts.get(&update.variant_id) {
            by_group.entry(fact.group_id).or_default().push(update);
        }
    }
    let mut requests = Vec::new();
    for (group_id, updates) in by_group {
        let Some(state) = groups.get(&group_id) else { continue };
        let mut next = state.group.clone();
        for update in updates {
            if let Some(variant) = next.variants.iter_mut().find(|v| v.id == update.variant_id) {
                variant.cost = update.current;
            }
        }
        next.reprice().map_err(|out| {
            Rejection::invalid("items", "out_of_range", format!("the new cost of product {} gives a price too large", out.variant_id))
        })?;
        let Some(event) = crate::products::variants_updated(group_id, state, next) else { continue };
        let stream =
            StreamRef { org_id, stream_type: ProductEvent::STREAM_TYPE, stream_id: group_id, expected_version: state.version };
        requests.push(AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() });
    }
    Ok(requests)
}
