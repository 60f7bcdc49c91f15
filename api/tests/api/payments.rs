//! Payments: customer and supplier payments posted through the treasury, allocated to sales, with
//! payment methods' fees, voids, refusals that write nothing, and concurrent allocations that never pass
//! what a sale owes.

use crate::helpers::{TestApp, assert_nulls_documented, customer, delegated_token, detail_fields, error, ids, items, json, today};
use crate::sales::{fiscal_profile, payment_method, point_of_sale, sell};
use crate::treasury::{open, registers_of_ana_and_beto};
use commands::treasury::admin::create_ledger_account;
use events::catalogue::{Currency, LocationKind};
use serde_json::{Value, json};
use sqlx::PgPool;

const CUSTOMER_PAYMENTS: &str = "/api/v1/customer-payments";
const SUPPLIER_PAYMENTS: &str = "/api/v1/supplier-payments";

/// POSTs `body` to `path` under the idempotency key `key`.
pub async fn send(app: &TestApp, path: &str, key: &str, body: &Value) -> reqwest::Response {
    app.post_key(path, key, body).await
}

/// The register's balance in pesos.
async fn balance(app: &TestApp, register: &str) -> i64 {
    let path = format!("/api/v1/treasury/balances?balance_type=cash_register&balance_id={register}");
    items(&json(app.get(&path).await, 200).await)[0]["functional_amount"].as_i64().expect("pesos")
}

/// Names other receivables, payables and fees accounts than the organization's starting ones.
async fn accounts(app: &TestApp) {
    let mut ids = Vec::new();
    for (code, name) in [("1.3.1", "Deudores"), ("2.1.9", "Acreedores"), ("5.2.9", "Comisiones")] {
        ids.push(create_ledger_account(&app.pool, app.org_id, code, name, Currency::Pes).await.expect("account"));
    }
    let change = commands::organization::SettingsChange {
        receivables_account: Some(ids[0].to_string()),
        payables_account: Some(ids[1].to_string()),
        payment_fees_account: Some(ids[2].to_string()),
        ..Default::default()
    };
    commands::organization::update_organization(&app.pool, app.org_id, change).await.expect("accounts set");
}

