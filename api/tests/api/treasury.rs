//! Treasury: locations set up by operators and read without their ledger account, funds transfers as
//! one balanced entry (replayed, raced, refused), balances now and as of earlier instants, movements,
//! and what delegated tokens see.

use crate::helpers::{TestApp, detail_fields, error, eventually, items, json, today};
use commands::organization::{Delegation, create_delegated_token};
use commands::treasury::admin::{
    NewLocation, create_cost_center, create_ledger_account, create_location, set_location_status,
};
use events::catalogue::{Currency, LocationKind, LocationStatus};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::BTreeMap;
use std::time::Duration;
use uuid::Uuid;

const TRANSFERS: &str = "/api/v1/funds-transfers";
const BALANCES: &str = "/api/v1/treasury/balances";
const CBU: &str = "2850590940090418135201";

/// Two peso cash registers, "Caja de Ana" and "Caja de Beto", that delegation tests assign: their ids.
pub async fn registers_of_ana_and_beto(app: &TestApp) -> (String, String) {
    let mine = open(app, app.org_id, LocationKind::CashRegister, "Caja de Ana", Currency::Pes).await;
    let other = open(app, app.org_id, LocationKind::CashRegister, "Caja de Beto", Currency::Pes).await;
    (mine, other)
}

pub async fn open(app: &TestApp, org: Uuid, kind: LocationKind, name: &str, currency: Currency) -> String {
    let bank = kind == LocationKind::BankAccount;
    let new = NewLocation {
        kind,
        name: name.into(),
        currency,
        bank: bank.then(|| "Banco Nación".into()),
        account_number: bank.then(|| CBU.into()),
        alias: bank.then(|| "MATE.CEBADO.SOL".into()),
        uses_checkbook: bank,
        ledger_account_id: None,
    };
    let id = create_location(&app.pool, org, new).await.expect("opened");
    // Operators write outside the API: their locations reach the read side asynchronously.
    eventually(Duration::from_secs(15), "the location is readable", || async {
        let row: Option<String> =
            sqlx::query_scalar("select status from treasury_locations_view where org_id = $1 and id = $2")
                .bind(org)
                .bind(id)
                .fetch_optional(&app.pool)
                .await
                .expect("read");
        row.map(|_| ())
    })
    .await;
    id.to_string()
}

/// Sets a location's status and waits until the read side shows it.
async fn set_status(app: &TestApp, kind: LocationKind, id: &str, status: LocationStatus) {
    let id: Uuid = id.parse().expect("id");
    set_location_status(&app.pool, app.org_id, kind, id, status).await.expect("status set");
    eventually(Duration::from_secs(15), "the status is readable", || async {
        let row: Option<String> =
            sqlx::query_scalar("select status from treasury_locations_view where org_id = $1 and id = $2")
                .bind(app.org_id)
                .bind(id)
                .fetch_optional(&app.pool)
                .await
                .expect("read");
        row.filter(|s| s == status.as_str()).map(|_| ())
    })
    .await;
}

pub fn transfer(from: (&str, &str), to: (&str, &str), amount: i64, on: &str) -> Value {
    json!({ "source": { "balance_type": from.0, "balance_id": from.1 },
        "destination": { "balance_type": to.0, "balance_id": to.1 }, "amount": amount, "occurred_on": on })
}

/// Every balance the credential sees, by `balance_type/balance_id`: (functional, native).
async fn balances(app: &TestApp, query: &str, key: &str) -> BTreeMap<String, (i64, Option<i64>)> {
    let body = json(app.request(Method::GET, &format!("{BALANCES}{query}"), Some(key), None).await, 200).await;
    items(&body)
        .iter()
        .map(|b| {
            let at = format!("{}/{}", b["balance_type"].as_str().expect("type"), b["balance_id"].as_str().expect("id"));
            (at, (b["functional_amount"].as_i64().expect("functional"), b["native_amount"].as_i64()))
        })
        .collect()
}

async fn transfer_events(app: &TestApp) -> Vec<Value> {
    sqlx::query_scalar("select data from events where stream_type = 'funds_transfer' order by position")
        .fetch_all(&app.pool)
        .await
        .expect("events")
}

#[sqlx::test(migrations = "../schema")]
async fn locations_are_set_up_by_operators_and_read_without_their_ledger_account(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let bank = open(&app, app.org_id, LocationKind::BankAccount, "Cuenta corriente", Currency::Pes).await;
    let dollars = open(&app, app.org_id, LocationKind::BankAccount, "Caja de ahorro USD", Currency::Dol).await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    open(&app, app.org_id, LocationKind::Safe, "Tesoro", Currency::Pes).await;
    let account = json(app.get(&format!("/api/v1/bank-accounts/{bank}")).await, 200).await;
    let data = &account["data"];
    assert_eq!(data["object"], "bank_account");
    assert_eq!((data["bank"].as_str(), data["account_number"].as_str()), (Some("Banco Nación"), Some(CBU)));
    assert_eq!((data["currency"].as_str(), data["status"].as_str()), (Some("PES"), Some("active")));
    assert_eq!(data["uses_checkbook"], true);
    let keys: Vec<&str> = data.as_object().expect("object").keys().map(String::as_str).collect();
    for hidden in ["ledger_account_id", "organization_id", "balance", "org_id"] {
        assert!(!keys.contains(&hidden), "{hidden} is not shown");
    }
    let usd = json(app.get("/api/v1/bank-accounts?currency=DOL").await, 200).await;
    assert_eq!(items(&usd).iter().map(|a| a["id"].as_str().expect("id")).collect::<Vec<_>>(), [dollars.as_str()]);
    set_status(&app, LocationKind::BankAccount, &dollars, LocationStatus::Inactive).await;
    let inactive = json(app.get("/api/v1/bank-accounts?status=inactive").await, 200).await;
    assert_eq!(items(&inactive).len(), 1);
    // Listed beside the register and the safe every organization is seeded with.
    let registers = items(&json(app.get("/api/v1/cash-registers").await, 200).await);
    assert_eq!(registers.len(), 2, "the seeded register and Caja 1");
    let listed = registers.iter().find(|r| r["id"] == register.as_str()).expect("Caja 1 is listed");
    assert_eq!(listed["object"], "cash_register");
    let safes = json(app.get("/api/v1/safes").await, 200).await;
    assert_eq!(items(&safes).len(), 2, "the seeded safe and Tesoro");
    // A register's id is no safe, and another organization's location is unknown here.
    error(app.get(&format!("/api/v1/safes/{register}")).await, 404, "invalid_request_error").await;
    let (other, other_key) = app.other_org().await;
    let theirs = open(&app, other, LocationKind::BankAccount, "Ajena", Currency::Pes).await;
    error(app.get(&format!("/api/v1/bank-accounts/{theirs}")).await, 404, "invalid_request_error").await;
    let theirs_seen = json(app.request(Method::GET, "/api/v1/bank-accounts", Some(&other_key), None).await, 200).await;
    assert_eq!(items(&theirs_seen).len(), 1);
    // Operators' mistakes: a wrong CBU check digit, bank details on a register, a foreign ledger account.
    let mut wrong = NewLocation {
        kind: LocationKind::BankAccount,
        name: "Mal".into(),
        currency: Currency::Pes,
        bank: Some("Banco".into()),
        account_number: Some("2850590940090418135202".into()),
        alias: None,
        uses_checkbook: false,
        ledger_account_id: None,
    };
    assert!(create_location(&app.pool, app.org_id, wrong.clone()).await.is_err(), "check digit");
    wrong.account_number = None;
    wrong.ledger_account_id =
        Some(create_ledger_account(&app.pool, other, "9.9", "Ajena", Currency::Pes).await.expect("account"));
    assert!(create_location(&app.pool, app.org_id, wrong.clone()).await.is_err(), "foreign account");
    wrong.kind = LocationKind::CashRegister;
    wrong.ledger_account_id = None;
    assert!(create_location(&app.pool, app.org_id, wrong).await.is_err(), "bank details on a register");
    create_cost_center(&app.pool, app.org_id, "CC-1", "Ventas").await.expect("cost center");
    assert!(create_cost_center(&app.pool, app.org_id, "CC-1", "Otra").await.is_err(), "codes are unique");
}

