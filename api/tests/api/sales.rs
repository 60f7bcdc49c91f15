//! Sales: worked tax examples for A, B, C and 90 vouchers, the dated contract's rules, the historical
//! contract, stock, and invoicing with the tax authority (the test's own simulator) when it approves,
//! rejects, is unavailable or loses its answer; the PDF and its signed download.

use crate::helpers::{assert_nulls_documented, TestApp, WAREHOUSES, detail_fields, error, eventually, items, json, seeded, today};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

const SALES: &str = "/api/v1/sales";
const ISSUER: &str = "20267565393";
pub const DATED: &str = "2026-08-20";

pub async fn fiscal_profile(app: &TestApp, category: &str) {
    let change = commands::organization::SettingsChange {
        tax_id: Some(ISSUER.into()),
        tax_category: Some(category.into()),
        legal_name: Some("Almacén de Prueba SRL".into()),
        ..Default::default()
    };
    app.fiscal_identity(change).await;
}

pub async fn point_of_sale(app: &TestApp) -> String {
    seeded(app, "/api/v1/points-of-sale", "Punto de venta 1").await["id"].as_str().expect("id").to_owned()
}

async fn product(app: &TestApp, sku: &str, price: i64, stock: Option<(&str, i64)>) -> String {
    let mut body = json!({ "name": format!("Artículo {sku}"), "sku": sku, "price": price });
    if let Some((warehouse, quantity)) = stock {
        body["warehouseStocks"] = json!([{ "warehouseId": warehouse, "quantity": quantity }]);
    }
    json(app.post_keyed("/api/v1/products", &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

pub async fn registered_customer(app: &TestApp) -> String {
    let body = json!({ "name": "Distribuidora Ñandú SA", "taxId": "20055361682", "taxIdType": "CUIL/CUIT",
        "taxCategory": "Responsable Inscripto" });
    json(app.post("/api/v1/customers", &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

/// POSTs a sale with a fresh key, under the dated contract when `dated`.
pub async fn sell(app: &TestApp, body: &Value, dated: bool) -> reqwest::Response {
    sell_with_key(app, body, dated, &Uuid::now_v7().to_string()).await
}

async fn sell_with_key(app: &TestApp, body: &Value, dated: bool, key: &str) -> reqwest::Response {
    let mut request = app
        .client
        .post(format!("{}{SALES}", app.base))
        .bearer_auth(&app.api_key)
        .header("Idempotency-Key", key)
        .json(body);
    if dated {
        request = request.header("Service-Version", DATED);
    }
    request.send().await.expect("sent")
}

pub async fn script(app: &TestApp, outcomes: Value) {
    let body =
        json!({ "issuer_tax_id": ISSUER.parse::<i64>().expect("cuit"), "point_of_sale": 1, "outcomes": outcomes });
    let response =
        app.client.post(format!("{}/_simulator/outcomes", app.fiscal_url)).json(&body).send().await.expect("sent");
    assert!(response.status().is_success(), "{}", response.text().await.unwrap_or_default());
}

async fn approved(app: &TestApp, voucher_type: i32) -> Vec<Value> {
    let url = format!(
        "{}/_simulator/vouchers?issuer_tax_id={ISSUER}&point_of_sale=1&voucher_type={voucher_type}",
        app.fiscal_url
    );
    let body: Value = app.client.get(url).send().await.expect("sent").json().await.expect("json");
    body.as_array().cloned().or_else(|| body["vouchers"].as_array().cloned()).unwrap_or_default()
}

async fn sale(app: &TestApp, id: &str) -> Value {
    json(app.get(&format!("{SALES}/{id}")).await, 200).await["data"].clone()
}

fn amounts(data: &Value) -> (i64, i64, i64) {
    (
        data["subtotal"].as_i64().expect("subtotal"),
        data["taxAmount"].as_i64().expect("tax"),
        data["total"].as_i64().expect("total"),
    )
}

#[sqlx::test(migrations = "../schema")]
async fn worked_examples_price_a_b_c_and_90_vouchers_exactly(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let customer = registered_customer(&app).await;

    // A: net prices. 2 × 100.00 less 10% = 180.00 + 21% (37.80); 1 × 50.00 + 10.5% (5.25).
    let a = json!({ "voucherType": 1, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer, "total": 27305,
        "items": [{ "name": "Servicio de armado", "quantity": 2, "unitPrice": 10000, "discountPercentage": 10 },
                  { "name": "Flete", "quantity": 1, "unitPrice": 5000, "taxRateId": 4 }] });
    let a = json(sell(&app, &a, true).await, 201).await["data"].clone();
    assert_eq!(amounts(&a), (23000, 4305, 27305));
    assert_eq!(
        a["vatBreakdown"],
        json!([{ "code": 4, "base": 5000, "amount": 525 }, { "code": 5, "base": 18000, "amount": 3780 }])
    );
    assert_eq!((a["fiscal"]["status"].as_str(), a["invoiceNumber"].as_i64()), (Some("issued"), Some(1)));
    assert_eq!(a["formattedInvoiceNumber"], "A 00001-00000001");
    assert_eq!(a["fiscal"]["cae"].as_str().map(str::len), Some(14));

    // B: prices with VAT. 3 × 12.10 = 36.30, less 10% globally = 32.67 = 27.00 + 5.67.
    let b = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 3267,
        "discountType": "percentage", "discountValue": 10,
        "items": [{ "name": "Yerba 1 kg", "quantity": 3, "unitPrice": 1210 }] });
    let b = json(sell(&app, &b, true).await, 201).await["data"].clone();
    assert_eq!(amounts(&b), (2700, 567, 3267));
    assert_eq!(b["discountAmount"], 363);
    assert_eq!(b["customer"]["name"], "Consumidor Final", "the default customer");
    assert_eq!(b["balance"], 3267, "no payments: the whole total is owed");

    // 90: a quote-type voucher, VAT included, numbered by the service. 121.00 less 21.00 fixed = 100.00.
    let quote = json!({ "voucherType": 90, "pointOfSaleId": pos, "invoiceDate": today(), "total": 10000,
        "discountType": "fixed", "discountValue": 2100, "items": [{ "name": "Presupuesto", "quantity": 1, "unitPrice": 12100 }] });
    let quote = json(sell(&app, &quote, true).await, 201).await["data"].clone();
    assert_eq!(amounts(&quote), (8264, 1736, 10000));
    assert_eq!(
        (quote["fiscal"]["status"].as_str(), quote["invoiceNumber"].as_i64(), quote["letter"].as_str()),
        (Some("internal"), Some(1), None)
    );
    assert_eq!(approved(&app, 90).await.len(), 0, "never sent to the authority");

    // C: an issuer under the simplified regime issues C vouchers: no VAT at all.
    fiscal_profile(&app, "Monotributista").await;
    let register = crate::treasury::open(
        &app,
        app.org_id,
        events::catalogue::LocationKind::CashRegister,
        "Caja",
        events::catalogue::Currency::Pes,
    )
    .await;
    let c = json!({ "voucherType": 11, "pointOfSaleId": pos, "invoiceDate": today(), "total": 2000,
        "paymentMethods": [{ "methodId": payment_method(&app).await, "amount": 500, "registerId": register }],
        "items": [{ "name": "Clase", "quantity": 2, "unitPrice": 1000 }] });
    let c = json(sell(&app, &c, true).await, 201).await["data"].clone();
    assert_eq!(amounts(&c), (2000, 0, 2000));
    assert_eq!(c["vatBreakdown"], json!([]));
    assert_eq!(c["balance"], 1500, "the payment reduces what is owed");
    let refused = error(
        sell(
            &app,
            &json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 121,
        "items": [{ "name": "x", "quantity": 1, "unitPrice": 121 }] }),
            true,
        )
        .await,
        422,
        "business_error",
    )
    .await;
    assert_eq!(refused["error"]["details"][0]["code"], "VOUCHER_LETTER");
    assert_eq!(approved(&app, 1).await.len(), 1);
    assert_eq!(approved(&app, 6).await.len(), 1);
    assert_eq!(approved(&app, 11).await.len(), 1);
}

#[sqlx::test(migrations = "../schema")]
async fn many_lines_of_one_rate_are_issued_with_vat_the_authority_accepts(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    // Five lines of 1.00 with VAT: the rate's 5.00 splits once into 4.13 + 0.87, within the authority's
    // cent of 4.13 × 21% (rounding each line, 4.15 + 0.85 is 2.15 cents off: rejected with 10051).
    let item = json!({ "name": "Caramelo", "quantity": 1, "unitPrice": 100 });
    let body = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 500,
        "items": vec![item; 5] });
    let b = json(sell(&app, &body, true).await, 201).await["data"].clone();
    assert_eq!(amounts(&b), (413, 87, 500));
    assert_eq!(b["vatBreakdown"], json!([{ "code": 5, "base": 413, "amount": 87 }]));
    assert_eq!(b["fiscal"]["status"], "issued", "{b}");
    assert_eq!(approved(&app, 6).await.len(), 1);
}

