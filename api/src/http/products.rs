//! `/api/v1/products`: products as groups of sellable variants (Style B objects, camelCase). Every id
//! these routes take or return is a variant id; the detail names its group.

use crate::http::schema::IdText;
use crate::http::auth::Auth;
use crate::http::body::RawJson;
use crate::http::error::ApiError;
use crate::http::kinds::PRODUCTS;
use crate::http::list::ListEnvelope;
use crate::http::operations::Idempotency;
use crate::http::operations::InputRule;
use crate::http::presence::{Nullable, Optional, Sparse};
use crate::http::price_lists::applied_price;
use crate::http::resource::{Call, PageParams, Write, decode_state};
use crate::http::routes_group::routes;
use crate::http::schema::rules;
use crate::http::schema::{
    AdjustmentTarget, Blank, Cents, Currency, Int, MetafieldKey, MetafieldValue, Percent, ProductType, QuantityIn,
    Text, VatCode,
};
use crate::http::shared_filters::{binding, id_filter, search};
use crate::http::shared_operations::operations;
use crate::http::shared_pages::tagged;
use crate::http::shared_responses::responses;
use crate::http::tags::{TagData, tags_of_one};
use crate::http::{ApiTags, RequestId, Style, ar_time};
use crate::state::AppState;
use bytes::Bytes;
use commands::products::{
    Product, ProductCommand, parse_bulk_adjustment, parse_create, parse_metafield_patch, parse_replace,
};
use commands::protocol::{Command, CommandKind};
use commands::tags::Taggable;
use events::catalogue::{Metafield, OptionValue};
use events::domain::{Scope, WholeUnits};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::{ApiResponse, Object};
use projections::ProjectionId;
use projections::products::{self as read, ProductRow};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use time::OffsetDateTime;
use uuid::Uuid;

// The operations this module serves (see `operations.rs`).
operations! {
    ProductsApi, INPUT_RULES;
    CREATE_PRODUCT = write("createProduct", Scope::ProductsWrite, Idempotency::Required, CommandKind::Product);
    REPLACE_PRODUCT = write("replaceProduct", Scope::ProductsWrite, Idempotency::Optional, CommandKind::Product);
    GET_PRODUCT = read("getProduct", Some(Scope::ProductsRead));
    LIST_PRODUCTS = read("listProducts", Some(Scope::ProductsRead));
    PATCH_PRODUCT_METAFIELDS =
        write("patchProductMetafields", Scope::ProductsWrite, Idempotency::Optional, CommandKind::Product);
    CREATE_BULK_ADJUSTMENT =
        write("createBulkAdjustment", Scope::ProductsWrite, Idempotency::Required, CommandKind::BulkAdjustProducts);
}

/// Product creation: a single product (`sku`, `cost`, `price` at the top level) or a matrix (`options`
/// and `variants`). Amounts are integer cents.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ProductInput {
    /// 1 to 150 characters.
    pub name: Text<150>,
    pub description: Optional<Blank<5000>>,
    pub category_id: Optional<Uuid>,
    /// Single product only (required there): 1 to 60 characters, unique in the organization.
    pub sku: Option<Text<60>>,
    /// Single product only.
    pub barcode: Optional<Blank<60>>,
    pub oem_code: Optional<Blank<60>>,
    /// `PES` (the default).
    pub currency: Optional<Currency>,
    /// Cents. Single product only; required with `markupPercentage`.
    pub cost: Optional<Cents>,
    /// Cents. Single product only: required without `markupPercentage`, refused with it.
    pub price: Option<Cents>,
    /// A VAT rate code (see `/api/v1/tax-rates`); 5 (21%) by default.
    pub tax_rate_id: Optional<VatCode>,
    pub stock_minimum: Optional<Int<0, 1_000_000_000>>,
    pub default_supplier_id: Optional<Uuid>,
    /// `product` (the default), `service` or `combo` (a combo cannot become another type, nor the
    /// reverse).
    pub product_type: Optional<ProductType>,
    /// A combo's components (1 to 50; a combo only): moving a combo moves these, times its quantity.
    #[oai(validator(min_items = 1, max_items = 50))]
    pub components: Optional<Vec<ComponentInput>>,
    /// Automatic margin pricing, 0 to 1000 (number or decimal text, two decimals at most): each
    /// variant's price becomes its cost plus this percentage and follows every cost change. With it,
    /// `cost` is required and `price` is refused.
    pub markup_percentage: Optional<Percent<0, 1000>>,
    /// Custom fields: each key at most once.
    pub metafields: Optional<Vec<MetafieldInput>>,
    /// Opening stock per warehouse. Single product only. A creation records at most 1000 opening levels,
    /// its variants' together (each is a row of the inventory ledger). Refused on a combo or a service,
    /// which hold no stock of their own (a service's variants take none either).
    pub warehouse_stocks: Optional<Vec<WarehouseStockInput>>,
    /// 1 to 3 distinct option names, 1 to 40 characters each (matrix only).
    #[oai(validator(min_items = 1, max_items = 3))]
    pub options: Option<Vec<Text<40>>>,
    /// 1 to 250 variants (matrix only).
    #[oai(validator(min_items = 1, max_items = 250))]
    pub variants: Option<Vec<VariantInput>>,
}