#[sqlx::test(migrations = "../schema")]
async fn a_transfer_moves_pesos_in_one_balanced_entry_and_is_replayed_not_repeated(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let safe = open(&app, app.org_id, LocationKind::Safe, "Tesoro", Currency::Pes).await;
    let body = transfer(("cash_register", &register), ("safe", &safe), 12_345, &today());
    let created = json(app.post_key(TRANSFERS, "move-1", &body).await, 201).await;
    let data = &created["data"];
    assert_eq!((data["object"].as_str(), data["idempotent_replay"].as_bool()), (Some("funds_transfer"), Some(false)));
    let effects = data["accounting_effects"].as_array().expect("effects");
    assert_eq!(effects.len(), 2);
    assert_eq!(
        (effects[0]["balance_id"].as_str(), effects[0]["amount"].as_i64()),
        (Some(register.as_str()), Some(-12_345))
    );
    assert_eq!((effects[1]["balance_id"].as_str(), effects[1]["amount"].as_i64()), (Some(safe.as_str()), Some(12_345)));
    // The source may go negative; both balances come from the ledger.
    let now = balances(&app, "", &app.api_key).await;
    assert_eq!(now[&format!("cash_register/{register}")], (-12_345, Some(-12_345)));
    assert_eq!(now[&format!("safe/{safe}")], (12_345, Some(12_345)));
    // Each effect is a movement of the list, by the same id.
    let movements =
        json(app.get(&format!("/api/v1/treasury/movements?balance_type=safe&balance_id={safe}")).await, 200).await;
    let rows = items(&movements);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["treasury_movement_id"], effects[1]["treasury_movement_id"]);
    assert_eq!(
        (rows[0]["movement_type"].as_str(), rows[0]["functional_amount"].as_i64()),
        (Some("transfer_in"), Some(12_345))
    );
    let one = json(
        app.get(&format!("/api/v1/treasury/movements/{}", effects[0]["treasury_movement_id"].as_str().expect("id")))
            .await,
        200,
    )
    .await;
    assert_eq!(one["data"]["movement_type"], "transfer_out");
    // A replay answers the same transfer and moves nothing again; another body under the key is refused.
    let replay = json(app.post_key(TRANSFERS, "move-1", &body).await, 201).await;
    assert_eq!(
        (replay["data"]["id"].clone(), replay["data"]["idempotent_replay"].as_bool()),
        (data["id"].clone(), Some(true))
    );
    let other = transfer(("cash_register", &register), ("safe", &safe), 1, &today());
    let conflict = error(app.post_key(TRANSFERS, "move-1", &other).await, 409, "idempotency_error").await;
    assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT");
    assert_eq!(balances(&app, "", &app.api_key).await, now, "nothing moved twice");
    let stored = transfer_events(&app).await;
    assert_eq!(stored.len(), 1);
    let lines = stored[0]["entry"]["lines"].as_array().expect("lines");
    assert_eq!(lines.iter().map(|l| l["functional"].as_i64().expect("amount")).sum::<i64>(), 0, "balanced");
    // The list omits the effects; the detail has them.
    let list = json(app.get(TRANSFERS).await, 200).await;
    assert!(items(&list)[0].get("accounting_effects").is_none());
    let detail = json(app.get(&format!("{TRANSFERS}/{}", data["id"].as_str().expect("id"))).await, 200).await;
    assert_eq!(detail["data"]["accounting_effects"], data["accounting_effects"]);
}

#[sqlx::test(migrations = "../schema")]
async fn bad_transfers_are_refused_and_write_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let safe = open(&app, app.org_id, LocationKind::Safe, "Tesoro", Currency::Pes).await;
    let dollars = open(&app, app.org_id, LocationKind::BankAccount, "USD", Currency::Dol).await;
    let shut = open(&app, app.org_id, LocationKind::Safe, "Cerrado", Currency::Pes).await;
    set_status(&app, LocationKind::Safe, &shut, LocationStatus::Inactive).await;
    let (other, _) = app.other_org().await;
    let theirs = open(&app, other, LocationKind::Safe, "Ajeno", Currency::Pes).await;
    let good = transfer(("cash_register", &register), ("safe", &safe), 100, &today());
    let mut extra = good.clone();
    extra["currency"] = json!("PES");
    extra["colour"] = json!("red");
    let refused = error(app.post_keyed(TRANSFERS, &extra).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["colour", "currency"]);
    for amount in [json!(0), json!(-5), json!(1_000_000_000_001_i64), json!(1.5), json!("100")] {
        let mut bad = good.clone();
        bad["amount"] = amount;
        let refused = error(app.post_keyed(TRANSFERS, &bad).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), ["amount"]);
    }
    let missing = transfer(("cash_register", &register), ("safe", &theirs), 100, &today());
    let not_found = error(app.post_keyed(TRANSFERS, &missing).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&not_found), ["destination.balance_id"]);
    let wrong_kind = transfer(("safe", &register), ("cash_register", &safe), 100, &today());
    error(app.post_keyed(TRANSFERS, &wrong_kind).await, 404, "invalid_request_error").await;
    let inactive = transfer(("cash_register", &register), ("safe", &shut), 100, &today());
    let conflict = error(app.post_keyed(TRANSFERS, &inactive).await, 409, "business_error").await;
    assert_eq!(conflict["error"]["code"], "STATE_CONFLICT");
    let tomorrow = (events::catalogue::ar_date(time::OffsetDateTime::now_utc()) + time::Duration::days(1)).to_string();
    let future = transfer(("cash_register", &register), ("safe", &safe), 100, &tomorrow);
    assert_eq!(
        error(app.post_keyed(TRANSFERS, &future).await, 422, "business_error").await["error"]["code"],
        "FUTURE_DATE"
    );
    let usd = transfer(("cash_register", &register), ("bank_account", &dollars), 100, &today());
    assert_eq!(
        error(app.post_keyed(TRANSFERS, &usd).await, 422, "business_error").await["error"]["code"],
        "UNSUPPORTED_CURRENCY"
    );
    // The refusal names the endpoint at fault, the source too.
    let from_usd = transfer(("bank_account", &dollars), ("cash_register", &register), 100, &today());
    let refused = error(app.post_keyed(TRANSFERS, &from_usd).await, 422, "business_error").await;
    assert_eq!(
        (refused["error"]["code"].as_str(), detail_fields(&refused)),
        (Some("UNSUPPORTED_CURRENCY"), vec!["source".to_owned()])
    );
    assert!(transfer_events(&app).await.is_empty(), "nothing written");
    let journal: i64 =
        sqlx::query_scalar("select count(*) from journal_lines").fetch_one(&app.pool).await.expect("count");
    assert_eq!(journal, 0);
    // Lists refuse bad dates and kinds.
    for query in ["?date_from=yesterday", "?balance_type=vault"] {
        error(app.get(&format!("{TRANSFERS}{query}")).await, 400, "invalid_request_error").await;
    }
    error(app.get(&format!("{BALANCES}?as_of=soon")).await, 400, "invalid_request_error").await;
}

