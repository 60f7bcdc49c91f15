//! Reports: grouped sales with credit notes subtracting and categories and tags as recorded, the CSV
//! form agreeing with the JSON one row for row, `as_of` answering as the history stood (an answer of now
//! counting nothing above the position it names), every bad query refused with a 400 naming it, a
//! delegated token summing only the payments it reads, stock a purchase receives valued at the cost the
//! purchase sets, and voucher types sorted as numbers.

use crate::helpers::{CATEGORIES, TestApp, WAREHOUSES, customer, delegated_token, detail_fields, error, eventually, json, seeded, today};
use crate::sales::{fiscal_profile, payment_method, point_of_sale, sell};
use crate::treasury::registers_of_ana_and_beto;
use projections::ProjectionId;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

pub const REPORTS: &str = "/api/v1/reports/query";

/// Waits until the reports projection has folded every event of the organization it folds.
pub async fn folded(app: &TestApp, org_id: Uuid) {
    let folds = projections::projection(ProjectionId::Reports).folds();
    eventually(Duration::from_secs(30), "the reports projection to fold every event", || async {
        let types: Vec<String> = sqlx::query_scalar("select stream_type from events where org_id = $1")
            .bind(org_id)
            .fetch_all(&app.pool)
            .await
            .expect("events");
        let expected = types.iter().filter(|t| folds.includes(t)).count() as i64;
        let marked: i64 = sqlx::query_scalar("select count(*) from report_marks where org_id = $1")
            .bind(org_id)
            .fetch_one(&app.pool)
            .await
            .expect("marks");
        (marked == expected).then_some(())
    })
    .await;
}

/// The `data` of a report's JSON answer.
pub async fn report(app: &TestApp, body: &Value) -> Value {
    json(app.post(REPORTS, body).await, 200).await["data"].clone()
}

/// A report's CSV answer.
async fn csv(app: &TestApp, body: &Value) -> String {
    let answer = app
        .client
        .post(format!("{}{REPORTS}", app.base))
        .bearer_auth(&app.api_key)
        .header("Accept", "text/csv")
        .json(body)
        .send()
        .await
        .expect("request");
    assert_eq!(answer.status().as_u16(), 200);
    assert_eq!(answer.headers()["content-type"], "text/csv; charset=utf-8");
    answer.text().await.expect("text")
}

