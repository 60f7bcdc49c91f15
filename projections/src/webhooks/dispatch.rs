//! The dispatcher: claims due deliveries under a lease (so any number of sender processes can run
//! without two sending the same delivery at once), signs and posts them, and records each attempt.
//!
//! Safety rules: HTTPS only; addresses are checked after name resolution (and for IP literals) so a
//! delivery never reaches a private, loopback or link-local network the operator did not allow; no
//! redirects; a timeout; at most a bounded response is read; TLS trusts the system roots plus
//! `WEBHOOK_CA_FILE`.

use anyhow::Context;
use events::bus::Bus;
use events::catalogue::SealedSecret;
use events::secrets::SecretBox;
use hmac::{Hmac, KeyInit, Mac};
use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use sha2::Sha256;
use sqlx::PgPool;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use tokio::sync::{Notify, Semaphore};
use uuid::Uuid;

/// How the sender behaves. [`SenderConfig::from_env`] reads the documented variables; the rest are
/// fixed production values that tests may shorten.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    /// Waits between attempts: attempt `n + 1` follows attempt `n` after `retry_schedule[n - 1]`
    /// (with jitter); after the last, a failed delivery is final.
    pub retry_schedule: Vec<Duration>,
    /// Networks outside the public internet that deliveries may still reach.
    pub allow_private: Vec<IpNet>,
    /// Extra PEM roots trusted for deliveries.
    pub ca_file: Option<PathBuf>,
    /// Whole-request timeout (connect, TLS, send, response head and bounded body).
    pub timeout: Duration,
    /// How long a claimed delivery stays reserved for its sender; longer than `timeout`.
    pub lease: Duration,
    /// Deliveries in flight per process.
    pub concurrency: usize,
    /// Deliveries in flight per endpoint and process, so a slow receiver cannot take every slot.
    pub per_endpoint: usize,
    /// Response bytes read at most (the rest is dropped with the connection).
    pub max_response_bytes: usize,
    /// Longest sleep between looks for due deliveries when nothing wakes the sender.
    pub poll: Duration,
}

/// The production retry schedule: ten retries over about three days.
pub const DEFAULT_RETRY_SCHEDULE: &str = "30s,2m,10m,30m,1h,3h,6h,12h,24h,24h";

impl Default for SenderConfig {
    fn default() -> Self {
        Self {
            retry_schedule: parse_schedule(DEFAULT_RETRY_SCHEDULE).unwrap_or_default(),
            allow_private: Vec::new(),
            ca_file: None,
            timeout: Duration::from_secs(10),
            lease: Duration::from_secs(30),
            concurrency: 128,
            per_endpoint: 8,
            max_response_bytes: 64 * 1024,
            poll: Duration::from_secs(1),
        }
    }
}

impl SenderConfig {
    /// `WEBHOOK_RETRY_SCHEDULE`, `WEBHOOK_ALLOW_PRIVATE_NETWORKS`, `WEBHOOK_CA_FILE`.
    pub fn from_env() -> anyhow::Result<Self> {
        let mut config = Self::default();
        if let Ok(schedule) = std::env::var("WEBHOOK_RETRY_SCHEDULE") {
            config.retry_schedule = parse_schedule(&schedule).map_err(anyhow::Error::msg)?;
        }
        if let Ok(networks) = std::env::var("WEBHOOK_ALLOW_PRIVATE_NETWORKS") {
            config.allow_private = parse_networks(&networks).map_err(anyhow::Error::msg)?;
        }
        if let Ok(file) = std::env::var("WEBHOOK_CA_FILE")
            && !file.trim().is_empty()
        {
            config.ca_file = Some(PathBuf::from(file));
        }
        Ok(config)
    }
}

/// Parses `200ms,1s,5m,2h,1d` (a bare number is seconds).
pub fn parse_schedule(text: &str) -> Result<Vec<Duration>, String> {
    text.split(',').map(str::trim).filter(|part| !part.is_empty()).map(parse_duration).collect()
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("WEBHOOK_RETRY_SCHEDULE: {text:?} is not a duration such as 200ms, 5s, 10m, 2h or 1d");
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let amount: u64 = digits.parse().map_err(|_| bad())?;
    let millis = match unit {
        "ms" => amount,
        "" | "s" => amount * 1_000,
        "m" => amount * 60_000,
        "h" => amount * 3_600_000,
        "d" => amount * 86_400_000,
        _ => return Err(bad()),
    };
    Ok(Duration::from_millis(millis))
}

