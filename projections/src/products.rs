//! The products read model: one row per variant (`products_view`), shared fields repeated, for the
//! product detail and list.

use crate::{CacheKey, CacheResource, Folded, Target};
use events::RecordedEvent;
use events::catalogue::{ProductEvent, SharedFields, Variant};
use events::domain::{Adjustment, Cents, VatRate, WholeUnits};
use events::unnest::Unnest;
use sqlx::types::Json;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "products_view";
/// Per organization, the position of the last product event that could move a listed price.
pub const PRICING_REVISIONS: &str = "product_pricing_revisions";

/// Public fields whose change can move a price under some price list.
const PRICING_FIELDS: &[&str] = &["cost", "price", "markup_percentage", "tax_rate_id", "is_active"];

/// A variant's values of [`PRICING_FIELDS`], as the event carries them and the row stores them.
type Pricing = (Cents, Cents, Option<Adjustment>, VatRate, bool);

fn pricing(shared: &SharedFields, variant: &Variant) -> Pricing {
    (variant.cost, variant.price, shared.markup_hundredths, shared.tax_rate_id, variant.is_active)
}

/// A stored row's [`Pricing`].
#[derive(sqlx::FromRow)]
struct StoredPricing {
    org_id: Uuid,
    id: Uuid,
    cost: Cents,
    price: Cents,
    markup_hundredths: Option<Adjustment>,
    tax_rate_id: VatRate,
    is_active: bool,
}

impl StoredPricing {
    fn pricing(&self) -> Pricing {
        (self.cost, self.price, self.markup_hundredths, self.tax_rate_id, self.is_active)
    }
}

pub struct ProductsProjection;

projection!(ProductsProjection { id: Products, tables: &[TABLE, PRICING_REVISIONS], folds: [ProductEvent] });

