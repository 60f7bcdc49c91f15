//! Price lists: each list's settings (`price_lists_view`) and explicit prices (`price_list_prices`).
//! Prices of automatic lists are not stored: they are computed on read from the variants' base prices,
//! so they follow every product change at once (see [`price_of`]).

use crate::{CacheKey, CacheResource, Folded, Target};
use events::RecordedEvent;
use events::catalogue::{PriceListEvent, RecordEvent};
use events::domain::{Adjustment, Cents, VatRate};
use events::unnest::Unnest;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

pub const TABLES: &[&str] = &["price_lists_view", "price_list_prices"];

pub struct PriceListsProjection;

projection!(PriceListsProjection { id: PriceLists, tables: TABLES, folds: [PriceListEvent] });

async fn apply(conn: &mut PgConnection, target: Target, events: &[RecordedEvent]) -> Folded {
    let (lists, prices) = (target.table(TABLES[0]), target.table(TABLES[1]));
    let mut stale = Vec::new();
    for event in events {
        let decoded: PriceListEvent = crate::decode(event)?;
        let f = decoded.fields();
        let sql = format!(
            "insert into {lists} (org_id, id, name, description, is_automatic, automatic_pricing_mode,
                 adjustment_hundredths, tax_inclusive, is_active, revision, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
             on conflict (org_id, id) do update set name = excluded.name, description = excluded.description,
                 is_automatic = excluded.is_automatic, automatic_pricing_mode = excluded.automatic_pricing_mode,
                 adjustment_hundredths = excluded.adjustment_hundredths, tax_inclusive = excluded.tax_inclusive,
                 is_active = excluded.is_active, revision = excluded.revision, updated_at = excluded.updated_at"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(event.org_id)
            .bind(event.stream_id)
            .bind(&f.name)
            .bind(&f.description)
            .bind(f.is_automatic)
            .bind(&f.automatic_pricing_mode)
            .bind(f.adjustment_hundredths)
            .bind(f.tax_inclusive)
            .bind(f.is_active)
            .bind(i64::from(event.version))
            .bind(event.recorded_at)
            .execute(&mut *conn)
            .await?;
        let sql = format!("delete from {prices} where org_id = $1 and price_list_id = $2");
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(event.org_id).bind(event.stream_id).execute(&mut *conn).await?;
        Unnest::new(&f.prices)
            .constant("org_id", event.org_id)
            .constant("price_list_id", event.stream_id)
            .column("product_id", |p| p.product_id)
            .column("unit_price", |p| p.unit_price)
            .execute(&mut *conn, &format!("insert into {prices}"), "")
            .await?;
        stale.push(CacheKey { resource: CacheResource::PriceList, org_id: event.org_id, id: event.stream_id });
    }
    Ok(stale)
}

/// A price list as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PriceListRow {
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub is_automatic: bool,
    pub automatic_pricing_mode: Option<String>,
    pub adjustment_hundredths: Option<Adjustment>,
    pub tax_inclusive: bool,
    pub is_active: bool,
    pub revision: i64,
    /// The organization's product pricing revision (0 before any product).
    pub products_revision: i64,
    /// Variants with an explicit price in the list.
    pub explicit_prices: i64,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

impl PriceListRow {
    /// Moves whenever any price of the list may have moved: the list changed, or a product did.
    pub fn pricing_revision(&self) -> String {
        format!("{}.{}", self.revision, self.products_revision)
    }
}

const SELECT_LIST: &str = "select l.id, l.name, l.description, l.is_automatic, l.automatic_pricing_mode,
        l.adjustment_hundredths, l.tax_inclusive, l.is_active, l.revision,
        coalesce((select r.revision from product_pricing_revisions r where r.org_id = l.org_id), 0) as products_revision,
        (select count(*) from price_list_prices e where e.org_id = l.org_id and e.price_list_id = l.id) as explicit_prices,
        l.created_at, l.updated_at
    from price_lists_view l";

pub async fn get(pool: &PgPool, org_id: Uuid, id: Uuid) -> Result<Option<PriceListRow>, sqlx::Error> {
    let sql = format!("{SELECT_LIST} where l.org_id = $1 and l.id = $2");
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(id).fetch_optional(pool).await
}

/// A page of an organization's price lists in id order after `after`.
pub async fn list(
    pool: &PgPool,
    org_id: Uuid,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<PriceListRow>, sqlx::Error> {
    let sql = format!("{SELECT_LIST} where l.org_id = $1 and ($2::uuid is null or l.id > $2) order by l.id limit $3");
    sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(org_id).bind(after).bind(limit).fetch_all(pool).await
}

/// What a price is computed from: one variant's base price and VAT rate, and the list's explicit
/// price for it, if any.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PriceInput {
    pub product_id: Uuid,
    pub is_active: bool,
    pub base_price: Cents,
    pub tax_rate_id: VatRate,
    pub explicit_price: Option<Cents>,
}

/// Where a listed price comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provenance {
    /// The list's explicit price for the variant.
    Manual,
    /// Computed from the variant's base price by the list's automatic pricing.
    Automatic,
}

