//! The HTTP gateway: routes, the request-id and error-envelope middleware, health, the OpenAPI
//! document and its docs UI.

pub mod auth;
pub mod body;
pub mod cursor;
pub mod discounts;
pub mod document;
pub mod documents;
pub mod envelopes;
pub mod error;
pub mod idempotency;
pub mod kinds;
pub mod links;
pub mod list;
pub mod operations;
pub mod presence;
pub mod resource;
pub mod routes_group;
pub mod schema;
pub mod shared_filters;
pub mod shared_operations;
pub mod shared_pages;
pub mod shared_responses;

use crate::http::error::{ApiError, ErrorType};
use crate::state::AppState;
use bytes::Bytes;
use poem::http::{HeaderName, HeaderValue, StatusCode};
use poem::{Endpoint, EndpointExt, FromRequest, IntoEndpoint, Request, RequestBody, Response, Route, get, handler};
use poem_openapi::{OpenApiService, Tags};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use time::OffsetDateTime;
use tracing::Instrument;

pub const VERSION_HEADER: &str = "Service-Version";
/// The header names the gateway reads or writes on every request, made once (a name given as text is
/// parsed on every use). HTTP/1 sends names in lowercase whatever their spelling; the request id's is
/// `Service-Request-Id`.
static REQUEST_ID_NAME: HeaderName = HeaderName::from_static("service-request-id");
static VERSION_NAME: HeaderName = HeaderName::from_static("service-version");
static KEY_NAME: HeaderName = HeaderName::from_static("idempotency-key");
/// Where the API starts: a path under it asks for a credential (the gateway) and is routed by the
/// API's own router (`Front`); every documented operation is under it (the OpenAPI test holds it).
const API_PREFIX: &str = "/api/";
/// The dated contracts this build understands (`Service-Version`).
pub const SUPPORTED_VERSIONS: &[&str] = &["2026-08-20"];

#[derive(Tags)]
pub enum ApiTags {
    /// The organization a credential acts on.
    Organization,
    /// Reference data of the tax authority.
    Reference,
    /// Customers (Style B objects).
    Customers,
    /// Suppliers (the customer body and rules, Style B objects).
    Suppliers,
    /// Products: groups of sellable variants (Style B objects).
    Products,
    /// Tags and the routes that apply them.
    Tags,
    /// Price lists and the price of every variant under each (Style A objects).
    PriceLists,
    /// Payment methods (Style B objects).
    PaymentMethods,
    /// Warehouses (Style B objects).
    Warehouses,
    /// Stock levels, the inventory ledger, stock movements and transfers (Style A objects).
    Inventory,
    /// Purchases (suppliers' invoices) and purchase orders with their receipts (Style B objects).
    Purchases,
    /// Quotes with canonical amounts and stock reservations (Style A objects).
    Quotes,
    /// Orders: converted from quotes or created for the service's own channel, edited, cancelled and
    /// completed (Style A objects).
    Orders,
    /// Delivery notes (remitos): from scratch, for a sale or for an order (Style A objects).
    DeliveryNotes,
    /// Treasury: bank accounts, cash registers and safes, their balances and movements, funds transfers
    /// (Style A objects).
    Treasury,
    /// Customer and supplier payments with their allocations, posted through the treasury (Style A
    /// objects).
    Payments,
    /// Sales: both creation contracts, invoicing with the tax authority, PDF vouchers (Style B objects).
    Sales,
    /// Product categories (Style B objects and page list).
    Categories,
    /// Points of sale (fiscal numbering series).
    PointsOfSale,
    /// Webhook endpoints, deliveries and the event catalogue.
    Webhooks,
    /// Grouped reports of sales, purchases, payments and inventory, as of any past position.
    Reports,
    /// The machine-first surface (page lists, v2 envelopes).
    V2,
}

/// The organization's time zone is the constant UTC-3: every date-time is rendered in it.
pub fn ar_time(at: OffsetDateTime) -> OffsetDateTime {
    at.to_offset(events::catalogue::AR_OFFSET)
}

