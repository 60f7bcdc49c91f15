//! The orders read model (`orders_view`): each order's whole state (every order event carries it),
//! with the columns its list filters on. The active reservation is read beside it from the inventory
//! read model.

use crate::{Folded, Target};
use events::RecordedEvent;
use events::catalogue::{OrderEvent, OrderState};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "orders_view";

pub struct OrdersProjection;

projection!(OrdersProjection { id: Orders, tables: &[TABLE], folds: [OrderEvent] });

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let table = target.table(TABLE);
    for event in events {
        let decoded: OrderEvent = crate::decode(event)?;
        let order = decoded.state();
        let sql = format!(
            "insert into {table} (org_id, id, number, customer_id, status, fulfillment_status, doc, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $8)
             on conflict (org_id, id) do update set customer_id = excluded.customer_id, status = excluded.status,
                 fulfillment_status = excluded.fulfillment_status, doc = excluded.doc, updated_at = excluded.updated_at"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(event.org_id)
            .bind(event.stream_id)
            .bind(order.number)
            .bind(order.customer_id)
            .bind(order.status.as_str())
            .bind(order.fulfillment_status.as_str())
            .bind(sqlx::types::Json(order))
            .bind(event.recorded_at)
            .execute(&mut *conn)
            .await?;
    }
    // Order reads are not cached.
    Ok(Vec::new())
}

/// An order as stored for reads.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct OrderRow {
    pub id: Uuid,
    #[sqlx(json, rename = "doc")]
    pub order: OrderState,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<OrderRow>, sqlx::Error> {
    crate::row_by_id(pool, "orders_view", "id, doc, created_at, updated_at", org_id, id).await
}

/// What the order list filters on (each `None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct OrderFilter {
    pub status: Option<String>,
    pub fulfillment_status: Option<String>,
    pub customer_id: Option<Uuid>,
    pub created_from: Option<OffsetDateTime>,
    pub created_to: Option<OffsetDateTime>,
}

/// Up to `limit` orders after `after` (created at, id), newest first.
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    filter: &OrderFilter,
    after: Option<(OffsetDateTime, Uuid)>,
    limit: i64,
) -> Result<Vec<OrderRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, doc, created_at, updated_at from orders_view
         where org_id = $1 and ($2::text is null or status = $2) and ($3::text is null or fulfillment_status = $3)
           and ($4::uuid is null or customer_id = $4) and ($5::timestamptz is null or created_at >= $5)
           and ($6::timestamptz is null or created_at < $6)
           and ($7::timestamptz is null or (created_at, id) < ($7, $8))
         order by created_at desc, id desc limit $9",
    )
    .bind(org_id)
    .bind(filter.status.as_deref())
    .bind(filter.fulfillment_status.as_deref())
    .bind(filter.customer_id)
    .bind(filter.created_from)
    .bind(filter.created_to)
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(limit)
    .fetch_all(pool)
    .await
}
