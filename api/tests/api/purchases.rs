//! Purchasing: purchases v1 (stock, costs, currencies, keys, duplicates), purchase orders with partial
//! receipts and their states, and the v2 preview/commit surface with its pages and envelopes.

use crate::helpers::{assert_nulls_documented, TestApp, detail_fields, error, items, json, refused, style_a, v2_error, v2_paths, main_warehouse};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

const PURCHASES: &str = "/api/v1/purchases";
const ORDERS: &str = "/api/v1/purchase-orders";

async fn supplier(app: &TestApp, name: &str) -> String {
    json(app.post("/api/v1/suppliers", &json!({ "name": name })).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

pub async fn product(app: &TestApp, sku: &str, cost: i64) -> String {
    let body = json!({ "name": format!("Producto {sku}"), "sku": sku, "cost": cost, "price": 5000 });
    json(app.post_keyed("/api/v1/products", &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

pub fn purchase(supplier: &str, number: &str, warehouse: Option<&str>, lines: Value) -> Value {
    let mut body = json!({
        "supplierId": supplier, "voucherType": 1, "supplierInvoiceNumber": number, "invoiceDate": "2026-11-20",
        "items": lines,
    });
    if let Some(warehouse) = warehouse {
        body["productsReceived"] = json!(true);
        body["warehouseId"] = json!(warehouse);
    }
    body
}

async fn on_hand(app: &TestApp, product: &str, warehouse: &str) -> String {
    let body =
        style_a(app.get(&format!("/api/v1/inventory?product_id={product}&warehouse_id={warehouse}")).await, 200).await;
    items(&body).first().map_or("0".to_owned(), |row| row["on_hand"].as_str().expect("on hand").to_owned())
}

#[sqlx::test(migrations = "../schema")]
async fn a_received_purchase_raises_stock_moves_costs_and_is_recorded_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let acme = supplier(&app, "Distribuidora Acme").await;
    let (yerba, azucar) = (product(&app, "YERBA", 1000).await, product(&app, "AZUCAR", 500).await);

    let key = Uuid::now_v7().to_string();
    // The guide's snake_case spellings are accepted.
    let body = json!({
        "supplier_id": acme, "voucher_type": 1, "supplier_invoice_number": "0001-00000042", "invoice_date": "2026-11-20",
        "products_received": true, "warehouse_id": main,
        "items": [{ "product_id": yerba, "quantity": 10, "unit_cost": 1250 },
                  { "product_id": azucar, "quantity": "2.5", "unit_cost": 500, "tax_rate_id": 4 }],
    });
    let created = json(app.post_key(PURCHASES, &key, &body).await, 201).await;
    assert_nulls_documented(&created["data"], "PurchaseCreatedData");
    assert_eq!(created["success"], true);
    let data = &created["data"];
    let id = data["id"].as_str().expect("id").to_owned();
    // A voucher: net prices. 10 × 12.50 = 125.00 + 21% = 26.25; 2.5 × 5.00 = 12.50 + 10.5% = 1.31 (1.3125).
    assert_eq!(
        (data["subtotal"].as_i64(), data["taxAmount"].as_i64(), data["total"].as_i64()),
        (Some(13750), Some(2756), Some(16506))
    );
    assert_eq!(data["totalArs"], 16506);
    assert_eq!(data["supplier"]["name"], "Distribuidora Acme");
    assert_eq!(data["items"][0]["product"]["sku"], "YERBA");
    // The PDF is rendered by a subscriber of its own: the answer may or may not find it done.
    let document_route = format!("/api/v1/purchases/{id}/document");
    assert!(
        [json!({ "state": "missing" }), json!({ "state": "ready", "url": document_route })].contains(&data["document"]),
        "{}",
        data["document"]
    );
    assert_eq!(data["tags"], json!([]));
    assert_eq!(data["normalizedPurchase"]["items"][1]["taxRateId"], 4);
    assert_eq!(data["normalizedPurchase"]["exchangeRate"], "1");
    assert_eq!(
        data["projectedEffects"]["stockEntries"],
        json!([{ "productId": yerba, "warehouseId": main, "quantity": "10", "onHand": "10" },
               { "productId": azucar, "warehouseId": main, "quantity": "2.5", "onHand": "2.5" }])
    );
    assert_eq!(
        data["projectedEffects"]["costUpdates"],
        json!([{ "productId": yerba, "previousCost": 1000, "newCost": 1250 }])
    );
    assert_eq!(data["projectedEffects"]["supplierBalance"]["amountArs"], 16506);
    assert_eq!(data["idempotentReplay"], false);

    assert_eq!(on_hand(&app, &yerba, &main).await, "10");
    let ledger = style_a(app.get(&format!("/api/v1/inventory/movements?product_id={yerba}")).await, 200).await;
    let row = &items(&ledger)[0];
    assert_eq!((row["cause_type"].as_str(), row["cause_id"].as_str()), (Some("purchase"), Some(id.as_str())));
    let cost = json(app.get(&format!("/api/v1/products/{yerba}")).await, 200).await;
    assert_eq!(cost["data"]["cost"], 1250, "the product's cost follows the purchase");

    let events = app.event_count().await;
    let replay = json(app.post_key(PURCHASES, &key, &body).await, 201).await;
    assert_eq!(
        (replay["data"]["id"].as_str(), replay["data"]["idempotentReplay"].as_bool()),
        (Some(id.as_str()), Some(true))
    );
    assert_eq!(app.event_count().await, events);
    let mut other = body.clone();
    other["supplier_invoice_number"] = json!("0001-00000043");
    let conflict = error(app.post_key(PURCHASES, &key, &other).await, 409, "idempotency_error").await;
    assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT");

    // The same supplier invoice again is a conflict, whatever the key.
    let again = refused(app.post_keyed(PURCHASES, &body).await).await;
    assert_eq!(again["error"]["code"], "ALREADY_EXISTS");
    assert_eq!(detail_fields(&again), ["supplierInvoiceNumber"]);
    assert_eq!(app.event_count().await, events, "nothing was written");

    let read = crate::helpers::eventually(std::time::Duration::from_secs(20), "the purchase's PDF", || async {
        let read = json(app.get(&format!("{PURCHASES}/{id}")).await, 200).await;
        (read["data"]["document"]["state"] == "ready").then_some(read)
    })
    .await;
    assert_eq!(read["data"]["items"], data["items"]);
    assert_eq!(read["data"]["document"]["url"], format!("/api/v1/purchases/{id}/document"));
    assert!(!read["data"]["pdfPath"].as_str().expect("a storage name").starts_with("/api"), "never a download route");
    let location = app.document_location(&format!("{PURCHASES}/{id}/document")).await.expect("rendered");
    let text = app.pdf_text(&location).await;
    assert!(text.contains("0001-00000042") && text.contains("Distribuidora Acme"), "{text}");
    let missing =
        error(app.get(&format!("{PURCHASES}/{}/document", Uuid::now_v7())).await, 404, "invalid_request_error").await;
    assert_eq!(missing["error"]["code"], "NOT_FOUND");
    let listed =
        json(app.get(&format!("{PURCHASES}?supplier_id={acme}&date_from=2026-11-20&query=00042")).await, 200).await;
    assert_eq!(items(&listed).len(), 1);
    let none = json(app.get(&format!("{PURCHASES}?date_to=2026-11-19")).await, 200).await;
    assert!(items(&none).is_empty());

    let tag = json(app.post("/api/v1/tags", &json!({ "name": "importante" })).await, 201).await["data"]["id"].clone();
    json(app.post("/api/v1/purchases/tags/apply", &json!({ "ids": [id], "add": [tag] })).await, 200).await;
    let tagged = json(app.get(&format!("{PURCHASES}/{id}")).await, 200).await;
    assert_eq!(tagged["data"]["tags"][0]["name"], "importante");
}

/// The product stream's event types, oldest first, and each event's number of variants.
async fn product_events(app: &TestApp, group: &str) -> Vec<(String, usize)> {
    let rows: Vec<(String, Value)> = sqlx::query_as(
        "select event_type, data from events where stream_type = 'product' and stream_id = $1::uuid order by version",
    )
    .bind(group)
    .fetch_all(&app.pool)
    .await
    .expect("events");
    rows.into_iter().map(|(kind, data)| (kind, data["variants"].as_array().map_or(0, Vec::len))).collect()
}

#[sqlx::test(migrations = "../schema")]
async fn purchases_record_only_the_variants_whose_costs_they_move(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let acme = supplier(&app, "Distribuidora Acme").await;
    // A matrix of three sizes under automatic margin pricing.
    let variants: Vec<Value> = ["S", "M", "L"]
        .iter()
        .map(|size| json!({"optionValues": {"Talle": size}, "sku": format!("REM-{size}"), "cost": 1000}))
        .collect();
    let body = json!({"name": "Remera", "options": ["Talle"], "markupPercentage": "50", "variants": variants});
    let created = json(app.post_keyed("/api/v1/products", &body).await, 201).await;
    let group = created["data"]["variantGroupId"].as_str().expect("group").to_owned();
    let ids: Vec<String> = created["data"]["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .map(|v| v["id"].as_str().expect("id").to_owned())
        .collect();

    // Twenty purchases, each moving the cost of the medium size only.
    for n in 1..=20 {
        let lines = json!([{ "product_id": ids[1], "quantity": 1, "unit_cost": 1000 + n * 10 }]);
        let body = purchase(&acme, &format!("0001-{n:08}"), Some(&main), lines);
        json(app.post_keyed(PURCHASES, &body).await, 201).await;
    }
    let recorded = product_events(&app, &group).await;
    assert_eq!(recorded.len(), 21);
    assert_eq!(recorded[0], ("ProductCreated".to_owned(), 3));
    // Each update carries the one variant it moved, but a whole group comes at least every sixteen
    // events, so a group's state is always the fold of its latest sixteen.
    for (i, (kind, count)) in recorded.iter().enumerate().skip(1) {
        let expected = if i % 16 == 0 { ("ProductUpdated", 3) } else { ("ProductVariantsUpdated", 1) };
        assert_eq!((kind.as_str(), *count), expected, "event {i}");
    }

    // The read model and the next purchase's view of the costs (folded from the latest events) agree.
    let medium = json(app.get(&format!("/api/v1/products/{}", ids[1])).await, 200).await;
    assert_eq!((medium["data"]["cost"].clone(), medium["data"]["price"].clone()), (json!(1200), json!(1800)));
    for other in [&ids[0], &ids[2]] {
        let read = json(app.get(&format!("/api/v1/products/{other}")).await, 200).await;
        assert_eq!((read["data"]["cost"].clone(), read["data"]["price"].clone()), (json!(1000), json!(1500)));
    }
    let lines = json!([{ "product_id": ids[1], "quantity": 1, "unit_cost": 1300 }]);
    let next = json(app.post_keyed(PURCHASES, &purchase(&acme, "0001-00000021", Some(&main), lines)).await, 201).await;
    assert_eq!(
        next["data"]["projectedEffects"]["costUpdates"],
        json!([{ "productId": ids[1], "previousCost": 1200, "newCost": 1300 }])
    );
    let read = json(app.get(&format!("/api/v1/products/{}", ids[1])).await, 200).await;
    assert_eq!(read["data"]["cost"], 1300);
}

#[sqlx::test(migrations = "../schema")]
async fn a_dollar_purchase_keeps_its_rate_and_exact_peso_amounts(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let acme = supplier(&app, "Importadora").await;
    let item = product(&app, "CHIP", 100).await;
    let mut body = purchase(&acme, "E-0007", None, json!([{ "productId": item, "quantity": 3, "unitCost": 1999 }]));
    body["currency"] = json!("DOL");
    body["exchangeRate"] = json!("1050.5");
    let created = json(app.post_keyed(PURCHASES, &body).await, 201).await;
    let data = &created["data"];
    assert_eq!((data["currency"].as_str(), data["exchangeRate"].as_str()), (Some("DOL"), Some("1050.5")));
    // 3 × 19.99 = 59.97 net, VAT 12.59; each converted at 1050.5 and rounded half away from zero.
    assert_eq!((data["subtotal"].as_i64(), data["taxAmount"].as_i64()), (Some(5997), Some(1259)));
    assert_eq!((data["subtotalArs"].as_i64(), data["taxAmountArs"].as_i64()), (Some(6_299_849), Some(1_322_580)));
    assert_eq!(data["totalArs"], 6_299_849 + 1_322_580);
    assert_eq!(data["projectedEffects"]["costUpdates"][0]["newCost"], 2_099_950, "the cost in pesos per unit");
    assert_eq!(data["projectedEffects"]["stockEntries"], json!([]), "nothing received, no stock");
    let stored: String = sqlx::query_scalar("select data::text from events where event_type = 'PurchaseRecorded'")
        .fetch_one(&app.pool)
        .await
        .expect("event");
    assert!(
        stored.contains(r#""exchange_rate":"1050.5""#) || stored.contains(r#""exchange_rate": "1050.5""#),
        "{stored}"
    );

    let mut no_rate = purchase(&acme, "E-0008", None, json!([{ "productId": item, "quantity": 1, "unitCost": 1 }]));
    no_rate["currency"] = json!("DOL");
    let refusal = error(app.post_keyed(PURCHASES, &no_rate).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refusal), ["exchangeRate"]);
}

#[sqlx::test(migrations = "../schema")]
async fn bad_purchases_are_refused_and_write_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let acme = supplier(&app, "Acme").await;
    let item = product(&app, "TUERCA", 10).await;
    let foreign_supplier = app.foreign("/api/v1/suppliers", "Ajeno").await;
    let events = app.event_count().await;

    let foreign = purchase(
        &foreign_supplier,
        "1",
        Some(&main),
        json!([{ "productId": Uuid::now_v7(), "quantity": 1, "unitCost": 1 }]),
    );
    let missing = error(app.post_keyed(PURCHASES, &foreign).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&missing), ["supplierId", "items[0].productId"]);
    let no_warehouse = json!({ "supplierId": acme, "voucherType": 1, "supplierInvoiceNumber": "2", "invoiceDate": "2026-11-20",
        "productsReceived": true, "items": [{ "productId": item, "quantity": 1, "unitCost": 1 }] });
    assert_eq!(
        detail_fields(&error(app.post_keyed(PURCHASES, &no_warehouse).await, 400, "invalid_request_error").await),
        ["warehouseId"]
    );
    for (field, value) in [
        ("unitCost", json!(12.5)),
        ("unitCost", json!(-1)),
        ("unitCost", json!("100")),
        ("quantity", json!(0)),
        ("quantity", json!("1.0001")),
        ("taxRateId", json!(7)),
    ] {
        let mut line = json!({ "productId": item, "quantity": 1, "unitCost": 100 });
        line[field] = value.clone();
        let body = purchase(&acme, "3", Some(&main), json!([line]));
        let refusal = error(app.post_keyed(PURCHASES, &body).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refusal), [format!("items[0].{field}")], "{field} = {value}");
    }
    let future = json!({ "supplierId": acme, "voucherType": 1, "supplierInvoiceNumber": "4", "invoiceDate": "2999-01-01",
        "supplier_invoice_number": "5", "items": [{ "productId": item, "quantity": 1, "unitCost": 1 }] });
    let refusal = error(app.post_keyed(PURCHASES, &future).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refusal), ["supplierInvoiceNumber", "invoiceDate"]);
    // A warehouse named is recorded, received or not: an unknown one is refused either way.
    let mut nowhere = purchase(&acme, "6", None, json!([{ "productId": item, "quantity": 1, "unitCost": 1 }]));
    nowhere["warehouseId"] = json!(Uuid::now_v7());
    let refusal = error(app.post_keyed(PURCHASES, &nowhere).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refusal), ["warehouseId"]);
    assert_eq!(app.event_count().await, events, "nothing was written");
    assert_eq!(on_hand(&app, &item, &main).await, "0");
}