/// Serializing response bodies.
pub struct Style;

impl Style {
    /// A Style A body. One that does not encode (a failing `Serialize`) is a 500, never an empty 200.
    pub fn a<T: Serialize>(body: &T) -> Result<Bytes, ApiError> {
        serde_json::to_vec(body).map(Bytes::from).map_err(|error| {
            tracing::error!(%error, "a response body did not encode");
            ApiError::internal()
        })
    }

    /// A Style B body.
    pub fn b<T: Serialize>(body: &T) -> Result<Bytes, ApiError> {
        Self::a(body)
    }
}

/// The `Service-Version` a request was sent under (already checked by the gateway middleware).
#[derive(Debug, Clone, Default)]
pub struct ServiceVersion(pub Option<String>);

impl<'a> FromRequest<'a> for ServiceVersion {
    async fn from_request(request: &'a Request, _body: &mut RequestBody) -> poem::Result<Self> {
        Ok(ServiceVersion(request.header(&VERSION_NAME).map(|v| v.trim().to_owned())))
    }
}

fn check_version(request: &Request) -> Result<(), ApiError> {
    match request.header(&VERSION_NAME).map(str::trim) {
        None => Ok(()),
        Some(version) if SUPPORTED_VERSIONS.contains(&version) => Ok(()),
        Some(version) => Err(ApiError::invalid_request(
            "UNSUPPORTED_VERSION",
            format!(
                "Service-Version {version:?} is not supported; supported versions: {}",
                SUPPORTED_VERSIONS.join(", ")
            ),
        )
        .with_detail(
            Some(VERSION_HEADER),
            "unsupported_version",
            format!("supported: {}", SUPPORTED_VERSIONS.join(", ")),
        )),
    }
}

/// Refuses query parameters holding an encoded NUL character (Postgres cannot store it, and no id or
/// stored text contains it), naming each.
fn check_query(request: &Request) -> Result<(), ApiError> {
    // Both kinds arrive percent-encoded only.
    let Some(query) = request.uri().query().filter(|query| query.contains('%')) else { return Ok(()) };
    let (nul, non_utf8) = (body::nul_parameters(query), body::non_utf8_parameters(query));
    if nul.is_empty() && non_utf8.is_empty() {
        return Ok(());
    }
    let mut error =
        ApiError::invalid_request("INVALID_PARAMETERS", "a parameter holds a character that is not allowed");
    for name in &nul {
        error =
            error.with_detail(Some(name), "invalid_character", "parameters may not contain the NUL character (%00)");
    }
    for name in &non_utf8 {
        error = error.with_detail(Some(name), "invalid_encoding", "parameters must be percent-encoded UTF-8");
    }
    Err(error)
}

/// An `Idempotency-Key` that is not even text is refused, not taken for a missing key.
fn check_key_encoding(request: &Request) -> Result<(), ApiError> {
    if request.headers().get(&KEY_NAME).is_some_and(|v| v.to_str().is_err()) {
        return Err(ApiError::invalid_request("INVALID_IDEMPOTENCY_KEY", "the Idempotency-Key is not valid")
            .with_detail(Some(idempotency::HEADER), "invalid_format", "1 to 255 visible ASCII characters"));
    }
    Ok(())
}

/// The `Idempotency-Key` header as a route receives it (absent: `None`).
pub type Key = poem_openapi::param::Header<Option<String>>;

/// The id of the current request (also sent back in `Service-Request-Id`).
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// A handler borrows the id the gateway gave its request (every request passes the gateway first).
impl<'a> FromRequest<'a> for &'a RequestId {
    async fn from_request(request: &'a Request, _body: &mut RequestBody) -> poem::Result<Self> {
        request.data::<RequestId>().ok_or_else(|| {
            poem::Error::from_string(
                "the request has no id: it did not pass the gateway",
                StatusCode::INTERNAL_SERVER_ERROR,
            )
        })
    }
}

