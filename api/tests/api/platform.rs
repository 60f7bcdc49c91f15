//! Platform behaviour shared by every route: health, the OpenAPI document, authentication, request ids
//! and the error envelope for routing failures.

use crate::helpers::{TestApp, error, json};
use reqwest::Method;
use sqlx::PgPool;

#[sqlx::test(migrations = "../schema")]
async fn health_openapi_and_docs_answer_without_credentials(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let health = app.request(Method::GET, "/healthz", None, None).await;
    assert!(health.headers().contains_key("service-request-id"));
    assert_eq!(json(health, 200).await["status"], "ok");
    let spec = json(app.request(Method::GET, "/openapi.json", None, None).await, 200).await;
    assert!(spec["openapi"].as_str().is_some_and(|v| v.starts_with("3.")), "{}", spec["openapi"]);
    assert!(spec["paths"]["/api/v1/customers"]["post"].is_object());
    assert!(spec["components"]["securitySchemes"]["bearerAuth"].is_object());
    let docs = app.request(Method::GET, "/docs/", None, None).await;
    assert_eq!(docs.status().as_u16(), 200);
}

#[sqlx::test(migrations = "../schema")]
async fn missing_unknown_or_malformed_credentials_answer_401(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    error(app.request(Method::GET, "/api/v1/customers", None, None).await, 401, "authentication_error").await;
    error(app.request(Method::GET, "/api/v1/customers", Some("bo_sk_nope"), None).await, 401, "authentication_error")
        .await;
    let basic = app.client.get(format!("{}/api/v1/customers", app.base)).header("authorization", "Basic abc").send();
    error(basic.await.expect("sent"), 401, "authentication_error").await;
    let body = serde_json::json!({"name": "Ana"});
    let before = app.event_count().await;
    error(app.request(Method::POST, "/api/v1/customers", None, Some(&body)).await, 401, "authentication_error").await;
    assert_eq!(app.event_count().await, before, "nothing written");
}

#[sqlx::test(migrations = "../schema")]
async fn unknown_routes_and_methods_use_the_error_envelope(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = error(app.get("/api/v1/nothing-here").await, 404, "invalid_request_error").await;
    assert_eq!(body["error"]["code"], "ROUTE_NOT_FOUND");
    let body = error(
        app.request(Method::DELETE, "/api/v1/customers", Some(&app.api_key), None).await,
        405,
        "invalid_request_error",
    )
    .await;
    assert_eq!(body["error"]["code"], "METHOD_NOT_ALLOWED");
}

#[sqlx::test(migrations = "../schema")]
async fn every_response_carries_a_distinct_request_id(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let first = app.get("/api/v1/customers").await;
    let second = app.get("/api/v1/customers").await;
    let a = first.headers()["service-request-id"].to_str().expect("ascii").to_owned();
    let b = second.headers()["service-request-id"].to_str().expect("ascii").to_owned();
    assert_ne!(a, b);
    assert_eq!(json(first, 200).await["request_id"], a.as_str());
}
