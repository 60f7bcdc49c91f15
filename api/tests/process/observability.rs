//! What operators see of roles run as separate processes: a role without HTTP serves its metrics and
//! health on `METRICS_ADDR`, and `LOG_FORMAT=json` logs carry the request's fields and no personal data.

use crate::helpers::{Deployment, create_org, eventually, free_port, http_client, shared_nats_url};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;

async fn status_of(url: &str) -> Option<StatusCode> {
    http_client().get(url).send().await.ok().map(|response| response.status())
}

#[sqlx::test(migrations = "../schema")]
async fn a_role_without_http_serves_metrics_and_json_logs_carry_request_fields(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let logs = std::env::temp_dir().join(format!("backoffice-test-{}", deployment.prefix));
    std::fs::create_dir_all(&logs).expect("log folder");
    let metrics = format!("127.0.0.1:{}", free_port());
    // No projector runs: every write is recorded but never readable in time.
    let _api = deployment.spawn_role(
        &["api"],
        &[("LOG_FORMAT", "json"), ("RUST_LOG", "info"), ("READ_WAIT_TIMEOUT_MS", "300")],
        &logs.join("api.log"),
    );
    let _commands = deployment.spawn_role(
        &["commands"],
        &[("METRICS_ADDR", metrics.as_str()), ("LOG_FORMAT", "json"), ("RUST_LOG", "info")],
        &logs.join("commands.log"),
    );
    let base = deployment.base();
    eventually("both roles answer", || async {
        status_of(&format!("{base}/healthz")).await == Some(StatusCode::OK)
            && status_of(&format!("http://{metrics}/healthz")).await == Some(StatusCode::OK)
    })
    .await;
    let (org, key) = create_org(&deployment, "Métricas");
    let response = http_client()
        .post(format!("{base}/api/v1/customers"))
        .bearer_auth(&key)
        .json(&json!({"name": "Lucía Pérez", "email": "lucia@example.com"}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE, "the read side is not running");
    let request_id = response.headers()["service-request-id"].to_str().expect("id").to_owned();

    // The command worker counted the write, on METRICS_ADDR.
    let metrics_url = format!("http://{metrics}/metrics");
    eventually("the worker's metrics show the command", || async {
        let text = http_client().get(&metrics_url).send().await.expect("scraped").text().await.expect("text");
        text.lines().any(|line| {
            line.starts_with("backoffice_commands_total{")
                && line.contains("command=\"customer\"")
                && line.contains("outcome=\"accepted\"")
                && line.ends_with(" 1")
        })
    })
    .await;
    assert_eq!(status_of(&format!("http://{metrics}/readyz")).await, Some(StatusCode::OK));
    // The gateway is alive but not ready: no projector pulls from the projections it waits on.
    let ready = http_client().get(format!("{base}/readyz")).send().await.expect("sent");
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = ready.json().await.expect("json");
    assert!(
        body["problems"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p == "projection customers: no projector running")),
        "{body}"
    );

    // The gateway logged the late read as JSON, with the request and organization as fields.
    let lines = std::fs::read_to_string(logs.join("api.log")).expect("api log");
    let entries: Vec<Value> = lines.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
    assert!(!entries.is_empty(), "no JSON log lines: {lines}");
    let late = entries
        .iter()
        .find(|entry| entry["fields"]["message"] == "read side did not catch up in time")
        .unwrap_or_else(|| panic!("no late-read line in {lines}"));
    assert_eq!(late["span"]["request_id"], request_id.as_str(), "{late}");
    assert_eq!(late["span"]["org_id"], org.to_string(), "{late}");
    let worker = std::fs::read_to_string(logs.join("commands.log")).expect("commands log");
    for log in [&lines, &worker] {
        assert!(!log.contains("Lucía") && !log.contains("lucia@example.com"), "personal data in a log: {log}");
    }
    let _ = std::fs::remove_dir_all(&logs);
}
