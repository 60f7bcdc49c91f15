//! Tenancy: every route that takes an id, walked from the OpenAPI document, answers 404 for another
//! organization's records exactly as for ids that do not exist, and writes nothing; and the
//! configuration records stay out of other organizations' lists, parents and default flags.

use crate::helpers::{
    CATEGORIES, PAYMENT_METHODS, TestApp, V2_WAREHOUSES, WAREHOUSES, create, error, id_of, ids, items, json, style_a,
    style_b, v2_error,
};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::HashMap;
use uuid::Uuid;

/// A body valid for the write routes taking an id under `segment`, so only tenancy can make them fail.
fn valid_body(segment: &str, path: &str, method: &Method) -> Value {
    if segment == "treasury" {
        // A manual movement's replacement, or its deletion (the version read, alone).
        return if *method == Method::DELETE {
            json!({"updated_at": "2026-01-02T10:00:00-03:00"})
        } else {
            json!({"balance_type": "cash_register", "balance_id": "00000000-0000-7000-8000-000000000000",
                "direction": "income", "amount": 1, "occurred_on": "2026-01-02",
                "account_id": "00000000-0000-7000-8000-000000000000", "updated_at": "2026-01-02T10:00:00-03:00"})
        };
    }
    if path.ends_with("/allocations") {
        let document = if segment == "customer-payments" { "sale_id" } else { "purchase_id" };
        return json!({"allocations": [{ document: "00000000-0000-7000-8000-000000000000", "amount": 1 }]});
    }
    if path.ends_with("/metafields") {
        return json!({"entries": {"nota": "x"}});
    }
    if path.ends_with("/receipts") {
        return json!({"lines": [{"productId": "00000000-0000-7000-8000-000000000000", "quantity": 1}]});
    }
    match segment {
        "quotes" => json!({"customer_id": "00000000-0000-7000-8000-000000000000",
            "items": [{"product_id": "00000000-0000-7000-8000-000000000000", "quantity": 1, "unit_price": 1}]}),
        "webhook-endpoints" => json!({"label": "Intruso"}),
        // A notes-only edit (the other order writes take no body).
        "orders" => json!({"notes": "Intruso"}),
        // A void takes an empty body.
        "customer-payments" | "supplier-payments" => json!({}),
        "products" => json!({"name": "Intruso", "sku": "INTRUSO", "price": 1}),
        _ => json!({"name": "Intruso"}),
    }
}

/// Creates a record of `segment` with the least body its documented create schema accepts (each
/// required property filled from its type), answering its id; `None` where there is no such create or
/// it is refused (a body that needs other records).
async fn created_from_the_document(app: &TestApp, spec: &Value, segment: &str) -> Option<String> {
    let create = &spec["paths"][format!("/api/v1/{segment}")]["post"];
    let schema = &create["requestBody"]["content"]["application/json"]["schema"];
    let body = least_value(spec, schema)?;
    let created = app.post_keyed(&format!("/api/v1/{segment}"), &body).await;
    if created.status() != reqwest::StatusCode::CREATED {
        return None;
    }
    let created = json(created, 201).await;
    created["data"]["id"].as_str().map(str::to_owned)
}

/// The least value of a schema: an object of its required properties, a string of its first enum value
/// or else a short name, a number of its minimum or 1, `true`, or an empty list.
fn least_value(spec: &Value, schema: &Value) -> Option<Value> {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.strip_prefix("#/components/schemas/")?;
        return least_value(spec, &spec["components"]["schemas"][name]);
    }
    if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
        return Some(first.clone());
    }
    match schema["type"].as_str() {
        Some("object") | None if schema["properties"].is_object() => {
            let mut object = serde_json::Map::new();
            for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                object.insert(name.to_owned(), least_value(spec, &schema["properties"][name])?);
            }
            Some(Value::Object(object))
        }
        Some("string") => Some(json!("Intruso")),
        Some("integer") | Some("number") => Some(schema["minimum"].as_f64().map_or(json!(1), |m| json!(m.max(1.0) as i64))),
        Some("boolean") => Some(json!(true)),
        Some("array") => Some(json!([])),
        _ => None,
    }
}

