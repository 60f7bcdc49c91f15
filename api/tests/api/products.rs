//! Products: single products and variant matrices, their rules and rejections (which leave nothing
//! behind), replaces that touch a whole group, and the product events the webhook sender delivers.

use crate::helpers::{TestApp, detail_fields, error, id_of, items, json, main_warehouse, refused};
use crate::receiver::Receiver;
use projections::webhooks::dispatch::{self, SenderConfig};
use reqwest::Response;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

async fn create(app: &TestApp, body: &Value) -> Response {
    app.post_keyed("/api/v1/products", body).await
}

async fn counts(app: &TestApp) -> (i64, i64, i64) {
    let events = app.event_count().await;
    let variants: i64 =
        sqlx::query_scalar("select count(*) from product_variants").fetch_one(&app.pool).await.expect("count");
    let rows: i64 = sqlx::query_scalar("select count(*) from products_view").fetch_one(&app.pool).await.expect("count");
    (events, variants, rows)
}

fn matrix(skus: &[&str]) -> Value {
    let variants: Vec<Value> = skus
        .iter()
        .enumerate()
        .map(
            |(i, sku)| json!({"optionValues": {"Talle": format!("T{i}")}, "sku": sku, "cost": 1000, "price": 2500 + i}),
        )
        .collect();
    json!({"name": "Remera", "options": ["Talle"], "variants": variants})
}

/// A product's read shows its category's and default supplier's names: renaming either shows in the
/// next read, cached as it was.
#[sqlx::test(migrations = "../schema")]
async fn a_product_read_shows_a_renamed_category_and_supplier(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let supplier = json(app.post("/api/v1/suppliers", &json!({"name": "Textil Norte"})).await, 201).await;
    let supplier_id = supplier["data"]["id"].as_str().expect("id").to_owned();
    let category = json(app.post("/api/v1/categories", &json!({"name": "Ropa"})).await, 201).await;
    let category_id = category["data"]["id"].as_str().expect("id").to_owned();
    let body = json!({"name": "Remera", "sku": "REM-1", "price": 2500, "categoryId": category_id,
        "defaultSupplierId": supplier_id});
    let created = json(create(&app, &body).await, 201).await;
    let path = format!("/api/v1/products/{}", created["data"]["id"].as_str().expect("id"));
    // Two reads: the second is served from the cache.
    let first = json(app.get(&path).await, 200).await;
    assert_eq!(json(app.get(&path).await, 200).await["data"], first["data"]);

    json(app.put(&format!("/api/v1/categories/{category_id}"), &json!({"name": "Indumentaria"})).await, 200).await;
    let read = json(app.get(&path).await, 200).await;
    assert_eq!(read["data"]["category"], json!({"id": category_id, "name": "Indumentaria"}));

    json(app.put(&format!("/api/v1/suppliers/{supplier_id}"), &json!({"name": "Textil Sur"})).await, 200).await;
    let read = json(app.get(&path).await, 200).await;
    assert_eq!(read["data"]["defaultSupplier"], json!({"id": supplier_id, "name": "Textil Sur"}));
    assert_eq!(read["data"]["category"]["name"], "Indumentaria");
}

