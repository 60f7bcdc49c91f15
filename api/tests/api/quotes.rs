//! Quotes: canonical amounts, gap-free numbers, reservations taken, adjusted and released with the quote
//! (also under concurrency), states, expiry, idempotency and bad input.

use crate::helpers::{assert_nulls_documented, TestApp, detail_fields, error, items, json, refused, style_a, customer, main_warehouse, mate_kit, reserved_and_available, stocked_product, today, today_date};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

const QUOTES: &str = "/api/v1/quotes";

async fn delete(app: &TestApp, id: &str, key: &str) -> reqwest::Response {
    app.keyed(Method::DELETE, &format!("{QUOTES}/{id}"), key, None).await
}

async fn put(app: &TestApp, id: &str, body: &Value) -> reqwest::Response {
    app.fresh_keyed(Method::PUT, &format!("{QUOTES}/{id}"), Some(body)).await
}

#[sqlx::test(migrations = "../schema")]
async fn quotes_hold_stock_with_their_reservation_and_release_it(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana Pérez").await;
    let (mate, termo) = (stocked_product(&app, "MATE", &main, 10).await, stocked_product(&app, "TERMO", &main, 10).await);
    let through = today();
    let body = json!({ "customer_id": ana, "notes": "entrega en local", "global_discount_amount": 100,
        "reservation": { "enabled": true, "reserved_through_date": through },
        "items": [{ "product_id": mate, "quantity": 2, "unit_price": 12100, "warehouse_id": main, "discount": { "percentage": 10 } },
                  { "product_id": termo, "quantity": 1, "unit_price": 5000, "warehouse_id": main, "discount": { "amount": 500 } }] });
    let key = Uuid::now_v7().to_string();
    let created = style_a(app.post_key(QUOTES, &key, &body).await, 201).await["data"].clone();
    assert_nulls_documented(&created, "QuoteData");
    assert_eq!(
        (created["object"].as_str(), created["status"].as_str(), created["number"].as_i64()),
        (Some("quote"), Some("draft"), Some(1))
    );
    assert_eq!(created["formatted_number"], "P-00000001");
    // Prices with VAT: 24,200 less 10% = 21,780; 5,000 less 500 = 4,500; less 100 globally = 26,180.
    assert_eq!(created["total"], 26180);
    assert_eq!(created["discount_amount"], 2420 + 500 + 100);
    assert_eq!(created["subtotal"].as_i64().expect("subtotal") + created["tax_amount"].as_i64().expect("tax"), 26180);
    assert!(created["items"][0].get("total").is_none(), "lines store no computed amounts");
    assert_eq!(created["items"][0]["discount"], json!({ "percentage": "10" }));
    assert_eq!(created["reservation"]["lines"].as_array().map(Vec::len), Some(2));
    assert_eq!(created["idempotent_replay"], false);
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(reserved_and_available(&app, &mate).await, ("2".to_owned(), "8".to_owned()));

    // PUT replaces everything: dropping a line releases its share.
    let mut fewer = body.clone();
    fewer["items"] = json!([{ "product_id": mate, "quantity": 3, "unit_price": 12100, "warehouse_id": main }]);
    let replaced = style_a(put(&app, &id, &fewer).await, 200).await["data"].clone();
    assert_eq!(replaced["number"], 1);
    assert_eq!(replaced["notes"], "entrega en local");
    assert_eq!(reserved_and_available(&app, &mate).await, ("3".to_owned(), "7".to_owned()));
    assert_eq!(reserved_and_available(&app, &termo).await, ("0".to_owned(), "10".to_owned()));
    let read = style_a(app.get(&format!("{QUOTES}/{id}")).await, 200).await["data"].clone();
    assert_eq!(read["reservation"]["lines"], json!([{ "product_id": mate, "warehouse_id": main, "quantity": "3" }]));
    assert!(read.get("idempotent_replay").is_none());

    // The same key and body replays the stored quote, even though it changed since.
    let replay = style_a(app.post_key(QUOTES, &key, &body).await, 201).await["data"].clone();
    assert_eq!(
        (replay["id"].as_str(), replay["idempotent_replay"].as_bool(), replay["total"].as_i64()),
        (Some(id.as_str()), Some(true), Some(26180))
    );
    let conflict = error(app.post_key(QUOTES, &key, &fewer).await, 409, "idempotency_error").await;
    assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT");
    // Permissions are checked again on a retry: a credential without `quotes:write` is refused, and
    // learns nothing of the stored quote.
    let reader =
        commands::organization::create_api_key(&app.pool, app.org_id, &["quotes:read".into()]).await.expect("key");
    let retried = app
        .client
        .post(format!("{}{QUOTES}", app.base))
        .bearer_auth(&reader)
        .header("Idempotency-Key", &key)
        .json(&body)
        .send()
        .await
        .expect("sent");
    let denied = error(retried, 403, "authorization_error").await;
    assert_eq!(denied["error"]["code"], "MISSING_SCOPE");
    assert!(!denied.to_string().contains(&id), "{denied}");

    // An omitted reservation on replace is none.
    let mut plain = fewer.clone();
    plain.as_object_mut().map(|o| o.remove("reservation"));
    style_a(put(&app, &id, &plain).await, 200).await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "10".to_owned()));
    style_a(put(&app, &id, &fewer).await, 200).await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("3".to_owned(), "7".to_owned()));

    // DELETE removes the quote and its reservation together.
    let gone = style_a(delete(&app, &id, &Uuid::now_v7().to_string()).await, 200).await["data"].clone();
    assert_eq!(gone["reservation_released"], true);
    error(app.get(&format!("{QUOTES}/{id}")).await, 404, "invalid_request_error").await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "10".to_owned()));
    error(put(&app, &id, &fewer).await, 404, "invalid_request_error").await;

    // Lists: newest first, by number or customer.
    let second = style_a(app.post_keyed(QUOTES, &plain).await, 201).await["data"].clone();
    assert_eq!(second["number"], 2, "numbers are never reused");
    let bob = customer(&app, "Bob Giménez").await;
    let mut for_bob = plain.clone();
    for_bob["customer_id"] = json!(bob);
    style_a(app.post_keyed(QUOTES, &for_bob).await, 201).await;
    let listed = style_a(app.get(QUOTES).await, 200).await;
    let numbers: Vec<i64> = items(&listed).iter().map(|q| q["number"].as_i64().expect("number")).collect();
    assert_eq!(numbers, [3, 2]);
    assert_eq!(items(&listed)[0]["items_count"], 1);
    let by_name = style_a(app.get(&format!("{QUOTES}?query=gim")).await, 200).await;
    assert_eq!(items(&by_name).len(), 1);
    let by_number = style_a(app.get(&format!("{QUOTES}?query=2&status=draft&customer_id={ana}")).await, 200).await;
    assert_eq!(items(&by_number)[0]["number"], 2);
    // The number as a quote shows it finds it too.
    let shown = style_a(app.get(&format!("{QUOTES}?query=P-00000002")).await, 200).await;
    assert_eq!(items(&shown).iter().map(|q| q["number"].clone()).collect::<Vec<_>>(), [json!(2)]);
    // An inactive price list is refused as a missing one (spec: platform rule 2).
    let list = json!({ "name": "Convenio viejo", "is_active": false });
    let list = style_a(app.post("/api/v1/price-lists", &list).await, 201).await["data"]["id"].clone();
    let mut listed_price = plain.clone();
    listed_price["price_list_id"] = list;
    let refused = error(app.post_keyed(QUOTES, &listed_price).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["price_list_id"]);
    let page = style_a(app.get(&format!("{QUOTES}?limit=1")).await, 200).await;
    let cursor = page["next_cursor"].as_str().expect("a second page");
    let next = style_a(app.get(&format!("{QUOTES}?limit=1&cursor={cursor}")).await, 200).await;
    assert_eq!(items(&next)[0]["number"], 2);
}