/// One variant of a matrix.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct VariantInput {
    /// Exactly one value per option, 1 to 60 characters: `{"Talle": "M"}` (the list form
    /// `[{"name": "Talle", "value": "M"}]` is accepted too).
    pub option_values: std::collections::HashMap<String, Text<60>>,
    /// 1 to 60 characters, unique in the organization.
    pub sku: Text<60>,
    pub barcode: Optional<Blank<60>>,
    /// Cents; required with `markupPercentage`.
    pub cost: Optional<Cents>,
    /// Cents: required without `markupPercentage`, refused with it.
    pub price: Option<Cents>,
    pub warehouse_stocks: Optional<Vec<WarehouseStockInput>>,
}

#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct WarehouseStockInput {
    /// A warehouse of the organization, once per list.
    pub warehouse_id: Uuid,
    /// Units on hand (three decimals at most), 0 by default.
    pub quantity: Optional<QuantityIn<false>>,
}

/// One component of a combo.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ComponentInput {
    /// A product variant of the organization that holds stock (not a service nor another combo), once
    /// per combo.
    pub product_id: Uuid,
    /// How many units one combo holds (three decimals at most).
    pub quantity: QuantityIn<true>,
}

/// Replace body: the single-product fields for this variant (shared fields apply to its whole group).
/// `metafields`, `options`, `variants` and `warehouseStocks` are refused.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ProductReplaceInput {
    /// 1 to 150 characters.
    pub name: Text<150>,
    pub description: Optional<Blank<5000>>,
    pub category_id: Optional<Uuid>,
    /// 1 to 60 characters, unique in the organization.
    pub sku: Text<60>,
    pub barcode: Optional<Blank<60>>,
    pub oem_code: Optional<Blank<60>>,
    /// `PES` (the default).
    pub currency: Optional<Currency>,
    /// Cents; required with `markupPercentage`.
    pub cost: Optional<Cents>,
    /// Cents: required without `markupPercentage`, refused with it.
    pub price: Option<Cents>,
    /// A VAT rate code (see `/api/v1/tax-rates`); 5 (21%) by default.
    pub tax_rate_id: Optional<VatCode>,
    pub stock_minimum: Optional<Int<0, 1_000_000_000>>,
    pub default_supplier_id: Optional<Uuid>,
    /// `product` (the default), `service` or `combo` (a combo cannot become another type, nor the
    /// reverse).
    pub product_type: Optional<ProductType>,
    /// A combo's components (1 to 50; a combo only): moving a combo moves these, times its quantity.
    #[oai(validator(min_items = 1, max_items = 50))]
    pub components: Optional<Vec<ComponentInput>>,
    /// Automatic margin pricing, 0 to 1000 (number or decimal text, two decimals at most): each
    /// variant's price becomes its cost plus this percentage and follows every cost change. With it,
    /// `cost` is required and `price` is refused.
    pub markup_percentage: Optional<Percent<0, 1000>>,
    /// Default true.
    pub is_active: Optional<bool>,
}

/// One custom field of a product body.
#[derive(Debug, Object)]
pub struct MetafieldInput {
    pub key: MetafieldKey,
    pub value: MetafieldValue,
}

#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct MetafieldData {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct OptionValueData {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct NamedRef {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct TaxRateRef {
    /// VAT rate code.
    pub id: i32,
    /// Percentage.
    pub value: f64,
}

