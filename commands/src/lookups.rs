//! What a domain reads of other domains' streams to check and plan a document, in one place every
//! domain calls: the facts of product variants and the latest state of their groups.

use crate::engine::{ExecuteError, WithId, load};
use events::catalogue::ProductGroup;
use sqlx::PgConnection;
use std::collections::BTreeMap;
use uuid::Uuid;

/// What the assessment needs to know of each variant a purchase names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantFacts {
    pub group_id: Uuid,
    pub product_type: String,
    pub is_active: bool,
    pub tax_rate_id: i32,
    /// Cents (a product's cost may stand past [`Cents::MAX`] after bulk adjustments: see
    /// `products::Change`).
    pub cost: i64,
}

impl VariantFacts {
    /// The facts of `variant` in its group's state.
    pub fn of(group_id: Uuid, group: &ProductGroup, variant: Uuid) -> Option<Self> {
        let v = group.variants.iter().find(|v| v.id == variant)?;
        Some(Self {
            group_id,
            product_type: group.shared.product_type.clone(),
            is_active: v.is_active,
            tax_rate_id: group.shared.tax_rate_id,
            cost: v.cost,
        })
    }
}

/// The latest state of each product group, by group id, with its stream version.
pub(crate) type Groups = BTreeMap<Uuid, (i32, ProductGroup)>;

/// The facts of each of `variants` that is a product variant of the organization, and the latest state
/// of their groups (every product event carries its group's whole state, so the latest one is it).
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
            let (_, state) = groups.get(group)?;
            VariantFacts::of(*group, state, *variant).map(|f| (*variant, f))
        })
        .collect();
    Ok((facts, groups))
}

/// The latest state of each of the organization's product groups `ids`, with its stream version.
pub(crate) async fn latest_groups(conn: &mut PgConnection, org_id: Uuid, ids: &[Uuid]) -> Result<Groups, ExecuteError> {
    let latest: Vec<(Uuid, i32, serde_json::Value)> = sqlx::query_as(
        "select distinct on (stream_id) stream_id, version, data from events
         where org_id = $1 and stream_type = 'product' and stream_id = any($2)
         order by stream_id, version desc",
    )
    .bind(org_id)
    .bind(ids)
    .fetch_all(&mut *conn)
    .await?;
    let mut groups = Groups::new();
    for (id, version, data) in latest {
        let group: ProductGroup = serde_json::from_value(data).map_err(|e| ExecuteError::Corrupt(id, e.to_string()))?;
        groups.insert(id, (version, group));
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
