//! `/api/v1/customers`: the spec's shapes, read-your-writes, replacement, the cursor list, every field
//! rule, and tenancy.

use crate::helpers::{TestApp, detail_fields, error, json};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

fn full_body() -> Value {
    json!({
        "name": "Ana Gómez", "email": "ana@example.com", "phone": "1144556677", "taxId": "20267565393",
        "taxIdType": "CUIL/CUIT", "taxCategory": "Responsable Inscripto", "personType": "FISICA",
        "country": "Argentina", "province": "B", "city": "La Plata", "address": "Calle 7 1234",
        "apartment": "3B", "postalCode": "1900"
    })
}

#[sqlx::test(migrations = "../schema")]
async fn a_created_customer_is_readable_at_once_in_the_spec_shape(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for _ in 0..5 {
        let created = json(app.post("/api/v1/customers", &full_body()).await, 201).await;
        assert_eq!(created["success"], true);
        let data = &created["data"];
        for field in [
            "id",
            "name",
            "email",
            "phone",
            "taxId",
            "taxIdType",
            "taxCategory",
            "address",
            "apartment",
            "city",
            "province",
            "isActive",
            "createdAt",
            "updatedAt",
        ] {
            assert!(data.get(field).is_some(), "missing {field} in {data}");
        }
        assert_eq!(data["province"], "Buenos Aires", "the response carries the province name");
        assert_eq!(data["isActive"], true);
        assert!(data["createdAt"].as_str().is_some_and(|t| t.ends_with("-03:00")), "UTC-3 timestamps: {data}");
        // Read-your-writes: the very next GET sees it.
        let id = data["id"].as_str().expect("id");
        let read = json(app.get(&format!("/api/v1/customers/{id}")).await, 200).await;
        assert_eq!(read, created);
    }
}

#[sqlx::test(migrations = "../schema")]
async fn replacing_a_customer_replaces_the_whole_representation(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let created = json(app.post("/api/v1/customers", &full_body()).await, 201).await;
    let id = created["data"]["id"].as_str().expect("id").to_owned();
    let replaced = json(app.put(&format!("/api/v1/customers/{id}"), &json!({"name": "Ana G."})).await, 200).await;
    assert_eq!(replaced["data"]["name"], "Ana G.");
    assert_eq!(replaced["data"]["email"], Value::Null, "omitted fields are cleared");
    assert_eq!(replaced["data"]["createdAt"], created["data"]["createdAt"]);
    let read = json(app.get(&format!("/api/v1/customers/{id}")).await, 200).await;
    assert_eq!(read, replaced, "the cached read was invalidated");
    // The same representation again records nothing.
    let before = app.event_count().await;
    json(app.put(&format!("/api/v1/customers/{id}"), &json!({"name": "Ana G."})).await, 200).await;
    assert_eq!(app.event_count().await, before);
}

#[sqlx::test(migrations = "../schema")]
async fn the_list_pages_with_signed_cursors(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for i in 0..5 {
        json(app.post("/api/v1/customers", &json!({"name": format!("Cliente {i}")})).await, 201).await;
    }
    let first = json(app.get("/api/v1/customers").await, 200).await;
    assert_eq!(first["object"], "list");
    assert_eq!(first["url"], "/api/v1/customers");
    assert_eq!(first["data"].as_array().expect("data").len(), 6, "five plus the default customer");
    assert_eq!(first["has_more"], false);
    assert_eq!(first["next_cursor"], Value::Null);

    let mut seen = Vec::new();
    let mut path = "/api/v1/customers?limit=2".to_owned();
    loop {
        let page = json(app.get(&path).await, 200).await;
        let data = page["data"].as_array().expect("data");
        assert!(data.len() <= 2);
        seen.extend(data.iter().map(|c| c["id"].as_str().expect("id").to_owned()));
        if page["has_more"] == false {
            assert_eq!(page["next_cursor"], Value::Null);
            break;
        }
        path = format!("/api/v1/customers?limit=2&cursor={}", page["next_cursor"].as_str().expect("cursor"));
    }
    let all: Vec<String> =
        first["data"].as_array().expect("data").iter().map(|c| c["id"].as_str().expect("id").to_owned()).collect();
    assert_eq!(seen, all, "pages walk the same stable order");

    for bad in ["limit=0", "limit=101", "limit=abc", "page=2", "cursor=forged.cursor", "cursor=abc"] {
        let body = error(app.get(&format!("/api/v1/customers?{bad}")).await, 400, "invalid_request_error").await;
        let field = bad.split('=').next().expect("name");
        assert!(detail_fields(&body).contains(&field.to_owned()), "{bad}: {body}");
    }
}

