//! Warehouses: `/api/v1/warehouses` (the spec's shape, every field rule, the single default flag, the
//! cursor list, the write scope) and the `/api/v2/warehouses` page list with its own envelope.

use crate::helpers::{
    CATEGORIES, PAYMENT_METHODS, POINTS_OF_SALE, TestApp, V2_WAREHOUSES, WAREHOUSES, assert_bad_list_parameters,
    assert_field_rules, assert_non_object_bodies_refused, create, detail_fields, error, id_of, ids, items, json,
    key_set, names, names_set, org_id, request_id_header, seeded, sorted, strings, style_a, style_b, v2_error,
    v2_paths, walk,
};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

const WAREHOUSE_KEYS: &[&str] = &["id", "name", "address", "isDefault", "isActive"];

#[sqlx::test(migrations = "../schema")]
async fn a_created_warehouse_is_readable_at_once_in_the_spec_shape(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let created = create(&app, WAREHOUSES, &json!({"name": "Norte", "address": "Ruta 3 km 5"})).await;
    assert_eq!(created["success"], true);
    let data = created["data"].clone();
    assert_eq!(key_set(&data), names_set(WAREHOUSE_KEYS), "exactly the spec's fields: {data}");
    assert_eq!(data["name"], "Norte");
    assert_eq!(data["address"], "Ruta 3 km 5");
    assert_eq!(data["isDefault"], false, "default false");
    assert_eq!(data["isActive"], true, "default true");
    let path = format!("{WAREHOUSES}/{}", id_of(&created));
    assert_eq!(style_b(app.get(&path).await, 200).await, data);

    let replaced = style_b(app.put(&path, &json!({"name": "Norte II", "isActive": false})).await, 200).await;
    let expected =
        json!({"id": data["id"], "name": "Norte II", "address": null, "isDefault": false, "isActive": false});
    assert_eq!(replaced, expected, "omitted fields take their defaults");
    assert_eq!(style_b(app.get(&path).await, 200).await, replaced);
    let before = app.event_count().await;
    json(app.put(&path, &json!({"name": "Norte II", "isActive": false})).await, 200).await;
    assert_eq!(app.event_count().await, before, "the same representation records nothing");

    let limits = json!({"name": "w".repeat(100), "address": "a".repeat(200)});
    let data = create(&app, WAREHOUSES, &limits).await["data"].clone();
    assert_eq!(data["name"], "w".repeat(100));
    assert_eq!(data["address"], "a".repeat(200));
}

#[sqlx::test(migrations = "../schema")]
async fn every_warehouse_field_rule_is_enforced_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let existing = id_of(&create(&app, WAREHOUSES, &json!({"name": "Norte"})).await);
    let before = app.event_count().await;
    let cases: Vec<(&str, Value)> = vec![
        ("name", json!("")),
        ("name", json!("  ")),
        ("name", json!("x".repeat(101))),
        ("name", Value::Null),
        ("name", json!(7)),
        ("name", json!({"text": "Norte"})),
        ("address", json!("a".repeat(201))),
        ("address", json!(5)),
        ("address", json!(["Calle 1"])),
        ("isDefault", json!("yes")),
        ("isDefault", json!(1)),
        ("isActive", json!(0)),
        ("isActive", json!("false")),
    ];
    assert_field_rules(&app, WAREHOUSES, &existing, &json!({"name": "Norte"}), &cases).await;
    let refused = error(app.post(WAREHOUSES, &json!({"address": "x"})).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), vec!["name"]);
    assert_non_object_bodies_refused(&app, WAREHOUSES, &existing).await;
    let many = json!({"name": "", "address": 1, "isDefault": "x", "isActive": "y"});
    let refused = error(app.post(WAREHOUSES, &many).await, 400, "invalid_request_error").await;
    assert_eq!(sorted(detail_fields(&refused)), strings(&["name", "address", "isDefault", "isActive"]));
    assert_eq!(app.event_count().await, before, "no rejected request wrote anything");
    assert_eq!(style_b(app.get(&format!("{WAREHOUSES}/{existing}")).await, 200).await["name"], "Norte");
}