/// A product variant.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct ProductData {
    /// The variant id.
    pub id: Uuid,
    /// The group that supplies the shared fields.
    pub variant_group_id: Uuid,
    pub name: String,
    pub description: Nullable<String>,
    pub category: Nullable<NamedRef>,
    pub sku: String,
    pub barcode: Nullable<String>,
    pub oem_code: Nullable<String>,
    pub currency: String,
    /// Cents.
    pub cost: i64,
    /// Cents.
    pub price: i64,
    pub tax_rate: TaxRateRef,
    pub stock_minimum: Nullable<i64>,
    pub default_supplier: Nullable<NamedRef>,
    pub product_type: String,
    /// A combo's components, in the order it lists them (`productType` `combo`; moving the combo moves
    /// these, times its quantity); an empty list for any other product. Detail only (lists never
    /// include them).
    pub components: Option<Vec<ComponentData>>,
    pub is_active: bool,
    /// Automatic margin pricing: when set (decimal text, for example `"40"`), every variant's price is
    /// its cost plus this percentage, recalculated whenever the cost changes.
    pub markup_percentage: Nullable<String>,
    pub organization_slug: String,
    /// The group's option names (empty for a single product).
    pub options: Vec<String>,
    /// This variant's value of each option.
    pub option_values: Vec<OptionValueData>,
    /// Custom fields (detail only; lists never include them).
    pub metafields: Option<Vec<MetafieldData>>,
    /// Tags, ordered by name (archived ones too while assigned).
    pub tags: Vec<TagData>,
    /// Cents: the price that applies — under `priceListId` when sent, else the product's own price;
    /// null when the list cannot price the variant.
    pub effective_price: Nullable<i64>,
    /// Without `priceListId`: `base` (the price as set) or `automatic` (margin pricing from the cost).
    /// Under a list: `automatic` (computed by the list), `manual` (the list's explicit price) or
    /// `unavailable` (a pricing input is missing).
    pub price_source: String,
    /// The list `priceListId` named; null without one.
    pub applied_price_list: Nullable<AppliedPriceList>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// One component of a combo.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct ComponentData {
    /// The component's variant id.
    pub product_id: Uuid,
    /// The component's name.
    pub name: String,
    /// How many units one combo holds, as decimal text (for example `"0.5"`).
    pub quantity: String,
}

/// The price list a product read was priced under.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct AppliedPriceList {
    pub id: Uuid,
    pub name: String,
    pub is_automatic: bool,
    /// `base_price_adjustment` on automatic lists.
    pub automatic_pricing_mode: Nullable<String>,
    /// Decimal text, for example `"10.5"`.
    pub adjustment_percentage: Nullable<String>,
    pub tax_inclusive: bool,
}

/// A created variant.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct CreatedVariant {
    pub id: Uuid,
    pub sku: String,
    pub option_values: Vec<OptionValueData>,
}

/// Creation result: the first variant's detail plus every created variant.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct ProductCreatedData {
    #[serde(flatten)]
    #[oai(flatten)]
    pub product: ProductData,
    pub variants: Vec<CreatedVariant>,
}

#[derive(Debug, Serialize, Object)]
pub struct ProductEnvelope {
    pub success: bool,
    pub data: ProductData,
}

#[derive(Debug, Serialize, Object)]
pub struct ProductCreatedEnvelope {
    pub success: bool,
    pub data: ProductCreatedData,
}

responses! {
    CreateResponse: Created(RawJson<ProductCreatedEnvelope>) =
        201, "Created, with every variant's id and SKU; answers once readable.";
    ReadResponse: Ok(RawJson<ProductEnvelope>) = 200, "The variant.";
}

#[derive(ApiResponse)]
enum ListResponse {
    /// A page of variants, oldest first (never with metafields); with `fields`, each carries `id` and
    /// the fields named.
    #[oai(status = 200)]
    Ok(RawJson<ListEnvelope<Sparse<ProductData>>>),
}

fn option_values(values: &[OptionValue]) -> Vec<OptionValueData> {
    values.iter().map(|o| OptionValueData { name: o.name.clone(), value: o.value.clone() }).collect()
}

