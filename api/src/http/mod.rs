//! The HTTP gateway: routes, the request-id and error-envelope middleware, health, the OpenAPI
//! document and its docs UI.

pub mod auth;
pub mod body;
pub mod cursor;
pub mod customers;
pub mod error;
pub mod list;

use crate::http::error::{ApiError, ErrorType};
use crate::state::AppState;
use bytes::Bytes;
use poem::http::{HeaderValue, StatusCode};
use poem::{Endpoint, EndpointExt, FromRequest, Request, RequestBody, Response, Route, get, handler};
use poem_openapi::{OpenApiService, Tags};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use time::{OffsetDateTime, UtcOffset};

pub const REQUEST_ID_HEADER: &str = "Service-Request-Id";

#[derive(Tags)]
pub enum ApiTags {
    /// Customers (Style B objects).
    Customers,
}

/// The organization's time zone is the constant UTC-3: every date-time is rendered in it.
pub fn ar_time(at: OffsetDateTime) -> OffsetDateTime {
    at.to_offset(UtcOffset::from_hms(-3, 0, 0).unwrap_or(UtcOffset::UTC))
}

/// Serializing response bodies.
pub struct Style;

impl Style {
    /// A Style A body.
    pub fn a<T: Serialize>(body: &T) -> Bytes {
        Bytes::from(serde_json::to_vec(body).unwrap_or_default())
    }

    /// A Style B body.
    pub fn b<T: Serialize>(body: &T) -> Bytes {
        Self::a(body)
    }
}

/// The id of the current request (also sent back in `Service-Request-Id`).
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

impl<'a> FromRequest<'a> for RequestId {
    async fn from_request(request: &'a Request, _body: &mut RequestBody) -> poem::Result<Self> {
        Ok(request.data::<RequestId>().cloned().unwrap_or_else(RequestId::generate))
    }
}

impl RequestId {
    fn generate() -> Self {
        RequestId(format!("req_{}", uuid::Uuid::now_v7().simple()))
    }
}

pub fn api_service() -> OpenApiService<customers::CustomersApi, ()> {
    OpenApiService::new(customers::CustomersApi, "Back office API", "1.0.0").description(
        "Back-office backend for small businesses. Amounts are integer cents; the time zone is UTC-3 and the \
         default currency PES. Every response carries `Service-Request-Id`; every v1 error uses the error envelope.",
    )
}

/// The OpenAPI document as served at `/openapi.json`.
pub fn openapi_document() -> String {
    api_service().spec()
}

/// The whole HTTP application.
pub fn app(state: Arc<AppState>) -> impl Endpoint<Output = Response> {
    let service = api_service();
    let docs = service.swagger_ui();
    let spec = Bytes::from(service.spec());
    Route::new()
        .nest("/", service)
        .nest("/docs", docs)
        .at(
            "/openapi.json",
            get(poem::endpoint::make_sync(move |_| {
                Response::builder().content_type("application/json").body(spec.clone())
            })),
        )
        .at("/healthz", get(healthz))
        .data(state)
        .around(|endpoint, mut request: Request| async move {
            let request_id = RequestId::generate();
            request.set_data(request_id.clone());
            let mut response = match endpoint.call(request).await {
                Ok(response) => response,
                Err(error) => error_response(error, &request_id.0),
            };
            if let Ok(value) = HeaderValue::from_str(&request_id.0) {
                response.headers_mut().insert(REQUEST_ID_HEADER, value);
            }
            Ok(response)
        })
}

#[handler]
fn healthz(request: &Request) -> Response {
    let ready = request
        .data::<Arc<AppState>>()
        .is_some_and(|state| state.ready.load(Ordering::Acquire) && state.bus.is_connected());
    let (status, text) = if ready { (StatusCode::OK, "ok") } else { (StatusCode::SERVICE_UNAVAILABLE, "starting") };
    Response::builder()
        .status(status)
        .content_type("application/json")
        .body(serde_json::json!({ "status": text }).to_string())
}

/// Turns any failure into the v1 error envelope.
fn error_response(error: poem::Error, request_id: &str) -> Response {
    let api_error = into_api_error(error);
    let body = serde_json::to_vec(&api_error.envelope(request_id)).unwrap_or_default();
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
