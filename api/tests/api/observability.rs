//! What operators see, read through HTTP as Prometheus would and through `backoffice status --json`:
//! figures that move with writes, a stopped projection's lag, a failing webhook receiver, readiness.

use crate::helpers::*;
use crate::receiver::{Receiver, Reply};
use events::bus::Bus;
use projections::Partition;
use projections::progress::LocalProgress;
use projections::webhooks::dispatch::{self, SenderConfig};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;

/// The `/metrics` text of the test's service.
async fn scrape(app: &TestApp) -> String {
    let response = app.client.get(format!("{}/metrics", app.base)).send().await.expect("scraped");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().expect("text").to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    response.text().await.expect("text")
}

/// The sum of every sample of `name` whose labels include all of `labels` (none: 0).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
            if metric != name {
                return None;
            }
            let wanted = labels.iter().all(|(key, value)| rest.contains(&format!("{key}=\"{value}\"")));
            wanted.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

fn described(text: &str, name: &str) -> bool {
    text.lines().any(|line| line.starts_with(&format!("# HELP {name} ")))
}

#[sqlx::test(migrations = "../schema")]
async fn a_write_moves_the_command_and_http_metrics(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = scrape(&app).await;
    let accepted = [("command", "customer"), ("outcome", "accepted")];
    let posts = [("route", "/api/v1/customers"), ("method", "POST"), ("status", "2xx")];
    let created = json(app.post("/api/v1/customers", &json!({"name": "Lucía Pérez"})).await, 201).await;
    let refused = app.post("/api/v1/customers", &json!({"name": ""})).await;
    assert_eq!(refused.status(), 400);
    let id = id_of(&created);
    json(app.get(&format!("/api/v1/customers/{id}")).await, 200).await;
    let after = scrape(&app).await;

    assert_eq!(
        sample(&after, "backoffice_commands_total", &accepted)
            - sample(&before, "backoffice_commands_total", &accepted),
        1.0
    );
    let count = "backoffice_http_request_duration_seconds_count";
    assert_eq!(sample(&after, count, &posts) - sample(&before, count, &posts), 1.0);
    let bad = [("route", "/api/v1/customers"), ("method", "POST"), ("status", "4xx")];
    assert_eq!(sample(&after, count, &bad) - sample(&before, count, &bad), 1.0);
    let read = [("route", "/api/v1/customers/{customer_id}"), ("method", "GET"), ("status", "2xx")];
    assert_eq!(sample(&after, count, &read) - sample(&before, count, &read), 1.0);
    let waited = [("projection", "customers")];
    assert_eq!(
        sample(&after, "backoffice_read_wait_seconds_count", &waited)
            - sample(&before, "backoffice_read_wait_seconds_count", &waited),
        1.0
    );
    let phases = "backoffice_command_phase_seconds_count";
    assert!(sample(&after, phases, &[("command", "customer"), ("phase", "append")]) >= 1.0);
    assert!(sample(&after, phases, &[("command", "customer"), ("phase", "decide")]) >= 1.0);
    // The event store's head and the followers are read at scrape time.
    assert!(sample(&after, "backoffice_event_store_head_position", &[]) >= 1.0);
    assert_eq!(sample(&after, "backoffice_nats_connected", &[]), 1.0);
    for name in [
        "backoffice_commands_total",
        "backoffice_http_request_duration_seconds",
        "backoffice_read_wait_seconds",
        "backoffice_event_store_head_position",
        "backoffice_projection_lag_events",
        "backoffice_follower_lag_events",
        "backoffice_db_pool_connections",
    ] {
        assert!(described(&after, name), "{name} has no # HELP line");
    }
    // No personal data in a label: the customer's name appears nowhere.
    assert!(!after.contains("Lucía"), "a customer's name leaked into the metrics");

    // A replay under the same key counts as an idempotent replay.
    let key = uuid::Uuid::now_v7().to_string();
    let body = json!({"name": "Otra Persona"});
    json(app.post_key("/api/v1/customers", &key, &body).await, 201).await;
    json(app.post_key("/api/v1/customers", &key, &body).await, 201).await;
    let replayed = scrape(&app).await;
    assert_eq!(sample(&replayed, "backoffice_idempotent_replays_total", &[("command", "customer")]), 1.0);
}

