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
            let schemas = declared_schemas::<T>();
            nul_fields(&value, &T::schema_ref_json(), &schemas, "", &mut unstorable);
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

/// The body's declared schema and the schemas it refers to, as JSON (what `nul_fields` walks).
fn declared_schemas<T: Type>() -> serde_json::Map<String, serde_json::Value> {
    let mut registry = Registry::new();
    T::register(&mut registry);
    registry.schemas.into_iter().filter_map(|(name, schema)| Some((name, serde_json::to_value(schema).ok()?))).collect()
}

/// The JSON form of a type's schema reference.
trait SchemaRefJson {
    fn schema_ref_json() -> serde_json::Value;
}

impl<T: Type> SchemaRefJson for T {
    fn schema_ref_json() -> serde_json::Value {
        serde_json::to_value(T::schema_ref()).unwrap_or_default()
    }
}

/// The paths (`name`, `variants[2].sku`) of every string the parsers read (under a declared property,
/// an item or a map entry of the declared `schema`; anything under a schema that declares nothing)
/// holding U+0000: Postgres cannot store it in text, so such a body is refused before anything is
/// written. Undeclared properties are ignored by the parsers, and here too.
fn nul_fields(
    value: &serde_json::Value,
    schema: &serde_json::Value,
    schemas: &serde_json::Map<String, serde_json::Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    let schema = resolve(schema, schemas);
    match value {
        serde_json::Value::String(text) if text.contains('\0') => {
            out.push(if path.is_empty() { "body".to_owned() } else { path.to_owned() })
        }
        serde_json::Value::Array(items) => {
            let item_schema = member(schema, schemas, |s| s.get("items").cloned()).unwrap_or_default();
            for (i, item) in items.iter().enumerate() {
                nul_fields(item, &item_schema, schemas, &format!("{path}[{i}]"), out);
            }
        }
        serde_json::Value::Object(fields) => {
            let open = declares_nothing(schema, schemas);
            let entries = member(schema, schemas, |s| s.get("additionalProperties").filter(|a| a.is_object()).cloned());
            for (key, item) in fields {
                let field = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                let declared = member(schema, schemas, |s| s.get("properties").and_then(|p| p.get(key)).cloned());
                let Some(item_schema) = declared.or_else(|| entries.clone()).or_else(|| open.then(Default::default))
                else {
                    continue;
                };
                if key.contains('\0') {
                    out.push(field.clone());
                }
                nul_fields(item, &item_schema, schemas, &field, out);
            }
        }
        serde_json::Value::String(_)
        | serde_json::Value::Null
        | serde_json::Value::Bool(_)
        | serde_json::Value::Number(_) => {}
    }
}

fn resolve<'a>(
    schema: &'a serde_json::Value,
    schemas: &'a serde_json::Map<String, serde_json::Value>,
) -> &'a serde_json::Value {
    match schema.get("$ref").and_then(|r| r.as_str()).and_then(|r| r.rsplit('/').next()) {
        Some(name) => schemas.get(name).unwrap_or(schema),
        None => schema,
    }
}

/// `pick` applied to the schema or, failing that, to the members of its `allOf`/`anyOf`/`oneOf`.
fn member(
    schema: &serde_json::Value,
    schemas: &serde_json::Map<String, serde_json::Value>,
    pick: impl Fn(&serde_json::Value) -> Option<serde_json::Value> + Copy,
) -> Option<serde_json::Value> {
    let schema = resolve(schema, schemas);
    pick(schema).or_else(|| {
        ["allOf", "anyOf", "oneOf"]
            .iter()
            .filter_map(|k| schema.get(*k).and_then(|m| m.as_array()))
            .flatten()
            .find_map(|m| member(m, schemas, pick))
    })
}

/// A schema with no properties of its own (`{}`, any JSON): everything under it is read.
fn declares_nothing(schema: &serde_json::Value, schemas: &serde_json::Map<String, serde_json::Value>) -> bool {
    member(schema, schemas, |s| s.get("properties").cloned()).is_none()
        && member(schema, schemas, |s| s.get("additionalProperties").cloned()).is_none()
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

/// The query parameters whose name or value, once percent-decoded, is not UTF-8 (`%E9` for a Latin-1
/// `é`, `%ED%A0%80` for a lone surrogate): the parameter parsers would read such bytes leniently, as
/// U+FFFD, and search for or store that instead; the gateway refuses them before routing. Names are
/// given decoded (leniently where the name itself is the problem).
pub fn non_utf8_parameters(query: &str) -> Vec<String> {
    query
        .split('&')
        .filter(|pair| pair.contains('%'))
        .filter_map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = percent_decode(name);
            let valid = std::str::from_utf8(&name).is_ok() && std::str::from_utf8(&percent_decode(value)).is_ok();
            (!valid).then(|| String::from_utf8_lossy(&name).into_owned())
        })
        .collect()
}

/// `%XX` escapes as their bytes (a `%` not followed by two hex digits stays as it is).
pub(crate) fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).filter(|hex| bytes[i] == b'%' && hex.iter().all(u8::is_ascii_hexdigit));
        let escaped =
            hex.and_then(|hex| std::str::from_utf8(hex).ok()).and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
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

    #[derive(poem_openapi::Object)]
    struct Sample {
        name: String,
        variants: Vec<SampleVariant>,
        entries: std::collections::HashMap<String, String>,
        anything: Option<serde_json::Value>,
    }

    #[derive(poem_openapi::Object)]
    struct SampleVariant {
        sku: String,
    }

    fn nul_paths(body: serde_json::Value) -> Vec<String> {
        let mut found = Vec::new();
        nul_fields(&body, &Sample::schema_ref_json(), &declared_schemas::<Sample>(), "", &mut found);
        found.sort();
        found
    }

    #[test]
    fn nul_characters_are_found_where_the_parsers_read() {
        let body = serde_json::json!({
            "name": "a\u{0}b", "variants": [{"sku": "x"}, {"sku": "y\u{0}"}],
            "entries": {"k\u{0}": "v", "ok": "w\u{0}"}, "anything": {"deep": ["z\u{0}"]},
            "undeclared\u{0}": "ignored\u{0}",
        });
        assert_eq!(nul_paths(body), ["anything.deep[0]", "entries.k\u{0}", "entries.ok", "name", "variants[1].sku"]);
        assert!(nul_paths(serde_json::json!({"name": "plain", "variants": [], "entries": {}})).is_empty());
        assert_eq!(nul_parameters("limit=5&query=a%00b"), ["query"]);
        assert!(nul_parameters("limit=5&query=a%20b").is_empty());
    }

    #[test]
    fn parameters_that_are_not_utf8_are_found_by_name() {
        let query = "limit=5&query=Almac%E9n&ok=Almac%C3%A9n&cursor=%ED%A0%80&fields=name&x=%zz&%FF=1";
        assert_eq!(non_utf8_parameters(query), ["query", "cursor", "\u{FFFD}"]);
        assert!(non_utf8_parameters("query=a%20b%2B%25&page=%").is_empty());
        assert_eq!(percent_decode("a%41%4"), b"aA%4");
        assert_eq!(percent_decode("%+f%e9"), b"%+f\xe9");
    }
}
