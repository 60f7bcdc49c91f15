//! A property test of the treasury: random funds transfers between peso locations, and manual movements
//! on them and on a dollar account (at a rate sent or the central bank's), replaced and deleted. The
//! model keeps each location's pesos and dollars, valuing a dollar expense at carrying value itself.
//! After every step the balances are the model's; every few steps each location's balance is the sum of
//! its movements as listed; at the end every journal entry sums to zero and `as_of` at every step's
//! instant reproduces that step's balances. `TREASURY_PROPERTIES_SEED` picks
//! the sequence (printed when a run fails) and `TREASURY_PROPERTIES_STEPS` its length (default 150).

use crate::helpers::{Rng, TestApp, items, json, today};
use crate::treasury::{open, transfer};
use commands::treasury::admin::{create_ledger_account, load_rates, parse_rates};
use events::catalogue::{Currency, LocationKind};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::BTreeMap;

async fn send(app: &TestApp, method: Method, path: &str, key: &str, body: &Value) -> Value {
    let answer = app.keyed(method, path, key, Some(body)).await;
    let status = answer.status().as_u16();
    let body: Value = answer.json().await.expect("json");
    assert!(status == 200 || status == 201, "{status}: {body}");
    body
}

/// Every balance, by `balance_type/balance_id`: (pesos, amount in the location's currency).
async fn balances(app: &TestApp, query: &str) -> BTreeMap<String, (i64, i64)> {
    let body = json(app.get(&format!("/api/v1/treasury/balances{query}")).await, 200).await;
    items(&body)
        .iter()
        .map(|b| {
            let at = format!("{}/{}", b["balance_type"].as_str().expect("type"), b["balance_id"].as_str().expect("id"));
            let figures =
                (b["functional_amount"].as_i64().expect("pesos"), b["native_amount"].as_i64().expect("exact"));
            assert_eq!(b["native_amount_quality"], "exact");
            (at, figures)
        })
        .collect()
}

fn round_half_away(numerator: i128, denominator: i128) -> i64 {
    let half = denominator / 2;
    let rounded = if numerator >= 0 { (numerator + half) / denominator } else { (numerator - half) / denominator };
    i64::try_from(rounded).expect("in range")
}

/// `cents` dollars in pesos at `millionths` pesos per dollar.
fn pesos(cents: i64, millionths: i64) -> i64 {
    round_half_away(i128::from(cents) * i128::from(millionths), 1_000_000)
}

