//! `/api/v1/price-lists` (Style A objects): lists, their settings, and the price of every variant
//! under each list. Prices are computed on read from the variants' base prices and the list's
//! explicit prices, so they are always current; `pricing_revision` names the state they come from.

use crate::http::schema::IdText;
use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::envelopes::PageParam;
use crate::http::error::{ApiError, ErrorType};
use crate::http::kinds::PRODUCTS;
use crate::http::list::parse_id;
use crate::http::operations::Idempotency;
use crate::http::operations::InputRule;
use crate::http::presence::{Nullable, Optional};
use crate::http::resource::{Call, Kind, PageParams, Write, decode_state};
use crate::http::routes_group::routes;
use crate::http::schema::rules;
use crate::http::schema::{AutomaticPricingMode, Blank, Cents, Limit, Percent, Text};
use crate::http::shared_operations::operations;
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, RequestId, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use commands::price_lists::{PriceList, parse_price_list};
use commands::protocol::{Command, CommandKind};
use commands::records::RecordCommand;
use events::domain::Scope;
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::{ApiResponse, Object};
use projections::ProjectionId;
use projections::price_lists::{self as read, PriceInput, PriceListRow, Provenance};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

// The operations this module serves (see `operations.rs`).
operations! {
    PriceListsApi, INPUT_RULES;
    LIST_PRICE_LISTS = read("listPriceLists", Some(Scope::PriceListsRead));
    CREATE_PRICE_LIST = write("createPriceList", Scope::PriceListsWrite, Idempotency::Optional, CommandKind::PriceList);
    GET_PRICE_LIST = read("getPriceList", Some(Scope::PriceListsRead));
    REPLACE_PRICE_LIST =
        write("replacePriceList", Scope::PriceListsWrite, Idempotency::Optional, CommandKind::PriceList);
    LIST_PRICE_LIST_PRICES = read("listPriceListPrices", Some(Scope::PriceListsRead));
    GET_PRICE_LIST_PRICE = read("getPriceListPrice", Some(Scope::PriceListsRead));
}

/// Price lists, as the shared handler sequence sees them (never cached: a list's answer depends on the
/// products' revision too).
const PRICE_LISTS: Kind =
    Kind::new("price list", ProjectionId::PriceLists, "/api/v1/price-lists", "/api/v1/price-lists");