#[sqlx::test(migrations = "../schema")]
async fn balances_as_of_any_earlier_instant_are_what_they_were_then(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let places = [
        ("cash_register", open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await),
        ("cash_register", open(&app, app.org_id, LocationKind::CashRegister, "Caja 2", Currency::Pes).await),
        ("safe", open(&app, app.org_id, LocationKind::Safe, "Tesoro", Currency::Pes).await),
        ("bank_account", open(&app, app.org_id, LocationKind::BankAccount, "Banco", Currency::Pes).await),
    ];
    let mut seed = 0x9E37_79B9_u64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut history = Vec::new();
    for step in 0..24 {
        let from = next(4) as usize;
        let to = (from + 1 + next(3) as usize) % 4;
        let amount = 1 + next(50_000) as i64;
        let body = transfer((places[from].0, &places[from].1), (places[to].0, &places[to].1), amount, &today());
        json(app.post_key(TRANSFERS, &format!("step-{step}"), &body).await, 201).await;
        let now = balances(&app, "", &app.api_key).await;
        assert_eq!(now.values().map(|(f, _)| f).sum::<i64>(), 0, "money only moves between locations");
        history.push((time::OffsetDateTime::now_utc(), now));
    }
    let first = history[0].0 - time::Duration::seconds(60);
    let before = balances(&app, &format!("?as_of={}", rfc3339(first)), &app.api_key).await;
    assert!(before.values().all(|b| *b == (0, Some(0))), "nothing before the first transfer");
    for (at, expected) in &history {
        assert_eq!(&balances(&app, &format!("?as_of={}", rfc3339(*at)), &app.api_key).await, expected);
    }
    let end_of_today = balances(&app, &format!("?as_of={}", today()), &app.api_key).await;
    assert_eq!(&end_of_today, &history.last().expect("steps").1);
}

fn rfc3339(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339).expect("format").replace('+', "%2B")
}

