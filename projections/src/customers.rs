//! The contacts read models: one row per customer (`customers_view`) or supplier (`suppliers_view`),
//! for their details and lists. Both kinds share one shape and one projection type.

use crate::{CacheKey, Projection, ProjectionError, Target};
use events::catalogue::{CustomerEvent, CustomerFields, RecordEvent, SupplierEvent};
use events::{EventPayload, RecordedEvent};
use futures::future::BoxFuture;
use sqlx::{PgConnection, PgPool};
use std::collections::HashMap;
use std::marker::PhantomData;
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLE: &str = "customers_view";
pub const RESOURCE: &str = "customer";
pub const SUPPLIERS_TABLE: &str = "suppliers_view";
pub const SUPPLIER_RESOURCE: &str = "supplier";

/// One kind of contact: its projection name, table, cached resource name and stream type.
pub struct ContactsProjection<E> {
    name: &'static str,
    tables: &'static [&'static str],
    resource: &'static str,
    stream_types: &'static [&'static str],
    _kind: PhantomData<fn() -> E>,
}

pub type CustomersProjection = ContactsProjection<CustomerEvent>;

pub const CUSTOMERS: ContactsProjection<CustomerEvent> = ContactsProjection {
    name: "customers",
    tables: &[TABLE],
    resource: RESOURCE,
    stream_types: &[CustomerEvent::STREAM_TYPE],
    _kind: PhantomData,
};

pub const SUPPLIERS: ContactsProjection<SupplierEvent> = ContactsProjection {
    name: "suppliers",
    tables: &[SUPPLIERS_TABLE],
    resource: SUPPLIER_RESOURCE,
    stream_types: &[SupplierEvent::STREAM_TYPE],
    _kind: PhantomData,
};

impl<E> Projection for ContactsProjection<E>
where
    E: RecordEvent<Fields = CustomerFields> + Send + Sync + 'static,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn tables(&self) -> &'static [&'static str] {
        self.tables
    }

    fn stream_types(&self) -> &'static [&'static str] {
        self.stream_types
    }

    fn apply<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        target: Target,
        events: &'a [RecordedEvent],
    ) -> BoxFuture<'a, Result<Vec<CacheKey>, ProjectionError>> {
        Box::pin(apply::<E>(conn, target, self.tables[0], self.resource, events))
    }
}

/// A customer as the read side stores it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
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
    pub created_at: OffsetDateTime,
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

async fn apply<E: RecordEvent<Fields = CustomerFields>>(
    conn: &mut PgConnection,
    target: Target,
    table: &str,
    resource: &str,
    events: &[RecordedEvent],
) -> Result<Vec<CacheKey>, ProjectionError> {
    // Fold the batch in memory first: one row per customer, then one statement for all of them.
    let mut rows: HashMap<(Uuid, Uuid), CustomerRow> = HashMap::new();
    let mut order: Vec<(Uuid, Uuid)> = Vec::new();
    for event in events {
        let decoded = E::decode(&event.event_type, event.schema_version, event.data.clone())
            .map_err(|e| ProjectionError::Undecodable { position: event.position, reason: e.to_string() })?;
        let key = (event.org_id, event.stream_id);
        // A replacement of a customer created in an earlier batch starts from a placeholder row whose
        // creation time the upsert below never writes over.
        let fields = decoded.fields();
        match rows.get_mut(&key) {
            Some(row) => {
                let created_at = row.created_at;
                *row = CustomerRow { created_at, ..CustomerRow::new(key.0, key.1, fields, event.recorded_at) };
            }
            None => {
                order.push(key);
                rows.insert(key, CustomerRow::new(key.0, key.1, fields, event.recorded_at));
            }
        }
    }
    if order.is_empty() {
        return Ok(Vec::new());
    }
    let batch: Vec<&CustomerRow> = order.iter().filter_map(|k| rows.get(k)).collect();
    let col = |f: fn(&CustomerRow) -> Option<String>| -> Vec<Option<String>> { batch.iter().map(|r| f(r)).collect() };
    let sql = format!(
        "insert into {table} (org_id, id, name, email, phone, tax_id, tax_id_type, tax_category, person_type, country,
                              province, city, address, apartment, postal_code, is_active, created_at, updated_at,
                              default_account_id)
         select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                              $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
                              $15::text[], $16::bool[], $17::timestamptz[], $18::timestamptz[], $19::uuid[])
         on conflict (org_id, id) do update set
             name = excluded.name, email = excluded.email, phone = excluded.phone, tax_id = excluded.tax_id,
             tax_id_type = excluded.tax_id_type, tax_category = excluded.tax_category,
             person_type = excluded.person_type, country = excluded.country, province = excluded.province,
             city = excluded.city, address = excluded.address, apartment = excluded.apartment,
             postal_code = excluded.postal_code, updated_at = excluded.updated_at,
             default_account_id = excluded.default_account_id",
        table = target.table(table)
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(batch.iter().map(|r| r.org_id).collect::<Vec<_>>())
        .bind(batch.iter().map(|r| r.id).collect::<Vec<_>>())
        .bind(batch.iter().map(|r| r.name.clone()).collect::<Vec<_>>())
        .bind(col(|r| r.email.clone()))
        .bind(col(|r| r.phone.clone()))
        .bind(col(|r| r.tax_id.clone()))
        .bind(col(|r| r.tax_id_type.clone()))
        .bind(col(|r| r.tax_category.clone()))
        .bind(col(|r| r.person_type.clone()))
        .bind(col(|r| r.country.clone()))
        .bind(col(|r| r.province.clone()))
        .bind(col(|r| r.city.clone()))
        .bind(col(|r| r.address.clone()))
        .bind(col(|r| r.apartment.clone()))
        .bind(col(|r| r.postal_code.clone()))
        .bind(batch.iter().map(|r| r.is_active).collect::<Vec<_>>())
        .bind(batch.iter().map(|r| r.created_at).collect::<Vec<_>>())
        .bind(batch.iter().map(|r| r.updated_at).collect::<Vec<_>>())
        .bind(batch.iter().map(|r| r.default_account_id).collect::<Vec<_>>())
        .execute(&mut *conn)
        .await?;
    Ok(order.into_iter().map(|(org_id, id)| CacheKey { resource: resource.to_owned(), org_id, id }).collect())
}

const COLUMNS: &str = "org_id, id, name, email, phone, tax_id, tax_id_type, tax_category, person_type, country, \
                       province, city, address, apartment, postal_code, default_account_id, is_active, created_at, \
                       updated_at";

/// One contact of one organization, from `table` (customers or suppliers).
pub async fn get(pool: &PgPool, table: &str, org_id: Uuid, id: Uuid) -> Result<Option<CustomerRow>, sqlx::Error> {
    let sql = format!("select {COLUMNS} from {table} where org_id = $1 and id = $2");
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(id).fetch_optional(pool).await
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
    let sql = format!(
        "select {COLUMNS} from {table} where org_id = $1 and ($2::uuid is null or id > $2) order by id limit $3"
    );
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(after).bind(limit).fetch_all(pool).await
}
