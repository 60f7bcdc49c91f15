//! `/api/v1/payment-methods`: the spec's shape and defaults, replacement, every field rule (refusals
//! write nothing), the single default flag, and the cursor list.

use crate::helpers::{
    PAYMENT_METHODS, TestApp, WAREHOUSES, assert_bad_list_parameters, assert_field_rules,
    assert_non_object_bodies_refused, create, detail_fields, error, id_of, ids, instant, items, key_set, names,
    names_set, seeded, sorted, strings, style_a, style_b, walk,
};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

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