/// Runs `backoffice status --json` against the test's service.
fn status_json(app: &TestApp) -> Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_backoffice"))
        .args(["status", "--json"])
        .env("DATABASE_URL", database_url(&app.pool))
        .env("NATS_URL", nats_url())
        .env("NATS_PREFIX", app.bus.prefix())
        .env("RUST_LOG", "warn")
        .output()
        .expect("backoffice status runs");
    assert!(output.status.success(), "status failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("status prints JSON")
}

fn database_url(pool: &PgPool) -> String {
    let options = pool.connect_options();
    format!(
        "postgres://{}@{}:{}/{}",
        options.get_username(),
        options.get_host(),
        options.get_port(),
        options.get_database().expect("database name")
    )
}

fn customers_partition(status: &Value) -> Value {
    let partitions = status["projections"].as_array().expect("projections");
    partitions.iter().find(|p| p["projection"] == "customers").cloned().expect("the customers projection is listed")
}

/// Starts the customers projector on its own task, so the test can stop it.
fn start_customers(app: &TestApp) -> tokio::task::JoinHandle<()> {
    let projection = projections::projection(projections::ProjectionId::Customers);
    tokio::spawn(projections::runtime::run(
        app.pool.clone(),
        Bus::from_client(app.bus.client.clone(), app.bus.prefix()),
        projection,
        Partition::WHOLE,
        LocalProgress::default(),
    ))
}

#[sqlx::test(migrations = "../schema")]
async fn a_stopped_projection_shows_lag_that_returns_to_zero_once_it_catches_up(pool: PgPool) {
    // The gateway waits briefly for the read side, since the customers projector will be stopped.
    let app = TestApp::spawn_waiting(pool, &["customers"], Duration::from_millis(300)).await;
    let customers = [("projection", "customers"), ("partition", "0/1")];
    let projector = start_customers(&app);
    // Written either way; readable within the short wait only if the projector, just started, is
    // already quick (on a loaded machine it may not be: the wait then times out, which is counted).
    let first = app.post("/api/v1/customers", &json!({"name": "Primera"})).await.status().as_u16();
    assert!(first == 201 || first == 503, "the first create answered {first}");
    let timeouts = [("projection", "customers")];
    let timeouts_before = eventually(Duration::from_secs(20), "the customers projection to be caught up", || async {
        let text = scrape(&app).await;
        (sample(&text, "backoffice_projection_running", &customers) == 1.0
            && sample(&text, "backoffice_projection_lag_events", &customers) == 0.0)
            .then(|| sample(&text, "backoffice_read_wait_timeouts_total", &timeouts))
    })
    .await;

    projector.abort();
    let _ = projector.await;
    for n in 0..3 {
        // Written, but not readable in time: the projection is stopped.
        let response = app.post("/api/v1/customers", &json!({"name": format!("Cliente {n}")})).await;
        assert_eq!(response.status(), 503);
    }
    let text = eventually(Duration::from_secs(20), "the customers lag to show", || async {
        let text = scrape(&app).await;
        (sample(&text, "backoffice_projection_lag_events", &customers) >= 3.0).then_some(text)
    })
    .await;
    assert!(sample(&text, "backoffice_projection_lag_seconds", &customers) > 0.0);
    assert_eq!(sample(&text, "backoffice_projection_lag_events", &[("projection", "products")]), 0.0);
    assert_eq!(sample(&text, "backoffice_read_wait_timeouts_total", &timeouts), timeouts_before + 3.0);

    // The operator's view says the same, without HTTP.
    let status = status_json(&app);
    let lagging = customers_partition(&status);
    assert!(lagging["lag_events"].as_u64().expect("lag") >= 3, "{lagging}");
    assert!(lagging["lag_seconds"].as_f64().expect("seconds") > 0.0, "{lagging}");
    assert_eq!(lagging["consumer"], "customers-p0of1");
    assert!(lagging["position"].as_i64().is_some(), "{lagging}");
    let followers: Vec<&str> =
        status["followers"].as_array().expect("followers").iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(followers, ["relay", "sealer"]);
    assert!(status["event_store"]["head_position"].as_i64().expect("head") >= 4);
    assert!(status["webhooks"]["pending"].is_i64());

    // Restarted, it catches up: the lag returns to 0 and the writes read back.
    let _projector = start_customers(&app);
    eventually(Duration::from_secs(20), "the customers lag to return to 0", || async {
        let text = scrape(&app).await;
        (sample(&text, "backoffice_projection_lag_events", &customers) == 0.0
            && sample(&text, "backoffice_projection_lag_seconds", &customers) == 0.0)
            .then_some(())
    })
    .await;
    let caught_up = customers_partition(&status_json(&app));
    assert_eq!(caught_up["lag_events"], 0, "{caught_up}");
    assert_eq!(caught_up["running"], true, "{caught_up}");
    let listed = json(app.get("/api/v1/customers?limit=100").await, 200).await;
    let names = names(listed["data"].as_array().expect("data"));
    for n in 0..3 {
        assert!(names.contains(&format!("Cliente {n}")), "{names:?}");
    }
}