fn metafields(values: &[Metafield]) -> Vec<MetafieldData> {
    values.iter().map(|m| MetafieldData { key: m.key.clone(), value: m.value.clone() }).collect()
}

impl ProductData {
    pub(crate) fn from_row(row: ProductRow, with_metafields: bool) -> Self {
        Self {
            id: row.id,
            variant_group_id: row.group_id,
            name: row.name,
            description: row.description.into(),
            category: row.category_id.map(|id| NamedRef { id, name: row.category_name.unwrap_or_default() }).into(),
            sku: row.sku,
            barcode: row.barcode.into(),
            oem_code: row.oem_code.into(),
            currency: row.currency,
            cost: row.cost.get(),
            price: row.price.get(),
            tax_rate: TaxRateRef { id: row.tax_rate_id.code(), value: row.tax_rate_id.percent() },
            stock_minimum: row.stock_minimum.map(WholeUnits::get).into(),
            default_supplier: row
                .default_supplier_id
                .map(|id| NamedRef { id, name: row.default_supplier_name.unwrap_or_default() })
                .into(),
            product_type: row.product_type.as_str().to_owned(),
            components: None,
            is_active: row.is_active,
            markup_percentage: row.markup_hundredths.map(|markup| markup.to_string()).into(),
            organization_slug: row.organization_slug,
            options: row.options.0,
            option_values: option_values(&row.option_values.0),
            metafields: with_metafields.then(|| metafields(&row.metafields.0)),
            tags: Vec::new(),
            effective_price: Some(row.price.get()).into(),
            price_source: if row.markup_hundredths.is_some() { "automatic" } else { "base" }.into(),
            applied_price_list: None.into(),
            created_at: ar_time(row.created_at),
            updated_at: ar_time(row.updated_at),
        }
    }
}

/// The fields a list may be narrowed to with `fields`.
const LIST_FIELDS: &[&str] = &[
    "id",
    "variantGroupId",
    "name",
    "description",
    "category",
    "sku",
    "barcode",
    "oemCode",
    "currency",
    "cost",
    "price",
    "taxRate",
    "stockMinimum",
    "defaultSupplier",
    "productType",
    "isActive",
    "markupPercentage",
    "organizationSlug",
    "options",
    "optionValues",
    "tags",
    "effectivePrice",
    "priceSource",
    "appliedPriceList",
    "createdAt",
    "updatedAt",
];

fn parse_fields(fields: Option<String>) -> Result<Option<Vec<String>>, ApiError> {
    let Some(fields) = fields else { return Ok(None) };
    let names: Vec<String> = fields.split(',').map(|f| f.trim().to_owned()).filter(|f| !f.is_empty()).collect();
    if let Some(unknown) = names.iter().find(|n| !LIST_FIELDS.contains(&n.as_str())) {
        return Err(ApiError::invalid_request(
            "INVALID_FIELDS",
            format!("unknown field {unknown:?} in fields (known: {})", LIST_FIELDS.join(", ")),
        )
        .with_detail(Some("fields"), "unknown_field", format!("{unknown:?} is not a field of a product")));
    }
    Ok(Some(names))
}

/// Runs a command changing an existing variant and answers with the variant's detail once readable.
async fn update_variant(call: &Call<'_>, write: Write<'_>, command: ProductCommand) -> Result<ReadResponse, ApiError> {
    let variant_id = command.target_id();
    let body = call
        .write_then_read(&PRODUCTS, write, Command::Product(command), async |_| {
            let data = readable(call.state, call.org_id(), variant_id).await?;
            Style::b(&ProductEnvelope { success: true, data })
        })
        .await?;
    Ok(ReadResponse::Ok(RawJson::new(body)))
}

/// Reads the created or replaced variant back from the read model (the write has been applied).
async fn readable(state: &AppState, org_id: Uuid, id: Uuid) -> Result<ProductData, ApiError> {
    let row = read::get(&state.pool, org_id, id).await?.ok_or_else(|| ApiError::not_found(PRODUCTS.label))?;
    let mut data = ProductData::from_row(row, true);
    data.components = Some(components(state, org_id, &data).await?);
    data.tags = tags_of_one(state, org_id, Taggable::Product, id).await?;
    Ok(data)
}