async fn order(app: &TestApp, supplier: &str, warehouse: &str, lines: Value) -> Value {
    let body = json!({ "supplierId": supplier, "warehouseId": warehouse, "items": lines });
    json(app.post_keyed(ORDERS, &body).await, 201).await["data"].clone()
}

async fn order_action(app: &TestApp, id: &str, action: &str) -> reqwest::Response {
    app.post(&format!("{ORDERS}/{id}/{action}"), &json!({})).await
}

#[sqlx::test(migrations = "../schema")]
async fn purchase_orders_receive_in_parts_and_refuse_illegal_moves(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let acme = supplier(&app, "Acme").await;
    let (a, b) = (product(&app, "PO-A", 100).await, product(&app, "PO-B", 100).await);

    let first = order(&app, &acme, &main, json!([{ "productId": a, "quantity": 10, "unitCost": 100 }, { "productId": b, "quantity": "2.5", "unitCost": 200 }])).await;
    assert_eq!((first["number"].as_i64(), first["status"].as_str()), (Some(1), Some("draft")));
    let id = first["id"].as_str().expect("id").to_owned();
    // A refused order takes no number.
    let bad = json!({ "supplierId": Uuid::now_v7(), "warehouseId": main, "items": [{ "productId": a, "quantity": 1, "unitCost": 1 }] });
    error(app.post_keyed(ORDERS, &bad).await, 404, "invalid_request_error").await;
    let second = order(&app, &acme, &main, json!([{ "productId": a, "quantity": 1, "unitCost": 1 }])).await;
    assert_eq!(second["number"], 2, "numbers are gap-free");

    let receipts = format!("{ORDERS}/{id}/receipts");
    let early = error(
        app.post_keyed(&receipts, &json!({ "lines": [{ "productId": a, "quantity": 1 }] })).await,
        409,
        "business_error",
    )
    .await;
    assert_eq!(early["error"]["code"], "STATE_CONFLICT");
    assert_eq!(early["error"]["details"][0]["metadata"]["current_state"], "draft");
    let confirmed = json(order_action(&app, &id, "confirm").await, 200).await;
    assert_eq!(confirmed["data"]["status"], "confirmed");
    let twice = error(order_action(&app, &id, "confirm").await, 409, "business_error").await;
    assert_eq!(twice["error"]["details"][0]["metadata"]["current_state"], "confirmed");

    let events = app.event_count().await;
    let too_much = error(
        app.post_keyed(&receipts, &json!({ "lines": [{ "productId": a, "quantity": 11 }] })).await,
        422,
        "business_error",
    )
    .await;
    assert_eq!(too_much["error"]["code"], "RECEIPT_EXCEEDS_PENDING");
    assert_eq!(too_much["error"]["details"][0]["metadata"]["pending_quantity"], "10");
    let stranger = error(
        app.post_keyed(&receipts, &json!({ "lines": [{ "productId": Uuid::now_v7(), "quantity": 1 }] })).await,
        409,
        "business_error",
    )
    .await;
    assert_eq!(detail_fields(&stranger), ["lines[0].productId"]);
    assert_eq!(app.event_count().await, events, "refused receipts write nothing");

    let partial =
        json(app.post_keyed(&receipts, &json!({ "lines": [{ "productId": a, "quantity": 4 }] })).await, 201).await;
    assert_eq!(partial["data"]["status"], "partially_received");
    assert_eq!(
        partial["data"]["lines"][0],
        json!({ "productId": a, "ordered": "10", "received": "4", "pending": "6" })
    );
    assert_eq!(on_hand(&app, &a, &main).await, "4");
    let closed = json(order_action(&app, &id, "close").await, 200).await;
    assert_eq!(closed["data"]["status"], "closed");
    error(
        app.post_keyed(&receipts, &json!({ "lines": [{ "productId": a, "quantity": 1 }] })).await,
        409,
        "business_error",
    )
    .await;
    let reopened = json(order_action(&app, &id, "reopen").await, 200).await;
    assert_eq!(reopened["data"]["status"], "partially_received", "back to where it was closed from");
    let rest = json!({ "lines": [{ "productId": a, "quantity": 6 }, { "productId": b, "quantity": "2.5" }] });
    let received = json(app.post_keyed(&receipts, &rest).await, 201).await;
    assert_eq!(received["data"]["status"], "received");
    assert_eq!(received["data"]["receipts"].as_array().map(Vec::len), Some(2));
    assert_eq!(on_hand(&app, &a, &main).await, "10");
    assert_eq!(on_hand(&app, &b, &main).await, "2.5");
    let after = error(order_action(&app, &id, "close").await, 409, "business_error").await;
    assert_eq!(after["error"]["details"][0]["metadata"]["current_state"], "received");
    let ledger = style_a(
        app.get(&format!("/api/v1/inventory/movements?product_id={a}&cause_type=purchase_order_receipt")).await,
        200,
    )
    .await;
    assert_eq!(items(&ledger).len(), 2);

    // Over-receipt only when asked for.
    let other = second["id"].as_str().expect("id");
    json(order_action(&app, other, "confirm").await, 200).await;
    let over = json!({ "lines": [{ "productId": a, "quantity": 3 }], "allowOverReceipt": true });
    let over = json(app.post_keyed(&format!("{ORDERS}/{other}/receipts"), &over).await, 201).await;
    assert_eq!(
        (over["data"]["status"].as_str(), over["data"]["receipts"][0]["overReceipt"].as_bool()),
        (Some("received"), Some(true))
    );

    let read = json(app.get(&format!("{ORDERS}/{id}")).await, 200).await;
    assert_eq!(read["data"]["status"], "received");
    let listed = json(app.get(&format!("{ORDERS}?status=received")).await, 200).await;
    assert_eq!(items(&listed).len(), 2);
    error(app.get(&format!("{ORDERS}?status=lost")).await, 400, "invalid_request_error").await;
    let missing =
        error(order_action(&app, &Uuid::now_v7().to_string(), "confirm").await, 404, "invalid_request_error").await;
    assert_eq!(missing["error"]["code"], "NOT_FOUND");
}