#[sqlx::test(migrations = "../schema")]
async fn a_c_voucher_with_an_exempt_amount_is_issued_with_it_in_its_net(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Monotributista").await;
    let pos = point_of_sale(&app).await;
    // The historical contract takes an exempt amount on any voucher; class C tells the authority none
    // (it refuses a C voucher with one, 10044): the amount goes in the net.
    let body = json!({ "voucherType": 11, "pointOfSaleId": pos, "invoiceDate": today(), "exemptAmount": 100,
        "items": [{ "name": "Clase", "quantity": 1, "unitPrice": 1000 }] });
    let c = json(sell(&app, &body, false).await, 201).await["data"].clone();
    assert_eq!(amounts(&c), (1100, 0, 1100));
    assert_eq!(c["fiscal"]["status"], "issued", "{c}");
    assert_eq!(approved(&app, 11).await.len(), 1);
}

pub async fn payment_method(app: &TestApp) -> String {
    seeded(app, "/api/v1/payment-methods", "Efectivo").await["id"].as_str().expect("id").to_owned()
}

#[sqlx::test(migrations = "../schema")]
async fn the_dated_contract_holds_its_six_rules(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let item = product(&app, "VENTA-1", 12100, Some((&main, 10))).await;
    let body = |total: i64| {
        json!({ "voucher_type": 6, "point_of_sale_id": pos, "invoice_date": today(), "total": total,
        "items": [{ "product_id": item, "quantity": 2, "unit_price": 12100 }] })
    };

    // Rules 1 and 3: B prices include VAT; the product is resolved and its stock moves.
    let first = json(sell(&app, &body(24200), true).await, 201).await["data"].clone();
    assert_eq!(amounts(&first), (20000, 4200, 24200));
    assert_eq!(first["items"][0]["product"]["name"], "Artículo VENTA-1");
    assert_eq!(first["invoiceNumber"], 1);
    let stock = json(app.get(&format!("/api/v1/inventory?product_id={item}")).await, 200).await;
    assert_eq!(items(&stock)[0]["on_hand"], "8");

    // Rule 5: a total other than the canonical one creates nothing durable, not even a number.
    let events = app.event_count().await;
    let mismatch = error(sell(&app, &body(24201), true).await, 422, "business_error").await;
    assert_eq!(mismatch["error"]["code"], "TOTAL_MISMATCH");
    assert_eq!(mismatch["error"]["details"][0]["metadata"]["expected_total"], 24200);
    assert_eq!(app.event_count().await, events, "no sale, no event");
    assert_eq!(
        items(&json(app.get(&format!("/api/v1/inventory?product_id={item}")).await, 200).await)[0]["on_hand"],
        "8"
    );
    let next = json(sell(&app, &body(24200), true).await, 201).await["data"].clone();
    assert_eq!(next["invoiceNumber"], 2, "the mismatch consumed no number");
    assert_eq!(approved(&app, 6).await.len(), 2);

    // Rules 2 and 4: total required; computed amounts and unknown fields refused, in either spelling.
    let mut missing = body(0);
    missing.as_object_mut().map(|o| o.remove("total"));
    assert_eq!(detail_fields(&error(sell(&app, &missing, true).await, 400, "invalid_request_error").await), ["total"]);
    let mut forbidden = body(24200);
    forbidden["tax_amount"] = json!(4200);
    forbidden["subtotal"] = json!(20000);
    forbidden["roundingAdjustment"] = json!(0);
    forbidden["color"] = json!("azul");
    let refused = error(sell(&app, &forbidden, true).await, 400, "invalid_request_error").await;
    let mut fields = detail_fields(&refused);
    fields.sort();
    assert_eq!(fields, ["color", "roundingAdjustment", "subtotal", "taxAmount"]);

    // Rule 6: the contract is part of the key's claim.
    let key = Uuid::now_v7().to_string();
    let third = json(sell_with_key(&app, &body(24200), true, &key).await, 201).await["data"].clone();
    let replay = json(sell_with_key(&app, &body(24200), true, &key).await, 201).await["data"].clone();
    assert_eq!((replay["id"].clone(), replay["idempotentReplay"].clone()), (third["id"].clone(), json!(true)));
    let crossed = error(sell_with_key(&app, &body(24200), false, &key).await, 409, "idempotency_error").await;
    assert_eq!(crossed["error"]["code"], "IDEMPOTENCY_CONFLICT");

    // Without the header: the historical contract, client totals ignored, a Deprecation header.
    let mut historical = body(1);
    historical["subtotal"] = json!(5);
    let response = sell(&app, &historical, false).await;
    assert_eq!(response.headers().get("deprecation").and_then(|v| v.to_str().ok()), Some("true"));
    let old = json(response, 201).await["data"].clone();
    assert_eq!(amounts(&old), (20000, 4200, 24200), "canonical amounts are stored, not the client's");
    // Rule 6 the other way: a historical sale's key, sent again under the dated contract with the same
    // historical body the dated parser refuses, is the key's conflict, not the body's 400.
    let key = Uuid::now_v7().to_string();
    json(sell_with_key(&app, &historical, false, &key).await, 201).await;
    let crossed = error(sell_with_key(&app, &historical, true, &key).await, 409, "idempotency_error").await;
    assert_eq!(crossed["error"]["code"], "IDEMPOTENCY_CONFLICT");
    // A fresh key with the same refused body is still the body's 400.
    let fresh = Uuid::now_v7().to_string();
    error(sell_with_key(&app, &historical, true, &fresh).await, 400, "invalid_request_error").await;
    assert!(sell(&app, &body(24200), true).await.headers().get("deprecation").is_none());
}

