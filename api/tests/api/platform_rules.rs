//! Platform rules every route obeys, proved over real HTTP: scopes, revocation, idempotency keys, rate
//! limits (across credentials and gateways), `Service-Version`, the v1/v2 error envelopes and request
//! ids, signed cursors, and the served OpenAPI document.

use crate::helpers::{TestApp, detail_fields, error, eventually, json, nats_url, org_id};
use api::roles::{self, Roles};
use commands::organization::{self as admin, Delegation, RateLimits};
use events::domain::Scope;
use futures::StreamExt;
use reqwest::header::HeaderMap;
use reqwest::{Method, Response};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;
use uuid::Uuid;

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

/// A request with optional body and extra headers, sent to `base` (the test gateway or a second one).
async fn send_at(
    app: &TestApp,
    base: &str,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> Response {
    let mut request = app.client.request(method, format!("{base}{path}"));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.expect("request sent")
}

async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> Response {
    send_at(app, &app.base, method, path, key, body, headers).await
}

/// POST with an `Idempotency-Key`.
async fn post_keyed(app: &TestApp, path: &str, key: &str, idempotency_key: &str, body: &Value) -> Response {
    send(app, Method::POST, path, Some(key), Some(body), &[("Idempotency-Key", idempotency_key)]).await
}

/// Status, headers and raw body of a response.
async fn parts(response: Response) -> (u16, HeaderMap, String) {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    (status, headers, text)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn scopes(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

async fn key_with(app: &TestApp, org: Uuid, list: &[&str]) -> String {
    admin::create_api_key(&app.pool, org, &scopes(list)).await.expect("api key")
}

async fn count_events(pool: &PgPool, org: Uuid, event_type: &str) -> i64 {
    sqlx::query_scalar("select count(*) from events where org_id = $1 and event_type = $2")
        .bind(org)
        .bind(event_type)
        .fetch_one(pool)
        .await
        .expect("count")
}

async fn ledger_accounts(pool: &PgPool, org: Uuid) -> Vec<Uuid> {
    sqlx::query_scalar("select id from ledger_accounts where org_id = $1 order by code")
        .bind(org)
        .fetch_all(pool)
        .await
        .expect("ledger accounts")
}

/// The current fixed rate-limit minute (the limiter's windows are `unix seconds / 60`).
fn current_minute() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs() / 60
}

/// `r` of a `RateLimit` header (`"minute";r=4;t=37`).
fn remaining(rate_limit: &str) -> u32 {
    rate_limit
        .split(';')
        .find_map(|part| part.trim().strip_prefix("r="))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no r= in RateLimit {rate_limit:?}"))
}

/// Asserts a response's `Service-Request-Id` header and, when the body names a request id
/// (`request_id` in v1, `requestId` in v2), that they are equal. Returns status and body.
async fn with_request_id(response: Response) -> (u16, Value) {
    let (status, headers, text) = parts(response).await;
    let id =
        header(&headers, "service-request-id").unwrap_or_else(|| panic!("no Service-Request-Id ({status}): {text}"));
    assert!(id.starts_with("req_") && id.len() > 4, "request id {id:?}");
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    for field in ["request_id", "requestId"] {
        if let Some(in_body) = body.get(field) {
            assert_eq!(in_body.as_str(), Some(id), "{field} equals Service-Request-Id: {text}");
        }
    }
    (status, body)
}

/// Asserts the v2 error envelope and returns it.
async fn v2_error(response: Response, status: u16, code: &str) -> Value {
    let (actual, body) = with_request_id(response).await;
    assert_eq!(actual, status, "{body}");
    assert!(body["requestId"].as_str().is_some_and(|id| !id.is_empty()), "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert!(body.get("request_id").is_none(), "no v1 field in a v2 envelope: {body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(body["error"]["retryable"].is_boolean(), "{body}");
    let details = body["error"]["details"].as_array().unwrap_or_else(|| panic!("details array: {body}"));
    for detail in details {
        for field in ["path", "code", "message"] {
            assert!(detail[field].is_string(), "detail {field}: {body}");
        }
    }
    body
}

/// Starts a second gateway (HTTP only) on the same database and NATS prefix. Its tasks stop when the
/// returned `Running` is dropped.
async fn second_gateway(app: &TestApp) -> (String, roles::Running) {
    let bus = events::bus::Bus::connect(&nats_url(), app.bus.prefix(), "second").await.expect("NATS");
    eventually(Duration::from_secs(10), "the second gateway's NATS connection", || async {
        bus.is_connected().then_some(())
    })
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
    let running = roles::start(
        app.pool.clone(),
        bus,
        Roles { api: Some(listener), commands: false, projections: None, fiscal: None },
        Duration::from_secs(10),
    )
    .await
    .expect("second gateway");
    let base = format!("http://{}", running.http_addr.expect("address"));
    let health = app.client.get(format!("{base}/healthz")).send().await.expect("sent");
    json(health, 200).await;
    (base, running)
}

/// Subscribes to the gateways' rate-limit count broadcasts (`<prefix>.ratelimit`).
async fn watch_broadcasts(app: &TestApp) -> async_nats::Subscriber {
    let subscriber = app.bus.client.subscribe(format!("{}.ratelimit", app.bus.prefix())).await.expect("subscribe");
    app.bus.client.flush().await.expect("flush");
    subscriber
}

/// Waits up to `within` for a broadcast carrying `org`'s minute count (any count when `count` is
/// `None`). Returns whether one came.
async fn broadcast_seen(
    broadcasts: &mut async_nats::Subscriber,
    org: Uuid,
    count: Option<usize>,
    within: Duration,
) -> bool {
    let org = org.to_string();
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(100), broadcasts.next()).await else {
            continue;
        };
        let payload: Value = serde_json::from_slice(&message.payload).unwrap_or_default();
        let counts = payload["counts"].as_array().cloned().unwrap_or_default();
        if counts
            .iter()
            .any(|entry| entry[0] == org.as_str() && count.is_none_or(|count| entry[1]["minute_count"] == count))
        {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------------------------------------------
// 1. Scopes
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn scopes_gate_every_operation_and_the_default_account_needs_treasury_write(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let existing = json(app.post("/api/v1/customers", &json!({"name": "Existente"})).await, 201).await;
    let existing_path = format!("/api/v1/customers/{}", existing["data"]["id"].as_str().expect("id"));

    // A read-only key reads, and every write is refused naming the missing scope; nothing is written.
    let reader = key_with(&app, org, &["customers:read"]).await;
    json(send(&app, Method::GET, "/api/v1/customers", Some(&reader), None, &[]).await, 200).await;
    json(send(&app, Method::GET, &existing_path, Some(&reader), None, &[]).await, 200).await;
    let before = app.event_count().await;
    let body = json!({"name": "Sin permiso"});
    for (method, path) in [(Method::POST, "/api/v1/customers"), (Method::PUT, existing_path.as_str())] {
        let refused =
            error(send(&app, method, path, Some(&reader), Some(&body), &[]).await, 403, "authorization_error").await;
        assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("customers:write")), "{refused}");
        assert_eq!(refused["error"]["retryable"], false);
    }
    // Other resources need their own scopes.
    let refused = error(
        send(&app, Method::GET, "/api/v1/warehouses", Some(&reader), None, &[]).await,
        403,
        "authorization_error",
    )
    .await;
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("warehouses:read")), "{refused}");
    assert_eq!(app.event_count().await, before, "refused writes record nothing");

    // A delegated token with customers:read and customers:write creates customers.
    let delegation = Delegation {
        user: "vendedora@example.com".to_owned(),
        visibility: "organization".to_owned(),
        registers: vec![],
        safes: vec![],
    };
    let token =
        admin::create_delegated_token(&app.pool, org, &scopes(&["customers:read", "customers:write"]), delegation)
            .await
            .expect("delegated token");
    let created = json(
        send(&app, Method::POST, "/api/v1/customers", Some(&token), Some(&json!({"name": "Por token"})), &[]).await,
        201,
    )
    .await;
    assert_eq!(created["data"]["name"], "Por token");
    let token_customer = format!("/api/v1/customers/{}", created["data"]["id"].as_str().expect("id"));

    // Setting the default account (any value, even null or garbage) needs treasury:write too.
    let accounts = ledger_accounts(&app.pool, org).await;
    assert_eq!(accounts.len(), 5, "the organization is seeded with a chart of four ledger accounts and its safe's");
    let before = app.event_count().await;
    for value in [json!(accounts[0].to_string()), Value::Null, json!("not-a-uuid")] {
        let body = json!({"name": "Con cuenta", "default_account_id": value});
        for (method, path) in [(Method::POST, "/api/v1/customers"), (Method::PUT, token_customer.as_str())] {
            let refused = error(
                send(&app, method.clone(), path, Some(&token), Some(&body), &[]).await,
                403,
                "authorization_error",
            )
            .await;
            let message = refused["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("treasury:write"), "{method} {value}: {refused}");
        }
    }
    assert_eq!(app.event_count().await, before, "refused account changes record nothing");

    // With a full-scope key: an unknown account, or another organization's, is not found.
    let (other_org, _) = app.other_org().await;
    let foreign = ledger_accounts(&app.pool, other_org).await;
    let before = app.event_count().await;
    for missing in [Uuid::now_v7(), foreign[0]] {
        let body = json!({"name": "Con cuenta", "default_account_id": missing});
        let not_found = error(app.post("/api/v1/customers", &body).await, 404, "invalid_request_error").await;
        assert_eq!(not_found["error"]["code"], "NOT_FOUND", "{not_found}");
        error(app.put(&existing_path, &body).await, 404, "invalid_request_error").await;
    }
    let malformed = json!({"name": "Con cuenta", "default_account_id": "not-a-uuid"});
    let invalid = error(app.post("/api/v1/customers", &malformed).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&invalid), vec!["default_account_id"], "{invalid}");
    assert_eq!(app.event_count().await, before, "nothing written for unknown accounts");

    // A valid account is set, kept when a later replacement omits it, and cleared by null.
    let body = json!({"name": "Con cuenta", "default_account_id": accounts[0]});
    let with_account = json(app.post("/api/v1/customers", &body).await, 201).await;
    assert_eq!(with_account["data"]["default_account_id"], accounts[0].to_string());
    let path = format!("/api/v1/customers/{}", with_account["data"]["id"].as_str().expect("id"));
    assert_eq!(json(app.get(&path).await, 200).await["data"]["default_account_id"], accounts[0].to_string());

    let kept = json(app.put(&path, &json!({"name": "Renombrada"})).await, 200).await;
    assert_eq!(kept["data"]["name"], "Renombrada");
    assert_eq!(kept["data"]["default_account_id"], accounts[0].to_string(), "omitted means unchanged");
    // The token without treasury:write may replace the customer as long as it leaves the account alone.
    let by_token = json(
        send(&app, Method::PUT, &path, Some(&token), Some(&json!({"name": "Por token otra vez"})), &[]).await,
        200,
    )
    .await;
    assert_eq!(by_token["data"]["default_account_id"], accounts[0].to_string());

    let changed =
        json(app.put(&path, &json!({"name": "Cambiada", "default_account_id": accounts[1]})).await, 200).await;
    assert_eq!(changed["data"]["default_account_id"], accounts[1].to_string());
    let cleared = json(app.put(&path, &json!({"name": "Cambiada", "default_account_id": null})).await, 200).await;
    assert_eq!(cleared["data"]["default_account_id"], Value::Null, "null clears it");
    let read = json(app.get(&path).await, 200).await;
    assert_eq!(read, cleared, "the read side agrees");
}

// ---------------------------------------------------------------------------------------------------
// 2. Revocation
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn revoked_credentials_stop_working_in_every_gateway_within_seconds(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let key = key_with(&app, org, &["customers:read"]).await;
    let delegation =
        Delegation { user: "cajero".to_owned(), visibility: "own".to_owned(), registers: vec![], safes: vec![] };
    let token = admin::create_delegated_token(&app.pool, org, &scopes(&["customers:read"]), delegation)
        .await
        .expect("delegated token");
    // Both are known to both gateways (and cached there) before they are revoked.
    let (second_base, _second) = second_gateway(&app).await;
    let bases = [app.base.clone(), second_base];
    for base in &bases {
        for secret in [&key, &token] {
            json(send_at(&app, base, Method::GET, "/api/v1/customers", Some(secret), None, &[]).await, 200).await;
        }
    }

    let (revoked_org, _) = admin::revoke(&app.pool, &key).await.expect("revoke key");
    assert_eq!(revoked_org, org);
    admin::revoke(&app.pool, &token).await.expect("revoke token");
    assert!(admin::revoke(&app.pool, &key).await.is_err(), "a revoked key cannot be revoked again");

    // No operator announcement in-process: the relay-published CredentialRevoked event must do it.
    let revoked_at = Instant::now();
    for base in &bases {
        for secret in [&key, &token] {
            eventually(Duration::from_secs(5), "the revoked credential answers 401", || async {
                let response = send_at(&app, base, Method::GET, "/api/v1/customers", Some(secret), None, &[]).await;
                match response.status().as_u16() {
                    200 => None,
                    401 => Some(error(response, 401, "authentication_error").await),
                    other => panic!("unexpected status {other}"),
                }
            })
            .await;
        }
    }
    assert!(revoked_at.elapsed() < Duration::from_secs(5), "every gateway learned within 5 s");
    // It stays revoked (nothing re-caches it), and the organization's other key is unaffected.
    for _ in 0..3 {
        error(send(&app, Method::GET, "/api/v1/customers", Some(&key), None, &[]).await, 401, "authentication_error")
            .await;
    }
    json(app.get("/api/v1/customers").await, 200).await;

    // An unknown key of the right shape is refused too.
    let unknown = admin::new_api_key_secret();
    let body = error(
        send(&app, Method::GET, "/api/v1/organization", Some(&unknown), None, &[]).await,
        401,
        "authentication_error",
    )
    .await;
    assert_eq!(body["error"]["code"], "UNAUTHENTICATED");
}

// ---------------------------------------------------------------------------------------------------
// 3. Idempotency
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn idempotency_outcomes_expire_after_the_retention_window(pool: PgPool) {
    use commands::idempotency::{RETENTION, purge_expired};
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let body = json!({"name": "Ana Vencida"});
    let (expired_key, kept_key) = (format!("k-{}", Uuid::now_v7()), format!("k-{}", Uuid::now_v7()));
    let expired = json(post_keyed(&app, "/api/v1/customers", &app.api_key, &expired_key, &body).await, 201).await;
    let kept = json(post_keyed(&app, "/api/v1/customers", &app.api_key, &kept_key, &body).await, 201).await;
    // One outcome stored just past the retention window, the other just inside it.
    for (key, age) in
        [(&expired_key, RETENTION + Duration::from_secs(60)), (&kept_key, RETENTION - Duration::from_secs(60))]
    {
        sqlx::query(
            "update idempotency_keys set created_at = now() - make_interval(secs => $1) where org_id = $2 and key = $3",
        )
        .bind(age.as_secs_f64())
        .bind(org)
        .bind(key)
        .execute(&app.pool)
        .await
        .expect("backdated");
    }
    assert_eq!(purge_expired(&app.pool, RETENTION).await.expect("purged"), 1);
    assert_eq!(purge_expired(&app.pool, RETENTION).await.expect("purged"), 0, "nothing left to purge");

    // Inside the window the key still replays the stored outcome.
    let again = json(post_keyed(&app, "/api/v1/customers", &app.api_key, &kept_key, &body).await, 201).await;
    assert_eq!(again["data"]["id"], kept["data"]["id"]);
    // Past it the key is free: the same request runs anew, and its outcome is stored again.
    let before = app.event_count().await;
    let anew = json(post_keyed(&app, "/api/v1/customers", &app.api_key, &expired_key, &body).await, 201).await;
    assert_ne!(anew["data"]["id"], expired["data"]["id"]);
    assert_eq!(app.event_count().await, before + 1);
    let replay = json(post_keyed(&app, "/api/v1/customers", &app.api_key, &expired_key, &body).await, 201).await;
    assert_eq!(replay["data"]["id"], anew["data"]["id"]);
}

#[sqlx::test(migrations = "../schema")]
async fn idempotency_keys_replay_refuse_conflicts_and_store_nothing_for_failures(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let customer = json!({"name": "Ana Idempotente", "email": "ana@example.com"});
    let warehouse = json!({"name": "Depósito norte", "address": "Ruta 8 km 50"});

    for (path, body, reversed, other_body) in [
        (
            "/api/v1/customers",
            &customer,
            r#"{"email": "ana@example.com", "name": "Ana Idempotente"}"#,
            json!({"name": "Otra persona"}),
        ),
        (
            "/api/v1/warehouses",
            &warehouse,
            r#"{"name": "Depósito norte", "address": "Ruta 8 km 50"}"#,
            json!({"name": "Depósito sur"}),
        ),
    ] {
        let key = format!("k-{}", Uuid::now_v7());
        let (status, _, first) = parts(post_keyed(&app, path, &app.api_key, &key, body).await).await;
        assert_eq!(status, 201, "{path}: {first}");
        let before = app.event_count().await;

        // Same key, same body: the same status and the very same body, nothing new recorded. Replays
        // follow each other at once: each must have let go of the key before it answered.
        for _ in 0..10 {
            let (status, _, again) = parts(post_keyed(&app, path, &app.api_key, &key, body).await).await;
            assert_eq!(status, 201, "{path}: {again}");
            assert_eq!(again, first, "{path}: a replay answers the stored outcome");
        }
        // Key order in the body does not make it another request.
        let response = app
            .client
            .post(format!("{}{path}", app.base))
            .bearer_auth(&app.api_key)
            .header("Idempotency-Key", &key)
            .header("content-type", "application/json")
            .body(reversed)
            .send()
            .await
            .expect("sent");
        let (status, _, again) = parts(response).await;
        assert_eq!((status, again.as_str()), (201, first.as_str()), "{path}");
        assert_eq!(app.event_count().await, before, "{path}: replays record nothing");

        // Same key, another body (or the same body under another contract version): 409, nothing written.
        let conflict =
            error(post_keyed(&app, path, &app.api_key, &key, &other_body).await, 409, "idempotency_error").await;
        assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT", "{conflict}");
        assert_eq!(conflict["error"]["retryable"], false);
        let versioned = send(
            &app,
            Method::POST,
            path,
            Some(&app.api_key),
            Some(body),
            &[("Idempotency-Key", &key), ("Service-Version", "2026-08-20")],
        )
        .await;
        let conflict = error(versioned, 409, "idempotency_error").await;
        assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT", "{conflict}");
        // Same key, a body the parser refuses (no worker ever sees the key): the key's conflict, not the
        // body's 400; a fresh key with that body is still the body's 400.
        let unnamed = json!({"name": ""});
        let conflict =
            error(post_keyed(&app, path, &app.api_key, &key, &unnamed).await, 409, "idempotency_error").await;
        assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT", "{conflict}");
        let fresh = format!("k-{}", Uuid::now_v7());
        error(post_keyed(&app, path, &app.api_key, &fresh, &unnamed).await, 400, "invalid_request_error").await;
        assert_eq!(app.event_count().await, before, "{path}: conflicts record nothing");
    }

    // A key belongs to one operation: reusing a customer's key on a warehouse is a conflict.
    let key = format!("k-{}", Uuid::now_v7());
    let depot =
        json(post_keyed(&app, "/api/v1/customers", &app.api_key, &key, &json!({"name": "Depósito"})).await, 201).await;
    let conflict = error(
        post_keyed(&app, "/api/v1/warehouses", &app.api_key, &key, &json!({"name": "Depósito"})).await,
        409,
        "idempotency_error",
    )
    .await;
    assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT");
    // So is a replacement the gateway refuses under it: a body its parser refuses, or an id that names
    // nothing (otherwise 400 and 404).
    let customer_path = format!("/api/v1/customers/{}", depot["data"]["id"].as_str().expect("id"));
    let replacements =
        [(customer_path.as_str(), json!({"name": ""})), ("/api/v1/warehouses/not-a-uuid", json!({"name": "Sur"}))];
    for (path, body) in replacements {
        let headers = [("Idempotency-Key", key.as_str())];
        let replaced = send(&app, Method::PUT, path, Some(&app.api_key), Some(&body), &headers).await;
        let conflict = error(replaced, 409, "idempotency_error").await;
        assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT", "{path}: {conflict}");
    }

    // A request that fails validation, or is rejected by the worker, stores nothing under its key: the
    // corrected request with the same key then succeeds.
    let before = app.event_count().await;
    let key = format!("k-{}", Uuid::now_v7());
    error(
        post_keyed(&app, "/api/v1/customers", &app.api_key, &key, &json!({"name": ""})).await,
        400,
        "invalid_request_error",
    )
    .await;
    let unknown_account = json!({"name": "Bea", "default_account_id": Uuid::now_v7()});
    error(
        post_keyed(&app, "/api/v1/customers", &app.api_key, &key, &unknown_account).await,
        404,
        "invalid_request_error",
    )
    .await;
    assert_eq!(app.event_count().await, before);
    let stored: i64 = sqlx::query_scalar("select count(*) from idempotency_keys where org_id = $1 and key = $2")
        .bind(org)
        .bind(&key)
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(stored, 0, "failed requests store no outcome");
    let bea = json(post_keyed(&app, "/api/v1/customers", &app.api_key, &key, &json!({"name": "Bea"})).await, 201).await;
    assert_eq!(bea["data"]["name"], "Bea");

    // The same key in another organization is another request altogether.
    let (_, other_key) = app.other_org().await;
    let theirs =
        json(post_keyed(&app, "/api/v1/customers", &other_key, &key, &json!({"name": "Bea"})).await, 201).await;
    assert_ne!(theirs["data"]["id"], bea["data"]["id"]);
    let theirs_again =
        json(post_keyed(&app, "/api/v1/customers", &other_key, &key, &json!({"name": "Bea"})).await, 201).await;
    assert_eq!(theirs_again, theirs);
    let ours_again =
        json(post_keyed(&app, "/api/v1/customers", &app.api_key, &key, &json!({"name": "Bea"})).await, 201).await;
    assert_eq!(ours_again, bea);

    // Malformed keys are refused before anything happens; 255 visible characters are fine.
    let before = app.event_count().await;
    for bad in ["has space".to_owned(), "x".repeat(256), "y".repeat(300)] {
        let body = error(
            post_keyed(&app, "/api/v1/customers", &app.api_key, &bad, &json!({"name": "Clave mala"})).await,
            400,
            "invalid_request_error",
        )
        .await;
        assert_eq!(detail_fields(&body), vec!["Idempotency-Key"], "{bad:?}: {body}");
    }
    assert_eq!(app.event_count().await, before, "refused keys record nothing");
    json(
        post_keyed(&app, "/api/v1/customers", &app.api_key, &"z".repeat(255), &json!({"name": "Clave larga"})).await,
        201,
    )
    .await;
}

#[sqlx::test(migrations = "../schema")]
async fn concurrent_requests_with_one_key_create_exactly_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let before = count_events(&app.pool, org, "CustomerCreated").await;
    let key = format!("concurrent-{}", Uuid::now_v7());
    let body = json!({"name": "Concurrente", "phone": "1144556677"});
    let responses = futures::future::join_all(
        (0..50).map(|_| async { parts(post_keyed(&app, "/api/v1/customers", &app.api_key, &key, &body).await).await }),
    )
    .await;
    assert_eq!(count_events(&app.pool, org, "CustomerCreated").await, before + 1, "exactly one customer created");

    let mut created: Option<String> = None;
    let mut in_progress = 0;
    for (status, _, text) in &responses {
        match status {
            201 => match &created {
                Some(first) => assert_eq!(text, first, "every 201 carries the same outcome"),
                None => created = Some(text.clone()),
            },
            409 => {
                let body: Value = serde_json::from_str(text).expect("json");
                assert_eq!(body["error"]["type"], "idempotency_error", "{body}");
                assert_eq!(body["error"]["code"], "IDEMPOTENCY_IN_PROGRESS", "{body}");
                assert_eq!(body["error"]["retryable"], true, "{body}");
                in_progress += 1;
            }
            other => panic!("unexpected {other}: {text}"),
        }
    }
    let created = created.expect("at least one request was answered 201");
    // Retrying (as a 409 IDEMPOTENCY_IN_PROGRESS invites) returns the stored outcome.
    let (status, _, retried) = parts(post_keyed(&app, "/api/v1/customers", &app.api_key, &key, &body).await).await;
    assert_eq!((status, &retried), (201, &created), "{in_progress} in progress, then the stored outcome");
    let list = json(app.get("/api/v1/customers").await, 200).await;
    let named = list["data"].as_array().expect("data").iter().filter(|c| c["name"] == "Concurrente").count();
    assert_eq!(named, 1);
    assert_eq!(count_events(&app.pool, org, "CustomerCreated").await, before + 1);
}