#[sqlx::test(migrations = "../schema")]
async fn stock_taken_while_a_reservation_waits_on_the_same_level_counts_it(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana").await;
    let last = stocked_product(&app, "ULTIMOS", &main, 5).await;
    app.negative_stock("block").await;
    // Someone holds the level; a quote reserving all five queues on it, then a movement taking all five.
    let mut holder = app.pool.begin().await.expect("begin");
    sqlx::query("select 1 from stock_levels where variant_id = $1 for update")
        .bind(Uuid::parse_str(&last).expect("id"))
        .execute(&mut *holder)
        .await
        .expect("held");
    let quote = json!({ "customer_id": ana, "reservation": { "enabled": true, "reserved_through_date": today() },
        "items": [{ "product_id": last, "quantity": 5, "unit_price": 100, "warehouse_id": main }] });
    let reserving = tokio::spawn({
        let (client, url, key) = (app.client.clone(), format!("{}{QUOTES}", app.base), app.api_key.clone());
        async move {
            let sent = client.post(url).bearer_auth(key).header("Idempotency-Key", "q-1").json(&quote).send();
            sent.await.expect("sent").status().as_u16()
        }
    });
    crate::helpers::waiting_on_locks(&app, 1, "the quote to wait on the level").await;
    let out = json!({ "type": "out", "warehouse_id": main, "lines": [{ "product_id": last, "quantity": 5 }], "reason": "venta" });
    let taking = tokio::spawn({
        let (client, url, key) = (app.client.clone(), format!("{}/api/v1/stock-movements", app.base), app.api_key.clone());
        async move {
            let sent = client.post(url).bearer_auth(key).header("Idempotency-Key", "m-1").json(&out).send();
            sent.await.expect("sent").status().as_u16()
        }
    });
    crate::helpers::waiting_on_locks(&app, 2, "the movement to wait behind it").await;
    holder.commit().await.expect("released");
    // The quote reserves the five first; the movement, locking the level after it, sees them held.
    assert_eq!(reserving.await.expect("quote"), 201);
    assert_eq!(taking.await.expect("movement"), 422, "the five are reserved");
    assert_eq!(reserved_and_available(&app, &last).await, ("5".to_owned(), "0".to_owned()));
}

