//! Webhooks end to end: endpoints over the API, the sender as an event subscriber, and deliveries to a
//! real HTTPS receiver that trusts nothing but its own CA.

use crate::helpers::{TestApp, error, json};
use crate::receiver::{Receiver, Reply};
use commands::organization::{self as admin, Delegation};
use hmac::{Hmac, KeyInit, Mac};
use projections::webhooks::dispatch::{self, SenderConfig};
use reqwest::{Method, Response};
use serde_json::{Value, json};
use sha2::Sha256;
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

const VERSION: &str = "2026-06-29";

/// A sender tuned for tests: fast retries and polls, loopback allowed, the receiver's CA trusted.
pub(crate) fn sender(receiver: &Receiver) -> SenderConfig {
    SenderConfig {
        retry_schedule: dispatch::parse_schedule("100ms,100ms,100ms").expect("schedule"),
        allow_private: dispatch::parse_networks("127.0.0.0/8,::1").expect("networks"),
        ca_file: Some(receiver.ca_file.clone()),
        timeout: Duration::from_secs(3),
        lease: Duration::from_secs(5),
        poll: Duration::from_millis(50),
        ..SenderConfig::default()
    }
}

async fn keyed(app: &TestApp, key: &str, method: Method, path: &str, body: Option<&Value>) -> Response {
    let mut request = app.client.request(method, format!("{}{path}", app.base)).bearer_auth(key);
    request = request.header("Idempotency-Key", Uuid::now_v7().to_string());
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.expect("request sent")
}

/// Creates an endpoint and returns (id, signing secret).
async fn create_endpoint(app: &TestApp, url: &str, events: &[&str]) -> (String, String) {
    let body = json!({"label": "Tienda", "url": url, "enabled_events": events, "api_version": VERSION});
    let created =
        json(keyed(app, &app.api_key, Method::POST, "/api/v1/webhook-endpoints", Some(&body)).await, 201).await;
    let id = created["data"]["id"].as_str().expect("id").to_owned();
    let secret = created["data"]["signing_secret"].as_str().expect("secret").to_owned();
    (id, secret)
}

async fn operation(app: &TestApp, id: &str, op: &str) -> Response {
    keyed(app, &app.api_key, Method::POST, &format!("/api/v1/webhook-endpoints/{id}/{op}"), None).await
}

fn verifies(secret: &str, received: &crate::receiver::Received) -> bool {
    let header = received.header("service-signature");
    let Some((t, v1)) = header.split_once(",v1=") else { return false };
    let Some(t) = t.strip_prefix("t=") else { return false };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(format!("{t}.{}", received.body).as_bytes());
    hex::decode(v1).is_ok_and(|sig| mac.verify_slice(&sig).is_ok())
}

/// Deliveries of an endpoint as the API shows them.
async fn history(app: &TestApp, id: &str) -> Vec<Value> {
    let list = json(app.get(&format!("/api/v1/webhook-endpoints/{id}/deliveries")).await, 200).await;
    list["data"].as_array().expect("data").clone()
}

