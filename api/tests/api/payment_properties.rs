//! A property test of payments: random sales (some paid in part with their own `paymentMethods`), credit
//! notes, purchases, customer and supplier payments with random allocations (some over what is owed, to
//! be refused), later allocations and voids, over two customers, two suppliers and two registers. The
//! model keeps what each document owes, each payment's allocations, each contact's balance and what is
//! on account, and each register's pesos (payment methods' fees included). After every step every
//! document's `amountDue`, every contact's account (balance and unallocated credit) and every register's
//! balance are the model's; at the end every journal entry sums to zero and each register's balance is
//! the sum of its movements. `PAYMENT_PROPERTIES_SEED` picks the sequence (printed when a run fails) and
//! `PAYMENT_PROPERTIES_STEPS` its length (default 60).

use crate::helpers::{Rng, TestApp, eventually, items, json, today};
use crate::sales::{fiscal_profile, payment_method, point_of_sale, sell};
use crate::treasury::open;
use events::catalogue::{Currency, LocationKind, sale_payment_id};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::BTreeMap;
use std::time::Duration;

/// Sends a write and answers its status and body.
async fn send(app: &TestApp, path: &str, key: &str, body: &Value) -> (u16, Value) {
    let answer = crate::payments::send(app, path, key, body).await;
    let status = answer.status().as_u16();
    (status, answer.json().await.expect("json"))
}

/// A document as the model keeps it.
#[derive(Debug, Clone)]
struct Document {
    contact: usize,
    total: i64,
    due: i64,
}

/// A payment as the model keeps it.
#[derive(Debug, Clone)]
struct Payment {
    id: String,
    customer: bool,
    contact: usize,
    total: i64,
    allocations: Vec<(String, i64)>,
    /// What it moved at each register.
    moved: Vec<(usize, i64)>,
    voided: bool,
}

impl Payment {
    fn unallocated(&self) -> i64 {
        if self.voided { 0 } else { self.total - self.allocations.iter().map(|(_, a)| a).sum::<i64>() }
    }
}

#[derive(Debug, Default)]
struct Model {
    sales: BTreeMap<String, Document>,
    purchases: BTreeMap<String, Document>,
    payments: Vec<Payment>,
    /// Per contact (customers, then suppliers): the balance, and credit notes beyond what their sale owed.
    balances: [i64; 4],
    overshoot: [i64; 4],
    registers: [i64; 2],
}

impl Model {
    fn documents(&mut self, customer: bool) -> &mut BTreeMap<String, Document> {
        if customer { &mut self.sales } else { &mut self.purchases }
    }

    fn contact_index(customer: bool, contact: usize) -> usize {
        if customer { contact } else { 2 + contact }
    }

    /// Documents of the contact that owe something.
    fn open(&mut self, customer: bool, contact: usize) -> Vec<(String, i64)> {
        self.documents(customer)
            .iter()
            .filter(|(_, d)| d.contact == contact && d.due > 0)
            .map(|(id, d)| (id.clone(), d.due))
            .collect()
    }

    fn record(&mut self, payment: Payment) {
        let index = Self::contact_index(payment.customer, payment.contact);
        self.balances[index] -= payment.total;
        for (at, moved) in &payment.moved {
            self.registers[*at] += moved;
        }
        for (document, amount) in &payment.allocations {
            self.documents(payment.customer).get_mut(document).expect("known").due -= amount;
        }
        self.payments.push(payment);
    }

    fn void(&mut self, n: usize) {
        let payment = self.payments[n].clone();
        let index = Self::contact_index(payment.customer, payment.contact);
        self.balances[index] += payment.total;
        for (at, moved) in &payment.moved {
            self.registers[*at] -= moved;
        }
        for (document, amount) in &payment.allocations {
            self.documents(payment.customer).get_mut(document).expect("known").due += amount;
        }
        self.payments[n].voided = true;
    }

    fn unallocated(&self, index: usize) -> i64 {
        let paid: i64 = self
            .payments
            .iter()
            .filter(|p| Self::contact_index(p.customer, p.contact) == index)
            .map(Payment::unallocated)
            .sum();
        paid + self.overshoot[index]
    }
}