/// A B invoice of `total` cents to `customer`.
async fn invoice(app: &TestApp, pos: &str, customer: &str, total: i64) -> String {
    let body = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer,
        "total": total, "items": [{ "name": "Mercadería", "quantity": 1, "unitPrice": total }] });
    json(sell(app, &body, true).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

/// What a sale owes and its payment status, as the sale's detail shows them.
async fn owed(app: &TestApp, sale: &str) -> (i64, String) {
    let detail = json(app.get(&format!("/api/v1/sales/{sale}")).await, 200).await;
    let data = &detail["data"];
    (data["amountDue"].as_i64().expect("owed"), data["paymentStatus"].as_str().expect("status").to_owned())
}

fn line(method: &str, amount: i64, register: &str) -> Value {
    json!({ "payment_method_id": method, "amount": amount, "balance_type": "cash_register", "balance_id": register })
}

/// Asserts that the served document names `code` among the 422 answers of `POST path`.
async fn assert_422_documented(app: &TestApp, path: &str, code: &str) {
    let spec = json(app.request(reqwest::Method::GET, "/openapi.json", None, None).await, 200).await;
    let why = spec["paths"][path]["post"]["responses"]["422"]["description"].as_str().unwrap_or_default();
    assert!(why.contains(&format!("(`{code}`")), "POST {path} does not document 422 {code}: {why}");
}

#[sqlx::test(migrations = "../schema")]
async fn customer_payments_settle_sales_post_to_the_register_and_void(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    accounts(&app).await;
    let (pos, customer, cash) =
        (point_of_sale(&app).await, customer(&app, "Ana Ñandú").await, payment_method(&app).await);
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let card = app.created_id("/api/v1/payment-methods", &json!({ "name": "Tarjeta", "feePercentage": "3", "feeFixed": 100, "requiresReference": true })).await;
    let sale = invoice(&app, &pos, &customer, 10_000).await;

    // Half in cash, allocated to the sale.
    let half = json!({ "customer_id": customer, "occurred_on": today(), "note": "Seña",
        "lines": [line(&cash, 5_000, &register)], "allocations": [{ "sale_id": sale, "amount": 5_000 }] });
    let first = json(send(&app, CUSTOMER_PAYMENTS, "pay-1", &half).await, 201).await["data"].clone();
    assert_nulls_documented(&first, "PaymentData");
    assert_eq!(
        (
            first["object"].as_str(),
            first["status"].as_str(),
            first["amount"].as_i64(),
            first["unallocated_amount"].as_i64()
        ),
        (Some("customer_payment"), Some("posted"), Some(5_000), Some(0))
    );
    assert_eq!(first["allocations"], json!([{ "sale_id": sale, "amount": 5_000 }]));
    assert_eq!(balance(&app, &register).await, 5_000);
    let replay = json(send(&app, CUSTOMER_PAYMENTS, "pay-1", &half).await, 201).await["data"].clone();
    assert_eq!((replay["id"].clone(), replay["idempotent_replay"].clone()), (first["id"].clone(), json!(true)));
    assert_eq!(balance(&app, &register).await, 5_000, "a replay moves no money");
    assert_eq!(owed(&app, &sale).await, (5_000, "partially_paid".to_owned()));

    // The other half by card: the reference is required; the fee (3% of 5,000.00 cents plus 100) is kept.
    let mut by_card = json!({ "customer_id": customer, "occurred_on": today(),
        "lines": [line(&card, 5_000, &register)], "allocations": [{ "sale_id": sale, "amount": 5_000 }] });
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "pay-2", &by_card).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["lines[0].reference"]);
    by_card["lines"][0]["reference"] = json!("VISA 4242");
    let second = json(send(&app, CUSTOMER_PAYMENTS, "pay-3", &by_card).await, 201).await["data"].clone();
    assert_eq!((second["fee_amount"].as_i64(), second["lines"][0]["fee"].as_i64()), (Some(250), Some(250)));
    assert_eq!(balance(&app, &register).await, 5_000 + 4_750, "the register receives the net");
    assert_eq!(owed(&app, &sale).await, (0, "paid".to_owned()));
    let paid = json(app.get("/api/v1/sales?payment_status=paid").await, 200).await;
    assert_eq!(ids(&items(&paid)), [sale.as_str()]);

    // The sale owes nothing more: another allocation is refused and writes nothing.
    let more = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 100, &register)],
        "allocations": [{ "sale_id": sale, "amount": 100 }] });
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "pay-4", &more).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "ALLOCATION_EXCEEDS_BALANCE");
    let mut over = more.clone();
    over["allocations"][0]["amount"] = json!(200);
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "pay-5", &over).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "ALLOCATION_EXCEEDS_PAYMENT");
    assert_eq!(balance(&app, &register).await, 9_750);

    // A void reverses the card payment and gives its allocation back; a second void is a conflict.
    let void_path = format!("{CUSTOMER_PAYMENTS}/{}/void", second["id"].as_str().expect("id"));
    let voided = json(send(&app, &void_path, "void-1", &json!({})).await, 200).await["data"].clone();
    assert_eq!((voided["status"].as_str(), voided["unallocated_amount"].as_i64()), (Some("voided"), Some(0)));
    assert_eq!(balance(&app, &register).await, 5_000, "the register gives the card payment back");
    assert_eq!(owed(&app, &sale).await, (5_000, "partially_paid".to_owned()), "the allocation is given back");
    error(send(&app, &void_path, "void-2", &json!({})).await, 409, "business_error").await;
    let detail = json(app.get(&format!("{CUSTOMER_PAYMENTS}/{}", second["id"].as_str().expect("id"))).await, 200).await;
    assert_eq!(detail["data"]["status"], "voided");
    let listed = json(app.get(&format!("{CUSTOMER_PAYMENTS}?customer_id={customer}&status=posted")).await, 200).await;
    assert_eq!(ids(&items(&listed)), [first["id"].as_str().expect("id")], "the voided one is not posted");

    // Twenty payments race for the 5,000 cents the sale owes again: five of 1,000 fit, the rest are refused.
    let mut racing = Vec::new();
    for n in 0..20 {
        let body = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 1_000, &register)],
            "allocations": [{ "sale_id": sale, "amount": 1_000 }] });
        let app = &app;
        racing.push(async move { send(app, CUSTOMER_PAYMENTS, &format!("race-{n}"), &body).await.status().as_u16() });
    }
    let mut statuses = futures::future::join_all(racing).await;
    statuses.sort_unstable();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 5, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 422).count(), 15, "{statuses:?}");
    assert_eq!(balance(&app, &register).await, 10_000);
    assert_eq!(owed(&app, &sale).await, (0, "paid".to_owned()));

    // A payment on account, allocated later: at most what it has left, and nothing once voided.
    let later = invoice(&app, &pos, &customer, 3_000).await;
    let on_account =
        json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 2_000, &register)] });
    let kept = json(send(&app, CUSTOMER_PAYMENTS, "account-1", &on_account).await, 201).await["data"].clone();
    assert_eq!(kept["unallocated_amount"].as_i64(), Some(2_000));
    let allocate_path = format!("{CUSTOMER_PAYMENTS}/{}/allocations", kept["id"].as_str().expect("id"));
    let too_much = json!({ "allocations": [{ "sale_id": later, "amount": 2_500 }] });
    let refused = error(send(&app, &allocate_path, "allocate-1", &too_much).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "ALLOCATION_EXCEEDS_PAYMENT");
    let some = json!({ "allocations": [{ "sale_id": later, "amount": 1_500 }] });
    let allocated = json(send(&app, &allocate_path, "allocate-2", &some).await, 200).await["data"].clone();
    assert_eq!(allocated["unallocated_amount"].as_i64(), Some(500));
    assert_eq!(allocated["allocations"], json!([{ "sale_id": later, "amount": 1_500 }]));
    assert_eq!(owed(&app, &later).await, (1_500, "partially_paid".to_owned()));
    let void_kept = format!("{CUSTOMER_PAYMENTS}/{}/void", kept["id"].as_str().expect("id"));
    json(send(&app, &void_kept, "void-3", &json!({})).await, 200).await;
    assert_eq!(owed(&app, &later).await, (3_000, "pending".to_owned()), "the void gives the later allocation back");
    let again = json!({ "allocations": [{ "sale_id": later, "amount": 100 }] });
    error(send(&app, &allocate_path, "allocate-3", &again).await, 409, "business_error").await;
    assert_eq!(balance(&app, &register).await, 10_000, "allocations move no money; the void gave the 2,000 back");

    // Refusals that name the field: another customer's sale, an unknown location, an amount of zero.
    let other = json(app.post("/api/v1/customers", &json!({ "name": "Otro" })).await, 201).await["data"]["id"].clone();
    let mut theirs = more.clone();
    theirs["customer_id"] = other;
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "pay-6", &theirs).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["allocations[0].sale_id"]);
    let nowhere = json!({ "customer_id": customer, "occurred_on": today(),
        "lines": [line(&cash, 100, &uuid::Uuid::now_v7().to_string())] });
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "pay-7", &nowhere).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["lines[0].balance_id"]);
    let zero = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 0, &register)] });
    error(send(&app, CUSTOMER_PAYMENTS, "pay-8", &zero).await, 400, "invalid_request_error").await;
    assert_eq!(balance(&app, &register).await, 10_000, "nothing written");

    // A supplier payment leaves the register with its fee on top; the journal stays balanced.
    let supplier = json(app.post_keyed("/api/v1/suppliers", &json!({ "name": "Molino SA" })).await, 201).await["data"]
        ["id"]
        .clone();
    let item = crate::purchases::product(&app, "HARINA", 1_000).await;
    let bought = crate::purchases::purchase(
        supplier.as_str().expect("id"),
        "0001-00000001",
        None,
        json!([{ "productId": item, "quantity": 1, "unitCost": 1_000 }]),
    );
    let bought = json(app.post_keyed("/api/v1/purchases", &bought).await, 201).await["data"]["id"].clone();
    let purchase_path = format!("/api/v1/purchases/{}", bought.as_str().expect("id"));
    let total = json(app.get(&purchase_path).await, 200).await["data"]["totalArs"].as_i64().expect("total");
    let pay_out = json!({ "supplier_id": supplier, "occurred_on": today(),
        "lines": [{ "payment_method_id": card, "amount": 2_000, "balance_type": "cash_register",
                    "balance_id": register, "reference": "TRF 1" }],
        "allocations": [{ "purchase_id": bought, "amount": total }] });
    let out = json(send(&app, SUPPLIER_PAYMENTS, "out-1", &pay_out).await, 201).await["data"].clone();
    assert_eq!(
        (out["object"].as_str(), out["supplier_id"].clone(), out["fee_amount"].as_i64()),
        (Some("supplier_payment"), supplier, Some(160))
    );
    assert_eq!(balance(&app, &register).await, 10_000 - 2_160);
    let settled = json(app.get(&purchase_path).await, 200).await["data"].clone();
    assert_eq!((settled["amountDue"].as_i64(), settled["paymentStatus"].as_str()), (Some(0), Some("paid")));
    assert_eq!(out["unallocated_amount"].as_i64(), Some(2_000 - total));
    let stored: Vec<Value> = sqlx::query_scalar(
        "select data from events where stream_type in ('customer_payment', 'supplier_payment') order by position",
    )
    .fetch_all(&app.pool)
    .await
    .expect("events");
    for data in &stored {
        for entry in [&data["entry"], &data["reversal"]] {
            if let Some(lines) = entry["lines"].as_array() {
                assert_eq!(lines.iter().map(|l| l["functional"].as_i64().expect("amount")).sum::<i64>(), 0, "{entry}");
            }
        }
    }
}

#[sqlx::test(migrations = "../schema")]
async fn a_methods_fees_as_written_are_rounded_or_refuse_the_payment(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let customer = customer(&app, "Ana Ñandú").await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let method = |body: Value| {
        let app = &app;
        async move { json(app.post_keyed("/api/v1/payment-methods", &body).await, 201).await["data"]["id"].clone() }
    };
    // A percentage with three decimals and a fraction of a cent, both kept as written by the method.
    let rounded = method(json!({ "name": "Tarjeta", "feePercentage": "2.755", "feeFixed": 0.4 })).await;
    let pay = |method: &Value| {
        json!({ "customer_id": customer, "occurred_on": today(),
            "lines": [line(method.as_str().expect("id"), 10_000, &register)] })
    };
    let paid = json(send(&app, CUSTOMER_PAYMENTS, "fee-1", &pay(&rounded)).await, 201).await["data"].clone();
    // 2.76% of 10,000 cents, and no whole cent of fixed fee.
    assert_eq!((paid["fee_amount"].as_i64(), paid["lines"][0]["fee"].as_i64()), (Some(276), Some(276)));
    assert_eq!(balance(&app, &register).await, 10_000 - 276);

    // A fixed fee beyond any amount cannot be applied: the payment is refused and nothing moves.
    let huge = method(json!({ "name": "Cheque", "feeFixed": 1e13 })).await;
    let refused = json(send(&app, CUSTOMER_PAYMENTS, "fee-2", &pay(&huge)).await, 422).await;
    assert_eq!(refused["error"]["code"], "PAYMENT_METHOD_FEE_INVALID", "{refused}");
    assert_422_documented(&app, CUSTOMER_PAYMENTS, "PAYMENT_METHOD_FEE_INVALID").await;
    assert_eq!(balance(&app, &register).await, 10_000 - 276, "nothing was posted");
    let listed = json(app.get(CUSTOMER_PAYMENTS).await, 200).await;
    assert_eq!(ids(&items(&listed)), [paid["id"].as_str().expect("id")]);
}

