//! How the workers run product commands. Product writes run in a transaction of their own because they
//! keep `product_variants` (variant → group, SKU, supplier, category) in step with their events; bulk
//! adjustments select their variants there and append every changed group in one statement.

use crate::aggregate::Rejection;
use crate::contacts::Supplier;
use crate::engine::{
    Conn, ExecuteError, NoFollowUps, Sink, WithId, accepted, append_together, execute, load, reject_fields,
};
use crate::handler::{Batching, Commit, handler};
use crate::lookups::latest_groups;
use crate::metafields::metafield_violation;
use crate::products::{BulkAdjustment, Product, ProductCommand, adjust_group};
use crate::records::{Category, Warehouse};
use crate::reply::CommandReply;
use crate::tags::{Tag, tagged_products};
use crate::validate::FieldError;
use events::catalogue::ProductType;
use events::store::{AppendRequest, StreamRef};
use events::unnest::Unnest;
use events::{EventPayload, Metadata};
use sqlx::PgConnection;
use uuid::Uuid;

impl WithId for Product {
    type FollowUps = NoFollowUps;

    fn with_id(self, id: Uuid) -> Self {
        Product { id, ..self }
    }
}

handler! {
    impl Handler for Product {
        type Command = ProductCommand;
        COMMIT: Commit::OwnTransaction,
        BATCHING: Batching::Alone,
        TOGETHER: None,
        JOBS: &[];

        stream_id(command) {
            command.target_id()
        }

        check_references(command, conn, org_id) {
            check_product_references(conn.get().await?, org_id, command).await
        }

        run(command, conn, sink, org_id, metadata) {
            run_product(conn, sink, org_id, command, metadata).await
        }
    }
}

/// Bulk cost and price adjustments over the variants a filter selects.
pub struct BulkAdjustments;

handler! {
    impl Handler for BulkAdjustments {
        type Command = BulkAdjustment;
        COMMIT: Commit::OwnTransaction,
        BATCHING: Batching::Alone,
        TOGETHER: None,
        JOBS: &[];

        stream_id(command) {
            command.id
        }

        /// The filter's references are checked while selecting, so all offending ones are named together.
        check_references in run;

        run_on(command, conn, org_id, metadata) {
            run_bulk_adjustment(conn, org_id, command, metadata).await
        }
    }
}

/// A product's category, default supplier and opening-stock warehouses must exist in the organization.
async fn check_product_references(
    conn: &mut PgConnection,
    org_id: Uuid,
    command: &ProductCommand,
) -> Result<(), ExecuteError> {
    let mut errors = Vec::new();
    let assigned = command.assigned_metafields();
    if !assigned.is_empty() {
        let definitions = crate::metafields::definitions(conn, org_id).await?;
        for (path, entry) in assigned {
            if let Some(definition) = definitions.iter().find(|d| d.key == entry.key)
                && let Some(why) = metafield_violation(definition, &entry.value)
            {
                errors.push(FieldError::new(path, "violates_definition", why));
            }
        }
    }
    let shared = command.shared();
    if let Some(category) = shared.and_then(|s| s.category_id)
        && load::<Category>(conn, org_id, category).await?.0.is_none()
    {
        errors.push(FieldError::new("categoryId", "not_found", "no category of this organization has this id"));
    }
    if let Some(supplier) = shared.and_then(|s| s.default_supplier_id)
        && load::<Supplier>(conn, org_id, supplier).await?.0.is_none()
    {
        errors.push(FieldError::new("defaultSupplierId", "not_found", "no supplier of this organization has this id"));
    }
    if let Some(shared) = shared
        && !shared.components.is_empty()
    {
        let ids: Vec<Uuid> = shared.components.iter().map(|c| c.variant_id).collect();
        let types = crate::inventory::active_product_types(conn, org_id, &ids).await?;
        for (i, component) in shared.components.iter().enumerate() {
            let path = format!("components[{i}].productId");
            match types.get(&component.variant_id) {
                None => {
                    errors.push(FieldError::new(path, "not_found", "no active product of this organization has this id"))
                }
                Some(ProductType::Product) => {}
                Some(other @ (ProductType::Service | ProductType::Combo)) => errors.push(FieldError::new(
                    path,
                    "not_stocked",
                    format!("a component must be a product that holds stock, not a {other}"),
                )),
            }
        }
    }
    if let ProductCommand::Replace { variant_id, shared, .. } = command {
        // A combo moves as its components and holds no stock: it cannot become, or stop being, one.
        let types = crate::inventory::product_types(conn, org_id, &[*variant_id]).await?;
        if let Some(current) = types.get(variant_id)
            && current.is_combo() != shared.product_type.is_combo()
        {
            errors.push(FieldError::new(
                "productType",
                "immutable",
                format!("a {current} cannot become a {}: a combo stays a combo", shared.product_type),
            ));
        }
    }
    if let ProductCommand::Create { opening_stock, .. } = command {
        let mut checked: Vec<Uuid> = Vec::new();
        for stock in opening_stock {
            if checked.contains(&stock.warehouse_id) {
                continue;
            }
            checked.push(stock.warehouse_id);
            // An inactive warehouse takes no stock, as to every command that moves it.
            if !load::<Warehouse>(conn, org_id, stock.warehouse_id).await?.0.is_some_and(|w| w.fields.is_active) {
                errors.push(FieldError::new(
                    "warehouseStocks",
                    "not_found",
                    format!("no active warehouse of this organization has the id {}", stock.warehouse_id),
                ));
            }
        }
    }
    reject_fields(errors)
}