#[sqlx::test(migrations = "../schema")]
async fn scopes_are_checked_again_when_an_idempotent_request_is_retried(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let reader = key_with(&app, org, &["customers:read", "warehouses:read"]).await;
    let writer_without_treasury = key_with(&app, org, &["customers:read", "customers:write"]).await;
    let writer = key_with(&app, org, &["customers:write", "treasury:write", "warehouses:write"]).await;
    let account = ledger_accounts(&app.pool, org).await[0];

    let customer_key = format!("k-{}", Uuid::now_v7());
    let body = json!({"name": "Con permiso", "default_account_id": account});
    let first = json(post_keyed(&app, "/api/v1/customers", &app.api_key, &customer_key, &body).await, 201).await;
    let before = app.event_count().await;
    let refused =
        error(post_keyed(&app, "/api/v1/customers", &reader, &customer_key, &body).await, 403, "authorization_error")
            .await;
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("customers:write")), "{refused}");
    let refused = error(
        post_keyed(&app, "/api/v1/customers", &writer_without_treasury, &customer_key, &body).await,
        403,
        "authorization_error",
    )
    .await;
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("treasury:write")), "{refused}");

    let warehouse_key = format!("k-{}", Uuid::now_v7());
    let warehouse = json!({"name": "Depósito con permiso"});
    let stored =
        json(post_keyed(&app, "/api/v1/warehouses", &app.api_key, &warehouse_key, &warehouse).await, 201).await;
    let refused = error(
        post_keyed(&app, "/api/v1/warehouses", &reader, &warehouse_key, &warehouse).await,
        403,
        "authorization_error",
    )
    .await;
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("warehouses:write")), "{refused}");
    assert_eq!(app.event_count().await, before + 1, "only the permitted warehouse was written");

    // A permitted credential of the organization still gets the stored outcomes.
    assert_eq!(json(post_keyed(&app, "/api/v1/customers", &writer, &customer_key, &body).await, 201).await, first);
    assert_eq!(
        json(post_keyed(&app, "/api/v1/warehouses", &writer, &warehouse_key, &warehouse).await, 201).await,
        stored
    );
    assert_eq!(app.event_count().await, before + 1);
}