#[sqlx::test(migrations = "../schema")]
async fn a_failing_webhook_receiver_raises_the_retrying_count(pool: PgPool) {
    let receiver = Receiver::start().await;
    // One failure, then a long wait: the delivery stays retrying while the test looks.
    let sender = SenderConfig {
        retry_schedule: dispatch::parse_schedule("1h").expect("schedule"),
        ..crate::webhooks::sender(&receiver)
    };
    let app = TestApp::spawn_with_sender(pool, Some(sender)).await;
    receiver.script("/failing", &[Reply::Status(500)]);
    let body = json!({"label": "Tienda", "url": receiver.url("/failing"), "enabled_events": ["product.created"], "api_version": "2026-06-29"});
    let endpoint = json(app.post_keyed("/api/v1/webhook-endpoints", &body).await, 201).await;
    let endpoint_id = endpoint["data"]["id"].as_str().expect("id").to_owned();
    let before = scrape(&app).await;
    assert_eq!(sample(&before, "backoffice_webhook_deliveries", &[("state", "retrying")]), 0.0);

    json(app.post_keyed("/api/v1/products", &json!({"name": "Yerba", "sku": "YER-1", "price": 250000})).await, 201)
        .await;
    receiver.wait_for("/failing", 1).await;
    // The attempt is stored (the delivery retrying) before the sender counts it, so wait for both.
    let failures = [("endpoint", endpoint_id.as_str())];
    let text = eventually(Duration::from_secs(20), "the delivery to be retrying and counted", || async {
        let text = scrape(&app).await;
        let retrying = sample(&text, "backoffice_webhook_deliveries", &[("state", "retrying")]) == 1.0;
        (retrying && sample(&text, "backoffice_webhook_endpoint_failures_total", &failures) >= 1.0).then_some(text)
    })
    .await;
    assert_eq!(sample(&text, "backoffice_webhook_endpoint_failures_total", &failures), 1.0);
    assert_eq!(sample(&text, "backoffice_webhook_attempt_duration_seconds_count", &[("outcome", "failure")]), 1.0);
    assert!(!text.contains(&receiver.url("/failing")), "a receiver URL leaked into the metrics");
    let status = status_json(&app);
    assert_eq!(status["webhooks"]["retrying"], 1, "{status}");
}

#[sqlx::test(migrations = "../schema")]
async fn readiness_names_the_projection_without_a_projector(pool: PgPool) {
    let app = TestApp::spawn_without(pool, &["customers"]).await;
    let alive = app.request(Method::GET, "/healthz", None, None).await;
    assert_eq!(alive.status(), 200);
    // Every other projector attaches shortly after start; customers never does.
    let expected = json!(["projection customers: no projector running"]);
    let body = eventually(Duration::from_secs(20), "only customers to lack a projector", || async {
        let ready = app.request(Method::GET, "/readyz", None, None).await;
        assert_eq!(ready.status(), 503);
        let body: Value = ready.json().await.expect("json");
        (body["problems"] == expected).then_some(body)
    })
    .await;
    assert_eq!(body["status"], "not_ready");

    let _projector = start_customers(&app);
    eventually(Duration::from_secs(20), "the gateway to be ready", || async {
        let ready = app.request(Method::GET, "/readyz", None, None).await;
        (ready.status() == 200).then_some(())
    })
    .await;
}