#[sqlx::test(migrations = "../schema")]
async fn single_products_and_matrices_are_created_and_read(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let supplier = json(app.post("/api/v1/suppliers", &json!({"name": "Textil Norte"})).await, 201).await;
    let supplier_id = supplier["data"]["id"].as_str().expect("id").to_owned();
    let category = json(app.post("/api/v1/categories", &json!({"name": "Ropa"})).await, 201).await;
    let category_id = category["data"]["id"].as_str().expect("id").to_owned();

    // The key is required.
    let single = json!({"name": "Yerba 1kg", "sku": "YER-1", "barcode": "7790001", "cost": 150000, "price": 250000,
        "taxRateId": 4, "categoryId": category_id, "defaultSupplierId": supplier_id, "stockMinimum": 5,
        "metafields": [{"key": "origen", "value": "Misiones"}]});
    error(app.post("/api/v1/products", &single).await, 400, "idempotency_error").await;

    let created = json(create(&app, &single).await, 201).await;
    let data = &created["data"];
    assert_eq!(data["name"], "Yerba 1kg");
    assert_eq!(data["price"], 250000);
    assert_eq!(data["taxRate"], json!({"id": 4, "value": 10.5}));
    assert_eq!(data["category"], json!({"id": category_id, "name": "Ropa"}));
    assert_eq!(data["defaultSupplier"], json!({"id": supplier_id, "name": "Textil Norte"}));
    assert_eq!(data["currency"], "PES");
    assert_eq!(data["productType"], "product");
    assert_eq!(data["isActive"], true);
    assert_eq!(data["tags"], json!([]));
    assert_eq!(data["metafields"], json!([{"key": "origen", "value": "Misiones"}]));
    assert_eq!(data["variants"].as_array().expect("variants").len(), 1);
    let id = data["id"].as_str().expect("id").to_owned();
    assert_eq!(data["variants"][0]["id"], id.as_str());
    let detail = json(app.get(&format!("/api/v1/products/{id}")).await, 200).await;
    assert_eq!(detail["data"]["sku"], "YER-1");
    assert_eq!(detail["data"]["effectivePrice"], 250000);
    assert!(detail["data"]["organizationSlug"].as_str().is_some_and(|s| !s.is_empty()));

    // A matrix: every variant has its own id and SKU, and names its group.
    let mut body = matrix(&["REM-S", "REM-M", "REM-L"]);
    let warehouses = json(app.get("/api/v1/warehouses").await, 200).await;
    let warehouse = warehouses["data"][0]["id"].clone();
    body["variants"][0]["warehouseStocks"] = json!([{"warehouseId": warehouse, "quantity": 12}]);
    body["defaultSupplierId"] = json!(supplier_id);
    let created = json(create(&app, &body).await, 201).await;
    let variants = created["data"]["variants"].as_array().expect("variants").clone();
    assert_eq!(
        variants.iter().map(|v| v["sku"].as_str().expect("sku")).collect::<Vec<_>>(),
        ["REM-S", "REM-M", "REM-L"]
    );
    let group = created["data"]["variantGroupId"].as_str().expect("group").to_owned();
    for variant in &variants {
        let read = json(app.get(&format!("/api/v1/products/{}", variant["id"].as_str().expect("id"))).await, 200).await;
        assert_eq!(read["data"]["variantGroupId"], group.as_str());
        assert_eq!(read["data"]["options"], json!(["Talle"]));
        assert_eq!(read["data"]["optionValues"], variant["optionValues"]);
    }
    let opening: String =
        sqlx::query_scalar("select data::text from events where event_type = 'ProductCreated' and stream_id = $1")
            .bind(Uuid::parse_str(&group).expect("uuid"))
            .fetch_one(&app.pool)
            .await
            .expect("event");
    assert!(
        opening.contains("\"quantity\": \"12\"") || opening.contains("\"quantity\":\"12\""),
        "opening stock recorded: {opening}"
    );

    // Lists: no metafields; query over name/SKU/barcode; supplier filter; fields.
    let list = json(app.get("/api/v1/products").await, 200).await;
    assert_eq!(list["data"].as_array().expect("data").len(), 4);
    assert!(list["data"].as_array().expect("data").iter().all(|p| p.get("metafields").is_none()));
    let found = json(app.get("/api/v1/products?query=rem-m").await, 200).await;
    assert_eq!(found["data"].as_array().expect("data").len(), 1);
    let found = json(app.get("/api/v1/products?query=7790001").await, 200).await;
    assert_eq!(found["data"][0]["id"], id.as_str());
    let by_supplier = json(app.get(&format!("/api/v1/products?default_supplier_id={supplier_id}")).await, 200).await;
    assert_eq!(by_supplier["data"].as_array().expect("data").len(), 4);
    let narrow = json(app.get("/api/v1/products?fields=name,sku&limit=2").await, 200).await;
    let keys: Vec<&String> = narrow["data"][0].as_object().expect("item").keys().collect();
    assert_eq!(keys.len(), 3, "id, name and sku only: {keys:?}");
    assert_eq!(narrow["has_more"], true);
    // A cursor belongs to the filters it was issued under: another search or supplier refuses it.
    let cursor = narrow["next_cursor"].as_str().expect("a cursor");
    json(app.get(&format!("/api/v1/products?limit=2&cursor={cursor}")).await, 200).await;
    for other in ["query=rem", &format!("default_supplier_id={supplier_id}")] {
        error(app.get(&format!("/api/v1/products?limit=2&{other}&cursor={cursor}")).await, 400, "invalid_request_error")
            .await;
    }
    let with_tags = json(app.get("/api/v1/products?fields=name,tags").await, 200).await;
    assert_eq!(with_tags["data"][0]["tags"], json!([]));
    error(app.get("/api/v1/products?fields=name,secret").await, 400, "invalid_request_error").await;
}