// ---------------------------------------------------------------------------------------------------
// 4. Rate limits
// ---------------------------------------------------------------------------------------------------

/// One burst of sequential requests, round-robin over `(base, key)` targets.
struct Burst {
    statuses: Vec<u16>,
    /// The first 429 answer: its headers and body.
    limited: Option<(HeaderMap, Value)>,
    /// `RateLimit` headers of the admitted answers, in order.
    admitted_remaining: Vec<u32>,
    /// Whether the whole burst fell in one rate-limit minute (exact counts only hold then).
    one_minute: bool,
}

impl Burst {
    fn admitted(&self) -> usize {
        self.statuses.iter().filter(|s| **s != 429).count()
    }
}

async fn burst(app: &TestApp, targets: &[(&str, &str)], requests: usize) -> Burst {
    let start = current_minute();
    let mut result = Burst { statuses: Vec::new(), limited: None, admitted_remaining: Vec::new(), one_minute: false };
    for i in 0..requests {
        let (base, key) = targets[i % targets.len()];
        let (status, headers, text) =
            parts(send_at(app, base, Method::GET, "/api/v1/tax-rates", Some(key), None, &[]).await).await;
        assert!(status == 200 || status == 429, "{status}: {text}");
        assert!(header(&headers, "ratelimit-policy").is_some(), "RateLimit-Policy on {status}");
        let rate_limit = header(&headers, "ratelimit").unwrap_or_else(|| panic!("RateLimit on {status}"));
        if status == 200 {
            result.admitted_remaining.push(remaining(rate_limit));
        } else if result.limited.is_none() {
            let body: Value = serde_json::from_str(&text).expect("json");
            result.limited = Some((headers.clone(), body));
        }
        result.statuses.push(status);
    }
    result.one_minute = current_minute() == start;
    result
}

