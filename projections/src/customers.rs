//! The contacts read models: one row per customer (`customers_view`) or supplier (`suppliers_view`),
//! for their details and lists. Both kinds share one shape and one projection type.

use crate::{CacheResource, ProjectionError, ProjectionId, json_fold, latest_rows};
use events::RecordedEvent;
use events::catalogue::{CustomerEvent, CustomerFields, RecordEvent, SupplierEvent};
use sqlx::PgPool;
use std::marker::PhantomData;
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "customers_view";
pub const SUPPLIERS_TABLE: &str = "suppliers_view";

/// One kind of contact: its projection, table and cached resource. It folds the aggregate whose events
/// are `E`.
pub type ContactsProjection<E> = json_fold::Table<ContactRows<E>>;

pub type CustomersProjection = ContactsProjection<CustomerEvent>;

pub const CUSTOMERS: ContactsProjection<CustomerEvent> =
    json_fold::Table::new(ProjectionId::Customers, &[TABLE], CacheResource::Customer);

pub const SUPPLIERS: ContactsProjection<SupplierEvent> =
    json_fold::Table::new(ProjectionId::Suppliers, &[SUPPLIERS_TABLE], CacheResource::Supplier);

/// The rows of the contacts whose events are `E`.
pub struct ContactRows<E>(PhantomData<fn() -> E>);

impl<E> json_fold::Rows for ContactRows<E>
where
    E: RecordEvent<Fields = CustomerFields>,
{
    type Event = E;
    type Row = CustomerRow;

    fn fold(events: &[RecordedEvent]) -> Result<Vec<CustomerRow>, ProjectionError> {
        fold::<E>(events)
    }

    fn upsert_sql(table: &str) -> String {
        upsert_sql(table)
    }

    fn key(row: &CustomerRow) -> (Uuid, Uuid) {
        (row.org_id, row.id)
    }
}

/// A customer as the read side stores it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize)]
pub struct CustomerRow {
    pub org_id: Uuid,
    pub id: Uuid,
    pub name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub tax_id: Option<String>,
    pub tax_id_type: Option<String>,
    pub tax_category: Option<String>,
    pub person_type: Option<String>,
    pub country: Option<String>,
    pub province: Option<String>,
    pub city: Option<String>,
    pub address: Option<String>,
    pub apartment: Option<String>,
    pub postal_code: Option<String>,
    pub default_account_id: Option<Uuid>,
    pub is_active: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl CustomerRow {
    fn new(org_id: Uuid, id: Uuid, fields: &CustomerFields, at: OffsetDateTime) -> Self {
        let f = fields.clone();
        CustomerRow {
            org_id,
            id,
            name: f.name,
            email: f.email,
            phone: f.phone,
            tax_id: f.tax_id,
            tax_id_type: f.tax_id_type,
            tax_category: f.tax_category,
            person_type: f.person_type,
            country: f.country,
            province: f.province,
            city: f.city,
            address: f.address,
            apartment: f.apartment,
            postal_code: f.postal_code,
            default_account_id: f.default_account_id,
            is_active: true,
            created_at: at,
            updated_at: at,
        }
    }
}

/// Folds a batch in memory: one row per contact, in order of first appearance.
fn fold<E: RecordEvent<Fields = CustomerFields>>(
    events: &[RecordedEvent],
) -> Result<Vec<CustomerRow>, ProjectionError> {
    let rows = events
        .iter()
        .map(|event| {
            let decoded: E = crate::decode(event)?;
            Ok(CustomerRow::new(event.org_id, event.stream_id, decoded.fields(), event.recorded_at))
        })
        .collect::<Result<Vec<_>, ProjectionError>>()?;
    // A replacement of a contact created in an earlier batch starts from a placeholder row whose
    // creation time the upsert below never writes over.
    Ok(latest_rows(
        rows,
        |r| (r.org_id, r.id),
        |earlier, later| CustomerRow { created_at: earlier.created_at, ..later },
    ))
}

/// The upsert of a batch of rows, read as a JSON array from `$1`.
fn upsert_sql(table: &str) -> String {
    format!(
        "insert into {table} (org_id, id, name, email, phone, tax_id, tax_id_type, tax_category, person_type, country,
                              province, city, address, apartment, postal_code, is_active, created_at, updated_at,
                              default_account_id)
         select org_id, id, name, email, phone, tax_id, tax_id_type, tax_category, person_type, country,
                province, city, address, apartment, postal_code, is_active, created_at, updated_at,
                default_account_id
         from json_to_recordset($1::json) as r(org_id uuid, id uuid, name text, email text, phone text, tax_id text,
              tax_id_type text, tax_category text, person_type text, country text, province text, city text,
              address text, apartment text, postal_code text, is_active boolean, created_at timestamptz,
              updated_at timestamptz, default_account_id uuid)
         on conflict (org_id, id) do update set
             name = excluded.name, email = excluded.email, phone = excluded.phone, tax_id = excluded.tax_id,
             tax_id_type = excluded.tax_id_type, tax_category = excluded.tax_category,
             person_type = excluded.person_type, country = excluded.country, province = excluded.province,
             city = excluded.city, address = excluded.address, apartment = excluded.apartment,
             postal_code = excluded.postal_code, updated_at = excluded.updated_at,
             default_account_id = excluded.default_account_id"
    )
}

const COLUMNS: &str = "org_id, id, name, email, phone, tax_id, tax_id_type, tax_category, person_type, country, \
                       province, city, address, apartment, postal_code, default_account_id, is_active, created_at, \
                       updated_at";

/// One contact of one organization, from `table` (customers or suppliers).
pub async fn get(pool: &PgPool, table: &str, org_id: Uuid, id: Uuid) -> Result<Option<CustomerRow>, sqlx::Error> {
    crate::row_by_id(pool, table, COLUMNS, org_id, id).await
}

/// A page of an organization's contacts of one kind in id order (ids are time-ordered, so oldest first), after
/// the customer `after` when given. Fetches `limit` rows.
pub async fn list(
    pool: &PgPool,
    table: &str,
    org_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<CustomerRow>, sqlx::Error> {
    crate::rows_after_id(pool, table, COLUMNS, org_id, after, limit).await
}

/// One numbered page of an organization's contacts of one kind, by name then id, optionally matching
/// `query` in the name or tax id; and how many match in all.
pub async fn page(
    pool: &PgPool,
    table: &str,
    org_id: Uuid,
    query: Option<&str>,
    page: i64,
    limit: i64,
) -> Result<(Vec<CustomerRow>, i64), sqlx::Error> {
    let select = format!("select {COLUMNS} from {table}");
    let filter = "org_id = $1 and ($2::text is null or name ilike $2 or tax_id ilike $2)";
    crate::SearchPages { select: &select, counted: table, filter, order: "lower(name), id" }
        .fetch(pool, org_id, query, page, limit)
        .await
}
