//! What a domain reads of other domains' streams to check and plan a document, in one place every
//! domain calls: the facts of product variants and the latest state of their groups.

use crate::engine::{ExecuteError, WithId, load};
use events::EventPayload;
use events::catalogue::{ProductEvent, ProductGroup, ProductType, WHOLE_GROUP_EVERY};
use events::domain::{Adjustment, Cents, VatRate};
use sqlx::PgConnection;
use std::collections::BTreeMap;
use uuid::Uuid;

/// What the assessment needs to know of each variant a purchase names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantFacts {
    pub group_id: Uuid,
    pub product_type: ProductType,
    pub is_active: bool,
    pub tax_rate_id: VatRate,
    pub cost: Cents,
    /// The group's automatic margin, which a new cost must leave a price in range under.
    pub markup: Option<Adjustment>,
}

impl VariantFacts {
    /// The facts of `variant` in its group's state.
    pub fn of(group_id: Uuid, group: &ProductGroup, variant: Uuid) -> Option<Self> {
        let v = group.variants.iter().find(|v| v.id == variant)?;
        Some(Self {
            group_id,
            product_type: group.shared.product_type,
            is_active: v.is_active,
            tax_rate_id: group.shared.tax_rate_id,
            cost: v.cost,
            markup: group.shared.markup_hundredths,
        })
    }

    /// An active physical product of `group_id` at 21% VAT, without cost or margin: what the deciders'
    /// tests stock.
    #[cfg(test)]
    pub(crate) fn plain_product(group_id: Uuid) -> Self {
        Self {
            group_id,
            product_type: ProductType::Product,
            is_active: true,
            tax_rate_id: VatRate::GENERAL,
            cost: Cents::ZERO,
            markup: None,
        }
    }
}

/// The latest state of a product group, with its stream version and how many events since the last
/// one that carried the whole group (see [`events::catalogue::WHOLE_GROUP_EVERY`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupState {
    pub version: i32,
    pub group: ProductGroup,
    pub run_since_whole: usize,
}

/// The latest state of each product group, by group id.
pub(crate) type Groups = BTreeMap<Uuid, GroupState>;

/// The facts of each of `variants` that is a product variant of the organization, and the latest state
/// of their groups.
pub(crate) async fn load_products(
    conn: &mut PgConnection,
    org_id: Uuid,
    variants: &[Uuid],
) -> Result<(BTreeMap<Uuid, VariantFacts>, Groups), ExecuteError> {
    let rows: Vec<(Uuid, Uuid)> =
        sqlx::query_as("select variant_id, group_id from product_variants where org_id = $1 and variant_id = any($2)")
            .bind(org_id)
            .bind(variants)
            .fetch_all(&mut *conn)
            .await?;
    let group_ids: Vec<Uuid> = rows.iter().map(|r| r.1).collect();
    let groups = latest_groups(conn, org_id, &group_ids).await?;
    let facts = rows
        .iter()
        .filter_map(|(variant, group)| {
            let state = groups.get(group)?;
            VariantFacts::of(*group, &state.group, *variant).map(|f| (*variant, f))
        })
        .collect();
    Ok((facts, groups))
}

/// The latest state of each of the organization's product groups `ids`: the fold of each stream's
/// events from the last that carries the whole group, which is among its latest
/// [`WHOLE_GROUP_EVERY`] (one query for all of them, reading the payloads of those events only).
pub(crate) async fn latest_groups(conn: &mut PgConnection, org_id: Uuid, ids: &[Uuid]) -> Result<Groups, ExecuteError> {
    // Newest first within each stream.
    let latest: Vec<(Uuid, i32, String, i32, serde_json::Value)> = sqlx::query_as(
        "select g.id, e.version, e.event_type, e.schema_version, e.data
           from unnest($2::uuid[]) as g(id)
           cross join lateral (
                select max(version) as version from (
                    select version, event_type from events
                     where org_id = $1 and stream_type = 'product' and stream_id = g.id
                     order by version desc limit $3) recent
                 where event_type <> 'ProductVariantsUpdated') whole
           cross join lateral (
                select version, event_type, schema_version, data from events
                 where org_id = $1 and stream_type = 'product' and stream_id = g.id and version >= whole.version
                 order by version desc) e
          order by g.id, e.version desc",
    )
    .bind(org_id)
    .bind(ids)
    .bind(WHOLE_GROUP_EVERY as i64)
    .fetch_all(&mut *conn)
    .await?;
    let decoded: Vec<(Uuid, i32, ProductEvent)> = latest
        .into_iter()
        .map(|(id, version, event_type, schema, data)| {
            ProductEvent::decode(&event_type, schema, data)
                .map(|event| (id, version, event))
                .map_err(|e| ExecuteError::Corrupt(id, e.to_string()))
        })
        .collect::<Result<_, _>>()?;
    let mut groups = Groups::new();
    for stream in decoded.chunk_by(|a, b| a.0 == b.0) {
        let (id, version) = (stream[0].0, stream[0].1);
        let corrupt = |why: String| ExecuteError::Corrupt(id, why);
        let whole = stream
            .iter()
            .position(|(_, _, event)| event.is_whole())
            .ok_or_else(|| corrupt(format!("no whole group among its latest {WHOLE_GROUP_EVERY} events")))?;
        let group = stream[..=whole].iter().rev().fold(None, |group, (_, _, event)| event.fold(group));
        let group = group.ok_or_else(|| corrupt("a whole group folds to a group".into()))?;
        groups.insert(id, GroupState { version, group, run_since_whole: whole });
    }
    Ok(groups)
}

/// Whether each of `ids` (each loaded once) is a stream of the organization whose state `is_active`
/// accepts: the warehouses or payment methods a document names.
pub async fn active<A: WithId>(
    conn: &mut PgConnection,
    org_id: Uuid,
    ids: &[Uuid],
    is_active: fn(&A) -> bool,
) -> Result<BTreeMap<Uuid, bool>, ExecuteError> {
    let mut found = BTreeMap::new();
    for &id in ids {
        if let std::collections::btree_map::Entry::Vacant(entry) = found.entry(id) {
            entry.insert(load::<A>(conn, org_id, id).await?.0.is_some_and(|state| is_active(&state)));
        }
    }
    Ok(found)
}
