//! Tags: the resource, applying and removing them, and `tags` on customers, suppliers and products.

use crate::helpers::{TestApp, detail_fields, error, json};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

async fn apply(app: &TestApp, segment: &str, body: Value) -> reqwest::Response {
    app.post(&format!("/api/v1/{segment}/tags/apply"), &body).await
}

fn names(resource: &Value) -> Vec<String> {
    resource["tags"]
        .as_array()
        .expect("tags array")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

#[sqlx::test(migrations = "../schema")]
async fn tags_are_applied_shown_renamed_archived_and_removed(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let vip = json(app.post("/api/v1/tags", &json!({"name": "vip", "color": "#FFAA00"})).await, 201).await;
    assert_eq!(vip["data"]["object"], "tag");
    assert_eq!(vip["data"]["color"], "#ffaa00");
    assert!(vip["data"]["archived_at"].is_null());
    let vip = vip["data"]["id"].as_str().expect("id").to_owned();
    let wholesale = json(app.post("/api/v1/tags", &json!({"name": "Mayorista"})).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let refused = error(app.post("/api/v1/tags", &json!({"name": "VIP"})).await, 409, "business_error").await;
    assert_eq!(detail_fields(&refused), ["name"], "names are unique ignoring case");
    let refused =
        error(app.post("/api/v1/tags", &json!({"name": "x", "color": "red"})).await, 400, "invalid_request_error")
            .await;
    assert_eq!(detail_fields(&refused), ["color"]);

    let customer = json(app.post("/api/v1/customers", &json!({"name": "Ana"})).await, 201).await;
    assert_eq!(customer["data"]["tags"], json!([]), "always an array");
    let id = customer["data"]["id"].as_str().expect("id").to_owned();
    let path = format!("/api/v1/customers/{id}");
    json(app.get(&path).await, 200).await; // cached before the tags change

    let applied = json(apply(&app, "customers", json!({"ids": [id], "add": [vip, wholesale]})).await, 200).await;
    assert_eq!(applied["data"]["object"], "tag_application");
    let read = json(app.get(&path).await, 200).await;
    assert_eq!(names(&read["data"]), ["Mayorista", "vip"], "ordered by name, and the cached read was refreshed");
    assert_eq!(read["data"]["tags"][1]["color"], "#ffaa00");
    let list = json(app.get("/api/v1/customers").await, 200).await;
    let listed = list["data"].as_array().expect("data").iter().find(|c| c["id"] == id.as_str()).expect("listed");
    assert_eq!(names(listed), ["Mayorista", "vip"]);

    // Renaming shows everywhere at once; archiving keeps it shown with archived_at.
    json(
        app.request(
            reqwest::Method::PATCH,
            &format!("/api/v1/tags/{vip}"),
            Some(&app.api_key),
            Some(&json!({"name": "Cliente VIP"})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(names(&json(app.get(&path).await, 200).await["data"]), ["Cliente VIP", "Mayorista"]);
    let archived = json(
        app.request(
            reqwest::Method::PATCH,
            &format!("/api/v1/tags/{wholesale}"),
            Some(&app.api_key),
            Some(&json!({"archived": true})),
        )
        .await,
        200,
    )
    .await;
    assert!(archived["data"]["archived_at"].is_string());
    let read = json(app.get(&path).await, 200).await;
    assert!(read["data"]["tags"][1]["archived_at"].is_string(), "{read}");
    let active = json(app.get("/api/v1/tags").await, 200).await;
    assert_eq!(active["data"].as_array().expect("data").len(), 1, "archived tags only on request");
    let all = json(app.get("/api/v1/tags?include_archived=true").await, 200).await;
    assert_eq!(all["data"].as_array().expect("data").len(), 2);

    // An archived tag cannot be applied; unknown resources and tags are refused; nothing is written.
    let supplier = json(app.post("/api/v1/suppliers", &json!({"name": "Prov"})).await, 201).await["data"]["id"].clone();
    let before = app.event_count().await;
    let refused = error(
        apply(&app, "suppliers", json!({"ids": [supplier], "add": [wholesale]})).await,
        400,
        "invalid_request_error",
    )
    .await;
    assert_eq!(detail_fields(&refused), ["add[0]"]);
    let refused = error(
        apply(&app, "customers", json!({"ids": [Uuid::now_v7()], "add": [Uuid::now_v7()]})).await,
        404,
        "invalid_request_error",
    )
    .await;
    assert_eq!(detail_fields(&refused), ["ids[0]", "add[0]"]);
    let refused =
        error(apply(&app, "sales", json!({"ids": [Uuid::now_v7()], "add": [vip]})).await, 404, "invalid_request_error")
            .await;
    assert_eq!(detail_fields(&refused), ["ids[0]"]);
    let refused = error(apply(&app, "customers", json!({"ids": [id]})).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["add"]);
    assert_eq!(app.event_count().await, before);

    // Suppliers and products carry tags too; a product list with `fields` shows tags only when named.
    json(apply(&app, "suppliers", json!({"ids": [supplier], "add": [vip]})).await, 200).await;
    let supplier_read =
        json(app.get(&format!("/api/v1/suppliers/{}", supplier.as_str().expect("id"))).await, 200).await;
    assert_eq!(names(&supplier_read["data"]), ["Cliente VIP"]);
    let product = app.post_key("/api/v1/products", "tag-product", &json!({"name": "Yerba", "sku": "YER", "price": 100})).await;
    let product = json(product, 201).await["data"]["id"].as_str().expect("id").to_owned();
    json(apply(&app, "products", json!({"ids": [product], "add": [vip]})).await, 200).await;
    assert_eq!(names(&json(app.get(&format!("/api/v1/products/{product}")).await, 200).await["data"]), ["Cliente VIP"]);
    let narrow = json(app.get("/api/v1/products?fields=name").await, 200).await;
    assert!(narrow["data"][0].get("tags").is_none());
    let named = json(app.get("/api/v1/products?fields=name,tags").await, 200).await;
    assert_eq!(names(&named["data"][0]), ["Cliente VIP"]);

    // Removing takes it off.
    json(apply(&app, "customers", json!({"ids": [id], "remove": [vip, wholesale]})).await, 200).await;
    assert_eq!(json(app.get(&path).await, 200).await["data"]["tags"], json!([]));
}

/// A sale takes tags like any taggable resource, and shows them in its detail and the list.
#[sqlx::test(migrations = "../schema")]
async fn a_sale_is_tagged_and_shows_its_tags(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    crate::sales::fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = crate::sales::point_of_sale(&app).await;
    let body = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": crate::helpers::today(), "total": 1000,
        "items": [{ "name": "Servicio", "quantity": 1, "unitPrice": 1000 }] });
    let sale = json(crate::sales::sell(&app, &body, true).await, 201).await["data"]["id"].clone();
    let vip = json(app.post("/api/v1/tags", &json!({ "name": "Mayorista" })).await, 201).await["data"]["id"].clone();
    json(apply(&app, "sales", json!({ "ids": [sale], "add": [vip] })).await, 200).await;
    let path = format!("/api/v1/sales/{}", sale.as_str().expect("id"));
    let read = crate::helpers::eventually(std::time::Duration::from_secs(10), "the sale's tag", || async {
        let read = json(app.get(&path).await, 200).await["data"].clone();
        (!names(&read).is_empty()).then_some(read)
    })
    .await;
    assert_eq!(names(&read), ["Mayorista"]);
}