#[sqlx::test(migrations = "../schema")]
async fn an_inactive_payment_method_is_an_unknown_reference_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let customer = customer(&app, "Ana Ñandú").await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let body = json!({ "name": "Cheque", "isActive": false });
    let retired = json(app.post_keyed("/api/v1/payment-methods", &body).await, 201).await["data"]["id"].clone();
    let pay = json!({ "customer_id": customer, "occurred_on": today(),
        "lines": [line(retired.as_str().expect("id"), 10_000, &register)] });
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "retired-1", &pay).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["lines[0].payment_method_id"], "{refused}");
    assert_eq!(balance(&app, &register).await, 0, "nothing was posted");
    assert!(items(&json(app.get(CUSTOMER_PAYMENTS).await, 200).await).is_empty());
}

/// A missing reference beside a field the organization's data makes malformed is one 400 naming both,
/// not a 404 naming the reference alone.
#[sqlx::test(migrations = "../schema")]
async fn a_missing_reference_beside_a_malformed_line_is_one_400_naming_both(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (cash, customer) = (payment_method(&app).await, customer(&app, "Ana Ñandú").await);
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let mut dated = line(&cash, 100, &register);
    dated["exchange_rate"] = json!("1000");
    let pay = json!({ "customer_id": customer, "occurred_on": today(),
        "lines": [line(&uuid::Uuid::now_v7().to_string(), 100, &register), dated] });
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "mixed-1", &pay).await, 400, "invalid_request_error").await;
    assert_eq!(refused["error"]["code"], "VALIDATION_FAILED");
    assert_eq!(detail_fields(&refused), ["lines[0].payment_method_id", "lines[1].exchange_rate"]);
    assert_eq!(balance(&app, &register).await, 0, "nothing was posted");
}

#[sqlx::test(migrations = "../schema")]
async fn delegated_tokens_post_to_and_see_only_their_registers_payments(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (cash, customer) = (payment_method(&app).await, customer(&app, "Ana Ñandú").await);
    let (mine, other) = registers_of_ana_and_beto(&app).await;
    let ana = delegated_token(&app, &["payments:read", "payments:write"], "ana", "own", &[&mine]).await;
    let post = |token: String, key: &'static str, register: String| {
        let body = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 100, &register)] });
        let app = &app;
        async move { app.keyed_as(&token, reqwest::Method::POST, CUSTOMER_PAYMENTS, key, Some(&body)).await }
    };
    // Ana may not post to a register she is not assigned: 404, and nothing is written.
    let refused = error(post(ana.clone(), "ana-1", other.clone()).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["lines[0].balance_id"]);
    // Every line at a register she does not see is named in the one 404.
    let body = json!({ "customer_id": customer, "occurred_on": today(),
        "lines": [line(&cash, 100, &other), line(&cash, 100, &mine), line(&cash, 100, &other)] });
    let request = app.client.post(format!("{}{CUSTOMER_PAYMENTS}", app.base)).bearer_auth(&ana);
    let answer = request.header("Idempotency-Key", "ana-3").json(&body).send().await.expect("sent");
    let refused = error(answer, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["lines[0].balance_id", "lines[2].balance_id"]);
    let hers = json(post(ana.clone(), "ana-2", mine.clone()).await, 201).await["data"]["id"].clone();
    let theirs = json(post(app.api_key.clone(), "org-1", other.clone()).await, 201).await["data"]["id"].clone();
    // She lists and reads only her payment; the organization's key sees both.
    let listed = |token: String| {
        let request = app.client.get(format!("{}{CUSTOMER_PAYMENTS}", app.base)).bearer_auth(token);
        async move { json(request.send().await.expect("sent"), 200).await }
    };
    assert_eq!(ids(&items(&listed(ana.clone()).await)), [hers.as_str().expect("id")]);
    assert_eq!(items(&listed(app.api_key.clone()).await).len(), 2);
    let theirs_path = format!("{}{CUSTOMER_PAYMENTS}/{}", app.base, theirs.as_str().expect("id"));
    let hidden = app.client.get(theirs_path).bearer_auth(&ana).send().await.expect("sent");
    error(hidden, 404, "invalid_request_error").await;
}

/// A sale's payment methods follow the payments' rules for a delegated token: only into its registers,
/// and recorded as its user's (her `own` lists show it).
#[sqlx::test(migrations = "../schema")]
async fn a_delegated_sales_payments_land_only_in_its_registers_and_are_its_users(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let (pos, cash, customer) = (point_of_sale(&app).await, payment_method(&app).await, customer(&app, "Bruno").await);
    let (mine, other) = registers_of_ana_and_beto(&app).await;
    let scopes = ["payments:read", "sales:read", "sales:write"];
    let ana = delegated_token(&app, &scopes, "ana", "own", &[&mine]).await;
    let sell_into = |key: &'static str, register: &str| {
        let body = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer,
            "total": 1_000, "items": [{ "name": "Mercadería", "quantity": 1, "unitPrice": 1_000 }],
            "paymentMethods": [{ "methodId": cash, "amount": 1_000, "registerId": register }] });
        let request = app.client.post(format!("{}/api/v1/sales", app.base)).bearer_auth(&ana).header("Idempotency-Key", key);
        let request = request.header("Service-Version", crate::sales::DATED).json(&body);
        async move { request.send().await.expect("sent") }
    };
    let before = app.event_count().await;
    let refused = error(sell_into("sale-1", &other).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["paymentMethods[0].registerId"]);
    // Every location she does not see is named in the one 404.
    let body = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer,
        "total": 1_000, "items": [{ "name": "Mercadería", "quantity": 1, "unitPrice": 1_000 }],
        "paymentMethods": [{ "methodId": cash, "amount": 500, "registerId": other },
            { "methodId": cash, "amount": 500, "safeId": uuid::Uuid::now_v7() }] });
    let request = app.client.post(format!("{}/api/v1/sales", app.base)).bearer_auth(&ana);
    let request = request.header("Idempotency-Key", "sale-3").header("Service-Version", crate::sales::DATED);
    let refused = error(request.json(&body).send().await.expect("sent"), 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["paymentMethods[0].registerId", "paymentMethods[1].safeId"]);
    assert_eq!(app.event_count().await, before, "nothing was written");
    assert_eq!(balance(&app, &other).await, 0);

    let sold = json(sell_into("sale-2", &mine).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    assert_eq!(balance(&app, &mine).await, 1_000);
    let request = app.client.get(format!("{}{CUSTOMER_PAYMENTS}", app.base)).bearer_auth(&ana);
    let hers = json(request.send().await.expect("sent"), 200).await;
    assert_eq!(items(&hers).len(), 1, "the sale's payment is Ana's: {hers}");

    // The sale shows its payment methods as the payment reads show the payment: to Ana and to the
    // organization's key, not to a token of another register (its one sale and its list alike).
    let beto = delegated_token(&app, &scopes, "beto", "organization", &[&other]).await;
    let read_as = |token: Option<&str>, path: String| {
        let request = app.client.get(format!("{}{path}", app.base));
        let request = match token { Some(token) => request.bearer_auth(token), None => request.bearer_auth(&app.api_key) };
        async move { json(request.send().await.expect("sent"), 200).await }
    };
    let one = format!("/api/v1/sales/{sold}");
    let methods = |sale: &Value| sale["payments"].as_array().map_or(0, Vec::len);
    assert_eq!(methods(&read_as(Some(&ana), one.clone()).await["data"]), 1);
    assert_eq!(methods(&read_as(None, one.clone()).await["data"]), 1);
    assert_eq!(methods(&read_as(Some(&beto), one).await["data"]), 0, "Beto does not see Ana's register");
    let listed = read_as(Some(&beto), "/api/v1/sales".to_owned()).await;
    let sales = listed["data"].as_array().expect("a list");
    assert_eq!((sales.len(), sales.iter().map(methods).sum::<usize>()), (1, 0), "{listed}");

    // The customer's statement shows the sale's payment as the sale shows its methods.
    let account = format!("/api/v1/customers/{customer}/account");
    let kinds = |account: &Value| -> Vec<String> {
        let lines = account["data"]["statement"]["lines"].as_array().expect("lines");
        lines.iter().map(|l| l["type"].as_str().expect("type").to_owned()).collect()
    };
    let within = std::time::Duration::from_secs(10);
    crate::helpers::eventually(within, "the sale and its payment in the statement", || async {
        (kinds(&read_as(None, account.clone()).await) == ["sale", "payment"]).then_some(())
    })
    .await;
    assert_eq!(kinds(&read_as(Some(&ana), account.clone()).await), ["sale", "payment"]);
    assert_eq!(kinds(&read_as(Some(&beto), account).await), ["sale"], "Beto does not see Ana's register");
}