#[sqlx::test(migrations = "../schema")]
async fn a_new_default_warehouse_takes_the_flag_from_the_previous_one(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await;
    assert_eq!(main["isDefault"], true, "the organization starts with a default warehouse");
    assert_eq!(main["isActive"], true);
    let main_path = format!("{WAREHOUSES}/{}", main["id"].as_str().expect("id"));
    assert_eq!(style_b(app.get(&main_path).await, 200).await["isDefault"], true);

    let north = create(&app, WAREHOUSES, &json!({"name": "Norte", "isDefault": true})).await;
    assert_eq!(north["data"]["isDefault"], true);
    let north_path = format!("{WAREHOUSES}/{}", id_of(&north));
    assert_eq!(style_b(app.get(&main_path).await, 200).await["isDefault"], false, "the previous default lost it");
    assert_eq!(style_b(app.get(&north_path).await, 200).await["isDefault"], true);
    let list = style_a(app.get(WAREHOUSES).await, 200).await;
    let defaults: Vec<Value> = items(&list).into_iter().filter(|w| w["isDefault"] == true).collect();
    assert_eq!(names(&defaults), vec!["Norte"], "exactly one default: {list}");
    for item in items(&list) {
        assert_eq!(key_set(&item), names_set(WAREHOUSE_KEYS), "{item}");
    }
}

#[sqlx::test(migrations = "../schema")]
async fn the_warehouse_list_pages_with_signed_cursors(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for name in ["Norte", "Sur", "Este"] {
        create(&app, WAREHOUSES, &json!({"name": name})).await;
    }
    let first = style_a(app.get(WAREHOUSES).await, 200).await;
    assert_eq!(first["object"], "list");
    assert_eq!(first["url"], WAREHOUSES);
    assert_eq!(first["has_more"], false);
    assert_eq!(names(&items(&first)), vec!["Depósito principal", "Norte", "Sur", "Este"], "creation order");
    let walked = walk(&app, WAREHOUSES, 1, &app.api_key).await;
    assert_eq!(ids(&walked), ids(&items(&first)));
    assert_bad_list_parameters(&app, WAREHOUSES, &["limit=0", "limit=101", "limit=-1", "page=2", "cursor=x.y"]).await;
}