/// Adjusts the cost or price of every matching variant in one transaction: one `ProductUpdated` per
/// group that changed, appended together (all or nothing). Prices under automatic margin pricing are
/// recalculated from the new costs in the same events; automatic price lists price from the stored
/// base prices, so they follow by themselves. No sales channels exist yet, so there is no
/// synchronisation effect to record.
async fn run_bulk_adjustment(
    conn: &mut PgConnection,
    org_id: Uuid,
    adjustment: &BulkAdjustment,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let filter = &adjustment.filter;
    // Every filter names something of the organization: an unknown one is 404, never an empty match.
    let mut unknown_filters = Vec::new();
    if let Some(supplier) = filter.default_supplier_id
        && load::<Supplier>(conn, org_id, supplier).await?.0.is_none()
    {
        unknown_filters.push(FieldError::new("default_supplier_id", "not_found", "no supplier of this organization has this id"));
    }
    if let Some(category) = filter.category_id
        && load::<Category>(conn, org_id, category).await?.0.is_none()
    {
        unknown_filters.push(FieldError::new("category_id", "not_found", "no category of this organization has this id"));
    }
    if let Some(tag_id) = filter.tag_id
        && load::<Tag>(conn, org_id, tag_id).await?.0.is_none()
    {
        unknown_filters.push(FieldError::new("tag_id", "not_found", "no tag of this organization has this id"));
    }
    if !unknown_filters.is_empty() {
        return Err(Rejection::Invalid { errors: unknown_filters }.into());
    }
    let tagged = match filter.tag_id {
        Some(tag_id) => Some(tagged_products(conn, org_id, tag_id).await?),
        None => None,
    };
    let matched: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "select variant_id, group_id from product_variants
         where org_id = $1 and ($2::uuid is null or default_supplier_id = $2) and ($3::uuid is null or category_id = $3)
           and (cardinality($4::uuid[]) = 0 or variant_id = any($4))
           and ($5::uuid[] is null or variant_id = any($5))
         order by variant_id",
    )
    .bind(org_id)
    .bind(filter.default_supplier_id)
    .bind(filter.category_id)
    .bind(&filter.product_ids)
    .bind(tagged)
    .fetch_all(&mut *conn)
    .await?;
    // A named product is of the organization, whatever the other filters leave of it.
    let missing: Vec<&Uuid> = filter.product_ids.iter().filter(|id| !matched.iter().any(|(v, _)| v == *id)).collect();
    let known: Vec<Uuid> = if missing.is_empty() {
        Vec::new()
    } else {
        sqlx::query_scalar("select variant_id from product_variants where org_id = $1 and variant_id = any($2)")
            .bind(org_id)
            .bind(&filter.product_ids)
            .fetch_all(&mut *conn)
            .await?
    };
    let unknown: Vec<FieldError> = filter
        .product_ids
        .iter()
        .enumerate()
        .filter(|(_, id)| missing.contains(id) && !known.contains(id))
        .map(|(i, _)| {
            FieldError::new(format!("product_ids[{i}]"), "not_found", "no product of this organization has this id")
        })
        .collect();
    if !unknown.is_empty() {
        return Err(Rejection::Invalid { errors: unknown }.into());
    }
    let mut by_group: std::collections::BTreeMap<Uuid, Vec<Uuid>> = std::collections::BTreeMap::new();
    for (variant, group) in &matched {
        by_group.entry(*group).or_default().push(*variant);
    }
    let groups: Vec<Uuid> = by_group.keys().copied().collect();
    let latest = latest_groups(conn, org_id, &groups).await?;
    let mut requests = Vec::new();
    let mut total = crate::products::Adjusted::default();
    for (group_id, state) in latest {
        let chosen = by_group.get(&group_id).map(Vec::as_slice).unwrap_or_default();
        let (next, adjusted) = adjust_group(&state.group, chosen, adjustment.target, adjustment.change)?;
        total.skipped += adjusted.skipped;
        let Some(event) = crate::products::variants_updated(group_id, &state, next) else { continue };
        total.changed += adjusted.changed;
        total.repriced += adjusted.repriced;
        let stream = StreamRef { org_id, stream_type: "product", stream_id: group_id, expected_version: state.version };
        requests.push(AppendRequest { stream, events: vec![event.to_new_event()?], metadata: metadata.clone() });
    }
    let commit = append_together(conn, &requests, adjustment.id).await?;
    let state = serde_json::json!({
        "object": "bulk_adjustment",
        "id": adjustment.id,
        "target": adjustment.target,
        "change": adjustment.change,
        "matched_variants": matched.len(),
        "affected_variants": total.changed,
        "affected_products": requests.len(),
        "unchanged_variants": matched.len() - total.changed,
        "automatic_prices_recalculated": total.repriced,
        "skipped_automatic_variants": total.skipped,
        "synchronization_effects": [],
    });
    Ok(CommandReply::accepted(commit, true, &state, Vec::new())?)
}

