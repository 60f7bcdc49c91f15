//! What operators see of a process: Prometheus metrics, liveness and readiness, and the status of every
//! follower of the event store (`status.rs`).
//!
//! Metrics are recorded where things happen, through the `metrics` facade (every crate), into the one
//! recorder a process installs here (`metrics-exporter-prometheus`). Figures that belong to no single
//! process (the event store's head, how far each follower and projection is behind, the webhook queue)
//! are read from the database and NATS when `/metrics` is scraped, so every role reports them and a
//! stopped projector shows as lag elsewhere. Roles that serve HTTP serve `/metrics`, `/healthz` and
//! `/readyz` there; the others on `METRICS_ADDR` when it is set.

pub mod http;
pub mod status;

use events::bus::Bus;
use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use poem::http::StatusCode;
use poem::{EndpointExt, Response, Route, get, handler, web::Data};
use sqlx::PgPool;
use std::sync::OnceLock;
use std::time::Duration;

/// Histogram buckets for durations, in seconds: from a fast read (half a millisecond) to the longest
/// read-your-writes wait and webhook attempt.
const SECONDS_BUCKETS: &[f64] =
    &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// Longest a scrape waits for the database and NATS before answering with the process's own figures.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs this process's recorder (once) and describes every metric; `BACKOFFICE_METRICS=off` leaves
/// the facade without a recorder, so recording costs nothing (the benchmark's baseline).
pub fn install() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            if std::env::var("BACKOFFICE_METRICS").is_ok_and(|value| value == "off") {
                return None;
            }
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
                .ok()?
                .build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok()?;
            describe();
            // Histogram samples wait in lock-free buckets until folded in: do so even when nobody scrapes.
            let upkeep = handle.clone();
            std::thread::Builder::new()
                .name("metrics-upkeep".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(Duration::from_secs(5));
                        upkeep.run_upkeep();
                    }
                })
                .ok()?;
            Some(handle)
        })
        .as_ref()
}

/// The `# HELP` of every metric the service records.
fn describe() {
    describe_histogram!(
        "backoffice_http_request_duration_seconds",
        Unit::Seconds,
        "HTTP requests by route template, method and status class, from arrival to the response."
    );
    describe_gauge!("backoffice_http_requests_in_flight", "HTTP requests being served.");
    describe_counter!("backoffice_http_responses_total", "HTTP responses by status class.");
    describe_counter!("backoffice_rate_limited_total", "Requests refused with 429 for the organization's quota.");
    describe_histogram!(
        "backoffice_read_wait_seconds",
        Unit::Seconds,
        "How long a write waited for its projection to apply it (read-your-writes), by projection."
    );
    describe_counter!(
        "backoffice_read_wait_timeouts_total",
        "Writes answered 503 READ_MODEL_PENDING because their projection did not catch up in time."
    );
    describe_counter!(
        "backoffice_commands_total",
        "Commands by type and outcome: accepted, rejected (the domain refused), conflict (optimistic \
         concurrency retries ran out), failed (storage or internal), and retried (decided again after \
         a concurrent write to its stream; counted besides the final outcome)."
    );
    describe_histogram!(
        "backoffice_command_duration_seconds",
        Unit::Seconds,
        "Commands by type, from the worker taking them to the reply."
    );
    describe_histogram!(
        "backoffice_command_phase_seconds",
        Unit::Seconds,
        "Phases of a command by type: decide (load and the pure decision) and append (the events written)."
    );
    describe_counter!(
        "backoffice_idempotent_replays_total",
        "Requests answered with the stored outcome of an earlier request under the same Idempotency-Key."
    );
    describe_counter!("backoffice_relay_published_total", "Events the relay published to JetStream.");
    describe_counter!("backoffice_relay_publish_failures_total", "Relay batches that failed to publish.");
    describe_counter!(
        "backoffice_projection_events_applied_total",
        "Events a projection partition applied (this process)."
    );
    describe_histogram!(
        "backoffice_projection_batch_duration_seconds",
        Unit::Seconds,
        "Projector batches, from decoding to the committed transaction (this process)."
    );
    describe_gauge!(
        "backoffice_projection_rebuild_events",
        "Events the last rebuild in this process folded into its shadow tables so far."
    );
    describe_gauge!(
        "backoffice_projection_rebuild_position",
        "Event-store position the last rebuild in this process has read up to."
    );
    describe_gauge!(
        "backoffice_projection_rebuild_target_position",
        "The event store's head position when the last rebuild in this process started."
    );
    describe_counter!(
        "backoffice_webhook_deliveries_completed_total",
        "Webhook deliveries that reached a final state in this process: succeeded, failed (attempts exhausted) or cancelled (their endpoint was disabled or deleted)."
    );
    describe_histogram!(
        "backoffice_webhook_attempt_duration_seconds",
        Unit::Seconds,
        "Webhook attempts by outcome (success, failure)."
    );
    describe_histogram!(
        "backoffice_webhook_delivery_latency_seconds",
        Unit::Seconds,
        "From the event's commit to its successful delivery."
    );
    describe_counter!(
        "backoffice_webhook_endpoint_failures_total",
        "Failed webhook attempts by endpoint id (never its URL)."
    );
}