#[sqlx::test(migrations = "../schema")]
async fn rejected_products_leave_nothing_behind(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    json(create(&app, &matrix(&["TAKEN-1"])).await, 201).await;
    let before = counts(&app).await;

    let four = json!({"name": "x", "options": ["a", "b", "c", "d"], "variants": [{"optionValues": {"a": "1"}, "sku": "Z", "price": 1}]});
    let missing = json!({"name": "x", "options": ["Talle", "Color"], "variants": [{"optionValues": {"Talle": "M"}, "sku": "Z", "price": 1}]});
    let duplicate_values = json!({"name": "x", "options": ["Talle"], "variants": [
        {"optionValues": {"Talle": "M"}, "sku": "Z1", "price": 1}, {"optionValues": {"Talle": "M"}, "sku": "Z2", "price": 1}]});
    let duplicate_option = json!({"name": "x", "options": ["Talle"], "variants": [
        {"optionValues": [{"name": "Talle", "value": "M"}, {"name": "Talle", "value": "L"}], "sku": "Z1", "price": 1}]});
    let skus_in_request = matrix(&["DUP", "dup"]);
    let sku_in_org = matrix(&["NEW-1", "taken-1"]);
    let too_many =
        matrix(&(0..251).map(|i| format!("S{i}")).collect::<Vec<_>>().iter().map(String::as_str).collect::<Vec<_>>());
    let empty_metafield = json!({"name": "x", "sku": "Z", "price": 1, "metafields": [{"key": "color", "value": ""}]});
    let unknown_refs = json!({"name": "x", "sku": "Z", "price": 1, "categoryId": Uuid::now_v7(), "defaultSupplierId": Uuid::now_v7(),
        "warehouseStocks": [{"warehouseId": Uuid::now_v7(), "quantity": 1}]});
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (four, vec!["options"]),
        (missing, vec!["variants[0].optionValues"]),
        (duplicate_values, vec!["variants[1].optionValues"]),
        (duplicate_option, vec!["variants[0].optionValues"]),
        (skus_in_request, vec!["variants[1].sku"]),
        (sku_in_org, vec!["variants[1].sku"]),
        (too_many, vec!["variants"]),
        (empty_metafield, vec!["metafields[0].value"]),
        (unknown_refs, vec!["categoryId", "defaultSupplierId", "warehouseStocks"]),
    ];
    for (body, expected) in cases {
        let refused = refused(create(&app, &body).await).await;
        let mut fields = detail_fields(&refused);
        fields.sort();
        fields.dedup();
        assert_eq!(fields, expected, "{refused}");
        assert_eq!(counts(&app).await, before, "nothing written for {expected:?}");
    }

    // PUT refuses metafields, and a SKU another variant holds.
    let other = json(create(&app, &json!({"name": "Otro", "sku": "OTRO", "price": 100})).await, 201).await;
    let path = format!("/api/v1/products/{}", other["data"]["id"].as_str().expect("id"));
    let before = counts(&app).await;
    let refused = error(
        app.put(
            &path,
            &json!({"name": "Otro", "sku": "OTRO", "price": 100, "metafields": [{"key": "a", "value": "b"}]}),
        )
        .await,
        400,
        "invalid_request_error",
    )
    .await;
    assert_eq!(detail_fields(&refused), ["metafields"]);
    let refused =
        error(app.put(&path, &json!({"name": "Otro", "sku": "Taken-1", "price": 100})).await, 409, "business_error")
            .await;
    assert_eq!(detail_fields(&refused), ["sku"]);
    assert_eq!(counts(&app).await, before);
    error(
        app.put(&format!("/api/v1/products/{}", Uuid::now_v7()), &json!({"name": "x", "sku": "x", "price": 1})).await,
        404,
        "invalid_request_error",
    )
    .await;
}

/// A sender for the test receiver: loopback allowed, its CA trusted, quick polls.
fn sender(receiver: &Receiver) -> SenderConfig {
    SenderConfig {
        allow_private: dispatch::parse_networks("127.0.0.0/8").expect("networks"),
        ca_file: Some(receiver.ca_file.clone()),
        poll: Duration::from_millis(50),
        ..SenderConfig::default()
    }
}

/// Creates an endpoint for `events` delivering to `url`.
async fn subscribe(app: &TestApp, url: String, events: &[&str]) {
    let endpoint = json!({"label": "Tienda", "url": url, "enabled_events": events, "api_version": "2026-06-29"});
    json(app.post_keyed("/api/v1/webhook-endpoints", &endpoint).await, 201).await;
}