/// Asserts a 429 answer of an organization limited to `per_minute` and `per_hour`, whose `window`
/// (`minute` or `hour`) is used up.
fn assert_rate_limited(headers: &HeaderMap, body: &Value, window: &str, per_minute: u32, per_hour: u32) {
    assert_eq!(body["error"]["type"], "rate_limit_error", "{body}");
    assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}");
    assert_eq!(body["error"]["retryable"], true, "{body}");
    assert_eq!(header(headers, "service-request-id"), body["request_id"].as_str());
    let retry_after: u64 = header(headers, "retry-after").and_then(|v| v.parse().ok()).expect("numeric Retry-After");
    let window_seconds = if window == "minute" { 60 } else { 3600 };
    assert!((1..=window_seconds).contains(&retry_after), "Retry-After {retry_after}");
    assert_eq!(
        header(headers, "ratelimit-policy"),
        Some(format!("\"minute\";q={per_minute};w=60, \"hour\";q={per_hour};w=3600").as_str())
    );
    let rate_limit = header(headers, "ratelimit").expect("RateLimit");
    assert_eq!(rate_limit, format!("\"{window}\";r=0;t={retry_after}"), "RateLimit agrees with Retry-After");
}

/// Runs `scenario` (which makes its own organization) until one run falls inside one rate-limit
/// minute, so a window turning mid-burst cannot make exact counts flaky.
macro_rules! within_one_minute {
    ($scenario:expr) => {{
        let mut attempts = 0;
        loop {
            let burst = $scenario.await;
            attempts += 1;
            if burst.one_minute || attempts == 3 {
                break burst;
            }
        }
    }};
}