/// One gauge family read at scrape time, written as Prometheus text.
struct Family<'a> {
    out: &'a mut String,
}

impl<'a> Family<'a> {
    fn new(out: &'a mut String, name: &str, help: &str) -> Self {
        use std::fmt::Write;
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        Self { out }
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        use std::fmt::Write;
        let labels: Vec<String> = labels
            .iter()
            .map(|(key, value)| format!("{key}=\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"")))
            .collect();
        let labels = if labels.is_empty() { String::new() } else { format!("{{{}}}", labels.join(",")) };
        let _ = writeln!(self.out, "{name}{labels} {value}");
    }
}

/// The figures read at scrape time, as Prometheus text written afresh on every scrape (so a consumer
/// that disappeared, or a status that could not be read, leaves no stale series behind): this process's
/// pool and NATS connection, and where every follower of the event store stands.
pub async fn scrape_time(pool: &PgPool, bus: Option<&Bus>) -> String {
    let mut out = String::new();
    let size = pool.size() as usize;
    let idle = pool.num_idle().min(size);
    let max = pool.options().get_max_connections();
    let name = "backoffice_db_pool_connections";
    let mut family = Family::new(&mut out, name, "Database pool connections of this process, by state: in_use, idle.");
    family.sample(name, &[("state", "in_use")], (size - idle) as f64);
    family.sample(name, &[("state", "idle")], idle as f64);
    let name = "backoffice_db_pool_max_connections";
    Family::new(&mut out, name, "The database pool's size limit (DATABASE_POOL_SIZE).").sample(
        name,
        &[],
        f64::from(max),
    );
    let name = "backoffice_db_pool_saturated";
    Family::new(&mut out, name, "1 when every connection the pool may open is in use, so the next acquisition waits.")
        .sample(name, &[], if size - idle >= max as usize { 1.0 } else { 0.0 });
    if let Some(bus) = bus {
        let name = "backoffice_nats_connected";
        Family::new(&mut out, name, "1 while this process is connected to NATS.").sample(
            name,
            &[],
            if bus.is_connected() { 1.0 } else { 0.0 },
        );
    }
    let read = tokio::time::timeout(SCRAPE_TIMEOUT, status::read(pool, bus)).await;
    let status = match read {
        Ok(Ok(status)) => Some(status),
        Ok(Err(error)) => {
            tracing::warn!(%error, "metrics: cannot read the status from the database");
            None
        }
        Err(_) => {
            tracing::warn!("metrics: the status took too long to read");
            None
        }
    };
    let name = "backoffice_status_up";
    Family::new(
        &mut out,
        name,
        "1 when this scrape read the status of the event store's followers (else their figures are absent).",
    )
    .sample(name, &[], if status.is_some() { 1.0 } else { 0.0 });
    if let Some(status) = status {
        status_families(&mut out, &status);
    }
    out
}

fn status_families(out: &mut String, status: &status::Status) {
    let name = "backoffice_event_store_head_position";
    Family::new(out, name, "The highest position appended to the event store.").sample(
        name,
        &[],
        status.event_store.head_position as f64,
    );
    type FollowerField = fn(&status::Follower) -> f64;
    let followers: [(&str, &str, FollowerField); 3] = [
        ("backoffice_follower_position", "Position of the last event a follower (relay, sealer) handled.", |f| {
            f.position as f64
        }),
        (
            "backoffice_follower_lag_events",
            "Committed events a follower has not handled yet (counted up to 100000).",
            |f| f.lag_events as f64,
        ),
        (
            "backoffice_follower_lag_seconds",
            "Age of the oldest committed event a follower has not handled (0 when none).",
            |f| f.lag_seconds,
        ),
    ];
    for (name, help, value) in followers {
        let mut family = Family::new(out, name, help);
        for f in &status.followers {
            family.sample(name, &[("follower", f.name)], value(f));
        }
    }
    let Some(stream) = &status.stream else { return };
    let name = "backoffice_jetstream_stream_last_sequence";
    Family::new(out, name, "The last sequence of the events stream.").sample(name, &[], stream.last_sequence as f64);
    type Field = fn(&status::ProjectionPartition) -> Option<f64>;
    let projections: [(&str, &str, Field); 6] = [
        (
            "backoffice_projection_position",
            "Event-store position of the newest event a projection partition applied.",
            |p| p.position.map(|v| v as f64),
        ),
        (
            "backoffice_projection_stream_sequence",
            "Stream sequence up to which a projection partition acknowledged every message.",
            |p| p.stream_sequence.map(|v| v as f64),
        ),
        (
            "backoffice_projection_lag_events",
            "Messages a projection partition has not applied and acknowledged yet.",
            |p| p.lag_events.map(|v| v as f64),
        ),
        (
            "backoffice_projection_lag_seconds",
            "How long a projection partition has been behind (age of its oldest unacknowledged message; 0 when caught up).",
            |p| p.lag_seconds,
        ),
        (
            "backoffice_projection_running",
            "1 while a projector is attached to the projection partition's consumer.",
            |p| p.running.map(|r| if r { 1.0 } else { 0.0 }),
        ),
        (
            "backoffice_projection_last_progress_timestamp_seconds",
            "When a projection partition last acknowledged a message (Unix time).",
            |p| p.last_progress_at.map(|at| at.unix_timestamp_nanos() as f64 / 1e9),
        ),
    ];
    for (name, help, value) in projections {
        let mut family = Family::new(out, name, help);
        for p in &status.projections {
            if let Some(value) = value(p) {
                family.sample(name, &[("projection", p.projection), ("partition", &p.partition)], value);
            }
        }
    }
    let consumers: [(&str, &str, Field); 2] = [
        (
            "backoffice_jetstream_consumer_pending",
            "Messages a durable consumer has yet to be delivered (the server's num_pending).",
            |p| p.pending.map(|v| v as f64),
        ),
        (
            "backoffice_jetstream_consumer_ack_pending",
            "Messages delivered to a durable consumer and not yet acknowledged.",
            |p| p.ack_pending.map(|v| v as f64),
        ),
    ];
    for (name, help, value) in consumers {
        let mut family = Family::new(out, name, help);
        for p in &status.projections {
            if let (Some(consumer), Some(value)) = (&p.consumer, value(p)) {
                family.sample(name, &[("consumer", consumer)], value);
            }
        }
    }
    let name = "backoffice_webhook_deliveries";
    let mut family = Family::new(
        out,
        name,
        "Webhook deliveries waiting, by state: pending (not attempted yet), retrying (failed, awaiting the next attempt).",
    );
    family.sample(name, &[("state", "pending")], status.webhooks.pending as f64);
    family.sample(name, &[("state", "retrying")], status.webhooks.retrying as f64);
}

/// The Prometheus text of this process: what its recorder holds, then the figures read at scrape time.
pub async fn render(pool: &PgPool, bus: Option<&Bus>) -> Response {
    let Some(handle) = install() else {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .content_type("text/plain")
            .body("metrics are off in this process (BACKOFFICE_METRICS=off)\n");
    };
    http::publish();
    let mut text = handle.render();
    text.push_str(&scrape_time(pool, bus).await);
    Response::builder().content_type("text/plain; version=0.0.4").body(text)
}

/// What a process needs ready before it serves: the database and NATS, and for a gateway every
/// projection it waits on with a projector pulling from it.
pub async fn readiness(pool: &PgPool, bus: &Bus, gateway: bool) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let database = tokio::time::timeout(Duration::from_secs(2), sqlx::query("select 1").execute(pool)).await;
    if !matches!(database, Ok(Ok(_))) {
        problems.push("database: not reachable".to_owned());
    }
    if !bus.is_connected() {
        problems.push("nats: not connected".to_owned());
    }
    if gateway && problems.is_empty() {
        match tokio::time::timeout(SCRAPE_TIMEOUT, status::read(pool, Some(bus))).await {
            Ok(Ok(status)) => match status::unattached(&status) {
                Some(missing) => {
                    problems.extend(missing.into_iter().map(|name| format!("projection {name}: no projector running")))
                }
                None => problems.push("nats: the event stream cannot be read".to_owned()),
            },
            _ => problems.push("status: cannot be read".to_owned()),
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// The answer of `/readyz`: 200 `{"status":"ready"}`, or 503 naming what is not ready.
pub fn readiness_response(result: Result<(), Vec<String>>) -> Response {
    let (status, body) = match result {
        Ok(()) => (StatusCode::OK, serde_json::json!({ "status": "ready" })),
        Err(problems) => {
            (StatusCode::SERVICE_UNAVAILABLE, serde_json::json!({ "status": "not_ready", "problems": problems }))
        }
    };
    Response::builder().status(status).content_type("application/json").body(body.to_string())
}

/// The answer of `/healthz`: the process is alive and serving.
pub fn liveness_response() -> Response {
    Response::builder().content_type("application/json").body(serde_json::json!({ "status": "ok" }).to_string())
}

/// What a role without HTTP serves on `METRICS_ADDR` (an operator command that runs no role, such as a
/// rebuild, has no bus).
#[derive(Clone)]
struct Observed {
    pool: PgPool,
    bus: Option<Bus>,
}

#[handler]
async fn metrics_endpoint(Data(observed): Data<&Observed>) -> Response {
    render(&observed.pool, observed.bus.as_ref()).await
}

#[handler]
async fn readyz_endpoint(Data(observed): Data<&Observed>) -> Response {
    let result = match &observed.bus {
        Some(bus) => readiness(&observed.pool, bus, false).await,
        None => Err(vec!["this process runs an operator command, not a role".to_owned()]),
    };
    readiness_response(result)
}

#[handler]
fn healthz_endpoint() -> Response {
    liveness_response()
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` for a role without HTTP of its own.
pub async fn serve(listener: tokio::net::TcpListener, pool: PgPool, bus: Option<Bus>) {
    let app = Route::new()
        .at("/metrics", get(metrics_endpoint))
        .at("/healthz", get(healthz_endpoint))
        .at("/readyz", get(readyz_endpoint))
        .data(Observed { pool, bus });
    let acceptor = match listener.into_std().and_then(poem::listener::TcpAcceptor::from_std) {
        Ok(acceptor) => acceptor,
        Err(error) => {
            tracing::error!(%error, "metrics listener unusable");
            return;
        }
    };
    if let Err(error) = poem::Server::new_with_acceptor(acceptor).run(app).await {
        tracing::error!(%error, "metrics server stopped");
    }
}
