//! A property test of the treasury: random funds transfers and manual movements, replaced and deleted,
//! between random peso locations. After every step the balances are the model's; every few steps each
//! location's balance is the sum of its movements as listed; at the end every journal entry sums to zero
//! and `as_of` at every step's instant reproduces that step's balances. `TREASURY_PROPERTIES_SEED` picks
//! the sequence (printed when a run fails) and `TREASURY_PROPERTIES_STEPS` its length (default 150).

use crate::helpers::{TestApp, items, json};
use crate::treasury::{open, transfer};
use commands::treasury::admin::create_ledger_account;
use events::catalogue::{Currency, LocationKind};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::BTreeMap;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn today() -> String {
    events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string()
}

async fn send(app: &TestApp, method: Method, path: &str, key: &str, body: &Value) -> Value {
    let answer = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(&app.api_key)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .expect("sent");
    let status = answer.status().as_u16();
    let body: Value = answer.json().await.expect("json");
    assert!(status == 200 || status == 201, "{status}: {body}");
    body
}

/// Every balance, by `balance_type/balance_id`.
async fn balances(app: &TestApp, query: &str) -> BTreeMap<String, i64> {
    let body = json(app.get(&format!("/api/v1/treasury/balances{query}")).await, 200).await;
    items(&body)
        .iter()
        .map(|b| {
            let at = format!("{}/{}", b["balance_type"].as_str().expect("type"), b["balance_id"].as_str().expect("id"));
            assert_eq!(b["native_amount"], b["functional_amount"], "a peso location's two figures agree");
            (at, b["functional_amount"].as_i64().expect("functional"))
        })
        .collect()
}

/// The sum of every listed movement of each location, following the cursor.
async fn movement_sums(app: &TestApp) -> BTreeMap<String, i64> {
    let mut sums = BTreeMap::new();
    let mut path = "/api/v1/treasury/movements?limit=100".to_owned();
    loop {
        let page = json(app.get(&path).await, 200).await;
        for row in items(&page) {
            let at =
                format!("{}/{}", row["balance_type"].as_str().expect("type"), row["balance_id"].as_str().expect("id"));
            *sums.entry(at).or_insert(0) += row["functional_amount"].as_i64().expect("amount");
        }
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/v1/treasury/movements?limit=100&cursor={cursor}"),
            None => return sums,
        }
    }
}

fn rfc3339(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339).expect("format").replace('+', "%2B")
}

