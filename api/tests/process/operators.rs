//! The operator and auditor CLI: export, verify (and catching tampering), rebuild under traffic.

use crate::helpers::{Deployment, Writers, create_org, eventually, shared_nats_url};
use events::catalogue::{CustomerEvent, CustomerFields};
use events::store::{self, StreamRef};
use events::{EventPayload, Metadata};
use reqwest::StatusCode;
use serde_json::Value;
use sqlx::PgPool;
use std::time::Duration;

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

/// Appends a customer's creation to a new stream of `org` on `conn` (in a transaction still open, or not),
/// as a command would; answers its position.
async fn append_customer(conn: &mut sqlx::PgConnection, org: uuid::Uuid, name: &str) -> i64 {
    let created = CustomerEvent::CustomerCreated(CustomerFields { name: name.into(), ..CustomerFields::default() })
        .to_new_event()
        .expect("encodes");
    let stream = StreamRef {
        org_id: org,
        stream_type: CustomerEvent::STREAM_TYPE,
        stream_id: uuid::Uuid::now_v7(),
        expected_version: 0,
    };
    store::append(conn, stream, &[created], &Metadata::system("test")).await.expect("appended").key.position
}

/// The position an export's last message names for the next export.
fn next_position(stderr: &str) -> i64 {
    stderr
        .rsplit_once("continue with --from-position ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no next position in {stderr:?}"))
}