/// A price list.
#[derive(Debug, Clone, Serialize, Object)]
pub struct PriceListData {
    /// Always `price_list`.
    pub object: String,
    pub id: Uuid,
    pub name: String,
    pub description: Nullable<String>,
    /// An automatic list prices every variant from its base price; a manual one only the variants it
    /// has an explicit price for.
    pub is_automatic: bool,
    /// `base_price_adjustment` on automatic lists, null on manual ones.
    pub automatic_pricing_mode: Nullable<String>,
    /// Decimal text, for example `"10.5"` (+10.5%) or `"-5"`; null on manual lists.
    pub adjustment_percentage: Nullable<String>,
    /// Whether the list's prices include VAT (the variant's rate).
    pub tax_inclusive: bool,
    pub is_active: bool,
    /// Variants with an explicit price in this list.
    pub explicit_prices: i64,
    /// Moves whenever any price of the list may have moved (the list or a product changed).
    pub pricing_revision: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl PriceListData {
    fn from_row(row: &PriceListRow) -> Self {
        Self {
            object: "price_list".into(),
            id: row.id,
            name: row.name.clone(),
            description: row.description.clone().into(),
            is_automatic: row.is_automatic,
            automatic_pricing_mode: row.automatic_pricing_mode.clone().into(),
            adjustment_percentage: row.adjustment_hundredths.map(|adjustment| adjustment.to_string()).into(),
            tax_inclusive: row.tax_inclusive,
            is_active: row.is_active,
            explicit_prices: row.explicit_prices,
            pricing_revision: row.pricing_revision(),
            created_at: ar_time(row.created_at),
            updated_at: ar_time(row.updated_at),
        }
    }
}

/// One explicit price in a price list body.
#[derive(Debug, Object)]
pub struct ListPriceInput {
    /// A product (variant) id of the organization, once per list.
    pub product_id: Uuid,
    /// Cents, in the list's basis (VAT included when `tax_inclusive`).
    pub unit_price: Cents,
}

/// Price list write body. A replace states the whole list: omitted fields take their defaults and
/// omitted `prices` clears the explicit prices.
#[derive(Debug, Object)]
pub struct PriceListInput {
    /// Unique in the organization (case-insensitively); 1 to 100 characters.
    pub name: Text<100>,
    pub description: Optional<Blank<500>>,
    /// Default false.
    pub is_automatic: Optional<bool>,
    /// Required on automatic lists, refused on manual ones.
    pub automatic_pricing_mode: Optional<AutomaticPricingMode>,
    /// Required on automatic lists, refused on manual ones: -99 to 1000, at most two decimals, as a
    /// number or decimal text.
    pub adjustment_percentage: Optional<Percent<-99, 1000>>,
    /// Default false.
    pub tax_inclusive: Optional<bool>,
    /// Default true. Inactive lists cannot be applied to a product read (`priceListId`).
    pub is_active: Optional<bool>,
    /// Explicit prices, one per variant, at most 5000. They take precedence over automatic pricing.
    #[oai(validator(max_items = 5000))]
    pub prices: Optional<Vec<ListPriceInput>>,
}

#[derive(Debug, Serialize, Object)]
pub struct PriceListEnvelope {
    pub request_id: String,
    pub data: PriceListData,
}

/// The VAT rate a price is stated with.
#[derive(Debug, Clone, Serialize, Object)]
pub struct PriceTaxRate {
    /// The VAT rate code (see `/api/v1/reference/tax-rates`).
    pub id: i32,
    /// Percentage.
    pub value: f64,
}

/// How a price was obtained, or which input is missing.
#[derive(Debug, Clone, Serialize, Object)]
pub struct PriceProvenance {
    /// `manual` (the list's explicit price), `automatic` (computed), or null when unavailable.
    pub source: Nullable<String>,
    /// The automatic pricing mode applied (`base_price_adjustment`), when computed.
    pub mode: Nullable<String>,
    /// Cents before VAT: the variant's base price the computation started from, when computed.
    pub base_price: Nullable<i64>,
    /// The adjustment applied to the base price, when computed.
    pub adjustment_percentage: Nullable<String>,
    /// Cents: the price before VAT.
    pub net_price: Nullable<i64>,
    /// When unavailable: `explicit_price` (a manual list has no price for the variant) or
    /// `base_price` (the variant has no base price to compute from).
    pub missing_input: Nullable<String>,
}

/// The price of one variant under one list. It is the effective base unit price: not a quote for a
/// customer, quantity, date, promotion or shipment.
#[derive(Debug, Clone, Serialize, Object)]
pub struct PriceEntryData {
    /// Always `price_list_price`.
    pub object: String,
    pub price_list_id: Uuid,
    /// The variant.
    pub product_id: Uuid,
    /// `available`, or `unavailable` when a pricing input is missing (no value is invented).
    pub state: String,
    /// Integer cents (ARS); null when unavailable.
    pub unit_price: Nullable<i64>,
    /// `tax_included` or `tax_excluded`.
    pub tax_basis: String,
    pub tax_rate: PriceTaxRate,
    pub provenance: PriceProvenance,
    /// Whether the variant is active.
    pub is_active: bool,
    pub pricing_revision: String,
}

impl PriceEntryData {
    fn new(list: &PriceListRow, input: &PriceInput) -> Self {
        let listed = read::price_of(list, input);
        let automatic = listed.as_ref().is_some_and(|l| l.provenance == Provenance::Automatic);
        let missing_input = match (&listed, list.is_automatic) {
            (Some(_), _) => None,
            (None, true) => Some("base_price".to_owned()),
            (None, false) => Some("explicit_price".to_owned()),
        };
        Self {
            object: "price_list_price".into(),
            price_list_id: list.id,
            product_id: input.product_id,
            state: if listed.is_some() { "available" } else { "unavailable" }.into(),
            unit_price: listed.as_ref().map(|l| l.unit_price.get()).into(),
            tax_basis: if list.tax_inclusive { "tax_included" } else { "tax_excluded" }.into(),
            tax_rate: PriceTaxRate {
                id: input.tax_rate_id.code(),
                value: input.tax_rate_id.percent(),
            },
            provenance: PriceProvenance {
                source: listed
                    .as_ref()
                    .map(|l| match l.provenance {
                        Provenance::Manual => "manual".to_owned(),
                        Provenance::Automatic => "automatic".to_owned(),
                    })
                    .into(),
                mode: automatic.then(|| list.automatic_pricing_mode.clone()).flatten().into(),
                base_price: automatic.then_some(input.base_price.get()).into(),
                adjustment_percentage: automatic
                    .then(|| list.adjustment_hundredths.map(|adjustment| adjustment.to_string()))
                    .flatten()
                    .into(),
                net_price: listed.as_ref().map(|l| l.net_price.get()).into(),
                missing_input: missing_input.into(),
            },
            is_active: input.is_active,
            pricing_revision: list.pricing_revision(),
        }
    }
}

#[derive(Debug, Serialize, Object)]
pub struct PriceEntryEnvelope {
    pub request_id: String,
    pub data: PriceEntryData,
}

/// A page of a list's prices: the Style A list envelope plus the revision the page was computed at.
#[derive(Debug, Serialize, Object)]
pub struct PricesEnvelope {
    pub request_id: String,
    /// Always `list`.
    pub object: String,
    pub url: String,
    pub data: Vec<PriceEntryData>,
    pub has_more: bool,
    pub next_cursor: Nullable<String>,
    /// Cursors are bound to it: when it moves, a cursor answers 409 `PRICE_LIST_PRICES_CHANGED`.
    pub pricing_revision: String,
}

// The schema of `listPriceLists` pages, which are served as the shared `ListEnvelope` (the same fields
// in the same order); a plain comment, since a doc comment would enter the published document.
#[derive(Debug, Serialize, Object)]
pub struct PriceListsEnvelope {
    pub request_id: String,
    /// Always `list`.
    pub object: String,
    pub url: String,
    pub data: Vec<PriceListData>,
    pub has_more: bool,
    pub next_cursor: Nullable<String>,
}

responses! {
    Created: Created(RawJson<PriceListEnvelope>) = 201, "Created; answers once readable.";
    Single: Ok(RawJson<PriceListEnvelope>) = 200, "The price list.";
}

#[derive(ApiResponse)]
enum Detail {
    /// The price list, with a weak `ETag` that moves with its `pricing_revision`.
    #[oai(status = 200)]
    Ok(RawJson<PriceListEnvelope>, #[oai(header = "ETag")] String),
    /// Unchanged since the `ETag` sent as `If-None-Match`; no body.
    #[oai(status = 304)]
    NotModified(#[oai(header = "ETag")] String),
}

responses! {
    Lists: Ok(RawJson<PriceListsEnvelope>) = 200, "A page of price lists, oldest first.";
}

#[derive(ApiResponse)]
enum Prices {
    /// A page of prices in variant order. The first page carries a weak `ETag`.
    #[oai(status = 200)]
    Ok(RawJson<PricesEnvelope>, #[oai(header = "ETag")] Option<String>),
    /// Unchanged since the `ETag` sent as `If-None-Match`; no body.
    #[oai(status = 304)]
    NotModified(#[oai(header = "ETag")] String),
}

#[derive(ApiResponse)]
enum Price {
    /// The variant's price under the list, with a weak `ETag`.
    #[oai(status = 200)]
    Ok(RawJson<PriceEntryEnvelope>, #[oai(header = "ETag")] String),
    /// Unchanged since the `ETag` sent as `If-None-Match`; no body.
    #[oai(status = 304)]
    NotModified(#[oai(header = "ETag")] String),
}

/// A weak validator over what a response was computed from.
fn weak_etag(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let digest = hash.finalize();
    format!("W/\"{}\"", digest[..12].iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Whether `If-None-Match` names `etag` (weak comparison; `*` matches anything).
fn unchanged(if_none_match: Option<&str>, etag: &str) -> bool {
    let Some(header) = if_none_match else { return false };
    let bare = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    header.split(',').any(|tag| tag.trim() == "*" || bare(tag) == bare(etag))
}

/// The organization's price list named in the path, or 404.
async fn price_list(call: &Call<'_>, id: &str) -> Result<PriceListRow, ApiError> {
    call.find(&PRICE_LISTS, id, async |id| Ok(read::get(&call.state.pool, call.org_id(), id).await?)).await
}

/// Creates or replaces a price list (`target`: the id in the path of a replace). The answer is read
/// back once the read model has the change: it carries the computed `explicit_prices` and
/// `pricing_revision`.
async fn write(call: &Call<'_>, write: Write<'_>, body: &serde_json::Value, target: Option<&str>) -> Result<Bytes, ApiError> {
    let id = match target {
        None => Uuid::now_v7(),
        Some(text) => call.id(&PRICE_LISTS, text)?,
    };
    let fields = parse_price_list(body).map_err(ApiError::validation)?;
    let command =
        if target.is_none() { RecordCommand::Create { id, fields } } else { RecordCommand::Replace { id, fields } };
    call.write_then_read(&PRICE_LISTS, write, Command::PriceList(command), async |accepted| {
        let stored: PriceList = decode_state(accepted.state, "price list")?;
        let row = read::get(&call.state.pool, call.org_id(), stored.id)
            .await?
            .ok_or_else(|| ApiError::not_found(PRICE_LISTS.label))?;
        Style::a(&PriceListEnvelope { request_id: call.request_id.to_owned(), data: PriceListData::from_row(&row) })
    })
    .await
}

/// The price of a variant under an active list of the organization, for the product detail.
pub async fn applied_price(
    state: &AppState,
    org_id: Uuid,
    list_id: &str,
    product_id: Uuid,
) -> Result<(PriceListRow, Option<read::ListedPrice>), ApiError> {
    // Called by the product detail, which has no call of this resource: an inactive list is not found.
    let id = PRICE_LISTS.id_in(list_id, "priceListId")?;
    let list = read::get(&state.pool, org_id, id)
        .await?
        .filter(|list| list.is_active)
        .ok_or_else(|| ApiError::not_found(PRICE_LISTS.label))?;
    let input = read::price_input(&state.pool, org_id, list.id, product_id)
        .await?
        .ok_or_else(|| ApiError::not_found(PRODUCTS.label))?;
    let listed = read::price_of(&list, &input);
    Ok((list, listed))
}

fn changed_prices() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        ErrorType::InvalidRequestError,
        "PRICE_LIST_PRICES_CHANGED",
        "the list's prices changed since this cursor was issued; restart without a cursor",
    )
    .with_detail(Some("cursor"), "stale_cursor", "the pricing revision moved")
}

/// Automatic lists name their mode and percentage; manual lists send neither.
fn automatic_rule() -> serde_json::Value {
    serde_json::json!({ "anyOf": [
        {
            "required": ["is_automatic", "automatic_pricing_mode", "adjustment_percentage"],
            "properties": {
                "is_automatic": { "enum": [true] },
                "automatic_pricing_mode": rules::not_null(),
                "adjustment_percentage": rules::not_null(),
            },
        },
        {
            "properties": {
                "is_automatic": { "nullable": true, "enum": [false, null] },
                "automatic_pricing_mode": rules::null_only(),
                "adjustment_percentage": rules::null_only(),
            },
        },
    ] })
}

pub struct PriceListsApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "PriceListInput", rule: automatic_rule },
    InputRule::Query {
        operation: "listPriceListPrices",
        parameter: "is_active",
        schema: || serde_json::json!({ "type": "string", "enum": ["true", "false"] }),
    },
];

/// A page of price lists, in creation order.
async fn list_price_lists(call: &Call<'_>, params: PageParams) -> Result<Bytes, ApiError> {
    call.cursor_list(
        params,
        PRICE_LISTS.list,
        async |after, n| Ok(read::list(&call.state.pool, call.org_id(), after, n).await?),
        |row: &PriceListRow| row.id,
        async |rows| Ok(rows.iter().map(PriceListData::from_row).collect()),
    )
    .await
}

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::PriceLists")]
    PriceListsApi {
        /// Get a price list
        ///
        /// Scope `price_lists:read`. Carries a weak `ETag`; sending it back as `If-None-Match` answers 304
        /// with no body while neither the list nor any price under it changed.
        #[oai(path = "/price-lists/:price_list_id", method = "get", operation_id = "getPriceList")]
        async fn get(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            price_list_id: Path<IdText>,
            #[oai(name = "If-None-Match")] if_none_match: Header<Option<String>>,
        ) -> Result<Detail, ApiError> {
            let call = Call::new(GET_PRICE_LIST, &state, &auth, request_id)?;
            let row = price_list(&call, &price_list_id.0).await?;
            let etag = weak_etag(&[&row.id.to_string(), &row.pricing_revision()]);
            if unchanged(if_none_match.0.as_deref(), &etag) {
                return Ok(Detail::NotModified(etag));
            }
            let body = PriceListEnvelope { request_id: call.request_id.to_owned(), data: PriceListData::from_row(&row) };
            Ok(Detail::Ok(RawJson::new(Style::a(&body)?), etag))
        }

        /// List a price list's prices
        ///
        /// Scope `price_lists:read`. Every variant of the organization with its price under the list, in
        /// variant order; `is_active` keeps active (`true`) or inactive (`false`) variants only (both when
        /// omitted). Cursors are bound to `pricing_revision`: once it moves, a cursor answers 409
        /// `PRICE_LIST_PRICES_CHANGED` and the client restarts without one. The first page carries a weak
        /// `ETag`; sending it back as `If-None-Match` answers 304 with no body while nothing changed.
        #[oai(path = "/price-lists/:price_list_id/prices", method = "get", operation_id = "listPriceListPrices")]
        #[allow(clippy::too_many_arguments, reason = "one parameter per documented query field")]
        async fn prices(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            price_list_id: Path<IdText>,
            /// `true` or `false`.
            is_active: Query<Option<String>>,
            /// 1 to 100, default 50.
            limit: Query<Option<Limit>>,
            /// The `next_cursor` of the previous page.
            cursor: Query<Option<String>>,
            page: PageParam,
            #[oai(name = "If-None-Match")] if_none_match: Header<Option<String>>,
        ) -> Result<Prices, ApiError> {
            let call = Call::new(LIST_PRICE_LIST_PRICES, &state, &auth, request_id)?;
            let active = match is_active.0.as_deref() {
                None => None,
                Some("true") => Some(true),
                Some("false") => Some(false),
                Some(_) => {
                    return Err(ApiError::invalid_request("INVALID_PARAMETERS", "the list parameters are not valid")
                        .with_detail(Some("is_active"), "invalid_value", "must be true or false"));
                }
            };
            let list = price_list(&call, &price_list_id.0).await?;
            let url = format!("{}/{}/prices", PRICE_LISTS.list.url, list.id);
            // Cursors are bound to the filter as well as the list.
            let binding = format!("{url}?is_active={active:?}");
            let paging = call.page(PageParams::new(limit, cursor, page), &binding)?;
            let revision = list.pricing_revision();
            // A position is `{revision}/{product id}`: a cursor of another revision would page prices that moved.
            let after = match paging.after() {
                None => None,
                Some(position) => {
                    let (issued_at, after) = position.split_once('/').unwrap_or_default();
                    if issued_at != revision {
                        return Err(changed_prices());
                    }
                    Some(parse_id(after, "cursor")?)
                }
            };
            // Only the first page has a validator: a later one is named by its cursor, bound to the revision.
            let etag =
                after.is_none().then(|| weak_etag(&[&url, &format!("{active:?}"), &paging.limit().to_string(), &revision]));
            if let Some(etag) = &etag
                && unchanged(if_none_match.0.as_deref(), etag)
            {
                return Ok(Prices::NotModified(etag.clone()));
            }
            let mut inputs =
                read::price_inputs(&state.pool, call.org_id(), list.id, active, after, paging.fetch_size()).await?;
            let next_cursor = paging.finish(&mut inputs, |i| format!("{revision}/{}", i.product_id));
            let has_more = next_cursor.is_some();
            let body = PricesEnvelope {
                request_id: call.request_id.to_owned(),
                object: "list".into(),
                url,
                data: inputs.iter().map(|input| PriceEntryData::new(&list, input)).collect(),
                has_more,
                next_cursor: next_cursor.into(),
                pricing_revision: revision,
            };
            Ok(Prices::Ok(RawJson::new(Style::a(&body)?), etag))
        }

        /// Get a variant's price under a price list
        ///
        /// Scope `price_lists:read`. Carries a weak `ETag`; sending it back as `If-None-Match` answers 304
        /// with no body while the price is unchanged.
        #[oai(path = "/price-lists/:price_list_id/prices/:product_id", method = "get", operation_id = "getPriceListPrice")]
        async fn price(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            price_list_id: Path<IdText>,
            product_id: Path<IdText>,
            #[oai(name = "If-None-Match")] if_none_match: Header<Option<String>>,
        ) -> Result<Price, ApiError> {
            let call = Call::new(GET_PRICE_LIST_PRICE, &state, &auth, request_id)?;
            let list = price_list(&call, &price_list_id.0).await?;
            let input = call
                .find(&PRODUCTS, &product_id.0, async |product_id| {
                    Ok(read::price_input(&state.pool, call.org_id(), list.id, product_id).await?)
                })
                .await?;
            let entry = PriceEntryData::new(&list, &input);
            let etag = weak_etag(&[&list.id.to_string(), &input.product_id.to_string(), &entry.pricing_revision]);
            if unchanged(if_none_match.0.as_deref(), &etag) {
                return Ok(Price::NotModified(etag));
            }
            let body = PriceEntryEnvelope { request_id: call.request_id.to_owned(), data: entry };
            Ok(Price::Ok(RawJson::new(Style::a(&body)?), etag))
        }
    }
    writes: {
        /// Create a price list
        ///
        /// Scope `price_lists:write`. Explicit prices must name variants of the organization.
        create("/price-lists", "createPriceList", "post")
            ("Optional: a retry with the same key and body returns the first outcome.")
            -> Created::Created = CREATE_PRICE_LIST, |call, claim, body: PriceListInput| {
                write(&call, claim, &body.value, None).await?
            }

        /// Replace a price list
        ///
        /// Scope `price_lists:write`. States the whole list, explicit prices included.
        replace("/price-lists/:price_list_id", "replacePriceList", "put")
            (price_list_id, "")
            -> Single::Ok = REPLACE_PRICE_LIST, |call, claim, body: PriceListInput| {
                write(&call, claim, &body.value, Some(price_list_id.0.as_str())).await?
            }
    }
    cursor_lists: {
        /// List price lists
        ///
        /// Scope `price_lists:read`. A cursor list in creation order.
        list("/price-lists", "listPriceLists") -> Lists = LIST_PRICE_LISTS, list_price_lists {};
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_and_accepts_lists_and_stars() {
        let etag = weak_etag(&["a", "b"]);
        assert!(etag.starts_with("W/\""));
        assert_ne!(etag, weak_etag(&["ab", ""]), "parts are delimited");
        assert!(unchanged(Some(&etag), &etag));
        assert!(unchanged(Some(etag.trim_start_matches("W/")), &etag));
        assert!(unchanged(Some(&format!("W/\"other\", {etag}")), &etag));
        assert!(unchanged(Some("*"), &etag));
        assert!(!unchanged(Some("W/\"other\""), &etag));
        assert!(!unchanged(None, &etag));
    }
}
