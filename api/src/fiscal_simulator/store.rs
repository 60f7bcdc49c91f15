//! The simulator's memory in Postgres (`fiscal_simulator_vouchers`, schema/0021): the vouchers it
//! approved, each stored as `FECompConsultar` answers it, and the series lock that serializes
//! authorizations.

use sqlx::{PgConnection, PgPool};
use time::Date;

use super::rules::Series;

/// A numbering series: issuer CUIT, point of sale, voucher type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesKey {
    pub issuer: i64,
    pub point_of_sale: i32,
    pub voucher_type: i32,
}

/// Holds the series for the rest of the transaction: concurrent authorizations of one series (from
/// any simulator process on this database) take turns, so each sees the last number the previous
/// one stored.
pub async fn lock_series(conn: &mut PgConnection, key: SeriesKey) -> Result<(), sqlx::Error> {
    let name = format!("fiscal-simulator {}/{}/{}", key.issuer, key.point_of_sale, key.voucher_type);
    sqlx::query("select pg_advisory_xact_lock(hashtextextended($1, 0))").bind(name).execute(conn).await?;
    Ok(())
}

/// The series' last voucher (number 0 and no date when none).
pub async fn series(conn: &mut PgConnection, key: SeriesKey) -> Result<Series, sqlx::Error> {
    let last: Option<(i64, Date)> = sqlx::query_as(
        "select number, voucher_date from fiscal_simulator_vouchers
         where issuer_tax_id = $1 and point_of_sale = $2 and voucher_type = $3
         order by number desc limit 1",
    )
    .bind(key.issuer)
    .bind(key.point_of_sale)
    .bind(key.voucher_type)
    .fetch_optional(conn)
    .await?;
    Ok(last.map_or(Series::default(), |(number, date)| Series { last_number: number, last_date: Some(date) }))
}

/// An approved voucher to store.
pub struct Approved<'a> {
    pub number: i64,
    pub date: Date,
    pub cae: &'a str,
    pub cae_due: Date,
    /// `ResultGet` as JSON text.
    pub stored: &'a str,
}

pub async fn insert(conn: &mut PgConnection, key: SeriesKey, voucher: Approved<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "insert into fiscal_simulator_vouchers
             (issuer_tax_id, point_of_sale, voucher_type, number, voucher_date, cae, cae_due, stored)
         values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)",
    )
    .bind(key.issuer)
    .bind(key.point_of_sale)
    .bind(key.voucher_type)
    .bind(voucher.number)
    .bind(voucher.date)
    .bind(voucher.cae)
    .bind(voucher.cae_due)
    .bind(voucher.stored)
    .execute(conn)
    .await?;
    Ok(())
}

/// The stored `ResultGet` of one voucher, as JSON text (read as text so its decimals stay exact).
pub async fn find(pool: &PgPool, key: SeriesKey, number: i64) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar(
        "select stored::text from fiscal_simulator_vouchers
         where issuer_tax_id = $1 and point_of_sale = $2 and voucher_type = $3 and number = $4",
    )
    .bind(key.issuer)
    .bind(key.point_of_sale)
    .bind(key.voucher_type)
    .bind(number)
    .fetch_optional(pool)
    .await
}

/// The last number of a series, without taking its lock (what `FECompUltimoAutorizado` answers).
pub async fn last_number(pool: &PgPool, key: SeriesKey) -> Result<i64, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    Ok(series(&mut conn, key).await?.last_number)
}

/// Which vouchers `GET /_simulator/vouchers` lists; each filter is optional.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize)]
pub struct Filter {
    pub issuer_tax_id: Option<i64>,
    pub point_of_sale: Option<i32>,
    pub voucher_type: Option<i32>,
    pub limit: Option<i64>,
}

/// A listed voucher: its series, number, date, CAE and expiry, and `ResultGet` as JSON text.
pub struct Listed {
    pub key: SeriesKey,
    pub number: i64,
    pub date: Date,
    pub cae: String,
    pub cae_due: Date,
    pub stored: String,
}

/// The most a listing answers, and its default.
pub const MAX_LISTED: i64 = 10_000;
pub const DEFAULT_LISTED: i64 = 1_000;

pub async fn list(pool: &PgPool, filter: Filter) -> Result<Vec<Listed>, sqlx::Error> {
    type Row = (i64, i32, i32, i64, Date, String, Date, String);
    let rows: Vec<Row> = sqlx::query_as(
        "select issuer_tax_id, point_of_sale, voucher_type, number, voucher_date, cae, cae_due, stored::text
         from fiscal_simulator_vouchers
         where ($1::bigint is null or issuer_tax_id = $1)
           and ($2::integer is null or point_of_sale = $2)
           and ($3::integer is null or voucher_type = $3)
         order by issuer_tax_id, point_of_sale, voucher_type, number
         limit $4",
    )
    .bind(filter.issuer_tax_id)
    .bind(filter.point_of_sale)
    .bind(filter.voucher_type)
    .bind(filter.limit.unwrap_or(DEFAULT_LISTED).clamp(1, MAX_LISTED))
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(issuer, point_of_sale, voucher_type, number, date, cae, cae_due, stored)| Listed {
            key: SeriesKey { issuer, point_of_sale, voucher_type },
            number,
            date,
            cae,
            cae_due,
            stored,
        })
        .collect())
}