#[sqlx::test(migrations = "../schema")]
async fn fifty_concurrent_transfers_out_of_one_register_are_each_one_entry(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let safes = [
        open(&app, app.org_id, LocationKind::Safe, "Tesoro A", Currency::Pes).await,
        open(&app, app.org_id, LocationKind::Safe, "Tesoro B", Currency::Pes).await,
    ];
    let sends = (0..50).map(|n| {
        let body = transfer(("cash_register", &register), ("safe", &safes[n % 2]), 100 + n as i64, &today());
        let app = &app;
        async move { app.post_key(TRANSFERS, &format!("race-{n}"), &body).await.status().as_u16() }
    });
    let statuses = futures::future::join_all(sends).await;
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    let now = balances(&app, "", &app.api_key).await;
    let total: i64 = (0..50).map(|n| 100 + n).sum();
    let to_a: i64 = (0..50).filter(|n| n % 2 == 0).map(|n| 100 + n).sum();
    assert_eq!(now[&format!("cash_register/{register}")].0, -total);
    assert_eq!(now[&format!("safe/{}", safes[0])].0, to_a);
    assert_eq!(now[&format!("safe/{}", safes[1])].0, total - to_a);
    let stored = transfer_events(&app).await;
    assert_eq!(stored.len(), 50, "one entry each");
    for data in stored {
        let sum: i64 = data["entry"]["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .map(|l| l["functional"].as_i64().expect("amount"))
            .sum();
        assert_eq!(sum, 0);
    }
}

#[sqlx::test(migrations = "../schema")]
async fn delegated_tokens_see_their_registers_and_with_own_visibility_their_own_movements(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (mine, other) = registers_of_ana_and_beto(&app).await;
    let safe = open(&app, app.org_id, LocationKind::Safe, "Tesoro", Currency::Pes).await;
    let scopes = ["treasury:read".to_owned(), "treasury:write".to_owned()];
    let delegation = Delegation {
        user: "ana".into(),
        visibility: "own".into(),
        registers: vec![mine.parse().expect("id")],
        safes: vec![safe.parse().expect("id")],
    };
    let ana = create_delegated_token(&app.pool, app.org_id, &scopes, delegation).await.expect("token");
    // Only the organization's own registers and safes are assigned: another organization's register, or
    // a register named as a safe, is refused and issues nothing.
    let (elsewhere, _) = app.other_org().await;
    let theirs: Uuid =
        open(&app, elsewhere, LocationKind::CashRegister, "Ajena", Currency::Pes).await.parse().expect("id");
    let register: Uuid = mine.parse().expect("id");
    let issued = || async {
        sqlx::query_scalar::<_, i64>("select count(*) from credentials where org_id = $1")
            .bind(app.org_id)
            .fetch_one(&app.pool)
            .await
            .expect("count")
    };
    let before = issued().await;
    for (registers, safes) in [(vec![theirs], vec![]), (vec![], vec![register])] {
        let delegation = Delegation { user: "intruso".into(), visibility: "organization".into(), registers, safes };
        let refused = create_delegated_token(&app.pool, app.org_id, &scopes, delegation).await.expect_err("refused");
        assert!(refused.to_string().contains("the organization has no"), "{refused}");
    }
    assert_eq!(issued().await, before, "no token was issued");
    // The organization's key moves money between the register Ana does not see and the safe.
    json(app.post_keyed(TRANSFERS, &transfer(("cash_register", &other), ("safe", &safe), 700, &today())).await, 201)
        .await;
    let ana_moves = transfer(("cash_register", &mine), ("safe", &safe), 300, &today());
    let answer = app.keyed_as(&ana, Method::POST, TRANSFERS, "ana-1", Some(&ana_moves)).await;
    let created = json(answer, 201).await;
    let seen = balances(&app, "", &ana).await;
    assert_eq!(seen.len(), 2, "her register and her safe: {seen:?}");
    assert_eq!(seen[&format!("cash_register/{mine}")], (-300, Some(-300)));
    assert_eq!(seen[&format!("safe/{safe}")], (300, Some(300)), "only what she made counts");
    let scope = json(app.request(Method::GET, BALANCES, Some(&ana), None).await, 200).await;
    assert!(items(&scope).iter().all(|b| b["visibility_scope"] == "own"));
    let organization = balances(&app, "", &app.api_key).await;
    assert_eq!(organization[&format!("safe/{safe}")], (1_000, Some(1_000)));
    let listed = json(app.request(Method::GET, TRANSFERS, Some(&ana), None).await, 200).await;
    assert_eq!(items(&listed).len(), 1);
    assert_eq!(items(&listed)[0]["id"], created["data"]["id"]);
    // A location she does not see is unknown to her, to read or to move from.
    let hidden = format!("/api/v1/cash-registers/{other}");
    error(app.request(Method::GET, &hidden, Some(&ana), None).await, 404, "invalid_request_error").await;
    let sneaky = transfer(("cash_register", &other), ("safe", &safe), 1, &today());
    let answer = app.keyed_as(&ana, Method::POST, TRANSFERS, "ana-2", Some(&sneaky)).await;
    let refused = error(answer, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["source.balance_id"]);
    // Both endpoints hidden: the one 404 names both.
    let bank = open(&app, app.org_id, LocationKind::BankAccount, "Banco", Currency::Pes).await;
    let hidden_both = transfer(("cash_register", &other), ("bank_account", &bank), 1, &today());
    let answer = app.keyed_as(&ana, Method::POST, TRANSFERS, "ana-5", Some(&hidden_both)).await;
    let refused = error(answer, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["source.balance_id", "destination.balance_id"]);
    let banks = json(app.request(Method::GET, "/api/v1/bank-accounts", Some(&ana), None).await, 200).await;
    assert!(items(&banks).is_empty());
    // A manual movement someone else made at her own register is not hers under `own`: she can neither
    // read it nor, knowing its id and `updated_at`, replace or delete it.
    let expenses =
        create_ledger_account(&app.pool, app.org_id, "5.1.1", "Gastos", Currency::Pes).await.expect("account");
    let theirs = json!({ "balance_type": "cash_register", "balance_id": mine, "direction": "expense", "amount": 50,
        "occurred_on": today(), "account_id": expenses });
    let made = json(send(&app, Method::POST, MOVEMENTS, "theirs-1", &theirs).await, 201).await["data"].clone();
    let path = format!("{MOVEMENTS}/{}", made["treasury_movement_id"].as_str().expect("id"));
    error(app.request(Method::GET, &path, Some(&ana), None).await, 404, "invalid_request_error").await;
    let replacement = json!({ "balance_type": "cash_register", "balance_id": mine, "direction": "expense",
        "amount": 60, "occurred_on": today(), "account_id": expenses, "updated_at": made["updated_at"] });
    for (method, key, body) in [
        (Method::DELETE, "ana-3", json!({ "updated_at": made["updated_at"] })),
        (Method::PUT, "ana-4", replacement),
    ] {
        let answer = app.keyed_as(&ana, method, &path, key, Some(&body)).await;
        error(answer, 404, "invalid_request_error").await;
    }
    let kept = json(app.get(&path).await, 200).await["data"].clone();
    assert_eq!(kept, made, "neither changed it");
}

const MOVEMENTS: &str = "/api/v1/treasury/movements";

async fn send(app: &TestApp, method: Method, path: &str, key: &str, body: &Value) -> reqwest::Response {
    app.keyed(method, path, key, Some(body)).await
}

#[sqlx::test(migrations = "../schema")]
async fn manual_movements_follow_the_spec_rules(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let expenses =
        create_ledger_account(&app.pool, app.org_id, "5.1.1", "Gastos", Currency::Pes).await.expect("account");
    let rent = create_ledger_account(&app.pool, app.org_id, "5.1.2", "Alquiler", Currency::Pes).await.expect("account");
    let center = create_cost_center(&app.pool, app.org_id, "CC-1", "Ventas").await.expect("center");
    let customer =
        json(app.post("/api/v1/customers", &json!({ "name": "Ana" })).await, 201).await["data"]["id"].clone();
    let body = json!({ "balance_type": "cash_register", "balance_id": register, "direction": "expense", "amount": 1_000,
        "occurred_on": today(), "account_id": expenses, "cost_center1_id": center, "note": "Librería",
        "contact_id": customer, "distributions": [{ "cost_center1_id": center, "amount_cents": 1_000 }] });
    let created = json(send(&app, Method::POST, MOVEMENTS, "manual-1", &body).await, 201).await["data"].clone();
    let id = created["treasury_movement_id"].as_str().expect("id").to_owned();
    assert_eq!(
        (created["movement_type"].as_str(), created["functional_amount"].as_i64()),
        (Some("manual_expense"), Some(-1_000))
    );
    assert_eq!(
        (created["note"].as_str(), created["cost_center1_id"].as_str()),
        (Some("Librería"), Some(center.to_string().as_str()))
    );
    assert_eq!(created["lines"], json!([]));
    assert_eq!(
        (created["exchange_rate"].clone(), created["exchange_difference_amount"].as_i64()),
        (Value::Null, Some(0))
    );
    let detail = json(app.get(&format!("{MOVEMENTS}/{id}")).await, 200).await["data"].clone();
    assert_eq!(detail, created, "the detail is what the write answered");
    assert_eq!(balances(&app, "", &app.api_key).await[&format!("cash_register/{register}")], (-1_000, Some(-1_000)));
    // Rule 2: with lines, cost centers go on each line; rule 6: no exchange rate on pesos.
    let mut rooted = body.clone();
    rooted.as_object_mut().expect("object").remove("account_id");
    rooted["lines"] = json!([{ "account_id": expenses, "amount": 1_000 }]);
    let refused =
        error(send(&app, Method::POST, MOVEMENTS, "manual-2", &rooted).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["cost_center1_id"]);
    let mut rated = body.clone();
    rated["exchange_rate"] = json!("1050.5");
    let refused =
        error(send(&app, Method::POST, MOVEMENTS, "manual-3", &rated).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["exchange_rate"]);
    let (other, _) = app.other_org().await;
    let theirs = create_cost_center(&app.pool, other, "CC-X", "Ajeno").await.expect("center");
    let mut foreign = body.clone();
    foreign["cost_center1_id"] = json!(theirs);
    let refused =
        error(send(&app, Method::POST, MOVEMENTS, "manual-4", &foreign).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["cost_center1_id"]);
    // An inactive counterpart account or cost center is a reference like a missing one: 404, nothing posted.
    let retired = create_ledger_account(&app.pool, app.org_id, "5.1.9", "Baja", Currency::Pes).await.expect("account");
    let closed = create_cost_center(&app.pool, app.org_id, "CC-9", "Cerrado").await.expect("center");
    sqlx::query("update ledger_accounts set is_active = false where id = $1").bind(retired).execute(&app.pool).await.expect("retired");
    sqlx::query("update cost_centers set is_active = false where id = $1").bind(closed).execute(&app.pool).await.expect("closed");
    let mut inactive = body.clone();
    inactive["account_id"] = json!(retired);
    inactive["distributions"] = json!([{ "cost_center1_id": closed, "amount_cents": 1_000 }]);
    let refused =
        error(send(&app, Method::POST, MOVEMENTS, "manual-5", &inactive).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["account_id", "distributions[0].cost_center1_id"]);
    assert_eq!(balances(&app, "", &app.api_key).await[&format!("cash_register/{register}")], (-1_000, Some(-1_000)));
    // Rule 3: the version read goes in the body; missing is 400, stale is 409, and neither changes anything.
    let path = format!("{MOVEMENTS}/{id}");
    let replacement = json!({ "balance_type": "cash_register", "balance_id": register, "direction": "expense",
        "amount": 700, "occurred_on": today(), "lines": [{ "account_id": expenses, "amount": 500, "cost_center1_id": center },
        { "account_id": rent, "amount": 200 }] });
    let missing =
        error(send(&app, Method::PUT, &path, "edit-1", &replacement).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&missing), ["updated_at"]);
    let mut stale = replacement.clone();
    stale["updated_at"] = json!("2026-01-01T00:00:00-03:00");
    error(send(&app, Method::PUT, &path, "edit-2", &stale).await, 409, "business_error").await;
    assert_eq!(json(app.get(&path).await, 200).await["data"], created, "nothing replaced");
    // Rule 1: a whole replacement; the note is cleared, the contact kept, the movement keeps its id.
    let mut current = replacement.clone();
    current["updated_at"] = created["updated_at"].clone();
    let replaced = json(send(&app, Method::PUT, &path, "edit-3", &current).await, 200).await["data"].clone();
    assert_eq!(replaced["treasury_movement_id"], created["treasury_movement_id"]);
    assert_ne!(replaced["id"], created["id"], "a new ledger line");
    assert_eq!((replaced["note"].clone(), replaced["contact_id"].clone()), (Value::Null, customer.clone()));
    assert_eq!(replaced["distributions"], json!([]), "omitted distributions are cleared");
    assert_eq!(replaced["lines"].as_array().expect("lines").len(), 2);
    assert_eq!(replaced["cost_center1_id"], Value::Null);
    assert_eq!(balances(&app, "", &app.api_key).await[&format!("cash_register/{register}")], (-700, Some(-700)));
    // Rule 4: the first request's key answers what it stored, after the edit.
    let replay = json(send(&app, Method::POST, MOVEMENTS, "manual-1", &body).await, 201).await["data"].clone();
    assert_eq!(replay, created);
    // Deletion: `updated_at` alone, current.
    error(send(&app, Method::DELETE, &path, "delete-1", &json!({})).await, 400, "invalid_request_error").await;
    let extra = json!({ "updated_at": replaced["updated_at"], "note": "x" });
    error(send(&app, Method::DELETE, &path, "delete-2", &extra).await, 400, "invalid_request_error").await;
    error(
        send(&app, Method::DELETE, &path, "delete-3", &json!({ "updated_at": created["updated_at"] })).await,
        409,
        "business_error",
    )
    .await;
    let gone = json!({ "updated_at": replaced["updated_at"] });
    let deleted = json(send(&app, Method::DELETE, &path, "delete-4", &gone).await, 200).await;
    assert_eq!(deleted["data"]["deleted"], true);
    error(app.get(&path).await, 404, "invalid_request_error").await;
    assert_eq!(balances(&app, "", &app.api_key).await[&format!("cash_register/{register}")], (0, Some(0)));
    let replay = json(send(&app, Method::PUT, &path, "edit-3", &current).await, 200).await["data"].clone();
    assert_eq!(replay, replaced, "the edit's key answers what it stored, after the delete");
    // Every entry the movement posted is balanced: the first, its reversal and the new one, and the last reversal.
    let stored: Vec<Value> =
        sqlx::query_scalar("select data from events where stream_type = 'treasury_movement' order by position")
            .fetch_all(&app.pool)
            .await
            .expect("events");
    let mut entries = Vec::new();
    for data in &stored {
        for key in ["entry", "reversal"] {
            for entry in [&data[key], &data["movement"][key]] {
                if let Some(lines) = entry["lines"].as_array() {
                    entries.push(lines.iter().map(|l| l["functional"].as_i64().expect("amount")).sum::<i64>());
                }
            }
        }
    }
    assert_eq!(entries, [0, 0, 0, 0], "four balanced entries");
}