/// Parses comma-separated CIDRs (a bare address is a single host).
pub fn parse_networks(text: &str) -> Result<Vec<IpNet>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.parse::<IpNet>()
                .or_else(|_| part.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| format!("WEBHOOK_ALLOW_PRIVATE_NETWORKS: {part:?} is not a CIDR such as 127.0.0.0/8"))
        })
        .collect()
}

/// Which addresses deliveries may reach: the public internet, plus the networks the operator allowed.
#[derive(Debug, Clone, Default)]
pub struct NetworkPolicy {
    allow: Vec<IpNet>,
}

impl NetworkPolicy {
    pub fn new(allow: Vec<IpNet>) -> Self {
        Self { allow }
    }

    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        is_public(ip) || self.allow.iter().any(|net| net.contains(&ip))
    }
}

/// Whether an address belongs to the public internet (not private, loopback, link-local, shared,
/// multicast, documentation or otherwise reserved).
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let embedded = |high: u16, low: u16| {
                IpAddr::V4(std::net::Ipv4Addr::from((u32::from(high) << 16) | u32::from(low)))
            };
            // Addresses that carry an IPv4 address reach it: they are as public as that address.
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return is_public(embedded(s[6], s[7])); // NAT64, well-known prefix
            }
            if s[0] == 0x2002 {
                return is_public(embedded(s[1], s[2])); // 6to4
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || s[0] == 0x2001 && s[1] == 0x0db8
                || v6.to_ipv4_mapped().is_some()
                // IPv4-compatible (deprecated), local-use NAT64 and Teredo: an IPv4 address behind them.
                || s[..6] == [0, 0, 0, 0, 0, 0]
                || s[..3] == [0x64, 0xff9b, 1]
                || s[..2] == [0x2001, 0])
        }
    }
}

