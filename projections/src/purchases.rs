//! The purchasing read model: purchases (`purchases_view`, the recorded event as a document beside the
//! columns lists filter on) and purchase orders (`purchase_orders_view`, the order's state folded with
//! the same fold the command side uses). Reads join suppliers for their names. A purchase also keeps what
//! it still owes (`amount_due`), which supplier payments allocated to it lower and their voids give back.

use crate::{Folded, ProjectionError, Target, contains_pattern};
use events::catalogue::{PurchaseEvent, PurchaseOrderEvent, PurchaseOrderState, SupplierPaymentEvent};
use events::domain::Cents;
use events::{EventPayload, RecordedEvent};
use serde_json::Value;
use sqlx::postgres::PgArguments;
use sqlx::{Arguments, PgConnection, PgPool};
use time::{Date, OffsetDateTime};
use uuid::Uuid;

pub const PURCHASES: &str = "purchases_view";
pub const ORDERS: &str = "purchase_orders_view";

pub struct PurchasesProjection;

projection!(PurchasesProjection {
    id: Purchases,
    tables: &[PURCHASES, ORDERS],
    folds: [PurchaseEvent, PurchaseOrderEvent, SupplierPaymentEvent],
});

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let (purchases, orders) = (target.table(PURCHASES), target.table(ORDERS));
    for event in events {
        // Supplier payments move what their purchases owe (allocations lower it, voids give it back).
        if let Some(fact) = crate::payment_fact(event)? {
            let (allocations, sign) = fact.settlements();
            for share in allocations {
                let sql = format!(
                    "update {purchases} set amount_due = greatest(0, amount_due + $3) where org_id = $1 and id = $2"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(event.org_id)
                    .bind(share.document_id)
                    .bind(sign * share.amount.get())
                    .execute(&mut *conn)
                    .await?;
            }
            continue;
        }
        if event.stream_type == PurchaseEvent::STREAM_TYPE {
            let PurchaseEvent::PurchaseRecorded(recorded) = crate::decode(event)?;
            let sql = format!(
                "insert into {purchases} (org_id, id, supplier_id, voucher_type, supplier_invoice_number, invoice_date,
                                          total_ars, doc, created_at, amount_due)
                 values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $7) on conflict (org_id, id) do nothing"
            );
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(event.org_id)
                .bind(event.stream_id)
                .bind(recorded.supplier_id)
                .bind(recorded.voucher_type)
                .bind(&recorded.supplier_invoice_number)
                .bind(recorded.invoice_date)
                .bind(recorded.amounts.total_ars)
                .bind(sqlx::types::Json(&*recorded))
                .bind(event.recorded_at)
                .execute(&mut *conn)
                .await?;
            request_document(conn, event.org_id, event.stream_id, &recorded).await?;
            continue;
        }
        let decoded: PurchaseOrderEvent = crate::decode(event)?;
        let state = match decoded {
            PurchaseOrderEvent::PurchaseOrderCreated(_) => None,
            _ => crate::current_doc::<PurchaseOrderState>(conn, &orders, event).await?,
        };
        let Some(next) = PurchaseOrderState::fold(state, &decoded, event.recorded_at) else {
            return Err(ProjectionError::undecodable(event, "an order event before the order's creation"));
        };
        let next = PurchaseOrderState { id: event.stream_id, ..next };
        let sql = format!(
            "insert into {orders} (org_id, id, number, supplier_id, status, doc, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8)
             on conflict (org_id, id) do update set status = excluded.status, doc = excluded.doc,
                 updated_at = excluded.updated_at"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(event.org_id)
            .bind(event.stream_id)
            .bind(next.number)
            .bind(next.supplier_id)
            .bind(next.status.as_str())
            .bind(sqlx::types::Json(&next))
            .bind(next.created_at)
            .bind(next.updated_at)
            .execute(&mut *conn)
            .await?;
    }
    // Purchasing reads are not cached.
    Ok(Vec::new())
}

/// Asks for a purchase's PDF: the supplier's invoice as recorded, its number read from the supplier
/// invoice number when it is written `PPPP-NNNNNNNN`.
async fn request_document(
    conn: &mut PgConnection,
    org_id: Uuid,
    id: Uuid,
    purchase: &events::catalogue::PurchaseRecorded,
) -> Result<(), sqlx::Error> {
    let supplier: Option<crate::documents::vouchers::PartyRow> =
        sqlx::query_as("select name, tax_id, tax_category, address from suppliers_view where org_id = $1 and id = $2")
            .bind(org_id)
            .bind(purchase.supplier_id)
            .fetch_optional(&mut *conn)
            .await?;
    let (name, tax_id, tax_category, address) = supplier.unwrap_or_default();
    let supplier = crate::documents::Party { name, tax_id, tax_category, address, ..Default::default() };
    let organization = crate::documents::vouchers::issuer(conn, org_id).await?;
    let ids: Vec<Uuid> = purchase.lines.iter().map(|l| l.variant_id).collect();
    let names: Vec<(Uuid, String)> =
        sqlx::query_as("select id, name from products_view where org_id = $1 and id = any($2)")
            .bind(org_id)
            .bind(&ids)
            .fetch_all(&mut *conn)
            .await?;
    let name_of = |id: Uuid| names.iter().find(|(v, _)| *v == id).map_or_else(|| id.to_string(), |(_, n)| n.clone());
    match crate::documents::vouchers::purchase_document(purchase, supplier, organization, &name_of) {
        Some(document) => {
            crate::documents::store::request(conn, org_id, crate::documents::OwnerKind::Purchase, id, &document)
                .await?;
        }
        None => tracing::error!(%org_id, purchase = %id, "a purchase's VAT by rate leaves the range: no document"),
    }
    Ok(())
}