#[sqlx::test(migrations = "../schema")]
async fn the_minute_quota_is_enforced_with_retry_after_and_rate_limit_headers(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let limits = RateLimits { per_minute: 5, per_hour: 1000 };
    let run = || async {
        let created = admin::create_organization_with(&app.pool, "Limitada", limits).await.expect("org");
        burst(&app, &[(&app.base, &created.api_key)], 12).await
    };
    let burst = within_one_minute!(run());
    assert!(burst.statuses.contains(&429), "{:?}", burst.statuses);
    assert!(burst.admitted() <= 10, "at most two windows' worth: {:?}", burst.statuses);
    let (headers, body) = burst.limited.as_ref().expect("a 429");
    assert_rate_limited(headers, body, "minute", 5, 1000);
    if burst.one_minute {
        assert_eq!(burst.statuses, [[200; 5].as_slice(), &[429; 7]].concat(), "the 6th request is refused");
        assert_eq!(burst.admitted_remaining, vec![4, 3, 2, 1, 0], "RateLimit counts down");
    }

    // Every authenticated answer carries the headers, whatever its status.
    let reader = key_with(&app, org_id(&app).await, &["customers:read"]).await;
    let checks: Vec<(Response, u16)> = vec![
        (app.get("/api/v1/customers").await, 200),
        (app.post("/api/v1/customers", &json!({"name": "Con cabeceras"})).await, 201),
        (app.post("/api/v1/customers", &json!({"name": ""})).await, 400),
        (send(&app, Method::POST, "/api/v1/customers", Some(&reader), Some(&json!({"name": "X"})), &[]).await, 403),
        (app.get(&format!("/api/v1/customers/{}", Uuid::now_v7())).await, 404),
        (app.get("/api/v1/nothing-here").await, 404),
        (app.get("/api/v2/warehouses").await, 200),
        (
            send(
                &app,
                Method::GET,
                "/api/v1/customers",
                Some(&app.api_key),
                None,
                &[("Service-Version", "1999-01-01")],
            )
            .await,
            400,
        ),
    ];
    for (response, status) in checks {
        let url = response.url().path().to_owned();
        let (actual, headers, text) = parts(response).await;
        assert_eq!(actual, status, "{url}: {text}");
        let policy =
            header(&headers, "ratelimit-policy").unwrap_or_else(|| panic!("{url} {status}: no RateLimit-Policy"));
        assert!(policy.starts_with("\"minute\";q=1000000;w=60"), "{policy}");
        assert!(header(&headers, "ratelimit").is_some_and(|v| v.starts_with("\"")), "{url} {status}: no RateLimit");
    }
}

