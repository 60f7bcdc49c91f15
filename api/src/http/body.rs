//! Request and response payloads whose OpenAPI schema is a typed object while the bytes are handled
//! by hand: request bodies are parsed into JSON values and validated field by field (so every offending
//! field can be reported), and cached responses go out as pre-serialized bytes.

use crate::http::error::ApiError;
use bytes::Bytes;
use poem::{IntoResponse, Request, RequestBody, Response};
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiExtractor, ApiExtractorType, ApiResponse, ExtractParamOptions};
use std::marker::PhantomData;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A JSON request body documented as `T`, delivered as a parsed JSON value.
pub struct JsonBody<T> {
    pub value: serde_json::Value,
    _schema: PhantomData<fn() -> T>,
}

impl<T: Type> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(content_type: &str) -> bool {
        is_json(content_type)
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

impl<T: Type> ParsePayload for JsonBody<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        if let Some(content_type) = request.content_type()
            && !is_json(content_type)
        {
            return Err(ApiError::new(
                poem::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                crate::http::error::ErrorType::InvalidRequestError,
                "UNSUPPORTED_MEDIA_TYPE",
                "request bodies must be JSON (Content-Type: application/json)",
            )
            .into());
        }
        let raw = match body.take()?.into_bytes_limit(MAX_BODY_BYTES).await {
            Ok(raw) => raw,
            Err(poem::error::ReadBodyError::PayloadTooLarge) => {
                return Err(ApiError::new(
                    poem::http::StatusCode::PAYLOAD_TOO_LARGE,
                    crate::http::error::ErrorType::InvalidRequestError,
                    "PAYLOAD_TOO_LARGE",
                    format!("request bodies are limited to {MAX_BODY_BYTES} bytes"),
                )
                .into());
            }
            Err(_) => {
                return Err(ApiError::invalid_request("UNREADABLE_BODY", "the request body could not be read").into());
            }
        };
        if raw.is_empty() {
            return Err(ApiError::invalid_request("MISSING_BODY", "a JSON request body is required").into());
        }
        let value = serde_json::from_slice(&raw).map_err(|e| {
            ApiError::invalid_request("MALFORMED_JSON", "the request body is not valid JSON").with_detail(
                Some("body"),
                "malformed_json",
                e.to_string(),
            )
        })?;
        Ok(Self { value, _schema: PhantomData })
    }
}

impl<'a, T: Type> ApiExtractor<'a> for JsonBody<T> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        <Self as Payload>::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            required: true,
            content: vec![MetaMediaType {
                content_type: <Self as Payload>::CONTENT_TYPE,
                schema: <Self as Payload>::schema_ref(),
            }],
        })
    }

    async fn from_request(
        request: &'a Request,
        body: &mut RequestBody,
        _options: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        <Self as ParsePayload>::from_request(request, body).await
    }
}

/// A JSON response documented as `T`, sent from bytes serialized beforehand (for example from cache).
pub struct RawJson<T> {
    bytes: Bytes,
    _schema: PhantomData<fn() -> T>,
}

impl<T> RawJson<T> {
    pub fn new(bytes: Bytes) -> Self {
        Self { bytes, _schema: PhantomData }
    }
}

impl<T: Type> Payload for RawJson<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type> IntoResponse for RawJson<T> {
    fn into_response(self) -> Response {
        Response::builder().content_type("application/json").body(self.bytes)
    }
}

impl<T: Type> ApiResponse for RawJson<T> {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "OK",
                status: Some(200),
                status_range: None,
                headers: vec![],
                content: vec![MetaMediaType { content_type: "application/json", schema: T::schema_ref() }],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}