/// A card's fee: 2% (half away from zero) plus 50 cents.
fn card_fee(amount: i64) -> i64 {
    (amount * 2 + 50) / 100 + 50
}

/// Random allocations of at most `budget` over `open` documents; with `overdraw`, one passes what its
/// document owes.
fn allocations(rng: &mut Rng, open: &[(String, i64)], budget: i64, overdraw: bool) -> Vec<(String, i64)> {
    let mut left = budget;
    let mut chosen = Vec::new();
    for (n, (id, due)) in open.iter().enumerate() {
        if overdraw && n == 0 {
            chosen.push((id.clone(), due + 1));
            continue;
        }
        if rng.below(2) == 0 || left == 0 {
            continue;
        }
        let amount = rng.between(1, (*due).min(left));
        left -= amount;
        chosen.push((id.clone(), amount));
    }
    chosen
}

#[sqlx::test(migrations = "../schema")]
async fn random_payments_keep_every_document_account_and_register_exact(pool: PgPool) {
    let seed: u64 =
        std::env::var("PAYMENT_PROPERTIES_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x9A7_5EED_u64);
    let steps: usize = std::env::var("PAYMENT_PROPERTIES_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    println!("PAYMENT_PROPERTIES_SEED={seed} PAYMENT_PROPERTIES_STEPS={steps}");
    let mut rng = Rng(seed | 1);
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let cash = payment_method(&app).await;
    let card = app.created_id("/api/v1/payment-methods", &json!({ "name": "Tarjeta", "feePercentage": "2", "feeFixed": 50 })).await;
    let registers = [
        open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await,
        open(&app, app.org_id, LocationKind::CashRegister, "Caja 2", Currency::Pes).await,
    ];
    let mut contacts = Vec::new();
    for (path, name) in [
        ("/api/v1/customers", "Ana"),
        ("/api/v1/customers", "Beto"),
        ("/api/v1/suppliers", "Molino"),
        ("/api/v1/suppliers", "Granja"),
    ] {
        let id = json(app.post_keyed(path, &json!({ "name": name })).await, 201).await["data"]["id"].clone();
        contacts.push(id.as_str().expect("id").to_owned());
    }
    let product = crate::purchases::product(&app, "HARINA", 1_000).await;
    let mut model = Model::default();
    let today = today();

    for step in 0..steps {
        let context = format!("step {step} (seed {seed})");
        match rng.below(12) {
            // A sale, paid in part with its own payment methods half the time.
            0..=2 => {
                let customer = rng.below(2) as usize;
                let total = rng.between(1_000, 50_000);
                let mut body = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today,
                    "customerId": contacts[customer], "total": total,
                    "items": [{ "name": "Mercadería", "quantity": 1, "unitPrice": total }] });
                let paid = if rng.below(2) == 0 { rng.between(1, total) } else { 0 };
                let at = rng.below(2) as usize;
                let by_card = rng.below(2) == 0;
                if paid > 0 {
                    let method = if by_card { &card } else { &cash };
                    body["paymentMethods"] =
                        json!([{ "methodId": method, "amount": paid, "registerId": registers[at], "reference": "x" }]);
                }
                let sale = json(sell(&app, &body, true).await, 201).await["data"].clone();
                let id = sale["id"].as_str().expect("id").to_owned();
                model.sales.insert(id.clone(), Document { contact: customer, total, due: total });
                model.balances[customer] += total;
                if paid > 0 {
                    let moved = if by_card { paid - card_fee(paid) } else { paid };
                    let payment_id = sale_payment_id(id.parse().expect("uuid")).to_string();
                    model.record(Payment {
                        id: payment_id,
                        customer: true,
                        contact: customer,
                        total: paid,
                        allocations: vec![(id, paid)],
                        moved: vec![(at, moved)],
                        voided: false,
                    });
                }
            }
            // A credit note correcting a sale, up to its whole total (what passes its due stays on account).
            3 => {
                let sales: Vec<(String, Document)> = model.sales.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                if sales.is_empty() {
                    continue;
                }
                let (sale, document) = sales[rng.below(sales.len() as u64) as usize].clone();
                let amount = rng.between(1, document.total);
                let body = json!({ "voucherType": 8, "pointOfSaleId": pos, "invoiceDate": today,
                    "customerId": contacts[document.contact], "associatedSaleId": sale, "total": amount,
                    "items": [{ "name": "Devolución", "quantity": 1, "unitPrice": amount }] });
                json(sell(&app, &body, true).await, 201).await;
                let applied = amount.min(document.due);
                model.sales.get_mut(&sale).expect("known").due -= applied;
                model.overshoot[document.contact] += amount - applied;
                model.balances[document.contact] -= amount;
            }
            // A purchase.
            4 | 5 => {
                let supplier = rng.below(2) as usize;
                let cost = rng.between(500, 20_000);
                let number = format!("0001-{step:08}");
                let body = crate::purchases::purchase(
                    &contacts[2 + supplier],
                    &number,
                    None,
                    json!([{ "productId": product, "quantity": 1, "unitCost": cost }]),
                );
                let purchase = json(app.post_keyed("/api/v1/purchases", &body).await, 201).await["data"].clone();
                let total = purchase["totalArs"].as_i64().expect("total");
                let id = purchase["id"].as_str().expect("id").to_owned();
                model.purchases.insert(id, Document { contact: supplier, total, due: total });
                model.balances[2 + supplier] += total;
            }
            // A customer or supplier payment, its allocations within what each document owes (or, one time
            // in four, one over it: refused, nothing written).
            6..=8 => {
                let customer = rng.below(2) == 0;
                let contact = rng.below(2) as usize;
                let lines: Vec<(usize, bool, i64)> = (0..rng.between(1, 2))
                    .map(|_| (rng.below(2) as usize, rng.below(3) == 0, rng.between(1_000, 30_000)))
                    .collect();
                let total: i64 = lines.iter().map(|l| l.2).sum();
                let open = model.open(customer, contact);
                let overdraw = !open.is_empty() && rng.below(4) == 0;
                let shares = allocations(&mut rng, &open, total, overdraw);
                let (path, contact_field, document_field) = if customer {
                    ("/api/v1/customer-payments", "customer_id", "sale_id")
                } else {
                    ("/api/v1/supplier-payments", "supplier_id", "purchase_id")
                };
                let contact_id = &contacts[if customer { contact } else { 2 + contact }];
                let body = json!({ contact_field: contact_id, "occurred_on": today,
                    "lines": lines.iter().map(|(at, by_card, amount)| json!({
                        "payment_method_id": if *by_card { &card } else { &cash }, "amount": amount,
                        "balance_type": "cash_register", "balance_id": registers[*at], "reference": "r" }))
                        .collect::<Vec<_>>(),
                    "allocations": shares.iter().map(|(id, amount)| json!({ document_field: id, "amount": amount }))
                        .collect::<Vec<_>>() });
                let (status, answer) = send(&app, path, &format!("pay-{step}"), &body).await;
                if overdraw {
                    assert_eq!(status, 422, "{context}: an allocation over what is owed is refused: {answer}");
                    continue;
                }
                assert_eq!(status, 201, "{context}: {answer}");
                let moved = lines
                    .iter()
                    .map(|(at, by_card, amount)| {
                        let fee = if *by_card { card_fee(*amount) } else { 0 };
                        (*at, if customer { amount - fee } else { -(amount + fee) })
                    })
                    .collect();
                let id = answer["data"]["id"].as_str().expect("id").to_owned();
                model.record(Payment { id, customer, contact, total, allocations: shares, moved, voided: false });
            }
            // Allocating what a payment has on account.
            9 | 10 => {
                let candidates: Vec<usize> =
                    (0..model.payments.len()).filter(|n| model.payments[*n].unallocated() > 0).collect();
                if candidates.is_empty() {
                    continue;
                }
                let n = candidates[rng.below(candidates.len() as u64) as usize];
                let payment = model.payments[n].clone();
                let open = model.open(payment.customer, payment.contact);
                let shares = allocations(&mut rng, &open, payment.unallocated(), false);
                if shares.is_empty() {
                    continue;
                }
                let (side, field) = if payment.customer {
                    ("customer-payments", "sale_id")
                } else {
                    ("supplier-payments", "purchase_id")
                };
                let body = json!({ "allocations": shares.iter().map(|(id, amount)| json!({ field: id, "amount": amount }))
                    .collect::<Vec<_>>() });
                let path = format!("/api/v1/{side}/{}/allocations", payment.id);
                let (status, answer) = send(&app, &path, &format!("allocate-{step}"), &body).await;
                assert_eq!(status, 200, "{context}: {answer}");
                for (document, amount) in &shares {
                    model.documents(payment.customer).get_mut(document).expect("known").due -= amount;
                }
                model.payments[n].allocations.extend(shares);
            }
            // Voiding a payment (a sale's own one included).
            _ => {
                let live: Vec<usize> = (0..model.payments.len()).filter(|n| !model.payments[*n].voided).collect();
                if live.is_empty() {
                    continue;
                }
                let n = live[rng.below(live.len() as u64) as usize];
                let side = if model.payments[n].customer { "customer-payments" } else { "supplier-payments" };
                let path = format!("/api/v1/{side}/{}/void", model.payments[n].id);
                let (status, answer) = send(&app, &path, &format!("void-{step}"), &json!({})).await;
                assert_eq!(status, 200, "{context}: {answer}");
                model.void(n);
            }
        }

        // Every document owes what the model says.
        for (path, documents) in [("/api/v1/sales?limit=100", &model.sales), ("/api/v1/purchases?limit=100", &model.purchases)]
        {
            let listed = json(app.get(path).await, 200).await;
            let shown: BTreeMap<String, i64> = items(&listed)
                .iter()
                .filter(|d| documents.contains_key(d["id"].as_str().expect("id")))
                .map(|d| (d["id"].as_str().expect("id").to_owned(), d["amountDue"].as_i64().expect("due")))
                .collect();
            let expected: BTreeMap<String, i64> = documents.iter().map(|(id, d)| (id.clone(), d.due)).collect();
            assert_eq!(shown, expected, "{context}: {path}");
        }
        // Every contact's account: the balance and what is on account.
        for (index, contact) in contacts.iter().enumerate() {
            let kind = if index < 2 { "customers" } else { "suppliers" };
            let path = format!("/api/v1/{kind}/{contact}/account");
            let want = (model.balances[index], model.unallocated(index));
            let what = format!("{context}: {path} shows {want:?}");
            eventually(Duration::from_secs(10), &what, || async {
                let account = json(app.get(&path).await, 200).await["data"].clone();
                let shown = (account["balance"].as_i64()?, account["unallocated_credit"].as_i64()?);
                (shown == want).then_some(())
            })
            .await;
        }
        // Every register holds what the model says.
        for (at, register) in registers.iter().enumerate() {
            let path = format!("/api/v1/treasury/balances?balance_type=cash_register&balance_id={register}");
            let balance = items(&json(app.get(&path).await, 200).await)[0]["functional_amount"].as_i64();
            assert_eq!(balance, Some(model.registers[at]), "{context}: register {at}");
        }
    }

    // Every payment's entry and reversal sums to zero, and each register is the sum of its movements.
    let stored: Vec<Value> =
        sqlx::query_scalar("select data from events where stream_type in ('customer_payment', 'supplier_payment')")
            .fetch_all(&app.pool)
            .await
            .expect("events");
    for data in &stored {
        for entry in [&data["entry"], &data["reversal"]] {
            if let Some(lines) = entry["lines"].as_array() {
                let sum: i64 = lines.iter().map(|l| l["functional"].as_i64().expect("amount")).sum();
                assert_eq!(sum, 0, "every journal entry is balanced: {entry}");
            }
        }
    }
    for (at, register) in registers.iter().enumerate() {
        let base = format!("/api/v1/treasury/movements?balance_type=cash_register&balance_id={register}&limit=100");
        let (mut path, mut sum) = (base.clone(), 0);
        loop {
            let page = json(app.get(&path).await, 200).await;
            sum += items(&page).iter().map(|m| m["functional_amount"].as_i64().expect("amount")).sum::<i64>();
            match page["next_cursor"].as_str() {
                Some(cursor) => path = format!("{base}&cursor={cursor}"),
                None => break,
            }
        }
        assert_eq!(sum, model.registers[at], "register {at} is the sum of its movements");
    }
}
