//! The machine-first v2 surface (`/api/v2`): camelCase page lists in the v2 envelopes, the discovery
//! reads a purchase needs (suppliers, products, warehouses), and purchases with a preview/commit split:
//! a preview assesses the purchase exactly as a commit would and writes nothing; a commit identical to
//! a clean preview records what was previewed.

use crate::http::schema::IdText;
use crate::http::auth::Auth;
use crate::http::body::{JsonBody, RawJson};
use crate::http::customers::ContactData;
use crate::http::envelopes::V2Pages;
use crate::http::error::ApiError;
use crate::http::operations::{Idempotency, InputRule};
use crate::http::presence::Optional;
use crate::http::products::ProductData;
use crate::http::purchases::{
    NormalizedPurchaseData, PURCHASES, ProjectedEffectsData, PurchaseData, PurchaseInput, PurchaseWarningData,
    normalized_and_effects, outcome_names, purchase_filter, render_purchases, today,
};
use crate::http::records::{WarehouseData, record_page};
use crate::http::resource::Call;
use crate::http::resource::{Write, decode_state};
use crate::http::routes_group::routes;
use crate::http::schema::Text;
use crate::http::shared_filters::{date_schema, uuid_schema};
use crate::http::shared_operations::operations;
use crate::http::shared_pages::{tagged, v2_envelope, v2_page};
use crate::http::shared_responses::responses;
use crate::http::{ApiTags, RequestId, Style};
use crate::http::{ServiceVersion, idempotency, shared_filters};
use crate::state::AppState;
use commands::protocol::{Command, CommandKind};
use commands::purchases::{Blocker, Mode, PurchaseCommand, PurchaseOutcome, parse_purchase};
use commands::tags::Taggable;
use events::catalogue::WarehouseEvent;
use events::domain::Scope;
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::param::{Header, Path};
use poem_openapi::{ApiResponse, Enum, Object};
use projections::ProjectionId;
use projections::records::{PageQuery, SortBy};
use serde::Serialize;
use std::sync::Arc;
use uuid::Uuid;

// The operations this module serves (see `operations.rs`).
operations! {
    V2Api, INPUT_RULES;
    V2_LIST_WAREHOUSES = read("v2ListWarehouses", Some(Scope::WarehousesRead));
    V2_LIST_SUPPLIERS = read("v2ListSuppliers", Some(Scope::SuppliersRead));
    V2_LIST_PRODUCTS = read("v2ListProducts", Some(Scope::ProductsRead));
    V2_LIST_PURCHASES = read("v2ListPurchases", Some(Scope::PurchasesRead));
    V2_GET_PURCHASE = read("v2GetPurchase", Some(Scope::PurchasesRead));
    V2_CREATE_PURCHASE =
        write("v2CreatePurchase", Scope::PurchasesWrite, Idempotency::Optional, CommandKind::Purchase).unprocessable(
            "A commit whose preview would show blocking issues: `PRECONDITION_FAILED`, `retryable` false, one detail \
             per blocker (`path`, `code`, `message`); nothing was written",
        );
}

const INPUT_RULES: &[InputRule] = &[
    InputRule::Query { operation: "v2ListPurchases", parameter: "supplierId", schema: uuid_schema },
    InputRule::Query { operation: "v2ListPurchases", parameter: "dateFrom", schema: date_schema },
    InputRule::Query { operation: "v2ListPurchases", parameter: "dateTo", schema: date_schema },
];

/// `preview` (assess, write nothing) or `commit` (record; `Idempotency-Key` required).
#[derive(Debug, Clone, Copy, Serialize, Enum)]
#[serde(rename_all = "lowercase")]
#[oai(rename_all = "lowercase")]
pub enum PurchaseMode {
    Preview,
    Commit,
}

/// The agent sending a request.
#[derive(Debug, Object)]
pub struct ClientAgent {
    pub name: Text<100>,
    pub version: Optional<Text<50>>,
}

/// Who is asking: the client's own request id and agent, echoed in the answer.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct ClientInfo {
    pub request_id: Optional<Text<100>>,
    pub agent: Optional<ClientAgent>,
}

/// What is wrong with a request's `client` (see [`ClientInfo`]); it is echoed, never interpreted.
fn client_errors(value: &serde_json::Value) -> Vec<commands::validate::FieldError> {
    let mut client = commands::validate::ObjectReader::new(value, "client");
    if client.value("requestId").is_some() {
        client.required_str("requestId", 1, 100);
    }
    if let Some(agent) = client.value("agent") {
        let mut reader = commands::validate::ObjectReader::new(agent, "client.agent");
        reader.required_str("name", 1, 100);
        if reader.value("version").is_some() {
            reader.required_str("version", 1, 50);
        }
        client.errors.extend(reader.errors);
    }
    client.errors
}