/// One variant row to write.
struct Row {
    org_id: Uuid,
    id: Uuid,
    group_id: Uuid,
    shared: events::catalogue::SharedFields,
    variant: events::catalogue::Variant,
    options: Json<Vec<String>>,
    metafields: Json<Vec<events::catalogue::Metafield>>,
    /// The time of the batch's first event carrying the variant: its creation, where the batch holds it.
    created: OffsetDateTime,
    at: OffsetDateTime,
}

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    // Every event carries whole variants (all of its group's, or the ones that changed) and the group's
    // shared fields: the last event of the batch carrying a variant decides its row, written by one
    // statement for the whole batch.
    let mut rows: std::collections::HashMap<(Uuid, Uuid), Row> = std::collections::HashMap::new();
    let mut order = Vec::new();
    let mut repriced: std::collections::HashMap<Uuid, i64> = std::collections::HashMap::new();
    // A variant inactive before and after a change is no public product, so the event's `changes` do not
    // list it; its prices are still listed (`is_active=false`): its pricing is compared with its row.
    let mut unlisted: Vec<((Uuid, Uuid), Pricing, i64)> = Vec::new();
    for event in events {
        let decoded: ProductEvent = crate::decode(event)?;
        let (moves_prices, listed) = match &decoded {
            ProductEvent::ProductCreated(_) => (true, Vec::new()),
            ProductEvent::ProductUpdated(updated) | ProductEvent::ProductVariantsUpdated(updated) => (
                updated.changes.iter().any(|c| c.changed_fields.iter().any(|f| PRICING_FIELDS.contains(&f.as_str()))),
                updated.changes.iter().map(|c| c.variant_id).collect(),
            ),
        };
        if moves_prices {
            repriced.insert(event.org_id, event.position);
        }
        let group = decoded.group();
        for variant in &group.variants {
            let key = (event.org_id, variant.id);
            if !moves_prices && !variant.is_active && !listed.contains(&variant.id) {
                let now = pricing(&group.shared, variant);
                match rows.get(&key) {
                    Some(before) if pricing(&before.shared, &before.variant) != now => {
                        repriced.insert(event.org_id, event.position);
                    }
                    Some(_) => {}
                    None => unlisted.push((key, now, event.position)),
                }
            }
            let created = match rows.get(&key) {
                Some(earlier) => earlier.created,
                None => {
                    order.push(key);
                    event.recorded_at
                }
            };
            rows.insert(
                key,
                Row {
                    org_id: event.org_id,
                    id: variant.id,
                    group_id: event.stream_id,
                    shared: group.shared.clone(),
                    variant: variant.clone(),
                    options: Json(group.options.clone()),
                    metafields: Json(group.metafields.clone()),
                    created,
                    at: event.recorded_at,
                },
            );
        }
    }
    if order.is_empty() {
        return Ok(Vec::new());
    }
    if !unlisted.is_empty() {
        let ids: Vec<Uuid> = unlisted.iter().map(|((_, id), _, _)| *id).collect();
        let stored: Vec<StoredPricing> = sqlx::query_as(
            sqlx::AssertSqlSafe(format!(
                "select org_id, id, cost, price, markup_hundredths, tax_rate_id, is_active from {} where id = any($1)",
                target.table(TABLE)
            )),
        )
        .bind(&ids)
        .fetch_all(&mut *conn)
        .await?;
        for ((org_id, id), now, position) in unlisted {
            let before = stored.iter().find(|row| row.org_id == org_id && row.id == id);
            if before.is_none_or(|row| row.pricing() != now) {
                let revision = repriced.entry(org_id).or_insert(position);
                *revision = (*revision).max(position);
            }
        }
    }
    let batch: Vec<&Row> = order.iter().filter_map(|k| rows.get(k)).collect();
    let insert = format!("insert into {}", target.table(TABLE));
    Unnest::new(&batch)
        .column("org_id", |r| r.org_id)
        .column("id", |r| r.id)
        .column("group_id", |r| r.group_id)
        .column("name", |r| r.shared.name.as_str())
        .column("description", |r| r.shared.description.as_deref())
        .column("category_id", |r| r.shared.category_id)
        .column("sku", |r| r.variant.sku.as_str())
        .column("barcode", |r| r.variant.barcode.as_deref())
        .column("oem_code", |r| r.shared.oem_code.as_deref())
        .column("currency", |r| r.shared.currency.as_str())
        .column("cost", |r| r.variant.cost)
        .column("price", |r| r.variant.price)
        .column("tax_rate_id", |r| r.shared.tax_rate_id)
        .column("stock_minimum", |r| r.shared.stock_minimum)
        .column("default_supplier_id", |r| r.shared.default_supplier_id)
        .column("product_type", |r| r.shared.product_type)
        .column("is_active", |r| r.variant.is_active)
        .column("options", |r| r.options.clone())
        .column("option_values", |r| Json(r.variant.option_values.clone()))
        .column("metafields", |r| r.metafields.clone())
        .column("created_at", |r| r.created)
        .column("updated_at", |r| r.at)
        .column("markup_hundredths", |r| r.shared.markup_hundredths)
        .execute(
            &mut *conn,
            &insert,
            "on conflict (org_id, id) do update set name = excluded.name, description = excluded.description,
             category_id = excluded.category_id, sku = excluded.sku, barcode = excluded.barcode,
             oem_code = excluded.oem_code, currency = excluded.currency, cost = excluded.cost,
             price = excluded.price, tax_rate_id = excluded.tax_rate_id, stock_minimum = excluded.stock_minimum,
             default_supplier_id = excluded.default_supplier_id, product_type = excluded.product_type,
             is_active = excluded.is_active, options = excluded.options, option_values = excluded.option_values,
             metafields = excluded.metafields, updated_at = excluded.updated_at,
             markup_hundredths = excluded.markup_hundredths",
        )
        .await?;
    let table = target.table(PRICING_REVISIONS);
    let repriced: Vec<(Uuid, i64)> = repriced.into_iter().collect();
    Unnest::new(&repriced)
        .column("org_id", |(org, _)| *org)
        .column("revision", |(_, revision)| *revision)
        .execute(
            &mut *conn,
            &format!("insert into {table}"),
            &format!("on conflict (org_id) do update set revision = greatest({table}.revision, excluded.revision)"),
        )
        .await?;
    let mut invalidate: Vec<CacheKey> =
        batch.iter().map(|r| CacheKey { resource: CacheResource::Product, org_id: r.org_id, id: r.id }).collect();
    invalidate.extend(combos_showing(conn, &batch).await?);
    Ok(invalidate)
}

/// The combos whose detail shows a variant of `batch` as a component (with its name): their cached
/// reads go with the variants'. `product_components` is the write side's, current whatever the target.
async fn combos_showing(conn: &mut PgConnection, batch: &[&Row]) -> Result<Vec<CacheKey>, sqlx::Error> {
    let mut orgs: Vec<Uuid> = batch.iter().map(|r| r.org_id).collect();
    orgs.sort_unstable();
    orgs.dedup();
    let ids: Vec<Uuid> = batch.iter().map(|r| r.id).collect();
    let combos: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "select distinct org_id, combo_id from product_components where org_id = any($1) and component_id = any($2)",
    )
    .bind(&orgs)
    .bind(&ids)
    .fetch_all(conn)
    .await?;
    Ok(combos.into_iter().map(|(org_id, id)| CacheKey { resource: CacheResource::Product, org_id, id }).collect())
}

/// A variant as the read side stores it, with the names of what it refers to.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProductRow {
    pub org_id: Uuid,
    pub id: Uuid,
    pub group_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub category_id: Option<Uuid>,
    pub category_name: Option<String>,
    pub sku: String,
    pub barcode: Option<String>,
    pub oem_code: Option<String>,
    pub currency: String,
    pub cost: events::domain::Cents,
    pub price: events::domain::Cents,
    pub tax_rate_id: events::domain::VatRate,
    pub stock_minimum: Option<WholeUnits>,
    pub default_supplier_id: Option<Uuid>,
    pub default_supplier_name: Option<String>,
    pub product_type: events::catalogue::ProductType,
    pub is_active: bool,
    pub markup_hundredths: Option<events::domain::Adjustment>,
    pub options: Json<Vec<String>>,
    pub option_values: Json<Vec<events::catalogue::OptionValue>>,
    pub metafields: Json<Vec<events::catalogue::Metafield>>,
    pub organization_slug: String,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