/// The balance of one location: (functional, native, quality, anomalies).
async fn dollar_balance(app: &TestApp, id: &str) -> (i64, Option<i64>, String, i64) {
    let query = format!("{BALANCES}?balance_type=bank_account&balance_id={id}");
    let body = json(app.request(Method::GET, &query, Some(&app.api_key), None).await, 200).await;
    let entry = &items(&body)[0];
    (
        entry["functional_amount"].as_i64().expect("pesos"),
        entry["native_amount"].as_i64(),
        entry["native_amount_quality"].as_str().expect("quality").to_owned(),
        entry["anomaly_count"].as_i64().expect("anomalies"),
    )
}

#[sqlx::test(migrations = "../schema")]
async fn dollar_movements_carry_their_value_and_book_the_exchange_difference(pool: PgPool) {
    use commands::treasury::admin::{load_rates, parse_rates};
    let app = TestApp::spawn(pool).await;
    let bank = open(&app, app.org_id, LocationKind::BankAccount, "Cuenta en dólares", Currency::Dol).await;
    let income = create_ledger_account(&app.pool, app.org_id, "4.1", "Ventas", Currency::Pes).await.expect("account");
    let expenses = create_ledger_account(&app.pool, app.org_id, "5.1", "Gastos", Currency::Pes).await.expect("account");
    let difference = create_ledger_account(&app.pool, app.org_id, "4.9", "Diferencia de cambio", Currency::Pes)
        .await
        .expect("account");
    let rates = parse_rates("date,currency,rate\n2026-03-02,DOL,950\n2026-03-05,DOL,1000\n").expect("rates");
    load_rates(&app.pool, &rates).await.expect("loaded");
    let movement = |direction: &str, amount: i64, on: &str, account: Uuid| {
        json!({ "balance_type": "bank_account", "balance_id": bank, "direction": direction, "amount": amount,
            "occurred_on": on, "account_id": account })
    };
    // No rate loaded on or before March 1st: 422 naming the date, nothing written.
    let early = movement("income", 20_000, "2026-03-01", income);
    let refused = error(send(&app, Method::POST, MOVEMENTS, "usd-0", &early).await, 422, "business_error").await;
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("2026-03-01")), "{refused}");
    // 200.00 dollars in on March 3rd, at the central bank's 950 of March 2nd: 190,000.00 pesos.
    let body = movement("income", 20_000, "2026-03-03", income);
    let first = json(send(&app, Method::POST, MOVEMENTS, "usd-1", &body).await, 201).await["data"].clone();
    assert_eq!(
        (first["native_amount"].as_i64(), first["functional_amount"].as_i64()),
        (Some(20_000), Some(19_000_000))
    );
    assert_eq!(first["functional_amount_origin"], "rate");
    assert_eq!(first["rate"], json!({ "value": "950", "rate_date": "2026-03-02", "source": "central_bank" }));
    assert_eq!(
        (first["exchange_rate"].as_str(), first["exchange_rate_source"].as_str(), first["exchange_rate_date"].as_str()),
        (Some("950"), Some("central_bank"), Some("2026-03-02"))
    );
    assert_eq!(first["exchange_difference_amount"], 0);
    // 50.00 out on March 6th at the central bank's 1,000: carried at 47,500.00, worth 50,000.00; the
    // 2,500.00 gain needs the exchange-difference account, and without it nothing is written.
    let spend = movement("expense", 5_000, "2026-03-06", expenses);
    let refused = error(send(&app, Method::POST, MOVEMENTS, "usd-2", &spend).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "EXCHANGE_DIFFERENCE_ACCOUNT_MISSING");
    assert_eq!(dollar_balance(&app, &bank).await, (19_000_000, Some(20_000), "exact".into(), 0));
    let change = commands::organization::SettingsChange {
        exchange_difference_account: Some(difference.to_string()),
        ..Default::default()
    };
    commands::organization::update_organization(&app.pool, app.org_id, change).await.expect("set");
    let gain = json(send(&app, Method::POST, MOVEMENTS, "usd-3", &spend).await, 201).await["data"].clone();
    assert_eq!((gain["native_amount"].as_i64(), gain["functional_amount"].as_i64()), (Some(-5_000), Some(-4_750_000)));
    assert_eq!(
        (gain["functional_amount_origin"].as_str(), gain["rate"].clone()),
        (Some("carrying_value"), Value::Null)
    );
    assert_eq!(
        (gain["exchange_rate"].as_str(), gain["exchange_difference_amount"].as_i64()),
        (Some("1000"), Some(250_000))
    );
    // 50.00 more at a manual 900: carried at 47,500.00, worth 45,000.00, a loss of 2,500.00.
    let mut at_900 = spend.clone();
    at_900["exchange_rate"] = json!("900");
    let loss = json(send(&app, Method::POST, MOVEMENTS, "usd-4", &at_900).await, 201).await["data"].clone();
    assert_eq!(
        (loss["functional_amount"].as_i64(), loss["exchange_difference_amount"].as_i64()),
        (Some(-4_750_000), Some(-250_000))
    );
    assert_eq!(
        (loss["exchange_rate_source"].as_str(), loss["exchange_rate_date"].as_str()),
        (Some("manual"), Some("2026-03-06"))
    );
    assert_eq!(dollar_balance(&app, &bank).await, (9_500_000, Some(10_000), "exact".into(), 0));
    // Rule 7: the same amount, date, account and direction with the rate omitted keep the manual 900;
    // null returns to the central bank's rate of the date.
    let path = format!("{MOVEMENTS}/{}", loss["treasury_movement_id"].as_str().expect("id"));
    let mut same = spend.clone();
    same["updated_at"] = loss["updated_at"].clone();
    same["note"] = json!("Proveedor del exterior");
    let kept = json(send(&app, Method::PUT, &path, "usd-5", &same).await, 200).await["data"].clone();
    assert_eq!((kept["exchange_rate"].as_str(), kept["exchange_rate_source"].as_str()), (Some("900"), Some("manual")));
    assert_eq!(kept["functional_amount"].as_i64(), Some(-4_750_000), "the same dollars, the same carrying value");
    let mut central = same.clone();
    central["updated_at"] = kept["updated_at"].clone();
    central["exchange_rate"] = Value::Null;
    let resolved = json(send(&app, Method::PUT, &path, "usd-6", &central).await, 200).await["data"].clone();
    assert_eq!(
        (
            resolved["exchange_rate"].as_str(),
            resolved["exchange_rate_source"].as_str(),
            resolved["exchange_difference_amount"].as_i64()
        ),
        (Some("1000"), Some("central_bank"), Some(250_000))
    );
    assert_eq!(dollar_balance(&app, &bank).await, (9_500_000, Some(10_000), "exact".into(), 0));
    // Every entry balances, the exchange difference on its account: +2,500.00 twice, as gains (credits).
    let lines: Vec<(String, Option<String>)> = sqlx::query_as(
        "select data::text, null::text from events where stream_type = 'treasury_movement' order by position",
    )
    .fetch_all(&app.pool)
    .await
    .expect("events");
    let mut on_difference = 0;
    for (data, _) in &lines {
        let data: Value = serde_json::from_str(data).expect("json");
        for entry in [&data["entry"], &data["reversal"], &data["movement"]["entry"]] {
            let Some(lines) = entry["lines"].as_array() else { continue };
            assert_eq!(lines.iter().map(|l| l["functional"].as_i64().expect("amount")).sum::<i64>(), 0);
            on_difference += lines
                .iter()
                .filter(|l| l["account_id"] == json!(difference))
                .map(|l| l["functional"].as_i64().expect("amount"))
                .sum::<i64>();
        }
    }
    assert_eq!(on_difference, -500_000, "two gains of 2,500.00 credited");
    // Rule 8: an old dollar entry without its dollars is listed, counted as an anomaly, and has no detail.
    legacy_dollar_income(&app, &bank, income, None).await;
    let old = legacy_listed(&app, &bank).await;
    assert_eq!((old["native_amount"].clone(), old["functional_amount"].as_i64()), (Value::Null, Some(100_000)));
    let refused = error(
        app.get(&format!("{MOVEMENTS}/{}", old["treasury_movement_id"].as_str().expect("id"))).await,
        422,
        "business_error",
    )
    .await;
    assert_eq!(refused["error"]["code"], "INCOMPLETE_AMOUNTS");
    assert_eq!(dollar_balance(&app, &bank).await, (9_600_000, None, "unavailable".into(), 1));

    // A user's own balance counts the gaps of the lines she recorded.
    use commands::organization::{Delegation, create_delegated_token};
    let delegation = Delegation { user: "cajero".into(), visibility: "own".into(), registers: vec![], safes: vec![] };
    let token = create_delegated_token(&app.pool, app.org_id, &["treasury:read".to_owned()], delegation)
        .await
        .expect("token");
    legacy_dollar_income(&app, &bank, income, Some("cajero")).await;
    let query = format!("{BALANCES}?balance_type=bank_account&balance_id={bank}");
    let own = eventually(Duration::from_secs(15), "her old entry counts", || async {
        let body = json(app.request(Method::GET, &query, Some(&token), None).await, 200).await;
        let entry = items(&body)[0].clone();
        (entry["functional_amount"].as_i64() == Some(100_000)).then_some(entry)
    })
    .await;
    assert_eq!(own["native_amount_quality"], "unavailable");
    assert_eq!(own["anomaly_count"], 1, "{own}");
}

