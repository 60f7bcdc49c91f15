//! The one v1 error envelope. Every failure leaves through [`ApiError`], including parse, routing and
//! authentication failures, which the outer middleware converts.

use commands::{FieldError, Rejection};
use events::domain::Scope;
use poem::http::StatusCode;
use poem_openapi::registry::{MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiResponse, Enum, Object};
use serde::Serialize;

/// The `error.type` values of the v1 envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Enum)]
#[serde(rename_all = "snake_case")]
#[oai(rename_all = "snake_case")]
pub enum ErrorType {
    ApiError,
    AuthenticationError,
    AuthorizationError,
    BusinessError,
    ExternalDependencyError,
    IdempotencyError,
    InvalidRequestError,
    RateLimitError,
}

/// One detail of an error: usually one offending field or header.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    /// Logical path of the field or header concerned.
    pub field: Option<String>,
    pub metadata: Option<std::collections::BTreeMap<String, serde_json::Value>>,
}

/// `error` of the v1 envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct ErrorBody {
    #[oai(rename = "type")]
    #[serde(rename = "type")]
    pub kind: ErrorType,
    /// Stable error code.
    pub code: String,
    pub message: String,
    /// Whether the same request may succeed if retried later.
    pub retryable: bool,
    pub details: Vec<ErrorDetail>,
}

/// The v1 error envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct ErrorEnvelope {
    pub request_id: String,
    pub error: ErrorBody,
}

/// One detail of a v2 error.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct V2ErrorDetail {
    /// Logical path of the field, parameter or header concerned (empty when none is).
    pub path: String,
    pub code: String,
    pub message: String,
}

/// `error` of the v2 envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
pub struct V2ErrorBody {
    /// Stable error code.
    pub code: String,
    pub message: String,
    /// Whether the same request may succeed if retried later.
    pub retryable: bool,
    pub details: Vec<V2ErrorDetail>,
}

/// The v2 error envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Object)]
#[serde(rename_all = "camelCase")]
#[oai(rename_all = "camelCase")]
pub struct V2ErrorEnvelope {
    pub request_id: String,
    /// Always false.
    pub success: bool,
    pub error: V2ErrorBody,
}