// The slug comes from the organization registry (written when the organization is created, never
// changed), not from the organizations projection: a product must be readable the moment its own
// projection has it, even while another projection lags.
const SELECT: &str = "select p.org_id, p.id, p.group_id, p.name, p.description, p.category_id, c.name as category_name,
        p.sku, p.barcode, p.oem_code, p.currency, p.cost, p.price, p.tax_rate_id, p.stock_minimum,
        p.default_supplier_id, s.name as default_supplier_name, p.product_type, p.is_active, p.markup_hundredths, p.options,
        p.option_values, p.metafields, o.slug as organization_slug, p.created_at, p.updated_at
    from products_view p
    join organizations o on o.id = p.org_id
    left join categories_view c on c.org_id = p.org_id and c.id = p.category_id
    left join suppliers_view s on s.org_id = p.org_id and s.id = p.default_supplier_id";

/// One variant of one organization.
pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<ProductRow>, sqlx::Error> {
    let sql = format!("{SELECT} where p.org_id = $1 and p.id = $2");
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(id).fetch_optional(pool).await
}

/// A page of an organization's variants in id order after `after`, optionally matching `query` in the
/// name, SKU or barcode (case-insensitive) and of one default supplier.
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    query: Option<&str>,
    supplier: Option<Uuid>,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<ProductRow>, sqlx::Error> {
    let pattern = query.map(crate::contains_pattern);
    let sql = format!(
        "{SELECT} where p.org_id = $1 and ($2::text is null or p.name ilike $2 or p.sku ilike $2 or p.barcode ilike $2)
           and ($3::uuid is null or p.default_supplier_id = $3) and ($4::uuid is null or p.id > $4)
         order by p.id limit $5"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(pattern)
        .bind(supplier)
        .bind(after)
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// The name and SKU of each of `ids` that is a variant of the organization (for documents that list
/// products by id).
pub async fn names(
    pool: &PgPool,
    org_id: Uuid,
    ids: &[Uuid],
) -> Result<std::collections::HashMap<Uuid, (String, String)>, sqlx::Error> {
    let rows: Vec<(Uuid, String, String)> =
        sqlx::query_as("select id, name, sku from products_view where org_id = $1 and id = any($2)")
            .bind(org_id)
            .bind(ids)
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(|(id, name, sku)| (id, (name, sku))).collect())
}

/// One component of a combo: a variant of another product, named as this read model names it, and
/// how many units one combo holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub product_id: Uuid,
    pub name: String,
    pub quantity: events::domain::Quantity,
}

/// The components of the organization's product group `group_id` (empty unless it is a combo), in the
/// order the combo lists them. They are read from the group's latest event, which carries the group's
/// whole state (this read model keeps no copy of them, so nothing here needs a rebuild): never older
/// than the group's rows.
pub async fn components(pool: &PgPool, org_id: Uuid, group_id: Uuid) -> Result<Vec<Component>, sqlx::Error> {
    let latest: Option<Option<Json<Vec<events::catalogue::ComboComponent>>>> = sqlx::query_scalar(
        "select (data->'shared'->'components')::jsonb from events
         where org_id = $1 and stream_type = 'product' and stream_id = $2 order by version desc limit 1",
    )
    .bind(org_id)
    .bind(group_id)
    .fetch_optional(pool)
    .await?;
    let listed = latest.flatten().map(|Json(listed)| listed).unwrap_or_default();
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = listed.iter().map(|c| c.variant_id).collect();
    let named = names(pool, org_id, &ids).await?;
    Ok(listed
        .into_iter()
        .map(|c| Component {
            product_id: c.variant_id,
            name: named.get(&c.variant_id).map(|(name, _)| name.clone()).unwrap_or_default(),
            quantity: c.quantity,
        })
        .collect())
}

/// One numbered page of an organization's variants, by name then id, optionally matching `query` in
/// the name, SKU or barcode; and how many match in all.
pub async fn page(
    pool: &PgPool,
    org_id: Uuid,
    query: Option<&str>,
    page: i64,
    limit: i64,
) -> Result<(Vec<ProductRow>, i64), sqlx::Error> {
    crate::SearchPages {
        select: SELECT,
        counted: "products_view p",
        filter: "p.org_id = $1 and ($2::text is null or p.name ilike $2 or p.sku ilike $2 or p.barcode ilike $2)",
        order: "lower(p.name), p.id",
    }
    .fetch(pool, org_id, query, page, limit)
    .await
}
