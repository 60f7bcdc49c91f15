//! The quotes read model (`quotes_view`): each quote's whole state (folded with the fold the command
//! side uses), removed when the quote is deleted. The active reservation is read beside it from the
//! inventory read model.

use crate::{Folded, Target, contains_pattern};
use events::RecordedEvent;
use events::catalogue::{QuoteEvent, QuoteState, fold_quote};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "quotes_view";

pub struct QuotesProjection;

projection!(QuotesProjection { id: Quotes, tables: &[TABLE], folds: [QuoteEvent] });

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let table = target.table(TABLE);
    for event in events {
        let decoded: QuoteEvent = crate::decode(event)?;
        // Events that carry the whole quote (or its end) need no current state.
        let current = match decoded {
            QuoteEvent::QuoteCreated(_) | QuoteEvent::QuoteReplaced(_) | QuoteEvent::QuoteDeleted => None,
            QuoteEvent::QuoteExpired(_)
            | QuoteEvent::QuoteSent
            | QuoteEvent::QuoteAccepted
            | QuoteEvent::QuoteRejected
            | QuoteEvent::QuoteConverted(_) => crate::current_doc::<QuoteState>(conn, &table, event).await?,
        };
        match fold_quote(current, &decoded) {
            None => {
                let sql = format!("delete from {table} where org_id = $1 and id = $2");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(event.stream_id)
                    .execute(&mut *conn)
                    .await?;
            }
            Some(quote) => {
                let sql = format!(
                    "insert into {table} (org_id, id, number, customer_id, customer_name, status, doc, created_at, updated_at)
                     values ($1, $2, $3, $4, $5, $6, $7, $8, $8)
                     on conflict (org_id, id) do update set customer_id = excluded.customer_id,
                         customer_name = excluded.customer_name, status = excluded.status, doc = excluded.doc,
                         updated_at = excluded.updated_at"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(event.stream_id)
                    .bind(quote.number)
                    .bind(quote.customer_id)
                    .bind(&quote.customer_name)
                    .bind(quote.status.as_str())
                    .bind(sqlx::types::Json(&quote))
                    .bind(event.recorded_at)
                    .execute(&mut *conn)
                    .await?;
            }
        }
    }
    // Quote reads are not cached.
    Ok(Vec::new())
}

/// A quote as stored for reads.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct QuoteRow {
    pub id: Uuid,
    #[sqlx(json, rename = "doc")]
    pub quote: QuoteState,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<QuoteRow>, sqlx::Error> {
    crate::row_by_id(pool, "quotes_view", "id, doc, created_at, updated_at", org_id, id).await
}

/// Up to `limit` quotes after `after` (created at, id), newest first; `query` matches the customer's
/// name or the quote's number (as shown, `P-00000042`, or as the number alone, `42`).
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    query: Option<&str>,
    customer_id: Option<Uuid>,
    status: Option<&str>,
    after: Option<(OffsetDateTime, Uuid)>,
    limit: i64,
) -> Result<Vec<QuoteRow>, sqlx::Error> {
    sqlx::query_as(
        "select id, doc, created_at, updated_at from quotes_view
         where org_id = $1 and ($2::text is null or customer_name ilike $2 or number::text = $3)
           and ($4::uuid is null or customer_id = $4) and ($5::text is null or status = $5)
           and ($6::timestamptz is null or (created_at, id) < ($6, $7))
         order by created_at desc, id desc limit $8",
    )
    .bind(org_id)
    .bind(query.map(contains_pattern))
    .bind(query.map(number_sought))
    .bind(customer_id)
    .bind(status)
    .bind(after.map(|a| a.0))
    .bind(after.map(|a| a.1))
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The number a quote search names: its digits without the `P-` of the formatted number and without
/// leading zeros.
fn number_sought(query: &str) -> String {
    let query = query.trim();
    let digits = query.strip_prefix("P-").or_else(|| query.strip_prefix("p-")).unwrap_or(query);
    digits.trim_start_matches('0').to_owned()
}