/// Waits until the endpoint's history satisfies `done`.
async fn history_until(app: &TestApp, id: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = history(app, id).await;
        if done(&got) {
            return got;
        }
        assert!(tokio::time::Instant::now() < deadline, "history never matched: {got:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[sqlx::test(migrations = "../schema")]
async fn deliveries_are_signed_and_carry_the_spec_envelope(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    let (first, secret) = create_endpoint(&app, &receiver.url("/first"), &["webhook_endpoint.disabled"]).await;
    let (second, _) = create_endpoint(&app, &receiver.url("/second"), &["product.created"]).await;

    // A test delivery: synthetic, signed, with the envelope and headers.
    let tested = json(operation(&app, &first, "test").await, 200).await;
    let got = receiver.wait_for("/first", 1).await;
    let test = &got[0];
    assert!(verifies(&secret, test), "signature verifies: {test:?}");
    assert!(!verifies("whsec_wrong", test));
    let body = test.json();
    assert_eq!(body["type"], "webhook.test");
    assert_eq!(body["test"], true);
    assert_eq!(body["api_version"], VERSION);
    assert_eq!(body["organization_id"], app.org_id.to_string());
    assert_eq!(body["data"]["object"], json!({"object": "webhook_endpoint", "id": first}));
    assert!(body["created"].as_i64().is_some_and(|t| t > 1_700_000_000), "{body}");
    assert_eq!(body["id"], tested["data"]["id"], "the test id is the event id");
    assert_eq!(test.header("service-event-id"), body["id"].as_str().expect("id"));
    assert_eq!(test.header("service-event-type"), "webhook.test");
    assert_eq!(test.header("content-type"), "application/json");
    let (t, _) = test.header("service-signature").split_once(',').expect("t and v1");
    let t: i64 = t.trim_start_matches("t=").parse().expect("unix seconds");
    assert!((t - time::OffsetDateTime::now_utc().unix_timestamp()).abs() < 60);

    // Disabling the second endpoint tells the first, with the disabled endpoint as the object.
    json(operation(&app, &second, "disable").await, 200).await;
    let got = receiver.wait_for("/first", 2).await;
    let notice = got[1].json();
    assert_eq!(notice["type"], "webhook_endpoint.disabled");
    assert!(notice.get("test").is_none(), "business events carry no test flag: {notice}");
    assert_eq!(notice["data"]["object"]["id"], second);
    assert_eq!(notice["data"]["object"]["status"], "disabled");
    assert!(notice["data"]["object"].get("signing_secret").is_none());
    assert!(verifies(&secret, &got[1]));
    assert!(receiver.received("/second").is_empty(), "the disabled endpoint is not told about itself");

    // The history lists both deliveries with their attempts.
    let deliveries =
        history_until(&app, &first, |d| d.len() == 2 && d.iter().all(|x| x["status"] == "succeeded")).await;
    for delivery in &deliveries {
        assert_eq!(delivery["attempts"].as_array().expect("attempts").len(), 1, "{delivery}");
        assert_eq!(delivery["attempts"][0]["status_code"], 200);
    }
    let types: Vec<&str> = deliveries.iter().filter_map(|d| d["event_type"].as_str()).collect();
    assert_eq!(types, ["webhook_endpoint.disabled", "webhook.test"], "newest first");
}

#[sqlx::test(migrations = "../schema")]
async fn failures_are_retried_with_one_event_id_then_fail_for_good(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    receiver.script("/flaky", &[Reply::Status(500), Reply::Status(404)]);
    receiver.script("/broken", &[Reply::Status(503); 4]);
    receiver.script("/moved", &[Reply::Redirect; 4]);
    let (flaky, _) = create_endpoint(&app, &receiver.url("/flaky"), &["product.created"]).await;
    let (broken, _) = create_endpoint(&app, &receiver.url("/broken"), &["product.created"]).await;
    let (moved, _) = create_endpoint(&app, &receiver.url("/moved"), &["product.created"]).await;
    for id in [&flaky, &broken, &moved] {
        json(operation(&app, id, "test").await, 200).await;
    }

    let got = receiver.wait_for("/flaky", 3).await;
    let ids: Vec<&str> = got.iter().map(|r| r.header("service-event-id")).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "one event id on every attempt: {ids:?}");
    assert!(got.windows(2).all(|w| w[0].body == w[1].body), "the same body on every attempt");
    let done = history_until(&app, &flaky, |d| d.first().is_some_and(|x| x["status"] == "succeeded")).await;
    let codes: Vec<&Value> =
        done[0]["attempts"].as_array().expect("attempts").iter().map(|a| &a["status_code"]).collect();
    assert_eq!(codes, [&json!(500), &json!(404), &json!(200)]);

    // Four attempts (the first and three retries), then a final failure.
    let failed = history_until(&app, &broken, |d| d.first().is_some_and(|x| x["status"] == "failed")).await;
    assert_eq!(failed[0]["attempts"].as_array().expect("attempts").len(), 4, "{failed:?}");
    assert!(failed[0]["completed_at"].is_string());
    assert_eq!(receiver.received("/broken").len(), 4);

    // Redirects are failures and are never followed.
    let failed = history_until(&app, &moved, |d| d.first().is_some_and(|x| x["status"] == "failed")).await;
    assert!(failed[0]["attempts"].as_array().expect("attempts").iter().all(|a| a["status_code"] == 302));
    assert!(receiver.received("/moved-redirected").is_empty(), "redirect not followed");
}

#[sqlx::test(migrations = "../schema")]
async fn pause_keeps_the_queue_tests_still_go_and_resume_delivers(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    let (watcher, _) = create_endpoint(&app, &receiver.url("/watcher"), &["webhook_endpoint.disabled"]).await;
    let (other, _) = create_endpoint(&app, &receiver.url("/other"), &["product.created"]).await;

    let paused = json(operation(&app, &watcher, "pause").await, 200).await;
    assert_eq!(paused["data"]["status"], "paused");
    // A business event queues while paused; a test goes out regardless.
    json(operation(&app, &other, "disable").await, 200).await;
    json(operation(&app, &watcher, "test").await, 200).await;
    let got = receiver.wait_for("/watcher", 1).await;
    assert_eq!(got[0].json()["type"], "webhook.test", "only the test went out while paused");
    let queued = history_until(&app, &watcher, |d| d.len() == 2).await;
    let pending: Vec<&Value> = queued.iter().filter(|d| d["event_type"] == "webhook_endpoint.disabled").collect();
    assert_eq!(pending[0]["status"], "pending");
    assert!(pending[0]["attempts"].as_array().expect("attempts").is_empty(), "nothing was attempted while paused");

    let resumed = json(operation(&app, &watcher, "resume").await, 200).await;
    assert_eq!(resumed["data"]["status"], "active");
    let got = receiver.wait_for("/watcher", 2).await;
    assert_eq!(got[1].json()["type"], "webhook_endpoint.disabled");
    assert_eq!(got[1].json()["data"]["object"]["id"], other);
}

#[sqlx::test(migrations = "../schema")]
async fn rotation_invalidates_the_previous_secret_at_once(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    let (id, old) = create_endpoint(&app, &receiver.url("/rotating"), &["product.created"]).await;
    let rotated = json(operation(&app, &id, "rotate-secret").await, 200).await;
    let new = rotated["data"]["signing_secret"].as_str().expect("new secret").to_owned();
    assert_ne!(new, old);
    let shown = json(app.get(&format!("/api/v1/webhook-endpoints/{id}")).await, 200).await;
    assert!(shown["data"].get("signing_secret").is_none(), "reads never show the secret: {shown}");
    let listed = json(app.get("/api/v1/webhook-endpoints").await, 200).await;
    assert!(listed["data"][0].get("signing_secret").is_none(), "{listed}");

    // A replayed rotation returns the same secret and rotates nothing more.
    let rotate = format!("/api/v1/webhook-endpoints/{id}/rotate-secret");
    let once = json(app.keyed(Method::POST, &rotate, "rotacion-1", None).await, 200).await;
    let twice = json(app.keyed(Method::POST, &rotate, "rotacion-1", None).await, 200).await;
    assert_eq!(once["data"]["signing_secret"], twice["data"]["signing_secret"]);
    let new = once["data"]["signing_secret"].as_str().expect("new secret").to_owned();
    // A replayed test returns the same test and queues one delivery.
    let test = format!("/api/v1/webhook-endpoints/{id}/test");
    let first = json(app.keyed(Method::POST, &test, "prueba-1", None).await, 200).await;
    let again = json(app.keyed(Method::POST, &test, "prueba-1", None).await, 200).await;
    assert_eq!(first["data"]["id"], again["data"]["id"]);
    let got = receiver.wait_for("/rotating", 1).await;
    assert_eq!(history(&app, &id).await.len(), 1, "one delivery for a replayed test");
    assert!(verifies(&new, &got[0]), "signed with the new secret");
    assert!(!verifies(&old, &got[0]), "the previous secret no longer verifies");

    // Secrets are encrypted at rest: neither the events nor the read model hold them in clear.
    let stored: Vec<String> =
        sqlx::query_scalar("select data::text from events where stream_type = 'webhook_endpoint'")
            .fetch_all(&app.pool)
            .await
            .expect("events");
    assert!(stored.iter().all(|data| !data.contains(&new) && !data.contains(&old)), "no secret in clear");
    let ciphertexts: Vec<String> = sqlx::query_scalar("select secret_ciphertext from webhook_endpoints_view")
        .fetch_all(&app.pool)
        .await
        .expect("view");
    assert!(ciphertexts.iter().all(|c| !c.contains(&hex::encode(&new)) && !c.contains(&new)));
}

#[sqlx::test(migrations = "../schema")]
async fn disable_is_terminal_and_cancels_unsent_work(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    let (id, _) = create_endpoint(&app, &receiver.url("/ending"), &["webhook_endpoint.disabled"]).await;
    let (other, _) = create_endpoint(&app, &receiver.url("/other"), &["product.created"]).await;
    json(operation(&app, &id, "pause").await, 200).await;
    json(operation(&app, &other, "disable").await, 200).await;
    history_until(&app, &id, |d| d.len() == 1).await;

    let disabled = json(operation(&app, &id, "disable").await, 200).await;
    assert_eq!(disabled["data"]["status"], "disabled");
    let cancelled = history_until(&app, &id, |d| d.first().is_some_and(|x| x["status"] == "cancelled")).await;
    assert!(cancelled[0]["attempts"].as_array().expect("attempts").is_empty());

    for op in ["resume", "pause", "disable", "rotate-secret", "test"] {
        error(operation(&app, &id, op).await, 409, "business_error").await;
    }
    let patch = json!({"label": "Otra"});
    let path = format!("/api/v1/webhook-endpoints/{id}");
    error(keyed(&app, &app.api_key, Method::PATCH, &path, Some(&patch)).await, 409, "business_error").await;
    assert!(receiver.received("/ending").is_empty(), "nothing was ever sent to it");
}

#[sqlx::test(migrations = "../schema")]
async fn endpoint_requests_are_validated_and_idempotent(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = app.event_count().await;
    let cases = [
        (
            json!({"label": "x", "url": "http://example.com/hook", "enabled_events": ["product.created"], "api_version": VERSION}),
            "url",
        ),
        (
            json!({"label": "x", "url": "https://example.com/hook", "enabled_events": ["product.deleted"], "api_version": VERSION}),
            "enabled_events",
        ),
        (
            json!({"label": "x", "url": "https://example.com/hook", "enabled_events": ["webhook.test"], "api_version": VERSION}),
            "enabled_events",
        ),
        (
            json!({"label": "x", "url": "https://example.com/hook", "enabled_events": ["product.created"], "api_version": "1999-01-01"}),
            "api_version",
        ),
        (json!({"label": "x", "url": "https://example.com/hook", "api_version": VERSION}), "enabled_events"),
        (
            json!({"label": "x", "url": "https://user:pw@example.com/hook", "enabled_events": [], "api_version": VERSION}),
            "url",
        ),
        (
            json!({"label": "x", "url": "https://example.com/hook", "enabled_events": [], "api_version": VERSION, "status": "active"}),
            "status",
        ),
    ];
    for (body, field) in cases {
        let refused = error(
            keyed(&app, &app.api_key, Method::POST, "/api/v1/webhook-endpoints", Some(&body)).await,
            400,
            "invalid_request_error",
        )
        .await;
        let fields = crate::helpers::detail_fields(&refused);
        assert!(fields.iter().any(|f| f.starts_with(field)), "{field}: {refused}");
    }
    // The key is required.
    let body = json!({"label": "x", "url": "https://example.com/hook", "enabled_events": ["product.created"], "api_version": VERSION});
    let response = app.post("/api/v1/webhook-endpoints", &body).await;
    assert_eq!(response.status().as_u16(), 400);
    assert_eq!(app.event_count().await, before, "rejected requests record nothing");

    // A replay returns the same endpoint and secret; another body with that key conflicts.
    let send = |body: Value| {
        let app = &app;
        async move { app.post_key("/api/v1/webhook-endpoints", "alta-webhook-1", &body).await }
    };
    let first = json(send(body.clone()).await, 201).await;
    let again = json(send(body.clone()).await, 201).await;
    assert_eq!(first["data"]["id"], again["data"]["id"]);
    assert_eq!(first["data"]["signing_secret"], again["data"]["signing_secret"]);
    let mut other = body.clone();
    other["label"] = json!("y");
    error(send(other).await, 409, "idempotency_error").await;

    // The catalogue of event types, with versions and scopes.
    let types = json(app.get("/api/v1/webhook-event-types").await, 200).await;
    let find = |name: &str| types["data"].as_array().expect("data").iter().find(|t| t["type"] == name).cloned();
    assert_eq!(find("product.updated").expect("product.updated")["required_scope"], "products:read");
    assert_eq!(find("order.fulfilled").expect("order.fulfilled")["required_scope"], "orders:read");
    assert_eq!(find("sale.created").expect("sale.created")["version"], VERSION);
    assert_eq!(types["data"].as_array().expect("data").len(), 13);
}

#[sqlx::test(migrations = "../schema")]
async fn event_scopes_are_checked_and_grants_own_their_endpoints(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    let scopes = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let hooks_only =
        admin::create_api_key(&app.pool, app.org_id, &scopes(&["webhooks:read", "webhooks:write"])).await.expect("key");
    let body = |events: Value| json!({"label": "x", "url": receiver.url("/scoped"), "enabled_events": events, "api_version": VERSION});
    let path = "/api/v1/webhook-endpoints";
    for family in ["product.created", "order.created", "sale.updated"] {
        let refused = error(
            keyed(&app, &hooks_only, Method::POST, path, Some(&body(json!([family])))).await,
            403,
            "authorization_error",
        )
        .await;
        let needed = match family.split('.').next() {
            Some("product") => "products:read",
            Some("order") => "orders:read",
            _ => "sales:read",
        };
        assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains(needed)), "{refused}");
    }
    let created = json(
        keyed(&app, &hooks_only, Method::POST, path, Some(&body(json!(["webhook_endpoint.disabled"])))).await,
        201,
    )
    .await;
    let id = created["data"]["id"].as_str().expect("id").to_owned();
    let endpoint = format!("{path}/{id}");
    error(
        keyed(&app, &hooks_only, Method::PATCH, &endpoint, Some(&json!({"enabled_events": ["product.updated"]}))).await,
        403,
        "authorization_error",
    )
    .await;

    // Resume revalidates: an endpoint enabled for products cannot be resumed by a key without products:read.
    let (product_hook, _) = create_endpoint(&app, &receiver.url("/products"), &["product.updated"]).await;
    json(operation(&app, &product_hook, "pause").await, 200).await;
    error(
        keyed(&app, &hooks_only, Method::POST, &format!("{path}/{product_hook}/resume"), None).await,
        403,
        "authorization_error",
    )
    .await;
    json(operation(&app, &product_hook, "resume").await, 200).await;
    // Reads need webhooks:read.
    let no_hooks = admin::create_api_key(&app.pool, app.org_id, &scopes(&["customers:read"])).await.expect("key");
    error(app.request(Method::GET, path, Some(&no_hooks), None).await, 403, "authorization_error").await;

    // A delegated grant's endpoints are its own: invisible to the organization's keys and other grants.
    let delegation = || Delegation {
        user: "app@example.com".into(),
        visibility: "organization".into(),
        registers: vec![],
        safes: vec![],
    };
    let grant_scopes = scopes(&["webhooks:read", "webhooks:write", "products:read"]);
    let grant = admin::create_delegated_token(&app.pool, app.org_id, &grant_scopes, delegation()).await.expect("grant");
    let other_grant =
        admin::create_delegated_token(&app.pool, app.org_id, &grant_scopes, delegation()).await.expect("grant");
    let grant_body = json!({"label": "app", "url": receiver.url("/grant"), "enabled_events": ["webhook_endpoint.disabled"], "api_version": VERSION});
    let create_as = |token: &str| {
        let request = app.client.post(format!("{}{path}", app.base)).bearer_auth(token);
        let request = request.header("Idempotency-Key", "grant-setup-1").json(&grant_body);
        async move { request.send().await.expect("sent") }
    };
    let (grant_id, grant_secret) = {
        let created = json(create_as(&grant).await, 201).await;
        (
            created["data"]["id"].as_str().expect("id").to_owned(),
            created["data"]["signing_secret"].as_str().expect("s").to_owned(),
        )
    };
    // The grant's key is its own: its retry replays, another grant's (or a key's) use of it is a
    // conflict that shows neither the endpoint nor its secret.
    let replayed = json(create_as(&grant).await, 201).await;
    assert_eq!(replayed["data"]["id"], grant_id.as_str());
    for stranger in [other_grant.as_str(), app.api_key.as_str()] {
        let refused = error(create_as(stranger).await, 409, "idempotency_error").await;
        assert_eq!(refused["error"]["code"], "IDEMPOTENCY_CONFLICT");
        assert!(!refused.to_string().contains(&grant_secret) && !refused.to_string().contains(&grant_id), "{refused}");
    }
    let grant_list = json(app.request(Method::GET, path, Some(&grant), None).await, 200).await;
    assert_eq!(grant_list["data"].as_array().expect("data").len(), 1, "the grant sees only its own: {grant_list}");
    let grant_endpoint = grant_list["data"][0]["id"].as_str().expect("id").to_owned();
    let org_list = json(app.get(path).await, 200).await;
    assert!(org_list["data"].as_array().expect("data").iter().all(|e| e["id"] != grant_endpoint.as_str()));
    error(app.get(&format!("{path}/{grant_endpoint}")).await, 404, "invalid_request_error").await;
    error(
        app.request(Method::GET, &format!("{path}/{grant_endpoint}"), Some(&other_grant), None).await,
        404,
        "invalid_request_error",
    )
    .await;
    error(
        keyed(&app, &other_grant, Method::POST, &format!("{path}/{grant_endpoint}/test"), None).await,
        404,
        "invalid_request_error",
    )
    .await;
    // The organization's own endpoint disabling does not notify the grant's endpoint.
    json(operation(&app, &product_hook, "disable").await, 200).await;

    // Revoking the grant disables its endpoints and cancels what they had not sent.
    json(keyed(&app, &grant, Method::POST, &format!("{path}/{grant_endpoint}/pause"), None).await, 200).await;
    json(keyed(&app, &grant, Method::POST, &format!("{path}/{grant_endpoint}/test"), None).await, 200).await;
    receiver.wait_for("/grant", 1).await;
    admin::revoke(&app.pool, &grant).await.expect("revoke");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let status: Option<String> = sqlx::query_scalar("select status from webhook_endpoints_view where id = $1")
            .bind(Uuid::parse_str(&grant_endpoint).expect("uuid"))
            .fetch_optional(&app.pool)
            .await
            .expect("status");
        if status.as_deref() == Some("disabled") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "revocation did not disable the endpoint");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = receiver.received("/grant");
    assert_eq!(got.len(), 1, "only the test reached the grant's endpoint: {got:?}");
    assert!(verifies(&grant_secret, &got[0]));
}