async fn product(app: &TestApp, sku: &str, category: &str, warehouse: &str) -> String {
    let body = json!({ "name": format!("Artículo {sku}"), "sku": sku, "price": 1000, "cost": 400,
        "categoryId": category, "warehouseStocks": [{ "warehouseId": warehouse, "quantity": 50 }] });
    json(app.post_keyed("/api/v1/products", &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

async fn category(app: &TestApp, name: &str) -> String {
    json(app.post(CATEGORIES, &json!({ "name": name })).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

/// The row whose key of `group` is named `name`.
fn row<'a>(data: &'a Value, group: usize, name: Option<&str>) -> &'a Value {
    data["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["keys"][group]["name"].as_str() == name)
        .unwrap_or_else(|| panic!("no row named {name:?} in {data}"))
}

#[sqlx::test(migrations = "../schema")]
async fn sales_group_by_month_and_category_as_recorded_and_credit_notes_subtract(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let drinks = category(&app, "Bebidas").await;
    let pantry = category(&app, "Almacén").await;
    let mate = product(&app, "MATE", &drinks, &main).await;
    let yerba = product(&app, "YERBA", &pantry, &main).await;
    let promo = json(app.post("/api/v1/tags", &json!({ "name": "Promoción" })).await, 201).await["data"]["id"].clone();
    json(app.post("/api/v1/products/tags/apply", &json!({ "ids": [mate], "add": [promo] })).await, 200).await;

    let first = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 2500,
        "items": [{ "productId": mate, "quantity": 2, "unitPrice": 1000 }, { "productId": yerba, "quantity": 1, "unitPrice": 500 }] });
    let first = json(sell(&app, &first, true).await, 201).await["data"].clone();
    // The mate moves to the pantry: what it sold before stays under drinks.
    let moved = json!({ "name": "Artículo MATE", "sku": "MATE", "price": 1000, "cost": 400, "categoryId": pantry });
    json(app.put(&format!("/api/v1/products/{mate}"), &moved).await, 200).await;
    let second = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "total": 1000,
        "items": [{ "productId": mate, "quantity": 1, "unitPrice": 1000 }] });
    json(sell(&app, &second, true).await, 201).await;
    folded(&app, app.org_id).await;
    let before_note: i64 = sqlx::query_scalar("select max(position) from events where org_id = $1")
        .bind(app.org_id)
        .fetch_one(&app.pool)
        .await
        .expect("position");
    let note = json!({ "voucherType": 8, "pointOfSaleId": pos, "invoiceDate": today(), "total": 1000,
        "associatedSaleId": first["id"], "items": [{ "productId": mate, "quantity": 1, "unitPrice": 1000 }] });
    json(sell(&app, &note, true).await, 201).await;
    folded(&app, app.org_id).await;

    let query = json!({ "report": "sales", "group_by": ["month", "category"],
        "metrics": ["count", "quantity", "total", "net", "tax"] });
    let data = report(&app, &query).await;
    assert_eq!((data["object"].as_str(), data["report"].as_str()), (Some("report"), Some("sales")));
    assert_eq!(data["rows"].as_array().expect("rows").len(), 2, "{data}");
    let month = &today()[..7];
    let drinks_row = row(&data, 1, Some("Bebidas"));
    assert_eq!(drinks_row["keys"][0], json!({ "group": "month", "value": month, "name": month }));
    assert_eq!(drinks_row["keys"][1]["value"], drinks.as_str());
    assert_eq!(drinks_row["metrics"]["count"], 1);
    assert_eq!(drinks_row["metrics"]["quantity"], "2");
    assert_eq!(drinks_row["metrics"]["total"], 2000);
    // The pantry: the yerba, the mate sold after it moved, and the credit note (recorded after too).
    let pantry_row = row(&data, 1, Some("Almacén"));
    assert_eq!(pantry_row["metrics"]["count"], 1);
    assert_eq!(pantry_row["metrics"]["quantity"], "1");
    assert_eq!(pantry_row["metrics"]["total"], 500);
    for r in data["rows"].as_array().expect("rows").iter().chain([&json!({ "metrics": data["totals"] })]) {
        let m = &r["metrics"];
        assert_eq!(m["net"].as_i64().expect("net") + m["tax"].as_i64().expect("tax"), m["total"].as_i64().expect("total"));
    }
    assert_eq!(data["totals"]["total"], 2500);
    assert_eq!(data["totals"]["quantity"], "3");
    let reflected = data["as_of"]["position"].as_i64().expect("position");
    assert!(reflected > before_note, "the answer names the position it reflects");

    // Tags as recorded: the mate's lines under the promotion, the yerba's under none.
    let by_tag = report(&app, &json!({ "report": "sales", "group_by": ["tag"], "metrics": ["quantity", "total"] })).await;
    assert_eq!(row(&by_tag, 0, Some("Promoción"))["metrics"], json!({ "quantity": "2", "total": 2000 }));
    let untagged = row(&by_tag, 0, None);
    assert_eq!((untagged["keys"][0]["value"].clone(), untagged["metrics"]["total"].clone()), (Value::Null, json!(500)));

    // As of the position before the credit note: it is not there yet.
    let then = report(&app, &json!({ "report": "sales", "metrics": ["total"], "as_of": before_note })).await;
    assert_eq!(then["totals"]["total"], 3500);
    assert_eq!(then["as_of"]["position"], before_note);
    let then = report(&app, &json!({ "report": "sales", "group_by": ["category"], "metrics": ["total"], "as_of": before_note })).await;
    assert_eq!(row(&then, 0, Some("Almacén"))["metrics"]["total"], 1500);

    // The CSV form agrees row for row, names intact.
    let text = csv(&app, &query).await;
    assert!(text.starts_with('\u{feff}'), "a byte-order mark tells spreadsheets it is UTF-8");
    let lines: Vec<&str> = text.trim_start_matches('\u{feff}').lines().collect();
    assert_eq!(lines[0], "month,category,category_name,count,quantity,total,net,tax");
    assert_eq!(lines.len(), 3);
    for (line, json_row) in lines[1..].iter().zip(data["rows"].as_array().expect("rows")) {
        let m = &json_row["metrics"];
        let expected = format!(
            "{},{},{},{},{},{},{},{}",
            json_row["keys"][0]["value"].as_str().expect("month"),
            json_row["keys"][1]["value"].as_str().expect("category"),
            json_row["keys"][1]["name"].as_str().expect("name"),
            m["count"],
            m["quantity"].as_str().expect("quantity"),
            m["total"],
            m["net"],
            m["tax"]
        );
        assert_eq!(*line, expected);
    }
    assert!(text.contains("Almacén"));
}