/// The detail's `components`: a combo's, read with its group; none for any other product.
async fn components(state: &AppState, org_id: Uuid, product: &ProductData) -> Result<Vec<ComponentData>, ApiError> {
    if product.product_type != events::catalogue::ProductType::Combo.as_str() {
        return Ok(Vec::new());
    }
    Ok(read::components(&state.pool, org_id, product.variant_group_id)
        .await?
        .into_iter()
        .map(|c| ComponentData { product_id: c.product_id, name: c.name, quantity: c.quantity.to_string() })
        .collect())
}

/// Custom fields patch.
#[derive(Debug, Object)]
pub struct MetafieldPatchInput {
    /// Key (1 to 64 of `a-z 0-9 _ . -`) to a value (assigns; 1 to 1000 characters) or null (deletes).
    #[oai(validator(min_properties = 1))]
    pub entries: std::collections::HashMap<String, Nullable<MetafieldValue>>,
}

/// Bulk adjustment body.
#[derive(Debug, Object)]
pub struct BulkAdjustmentInput {
    pub target: AdjustmentTarget,
    /// Only variants whose default supplier is this one.
    pub default_supplier_id: Optional<Uuid>,
    /// Only variants of this category.
    pub category_id: Optional<Uuid>,
    /// Only variants with this tag.
    pub tag_id: Optional<Uuid>,
    /// Only these variants (1 to 10000).
    #[oai(validator(min_items = 1, max_items = 10000))]
    pub product_ids: Optional<Vec<Uuid>>,
    /// Percent change (`10` adds 10%, `-5` takes 5% off), -100 to 1000. Results are rounded to whole
    /// cents, half away from zero, and never go below zero. Send either this or `amount`.
    #[oai(validator(minimum(value = "-100"), maximum(value = "1000")))]
    pub percentage: Optional<f64>,
    /// Fixed change in cents (may be negative). Send either this or `percentage`.
    pub amount: Optional<Int<-1_000_000_000_000, 1_000_000_000_000>>,
}

/// What a bulk adjustment did.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, Object)]
pub struct BulkAdjustmentData {
    /// Always `bulk_adjustment`.
    pub object: String,
    pub id: Uuid,
    pub target: String,
    /// `{"kind": "percentage" | "amount", "value": ...}`.
    pub change: Value,
    /// Variants the filter selected.
    pub matched_variants: i64,
    /// Variants whose amount changed.
    pub affected_variants: i64,
    /// Products (variant groups) that changed.
    pub affected_products: i64,
    pub unchanged_variants: i64,
    /// Variant prices recalculated from their new cost under automatic margin pricing
    /// (`markupPercentage`). Automatic price lists need no recalculation: they price from the stored
    /// base prices on every read.
    pub automatic_prices_recalculated: i64,
    /// Matching variants a price adjustment left alone because their price follows their cost.
    #[serde(default)]
    pub skipped_automatic_variants: i64,
    /// One entry per connected sales channel (none are connected yet).
    pub synchronization_effects: Vec<Value>,
}

#[derive(Debug, Serialize, Object)]
pub struct BulkAdjustmentEnvelope {
    pub request_id: String,
    pub data: BulkAdjustmentData,
}

responses! {
    BulkAdjusted: Ok(RawJson<BulkAdjustmentEnvelope>) = 200, "Applied to every matching variant at once (or to none).";
}

/// The price rule of a single product or of every variant: `price` without `markupPercentage`;
/// `cost` and no `price` with it.
fn priced(markup: bool) -> serde_json::Value {
    if markup {
        serde_json::json!({ "required": ["cost"], "properties": { "cost": { "type": "integer" } }, "not": { "required": ["price"] } })
    } else {
        serde_json::json!({ "required": ["price"], "properties": { "price": { "type": "integer" } } })
    }
}

fn markup(set: bool) -> serde_json::Value {
    if set {
        serde_json::json!({ "required": ["markupPercentage"], "properties": { "markupPercentage": rules::not_null() } })
    } else {
        serde_json::json!({ "properties": { "markupPercentage": rules::null_only() } })
    }
}