#[sqlx::test(migrations = "../schema")]
async fn v2_previews_write_nothing_and_commits_record_what_was_previewed(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let acme = supplier(&app, "Acme SA").await;
    let item = product(&app, "V2-1", 100).await;
    let input = json!({ "supplierId": acme, "voucherType": 6, "supplierInvoiceNumber": "B-0001", "invoiceDate": "2026-11-20",
        "currency": "PES", "productsReceived": true, "warehouseId": main,
        "items": [{ "productId": item, "quantity": 4, "unitCost": 1210 }] });
    let preview_body = json!({ "mode": "preview", "client": { "requestId": "r-1", "agent": { "name": "erp", "version": "1" } }, "input": input });
    let events = app.event_count().await;
    let preview = json(app.post("/api/v2/purchases", &preview_body).await, 200).await;
    assert_eq!(preview["success"], true);
    assert!(preview["requestId"].is_string());
    let data = &preview["data"];
    assert_eq!(data["mode"], "preview");
    assert_eq!(data["blockingIssues"], json!([]));
    assert!(data.get("purchase").is_none());
    assert_eq!(data["client"]["requestId"], "r-1");
    // B voucher: prices with VAT. 4 × 12.10 = 48.40 = 40.00 + 8.40.
    assert_eq!(
        (data["normalizedPurchase"]["subtotal"].as_i64(), data["normalizedPurchase"]["taxAmount"].as_i64()),
        (Some(4000), Some(840))
    );
    assert_eq!(app.event_count().await, events, "a preview writes nothing");
    assert_eq!(on_hand(&app, &item, &main).await, "0");

    let commit_body = json!({ "mode": "commit", "input": input });
    let keyless = v2_error(app.post("/api/v2/purchases", &commit_body).await, 400).await;
    assert_eq!(v2_paths(&keyless), ["Idempotency-Key"]);
    let committed = json(app.post_keyed("/api/v2/purchases", &commit_body).await, 201).await;
    let result = &committed["data"];
    assert_eq!(result["mode"], "commit");
    assert_eq!(result["normalizedPurchase"], data["normalizedPurchase"], "exactly what the preview showed");
    assert_eq!(result["projectedEffects"], data["projectedEffects"]);
    assert_eq!(result["purchase"]["supplierInvoiceNumber"], "B-0001");
    assert_eq!(on_hand(&app, &item, &main).await, "4");

    // The same invoice again: a preview lists the blocker, a commit refuses with nothing written.
    let blocked_preview = json(app.post("/api/v2/purchases", &preview_body).await, 200).await;
    assert_eq!(
        blocked_preview["data"]["blockingIssues"],
        json!([{ "path": "input.supplierInvoiceNumber", "code": "DUPLICATE", "message": "this supplier's invoice of this voucher type is already recorded" }])
    );
    let mut unknown = commit_body.clone();
    unknown["input"]["supplierInvoiceNumber"] = json!("B-0002");
    unknown["input"]["items"][0]["productId"] = json!(Uuid::now_v7());
    unknown["input"]["currency"] = json!("DOL");
    let events = app.event_count().await;
    let refusal = v2_error(app.post_keyed("/api/v2/purchases", &unknown).await, 422).await;
    assert_eq!(refusal["error"]["code"], "PRECONDITION_FAILED");
    assert_eq!(refusal["error"]["retryable"], false);
    assert_eq!(v2_paths(&refusal), ["input.items[0].productId", "input.exchangeRate"]);
    let codes: Vec<&str> =
        refusal["error"]["details"].as_array().expect("details").iter().filter_map(|d| d["code"].as_str()).collect();
    assert_eq!(codes, ["INVENTORY", "CURRENCY"]);
    assert_eq!(app.event_count().await, events, "a blocked commit writes nothing");
    let malformed =
        v2_error(app.post("/api/v2/purchases", &json!({ "mode": "later", "input": { "items": [] } })).await, 400).await;
    assert!(v2_paths(&malformed).contains(&"mode".to_owned()), "{malformed}");
    assert!(v2_paths(&malformed).contains(&"input.supplierId".to_owned()), "{malformed}");
    let mut bad_client = preview_body.clone();
    bad_client["client"] = json!({ "requestId": {}, "agent": { "version": "1" } });
    let refused = v2_error(app.post("/api/v2/purchases", &bad_client).await, 400).await;
    assert_eq!(v2_paths(&refused), ["client.requestId", "client.agent.name"], "{refused}");
    let mut bad_key = preview_body.clone();
    bad_key["client"] = json!(null);
    let refused = v2_error(app.post_key("/api/v2/purchases", "has spaces", &bad_key).await, 400).await;
    assert_eq!(refused["error"]["code"], "INVALID_IDEMPOTENCY_KEY", "a preview's key is checked even if unused");

    // Pages.
    for n in 2..=3 {
        let mut more = commit_body.clone();
        more["input"]["supplierInvoiceNumber"] = json!(format!("B-10{n}"));
        json(app.post_keyed("/api/v2/purchases", &more).await, 201).await;
    }
    let page = json(app.get("/api/v2/purchases?page=2&limit=2").await, 200).await;
    assert_eq!(page["pagination"], json!({ "page": 2, "limit": 2, "total": 3, "totalPages": 2 }));
    assert_eq!(page["data"].as_array().map(Vec::len), Some(1));
    let id = result["purchase"]["id"].as_str().expect("id");
    let read = json(app.get(&format!("/api/v2/purchases/{id}")).await, 200).await;
    assert_eq!(read["data"]["id"], id);
    v2_error(app.get(&format!("/api/v2/purchases/{}", Uuid::now_v7())).await, 404).await;
    let bad = v2_error(app.get("/api/v2/purchases?supplierId=x&page=0").await, 400).await;
    assert!(!v2_paths(&bad).is_empty(), "{bad}");
    let suppliers = json(app.get("/api/v2/suppliers?search=acme").await, 200).await;
    assert_eq!(suppliers["data"][0]["name"], "Acme SA");
    assert_eq!(suppliers["pagination"]["total"], 1);
    let products = json(app.get("/api/v2/products?limit=1").await, 200).await;
    assert_eq!(products["pagination"]["limit"], 1);
}
