//! The sales read model (`sales_view`): each sale's whole state (the recorded sale with its later fiscal
//! outcomes, folded with the same fold the command side uses) beside the columns lists filter on.

use crate::{Folded, ProjectionError, Target, contains_pattern};
use events::RecordedEvent;
use events::catalogue::{SaleEvent, SaleRecorded, fold_sale};
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

pub const TABLE: &str = "sales_view";

pub struct SalesProjection;

projection!(SalesProjection { id: Sales, tables: &[TABLE], folds: [SaleEvent] });

/// `A 00001-00000042`, as lists search it.
fn formatted(sale: &SaleRecorded) -> Option<String> {
    sale.number.map(|n| format!("{} {:05}-{n:08}", sale.letter.as_deref().unwrap_or("X"), sale.point_of_sale_number))
}

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let table = target.table(TABLE);
    for event in events {
        let decoded: SaleEvent = crate::decode(event)?;
        let Some(sale) = fold_sale(None, &decoded) else {
            return Err(ProjectionError::undecodable(event, "a fiscal outcome before the sale"));
        };
        let sql = format!(
            "insert into {table} (org_id, id, customer_id, customer_name, invoice_date, status, integration_source,
                                  integration_id, formatted_number, total, doc, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
             on conflict (org_id, id) do update set status = excluded.status, formatted_number = excluded.formatted_number,
                 doc = excluded.doc, updated_at = excluded.updated_at"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(event.org_id)
            .bind(event.stream_id)
            .bind(sale.customer.id)
            .bind(&sale.customer.name)
            .bind(sale.invoice_date)
            .bind(sale.fiscal.status.as_str())
            .bind(&sale.integration_source)
            .bind(&sale.integration_id)
            .bind(formatted(&sale))
            .bind(sale.total)
            .bind(serde_json::to_value(&sale).unwrap_or_default())
            .bind(event.recorded_at)
            .execute(&mut *conn)
            .await?;
        // A numbered sale gets its PDF (asking again with the same content changes nothing).
        let issuer = crate::documents::vouchers::issuer(conn, event.org_id).await?;
        if let Some(document) = crate::documents::vouchers::sale_document(&sale, &issuer) {
            crate::documents::store::request(
                conn,
                event.org_id,
                crate::documents::OwnerKind::Sale,
                event.stream_id,
                &document,
            )
            .await?;
        }
    }
    // Sale reads are not cached.
    Ok(Vec::new())
}

/// A sale as stored for reads.
#[derive(Debug, Clone, PartialEq)]
pub struct SaleRow {
    pub id: Uuid,
    pub sale: SaleRecorded,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// What a sale list may be filtered by (dates inclusive, on the invoice date).
#[derive(Debug, Clone, Default)]
pub struct SaleFilter {
    pub customer_id: Option<Uuid>,
    pub date_from: Option<Date>,
    pub date_to: Option<Date>,
    pub status: Option<String>,
    pub integration_source: Option<String>,
    /// Part of the customer's name, the formatted number or the integration id.
    pub query: Option<String>,
}

fn row(
    (id, doc, created_at, updated_at): (Uuid, Value, OffsetDateTime, OffsetDateTime),
) -> Result<SaleRow, sqlx::Error> {
    let sale = crate::from_doc(doc)?;
    Ok(SaleRow { id, sale, created_at, updated_at })
}

/// Up to `limit` sales after `after`, oldest first.
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    filter: &SaleFilter,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<SaleRow>, sqlx::Error> {
    let rows: Vec<(Uuid, Value, OffsetDateTime, OffsetDateTime)> = sqlx::query_as(
        "select id, doc, created_at, updated_at from sales_view
         where org_id = $1 and ($2::uuid is null or customer_id = $2)
           and ($3::date is null or invoice_date >= $3) and ($4::date is null or invoice_date <= $4)
           and ($5::text is null or status = $5) and ($6::text is null or integration_source = $6)
           and ($7::text is null or customer_name ilike $7 or formatted_number ilike $7 or integration_id ilike $7)
           and ($8::uuid is null or id > $8)
         order by id limit $9",
    )
    .bind(org_id)
    .bind(filter.customer_id)
    .bind(filter.date_from)
    .bind(filter.date_to)
    .bind(&filter.status)
    .bind(&filter.integration_source)
    .bind(filter.query.as_deref().map(contains_pattern))
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.into_iter().map(row).collect()
}

pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<SaleRow>, sqlx::Error> {
    let found: Option<(Uuid, Value, OffsetDateTime, OffsetDateTime)> =
        sqlx::query_as("select id, doc, created_at, updated_at from sales_view where org_id = $1 and id = $2")
            .bind(org_id)
            .bind(id)
            .fetch_optional(pool)
            .await?;
    found.map(row).transpose()
}
