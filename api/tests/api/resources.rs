//! The configuration resources and reference data: payment methods, warehouses (v1 and the v2 page
//! list), categories, points of sale, the organization, tax rates and voucher types. Their shapes,
//! every field and parameter rule (refusals write nothing), defaults, cached reads, scopes and tenancy.

use crate::helpers::{TestApp, detail_fields, error, json};
use reqwest::{Method, Response};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

const PAYMENT_METHODS: &str = "/api/v1/payment-methods";
const WAREHOUSES: &str = "/api/v1/warehouses";
const CATEGORIES: &str = "/api/v1/categories";
const POINTS_OF_SALE: &str = "/api/v1/points-of-sale";
const V2_WAREHOUSES: &str = "/api/v2/warehouses";

const PAYMENT_METHOD_KEYS: &[&str] = &[
    "id",
    "name",
    "icon",
    "feePercentage",
    "feeFixed",
    "requiresReference",
    "isActive",
    "isDefault",
    "createdAt",
    "updatedAt",
];
const WAREHOUSE_KEYS: &[&str] = &["id", "name", "address", "isDefault", "isActive"];
const CATEGORY_KEYS: &[&str] = &["id", "name", "parentId", "createdAt", "updatedAt"];

/// Waits (bounded) until `attempt` yields a value. Only for effects that do not go through the API
/// (the records seeded with an organization, points of sale created by operators): they reach the read
/// side asynchronously, while API writes are readable as soon as they answer.
async fn eventually<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(value) = attempt().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn key_set(value: &Value) -> BTreeSet<String> {
    value.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

fn names_set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn items(body: &Value) -> Vec<Value> {
    body["data"].as_array().unwrap_or_else(|| panic!("data is not an array: {body}")).clone()
}

fn ids(list: &[Value]) -> Vec<String> {
    list.iter().map(|item| item["id"].as_str().expect("id").to_owned()).collect()
}

fn names(list: &[Value]) -> Vec<String> {
    list.iter().map(|item| item["name"].as_str().expect("name").to_owned()).collect()
}

fn id_of(created: &Value) -> String {
    created["data"]["id"].as_str().unwrap_or_else(|| panic!("no data.id in {created}")).to_owned()
}

fn sorted(mut fields: Vec<String>) -> Vec<String> {
    fields.sort();
    fields
}

fn strings(names: &[&str]) -> Vec<String> {
    sorted(names.iter().map(|n| (*n).to_owned()).collect())
}

/// A date-time of the response, asserting it is rendered in UTC-3.
fn instant(value: &Value) -> OffsetDateTime {
    let text = value.as_str().unwrap_or_else(|| panic!("not a date-time: {value}"));
    let parsed = OffsetDateTime::parse(text, &Rfc3339).unwrap_or_else(|_| panic!("not RFC 3339: {text}"));
    assert_eq!(parsed.offset().whole_hours(), -3, "rendered in UTC-3: {text}");
    parsed
}

fn request_id_header(response: &Response) -> Option<String> {
    response.headers().get("service-request-id").map(|v| v.to_str().unwrap_or_default().to_owned())
}

/// A Style A body (`request_id` equal to the `Service-Request-Id` header).
async fn style_a(response: Response, status: u16) -> Value {
    let header = request_id_header(&response);
    let body = json(response, status).await;
    assert!(header.is_some(), "Service-Request-Id is sent");
    assert_eq!(header.as_deref(), body["request_id"].as_str(), "request_id matches the header: {body}");
    body
}

/// A Style B single resource, returning its `data`.
async fn style_b(response: Response, status: u16) -> Value {
    let body = json(response, status).await;
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(key_set(&body), names_set(&["success", "data"]), "{body}");
    body["data"].clone()
}

/// The v2 error envelope: `requestId`, `success: false`, `error {code, message, retryable, details[]
/// {path, code, message}}`.
async fn v2_error(response: Response, status: u16) -> Value {
    let header = request_id_header(&response);
    let body = json(response, status).await;
    assert_eq!(key_set(&body), names_set(&["requestId", "success", "error"]), "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(header.as_deref(), body["requestId"].as_str(), "requestId matches the header: {body}");
    let error = &body["error"];
    assert!(error["code"].as_str().is_some_and(|c| !c.is_empty()), "{body}");
    assert!(error["message"].is_string(), "{body}");
    assert!(error["retryable"].is_boolean(), "{body}");
    for detail in error["details"].as_array().unwrap_or_else(|| panic!("details is an array: {body}")) {
        for field in ["path", "code", "message"] {
            assert!(detail[field].is_string(), "detail.{field} in {body}");
        }
    }
    body
}

fn v2_paths(body: &Value) -> Vec<String> {
    body["error"]["details"]
        .as_array()
        .map(|d| d.iter().filter_map(|x| x["path"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The organization resource read with `key`, once projected (operators create organizations outside
/// the API).
async fn organization(app: &TestApp, key: &str) -> Value {
    eventually("the organization resource", || async move {
        let response = app.request(Method::GET, "/api/v1/organization", Some(key), None).await;
        if response.status().as_u16() == 200 { Some(style_a(response, 200).await) } else { None }
    })
    .await
}

/// The organization's id.
async fn org_id(app: &TestApp) -> Uuid {
    let body = organization(app, &app.api_key).await;
    body["data"]["id"].as_str().and_then(|id| Uuid::parse_str(id).ok()).expect("organization id")
}

/// The item named `name` of a cursor list, once the organization's seeded records are readable.
async fn seeded(app: &TestApp, list: &str, name: &str) -> Value {
    eventually(name, || async move {
        let body = json(app.get(list).await, 200).await;
        items(&body).into_iter().find(|item| item["name"] == name)
    })
    .await
}

/// The cursor list at `list` read with `key`, once it holds at least `count` items.
async fn list_of_at_least(app: &TestApp, list: &str, key: &str, count: usize) -> Value {
    eventually(list, || async move {
        let body = style_a(app.request(Method::GET, list, Some(key), None).await, 200).await;
        (items(&body).len() >= count).then_some(body)
    })
    .await
}

async fn create(app: &TestApp, list: &str, body: &Value) -> Value {
    json(app.post(list, body).await, 201).await
}

/// Follows `next_cursor` from the first page of `path` with this `limit`; every page is a well-formed
/// Style A list and every page but the last is full.
async fn walk(app: &TestApp, path: &str, limit: usize, key: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut url = format!("{path}?limit={limit}");
    for _ in 0..100 {
        let page = style_a(app.request(Method::GET, &url, Some(key), None).await, 200).await;
        assert_eq!(page["object"], "list", "{page}");
        assert_eq!(page["url"], path, "{page}");
        let data = items(&page);
        assert!(data.len() <= limit, "{page}");
        seen.extend(data.iter().cloned());
        if page["has_more"] == false {
            assert_eq!(page["next_cursor"], Value::Null, "{page}");
            return seen;
        }
        assert_eq!(page["has_more"], true, "{page}");
        assert_eq!(data.len(), limit, "a page before the last is full: {page}");
        let cursor = page["next_cursor"].as_str().unwrap_or_else(|| panic!("next_cursor with has_more: {page}"));
        url = format!("{path}?limit={limit}&cursor={cursor}");
    }
    panic!("{path} did not end after 100 pages");
}

/// Every bad list parameter is a 400 naming it.
async fn assert_bad_list_parameters(app: &TestApp, path: &str, cases: &[&str]) {
    for bad in cases {
        let body = error(app.get(&format!("{path}?{bad}")).await, 400, "invalid_request_error").await;
        let parameter = bad.split('=').next().expect("parameter name");
        assert!(detail_fields(&body).contains(&parameter.to_owned()), "{path}?{bad}: {body}");
    }
}

/// POSTs (and PUTs to `existing`) `base` with one field changed, expecting a 400 naming exactly it.
async fn assert_field_rules(app: &TestApp, list: &str, existing: &str, base: &Value, cases: &[(&str, Value)]) {
    for (field, value) in cases {
        let mut body = base.clone();
        body[*field] = value.clone();
        for (method, path) in [(Method::POST, list.to_owned()), (Method::PUT, format!("{list}/{existing}"))] {
            let response = app.request(method.clone(), &path, Some(&app.api_key), Some(&body)).await;
            let refused = error(response, 400, "invalid_request_error").await;
            assert_eq!(refused["error"]["code"], "VALIDATION_FAILED", "{refused}");
            assert_eq!(detail_fields(&refused), vec![(*field).to_owned()], "{method} {path} {field} = {value}");
        }
    }
}

/// Bodies that are JSON but not an object are refused, naming the body first.
async fn assert_non_object_bodies_refused(app: &TestApp, list: &str, existing: &str) {
    for body in [json!([1, 2]), json!("text"), json!(5), Value::Null] {
        for (method, path) in [(Method::POST, list.to_owned()), (Method::PUT, format!("{list}/{existing}"))] {
            let response = app.request(method.clone(), &path, Some(&app.api_key), Some(&body)).await;
            let refused = error(response, 400, "invalid_request_error").await;
            let fields = detail_fields(&refused);
            assert_eq!(fields.first().map(String::as_str), Some("body"), "{method} {path} with {body}: {refused}");
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Payment methods
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn a_created_payment_method_is_readable_at_once_with_its_defaults(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let created = create(&app, PAYMENT_METHODS, &json!({"name": "  Tarjeta  "})).await;
    assert_eq!(created["success"], true);
    let data = style_b(app.get(&format!("{PAYMENT_METHODS}/{}", id_of(&created))).await, 200).await;
    assert_eq!(data, created["data"], "the very next GET sees exactly the created representation");
    assert_eq!(key_set(&data), names_set(PAYMENT_METHOD_KEYS), "{data}");
    assert!(Uuid::parse_str(data["id"].as_str().expect("id")).is_ok());
    assert_eq!(data["name"], "Tarjeta", "names are trimmed");
    assert_eq!(data["icon"], Value::Null);
    assert_eq!(data["feePercentage"], Value::Null);
    assert_eq!(data["feeFixed"], Value::Null);
    assert_eq!(data["requiresReference"], false, "default false");
    assert_eq!(data["isActive"], true, "default true");
    assert_eq!(data["isDefault"], false, "default false");
    assert_eq!(instant(&data["createdAt"]), instant(&data["updatedAt"]));

    let full = json!({
        "name": "Tarjeta de crédito", "icon": "credit-card", "feePercentage": "3.5", "feeFixed": 150,
        "requiresReference": true, "isActive": false, "isDefault": false
    });
    let created = create(&app, PAYMENT_METHODS, &full).await;
    let data = style_b(app.get(&format!("{PAYMENT_METHODS}/{}", id_of(&created))).await, 200).await;
    assert_eq!(data, created["data"]);
    assert_eq!(data["name"], "Tarjeta de crédito");
    assert_eq!(data["icon"], "credit-card");
    assert_eq!(data["feePercentage"], "3.5", "the percentage stays text");
    assert_eq!(data["feeFixed"].as_f64(), Some(150.0));
    assert_eq!(data["requiresReference"], true);
    assert_eq!(data["isActive"], false);
    assert_eq!(data["isDefault"], false);

    // The limits themselves are accepted.
    let limits = json!({
        "name": "ñ".repeat(50), "icon": "i".repeat(50), "feePercentage": "12.0000000", "feeFixed": 0.5
    });
    let data = create(&app, PAYMENT_METHODS, &limits).await["data"].clone();
    assert_eq!(data["name"], "ñ".repeat(50), "lengths count characters");
    assert_eq!(data["icon"], "i".repeat(50));
    assert_eq!(data["feePercentage"], "12.0000000");
    assert_eq!(data["feeFixed"].as_f64(), Some(0.5));
    for fee in ["0", "100", "99.99"] {
        let data = create(&app, PAYMENT_METHODS, &json!({"name": "Límite", "feePercentage": fee, "feeFixed": 0})).await;
        assert_eq!(data["data"]["feePercentage"], fee);
        assert_eq!(data["data"]["feeFixed"].as_f64(), Some(0.0));
    }
}

#[sqlx::test(migrations = "../schema")]
async fn replacing_a_payment_method_replaces_every_field(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let full = json!({
        "name": "Tarjeta", "icon": "card", "feePercentage": "2", "feeFixed": 10,
        "requiresReference": true, "isActive": false
    });
    let created = create(&app, PAYMENT_METHODS, &full).await;
    let path = format!("{PAYMENT_METHODS}/{}", id_of(&created));
    let replaced = style_b(app.put(&path, &json!({"name": "Débito"})).await, 200).await;
    assert_eq!(replaced["id"], created["data"]["id"]);
    assert_eq!(replaced["name"], "Débito");
    assert_eq!(replaced["icon"], Value::Null, "omitted optional fields are cleared");
    assert_eq!(replaced["feePercentage"], Value::Null);
    assert_eq!(replaced["feeFixed"], Value::Null);
    assert_eq!(replaced["requiresReference"], false, "omitted flags take their defaults");
    assert_eq!(replaced["isActive"], true);
    assert_eq!(replaced["isDefault"], false);
    assert_eq!(replaced["createdAt"], created["data"]["createdAt"]);
    assert!(instant(&replaced["updatedAt"]) > instant(&created["data"]["updatedAt"]));
    assert_eq!(style_b(app.get(&path).await, 200).await, replaced, "the next GET sees the replacement");

    // The same representation again records nothing and changes nothing.
    let before = app.event_count().await;
    let again = style_b(app.put(&path, &json!({"name": "Débito"})).await, 200).await;
    assert_eq!(again, replaced);
    assert_eq!(app.event_count().await, before);
}

#[sqlx::test(migrations = "../schema")]
async fn every_payment_method_field_rule_is_enforced_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let existing = id_of(&create(&app, PAYMENT_METHODS, &json!({"name": "Tarjeta"})).await);
    let before = app.event_count().await;
    let cases: Vec<(&str, Value)> = vec![
        ("name", json!("")),
        ("name", json!("   ")),
        ("name", json!("x".repeat(51))),
        ("name", Value::Null),
        ("name", json!(12)),
        ("name", json!(["Tarjeta"])),
        ("icon", json!("i".repeat(51))),
        ("icon", json!(5)),
        ("feePercentage", json!("12345678901")),
        ("feePercentage", json!("abc")),
        ("feePercentage", json!("-1")),
        ("feePercentage", json!("100.01")),
        ("feePercentage", json!("NaN")),
        ("feePercentage", json!("inf")),
        ("feePercentage", json!(3.5)),
        ("feeFixed", json!(-1)),
        ("feeFixed", json!(-0.01)),
        ("feeFixed", json!("150")),
        ("feeFixed", json!(true)),
        ("requiresReference", json!("yes")),
        ("requiresReference", json!(1)),
        ("isActive", json!(1)),
        ("isActive", json!("true")),
        ("isDefault", json!("false")),
        ("isDefault", json!(0)),
    ];
    assert_field_rules(&app, PAYMENT_METHODS, &existing, &json!({"name": "Tarjeta"}), &cases).await;
    // A missing name.
    let refused = error(app.post(PAYMENT_METHODS, &json!({"icon": "x"})).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), vec!["name"]);
    assert_non_object_bodies_refused(&app, PAYMENT_METHODS, &existing).await;
    // Every offending field at once.
    let many = json!({
        "name": "", "icon": 5, "feePercentage": "x", "feeFixed": -1, "requiresReference": "y",
        "isActive": 1, "isDefault": "n"
    });
    let refused = error(app.post(PAYMENT_METHODS, &many).await, 400, "invalid_request_error").await;
    assert_eq!(
        sorted(detail_fields(&refused)),
        strings(&["name", "icon", "feePercentage", "feeFixed", "requiresReference", "isActive", "isDefault"])
    );
    assert_eq!(app.event_count().await, before, "no rejected request wrote anything");
    let unchanged = style_b(app.get(&format!("{PAYMENT_METHODS}/{existing}")).await, 200).await;
    assert_eq!(unchanged["name"], "Tarjeta");
}

#[sqlx::test(migrations = "../schema")]
async fn a_new_default_payment_method_takes_the_flag_from_the_previous_one(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let cash = seeded(&app, PAYMENT_METHODS, "Efectivo").await;
    assert_eq!(cash["isDefault"], true, "the organization starts with Efectivo as its default");
    let cash_path = format!("{PAYMENT_METHODS}/{}", cash["id"].as_str().expect("id"));
    // Read it once so that the old representation is cached.
    assert_eq!(style_b(app.get(&cash_path).await, 200).await["isDefault"], true);

    let card = create(&app, PAYMENT_METHODS, &json!({"name": "Tarjeta", "isDefault": true})).await;
    assert_eq!(card["data"]["isDefault"], true);
    let card_path = format!("{PAYMENT_METHODS}/{}", id_of(&card));
    assert_eq!(style_b(app.get(&cash_path).await, 200).await["isDefault"], false, "the previous default lost it");
    assert_eq!(style_b(app.get(&card_path).await, 200).await["isDefault"], true);

    // A non-default creation leaves the default alone; replacing the default keeps it.
    create(&app, PAYMENT_METHODS, &json!({"name": "Transferencia"})).await;
    let renamed = style_b(app.put(&card_path, &json!({"name": "Tarjeta crédito", "isDefault": true})).await, 200).await;
    assert_eq!(renamed["isDefault"], true);
    let list = style_a(app.get(PAYMENT_METHODS).await, 200).await;
    let defaults: Vec<Value> = items(&list).into_iter().filter(|p| p["isDefault"] == true).collect();
    assert_eq!(names(&defaults), vec!["Tarjeta crédito"], "exactly one default: {list}");
    assert_eq!(style_b(app.get(&cash_path).await, 200).await["isDefault"], false);

    // A third default takes it from the second.
    let wallet = create(&app, PAYMENT_METHODS, &json!({"name": "Billetera", "isDefault": true})).await;
    assert_eq!(style_b(app.get(&card_path).await, 200).await["isDefault"], false);
    let wallet_path = format!("{PAYMENT_METHODS}/{}", id_of(&wallet));
    assert_eq!(style_b(app.get(&wallet_path).await, 200).await["isDefault"], true);
    assert_eq!(style_b(app.get(&cash_path).await, 200).await["isDefault"], false);
}

#[sqlx::test(migrations = "../schema")]
async fn the_payment_method_list_pages_with_signed_cursors(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut created = Vec::new();
    for name in ["Tarjeta", "Débito", "Transferencia", "Cheque"] {
        created.push(create(&app, PAYMENT_METHODS, &json!({"name": name})).await["data"].clone());
    }
    let first = style_a(app.get(PAYMENT_METHODS).await, 200).await;
    assert_eq!(key_set(&first), names_set(&["request_id", "object", "url", "data", "has_more", "next_cursor"]));
    assert_eq!(first["object"], "list");
    assert_eq!(first["url"], PAYMENT_METHODS);
    assert_eq!(first["has_more"], false);
    assert_eq!(first["next_cursor"], Value::Null);
    let all = items(&first);
    assert_eq!(names(&all), vec!["Efectivo", "Tarjeta", "Débito", "Transferencia", "Cheque"], "creation order");
    assert_eq!(&all[1..], &created[..], "list items are the single representations");
    let walked = walk(&app, PAYMENT_METHODS, 2, &app.api_key).await;
    assert_eq!(ids(&walked), ids(&all), "pages walk the same stable order");

    // A cursor of another list is refused, and so are bad parameters.
    create(&app, WAREHOUSES, &json!({"name": "Norte"})).await;
    let warehouses = style_a(app.get(&format!("{WAREHOUSES}?limit=1")).await, 200).await;
    let cursor = warehouses["next_cursor"].as_str().expect("two warehouses make two pages");
    let refused =
        error(app.get(&format!("{PAYMENT_METHODS}?cursor={cursor}")).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), vec!["cursor"]);
    assert_bad_list_parameters(
        &app,
        PAYMENT_METHODS,
        &["limit=0", "limit=101", "limit=abc", "page=1", "cursor=forged.cursor", "cursor=abc"],
    )
    .await;
}

// ---------------------------------------------------------------------------------------------------
// Warehouses
// ---------------------------------------------------------------------------------------------------

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
async fn restoring_the_previous_default_takes_the_flag_back(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for (list, seeded_name, other) in
        [(PAYMENT_METHODS, "Efectivo", "Tarjeta"), (WAREHOUSES, "Depósito principal", "Norte")]
    {
        let original = seeded(&app, list, seeded_name).await;
        let original_path = format!("{list}/{}", original["id"].as_str().expect("id"));
        let newer = create(&app, list, &json!({"name": other, "isDefault": true})).await;
        let newer_path = format!("{list}/{}", id_of(&newer));
        assert_eq!(style_b(app.get(&original_path).await, 200).await["isDefault"], false);

        // Make the original the default again, keeping its other (seeded) fields.
        let body = json!({"name": seeded_name, "isDefault": true});
        let restored = style_b(app.put(&original_path, &body).await, 200).await;
        assert_eq!(restored["isDefault"], true, "{list}: the reply says it is the default");
        assert_eq!(
            style_b(app.get(&original_path).await, 200).await["isDefault"],
            true,
            "{list}: a GET right after the 200 shows it as the default"
        );
        assert_eq!(style_b(app.get(&newer_path).await, 200).await["isDefault"], false, "{list}: the other lost it");
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

// ---------------------------------------------------------------------------------------------------
// Categories
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn a_created_category_is_readable_at_once_and_replaceable(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let drinks = create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await;
    assert_eq!(drinks["success"], true);
    assert_eq!(key_set(&drinks["data"]), names_set(CATEGORY_KEYS), "{drinks}");
    assert_eq!(drinks["data"]["parentId"], Value::Null, "a top-level category");
    assert_eq!(instant(&drinks["data"]["createdAt"]), instant(&drinks["data"]["updatedAt"]));
    let drinks_id = id_of(&drinks);
    assert_eq!(style_b(app.get(&format!("{CATEGORIES}/{drinks_id}")).await, 200).await, drinks["data"]);

    let sodas = create(&app, CATEGORIES, &json!({"name": "Gaseosas", "parentId": drinks_id})).await;
    assert_eq!(sodas["data"]["parentId"], drinks_id.as_str());
    let sodas_path = format!("{CATEGORIES}/{}", id_of(&sodas));
    assert_eq!(style_b(app.get(&sodas_path).await, 200).await, sodas["data"]);
    let explicit_null = create(&app, CATEGORIES, &json!({"name": "Limpieza", "parentId": null})).await;
    assert_eq!(explicit_null["data"]["parentId"], Value::Null);

    let replaced = style_b(app.put(&sodas_path, &json!({"name": "Aguas"})).await, 200).await;
    assert_eq!(replaced["name"], "Aguas");
    assert_eq!(replaced["parentId"], Value::Null, "an omitted parent makes it top-level");
    assert_eq!(replaced["createdAt"], sodas["data"]["createdAt"]);
    assert!(instant(&replaced["updatedAt"]) > instant(&sodas["data"]["updatedAt"]));
    assert_eq!(style_b(app.get(&sodas_path).await, 200).await, replaced);
    let before = app.event_count().await;
    json(app.put(&sodas_path, &json!({"name": "Aguas", "parentId": null})).await, 200).await;
    assert_eq!(app.event_count().await, before, "the same representation records nothing");
    let moved = style_b(app.put(&sodas_path, &json!({"name": "Aguas", "parentId": drinks_id})).await, 200).await;
    assert_eq!(moved["parentId"], drinks_id.as_str());
    assert_eq!(style_b(app.get(&sodas_path).await, 200).await, moved);
}

#[sqlx::test(migrations = "../schema")]
async fn every_category_field_rule_is_enforced_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let existing = id_of(&create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await);
    let before = app.event_count().await;
    let cases: Vec<(&str, Value)> = vec![
        ("name", json!("")),
        ("name", json!(" ")),
        ("name", json!("c".repeat(101))),
        ("name", Value::Null),
        ("name", json!(false)),
        ("parentId", json!("nope")),
        ("parentId", json!("")),
        ("parentId", json!(5)),
        ("parentId", json!({"id": existing})),
    ];
    assert_field_rules(&app, CATEGORIES, &existing, &json!({"name": "Bebidas"}), &cases).await;
    assert_non_object_bodies_refused(&app, CATEGORIES, &existing).await;
    let refused = error(app.post(CATEGORIES, &json!({"parentId": "x"})).await, 400, "invalid_request_error").await;
    assert_eq!(sorted(detail_fields(&refused)), strings(&["name", "parentId"]));
    assert_eq!(app.event_count().await, before, "no rejected request wrote anything");
    let limit = create(&app, CATEGORIES, &json!({"name": "ñ".repeat(100)})).await;
    assert_eq!(limit["data"]["name"], "ñ".repeat(100));
}

#[sqlx::test(migrations = "../schema")]
async fn a_category_parent_must_be_a_category_of_the_organization(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, other_key) = app.other_org().await;
    let foreign_body = json!({"name": "Ajena"});
    let foreign = json(app.request(Method::POST, CATEGORIES, Some(&other_key), Some(&foreign_body)).await, 201).await;
    let card = create(&app, PAYMENT_METHODS, &json!({"name": "Tarjeta"})).await;
    let existing = create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await;
    let path = format!("{CATEGORIES}/{}", id_of(&existing));
    let before = app.event_count().await;
    // Unknown, another organization's category, and a record of another kind.
    for parent in [Uuid::now_v7().to_string(), id_of(&foreign), id_of(&card)] {
        let body = json!({"name": "Gaseosas", "parentId": parent});
        let created = error(app.post(CATEGORIES, &body).await, 404, "invalid_request_error").await;
        let replaced = error(app.put(&path, &body).await, 404, "invalid_request_error").await;
        assert_eq!(created["error"]["code"], "NOT_FOUND", "{created}");
        assert_eq!(replaced["error"]["message"], created["error"]["message"]);
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(style_b(app.get(&path).await, 200).await, existing["data"]);
    let list = json(app.get(CATEGORIES).await, 200).await;
    assert_eq!(names(&items(&list)), vec!["Bebidas"]);
}

#[sqlx::test(migrations = "../schema")]
async fn a_category_cannot_become_its_own_ancestor(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let a = id_of(&create(&app, CATEGORIES, &json!({"name": "A"})).await);
    let b = id_of(&create(&app, CATEGORIES, &json!({"name": "B", "parentId": a})).await);
    let c = id_of(&create(&app, CATEGORIES, &json!({"name": "C", "parentId": b})).await);
    let before = app.event_count().await;
    // Its own parent, the child of its child, the child of its grandchild.
    for (id, name, parent) in [(&a, "A", &a), (&a, "A", &b), (&a, "A", &c), (&b, "B", &c), (&c, "C", &c)] {
        let body = json!({"name": name, "parentId": parent});
        let refused = error(app.put(&format!("{CATEGORIES}/{id}"), &body).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), vec!["parentId"], "{name} under {parent}: {refused}");
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(style_b(app.get(&format!("{CATEGORIES}/{a}")).await, 200).await["parentId"], Value::Null);
    assert_eq!(style_b(app.get(&format!("{CATEGORIES}/{b}")).await, 200).await["parentId"], a.as_str());

    // Once B leaves A, A may go under C (B > C > A), and then B cannot go under A.
    style_b(app.put(&format!("{CATEGORIES}/{b}"), &json!({"name": "B"})).await, 200).await;
    let moved = style_b(app.put(&format!("{CATEGORIES}/{a}"), &json!({"name": "A", "parentId": c})).await, 200).await;
    assert_eq!(moved["parentId"], c.as_str());
    let body = json!({"name": "B", "parentId": a});
    let refused = error(app.put(&format!("{CATEGORIES}/{b}"), &body).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), vec!["parentId"]);
}

#[sqlx::test(migrations = "../schema")]
async fn the_category_list_sorts_and_pages(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let empty = json(app.get(CATEGORIES).await, 200).await;
    assert_eq!(key_set(&empty), names_set(&["success", "data", "pagination"]), "{empty}");
    assert_eq!(empty["success"], true);
    assert_eq!(empty["pagination"], json!({"page": 1, "limit": 20, "total": 0, "totalPages": 0}));
    let creation = ["bebidas", "Almacen", "dulces", "Carnes", "especias"];
    let mut created = Vec::new();
    for name in creation {
        created.push(create(&app, CATEGORIES, &json!({"name": name})).await["data"].clone());
    }
    let by_name = ["Almacen", "bebidas", "Carnes", "dulces", "especias"];
    let list = json(app.get(CATEGORIES).await, 200).await;
    assert_eq!(list["success"], true);
    assert_eq!(list["pagination"], json!({"page": 1, "limit": 20, "total": 5, "totalPages": 1}));
    assert_eq!(names(&items(&list)), by_name, "by name, case-insensitive, ascending by default");
    for item in items(&list) {
        assert_eq!(key_set(&item), names_set(CATEGORY_KEYS), "{item}");
        assert!(created.contains(&item), "list items are the single representations: {item}");
    }
    let explicit = json(app.get(&format!("{CATEGORIES}?sortBy=name&sortOrder=asc")).await, 200).await;
    assert_eq!(names(&items(&explicit)), by_name);
    let descending = json(app.get(&format!("{CATEGORIES}?sortOrder=desc")).await, 200).await;
    let mut reversed = by_name.to_vec();
    reversed.reverse();
    assert_eq!(names(&items(&descending)), reversed);
    let oldest = json(app.get(&format!("{CATEGORIES}?sortBy=createdAt")).await, 200).await;
    assert_eq!(names(&items(&oldest)), creation);
    let newest = json(app.get(&format!("{CATEGORIES}?sortBy=createdAt&sortOrder=desc")).await, 200).await;
    let mut newest_first = creation.to_vec();
    newest_first.reverse();
    assert_eq!(names(&items(&newest)), newest_first);

    // The first-created one, changed last, leads by updatedAt descending and trails ascending.
    let first_path = format!("{CATEGORIES}/{}", created[0]["id"].as_str().expect("id"));
    style_b(app.put(&first_path, &json!({"name": "Bebidas frías"})).await, 200).await;
    let updated = json(app.get(&format!("{CATEGORIES}?sortBy=updatedAt&sortOrder=desc")).await, 200).await;
    assert_eq!(names(&items(&updated)), vec!["Bebidas frías", "especias", "Carnes", "dulces", "Almacen"]);
    let updated = json(app.get(&format!("{CATEGORIES}?sortBy=updatedAt")).await, 200).await;
    assert_eq!(names(&items(&updated)), vec!["Almacen", "dulces", "Carnes", "especias", "Bebidas frías"]);
    let oldest = json(app.get(&format!("{CATEGORIES}?sortBy=createdAt")).await, 200).await;
    assert_eq!(names(&items(&oldest))[0], "Bebidas frías", "a replacement keeps createdAt");

    // Numbered pages of two.
    let by_name = ["Almacen", "Bebidas frías", "Carnes", "dulces", "especias"];
    let mut walked = Vec::new();
    for page in 1..=3 {
        let body = json(app.get(&format!("{CATEGORIES}?page={page}&limit=2")).await, 200).await;
        assert_eq!(body["pagination"], json!({"page": page, "limit": 2, "total": 5, "totalPages": 3}));
        walked.extend(names(&items(&body)));
    }
    assert_eq!(walked, by_name);
    let beyond = json(app.get(&format!("{CATEGORIES}?page=4&limit=2")).await, 200).await;
    assert_eq!(items(&beyond), Vec::<Value>::new());
    assert_eq!(beyond["pagination"], json!({"page": 4, "limit": 2, "total": 5, "totalPages": 3}));
    let whole = json(app.get(&format!("{CATEGORIES}?limit=100")).await, 200).await;
    assert_eq!(whole["pagination"], json!({"page": 1, "limit": 100, "total": 5, "totalPages": 1}));
    let single = json(app.get(&format!("{CATEGORIES}?limit=1&page=5&sortOrder=desc")).await, 200).await;
    assert_eq!(names(&items(&single)), vec!["Almacen"]);
    assert_eq!(single["pagination"]["totalPages"], 5);
}

#[sqlx::test(migrations = "../schema")]
async fn the_category_search_is_case_insensitive_and_literal(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for name in ["Bebidas", "BEBIDAS sin alcohol", "Descuento 50%", "Descuento 500", "a_b", "axb", "Limpieza"] {
        create(&app, CATEGORIES, &json!({"name": name})).await;
    }
    let search = |term: &'static str| {
        let app = &app;
        async move { json(app.get(&format!("{CATEGORIES}?search={term}")).await, 200).await }
    };
    let found = search("bebidas").await;
    assert_eq!(names(&items(&found)), vec!["Bebidas", "BEBIDAS sin alcohol"]);
    assert_eq!(found["pagination"], json!({"page": 1, "limit": 20, "total": 2, "totalPages": 1}));
    assert_eq!(names(&items(&search("SIN%20ALC").await)), vec!["BEBIDAS sin alcohol"], "contains, any case");
    assert_eq!(names(&items(&search("%20%20bebidas%20").await)).len(), 2, "the term is trimmed");
    assert_eq!(names(&items(&search("50%25").await)), vec!["Descuento 50%"], "% is literal");
    assert_eq!(names(&items(&search("a_b").await)), vec!["a_b"], "_ is literal");
    let none = search("zzz").await;
    assert_eq!(none["pagination"], json!({"page": 1, "limit": 20, "total": 0, "totalPages": 0}));
    assert_eq!(items(&none), Vec::<Value>::new());
    let paged = json(app.get(&format!("{CATEGORIES}?search=descuento&limit=1&page=2")).await, 200).await;
    assert_eq!(paged["pagination"], json!({"page": 2, "limit": 1, "total": 2, "totalPages": 2}));
    assert_eq!(names(&items(&paged)), vec!["Descuento 500"]);
    let everything = search("").await;
    assert_eq!(everything["pagination"]["total"], 7, "an empty term does not filter");
}

#[sqlx::test(migrations = "../schema")]
async fn invalid_category_list_parameters_are_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let search = format!("search={}", "s".repeat(101));
    assert_bad_list_parameters(
        &app,
        CATEGORIES,
        &[
            "page=0",
            "page=-1",
            "page=abc",
            "page=1.5",
            "limit=0",
            "limit=101",
            "limit=abc",
            "sortBy=price",
            "sortBy=",
            "sortOrder=up",
            "sortOrder=",
            &search,
        ],
    )
    .await;
    let all = error(
        app.get(&format!("{CATEGORIES}?page=0&limit=0&sortBy=x&sortOrder=y")).await,
        400,
        "invalid_request_error",
    )
    .await;
    assert_eq!(sorted(detail_fields(&all)), strings(&["limit", "page", "sortBy", "sortOrder"]), "all at once");
}

// ---------------------------------------------------------------------------------------------------
// Points of sale
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn a_new_organization_has_exactly_point_of_sale_one(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let list = list_of_at_least(&app, POINTS_OF_SALE, &app.api_key, 1).await;
    assert_eq!(list["object"], "list");
    assert_eq!(list["url"], POINTS_OF_SALE);
    assert_eq!(list["has_more"], false);
    assert_eq!(list["next_cursor"], Value::Null);
    let data = items(&list);
    assert_eq!(data.len(), 1, "{list}");
    let pos = &data[0];
    assert_eq!(
        key_set(pos),
        names_set(&["object", "id", "number", "name", "is_active", "created_at", "updated_at"]),
        "{pos}"
    );
    assert_eq!(pos["object"], "point_of_sale");
    assert!(Uuid::parse_str(pos["id"].as_str().expect("id")).is_ok());
    assert_eq!(pos["number"], 1);
    assert!(pos["name"].as_str().is_some_and(|n| !n.is_empty()), "{pos}");
    assert_eq!(pos["is_active"], true);
    assert!(instant(&pos["created_at"]) <= instant(&pos["updated_at"]));
}

#[sqlx::test(migrations = "../schema")]
async fn points_of_sale_created_by_operators_are_listed_in_order(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let org = org_id(&app).await;
    let (other_org, other_key) = app.other_org().await;
    let second = commands::organization::create_point_of_sale(&app.pool, org, 2, Some("Mostrador")).await.expect("2");
    commands::organization::create_point_of_sale(&app.pool, org, 3, Some("Online")).await.expect("3");
    // The other organization may use the same numbers.
    commands::organization::create_point_of_sale(&app.pool, other_org, 2, None).await.expect("their 2");
    let before = app.event_count().await;
    for number in [1, 2, 0, 100_000] {
        let refused = commands::organization::create_point_of_sale(&app.pool, org, number, Some("Otro")).await;
        assert!(refused.is_err(), "number {number} is refused");
    }
    assert_eq!(app.event_count().await, before, "refused creations write nothing");

    let list = list_of_at_least(&app, POINTS_OF_SALE, &app.api_key, 3).await;
    let data = items(&list);
    let numbers: Vec<i64> = data.iter().map(|p| p["number"].as_i64().expect("number")).collect();
    assert_eq!(numbers, vec![1, 2, 3], "{list}");
    assert_eq!(names(&data)[1..].to_vec(), vec!["Mostrador", "Online"]);
    assert_eq!(data[1]["id"], second.to_string().as_str());
    assert!(data.iter().all(|p| p["object"] == "point_of_sale" && p["is_active"] == true), "{list}");
    let walked = walk(&app, POINTS_OF_SALE, 1, &app.api_key).await;
    assert_eq!(ids(&walked), ids(&data), "cursor pages walk the same order");

    let theirs = items(&list_of_at_least(&app, POINTS_OF_SALE, &other_key, 2).await);
    let numbers: Vec<i64> = theirs.iter().map(|p| p["number"].as_i64().expect("number")).collect();
    assert_eq!(numbers, vec![1, 2]);
    assert!(ids(&theirs).iter().all(|id| !ids(&data).contains(id)), "each organization sees its own");
    assert_bad_list_parameters(&app, POINTS_OF_SALE, &["limit=0", "limit=101", "page=1", "cursor=forged"]).await;
}

// ---------------------------------------------------------------------------------------------------
// Organization and reference data
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn the_organization_has_exactly_the_spec_fields(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = organization(&app, &app.api_key).await;
    assert_eq!(key_set(&body), names_set(&["request_id", "data"]), "{body}");
    let data = &body["data"];
    let nullable = [
        "legal_name",
        "logo_url",
        "tax_id",
        "tax_id_type",
        "tax_category",
        "person_type",
        "address",
        "apartment",
        "city",
        "province_id",
        "postal_code",
        "phone",
        "email",
        "rounding_preference",
    ];
    let mut expected =
        vec!["object", "id", "name", "slug", "country", "default_currency", "timezone", "created_at", "updated_at"];
    expected.extend(nullable);
    assert_eq!(key_set(data), names_set(&expected), "exactly these keys and no others: {data}");
    assert_eq!(data["object"], "organization");
    assert!(Uuid::parse_str(data["id"].as_str().expect("id")).is_ok(), "{data}");
    assert_eq!(data["name"], "Almacén de Prueba");
    assert!(data["slug"].as_str().is_some_and(|s| !s.is_empty()), "{data}");
    for field in nullable {
        assert!(data[field].is_null() || data[field].is_string(), "{field} is a string or null: {data}");
    }
    assert!(data["country"].as_str().is_some_and(|c| !c.is_empty()), "{data}");
    assert_eq!(data["default_currency"], "PES");
    assert_eq!(data["timezone"], "UTC-3");
    assert!(instant(&data["created_at"]) <= instant(&data["updated_at"]));

    // A second read (served from the cache) carries its own request id and the same data.
    let again = style_a(app.get("/api/v1/organization").await, 200).await;
    assert_eq!(&again["data"], data);
    assert_ne!(again["request_id"], body["request_id"]);

    // Another organization's key reads its own organization.
    let (other, other_key) = app.other_org().await;
    let theirs = organization(&app, &other_key).await;
    assert_eq!(theirs["data"]["id"], other.to_string().as_str());
    assert_eq!(theirs["data"]["name"], "Otra Empresa");
    assert_ne!(theirs["data"]["id"], data["id"]);
    assert_ne!(theirs["data"]["slug"], data["slug"]);
}

#[sqlx::test(migrations = "../schema")]
async fn tax_rates_are_the_fiscal_reference(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let list = style_a(app.get("/api/v1/tax-rates").await, 200).await;
    assert_eq!(list["object"], "list");
    assert_eq!(list["url"], "/api/v1/tax-rates");
    assert_eq!(list["has_more"], false);
    assert_eq!(list["next_cursor"], Value::Null);
    let data = items(&list);
    let codes: Vec<i64> = data.iter().map(|t| t["code"].as_i64().expect("integer code")).collect();
    assert_eq!(codes, vec![3, 4, 5, 6, 8, 9]);
    let percentages: Vec<f64> = data.iter().map(|t| t["percentage"].as_f64().expect("number")).collect();
    assert_eq!(percentages, vec![0.0, 10.5, 21.0, 27.0, 5.0, 2.5]);
    for rate in &data {
        assert_eq!(key_set(rate), names_set(&["object", "code", "percentage", "description"]), "{rate}");
        assert_eq!(rate["object"], "tax_rate_reference");
        assert!(rate["description"].as_str().is_some_and(|d| !d.is_empty()), "{rate}");
    }
    for limit in [1, 2, 4, 10] {
        let walked = walk(&app, "/api/v1/tax-rates", limit, &app.api_key).await;
        assert_eq!(walked, data, "pages of {limit} walk the same items");
    }
    let vouchers = style_a(app.get("/api/v1/voucher-types?limit=1").await, 200).await;
    let cursor = vouchers["next_cursor"].as_str().expect("voucher types have more than one page");
    let refused =
        error(app.get(&format!("/api/v1/tax-rates?cursor={cursor}")).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), vec!["cursor"], "a cursor of another list is refused");
    assert_bad_list_parameters(&app, "/api/v1/tax-rates", &["limit=0", "limit=101", "limit=x", "page=1"]).await;
}

#[sqlx::test(migrations = "../schema")]
async fn voucher_types_are_the_fiscal_reference_and_page_by_code(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let url = "/api/v1/voucher-types";
    let whole = style_a(app.get(&format!("{url}?limit=100")).await, 200).await;
    assert_eq!(whole["has_more"], false);
    let data = items(&whole);
    let codes: Vec<i64> = data.iter().map(|v| v["code"].as_i64().expect("integer code")).collect();
    assert!(codes.windows(2).all(|w| w[0] < w[1]), "sorted by code: {codes:?}");
    for code in [1, 2, 3, 6, 7, 8, 11, 90] {
        assert!(codes.contains(&code), "code {code} is listed");
    }
    let by_code = |code: i64| data.iter().find(|v| v["code"] == code).cloned().expect("listed");
    for (code, kind, letter) in [
        (1, "invoice", "A"),
        (2, "debit_note", "A"),
        (3, "credit_note", "A"),
        (6, "invoice", "B"),
        (7, "debit_note", "B"),
        (8, "credit_note", "B"),
        (11, "invoice", "C"),
    ] {
        let voucher = by_code(code);
        assert_eq!(voucher["document_kind"], kind, "{voucher}");
        assert_eq!(voucher["letter"], letter, "{voucher}");
    }
    let quote = by_code(90);
    assert_eq!(quote["letter"], Value::Null, "code 90 has no letter: {quote}");
    assert!(quote["document_kind"].is_string(), "{quote}");
    for voucher in &data {
        assert_eq!(
            key_set(voucher),
            names_set(&["object", "code", "abbreviation", "document_kind", "letter", "description"]),
            "{voucher}"
        );
        assert_eq!(voucher["object"], "voucher_type_reference");
        assert!(voucher["abbreviation"].as_str().is_some_and(|a| !a.is_empty()), "{voucher}");
        assert!(voucher["description"].as_str().is_some_and(|d| !d.is_empty()), "{voucher}");
    }

    let first = style_a(app.get(&format!("{url}?limit=10")).await, 200).await;
    assert_eq!(first["has_more"], true);
    assert_eq!(items(&first).len(), 10);
    let walked = walk(&app, url, 10, &app.api_key).await;
    assert_eq!(walked, data, "pages of ten walk every item once, in order");
    let default_page = style_a(app.get(url).await, 200).await;
    assert_eq!(items(&default_page).len(), data.len().min(50), "default limit 50");
    assert_bad_list_parameters(&app, url, &["limit=0", "limit=101", "page=2", "cursor=abc.def"]).await;
}

// ---------------------------------------------------------------------------------------------------
// Cached reads, scopes, tenancy
// ---------------------------------------------------------------------------------------------------

#[sqlx::test(migrations = "../schema")]
async fn cached_reads_show_every_replacement(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let warehouse = format!("{WAREHOUSES}/{}", id_of(&create(&app, WAREHOUSES, &json!({"name": "Norte"})).await));
    let method =
        format!("{PAYMENT_METHODS}/{}", id_of(&create(&app, PAYMENT_METHODS, &json!({"name": "Tarjeta"})).await));
    let category = format!("{CATEGORIES}/{}", id_of(&create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await));
    for round in 0..4 {
        for path in [&warehouse, &method, &category] {
            // Two reads: the second is served from the cache.
            let first = style_b(app.get(path).await, 200).await;
            assert_eq!(style_b(app.get(path).await, 200).await, first);
            let name = format!("Nombre {round}");
            let replaced = style_b(app.put(path, &json!({"name": name})).await, 200).await;
            let read = style_b(app.get(path).await, 200).await;
            assert_eq!(read["name"], name.as_str(), "{path}: the cached read was invalidated");
            assert_eq!(read, replaced);
        }
    }
    let changed = style_b(app.put(&warehouse, &json!({"name": "Norte", "address": "Ruta 3"})).await, 200).await;
    assert_eq!(style_b(app.get(&warehouse).await, 200).await, changed);
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

/// Rebuilding the configuration records' projections from the event store (while the service runs)
/// yields the same lists: names, default flags, parents and timestamps.
#[sqlx::test(migrations = "../schema")]
async fn a_rebuild_of_configuration_records_yields_the_same_reads(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    seeded(&app, WAREHOUSES, "Depósito principal").await;
    create(&app, WAREHOUSES, &json!({"name": "O'Higgins \\ Norte", "isDefault": true})).await;
    let drinks = create(&app, CATEGORIES, &json!({"name": "Bebidas"})).await;
    create(&app, CATEGORIES, &json!({"name": "Gaseosas", "parentId": id_of(&drinks)})).await;
    let lists = [WAREHOUSES, CATEGORIES];
    let mut before = Vec::new();
    for list in lists {
        let mut body = json(app.get(list).await, 200).await;
        body["request_id"] = Value::Null;
        before.push(body);
    }
    assert!(before[0].to_string().contains(r#"O'Higgins \\ Norte"#), "{}", before[0]);
    for name in ["warehouses", "categories"] {
        let projection = projections::all().into_iter().find(|p| p.name() == name).expect("projection");
        projections::rebuild::rebuild(&app.pool, projection.as_ref(), |_| {}).await.expect("rebuild");
    }
    for (list, before) in lists.iter().zip(before) {
        let mut after = json(app.get(list).await, 200).await;
        after["request_id"] = Value::Null;
        assert_eq!(after, before, "{list} after the rebuild");
    }
    // Writes after the swap still reach the rebuilt tables (the live projector notices the swap).
    let south = create(&app, WAREHOUSES, &json!({"name": "Sur"})).await;
    let path = format!("{WAREHOUSES}/{}", id_of(&south));
    assert_eq!(style_b(app.get(&path).await, 200).await["name"], "Sur");
}