#[sqlx::test(migrations = "../schema")]
async fn private_addresses_are_refused_unless_allowed(pool: PgPool) {
    let receiver = Receiver::start().await;
    let strict = SenderConfig { allow_private: Vec::new(), ..sender(&receiver) };
    let app = TestApp::spawn_with_sender(pool, Some(strict)).await;
    let (by_name, _) = create_endpoint(&app, &receiver.url("/by-name"), &["product.created"]).await;
    let (by_ip, _) = create_endpoint(&app, &receiver.ip_url("/by-ip"), &["product.created"]).await;
    let (metadata, _) = create_endpoint(&app, "https://169.254.169.254/latest", &["product.created"]).await;
    for id in [&by_name, &by_ip, &metadata] {
        json(operation(&app, id, "test").await, 200).await;
    }
    for id in [&by_name, &by_ip, &metadata] {
        let failed = history_until(&app, id, |d| d.first().is_some_and(|x| x["status"] == "failed")).await;
        for attempt in failed[0]["attempts"].as_array().expect("attempts") {
            assert!(attempt["status_code"].is_null(), "{attempt}");
            let reason = attempt["error"].as_str().unwrap_or_default();
            assert!(reason.starts_with("refused"), "{id}: {reason}");
        }
    }
    assert!(receiver.received("/by-name").is_empty() && receiver.received("/by-ip").is_empty());
}

