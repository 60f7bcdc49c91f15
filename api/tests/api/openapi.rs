//! The OpenAPI document: a reviewed snapshot, and structural checks that it is a valid OpenAPI 3
//! document declaring what integrators rely on. Regenerate the snapshot with
//! `UPDATE_SNAPSHOTS=1 cargo test -p api --test api openapi` and review the diff.

use api::http::openapi_document;
use api::http::operations::{Idempotency, Operation};
use openapiv3::{OpenAPI, ReferenceOr};

const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/openapi.json");

#[test]
fn the_document_matches_the_reviewed_snapshot() {
    let document = openapi_document();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(SNAPSHOT, &document).expect("snapshot written");
    }
    let reviewed = std::fs::read_to_string(SNAPSHOT).expect("snapshot exists (run with UPDATE_SNAPSHOTS=1)");
    assert!(document == reviewed, "the OpenAPI document changed: regenerate the snapshot and review the diff");
}

#[test]
fn the_document_is_valid_openapi_3_and_complete() {
    let document = openapi_document();
    let parsed: OpenAPI = serde_json::from_str(&document).expect("a valid OpenAPI 3 document");
    assert!(parsed.openapi.starts_with("3."));
    let schemes = parsed.components.as_ref().expect("components").security_schemes.clone();
    assert!(schemes.contains_key("bearerAuth"), "the bearer scheme is declared");

    let raw: serde_json::Value = serde_json::from_str(&document).expect("json");
    let mut seen = Vec::new();
    for (path, item) in parsed.paths.paths.iter() {
        let ReferenceOr::Item(item) = item else { panic!("{path} is a reference") };
        assert!(path.starts_with("/api/"), "{path}: the gateway sends only paths under /api/ to the API's router");
        for (method, operation) in item.iter() {
            let id = operation.operation_id.clone().unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            seen.push(id.clone());
            let op = Operation::from_id(&id).unwrap_or_else(|| panic!("{id} is missing from the operations table"));
            let idempotency = op.idempotency();
            let extensions = &raw["paths"][path][method];
            let expected: Vec<&str> = op.scope().iter().map(|s| s.as_str()).collect();
            assert_eq!(extensions["x-required-scopes"], serde_json::json!(expected), "{id}");
            assert!(operation.security.as_ref().is_some_and(|s| !s.is_empty()), "{id} declares its security");
            let scoped = op.scope().is_some();
            let envelope = if path.starts_with("/api/v2") {
                "#/components/schemas/V2ErrorEnvelope"
            } else {
                "#/components/schemas/ErrorEnvelope"
            };
            for status in ["400", "401", "403", "404", "429", "500", "503"] {
                if status == "403" && !scoped {
                    continue;
                }
                let response = &extensions["responses"][status];
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"], envelope,
                    "{id} documents {status} with its surface's envelope"
                );
                assert!(response["headers"]["Service-Request-Id"].is_object(), "{id} {status}: Service-Request-Id");
            }
            assert!(extensions["responses"]["429"]["headers"]["Retry-After"].is_object(), "{id}: Retry-After");
            let has_key = operation.parameters.iter().any(|p| match p {
                ReferenceOr::Item(p) => p.parameter_data_ref().name == "Idempotency-Key",
                ReferenceOr::Reference { .. } => false,
            });
            assert_eq!(has_key, idempotency != Idempotency::NotUsed, "{id}: Idempotency-Key parameter");
            assert!(operation.summary.is_some(), "{id} has a summary");
        }
    }
    for op in api::http::operations::all() {
        assert!(seen.iter().any(|s| s == op.id()), "{} is listed but not served", op.id());
    }
}