/// Appends, as an import from an older system would, a dollar income whose line has no dollars.
/// The old entry without its dollars at bank account `bank`, once the movements list shows it.
async fn legacy_listed(app: &TestApp, bank: &str) -> Value {
    let list = format!("{MOVEMENTS}?balance_type=bank_account&balance_id={bank}");
    eventually(Duration::from_secs(15), "the old entry is listed", || async {
        let body = json(app.request(Method::GET, &list, Some(&app.api_key), None).await, 200).await;
        items(&body).iter().find(|m| m["functional_amount_origin"] == "legacy_unknown").cloned()
    })
    .await
}

async fn legacy_dollar_income(app: &TestApp, bank: &str, account: Uuid, created_by: Option<&str>) {
    use events::catalogue::{
        Direction, JournalEntry, JournalLine, LocationLine, LocationRef, ManualMovement, MovementType,
        TreasuryMovementEvent,
    };
    use events::domain::Cents;
    use events::{EventPayload, Metadata};
    let (id, bank) = (Uuid::now_v7(), bank.parse().expect("id"));
    let ledger: Uuid = sqlx::query_scalar("select ledger_account_id from treasury_locations where id = $1")
        .bind(bank)
        .fetch_one(&app.pool)
        .await
        .expect("ledger account");
    let at = LocationRef { kind: LocationKind::BankAccount, id: bank };
    let on = time::Date::from_calendar_date(2026, time::Month::March, 4).expect("date");
    let side =
        LocationLine { location: at, movement_id: id, movement_type: MovementType::ManualIncome, line_id: Some(id) };
    let line =
        |account_id, cents, location| JournalLine { account_id, functional: Cents::of(cents), native: None, location };
    let movement = ManualMovement {
        location: at,
        direction: Direction::Income,
        amount: Cents::of(100),
        occurred_on: on,
        counterparts: Vec::new(),
        itemized: false,
        distributions: Vec::new(),
        note: None,
        contact_id: None,
        created_by: created_by.map(str::to_owned),
        rate: None,
        exchange_difference: None,
        entry: JournalEntry {
            id,
            occurred_on: on,
            lines: vec![line(ledger, 100_000, Some(side)), line(account, -100_000, None)],
        },
    };
    let event = TreasuryMovementEvent::ManualMovementRecorded(Box::new(movement));
    let stream = events::store::StreamRef {
        org_id: app.org_id,
        stream_type: TreasuryMovementEvent::STREAM_TYPE,
        stream_id: id,
        expected_version: 0,
    };
    let mut conn = app.pool.acquire().await.expect("connection");
    events::store::append(&mut conn, stream, &[event.to_new_event().expect("encodes")], &Metadata::system("import"))
        .await
        .expect("appended");
}

#[sqlx::test(migrations = "../schema")]
async fn a_dollar_movement_that_would_hold_past_the_range_of_money_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let bank = open(&app, app.org_id, LocationKind::BankAccount, "Cuenta en dólares", Currency::Dol).await;
    let income = create_ledger_account(&app.pool, app.org_id, "4.1", "Ventas", Currency::Pes).await.expect("account");
    let expenses = create_ledger_account(&app.pool, app.org_id, "5.1", "Gastos", Currency::Pes).await.expect("account");
    let movement = |direction: &str, amount: i64, account: Uuid| {
        json!({ "balance_type": "bank_account", "balance_id": bank, "direction": direction, "amount": amount,
            "occurred_on": today(), "account_id": account, "exchange_rate": "1000" })
    };
    // 6,000,000.00 dollars in at 1,000: 6,000,000,000.00 pesos, an amount in range.
    let big = movement("income", 600_000_000, income);
    json(send(&app, Method::POST, MOVEMENTS, "big-1", &big).await, 201).await;
    // As much again would carry the location's dollars at 12,000,000,000.00 pesos, past the range every later
    // movement and payment of the location reads its holdings in: refused, and nothing moves.
    let refused = error(send(&app, Method::POST, MOVEMENTS, "big-2", &big).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "OUT_OF_RANGE");
    assert_eq!(dollar_balance(&app, &bank).await, (600_000_000_000, Some(600_000_000), "exact".into(), 0));
    // The location still takes movements: 1.00 dollar out at its carrying value, 1,000.00 pesos.
    let small = movement("expense", 100, expenses);
    let spent = json(send(&app, Method::POST, MOVEMENTS, "small-1", &small).await, 201).await;
    assert_eq!(spent["data"]["functional_amount"].as_i64(), Some(-100_000));
    assert_eq!(dollar_balance(&app, &bank).await, (599_999_900_000, Some(599_999_900), "exact".into(), 0));
}

#[sqlx::test(migrations = "../schema")]
async fn replacing_an_old_dollar_entry_values_the_dollars_at_what_the_location_holds(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let bank = open(&app, app.org_id, LocationKind::BankAccount, "Cuenta en dólares", Currency::Dol).await;
    let income = create_ledger_account(&app.pool, app.org_id, "4.1", "Ventas", Currency::Pes).await.expect("account");
    let expenses = create_ledger_account(&app.pool, app.org_id, "5.1", "Gastos", Currency::Pes).await.expect("account");
    // 200.00 dollars held at 190,000.00 pesos (950 a dollar).
    let bought = json!({ "balance_type": "bank_account", "balance_id": bank, "direction": "income", "amount": 20_000,
        "occurred_on": today(), "account_id": income, "exchange_rate": "950" });
    json(send(&app, Method::POST, MOVEMENTS, "usd-in", &bought).await, 201).await;
    // An old entry of 1,000.00 pesos without its dollars, which never moved the holdings.
    legacy_dollar_income(&app, &bank, income, None).await;
    let old = legacy_listed(&app, &bank).await;
    // Replaced by 50.00 dollars out at 950: a quarter of the dollars held, carried at 47,500.00 and worth as
    // much at the rate, so there is no exchange difference (and no exchange-difference account is needed).
    let path = format!("{MOVEMENTS}/{}", old["treasury_movement_id"].as_str().expect("id"));
    let spend = json!({ "balance_type": "bank_account", "balance_id": bank, "direction": "expense", "amount": 5_000,
        "occurred_on": today(), "account_id": expenses, "exchange_rate": "950", "updated_at": old["updated_at"] });
    let replaced = json(send(&app, Method::PUT, &path, "usd-edit", &spend).await, 200).await["data"].clone();
    assert_eq!(
        (replaced["native_amount"].as_i64(), replaced["functional_amount"].as_i64()),
        (Some(-5_000), Some(-4_750_000))
    );
    assert_eq!(replaced["exchange_difference_amount"].as_i64(), Some(0));
    // The old entry's reversal closes the gap it opened: nothing left lacks its dollars.
    assert_eq!(dollar_balance(&app, &bank).await, (14_250_000, Some(15_000), "exact".into(), 0));
}