/// A contact's statement shows a delegated token the payments its payment reads show it: a payment
/// into a register it does not see, or under `own` another user's, is left out with its void, while
/// the balances still count every fact.
#[sqlx::test(migrations = "../schema")]
async fn a_statement_shows_a_delegated_token_only_the_payments_it_sees(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (cash, customer) = (payment_method(&app).await, customer(&app, "Ana Ñandú").await);
    let (mine, other) = registers_of_ana_and_beto(&app).await;
    let scopes = ["payments:read", "payments:write"];
    let ana = delegated_token(&app, &scopes, "ana", "own", &[&mine]).await;
    let beto = delegated_token(&app, &scopes, "beto", "organization", &[&other]).await;
    let post = |token: &str, key: &'static str, amount: i64, register: &str| {
        let body = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, amount, register)] });
        let (app, token) = (&app, token.to_owned());
        async move {
            let answer = app.keyed_as(&token, reqwest::Method::POST, CUSTOMER_PAYMENTS, key, Some(&body)).await;
            json(answer, 201).await["data"]["id"].as_str().expect("id").to_owned()
        }
    };
    // Ana's payment into her register; the organization's into Beto's (voided) and into Ana's.
    let hers = post(&ana, "hers", 100, &mine).await;
    let theirs = post(&app.api_key, "theirs", 200, &other).await;
    let ours = post(&app.api_key, "ours", 400, &mine).await;
    json(send(&app, &format!("{CUSTOMER_PAYMENTS}/{theirs}/void"), "void", &json!({})).await, 200).await;

    let path = format!("/api/v1/customers/{customer}/account");
    let read_as = |token: &str| {
        let request = app.client.get(format!("{}{path}", app.base)).bearer_auth(token);
        async move { json(request.send().await.expect("sent"), 200).await["data"].clone() }
    };
    // Each line as (type, payment), and the balances: today's and the statement's closing one.
    let shown = |account: &Value| {
        let lines = account["statement"]["lines"].as_array().expect("lines");
        let lines: Vec<(String, String)> = lines
            .iter()
            .map(|l| (l["type"].as_str().expect("type").to_owned(), l["document_id"].as_str().expect("id").to_owned()))
            .collect();
        (lines, account["balance"].as_i64(), account["statement"]["closing_balance"].as_i64())
    };
    let line_of = |kind: &str, payment: &str| (kind.to_owned(), payment.to_owned());
    let owed = Some(-100 - 200 - 400 + 200);
    let everything = account_at(&app, &path, -500).await;
    let all = vec![
        line_of("payment", &hers),
        line_of("payment", &theirs),
        line_of("payment", &ours),
        line_of("payment_void", &theirs),
    ];
    assert_eq!(shown(&everything), (all, owed, owed));
    assert_eq!(shown(&read_as(&ana).await), (vec![line_of("payment", &hers)], owed, owed), "only hers");
    let his = vec![line_of("payment", &theirs), line_of("payment_void", &theirs)];
    assert_eq!(shown(&read_as(&beto).await), (his, owed, owed), "only his register's");
    // The same payments as each lists.
    let listed = |token: &str| {
        let path = format!("{}{CUSTOMER_PAYMENTS}?customer_id={customer}", app.base);
        let request = app.client.get(path).bearer_auth(token);
        async move { ids(&items(&json(request.send().await.expect("sent"), 200).await)) }
    };
    assert_eq!((listed(&ana).await, listed(&beto).await), (vec![hers], vec![theirs]));
}

/// A payment's id reads, as a movement, its first line the token sees, wherever its other lines are.
#[sqlx::test(migrations = "../schema")]
async fn a_payments_movement_reads_as_the_line_a_token_sees(pool: PgPool) {
    use commands::organization::{Delegation, create_delegated_token};
    let app = TestApp::spawn(pool).await;
    let (cash, customer) = (payment_method(&app).await, customer(&app, "Ana").await);
    let mut registers = Vec::new();
    for name in ["Caja 1", "Caja 2", "Caja 3"] {
        registers.push(open(&app, app.org_id, LocationKind::CashRegister, name, Currency::Pes).await);
    }
    let lines: Vec<Value> = registers.iter().map(|r| line(&cash, 100, r)).collect();
    let body = json!({ "customer_id": customer, "occurred_on": today(), "lines": lines });
    let payment = json(send(&app, CUSTOMER_PAYMENTS, "three-lines", &body).await, 201).await["data"]["id"].clone();
    // The token sees the register of the line whose id sorts last.
    let payment_id: uuid::Uuid = payment.as_str().expect("id").parse().expect("uuid");
    let last = (0..3).max_by_key(|n| commands::payments::line_id(payment_id, *n)).expect("a line");
    let delegation = Delegation {
        user: "cajero".into(),
        visibility: "organization".into(),
        registers: vec![registers[last].parse().expect("id")],
        safes: vec![],
    };
    let token = create_delegated_token(&app.pool, app.org_id, &["treasury:read".to_owned()], delegation).await.expect("token");
    let path = format!("{}/api/v1/treasury/movements/{}", app.base, payment.as_str().expect("id"));
    let read = json(app.client.get(&path).bearer_auth(&token).send().await.expect("sent"), 200).await;
    assert_eq!(read["data"]["balance_id"], registers[last].as_str(), "the line at its register: {read}");
}