#[sqlx::test(migrations = "../schema")]
async fn a_sales_exempt_and_non_taxed_amounts_count_in_its_net_and_total(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let pos = point_of_sale(&app).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let mate = product(&app, "MATE", &category(&app, "Bebidas").await, &main).await;
    // The historical contract: one line, plus 500 exempt and 300 not taxed on no line.
    let body = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "exemptAmount": 500,
        "nonTaxedAmount": 300, "items": [{ "productId": mate, "quantity": 1, "unitPrice": 1210 }] });
    let sale = json(sell(&app, &body, false).await, 201).await["data"].clone();
    let figure = |name: &str| sale[name].as_i64().unwrap_or_else(|| panic!("{name} in {sale}"));
    let (subtotal, tax, total) = (figure("subtotal"), figure("taxAmount"), figure("total"));
    assert_eq!(subtotal + tax, total);
    folded(&app, app.org_id).await;
    let query = json!({ "report": "sales", "group_by": ["product"], "metrics": ["count", "net", "tax", "total"] });
    let data = report(&app, &query).await;
    assert_eq!(data["totals"], json!({ "count": 1, "net": subtotal, "tax": tax, "total": total }), "the sale's figures");
    let line = data["rows"].as_array().expect("rows").iter().find(|r| r["keys"][0]["value"] == mate.as_str());
    let line_net = subtotal - 800;
    assert_eq!(
        line.expect("the mate's row")["metrics"],
        json!({ "count": 1, "net": line_net, "tax": tax, "total": line_net + tax })
    );
    let off_line = row(&data, 0, None);
    assert_eq!(off_line["metrics"], json!({ "count": 0, "net": 800, "tax": 0, "total": 800 }));
}

#[sqlx::test(migrations = "../schema")]
async fn bad_report_queries_are_400_naming_what_is_wrong(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let cases = [
        (json!({ "report": "profits", "metrics": ["net"] }), vec!["report"]),
        (json!({ "report": "sales", "group_by": ["planet"], "metrics": ["net"] }), vec!["group_by[0]"]),
        (json!({ "report": "sales", "metrics": ["vibes"] }), vec!["metrics[0]"]),
        (json!({ "report": "purchases", "metrics": ["net", "margin"] }), vec!["metrics[1]"]),
        (json!({ "report": "payments", "group_by": ["product"], "metrics": ["amount"] }), vec!["group_by[0]"]),
        (json!({ "report": "sales" }), vec!["metrics"]),
        (
            json!({ "report": "sales", "metrics": ["net"], "filters": { "date_from": "2026-02-01", "date_to": "2026-01-01" } }),
            vec!["filters.date_from"],
        ),
        (json!({ "report": "sales", "metrics": ["net"], "as_of": "2999-01-01T00:00:00Z" }), vec!["as_of"]),
        (json!({ "report": "sales", "metrics": ["net"], "as_of": -1 }), vec!["as_of"]),
        (json!({ "report": "inventory", "group_by": ["month"], "metrics": ["on_hand"] }), vec!["group_by"]),
        (
            json!({ "report": "inventory", "metrics": ["value"], "filters": { "date_from": "2026-01-01" } }),
            vec!["filters.date_from"],
        ),
        (json!({ "report": "purchases", "metrics": ["net"], "filters": { "status": ["issued"] } }), vec!["filters.status"]),
        (json!({ "report": "sales", "metrics": ["net"], "filters": { "customer": ["nope"] } }), vec!["filters.customer[0]"]),
        (json!({ "report": "sales", "metrics": ["net"], "sort": ["-total"] }), vec!["sort[0]"]),
        (json!({ "report": "sales", "metrics": ["net", "net"] }), vec!["metrics[1]"]),
        (json!({ "report": "sales", "metrics": ["net"], "limit": 0 }), vec!["limit"]),
        (json!({ "report": "sales", "metrics": ["net"], "colour": "red" }), vec!["colour"]),
        (json!({ "report": "sales", "metrics": ["net"], "cursor": "forged.cursor" }), vec!["cursor"]),
    ];
    for (body, fields) in cases {
        let refused = error(app.post(REPORTS, &body).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), fields, "{body}: {refused}");
    }
}