/// Runs a product command inside the caller's transaction: finds the group of a replaced variant,
/// refuses SKUs another variant of the organization holds, appends, and keeps `product_variants` in step.
async fn run_product(
    conn: &mut Conn<'_>,
    sink: &Sink<'_>,
    org_id: Uuid,
    command: &ProductCommand,
    metadata: &Metadata,
) -> Result<CommandReply, ExecuteError> {
    let group_id = match command {
        ProductCommand::Create { id, .. } => *id,
        ProductCommand::Replace { variant_id, .. } | ProductCommand::SetMetafields { variant_id, .. } => {
            sqlx::query_scalar("select group_id from product_variants where org_id = $1 and variant_id = $2")
                .bind(org_id)
                .bind(variant_id)
                .fetch_optional(conn.get().await?)
                .await?
                .ok_or_else(|| Rejection::not_found("product"))?
        }
    };
    let skus = command.skus();
    let taken: Vec<String> = sqlx::query_scalar(
        "select lower(sku) from product_variants
         where org_id = $1 and lower(sku) = any($2) and variant_id <> all($3)",
    )
    .bind(org_id)
    .bind(skus.iter().map(|(_, sku, _)| sku.to_lowercase()).collect::<Vec<_>>())
    .bind(skus.iter().map(|(id, _, _)| *id).collect::<Vec<_>>())
    .fetch_all(conn.get().await?)
    .await?;
    if !taken.is_empty() {
        let errors = skus
            .iter()
            .filter(|(_, sku, _)| taken.contains(&sku.to_lowercase()))
            .map(|(_, sku, path)| {
                FieldError::new(path.clone(), "already_exists", format!("the SKU {sku:?} is already in use"))
            })
            .collect();
        return Err(Rejection::Invalid { errors }.into());
    }
    let executed = execute::<Product>(conn, sink, org_id, group_id, command, command.is_creation(), metadata).await?;
    if executed.commit.is_some() {
        let variants = &executed.state.group.variants;
        let shared = &executed.state.group.shared;
        let conn = conn.get().await?;
        Unnest::new(variants)
            .constant("org_id", org_id)
            .column("variant_id", |v| v.id)
            .constant("group_id", group_id)
            .column("sku", |v| v.sku.as_str())
            .column("is_active", |v| v.is_active)
            .constant("default_supplier_id", shared.default_supplier_id)
            .constant("category_id", shared.category_id)
            .constant("product_type", shared.product_type)
            .execute(
                &mut *conn,
                "insert into product_variants",
                "on conflict (variant_id) do update set sku = excluded.sku, is_active = excluded.is_active,
                     default_supplier_id = excluded.default_supplier_id, category_id = excluded.category_id,
                     product_type = excluded.product_type",
            )
            .await?;
        crate::inventory::write_components(conn, org_id, variants.iter().map(|v| v.id), &shared.components).await?;
        if let ProductCommand::Create { opening_stock, .. } = command {
            crate::inventory::levels::add_opening(conn, org_id, opening_stock).await?;
        }
    }
    accepted(executed)
}