impl RequestId {
    fn generate() -> Self {
        let mut id = String::with_capacity(36);
        id.push_str("req_");
        id.push_str(uuid::Uuid::now_v7().simple().encode_lower(&mut uuid::Uuid::encode_buffer()));
        RequestId(id)
    }
}

/// `(A, (B, (C, D)))` for `A, B, C, D`: the groups served as nested pairs (poem-openapi implements its
/// trait for tuples of up to sixteen), in order. Written for types and for values alike.
macro_rules! nested {
    ($last:path) => { $last };
    ($first:path, $($rest:path),+) => { ($first, nested!($($rest),+)) };
}

/// Every API group served, by the module that holds it, in the order the document lists them. The list
/// declares the modules; a new domain's routes are one entry.
macro_rules! apis {
    ($(mod $module:ident { $($api:ident),+ $(,)? })+) => {
        $(pub mod $module;)+

        type Apis = nested!($($($module::$api),+),+);

        fn apis() -> Apis {
            nested!($($($module::$api),+),+)
        }

        /// The operations of every API group served.
        fn operations_of_apis() -> Vec<operations::Operation> {
            [$($(<$module::$api as operations::Operations>::OPERATIONS,)+)+].concat()
        }

        /// The input rules of every API group served.
        fn input_rules_of_apis() -> Vec<&'static operations::InputRule> {
            [$($(<$module::$api as operations::Operations>::INPUT_RULES,)+)+].into_iter().flatten().collect()
        }
    };
}

apis! {
    mod customers { CustomersApi, SuppliersApi }
    mod price_lists { PriceListsApi }
    mod products { ProductsApi }
    mod metafields { MetafieldsApi }
    mod tags { TagsApi }
    mod records { RecordsApi }
    mod inventory { InventoryApi }
    mod purchases { PurchasesApi }
    mod sales { SalesApi }
    mod quotes { QuotesApi }
    mod orders { OrdersApi }
    mod delivery_notes { DeliveryNotesApi }
    mod treasury { TreasuryApi }
    mod payments { PaymentsApi }
    mod accounts { AccountsApi }
    mod reports { ReportsApi }
    mod reference { ReferenceApi }
    mod webhooks { WebhooksApi }
    mod v2 { V2Api }
}

pub fn api_service() -> OpenApiService<Apis, ()> {
    OpenApiService::new(apis(), "Back office API", "1.0.0").description(
        "Back-office backend for small businesses. Amounts are integer cents; the time zone is UTC-3 and the \
         default currency PES. Every response carries `Service-Request-Id`, and authenticated ones the \
         `RateLimit-Policy` and `RateLimit` headers; every v1 error uses the error envelope. Each operation \
         names its scope in `x-required-scopes` and its use of `Idempotency-Key` in `x-idempotency`. The \
         outcome of a request made with an `Idempotency-Key` is kept 24 hours: a retry within them replays \
         it, and after them the key is free and a request under it runs anew.",
    )
}

/// The OpenAPI document as served at `/openapi.json` (see `document.rs`).
pub fn openapi_document() -> String {
    let generated: serde_json::Value = serde_json::from_str(&api_service().spec()).unwrap_or_default();
    serde_json::to_string_pretty(&document::complete(generated)).unwrap_or_default()
}