#[sqlx::test(migrations = "../schema")]
async fn deleting_an_old_dollar_entry_takes_its_anomaly_off_the_balance(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let bank = open(&app, app.org_id, LocationKind::BankAccount, "Cuenta en dólares", Currency::Dol).await;
    let income = create_ledger_account(&app.pool, app.org_id, "4.1", "Ventas", Currency::Pes).await.expect("account");
    // 200.00 dollars held at 190,000.00 pesos (950 a dollar).
    let bought = json!({ "balance_type": "bank_account", "balance_id": bank, "direction": "income", "amount": 20_000,
        "occurred_on": today(), "account_id": income, "exchange_rate": "950" });
    json(send(&app, Method::POST, MOVEMENTS, "usd-in", &bought).await, 201).await;
    // An old entry of 1,000.00 pesos without its dollars, recorded by `cajero`: the dollars are unknown.
    legacy_dollar_income(&app, &bank, income, Some("cajero")).await;
    let old = legacy_listed(&app, &bank).await;
    assert_eq!(dollar_balance(&app, &bank).await, (19_100_000, None, "unavailable".into(), 1));
    // Deleted, its reversal (as short of dollars as the entry) closes the gap the entry opened.
    let path = format!("{MOVEMENTS}/{}", old["treasury_movement_id"].as_str().expect("id"));
    let gone = json!({ "updated_at": old["updated_at"] });
    let deleted = json(send(&app, Method::DELETE, &path, "usd-delete", &gone).await, 200).await;
    assert_eq!(deleted["data"]["deleted"], true);
    assert_eq!(dollar_balance(&app, &bank).await, (19_000_000, Some(20_000), "exact".into(), 0));
    // Her own balance too: the entry and its reversal are both hers, and cancel out.
    let delegation = Delegation { user: "cajero".into(), visibility: "own".into(), registers: vec![], safes: vec![] };
    let token = create_delegated_token(&app.pool, app.org_id, &["treasury:read".to_owned()], delegation)
        .await
        .expect("token");
    let query = format!("{BALANCES}?balance_type=bank_account&balance_id={bank}");
    let body = json(app.request(Method::GET, &query, Some(&token), None).await, 200).await;
    let own = &items(&body)[0];
    assert_eq!((own["functional_amount"].as_i64(), own["native_amount"].as_i64()), (Some(0), Some(0)), "{own}");
    assert_eq!(own["native_amount_quality"], "exact", "{own}");
    assert_eq!(own["anomaly_count"], 0, "{own}");
}

#[sqlx::test(migrations = "../schema")]
async fn a_manual_movement_names_every_missing_reference_its_location_among_them(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = json!({ "balance_type": "cash_register", "balance_id": Uuid::now_v7(), "direction": "expense",
        "amount": 1_000, "occurred_on": today(), "account_id": Uuid::now_v7(), "cost_center1_id": Uuid::now_v7() });
    let refused =
        error(send(&app, Method::POST, MOVEMENTS, "nowhere-1", &body).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["balance_id", "account_id", "cost_center1_id"]);
    let stored: i64 = sqlx::query_scalar("select count(*) from events where stream_type = 'treasury_movement'")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(stored, 0, "nothing written");
}

/// What the write model holds at location `id`: its dollars and the pesos they are carried at.
async fn held(app: &TestApp, id: &str) -> (i64, i64) {
    sqlx::query_as("select native_balance, functional_balance from treasury_locations where org_id = $1 and id = $2")
        .bind(app.org_id)
        .bind(id.parse::<Uuid>().expect("id"))
        .fetch_one(&app.pool)
        .await
        .expect("holdings")
}

/// A dollar movement at `at` of `amount` cents at 1,000 pesos a dollar, against `account`.
fn dollars_at(at: &str, direction: &str, amount: i64, account: Uuid) -> Value {
    json!({ "balance_type": "bank_account", "balance_id": at, "direction": direction, "amount": amount,
        "occurred_on": today(), "account_id": account, "exchange_rate": "1000" })
}

/// Spends 15,000,000.00 dollars out of dollar bank account `bank`, which took 6,000,000.00 in at 1,000 a
/// dollar (6,000,000,000.00 pesos): 10,000,000.00 (what it held at their carrying value, the rest at the
/// rate), then 5,000,000.00 more at the rate. It holds -9,000,000.00 dollars carried at -9,000,000,000.00
/// pesos, 1,000,000,000.00 above the lowest amount of money: giving the 6,000,000.00 dollars that came in
/// back would carry what it holds 5,000,000,000.00 pesos below it.
async fn spend_past_what_it_holds(app: &TestApp, bank: &str, expenses: Uuid) {
    for (key, amount) in [("spend-1", 1_000_000_000), ("spend-2", 500_000_000)] {
        let body = dollars_at(bank, "expense", amount, expenses);
        let spent = json(send(app, Method::POST, MOVEMENTS, key, &body).await, 201).await;
        assert_eq!(spent["data"]["exchange_difference_amount"].as_i64(), Some(0), "no exchange difference");
    }
    assert_eq!(held(app, bank).await, (-900_000_000, -900_000_000_000));
}

/// A dollar account given a large income, then spent past what it holds, so that taking the income back
/// out would leave it past the range of money: the account, the income's and the expenses' ledger
/// accounts, and the income as created.
async fn an_income_spent_past_its_holdings(app: &TestApp) -> (String, [Uuid; 2], Value) {
    let bank = open(app, app.org_id, LocationKind::BankAccount, "Cuenta en dólares", Currency::Dol).await;
    let income = create_ledger_account(&app.pool, app.org_id, "4.1", "Ventas", Currency::Pes).await.expect("account");
    let expenses = create_ledger_account(&app.pool, app.org_id, "5.1", "Gastos", Currency::Pes).await.expect("account");
    let big = dollars_at(&bank, "income", 600_000_000, income);
    let made = json(send(app, Method::POST, MOVEMENTS, "big-in", &big).await, 201).await["data"].clone();
    spend_past_what_it_holds(app, &bank, expenses).await;
    (bank, [income, expenses], made)
}