#[sqlx::test(migrations = "../schema")]
async fn all_credentials_of_an_organization_share_its_quota(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let limits = RateLimits { per_minute: 5, per_hour: 1000 };
    let run = || async {
        let created = admin::create_organization_with(&app.pool, "Compartida", limits).await.expect("org");
        let second = key_with(&app, created.organization_id, &["customers:read"]).await;
        burst(&app, &[(&app.base, &created.api_key), (&app.base, &second)], 12).await
    };
    let burst = within_one_minute!(run());
    assert!(burst.statuses.contains(&429), "{:?}", burst.statuses);
    assert!(burst.admitted() <= 10, "{:?}", burst.statuses);
    if burst.one_minute {
        assert_eq!(burst.admitted(), 5, "two keys together get one quota: {:?}", burst.statuses);
    }
    // Another organization is unaffected.
    json(app.get("/api/v1/tax-rates").await, 200).await;
}

#[sqlx::test(migrations = "../schema")]
async fn raising_an_organizations_limit_takes_effect_in_the_gateway(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let created = admin::create_organization_with(&app.pool, "Ampliable", RateLimits { per_minute: 3, per_hour: 1000 })
        .await
        .expect("org");
    let target = [(app.base.as_str(), created.api_key.as_str())];
    let first = burst(&app, &target, 8).await;
    assert!(first.statuses.contains(&429), "{:?}", first.statuses);

    admin::set_rate_limits(&app.pool, created.organization_id, RateLimits { per_minute: 1000, per_hour: 5000 })
        .await
        .expect("limits");
    eventually(Duration::from_secs(5), "the gateway applies the new limits", || async {
        let response = send(&app, Method::GET, "/api/v1/tax-rates", Some(&created.api_key), None, &[]).await;
        let (status, headers, _) = parts(response).await;
        let policy = header(&headers, "ratelimit-policy").unwrap_or_default().to_owned();
        (status == 200 && policy == "\"minute\";q=1000;w=60, \"hour\";q=5000;w=3600").then_some(())
    })
    .await;
    let after = burst(&app, &target, 10).await;
    assert_eq!(after.statuses, vec![200; 10], "well under the new limit");
}

#[sqlx::test(migrations = "../schema")]
async fn gateways_share_an_organizations_quota(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (second_base, _second) = second_gateway(&app).await;
    // Watch the gateways' count broadcasts, to know when the second one has heard of the first's.
    let mut broadcasts = watch_broadcasts(&app).await;

    const LIMIT: u32 = 6;
    let mut outcome = None;
    for _ in 0..3 {
        let created = admin::create_organization_with(
            &app.pool,
            "Dos pasarelas",
            RateLimits { per_minute: LIMIT as i32, per_hour: 1000 },
        )
        .await
        .expect("org");
        let start = current_minute();
        // The first half of the quota through the first gateway, the rest through the second.
        let half = LIMIT as usize / 2;
        let first = burst(&app, &[(&app.base, &created.api_key)], half).await;
        assert_eq!(first.admitted(), half, "{:?}", first.statuses);
        // Wait (by condition, not by time) until the first gateway has broadcast its full count; the
        // second gateway subscribes to the same broadcasts.
        assert!(
            broadcast_seen(&mut broadcasts, created.organization_id, Some(half), Duration::from_secs(5)).await,
            "the first gateway never broadcast its count"
        );
        let rest = burst(&app, &[(&second_base, &created.api_key)], 2 * LIMIT as usize).await;
        let admitted = first.admitted() + rest.admitted();
        let one_minute = current_minute() == start;
        outcome = Some((admitted, rest.statuses.clone(), one_minute));
        if one_minute {
            break;
        }
    }
    let (admitted, statuses, one_minute) = outcome.expect("ran");
    assert!(statuses.contains(&429), "the second gateway refuses once the shared quota is used: {statuses:?}");
    assert!(admitted < 2 * LIMIT as usize, "{admitted} admitted: {statuses:?}");
    if one_minute {
        assert!(
            admitted <= LIMIT as usize + 1,
            "limit {LIMIT} plus a broadcast's margin, got {admitted}: {statuses:?}"
        );
    }
}

#[sqlx::test(migrations = "../schema")]
async fn a_gateway_started_later_honours_the_quota_already_used(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut broadcasts = watch_broadcasts(&app).await;
    const LIMIT: usize = 5;
    let mut outcome = None;
    for _ in 0..3 {
        let limits = RateLimits { per_minute: LIMIT as i32, per_hour: 1000 };
        let created = admin::create_organization_with(&app.pool, "Pasarela tardía", limits).await.expect("org");
        let start = current_minute();
        // The whole quota is used through the first gateway, which then refuses.
        let first = burst(&app, &[(&app.base, &created.api_key)], LIMIT + 2).await;
        assert!(
            broadcast_seen(&mut broadcasts, created.organization_id, Some(LIMIT), Duration::from_secs(5)).await,
            "the first gateway never broadcast its count"
        );
        // A gateway starting now (a deploy, a restart) gets a fair chance to learn the counts: up to a
        // second (twenty broadcast intervals) for any further broadcast about the organization.
        let (second_base, second) = second_gateway(&app).await;
        let _ = broadcast_seen(&mut broadcasts, created.organization_id, None, Duration::from_secs(1)).await;
        let rest = burst(&app, &[(&second_base, &created.api_key)], 2 * LIMIT).await;
        drop(second);
        let one_minute = current_minute() == start;
        outcome = Some((first.admitted(), rest.admitted(), rest.statuses, one_minute));
        if one_minute {
            break;
        }
    }
    let (first, later, statuses, one_minute) = outcome.expect("ran");
    if one_minute {
        assert_eq!(first, LIMIT, "the first gateway admits the limit");
        assert!(
            first + later <= LIMIT + 1,
            "limit {LIMIT}: the first gateway admitted {first}, the later one {later} more: {statuses:?}"
        );
    }
}

