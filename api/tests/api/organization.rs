//! `/api/v1/organization`: the spec's fields, cached reads, a new organization readable by its own
//! credential at once, and what a new organization is seeded with for treasury.

use crate::helpers::{GENEROUS, TestApp, instant, items, json, key_set, names_set, organization, seeded, style_a};
use events::catalogue::{Currency, LocationKind};
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

/// The code of the ledger account behind location `id` of the test's organization.
async fn backing_account(app: &TestApp, id: &str) -> String {
    sqlx::query_scalar(
        "select a.code from treasury_locations l
         join ledger_accounts a on a.org_id = l.org_id and a.id = l.ledger_account_id
         where l.org_id = $1 and l.id = $2",
    )
    .bind(app.org_id)
    .bind(id.parse::<Uuid>().expect("an id"))
    .fetch_one(&app.pool)
    .await
    .expect("a location on a ledger account")
}

/// `create-org` seeds what design.md names, a cash register and a safe among it: one of each, active, in
/// pesos, on accounts of the chart. Every account of the chart has its `LedgerAccountOpened` event, as an
/// account an operator opens has, so the organization's event history (what auditors replay) holds the
/// whole chart; and a register opened later takes the next code after the safe's.
#[sqlx::test(migrations = "../schema")]
async fn a_new_organization_has_a_register_a_safe_and_a_chart_with_its_events(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let register = seeded(&app, "/api/v1/cash-registers", "Caja principal").await;
    let safe = seeded(&app, "/api/v1/safes", "Caja fuerte").await;
    for (location, object) in [(&register, "cash_register"), (&safe, "safe")] {
        assert_eq!(
            (location["object"].as_str(), location["currency"].as_str(), location["status"].as_str()),
            (Some(object), Some("PES"), Some("active")),
            "{location}"
        );
    }
    for list in ["/api/v1/cash-registers", "/api/v1/safes"] {
        assert_eq!(items(&json(app.get(list).await, 200).await).len(), 1, "{list}: the seeded one alone");
    }
    let (register, safe) = (register["id"].as_str().expect("id"), safe["id"].as_str().expect("id"));
    assert_eq!(backing_account(&app, register).await, "1.1.1", "the register is kept on Caja");
    assert_eq!(backing_account(&app, safe).await, "1.1.1.01", "the safe on an account of its own");

    // Every account of the chart, as the write model holds it, is an account its event opened.
    let chart: Vec<(Uuid, String, String, String)> =
        sqlx::query_as("select id, code, name, currency from ledger_accounts where org_id = $1 order by code")
            .bind(app.org_id)
            .fetch_all(&app.pool)
            .await
            .expect("the chart");
    let codes: Vec<&str> = chart.iter().map(|(_, code, _, _)| code.as_str()).collect();
    assert_eq!(codes, ["1.1.1", "1.1.1.01", "1.1.3", "2.1.1", "5.2.1"]);
    let opened: Vec<(Uuid, String, String, String)> = sqlx::query_as(
        "select stream_id, data->>'code', data->>'name', data->>'currency' from events
         where org_id = $1 and stream_type = 'ledger_account' and event_type = 'LedgerAccountOpened'
         order by data->>'code'",
    )
    .bind(app.org_id)
    .fetch_all(&app.pool)
    .await
    .expect("the chart's events");
    assert_eq!(opened, chart, "each seeded account has its event");

    // A register opened later without an account gets the next code of the group.
    let later = crate::treasury::open(&app, app.org_id, LocationKind::CashRegister, "Caja 2", Currency::Pes).await;
    assert_eq!(backing_account(&app, &later).await, "1.1.1.02");
}
