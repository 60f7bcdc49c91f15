//! Suppliers: the customer body and rules under their own path, scopes and read model.

use crate::helpers::{TestApp, detail_fields, error, json};
use commands::organization as admin;
use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

async fn ledger_account(pool: &PgPool, org: Uuid) -> Uuid {
    sqlx::query_scalar("select id from ledger_accounts where org_id = $1 order by id limit 1")
        .bind(org)
        .fetch_one(pool)
        .await
        .expect("a seeded ledger account")
}

#[sqlx::test(migrations = "../schema")]
async fn suppliers_are_created_read_replaced_and_listed(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let body = json!({
        "name": "Distribuidora Sur", "email": "ventas@sur.example", "phone": "1144556677",
        "taxId": "30712345671", "taxIdType": "CUIL/CUIT", "taxCategory": "Responsable Inscripto",
        "personType": "JURIDICA", "country": "Argentina", "province": "X", "city": "Córdoba",
        "address": "Av. Colón 100", "postalCode": "5000"
    });
    let created = json(app.post("/api/v1/suppliers", &body).await, 201).await;
    assert_eq!(created["success"], true);
    let data = &created["data"];
    assert_eq!(data["name"], "Distribuidora Sur");
    assert_eq!(data["taxCategory"], "Responsable Inscripto");
    assert_eq!(data["province"], "Córdoba", "the province code is answered with its name");
    assert_eq!(data["isActive"], true);
    assert!(data["createdAt"].as_str().is_some_and(|t| t.ends_with("-03:00")), "{data}");
    let id = data["id"].as_str().expect("id").to_owned();
    let path = format!("/api/v1/suppliers/{id}");

    // Read right after the write; the same object.
    let read = json(app.get(&path).await, 200).await;
    assert_eq!(read["data"], created["data"]);

    // PUT replaces: omitted optional fields are cleared.
    let replaced = json(app.put(&path, &json!({"name": "Distribuidora Sur SA"})).await, 200).await;
    assert_eq!(replaced["data"]["name"], "Distribuidora Sur SA");
    assert!(replaced["data"]["email"].is_null());
    assert_eq!(json(app.get(&path).await, 200).await["data"]["name"], "Distribuidora Sur SA");

    // Suppliers and customers are separate: the supplier is not a customer.
    error(app.get(&format!("/api/v1/customers/{id}")).await, 404, "invalid_request_error").await;

    // The list is a cursor list.
    json(app.post("/api/v1/suppliers", &json!({"name": "Mayorista Norte"})).await, 201).await;
    let page = json(app.get("/api/v1/suppliers?limit=1").await, 200).await;
    assert_eq!(page["object"], "list");
    assert_eq!(page["url"], "/api/v1/suppliers");
    assert_eq!(page["has_more"], true);
    assert_eq!(page["data"][0]["id"], id.as_str());
    let cursor = page["next_cursor"].as_str().expect("cursor");
    let next = json(app.get(&format!("/api/v1/suppliers?limit=1&cursor={cursor}")).await, 200).await;
    assert_eq!(next["data"][0]["name"], "Mayorista Norte");
    assert_eq!(next["has_more"], false);
    let customers = json(app.get("/api/v1/customers").await, 200).await;
    assert!(customers["data"].as_array().expect("data").iter().all(|c| c["id"] != id.as_str()));
}

#[sqlx::test(migrations = "../schema")]
async fn supplier_rules_are_the_customer_rules(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = app.event_count().await;
    let invalid =
        json!({"name": "", "email": "no", "taxId": "20267565392", "taxIdType": "CUIL/CUIT", "province": "ZZ"});
    let refused = error(app.post("/api/v1/suppliers", &invalid).await, 400, "invalid_request_error").await;
    let mut fields = detail_fields(&refused);
    fields.sort();
    assert_eq!(fields, ["email", "name", "province", "taxId"], "{refused}");
    assert_eq!(app.event_count().await, before, "a rejected supplier writes nothing");

    // Scopes: suppliers:read and suppliers:write; the default account needs treasury:write too.
    let scopes = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let customers_only = admin::create_api_key(&app.pool, app.org_id, &scopes(&["customers:read", "customers:write"]))
        .await
        .expect("key");
    error(app.request(Method::GET, "/api/v1/suppliers", Some(&customers_only), None).await, 403, "authorization_error")
        .await;
    let body = json!({"name": "Proveedor"});
    error(
        app.request(Method::POST, "/api/v1/suppliers", Some(&customers_only), Some(&body)).await,
        403,
        "authorization_error",
    )
    .await;
    let writer = admin::create_api_key(&app.pool, app.org_id, &scopes(&["suppliers:read", "suppliers:write"]))
        .await
        .expect("key");
    let account = ledger_account(&app.pool, app.org_id).await;
    let with_account = json!({"name": "Proveedor", "default_account_id": account});
    let refused = error(
        app.request(Method::POST, "/api/v1/suppliers", Some(&writer), Some(&with_account)).await,
        403,
        "authorization_error",
    )
    .await;
    assert!(refused["error"]["message"].as_str().is_some_and(|m| m.contains("treasury:write")), "{refused}");
    let created = json(app.post("/api/v1/suppliers", &with_account).await, 201).await;
    assert_eq!(created["data"]["default_account_id"], account.to_string());
    let path = format!("/api/v1/suppliers/{}", created["data"]["id"].as_str().expect("id"));
    // Omitted means unchanged, so a key without treasury:write may still replace the supplier.
    let kept =
        json(app.request(Method::PUT, &path, Some(&writer), Some(&json!({"name": "Proveedor SRL"}))).await, 200).await;
    assert_eq!(kept["data"]["default_account_id"], account.to_string());
    let missing = json!({"name": "Proveedor", "default_account_id": Uuid::now_v7()});
    error(app.post("/api/v1/suppliers", &missing).await, 404, "invalid_request_error").await;
}