#[sqlx::test(migrations = "../schema")]
async fn every_field_rule_is_enforced_and_nothing_is_written(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let cases: Vec<(&str, Value)> = vec![
        ("name", json!("")),
        ("name", json!("   ")),
        ("name", json!("x".repeat(71))),
        ("name", json!(12)),
        ("name", Value::Null),
        ("email", json!("not-an-email")),
        ("email", json!(format!("{}@example.com", "a".repeat(90)))),
        ("email", json!(true)),
        ("phone", json!("12345678901234")),
        ("taxId", json!("123456")),
        ("taxId", json!("123456789012")),
        ("taxId", json!("20-26756539")),
        ("taxId", json!(20267565393_i64)),
        ("taxIdType", json!("PASSPORT")),
        ("taxCategory", json!("Otro")),
        ("personType", json!("HUMANA")),
        ("country", json!("y".repeat(51))),
        ("province", json!("ZZ")),
        ("province", json!("Q1")),
        ("address", json!("a".repeat(71))),
        ("apartment", json!("b".repeat(11))),
        ("postalCode", json!("123456789")),
    ];
    let before = app.event_count().await;
    for (field, value) in cases {
        let mut body = json!({"name": "Ana"});
        body[field] = value.clone();
        for (method, path) in [(Method::POST, "/api/v1/customers".to_owned())] {
            let response = app.request(method, &path, Some(&app.api_key), Some(&body)).await;
            let error = error(response, 400, "invalid_request_error").await;
            assert_eq!(detail_fields(&error), vec![field.to_owned()], "{field} = {value}: {error}");
        }
    }
    // A CUIT with a wrong check digit, and a DNI that is too long.
    let bad_cuit = json!({"name": "Ana", "taxId": "20267565392", "taxIdType": "CUIL/CUIT"});
    assert_eq!(
        detail_fields(&error(app.post("/api/v1/customers", &bad_cuit).await, 400, "invalid_request_error").await),
        vec!["taxId"]
    );
    // Every offending field at once.
    let many = json!({"name": "", "email": "x", "province": "ZZ"});
    let body = error(app.post("/api/v1/customers", &many).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&body), vec!["name", "email", "province"]);
    assert_eq!(app.event_count().await, before, "no rejected request wrote anything");
}

#[sqlx::test(migrations = "../schema")]
async fn malformed_bodies_are_refused_in_the_envelope(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = app.event_count().await;
    let send = |body: &'static str, content_type: &'static str| {
        app.client
            .post(format!("{}/api/v1/customers", app.base))
            .bearer_auth(&app.api_key)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let body = error(send("{\"name\": ", "application/json").await.expect("sent"), 400, "invalid_request_error").await;
    assert_eq!(body["error"]["code"], "MALFORMED_JSON");
    error(send("[1, 2]", "application/json").await.expect("sent"), 400, "invalid_request_error").await;
    error(send("", "application/json").await.expect("sent"), 400, "invalid_request_error").await;
    error(send("name=Ana", "application/x-www-form-urlencoded").await.expect("sent"), 415, "invalid_request_error")
        .await;
    let huge = format!("{{\"name\": \"{}\"}}", "x".repeat(2 * 1024 * 1024));
    let response = app
        .client
        .post(format!("{}/api/v1/customers", app.base))
        .bearer_auth(&app.api_key)
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .expect("sent");
    error(response, 413, "invalid_request_error").await;
    assert_eq!(app.event_count().await, before);
}

#[sqlx::test(migrations = "../schema")]
async fn unknown_and_foreign_customers_are_not_found(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, other_key) = app.other_org().await;
    let ours = json(app.post("/api/v1/customers", &full_body()).await, 201).await;
    let id = ours["data"]["id"].as_str().expect("id");
    let before = app.event_count().await;
    for path in [format!("/api/v1/customers/{}", uuid::Uuid::now_v7()), "/api/v1/customers/not-a-uuid".to_owned()] {
        error(app.get(&path).await, 404, "invalid_request_error").await;
        error(app.put(&path, &json!({"name": "X"})).await, 404, "invalid_request_error").await;
    }
    // Another organization's key cannot see or change it, and learns nothing.
    let path = format!("/api/v1/customers/{id}");
    let foreign =
        error(app.request(Method::GET, &path, Some(&other_key), None).await, 404, "invalid_request_error").await;
    let unknown =
        error(app.get(&format!("/api/v1/customers/{}", uuid::Uuid::now_v7())).await, 404, "invalid_request_error")
            .await;
    assert_eq!(foreign["error"]["message"], unknown["error"]["message"]);
    let body = json!({"name": "Intruso"});
    error(app.request(Method::PUT, &path, Some(&other_key), Some(&body)).await, 404, "invalid_request_error").await;
    let list = json(app.request(Method::GET, "/api/v1/customers", Some(&other_key), None).await, 200).await;
    assert!(list["data"].as_array().expect("data").iter().all(|c| c["id"] != id));
    assert_eq!(app.event_count().await, before);
    assert_eq!(json(app.get(&path).await, 200).await["data"]["name"], "Ana Gómez");
}