/// The whole HTTP application.
pub fn app(state: Arc<AppState>) -> impl Endpoint<Output = Response> {
    let service = api_service();
    let docs = service.swagger_ui();
    let document: serde_json::Value = serde_json::from_str(&openapi_document()).unwrap_or_default();
    let allowed = document::AllowedMethods::of(&document);
    let measured = crate::observe::http::HttpMetrics::new(allowed.route_labels());
    let spec = Bytes::from(serde_json::to_vec_pretty(&document).unwrap_or_default());
    let gateway = Arc::new(Gateway { state: state.clone(), allowed, measured });
    let others = Route::new()
        .nest("/docs", docs)
        .at(
            "/openapi.json",
            get(poem::endpoint::make_sync(move |_| {
                Response::builder().content_type("application/json").body(spec.clone())
            })),
        )
        .at("/healthz", get(healthz))
        .at("/readyz", get(readyz))
        // Public: the signed token is the credential (outside `/api/`, so no bearer is asked for).
        .at("/documents/:token", get(documents::download))
        .at("/metrics", get(metrics_text));
    Front { api: service.into_endpoint(), others }.data(state).around(move |endpoint, mut request: Request| {
        let gateway = gateway.clone();
        let started = std::time::Instant::now();
        let method = crate::observe::http::method_index(request.method());
        let route = gateway.allowed.route(request.uri().path());
        let request_id = RequestId::generate();
        let span = tracing::info_span!("request", request_id = %request_id.0, org_id = tracing::field::Empty);
        let org_span = span.clone();
        async move {
            let Gateway { state, allowed, measured } = &*gateway;
            let in_flight = measured.enter();
            request.set_data(request_id.clone());
            // The path is read again after the request has gone (an `Allow` for a 405): the URI's
            // clone shares its bytes.
            let uri = request.uri().clone();
            let path = uri.path();
            let v2 = v2::is_v2(path);
            let mut rate_headers = None;
            let result: Result<Response, poem::Error> = async {
                if path.starts_with(API_PREFIX) {
                    let secret = auth::bearer(&request)?;
                    let principal = state.credentials.authenticate(&state.pool, secret).await?;
                    org_span.record("org_id", tracing::field::display(principal.org_id));
                    let limits = state.credentials.limits(&state.pool, principal.org_id).await?;
                    let decision = state.limiter.check(principal.org_id, limits);
                    rate_headers = Some(decision.headers());
                    if !decision.allowed {
                        metrics::counter!("backoffice_rate_limited_total").increment(1);
                        return Err(ApiError::new(
                            StatusCode::TOO_MANY_REQUESTS,
                            ErrorType::RateLimitError,
                            "RATE_LIMITED",
                            "the organization's request quota is used up; retry after the indicated time",
                        )
                        .retryable()
                        .with_header("Retry-After", decision.retry_after().to_string())
                        .into());
                    }
                    request.set_data(principal);
                }
                check_version(&request)?;
                check_query(&request)?;
                check_key_encoding(&request)?;
                if let Some(parameter) = allowed.undecodable_parameter(path) {
                    return Err(ApiError::not_found("resource")
                        .with_detail(Some(parameter), "invalid_id", "not an id: names nothing")
                        .into());
                }
                endpoint.call(request).await
            }
            .await;
            let mut response = match result {
                Ok(response) => response,
                Err(error) => error_response(error, &request_id.0, v2),
            };
            if response.status() == StatusCode::METHOD_NOT_ALLOWED
                && let Some(methods) = allowed.allow(path).and_then(|m| HeaderValue::from_str(&m).ok())
            {
                response.headers_mut().insert(poem::http::header::ALLOW, methods);
            }
            measured.record(route, method, response.status(), started.elapsed());
            drop(in_flight);
            let headers = response.headers_mut();
            // The texts move into their headers (their last use): checked, not copied.
            if let Ok(value) = HeaderValue::from_maybe_shared(Bytes::from(request_id.0)) {
                headers.insert(REQUEST_ID_NAME.clone(), value);
            }
            for (name, value) in rate_headers.into_iter().flatten() {
                if let Ok(value) = HeaderValue::from_maybe_shared(Bytes::from(value)) {
                    headers.insert(name, value);
                }
            }
            Ok(response)
        }
        .instrument(span)
    })
}

/// The application's first dispatch: a path under [`API_PREFIX`] goes straight to the API's own
/// router, the few other routes have theirs. Nested at `/` in one outer router, every API request was matched
/// by two route tables and had its URI rebuilt on the way in, for nothing: the nest stripped no prefix.
struct Front {
    api: poem::endpoint::BoxEndpoint<'static>,
    others: Route,
}

impl Endpoint for Front {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        if request.uri().path().starts_with(API_PREFIX) {
            self.api.call(request).await
        } else {
            self.others.call(request).await
        }
    }
}