#[sqlx::test(migrations = "../schema")]
async fn concurrent_quotes_never_reserve_more_than_there_is(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana").await;
    let last = stocked_product(&app, "ULTIMOS", &main, 5).await;
    app.negative_stock("block").await;
    let body = json!({ "customer_id": ana, "reservation": { "enabled": true, "reserved_through_date": today() },
        "items": [{ "product_id": last, "quantity": 1, "unit_price": 100, "warehouse_id": main }] });
    let answers = futures::future::join_all((0..20).map(|_| async {
        let response = app.post_keyed(QUOTES, &body).await;
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.expect("json"))
    }))
    .await;
    let drafts = answers.iter().filter(|(s, _)| *s == 201).count();
    let refusals: Vec<&Value> = answers.iter().filter(|(s, _)| *s == 422).map(|(_, b)| b).collect();
    assert_eq!((drafts, refusals.len()), (5, 15), "{answers:?}");
    for refusal in refusals {
        assert_eq!(refusal["error"]["code"], "INSUFFICIENT_STOCK");
    }
    assert_eq!(reserved_and_available(&app, &last).await, ("5".to_owned(), "0".to_owned()));
    let (rows, held): (i64, Option<i64>) =
        sqlx::query_as("select count(*), sum(quantity)::bigint from stock_reservations")
            .fetch_one(&app.pool)
            .await
            .expect("rows");
    assert_eq!((rows, held), (5, Some(5000)), "no orphan reservation");
    let quotes: i64 = sqlx::query_scalar("select count(*) from events where stream_type = 'quote'")
        .fetch_one(&app.pool)
        .await
        .expect("q");
    assert_eq!(quotes, 5, "refused quotes saved nothing");
    let numbers: Vec<i64> =
        sqlx::query_scalar("select (data->>'number')::bigint from events where stream_type = 'quote' order by 1")
            .fetch_all(&app.pool)
            .await
            .expect("numbers");
    assert_eq!(numbers, [1, 2, 3, 4, 5], "gap-free numbers");

    // Under `allow`, a shortfall is a warning.
    app.negative_stock("allow").await;
    let warned = style_a(app.post_keyed(QUOTES, &body).await, 201).await["data"].clone();
    assert_eq!(warned["warnings"][0]["available_quantity"], "0");
}