#[sqlx::test(migrations = "../schema")]
async fn every_route_with_an_id_hides_other_organizations(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, intruder) = app.other_org().await;
    let mut ids: HashMap<&str, String> = HashMap::new();
    let customer = json(app.post("/api/v1/customers", &json!({"name": "Ana"})).await, 201).await;
    ids.insert("customers", customer["data"]["id"].as_str().expect("id").to_owned());
    // Categories, tags and price lists are made from the document alone, as a new domain's records are.
    for (segment, body) in [
        ("payment-methods", json!({"name": "Tarjeta"})),
        ("warehouses", json!({"name": "Norte"})),
        ("suppliers", json!({"name": "Distribuidora Sur"})),
    ] {
        let created = json(app.post(&format!("/api/v1/{segment}"), &body).await, 201).await;
        ids.insert(segment, created["data"]["id"].as_str().expect("id").to_owned());
    }
    let hook = json!({"label": "Tienda", "url": "https://example.com/hook", "enabled_events": ["product.created"],
        "api_version": "2026-06-29"});
    let created = app.post_key("/api/v1/webhook-endpoints", "tenancy-hook", &hook).await;
    let created = json(created, 201).await;
    ids.insert("webhook-endpoints", created["data"]["id"].as_str().expect("id").to_owned());
    let yerba = json!({"name": "Yerba", "sku": "YER", "price": 100});
    let product = app.post_key("/api/v1/products", "tenancy-product", &yerba).await;
    let product = json(product, 201).await;
    ids.insert("products", product["data"]["id"].as_str().expect("id").to_owned());
    let south = json(app.post("/api/v1/warehouses", &json!({"name": "Sur"})).await, 201).await;
    let transfer = json!({"origin_warehouse_id": ids["warehouses"], "destination_warehouse_id": south["data"]["id"],
        "items": [{"product_id": ids["products"], "quantity": 1}]});
    let transfer = json(app.post("/api/v1/stock-transfers", &transfer).await, 201).await;
    ids.insert("stock-transfers", transfer["data"]["id"].as_str().expect("id").to_owned());
    let supplier = ids["suppliers"].clone();
    let purchase = json!({"supplierId": supplier, "voucherType": 1, "supplierInvoiceNumber": "T-1",
        "invoiceDate": "2026-01-02", "items": [{"productId": ids["products"], "quantity": 1, "unitCost": 100}]});
    let purchase = json(app.post_keyed("/api/v1/purchases", &purchase).await, 201).await;
    ids.insert("purchases", purchase["data"]["id"].as_str().expect("id").to_owned());
    let order = json!({"supplierId": supplier, "warehouseId": ids["warehouses"],
        "items": [{"productId": ids["products"], "quantity": 1, "unitCost": 100}]});
    let order = json(app.post_keyed("/api/v1/purchase-orders", &order).await, 201).await;
    ids.insert("purchase-orders", order["data"]["id"].as_str().expect("id").to_owned());
    let point = crate::helpers::seeded(&app, "/api/v1/points-of-sale", "Punto de venta 1").await;
    let pos = point["id"].as_str().expect("a point of sale").to_owned();
    let sale = json!({"voucherType": 90, "pointOfSaleId": pos, "invoiceDate": "2026-01-02",
        "items": [{"name": "Presupuesto", "quantity": 1, "unitPrice": 100}]});
    let sale = json(app.post_keyed("/api/v1/sales", &sale).await, 201).await;
    ids.insert("sales", sale["data"]["id"].as_str().expect("id").to_owned());
    let quote = json!({"customer_id": ids["customers"], "items": [{"product_id": ids["products"], "quantity": 1, "unit_price": 100}]});
    let quote = json(app.post_keyed("/api/v1/quotes", &quote).await, 201).await;
    ids.insert("quotes", quote["data"]["id"].as_str().expect("id").to_owned());
    let order =
        json!({"customer_id": ids["customers"], "lines": [{"name": "Flete", "quantity": 1, "unit_price": 100}]});
    let order = json(app.post_keyed("/api/v1/orders", &order).await, 201).await;
    ids.insert("orders", order["data"]["id"].as_str().expect("id").to_owned());
    let note = json!({"origin": {"type": "custom"}, "customer_id": ids["customers"], "point_of_sale_id": pos,
        "warehouse_id": ids["warehouses"], "items": [{"is_custom": true, "name": "Folletos", "quantity": 1}]});
    let note = json(app.post_keyed("/api/v1/delivery-notes", &note).await, 201).await;
    ids.insert("delivery-notes", note["data"]["id"].as_str().expect("id").to_owned());
    use events::catalogue::{Currency, LocationKind};
    let org = app.org_id;
    let bank = crate::treasury::open(&app, org, LocationKind::BankAccount, "Banco", Currency::Pes).await;
    ids.insert("bank-accounts", bank);
    let register = crate::treasury::open(&app, org, LocationKind::CashRegister, "Caja", Currency::Pes).await;
    let safe = crate::treasury::open(&app, org, LocationKind::Safe, "Tesoro", Currency::Pes).await;
    let moved = crate::treasury::transfer(("cash_register", &register), ("safe", &safe), 100, "2026-01-02");
    let moved = json(app.post_keyed("/api/v1/funds-transfers", &moved).await, 201).await;
    ids.insert("funds-transfers", moved["data"]["id"].as_str().expect("id").to_owned());
    let movement = moved["data"]["accounting_effects"][0]["treasury_movement_id"].as_str().expect("movement");
    ids.insert("treasury", movement.to_owned());
    for (segment, contact) in [("customer-payments", "customer_id"), ("supplier-payments", "supplier_id")] {
        let owner = if contact == "customer_id" { &ids["customers"] } else { &ids["suppliers"] };
        let payment = json!({ contact: owner, "occurred_on": "2026-01-02", "lines": [{ "payment_method_id":
            ids["payment-methods"], "amount": 100, "balance_type": "cash_register", "balance_id": register }] });
        let payment = json(app.post_keyed(&format!("/api/v1/{segment}"), &payment).await, 201).await;
        ids.insert(segment, payment["data"]["id"].as_str().expect("id").to_owned());
    }
    ids.insert("cash-registers", register);
    ids.insert("safes", safe);

    let spec = json(app.request(Method::GET, "/openapi.json", None, None).await, 200).await;
    // A resource whose create body needs no other record gets one from its documented schema: a new
    // domain needs a line above only when its records refer to others.
    for path in spec["paths"].as_object().expect("paths").keys() {
        let segment = path.split('/').nth(3).expect("resource segment");
        if path.contains('{')
            && !ids.contains_key(segment)
            && let Some(id) = created_from_the_document(&app, &spec, segment).await
        {
            ids.insert(segment, id);
        }
    }
    for segment in ["categories", "tags", "price-lists"] {
        assert!(ids.contains_key(segment), "{segment} made from its documented body");
    }
    let before = app.event_count().await;
    let mut walked = 0;
    for (path, operations) in spec["paths"].as_object().expect("paths") {
        if !path.contains('{') {
            continue;
        }
        let segment = path.split('/').nth(3).expect("resource segment");
        let id = ids
            .get(segment)
            .unwrap_or_else(|| panic!("no record of another organization for {path}: extend this test"));
        let concrete = path
            .split('/')
            .map(|part| if part.starts_with('{') { id.as_str() } else { part })
            .collect::<Vec<_>>()
            .join("/");
        let unknown = path
            .split('/')
            .map(|part| if part.starts_with('{') { "00000000-0000-7000-8000-000000000000" } else { part })
            .collect::<Vec<_>>()
            .join("/");
        for method in operations.as_object().expect("operations").keys() {
            let method: Method = method.to_uppercase().parse().expect("method");
            let body = (method != Method::GET).then(|| valid_body(segment, path, &method));
            let send = |path: String| {
                let mut request =
                    app.client.request(method.clone(), format!("{}{path}", app.base)).bearer_auth(&intruder);
                if let Some(body) = &body {
                    // Writes carry a fresh key, so the key rules cannot answer before tenancy does.
                    request = request.json(body).header("Idempotency-Key", uuid::Uuid::now_v7().to_string());
                }
                request.send()
            };
            let foreign = send(concrete.clone()).await.expect("sent");
            let missing = send(unknown.clone()).await.expect("sent");
            let (foreign, missing) = if path.starts_with("/api/v2") {
                (v2_error(foreign, 404).await, v2_error(missing, 404).await)
            } else {
                (error(foreign, 404, "invalid_request_error").await, error(missing, 404, "invalid_request_error").await)
            };
            assert_eq!(foreign["error"]["message"], missing["error"]["message"], "{method} {path} reveals nothing");
            assert_eq!(foreign["error"]["code"], missing["error"]["code"], "{method} {path} reveals nothing");
            walked += 1;
        }
    }
    assert!(walked >= 8, "walked only {walked} routes");
    assert_eq!(app.event_count().await, before, "nothing was written for the intruder");

    // Lists of the other organization never include these records.
    for segment in
        ["customers", "payment-methods", "warehouses", "webhook-endpoints", "suppliers", "products", "price-lists"]
    {
        let list =
            json(app.request(Method::GET, &format!("/api/v1/{segment}"), Some(&intruder), None).await, 200).await;
        let listed: Vec<&str> =
            list["data"].as_array().expect("data").iter().filter_map(|r| r["id"].as_str()).collect();
        assert!(!listed.contains(&ids[segment].as_str()), "{segment} list leaks another organization's record");
    }
    let categories = json(app.request(Method::GET, "/api/v1/categories", Some(&intruder), None).await, 200).await;
    assert!(categories["data"].as_array().expect("data").iter().all(|c| c["id"] != ids["categories"].as_str()));
}