/// A purchase to preview or commit.
#[derive(Debug, Object)]
pub struct V2PurchaseRequest {
    pub mode: PurchaseMode,
    pub client: Optional<ClientInfo>,
    pub input: PurchaseInput,
}

/// Something that keeps the purchase from being committed.
#[derive(Debug, Clone, Serialize, Object)]
pub struct BlockingIssue {
    /// The input field concerned (`supplierId`, `items[0].productId`).
    pub path: String,
    /// `SUPPLIER`, `INVENTORY`, `CURRENCY` or `DUPLICATE`.
    pub code: String,
    pub message: String,
}

impl From<Blocker> for BlockingIssue {
    fn from(b: Blocker) -> Self {
        Self { path: format!("input.{}", b.path), code: b.code, message: b.message }
    }
}

/// The outcome of a preview or a commit.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct V2PurchaseResult {
    pub mode: PurchaseMode,
    /// The recorded purchase (commits only).
    pub purchase: Option<PurchaseData>,
    pub normalized_purchase: NormalizedPurchaseData,
    pub projected_effects: ProjectedEffectsData,
    pub warnings: Vec<PurchaseWarningData>,
    /// Empty when a commit can proceed.
    pub blocking_issues: Vec<BlockingIssue>,
    /// True when this is the stored outcome of an earlier commit with the same key and body.
    pub idempotent_replay: bool,
    /// The `client` of the request, as sent.
    pub client: Option<serde_json::Value>,
}

/// v2 single-object success envelope.
#[derive(Debug, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct V2Single<
    T: poem_openapi::types::Type
        + poem_openapi::types::ParseFromJSON
        + poem_openapi::types::ToJSON
        + Serialize
        + Send
        + Sync,
> {
    pub request_id: String,
    /// Always true.
    pub success: bool,
    pub data: T,
}

#[derive(ApiResponse)]
enum V2PurchaseAnswer {
    /// The preview: what a commit would record, and what blocks it.
    #[oai(status = 200)]
    Previewed(RawJson<V2Single<V2PurchaseResult>>),
    /// The purchase, recorded (also on a replay of the same key and body).
    #[oai(status = 201)]
    Committed(RawJson<V2Single<V2PurchaseResult>>),
}

responses! {
    V2PurchaseRead: Ok(RawJson<V2Single<PurchaseData>>) = 200, "The purchase.";
}

pub struct V2Api;

/// Whether `path` is one of the v2 routes (mounted below `/api/v2`, as the attribute below says),
/// which answer errors in the v2 envelope.
pub fn is_v2(path: &str) -> bool {
    path.starts_with("/api/v2")
}