/// The worker and the relay keep connections of their own between writes; when the server drops every
/// connection they open new ones by themselves. A write caught on a dropped connection fails in the
/// envelope as 503 `STORAGE_UNAVAILABLE`, retryable, and leaves nothing behind; the writes after it
/// succeed and are readable.
#[sqlx::test(migrations = "../schema")]
async fn writes_recover_by_themselves_when_the_database_drops_every_connection(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    json(app.post("/api/v1/customers", &full_body()).await, 201).await;
    let before = app.event_count().await;
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect_with(&app.pool.connect_options())
        .await
        .expect("a connection of the test's own");
    let dropped: Vec<bool> = sqlx::query_scalar(
        "select pg_terminate_backend(pid) from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid()",
    )
    .fetch_all(&mut admin)
    .await
    .expect("terminate");
    assert!(!dropped.is_empty(), "the service held connections");

    // Each append lane (and the relay) finds out its connection is gone at most once.
    let mut failures = 0;
    let mut created = Vec::new();
    for _ in 0..8 {
        let response = app.post("/api/v1/customers", &full_body()).await;
        let status = response.status().as_u16();
        if status == 201 {
            created.push(json(response, 201).await);
            continue;
        }
        let body = json(response, 503).await;
        assert_eq!(body["error"]["code"], "STORAGE_UNAVAILABLE", "{body}");
        assert_eq!(body["error"]["retryable"], true, "{body}");
        failures += 1;
    }
    assert!(failures <= 2, "writes did not recover: {failures} of 8 failed");
    for customer in &created {
        let id = customer["data"]["id"].as_str().expect("id");
        assert_eq!(&json(app.get(&format!("/api/v1/customers/{id}")).await, 200).await, customer);
    }
    assert_eq!(app.event_count().await, before + created.len() as i64, "failed attempts wrote nothing");
}

/// Concurrent writes share command batches under load; each caller still gets its own outcome, whether
/// its neighbours in the batch succeeded or were refused.
#[sqlx::test(migrations = "../schema")]
async fn concurrent_writes_each_receive_their_own_outcome(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let before = app.event_count().await;
    let writes = (0..40).map(|i| {
        let app = &app;
        async move {
            if i % 5 == 4 {
                // A replacement of a customer that does not exist: refused by the worker.
                let response = app.put(&format!("/api/v1/customers/{}", uuid::Uuid::now_v7()), &full_body()).await;
                (i, response.status().as_u16(), None)
            } else {
                let body = json!({"name": format!("Cliente {i}"), "email": format!("c{i}@example.com")});
                let created = json(app.post("/api/v1/customers", &body).await, 201).await;
                (i, 201, Some(created["data"].clone()))
            }
        }
    });
    let outcomes = futures::future::join_all(writes).await;
    let mut ids = std::collections::HashSet::new();
    for (i, status, data) in outcomes {
        match data {
            None => assert_eq!(status, 404, "write {i}"),
            Some(data) => {
                assert_eq!(data["name"], format!("Cliente {i}"), "write {i} got another write's reply");
                assert_eq!(data["email"], format!("c{i}@example.com"));
                let id = data["id"].as_str().expect("id").to_owned();
                let read = json(app.get(&format!("/api/v1/customers/{id}")).await, 200).await;
                assert_eq!(read["data"]["name"], format!("Cliente {i}"));
                assert!(ids.insert(id), "two writes got one id");
            }
        }
    }
    assert_eq!(ids.len(), 32);
    assert_eq!(app.event_count().await - before, 32, "one event per creation, none for the refusals");
}
