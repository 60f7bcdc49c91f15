//! The sales read model (`sales_view`): each sale's whole state (the recorded sale with its later fiscal
//! outcomes, folded with the same fold the command side uses) beside the columns lists filter on, and
//! what it still owes (`amount_due`: its balance, less the credit notes correcting it and the customer
//! payments allocated to it, below zero when credit notes passed what it owed: reads show it as never
//! below zero; `payment_status` follows from it).

use crate::{Folded, ProjectionError, Target, contains_pattern};
use events::RecordedEvent;
use events::catalogue::{CustomerPaymentEvent, SaleEvent, SaleRecorded, fold_sale};
use events::domain::Cents;
use sqlx::{PgConnection, PgPool};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

pub const TABLE: &str = "sales_view";

pub struct SalesProjection;

projection!(SalesProjection { id: Sales, tables: &[TABLE], folds: [SaleEvent, CustomerPaymentEvent] });

/// Moves what a sale owes by `change` cents. A credit note for more than the sale still owed takes it
/// below zero, so after a payment voided later the sale owes its total less its credits and the
/// payments that remain; reads show what is owed as never below zero.
async fn owe(
    conn: &mut PgConnection,
    target: Target,
    org_id: Uuid,
    sale: Uuid,
    change: i64,
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "update {} set amount_due = amount_due + $3 where org_id = $1 and id = $2",
        target.table(TABLE)
    );
    sqlx::query(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(sale).bind(change).execute(&mut *conn).await?;
    Ok(())
}

/// `A 00001-00000042`, as lists search it.
fn formatted(sale: &SaleRecorded) -> Option<String> {
    sale.number.map(|n| format!("{} {:05}-{n:08}", sale.letter.as_deref().unwrap_or("X"), sale.point_of_sale_number))
}

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let table = target.table(TABLE);
    for event in events {
        if let Some(fact) = crate::payment_fact(event)? {
            let (allocations, sign) = fact.settlements();
            for share in allocations {
                owe(conn, target, event.org_id, share.document_id, sign * share.amount.get()).await?;
            }
            continue;
        }
        let decoded: SaleEvent = crate::decode(event)?;
        let Some(sale) = fold_sale(None, &decoded) else {
            return Err(ProjectionError::undecodable(event, "a fiscal outcome before the sale"));
        };
        let sql = format!(
            "insert into {table} (org_id, id, customer_id, customer_name, invoice_date, status, integration_source,
                                  integration_id, formatted_number, total, doc, created_at, updated_at, amount_due)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13)
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
            .bind(sqlx::types::Json(&sale))
            .bind(event.recorded_at)
            .bind(opening_due(&sale))
            .execute(&mut *conn)
            .await?;
        // A credit note lowers what the sale it corrects owes, once (when it is recorded).
        if let (SaleEvent::SaleRecorded(_), "credit_note", Some(corrected)) =
            (&decoded, sale.document_kind.as_str(), sale.associated_sale_id)
        {
            owe(conn, target, event.org_id, corrected, -sale.total.get()).await?;
        }
        // A numbered sale gets its PDF (asking again with the same content changes nothing).
        let issuer = crate::documents::vouchers::issuer(conn, event.org_id).await?;
        let corrected: Option<(String, Option<String>)> = match sale.associated_sale_id {
            Some(id) => {
                let sql = format!("select doc->>'document_kind', formatted_number from {table} where org_id = $1 and id = $2");
                sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(event.org_id).bind(id).fetch_optional(&mut *conn).await?
            }
            None => None,
        };
        if let Some(document) = crate::documents::vouchers::sale_document(&sale, &issuer, corrected.as_ref()) {
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

/// What a sale owes when it is recorded: its balance (the total less the payments taken with it); a
/// credit note owes nothing.
pub fn opening_due(sale: &SaleRecorded) -> Cents {
    if sale.document_kind == "credit_note" { Cents::ZERO } else { sale.balance.max(Cents::ZERO) }
}

/// `pending` (owes its whole total), `partially_paid` or `paid` (owes nothing).
pub fn payment_status(total: Cents, due: Cents) -> &'static str {
    if due <= Cents::ZERO {
        "paid"
    } else if due < total {
        "partially_paid"
    } else {
        "pending"
    }
}

/// The payment statuses a list filters on.
pub const PAYMENT_STATUSES: &[&str] = &["pending", "partially_paid", "paid"];

/// A sale as stored for reads.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SaleRow {
    pub id: Uuid,
    #[sqlx(json, rename = "doc")]
    pub sale: SaleRecorded,
    /// What it still owes.
    pub amount_due: Cents,
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
    /// `pending`, `partially_paid` or `paid`.
    pub payment_status: Option<String>,
}

/// Up to `limit` sales after `after`, oldest first.
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    filter: &SaleFilter,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<SaleRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, doc, greatest(amount_due, 0) as amount_due, created_at, updated_at from sales_view
         where org_id = $1 and ($2::uuid is null or customer_id = $2)
           and ($3::date is null or invoice_date >= $3) and ($4::date is null or invoice_date <= $4)
           and ($5::text is null or status = $5) and ($6::text is null or integration_source = $6)
           and ($7::text is null or customer_name ilike $7 or formatted_number ilike $7 or integration_id ilike $7)
           and ($8::uuid is null or id > $8) and ($10::text is null or payment_status = $10)
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
    .bind(&filter.payment_status)
    .fetch_all(pool)
    .await
}

pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<SaleRow>, sqlx::Error> {
    let columns = "id, doc, greatest(amount_due, 0) as amount_due, created_at, updated_at";
    crate::row_by_id(pool, "sales_view", columns, org_id, id).await
}
