//! Running the real binary (and, when a test needs to stop it, a private NATS server).

use reqwest::StatusCode;
use serde_json::Value;
use sqlx::PgPool;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use uuid::Uuid;

pub const BINARY: &str = env!("CARGO_BIN_EXE_backoffice");

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// The URL of this test's database (the pool points at it).
pub fn database_url(pool: &PgPool) -> String {
    let options = pool.connect_options();
    format!(
        "postgres://{}@{}:{}/{}",
        options.get_username(),
        options.get_host(),
        options.get_port(),
        options.get_database().expect("database name")
    )
}

/// Environment of one deployment: database, NATS, prefix, HTTP address.
#[derive(Clone)]
pub struct Deployment {
    pub database_url: String,
    pub nats_url: String,
    pub prefix: String,
    pub http_addr: String,
}

impl Deployment {
    pub fn new(pool: &PgPool, nats_url: &str) -> Self {
        Self {
            database_url: database_url(pool),
            nats_url: nats_url.to_owned(),
            prefix: format!("p{}", Uuid::now_v7().simple()),
            http_addr: format!("127.0.0.1:{}", free_port()),
        }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.http_addr)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BINARY);
        command
            .args(args)
            .env("DATABASE_URL", &self.database_url)
            .env("NATS_URL", &self.nats_url)
            .env("NATS_PREFIX", &self.prefix)
            .env("HTTP_ADDR", &self.http_addr)
            // Services side by side: each `all` serves its fiscal simulator on a port of its own.
            .env("FISCAL_SIMULATOR_ADDR", "127.0.0.1:0")
            // Tests run side by side on one Postgres: keep each service's share of connections small.
            .env("DATABASE_POOL_SIZE", "8")
            .env("RUST_LOG", "warn");
        command
    }

    /// Runs a CLI command to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("backoffice runs")
    }

    /// Runs a CLI command to completion with `env` besides the deployment's.
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args).envs(env.iter().copied()).output().expect("backoffice runs")
    }

    /// Starts `backoffice all` and waits until it is healthy.
    pub async fn start(&self) -> Service {
        let child = self.command(&["all"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
        let service = Service { child };
        let client = http_client();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let health = client.get(format!("{}/readyz", self.base())).send().await;
            if health.is_ok_and(|r| r.status() == StatusCode::OK) {
                return service;
            }
            assert!(tokio::time::Instant::now() < deadline, "the service did not become healthy");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts `backoffice <args>` (one role) with `env` besides the deployment's, its log lines going
    /// to the file `log`.
    pub fn spawn_role(&self, args: &[&str], env: &[(&str, &str)], log: &std::path::Path) -> Service {
        let mut command = self.command(args);
        command.envs(env.iter().copied());
        let stderr = std::fs::File::create(log).expect("log file");
        let child = command.stdout(Stdio::null()).stderr(stderr).spawn().expect("spawn");
        Service { child }
    }

    /// Starts a CLI command that may wait on something, its output going to the file `stdout` and its
    /// messages to the file `stderr`.
    pub fn spawn_command(&self, args: &[&str], stdout: &std::path::Path, stderr: &std::path::Path) -> Service {
        let stdout = std::fs::File::create(stdout).expect("output file");
        let stderr = std::fs::File::create(stderr).expect("log file");
        let child = self.command(args).stdout(stdout).stderr(stderr).spawn().expect("spawn");
        Service { child }
    }

    pub async fn stream_messages(&self) -> u64 {
        let client = async_nats::connect(self.nats_url.as_str()).await.expect("nats");
        let bus = events::bus::Bus::from_client(client, &self.prefix);
        match bus.js.get_stream(bus.stream_name()).await {
            Ok(stream) => stream.get_info().await.map(|i| i.state.messages).unwrap_or(0),
            Err(_) => 0,
        }
    }

    pub async fn delete_stream(&self) {
        if let Ok(client) = async_nats::connect(self.nats_url.as_str()).await {
            let bus = events::bus::Bus::from_client(client, &self.prefix);
            let _ = bus.js.delete_stream(bus.stream_name()).await;
        }
    }
}

pub struct Service {
    child: Child,
}

impl Service {
    /// SIGTERM, as `docker stop` and systemd send it: the process's exit status once it has stopped.
    pub async fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(sent.success(), "SIGTERM was not delivered");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("the child's status") {
                return status;
            }
            assert!(tokio::time::Instant::now() < deadline, "the service did not stop on SIGTERM");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The exit status once the process has ended on its own; none while it runs.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().expect("the child's status")
    }

    /// SIGKILL: no chance to flush or clean up.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private NATS server with JetStream and its own store, which a test may stop and restart.
pub struct NatsServer {
    pub port: u16,
    pub store: PathBuf,
    child: Option<Child>,
}

impl NatsServer {
    pub async fn start() -> Self {
        let port = free_port();
        let store = std::env::temp_dir().join(format!("backoffice-test-nats-{}", Uuid::now_v7().simple()));
        let mut server = Self { port, store, child: None };
        server.restart().await;
        server
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub async fn restart(&mut self) {
        let binary = std::env::var("NATS_SERVER_BIN").unwrap_or_else(|_| "nats-server".into());
        let child = Command::new(binary)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string(), "-js", "-sd"])
            .arg(&self.store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server runs (install the nats-server package or set NATS_SERVER_BIN)");
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_err() {
            assert!(tokio::time::Instant::now() < deadline, "nats-server did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

pub fn shared_nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

/// Creates an organization through the CLI, as an operator would.
pub fn create_org(deployment: &Deployment, name: &str) -> (Uuid, String) {
    // Generous limits: these tests are about crashes and outages, not quotas.
    let output = deployment.run(&[
        "admin",
        "create-org",
        "--name",
        name,
        "--rate-limit-per-minute",
        "1000000",
        "--rate-limit-per-hour",
        "100000000",
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let created: Value = serde_json::from_slice(&output.stdout).expect("create-org prints JSON");
    let org = created["organization_id"].as_str().expect("organization_id").parse().expect("uuid");
    (org, created["api_key"].as_str().expect("api_key").to_owned())
}

/// Customers created by writers that keep going until told to stop. Only 201 answers count as
/// acknowledged; every other answer must be a retryable envelope or a refused connection.
pub struct Writers {
    pub acked: Arc<Mutex<Vec<String>>>,
    pub refused: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Writers {
    pub fn start(base: &str, key: &str, count: usize) -> Self {
        let acked = Arc::new(Mutex::new(Vec::new()));
        let refused = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let client = {
            projections::webhooks::dispatch::install_crypto_provider();
            reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client")
        };
        let tasks = (0..count)
            .map(|w| {
                let (acked, refused, stop, client) = (acked.clone(), refused.clone(), stop.clone(), client.clone());
                let (url, key) = (format!("{base}/api/v1/customers"), key.to_owned());
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let body = serde_json::json!({"name": format!("writer {w} #{n}")});
                        match client.post(&url).bearer_auth(&key).json(&body).send().await {
                            Ok(response) if response.status() == StatusCode::CREATED => {
                                let body: Value = response.json().await.expect("json");
                                acked.lock().await.push(body["data"]["id"].as_str().expect("id").to_owned());
                            }
                            Ok(response) => {
                                let status = response.status();
                                let body: Value = response.json().await.expect("errors are JSON envelopes");
                                assert!(status.is_server_error(), "unexpected {status}: {body}");
                                assert!(body["error"]["type"].is_string(), "{body}");
                                refused.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            Err(_) => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                        }
                    }
                })
            })
            .collect();
        Self { acked, refused, stop, tasks }
    }

    pub async fn acked_count(&self) -> usize {
        self.acked.lock().await.len()
    }

    pub async fn wait_for_acked(&self, count: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while self.acked_count().await < count {
            assert!(tokio::time::Instant::now() < deadline, "writes did not progress");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn finish(self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await.expect("writer");
        }
        self.acked.lock().await.clone()
    }
}

/// Waits until `check` holds, polling.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every acknowledged customer is readable; the read model holds each created customer exactly once;
/// the stream holds each event exactly once.
pub async fn assert_nothing_lost_or_doubled(pool: &PgPool, deployment: &Deployment, key: &str, acked: &[String]) {
    let client = http_client();
    for id in acked {
        let response = client.get(format!("{}/api/v1/customers/{id}", deployment.base())).bearer_auth(key).send().await;
        assert_eq!(response.expect("sent").status(), StatusCode::OK, "acknowledged customer {id} was lost");
    }
    let distinct: i64 =
        sqlx::query_scalar("select count(distinct stream_id) from events where event_type = 'CustomerCreated'")
            .fetch_one(pool)
            .await
            .expect("count");
    eventually("the read model has every created customer", || async {
        let rows: i64 = sqlx::query_scalar("select count(*) from customers_view").fetch_one(pool).await.expect("count");
        rows == distinct
    })
    .await;
    let events: i64 = sqlx::query_scalar("select count(*) from events").fetch_one(pool).await.expect("count");
    eventually("the stream holds every event once", || async { deployment.stream_messages().await == events as u64 })
        .await;
    let unique = acked.iter().collect::<std::collections::HashSet<_>>().len();
    assert_eq!(unique, acked.len(), "no customer was acknowledged twice");
}

/// A plain HTTP client (the process's TLS provider installed first, as reqwest requires).
pub fn http_client() -> reqwest::Client {
    projections::webhooks::dispatch::install_crypto_provider();
    reqwest::Client::new()
}