/// An organization without endpoints costs the webhook sender no transaction: the webhooks projection
/// passes its events over (its progress says it wrote nothing) and nothing is ever delivered for them,
/// while events after the organization's first endpoint are delivered as usual.
#[sqlx::test(migrations = "../schema")]
async fn events_before_the_first_endpoint_are_passed_over_and_never_delivered(pool: PgPool) {
    use futures::StreamExt;
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    let mut progress = app.bus.client.subscribe(app.bus.progress_subject("webhooks")).await.expect("subscribe");
    json(create(&app, &matrix(&["PO-S"])).await, 201).await;
    let (transaction_id, position): (i64, i64) =
        sqlx::query_as("select transaction_id::text::int8, position from events order by position desc limit 1")
            .fetch_one(&app.pool)
            .await
            .expect("last event");
    let key = events::CommitKey::new(transaction_id, position);
    let passed = loop {
        let message = tokio::time::timeout(Duration::from_secs(10), progress.next())
            .await
            .expect("webhooks progress")
            .expect("subscription open");
        let reported: projections::progress::Progress = serde_json::from_slice(&message.payload).expect("progress");
        if reported.key >= key {
            break reported;
        }
    };
    assert!(!passed.changed, "the batch holding the product wrote nothing: {passed:?}");
    let checkpoints: i64 =
        sqlx::query_scalar("select count(*) from projection_checkpoints where projection = 'webhooks' and org_id = $1")
            .bind(app.org_id)
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(checkpoints, 0, "no transaction for an organization without endpoints");

    subscribe(&app, receiver.url("/late"), &["product.created"]).await;
    json(create(&app, &matrix(&["PO-M"])).await, 201).await;
    let got = receiver.wait_for("/late", 1).await;
    assert_eq!(got[0].json()["data"]["object"]["sku"], "PO-M");
    let deliveries: Vec<String> =
        sqlx::query_scalar("select event_type from webhook_deliveries").fetch_all(&app.pool).await.expect("deliveries");
    assert_eq!(deliveries, ["product.created"], "only the product created after the endpoint");
}

#[sqlx::test(migrations = "../schema")]
async fn product_events_reach_subscribed_endpoints(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(sender(&receiver))).await;
    subscribe(&app, receiver.url("/products"), &["product.created", "product.updated"]).await;
    subscribe(&app, receiver.url("/other"), &["webhook_endpoint.disabled"]).await;

    let created = json(create(&app, &matrix(&["EV-S", "EV-M"])).await, 201).await;
    let group = created["data"]["variantGroupId"].as_str().expect("group").to_owned();
    let got = receiver.wait_for("/products", 2).await;
    let ids: Vec<&str> = got.iter().map(|r| r.header("service-event-id")).collect();
    assert_ne!(ids[0], ids[1], "one event per variant");
    for delivery in &got {
        let body = delivery.json();
        assert_eq!(body["type"], "product.created");
        let object = &body["data"]["object"];
        assert_eq!(object["object"], "product");
        assert_eq!(object["variant_group_id"], group.as_str());
        assert_eq!(object["cost"], 1000, "cents");
        assert!(object.get("changed_fields").is_none());
    }

    // A shared change: one update per variant, with changed_fields in the fixed order.
    let first = created["data"]["variants"][0]["id"].as_str().expect("id").to_owned();
    let path = format!("/api/v1/products/{first}");
    json(app.put(&path, &json!({"name": "Remera lisa", "sku": "EV-S", "cost": 1000, "price": 2600})).await, 200).await;
    let got = receiver.wait_for("/products", 4).await;
    let updates: Vec<Value> = got[2..].iter().map(|r| r.json()).collect();
    assert!(updates.iter().all(|u| u["type"] == "product.updated"));
    let first_update = updates.iter().find(|u| u["data"]["object"]["id"] == first.as_str()).expect("first variant");
    assert_eq!(first_update["data"]["object"]["changed_fields"], json!(["name", "price"]));
    assert_eq!(first_update["data"]["object"]["price"], 2600);
    let second_update = updates.iter().find(|u| u["data"]["object"]["id"] != first.as_str()).expect("second variant");
    assert_eq!(second_update["data"]["object"]["changed_fields"], json!(["name"]));
    assert_eq!(second_update["data"]["object"]["name"], "Remera lisa");
    let second = second_update["data"]["object"]["id"].as_str().expect("id").to_owned();
    assert_eq!(json(app.get(&format!("/api/v1/products/{second}")).await, 200).await["data"]["name"], "Remera lisa");

    // The same stored values again: no event. A later change proves the sender kept going.
    json(app.put(&path, &json!({"name": "Remera lisa", "sku": "EV-S", "cost": 1000, "price": 2600})).await, 200).await;
    json(app.put(&path, &json!({"name": "Remera lisa", "sku": "EV-S", "cost": 1100, "price": 2600})).await, 200).await;
    let got = receiver.wait_for("/products", 5).await;
    assert_eq!(got.len(), 5, "the no-op replace sent nothing");
    assert_eq!(got[4].json()["data"]["object"]["changed_fields"], json!(["cost"]));
    assert!(receiver.received("/other").is_empty(), "endpoints receive only the events they enabled");
}