/// Positions are taken at insert, so a transaction can hold a lower position than one that commits
/// before it. An export run between the two commits waits for the open one instead of printing past its
/// position, and the position it names for the next export leaves nothing behind: both events are in
/// it, and the next export prints what came after, only. (Before, it printed the committed event alone,
/// and an export from the position after it never printed the other.)
#[sqlx::test(migrations = "../schema")]
async fn an_export_passes_no_position_that_a_transaction_still_holds(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let (org_id, _) = create_org(&deployment, "Exportación");
    // The later position's transaction takes its id first: once it commits it is below the commit
    // horizon although the earlier position's transaction is still open.
    let mut later = pool.begin().await.expect("a transaction");
    sqlx::query("select pg_current_xact_id()").execute(&mut *later).await.expect("a transaction id");
    let mut earlier = pool.begin().await.expect("a transaction");
    let earlier_position = append_customer(&mut earlier, org_id, "Temprano").await;
    let later_position = append_customer(&mut later, org_id, "Tardío").await;
    assert!(earlier_position < later_position);
    later.commit().await.expect("the later position commits first");

    let dir = std::env::temp_dir();
    let (out, log) = (dir.join(format!("export-{org_id}.jsonl")), dir.join(format!("export-{org_id}.log")));
    let read = |path: &std::path::PathBuf| std::fs::read_to_string(path).unwrap_or_default();
    let org = org_id.to_string();
    let mut export = deployment.spawn_command(&["events", "export", "--org", &org], &out, &log);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !read(&log).contains("waiting for") {
        if let Some(status) = export.exited() {
            panic!(
                "the export ended ({status}) with position {earlier_position} still being written; it printed\n{}{}",
                read(&out),
                read(&log)
            );
        }
        assert!(tokio::time::Instant::now() < deadline, "the export neither waited nor ended: {}", read(&log));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    earlier.commit().await.expect("the earlier position commits last");
    let status = loop {
        if let Some(status) = export.exited() {
            break status;
        }
        assert!(tokio::time::Instant::now() < deadline, "the export went on waiting: {}", read(&log));
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let stderr = read(&log);
    assert!(status.success(), "{stderr}");
    let printed: Vec<i64> = read(&out)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("one JSON envelope per line")["position"].as_i64())
        .map(|position| position.expect("a position"))
        .collect();
    assert!(printed.contains(&earlier_position) && printed.contains(&later_position), "{printed:?}");
    let next = next_position(&stderr);
    assert_eq!(next, later_position + 1, "{stderr}");

    let mut conn = pool.acquire().await.expect("a connection");
    let after = append_customer(&mut conn, org_id, "Después").await;
    let tail = deployment.run(&["events", "export", "--org", &org, "--from-position", &next.to_string()]);
    let stderr = String::from_utf8_lossy(&tail.stderr);
    assert!(tail.status.success(), "{stderr}");
    let tail: Vec<Value> = String::from_utf8_lossy(&tail.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON envelope per line"))
        .collect();
    assert_eq!(tail.iter().map(|line| line["position"].as_i64()).collect::<Vec<_>>(), vec![Some(after)]);
    assert_eq!(next_position(&stderr), after + 1, "{stderr}");
    let _ = (std::fs::remove_file(&out), std::fs::remove_file(&log));
}

/// A mistyped organization id has no history: export and verify say so and fail, rather than print
/// nothing or call its chain intact.
#[sqlx::test(migrations = "../schema")]
async fn export_and_verify_refuse_an_unknown_organization(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    create_org(&deployment, "Auditada");
    let unknown = uuid::Uuid::now_v7().to_string();
    for command in ["export", "verify"] {
        let output = deployment.run(&["events", command, "--org", &unknown]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "events {command}: {stderr}");
        assert!(output.stdout.is_empty(), "events {command}: {}", String::from_utf8_lossy(&output.stdout));
        assert!(stderr.contains(&format!("no organization {unknown}")), "events {command}: {stderr}");
    }
}

/// A worker-thread count that is not 1 or more is refused before anything starts (0 made tokio's runtime
/// builder panic; text was ignored).
#[sqlx::test(migrations = "../schema")]
async fn a_worker_thread_count_below_one_or_not_a_number_is_refused(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    for threads in ["0", "many", "-1"] {
        let output = deployment.run_with(&["api"], &[("BACKOFFICE_WORKER_THREADS", threads)]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{threads}: {stderr}");
        assert!(stderr.contains("BACKOFFICE_WORKER_THREADS must be a whole number"), "{threads}: {stderr}");
    }
}

/// A pool of no connections made every query wait for one that never comes (the process gave up after the
/// pool's 10 s wait, blaming the database): it is refused before anything starts.
#[sqlx::test(migrations = "../schema")]
async fn a_database_pool_of_no_connections_is_refused(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let output = deployment.run_with(&["migrate"], &[("DATABASE_POOL_SIZE", "0")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("DATABASE_POOL_SIZE must be a whole number of connections, 1 or more"), "{stderr}");
    assert!(output.stdout.is_empty(), "{}", String::from_utf8_lossy(&output.stdout));
}

/// `--only` and `--partition` choose what running projectors serve; a rebuild rebuilds whole tables for
/// every organization. Given with `rebuild` they were ignored (the named projection was rebuilt whole);
/// they are a usage error, and nothing is rebuilt.
#[sqlx::test(migrations = "../schema")]
async fn a_rebuild_refuses_only_and_partition_rather_than_ignore_them(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    create_org(&deployment, "Reconstrucción");
    for args in [
        ["projections", "--only", "customers", "rebuild", "customers"],
        ["projections", "--only", "customers", "rebuild", "--all"],
        ["projections", "--partition", "0/2", "rebuild", "customers"],
    ] {
        let output = deployment.run(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot be used with"), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?} rebuilt: {}", String::from_utf8_lossy(&output.stdout));
    }
}

/// A rebuild run beside the role that serves METRICS_ADDR (`docker compose exec projections ...`) finds
/// the address taken: it rebuilds without metrics instead of refusing to start.
#[sqlx::test(migrations = "../schema")]
async fn a_rebuild_goes_on_without_metrics_when_their_address_is_taken(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    create_org(&deployment, "Métricas");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().expect("its address").to_string();
    let output = deployment.run_with(&["projections", "rebuild", "customers"], &[("METRICS_ADDR", addr.as_str())]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("rebuilding without metrics"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("the rebuild's report");
    assert_eq!(report["projection"], "customers");
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

/// Runs an operator command; answers its JSON, or its stderr when it fails.
fn admin(deployment: &Deployment, args: &[&str]) -> Result<Value, String> {
    let output = deployment.run(args);
    if output.status.success() {
        Ok(serde_json::from_slice(&output.stdout).expect("the command prints JSON"))
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

#[sqlx::test(migrations = "../schema")]
async fn operators_set_up_the_treasury_and_load_rates(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let (org, _) = create_org(&deployment, "Tesorería");
    let org = org.to_string();
    let bank = admin(
        &deployment,
        &[
            "admin",
            "create-bank-account",
            "--org",
            &org,
            "--bank",
            "Banco Nación",
            "--name",
            "Cuenta corriente",
            "--cbu",
            "2850590940090418135201",
            "--alias",
            "MATE.CEBADO.SOL",
            "--checkbook",
        ],
    )
    .expect("a bank account");
    assert!(bank["bank_account_id"].as_str().is_some());
    let wrong = admin(
        &deployment,
        &[
            "admin",
            "create-bank-account",
            "--org",
            &org,
            "--bank",
            "B",
            "--name",
            "Mal",
            "--cbu",
            "2850590940090418135202",
        ],
    );
    assert!(wrong.expect_err("refused").contains("check digits"));
    let account = admin(
        &deployment,
        &["admin", "create-ledger-account", "--org", &org, "--code", "1.1.9", "--name", "Caja chica"],
    )
    .expect("an account");
    let account = account["ledger_account_id"].as_str().expect("id").to_owned();
    let register = admin(
        &deployment,
        &["admin", "create-cash-register", "--org", &org, "--name", "Caja 1", "--ledger-account", &account],
    )
    .expect("a register");
    let register = register["cash_register_id"].as_str().expect("id").to_owned();
    admin(&deployment, &["admin", "create-safe", "--org", &org, "--name", "Tesoro"]).expect("a safe");
    admin(&deployment, &["admin", "create-cost-center", "--org", &org, "--code", "CC-1", "--name", "Ventas"])
        .expect("a center");
    let status = admin(
        &deployment,
        &[
            "admin",
            "set-location-status",
            "--org",
            &org,
            "--balance-type",
            "cash_register",
            "--id",
            &register,
            "--status",
            "inactive",
        ],
    )
    .expect("deactivated");
    assert_eq!(status["status"], "inactive");
    let stored: String = sqlx::query_scalar("select status from treasury_locations where id = $1")
        .bind(register.parse::<uuid::Uuid>().expect("uuid"))
        .fetch_one(&pool)
        .await
        .expect("the write model");
    assert_eq!(stored, "inactive");
    // The exchange-difference account: an active peso account of the organization, shown by update-org.
    let dollars = admin(
        &deployment,
        &["admin", "create-ledger-account", "--org", &org, "--code", "1.1.8", "--name", "Dólares", "--currency", "DOL"],
    )
    .expect("an account");
    let dollars = dollars["ledger_account_id"].as_str().expect("id").to_owned();
    let set =
        |id: &str| admin(&deployment, &["admin", "update-org", "--org", &org, "--exchange-difference-account", id]);
    assert!(set(&dollars).expect_err("refused").contains("peso account"));
    assert!(set(&uuid::Uuid::now_v7().to_string()).expect_err("refused").contains("no ledger account"));
    let updated = set(&account).expect("set");
    assert_eq!(updated["exchange_difference_account_id"].as_str(), Some(account.as_str()));
    assert!(set("").expect("cleared").get("exchange_difference_account_id").is_none());
    // What printed vouchers show of the issuer.
    let registered = admin(
        &deployment,
        &[
            "admin",
            "update-org",
            "--org",
            &org,
            "--commercial-address",
            "Av. Belgrano 100",
            "--gross-income-number",
            "30-71234567-8",
            "--activity-start",
            "2019-04-01",
        ],
    )
    .expect("registered");
    assert_eq!(
        (
            registered["commercial_address"].as_str(),
            registered["gross_income_number"].as_str(),
            registered["activity_start"].as_str()
        ),
        (Some("Av. Belgrano 100"), Some("30-71234567-8"), Some("2019-04-01"))
    );
    let late = admin(&deployment, &["admin", "update-org", "--org", &org, "--activity-start", "2999-01-01"]);
    assert!(late.expect_err("refused").contains("after today"));
    // The certificate for the authority's login tickets: checked against the key and the CUIT, the key
    // kept sealed and never printed.
    let fixture = |name: &str| format!("{}/../commands/tests/fixtures/fiscal/{name}", env!("CARGO_MANIFEST_DIR"));
    let certify = |key: &str| {
        let (cert, key) = (fixture("org.crt"), fixture(key));
        admin(&deployment, &["admin", "set-fiscal-certificate", "--org", &org, "--cert", &cert, "--key", &key])
    };
    assert!(certify("org.key").expect_err("refused").contains("no CUIT"), "the organization has no CUIT yet");
    admin(&deployment, &["admin", "update-org", "--org", &org, "--tax-id", "20267565393"]).expect("CUIT set");
    assert!(certify("other.key").expect_err("refused").contains("does not match"));
    let certified = certify("org.key").expect("kept");
    assert_eq!(certified["cuit"], "20267565393");
    assert!(certified["subject"].as_str().is_some_and(|s| s.contains("CUIT 20267565393")), "{certified}");
    assert!(certified.get("key").is_none() && !certified.to_string().contains("PRIVATE"), "{certified}");
    let sealed: String = sqlx::query_scalar("select sealed_key::text from fiscal_certificates where org_id = $1")
        .bind(org.parse::<uuid::Uuid>().expect("uuid"))
        .fetch_one(&pool)
        .await
        .expect("stored");
    assert!(!sealed.contains("PRIVATE KEY"), "the key is stored sealed");
    let file = std::env::temp_dir().join(format!("rates-{org}.csv"));
    std::fs::write(&file, "date,currency,rate\n2026-03-02,DOL,1050.25\n2026-03-03,DOL,1051\n").expect("written");
    let path = file.to_str().expect("path");
    let first = admin(&deployment, &["admin", "load-rates", path]).expect("loaded");
    assert_eq!((first["inserted"].as_u64(), first["unchanged"].as_u64()), (Some(2), Some(0)));
    let again = admin(&deployment, &["admin", "load-rates", path]).expect("loaded again");
    assert_eq!((again["inserted"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(2)), "idempotent");
    std::fs::write(&file, "2026-03-02,DOL,1050.25\n2026-03-04,EUR,1\n").expect("written");
    assert!(admin(&deployment, &["admin", "load-rates", path]).expect_err("refused").contains("lines 2"));
    let _ = std::fs::remove_file(&file);
}

#[sqlx::test(migrations = "../schema")]
async fn fiscal_check_passes_against_the_simulator_and_names_what_is_missing(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let port = crate::helpers::free_port();
    let address = format!("127.0.0.1:{port}");
    let log = std::env::temp_dir().join(format!("fiscal-simulator-{port}.log"));
    let _simulator = deployment.spawn_role(&["fiscal-simulator"], &[("FISCAL_SIMULATOR_ADDR", address.as_str())], &log);
    eventually("the simulator listens", || async { tokio::net::TcpStream::connect(&address).await.is_ok() }).await;
    let url = format!("http://{address}");
    let check = |org: &str| {
        let output = deployment.run_with(&["fiscal", "check", "--org", org], &[("FISCAL_URL", url.as_str())]);
        let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
        (output.status.code(), report, String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (org, _) = create_org(&deployment, "Almacén Fiscal");
    let org = org.to_string();

    // No CUIT, no certificate: it says so, and exits 1.
    let (code, report, stderr) = check(&org);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(report["ok"], false);
    assert!(stderr.contains("no valid CUIT"), "{stderr}");
    assert!(stderr.contains("no certificate for the tax authority"), "{stderr}");
    assert_eq!(report["authority"], "OK", "the health check runs anyway");

    // With both, it passes: a ticket, the seeded point of sale 1 enabled, its series asked for.
    admin(
        &deployment,
        &["admin", "update-org", "--org", &org, "--tax-id", "20267565393", "--tax-category", "Responsable Inscripto"],
    )
    .expect("profile");
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../commands/tests/fixtures/fiscal");
    let (cert, key) = (format!("{fixtures}/org.crt"), format!("{fixtures}/org.key"));
    let kept = admin(&deployment, &["admin", "set-fiscal-certificate", "--org", &org, "--cert", &cert, "--key", &key])
        .expect("certificate kept");
    assert_eq!(kept["cuit"], "20267565393");
    let (code, report, stderr) = check(&org);
    assert_eq!(code, Some(0), "{stderr} {report}");
    assert_eq!(report["ticket"], true);
    assert_eq!(report["points_of_sale"][0]["number"], 1);
    assert_eq!(report["points_of_sale"][0]["enabled_at_authority"], true);
    let types: Vec<i64> = report["points_of_sale"][0]["series"]
        .as_array()
        .expect("series")
        .iter()
        .filter_map(|s| s["voucher_type"].as_i64())
        .collect();
    assert_eq!(types, vec![1, 2, 3, 6, 7, 8], "a Responsable Inscripto issues A and B");
    assert_eq!(report["points_of_sale"][0]["series"][0]["authority_last"], 0);

    // A point of sale the authority has not enabled for the CUIT.
    admin(&deployment, &["admin", "create-point-of-sale", "--org", &org, "--number", "77"]).expect("created");
    let (code, report, stderr) = check(&org);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("point of sale 77 is electronic here but not enabled at the tax authority"), "{stderr}");
    assert_eq!(report["points_of_sale"][1]["enabled_at_authority"], false);
}

/// The JSON body of the answer to `request`.
async fn answer(request: reqwest::RequestBuilder) -> Value {
    request.send().await.expect("sent").json().await.expect("json")
}

#[sqlx::test(migrations = "../schema")]
async fn reports_query_answers_as_the_api_does_in_json_and_csv(pool: PgPool) {
    let deployment = Deployment::new(&pool, &shared_nats_url());
    let (org, key) = create_org(&deployment, "Informes");
    let _service = deployment.start().await;
    let client = crate::helpers::http_client();
    // The organization's seeded warehouse is readable once the projector has folded its creation.
    let warehouses = || async {
        let page = answer(client.get(format!("{}/api/v1/warehouses", deployment.base())).bearer_auth(&key)).await;
        page["data"][0]["id"].as_str().map(str::to_owned)
    };
    eventually("the seeded warehouse is readable", || async { warehouses().await.is_some() }).await;
    let warehouse = warehouses().await.expect("a seeded warehouse");
    for (sku, name, quantity) in [("CAFE", "Café", 12), ("TE", "Té", 30)] {
        let body = serde_json::json!({ "name": format!("Artículo {name}"), "sku": sku, "price": 900, "cost": 500,
            "warehouseStocks": [{ "warehouseId": warehouse, "quantity": quantity }] });
        let response = client
            .post(format!("{}/api/v1/products", deployment.base()))
            .bearer_auth(&key)
            .header("Idempotency-Key", sku)
            .json(&body)
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), StatusCode::CREATED, "{}", response.text().await.unwrap_or_default());
    }
    let query = serde_json::json!({ "report": "inventory", "group_by": ["product"], "metrics": ["on_hand", "value"],
        "sort": ["-on_hand"] });
    let api = || async {
        let url = format!("{}/api/v1/reports/query", deployment.base());
        answer(client.post(url).bearer_auth(&key).json(&query)).await["data"].clone()
    };
    eventually("the reports projection folds the opening stock", || async { api().await["totals"]["on_hand"] == "42" })
        .await;
    let from_api = api().await;
    let file = std::env::temp_dir().join(format!("report-{org}.json"));
    std::fs::write(&file, query.to_string()).expect("query file");
    let org = org.to_string();
    let path = file.to_str().expect("path");

    let output = deployment.run(&["reports", "query", "--org", &org, "--file", path]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(printed["rows"], from_api["rows"]);
    assert_eq!(printed["totals"], serde_json::json!({ "on_hand": "42", "value": 21000 }));

    let output = deployment.run(&["reports", "query", "--org", &org, "--file", path, "--csv"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    let lines: Vec<&str> = text.trim_start_matches('\u{feff}').lines().collect();
    assert_eq!(lines[0], "product,product_name,on_hand,value");
    assert!(lines[1].ends_with(",Artículo Té,30,15000"), "{text}");
    assert!(lines[2].ends_with(",Artículo Café,12,6000"), "{text}");

    std::fs::write(&file, r#"{ "report": "sales", "metrics": ["on_hand"] }"#).expect("query file");
    let refused = deployment.run(&["reports", "query", "--org", &org, "--file", path]);
    assert_eq!(refused.status.code(), Some(2));
    let errors: Value = serde_json::from_slice(&refused.stdout).expect("JSON");
    assert_eq!(errors["errors"][0]["field"], "metrics[0]");
    let _ = std::fs::remove_file(&file);
}
