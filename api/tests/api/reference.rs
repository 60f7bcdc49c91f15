//! The fiscal reference data: `/api/v1/tax-rates` and `/api/v1/voucher-types`, their shapes and
//! their cursor pages.

use crate::helpers::{
    TestApp, assert_bad_list_parameters, detail_fields, error, items, key_set, names_set, style_a, walk,
};
use serde_json::Value;
use sqlx::PgPool;

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
