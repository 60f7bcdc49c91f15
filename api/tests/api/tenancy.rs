//! Tenancy: every route that takes an id, walked from the OpenAPI document, answers 404 for another
//! organization's records exactly as for ids that do not exist, and writes nothing.

use crate::helpers::{TestApp, error, json};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::HashMap;

/// A body valid for the write routes taking an id under `segment`, so only tenancy can make them fail.
fn valid_body(segment: &str, path: &str) -> Value {
    if path.ends_with("/metafields") {
        return json!({"entries": {"nota": "x"}});
    }
    match segment {
        "webhook-endpoints" => json!({"label": "Intruso"}),
        "products" => json!({"name": "Intruso", "sku": "INTRUSO", "price": 1}),
        _ => json!({"name": "Intruso"}),
    }
}

#[sqlx::test(migrations = "../schema")]
async fn every_route_with_an_id_hides_other_organizations(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, intruder) = app.other_org().await;
    let mut ids: HashMap<&str, String> = HashMap::new();
    let customer = json(app.post("/api/v1/customers", &json!({"name": "Ana"})).await, 201).await;
    ids.insert("customers", customer["data"]["id"].as_str().expect("id").to_owned());
    for (segment, body) in [
        ("payment-methods", json!({"name": "Tarjeta"})),
        ("warehouses", json!({"name": "Norte"})),
        ("categories", json!({"name": "Bebidas"})),
        ("suppliers", json!({"name": "Distribuidora Sur"})),
        ("tags", json!({"name": "Mayorista"})),
        ("price-lists", json!({"name": "Mayorista"})),
    ] {
        let created = json(app.post(&format!("/api/v1/{segment}"), &body).await, 201).await;
        ids.insert(segment, created["data"]["id"].as_str().expect("id").to_owned());
    }
    let hook = json!({"label": "Tienda", "url": "https://example.com/hook", "enabled_events": ["product.created"],
        "api_version": "2026-06-29"});
    let created = app
        .client
        .post(format!("{}/api/v1/webhook-endpoints", app.base))
        .bearer_auth(&app.api_key)
        .header("Idempotency-Key", "tenancy-hook")
        .json(&hook)
        .send()
        .await
        .expect("sent");
    let created = json(created, 201).await;
    ids.insert("webhook-endpoints", created["data"]["id"].as_str().expect("id").to_owned());
    let product = app
        .client
        .post(format!("{}/api/v1/products", app.base))
        .bearer_auth(&app.api_key)
        .header("Idempotency-Key", "tenancy-product")
        .json(&json!({"name": "Yerba", "sku": "YER", "price": 100}))
        .send()
        .await
        .expect("sent");
    let product = json(product, 201).await;
    ids.insert("products", product["data"]["id"].as_str().expect("id").to_owned());

    let spec = json(app.request(Method::GET, "/openapi.json", None, None).await, 200).await;
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
            let body = (method != Method::GET).then(|| valid_body(segment, path));
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
            let foreign = error(foreign, 404, "invalid_request_error").await;
            let missing = send(unknown.clone()).await.expect("sent");
            let missing = error(missing, 404, "invalid_request_error").await;
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