async fn define(app: &TestApp, body: Value) -> Response {
    app.post("/api/v1/products/metafield-definitions", &body).await
}

async fn patch(app: &TestApp, path: &str, body: Value) -> Response {
    app.request(reqwest::Method::PATCH, path, Some(&app.api_key), Some(&body)).await
}

#[sqlx::test(migrations = "../schema")]
async fn custom_fields_follow_their_definitions(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let weight = json(define(&app, json!({"key": "peso_kg", "name": "Peso", "valueType": "decimal"})).await, 201).await;
    assert_eq!(weight["data"]["valueType"], "decimal");
    json(
        define(&app, json!({"key": "temporada", "valueType": "choice", "choices": ["verano", "invierno"]})).await,
        201,
    )
    .await;
    json(define(&app, json!({"key": "nota", "valueType": "text", "maxLength": 5})).await, 201).await;
    let refused = error(define(&app, json!({"key": "peso_kg"})).await, 409, "business_error").await;
    assert_eq!(detail_fields(&refused), ["key"], "keys are unique");
    let refused =
        error(define(&app, json!({"key": "Mal Key", "valueType": "color"})).await, 400, "invalid_request_error").await;
    let mut fields = detail_fields(&refused);
    fields.sort();
    assert_eq!(fields, ["key", "valueType"]);
    let listed = json(app.get("/api/v1/products/metafield-definitions").await, 200).await;
    let keys: Vec<&str> = listed["data"].as_array().expect("data").iter().filter_map(|d| d["key"].as_str()).collect();
    assert_eq!(keys, ["peso_kg", "temporada", "nota"]);

    // Creation validates defined keys; undefined keys hold free text.
    let before = counts(&app).await;
    let bad = json!({"name": "Campera", "sku": "CAM", "price": 1, "metafields": [
        {"key": "peso_kg", "value": "pesado"}, {"key": "temporada", "value": "otoño"}, {"key": "libre", "value": "cualquier cosa"}]});
    // Only the organization's definitions refuse these values: a conflict with them, not a malformed body.
    let refused = error(create(&app, &bad).await, 409, "business_error").await;
    assert_eq!(detail_fields(&refused), ["metafields[0].value", "metafields[1].value"]);
    assert_eq!(counts(&app).await, before);
    let good = json!({"name": "Campera", "sku": "CAM", "price": 1, "metafields": [
        {"key": "peso_kg", "value": "1.25"}, {"key": "libre", "value": "cualquier cosa"}]});
    let created = json(create(&app, &good).await, 201).await;
    let id = created["data"]["id"].as_str().expect("id").to_owned();
    let path = format!("/api/v1/products/{id}/metafields");

    // PATCH: a string assigns, null deletes, an empty string is refused.
    let refused =
        error(patch(&app, &path, json!({"entries": {"temporada": ""}})).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["entries.temporada"]);
    let refused =
        error(patch(&app, &path, json!({"entries": {"nota": "demasiado"}})).await, 409, "business_error").await;
    assert_eq!(detail_fields(&refused), ["entries.nota"]);
    let patched =
        json(patch(&app, &path, json!({"entries": {"temporada": "invierno", "libre": null}})).await, 200).await;
    assert_eq!(
        patched["data"]["metafields"],
        json!([{"key": "peso_kg", "value": "1.25"}, {"key": "temporada", "value": "invierno"}])
    );
    let read = json(app.get(&format!("/api/v1/products/{id}")).await, 200).await;
    assert_eq!(read["data"]["metafields"], patched["data"]["metafields"]);
    let before = app.event_count().await;
    json(patch(&app, &path, json!({"entries": {"temporada": "invierno"}})).await, 200).await;
    assert_eq!(app.event_count().await, before, "the same values record nothing");
    error(
        app.request(
            reqwest::Method::PATCH,
            &format!("/api/v1/products/{}/metafields", Uuid::now_v7()),
            Some(&app.api_key),
            Some(&json!({"entries": {"a": "b"}})),
        )
        .await,
        404,
        "invalid_request_error",
    )
    .await;
}

async fn bulk(app: &TestApp, key: &str, body: &Value) -> Response {
    app.post_key("/api/v1/products/bulk-adjustments", key, body).await
}

