//! Price lists: their rules, the price of every variant under each (automatic, explicit, unavailable),
//! pagination bound to the pricing revision, conditional reads, the product detail under a list, and
//! automatic margin pricing through bulk adjustments.

use crate::helpers::{TestApp, detail_fields, error, json, refused};
use reqwest::{Method, Response};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

/// A POST with a fresh `Idempotency-Key` (products and bulk adjustments require one).
async fn post_keyed(app: &TestApp, path: &str, body: &Value) -> Response {
    app.post_keyed(path, body).await
}

async fn product(app: &TestApp, body: Value) -> String {
    json(post_keyed(app, "/api/v1/products", &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

async fn bulk(app: &TestApp, body: Value) -> Value {
    json(post_keyed(app, "/api/v1/products/bulk-adjustments", &body).await, 200).await
}

/// Creates a price list and returns its id.
async fn create_list(app: &TestApp, body: &Value) -> String {
    json(app.post("/api/v1/price-lists", body).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

async fn get_with(app: &TestApp, path: &str, if_none_match: Option<&str>) -> Response {
    let mut request = app.client.get(format!("{}{path}", app.base)).bearer_auth(&app.api_key);
    if let Some(tag) = if_none_match {
        request = request.header("If-None-Match", tag);
    }
    request.send().await.expect("sent")
}

fn etag(response: &Response) -> String {
    response.headers().get("etag").and_then(|v| v.to_str().ok()).expect("an ETag").to_owned()
}

async fn list_count(app: &TestApp) -> (i64, i64, i64) {
    let count = |sql: &'static str| {
        let pool = app.pool.clone();
        async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&pool).await.expect("count") }
    };
    (
        app.event_count().await,
        count("select count(*) from price_lists_view").await,
        count("select count(*) from price_list_prices").await,
    )
}

#[sqlx::test(migrations = "../schema")]
async fn price_lists_are_validated_created_replaced_and_private(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let variant = product(&app, json!({"name": "Yerba", "sku": "Y-1", "price": 10_000})).await;
    let created = json(
        app.post(
            "/api/v1/price-lists",
            &json!({"name": "Mayorista", "is_automatic": true, "automatic_pricing_mode": "base_price_adjustment",
                    "adjustment_percentage": -12.5, "tax_inclusive": true}),
        )
        .await,
        201,
    )
    .await;
    let data = &created["data"];
    assert!(created["request_id"].as_str().is_some_and(|r| r.starts_with("req_")), "{created}");
    assert_eq!(data["object"], "price_list");
    assert_eq!(data["adjustment_percentage"], "-12.5");
    assert_eq!(data["automatic_pricing_mode"], "base_price_adjustment");
    assert_eq!((data["tax_inclusive"].clone(), data["is_active"].clone()), (json!(true), json!(true)));
    let id = data["id"].as_str().expect("id").to_owned();
    let path = format!("/api/v1/price-lists/{id}");
    let detail = get_with(&app, &path, None).await;
    let detail_tag = etag(&detail);
    assert_eq!(json(detail, 200).await["data"], *data, "readable at once, same shape");
    assert_eq!(get_with(&app, &path, Some(&detail_tag)).await.status().as_u16(), 304);

    // Every rule, each leaving nothing behind.
    let before = list_count(&app).await;
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"name": ""}), vec!["name"]),
        (json!({"name": "mayorista"}), vec!["name"]),
        (json!({"name": "A", "is_automatic": true}), vec!["adjustment_percentage", "automatic_pricing_mode"]),
        (
            json!({"name": "A", "adjustment_percentage": 5, "automatic_pricing_mode": "base_price_adjustment"}),
            vec!["adjustment_percentage", "automatic_pricing_mode"],
        ),
        (
            json!({"name": "A", "is_automatic": true, "automatic_pricing_mode": "cost_plus", "adjustment_percentage": "1.234"}),
            vec!["adjustment_percentage", "automatic_pricing_mode"],
        ),
        (
            json!({"name": "A", "is_automatic": true, "automatic_pricing_mode": "base_price_adjustment", "adjustment_percentage": -100}),
            vec!["adjustment_percentage"],
        ),
        (
            json!({"name": "A", "prices": [{"product_id": variant, "unit_price": 5}, {"product_id": variant, "unit_price": 6}]}),
            vec!["prices[1].product_id"],
        ),
        (
            json!({"name": "A", "prices": [{"product_id": Uuid::now_v7(), "unit_price": 5}]}),
            vec!["prices[0].product_id"],
        ),
        (json!({"name": "A", "prices": [{"product_id": variant, "unit_price": -1}]}), vec!["prices[0].unit_price"]),
    ];
    for (body, expected) in cases {
        let refused = refused(app.post("/api/v1/price-lists", &body).await).await;
        let mut fields = detail_fields(&refused);
        fields.sort();
        assert_eq!(fields, expected, "{body}: {refused}");
        assert_eq!(list_count(&app).await, before, "nothing written for {body}");
    }

    // A replace states the whole list: it becomes manual with one explicit price.
    let replaced = json(
        app.put(&path, &json!({"name": "Mayorista", "prices": [{"product_id": variant, "unit_price": 9_000}]})).await,
        200,
    )
    .await;
    assert_eq!(replaced["data"]["is_automatic"], false);
    assert_eq!(replaced["data"]["adjustment_percentage"], Value::Null);
    assert_eq!(replaced["data"]["explicit_prices"], 1);
    assert_ne!(replaced["data"]["pricing_revision"], data["pricing_revision"]);
    assert_eq!(get_with(&app, &path, Some(&detail_tag)).await.status().as_u16(), 200, "the list changed");

    let second = json(app.post("/api/v1/price-lists", &json!({"name": "Minorista"})).await, 201).await;
    let page = json(app.get("/api/v1/price-lists?limit=1").await, 200).await;
    assert_eq!(page["object"], "list");
    assert_eq!(page["data"][0]["id"], id.as_str());
    let next = page["next_cursor"].as_str().expect("cursor");
    let rest = json(app.get(&format!("/api/v1/price-lists?limit=1&cursor={next}")).await, 200).await;
    assert_eq!(rest["data"][0]["id"], second["data"]["id"]);
    assert_eq!(rest["has_more"], false);

    // Another organization sees none of it.
    let (_, other_key) = app.other_org().await;
    for path in [path.clone(), format!("{path}/prices"), format!("{path}/prices/{variant}")] {
        error(app.request(Method::GET, &path, Some(&other_key), None).await, 404, "invalid_request_error").await;
    }
    let theirs = app.request(Method::GET, "/api/v1/price-lists", Some(&other_key), None).await;
    assert_eq!(json(theirs, 200).await["data"], json!([]));
    let body = json!({"name": "Robada"});
    error(app.request(Method::PUT, &path, Some(&other_key), Some(&body)).await, 404, "invalid_request_error").await;
}