#[sqlx::test(migrations = "../schema")]
async fn an_expired_quote_frees_its_stock_and_is_no_longer_a_draft(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana").await;
    let item = stocked_product(&app, "VENCE", &main, 4).await;
    let day = today();
    let body = json!({ "customer_id": ana, "expires_at": day, "reservation": { "enabled": true, "reserved_through_date": day },
        "items": [{ "product_id": item, "quantity": 3, "unit_price": 100, "warehouse_id": main }] });
    let id = style_a(app.post_keyed(QUOTES, &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    assert_eq!(reserved_and_available(&app, &item).await, ("3".to_owned(), "1".to_owned()));
    let tomorrow = today_date().next_day().expect("a date");
    assert_eq!(commands::quotes::expire_due(&app.pool, tomorrow).await.expect("swept"), 1);
    assert_eq!(commands::quotes::expire_due(&app.pool, tomorrow).await.expect("swept"), 0, "once");
    let expired = crate::helpers::eventually(std::time::Duration::from_secs(15), "the expired quote", || async {
        let read = style_a(app.get(&format!("{QUOTES}/{id}")).await, 200).await["data"].clone();
        (read["status"] == "expired").then_some(read)
    })
    .await;
    assert_eq!(expired["reservation"], Value::Null);
    assert_eq!(reserved_and_available(&app, &item).await, ("0".to_owned(), "4".to_owned()));
    let conflict = error(put(&app, &id, &body).await, 409, "business_error").await;
    assert_eq!(conflict["error"]["code"], "STATE_CONFLICT");
    assert_eq!(conflict["error"]["details"][0]["code"], "QUOTE_NOT_DRAFT");
    assert_eq!(conflict["error"]["details"][0]["metadata"]["current_state"], "expired");
    error(delete(&app, &id, &Uuid::now_v7().to_string()).await, 409, "business_error").await;
}

#[sqlx::test(migrations = "../schema")]
async fn bad_quotes_are_refused_and_write_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana").await;
    let item = stocked_product(&app, "MAL", &main, 4).await;
    let foreign_customer = app.foreign("/api/v1/customers", "Ajena").await;
    let events = app.event_count().await;
    let line = |extra: Value| {
        let mut l = json!({ "product_id": item, "quantity": 1, "unit_price": 100 });
        for (k, v) in extra.as_object().into_iter().flatten() {
            l[k] = v.clone();
        }
        l
    };
    let missing = json!({ "customer_id": foreign_customer,
        "items": [{ "product_id": Uuid::now_v7(), "quantity": 1, "unit_price": 100, "warehouse_id": Uuid::now_v7() }] });
    let refusal = refused(app.post_keyed(QUOTES, &missing).await).await;
    assert_eq!(detail_fields(&refusal), ["customer_id", "items[0].product_id", "items[0].warehouse_id"]);
    for (extra, field) in [
        (json!({ "discount": { "percentage": 101 } }), "items[0].discount.percentage"),
        (json!({ "discount": { "percentage": -1 } }), "items[0].discount.percentage"),
        (json!({ "discount": { "amount": 10, "percentage": 5 } }), "items[0].discount.percentage"),
        (json!({ "discount": {} }), "items[0].discount.amount"),
        (json!({ "discount": { "amount": 10, "pct": 5 } }), "items[0].discount.pct"),
        (json!({ "quantity": 0 }), "items[0].quantity"),
        (json!({ "total": 1 }), "items[0].total"),
    ] {
        let body = json!({ "customer_id": ana, "items": [line(extra.clone())] });
        let refusal = error(app.post_keyed(QUOTES, &body).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refusal), [field], "{extra}");
    }
    for (extra, field) in [
        (json!({ "total": 1 }), "total"),
        (json!({ "status": "sent" }), "status"),
        (json!({ "converted_sale_id": Uuid::now_v7() }), "converted_sale_id"),
        (
            json!({ "reservation": { "enabled": true, "reserved_through_date": "2020-01-01" } }),
            "reservation.reserved_through_date",
        ),
        (json!({ "reservation": { "enabled": true } }), "reservation.reserved_through_date"),
        // A misspelt field would have left the quote reserving nothing.
        (json!({ "reservation": { "enable": true, "reserved_through_date": today() } }), "reservation.enable"),
    ] {
        let mut body = json!({ "customer_id": ana, "items": [line(json!({ "warehouse_id": main }))] });
        for (k, v) in extra.as_object().into_iter().flatten() {
            body[k] = v.clone();
        }
        let refusal = error(app.post_keyed(QUOTES, &body).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refusal), [field], "{extra}");
    }
    let no_warehouse = json!({ "customer_id": ana, "reservation": { "enabled": true, "reserved_through_date": today() },
        "items": [line(json!({}))] });
    assert_eq!(
        detail_fields(&error(app.post_keyed(QUOTES, &no_warehouse).await, 400, "invalid_request_error").await),
        ["items[0].warehouse_id"]
    );
    assert_eq!(app.event_count().await, events, "nothing was written");
    let keyless = app.post(QUOTES, &json!({ "customer_id": ana, "items": [line(json!({}))] })).await;
    error(keyless, 400, "idempotency_error").await;
}

