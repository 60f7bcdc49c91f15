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
            .with_detail(Some("Content-Type"), "unsupported_media_type", "send application/json")
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
                .with_detail(Some("body"), "too_large", format!("at most {MAX_BODY_BYTES} bytes"))
                .into());
            }
            Err(_) => {
                return Err(ApiError::invalid_request("UNREADABLE_BODY", "the request body could not be read")
                    .with_detail(Some("body"), "unreadable", "the body could not be read to its end")
                    .into());
            }
        };
        if raw.is_empty() {
            return Err(ApiError::invalid_request("MISSING_BODY", "a JSON request body is required")
                .with_detail(Some("body"), "required", "send a JSON object")
                .into());
        }
        let value = serde_json::from_slice(&raw).map_err(|e| {
            ApiError::invalid_request("MALFORMED_JSON", "the request body is not valid JSON").with_detail(
                Some("body"),
                "malformed_json",
                e.to_string(),
            )
        })?;
        // JSON can only carry U+0000 as the escape `\u0000`: bodies without it are not walked.
        let mut unstorable = Vec::new();
        if raw.windows(6).any(|window| window == b"\\u0000") {
            nul_fields(&value, "", &mut unstorable);
        }
        if !unstorable.is_empty() {
            let mut error =
                ApiError::invalid_request("INVALID_CHARACTERS", "the request body holds text that cannot be stored");
            for field in unstorable.iter().take(50) {
                error = error.with_detail(
                    Some(field),
                    "invalid_character",
                    "text may not contain the NUL character (U+0000)",
                );
            }
            return Err(error.into());
        }
        Ok(Self { value, _schema: PhantomData })
    }
}

/// The paths (`name`, `variants[2].sku`) of every string in `value`, key or value, holding U+0000:
/// Postgres cannot store it in text, so such a body is refused before anything is written.
fn nul_fields(value: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) if text.contains('\0') => {
            out.push(if path.is_empty() { "body".to_owned() } else { path.to_owned() })
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                nul_fields(item, &format!("{path}[{i}]"), out);
            }
        }
        serde_json::Value::Object(fields) => {
            for (key, item) in fields {
                let field = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                if key.contains('\0') {
                    out.push(field.clone());
                }
                nul_fields(item, &field, out);
            }
        }
        serde_json::Value::String(_)
        | serde_json::Value::Null
        | serde_json::Value::Bool(_)
        | serde_json::Value::Number(_) => {}
    }
}

/// The query parameters whose name or value holds an encoded U+0000 (`%00`), which no stored text or
/// id can contain; the gateway refuses them before routing.
pub fn nul_parameters(query: &str) -> Vec<String> {
    query
        .split('&')
        .filter(|pair| pair.contains("%00"))
        .map(|pair| pair.split('=').next().unwrap_or_default().replace("%00", "").to_owned())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_characters_are_found_with_their_paths() {
        let body = serde_json::json!({
            "name": "a\u{0}b", "ok": "fine", "variants": [{"sku": "x"}, {"sku": "y\u{0}"}], "k\u{0}": 1
        });
        let mut found = Vec::new();
        nul_fields(&body, "", &mut found);
        found.sort();
        assert_eq!(found, ["k\u{0}", "name", "variants[1].sku"]);
        let mut none = Vec::new();
        nul_fields(&serde_json::json!({"name": "plain", "n": [1, 2]}), "", &mut none);
        assert!(none.is_empty());
        assert_eq!(nul_parameters("limit=5&query=a%00b"), ["query"]);
        assert!(nul_parameters("limit=5&query=a%20b").is_empty());
    }
}