#[sqlx::test(migrations = "../schema")]
async fn prices_are_computed_explicit_or_unavailable_and_the_product_detail_agrees(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let yerba = product(&app, json!({"name": "Yerba", "sku": "Y-1", "price": 10_000, "taxRateId": 5})).await;
    let libro = product(&app, json!({"name": "Libro", "sku": "L-1", "price": 5_000, "taxRateId": 3})).await;
    let regalo = product(&app, json!({"name": "Regalo", "sku": "R-1", "price": 0})).await;
    let automatic = create_list(
        &app,
        &json!({"name": "Tienda", "is_automatic": true, "automatic_pricing_mode": "base_price_adjustment",
                    "adjustment_percentage": "10", "tax_inclusive": true,
                    "prices": [{"product_id": libro, "unit_price": 4_200}]}),
    )
    .await;
    let manual =
        create_list(&app, &json!({"name": "Convenio", "prices": [{"product_id": yerba, "unit_price": 9_500}]})).await;

    let page = json(app.get(&format!("/api/v1/price-lists/{automatic}/prices")).await, 200).await;
    let entry = |page: &Value, id: &str| -> Value {
        page["data"].as_array().expect("data").iter().find(|e| e["product_id"] == id).cloned().expect("entry")
    };
    let computed = entry(&page, &yerba);
    assert_eq!(computed["object"], "price_list_price");
    assert_eq!(computed["state"], "available");
    assert_eq!(computed["unit_price"], 13_310, "10,000 + 10% = 11,000, plus 21% VAT");
    assert_eq!(computed["tax_basis"], "tax_included");
    assert_eq!(computed["tax_rate"], json!({"id": 5, "value": 21.0}));
    assert_eq!(computed["provenance"]["source"], "automatic");
    assert_eq!(computed["provenance"]["mode"], "base_price_adjustment");
    assert_eq!(computed["provenance"]["base_price"], 10_000);
    assert_eq!(computed["provenance"]["net_price"], 11_000);
    for absent in ["name", "sku", "cost", "stock"] {
        assert!(computed.get(absent).is_none(), "the entry does not repeat {absent}: {computed}");
    }
    let explicit = entry(&page, &libro);
    assert_eq!(
        (explicit["unit_price"].clone(), explicit["provenance"]["source"].clone()),
        (json!(4_200), json!("manual"))
    );
    let unpriced = entry(&page, &regalo);
    assert_eq!(unpriced["state"], "unavailable");
    assert_eq!(unpriced["unit_price"], Value::Null, "no base value is invented");
    assert_eq!(unpriced["provenance"]["missing_input"], "base_price");

    let manual_page = json(app.get(&format!("/api/v1/price-lists/{manual}/prices")).await, 200).await;
    assert_eq!(entry(&manual_page, &yerba)["unit_price"], 9_500);
    assert_eq!(entry(&manual_page, &yerba)["tax_basis"], "tax_excluded");
    let missing = entry(&manual_page, &libro);
    assert_eq!(
        (missing["state"].clone(), missing["provenance"]["missing_input"].clone()),
        (json!("unavailable"), json!("explicit_price"))
    );

    // The product detail under each list.
    let detail = |list: Option<&str>, id: &str| {
        let path = match list {
            Some(list) => format!("/api/v1/products/{id}?priceListId={list}"),
            None => format!("/api/v1/products/{id}"),
        };
        let app = &app;
        async move { json(app.get(&path).await, 200).await["data"].clone() }
    };
    let plain = detail(None, &yerba).await;
    assert_eq!((plain["effectivePrice"].clone(), plain["priceSource"].clone()), (json!(10_000), json!("base")));
    assert_eq!(plain["appliedPriceList"], Value::Null);
    let priced = detail(Some(&automatic), &yerba).await;
    assert_eq!(priced["effectivePrice"], 13_310);
    assert_eq!(priced["priceSource"], "automatic");
    assert_eq!(
        priced["appliedPriceList"],
        json!({"id": automatic, "name": "Tienda", "isAutomatic": true, "automaticPricingMode": "base_price_adjustment",
               "adjustmentPercentage": "10", "taxInclusive": true})
    );
    assert_eq!(detail(Some(&manual), &yerba).await["priceSource"], "manual");
    let unavailable = detail(Some(&manual), &libro).await;
    assert_eq!(
        (unavailable["effectivePrice"].clone(), unavailable["priceSource"].clone()),
        (Value::Null, json!("unavailable"))
    );
    error(
        app.get(&format!("/api/v1/products/{yerba}?priceListId={}", Uuid::now_v7())).await,
        404,
        "invalid_request_error",
    )
    .await;
    let path = format!("/api/v1/price-lists/{manual}");
    json(app.put(&path, &json!({"name": "Convenio", "is_active": false})).await, 200).await;
    error(app.get(&format!("/api/v1/products/{yerba}?priceListId={manual}")).await, 404, "invalid_request_error").await;

    // A price follows its base price: a bulk price change moves the computed price, not the explicit one.
    let done = bulk(&app, json!({"target": "price", "product_ids": [yerba, libro], "percentage": 50})).await;
    assert_eq!(done["data"]["affected_variants"], 2);
    let after = json(app.get(&format!("/api/v1/price-lists/{automatic}/prices/{yerba}")).await, 200).await;
    assert_eq!(after["data"]["unit_price"], 19_965, "15,000 + 10% = 16,500, plus 21% VAT");
    let kept = json(app.get(&format!("/api/v1/price-lists/{automatic}/prices/{libro}")).await, 200).await;
    assert_eq!(kept["data"]["unit_price"], 4_200);
    error(
        app.get(&format!("/api/v1/price-lists/{automatic}/prices/{}", Uuid::now_v7())).await,
        404,
        "invalid_request_error",
    )
    .await;
}