/// Makes the test's organization a registered issuer with a point of sale, and returns the body of a
/// one-line B invoice there (12,100 cents) for the authority to number.
async fn mate_sale(app: &TestApp) -> Value {
    fiscal_profile(app, "Responsable Inscripto").await;
    let pos = point_of_sale(app).await;
    json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 12100,
        "items": [{ "name": "Mate", "quantity": 1, "unitPrice": 12100 }] })
}

#[sqlx::test(migrations = "../schema")]
async fn the_authority_is_asked_once_even_when_its_answer_is_lost(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = mate_sale(&app).await;

    // Lost reply: the sale is created deferred; the worker consults the number and finds it issued.
    script(&app, json!([{ "outcome": "lost_reply" }])).await;
    let lost = json(sell(&app, &body, true).await, 201).await["data"].clone();
    assert_eq!(lost["fiscal"]["status"], "deferred");
    let id = lost["id"].as_str().expect("id").to_owned();
    let issued = eventually(Duration::from_secs(20), "the deferred sale issued", || async {
        let current = sale(&app, &id).await;
        (current["fiscal"]["status"] == "issued").then_some(current)
    })
    .await;
    assert_eq!(issued["invoiceNumber"], 1);
    assert_eq!(approved(&app, 6).await.len(), 1, "exactly one voucher at the authority");

    // Final rejection: nothing stored.
    let events = app.event_count().await;
    script(&app, json!([{ "outcome": "reject", "code": 10015, "message": "Documento del receptor inválido" }])).await;
    let refused = error(sell(&app, &body, true).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "PRECONDITION_FAILED");
    assert_eq!(refused["error"]["details"][0]["metadata"]["authority_code"], 10015);
    assert_eq!(app.event_count().await, events, "a rejected sale leaves nothing");

    // Unavailable: created deferred, then issued by the worker (away for its first retry too, so a slow
    // answer cannot meet the retry that already issued it).
    script(&app, json!([{ "outcome": "unavailable" }, { "outcome": "unavailable" }])).await;
    let deferred = json(sell(&app, &body, true).await, 201).await["data"].clone();
    assert_eq!(deferred["fiscal"]["status"], "deferred");
    let id = deferred["id"].as_str().expect("id").to_owned();
    let issued = eventually(Duration::from_secs(20), "the unavailable sale issued", || async {
        let current = sale(&app, &id).await;
        (current["fiscal"]["status"] == "issued").then_some(current)
    })
    .await;
    assert_eq!(issued["invoiceNumber"], 2);
    assert_eq!(approved(&app, 6).await.len(), 2);

    // Invoicing an imported sale: 202 while the authority is away, then issued; again is 409.
    let mut imported = body.clone();
    imported["invoice"] = json!(false);
    imported["integrationSource"] = json!("tienda");
    imported["integrationId"] = json!("pedido-77");
    let imported = json(sell(&app, &imported, true).await, 201).await["data"].clone();
    assert_eq!(
        (imported["fiscal"]["status"].as_str(), imported["invoiceNumber"].as_i64()),
        (Some("not_invoiced"), None)
    );
    let found = json(app.get("/api/v1/sales?integration_source=tienda&query=pedido-77").await, 200).await;
    let id = items(&found)[0]["id"].as_str().expect("id").to_owned();
    script(&app, json!([{ "outcome": "unavailable" }, { "outcome": "unavailable" }])).await;
    let path = format!("{SALES}/{id}/invoice");
    let response = app.request(Method::POST, &path, Some(&app.api_key), None).await;
    assert_eq!(json(response, 202).await["data"]["fiscal"]["status"], "deferred");
    eventually(Duration::from_secs(20), "the imported sale issued", || async {
        (sale(&app, &id).await["fiscal"]["status"] == "issued").then_some(())
    })
    .await;
    let again = error(app.request(Method::POST, &path, Some(&app.api_key), None).await, 409, "business_error").await;
    assert_eq!(again["error"]["code"], "ALREADY_INVOICED");
    assert_eq!(approved(&app, 6).await.len(), 3);
}