#[sqlx::test(migrations = "../schema")]
async fn reports_page_with_cursors_at_one_position_and_see_one_organization(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let shelf = category(&app, "Estante").await;
    let mut products = Vec::new();
    for n in 0..5 {
        products.push(product(&app, &format!("P{n}"), &shelf, &main).await);
    }
    folded(&app, app.org_id).await;
    let query = json!({ "report": "inventory", "group_by": ["product"], "metrics": ["on_hand", "value"],
        "sort": ["product"], "limit": 2 });
    let first = report(&app, &query).await;
    assert_eq!(first["rows"].as_array().expect("rows").len(), 2);
    assert_eq!(first["rows"][0]["metrics"], json!({ "on_hand": "50", "value": 20000 }));
    assert!(first["has_more"].as_bool().expect("has_more"));
    // A movement after the first page does not move the later pages.
    let out = json!({ "type": "out", "warehouse_id": main, "reason": "rotura",
        "lines": products.iter().map(|p| json!({ "product_id": p, "quantity": 1 })).collect::<Vec<_>>() });
    json(app.post_keyed("/api/v1/stock-movements", &out).await, 201).await;
    folded(&app, app.org_id).await;
    let mut seen: Vec<Value> = first["rows"].as_array().expect("rows").clone();
    let mut cursor = first["next_cursor"].clone();
    while let Some(next) = cursor.as_str() {
        let mut body = query.clone();
        body["cursor"] = json!(next);
        let page = report(&app, &body).await;
        assert_eq!(page["as_of"], first["as_of"]);
        seen.extend(page["rows"].as_array().expect("rows").iter().cloned());
        cursor = page["next_cursor"].clone();
    }
    assert_eq!(seen.len(), 5);
    assert!(seen.iter().all(|r| r["metrics"]["on_hand"] == "50"), "every page answers at the first page's position");
    let mut ids: Vec<String> = seen.iter().map(|r| r["keys"][0]["value"].as_str().expect("id").to_owned()).collect();
    let listed = ids.clone();
    ids.sort();
    assert_eq!(ids, listed, "sorted by product");
    let now = report(&app, &json!({ "report": "inventory", "metrics": ["on_hand"] })).await;
    assert_eq!(now["totals"]["on_hand"], "245");

    // Another organization's report counts nothing of this one, even when filtered by its ids.
    let (_, key) = app.other_org().await;
    let foreign = json!({ "report": "inventory", "metrics": ["on_hand", "count"], "filters": { "category": [shelf] } });
    let answer = app
        .client
        .post(format!("{}{REPORTS}", app.base))
        .bearer_auth(&key)
        .json(&foreign)
        .send()
        .await
        .expect("request");
    let answer = json(answer, 200).await["data"].clone();
    assert_eq!(answer["rows"].as_array().expect("rows").len(), 1, "one group of nothing");
    assert_eq!(answer["totals"], json!({ "on_hand": "0", "count": 0 }));
}

/// An answer of now counts nothing above the position it names, from the rollups as from the facts.
/// That position is the organization's checkpoint, the last event folded in commit order, which is not
/// position order: of two overlapping commits, the one folded last may hold the lower positions and
/// leave the checkpoint below facts already folded. Lowering the checkpoint under the last fact stands
/// for that (a race otherwise).
#[sqlx::test(migrations = "../schema")]
async fn an_answer_of_now_counts_nothing_above_the_position_it_names(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let shelf = category(&app, "Estante").await;
    product(&app, "P0", &shelf, &main).await;
    product(&app, "P1", &shelf, &main).await;
    folded(&app, app.org_id).await;
    // Rollups (no dimension) and facts (two dimensions).
    let queries = [
        json!({ "report": "inventory", "metrics": ["on_hand", "count"] }),
        json!({ "report": "inventory", "group_by": ["product", "warehouse"], "metrics": ["on_hand", "count"] }),
    ];
    for query in &queries {
        assert_eq!(report(&app, query).await["totals"]["on_hand"], "100", "{query}");
    }
    let last: i64 = sqlx::query_scalar(
        "select max(position) from report_facts where org_id = $1 and report = 'inventory' and quantity <> 0",
    )
    .bind(app.org_id)
    .fetch_one(&app.pool)
    .await
    .expect("last fact");
    let named = last - 1;
    sqlx::query("update projection_checkpoints set position = $2 where projection = 'reports' and org_id = $1")
        .bind(app.org_id)
        .bind(named)
        .execute(&app.pool)
        .await
        .expect("checkpoint");

    for query in &queries {
        let now = report(&app, query).await;
        assert_eq!(now["as_of"]["position"], named, "{query}");
        assert_ne!(now["totals"]["on_hand"], "100", "the fact above the named position is not counted: {now}");
        let mut at = query.clone();
        at["as_of"] = json!(named);
        let then = report(&app, &at).await;
        assert_eq!((&now["rows"], &now["totals"]), (&then["rows"], &then["totals"]), "{query}");
    }
}