#[sqlx::test(migrations = "../schema")]
async fn the_hour_quota_is_enforced_and_reported(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let limits = RateLimits { per_minute: 100, per_hour: 3 };
    let hour = || SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs() / 3600;
    let mut attempts = 0;
    let (burst, one_hour) = loop {
        let start = hour();
        let created = admin::create_organization_with(&app.pool, "Por hora", limits).await.expect("org");
        let burst = burst(&app, &[(&app.base, &created.api_key)], 6).await;
        attempts += 1;
        let one_hour = hour() == start;
        if one_hour || attempts == 3 {
            break (burst, one_hour);
        }
    };
    assert!(burst.statuses.contains(&429), "{:?}", burst.statuses);
    if one_hour {
        assert_eq!(burst.statuses, vec![200, 200, 200, 429, 429, 429]);
        assert_eq!(burst.admitted_remaining, vec![2, 1, 0], "the hour is the tightest window");
    }
    let (headers, body) = burst.limited.as_ref().expect("a 429");
    assert_rate_limited(headers, body, "hour", 100, 3);
}

// ---------------------------------------------------------------------------------------------------
// 5. Service-Version
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn an_unsupported_service_version_is_refused_naming_the_supported_one(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = app.event_count().await;
    for version in ["2020-01-01", "2026-08-21", "latest"] {
        for (method, path, body) in [
            (Method::GET, "/api/v1/customers", None),
            (Method::POST, "/api/v1/customers", Some(json!({"name": "Versionada"}))),
            (Method::POST, "/api/v1/warehouses", Some(json!({"name": "Versionado"}))),
        ] {
            let response =
                send(&app, method, path, Some(&app.api_key), body.as_ref(), &[("Service-Version", version)]).await;
            let body = error(response, 400, "invalid_request_error").await;
            assert_eq!(body["error"]["code"], "UNSUPPORTED_VERSION", "{body}");
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("2026-08-20"), "names the supported version: {body}");
            assert_eq!(detail_fields(&body), vec!["Service-Version"], "{body}");
        }
    }
    assert_eq!(app.event_count().await, before, "refused versions write nothing");
    // The v2 surface answers in its own envelope.
    let response =
        send(&app, Method::GET, "/api/v2/warehouses", Some(&app.api_key), None, &[("Service-Version", "2020-01-01")])
            .await;
    v2_error(response, 400, "UNSUPPORTED_VERSION").await;

    // The supported version is accepted everywhere.
    let supported = [("Service-Version", "2026-08-20")];
    json(send(&app, Method::GET, "/api/v1/customers", Some(&app.api_key), None, &supported).await, 200).await;
    let created = json(
        send(
            &app,
            Method::POST,
            "/api/v1/customers",
            Some(&app.api_key),
            Some(&json!({"name": "Fechada"})),
            &supported,
        )
        .await,
        201,
    )
    .await;
    assert_eq!(created["data"]["name"], "Fechada");
    json(send(&app, Method::GET, "/api/v2/warehouses", Some(&app.api_key), None, &supported).await, 200).await;
}

// ---------------------------------------------------------------------------------------------------
// 6. Error envelopes and request ids
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn v2_failures_use_the_v2_envelope_and_every_response_names_its_request_id(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    // v2: unknown route, wrong method, no credential, bad parameters.
    let body = v2_error(app.get("/api/v2/nothing-here").await, 404, "ROUTE_NOT_FOUND").await;
    assert_eq!(body["error"]["retryable"], false);
    assert_eq!(body["error"]["details"], json!([]));
    v2_error(
        app.request(Method::DELETE, "/api/v2/warehouses", Some(&app.api_key), None).await,
        405,
        "METHOD_NOT_ALLOWED",
    )
    .await;
    v2_error(app.request(Method::GET, "/api/v2/warehouses", None, None).await, 401, "UNAUTHENTICATED").await;
    let body = v2_error(app.get("/api/v2/warehouses?page=0&limit=500").await, 400, "INVALID_PARAMETERS").await;
    let paths: Vec<&str> =
        body["error"]["details"].as_array().expect("details").iter().filter_map(|d| d["path"].as_str()).collect();
    assert_eq!(paths, vec!["page", "limit"], "{body}");
    let reader = key_with(&app, org_id(&app).await, &["customers:read"]).await;
    v2_error(app.request(Method::GET, "/api/v2/warehouses", Some(&reader), None).await, 403, "MISSING_SCOPE").await;

    // Successes and failures of both surfaces: the header always, equal to the body's id when it has one.
    let created = app.post("/api/v1/customers", &json!({"name": "Con id"})).await;
    let (status, created) = with_request_id(created).await;
    assert_eq!(status, 201);
    let path = format!("/api/v1/customers/{}", created["data"]["id"].as_str().expect("id"));
    let cases: Vec<(Response, u16, &str)> = vec![
        (app.get("/api/v1/customers").await, 200, "request_id"),
        (app.get("/api/v1/organization").await, 200, "request_id"),
        (app.get(&path).await, 200, ""),
        (app.get("/api/v2/warehouses").await, 200, "requestId"),
        (app.get("/api/v1/nothing-here").await, 404, "request_id"),
        (app.get("/api/v2/nothing-here").await, 404, "requestId"),
        (app.request(Method::GET, "/api/v1/customers", None, None).await, 401, "request_id"),
        (app.post("/api/v1/customers", &json!({"name": ""})).await, 400, "request_id"),
        (app.request(Method::GET, "/healthz", None, None).await, 200, ""),
        (app.request(Method::GET, "/openapi.json", None, None).await, 200, ""),
    ];
    let mut ids = Vec::new();
    for (response, status, field) in cases {
        let url = response.url().path().to_owned();
        let id = header(response.headers(), "service-request-id").map(str::to_owned);
        let (actual, body) = with_request_id(response).await;
        assert_eq!(actual, status, "{url}: {body}");
        if !field.is_empty() {
            assert!(body[field].is_string(), "{url} names its request id in {field}: {body}");
        }
        ids.push(id.expect("header"));
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "every response has its own id");
}

// ---------------------------------------------------------------------------------------------------
// 7. Cursors
// ---------------------------------------------------------------------------------------------------

/// Replaces the character at `index` with another one of the base64url alphabet.
fn flip(text: &str, index: usize) -> String {
    text.char_indices().map(|(i, c)| if i == index { if c == 'A' { 'B' } else { 'A' } } else { c }).collect()
}