#[sqlx::test(migrations = "../schema")]
async fn a_key_without_the_write_scope_cannot_write(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let warehouse = create(&app, WAREHOUSES, &json!({"name": "Norte"})).await;
    let path = format!("{WAREHOUSES}/{}", id_of(&warehouse));
    let key = commands::organization::create_api_key(&app.pool, org, &["warehouses:read".into()]).await.expect("key");
    let before = app.event_count().await;
    let send = |method: Method, path: &str, body: Option<Value>| {
        let (app, key, path) = (&app, key.as_str(), path.to_owned());
        async move { app.request(method, &path, Some(key), body.as_ref()).await }
    };
    let names_scope = |body: &Value, scope: &str| {
        let in_message = body["error"]["message"].as_str().unwrap_or_default().contains(scope);
        let in_details =
            body["error"]["details"].as_array().is_some_and(|d| d.iter().any(|x| x.to_string().contains(scope)));
        assert!(in_message || in_details, "the refusal names {scope}: {body}");
    };

    // Reads it holds the scope for, and those any credential may make.
    assert_eq!(style_b(send(Method::GET, &path, None).await, 200).await, warehouse["data"]);
    style_a(send(Method::GET, WAREHOUSES, None).await, 200).await;
    json(send(Method::GET, V2_WAREHOUSES, None).await, 200).await;
    for open in ["/api/v1/organization", "/api/v1/tax-rates", "/api/v1/voucher-types"] {
        json(send(Method::GET, open, None).await, 200).await;
    }

    // Writes, even invalid ones, are refused for the missing scope.
    for (method, target, body) in [
        (Method::POST, WAREHOUSES.to_owned(), json!({"name": "Sur"})),
        (Method::POST, WAREHOUSES.to_owned(), json!({"name": ""})),
        (Method::PUT, path.clone(), json!({"name": "Norte II"})),
    ] {
        let refused = error(send(method, &target, Some(body)).await, 403, "authorization_error").await;
        names_scope(&refused, "warehouses:write");
    }
    // Other resources need their own scopes.
    for (method, target, body, scope) in [
        (Method::GET, PAYMENT_METHODS, None, "payment_methods:read"),
        (Method::POST, PAYMENT_METHODS, Some(json!({"name": "Tarjeta"})), "payment_methods:write"),
        (Method::GET, CATEGORIES, None, "categories:read"),
        (Method::POST, CATEGORIES, Some(json!({"name": "Bebidas"})), "categories:write"),
        (Method::GET, POINTS_OF_SALE, None, "sales:read"),
    ] {
        let refused = error(send(method, target, body).await, 403, "authorization_error").await;
        names_scope(&refused, scope);
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(style_b(app.get(&path).await, 200).await["name"], "Norte");

    // The v2 list refuses a key without warehouses:read, in the v2 envelope.
    let other =
        commands::organization::create_api_key(&app.pool, org, &["payment_methods:read".into()]).await.expect("key");
    let refused = v2_error(app.request(Method::GET, V2_WAREHOUSES, Some(&other), None).await, 403).await;
    assert!(refused.to_string().contains("warehouses:read"), "{refused}");
    style_a(app.request(Method::GET, PAYMENT_METHODS, Some(&other), None).await, 200).await;
}

#[sqlx::test(migrations = "../schema")]
async fn the_v2_warehouse_list_pages_by_name(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for name in ["norte", "Sur", "Centro", "Depósito Norte"] {
        create(&app, WAREHOUSES, &json!({"name": name})).await;
    }
    let response = app.get(V2_WAREHOUSES).await;
    let header = request_id_header(&response);
    let page = json(response, 200).await;
    assert_eq!(key_set(&page), names_set(&["requestId", "success", "data", "pagination"]), "{page}");
    assert_eq!(page["requestId"].as_str(), header.as_deref());
    assert_eq!(page["success"], true);
    assert_eq!(page["pagination"], json!({"page": 1, "limit": 20, "total": 5, "totalPages": 1}));
    let data = items(&page);
    assert_eq!(names(&data), vec!["Centro", "Depósito Norte", "Depósito principal", "norte", "Sur"], "by name");
    for item in &data {
        assert_eq!(key_set(item), names_set(WAREHOUSE_KEYS), "{item}");
    }

    let second = json(app.get(&format!("{V2_WAREHOUSES}?page=2&limit=2")).await, 200).await;
    assert_eq!(second["pagination"], json!({"page": 2, "limit": 2, "total": 5, "totalPages": 3}));
    assert_eq!(names(&items(&second)), vec!["Depósito principal", "norte"]);
    let last = json(app.get(&format!("{V2_WAREHOUSES}?page=3&limit=2")).await, 200).await;
    assert_eq!(names(&items(&last)), vec!["Sur"]);
    let beyond = json(app.get(&format!("{V2_WAREHOUSES}?page=4&limit=2")).await, 200).await;
    assert_eq!(items(&beyond), Vec::<Value>::new());
    assert_eq!(beyond["pagination"], json!({"page": 4, "limit": 2, "total": 5, "totalPages": 3}));

    let found = json(app.get(&format!("{V2_WAREHOUSES}?search=NORTE")).await, 200).await;
    assert_eq!(names(&items(&found)), vec!["Depósito Norte", "norte"], "case-insensitive contains");
    assert_eq!(found["pagination"]["total"], 2);
    let none = json(app.get(&format!("{V2_WAREHOUSES}?search=zzz")).await, 200).await;
    assert_eq!(none["pagination"], json!({"page": 1, "limit": 20, "total": 0, "totalPages": 0}));
}

#[sqlx::test(migrations = "../schema")]
async fn the_v2_warehouse_list_refuses_bad_parameters_in_the_v2_envelope(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = app.event_count().await;
    for bad in ["limit=0", "limit=101", "limit=abc", "limit=2.5", "page=0", "page=-3", "page=x"] {
        let body = v2_error(app.get(&format!("{V2_WAREHOUSES}?{bad}")).await, 400).await;
        let parameter = bad.split('=').next().expect("name");
        assert_eq!(v2_paths(&body), vec![parameter.to_owned()], "{bad}: {body}");
        assert_eq!(body["error"]["retryable"], false);
    }
    let both = v2_error(app.get(&format!("{V2_WAREHOUSES}?page=0&limit=500")).await, 400).await;
    assert_eq!(sorted(v2_paths(&both)), vec!["limit", "page"]);
    // Authentication failures under /api/v2 use the v2 envelope too.
    v2_error(app.request(Method::GET, V2_WAREHOUSES, None, None).await, 401).await;
    assert_eq!(app.event_count().await, before);
}
