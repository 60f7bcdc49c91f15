//! `just bench`: starts the service and measures it side by side with pgbench on the same Postgres.
//!
//! Pairs printed: customer creations per second through HTTP (16 connections unless `BENCH_CONNECTIONS` says otherwise, p50/p99) against
//! pgbench single-row inserts of an event-sized row; GETs of one customer against pgbench's prepared
//! select by primary key; projection rebuild speed over at least 100,000 events; webhook deliveries to a
//! local HTTPS receiver (throughput of the sender, and the p99 time from commit to delivery); the write
//! path's CPU with the metrics recorder and without it. `BENCH_COMMERCE_ONLY`, `BENCH_STOCK_ONLY`,
//! `BENCH_METRICS_ONLY`, `BENCH_WRITES_ONLY`, `BENCH_REPORTS_ONLY` (and others below) run one part; `BENCH_PHASES` (a comma
//! list of `stock`, `contended`, `purchases`, `sales`, `delivery_notes`, `transfers`, `payments`) narrows the commercial phases, e.g. to profile one.
//!
//! This file runs the phases in order (`main`); each lives in `service/`: `harness.rs` (settings, the
//! service's process, the HTTP load, pgbench), `cpu.rs` (CPU per operation), and the phases
//! `commerce.rs`, `webhooks.rs`, `catalog.rs` and `metrics.rs`.

#[path = "../tests/api/receiver.rs"]
mod receiver;

#[path = "service/catalog.rs"]
mod catalog;
#[path = "service/commerce.rs"]
mod commerce;
#[path = "service/cpu.rs"]
mod cpu;
#[path = "service/harness.rs"]
mod harness;
#[path = "service/metrics.rs"]
mod metrics;
#[path = "service/reports.rs"]
mod reports;
#[path = "service/treasury.rs"]
mod treasury;
#[path = "service/webhooks.rs"]
mod webhooks;

use bytes::Bytes;
use catalog::catalog;
use commerce::commerce;
use cpu::{cpu_line, cpu_times};
use harness::{Make, Setup, backoffice, env, http_client, load, pgbench, print_pair, psql, start_service};
use http_body_util::Full;
use hyper::Request;
use metrics::metrics_overhead;
use std::process::Command;
use std::sync::Arc;
use webhooks::webhooks;

