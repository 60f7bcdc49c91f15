//! The one test application builder: a real gateway, command worker, relay and projectors on this
//! test's fresh database and its own NATS prefix, driven over real HTTP. Below it, the helpers the
//! domain files share: waiting on the read side, the v1 and v2 envelopes, lists and field rules.

use api::roles::{self, ProjectionSet, Roles};
use events::bus::Bus;
use projections::Partition;
use projections::webhooks::dispatch::SenderConfig;
use reqwest::{Method, Response};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
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
    /// The test's tax authority simulator (scriptable through `/_simulator/outcomes`).
    pub fiscal_url: String,
    _tasks: tokio::task::JoinSet<()>,
}

/// How long the test's workers wait for the tax authority: short, so a lost reply is noticed quickly.
pub const FISCAL_TIMEOUT: Duration = Duration::from_secs(2);

pub fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into())
}

impl TestApp {
    pub async fn spawn(pool: PgPool) -> Self {
        Self::spawn_with_sender(pool, None).await
    }

    /// Also runs the webhook dispatcher with `sender` (the webhooks projection always runs).
    pub async fn spawn_with_sender(pool: PgPool, sender: Option<SenderConfig>) -> Self {
        Self::spawn_with(pool, sender, projections::all(), Duration::from_secs(10), FISCAL_TIMEOUT).await
    }

    /// Runs only some projections (to show what a lagging projection does and does not hold up).
    pub async fn spawn_without(pool: PgPool, absent: &[&str]) -> Self {
        Self::spawn_waiting(pool, absent, Duration::from_secs(10)).await
    }

    /// Runs only some projections, and waits at most `read_wait` for the read side after a write.
    pub async fn spawn_waiting(pool: PgPool, absent: &[&str], read_wait: Duration) -> Self {
        let running = projections::all().into_iter().filter(|p| !absent.contains(&p.name())).collect();
        Self::spawn_with(pool, None, running, read_wait, FISCAL_TIMEOUT).await
    }

    /// Waits for the tax authority as long as a process started with default settings does.
    pub async fn spawn_with_default_fiscal_timeout(pool: PgPool) -> Self {
        let timeout = commands::fiscal::DEFAULT_TIMEOUT;
        Self::spawn_with(pool, None, projections::all(), Duration::from_secs(10), timeout).await
    }