#[sqlx::test(migrations = "../schema")]
async fn a_receiver_down_for_a_while_gets_everything_afterwards(pool: PgPool) {
    let receiver = Receiver::start().await;
    let patient = SenderConfig {
        retry_schedule: dispatch::parse_schedule("100ms,100ms,200ms,200ms,300ms,500ms,1s,1s").expect("schedule"),
        ..sender(&receiver)
    };
    let app = TestApp::spawn_with_sender(pool, Some(patient)).await;
    let (id, secret) = create_endpoint(&app, &receiver.url("/down"), &["webhook_endpoint.disabled"]).await;
    receiver.set_down(true);
    let mut sent = Vec::new();
    for _ in 0..10 {
        sent.push(json(operation(&app, &id, "test").await, 200).await["data"]["id"].as_str().expect("id").to_owned());
    }
    // Wait until every delivery has failed at least once, then bring the receiver back.
    history_until(&app, &id, |d| d.len() == 10 && d.iter().all(|x| !x["attempts"].as_array().expect("a").is_empty()))
        .await;
    assert!(receiver.refused_connections() >= 10);
    receiver.set_down(false);
    let got = receiver
        .wait_until("/down", |got| {
            let ids: std::collections::HashSet<&str> = got.iter().map(|r| r.header("service-event-id")).collect();
            sent.iter().all(|id| ids.contains(id.as_str()))
        })
        .await;
    assert!(got.iter().all(|r| verifies(&secret, r)));
    let done = history_until(&app, &id, |d| d.iter().all(|x| x["status"] == "succeeded")).await;
    assert_eq!(done.len(), 10);
}