#[tokio::main]
async fn main() {
    let admin_url = env("BENCH_ADMIN_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres");
    let database = env("BENCH_DATABASE", "backoffice_bench");
    let base = admin_url.rsplit_once('/').map(|(b, _)| b.to_owned()).unwrap_or(admin_url.clone());
    let receiver = receiver::Receiver::start().await;
    let setup = Setup {
        ca_file: receiver.ca_file.display().to_string(),
        database_url: format!("{base}/{database}"),
        admin_url,
        database,
        http_addr: env("BENCH_HTTP_ADDR", "127.0.0.1:18181"),
        prefix: format!("bench{}", std::process::id()),
        seconds: env("BENCH_SECONDS", "10").parse().expect("BENCH_SECONDS"),
        connections: env("BENCH_CONNECTIONS", "16").parse().expect("BENCH_CONNECTIONS"),
        write_rounds: env("BENCH_WRITE_ROUNDS", "5").parse::<usize>().expect("BENCH_WRITE_ROUNDS").max(1),
        rebuild_events: env("BENCH_REBUILD_EVENTS", "100000").parse().expect("BENCH_REBUILD_EVENTS"),
        binary: env("BACKOFFICE_BIN", concat!(env!("CARGO_MANIFEST_DIR"), "/../target/release/backoffice")),
    };
    psql(&setup.admin_url, &format!("drop database if exists {} with (force)", setup.database));
    backoffice(&setup, &["migrate"]);
    // The benchmark measures throughput, not quotas: the organization's limits are out of reach.
    let org: serde_json::Value = serde_json::from_str(&backoffice(
        &setup,
        &[
            "admin",
            "create-org",
            "--name",
            "Bench",
            "--rate-limit-per-minute",
            "2000000000",
            "--rate-limit-per-hour",
            "2000000000",
        ],
    ))
    .expect("org json");
    let key = org["api_key"].as_str().expect("api key").to_owned();
    let service = start_service(&setup);
    let auth = format!("Bearer {key}");

    if std::env::var("BENCH_CATALOG_ONLY").is_ok() {
        catalog(&setup, &auth).await;
        return;
    }
    if std::env::var("BENCH_WEBHOOKS_ONLY").is_ok() {
        webhooks(&setup, &auth, &receiver).await;
        return;
    }
    if std::env::var("BENCH_REPORTS_ONLY").is_ok() {
        let org_id = org["organization_id"].as_str().expect("org id");
        reports::reports(&setup, &auth, org_id, service).await;
        return;
    }

    // Writes.
    let body = r#"{"name":"Ana Gómez","email":"ana@example.com","phone":"1144556677","taxId":"20267565393","taxIdType":"CUIL/CUIT","taxCategory":"Responsable Inscripto","personType":"FISICA","country":"Argentina","province":"B","city":"La Plata","address":"Calle 7 1234","apartment":"3B","postalCode":"1900"}"#;
    let make_post: Make = {
        let (auth, addr) = (auth.clone(), setup.http_addr.clone());
        Arc::new(move |_| {
            Request::post(format!("http://{addr}/api/v1/customers"))
                .header("host", &addr)
                .header("authorization", &auth)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from_static(body.as_bytes())))
                .expect("request")
        })
    };
    if std::env::var("BENCH_COMMERCE_ONLY").is_ok() || std::env::var("BENCH_STOCK_ONLY").is_ok() {
        // The reference of the same run: one round of customer creations, then the commercial phases.
        let writes = load(&setup, make_post.clone(), 201).await;
        println!("writes: {:.0} creates/s (p50 {:.2} ms, p99 {:.2} ms)", writes.rate, writes.p50_ms, writes.p99_ms);
        commerce(&setup, &auth, writes.rate).await;
        return;
    }
    if std::env::var("BENCH_METRICS_ONLY").is_ok() {
        drop(service);
        metrics_overhead(&setup, make_post.clone()).await;
        return;
    }
    if std::env::var("BENCH_WRITES_ONLY").is_ok() {
        let cpu = cpu_times();
        let writes = load(&setup, make_post.clone(), 201).await;
        println!(
            "writes: {:.0}/s p50 {:.2} ms p99 {:.2} ms errors {}",
            writes.rate, writes.p50_ms, writes.p99_ms, writes.errors
        );
        println!("  {}", cpu_line(&cpu, writes.count, "create", true));
        return;
    }

    // The write pair alternates: this machine's speed drifts within minutes, so one phase of each
    // would compare two different machines. Each round runs the HTTP load, then pgbench; the pair
    // printed is the round with the median ratio, after every round's figures.
    psql(
        &setup.database_url,
        "create table if not exists pgbench_event_rows (position bigint generated always as identity primary key,
         event_id uuid not null unique, org_id uuid not null, stream_id uuid not null, version int not null,
         event_type text not null, data json not null, metadata json not null, recorded_at timestamptz not null default now())",
    );
    let script = std::env::temp_dir().join(format!("bench-insert-{}.sql", std::process::id()));
    std::fs::write(
        &script,
        format!(
            "insert into pgbench_event_rows (event_id, org_id, stream_id, version, event_type, data, metadata) values \
             (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 1, 'CustomerCreated', '{}', '{{\"actor\": \"api_key\", \"request_id\": \"req_01a1fe16070e7556a3adcf2bd0eb3dc2\"}}');\n",
            r#"{"name":"Ana Gómez","email":"ana@example.com","phone":"1144556677","tax_id":"20267565393","tax_id_type":"CUIL/CUIT","tax_category":"Responsable Inscripto","person_type":"FISICA","country":"Argentina","province":"B","city":"La Plata","address":"Calle 7 1234","apartment":"3B","postal_code":"1900"}"#
        ),
    )
    .expect("script written");
    let seconds = setup.seconds.to_string();
    let clients = setup.connections.to_string();
    let threads = setup.connections.min(2).to_string();
    let mut rounds = Vec::new();
    for round in 1..=setup.write_rounds {
        let cpu = cpu_times();
        let writes = load(&setup, make_post.clone(), 201).await;
        let write_cpu = cpu_line(&cpu, writes.count, "create", true);
        let cpu = cpu_times();
        let insert_tps = pgbench(
            &setup,
            &[
                "-n",
                "-c",
                &clients,
                "-j",
                &threads,
                "-M",
                "prepared",
                "-T",
                &seconds,
                "-f",
                script.to_str().expect("path"),
            ],
        );
        println!(
            "writes round {round}: {:.0} creates/s (p50 {:.2} ms, p99 {:.2} ms, errors {}) vs {insert_tps:.0} inserts/s: {:.3}",
            writes.rate,
            writes.p50_ms,
            writes.p99_ms,
            writes.errors,
            writes.rate / insert_tps
        );
        if !write_cpu.is_empty() {
            println!("  {write_cpu}");
            println!("  {}", cpu_line(&cpu, (insert_tps * setup.seconds as f64) as u64, "insert", false));
        }
        rounds.push((writes, insert_tps));
    }
    let _ = std::fs::remove_file(&script);
    rounds.sort_by(|a, b| (a.0.rate / a.1).total_cmp(&(b.0.rate / b.1)));
    let (writes, insert_tps) = &rounds[rounds.len() / 2];
    print_pair(
        &format!(
            "writes: POST /api/v1/customers (read-your-writes) vs pgbench single-row event insert (median of {} alternated rounds)",
            rounds.len()
        ),
        writes.rate,
        "creates/s",
        *insert_tps,
        &format!("inserts/s (pgbench -c {clients} -M prepared)"),
        &format!("  p50 {:.2} ms  p99 {:.2} ms  errors {}", writes.p50_ms, writes.p99_ms, writes.errors),
    );
    if std::env::var("BENCH_WRITE_PAIR_ONLY").is_ok() {
        return;
    }
    // The core pair (writes, then reads) alone runs on binaries of any release, also ones before the
    // commercial domains: how a build compares with an older one (`BACKOFFICE_BIN`).
    let core_only = std::env::var("BENCH_CORE_ONLY").is_ok();
    if !core_only {
        commerce(&setup, &auth, writes.rate).await;
    }

    // Reads of one customer.
    let created = http_client()
        .post(format!("http://{}/api/v1/customers", setup.http_addr))
        .header("authorization", &auth)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("create")
        .json::<serde_json::Value>()
        .await
        .expect("json");
    let id = created["data"]["id"].as_str().expect("id").to_owned();
    let make_get: Make = {
        let (auth, addr) = (auth.clone(), setup.http_addr.clone());
        Arc::new(move |_| {
            Request::get(format!("http://{addr}/api/v1/customers/{id}"))
                .header("host", &addr)
                .header("authorization", &auth)
                .body(Full::new(Bytes::new()))
                .expect("request")
        })
    };
    let reads = load(&setup, make_get, 200).await;
    let init =
        Command::new("pgbench").args(["-i", "-s", "10", "-q", &setup.database_url]).output().expect("pgbench -i");
    assert!(init.status.success(), "pgbench -i failed");
    let select_tps = pgbench(&setup, &["-n", "-S", "-c", &clients, "-j", &threads, "-M", "prepared", "-T", &seconds]);
    print_pair(
        "reads: GET /api/v1/customers/{id} vs pgbench prepared select by primary key",
        reads.rate,
        "reads/s",
        select_tps,
        &format!("selects/s (pgbench -S -c {clients} -M prepared)"),
        &format!("  p50 {:.2} ms  p99 {:.2} ms  errors {}", reads.p50_ms, reads.p99_ms, reads.errors),
    );

    // Cached reads of one warehouse (Style B configuration resource).
    let warehouses = http_client()
        .get(format!("http://{}/api/v1/warehouses", setup.http_addr))
        .header("authorization", &auth)
        .send()
        .await
        .expect("list warehouses")
        .json::<serde_json::Value>()
        .await
        .expect("json");
    let warehouse = warehouses["data"][0]["id"].as_str().expect("the seeded warehouse").to_owned();
    let make_warehouse_get: Make = {
        let (auth, addr) = (auth.clone(), setup.http_addr.clone());
        Arc::new(move |_| {
            Request::get(format!("http://{addr}/api/v1/warehouses/{warehouse}"))
                .header("host", &addr)
                .header("authorization", &auth)
                .body(Full::new(Bytes::new()))
                .expect("request")
        })
    };
    let warehouse_reads = load(&setup, make_warehouse_get, 200).await;
    print_pair(
        "cached reads: GET /api/v1/warehouses/{id} vs pgbench prepared select by primary key",
        warehouse_reads.rate,
        "reads/s",
        select_tps,
        &format!("selects/s (pgbench -S -c {clients} -M prepared)"),
        &format!(
            "  p50 {:.2} ms  p99 {:.2} ms  errors {}",
            warehouse_reads.p50_ms, warehouse_reads.p99_ms, warehouse_reads.errors
        ),
    );
    if core_only {
        return;
    }
    webhooks(&setup, &auth, &receiver).await;
    catalog(&setup, &auth).await;
    drop(service);
    metrics_overhead(&setup, make_post.clone()).await;

    // Rebuild over at least `rebuild_events` events of the rebuilt projection (customer events).
    let existing: i64 =
        psql(&setup.database_url, "select count(*) from events where stream_type = 'customer'").parse().expect("count");
    let missing = (setup.rebuild_events - existing).max(0);
    let org_id = org["organization_id"].as_str().expect("org id");
    psql(
        &setup.database_url,
        &format!(
            "insert into events (org_id, stream_type, stream_id, version, event_id, event_type, schema_version, data, metadata)
             select '{org_id}', 'customer', gen_random_uuid(), 1, gen_random_uuid(), 'CustomerCreated', 1,
                    jsonb_build_object('name', 'Cliente ' || g, 'email', 'c' || g || '@example.com', 'phone', '1144556677',
                        'tax_id', '20267565393', 'tax_id_type', 'CUIL/CUIT', 'tax_category', 'Responsable Inscripto',
                        'person_type', 'FISICA', 'country', 'Argentina', 'province', 'B', 'city', 'La Plata',
                        'address', 'Calle ' || g, 'apartment', null, 'postal_code', '1900'),
                    '{{\"actor\": \"bench\"}}'
             from generate_series(1, {missing}) g"
        ),
    );
    let report: serde_json::Value =
        serde_json::from_str(&backoffice(&setup, &["projections", "rebuild", "customers"])).expect("rebuild json");
    let rate = report["events_per_second"].as_f64().expect("rate");
    println!("rebuild: projections rebuild customers");
    println!(
        "  service : {rate:>10.0} events/s over {} events in {:.2} s",
        report["events"],
        report["seconds"].as_f64().unwrap_or(0.0)
    );
    println!("  target  : {:>10.0} events/s", 20_000.0);
    println!("  ratio   : {:>10.3}", rate / 20_000.0);

    // Reports over a million sale lines, on a service of their own (the phase stops it to load them).
    let service = start_service(&setup);
    reports::reports(&setup, &auth, org_id, service).await;
    let _ = &setup.database;
}