    async fn spawn_with(
        pool: PgPool,
        sender: Option<SenderConfig>,
        running: Vec<std::sync::Arc<dyn projections::Projection>>,
        read_wait: Duration,
        fiscal_timeout: Duration,
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
        // The test's own tax authority: the simulator on this test's database, on a port of its own.
        let simulator = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("simulator listener");
        let fiscal_url = format!("http://{}", simulator.local_addr().expect("simulator address"));
        let fiscal = fiscal_client(&pool, &fiscal_url, fiscal_timeout).await;
        let mut running = roles::start(
            pool.clone(),
            bus.clone(),
            Roles { api: Some(listener), commands: true, projections: Some(set), fiscal: Some(fiscal) },
            read_wait,
        )
        .await
        .expect("roles start");
        let simulated = pool.clone();
        running.tasks.spawn(async move {
            let _ = api::fiscal_simulator::serve(simulator, simulated).await;
        });
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
            fiscal_url,
            _tasks: running.tasks,
        }
    }

    /// Sets the organization's fiscal profile; when it names the fixtures' CUIT, installs their
    /// certificate and key too, as `admin set-fiscal-certificate` does, so it can invoice.
    pub async fn fiscal_identity(&self, change: commands::organization::SettingsChange) {
        let cuit = change.tax_id.clone();
        commands::organization::update_organization(&self.pool, self.org_id, change).await.expect("fiscal profile");
        if cuit.as_deref() == Some(FIXTURE_CUIT) {
            install_certificate(&self.pool, self.org_id).await;
        }
    }

    /// Another organization with its own full-scope key.
    pub async fn other_org(&self) -> (Uuid, String) {
        let created =
            commands::organization::create_organization_with(&self.pool, "Otra Empresa", GENEROUS).await.expect("org");
        (created.organization_id, created.api_key)
    }

    /// The id of what a keyed POST of `body` to `path` created (201).
    pub async fn created_id(&self, path: &str, body: &Value) -> String {
        id_of(&json(self.post_keyed(path, body).await, 201).await)
    }

    /// Where a document route (`.../document`) redirects, or `None` while the PDF is not rendered yet
    /// (404 `DOCUMENT_NOT_READY`).
    pub async fn document_location(&self, path: &str) -> Option<String> {
        let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        let answer = no_redirects.get(format!("{}{path}", self.base)).bearer_auth(&self.api_key).send().await.expect("sent");
        if answer.status().as_u16() == 404 {
            let body: Value = answer.json().await.expect("an error");
            assert_eq!(body["error"]["code"], "DOCUMENT_NOT_READY", "{body}");
            return None;
        }
        assert_eq!(answer.status().as_u16(), 302);
        let location = answer.headers().get("location").and_then(|l| l.to_str().ok()).expect("Location").to_owned();
        assert!(location.starts_with("/documents/"), "a signed address: {location}");
        Some(location)
    }

    /// The text of the PDF a document route redirected to (`location`, fetched without credentials).
    pub async fn pdf_text(&self, location: &str) -> String {
        let pdf = self.client.get(format!("{}{location}", self.base)).send().await.expect("sent");
        assert_eq!(pdf.status().as_u16(), 200);
        assert_eq!(pdf.headers().get("content-type").and_then(|c| c.to_str().ok()), Some("application/pdf"));
        let bytes = pdf.bytes().await.expect("pdf");
        pdf_extract::extract_text_from_mem(&bytes).expect("readable PDF")
    }

    /// Creates a record named `name` at `path` with `key` and answers its id.
    pub async fn named_with(&self, key: &str, path: &str, name: &str) -> String {
        let created = self.request(Method::POST, path, Some(key), Some(&json!({ "name": name }))).await;
        id_of(&json(created, 201).await)
    }

    /// The id of a record named `name` at `path` in another organization: what a tenancy check must
    /// treat as unknown.
    pub async fn foreign(&self, path: &str, name: &str) -> String {
        let (_, key) = self.other_org().await;
        self.named_with(&key, path, name).await
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

    /// A request with the organization's credential under this `Idempotency-Key`, with `body` when
    /// given: every keyed write of the tests goes through here.
    pub async fn keyed(&self, method: Method, path: &str, key: &str, body: Option<&Value>) -> Response {
        self.keyed_as(&self.api_key, method, path, key, body).await
    }

    /// [`Self::keyed`] with another credential (a delegated token, say).
    pub async fn keyed_as(&self, token: &str, method: Method, path: &str, key: &str, body: Option<&Value>) -> Response {
        let mut request =
            self.client.request(method, format!("{}{path}", self.base)).bearer_auth(token).header("Idempotency-Key", key);
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send().await.expect("request sent")
    }

    /// [`Self::keyed`] under a fresh key.
    pub async fn fresh_keyed(&self, method: Method, path: &str, body: Option<&Value>) -> Response {
        self.keyed(method, path, &Uuid::now_v7().to_string(), body).await
    }

    /// POSTs with this `Idempotency-Key`.
    pub async fn post_key(&self, path: &str, key: &str, body: &Value) -> Response {
        self.keyed(Method::POST, path, key, Some(body)).await
    }

    /// POSTs with a fresh `Idempotency-Key`.
    pub async fn post_keyed(&self, path: &str, body: &Value) -> Response {
        self.post_key(path, &Uuid::now_v7().to_string(), body).await
    }

    /// Sets the organization's negative-stock policy (`allow` or `block`), as an operator would.
    pub async fn negative_stock(&self, policy: &str) {
        let change =
            commands::organization::SettingsChange { negative_stock: Some(policy.to_owned()), ..Default::default() };
        commands::organization::update_organization(&self.pool, self.org_id, change).await.expect("settings");
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
                if let (Some(database), Some(admin), Some(folder)) =
                    (&database, &admin, std::env::var_os("RECORD_EVENT_LOGS"))
                {
                    record_event_log(admin, database, std::path::Path::new(&folder)).await;
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
/// With `RECORD_EVENT_LOGS=FOLDER`, every test leaves its event store in `FOLDER/<database>.jsonl`, one
/// stored event per line in commit order (the replay fixture's format, see projections/tests/replay.rs).
async fn record_event_log(admin: &str, database: &str, folder: &std::path::Path) {
    let url = format!("{}/{database}", admin.rsplit_once('/').map_or(admin, |(server, _)| server));
    let Ok(mut conn) = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await else { return };
    let lines: Vec<String> = sqlx::query_scalar(
        "select json_build_object(
             'org_id', org_id, 'stream_type', stream_type, 'stream_id', stream_id, 'version', version,
             'event_id', event_id, 'event_type', event_type, 'schema_version', schema_version,
             'data', data::text, 'metadata', metadata::text,
             'recorded_at', to_char(recorded_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))::text
         from events order by transaction_id, position",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap_or_default();
    let _ = std::fs::create_dir_all(folder);
    let _ = std::fs::write(folder.join(format!("{database}.jsonl")), lines.join("\n") + "\n");
}

pub async fn json(response: Response, status: u16) -> Value {
    let actual = response.status().as_u16();
    let text = response.text().await.expect("body");
    assert_eq!(actual, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

/// Asserts the v1 error envelope and returns it.
pub async fn error(response: Response, status: u16, kind: &str) -> Value {
    let header = request_id_header(&response);
    let body = json(response, status).await;
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert!(body["error"]["code"].as_str().is_some_and(|c| !c.is_empty()), "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    assert!(body["error"]["retryable"].is_boolean(), "{body}");
    assert!(body["error"]["details"].is_array(), "{body}");
    assert_eq!(header.as_deref(), body["request_id"].as_str(), "Service-Request-Id matches request_id");
    body
}

/// A refused write whose status follows its details: 404 when every detail is a missing reference
/// (`not_found`, or some of them and the rest taken values), 409 when every one is a taken unique value
/// (`already_exists`), 400 otherwise.
pub async fn refused(response: Response) -> Value {
    let status = response.status().as_u16();
    let peek: Value = serde_json::from_slice(&response.bytes().await.expect("a body")).expect("a JSON body");
    let codes: Vec<&str> =
        peek["error"]["details"].as_array().into_iter().flatten().filter_map(|d| d["code"].as_str()).collect();
    let decided_by_data =
        ["not_found", "already_exists", "violates_definition", "immutable", "not_in_order", "not_stocked"];
    let data_decides = !codes.is_empty() && codes.iter().all(|c| decided_by_data.contains(c));
    let (expected, kind) = match data_decides {
        true if codes.contains(&"not_found") => (404, "invalid_request_error"),
        true => (409, "business_error"),
        false => (400, "invalid_request_error"),
    };
    assert_eq!(status, expected, "{peek}");
    assert_eq!(peek["error"]["type"], kind, "{peek}");
    assert!(peek["error"]["details"].is_array(), "{peek}");
    peek
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

// ---------------------------------------------------------------------------------------------------
// Resource helpers
// ---------------------------------------------------------------------------------------------------

pub const PAYMENT_METHODS: &str = "/api/v1/payment-methods";
pub const WAREHOUSES: &str = "/api/v1/warehouses";
pub const CATEGORIES: &str = "/api/v1/categories";
pub const POINTS_OF_SALE: &str = "/api/v1/points-of-sale";
pub const V2_WAREHOUSES: &str = "/api/v2/warehouses";

/// Polls `check` every 50 ms until it yields a value, failing after `within`. Only for effects that do
/// not go through the API (the records seeded with an organization, points of sale created by
/// operators, revocations and limits reaching every gateway): they arrive asynchronously, while API
/// writes are readable as soon as they answer.
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out after {within:?} waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How long the read side may take to show what was written outside the API.
const READ_SIDE: Duration = Duration::from_secs(15);

pub fn key_set(value: &Value) -> BTreeSet<String> {
    value.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

pub fn names_set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

pub fn items(body: &Value) -> Vec<Value> {
    body["data"].as_array().unwrap_or_else(|| panic!("data is not an array: {body}")).clone()
}

pub fn ids(list: &[Value]) -> Vec<String> {
    list.iter().map(|item| item["id"].as_str().expect("id").to_owned()).collect()
}

pub fn names(list: &[Value]) -> Vec<String> {
    list.iter().map(|item| item["name"].as_str().expect("name").to_owned()).collect()
}

pub fn id_of(created: &Value) -> String {
    created["data"]["id"].as_str().unwrap_or_else(|| panic!("no data.id in {created}")).to_owned()
}

pub fn sorted(mut fields: Vec<String>) -> Vec<String> {
    fields.sort();
    fields
}

pub fn strings(names: &[&str]) -> Vec<String> {
    sorted(names.iter().map(|n| (*n).to_owned()).collect())
}

/// A date-time of the response, asserting it is rendered in UTC-3.
pub fn instant(value: &Value) -> OffsetDateTime {
    let text = value.as_str().unwrap_or_else(|| panic!("not a date-time: {value}"));
    let parsed = OffsetDateTime::parse(text, &Rfc3339).unwrap_or_else(|_| panic!("not RFC 3339: {text}"));
    assert_eq!(parsed.offset().whole_hours(), -3, "rendered in UTC-3: {text}");
    parsed
}

pub fn request_id_header(response: &Response) -> Option<String> {
    response.headers().get("service-request-id").map(|v| v.to_str().unwrap_or_default().to_owned())
}

/// A Style A body (`request_id` equal to the `Service-Request-Id` header).
pub async fn style_a(response: Response, status: u16) -> Value {
    let header = request_id_header(&response);
    let body = json(response, status).await;
    assert!(header.is_some(), "Service-Request-Id is sent");
    assert_eq!(header.as_deref(), body["request_id"].as_str(), "request_id matches the header: {body}");
    body
}

/// A Style B single resource, returning its `data`.
pub async fn style_b(response: Response, status: u16) -> Value {
    let body = json(response, status).await;
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(key_set(&body), names_set(&["success", "data"]), "{body}");
    body["data"].clone()
}

/// The v2 error envelope: `requestId`, `success: false`, `error {code, message, retryable, details[]
/// {path, code, message}}`.
pub async fn v2_error(response: Response, status: u16) -> Value {
    let header = request_id_header(&response);
    let body = json(response, status).await;
    assert_eq!(key_set(&body), names_set(&["requestId", "success", "error"]), "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(header.as_deref(), body["requestId"].as_str(), "requestId matches the header: {body}");
    let error = &body["error"];
    assert!(error["code"].as_str().is_some_and(|c| !c.is_empty()), "{body}");
    assert!(error["message"].is_string(), "{body}");
    assert!(error["retryable"].is_boolean(), "{body}");
    for detail in error["details"].as_array().unwrap_or_else(|| panic!("details is an array: {body}")) {
        for field in ["path", "code", "message"] {
            assert!(detail[field].is_string(), "detail.{field} in {body}");
        }
    }
    body
}

pub fn v2_paths(body: &Value) -> Vec<String> {
    body["error"]["details"]
        .as_array()
        .map(|d| d.iter().filter_map(|x| x["path"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The organization resource read with `key`, once projected: operators create organizations outside
/// the API, so a just-created one reaches its read model asynchronously (see
/// `organization::a_new_organization_is_readable_by_its_own_credential_at_once`).
pub async fn organization(app: &TestApp, key: &str) -> Value {
    eventually(READ_SIDE, "the organization resource", || async move {
        let response = app.request(Method::GET, "/api/v1/organization", Some(key), None).await;
        if response.status().as_u16() == 200 { Some(style_a(response, 200).await) } else { None }
    })
    .await
}

/// The organization the test credential acts on, as the API reports it.
pub async fn org_id(app: &TestApp) -> Uuid {
    let body = organization(app, &app.api_key).await;
    body["data"]["id"].as_str().and_then(|id| Uuid::parse_str(id).ok()).expect("organization id")
}

/// The item named `name` of a cursor list, once the organization's seeded records are readable.
pub async fn seeded(app: &TestApp, list: &str, name: &str) -> Value {
    eventually(READ_SIDE, name, || async move {
        let body = json(app.get(list).await, 200).await;
        items(&body).into_iter().find(|item| item["name"] == name)
    })
    .await
}

/// The cursor list at `list` read with `key`, once it holds at least `count` items.
pub async fn list_of_at_least(app: &TestApp, list: &str, key: &str, count: usize) -> Value {
    eventually(READ_SIDE, list, || async move {
        let body = style_a(app.request(Method::GET, list, Some(key), None).await, 200).await;
        (items(&body).len() >= count).then_some(body)
    })
    .await
}

pub async fn create(app: &TestApp, list: &str, body: &Value) -> Value {
    json(app.post(list, body).await, 201).await
}

/// Asserts that every `null` in `value` (an answer's `data`) stands where the reviewed OpenAPI document
/// declares its property nullable, walking `schema` (a component's name) through objects and arrays: a
/// client generated from the document must be able to read the answer.
pub fn assert_nulls_documented(value: &Value, schema: &str) {
    static DOCUMENT: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        serde_json::from_str(include_str!("../snapshots/openapi.json")).expect("the reviewed document")
    });
    fn resolve(schema: &Value) -> &Value {
        let reference = schema["$ref"].as_str().or_else(|| schema["allOf"][0]["$ref"].as_str());
        match reference.and_then(|r| r.strip_prefix("#/components/schemas/")) {
            Some(name) => &DOCUMENT["components"]["schemas"][name],
            None => schema,
        }
    }
    fn walk(value: &Value, schema: &Value, path: &str) {
        let schema = resolve(schema);
        match value {
            Value::Object(fields) => {
                for (name, field) in fields {
                    let declared = &schema["properties"][name.as_str()];
                    let at = format!("{path}.{name}");
                    if field.is_null() {
                        assert_eq!(declared["nullable"], true, "{at} is null but not declared nullable: {declared}");
                    } else if !declared.is_null() {
                        walk(field, declared, &at);
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &schema["items"], &format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
    }
    let root = json!({ "$ref": format!("#/components/schemas/{schema}") });
    assert!(!resolve(&root).is_null(), "the document has no schema {schema}");
    walk(value, &root, schema);
}

/// Today's Argentine date (UTC-3).
pub fn today_date() -> time::Date {
    events::catalogue::ar_date(OffsetDateTime::now_utc())
}

/// Today's Argentine date as the API writes it (`2026-11-28`).
pub fn today() -> String {
    today_date().to_string()
}

/// A delegated token of `user` with `scopes`, treasury `visibility` (`own` or `organization`) and the
/// cash `registers` it is assigned; its secret.
pub async fn delegated_token(app: &TestApp, scopes: &[&str], user: &str, visibility: &str, registers: &[&str]) -> String {
    let delegation = commands::organization::Delegation {
        user: user.into(),
        visibility: visibility.into(),
        registers: registers.iter().map(|id| id.parse().expect("a register id")).collect(),
        safes: vec![],
    };
    let scopes: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
    commands::organization::create_delegated_token(&app.pool, app.org_id, &scopes, delegation).await.expect("token")
}

/// A new customer named `name`, without a tax category (billed with B vouchers); its id.
pub async fn customer(app: &TestApp, name: &str) -> String {
    id_of(&create(app, "/api/v1/customers", &json!({ "name": name })).await)
}

/// The warehouse every organization starts with; its id.
pub async fn main_warehouse(app: &TestApp) -> String {
    seeded(app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned()
}

/// A new product `sku` priced 121.00 (VAT included) with `stock` units in `warehouse`; its id.
pub async fn stocked_product(app: &TestApp, sku: &str, warehouse: &str, stock: i64) -> String {
    let body = json!({ "name": format!("Producto {sku}"), "sku": sku, "price": 12100,
        "warehouseStocks": [{ "warehouseId": warehouse, "quantity": stock }] });
    id_of(&json(app.post_keyed("/api/v1/products", &body).await, 201).await)
}

/// (reserved, available) of the one stock level of `product`.
/// A kit: a combo of 2 MATE and 1 BOMBILLA, each stocked with 10 in `warehouse` (their ids, and the
/// kit's).
pub async fn mate_kit(app: &TestApp, warehouse: &str) -> (String, String, String) {
    let mate = stocked_product(app, "MATE", warehouse, 10).await;
    let bombilla = stocked_product(app, "BOMBILLA", warehouse, 10).await;
    let kit = json!({ "name": "Kit matero", "sku": "KIT", "price": 30000, "productType": "combo",
        "components": [{ "productId": mate, "quantity": 2 }, { "productId": bombilla, "quantity": 1 }] });
    let kit = json(app.post_keyed("/api/v1/products", &kit).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    (mate, bombilla, kit)
}

pub async fn reserved_and_available(app: &TestApp, product: &str) -> (String, String) {
    let body = json(app.get(&format!("/api/v1/inventory?product_id={product}")).await, 200).await;
    let row = &items(&body)[0];
    (row["reserved"].as_str().expect("reserved").to_owned(), row["available"].as_str().expect("available").to_owned())
}

/// Follows `next_cursor` from the first page of `path` with this `limit`; every page is a well-formed
/// Style A list and every page but the last is full.
pub async fn walk(app: &TestApp, path: &str, limit: usize, key: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut url = format!("{path}?limit={limit}");
    for _ in 0..100 {
        let page = style_a(app.request(Method::GET, &url, Some(key), None).await, 200).await;
        assert_eq!(page["object"], "list", "{page}");
        assert_eq!(page["url"], path, "{page}");
        let data = items(&page);
        assert!(data.len() <= limit, "{page}");
        seen.extend(data.iter().cloned());
        if page["has_more"] == false {
            assert_eq!(page["next_cursor"], Value::Null, "{page}");
            return seen;
        }
        assert_eq!(page["has_more"], true, "{page}");
        assert_eq!(data.len(), limit, "a page before the last is full: {page}");
        let cursor = page["next_cursor"].as_str().unwrap_or_else(|| panic!("next_cursor with has_more: {page}"));
        url = format!("{path}?limit={limit}&cursor={cursor}");
    }
    panic!("{path} did not end after 100 pages");
}

/// Every bad list parameter is a 400 naming it.
pub async fn assert_bad_list_parameters(app: &TestApp, path: &str, cases: &[&str]) {
    for bad in cases {
        let body = error(app.get(&format!("{path}?{bad}")).await, 400, "invalid_request_error").await;
        let parameter = bad.split('=').next().expect("parameter name");
        assert!(detail_fields(&body).contains(&parameter.to_owned()), "{path}?{bad}: {body}");
    }
}

/// POSTs (and PUTs to `existing`) `base` with one field changed, expecting a 400 naming exactly it.
pub async fn assert_field_rules(app: &TestApp, list: &str, existing: &str, base: &Value, cases: &[(&str, Value)]) {
    for (field, value) in cases {
        let mut body = base.clone();
        body[*field] = value.clone();
        for (method, path) in [(Method::POST, list.to_owned()), (Method::PUT, format!("{list}/{existing}"))] {
            let response = app.request(method.clone(), &path, Some(&app.api_key), Some(&body)).await;
            let refused = error(response, 400, "invalid_request_error").await;
            assert_eq!(refused["error"]["code"], "VALIDATION_FAILED", "{refused}");
            assert_eq!(detail_fields(&refused), vec![(*field).to_owned()], "{method} {path} {field} = {value}");
        }
    }
}

/// Bodies that are JSON but not an object are refused, naming the body first.
pub async fn assert_non_object_bodies_refused(app: &TestApp, list: &str, existing: &str) {
    for body in [json!([1, 2]), json!("text"), json!(5), Value::Null] {
        for (method, path) in [(Method::POST, list.to_owned()), (Method::PUT, format!("{list}/{existing}"))] {
            let response = app.request(method.clone(), &path, Some(&app.api_key), Some(&body)).await;
            let refused = error(response, 400, "invalid_request_error").await;
            let fields = detail_fields(&refused);
            assert_eq!(fields.first().map(String::as_str), Some("body"), "{method} {path} with {body}: {refused}");
        }
    }
}

/// A small deterministic generator (xorshift) for the property tests: a seed names a whole sequence.
pub struct Rng(pub u64);

impl Rng {
    /// A number below `n` (zero when `n` is zero).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    /// A number from `low` to `high`, both included.
    pub fn between(&mut self, low: i64, high: i64) -> i64 {
        low + self.below((high - low + 1) as u64) as i64
    }
}

/// The CUIT the fixture certificate (`commands/tests/fixtures/fiscal/org.crt`) names.
pub const FIXTURE_CUIT: &str = "20267565393";
pub const FIXTURE_CERTIFICATE: &str = include_str!("../../../commands/tests/fixtures/fiscal/org.crt");
pub const FIXTURE_KEY: &str = include_str!("../../../commands/tests/fixtures/fiscal/org.key");

/// Keeps the fixture certificate and key for `org_id` (whose CUIT must be [`FIXTURE_CUIT`]).
pub async fn install_certificate(pool: &PgPool, org_id: Uuid) {
    let secrets = events::secrets::SecretBox::load(pool).await.expect("secrets");
    commands::fiscal::certificate::set_certificate(pool, &secrets, org_id, FIXTURE_CERTIFICATE, FIXTURE_KEY)
        .await
        .expect("certificate kept");
}

/// The service name a built-in simulator's tickets are kept under, wherever it listens.
pub const SIMULATOR: &str = "simulator";

/// The adapter the service uses, against the simulator at `base`, with its tickets in `pool`.
pub async fn fiscal_client(pool: &PgPool, base: &str, timeout: Duration) -> commands::fiscal::FiscalClient {
    let endpoints = commands::fiscal::Endpoints::under(&url::Url::parse(base).expect("url")).expect("endpoints");
    let tickets =
        commands::fiscal::Tickets::new(pool.clone(), SIMULATOR.into(), endpoints.wsaa, timeout).await.expect("tickets");
    commands::fiscal::FiscalClient::new(&endpoints.wsfe, timeout, std::sync::Arc::new(tickets)).expect("fiscal client")
}

/// Waits until `n` sessions of this test's database wait on a lock.
pub async fn waiting_on_locks(app: &TestApp, n: i64, what: &str) {
    eventually(Duration::from_secs(20), what, || async {
        let waiting: i64 = sqlx::query_scalar(
            "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()",
        )
        .fetch_one(&app.pool)
        .await
        .expect("activity");
        (waiting >= n).then_some(())
    })
    .await;
}