/// A combo reserves its components: one deactivated since the combo listed it refuses the combo's item
/// as an inactive product quoted directly is refused (404 `not_found` naming the item's product), in a
/// new quote and in a draft's replacement, and nothing is written or reserved. Active again, the combo
/// reserves its components.
#[sqlx::test(migrations = "../schema")]
async fn a_quote_of_a_combo_whose_component_was_deactivated_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana Pérez").await;
    let (mate, bombilla, kit) = mate_kit(&app, &main).await;
    let quote = |items: Value| {
        json!({ "customer_id": ana, "reservation": { "enabled": true, "reserved_through_date": today() },
            "items": items })
    };
    let mate_item = json!({ "product_id": mate, "quantity": 1, "unit_price": 12100, "warehouse_id": main });
    let kit_item = json!({ "product_id": kit, "quantity": 1, "unit_price": 30000, "warehouse_id": main });
    // A draft holding one mate, quoted before the bombilla was deactivated.
    let draft = style_a(app.post_keyed(QUOTES, &quote(json!([mate_item]))).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let retired = json!({ "name": "Producto BOMBILLA", "sku": "BOMBILLA", "price": 12100, "isActive": false });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &retired).await, 200).await;
    let events = app.event_count().await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("1".to_owned(), "9".to_owned()), "the draft's mate");
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("0".to_owned(), "10".to_owned()));

    // Quoted directly, the inactive product is refused, naming its item.
    let direct = json!([{ "product_id": bombilla, "quantity": 1, "unit_price": 12100, "warehouse_id": main }]);
    let refused = error(app.post_keyed(QUOTES, &quote(direct)).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[0].product_id"]);
    // So is the combo that holds it, on the combo's item, new or replacing the draft; the mate's item is fine.
    let with_kit = quote(json!([mate_item, kit_item]));
    let created = app.post_keyed(QUOTES, &with_kit).await;
    let replaced = put(&app, &draft, &with_kit).await;
    for (what, response) in [("created", created), ("replaced", replaced)] {
        let refused = error(response, 404, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), ["items[1].product_id"], "{what}");
        let detail = &refused["error"]["details"][0];
        assert_eq!(detail["code"], "not_found", "{what}: {refused}");
        assert!(detail["message"].as_str().is_some_and(|m| m.contains(&bombilla)), "names the component: {refused}");
    }
    assert_eq!(app.event_count().await, events, "nothing was written");
    assert_eq!(reserved_and_available(&app, &mate).await, ("1".to_owned(), "9".to_owned()), "the draft's hold stays");
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("0".to_owned(), "10".to_owned()), "nothing held");
    let read = style_a(app.get(&format!("{QUOTES}/{draft}")).await, 200).await["data"].clone();
    assert_eq!(read["items"].as_array().map(Vec::len), Some(1), "the draft keeps its one item: {read}");

    // Active again, the combo reserves its components: the new quote's mate and two of the kit's, one bombilla.
    let active = json!({ "name": "Producto BOMBILLA", "sku": "BOMBILLA", "price": 12100 });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &active).await, 200).await;
    style_a(app.post_keyed(QUOTES, &with_kit).await, 201).await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("4".to_owned(), "6".to_owned()), "1 + 1 + 2");
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("1".to_owned(), "9".to_owned()));
}