/// A fee above a customer payment's line would take money out of the location: 422, nothing written.
#[sqlx::test(migrations = "../schema")]
async fn a_fee_above_the_line_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let customer = customer(&app, "Ana").await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let dear = app.created_id("/api/v1/payment-methods", &json!({ "name": "Cheque", "feeFixed": 500 })).await;
    let body = |amount: i64| json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&dear, amount, &register)] });
    let before = app.event_count().await;
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "fee-1", &body(100)).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "FEE_EXCEEDS_AMOUNT");
    assert_eq!(detail_fields(&refused), ["lines[0].amount"]);
    assert_422_documented(&app, CUSTOMER_PAYMENTS, "FEE_EXCEEDS_AMOUNT").await;
    assert_eq!(app.event_count().await, before);
    json(send(&app, CUSTOMER_PAYMENTS, "fee-2", &body(600)).await, 201).await;
    assert_eq!(balance(&app, &register).await, 100, "the line less its fee");
}

#[sqlx::test(migrations = "../schema")]
async fn a_sales_payment_methods_post_one_customer_payment_to_the_treasury(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let (pos, customer, cash) = (point_of_sale(&app).await, customer(&app, "Bruno").await, payment_method(&app).await);
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let card = app.created_id("/api/v1/payment-methods", &json!({ "name": "Débito", "feePercentage": "3", "feeFixed": 100 })).await;
    let sale_body = |payments: Value| {
        json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer,
            "total": 10_000, "items": [{ "name": "Mercadería", "quantity": 1, "unitPrice": 10_000 }],
            "paymentMethods": payments })
    };

    // Where the money lands is required, and must be a location of the organization; nothing is written.
    let nowhere = sale_body(json!([{ "methodId": cash, "amount": 4_000 }]));
    let refused = error(sell(&app, &nowhere, true).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["paymentMethods[0].registerId"]);
    let unknown = sale_body(json!([{ "methodId": cash, "amount": 4_000, "safeId": uuid::Uuid::now_v7() }]));
    let refused = error(sell(&app, &unknown, true).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["paymentMethods[0].safeId"]);
    assert_eq!(items(&json(app.get("/api/v1/sales").await, 200).await).len(), 0, "no sale was recorded");
    assert_eq!(balance(&app, &register).await, 0);

    // Cash and a debit card into the register: the card's fee (3% of 1,000 plus 100) is kept.
    let paid = sale_body(json!([
        { "methodId": cash, "amount": 4_000, "registerId": register },
        { "methodId": card, "amount": 1_000, "registerId": register, "reference": "1234" }]));
    let sale = json(sell(&app, &paid, true).await, 201).await["data"].clone();
    let sale_id = sale["id"].as_str().expect("id").to_owned();
    assert_eq!((sale["balance"].as_i64(), sale["payments"][0]["registerId"].as_str()), (Some(5_000), Some(&*register)));
    assert_eq!(owed(&app, &sale_id).await, (5_000, "partially_paid".to_owned()));
    assert_eq!(balance(&app, &register).await, 4_000 + 870);
    let listed = json(app.get(&format!("{CUSTOMER_PAYMENTS}?customer_id={customer}")).await, 200).await;
    let payment = items(&listed)[0].clone();
    assert_eq!(items(&listed).len(), 1);
    assert_eq!(
        (payment["sale_id"].as_str(), payment["amount"].as_i64(), payment["fee_amount"].as_i64()),
        (Some(&*sale_id), Some(5_000), Some(130))
    );
    assert_eq!(payment["allocations"], json!([{ "sale_id": sale_id, "amount": 5_000 }]));
    assert_eq!(payment["unallocated_amount"], 0);

    // The rest is paid the usual way; voiding the sale's own payment makes it owe that part again.
    let rest = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 5_000, &register)],
        "allocations": [{ "sale_id": sale_id, "amount": 5_000 }] });
    let rest = json(send(&app, CUSTOMER_PAYMENTS, "rest", &rest).await, 201).await["data"]["id"].clone();
    assert_eq!(owed(&app, &sale_id).await, (0, "paid".to_owned()));
    let void_path = format!("{CUSTOMER_PAYMENTS}/{}/void", payment["id"].as_str().expect("id"));
    json(send(&app, &void_path, "void", &json!({})).await, 200).await;
    assert_eq!(owed(&app, &sale_id).await, (5_000, "partially_paid".to_owned()));
    assert_eq!(balance(&app, &register).await, 5_000);
    // The customer's account counts the sale's payment once, and its void.
    let account = account_at(&app, &format!("/api/v1/customers/{customer}/account"), 5_000).await;
    let kinds: Vec<(&str, i64)> = account["statement"]["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| (l["type"].as_str().expect("type"), l["amount"].as_i64().expect("amount")))
        .collect();
    assert_eq!(kinds, [("sale", 10_000), ("payment", -5_000), ("payment", -5_000), ("payment_void", 5_000)]);
    assert_nulls_documented(&account, "AccountData");
    assert_eq!(account["unallocated_credit"], 0);

    // A credit note takes no payments.
    let note = json!({ "voucherType": 8, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer,
        "associatedSaleId": sale_id, "total": 1_000, "items": [{ "name": "Devolución", "quantity": 1, "unitPrice": 1_000 }],
        "paymentMethods": [{ "methodId": cash, "amount": 1_000, "registerId": register }] });
    let refused = error(sell(&app, &note, true).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["paymentMethods"]);

    // A credit note for more than the sale owes (8,000 of 5,000) leaves 3,000 against it: the sale owes
    // nothing and takes no payment, and voiding the 5,000 paid later makes it owe 2,000, not 5,000.
    let note = json!({ "voucherType": 8, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer,
        "associatedSaleId": sale_id, "total": 8_000, "items": [{ "name": "Devolución", "quantity": 1, "unitPrice": 8_000 }] });
    json(sell(&app, &note, true).await, 201).await;
    assert_eq!(owed(&app, &sale_id).await, (0, "paid".to_owned()));
    let more = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 1, &register)],
        "allocations": [{ "sale_id": sale_id, "amount": 1 }] });
    error(send(&app, CUSTOMER_PAYMENTS, "more", &more).await, 422, "business_error").await;
    let dues = || async {
        let due: i64 = sqlx::query_scalar("select due from open_documents where id = $1::uuid")
            .bind(&sale_id)
            .fetch_one(&app.pool)
            .await
            .expect("write model");
        let read: i64 = sqlx::query_scalar("select amount_due from sales_view where id = $1::uuid")
            .bind(&sale_id)
            .fetch_one(&app.pool)
            .await
            .expect("read model");
        (due, read)
    };
    assert_eq!(dues().await, (-3_000, -3_000));
    // Where an earlier build held both at zero, the migration works them out again from the events.
    sqlx::query("update open_documents set due = 0 where id = $1::uuid").bind(&sale_id).execute(&app.pool).await.expect("old");
    sqlx::query("update sales_view set amount_due = 0 where id = $1::uuid").bind(&sale_id).execute(&app.pool).await.expect("old");
    let mut migration = app.pool.begin().await.expect("begin");
    sqlx::raw_sql(include_str!("../../../schema/0040_credit_beyond_what_a_sale_owes.sql"))
        .execute(&mut *migration)
        .await
        .expect("the migration runs");
    migration.commit().await.expect("commit");
    assert_eq!(dues().await, (-3_000, -3_000));
    let void_rest = format!("{CUSTOMER_PAYMENTS}/{}/void", rest.as_str().expect("id"));
    json(send(&app, &void_rest, "void-rest", &json!({})).await, 200).await;
    assert_eq!(owed(&app, &sale_id).await, (2_000, "partially_paid".to_owned()));
    let account = account_at(&app, &format!("/api/v1/customers/{customer}/account"), 2_000).await;
    let open: Vec<(&str, i64)> = account["open_documents"]
        .as_array()
        .expect("open documents")
        .iter()
        .map(|d| (d["sale_id"].as_str().expect("id"), d["amount_due"].as_i64().expect("due")))
        .collect();
    assert_eq!(open, [(&*sale_id, 2_000)]);
}

