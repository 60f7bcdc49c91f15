//! `/api/v1/organization`: the spec's fields, cached reads, and a new organization readable by its own
//! credential at once.

use crate::helpers::{GENEROUS, TestApp, instant, json, key_set, names_set, organization, style_a};
use reqwest::Method;
use sqlx::PgPool;
use uuid::Uuid;

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
async fn a_new_organization_is_readable_by_its_own_credential_at_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    for i in 0..5 {
        let created =
            commands::organization::create_organization_with(&app.pool, &format!("Recién creada {i}"), GENEROUS)
                .await
                .expect("org");
        // The credential is accepted at once (the list answers 200)...
        json(app.request(Method::GET, "/api/v1/tax-rates", Some(&created.api_key), None).await, 200).await;
        // ...so the recommended first call, reading its own organization, must succeed too.
        let body =
            json(app.request(Method::GET, "/api/v1/organization", Some(&created.api_key), None).await, 200).await;
        assert_eq!(body["data"]["id"], created.organization_id.to_string());
    }
}
