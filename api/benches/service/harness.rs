//! The harness every phase runs on: the settings, the service's process and the `backoffice` and
//! `psql` commands, pgbench, the HTTP load and its figures, and the printing of a pair. A leaf: it
//! imports no other module of the benchmark.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

pub struct Setup {
    pub ca_file: String,
    pub admin_url: String,
    pub database_url: String,
    pub database: String,
    pub http_addr: String,
    pub prefix: String,
    pub seconds: u64,
    /// Connections of the HTTP load (16 for the figures the issue asks for; `BENCH_CONNECTIONS`
    /// changes it for diagnosis, e.g. 1 to see the unloaded latency of each path). pgbench uses as many.
    pub connections: usize,
    /// Alternated rounds of the write pair (`BENCH_WRITE_ROUNDS`, 5 by default: the virtual machine's
    /// speed swings within seconds).
    pub write_rounds: usize,
    pub rebuild_events: i64,
    pub binary: String,
}

pub struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn psql(url: &str, sql: &str) -> String {
    let out =
        Command::new("psql").args([url, "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql]).output().expect("psql runs");
    assert!(out.status.success(), "psql failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

pub fn backoffice(setup: &Setup, args: &[&str]) -> String {
    let out = backoffice_output(setup, args);
    assert!(out.status.success(), "backoffice {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Runs an operator command a binary of an older release may not have (`BACKOFFICE_BIN`): false when
/// it does not know the subcommand, so a phase can compare builds of either side of it.
pub fn backoffice_if_known(setup: &Setup, args: &[&str]) -> bool {
    let out = backoffice_output(setup, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("unrecognized subcommand") {
        return false;
    }
    assert!(out.status.success(), "backoffice {args:?} failed: {stderr}");
    true
}

fn backoffice_output(setup: &Setup, args: &[&str]) -> std::process::Output {
    Command::new(&setup.binary)
        .args(args)
        .env("DATABASE_URL", &setup.database_url)
        .env("NATS_PREFIX", &setup.prefix)
        .env("HTTP_ADDR", &setup.http_addr)
        .env("RUST_LOG", env("BENCH_SERVICE_LOG", "warn"))
        .output()
        .expect("backoffice runs")
}

pub fn start_service(setup: &Setup) -> Service {
    start_service_metrics(setup, true)
}

/// Starts `backoffice all`, with its metrics recorder or without it (`BACKOFFICE_METRICS=off`).
pub fn start_service_metrics(setup: &Setup, metrics: bool) -> Service {
    start_role(setup, "all", metrics)
}

/// Starts one role of the service (`all`, `api`, ...), ready once it answers.
pub fn start_role(setup: &Setup, role: &str, metrics: bool) -> Service {
    let child = Command::new(&setup.binary)
        .arg(role)
        .env("BACKOFFICE_METRICS", if metrics { env("BENCH_SERVICE_METRICS", "on") } else { "off".into() })
        .env("DATABASE_URL", &setup.database_url)
        .env("NATS_PREFIX", &setup.prefix)
        .env("HTTP_ADDR", &setup.http_addr)
        .env("RUST_LOG", env("BENCH_SERVICE_LOG", "warn"))
        .env("WEBHOOK_CA_FILE", &setup.ca_file)
        .env("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(std::env::temp_dir().join("backoffice-bench-service.log")).expect("log file"))
        .spawn()
        .expect("service starts");
    SERVICE_PID.store(child.id(), Ordering::Relaxed);
    let service = Service(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    // Ready once `/readyz` answers 200; a release from before `/readyz` (a 404) once `/healthz` does.
    let status = |path: &str| {
        Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", &format!("http://{}{path}", setup.http_addr)])
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default()
    };
    loop {
        // A gateway alone is never ready (no projector attached to what it waits on): alive is enough.
        let ok = match status("/readyz").as_str() {
            "200" => true,
            "404" => status("/healthz") == "200",
            _ => role == "api" && status("/healthz") == "200",
        };
        if ok {
            return service;
        }
        assert!(Instant::now() < deadline, "service did not become healthy");
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn pgbench(setup: &Setup, args: &[&str]) -> f64 {
    let out = Command::new("pgbench")
        .args(args)
        .arg(&setup.database_url)
        .output()
        .expect("pgbench runs (install postgresql-contrib or the postgresql client)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "pgbench failed: {}{}", text, String::from_utf8_lossy(&out.stderr));
    text.lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l.trim_start_matches("tps = ").split_whitespace().next().map(str::to_owned))
        .and_then(|v| v.parse().ok())
        .expect("pgbench prints tps")
}

/// The service under measurement, whatever its binary is called.
pub static SERVICE_PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

pub struct Load {
    /// Requests completed.
    pub count: u64,
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
}

/// What makes a phase's `n`th request.
pub type Make = Arc<dyn Fn(u64) -> Request<Full<Bytes>> + Send + Sync>;

/// Runs `setup.connections` keep-alive connections for `setup.seconds`, each sending requests made by
/// `make`.
pub async fn load(setup: &Setup, make: Make, expect: u16) -> Load {
    let counter = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(setup.seconds);
    let mut tasks = Vec::new();
    for _ in 0..setup.connections {
        let (addr, make, counter, errors) = (setup.http_addr.clone(), make.clone(), counter.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let (mut sender, conn) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.expect("handshake");
            tokio::spawn(conn);
            let mut latencies = Vec::with_capacity(100_000);
            while Instant::now() < deadline {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let started = Instant::now();
                let response = sender.send_request(make(n)).await.expect("request");
                let status = response.status().as_u16();
                let _ = response.into_body().collect().await;
                latencies.push(started.elapsed().as_micros() as u32);
                if status != expect {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            latencies
        }));
    }
    let started = Instant::now();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("load task"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct =
        |p: f64| all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1))).copied().unwrap_or(0);
    Load {
        count: all.len() as u64,
        rate: all.len() as f64 / elapsed,
        p50_ms: f64::from(pct(0.50)) / 1000.0,
        p99_ms: f64::from(pct(0.99)) / 1000.0,
        errors: errors.load(Ordering::Relaxed),
    }
}

pub fn print_pair(title: &str, ours: f64, ours_unit: &str, baseline: f64, baseline_label: &str, extra: &str) {
    println!("{title}");
    println!("  service : {ours:>10.0} {ours_unit}{extra}");
    println!("  baseline: {baseline:>10.0} {baseline_label}");
    println!("  ratio   : {:>10.3}", ours / baseline);
}

/// A plain HTTP client (the process's TLS provider installed first, as reqwest requires).
pub fn http_client() -> reqwest::Client {
    projections::webhooks::dispatch::install_crypto_provider();
    reqwest::Client::new()
}

/// The service's JSON API as a phase's set-up calls it, with one credential.
pub struct Api<'a> {
    client: reqwest::Client,
    base: String,
    auth: &'a str,
}

impl<'a> Api<'a> {
    pub fn new(setup: &Setup, auth: &'a str) -> Self {
        Api { client: http_client(), base: format!("http://{}", setup.http_addr), auth }
    }

    /// The JSON `path` answers.
    pub async fn get(&self, path: &str) -> serde_json::Value {
        let answer = self.client.get(format!("{}{path}", self.base)).header("authorization", self.auth).send().await;
        answer.unwrap_or_else(|e| panic!("GET {path}: {e}")).json().await.expect("json")
    }

    /// The id of the first record `path` lists.
    pub async fn first(&self, path: &str) -> String {
        let list = self.get(path).await;
        list["data"][0]["id"].as_str().unwrap_or_else(|| panic!("{path} lists nothing: {list}")).to_owned()
    }

    /// POSTs `body` to `path` with `headers` (an idempotency key, a service version) and answers the
    /// JSON.
    pub async fn post(&self, path: &str, headers: &[(&str, &str)], body: serde_json::Value) -> serde_json::Value {
        let mut request = self.client.post(format!("{}{path}", self.base)).header("authorization", self.auth);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let answer = request.json(&body).send().await;
        answer.unwrap_or_else(|e| panic!("POST {path}: {e}")).json().await.expect("json")
    }

    /// The id of what POSTing `body` to `path` created.
    pub async fn create(&self, path: &str, headers: &[(&str, &str)], body: serde_json::Value) -> String {
        let created = self.post(path, headers, body).await;
        created["data"]["id"].as_str().unwrap_or_else(|| panic!("POST {path} created nothing: {created}")).to_owned()
    }
}