#[sqlx::test(migrations = "../schema")]
async fn cursors_are_bound_to_their_list_and_cannot_be_tampered_with(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    json(app.post("/api/v1/warehouses", &json!({"name": "Depósito dos"})).await, 201).await;
    json(app.post("/api/v1/payment-methods", &json!({"name": "Tarjeta"})).await, 201).await;
    let page = json(app.get("/api/v1/warehouses?limit=1").await, 200).await;
    assert_eq!(page["has_more"], true, "{page}");
    let cursor = page["next_cursor"].as_str().expect("cursor").to_owned();
    let next = json(app.get(&format!("/api/v1/warehouses?limit=1&cursor={cursor}")).await, 200).await;
    assert_ne!(next["data"][0]["id"], page["data"][0]["id"], "the genuine cursor pages on");

    // A warehouse cursor means nothing to another list.
    for other in ["/api/v1/payment-methods", "/api/v1/customers", "/api/v1/points-of-sale", "/api/v1/tax-rates"] {
        let body =
            error(app.get(&format!("{other}?limit=1&cursor={cursor}")).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&body), vec!["cursor"], "{other}: {body}");
    }

    // Any altered character is detected, in the payload or in the signature.
    let dot = cursor.find('.').expect("payload.signature");
    for index in [0, dot / 2, dot - 1, dot + 1, cursor.len() - 1] {
        let tampered = flip(&cursor, index);
        assert_ne!(tampered, cursor);
        let body = error(
            app.get(&format!("/api/v1/warehouses?limit=1&cursor={tampered}")).await,
            400,
            "invalid_request_error",
        )
        .await;
        assert_eq!(detail_fields(&body), vec!["cursor"], "index {index}: {body}");
    }
    // A cursor with the signature of another list's cursor is refused as well.
    let methods = json(app.get("/api/v1/payment-methods?limit=1").await, 200).await;
    let method_cursor = methods["next_cursor"].as_str().expect("cursor");
    let spliced = format!(
        "{}.{}",
        cursor.split('.').next().expect("payload"),
        method_cursor.split('.').nth(1).expect("signature")
    );
    error(app.get(&format!("/api/v1/warehouses?cursor={spliced}")).await, 400, "invalid_request_error").await;
}

// ---------------------------------------------------------------------------------------------------
// 8. The served OpenAPI document
// ---------------------------------------------------------------------------------------------------

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

#[sqlx::test(migrations = "../schema")]
async fn the_served_openapi_document_declares_scopes_idempotency_and_errors_truthfully(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let spec = json(app.request(Method::GET, "/openapi.json", None, None).await, 200).await;

    let bearer = &spec["components"]["securitySchemes"]["bearerAuth"];
    assert_eq!(bearer["type"], "http", "{bearer}");
    assert_eq!(bearer["scheme"], "bearer", "{bearer}");

    let paths = spec["paths"].as_object().expect("paths");
    assert!(!paths.is_empty());
    let mut operations = 0;
    for (path, item) in paths {
        for method in METHODS {
            let Some(operation) = item.get(method) else { continue };
            operations += 1;
            let id = operation["operationId"].as_str().unwrap_or("?");
            let scopes = operation["x-required-scopes"]
                .as_array()
                .unwrap_or_else(|| panic!("{id}: x-required-scopes is an array"));
            assert!(scopes.iter().all(Value::is_string), "{id}");
            let idempotency = operation["x-idempotency"].as_str().unwrap_or_else(|| panic!("{id}: x-idempotency"));
            assert!(["required", "optional", "not_used"].contains(&idempotency), "{id}: {idempotency}");
            let security = operation["security"].as_array().unwrap_or_else(|| panic!("{id}: security"));
            assert!(security.iter().any(|s| s.get("bearerAuth").is_some()), "{id}: bearerAuth");
            for status in ["400", "401", "429"] {
                assert!(operation["responses"].get(status).is_some(), "{id} documents {status}");
            }
            let key_parameter = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["in"] == "header" && p["name"] == "Idempotency-Key");
            // A read may be a POST (a report query with a body): what makes a write is its command.
            let writes = api::http::operations::Operation::from_id(id).is_some_and(|o| o.command().is_some());
            if method == "get" || !writes {
                assert_eq!(idempotency, "not_used", "{id}");
                assert!(key_parameter.is_none(), "{id}: reads take no Idempotency-Key");
            } else {
                let parameter =
                    key_parameter.unwrap_or_else(|| panic!("{method} {path} ({id}) documents Idempotency-Key"));
                assert_ne!(idempotency, "not_used", "{id}");
                let required = parameter["required"].as_bool().unwrap_or(false);
                assert_eq!(required, idempotency == "required", "{id}: the parameter's required flag");
                assert!(!scopes.is_empty(), "{id}: writes need a scope");
            }
        }
    }
    assert!(operations >= 20, "{operations} operations");

    // The published scopes are the enforced ones: for each parameterless read, a key with exactly the
    // published scopes is admitted, and one with every other scope is refused naming the scope. Built
    // from the whole list, that key lacks the published scopes whatever scopes later operations use.
    // Reads that publish none admit any credential, even one with a single scope.
    let single = key_with(&app, org, &[Scope::ALL[0].as_str()]).await;
    for (path, item) in paths.iter().filter(|(path, _)| !path.contains('{')) {
        let Some(operation) = item.get("get") else { continue };
        let id = operation["operationId"].as_str().unwrap_or("?");
        let published: Vec<&str> =
            operation["x-required-scopes"].as_array().expect("array").iter().filter_map(Value::as_str).collect();
        if published.is_empty() {
            let any = send(&app, Method::GET, path, Some(&single), None, &[]).await;
            assert_eq!(any.status().as_u16(), 200, "{id}: any credential");
            continue;
        }
        let others: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).filter(|s| !published.contains(s)).collect();
        let without = send(&app, Method::GET, path, Some(&key_with(&app, org, &others).await), None, &[]).await;
        let refused = if path.starts_with("/api/v2") {
            v2_error(without, 403, "MISSING_SCOPE").await
        } else {
            error(without, 403, "authorization_error").await
        };
        for scope in &published {
            assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains(scope)), "{id}: {refused}");
        }
        let exact = key_with(&app, org, &published).await;
        let admitted = send(&app, Method::GET, path, Some(&exact), None, &[]).await;
        assert_eq!(admitted.status().as_u16(), 200, "{id} with {published:?}");
    }
}

/// Postgres cannot store U+0000 in text: a body or a query parameter holding it is refused with a 400
/// naming each field, before anything is written (it used to reach the database and answer 500).
#[sqlx::test(migrations = "../schema")]
async fn the_nul_character_is_refused_naming_each_field_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = app.event_count().await;
    let tag = error(app.post("/api/v1/tags", &json!({"name": "vip\u{0}"})).await, 400, "invalid_request_error").await;
    assert_eq!(tag["error"]["code"], "INVALID_CHARACTERS");
    assert_eq!(detail_fields(&tag), ["name"]);
    let nested = json!({"name": "Ana", "address": "Calle\u{0}", "province": "B"});
    let customer = error(app.post("/api/v1/customers", &nested).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&customer), ["address"]);
    let search = error(app.get("/api/v1/products?query=a%00b&limit=5").await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&search), ["query"]);
    assert_eq!(app.event_count().await, before);
}