/// A contact's account once the accounts projection shows a balance of `balance` today.
async fn account_at(app: &TestApp, path: &str, balance: i64) -> Value {
    let what = format!("{path} to show a balance of {balance}");
    crate::helpers::eventually(std::time::Duration::from_secs(10), &what, || async {
        let account = json(app.get(path).await, 200).await["data"].clone();
        (account["balance"].as_i64() == Some(balance)).then_some(account)
    })
    .await
}

#[sqlx::test(migrations = "../schema")]
async fn contact_accounts_show_balance_open_documents_credit_and_a_running_statement(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let (pos, customer, cash) = (point_of_sale(&app).await, customer(&app, "Carla").await, payment_method(&app).await);
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja", Currency::Pes).await;
    let today = today();
    let yesterday = (events::catalogue::ar_date(time::OffsetDateTime::now_utc()) - time::Duration::days(1)).to_string();

    // Yesterday 2,000 on account; today two invoices, a payment of 4,000 to the first (voided later),
    // and a credit note of 1,000 correcting the second.
    let early = json!({ "customer_id": customer, "occurred_on": yesterday, "lines": [line(&cash, 2_000, &register)] });
    let early = json(send(&app, CUSTOMER_PAYMENTS, "early", &early).await, 201).await["data"]["id"].clone();
    let first = invoice(&app, &pos, &customer, 10_000).await;
    let second = invoice(&app, &pos, &customer, 3_000).await;
    let paid = json!({ "customer_id": customer, "occurred_on": today, "lines": [line(&cash, 4_000, &register)],
        "allocations": [{ "sale_id": first, "amount": 4_000 }] });
    let paid = json(send(&app, CUSTOMER_PAYMENTS, "paid", &paid).await, 201).await["data"]["id"].clone();
    let note = json!({ "voucherType": 8, "pointOfSaleId": pos, "invoiceDate": today, "customerId": customer,
        "associatedSaleId": second, "total": 1_000, "items": [{ "name": "Devolución", "quantity": 1, "unitPrice": 1_000 }] });
    json(sell(&app, &note, true).await, 201).await;
    let path = format!("/api/v1/customers/{customer}/account");
    let before_void = account_at(&app, &path, 10_000 + 3_000 - 2_000 - 4_000 - 1_000).await;
    assert_eq!(before_void["unallocated_credit"], 2_000, "the early payment is on account");
    let void = format!("{CUSTOMER_PAYMENTS}/{}/void", paid.as_str().expect("id"));
    json(send(&app, &void, "void", &json!({})).await, 200).await;

    let account = account_at(&app, &path, 10_000).await;
    assert_eq!((account["object"].as_str(), account["currency"].as_str()), (Some("customer_account"), Some("ARS")));
    let open_documents: Vec<(String, i64)> = account["open_documents"]
        .as_array()
        .expect("documents")
        .iter()
        .map(|d| (d["sale_id"].as_str().expect("id").to_owned(), d["amount_due"].as_i64().expect("due")))
        .collect();
    assert_eq!(open_documents, [(first.clone(), 10_000), (second.clone(), 2_000)]);
    assert_eq!(account["unallocated_credit"], 2_000, "what the documents owe less the balance");
    let statement = &account["statement"];
    assert_eq!((statement["opening_balance"].as_i64(), statement["closing_balance"].as_i64()), (Some(0), Some(10_000)));
    let lines: Vec<(String, i64, i64)> = statement["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| (l["type"].as_str().expect("type").to_owned(), l["amount"].as_i64().expect("amount"), l["balance"].as_i64().expect("balance")))
        .collect();
    let expected = [
        ("payment", -2_000, -2_000),
        ("sale", 10_000, 8_000),
        ("sale", 3_000, 11_000),
        ("payment", -4_000, 7_000),
        ("credit_note", -1_000, 6_000),
        ("payment_void", 4_000, 10_000),
    ];
    assert_eq!(lines, expected.map(|(k, a, b)| (k.to_owned(), a, b)));
    assert_eq!(statement["lines"][0]["document_id"], early);

    // As it stood yesterday: only the early payment; a statement from today opens with it.
    let then = json(app.get(&format!("{path}?as_of={yesterday}")).await, 200).await["data"].clone();
    assert_eq!((then["balance"].as_i64(), then["statement"]["lines"].as_array().map(Vec::len)), (Some(-2_000), Some(1)));
    let from_today = json(app.get(&format!("{path}?date_from={today}")).await, 200).await["data"]["statement"].clone();
    assert_eq!(
        (from_today["opening_balance"].as_i64(), from_today["lines"].as_array().map(Vec::len)),
        (Some(-2_000), Some(5))
    );

    // Bad dates name their parameter; an unknown customer or a supplier's id is 404.
    let tomorrow =
        (events::catalogue::ar_date(time::OffsetDateTime::now_utc()) + time::Duration::days(1)).to_string();
    for (query, field) in [
        (format!("as_of={tomorrow}"), "as_of"),
        (format!("date_from={today}&date_to={yesterday}"), "date_from"),
        ("date_to=2026-13-01".to_owned(), "date_to"),
        ("date_from=2020-01-01".to_owned(), "date_to"),
    ] {
        let refused = error(app.get(&format!("{path}?{query}")).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), [field], "{query}");
    }
    error(app.get(&format!("/api/v1/customers/{}/account", uuid::Uuid::now_v7())).await, 404, "invalid_request_error")
        .await;

    // A supplier: a purchase, half paid.
    let supplier = json(app.post_keyed("/api/v1/suppliers", &json!({ "name": "Molino SA" })).await, 201).await["data"]
        ["id"]
        .as_str()
        .expect("id")
        .to_owned();
    error(app.get(&format!("/api/v1/customers/{supplier}/account")).await, 404, "invalid_request_error").await;
    let item = crate::purchases::product(&app, "HARINA", 1_000).await;
    let bought = crate::purchases::purchase(
        &supplier,
        "0001-00000007",
        None,
        json!([{ "productId": item, "quantity": 2, "unitCost": 1_000 }]),
    );
    let bought = json(app.post_keyed("/api/v1/purchases", &bought).await, 201).await["data"].clone();
    let total = bought["totalArs"].as_i64().expect("total");
    let out = json!({ "supplier_id": supplier, "occurred_on": today, "lines": [line(&cash, 1_000, &register)],
        "allocations": [{ "purchase_id": bought["id"], "amount": 1_000 }] });
    json(send(&app, SUPPLIER_PAYMENTS, "out", &out).await, 201).await;
    let owed = account_at(&app, &format!("/api/v1/suppliers/{supplier}/account"), total - 1_000).await;
    assert_eq!(owed["open_documents"][0]["purchase_id"], bought["id"]);
    assert_eq!((owed["open_documents"][0]["amount_due"].as_i64(), owed["unallocated_credit"].as_i64()), (Some(total - 1_000), Some(0)));
}

/// A location's balance: (pesos, amount in its own currency).
async fn holding(app: &TestApp, kind: &str, id: &str) -> (i64, i64) {
    let path = format!("/api/v1/treasury/balances?balance_type={kind}&balance_id={id}");
    let balance = items(&json(app.get(&path).await, 200).await)[0].clone();
    (balance["functional_amount"].as_i64().expect("pesos"), balance["native_amount"].as_i64().expect("native"))
}