#[sqlx::test(migrations = "../schema")]
async fn price_pages_are_bound_to_the_pricing_revision_and_answer_304_when_unchanged(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(product(&app, json!({"name": format!("P{i}"), "sku": format!("P-{i}"), "price": 1_000 + i})).await);
    }
    let off = ids[4].clone();
    let path = format!("/api/v1/products/{off}");
    json(app.put(&path, &json!({"name": "P4", "sku": "P-4", "price": 1_004, "isActive": false})).await, 200).await;
    let list = create_list(&app, &json!({"name": "Base", "is_automatic": true, "automatic_pricing_mode": "base_price_adjustment", "adjustment_percentage": 0})).await;
    let prices = format!("/api/v1/price-lists/{list}/prices");

    // Both active and inactive variants unless is_active says otherwise.
    let all = json(app.get(&format!("{prices}?limit=100")).await, 200).await;
    assert_eq!(all["data"].as_array().map(Vec::len), Some(5));
    let active = json(app.get(&format!("{prices}?is_active=true")).await, 200).await;
    assert_eq!(active["data"].as_array().map(Vec::len), Some(4));
    let inactive = json(app.get(&format!("{prices}?is_active=false")).await, 200).await;
    assert_eq!(inactive["data"][0]["product_id"], off.as_str());
    assert_eq!(inactive["data"][0]["is_active"], false);
    error(app.get(&format!("{prices}?is_active=maybe")).await, 400, "invalid_request_error").await;

    // Pages in variant order, each cursor bound to the revision it was issued at.
    let first = get_with(&app, &format!("{prices}?limit=2"), None).await;
    let tag = etag(&first);
    assert!(tag.starts_with("W/\""), "a weak ETag: {tag}");
    let first = json(first, 200).await;
    let revision = first["pricing_revision"].clone();
    let cursor = first["next_cursor"].as_str().expect("cursor").to_owned();
    let second = get_with(&app, &format!("{prices}?limit=2&cursor={cursor}"), None).await;
    assert!(second.headers().get("etag").is_none(), "only the first page carries an ETag");
    let second = json(second, 200).await;
    assert_eq!(second["pricing_revision"], revision);
    let seen: Vec<Value> = [&first, &second].iter().flat_map(|p| p["data"].as_array().expect("data").clone()).collect();
    let mut sorted: Vec<String> = seen.iter().map(|e| e["product_id"].as_str().expect("id").to_owned()).collect();
    sorted.sort();
    assert_eq!(sorted, seen.iter().map(|e| e["product_id"].as_str().expect("id").to_owned()).collect::<Vec<_>>());

    // Unchanged: 304 with no body, for the first page and the detail.
    let again = get_with(&app, &format!("{prices}?limit=2"), Some(&tag)).await;
    assert_eq!(again.status().as_u16(), 304);
    assert_eq!(etag(&again), tag);
    assert!(again.text().await.expect("body").is_empty());
    let other_filter = get_with(&app, &format!("{prices}?limit=3"), Some(&tag)).await;
    assert_eq!(other_filter.status().as_u16(), 200, "another page size is another representation");
    let detail_path = format!("{prices}/{}", ids[0]);
    let detail = get_with(&app, &detail_path, None).await;
    let detail_tag = etag(&detail);
    assert_eq!(json(detail, 200).await["data"]["unit_price"], 1_000);
    assert_eq!(get_with(&app, &detail_path, Some(&detail_tag)).await.status().as_u16(), 304);

    // A price moves: the old cursor is refused, the tags no longer match, and a restart works.
    let path = format!("/api/v1/products/{}", ids[0]);
    json(app.put(&path, &json!({"name": "P0", "sku": "P-0", "price": 2_000})).await, 200).await;
    let stale = error(app.get(&format!("{prices}?limit=2&cursor={cursor}")).await, 409, "invalid_request_error").await;
    assert_eq!(stale["error"]["code"], "PRICE_LIST_PRICES_CHANGED");
    let changed = get_with(&app, &format!("{prices}?limit=2"), Some(&tag)).await;
    assert_eq!(changed.status().as_u16(), 200);
    assert_ne!(etag(&changed), tag);
    let restarted = json(changed, 200).await;
    assert_ne!(restarted["pricing_revision"], revision);
    let moved = get_with(&app, &detail_path, Some(&detail_tag)).await;
    assert_eq!(json(moved, 200).await["data"]["unit_price"], 2_000);

    // A name change moves no price: the revision and the tag stay.
    let revision = restarted["pricing_revision"].clone();
    json(app.put(&path, &json!({"name": "Renombrado", "sku": "P-0", "price": 2_000})).await, 200).await;
    let same = json(app.get(&format!("{prices}?limit=2")).await, 200).await;
    assert_eq!(same["pricing_revision"], revision);

    // An inactive variant's price moves it too: it is listed under is_active=false.
    let inactive = get_with(&app, &format!("{prices}?is_active=false"), None).await;
    let inactive_tag = etag(&inactive);
    let off_path = format!("/api/v1/products/{off}");
    json(app.put(&off_path, &json!({"name": "P4", "sku": "P-4", "price": 3_000, "isActive": false})).await, 200).await;
    let moved = get_with(&app, &format!("{prices}?is_active=false"), Some(&inactive_tag)).await;
    assert_eq!(moved.status().as_u16(), 200, "the inactive variant's price moved");
    let moved = json(moved, 200).await;
    assert_eq!(moved["data"][0]["unit_price"], 3_000);
    assert_ne!(moved["pricing_revision"], revision);
    // Its name alone does not.
    let revision = moved["pricing_revision"].clone();
    json(app.put(&off_path, &json!({"name": "P4 bis", "sku": "P-4", "price": 3_000, "isActive": false})).await, 200).await;
    assert_eq!(json(app.get(&format!("{prices}?limit=2")).await, 200).await["pricing_revision"], revision);

    // A change of the list itself moves it too.
    let list_path = format!("/api/v1/price-lists/{list}");
    let body = json!({"name": "Base", "is_automatic": true, "automatic_pricing_mode": "base_price_adjustment", "adjustment_percentage": 5});
    json(app.put(&list_path, &body).await, 200).await;
    let after = json(app.get(&format!("{prices}?limit=2")).await, 200).await;
    assert_ne!(after["pricing_revision"], revision);
    assert_eq!(after["data"][0]["unit_price"], 2_100);
}