routes! {
    #[OpenApi(prefix_path = "/api/v2")]
    V2Api {
        /// Get a purchase (v2)
        #[oai(path = "/purchases/:purchaseId", method = "get", operation_id = "v2GetPurchase", tag = "ApiTags::V2")]
        async fn get_purchase(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            #[oai(name = "purchaseId")] purchase_id: Path<IdText>,
        ) -> Result<V2PurchaseRead, ApiError> {
            let call = Call::new(V2_GET_PURCHASE, &state, &auth, request_id)?;
            let id = call.id(&PURCHASES, &purchase_id.0)?;
            let row = projections::purchases::get(&state.pool, call.org_id(), id)
                .await?
                .ok_or_else(|| ApiError::not_found("purchase"))?;
            let data = render_purchases(&state, call.org_id(), vec![row]).await?.remove(0);
            Ok(V2PurchaseRead::Ok(RawJson::new(Style::a(&V2Single { request_id: request_id.0.clone(), success: true, data })?)))
        }

        /// Preview or commit a purchase (v2)
        ///
        /// `mode: preview` assesses the purchase and writes nothing: the answer (200) is the normalized
        /// purchase, its projected effects and `blockingIssues` (empty means a commit can proceed).
        /// `mode: commit` needs an `Idempotency-Key` (reuse it when retrying after a timeout) and records the
        /// purchase (201); with blocking issues it answers 422 `PRECONDITION_FAILED` (`retryable` false, one
        /// detail per blocker) and writes nothing. A commit identical to a clean preview records exactly what
        /// the preview showed.
        #[oai(path = "/purchases", method = "post", operation_id = "v2CreatePurchase", tag = "ApiTags::V2")]
        async fn create_purchase(
            &self,
            auth: Auth,
            state: Data<&Arc<AppState>>,
            request_id: &RequestId,
            version: ServiceVersion,
            /// Required for `commit`; not used by `preview`.
            #[oai(name = "Idempotency-Key")]
            key: Header<Option<String>>,
            body: JsonBody<V2PurchaseRequest>,
        ) -> Result<V2PurchaseAnswer, ApiError> {
            let call = Call::new(V2_CREATE_PURCHASE, &state, &auth, request_id)?;
            let mut reader = commands::validate::ObjectReader::new(&body.value, "");
            let mode = match reader.optional_enum("mode", &["preview", "commit"]).as_deref() {
                Some("commit") => Some(Mode::Commit),
                Some(_) => Some(Mode::Preview),
                None => {
                    if reader.value("mode").is_none() {
                        reader.reject("mode", "required", "is required: preview or commit");
                    }
                    None
                }
            };
            let client = reader.value("client").cloned();
            if let Some(value) = &client {
                reader.errors.extend(client_errors(value));
            }
            let input = match reader.value("input") {
                Some(input) => match parse_purchase(input, today()) {
                    Ok(parsed) => Some(parsed),
                    Err(errors) => {
                        reader.errors.extend(errors.into_iter().map(|mut e| {
                            e.field = format!("input.{}", e.field);
                            e
                        }));
                        None
                    }
                },
                None => {
                    reader.reject("input", "required", "is required");
                    None
                }
            };
            let (mode, input) = reader.finish((mode, input)).map_err(ApiError::validation)?;
            let (Some(mode), Some(input)) = (mode, input) else { return Err(ApiError::internal()) };
            // A commit needs a key; a key sent with a preview must still be a valid one (it is not used).
            idempotency::claim(key.0.clone(), mode == Mode::Commit, V2_CREATE_PURCHASE.id(), None, &[], None, None)?;
            let command = Command::Purchase(PurchaseCommand { id: Uuid::now_v7(), mode, input });
            let key = if mode == Mode::Commit { key.0 } else { None };
            let accepted = call.dispatch(Write::json(key, &version, &[], &body), command).await.map_err(|mut error| {
                // Blockers name input fields; under v2 every field of the body is under `input`.
                if error.body.code == "PRECONDITION_FAILED" {
                    for detail in &mut error.body.details {
                        detail.field = detail.field.as_deref().map(|f| format!("input.{f}"));
                    }
                }
                error
            })?;
            call.await_reads(&accepted, [ProjectionId::Purchases, ProjectionId::Inventory, ProjectionId::Products]).await?;
            let outcome: PurchaseOutcome = decode_state(accepted.state, "purchase")?;
            let names = outcome_names(&state, call.org_id(), &outcome).await?;
            let (normalized, effects) = normalized_and_effects(&outcome, &names);
            let purchase = match outcome.id {
                Some(id) => {
                    let row = projections::purchases::get(&state.pool, call.org_id(), id)
                        .await?
                        .ok_or_else(|| ApiError::not_found("purchase"))?;
                    Some(render_purchases(&state, call.org_id(), vec![row]).await?.remove(0))
                }
                None => None,
            };
            let data = V2PurchaseResult {
                mode: if mode == Mode::Commit { PurchaseMode::Commit } else { PurchaseMode::Preview },
                purchase,
                normalized_purchase: normalized,
                projected_effects: effects,
                warnings: outcome.warnings.into_iter().map(Into::into).collect(),
                blocking_issues: outcome.blocking_issues.into_iter().map(Into::into).collect(),
                idempotent_replay: accepted.replayed,
                client,
            };
            let body = Style::a(&V2Single { request_id: request_id.0.clone(), success: true, data })?;
            Ok(match mode {
                Mode::Commit => V2PurchaseAnswer::Committed(RawJson::new(body)),
                Mode::Preview => V2PurchaseAnswer::Previewed(RawJson::new(body)),
            })
        }
    }
    v2_pages: {
        /// List warehouses (v2)
        ///
        /// Discovery for purchases that receive stock: a page list, by name.
        list_warehouses("/warehouses", "v2ListWarehouses", tag = "ApiTags::V2")
            -> V2Pages<WarehouseData> = V2_LIST_WAREHOUSES, warehouses {
            /// Only warehouses whose name contains this text (case-insensitive).
            search: Query<Option<String>>,
        };

        /// List suppliers (v2)
        ///
        /// Discovery for purchases: a page list by name; `search` matches the name or tax id.
        list_suppliers("/suppliers", "v2ListSuppliers", tag = "ApiTags::V2")
            -> V2Pages<ContactData> = V2_LIST_SUPPLIERS, suppliers { search: Query<Option<String>> };

        /// List products (v2)
        ///
        /// Discovery for purchases: a page list of variants by name; `search` matches the name, SKU or barcode.
        list_products("/products", "v2ListProducts", tag = "ApiTags::V2")
            -> V2Pages<ProductData> = V2_LIST_PRODUCTS, products { search: Query<Option<String>> };

        /// List purchases (v2)
        ///
        /// A page list, newest first; `supplierId`, `dateFrom` and `dateTo` (inclusive, on the invoice date)
        /// and `search` (the supplier invoice number or the supplier's name) filter it.
        list_purchases("/purchases", "v2ListPurchases", tag = "ApiTags::V2")
            -> V2Pages<PurchaseData> = V2_LIST_PURCHASES, purchases {
            #[oai(name = "supplierId")] supplier_id: Query<Option<String>>,
            #[oai(name = "dateFrom")] date_from: Query<Option<String>>,
            #[oai(name = "dateTo")] date_to: Query<Option<String>>,
            search: Query<Option<String>>,
        };
    }
}