#[sqlx::test(migrations = "../schema")]
async fn dollar_lines_enter_at_the_rate_and_leave_at_carrying_value(pool: PgPool) {
    use commands::treasury::admin::{load_rates, parse_rates};
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let (pos, customer, cash) = (point_of_sale(&app).await, customer(&app, "Dana").await, payment_method(&app).await);
    let supplier = json(app.post_keyed("/api/v1/suppliers", &json!({ "name": "Importadora" })).await, 201).await
        ["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let bank = open(&app, app.org_id, LocationKind::BankAccount, "Banco USD", Currency::Dol).await;
    let dollars = |amount: i64, rate: Option<&str>| {
        let mut line = json!({ "payment_method_id": cash, "amount": amount, "balance_type": "bank_account",
            "balance_id": bank });
        if let Some(rate) = rate {
            line["exchange_rate"] = json!(rate);
        }
        line
    };
    // No rate loaded and none sent: refused, naming the line's rate.
    let early = json!({ "customer_id": customer, "occurred_on": today(), "lines": [dollars(10_000, None)] });
    let refused = error(send(&app, CUSTOMER_PAYMENTS, "usd-0", &early).await, 422, "business_error").await;
    assert_eq!((refused["error"]["code"].as_str(), detail_fields(&refused)), (Some("EXCHANGE_RATE_NOT_FOUND"), vec!["lines[0].exchange_rate".to_owned()]));
    load_rates(&app.pool, &parse_rates(&format!("{},DOL,1000", today())).expect("rates")).await.expect("loaded");

    // 100.00 dollars at the central bank's 1,000 settle a sale of 100,000.00 pesos.
    let sale = invoice(&app, &pos, &customer, 10_000_000).await;
    let first = json!({ "customer_id": customer, "occurred_on": today(), "lines": [dollars(10_000, None)],
        "allocations": [{ "sale_id": sale, "amount": 10_000_000 }] });
    let first = json(send(&app, CUSTOMER_PAYMENTS, "usd-1", &first).await, 201).await["data"].clone();
    let line = &first["lines"][0];
    assert_eq!(
        (first["amount"].as_i64(), line["amount"].as_i64(), line["functional_amount"].as_i64()),
        (Some(10_000_000), Some(10_000), Some(10_000_000))
    );
    assert_eq!((line["exchange_rate"].as_str(), line["exchange_rate_source"].as_str()), (Some("1000"), Some("central_bank")));
    assert_eq!(owed(&app, &sale).await, (0, "paid".to_owned()));
    assert_eq!(holding(&app, "bank_account", &bank).await, (10_000_000, 10_000));
    // 50.00 more at a rate sent of 1,100: the bank now carries 150.00 dollars at 155,000.00 pesos.
    let second = json!({ "customer_id": customer, "occurred_on": today(), "lines": [dollars(5_000, Some("1100"))] });
    json(send(&app, CUSTOMER_PAYMENTS, "usd-2", &second).await, 201).await;
    assert_eq!(holding(&app, "bank_account", &bank).await, (15_500_000, 15_000));

    // 30.00 dollars paid out are worth 30,000.00 pesos at the rate but carried at 31,000.00: the 1,000.00
    // difference needs the exchange-difference account (refused, nothing written, until it is set).
    let out = json!({ "supplier_id": supplier, "occurred_on": today(), "lines": [dollars(3_000, None)] });
    let refused = error(send(&app, SUPPLIER_PAYMENTS, "usd-3", &out).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "EXCHANGE_DIFFERENCE_ACCOUNT_MISSING");
    assert_eq!(holding(&app, "bank_account", &bank).await, (15_500_000, 15_000));
    let difference = create_ledger_account(&app.pool, app.org_id, "4.9", "Diferencia de cambio", Currency::Pes).await;
    let change = commands::organization::SettingsChange {
        exchange_difference_account: Some(difference.expect("account").to_string()),
        ..Default::default()
    };
    commands::organization::update_organization(&app.pool, app.org_id, change).await.expect("set");
    let paid = json(send(&app, SUPPLIER_PAYMENTS, "usd-4", &out).await, 201).await["data"].clone();
    assert_eq!((paid["amount"].as_i64(), paid["lines"][0]["functional_amount"].as_i64()), (Some(3_000_000), Some(3_000_000)));
    assert_eq!(holding(&app, "bank_account", &bank).await, (15_500_000 - 3_100_000, 12_000));
    let account = account_at(&app, &format!("/api/v1/suppliers/{supplier}/account"), -3_000_000).await;
    assert_eq!(account["unallocated_credit"], 3_000_000, "paid on account, in pesos at the rate");
    let stored: Value = sqlx::query_scalar(
        "select data from events where stream_type = 'supplier_payment' and event_type = 'SupplierPaymentRecorded'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("event");
    let entry: Vec<i64> = stored["entry"]["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| l["functional"].as_i64().expect("amount"))
        .collect();
    assert_eq!(entry, [-3_100_000, 100_000, 3_000_000], "location, exchange difference, payables");

    // The void puts the dollars back at the value they left at.
    let void = format!("{SUPPLIER_PAYMENTS}/{}/void", paid["id"].as_str().expect("id"));
    json(send(&app, &void, "usd-5", &json!({})).await, 200).await;
    assert_eq!(holding(&app, "bank_account", &bank).await, (15_500_000, 15_000));
}

#[sqlx::test(migrations = "../schema")]
async fn twenty_payments_racing_for_a_sales_last_thousand_cents_settle_it_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let (pos, customer, cash) = (point_of_sale(&app).await, customer(&app, "Eva").await, payment_method(&app).await);
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja", Currency::Pes).await;
    let sale = invoice(&app, &pos, &customer, 5_000).await;
    let most = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 4_000, &register)],
        "allocations": [{ "sale_id": sale, "amount": 4_000 }] });
    json(send(&app, CUSTOMER_PAYMENTS, "most", &most).await, 201).await;
    assert_eq!(owed(&app, &sale).await, (1_000, "partially_paid".to_owned()));
    let events = app.event_count().await;

    let mut racing = Vec::new();
    for n in 0..20 {
        let body = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 1_000, &register)],
            "allocations": [{ "sale_id": sale, "amount": 1_000 }] });
        let app = &app;
        racing.push(async move {
            let answer = send(app, CUSTOMER_PAYMENTS, &format!("last-{n}"), &body).await;
            let status = answer.status().as_u16();
            let body: Value = answer.json().await.expect("json");
            (status, body["error"]["code"].as_str().map(str::to_owned))
        });
    }
    let answers = futures::future::join_all(racing).await;
    let settled = answers.iter().filter(|(status, _)| *status == 201).count();
    let refused: Vec<_> = answers.iter().filter(|(status, _)| *status == 422).collect();
    assert_eq!((settled, refused.len()), (1, 19), "{answers:?}");
    assert!(refused.iter().all(|(_, code)| code.as_deref() == Some("ALLOCATION_EXCEEDS_BALANCE")), "{answers:?}");
    assert_eq!(owed(&app, &sale).await, (0, "paid".to_owned()), "allocated exactly once");
    assert_eq!(app.event_count().await, events + 1, "the refused payments wrote nothing");
    assert_eq!(balance(&app, &register).await, 5_000, "only the one payment reached the register");
}

