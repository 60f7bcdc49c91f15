//! Read models of the configuration resources (payment methods, warehouses, categories, points of
//! sale): the stored fields as a document, plus the columns lists filter and sort on.

use crate::{CacheKey, Projection, ProjectionError, Target};
use events::catalogue::{
    CategoryEvent, MetafieldDefinitionEvent, PaymentMethodEvent, PointOfSaleEvent, RecordEvent, WarehouseEvent,
};
use events::{EventPayload, RecordedEvent};
use futures::future::BoxFuture;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::marker::PhantomData;
use time::OffsetDateTime;
use uuid::Uuid;

/// One configuration resource's read model.
pub struct RecordsProjection<E> {
    pub name: &'static str,
    /// The read table (a one-element list, as [`Projection::tables`] wants).
    pub table: &'static [&'static str],
    pub stream_type: &'static [&'static str],
    pub resource: &'static str,
    _event: PhantomData<fn() -> E>,
}

pub const PAYMENT_METHODS: RecordsProjection<PaymentMethodEvent> = RecordsProjection {
    name: "payment_methods",
    table: &["payment_methods_view"],
    stream_type: &[<PaymentMethodEvent as EventPayload>::STREAM_TYPE],
    resource: "payment_method",
    _event: PhantomData,
};
pub const WAREHOUSES: RecordsProjection<WarehouseEvent> = RecordsProjection {
    name: "warehouses",
    table: &["warehouses_view"],
    stream_type: &[<WarehouseEvent as EventPayload>::STREAM_TYPE],
    resource: "warehouse",
    _event: PhantomData,
};
pub const CATEGORIES: RecordsProjection<CategoryEvent> = RecordsProjection {
    name: "categories",
    table: &["categories_view"],
    stream_type: &[<CategoryEvent as EventPayload>::STREAM_TYPE],
    resource: "category",
    _event: PhantomData,
};
pub const METAFIELD_DEFINITIONS: RecordsProjection<MetafieldDefinitionEvent> = RecordsProjection {
    name: "metafield_definitions",
    table: &["metafield_definitions_view"],
    stream_type: &[<MetafieldDefinitionEvent as EventPayload>::STREAM_TYPE],
    resource: "metafield_definition",
    _event: PhantomData,
};
pub const POINTS_OF_SALE: RecordsProjection<PointOfSaleEvent> = RecordsProjection {
    name: "points_of_sale",
    table: &["points_of_sale_view"],
    stream_type: &[<PointOfSaleEvent as EventPayload>::STREAM_TYPE],
    resource: "point_of_sale",
    _event: PhantomData,
};

impl<E: RecordEvent> Projection for RecordsProjection<E> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn tables(&self) -> &'static [&'static str] {
        self.table
    }

    fn stream_types(&self) -> &'static [&'static str] {
        self.stream_type
    }

    fn apply<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        target: Target,
        events: &'a [RecordedEvent],
    ) -> BoxFuture<'a, Result<Vec<CacheKey>, ProjectionError>> {
        Box::pin(self.apply_batch(conn, target, events))
    }
}

struct Row {
    org_id: Uuid,
    id: Uuid,
    doc: Value,
    at: OffsetDateTime,
}

impl<E: RecordEvent> RecordsProjection<E> {
    pub fn table_name(&self) -> &'static str {
        self.table[0]
    }

    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        target: Target,
        events: &[RecordedEvent],
    ) -> Result<Vec<CacheKey>, ProjectionError> {
        // The last state of each record in the batch; later events win.
        let mut rows: HashMap<(Uuid, Uuid), Row> = HashMap::new();
        let mut order = Vec::new();
        for event in events {
            let decoded = E::decode(&event.event_type, event.schema_version, event.data.clone())
                .map_err(|e| ProjectionError::Undecodable { position: event.position, reason: e.to_string() })?;
            let doc = serde_json::to_value(decoded.fields()).unwrap_or(Value::Null);
            let key = (event.org_id, event.stream_id);
            if !rows.contains_key(&key) {
                order.push(key);
            }
            rows.insert(key, Row { org_id: event.org_id, id: event.stream_id, doc, at: event.recorded_at });
        }
        let batch: Vec<&Row> = order.iter().filter_map(|k| rows.get(k)).collect();
        let table = target.table(self.table[0]);
        let sql = format!(
            "insert into {table} (org_id, id, name, is_default, parent_id, doc, created_at, updated_at)
             select o, i, d->>'name', coalesce((d->>'is_default')::boolean, false), (d->>'parent_id')::uuid, d, t, t
             from unnest($1::uuid[], $2::uuid[], $3::jsonb[], $4::timestamptz[]) as u(o, i, d, t)
             on conflict (org_id, id) do update set
                 name = excluded.name, is_default = excluded.is_default, parent_id = excluded.parent_id,
                 doc = excluded.doc, updated_at = excluded.updated_at"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(batch.iter().map(|r| r.org_id).collect::<Vec<_>>())
            .bind(batch.iter().map(|r| r.id).collect::<Vec<_>>())
            .bind(batch.iter().map(|r| r.doc.clone()).collect::<Vec<_>>())
            .bind(batch.iter().map(|r| r.at).collect::<Vec<_>>())
            .execute(&mut *conn)
            .await?;
        let stale: Vec<CacheKey> =
            batch.iter().map(|r| CacheKey { resource: self.resource.to_owned(), org_id: r.org_id, id: r.id }).collect();
        Ok(stale)
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
    let sql = format!("select {COLUMNS} from {table} where org_id = $1 and id = $2");
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(id).fetch_optional(pool).await
}

/// A page of an organization's records in creation order, after `after`.
pub async fn list(
    pool: &PgPool,
    table: &str,
    org_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<RecordRow>, sqlx::Error> {
    let sql = format!(
        "select {COLUMNS} from {table} where org_id = $1 and ($2::uuid is null or id > $2) order by id limit $3"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(after).bind(limit).fetch_all(pool).await
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