/// Until a statement in the test's database waits for a lock (the test's other transaction holds the
/// only ones taken there).
async fn waits_for_a_lock(app: &TestApp, what: &str) {
    crate::helpers::waiting_on_locks(app, 1, what).await;
}

#[sqlx::test(migrations = "../schema")]
async fn an_invoice_call_that_waited_for_another_authorization_of_its_sale_asks_the_authority_nothing(pool: PgPool) {
    use commands::sales::invoicing::{Outcome, fiscal_change, load_sale};
    let app = TestApp::spawn(pool).await;
    let body = mate_sale(&app).await;
    json(sell(&app, &body, true).await, 201).await;
    assert_eq!(approved(&app, 6).await.len(), 1);
    let mut imported = body.clone();
    imported["invoice"] = json!(false);
    let id = json(sell(&app, &imported, true).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    let sale_id: Uuid = id.parse().expect("uuid");

    // Another transaction holds the series, as an authorization of the same sale elsewhere (the retry
    // worker, another worker's invoice call) does while it waits for the authority...
    let mut other = app.pool.begin().await.expect("begin");
    sqlx::query("select last from document_numbers where org_id = $1 for update")
        .bind(app.org_id)
        .fetch_all(&mut *other)
        .await
        .expect("series locked");
    let call = {
        let (client, url, key) = (app.client.clone(), format!("{}{SALES}/{id}/invoice", app.base), app.api_key.clone());
        tokio::spawn(async move { client.post(url).bearer_auth(key).send().await.expect("sent") })
    };
    waits_for_a_lock(&app, "the invoice call waits for the series").await;
    // ...and records the sale issued before it lets go.
    let (sale, version) = load_sale(&mut other, app.org_id, sale_id).await.expect("loaded").expect("sale");
    let issued = Outcome::Issued(events::catalogue::SaleAuthorization {
        number: 2,
        cae: "76123456789012".into(),
        cae_due: time::OffsetDateTime::now_utc().date(),
        observations: Vec::new(),
    });
    let change = fiscal_change(app.org_id, sale_id, version, &sale, &issued, &events::Metadata::system("test"))
        .expect("change");
    events::store::append_many(&mut other, &[change]).await.expect("recorded");
    other.commit().await.expect("commit");

    let refused = error(call.await.expect("answered"), 409, "business_error").await;
    assert_eq!(refused["error"]["code"], "ALREADY_INVOICED");
    assert_eq!(approved(&app, 6).await.len(), 1, "the authority was asked for no second voucher");
}

#[sqlx::test(migrations = "../schema")]
async fn a_sale_billing_an_order_that_changes_meanwhile_asks_the_authority_once(pool: PgPool) {
    use events::EventPayload;
    use events::catalogue::{OrderEvent, OrderState};
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let mate = product(&app, "MATE", 12100, Some((&main, 10))).await;
    let customer = crate::helpers::customer(&app, "Ana Pérez").await;
    let order = json!({ "customer_id": customer, "assigned_warehouse_id": main,
        "lines": [{ "product_id": mate, "quantity": 4, "unit_price": 1000 }] });
    let order = json(app.post_keyed("/api/v1/orders", &order).await, 201).await["data"].clone();
    let (order_id, line) = (order["id"].as_str().expect("id").to_owned(), order["lines"][0]["id"].clone());
    let order_uuid: Uuid = order_id.parse().expect("uuid");

    // Another transaction changes the order (its notes) and has not committed yet...
    let mut other = app.pool.begin().await.expect("begin");
    let (data, version): (Value, i32) = sqlx::query_as(
        "select data, version from events where org_id = $1 and stream_id = $2 order by version desc limit 1",
    )
    .bind(app.org_id)
    .bind(order_uuid)
    .fetch_one(&mut *other)
    .await
    .expect("order");
    let mut state: OrderState = serde_json::from_value(data).expect("state");
    state.notes = Some("Entregar por la tarde".into());
    let change = events::store::AppendRequest {
        stream: events::store::StreamRef {
            org_id: app.org_id,
            stream_type: OrderEvent::STREAM_TYPE,
            stream_id: order_uuid,
            expected_version: version,
        },
        events: vec![OrderEvent::OrderUpdated(Box::new(state)).to_new_event().expect("event")],
        metadata: events::Metadata::system("test"),
    };
    events::store::append_many(&mut other, &[change]).await.expect("appended");
    // ...when a sale bills the order and is authorized.
    let sale = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer,
        "orderId": order_id, "items": [{ "productId": mate, "quantity": 4, "unitPrice": 1210, "orderLineId": line }] });
    let call = {
        let app_client = (app.client.clone(), format!("{}{SALES}", app.base), app.api_key.clone());
        tokio::spawn(async move {
            let (client, url, key) = app_client;
            let request = client.post(url).bearer_auth(key).header("Idempotency-Key", "billing-1").json(&sale);
            request.send().await.expect("sent")
        })
    };
    waits_for_a_lock(&app, "the sale waits for the order's change").await;
    other.commit().await.expect("commit");

    let billed = json(call.await.expect("answered"), 201).await["data"].clone();
    assert_eq!((billed["fiscal"]["status"].as_str(), billed["invoiceNumber"].as_i64()), (Some("issued"), Some(1)));
    assert_eq!(approved(&app, 6).await.len(), 1, "one voucher at the authority for the one sale");
}