/// A page of warehouses by name.
async fn warehouses(
    call: &Call<'_>,
    page: i64,
    limit: i64,
    search: Option<String>,
) -> Result<V2Pages<WarehouseData>, ApiError> {
    let search = shared_filters::search(search);
    let query = PageQuery { search, sort: SortBy::Name, descending: false, page, limit };
    let (data, pagination) = record_page::<WarehouseEvent>(call, &query).await?;
    Ok(V2Pages::Ok(RawJson::new(v2_envelope(call, data, pagination)?)))
}

/// A page of suppliers by name, with their tags.
async fn suppliers(
    call: &Call<'_>,
    page: i64,
    limit: i64,
    search: Option<String>,
) -> Result<V2Pages<ContactData>, ApiError> {
    let search = shared_filters::search(search);
    let table = projections::customers::SUPPLIERS_TABLE;
    let (rows, total) =
        projections::customers::page(&call.state.pool, table, call.org_id(), search.as_deref(), page, limit).await?;
    let rows = tagged(call.state, call.org_id(), Taggable::Supplier, rows, |r| r.id).await?;
    let data = rows.into_iter().map(|(row, tags)| ContactData { tags, ..ContactData::from_row(row) }).collect();
    Ok(V2Pages::Ok(RawJson::new(v2_page(call, data, page, limit, total)?)))
}

/// A page of product variants by name, with their tags.
async fn products(
    call: &Call<'_>,
    page: i64,
    limit: i64,
    search: Option<String>,
) -> Result<V2Pages<ProductData>, ApiError> {
    let search = shared_filters::search(search);
    let (rows, total) =
        projections::products::page(&call.state.pool, call.org_id(), search.as_deref(), page, limit).await?;
    let rows = tagged(call.state, call.org_id(), Taggable::Product, rows, |r| r.id).await?;
    let data = rows.into_iter().map(|(row, tags)| ProductData { tags, ..ProductData::from_row(row, false) }).collect();
    Ok(V2Pages::Ok(RawJson::new(v2_page(call, data, page, limit, total)?)))
}

/// A page of purchases, newest first; the filters' errors name them as v2 spells them.
async fn purchases(
    call: &Call<'_>,
    page: i64,
    limit: i64,
    supplier_id: Option<String>,
    date_from: Option<String>,
    date_to: Option<String>,
    search: Option<String>,
) -> Result<V2Pages<PurchaseData>, ApiError> {
    let mut filter = purchase_filter(supplier_id, date_from, date_to, search).map_err(|mut e| {
        for detail in &mut e.body.details {
            detail.field = detail.field.as_deref().map(crate::http::purchases::camel_parameter);
        }
        e
    })?;
    filter.query = filter.query.take();
    let (rows, total) = projections::purchases::page(&call.state.pool, call.org_id(), &filter, page, limit).await?;
    let data = render_purchases(call.state, call.org_id(), rows).await?;
    Ok(V2Pages::Ok(RawJson::new(v2_page(call, data, page, limit, total)?)))
}
