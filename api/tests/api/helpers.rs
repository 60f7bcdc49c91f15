//! The one test application builder: a real gateway, command worker, relay and projectors on this
//! test's fresh database and its own NATS prefix, driven over real HTTP.

use api::roles::{self, ProjectionSet, Roles};
use events::bus::Bus;
use projections::Partition;
use projections::webhooks::dispatch::SenderConfig;
use reqwest::{Method, Response};
use serde_json::Value;
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

/// Limits no functional test reaches; the rate-limit tests make organizations of their own.
pub const GENEROUS: commands::organization::RateLimits =
    commands::organization::RateLimits { per_minute: 1_000_000, per_hour: 100_000_000 };

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub pool: PgPool,
    pub bus: Bus,
    pub api_key: String,
    pub org_id: Uuid,
    _tasks: tokio::task::JoinSet<()>,
}

pub fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

impl TestApp {
    pub async fn spawn(pool: PgPool) -> Self {
        Self::spawn_with_sender(pool, None).await
    }

    /// Also runs the webhook dispatcher with `sender` (the webhooks projection always runs).
    pub async fn spawn_with_sender(pool: PgPool, sender: Option<SenderConfig>) -> Self {
        Self::spawn_with(pool, sender, projections::all()).await
    }

    /// Runs only some projections (to show what a lagging projection does and does not hold up).
    pub async fn spawn_without(pool: PgPool, absent: &[&str]) -> Self {
        let running = projections::all().into_iter().filter(|p| !absent.contains(&p.name())).collect();
        Self::spawn_with(pool, None, running).await
    }

    async fn spawn_with(
        pool: PgPool,
        sender: Option<SenderConfig>,
        running: Vec<std::sync::Arc<dyn projections::Projection>>,
    ) -> Self {
        // `TEST_LOG=debug` (or any filter) shows the service's own log lines for one test.
        if let Ok(filter) = std::env::var("TEST_LOG") {
            let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
        }
        let prefix = format!("t{}", Uuid::now_v7().simple());
        let bus = Bus::connect(&nats_url(), &prefix, "test").await.expect("NATS");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !bus.is_connected() {
            assert!(tokio::time::Instant::now() < deadline, "NATS did not answer");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("listener");
        let set = ProjectionSet { projections: running, partition: Partition::WHOLE, sender };
        let running = roles::start(
            pool.clone(),
            bus.clone(),
            Roles { api: Some(listener), commands: true, projections: Some(set) },
            Duration::from_secs(10),
        )
        .await
        .expect("roles start");
        let base = format!("http://{}", running.http_addr.expect("http address"));
        let created =
            commands::organization::create_organization_with(&pool, "Almacén de Prueba", GENEROUS).await.expect("org");
        Self {
            base,
            client: http_client(),
            pool,
            bus,
            api_key: created.api_key,
            org_id: created.organization_id,
            _tasks: running.tasks,
        }
    }

    /// Another organization with its own full-scope key.
    pub async fn other_org(&self) -> (Uuid, String) {
        let created =
            commands::organization::create_organization_with(&self.pool, "Otra Empresa", GENEROUS).await.expect("org");
        (created.organization_id, created.api_key)
    }

    pub async fn request(&self, method: Method, path: &str, key: Option<&str>, body: Option<&Value>) -> Response {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send().await.expect("request sent")
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path, Some(&self.api_key), None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Response {
        self.request(Method::POST, path, Some(&self.api_key), Some(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Response {
        self.request(Method::PUT, path, Some(&self.api_key), Some(body)).await
    }

    pub async fn event_count(&self) -> i64 {
        sqlx::query_scalar("select count(*) from events").fetch_one(&self.pool).await.expect("count")
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // The test's JetStream stream lives on a shared server: remove it. And the service's sessions on
        // the test database end now, so dropping the database after the test never waits on them.
        let (url, stream) = (nats_url(), self.bus.stream_name());
        let database = self.pool.connect_options().get_database().map(str::to_owned);
        let admin = std::env::var("DATABASE_URL").ok();
        let _ = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            runtime.block_on(async move {
                if let Ok(client) = async_nats::connect(url).await {
                    let _ = async_nats::jetstream::new(client).delete_stream(stream).await;
                }
                if let (Some(database), Some(admin)) = (database, admin)
                    && let Ok(mut conn) = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await
                {
                    let _ = sqlx::query(
                        "select pg_terminate_backend(pid) from pg_stat_activity
                         where datname = $1 and pid <> pg_backend_pid()",
                    )
                    .bind(database)
                    .execute(&mut conn)
                    .await;
                }
            });
        })
        .join();
    }
}

/// Reads a JSON body, asserting the status first.
pub async fn json(response: Response, status: u16) -> Value {
    let actual = response.status().as_u16();
    let text = response.text().await.expect("body");
    assert_eq!(actual, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

/// Asserts the v1 error envelope and returns it.
pub async fn error(response: Response, status: u16, kind: &str) -> Value {
    let header = response.headers().get("service-request-id").map(|v| v.to_str().unwrap_or_default().to_owned());
    let body = json(response, status).await;
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert!(body["error"]["code"].as_str().is_some_and(|c| !c.is_empty()), "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    assert!(body["error"]["retryable"].is_boolean(), "{body}");
    assert!(body["error"]["details"].is_array(), "{body}");
    assert_eq!(header.as_deref(), body["request_id"].as_str(), "Service-Request-Id matches request_id");
    body
}

/// The fields named in `details[]`.
pub fn detail_fields(body: &Value) -> Vec<String> {
    body["error"]["details"]
        .as_array()
        .map(|d| d.iter().filter_map(|x| x["field"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// A plain HTTP client (the process's TLS provider installed first, as reqwest requires).
pub fn http_client() -> reqwest::Client {
    projections::webhooks::dispatch::install_crypto_provider();
    reqwest::Client::new()
}