#[sqlx::test(migrations = "../schema")]
async fn random_transfers_and_movements_keep_the_ledger_exact_at_every_step(pool: PgPool) {
    let seed: u64 =
        std::env::var("TREASURY_PROPERTIES_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_7EA5_u64);
    let steps: usize = std::env::var("TREASURY_PROPERTIES_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    println!("TREASURY_PROPERTIES_SEED={seed} TREASURY_PROPERTIES_STEPS={steps}");
    let mut rng = Rng(seed | 1);
    let app = TestApp::spawn(pool).await;
    let org = app.org_id;
    let places = [
        ("cash_register", open(&app, org, LocationKind::CashRegister, "Caja 1", Currency::Pes).await),
        ("cash_register", open(&app, org, LocationKind::CashRegister, "Caja 2", Currency::Pes).await),
        ("safe", open(&app, org, LocationKind::Safe, "Tesoro", Currency::Pes).await),
        ("bank_account", open(&app, org, LocationKind::BankAccount, "Banco", Currency::Pes).await),
    ];
    let accounts = [
        create_ledger_account(&app.pool, org, "4.1.1", "Ventas", Currency::Pes).await.expect("account"),
        create_ledger_account(&app.pool, org, "5.1.1", "Gastos", Currency::Pes).await.expect("account"),
    ];
    let key = |place: &(&str, String)| format!("{}/{}", place.0, place.1);
    let mut model: BTreeMap<String, i64> = places.iter().map(|p| (key(p), 0)).collect();
    // Live manual movements: id → (location index, signed amount).
    let mut live: Vec<(String, usize, i64)> = Vec::new();
    let mut history = Vec::new();
    for step in 0..steps {
        let choice = rng.below(10);
        let movement_body = |rng: &mut Rng| {
            let at = rng.below(places.len() as u64) as usize;
            let amount = 1 + rng.below(90_000) as i64;
            let income = rng.below(2) == 0;
            let mut body = json!({ "balance_type": places[at].0, "balance_id": places[at].1,
                "direction": if income { "income" } else { "expense" }, "amount": amount, "occurred_on": today() });
            if rng.below(2) == 0 {
                body["account_id"] = json!(accounts[rng.below(2) as usize]);
            } else {
                let first = 1 + rng.below(amount as u64) as i64 - 1;
                let mut lines = vec![json!({ "account_id": accounts[0], "amount": amount - first })];
                if first > 0 {
                    lines.push(json!({ "account_id": accounts[1], "amount": first }));
                }
                body["lines"] = json!(lines);
            }
            (body, at, if income { amount } else { -amount })
        };
        if choice < 4 {
            let from = rng.below(places.len() as u64) as usize;
            let to = (from + 1 + rng.below(places.len() as u64 - 1) as usize) % places.len();
            let amount = 1 + rng.below(50_000) as i64;
            let body = transfer((places[from].0, &places[from].1), (places[to].0, &places[to].1), amount, &today());
            send(&app, Method::POST, "/api/v1/funds-transfers", &format!("t-{step}"), &body).await;
            *model.get_mut(&key(&places[from])).expect("source") -= amount;
            *model.get_mut(&key(&places[to])).expect("destination") += amount;
        } else if choice < 7 || live.is_empty() {
            let (body, at, signed) = movement_body(&mut rng);
            let created = send(&app, Method::POST, "/api/v1/treasury/movements", &format!("m-{step}"), &body).await;
            let id = created["data"]["treasury_movement_id"].as_str().expect("id").to_owned();
            *model.get_mut(&key(&places[at])).expect("location") += signed;
            live.push((id, at, signed));
        } else {
            let pick = rng.below(live.len() as u64) as usize;
            let (id, at, signed) = live[pick].clone();
            let path = format!("/api/v1/treasury/movements/{id}");
            let detail = json(app.get(&path).await, 200).await;
            let updated_at = detail["data"]["updated_at"].clone();
            *model.get_mut(&key(&places[at])).expect("location") -= signed;
            if choice < 9 {
                let (mut body, new_at, new_signed) = movement_body(&mut rng);
                body["updated_at"] = updated_at;
                send(&app, Method::PUT, &path, &format!("r-{step}"), &body).await;
                *model.get_mut(&key(&places[new_at])).expect("location") += new_signed;
                live[pick] = (id, new_at, new_signed);
            } else {
                send(&app, Method::DELETE, &path, &format!("d-{step}"), &json!({ "updated_at": updated_at })).await;
                live.remove(pick);
            }
        }
        let now = balances(&app, "").await;
        assert_eq!(now, model, "step {step} (seed {seed}): the balances are the model's");
        if step % 10 == 9 {
            let sums = movement_sums(&app).await;
            for (at, balance) in &now {
                assert_eq!(
                    sums.get(at).copied().unwrap_or(0),
                    *balance,
                    "step {step}: {at} is the sum of its movements"
                );
            }
        }
        history.push((time::OffsetDateTime::now_utc(), now));
    }
    for (step, (at, expected)) in history.iter().enumerate() {
        assert_eq!(&balances(&app, &format!("?as_of={}", rfc3339(*at))).await, expected, "as_of after step {step}");
    }
    let stored: Vec<Value> =
        sqlx::query_scalar("select data from events where stream_type in ('funds_transfer', 'treasury_movement')")
            .fetch_all(&app.pool)
            .await
            .expect("events");
    let mut entries = 0;
    for data in &stored {
        for entry in [&data["entry"], &data["reversal"], &data["movement"]["entry"]] {
            if let Some(lines) = entry["lines"].as_array() {
                let sum: i64 = lines.iter().map(|l| l["functional"].as_i64().expect("amount")).sum();
                assert_eq!(sum, 0, "every journal entry is balanced: {entry}");
                entries += 1;
            }
        }
    }
    assert!(entries >= steps, "every step posted at least one entry ({entries})");
}