#[sqlx::test(migrations = "../schema")]
async fn an_issued_sale_has_a_pdf_with_its_cae_behind_a_signed_link(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let registration = commands::organization::SettingsChange {
        commercial_address: Some("Av. Belgrano 100, San Miguel de Tucumán".into()),
        gross_income_number: Some("30-71234567-8".into()),
        activity_start: Some("2019-04-01".into()),
        ..Default::default()
    };
    commands::organization::update_organization(&app.pool, app.org_id, registration).await.expect("registration");
    let pos = point_of_sale(&app).await;
    let customer = registered_customer(&app).await;
    let body = json!({ "voucherType": 1, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer, "total": 1210000,
        "items": [{ "name": "Heladera", "quantity": 1, "unitPrice": 1000000 }] });
    let created = json(sell(&app, &body, true).await, 201).await["data"].clone();
    assert_nulls_documented(&created, "SaleCreatedData");
    let id = created["id"].as_str().expect("id").to_owned();
    let cae = created["fiscal"]["cae"].as_str().expect("cae").to_owned();
    let ready = eventually(Duration::from_secs(20), "the sale's PDF", || async {
        let current = sale(&app, &id).await;
        (current["document"]["file"]["state"] == "ready").then_some(current)
    })
    .await;
    assert_eq!(ready["document"]["file"]["url"], format!("/api/v1/sales/{id}/document"));
    let location = app.document_location(&format!("/api/v1/sales/{id}/document")).await.expect("rendered");
    let text = app.pdf_text(&location).await;
    assert!(text.contains(&cae), "the CAE is printed: {text}");
    assert!(text.contains("12.100,00"), "the total is printed: {text}");
    assert!(text.contains("Ñandú"), "the customer is printed: {text}");
    for issuer in ["ORIGINAL", "Av. Belgrano 100", "Ingresos Brutos: 30-71234567-8", "Inicio de actividades: 01/04/2019"] {
        assert!(text.contains(issuer), "the issuer's {issuer} is printed: {text}");
    }
    let mut altered = location.clone();
    altered.push('x');
    let refused = app.client.get(format!("{}{altered}", app.base)).send().await.expect("sent");
    assert_eq!(refused.status().as_u16(), 403);
    let (_, other_key) = app.other_org().await;
    let foreign = app.request(Method::GET, &format!("/api/v1/sales/{id}/document"), Some(&other_key), None).await;
    error(foreign, 404, "invalid_request_error").await;
}

#[sqlx::test(migrations = "../schema")]
async fn sale_stock_follows_the_policy_and_credit_notes_bring_it_back(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let item = product(&app, "STK", 1000, Some((&main, 2))).await;
    let on_hand = || async {
        items(&json(app.get(&format!("/api/v1/inventory?product_id={item}")).await, 200).await)[0]["on_hand"]
            .as_str()
            .expect("on hand")
            .to_owned()
    };
    app.negative_stock("block").await;
    let events = app.event_count().await;
    let too_many = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 3000,
        "items": [{ "productId": item, "quantity": 3, "unitPrice": 1000 }] });
    let refused = error(sell(&app, &too_many, true).await, 422, "business_error").await;
    assert_eq!(refused["error"]["code"], "INSUFFICIENT_STOCK");
    assert_eq!(app.event_count().await, events);
    assert_eq!(approved(&app, 6).await.len(), 0, "nothing reached the authority");
    let two = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 2000,
        "items": [{ "productId": item, "quantity": 2, "unitPrice": 1000 }, { "name": "Envío", "quantity": 1, "unitPrice": 0 }] });
    let sold = json(sell(&app, &two, true).await, 201).await["data"].clone();
    assert_eq!(on_hand().await, "0");
    let ledger =
        json(app.get(&format!("/api/v1/inventory/movements?product_id={item}&cause_type=sale")).await, 200).await;
    assert_eq!(items(&ledger)[0]["cause_id"], sold["id"]);
    let note = json!({ "voucherType": 8, "pointOfSaleId": pos, "invoiceDate": today(), "total": 1000,
        "associatedSaleId": sold["id"], "items": [{ "productId": item, "quantity": 1, "unitPrice": 1000 }] });
    let note = json(sell(&app, &note, true).await, 201).await["data"].clone();
    assert_eq!(
        (note["documentKind"].as_str(), note["associatedSaleId"].as_str()),
        (Some("credit_note"), sold["id"].as_str())
    );
    assert_eq!(on_hand().await, "1", "the credit note restored the stock");
    // The note's printed voucher names the voucher it corrects as printed, not by the sale's id.
    let note_id = Uuid::parse_str(note["id"].as_str().expect("id")).expect("uuid");
    let reference: Option<String> =
        sqlx::query_scalar("select input->>'reference' from documents where owner_id = $1 and org_id = $2")
            .bind(note_id)
            .bind(app.org_id)
            .fetch_one(&app.pool)
            .await
            .expect("the note's document");
    let corrected = format!("-{:08}", sold["invoiceNumber"].as_i64().expect("number"));
    let reference = reference.expect("a reference line");
    assert!(reference.starts_with("Corrige FACTURA B 0") && reference.ends_with(&corrected), "{reference}");
    // A debit note charges more for goods already sold: it takes none again, even past what is left.
    let debit = json!({ "voucherType": 7, "pointOfSaleId": pos, "invoiceDate": today(), "total": 400,
        "associatedSaleId": sold["id"], "items": [{ "productId": item, "quantity": 2, "unitPrice": 200 }] });
    let debit = json(sell(&app, &debit, true).await, 201).await["data"].clone();
    assert_eq!(debit["documentKind"], "debit_note");
    assert_eq!(on_hand().await, "1", "the debit note moved no stock");
    let unknown = json!({ "voucherType": 6, "pointOfSaleId": Uuid::now_v7(), "invoiceDate": today(), "customerId": Uuid::now_v7(),
        "total": 1, "items": [{ "productId": Uuid::now_v7(), "quantity": 1, "unitPrice": 1 }] });
    let missing = error(sell(&app, &unknown, true).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&missing), ["pointOfSaleId", "customerId", "items[0].productId"]);
}