#[sqlx::test(migrations = "../schema")]
async fn a_killed_sender_loses_no_delivery_and_slow_receivers_delay_no_one(pool: PgPool) {
    let receiver = Receiver::start().await;
    // The app runs the webhooks projection but no dispatcher; dispatchers are started by hand.
    let app = TestApp::spawn(pool).await;
    let config = SenderConfig { lease: Duration::from_secs(2), per_endpoint: 2, ..sender(&receiver) };
    let (slow, _) = create_endpoint(&app, &receiver.url("/slow"), &["product.created"]).await;
    let (fast, _) = create_endpoint(&app, &receiver.url("/fast"), &["product.created"]).await;
    receiver.script("/slow", &[Reply::Slow(200, Duration::from_secs(20)); 2]);
    let mut slow_tests = Vec::new();
    for _ in 0..4 {
        slow_tests
            .push(json(operation(&app, &slow, "test").await, 200).await["data"]["id"].as_str().expect("id").to_owned());
    }
    let fast_test =
        json(operation(&app, &fast, "test").await, 200).await["data"]["id"].as_str().expect("id").to_owned();

    let first = tokio::spawn(dispatch::run(app.pool.clone(), app.bus.clone(), config.clone()));
    // The slow receiver holds two requests (its per-endpoint cap) while the fast one is served.
    receiver.wait_for("/slow", 2).await;
    let fast_got = receiver.wait_for("/fast", 1).await;
    assert_eq!(fast_got[0].header("service-event-id"), fast_test);
    assert_eq!(receiver.received("/slow").len(), 2, "at most two in flight to one endpoint");

    // Kill the sender mid-delivery; a new one takes over once the leases run out.
    first.abort();
    let _ = first.await;
    let second = tokio::spawn(dispatch::run(app.pool.clone(), app.bus.clone(), config));
    let got = receiver
        .wait_until("/slow", |got| {
            let ids: std::collections::HashSet<&str> = got.iter().map(|r| r.header("service-event-id")).collect();
            slow_tests.iter().all(|id| ids.contains(id.as_str()))
        })
        .await;
    assert!(got.len() >= 4);
    let done = history_until(&app, &slow, |d| d.len() == 4 && d.iter().all(|x| x["status"] == "succeeded")).await;
    assert_eq!(done.len(), 4);
    second.abort();
}