/// A single product (`sku` and its prices at the top level) or a matrix (`options` and `variants`,
/// the single-product keys refused), each priced by hand or by margin.
fn product_shapes() -> serde_json::Value {
    let single = |with_markup: bool| {
        serde_json::json!({ "allOf": [
            { "required": ["sku"] },
            rules::refused(&["options", "variants"]),
            markup(with_markup),
            priced(with_markup),
        ] })
    };
    let matrix = |with_markup: bool| {
        serde_json::json!({ "allOf": [
            { "required": ["options", "variants"], "properties": { "variants": { "items": priced(with_markup) } } },
            rules::refused(&["sku", "barcode", "cost", "price", "warehouseStocks"]),
            markup(with_markup),
        ] })
    };
    serde_json::json!({ "allOf": [
        { "anyOf": [single(false), single(true), matrix(false), matrix(true)] },
        combo_shapes(),
        service_shapes(),
    ] })
}

/// A service (`productType` `service`) holds no stock: no opening stock, on itself or on a variant.
fn service_shapes() -> serde_json::Value {
    let service = serde_json::json!({ "enum": ["service"] });
    serde_json::json!({ "anyOf": [
        { "not": { "required": ["productType"], "properties": { "productType": service } } },
        { "allOf": [
            rules::refused(&["warehouseStocks"]),
            { "properties": { "variants": { "items": rules::refused(&["warehouseStocks"]) } } },
        ] },
    ] })
}

/// A combo (`productType` `combo`) lists its `components` and is a single product without opening
/// stock; any other product has no components.
fn combo_shapes() -> serde_json::Value {
    let combo = serde_json::json!({ "enum": ["combo"] });
    serde_json::json!({ "anyOf": [
        { "allOf": [
            { "required": ["productType", "components"], "properties": { "productType": combo, "components": { "type": "array" } } },
            rules::refused(&["options", "variants", "warehouseStocks"]),
        ] },
        { "allOf": [
            rules::refused(&["components"]),
            { "not": { "required": ["productType"], "properties": { "productType": combo } } },
        ] },
    ] })
}

/// Priced by hand or by margin; the matrix keys refused.
fn replace_shapes() -> serde_json::Value {
    serde_json::json!({ "allOf": [
        rules::refused(&["metafields", "options", "variants", "warehouseStocks"]),
        combo_shapes(),
        { "anyOf": [
            { "allOf": [markup(false), priced(false)] },
            { "allOf": [markup(true), priced(true)] },
        ] },
    ] })
}

/// At least one filter, and exactly one of `percentage` and `amount`.
fn bulk_adjustment_shapes() -> serde_json::Value {
    let filters = ["default_supplier_id", "category_id", "tag_id", "product_ids"];
    serde_json::json!({ "allOf": [
        { "anyOf": filters.iter().map(|f| serde_json::json!({ "required": [f], "properties": { *f: rules::not_null() } })).collect::<Vec<_>>() },
        { "anyOf": [
            { "required": ["percentage"], "properties": { "percentage": rules::not_null(), "amount": rules::null_only() } },
            { "required": ["amount"], "properties": { "amount": rules::not_null(), "percentage": rules::null_only() } },
        ] },
    ] })
}

/// `fields`: a comma-separated list of field names (spaces around them and empty items ignored).
fn fields_schema() -> serde_json::Value {
    let ws = r"[\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*";
    let name = format!("{ws}(?:{})?{ws}", LIST_FIELDS.join("|"));
    serde_json::json!({ "type": "string", "pattern": format!("^{name}(?:,{name})*$") })
}

pub struct ProductsApi;

const INPUT_RULES: &[InputRule] = &[
    InputRule::Body { schema: "ProductInput", rule: product_shapes },
    InputRule::Body { schema: "ProductReplaceInput", rule: replace_shapes },
    InputRule::Body { schema: "BulkAdjustmentInput", rule: bulk_adjustment_shapes },
    InputRule::Query { operation: "listProducts", parameter: "fields", schema: fields_schema },
    InputRule::Query {
        operation: "listProducts",
        parameter: "default_supplier_id",
        schema: || serde_json::json!({ "type": "string", "format": "uuid" }),
    },
    InputRule::Query {
        operation: "getProduct",
        parameter: "priceListId",
        schema: || serde_json::json!({ "type": "string", "format": "uuid" }),
    },
];

