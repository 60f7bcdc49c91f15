//! The operator and auditor CLI: export, verify (and catching tampering), rebuild under traffic.

use crate::helpers::{Deployment, Writers, create_org, eventually, shared_nats_url};
use reqwest::StatusCode;
use serde_json::Value;
use sqlx::PgPool;

fn export(deployment: &Deployment, org: &str) -> Vec<Value> {
    let output = deployment.run(&["events", "export", "--org", org]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .expect("utf8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON envelope per line"))
        .collect()
}

#[sqlx::test(migrations = "../schema")]
async fn export_and_verify_catch_an_altered_event(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let (org, key) = create_org(&deployment, "Audit Test");
    let _service = deployment.start().await;
    let seeded = export(&deployment, &org.to_string()).len();
    let client = crate::helpers::http_client();
    for i in 0..5 {
        let response = client
            .post(format!("{}/api/v1/customers", deployment.base()))
            .bearer_auth(&key)
            .json(&serde_json::json!({"name": format!("Cliente {i}")}))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::CREATED);
    }
    let org = org.to_string();
    eventually("every event is sealed", || async { export(&deployment, &org).iter().all(|e| e["hash"].is_string()) })
        .await;
    let lines = export(&deployment, &org);
    assert_eq!(lines.len(), seeded + 5, "what the organization was seeded with, and five customers");
    for line in &lines {
        for field in ["id", "position", "type", "stream_id", "version", "recorded_at", "data", "metadata", "hash"] {
            assert!(line.get(field).is_some(), "missing {field}: {line}");
        }
    }
    let from = lines[seeded + 2]["position"].as_i64().expect("position");
    let tail = deployment.run(&["events", "export", "--org", &org, "--from-position", &from.to_string()]);
    assert_eq!(String::from_utf8_lossy(&tail.stdout).lines().count(), 3);

    let verified = deployment.run(&["events", "verify", "--org", &org]);
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stdout));

    let target = lines[seeded + 3]["position"].as_i64().expect("position");
    sqlx::raw_sql("alter table events disable trigger events_append_only").execute(&pool).await.expect("disable");
    sqlx::query("update events set data = '{\"name\": \"Mallory\"}' where position = $1")
        .bind(target)
        .execute(&pool)
        .await
        .expect("tamper");
    sqlx::raw_sql("alter table events enable trigger events_append_only").execute(&pool).await.expect("enable");
    let broken = deployment.run(&["events", "verify", "--org", &org]);
    assert!(!broken.status.success(), "verify must fail after tampering");
    let report: Value = serde_json::from_slice(&broken.stdout).expect("json report");
    assert_eq!(report["first_broken_position"], target);
    deployment.delete_stream().await;
}

#[sqlx::test(migrations = "../schema")]
async fn a_rebuild_under_traffic_keeps_every_read(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let (_, key) = create_org(&deployment, "Rebuild Test");
    let _service = deployment.start().await;
    let writers = Writers::start(&deployment.base(), &key, 4);
    writers.wait_for_acked(100).await;
    let output = deployment.run(&["projections", "rebuild", "customers"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("rebuild prints JSON");
    assert_eq!(report["projection"], "customers");
    assert!(report["events"].as_u64().is_some_and(|n| n >= 100));
    let unknown = deployment.run(&["projections", "rebuild", "nope"]);
    assert!(!unknown.status.success());
    let acked = writers.finish().await;
    crate::helpers::assert_nothing_lost_or_doubled(&pool, &deployment, &key, &acked).await;
    deployment.delete_stream().await;
}