#[sqlx::test(migrations = "../schema")]
async fn concurrent_senders_never_send_one_delivery_twice(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn(pool).await;
    let mut sent = Vec::new();
    let mut endpoints = Vec::new();
    for n in 0..4 {
        let events = ["product.created", "webhook_endpoint.disabled"];
        let (id, _) = create_endpoint(&app, &receiver.url(&format!("/shared{n}")), &events).await;
        json(operation(&app, &id, "pause").await, 200).await;
        endpoints.push(id);
    }
    // A backlog queued while paused (the disable notices), released at once to three senders.
    let (noisy, _) = create_endpoint(&app, &receiver.url("/noisy"), &["product.created"]).await;
    json(operation(&app, &noisy, "disable").await, 200).await;
    for _ in 0..20 {
        let (victim, _) = create_endpoint(&app, "https://example.com/never", &["product.created"]).await;
        json(operation(&app, &victim, "disable").await, 200).await;
        sent.push(victim);
    }
    for id in &endpoints {
        history_until(&app, id, |d| d.len() == 21).await;
    }
    let config = SenderConfig { per_endpoint: 4, ..sender(&receiver) };
    let senders: Vec<_> =
        (0..3).map(|_| tokio::spawn(dispatch::run(app.pool.clone(), app.bus.clone(), config.clone()))).collect();
    for id in &endpoints {
        json(operation(&app, id, "resume").await, 200).await;
    }
    for (n, id) in endpoints.iter().enumerate() {
        let got = receiver.wait_for(&format!("/shared{n}"), 21).await;
        history_until(&app, id, |d| d.iter().all(|x| x["status"] == "succeeded")).await;
        let ids: std::collections::HashSet<&str> = got.iter().map(|r| r.header("service-event-id")).collect();
        assert_eq!(ids.len(), 21, "every notice arrived");
        assert_eq!(receiver.received(&format!("/shared{n}")).len(), 21, "and none twice");
    }
    for sender in senders {
        sender.abort();
    }
}