#[sqlx::test(migrations = "../schema")]
async fn another_organization_cannot_see_or_change_these_records(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, other_key) = app.other_org().await;
    let method = create(&app, PAYMENT_METHODS, &json!({"name": "Tarjeta", "isDefault": true})).await;
    let warehouse = create(&app, WAREHOUSES, &json!({"name": "Norte", "isDefault": true})).await;
    let category = create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await;
    let before = app.event_count().await;
    let as_other = |method: Method, path: String, body: Option<Value>| {
        let (app, key) = (&app, other_key.as_str());
        async move { app.request(method, &path, Some(key), body.as_ref()).await }
    };
    for (list, record) in [(PAYMENT_METHODS, &method), (WAREHOUSES, &warehouse), (CATEGORIES, &category)] {
        let ours = format!("{list}/{}", id_of(record));
        let random = format!("{list}/{}", Uuid::now_v7());
        let body = json!({"name": "Intruso"});
        let foreign_get = error(as_other(Method::GET, ours.clone(), None).await, 404, "invalid_request_error").await;
        let random_get = error(as_other(Method::GET, random.clone(), None).await, 404, "invalid_request_error").await;
        let own_random_get = error(app.get(&random).await, 404, "invalid_request_error").await;
        let garbage = format!("{list}/not-a-uuid");
        let garbage = error(as_other(Method::GET, garbage, None).await, 404, "invalid_request_error").await;
        assert_eq!(foreign_get["error"]["message"], random_get["error"]["message"], "{list}: GET reveals nothing");
        assert_eq!(foreign_get["error"]["code"], random_get["error"]["code"]);
        assert_eq!(foreign_get["error"]["message"], own_random_get["error"]["message"]);
        assert_eq!(foreign_get["error"]["message"], garbage["error"]["message"]);
        let foreign_put =
            error(as_other(Method::PUT, ours.clone(), Some(body.clone())).await, 404, "invalid_request_error").await;
        let random_put =
            error(as_other(Method::PUT, random.clone(), Some(body.clone())).await, 404, "invalid_request_error").await;
        assert_eq!(foreign_put["error"]["message"], random_put["error"]["message"], "{list}: PUT reveals nothing");
        assert_eq!(foreign_put["error"]["code"], random_put["error"]["code"]);
        // Still ours, unchanged.
        assert_eq!(style_b(app.get(&ours).await, 200).await, record["data"]);
    }
    // Their lists never include ours.
    let our_ids = [id_of(&method), id_of(&warehouse), id_of(&category)];
    let mut their_lists = Vec::new();
    for list in [PAYMENT_METHODS, WAREHOUSES] {
        their_lists.push(style_a(as_other(Method::GET, list.to_owned(), None).await, 200).await);
    }
    their_lists.push(json(as_other(Method::GET, format!("{CATEGORIES}?limit=100"), None).await, 200).await);
    their_lists.push(json(as_other(Method::GET, V2_WAREHOUSES.to_owned(), None).await, 200).await);
    for list in &their_lists {
        assert!(ids(&items(list)).iter().all(|id| !our_ids.contains(id)), "{list}");
    }
    let their_categories = json(as_other(Method::GET, format!("{CATEGORIES}?search=Bebidas"), None).await, 200).await;
    assert_eq!(their_categories["pagination"]["total"], 0);
    // A category of ours cannot be their parent.
    let parent = json!({"name": "Gaseosas", "parentId": id_of(&category)});
    error(as_other(Method::POST, CATEGORIES.to_owned(), Some(parent)).await, 404, "invalid_request_error").await;
    assert_eq!(app.event_count().await, before, "nothing written");

    // Their own new default does not take the flag from ours.
    let theirs = json!({"name": "Suyo", "isDefault": true});
    let theirs = json(as_other(Method::POST, PAYMENT_METHODS.to_owned(), Some(theirs)).await, 201).await;
    assert_eq!(theirs["data"]["isDefault"], true);
    let ours = format!("{PAYMENT_METHODS}/{}", id_of(&method));
    assert_eq!(style_b(app.get(&ours).await, 200).await["isDefault"], true);
}