/// A purchase as stored for reads: the recorded event (`doc`) and the supplier's name.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct PurchaseRow {
    pub id: Uuid,
    pub supplier_name: Option<String>,
    pub doc: Value,
    /// What it still owes, in pesos: its total less the supplier payments allocated to it.
    pub amount_due: Cents,
    pub created_at: OffsetDateTime,
}

/// What a purchase list may be filtered by (dates inclusive, on the invoice date).
#[derive(Debug, Clone, Default)]
pub struct PurchaseFilter {
    pub supplier_id: Option<Uuid>,
    pub date_from: Option<Date>,
    pub date_to: Option<Date>,
    /// Part of the supplier invoice number or of the supplier's name.
    pub query: Option<String>,
}

/// The purchases lists and reads select from, each with its supplier.
const PURCHASES_WITH_SUPPLIERS: &str =
    "purchases_view p left join suppliers_view s on s.org_id = p.org_id and s.id = p.supplier_id";

const PURCHASE_FILTER: &str = "p.org_id = $1 and ($2::uuid is null or p.supplier_id = $2)
    and ($3::date is null or p.invoice_date >= $3) and ($4::date is null or p.invoice_date <= $4)
    and ($5::text is null or p.supplier_invoice_number ilike $5 or s.name ilike $5)";

impl PurchaseFilter {
    /// The organization and the filter as `$1` to `$5` of [`PURCHASE_FILTER`], for a query that binds
    /// its own parameters after them.
    fn arguments(&self, org_id: Uuid) -> Result<PgArguments, sqlx::Error> {
        let mut arguments = PgArguments::default();
        arguments.add(org_id).map_err(sqlx::Error::Encode)?;
        arguments.add(self.supplier_id).map_err(sqlx::Error::Encode)?;
        arguments.add(self.date_from).map_err(sqlx::Error::Encode)?;
        arguments.add(self.date_to).map_err(sqlx::Error::Encode)?;
        arguments.add(self.query.as_deref().map(contains_pattern)).map_err(sqlx::Error::Encode)?;
        Ok(arguments)
    }
}

/// What a purchase read selects, as [`PurchaseRow`] names it.
const PURCHASE_COLUMNS: &str = "p.id, s.name as supplier_name, p.doc, p.amount_due, p.created_at";

/// Up to `limit` purchases after `after`, oldest first.
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    filter: &PurchaseFilter,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<PurchaseRow>, sqlx::Error> {
    let sql = format!(
        "select {PURCHASE_COLUMNS} from {PURCHASES_WITH_SUPPLIERS}
         where {PURCHASE_FILTER} and ($6::uuid is null or p.id > $6) order by p.id limit $7"
    );
    sqlx::query_as_with(sqlx::AssertSqlSafe(sql), filter.arguments(org_id)?)
        .bind(after)
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// One numbered page of purchases (newest first) and how many there are in all.
pub async fn page(
    pool: &PgPool,
    org_id: Uuid,
    filter: &PurchaseFilter,
    page: i64,
    limit: i64,
) -> Result<(Vec<PurchaseRow>, i64), sqlx::Error> {
    let sql = format!(
        "select {PURCHASE_COLUMNS} from {PURCHASES_WITH_SUPPLIERS}
         where {PURCHASE_FILTER} order by p.id desc limit $6 offset $7"
    );
    let rows: Vec<PurchaseRow> = sqlx::query_as_with(sqlx::AssertSqlSafe(sql), filter.arguments(org_id)?)
        .bind(limit)
        .bind((page - 1).saturating_mul(limit))
        .fetch_all(pool)
        .await?;
    let sql = format!("select count(*) from {PURCHASES_WITH_SUPPLIERS} where {PURCHASE_FILTER}");
    let total: i64 =
        sqlx::query_scalar_with(sqlx::AssertSqlSafe(sql), filter.arguments(org_id)?).fetch_one(pool).await?;
    Ok((rows, total))
}

pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<PurchaseRow>, sqlx::Error> {
    let sql = format!(
        "select {PURCHASE_COLUMNS} from {PURCHASES_WITH_SUPPLIERS} where p.org_id = $1 and p.id = $2"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(id).fetch_optional(pool).await
}

/// A purchase order as stored for reads, with its supplier's name.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct OrderRow {
    #[sqlx(json, rename = "doc")]
    pub state: PurchaseOrderState,
    pub supplier_name: Option<String>,
}

/// Up to `limit` purchase orders after `after`, oldest first.
pub async fn orders(
    pool: &PgPool,
    org_id: Uuid,
    supplier_id: Option<Uuid>,
    status: Option<&str>,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<OrderRow>, sqlx::Error> {
    sqlx::query_as(
        "select o.doc, s.name as supplier_name from purchase_orders_view o
         left join suppliers_view s on s.org_id = o.org_id and s.id = o.supplier_id
         where o.org_id = $1 and ($2::uuid is null or o.supplier_id = $2) and ($3::text is null or o.status = $3)
           and ($4::uuid is null or o.id > $4)
         order by o.id limit $5",
    )
    .bind(org_id)
    .bind(supplier_id)
    .bind(status)
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

pub async fn order(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<OrderRow>, sqlx::Error> {
    sqlx::query_as(
        "select o.doc, s.name as supplier_name from purchase_orders_view o
         left join suppliers_view s on s.org_id = o.org_id and s.id = o.supplier_id
         where o.org_id = $1 and o.id = $2",
    )
    .bind(org_id)
    .bind(id)
    .fetch_optional(pool)
    .await
}
