//! Customer and supplier payments as they stand (`payments_view`): each payment's document, its status
//! (`posted` or `voided`), its contact and the locations of its lines (for what delegated tokens see).

use crate::treasury::Visibility;
use crate::{Folded, Target};
use events::catalogue::{CustomerPaymentEvent, PaymentFact, PaymentRecorded, PaymentSide, SupplierPaymentEvent};
use events::{EventPayload, RecordedEvent};
use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgPool};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

pub const PAYMENTS: &str = "payments_view";

pub struct PaymentsProjection;

projection!(PaymentsProjection {
    id: Payments,
    tables: &[PAYMENTS],
    folds: [CustomerPaymentEvent, SupplierPaymentEvent]
});

fn side_of(event: &RecordedEvent) -> PaymentSide {
    if event.stream_type == SupplierPaymentEvent::STREAM_TYPE { PaymentSide::Supplier } else { PaymentSide::Customer }
}

/// A payment as stored for reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentDoc {
    pub payment: PaymentRecorded,
    /// When it was voided (none while posted).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub voided_at: Option<OffsetDateTime>,
}

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    for event in events {
        let Some(fact) = crate::payment_fact(event)? else { continue };
        match fact {
            PaymentFact::Recorded(payment) => {
                let locations: Vec<String> =
                    payment.lines.iter().map(|l| format!("{}/{}", l.location.kind.as_str(), l.location.id)).collect();
                let doc = PaymentDoc { payment: (*payment).clone(), voided_at: None };
                let sql = format!(
                    "insert into {} (org_id, side, id, contact_id, occurred_on, status, locations, created_by, doc,
                                     created_at, updated_at)
                     values ($1, $2, $3, $4, $5, 'posted', $6, $7, $8, $9, $9)",
                    target.table(PAYMENTS)
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(if side_of(event) == PaymentSide::Customer { "customer" } else { "supplier" })
                    .bind(event.stream_id)
                    .bind(payment.contact_id)
                    .bind(payment.occurred_on)
                    .bind(&locations)
                    .bind(payment.created_by.as_deref())
                    .bind(sqlx::types::Json(&doc))
                    .bind(event.recorded_at)
                    .execute(&mut *conn)
                    .await?;
            }
            PaymentFact::Allocated(allocated) => {
                let sql = format!(
                    "update {} set updated_at = $3,
                         doc = jsonb_set(doc, '{{payment,allocations}}', (doc->'payment'->'allocations') || $4::jsonb)
                     where org_id = $1 and id = $2",
                    target.table(PAYMENTS)
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(event.stream_id)
                    .bind(event.recorded_at)
                    .bind(sqlx::types::Json(&allocated.allocations))
                    .execute(&mut *conn)
                    .await?;
            }
            PaymentFact::Voided(_) => {
                let sql = format!(
                    "update {} set status = 'voided', updated_at = $3,
                         doc = jsonb_set(doc, '{{voided_at}}', to_jsonb($4::text))
                     where org_id = $1 and id = $2",
                    target.table(PAYMENTS)
                );
                let at = event.recorded_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(event.stream_id)
                    .bind(event.recorded_at)
                    .bind(at)
                    .execute(&mut *conn)
                    .await?;
            }
        }
    }
    // Payment reads are not cached.
    Ok(Vec::new())
}

/// A payment as read.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PaymentRow {
    pub id: Uuid,
    #[sqlx(json)]
    pub doc: PaymentDoc,
    pub status: String,
    pub occurred_on: Date,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// What the payments list filters on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PaymentFilter {
    pub contact_id: Option<Uuid>,
    pub status: Option<String>,
    pub date_from: Option<Date>,
    pub date_to: Option<Date>,
}

/// A delegated token sees a payment whose every location it sees; `own`, only its user's.
const VISIBLE: &str = "($3::text[] is null or p.locations <@ $3::text[]) and ($4::text is null or p.created_by = $4)";

/// The locations `visibility` sees, as `payments_view.locations` names them (none: every one).
pub(crate) fn seen(visibility: &Visibility) -> Option<Vec<String>> {
    visibility.locations.as_ref().map(|ls| ls.iter().map(|l| format!("{}/{}", l.kind.as_str(), l.id)).collect())
}


/// One payment of `side`, when the reader sees it.
pub async fn payment(
    pool: &PgPool,
    org_id: Uuid,
    side: PaymentSide,
    id: Uuid,
    visibility: &Visibility,
) -> Result<Option<PaymentRow>, sqlx::Error> {
    let sql = format!(
        "select p.id, p.doc, p.status, p.occurred_on, p.created_at, p.updated_at from {PAYMENTS} p
         where p.org_id = $1 and p.side = $2 and {VISIBLE} and p.id = $5"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(side.as_str())
        .bind(seen(visibility))
        .bind(visibility.own.as_deref())
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Which of `ids`, payments of `side`, `visibility` does not see: none for a credential that sees every
/// payment (no read), else one read for a page of documents that show their payments.
pub async fn hidden(
    pool: &PgPool,
    org_id: Uuid,
    side: PaymentSide,
    ids: &[Uuid],
    visibility: &Visibility,
) -> Result<std::collections::HashSet<Uuid>, sqlx::Error> {
    if *visibility == Visibility::default() || ids.is_empty() {
        return Ok(Default::default());
    }
    let sql = format!("select p.id from {PAYMENTS} p where p.org_id = $1 and p.side = $2 and {VISIBLE} and p.id = any($5)");
    let visible: Vec<Uuid> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(side.as_str())
        .bind(seen(visibility))
        .bind(visibility.own.as_deref())
        .bind(ids)
        .fetch_all(pool)
        .await?;
    Ok(ids.iter().filter(|id| !visible.contains(id)).copied().collect())
}

/// Up to `limit` payments of `side` after `after`, newest first (`occurred_on`, `created_at`, `id`).
pub async fn payments(
    pool: &PgPool,
    org_id: Uuid,
    side: PaymentSide,
    filter: &PaymentFilter,
    visibility: &Visibility,
    after: Option<crate::treasury::DatedKey>,
    limit: i64,
) -> Result<Vec<PaymentRow>, sqlx::Error> {
    let sql = format!(
        "select p.id, p.doc, p.status, p.occurred_on, p.created_at, p.updated_at from {PAYMENTS} p
         where p.org_id = $1 and p.side = $2 and {VISIBLE}
           and ($5::uuid is null or p.contact_id = $5) and ($6::text is null or p.status = $6)
           and ($7::date is null or p.occurred_on >= $7) and ($8::date is null or p.occurred_on <= $8)
           and ($9::date is null or (p.occurred_on, p.created_at, p.id) < ($9, $10, $11))
         order by p.occurred_on desc, p.created_at desc, p.id desc limit $12"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(org_id)
        .bind(side.as_str())
        .bind(seen(visibility))
        .bind(visibility.own.as_deref())
        .bind(filter.contact_id)
        .bind(filter.status.as_deref())
        .bind(filter.date_from)
        .bind(filter.date_to)
        .bind(after.map(|a| a.0))
        .bind(after.map(|a| a.1))
        .bind(after.map(|a| a.2))
        .bind(limit)
        .fetch_all(pool)
        .await
}