/// The on-hand of `product`'s one level, and how many rows of the stock ledger it has.
async fn stock_and_ledger(app: &TestApp, product: &str) -> (String, usize) {
    let levels = json(app.get(&format!("/api/v1/inventory?product_id={product}")).await, 200).await;
    let on_hand = items(&levels)[0]["on_hand"].as_str().expect("on hand").to_owned();
    let ledger = json(app.get(&format!("/api/v1/inventory/movements?product_id={product}")).await, 200).await;
    (on_hand, items(&ledger).len())
}

/// A combo leaves as its components: one deactivated since the combo listed it refuses the combo's
/// line as an inactive product sold directly is refused (404 `not_found` naming the line's product),
/// and nothing is written, taken from stock or asked of the authority. Active again, the combo sells.
#[sqlx::test(migrations = "../schema")]
async fn a_sale_of_a_combo_whose_component_was_deactivated_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let mate = product(&app, "MATE", 1000, Some((&main, 10))).await;
    let bombilla = product(&app, "BOMBILLA", 500, Some((&main, 10))).await;
    let kit = json!({ "name": "Kit matero", "sku": "KIT", "price": 2500, "productType": "combo",
        "components": [{ "productId": mate, "quantity": 2 }, { "productId": bombilla, "quantity": 1 }] });
    let kit = json(app.post_keyed("/api/v1/products", &kit).await, 201).await["data"]["id"].clone();
    let retired = json!({ "name": "Artículo BOMBILLA", "sku": "BOMBILLA", "price": 500, "isActive": false });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &retired).await, 200).await;
    let events = app.event_count().await;
    let before = (stock_and_ledger(&app, &mate).await, stock_and_ledger(&app, &bombilla).await);
    assert_eq!(before, (("10".to_owned(), 1), ("10".to_owned(), 1)), "each product's opening stock");

    // Sold directly, the inactive product is refused, naming its line.
    let direct = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 500,
        "items": [{ "productId": bombilla, "quantity": 1, "unitPrice": 500 }] });
    let refused = error(sell(&app, &direct, true).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[0].productId"]);
    // So is the combo that holds it, on the combo's line; the mate's line is fine.
    let lines = json!([{ "productId": mate, "quantity": 1, "unitPrice": 1000 },
        { "productId": kit, "quantity": 1, "unitPrice": 2500 }]);
    let with_kit =
        json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 3500, "items": lines });
    let refused = error(sell(&app, &with_kit, true).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[1].productId"]);
    let detail = &refused["error"]["details"][0];
    assert_eq!(detail["code"], "not_found", "{refused}");
    assert!(detail["message"].as_str().is_some_and(|m| m.contains(&bombilla)), "names the component: {refused}");
    assert_eq!(app.event_count().await, events, "nothing was written");
    let after = (stock_and_ledger(&app, &mate).await, stock_and_ledger(&app, &bombilla).await);
    assert_eq!(after, before, "no stock left and the ledger is unchanged");
    assert_eq!(approved(&app, 6).await.len(), 0, "nothing reached the authority");

    // Active again, the combo sells as its components: the mate's line and two of the kit's, one bombilla.
    let active = json!({ "name": "Artículo BOMBILLA", "sku": "BOMBILLA", "price": 500 });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &active).await, 200).await;
    json(sell(&app, &with_kit, true).await, 201).await;
    assert_eq!(stock_and_ledger(&app, &mate).await, ("7".to_owned(), 2));
    assert_eq!(stock_and_ledger(&app, &bombilla).await, ("9".to_owned(), 2));
}

#[sqlx::test(migrations = "../schema")]
async fn a_credit_note_is_for_the_customer_of_the_sale_it_corrects(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let customer = |name: &'static str| {
        let app = &app;
        async move { json(app.post("/api/v1/customers", &json!({ "name": name })).await, 201).await["data"]["id"].clone() }
    };
    let (ana, beto) = (customer("Ana").await, customer("Beto").await);
    let sale = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 1000, "customerId": ana,
        "items": [{ "name": "Servicio", "quantity": 1, "unitPrice": 1000 }] });
    let sold = json(sell(&app, &sale, true).await, 201).await["data"].clone();
    // Beto's credit note for Ana's sale would lower what Ana owes on Beto's account.
    let events = app.event_count().await;
    let note = |customer: Option<&Value>| {
        let mut note = json!({ "voucherType": 8, "pointOfSaleId": pos, "invoiceDate": today(), "total": 400,
            "associatedSaleId": sold["id"], "items": [{ "name": "Servicio", "quantity": 1, "unitPrice": 400 }] });
        if let Some(customer) = customer {
            note["customerId"] = customer.clone();
        }
        note
    };
    let refused = error(sell(&app, &note(Some(&beto)), true).await, 422, "business_error").await;
    assert_eq!(refused["error"]["details"][0]["code"], "ASSOCIATED_SALE_CUSTOMER");
    assert_eq!(refused["error"]["details"][0]["field"], "customerId");
    assert_eq!(app.event_count().await, events, "nothing was written");
    assert_eq!(approved(&app, 8).await.len(), 0, "nor asked of the authority");
    // Without a customer the note is the sale's customer's.
    let credited = json(sell(&app, &note(None), true).await, 201).await["data"].clone();
    assert_eq!(credited["customer"]["id"], ana);
    assert_eq!(credited["fiscal"]["status"], "issued");
}