/// Name resolution that drops every address the policy refuses, so a name that points (or is
/// rebound) to a private address is never connected to.
struct GuardedResolver {
    policy: NetworkPolicy,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found.iter().copied().filter(|addr| policy.permits(addr.ip())).collect();
            if allowed.is_empty() {
                let error: Box<dyn std::error::Error + Send + Sync> = if found.is_empty() {
                    format!("{host} has no address").into()
                } else {
                    Box::new(Refused(format!("{host} resolves only to non-public addresses")))
                };
                return Err(error);
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

/// Makes ring the process's TLS provider (every HTTP client in the process needs one); idempotent.
pub fn install_crypto_provider() {
    // Fails only when a provider is installed already, which is what was asked for.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The HTTPS client deliveries use.
pub fn build_client(config: &SenderConfig) -> anyhow::Result<reqwest::Client> {
    install_crypto_provider();
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;

    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        // A system root rustls cannot parse is skipped, as every TLS client does.
        let _ = roots.add(cert);
    }
    if let Some(file) = &config.ca_file {
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(file)
            .with_context(|| format!("cannot read WEBHOOK_CA_FILE {}", file.display()))?
        {
            let cert = cert.with_context(|| format!("WEBHOOK_CA_FILE {} is not PEM", file.display()))?;
            roots.add(cert).context("WEBHOOK_CA_FILE holds a certificate that cannot be a root")?;
            added += 1;
        }
        anyhow::ensure!(added > 0, "WEBHOOK_CA_FILE {} holds no certificate", file.display());
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let resolver = GuardedResolver { policy: NetworkPolicy::new(config.allow_private.clone()) };
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .https_only(true)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(config.timeout)
        .connect_timeout(config.timeout)
        .dns_resolver(Arc::new(resolver))
        .user_agent("backoffice-webhooks/1")
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .context("cannot build the webhook HTTP client")
}

type HmacSha256 = Hmac<Sha256>;

/// `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
pub fn signature(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("t={timestamp},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// A delivery claimed for sending.
#[derive(Debug, sqlx::FromRow)]
struct Claimed {
    id: Uuid,
    endpoint_id: Uuid,
    event_id: Uuid,
    event_type: String,
    payload: String,
    attempts: i32,
    url: String,
    secret_nonce: String,
    secret_ciphertext: String,
}

/// What one attempt came to.
#[derive(Debug)]
struct Outcome {
    started_at: OffsetDateTime,
    duration: Duration,
    status_code: Option<u16>,
    error: Option<String>,
}

impl Outcome {
    fn succeeded(&self) -> bool {
        self.status_code.is_some_and(|code| (200..300).contains(&code))
    }
}

/// Deliveries in flight in this process, by endpoint.
#[derive(Default)]
struct InFlight {
    by_endpoint: Mutex<HashMap<Uuid, usize>>,
}

impl InFlight {
    fn snapshot(&self) -> HashMap<Uuid, usize> {
        self.by_endpoint.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn add(&self, endpoint: Uuid) {
        *self.by_endpoint.lock().unwrap_or_else(|p| p.into_inner()).entry(endpoint).or_default() += 1;
    }

    fn done(&self, endpoint: Uuid) {
        let mut map = self.by_endpoint.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = map.get_mut(&endpoint) {
            *count -= 1;
            if *count == 0 {
                map.remove(&endpoint);
            }
        }
    }
}

/// Runs the dispatcher until the task is dropped. It wakes when the webhooks projection reports
/// progress (new deliveries may exist), when attempts are recorded, and at least every `poll`.
pub async fn run(pool: PgPool, bus: Bus, config: SenderConfig) -> anyhow::Result<()> {
    let secrets = SecretBox::load(&pool).await?;
    let client = build_client(&config)?;
    let wake = Arc::new(Notify::new());
    // Every task of the sender lives in this set, so stopping the sender stops its deliveries too
    // (their leases then run out and another sender takes them over).
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(crate::progress::wake_on_change(&bus, &[crate::ProjectionId::Webhooks], wake.clone()).await?);
    let slots = Arc::new(Semaphore::new(config.concurrency));
    let in_flight = Arc::new(InFlight::default());
    let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel();
    let policy = NetworkPolicy::new(config.allow_private.clone());
    let shared = Arc::new(Shared { pool, client, secrets, policy, config });
    {
        let (shared, in_flight, wake) = (shared.clone(), in_flight.clone(), wake.clone());
        tasks.spawn(record_attempts(shared, done_rx, in_flight, wake));
    }
    loop {
        while tasks.try_join_next().is_some() {}
        // Slots free up in batches (attempts are recorded in batches), so claims come in batches too.
        let free = slots.available_permits();
        let claimed = if free > 0 {
            match claim(&shared, free, &in_flight.snapshot()).await {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::warn!(%error, "cannot claim webhook deliveries");
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        for delivery in claimed {
            let Ok(permit) = slots.clone().try_acquire_owned() else { break };
            in_flight.add(delivery.endpoint_id);
            let (shared, done) = (shared.clone(), done_tx.clone());
            tasks.spawn(async move {
                let outcome = shared.attempt(&delivery).await;
                // The permit travels with the outcome: the slot frees once the attempt is recorded.
                let _ = done.send((delivery, outcome, permit));
            });
        }
        // Look again when attempts are recorded, new deliveries may exist, or the poll interval passes.
        let _ = tokio::time::timeout(shared.config.poll, wake.notified()).await;
    }
}

type Done = (Claimed, Outcome, tokio::sync::OwnedSemaphorePermit);

/// Records finished attempts in batches (one statement each), then frees their slots.
async fn record_attempts(
    shared: Arc<Shared>,
    mut done: tokio::sync::mpsc::UnboundedReceiver<Done>,
    in_flight: Arc<InFlight>,
    wake: Arc<Notify>,
) {
    let mut batch = Vec::new();
    while done.recv_many(&mut batch, 512).await > 0 {
        let states = match shared.record(&batch).await {
            Ok(states) => states.into_iter().collect(),
            Err(error) => {
                // Their leases run out and other attempts follow: at least once.
                tracing::warn!(%error, attempts = batch.len(), "cannot record webhook attempts");
                HashMap::new()
            }
        };
        for (delivery, outcome, permit) in batch.drain(..) {
            // Completion counts once, when recorded: a delivery cancelled meanwhile did not complete here.
            let state = states.get(&delivery.id).map(String::as_str).filter(|s| *s == "succeeded" || *s == "failed");
            observe_attempt(&delivery, &outcome, state);
            in_flight.done(delivery.endpoint_id);
            drop(permit);
        }
        wake.notify_one();
    }
}

struct Shared {
    pool: PgPool,
    client: reqwest::Client,
    secrets: SecretBox,
    /// For IP-literal hosts, which skip name resolution (and so the resolver's check).
    policy: NetworkPolicy,
    config: SenderConfig,
}

/// Reserves up to `limit` due deliveries: the oldest of each endpoint, at most `per_endpoint` per
/// endpoint counting those this process already has in flight, skipping paused endpoints (tests
/// excepted). The lease is taken under `FOR UPDATE SKIP LOCKED` and rechecked, so concurrent senders
/// never share a delivery.
async fn claim(shared: &Shared, limit: usize, in_flight: &HashMap<Uuid, usize>) -> Result<Vec<Claimed>, sqlx::Error> {
    let per_endpoint = shared.config.per_endpoint;
    let candidates: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "select d.id, d.endpoint_id
         from webhook_endpoints_view e
         cross join lateral (
             select id, endpoint_id, next_attempt_at from webhook_deliveries d
             where d.endpoint_id = e.id and d.status = 'pending' and d.next_attempt_at <= now()
               and (d.lease_until is null or d.lease_until < now())
               and (e.status = 'active' or d.is_test)
             order by d.next_attempt_at limit $1
         ) d
         where e.status <> 'disabled'
         order by d.next_attempt_at, d.id",
    )
    .bind(per_endpoint as i64)
    .fetch_all(&shared.pool)
    .await?;
    let mut taken: HashMap<Uuid, usize> = HashMap::new();
    let ids: Vec<Uuid> = candidates
        .into_iter()
        .filter(|(_, endpoint)| {
            let count = taken.entry(*endpoint).or_insert_with(|| in_flight.get(endpoint).copied().unwrap_or(0));
            *count += 1;
            *count <= per_endpoint
        })
        .map(|(id, _)| id)
        .take(limit)
        .collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let lease_ms = shared.config.lease.as_millis() as i64;
    sqlx::query_as(
        "with taken as (
             select id from webhook_deliveries
             where id = any($1) and status = 'pending' and (lease_until is null or lease_until < now())
             for update skip locked
         ), leased as (
             update webhook_deliveries d set lease_until = now() + make_interval(secs => $2::float8 / 1000)
             from taken where d.id = taken.id
             returning d.id, d.org_id, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempts
         )
         select l.id, l.endpoint_id, l.event_id, l.event_type, l.payload, l.attempts,
                e.url, e.secret_nonce, e.secret_ciphertext
         from leased l join webhook_endpoints_view e on e.org_id = l.org_id and e.id = l.endpoint_id",
    )
    .bind(&ids)
    .bind(lease_ms)
    .fetch_all(&shared.pool)
    .await
}

impl Shared {
    async fn attempt(&self, delivery: &Claimed) -> Outcome {
        let started_at = OffsetDateTime::now_utc();
        let clock = Instant::now();
        let result = self.post(delivery).await;
        let (status_code, error) = match result {
            Ok(code) => (Some(code), None),
            Err(error) => (None, Some(error)),
        };
        Outcome { started_at, duration: clock.elapsed(), status_code, error }
    }

    /// Posts the delivery; the status code, or why no response came.
    async fn post(&self, delivery: &Claimed) -> Result<u16, String> {
        let url = url::Url::parse(&delivery.url).map_err(|e| format!("invalid url: {e}"))?;
        if url.scheme() != "https" {
            return Err("refused: only https receivers are allowed".into());
        }
        let literal = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if let Some(ip) = literal
            && !self.policy.permits(ip)
        {
            return Err(format!("refused: {ip} is not a public address"));
        }
        let sealed =
            SealedSecret { nonce: delivery.secret_nonce.clone(), ciphertext: delivery.secret_ciphertext.clone() };
        let secret = self.secrets.open(&sealed).map_err(|e| e.to_string())?;
        let timestamp = OffsetDateTime::now_utc().unix_timestamp();
        let response = self
            .client
            .post(url)
            .header("Content-Type", "application/json")
            .header("Service-Event-Id", delivery.event_id.to_string())
            .header("Service-Event-Type", &delivery.event_type)
            .header("Service-Signature", signature(&secret, timestamp, &delivery.payload))
            .body(delivery.payload.clone())
            .send()
            .await
            .map_err(describe)?;
        let status = response.status().as_u16();
        // Read a bounded part of the body so the connection can be reused; the rest is dropped.
        let mut response = response;
        let mut read = 0;
        while read < self.config.max_response_bytes {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) | Err(_) => break,
            }
        }
        Ok(status)
    }

    /// Records attempts and moves their deliveries on: succeeded, due again after the schedule's next
    /// wait, or failed for good. One statement, so a batch is recorded whole or not at all.
    /// Records the attempts; each delivery's state after it (a delivery cancelled meanwhile keeps
    /// `cancelled`).
    async fn record(&self, batch: &[Done]) -> Result<Vec<(Uuid, String)>, sqlx::Error> {
        let mut ids = Vec::with_capacity(batch.len());
        let mut attempts = Vec::with_capacity(batch.len());
        let mut started = Vec::with_capacity(batch.len());
        let mut durations = Vec::with_capacity(batch.len());
        let mut codes = Vec::with_capacity(batch.len());
        let mut errors = Vec::with_capacity(batch.len());
        let mut statuses = Vec::with_capacity(batch.len());
        let mut waits = Vec::with_capacity(batch.len());
        for (delivery, outcome, _) in batch {
            let (status, wait) = if outcome.succeeded() {
                ("succeeded", None)
            } else if let Some(base) = self.config.retry_schedule.get(delivery.attempts as usize) {
                ("pending", Some(jitter(*base)))
            } else {
                ("failed", None)
            };
            ids.push(delivery.id);
            attempts.push(delivery.attempts + 1);
            started.push(outcome.started_at);
            durations.push(outcome.duration.as_millis().min(i32::MAX as u128) as i32);
            codes.push(outcome.status_code.map(i32::from));
            errors.push(outcome.error.clone());
            statuses.push(status);
            waits.push(wait.map(|w| w.as_millis() as i64));
        }
        // A delivery cancelled meanwhile keeps its state; the attempt is still part of its history.
        sqlx::query_as(
            "with input as (
                 select * from unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::int[], $5::int[], $6::text[],
                                      $7::text[], $8::bigint[])
                     as t(id, attempt, started_at, duration_ms, status_code, error, status, wait_ms)
             ), attempts as (
                 insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
                 select id, attempt, started_at, duration_ms, status_code, error from input
                 on conflict do nothing
             )
             update webhook_deliveries d set attempts = i.attempt, lease_until = null,
                 status = case when d.status = 'pending' then i.status else d.status end,
                 next_attempt_at = case when i.wait_ms is null then d.next_attempt_at
                                        else now() + make_interval(secs => i.wait_ms::float8 / 1000) end,
                 completed_at = case when d.status = 'pending' and i.status <> 'pending' then now()
                                     else d.completed_at end
             from input i where d.id = i.id
             returning d.id, d.status",
        )
        .bind(&ids)
        .bind(&attempts)
        .bind(&started)
        .bind(&durations)
        .bind(&codes)
        .bind(&errors)
        .bind(&statuses)
        .bind(&waits)
        .fetch_all(&self.pool)
        .await
    }
}

/// Records an attempt in the metrics: its duration, a failure against its endpoint's id (never its
/// URL), and for a delivery that reached a final state, that state and (when delivered) how long after
/// its event was decided (the event id's v7 timestamp).
fn observe_attempt(delivery: &Claimed, outcome: &Outcome, completed: Option<&str>) {
    let succeeded = outcome.succeeded();
    metrics::histogram!(
        "backoffice_webhook_attempt_duration_seconds",
        "outcome" => if succeeded { "success" } else { "failure" }
    )
    .record(outcome.duration.as_secs_f64());
    if !succeeded {
        metrics::counter!("backoffice_webhook_endpoint_failures_total", "endpoint" => delivery.endpoint_id.to_string())
            .increment(1);
    }
    match completed {
        Some("succeeded") => metrics::counter!("backoffice_webhook_deliveries_completed_total", "state" => "succeeded"),
        Some("failed") => metrics::counter!("backoffice_webhook_deliveries_completed_total", "state" => "failed"),
        _ => return,
    }
    .increment(1);
    if succeeded && let Some((seconds, nanos)) = delivery.event_id.get_timestamp().map(|t| t.to_unix()) {
        let decided = Duration::new(seconds, nanos);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        metrics::histogram!("backoffice_webhook_delivery_latency_seconds")
            .record(now.saturating_sub(decided).as_secs_f64());
    }
}

/// Spreads retries over ±20% so endpoints that failed together do not retry together.
fn jitter(base: Duration) -> Duration {
    base.mul_f64(rand::random_range(0.8..1.2))
}

/// A short, operator-readable reason for a failed request.
fn describe(error: reqwest::Error) -> String {
    use std::error::Error;
    let mut source: Option<&dyn Error> = error.source();
    while let Some(inner) = source {
        if let Some(refused) = inner.downcast_ref::<Refused>() {
            return format!("refused: {refused}");
        }
        source = inner.source();
    }
    if error.is_timeout() {
        "timeout".into()
    } else if error.is_connect() {
        format!("connection failed: {}", events::error_chain(&error))
    } else {
        events::error_chain(&error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_units_and_reject_nonsense() {
        assert_eq!(
            parse_schedule("200ms, 1s,5m,2h,1d,3").expect("parses"),
            vec![
                Duration::from_millis(200),
                Duration::from_secs(1),
                Duration::from_secs(300),
                Duration::from_secs(7200),
                Duration::from_secs(86400),
                Duration::from_secs(3)
            ]
        );
        assert!(parse_schedule("5 minutes").is_err());
        assert!(parse_schedule("ms").is_err());
        let default = parse_schedule(DEFAULT_RETRY_SCHEDULE).expect("default parses");
        assert!(default.iter().sum::<Duration>() > Duration::from_secs(2 * 86400));
    }

    #[test]
    fn only_public_addresses_pass_unless_allowed() {
        let strict = NetworkPolicy::default();
        for private in
            ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0", "100.64.0.1", "::1"]
        {
            assert!(!strict.permits(private.parse().expect("ip")), "{private} must be refused");
        }
        for private in ["fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1"] {
            assert!(!strict.permits(private.parse().expect("ip")), "{private} must be refused");
        }
        // IPv6 addresses that carry an IPv4 one: NAT64, 6to4, IPv4-compatible, local NAT64, Teredo.
        for private in ["64:ff9b::a00:1", "64:ff9b::7f00:1", "2002:a00:1::1", "::7f00:1", "64:ff9b:1::1", "2001:0:4136:e378::1"]
        {
            assert!(!strict.permits(private.parse().expect("ip")), "{private} must be refused");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::1"] {
            assert!(strict.permits(public.parse().expect("ip")), "{public} must pass");
        }
        let loopback = NetworkPolicy::new(parse_networks("127.0.0.0/8, ::1").expect("cidrs"));
        assert!(loopback.permits("127.0.0.1".parse().expect("ip")));
        assert!(loopback.permits("::ffff:127.0.0.2".parse().expect("ip")));
        assert!(loopback.permits("::1".parse().expect("ip")));
        assert!(!loopback.permits("10.0.0.1".parse().expect("ip")));
        assert!(parse_networks("not-a-network").is_err());
    }

    #[test]
    fn signatures_are_hmac_sha256_over_timestamp_dot_body() {
        let signed = signature("key", 1_700_000_000, "{\"a\":1}");
        let mut mac = HmacSha256::new_from_slice(b"key").expect("key");
        mac.update(b"1700000000.{\"a\":1}");
        assert_eq!(signed, format!("t=1700000000,v1={}", hex::encode(mac.finalize().into_bytes())));
        assert_ne!(signed, signature("other", 1_700_000_000, "{\"a\":1}"));
        assert_ne!(signed, signature("key", 1_700_000_001, "{\"a\":1}"));
    }

    #[test]
    fn jitter_stays_within_a_fifth() {
        for _ in 0..100 {
            let waited = jitter(Duration::from_secs(10));
            assert!(waited >= Duration::from_secs(8) && waited <= Duration::from_secs(12));
        }
    }
}
