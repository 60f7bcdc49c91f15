//! What operators see of a process: Prometheus metrics, liveness and readiness, and the status of every
//! follower of the event store (`status.rs`).
//!
//! Metrics are recorded where things happen, through the `metrics` facade (every crate), into the one
//! recorder a process installs here (`metrics-exporter-prometheus`). Figures that belong to no single
//! process (the event store's head, how far each follower and projection is behind, the webhook queue)
//! are read from the database and NATS when `/metrics` is scraped, so every role reports them and a
//! stopped projector shows as lag elsewhere. Roles that serve HTTP serve `/metrics`, `/healthz` and
//! `/readyz` there; the others on `METRICS_ADDR` when it is set.

pub mod status;

use events::bus::Bus;
use metrics::{Unit, describe_counter, describe_gauge, describe_histogram, gauge};
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
    describe_gauge!("backoffice_nats_connected", "1 while this process is connected to NATS.");
    describe_gauge!("backoffice_event_store_head_position", "The highest position appended to the event store.");
    describe_gauge!("backoffice_follower_position", "Position of the last event a follower (relay, sealer) handled.");
    describe_gauge!(
        "backoffice_follower_lag_events",
        "Committed events a follower has not handled yet (counted up to 100000)."
    );
    describe_gauge!(
        "backoffice_follower_lag_seconds",
        Unit::Seconds,
        "Age of the oldest committed event a follower has not handled (0 when none)."
    );
    describe_gauge!("backoffice_jetstream_stream_last_sequence", "The last sequence of the events stream.");
    describe_gauge!(
        "backoffice_jetstream_consumer_pending",
        "Messages a durable consumer has yet to be delivered (the server's num_pending)."
    );
    describe_gauge!(
        "backoffice_jetstream_consumer_ack_pending",
        "Messages delivered to a durable consumer and not yet acknowledged."
    );
    describe_gauge!(
        "backoffice_projection_position",
        "Event-store position of the newest event a projection partition applied."
    );
    describe_gauge!(
        "backoffice_projection_stream_sequence",
        "Stream sequence up to which a projection partition acknowledged every message."
    );
    describe_gauge!(
        "backoffice_projection_lag_events",
        "Messages a projection partition has not applied and acknowledged yet."
    );
    describe_gauge!(
        "backoffice_projection_lag_seconds",
        Unit::Seconds,
        "How long a projection partition has been behind (age of its first unacknowledged message; 0 when caught up)."
    );
    describe_gauge!(
        "backoffice_projection_last_progress_timestamp_seconds",
        Unit::Seconds,
        "When a projection partition last acknowledged a message (Unix time)."
    );
    describe_gauge!(
        "backoffice_projection_running",
        "1 while a projector pulls from the projection partition's consumer."
    );
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
    describe_gauge!(
        "backoffice_webhook_deliveries",
        "Webhook deliveries waiting, by state: pending (not attempted yet), retrying (failed, awaiting the next attempt)."
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
    describe_gauge!("backoffice_db_pool_connections", "Database pool connections, by state: in_use, idle.");
    describe_gauge!("backoffice_db_pool_max_connections", "The database pool's size limit (DATABASE_POOL_SIZE).");
    describe_gauge!(
        "backoffice_db_pool_saturated",
        "1 when every connection the pool may open is in use, so the next acquisition waits."
    );
}

/// Sets the gauges read at scrape time: the pool and NATS connection of this process, and the
/// status of every follower of the event store.
pub async fn collect(pool: &PgPool, bus: Option<&Bus>) {
    let in_use = pool.size() as usize - pool.num_idle().min(pool.size() as usize);
    let max = pool.options().get_max_connections();
    gauge!("backoffice_db_pool_connections", "state" => "in_use").set(in_use as f64);
    gauge!("backoffice_db_pool_connections", "state" => "idle").set(pool.num_idle() as f64);
    gauge!("backoffice_db_pool_max_connections").set(f64::from(max));
    gauge!("backoffice_db_pool_saturated").set(if in_use as u32 >= max { 1.0 } else { 0.0 });
    if let Some(bus) = bus {
        gauge!("backoffice_nats_connected").set(if bus.is_connected() { 1.0 } else { 0.0 });
    }
    let status = match tokio::time::timeout(SCRAPE_TIMEOUT, status::read(pool, bus)).await {
        Ok(Ok(status)) => status,
        Ok(Err(error)) => {
            tracing::warn!(%error, "metrics: cannot read the status from the database");
            return;
        }
        Err(_) => {
            tracing::warn!("metrics: the status took too long to read");
            return;
        }
    };
    gauge!("backoffice_event_store_head_position").set(status.event_store.head_position as f64);
    for f in &status.followers {
        gauge!("backoffice_follower_position", "follower" => f.name).set(f.position as f64);
        gauge!("backoffice_follower_lag_events", "follower" => f.name).set(f.lag_events as f64);
        gauge!("backoffice_follower_lag_seconds", "follower" => f.name).set(f.lag_seconds);
    }
    if let Some(stream) = &status.stream {
        gauge!("backoffice_jetstream_stream_last_sequence").set(stream.last_sequence as f64);
    }
    for p in &status.projections {
        let labels = [("projection", p.projection.to_owned()), ("partition", p.partition.clone())];
        if let Some(position) = p.position {
            gauge!("backoffice_projection_position", &labels).set(position as f64);
        }
        if let Some(sequence) = p.stream_sequence {
            gauge!("backoffice_projection_stream_sequence", &labels).set(sequence as f64);
        }
        gauge!("backoffice_projection_lag_events", &labels).set(p.lag_events as f64);
        gauge!("backoffice_projection_lag_seconds", &labels).set(p.lag_seconds);
        gauge!("backoffice_projection_running", &labels).set(if p.running { 1.0 } else { 0.0 });
        if let Some(at) = p.last_progress_at {
            gauge!("backoffice_projection_last_progress_timestamp_seconds", &labels)
                .set(at.unix_timestamp_nanos() as f64 / 1e9);
        }
        if let Some(consumer) = &p.consumer {
            gauge!("backoffice_jetstream_consumer_pending", "consumer" => consumer.clone()).set(p.pending as f64);
            gauge!("backoffice_jetstream_consumer_ack_pending", "consumer" => consumer.clone())
                .set(p.ack_pending as f64);
        }
    }
    gauge!("backoffice_webhook_deliveries", "state" => "pending").set(status.webhooks.pending as f64);
    gauge!("backoffice_webhook_deliveries", "state" => "retrying").set(status.webhooks.retrying as f64);
}

/// The Prometheus text of this process, after collecting the scrape-time figures.
pub async fn render(pool: &PgPool, bus: Option<&Bus>) -> Response {
    let Some(handle) = install() else {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .content_type("text/plain")
            .body("metrics are off in this process (BACKOFFICE_METRICS=off)\n");
    };
    collect(pool, bus).await;
    Response::builder().content_type("text/plain; version=0.0.4").body(handle.render())
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
            Ok(Ok(status)) => {
                let mut stopped: Vec<&str> = status::running_by_projection(&status)
                    .into_iter()
                    .filter(|(_, running)| !running)
                    .map(|(name, _)| name)
                    .collect();
                stopped.sort_unstable();
                problems.extend(stopped.into_iter().map(|name| format!("projection {name}: no projector running")));
            }
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
