//! The `Idempotency-Key` header: validated here and turned into a claim the command worker honours
//! (same key and same request: the stored outcome; same key and another request: 409).

use crate::http::error::{ApiError, ErrorType};
use commands::protocol::{Idempotency, RequestHash};
use poem::http::StatusCode;
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

pub const HEADER: &str = "Idempotency-Key";
const MAX_LEN: usize = 255;

/// The refusal of a request that needs a key and sent none (for operations whose key is required only
/// for some bodies; [`claim`] refuses the others).
pub fn key_required() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        ErrorType::IdempotencyError,
        "IDEMPOTENCY_KEY_REQUIRED",
        "this operation needs an Idempotency-Key header",
    )
    .with_detail(Some(HEADER), "required", "send a unique key per logical request and reuse it on retries")
}

/// The claim for one request. `grant` is the delegated grant that sends it (none for the organization's
/// API keys, which act alike): a key another grant used is a different request, so a replay never hands
/// one grant what another made (a webhook endpoint it owns and its secret). `path` holds the path
/// parameters, `version` the `Service-Version` it was sent under: a key reused across contract versions
/// is a different request.
pub fn claim(
    key: Option<String>,
    required: bool,
    operation: &str,
    grant: Option<Uuid>,
    path: &[&str],
    version: Option<&str>,
    body: Option<&Value>,
) -> Result<Option<Idempotency>, ApiError> {
    let Some(key) = key else {
        if required {
            return Err(key_required());
        }
        return Ok(None);
    };
    let key = key.trim().to_owned();
    if key.is_empty() || key.len() > MAX_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid_request("INVALID_IDEMPOTENCY_KEY", "the Idempotency-Key is not valid")
            .with_detail(Some(HEADER), "invalid_format", format!("1 to {MAX_LEN} visible ASCII characters")));
    }
    let mut hasher = Sha256::new();
    hasher.update(operation.as_bytes());
    if let Some(grant) = grant {
        hasher.update(b"\ngrant:");
        hasher.update(grant.as_bytes());
    }
    for part in path {
        hasher.update(b"\n");
        hasher.update(part.as_bytes());
    }
    hasher.update(b"\nversion:");
    hasher.update(version.unwrap_or_default().as_bytes());
    hasher.update(b"\n");
    if let Some(body) = body {
        hasher.update(events::chain::canonical_json(body));
    }
    Ok(Some(Idempotency {
        key,
        operation: operation.to_owned(),
        request_hash: RequestHash::new(hasher.finalize().to_vec()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_request_hashes_the_same_whatever_its_key_order() {
        let a = claim(Some("k1".into()), true, "createX", None, &[], None, Some(&json!({"a": 1, "b": [2]})));
        let b = claim(Some("k1".into()), true, "createX", None, &[], None, Some(&json!({"b": [2], "a": 1})));
        let (a, b) = (a.expect("ok").expect("claim"), b.expect("ok").expect("claim"));
        assert_eq!(a, b);
        let other =
            claim(Some("k1".into()), true, "createX", None, &[], Some("2026-08-20"), Some(&json!({"a": 1, "b": [2]})));
        assert_ne!(other.expect("ok").expect("claim").request_hash, a.request_hash, "version changes the hash");
        let granted =
            claim(Some("k1".into()), true, "createX", Some(Uuid::nil()), &[], None, Some(&json!({"a": 1, "b": [2]})));
        assert_ne!(granted.expect("ok").expect("claim").request_hash, a.request_hash, "a grant's own key");
        assert!(claim(None, true, "createX", None, &[], None, None).is_err());
        assert_eq!(claim(None, false, "createX", None, &[], None, None).expect("ok"), None);
        assert!(claim(Some("has space".into()), false, "createX", None, &[], None, None).is_err());
    }
}