#[sqlx::test(migrations = "../schema")]
async fn export_vouchers_are_refused_before_anything_is_written_or_asked(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = mate_sale(&app).await;
    let invoice = json(sell(&app, &body, true).await, 201).await["data"].clone();
    let (events, asked) = (app.event_count().await, authorization_requests(&app).await);
    // WSFEv1 does not authorize E vouchers (the authority's export service does): a sale of one would be
    // refused by the authority every time, so none is created, not even one to invoice later.
    for (code, now) in [(19, true), (19, false), (20, true), (21, true), (21, false)] {
        let mut export = body.clone();
        export["voucherType"] = json!(code);
        export["invoice"] = json!(now);
        if code != 19 {
            export["associatedSaleId"] = invoice["id"].clone();
        }
        for dated in [true, false] {
            let refused = error(sell(&app, &export, dated).await, 400, "invalid_request_error").await;
            assert_eq!(refused["error"]["code"], "VALIDATION_FAILED", "{refused}");
            assert_eq!(detail_fields(&refused), ["voucherType"], "{refused}");
            assert_eq!(refused["error"]["details"][0]["code"], "invalid_value");
        }
    }
    assert_eq!(app.event_count().await, events, "no sale, no event");
    assert_eq!(authorization_requests(&app).await, asked, "nothing asked of the authority");
}