/// A failed request: its status and the body it answers with (the request id is added on the way out).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{status} {}: {}", body.code, body.message)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
    /// Extra response headers (for example `Retry-After`).
    pub headers: Vec<(&'static str, String)>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: ErrorType, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            body: ErrorBody {
                kind,
                code: code.to_owned(),
                message: message.into(),
                retryable: false,
                details: Vec::new(),
            },
            headers: Vec::new(),
        }
    }

    pub fn retryable(mut self) -> Self {
        self.body.retryable = true;
        self
    }

    pub fn with_detail(mut self, field: Option<&str>, code: &str, message: impl Into<String>) -> Self {
        self.body.details.push(ErrorDetail {
            code: code.to_owned(),
            message: message.into(),
            field: field.map(str::to_owned),
            metadata: None,
        });
        self
    }

    pub fn invalid_request(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorType::InvalidRequestError, code, message)
    }

    /// 400 listing every offending field; but when the organization's data alone decides (each offending
    /// field names something that does not exist, holds a value another resource already has, breaks a
    /// rule the organization defined, asks what the resource's current state refuses, or names a product
    /// whose type holds no stock where stock moves), 404 (`NOT_FOUND`) if anything is missing, else 409
    /// (`ALREADY_EXISTS` when every field is a taken value, `CONFLICT` otherwise): the request was well
    /// formed.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        const DATA_DECIDES: &[&str] =
            &["not_found", "already_exists", "violates_definition", "immutable", "not_in_order", "not_stocked"];
        let data_decides = !errors.is_empty() && errors.iter().all(|e| DATA_DECIDES.contains(&e.code.as_str()));
        let mut error = if data_decides && errors.iter().any(|e| e.code == "not_found") {
            Self::new(
                StatusCode::NOT_FOUND,
                ErrorType::InvalidRequestError,
                "NOT_FOUND",
                "a referenced resource does not exist; see details",
            )
        } else if data_decides && errors.iter().all(|e| e.code == "already_exists") {
            Self::new(
                StatusCode::CONFLICT,
                ErrorType::BusinessError,
                "ALREADY_EXISTS",
                "a unique value is already taken; see details",
            )
        } else if data_decides {
            Self::new(
                StatusCode::CONFLICT,
                ErrorType::BusinessError,
                "CONFLICT",
                "the request conflicts with the organization's data; see details",
            )
        } else {
            Self::invalid_request("VALIDATION_FAILED", "the request has invalid fields; see details")
        };
        error.body.details = errors
            .into_iter()
            .map(|e| ErrorDetail { code: e.code, message: e.message, field: Some(e.field), metadata: None })
            .collect();
        error
    }

    pub fn not_found(resource: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorType::InvalidRequestError, "NOT_FOUND", format!("{resource} not found"))
    }

    pub fn unauthenticated(message: &str) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, ErrorType::AuthenticationError, "UNAUTHENTICATED", message)
    }

    pub fn missing_scope(scope: Scope) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            ErrorType::AuthorizationError,
            "MISSING_SCOPE",
            format!("this credential lacks the scope {scope}"),
        )
        .with_detail(None, "MISSING_SCOPE", format!("required scope: {scope}"))
    }

    /// An infrastructure failure: logged where it happened, answered generically.
    pub fn internal() -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorType::ApiError, "INTERNAL", "an internal error occurred")
            .retryable()
    }

    pub fn unavailable(code: &str, message: &str) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, ErrorType::ExternalDependencyError, code, message).retryable()
    }

    pub fn from_rejection(rejection: Rejection) -> Self {
        match rejection {
            Rejection::Invalid { errors } => Self::validation(errors),
            Rejection::NotFound { resource } => Self::not_found(&resource),
            Rejection::Conflict { code, message } => {
                Self::new(StatusCode::CONFLICT, ErrorType::BusinessError, &code, message)
            }
            Rejection::StateConflict { message, details } => {
                Self::new(StatusCode::CONFLICT, ErrorType::BusinessError, "STATE_CONFLICT", message)
                    .with_business_details(details)
            }
            Rejection::Unprocessable { code, message, details } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorType::BusinessError, &code, message)
                    .with_business_details(details)
            }
            Rejection::Idempotency { code, message, retryable } => {
                let error = Self::new(StatusCode::CONFLICT, ErrorType::IdempotencyError, &code, message).with_detail(
                    Some("Idempotency-Key"),
                    &code.to_ascii_lowercase(),
                    "see message",
                );
                if retryable { error.retryable() } else { error }
            }
        }
    }

    /// Details with the facts behind a business refusal.
    pub fn with_business_details(mut self, details: Vec<commands::BusinessDetail>) -> Self {
        self.body.details.extend(details.into_iter().map(|d| ErrorDetail {
            code: d.code,
            message: d.message,
            field: d.field,
            metadata: (!d.metadata.is_empty()).then_some(d.metadata),
        }));
        self
    }

    pub fn with_header(mut self, name: &'static str, value: String) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The v2 envelope: `requestId`, `success: false`, `error {code, message, retryable, details[] {path,
    /// code, message}}`.
    pub fn envelope_v2(&self, request_id: &str) -> V2ErrorEnvelope {
        V2ErrorEnvelope {
            request_id: request_id.to_owned(),
            success: false,
            error: V2ErrorBody {
                code: self.body.code.clone(),
                message: self.body.message.clone(),
                retryable: self.body.retryable,
                details: self
                    .body
                    .details
                    .iter()
                    .map(|d| V2ErrorDetail {
                        path: d.field.clone().unwrap_or_default(),
                        code: d.code.clone(),
                        message: d.message.clone(),
                    })
                    .collect(),
            },
        }
    }

    pub fn envelope(&self, request_id: &str) -> ErrorEnvelope {
        ErrorEnvelope { request_id: request_id.to_owned(), error: self.body.clone() }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        tracing::error!(%error, "database error");
        Self::internal()
    }
}

impl poem::error::ResponseError for ApiError {
    fn status(&self) -> StatusCode {
        self.status
    }
}

/// The error statuses are documented per operation by `document.rs` (which knows the operation's path,
/// body and kind); here only the envelopes they carry are registered.
impl ApiResponse for ApiError {
    fn meta() -> MetaResponses {
        MetaResponses { responses: Vec::new() }
    }

    fn register(registry: &mut Registry) {
        ErrorEnvelope::register(registry);
        V2ErrorEnvelope::register(registry);
    }
}

/// Schema reference helper for raw payloads.
pub fn schema_of<T: Type>() -> MetaSchemaRef {
    T::schema_ref()
}