/// The notice that an endpoint was disabled goes only to the owner's endpoints that enabled it; a PATCH
/// checks the read scopes of the events the endpoint keeps; a revocation disabling several endpoints at
/// once leaves none of their deliveries pending.
#[sqlx::test(migrations = "../schema")]
async fn disabled_notices_follow_subscriptions_and_updates_recheck_scopes(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    let (products, _) = create_endpoint(&app, &receiver.url("/products"), &["product.created"]).await;
    let (listening, _) = create_endpoint(&app, &receiver.url("/listening"), &["webhook_endpoint.disabled"]).await;
    let (ending, _) = create_endpoint(&app, &receiver.url("/ending"), &["product.created"]).await;
    json(operation(&app, &ending, "disable").await, 200).await;
    history_until(&app, &listening, |d| d.len() == 1).await;
    assert!(history(&app, &products).await.is_empty(), "it never asked for webhook_endpoint.disabled");

    // Update: a key without products:read cannot touch an endpoint enabled for product events.
    let scopes = ["webhooks:read".to_owned(), "webhooks:write".to_owned()];
    let hooks_only = admin::create_api_key(&app.pool, app.org_id, &scopes).await.expect("key");
    let path = format!("/api/v1/webhook-endpoints/{products}");
    let relabel = json!({ "label": "Otra" });
    error(keyed(&app, &hooks_only, Method::PATCH, &path, Some(&relabel)).await, 403, "authorization_error").await;
    json(keyed(&app, &app.api_key, Method::PATCH, &path, Some(&relabel)).await, 200).await;

    // A grant's two endpoints, disabled together by its revocation: each one's notice of the other is
    // cancelled with the rest, none left pending.
    let delegation =
        Delegation { user: "app@example.com".into(), visibility: "organization".into(), registers: vec![], safes: vec![] };
    let grant = admin::create_delegated_token(&app.pool, app.org_id, &scopes, delegation).await.expect("grant");
    for name in ["/one", "/two"] {
        let body = json!({"label": "app", "url": receiver.url(name), "enabled_events": ["webhook_endpoint.disabled"], "api_version": VERSION});
        json(keyed(&app, &grant, Method::POST, "/api/v1/webhook-endpoints", Some(&body)).await, 201).await;
    }
    admin::revoke(&app.pool, &grant).await.expect("revoke");
    crate::helpers::eventually(Duration::from_secs(20), "both endpoints disabled", || async {
        let disabled: i64 = sqlx::query_scalar(
            "select count(*) from webhook_endpoints_view where status = 'disabled' and owner_credential_id is not null",
        )
        .fetch_one(&app.pool)
        .await
        .expect("count");
        (disabled == 2).then_some(())
    })
    .await;
    let pending: i64 = sqlx::query_scalar(
        "select count(*) from webhook_deliveries d join webhook_endpoints_view e on e.id = d.endpoint_id
         where e.owner_credential_id is not null and d.status = 'pending'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("pending");
    assert_eq!(pending, 0);
}