/// A void takes its locks as recording does (documents in id order): voids of payments allocated to
/// two sales in one order, racing payments allocated to them in the other, all go through. Before, a
/// void updated the sales in its allocations' order and such a pair could deadlock (a 500).
#[sqlx::test(migrations = "../schema")]
async fn voids_and_payments_settling_the_same_sales_queue_instead_of_deadlocking(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let (pos, customer, cash) = (point_of_sale(&app).await, customer(&app, "Eva").await, payment_method(&app).await);
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja", Currency::Pes).await;
    let (first, second) = (invoice(&app, &pos, &customer, 100_000).await, invoice(&app, &pos, &customer, 100_000).await);
    let paying = |allocations: [&str; 2]| {
        json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 200, &register)],
            "allocations": [{ "sale_id": allocations[0], "amount": 100 }, { "sale_id": allocations[1], "amount": 100 }] })
    };
    let mut voided = Vec::new();
    for n in 0..12 {
        let body = paying([&second, &first]);
        let paid = json(send(&app, CUSTOMER_PAYMENTS, &format!("before-{n}"), &body).await, 201).await;
        voided.push(format!("{CUSTOMER_PAYMENTS}/{}/void", paid["data"]["id"].as_str().expect("id")));
    }
    let voids = voided.iter().enumerate().map(|(n, path)| {
        let app = &app;
        async move { send(app, path, &format!("void-{n}"), &json!({})).await.status().as_u16() }
    });
    let payments = (0..12).map(|n| {
        let (app, body) = (&app, paying([&first, &second]));
        async move { send(app, CUSTOMER_PAYMENTS, &format!("after-{n}"), &body).await.status().as_u16() }
    });
    let (voids, payments) = tokio::join!(futures::future::join_all(voids), futures::future::join_all(payments));
    assert!(voids.iter().all(|status| *status == 200), "{voids:?}");
    assert!(payments.iter().all(|status| *status == 201), "{payments:?}");
    assert_eq!(owed(&app, &first).await.0, 100_000 - 12 * 100);
    assert_eq!(owed(&app, &second).await.0, 100_000 - 12 * 100);
}

/// A statement of more lines than it shows still closes at the end of `date_to`, not at its last
/// line shown.
#[sqlx::test(migrations = "../schema")]
async fn a_truncated_statement_closes_with_the_balance_at_its_end(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let carla = customer(&app, "Carla").await;
    let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc());
    // 1,001 facts of 1 to 1,001 cents (written as the accounts projection writes them).
    sqlx::query(
        "insert into contact_ledger (org_id, side, contact_id, entry_id, kind, document_id, occurred_on, position, amount)
         select $1, 'customer', $2, gen_random_uuid(), 'sale', gen_random_uuid(), $3, n, n from generate_series(1, 1001) n",
    )
    .bind(app.org_id)
    .bind(carla.parse::<uuid::Uuid>().expect("id"))
    .bind(today)
    .execute(&app.pool)
    .await
    .expect("facts");
    let account = json(app.get(&format!("/api/v1/customers/{carla}/account")).await, 200).await["data"].clone();
    let statement = &account["statement"];
    assert_eq!((statement["has_more"].as_bool(), statement["lines"].as_array().map(Vec::len)), (Some(true), Some(1_000)));
    assert_eq!(statement["lines"][999]["balance"], 500_500);
    assert_eq!(statement["closing_balance"], 501_501, "every fact up to date_to");
    assert_eq!(account["balance"], 501_501);
}

/// A payment's date is RFC 3339's full date, four digits of year and no sign. time's `[year]` also
/// read `-9999-01-01`, which Postgres cannot store: the payment was recorded, and every read model
/// folding it (payments, treasury, accounts) then failed on it for good. Refused, nothing written.
#[sqlx::test(migrations = "../schema")]
async fn a_payment_dated_with_a_signed_year_is_refused_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (cash, customer) = (payment_method(&app).await, customer(&app, "Ana Ñandú").await);
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let before = app.event_count().await;
    for (n, date) in ["-9999-01-01", "+2026-01-02"].into_iter().enumerate() {
        let body = json!({ "customer_id": customer, "occurred_on": date, "lines": [line(&cash, 1_000, &register)] });
        let sent = send(&app, CUSTOMER_PAYMENTS, &format!("signed-{n}"), &body).await;
        let refused = error(sent, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), ["occurred_on"], "{date}");
    }
    assert_eq!(app.event_count().await, before, "nothing was written");
    // The read models still fold what comes next.
    let body = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 1_000, &register)] });
    let paid = json(send(&app, CUSTOMER_PAYMENTS, "dated", &body).await, 201).await["data"]["id"].clone();
    assert_eq!(ids(&items(&json(app.get(CUSTOMER_PAYMENTS).await, 200).await)), [paid.as_str().expect("id")]);
    assert_eq!(balance(&app, &register).await, 1_000);
}

/// A date in a query is read as in a body: `-9999-01-01` as an account's `date_to` or `as_of` panicked
/// computing the statement's default start 30 days earlier (the connection dropped, no envelope), and
/// as a list's `date_from` reached Postgres, which holds no such date (500). Each is 400 naming it.
#[sqlx::test(migrations = "../schema")]
async fn a_signed_year_in_a_date_parameter_is_refused_naming_it(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let customer = customer(&app, "Carla").await;
    let account = format!("/api/v1/customers/{customer}/account");
    for (path, parameter) in [
        (format!("{account}?date_to=-9999-01-01"), "date_to"),
        (format!("{account}?as_of=-9999-01-15"), "as_of"),
        (format!("{account}?date_from=-9999-01-01&date_to=2026-01-01"), "date_from"),
        (format!("{CUSTOMER_PAYMENTS}?date_from=-9999-01-01"), "date_from"),
        (format!("{SUPPLIER_PAYMENTS}?date_to=-5000-06-30"), "date_to"),
    ] {
        let refused = error(app.get(&path).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), [parameter], "{path}");
    }
    let read = json(app.get(&format!("{account}?date_from=2026-01-01&date_to=2026-01-31")).await, 200).await;
    assert_eq!(read["data"]["statement"]["lines"], json!([]));
}

/// A void's body is an empty object, as documented (`additionalProperties: false`): a field in it (an
/// `amount`, as if a void could be partial) was ignored and the whole payment voided. It is refused,
/// and the payment stays posted until a void with an empty body.
#[sqlx::test(migrations = "../schema")]
async fn a_void_with_a_field_in_its_body_is_refused_and_voids_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (cash, customer) = (payment_method(&app).await, customer(&app, "Ana Ñandú").await);
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let body = json!({ "customer_id": customer, "occurred_on": today(), "lines": [line(&cash, 1_000, &register)] });
    let paid = json(send(&app, CUSTOMER_PAYMENTS, "pay", &body).await, 201).await["data"]["id"].clone();
    let paid = paid.as_str().expect("id");
    let void = format!("{CUSTOMER_PAYMENTS}/{paid}/void");
    let before = app.event_count().await;
    let partial = send(&app, &void, "void-1", &json!({ "amount": 500 })).await;
    let refused = error(partial, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["amount"]);
    error(send(&app, &void, "void-2", &json!([])).await, 400, "invalid_request_error").await;
    assert_eq!(app.event_count().await, before, "nothing was written");
    assert_eq!(balance(&app, &register).await, 1_000);
    let detail = json(app.get(&format!("{CUSTOMER_PAYMENTS}/{paid}")).await, 200).await;
    assert_eq!(detail["data"]["status"], "posted");
    let voided = json(send(&app, &void, "void-3", &json!({})).await, 200).await;
    assert_eq!(voided["data"]["status"], "voided");
    assert_eq!(balance(&app, &register).await, 0);
}