routes! {
    #[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Products")]
    ProductsApi {
        /// Get a product variant
        ///
        /// Scope `products:read`. Includes `metafields`. `priceListId` (an active price list of the
        /// organization, else 404) prices the variant under that list: `effectivePrice`, `priceSource` and
        /// `appliedPriceList` describe it.
        #[oai(path = "/products/:product_id", method = "get", operation_id = "getProduct")]
        async fn get(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            product_id: Path<IdText>,
            #[oai(name = "priceListId")] price_list_id: Query<Option<String>>,
        ) -> Result<ReadResponse, ApiError> {
            let call = Call::new(GET_PRODUCT, &state, &auth, request_id)?;
            if let Some(list) = price_list_id.0 {
                // Priced under a list: not cached, since the price follows the list as well as the product.
                let id = PRODUCTS.id(&product_id.0)?;
                let (list, listed) = applied_price(&state, call.org_id(), &list, id).await?;
                let mut data = readable(&state, call.org_id(), id).await?;
                data.effective_price = listed.as_ref().map(|l| l.unit_price.get()).into();
                data.price_source = match listed.map(|l| l.provenance) {
                    Some(projections::price_lists::Provenance::Automatic) => "automatic",
                    Some(projections::price_lists::Provenance::Manual) => "manual",
                    None => "unavailable",
                }
                .into();
                data.applied_price_list = Some(AppliedPriceList {
                    id: list.id,
                    name: list.name,
                    is_automatic: list.is_automatic,
                    automatic_pricing_mode: list.automatic_pricing_mode.into(),
                    adjustment_percentage: list.adjustment_hundredths.map(|adjustment| adjustment.to_string()).into(),
                    tax_inclusive: list.tax_inclusive,
                })
                .into();
                return Ok(ReadResponse::Ok(RawJson::new(Style::b(&ProductEnvelope { success: true, data })?)));
            }
            let bytes = call
                .get(&PRODUCTS, &product_id.0, async |id| {
                    let Some(row) = read::get(&state.pool, call.org_id(), id).await? else { return Ok(None) };
                    let mut data = ProductData::from_row(row, true);
                    data.components = Some(components(&state, call.org_id(), &data).await?);
                    data.tags = tags_of_one(&state, call.org_id(), Taggable::Product, id).await?;
                    Ok(Some(Style::b(&ProductEnvelope { success: true, data })?))
                })
                .await?;
            Ok(ReadResponse::Ok(RawJson::new(bytes)))
        }
    }
    writes: {
        /// Create a product
        ///
        /// Scope `products:write`; `Idempotency-Key` required. A single product, or a matrix of up to 250
        /// variants over 1 to 3 options. SKUs are unique per organization and within the request; option
        /// combinations are unique. A rejected request creates nothing.
        create("/products", "createProduct", "post")
            ("Required: a retry with the same key and body returns the same product.")
            -> CreateResponse::Created = CREATE_PRODUCT, |call, write, body: ProductInput| {
                let (group, opening_stock) = parse_create(&body.value).map_err(ApiError::validation)?;
                let stocked = !opening_stock.is_empty();
                let command = Command::Product(ProductCommand::Create { id: Uuid::now_v7(), group, opening_stock });
                call
                    .write_then_read(&PRODUCTS, write, command, async |accepted| {
                        // Opening stock is read through the inventory: readable there too once this answers.
                        call.await_reads(&accepted, Some(ProjectionId::Inventory).filter(|_| stocked)).await?;
                        let product: Product = decode_state(accepted.state, "product")?;
                        let first = product.group.variants.first().map(|v| v.id).ok_or_else(ApiError::internal)?;
                        let detail = readable(call.state, call.org_id(), first).await?;
                        let variants = product
                            .group
                            .variants
                            .iter()
                            .map(|v| CreatedVariant {
                                id: v.id,
                                sku: v.sku.clone(),
                                option_values: option_values(&v.option_values),
                            })
                            .collect();
                        let data = ProductCreatedData { product: detail, variants };
                        Style::b(&ProductCreatedEnvelope { success: true, data })
                    })
                    .await?
            }

        /// Set custom fields
        ///
        /// Scope `products:write`. `entries` maps keys to a string (assigns) or null (deletes); an empty
        /// string is refused. Custom fields belong to the variant's group. A key with a definition is
        /// validated against it. No webhook event follows custom field changes.
        patch_metafields("/products/:product_id/metafields", "patchProductMetafields", "patch")
            (product_id, "Optional: a retry with the same key and body returns the first outcome.")
            -> ReadResponse = PATCH_PRODUCT_METAFIELDS, |call, write, body: MetafieldPatchInput| {
                let variant_id = PRODUCTS.id(&product_id.0)?;
                let (assign, delete) = parse_metafield_patch(&body.value).map_err(ApiError::validation)?;
                let command = ProductCommand::SetMetafields { variant_id, assign, delete };
                update_variant(&call, write, command).await?
            }

        /// Adjust costs or prices in bulk
        ///
        /// Scope `products:write`; `Idempotency-Key` required. Changes `target` (`cost` or `price`) of every
        /// variant matching all the given filters, by a percentage or a fixed amount, in one atomic
        /// operation; each changed variant gets a `product.updated` event. Answers with a summary once the
        /// products read the new amounts.
        bulk_adjust("/products/bulk-adjustments", "createBulkAdjustment", "post")
            ("Required: a retry with the same key and body returns the first outcome and adjusts nothing more.")
            -> BulkAdjusted::Ok = CREATE_BULK_ADJUSTMENT, |call, write, body: BulkAdjustmentInput| {
                let adjustment = parse_bulk_adjustment(&body.value).map_err(ApiError::validation)?;
                let command = Command::BulkAdjustProducts(adjustment);
                call
                    .write(&PRODUCTS, write, command, |accepted| {
                        let data: BulkAdjustmentData = decode_state(accepted.state, "bulk adjustment summary")?;
                        Style::a(&BulkAdjustmentEnvelope { request_id: call.request_id.to_owned(), data })
                    })
                    .await?
            }

        /// Replace a product variant
        ///
        /// Scope `products:write`. Replaces this variant's fields and the fields its group shares (which
        /// change for every variant of the group). `metafields` are refused here.
        replace("/products/:product_id", "replaceProduct", "put")
            (product_id, "Optional: a retry with the same key and body returns the first outcome.")
            -> ReadResponse = REPLACE_PRODUCT, |call, write, body: ProductReplaceInput| {
                let variant_id = PRODUCTS.id(&product_id.0)?;
                let (shared, variant) = parse_replace(&body.value).map_err(ApiError::validation)?;
                let command = ProductCommand::Replace { variant_id, shared, variant };
                update_variant(&call, write, command).await?
            }
    }
    cursor_lists: {
        /// List product variants
        ///
        /// Scope `products:read`. A cursor list in creation order. `query` matches name, SKU or barcode;
        /// `default_supplier_id` keeps one supplier's products; `fields` (comma-separated) narrows each item.
        /// Lists never include metafields.
        list("/products", "listProducts") -> ListResponse = LIST_PRODUCTS, products {
            query: Query<Option<String>>,
            default_supplier_id: Query<Option<String>>,
        } then {
            /// Comma-separated field names; `tags` appears only when named.
            fields: Query<Option<String>>,
        };
    }
}