/// A report's JSON answer to `token`.
async fn report_as(app: &TestApp, token: &str, body: &Value) -> Value {
    let request = app.client.post(format!("{}{REPORTS}", app.base)).bearer_auth(token).json(body);
    json(request.send().await.expect("request"), 200).await["data"].clone()
}

/// A payment of `buyer` that `token` records under `key`, a cash line of each `(amount, register)`; its id.
async fn pay(app: &TestApp, token: &str, key: &str, (buyer, method): (&str, &str), lines: &[(i64, &str)]) -> String {
    let lines: Vec<Value> = lines
        .iter()
        .map(|(amount, register)| {
            let mut line = json!({ "payment_method_id": method, "amount": amount, "balance_type": "cash_register" });
            line["balance_id"] = json!(register);
            line
        })
        .collect();
    let body = json!({ "customer_id": buyer, "occurred_on": today(), "lines": lines });
    let request = app.client.post(format!("{}/api/v1/customer-payments", app.base)).bearer_auth(token);
    let answer = request.header("Idempotency-Key", key).json(&body).send().await.expect("sent");
    json(answer, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

/// The payments report sums for a delegated token the payments its payment reads show it: none with a
/// line in a register it is not assigned (a payment in two registers included), none another user
/// took under `own` visibility. An API key sums every one.
#[sqlx::test(migrations = "../schema")]
async fn a_delegated_token_sums_only_the_payments_it_sees(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (cash, buyer) = (payment_method(&app).await, customer(&app, "Ana Ñandú").await);
    let (mine, other) = registers_of_ana_and_beto(&app).await;
    let scopes = ["reports:read", "payments:read", "payments:write"];
    let ana = delegated_token(&app, &scopes, "ana", "organization", &[&mine]).await;
    let carla = delegated_token(&app, &scopes, "carla", "own", &[&mine]).await;

    // The organization's 100 into Ana's register, 200 into Beto's (voided), 400 and 50 across both;
    // Carla's own 30 into Ana's register.
    let (contact, at_mine, at_other) = ((buyer.as_str(), cash.as_str()), mine.as_str(), other.as_str());
    pay(&app, &app.api_key, "mine", contact, &[(100, at_mine)]).await;
    let theirs = pay(&app, &app.api_key, "theirs", contact, &[(200, at_other)]).await;
    pay(&app, &app.api_key, "both", contact, &[(400, at_mine), (50, at_other)]).await;
    pay(&app, &carla, "carlas", contact, &[(30, at_mine)]).await;
    let void = format!("/api/v1/customer-payments/{theirs}/void");
    json(crate::payments::send(&app, &void, "void", &json!({})).await, 200).await;
    folded(&app, app.org_id).await;
    eventually(Duration::from_secs(15), "the payments readable", || async {
        let read: i64 = sqlx::query_scalar("select count(*) from payments_view where org_id = $1 and status = 'voided'")
            .bind(app.org_id)
            .fetch_one(&app.pool)
            .await
            .expect("payments");
        (read == 1).then_some(())
    })
    .await;

    // Each register's row, as (register, metrics).
    let rows = |data: &Value| -> Vec<(String, Value)> {
        let rows = data["rows"].as_array().expect("rows").iter();
        rows.map(|r| (r["keys"][0]["value"].as_str().expect("location").to_owned(), r["metrics"].clone())).collect()
    };
    let query = json!({ "report": "payments", "group_by": ["location"], "metrics": ["count", "amount"] });
    let everything = report(&app, &query).await;
    assert_eq!(everything["totals"], json!({ "count": 4, "amount": 100 + 400 + 50 + 30 }), "{everything}");
    assert!(rows(&everything).contains(&(other.clone(), json!({ "count": 1, "amount": 50 }))), "{everything}");
    // Ana sees her register's payments, Carla's among them, and not the one with a line in Beto's.
    let hers = report_as(&app, &ana, &query).await;
    assert_eq!(hers["totals"], json!({ "count": 2, "amount": 130 }), "{hers}");
    assert_eq!(rows(&hers), [(mine.clone(), json!({ "count": 2, "amount": 130 }))], "{hers}");
    // Carla, under `own`, sees only what she took, with or without a status filter.
    let by_status = json!({ "report": "payments", "metrics": ["amount"], "filters": { "status": ["recorded"] } });
    assert_eq!(report_as(&app, &carla, &query).await["totals"], json!({ "count": 1, "amount": 30 }));
    assert_eq!(report_as(&app, &carla, &by_status).await["totals"], json!({ "amount": 30 }));
    assert_eq!(report(&app, &by_status).await["totals"], json!({ "amount": 100 + 200 + 400 + 50 + 30 }));
}

/// Stock a purchase receives is worth the cost the purchase gives its product (the line's net unit cost
/// in pesos), not the cost the product had before: the product's own event recording the new cost
/// comes after the purchase's, in the same commit.
#[sqlx::test(migrations = "../schema")]
async fn stock_a_purchase_receives_is_valued_at_the_cost_the_purchase_sets(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    // 50 units at 400 on hand.
    let mate = product(&app, "MATE", &category(&app, "Bebidas").await, &main).await;
    let acme = app.created_id("/api/v1/suppliers", &json!({ "name": "Distribuidora Acme" })).await;
    // 10 more received at 1000 each, net of VAT (an A voucher): the mate's cost becomes 1000.
    let lines = json!([{ "productId": mate, "quantity": 10, "unitCost": 1000 }]);
    let mut body = crate::purchases::purchase(&acme, "0001-00000001", Some(&main), lines);
    body["invoiceDate"] = json!(today());
    let created = json(app.post_keyed("/api/v1/purchases", &body).await, 201).await;
    assert_eq!(
        created["data"]["projectedEffects"]["costUpdates"],
        json!([{ "productId": mate, "previousCost": 400, "newCost": 1000 }])
    );
    folded(&app, app.org_id).await;

    let expected = json!({ "on_hand": "60", "value": 50 * 400 + 10 * 1000 });
    let by_product = json!({ "report": "inventory", "group_by": ["product"], "metrics": ["on_hand", "value"] });
    let data = report(&app, &by_product).await;
    let line = data["rows"].as_array().expect("rows").iter().find(|r| r["keys"][0]["value"] == mate.as_str());
    assert_eq!(line.expect("the mate's row")["metrics"], expected, "{data}");
    assert_eq!(data["totals"], expected, "{data}");
    // Grouped by product and warehouse, the facts answer: the same value.
    let by_warehouse =
        json!({ "report": "inventory", "group_by": ["product", "warehouse"], "metrics": ["on_hand", "value"] });
    assert_eq!(report(&app, &by_warehouse).await["rows"][0]["metrics"], expected);
}

/// Voucher types are codes: rows grouped by them sort as numbers (6 before 11), ascending by default
/// and descending when asked, whether the rollups answer (grouped by voucher type alone) or the facts
/// (grouped by supplier too), in JSON and in CSV.
#[sqlx::test(migrations = "../schema")]
async fn rows_grouped_by_voucher_type_sort_by_its_number(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mate = crate::purchases::product(&app, "MATE", 400).await;
    let acme = app.created_id("/api/v1/suppliers", &json!({ "name": "Distribuidora Acme" })).await;
    for (n, voucher_type) in [11, 1, 6].into_iter().enumerate() {
        let lines = json!([{ "productId": mate, "quantity": 1, "unitCost": 100 }]);
        let mut body = crate::purchases::purchase(&acme, &format!("0001-{:08}", n + 1), None, lines);
        body["voucherType"] = json!(voucher_type);
        body["invoiceDate"] = json!(today());
        json(app.post_keyed("/api/v1/purchases", &body).await, 201).await;
    }
    folded(&app, app.org_id).await;

    let codes = |data: &Value| -> Vec<String> {
        let rows = data["rows"].as_array().expect("rows").iter();
        rows.map(|r| r["keys"][0]["value"].as_str().expect("a voucher code").to_owned()).collect()
    };
    for group_by in [json!(["voucher_type"]), json!(["voucher_type", "supplier"])] {
        let query = json!({ "report": "purchases", "group_by": group_by, "metrics": ["count"] });
        let data = report(&app, &query).await;
        assert_eq!(codes(&data), ["1", "6", "11"], "{data}");
        let text = csv(&app, &query).await;
        let listed: Vec<&str> = text.lines().skip(1).map(|line| line.split(',').next().expect("the code")).collect();
        assert_eq!(listed, ["1", "6", "11"], "{text}");
        let mut descending = query.clone();
        descending["sort"] = json!(["-voucher_type"]);
        let data = report(&app, &descending).await;
        assert_eq!(codes(&data), ["11", "6", "1"], "{data}");
    }
}