/// What every request of one application reads: the state, the documented routes and the gateway's
/// metrics (one `Arc` cloned per request).
struct Gateway {
    state: Arc<AppState>,
    allowed: document::AllowedMethods,
    measured: crate::observe::http::HttpMetrics,
}

#[handler]
async fn metrics_text(request: &Request) -> Response {
    match request.data::<Arc<AppState>>() {
        Some(state) => crate::observe::render(&state.pool, Some(&state.bus)).await,
        None => Response::builder().status(StatusCode::NOT_FOUND).finish(),
    }
}

/// Alive: the process serves requests.
#[handler]
fn healthz() -> Response {
    crate::observe::liveness_response()
}

/// Ready: the database and NATS answer, and every projection the gateway waits on has a projector.
#[handler]
async fn readyz(request: &Request) -> Response {
    let result = match request.data::<Arc<AppState>>() {
        Some(state) if state.ready.load(Ordering::Acquire) => {
            crate::observe::readiness(&state.pool, &state.bus, true).await
        }
        _ => Err(vec!["gateway: starting".to_owned()]),
    };
    crate::observe::readiness_response(result)
}

/// Turns any failure into the v1 error envelope (the v2 one under `/api/v2`).
fn error_response(error: poem::Error, request_id: &str, v2: bool) -> Response {
    let api_error = into_api_error(error);
    let body = if v2 {
        serde_json::to_vec(&api_error.envelope_v2(request_id)).unwrap_or_default()
    } else {
        serde_json::to_vec(&api_error.envelope(request_id)).unwrap_or_default()
    };
    let mut response = Response::builder().status(api_error.status).content_type("application/json").body(body);
    for (name, value) in &api_error.headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(*name, value);
        }
    }
    response
}

fn into_api_error(error: poem::Error) -> ApiError {
    use poem_openapi::error::{
        AuthorizationError, ContentTypeError, ParseParamError, ParsePathError, ParseRequestPayloadError,
    };
    if let Some(api_error) = error.downcast_ref::<ApiError>() {
        return api_error.clone();
    }
    if error.is::<poem::error::NotFoundError>() {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorType::InvalidRequestError,
            "ROUTE_NOT_FOUND",
            "no such route",
        );
    }
    if error.is::<poem::error::MethodNotAllowedError>() {
        return ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorType::InvalidRequestError,
            "METHOD_NOT_ALLOWED",
            "this method is not allowed on this route",
        );
    }
    if let Some(parse) = error.downcast_ref::<ParseParamError>() {
        if parse.name.eq_ignore_ascii_case(idempotency::HEADER) {
            return ApiError::new(
                StatusCode::BAD_REQUEST,
                ErrorType::IdempotencyError,
                "IDEMPOTENCY_KEY_REQUIRED",
                "this operation needs an Idempotency-Key header",
            )
            .with_detail(Some(idempotency::HEADER), "required", parse.reason.clone());
        }
        return ApiError::invalid_request("INVALID_PARAMETERS", "a parameter is not valid").with_detail(
            Some(parse.name),
            "invalid_parameter",
            parse.reason.clone(),
        );
    }
    if error.is::<ParsePathError>() {
        return ApiError::not_found("resource");
    }
    if let Some(parse) = error.downcast_ref::<ParseRequestPayloadError>() {
        return ApiError::invalid_request("INVALID_BODY", "the request body is not valid").with_detail(
            Some("body"),
            "invalid_body",
            parse.reason.clone(),
        );
    }
    if error.is::<ContentTypeError>() {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorType::InvalidRequestError,
            "UNSUPPORTED_MEDIA_TYPE",
            "request bodies must be JSON (Content-Type: application/json)",
        );
    }
    if error.is::<AuthorizationError>() {
        return ApiError::unauthenticated("missing or malformed Authorization header");
    }
    let status = error.status();
    if status.is_server_error() {
        tracing::error!(%error, "request failed");
        return ApiError::internal();
    }
    let message = error.to_string();
    ApiError::new(status, ErrorType::InvalidRequestError, "INVALID_REQUEST", message)
}