#[sqlx::test(migrations = "../schema")]
async fn deleting_a_dollar_income_that_would_leave_its_location_past_the_range_of_money_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (bank, [income, _], made) = an_income_spent_past_its_holdings(&app).await;
    let events = app.event_count().await;
    // Deleting the income takes its dollars and pesos back out: refused, and nothing moves.
    let path = format!("{MOVEMENTS}/{}", made["treasury_movement_id"].as_str().expect("id"));
    let gone = json!({ "updated_at": made["updated_at"] });
    let refused = error(send(&app, Method::DELETE, &path, "big-out", &gone).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "OUT_OF_RANGE");
    assert_eq!(app.event_count().await, events, "nothing written");
    assert_eq!(held(&app, &bank).await, (-900_000_000, -900_000_000_000));
    assert_eq!(dollar_balance(&app, &bank).await, (-900_000_000_000, Some(-900_000_000), "exact".into(), 0));
    assert_eq!(json(app.get(&path).await, 200).await["data"], made, "the income stands");
    // The location still takes movements (its holdings past the range would fail each of them).
    let small = dollars_at(&bank, "income", 100, income);
    json(send(&app, Method::POST, MOVEMENTS, "small-in", &small).await, 201).await;
    assert_eq!(held(&app, &bank).await, (-899_999_900, -899_999_900_000));
    // The refusal is one the operation documents.
    let spec = json(app.request(Method::GET, "/openapi.json", None, None).await, 200).await;
    let why = &spec["paths"]["/api/v1/treasury/movements/{treasury_movement_id}"]["delete"]["responses"]["422"];
    assert!(why["description"].as_str().is_some_and(|d| d.contains("(`OUT_OF_RANGE`)")), "{why}");
}

#[sqlx::test(migrations = "../schema")]
async fn moving_a_dollar_income_elsewhere_that_would_leave_its_location_past_the_range_of_money_is_refused(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (bank, [income, expenses], made) = an_income_spent_past_its_holdings(&app).await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let events = app.event_count().await;
    // Replaced by as many pesos into a register: the new version is in range where it goes, but the one
    // it undoes takes its dollars out of the bank all the same. Refused, and nothing moves.
    let path = format!("{MOVEMENTS}/{}", made["treasury_movement_id"].as_str().expect("id"));
    let moved = json!({ "balance_type": "cash_register", "balance_id": register, "direction": "income",
        "amount": 600_000_000, "occurred_on": today(), "account_id": income, "updated_at": made["updated_at"] });
    let refused = error(send(&app, Method::PUT, &path, "big-moved", &moved).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "OUT_OF_RANGE");
    assert_eq!(detail_fields(&refused), ["amount"]);
    assert_eq!(app.event_count().await, events, "nothing written");
    assert_eq!(held(&app, &bank).await, (-900_000_000, -900_000_000_000));
    assert_eq!(dollar_balance(&app, &bank).await, (-900_000_000_000, Some(-900_000_000), "exact".into(), 0));
    assert_eq!(balances(&app, "", &app.api_key).await[&format!("cash_register/{register}")], (0, Some(0)));
    assert_eq!(json(app.get(&path).await, 200).await["data"], made, "the income stands where it was");
    // The location still takes movements.
    let small = dollars_at(&bank, "expense", 100, expenses);
    json(send(&app, Method::POST, MOVEMENTS, "small-out", &small).await, 201).await;
    assert_eq!(held(&app, &bank).await, (-900_000_100, -900_000_100_000));
}

#[sqlx::test(migrations = "../schema")]
async fn voiding_a_dollar_payment_that_would_leave_its_location_past_the_range_of_money_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let bank = open(&app, app.org_id, LocationKind::BankAccount, "Cuenta en dólares", Currency::Dol).await;
    let expenses = create_ledger_account(&app.pool, app.org_id, "5.1", "Gastos", Currency::Pes).await.expect("account");
    let (customer, cash) = (crate::helpers::customer(&app, "Dana").await, crate::sales::payment_method(&app).await);
    // 6,000,000.00 dollars paid in at 1,000.
    let paid = json!({ "customer_id": customer, "occurred_on": today(), "lines": [{ "payment_method_id": cash,
        "amount": 600_000_000, "balance_type": "bank_account", "balance_id": bank, "exchange_rate": "1000" }] });
    let paid = json(send(&app, Method::POST, "/api/v1/customer-payments", "big-paid", &paid).await, 201).await;
    let payment = format!("/api/v1/customer-payments/{}", paid["data"]["id"].as_str().expect("id"));
    assert_eq!(held(&app, &bank).await, (600_000_000, 600_000_000_000));
    spend_past_what_it_holds(&app, &bank, expenses).await;
    let (before, events) = (json(app.get(&payment).await, 200).await["data"].clone(), app.event_count().await);
    // Voiding it gives the dollars back to the customer: refused, and nothing moves.
    let void = format!("{payment}/void");
    let refused = error(send(&app, Method::POST, &void, "big-void", &json!({})).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "OUT_OF_RANGE");
    assert_eq!(app.event_count().await, events, "nothing written");
    assert_eq!(held(&app, &bank).await, (-900_000_000, -900_000_000_000));
    assert_eq!(dollar_balance(&app, &bank).await, (-900_000_000_000, Some(-900_000_000), "exact".into(), 0));
    let after = json(app.get(&payment).await, 200).await["data"].clone();
    assert_eq!((after["status"].as_str(), &after), (Some("posted"), &before), "the payment stands");
    let spec = json(app.request(Method::GET, "/openapi.json", None, None).await, 200).await;
    let why = &spec["paths"]["/api/v1/customer-payments/{payment_id}/void"]["post"]["responses"]["422"];
    assert!(why["description"].as_str().is_some_and(|d| d.contains("(`OUT_OF_RANGE`)")), "{why}");
}

/// Two replacements moving movements between the same two dollar locations in opposite directions could
/// deadlock when each locked the location it moves to before the one it leaves: every command locks
/// holdings in one order (by kind, then id). A replacement moving dollars from the first account to the
/// second, while another transaction holds the second, waits holding the first: it took it first.
#[sqlx::test(migrations = "../schema")]
async fn a_replacement_moving_dollars_between_locations_locks_them_in_one_order(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut banks = [
        open(&app, app.org_id, LocationKind::BankAccount, "Dólares A", Currency::Dol).await,
        open(&app, app.org_id, LocationKind::BankAccount, "Dólares B", Currency::Dol).await,
    ];
    banks.sort_by_key(|id| id.parse::<Uuid>().expect("id"));
    let [first, second] = banks;
    let income = create_ledger_account(&app.pool, app.org_id, "4.1", "Ventas", Currency::Pes).await.expect("account");
    let made = dollars_at(&first, "income", 10_000, income);
    let made = json(send(&app, Method::POST, MOVEMENTS, "usd-in", &made).await, 201).await["data"].clone();
    // Another transaction holds the second account, the one the replacement moves the movement to.
    let mut holder = app.pool.begin().await.expect("begin");
    sqlx::query("select 1 from treasury_locations where org_id = $1 and id = $2 for update")
        .bind(app.org_id)
        .bind(second.parse::<Uuid>().expect("id"))
        .execute(&mut *holder)
        .await
        .expect("held");
    let mut moved = dollars_at(&second, "income", 10_000, income);
    moved["updated_at"] = made["updated_at"].clone();
    let path = format!("{MOVEMENTS}/{}", made["treasury_movement_id"].as_str().expect("id"));
    let replacing = tokio::spawn({
        let (client, url, key) = (app.client.clone(), format!("{}{path}", app.base), app.api_key.clone());
        async move {
            let sent = client.put(url).bearer_auth(key).header("Idempotency-Key", "usd-move").json(&moved).send();
            sent.await.expect("sent").status().as_u16()
        }
    });
    crate::helpers::waiting_on_locks(&app, 1, "the replacement to wait for the second account").await;
    // It waits holding the first account, the one it leaves: before, it waited for the second holding
    // nothing, and would then have locked the first, while a replacement moving another movement the
    // other way held the first and waited for the second.
    let taken = sqlx::query("select 1 from treasury_locations where org_id = $1 and id = $2 for update nowait")
        .bind(app.org_id)
        .bind(first.parse::<Uuid>().expect("id"))
        .execute(&app.pool)
        .await
        .expect_err("the replacement holds the first account");
    let code = taken.as_database_error().and_then(|e| e.code()).map(|code| code.into_owned());
    assert_eq!(code.as_deref(), Some("55P03"), "lock_not_available: {taken}");
    holder.commit().await.expect("released");
    assert_eq!(replacing.await.expect("replacement"), 200);
    assert_eq!((held(&app, &first).await, held(&app, &second).await), ((0, 0), (10_000, 10_000_000)));
}