/// A page of product variants in creation order, each narrowed to `fields` when named.
async fn products(
    call: &Call<'_>,
    params: PageParams,
    query: Option<String>,
    default_supplier_id: Option<String>,
    fields: Option<String>,
) -> Result<Bytes, ApiError> {
    let fields = parse_fields(fields)?;
    let supplier = id_filter(default_supplier_id, "default_supplier_id")?;
    let search = search(query);
    let bound = binding("products", &[&search, &supplier]);
    call.cursor_list(
        params,
        PRODUCTS.list.bound(&bound),
        async |after, n| Ok(read::list(&call.state.pool, call.org_id(), search.as_deref(), supplier, after, n).await?),
        |row: &ProductRow| row.id,
        async |rows| {
            let rows = tagged(call.state, call.org_id(), Taggable::Product, rows, |r| r.id).await?;
            rows.into_iter()
                .map(|(row, tags)| {
                    let product = ProductData { tags, ..ProductData::from_row(row, false) };
                    let mut item = serde_json::to_value(product).map_err(|_| ApiError::internal())?;
                    if let (Some(names), Some(object)) = (&fields, item.as_object_mut()) {
                        object.retain(|key, _| key == "id" || names.iter().any(|n| n == key));
                    }
                    Ok(item)
                })
                .collect::<Result<Vec<Value>, ApiError>>()
        },
    )
    .await
}