/// A variant's price under a list: `None` when an input is missing (a manual list without a price for
/// the variant, or an automatic list over a variant without a base price) or the computed price would
/// pass [`Cents::MAX`] — no value is invented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedPrice {
    /// VAT excluded or included as the list says.
    pub unit_price: Cents,
    /// Before VAT.
    pub net_price: Cents,
    pub provenance: Provenance,
}

/// The price of `input` under `list`. Explicit prices are stated in the list's own basis (VAT included
/// when the list is tax-inclusive); computed prices start from the base price, which is before VAT.
pub fn price_of(list: &PriceListRow, input: &PriceInput) -> Option<ListedPrice> {
    let vat = input.tax_rate_id;
    if let Some(unit_price) = input.explicit_price {
        let net_price = if list.tax_inclusive { vat.net_of(unit_price) } else { unit_price };
        return Some(ListedPrice { unit_price, net_price, provenance: Provenance::Manual });
    }
    if !list.is_automatic || input.base_price <= Cents::ZERO {
        return None;
    }
    let net_price = list.adjustment_hundredths.unwrap_or_default().apply_to(input.base_price)?.max(Cents::ZERO);
    let unit_price = if list.tax_inclusive { vat.gross_of(net_price)? } else { net_price };
    Some(ListedPrice { unit_price, net_price, provenance: Provenance::Automatic })
}

/// A page of the price inputs of a list's variants in id order after `after` (`active` filters on the
/// variant's active flag).
pub async fn price_inputs(
    pool: &PgPool,
    org_id: Uuid,
    list_id: Uuid,
    active: Option<bool>,
    after: Option<Uuid>,
    limit: i64,
) -> Result<Vec<PriceInput>, sqlx::Error> {
    select_inputs(pool, org_id, list_id, active, after, None, limit).await
}

/// One variant's price input under a list.
pub async fn price_input(
    pool: &PgPool,
    org_id: Uuid,
    list_id: Uuid,
    product_id: Uuid,
) -> Result<Option<PriceInput>, sqlx::Error> {
    Ok(select_inputs(pool, org_id, list_id, None, None, Some(product_id), 1).await?.pop())
}

async fn select_inputs(
    pool: &PgPool,
    org_id: Uuid,
    list_id: Uuid,
    active: Option<bool>,
    after: Option<Uuid>,
    only: Option<Uuid>,
    limit: i64,
) -> Result<Vec<PriceInput>, sqlx::Error> {
    sqlx::query_as(
        "select p.id as product_id, p.is_active, p.price as base_price, p.tax_rate_id, e.unit_price as explicit_price
         from products_view p
         left join price_list_prices e on e.org_id = p.org_id and e.price_list_id = $2 and e.product_id = p.id
         where p.org_id = $1 and ($3::bool is null or p.is_active = $3) and ($4::uuid is null or p.id > $4)
           and ($5::uuid is null or p.id = $5)
         order by p.id limit $6",
    )
    .bind(org_id)
    .bind(list_id)
    .bind(active)
    .bind(after)
    .bind(only)
    .bind(limit)
    .fetch_all(pool)
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(is_automatic: bool, adjustment: Option<i64>, tax_inclusive: bool) -> PriceListRow {
        PriceListRow {
            id: Uuid::nil(),
            name: "x".into(),
            description: None,
            is_automatic,
            automatic_pricing_mode: is_automatic.then(|| "base_price_adjustment".into()),
            adjustment_hundredths: adjustment.map(|h| Adjustment::from_hundredths(h).expect("in range")),
            tax_inclusive,
            is_active: true,
            revision: 1,
            products_revision: 0,
            explicit_prices: 0,
            created_at: OffsetDateTime::UNIX_EPOCH,
            updated_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn input(base_price: i64, explicit_price: Option<i64>) -> PriceInput {
        let (base_price, explicit_price) = (Cents::of(base_price), explicit_price.map(Cents::of));
        PriceInput { product_id: Uuid::nil(), is_active: true, base_price, tax_rate_id: VatRate::GENERAL, explicit_price }
    }

    #[test]
    fn automatic_lists_move_the_base_price_and_add_vat_when_inclusive() {
        let net = price_of(&list(true, Some(1000), false), &input(10_000, None)).expect("priced");
        assert_eq!((net.unit_price.get(), net.net_price.get(), net.provenance), (11_000, 11_000, Provenance::Automatic));
        let gross = price_of(&list(true, Some(1000), true), &input(10_000, None)).expect("priced");
        assert_eq!((gross.unit_price.get(), gross.net_price.get()), (13_310, 11_000));
        let discounted = price_of(&list(true, Some(-250), false), &input(999, None)).expect("priced");
        assert_eq!(discounted.unit_price.get(), 974); // 974.025
    }

    #[test]
    fn explicit_prices_win_and_missing_inputs_are_unavailable() {
        let manual = price_of(&list(false, None, true), &input(10_000, Some(12_100))).expect("priced");
        assert_eq!((manual.unit_price.get(), manual.net_price.get(), manual.provenance), (12_100, 10_000, Provenance::Manual));
        assert_eq!(price_of(&list(false, None, false), &input(10_000, None)), None, "manual list without a price");
        assert_eq!(price_of(&list(true, Some(1000), false), &input(0, None)), None, "no base price");
    }
}