#[sqlx::test(migrations = "../schema")]
async fn margin_priced_products_follow_their_costs_through_bulk_adjustments(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let supplier =
        json(app.post("/api/v1/suppliers", &json!({"name": "Molino"})).await, 201).await["data"]["id"].clone();
    let margin = product(
        &app,
        json!({"name": "Harina", "sku": "H-1", "cost": 1_000, "markupPercentage": "40", "defaultSupplierId": supplier}),
    )
    .await;
    let fixed = product(
        &app,
        json!({"name": "Fideos", "sku": "F-1", "cost": 1_000, "price": 1_500, "defaultSupplierId": supplier}),
    )
    .await;
    let read = |id: String| {
        let app = &app;
        async move { json(app.get(&format!("/api/v1/products/{id}")).await, 200).await["data"].clone() }
    };
    let harina = read(margin.clone()).await;
    assert_eq!((harina["price"].clone(), harina["markupPercentage"].clone()), (json!(1_400), json!("40")));
    assert_eq!(harina["priceSource"], "automatic");

    // Under margin pricing the cost is required and a price is refused.
    let body = json!({"name": "x", "sku": "X", "price": 5, "markupPercentage": 10});
    let refused = error(post_keyed(&app, "/api/v1/products", &body).await, 400, "invalid_request_error").await;
    let mut fields = detail_fields(&refused);
    fields.sort();
    assert_eq!(fields, ["cost", "price"]);

    // +10% on the supplier's costs: the margin-priced price follows, the other keeps its price.
    let done = bulk(&app, json!({"target": "cost", "default_supplier_id": supplier, "percentage": 10})).await;
    assert_eq!(done["data"]["affected_variants"], 2);
    assert_eq!(done["data"]["automatic_prices_recalculated"], 1);
    let harina = read(margin.clone()).await;
    assert_eq!((harina["cost"].clone(), harina["price"].clone()), (json!(1_100), json!(1_540)));
    let fideos = read(fixed.clone()).await;
    assert_eq!((fideos["cost"].clone(), fideos["price"].clone()), (json!(1_100), json!(1_500)));

    // A price adjustment leaves margin-priced variants to their cost.
    let done = bulk(&app, json!({"target": "price", "default_supplier_id": supplier, "percentage": 10})).await;
    assert_eq!(
        (done["data"]["affected_variants"].clone(), done["data"]["skipped_automatic_variants"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(read(margin.clone()).await["price"], 1_540);
    assert_eq!(read(fixed.clone()).await["price"], 1_650);

    // A tag filter adjusts the tagged variants only.
    let tag = json(app.post("/api/v1/tags", &json!({"name": "Oferta"})).await, 201).await["data"]["id"].clone();
    json(app.post("/api/v1/products/tags/apply", &json!({"ids": [fixed], "add": [tag]})).await, 200).await;
    let done = bulk(&app, json!({"target": "cost", "tag_id": tag, "amount": -100})).await;
    assert_eq!(done["data"]["matched_variants"], 1);
    assert_eq!(read(fixed.clone()).await["cost"], 1_000);
    assert_eq!(read(margin.clone()).await["cost"], 1_100);
    let body = json!({"target": "cost", "tag_id": Uuid::now_v7(), "amount": 1});
    let unknown = post_keyed(&app, "/api/v1/products/bulk-adjustments", &body).await;
    assert_eq!(detail_fields(&error(unknown, 404, "invalid_request_error").await), ["tag_id"]);
}

/// Rebuilding the products and price lists projections from the event store (while the service runs)
/// yields the same prices and the same pricing revision.
#[sqlx::test(migrations = "../schema")]
async fn a_rebuild_yields_the_same_prices_and_revision(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            product(
                &app,
                json!({"name": format!("P{i}"), "sku": format!("R-{i}"), "cost": 500, "markupPercentage": 20 + i}),
            )
            .await,
        );
    }
    let path = format!("/api/v1/products/{}", ids[0]);
    json(app.put(&path, &json!({"name": "P0", "sku": "R-0", "cost": 700, "markupPercentage": 20})).await, 200).await;
    let list = create_list(
        &app,
        &json!({"name": "Tienda", "is_automatic": true, "automatic_pricing_mode": "base_price_adjustment",
                    "adjustment_percentage": 7.5, "prices": [{"product_id": ids[1], "unit_price": 999}]}),
    )
    .await;
    let prices = format!("/api/v1/price-lists/{list}/prices");
    let mut before = json(app.get(&prices).await, 200).await;
    assert_eq!(before["data"][0]["unit_price"], 903, "700 + 20% = 840, + 7.5% = 903");
    for name in ["products", "price_lists"] {
        let projection = projections::all().into_iter().find(|p| p.name() == name).expect("projection");
        projections::rebuild::rebuild(&app.pool, projection.as_ref(), |_| {}).await.expect("rebuild");
    }
    let mut after = json(app.get(&prices).await, 200).await;
    before["request_id"] = Value::Null;
    after["request_id"] = Value::Null;
    assert_eq!(after, before);
}