/// What a movement moves at its location: (pesos, native), given the location's holdings before it and
/// the rate of a dollar movement.
fn moved(held: (i64, i64), income: bool, amount: i64, lines: &[i64], rate: Option<i64>) -> (i64, i64) {
    let Some(rate) = rate else {
        let signed = if income { amount } else { -amount };
        return (signed, signed);
    };
    if income {
        return (lines.iter().map(|c| pesos(*c, rate)).sum(), amount);
    }
    let (pesos_held, dollars_held) = held;
    let carrying = if dollars_held <= 0 {
        pesos(amount, rate)
    } else if amount <= dollars_held {
        round_half_away(i128::from(pesos_held) * i128::from(amount), i128::from(dollars_held))
    } else {
        pesos_held + pesos(amount - dollars_held, rate)
    };
    (-carrying, -amount)
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
        ("bank_account", open(&app, org, LocationKind::BankAccount, "Banco USD", Currency::Dol).await),
    ];
    // The last place is in dollars: transfers stay among the others.
    let (dollars, pesos_places) = (places.len() - 1, places.len() as u64 - 1);
    let accounts = [
        create_ledger_account(&app.pool, org, "4.1.1", "Ventas", Currency::Pes).await.expect("account"),
        create_ledger_account(&app.pool, org, "5.1.1", "Gastos", Currency::Pes).await.expect("account"),
    ];
    let difference = create_ledger_account(&app.pool, org, "4.9", "Diferencia de cambio", Currency::Pes).await;
    let change = commands::organization::SettingsChange {
        exchange_difference_account: Some(difference.expect("account").to_string()),
        ..Default::default()
    };
    commands::organization::update_organization(&app.pool, org, change).await.expect("set");
    let central = 1_000_500_000; // 1,000.50 pesos per dollar, in millionths
    load_rates(&app.pool, &parse_rates(&format!("{},DOL,1000.5", today())).expect("rates")).await.expect("loaded");
    let key = |place: &(&str, String)| format!("{}/{}", place.0, place.1);
    let mut model: BTreeMap<String, (i64, i64)> = places.iter().map(|p| (key(p), (0, 0))).collect();
    // The register and the safe every organization is seeded with are listed too, and no step moves them.
    let seeded: Vec<(String, (i64, i64))> =
        balances(&app, "").await.into_iter().filter(|(at, _)| !model.contains_key(at)).collect();
    let figures: Vec<(i64, i64)> = seeded.iter().map(|(_, figures)| *figures).collect();
    assert_eq!(figures, [(0, 0), (0, 0)], "the seeded register and safe, empty: {seeded:?}");
    model.extend(seeded);
    // Live manual movements: id → (location index, what it moved: pesos and native).
    let mut live: Vec<(String, usize, (i64, i64))> = Vec::new();
    let mut history = Vec::new();
    for step in 0..steps {
        let choice = rng.below(10);
        // A random movement: its body, location, and what it moves given the holdings before it.
        let movement_body = |rng: &mut Rng, model: &BTreeMap<String, (i64, i64)>| {
            let at = rng.below(places.len() as u64) as usize;
            let amount = 1 + rng.below(90_000) as i64;
            let income = rng.below(2) == 0;
            let mut body = json!({ "balance_type": places[at].0, "balance_id": places[at].1,
                "direction": if income { "income" } else { "expense" }, "amount": amount, "occurred_on": today() });
            let lines = if rng.below(2) == 0 {
                body["account_id"] = json!(accounts[rng.below(2) as usize]);
                vec![amount]
            } else {
                let first = 1 + rng.below(amount as u64) as i64 - 1;
                let mut lines = vec![json!({ "account_id": accounts[0], "amount": amount - first })];
                if first > 0 {
                    lines.push(json!({ "account_id": accounts[1], "amount": first }));
                }
                body["lines"] = json!(lines);
                lines.iter().map(|l| l["amount"].as_i64().expect("amount")).collect()
            };
            // A dollar movement sends a rate of 800.00 to 1,199.99, or null for the central bank's.
            let rate = (at == dollars).then(|| {
                if rng.below(2) == 0 {
                    body["exchange_rate"] = Value::Null;
                    central
                } else {
                    let hundredths = 80_000 + rng.below(40_000) as i64;
                    body["exchange_rate"] = json!(format!("{}.{:02}", hundredths / 100, hundredths % 100));
                    hundredths * 10_000
                }
            });
            let held = model[&key(&places[at])];
            (body, at, moved(held, income, amount, &lines, rate))
        };
        let add = |model: &mut BTreeMap<String, (i64, i64)>, at: usize, (pesos, native): (i64, i64)| {
            let held = model.get_mut(&key(&places[at])).expect("location");
            *held = (held.0 + pesos, held.1 + native);
        };
        if choice < 4 {
            let from = rng.below(pesos_places) as usize;
            let to = (from + 1 + rng.below(pesos_places - 1) as usize) % pesos_places as usize;
            let amount = 1 + rng.below(50_000) as i64;
            let body = transfer((places[from].0, &places[from].1), (places[to].0, &places[to].1), amount, &today());
            send(&app, Method::POST, "/api/v1/funds-transfers", &format!("t-{step}"), &body).await;
            add(&mut model, from, (-amount, -amount));
            add(&mut model, to, (amount, amount));
        } else if choice < 7 || live.is_empty() {
            let (body, at, effect) = movement_body(&mut rng, &model);
            let created = send(&app, Method::POST, "/api/v1/treasury/movements", &format!("m-{step}"), &body).await;
            let id = created["data"]["treasury_movement_id"].as_str().expect("id").to_owned();
            let answered = (created["data"]["functional_amount"].as_i64(), created["data"]["native_amount"].as_i64());
            assert_eq!(answered, (Some(effect.0), Some(effect.1)), "step {step}: {body}");
            add(&mut model, at, effect);
            live.push((id, at, effect));
        } else {
            let pick = rng.below(live.len() as u64) as usize;
            let (id, at, effect) = live[pick].clone();
            let path = format!("/api/v1/treasury/movements/{id}");
            let detail = json(app.get(&path).await, 200).await;
            let updated_at = detail["data"]["updated_at"].clone();
            add(&mut model, at, (-effect.0, -effect.1));
            if choice < 9 {
                let (mut body, new_at, new_effect) = movement_body(&mut rng, &model);
                body["updated_at"] = updated_at;
                send(&app, Method::PUT, &path, &format!("r-{step}"), &body).await;
                add(&mut model, new_at, new_effect);
                live[pick] = (id, new_at, new_effect);
            } else {
                send(&app, Method::DELETE, &path, &format!("d-{step}"), &json!({ "updated_at": updated_at })).await;
                live.remove(pick);
            }
        }
        let now = balances(&app, "").await;
        assert_eq!(now, model, "step {step} (seed {seed}): the balances are the model's");
        if step % 10 == 9 {
            let sums = movement_sums(&app).await;
            for (at, (balance, _)) in &now {
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
