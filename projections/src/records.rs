//! Read models of the configuration resources (payment methods, warehouses, categories, points of
//! sale): the stored fields as a document, plus the columns lists filter and sort on.

use crate::{CacheResource, ProjectionError, ProjectionId, json_fold, latest_rows};
use events::RecordedEvent;
use events::catalogue::{
    CategoryEvent, MetafieldDefinitionEvent, PaymentMethodEvent, PointOfSaleEvent, RecordEvent, WarehouseEvent,
};
use serde_json::Value;
use sqlx::PgPool;
use std::marker::PhantomData;
use time::OffsetDateTime;
use uuid::Uuid;

/// One configuration resource's read model. It folds the aggregate whose events are `E`.
pub type RecordsProjection<E> = json_fold::Table<RecordRows<E>>;

/// The rows of the records whose events are `E`: the stored fields as a document.
pub struct RecordRows<E>(PhantomData<fn() -> E>);

pub const PAYMENT_METHODS: RecordsProjection<PaymentMethodEvent> =
    json_fold::Table::new(ProjectionId::PaymentMethods, &["payment_methods_view"], CacheResource::PaymentMethod);
pub const WAREHOUSES: RecordsProjection<WarehouseEvent> =
    json_fold::Table::new(ProjectionId::Warehouses, &["warehouses_view"], CacheResource::Warehouse);
pub const CATEGORIES: RecordsProjection<CategoryEvent> =
    json_fold::Table::new(ProjectionId::Categories, &["categories_view"], CacheResource::Category);
pub const METAFIELD_DEFINITIONS: RecordsProjection<MetafieldDefinitionEvent> = json_fold::Table::new(
    ProjectionId::MetafieldDefinitions,
    &["metafield_definitions_view"],
    CacheResource::MetafieldDefinition,
);
pub const POINTS_OF_SALE: RecordsProjection<PointOfSaleEvent> =
    json_fold::Table::new(ProjectionId::PointsOfSale, &["points_of_sale_view"], CacheResource::PointOfSale);

/// A record as the fold writes it.
#[derive(serde::Serialize)]
pub struct RecordDoc {
    org_id: Uuid,
    id: Uuid,
    doc: Value,
    /// When the batch first saw the record: its creation, where the batch holds it.
    #[serde(with = "time::serde::rfc3339")]
    created: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    at: OffsetDateTime,
}

/// The upsert of a batch of rows, read as a JSON array from `$1`.
fn upsert_sql(table: &str) -> String {
    format!(
        "insert into {table} (org_id, id, name, is_default, parent_id, doc, created_at, updated_at)
         select org_id, id, doc->>'name', coalesce((doc->>'is_default')::boolean, false),
                (doc->>'parent_id')::uuid, doc, created, at
         from json_to_recordset($1::json) as u(org_id uuid, id uuid, doc jsonb, created timestamptz, at timestamptz)
         on conflict (org_id, id) do update set
             name = excluded.name, is_default = excluded.is_default, parent_id = excluded.parent_id,
             doc = excluded.doc, updated_at = excluded.updated_at"
    )
}

impl<E: RecordEvent> json_fold::Rows for RecordRows<E> {
    type Event = E;
    type Row = RecordDoc;

    /// The last state of each record in the batch (later events win), in order of first appearance, with
    /// the time of its first event (a record created and changed in one batch keeps its creation time).
    fn fold(events: &[RecordedEvent]) -> Result<Vec<RecordDoc>, ProjectionError> {
        let rows = events
            .iter()
            .map(|event| {
                let decoded: E = crate::decode(event)?;
                let doc = serde_json::to_value(decoded.fields()).map_err(|e| ProjectionError::undecodable(event, e))?;
                let at = event.recorded_at;
                Ok(RecordDoc { org_id: event.org_id, id: event.stream_id, doc, created: at, at })
            })
            .collect::<Result<Vec<_>, ProjectionError>>()?;
        Ok(latest_rows(rows, |r| (r.org_id, r.id), |earlier, later| RecordDoc { created: earlier.created, ..later }))
    }

    fn upsert_sql(table: &str) -> String {
        upsert_sql(table)
    }

    fn key(row: &RecordDoc) -> (Uuid, Uuid) {
        (row.org_id, row.id)
    }
}

/// A configuration record as the read side stores it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RecordRow {
    pub id: Uuid,
    pub doc: Value,
    pub is_default: bool,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

const COLUMNS: &str = "id, doc, is_default, created_at, updated_at";

/// One record of one organization.
pub async fn get(pool: &PgPool, table: &str, org_id: Uuid, id: Uuid) -> Result<Option<RecordRow>, sqlx::Error> {
    crate::row_by_id(pool, table, COLUMNS, org_id, id).await
}

/// A page of an organization's records in creation order, after `after`.
pub async fn list(
    pool: &PgPool,
    table: &str,
    org_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<RecordRow>, sqlx::Error> {
    crate::rows_after_id(pool, table, COLUMNS, org_id, after, limit).await
}

/// How a page list is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Name,
    CreatedAt,
    UpdatedAt,
}

/// What a page list asks for.
#[derive(Debug, Clone)]
pub struct PageQuery {
    pub search: Option<String>,
    pub sort: SortBy,
    pub descending: bool,
    /// From 1.
    pub page: i64,
    pub limit: i64,
}

/// A numbered page of records whose name contains `search` (case-insensitive), and the total count.
pub async fn page(
    pool: &PgPool,
    table: &str,
    org_id: Uuid,
    query: &PageQuery,
) -> Result<(Vec<RecordRow>, i64), sqlx::Error> {
    let PageQuery { search, sort, descending, page, limit } = query.clone();
    let search = search.as_deref();
    let column = match sort {
        SortBy::Name => "lower(name)",
        SortBy::CreatedAt => "created_at",
        SortBy::UpdatedAt => "updated_at",
    };
    let direction = if descending { "desc" } else { "asc" };
    let pattern = search.map(crate::contains_pattern);
    let sql = format!(
        "select {COLUMNS}, count(*) over () as total from {table}
         where org_id = $1 and ($2::text is null or name ilike $2)
         order by {column} {direction}, id {direction} limit $3 offset $4"
    );
    let rows: Vec<(Uuid, Value, bool, OffsetDateTime, OffsetDateTime, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(pattern.clone())
        .bind(limit)
        .bind((page - 1) * limit)
        .fetch_all(pool)
        .await?;
    let total = match rows.first() {
        Some(row) => row.5,
        None => {
            let sql = format!("select count(*) from {table} where org_id = $1 and ($2::text is null or name ilike $2)");
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(pattern).fetch_one(pool).await?
        }
    };
    let rows = rows
        .into_iter()
        .map(|(id, doc, is_default, created_at, updated_at, _)| RecordRow {
            id,
            doc,
            is_default,
            created_at,
            updated_at,
        })
        .collect();
    Ok((rows, total))
}
