//! The webhooks phase: delivery latency under load, then the sender draining a backlog.

use crate::harness::{Api, Make, Setup, env, load, psql};
use crate::receiver;
use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Webhook deliveries: the p99 time from the commit of a test request to its arrival at a local HTTPS
/// receiver under steady load, then the sender's throughput draining a backlog spread over endpoints.
pub async fn webhooks(setup: &Setup, auth: &str, receiver: &receiver::Receiver) {
    let api = Api::new(setup, auth);
    let mut endpoints = Vec::new();
    for n in 0..16 {
        let key = format!("bench-endpoint-{n}");
        let endpoint = serde_json::json!({"label": format!("bench {n}"), "url": receiver.url(&format!("/hook{n}")),
            "enabled_events": ["product.created"], "api_version": "2026-06-29"});
        endpoints.push(api.create("/api/v1/webhook-endpoints", &[("Idempotency-Key", &key)], endpoint).await);
    }

    // Latency under load: test requests spread over the endpoints; each is a command, an event and a delivery.
    let make_test: Make = {
        let (auth, addr, targets) = (auth.to_owned(), setup.http_addr.clone(), endpoints.clone());
        Arc::new(move |n| {
            let endpoint = &targets[n as usize % targets.len()];
            Request::post(format!("http://{addr}/api/v1/webhook-endpoints/{endpoint}/test"))
                .header("host", &addr)
                .header("authorization", &auth)
                .header("idempotency-key", format!("bench-test-{n}"))
                .body(Full::new(Bytes::new()))
                .expect("request")
        })
    };
    let tests = load(setup, make_test, 200).await;
    let sent: usize = psql(&setup.database_url, "select count(*) from webhook_deliveries").parse().expect("count");
    let deadline = Instant::now() + Duration::from_secs(120);
    while receiver.count() < sent {
        assert!(Instant::now() < deadline, "only {} of {sent} deliveries arrived", receiver.count());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let committed: std::collections::HashMap<String, f64> = psql(
        &setup.database_url,
        "select data->>'test_id', extract(epoch from recorded_at) from events
         where event_type = 'WebhookEndpointTestRequested'",
    )
    .lines()
    .filter_map(|line| line.split_once('|'))
    .map(|(id, at)| (id.to_owned(), at.parse::<f64>().expect("epoch")))
    .collect();
    let mut delays: Vec<f64> = receiver
        .all()
        .iter()
        .filter_map(|r| {
            let at = r.at.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64();
            committed.get(r.header("service-event-id")).map(|c| (at - c) * 1000.0)
        })
        .collect();
    delays.sort_by(f64::total_cmp);
    let pct = |p: f64| delays[((delays.len() as f64 * p) as usize).min(delays.len() - 1)];
    println!("webhooks: POST .../test under load (16 connections), commit -> arrival at a local HTTPS receiver");
    println!(
        "  service : {:>10.0} deliveries/s  p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms  ({} deliveries, {} request errors)",
        tests.rate,
        pct(0.50),
        pct(0.99),
        delays.last().copied().unwrap_or(0.0),
        delays.len(),
        tests.errors
    );

    // Throughput: a backlog of deliveries over 16 endpoints, made due at once.
    let backlog: i64 = env("BENCH_WEBHOOK_BACKLOG", "20000").parse().expect("BENCH_WEBHOOK_BACKLOG");
    let ids = endpoints.iter().map(|e| format!("'{e}'")).collect::<Vec<_>>().join(",");
    psql(
        &setup.database_url,
        &format!(
            "insert into webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, payload, is_test, next_attempt_at)
             select gen_random_uuid(), e.org_id, e.id, gen_random_uuid(), 'webhook.test',
                    json_build_object('id', gen_random_uuid(), 'type', 'webhook.test', 'api_version', '2026-06-29',
                        'created', 1790000000, 'organization_id', e.org_id,
                        'data', json_build_object('object', json_build_object('object', 'webhook_endpoint', 'id', e.id)),
                        'test', true)::text,
                    true, now() + interval '1 day'
             from generate_series(1, {backlog}) g
             join lateral (select * from webhook_endpoints_view where id = (array[{ids}]::uuid[])[1 + g % 16]) e on true"
        ),
    );
    let before = receiver.count();
    let started = Instant::now();
    psql(&setup.database_url, "update webhook_deliveries set next_attempt_at = now() where status = 'pending'");
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let pending: i64 =
            psql(&setup.database_url, "select count(*) from webhook_deliveries where status = 'pending'")
                .parse()
                .expect("count");
        if pending == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{pending} deliveries still pending");
        // Counting is not free for Postgres: look rarely enough not to compete with the sender.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let failed: i64 = psql(&setup.database_url, "select count(*) from webhook_deliveries where status <> 'succeeded'")
        .parse()
        .expect("count");
    println!("webhooks: sender draining {backlog} due deliveries over 16 endpoints (signed, HTTPS, recorded)");
    println!(
        "  service : {:>10.0} deliveries/s  ({} arrived in {elapsed:.2} s, {failed} not succeeded)",
        backlog as f64 / elapsed,
        receiver.count() - before
    );
}