#[sqlx::test(migrations = "../schema")]
async fn bulk_adjustments_change_every_matching_variant_at_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let supplier = |name: &'static str| {
        let app = &app;
        async move { json(app.post("/api/v1/suppliers", &json!({"name": name})).await, 201).await["data"]["id"].clone() }
    };
    let (ours, theirs) = (supplier("Propio").await, supplier("Ajeno").await);
    let mut ids = Vec::new();
    for (sku, price) in [("A1", 1000), ("A2", 2005), ("A3", 3)] {
        let body = json!({"name": sku, "sku": sku, "price": price, "cost": price / 2, "defaultSupplierId": ours});
        ids.push(json(create(&app, &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned());
    }
    let mut group = matrix(&["M1", "M2"]);
    group["defaultSupplierId"] = ours.clone();
    let created = json(create(&app, &group).await, 201).await;
    for v in created["data"]["variants"].as_array().expect("variants") {
        ids.push(v["id"].as_str().expect("id").to_owned());
    }
    let other =
        json(create(&app, &json!({"name": "B", "sku": "B1", "price": 1000, "defaultSupplierId": theirs})).await, 201)
            .await;
    let other_id = other["data"]["id"].as_str().expect("id").to_owned();

    // Rejections write nothing.
    let before = counts(&app).await;
    for (body, field) in [
        (json!({"target": "price", "percentage": 10}), "filter"),
        (json!({"target": "price", "default_supplier_id": ours, "percentage": 10, "amount": 5}), "amount"),
        (json!({"target": "margin", "default_supplier_id": ours, "percentage": 10}), "target"),
        (json!({"target": "price", "product_ids": [Uuid::now_v7()], "percentage": 10}), "product_ids[0]"),
    ] {
        let refused = refused(bulk(&app, &Uuid::now_v7().to_string(), &body).await).await;
        assert_eq!(detail_fields(&refused), [field], "{refused}");
    }
    assert_eq!(counts(&app).await, before);

    // +10% on our supplier's prices: five variants match, rounded half away from zero.
    let body = json!({"target": "price", "default_supplier_id": ours, "percentage": 10});
    let done = json(bulk(&app, "ajuste-1", &body).await, 200).await;
    assert_eq!(done["data"]["object"], "bulk_adjustment");
    assert_eq!(done["data"]["matched_variants"], 5);
    assert_eq!(done["data"]["affected_variants"], 4, "3 cents plus 10% stays 3 cents");
    assert_eq!(done["data"]["unchanged_variants"], 1);
    assert_eq!(done["data"]["affected_products"], 3);
    assert_eq!(done["data"]["synchronization_effects"], json!([]));
    // The change as applied, in the form it has always had: the percentage a JSON float.
    assert_eq!(done["data"]["change"], json!({"kind": "percentage", "value": 10.0}));
    let price = |id: String| {
        let app = &app;
        async move {
            json(app.get(&format!("/api/v1/products/{id}")).await, 200).await["data"]["price"].as_i64().expect("price")
        }
    };
    assert_eq!(price(ids[0].clone()).await, 1100);
    assert_eq!(price(ids[1].clone()).await, 2206, "2205.5 rounds up");
    assert_eq!(price(ids[2].clone()).await, 3, "3.3 rounds down");
    assert_eq!(price(ids[3].clone()).await, 2750);
    assert_eq!(price(other_id.clone()).await, 1000, "another supplier's product is untouched");

    // A replay answers the same and adjusts nothing more.
    let events = app.event_count().await;
    let again = json(bulk(&app, "ajuste-1", &body).await, 200).await;
    assert_eq!(again["data"], done["data"]);
    assert_eq!(app.event_count().await, events);
    assert_eq!(price(ids[0].clone()).await, 1100);

    // A fixed amount on explicit ids; costs never go below zero.
    let body = json!({"target": "cost", "product_ids": [ids[0], ids[2]], "amount": -600});
    let done = json(bulk(&app, "ajuste-2", &body).await, 200).await;
    assert_eq!(done["data"]["affected_variants"], 2);
    assert_eq!(done["data"]["change"], json!({"kind": "amount", "value": -600}));
    let cost = json(app.get(&format!("/api/v1/products/{}", ids[0])).await, 200).await["data"]["cost"].clone();
    assert_eq!(cost, 0, "500 - 600 stops at zero");
}

/// An inactive variant's cost moves like any other's (its change is recorded, not only counted), a
/// filter naming nothing of the organization is 404, and an inactive warehouse takes no opening stock.
#[sqlx::test(migrations = "../schema")]
async fn bulk_adjustments_reach_inactive_variants_and_refuse_unknown_filters(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut body = json!({"name": "Viejo", "sku": "OLD", "price": 1000, "cost": 500});
    let id = json(create(&app, &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    body["isActive"] = json!(false);
    let retired = json(app.put(&format!("/api/v1/products/{id}"), &body).await, 200).await;
    assert_eq!(retired["data"]["isActive"], false);
    let done = json(bulk(&app, "ajuste", &json!({"target": "cost", "product_ids": [id], "percentage": 10})).await, 200).await;
    assert_eq!(done["data"]["affected_variants"], 1);
    let read = json(app.get(&format!("/api/v1/products/{id}")).await, 200).await["data"].clone();
    assert_eq!((read["cost"].as_i64(), read["isActive"].as_bool()), (Some(550), Some(false)));

    let supplier = json(app.post("/api/v1/suppliers", &json!({"name": "Propio"})).await, 201).await["data"]["id"].clone();
    let shut = json(app.post("/api/v1/warehouses", &json!({"name": "Cerrado", "isActive": false})).await, 201).await;
    let before = counts(&app).await;
    for field in ["default_supplier_id", "category_id"] {
        let mut body = json!({"target": "cost", "percentage": 10});
        body[field] = json!(Uuid::now_v7());
        let refused = error(bulk(&app, &Uuid::now_v7().to_string(), &body).await, 404, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), [field]);
    }
    let mixed = json!({"target": "cost", "default_supplier_id": supplier, "product_ids": [Uuid::now_v7()], "percentage": 10});
    let refused = error(bulk(&app, &Uuid::now_v7().to_string(), &mixed).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["product_ids[0]"]);

    let stocked = json!({"name": "Nuevo", "sku": "NEW", "price": 1000,
        "warehouseStocks": [{"warehouseId": shut["data"]["id"], "quantity": 5}]});
    let refused = error(create(&app, &stocked).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["warehouseStocks"]);
    assert_eq!(counts(&app).await, before, "nothing was written");
}

/// A service holds no stock, as a combo holds none of its own: its creation with opening stock, on
/// itself or on one of its variants, is refused as a combo's is (400 `not_allowed` naming the
/// `warehouseStocks` at fault), and nothing reaches the events or the stock ledger.
#[sqlx::test(migrations = "../schema")]
async fn a_service_with_opening_stock_is_refused_as_a_combo_is(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let opening = json!([{"warehouseId": main, "quantity": 5}]);
    let stocked = json!({"name": "Mate", "sku": "MATE", "price": 1000, "warehouseStocks": opening});
    let mate = id_of(&json(create(&app, &stocked).await, 201).await);
    let ledger = || async { items(&json(app.get("/api/v1/inventory/movements").await, 200).await) };
    let (before, rows) = (counts(&app).await, ledger().await);
    assert_eq!(rows.len(), 1, "the mate's opening stock: {rows:?}");

    let stock = json!([{"warehouseId": main, "quantity": 3}]);
    let service =
        json!({"name": "Flete", "sku": "FLETE", "price": 5000, "productType": "service", "warehouseStocks": stock});
    let mut empty = service.clone();
    empty["warehouseStocks"] = json!([]);
    let variants = json!({"name": "Instalación", "productType": "service", "options": ["Zona"], "variants": [
        {"optionValues": {"Zona": "Norte"}, "sku": "INST-N", "price": 1000},
        {"optionValues": {"Zona": "Sur"}, "sku": "INST-S", "price": 1000, "warehouseStocks": stock}]});
    let combo = json!({"name": "Kit", "sku": "KIT", "price": 3000, "productType": "combo",
        "components": [{"productId": mate, "quantity": 1}], "warehouseStocks": stock});
    for (body, field) in [
        (&combo, "warehouseStocks"),
        (&service, "warehouseStocks"),
        (&empty, "warehouseStocks"),
        (&variants, "variants[1].warehouseStocks"),
    ] {
        let refused = error(create(&app, body).await, 400, "invalid_request_error").await;
        assert_eq!(refused["error"]["code"], "VALIDATION_FAILED", "{refused}");
        assert_eq!(detail_fields(&refused), [field], "{refused}");
        assert_eq!(refused["error"]["details"][0]["code"], "not_allowed", "{refused}");
        assert_eq!(counts(&app).await, before, "nothing written for {body}");
        assert_eq!(ledger().await, rows, "no opening stock in the ledger for {body}");
    }

    // Without opening stock the service is created, and holds none.
    let plain = json!({"name": "Flete", "sku": "FLETE", "price": 5000, "productType": "service"});
    let flete = id_of(&json(create(&app, &plain).await, 201).await);
    let levels = json(app.get(&format!("/api/v1/inventory?product_id={flete}")).await, 200).await;
    assert!(items(&levels).is_empty(), "a service holds no stock: {levels}");
    assert_eq!(ledger().await, rows);
}

/// The product read joins nothing another projection must have caught up with: with the organizations
/// projection not running at all, a new organization's product is created and read at once.
#[sqlx::test(migrations = "../schema")]
async fn products_are_readable_while_the_organizations_projection_lags(pool: PgPool) {
    let app = TestApp::spawn_without(pool, &["organizations"]).await;
    let created = json(create(&app, &matrix(&["LAG-1"])).await, 201).await;
    let id = created["data"]["variants"][0]["id"].as_str().expect("variant id").to_owned();
    let read = json(app.get(&format!("/api/v1/products/{id}")).await, 200).await;
    assert_eq!(read["data"]["sku"], "LAG-1");
    assert_eq!(json(app.get("/api/v1/products").await, 200).await["data"].as_array().map(Vec::len), Some(1));
}

/// A combo's detail shows its components' names: renaming one shows in the combo's next read, cached
/// as it was.
#[sqlx::test(migrations = "../schema")]
async fn a_combo_read_shows_a_renamed_component(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mate = json!({"name": "Mate de calabaza", "sku": "MATE", "price": 1000});
    let mate_id = json(create(&app, &mate).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    let kit = json!({"name": "Kit matero", "sku": "KIT", "price": 3000, "productType": "combo",
        "components": [{"productId": mate_id, "quantity": 2}]});
    let created = json(create(&app, &kit).await, 201).await;
    let path = format!("/api/v1/products/{}", created["data"]["id"].as_str().expect("id"));
    // Two reads: the second is served from the cache.
    let first = json(app.get(&path).await, 200).await;
    assert_eq!(json(app.get(&path).await, 200).await["data"], first["data"]);
    assert_eq!(first["data"]["components"][0]["name"], "Mate de calabaza");

    let renamed = json!({"name": "Mate imperial", "sku": "MATE", "price": 1000});
    json(app.put(&format!("/api/v1/products/{mate_id}"), &renamed).await, 200).await;
    let read = json(app.get(&path).await, 200).await;
    assert_eq!(read["data"]["components"], json!([{"productId": mate_id, "name": "Mate imperial", "quantity": "2"}]));
}

#[sqlx::test(migrations = "../schema")]
async fn a_combo_detail_lists_its_components(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let single = |sku: &str, name: &str| json!({"name": name, "sku": sku, "price": 1000});
    let mate = json(create(&app, &single("MATE", "Mate de calabaza")).await, 201).await["data"]["id"].clone();
    let bombilla = json(create(&app, &single("BOMBILLA", "Bombilla de alpaca")).await, 201).await["data"]["id"].clone();
    let kit = json!({"name": "Kit matero", "sku": "KIT", "price": 3000, "productType": "combo",
        "components": [{"productId": mate, "quantity": 2}, {"productId": bombilla, "quantity": "0.5"}]});
    let created = json(create(&app, &kit).await, 201).await;
    let listed = json!([
        {"productId": mate, "name": "Mate de calabaza", "quantity": "2"},
        {"productId": bombilla, "name": "Bombilla de alpaca", "quantity": "0.5"},
    ]);
    assert_eq!(created["data"]["components"], listed, "the creation answers with the detail");
    let id = created["data"]["id"].as_str().expect("id").to_owned();
    let detail = json(app.get(&format!("/api/v1/products/{id}")).await, 200).await;
    assert_eq!(detail["data"]["productType"], "combo");
    assert_eq!(detail["data"]["components"], listed);

    // Any other product's detail has none; lists never carry them.
    let other = json(app.get(&format!("/api/v1/products/{}", mate.as_str().expect("id"))).await, 200).await;
    assert_eq!(other["data"]["components"], json!([]));
    let list = json(app.get("/api/v1/products").await, 200).await;
    assert!(list["data"].as_array().expect("data").iter().all(|p| p.get("components").is_none()));

    // A replace that changes the components shows the new ones.
    let replaced = json!({"name": "Kit matero", "sku": "KIT", "price": 3000, "productType": "combo",
        "components": [{"productId": bombilla, "quantity": 3}]});
    let answer = json(app.put(&format!("/api/v1/products/{id}"), &replaced).await, 200).await;
    let now = json!([{"productId": bombilla, "name": "Bombilla de alpaca", "quantity": "3"}]);
    assert_eq!(answer["data"]["components"], now);
    let detail = json(app.get(&format!("/api/v1/products/{id}")).await, 200).await;
    assert_eq!(detail["data"]["components"], now);

    // An inactive product is no component (spec: platform rule 2): 404 naming it, nothing created.
    let retired = json!({"name": "Mate de calabaza", "sku": "MATE", "price": 1000, "isActive": false});
    json(app.put(&format!("/api/v1/products/{}", mate.as_str().expect("id")), &retired).await, 200).await;
    let events = app.event_count().await;
    let with_retired = json!({"name": "Kit viejo", "sku": "KIT-2", "price": 3000, "productType": "combo",
        "components": [{"productId": mate, "quantity": 1}]});
    let refused = error(create(&app, &with_retired).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["components[0].productId"]);
    assert_eq!(app.event_count().await, events);
}