/// The document's voucher types of a sale are those the parser takes, and the notes it says must name
/// their sale are the parser's notes: a value the schema allows is never refused for its type.
#[test]
fn the_documented_sale_voucher_types_are_the_parsers() {
    let document: Value = serde_json::from_str(&api::http::openapi_document()).expect("json");
    let input = &document["components"]["schemas"]["SaleInput"];
    let codes = |values: &Value| values.as_array().expect("enum").iter().filter_map(Value::as_i64).collect::<Vec<_>>();
    let parsed = |note: bool| {
        (1..=95)
            .filter(|code| {
                commands::sales::voucher_kind(*code)
                    .is_some_and(|(kind, _)| !note || matches!(kind, "credit_note" | "debit_note"))
            })
            .map(i64::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(codes(&input["properties"]["voucherType"]["enum"]), parsed(false));
    let notes = &input["allOf"][0]["allOf"][0]["anyOf"][0]["not"]["properties"]["voucherType"]["enum"];
    assert_eq!(codes(notes), parsed(true));
    assert!([19, 20, 21].iter().all(|code| !parsed(false).contains(code)), "export vouchers are not sales");
}

#[sqlx::test(migrations = "../schema")]
async fn a_voucher_issued_elsewhere_on_the_point_of_sale_is_skipped_not_asked_twice(pool: PgPool) {
    use commands::fiscal::{Issuer, VoucherRequest};
    let app = TestApp::spawn(pool).await;
    let body = mate_sale(&app).await;
    let first = json(sell(&app, &body, true).await, 201).await["data"].clone();
    assert_eq!((first["fiscal"]["status"].as_str(), first["invoiceNumber"].as_i64()), (Some("issued"), Some(1)));

    // Another system issues numbers 2 and 3 on the same point of sale: the number the service last had
    // approved is no longer the authority's last.
    let elsewhere = crate::helpers::fiscal_client(&app.pool, &app.fiscal_url, Duration::from_secs(10)).await;
    let issuer = Issuer::new(app.org_id, ISSUER.parse().expect("cuit")).expect("cuit");
    for number in [2, 3] {
        // Invoice B for 121.00 to a consumidor final, at this test's point of sale.
        let voucher = VoucherRequest { point_of_sale: 1, ..crate::fiscal_simulator::invoice_b(number) };
        elsewhere.authorize(issuer, &voucher).await.expect("approved elsewhere");
    }

    // The next sale asks for 2, hears that it is not the next number, and takes the authority's last + 1.
    let next = json(sell(&app, &body, true).await, 201).await["data"].clone();
    assert_eq!((next["fiscal"]["status"].as_str(), next["invoiceNumber"].as_i64()), (Some("issued"), Some(4)));
    let third = json(sell(&app, &body, true).await, 201).await["data"].clone();
    assert_eq!(third["invoiceNumber"], 5);
    let numbers: Vec<i64> = approved(&app, 6).await.iter().filter_map(|v| v["number"].as_i64()).collect();
    assert_eq!(numbers.len(), 5, "each number approved once: {numbers:?}");
}

/// With default settings the authority's wait fits inside the command's: a sale whose authorization
/// reply never comes answers `deferred` (201, with its id), not 503 `COMMAND_TIMEOUT`.
#[sqlx::test(migrations = "../schema")]
async fn with_default_settings_a_lost_reply_answers_deferred_in_time(pool: PgPool) {
    let app = TestApp::spawn_with_default_fiscal_timeout(pool).await;
    let body = mate_sale(&app).await;
    script(&app, json!([{ "outcome": "lost_reply" }])).await;
    let lost = json(sell(&app, &body, true).await, 201).await["data"].clone();
    assert_eq!(lost["fiscal"]["status"], "deferred");
    assert!(lost["id"].is_string(), "the caller has the sale's id");
}

/// How many `FECAESolicitar` requests the test's simulator served.
async fn authorization_requests(app: &TestApp) -> u64 {
    let url = format!("{}/_simulator/requests", app.fiscal_url);
    let body: Value = app.client.get(url).send().await.expect("sent").json().await.expect("json");
    body["FECAESolicitar"].as_u64().unwrap_or(0)
}

#[sqlx::test(migrations = "../schema")]
async fn fifty_sales_on_one_series_are_authorized_in_batches_with_consecutive_numbers(pool: PgPool) {
    // A worker with the connections of a deployed one (a test pool holds five): sales in flight at once
    // are what a batch gathers.
    let options = pool.connect_options().as_ref().clone();
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(24).connect_with(options).await.expect("pool");
    let app = TestApp::spawn(pool).await;
    let body = mate_sale(&app).await;
    // An authority that takes a moment to answer, as the real one does: sales queue meanwhile.
    let latency = app.client.post(format!("{}/_simulator/latency", app.fiscal_url)).json(&json!({ "milliseconds": 300 }));
    assert_eq!(latency.send().await.expect("sent").status().as_u16(), 200);
    let sold = futures::future::join_all((0..50).map(|_| sell(&app, &body, true))).await;
    let mut numbers = Vec::new();
    for response in sold {
        let sale = json(response, 201).await["data"].clone();
        assert_eq!(sale["fiscal"]["status"], "issued", "{sale}");
        numbers.push(sale["invoiceNumber"].as_i64().expect("a number"));
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=50).collect::<Vec<_>>(), "consecutive, no gap, none twice");
    let requests = authorization_requests(&app).await;
    assert!(requests < 10, "{requests} authorization requests for 50 sales");
    assert_eq!(approved(&app, 6).await.len(), 50);
}

/// Until `n` sales wait in their series' queue for the authority: each sale's transaction is idle after
/// the last statement it runs before it queues its voucher, which reads the issuer's CUIT.
async fn queued_for_the_authority(app: &TestApp, n: i64) {
    eventually(Duration::from_secs(20), "the sales queued for the authority", || async {
        let queued: i64 = sqlx::query_scalar(
            "select count(*) from pg_stat_activity where datname = current_database()
             and state = 'idle in transaction' and query like 'select tax_id, tax_category from organizations%'",
        )
        .fetch_one(&app.pool)
        .await
        .expect("activity");
        (queued >= n).then_some(())
    })
    .await;
}

#[sqlx::test(migrations = "../schema")]
async fn a_batch_numbers_its_vouchers_in_date_order_whatever_order_they_queued_in(pool: PgPool) {
    // Connections for every sale waiting in the batch at once (a test pool holds five).
    let options = pool.connect_options().as_ref().clone();
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(24).connect_with(options).await.expect("pool");
    let app = TestApp::spawn(pool).await;
    let body = mate_sale(&app).await;
    let day = crate::helpers::today_date();
    let dated = |days_ago: i64| {
        let mut sale = body.clone();
        sale["invoiceDate"] = json!((day - time::Duration::days(days_ago)).to_string());
        sale
    };
    let first = json(sell(&app, &dated(3), true).await, 201).await["data"].clone();
    assert_eq!((first["fiscal"]["status"].as_str(), first["invoiceNumber"].as_i64()), (Some("issued"), Some(1)));
    // An authority that takes a moment to answer, as the real one does: the last sale counted as queued
    // is in the queue long before the leader's answer lets the next batch go.
    let latency = app.client.post(format!("{}/_simulator/latency", app.fiscal_url)).json(&json!({ "milliseconds": 300 }));
    assert_eq!(latency.send().await.expect("sent").status().as_u16(), 200);

    // The series is held elsewhere (as by another process's batch) while a sale leads a batch of its own
    // and waits for it: the sales sent meanwhile queue for the next batch, the later-dated first.
    let mut other = app.pool.begin().await.expect("begin");
    sqlx::query("select last from document_numbers where org_id = $1 for update")
        .bind(app.org_id)
        .fetch_all(&mut *other)
        .await
        .expect("series locked");
    let leading = dated(3);
    let later: Vec<Value> = [0, 0, 0, 1, 1, 1, 2, 2].into_iter().map(&dated).collect();
    let leader = sell(&app, &leading, true);
    let queued = async {
        waits_for_a_lock(&app, "the leader waits for the series").await;
        let sold = futures::future::join_all(later.iter().map(|body| sell(&app, body, true)));
        let app = &app;
        let release = async move {
            queued_for_the_authority(app, 8).await;
            other.commit().await.expect("released");
        };
        futures::future::join(sold, release).await.0
    };
    let (leader, sold) = futures::future::join(leader, queued).await;
    let leader = json(leader, 201).await["data"].clone();
    assert_eq!((leader["fiscal"]["status"].as_str(), leader["invoiceNumber"].as_i64()), (Some("issued"), Some(2)));

    // One request for the eight, numbered as their dates go: none refused for a date before its
    // predecessor's (10016), none deferred.
    let mut issued = Vec::new();
    for response in sold {
        let sale = json(response, 201).await["data"].clone();
        assert_eq!(sale["fiscal"]["status"], "issued", "{sale}");
        let date = sale["invoiceDate"].as_str().expect("a date").to_owned();
        issued.push((sale["invoiceNumber"].as_i64().expect("a number"), date));
    }
    issued.sort();
    assert_eq!(issued.iter().map(|(number, _)| *number).collect::<Vec<_>>(), (3..=10).collect::<Vec<_>>());
    assert!(issued.windows(2).all(|pair| pair[0].1 <= pair[1].1), "numbers follow dates: {issued:?}");
    assert_eq!(authorization_requests(&app).await, 3, "the first sale, the leader, then the eight together");
}

#[sqlx::test(migrations = "../schema")]
async fn a_lost_reply_inside_a_batch_is_resolved_by_consulting_never_by_asking_twice(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = mate_sale(&app).await;
    script(&app, json!([{ "outcome": "lost_reply" }])).await;
    let sold = futures::future::join_all((0..6).map(|_| sell(&app, &body, true))).await;
    let mut ids = Vec::new();
    for response in sold {
        let sale = json(response, 201).await["data"].clone();
        ids.push(sale["id"].as_str().expect("id").to_owned());
    }
    let asked = authorization_requests(&app).await;
    // Every sale ends issued: those of the lost batch by consulting the numbers they were asked for.
    for id in &ids {
        eventually(Duration::from_secs(30), "the sale issued", || async {
            let current = sale(&app, id).await;
            (current["fiscal"]["status"] == "issued").then_some(current)
        })
        .await;
    }
    assert_eq!(authorization_requests(&app).await, asked, "no voucher was asked for twice");
    let mut numbers: Vec<i64> = approved(&app, 6).await.iter().filter_map(|v| v["number"].as_i64()).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=6).collect::<Vec<_>>());
}
