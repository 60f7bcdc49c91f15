//! Delivery notes: from scratch (stock leaves), for a sale (nothing moves, one per sale), for an order
//! (partial deliveries consuming its reservation and raising `delivered`), numbering, replays, deletes
//! that restore exactly what a note did, and bad input.

use crate::helpers::{assert_nulls_documented, TestApp, detail_fields, error, items, json, style_a, customer, main_warehouse, mate_kit, stocked_product};
use crate::sales::point_of_sale;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

const NOTES: &str = "/api/v1/delivery-notes";
const ORDERS: &str = "/api/v1/orders";

/// (on hand, reserved) of a product's one level.
async fn level(app: &TestApp, product: &str) -> (String, String) {
    let body = json(app.get(&format!("/api/v1/inventory?product_id={product}")).await, 200).await;
    let row = &items(&body)[0];
    (row["on_hand"].as_str().expect("on_hand").to_owned(), row["reserved"].as_str().expect("reserved").to_owned())
}

/// An organization invoicing as a Responsable Inscripto, with 10 MATE in its main warehouse and Ana's
/// open order for 5 of them, reserving: what the tests of billing an order start from (here and in
/// the orders' tests).
pub struct AnasOrder {
    pub app: TestApp,
    pub main: String,
    pub pos: String,
    pub ana: String,
    pub mate: String,
    pub order_id: String,
    /// The order's one line's id.
    pub line: Value,
    pub today: String,
}

pub async fn anas_order(pool: PgPool) -> AnasOrder {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    crate::sales::fiscal_profile(&app, "Responsable Inscripto").await;
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let order = json!({ "customer_id": ana, "assigned_warehouse_id": main, "reservation": { "enabled": true },
        "lines": [{ "product_id": mate, "quantity": 5, "unit_price": 1000 }] });
    let order = style_a(app.post_keyed(ORDERS, &order).await, 201).await["data"].clone();
    let (order_id, line) = (order["id"].as_str().expect("id").to_owned(), order["lines"][0]["id"].clone());
    let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string();
    AnasOrder { app, main, pos, ana, mate, order_id, line, today }
}

/// A second warehouse, "Depósito 2", and a product MATE with 10 in it and 10 in `main`: their ids.
async fn second_warehouse_and_mate(app: &TestApp, main: &str) -> (String, String) {
    let second = json(app.post("/api/v1/warehouses", &json!({ "name": "Depósito 2" })).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let body = json!({ "name": "Producto MATE", "sku": "MATE", "price": 12100,
        "warehouseStocks": [{ "warehouseId": main, "quantity": 10 }, { "warehouseId": second, "quantity": 10 }] });
    let mate =
        json(app.post_keyed("/api/v1/products", &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    (second, mate)
}

async fn delete(app: &TestApp, id: &str, key: &str) -> reqwest::Response {
    app.keyed(Method::DELETE, &format!("{NOTES}/{id}"), key, None).await
}

#[sqlx::test(migrations = "../schema")]
async fn a_custom_note_moves_stock_is_numbered_replayed_and_restored_when_deleted(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana Pérez").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let body = json!({ "origin": { "type": "custom" }, "customer_id": ana, "point_of_sale_id": pos,
        "warehouse_id": main, "notes": "entregar por la tarde",
        "items": [{ "product_id": mate, "quantity": 3 }, { "is_custom": true, "name": "Folletos", "quantity": 10 }] });
    let key = Uuid::now_v7().to_string();
    let note = style_a(app.post_key(NOTES, &key, &body).await, 201).await["data"].clone();
    assert_nulls_documented(&note, "DeliveryNoteData");
    assert_eq!((note["object"].as_str(), note["number"].as_i64()), (Some("delivery_note"), Some(1)));
    assert_eq!(note["formatted_number"], "R-0001-00000001");
    assert_eq!(note["origin"], json!({ "type": "custom" }));
    assert_eq!(note["lines"][0]["name"], "Producto MATE");
    assert_eq!(
        note["lines"][1],
        json!({ "product_id": null, "name": "Folletos", "quantity": "10", "order_line_id": null })
    );
    assert!(note["lines"][0].get("unit_price").is_none(), "a remito shows no prices");
    assert_eq!(level(&app, &mate).await, ("7".to_owned(), "0".to_owned()));
    let id = note["id"].as_str().expect("id").to_owned();
    let ledger =
        json(app.get(&format!("/api/v1/inventory/movements?product_id={mate}&cause_type=delivery_note")).await, 200)
            .await;
    assert_eq!(items(&ledger)[0]["cause_id"], id.as_str());

    // The same key and body replays; another body under it is a conflict.
    let replay = style_a(app.post_key(NOTES, &key, &body).await, 201).await["data"].clone();
    assert_eq!((replay["id"].as_str(), replay["idempotent_replay"].as_bool()), (Some(id.as_str()), Some(true)));
    let mut other = body.clone();
    other["notes"] = json!("otra");
    let conflict = error(app.post_key(NOTES, &key, &other).await, 409, "idempotency_error").await;
    assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT");
    let second = style_a(app.post_keyed(NOTES, &body).await, 201).await["data"].clone();
    assert_eq!(second["number"], 2);
    assert_eq!(level(&app, &mate).await, ("4".to_owned(), "0".to_owned()));

    // Deleting restores exactly what the note moved; its number is not reused, and a replay of its key
    // makes no new note.
    let deleted = style_a(delete(&app, &id, &Uuid::now_v7().to_string()).await, 200).await["data"].clone();
    assert_eq!(deleted["deleted"], true);
    assert_eq!(level(&app, &mate).await, ("7".to_owned(), "0".to_owned()));
    error(app.get(&format!("{NOTES}/{id}")).await, 404, "invalid_request_error").await;
    error(delete(&app, &id, &Uuid::now_v7().to_string()).await, 404, "invalid_request_error").await;
    let gone = error(app.post_key(NOTES, &key, &body).await, 409, "business_error").await;
    assert_eq!(gone["error"]["code"], "STATE_CONFLICT");
    assert_eq!(level(&app, &mate).await, ("7".to_owned(), "0".to_owned()), "no new note moved stock");
    let third = style_a(app.post_keyed(NOTES, &body).await, 201).await["data"].clone();
    assert_eq!(third["number"], 3, "numbers are never reused");
    let listed = json(app.get(&format!("{NOTES}?customer_id={ana}")).await, 200).await;
    assert_eq!(items(&listed).len(), 2, "deleted notes are not listed");
}

#[sqlx::test(migrations = "../schema")]
async fn a_note_for_a_sale_moves_nothing_and_a_sale_has_one(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let sale = json!({ "voucherType": 90, "pointOfSaleId": pos, "invoiceDate": events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string(),
        "total": 24200, "items": [{ "productId": mate, "quantity": 2, "unitPrice": 12100, "warehouseId": main }] });
    let sold = json(app.post_keyed("/api/v1/sales", &sale).await, 201).await["data"].clone();
    let sale_id = sold["id"].as_str().expect("id").to_owned();
    assert_eq!(level(&app, &mate).await, ("8".to_owned(), "0".to_owned()));
    let body = json!({ "origin": { "type": "sale", "sale_id": sale_id }, "point_of_sale_id": pos });
    let note = style_a(app.post_keyed(NOTES, &body).await, 201).await["data"].clone();
    assert_eq!(note["origin"], json!({ "type": "sale", "sale_id": sale_id }));
    assert_eq!(note["lines"][0]["quantity"], "2");
    assert_eq!(note["warehouse_id"], Value::Null);
    assert_eq!(level(&app, &mate).await, ("8".to_owned(), "0".to_owned()), "the sale already moved it");
    let again = error(app.post_keyed(NOTES, &body).await, 409, "business_error").await;
    assert_eq!(again["error"]["code"], "STATE_CONFLICT");
    let items_sent = json!({ "origin": { "type": "sale", "sale_id": sale_id }, "point_of_sale_id": pos,
        "items": [{ "product_id": mate, "quantity": 1 }] });
    let refused = error(app.post_keyed(NOTES, &items_sent).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items"]);
    let unknown = json!({ "origin": { "type": "sale", "sale_id": Uuid::now_v7() }, "point_of_sale_id": pos });
    error(app.post_keyed(NOTES, &unknown).await, 404, "invalid_request_error").await;
}

/// A note for a sale documents the goods the sale sent out: a credit note (its goods come back) or a
/// debit note (it moves none) is 409 `STATE_CONFLICT` naming `origin.sale_id`, with nothing written and
/// no number spent. Accepted, it printed a remito for goods that never left and took the note's one slot.
#[sqlx::test(migrations = "../schema")]
async fn a_note_for_a_sale_refuses_a_credit_or_debit_note_and_writes_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string();
    let sale = |voucher: i64, corrected: Option<&Value>| {
        let mut body = json!({ "voucherType": voucher, "pointOfSaleId": pos, "invoiceDate": today, "invoice": false,
            "items": [{ "productId": mate, "quantity": 1, "unitPrice": 12100, "warehouseId": main }] });
        if let Some(corrected) = corrected {
            body["associatedSaleId"] = corrected.clone();
        }
        body
    };
    let invoice = json(app.post_keyed("/api/v1/sales", &sale(6, None)).await, 201).await["data"]["id"].clone();
    let credit = json(app.post_keyed("/api/v1/sales", &sale(8, Some(&invoice))).await, 201).await["data"]["id"].clone();
    let debit = json(app.post_keyed("/api/v1/sales", &sale(7, Some(&invoice))).await, 201).await["data"]["id"].clone();
    assert_eq!(level(&app, &mate).await, ("10".to_owned(), "0".to_owned()), "the credit note brought the mate back");

    let before = app.event_count().await;
    for (note_of, kind) in [(&credit, "credit_note"), (&debit, "debit_note")] {
        let body = json!({ "origin": { "type": "sale", "sale_id": note_of }, "point_of_sale_id": pos });
        let refused = error(app.post_keyed(NOTES, &body).await, 409, "business_error").await;
        assert_eq!(refused["error"]["code"], "STATE_CONFLICT");
        assert_eq!(detail_fields(&refused), ["origin.sale_id"]);
        assert_eq!(refused["error"]["details"][0]["metadata"]["current_state"], kind);
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    assert!(items(&json(app.get(NOTES).await, 200).await).is_empty(), "no note was made");

    // The invoice sent its mate out: its note is number 1, the refusals spent no number.
    let body = json!({ "origin": { "type": "sale", "sale_id": invoice }, "point_of_sale_id": pos });
    let note = style_a(app.post_keyed(NOTES, &body).await, 201).await["data"].clone();
    assert_eq!((note["number"].as_i64(), note["lines"][0]["quantity"].as_str()), (Some(1), Some("1")));
}

/// The list applies every filter it is sent, as the other lists do: a note has one origin, so `sale_id`
/// with `order_id` lists none (the sale's note was listed, `order_id` dropped), and each alone lists its
/// own note.
#[sqlx::test(migrations = "../schema")]
async fn the_list_applies_a_sale_and_an_order_together(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string();
    let sale = json!({ "voucherType": 90, "pointOfSaleId": pos, "invoiceDate": today, "customerId": ana,
        "items": [{ "productId": mate, "quantity": 1, "unitPrice": 12100, "warehouseId": main }] });
    let sale_id =
        json(app.post_keyed("/api/v1/sales", &sale).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    let of_sale = json!({ "origin": { "type": "sale", "sale_id": sale_id }, "point_of_sale_id": pos });
    let sale_note = style_a(app.post_keyed(NOTES, &of_sale).await, 201).await["data"]["id"].clone();
    let order = json!({ "customer_id": ana, "assigned_warehouse_id": main,
        "lines": [{ "product_id": mate, "quantity": 1, "unit_price": 10000 }] });
    let order_id =
        style_a(app.post_keyed(ORDERS, &order).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    let of_order = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos });
    let order_note = style_a(app.post_keyed(NOTES, &of_order).await, 201).await["data"]["id"].clone();
    let listed = |query: String| {
        let app = &app;
        async move { crate::helpers::ids(&items(&json(app.get(&format!("{NOTES}?{query}")).await, 200).await)) }
    };

    assert_eq!(listed(format!("sale_id={sale_id}")).await, [sale_note.as_str().expect("id")]);
    assert_eq!(listed(format!("order_id={order_id}")).await, [order_note.as_str().expect("id")]);
    for both in [format!("sale_id={sale_id}&order_id={order_id}"), format!("order_id={order_id}&sale_id={sale_id}")] {
        assert!(listed(both).await.is_empty(), "no note has both origins");
    }
    // Nor does an id stand for another origin than the one it is sent as.
    assert!(listed(format!("origin_type=sale&order_id={sale_id}")).await.is_empty());
    assert_eq!(listed(format!("customer_id={ana}")).await.len(), 2);
}

#[sqlx::test(migrations = "../schema")]
async fn notes_for_an_order_deliver_it_in_parts_consuming_its_reservation(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let order = json!({ "customer_id": ana, "assigned_warehouse_id": main, "reservation": { "enabled": true },
        "lines": [{ "product_id": mate, "quantity": 5, "unit_price": 10000 }, { "name": "Flete", "quantity": 1, "unit_price": 500 }] });
    let order = style_a(app.post_keyed(ORDERS, &order).await, 201).await["data"].clone();
    let order_id = order["id"].as_str().expect("id").to_owned();
    let (line, freight) = (order["lines"][0]["id"].clone(), order["lines"][1]["id"].clone());
    assert_eq!(level(&app, &mate).await, ("10".to_owned(), "5".to_owned()));

    let too_much = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos,
        "items": [{ "order_line_id": line, "quantity": 6 }] });
    let refused = error(app.post_keyed(NOTES, &too_much).await, 422, "business_error").await;
    assert_eq!(refused["error"]["details"][0]["field"], "items[0].quantity");

    let part = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos,
        "items": [{ "order_line_id": line, "quantity": 2 }] });
    let first = style_a(app.post_keyed(NOTES, &part).await, 201).await["data"].clone();
    assert_eq!(first["lines"][0]["order_line_id"], line);
    assert_eq!(level(&app, &mate).await, ("8".to_owned(), "3".to_owned()), "the reservation shrank as much as left");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["fulfillment_status"], "partially_fulfilled");
    assert_eq!((read["lines"][0]["delivered"].as_str(), read["lines"][0]["reserved"].as_str()), (Some("2"), Some("3")));

    // No items: everything left, the free-text line included.
    let rest = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos });
    let second = style_a(app.post_keyed(NOTES, &rest).await, 201).await["data"].clone();
    assert_eq!(second["lines"].as_array().map(Vec::len), Some(2));
    assert_eq!(level(&app, &mate).await, ("5".to_owned(), "0".to_owned()));
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["fulfillment_status"], "fulfilled");
    assert_eq!(read["lines"][1]["delivered"], "1");
    assert_eq!(read["lines"][1]["id"], freight);
    let nothing = error(app.post_keyed(NOTES, &rest).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&nothing), ["items"]);
    let listed = json(app.get(&format!("{NOTES}?order_id={order_id}")).await, 200).await;
    assert_eq!(items(&listed).len(), 2);

    // Deleting the second note puts its stock, its `delivered` and its reservation back.
    let second_id = second["id"].as_str().expect("id");
    style_a(delete(&app, second_id, &Uuid::now_v7().to_string()).await, 200).await;
    assert_eq!(level(&app, &mate).await, ("8".to_owned(), "3".to_owned()));
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["fulfillment_status"], "partially_fulfilled");
    assert_eq!(read["lines"][0]["delivered"], "2");
    // A line may no longer drop below what was delivered.
    let edit = json!({ "lines": [{ "id": line, "product_id": mate, "quantity": 1, "unit_price": 10000 }],
        "assigned_warehouse_id": main, "expected_updated_at": read["updated_at"] });
    let response = app.fresh_keyed(Method::PATCH, &format!("{ORDERS}/{order_id}"), Some(&edit)).await;
    let below = error(response, 422, "business_error").await;
    assert_eq!(below["error"]["details"][0]["field"], "lines[0].quantity");
    let cancel = app.fresh_keyed(Method::POST, &format!("{ORDERS}/{order_id}/cancel"), None).await;
    assert_eq!(error(cancel, 409, "business_error").await["error"]["code"], "STATE_CONFLICT");
}

/// A note for an order is the order's customer's: `customer_id` may name that customer, and another one
/// is refused (409 naming it) with nothing written, never dropped for the order's.
#[sqlx::test(migrations = "../schema")]
async fn a_note_for_an_order_refuses_another_customer_and_writes_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let (ana, bruno) = (customer(&app, "Ana").await, customer(&app, "Bruno").await);
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let order = json!({ "customer_id": ana, "assigned_warehouse_id": main, "reservation": { "enabled": true },
        "lines": [{ "product_id": mate, "quantity": 5, "unit_price": 10000 }] });
    let order = style_a(app.post_keyed(ORDERS, &order).await, 201).await["data"].clone();
    let order_id = order["id"].as_str().expect("id").to_owned();
    assert_eq!(level(&app, &mate).await, ("10".to_owned(), "5".to_owned()));

    let before = app.event_count().await;
    let another = json!({ "origin": { "type": "order", "order_id": order_id }, "customer_id": bruno,
        "point_of_sale_id": pos });
    let refused = error(app.post_keyed(NOTES, &another).await, 409, "business_error").await;
    assert_eq!(refused["error"]["code"], "CONFLICT");
    assert_eq!(detail_fields(&refused), ["customer_id"]);
    assert_eq!(refused["error"]["details"][0]["code"], "not_in_order");
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(level(&app, &mate).await, ("10".to_owned(), "5".to_owned()), "no stock left, the reservation held");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["fulfillment_status"], "unfulfilled");
    let listed = json(app.get(&format!("{NOTES}?order_id={order_id}")).await, 200).await;
    assert!(items(&listed).is_empty(), "no note was made");

    // The order's own customer may be named; the refusal spent no number.
    let own =
        json!({ "origin": { "type": "order", "order_id": order_id }, "customer_id": ana, "point_of_sale_id": pos });
    let note = style_a(app.post_keyed(NOTES, &own).await, 201).await["data"].clone();
    assert_eq!((note["customer_id"].as_str(), note["number"].as_i64()), (Some(ana.as_str()), Some(1)));
    assert_eq!(level(&app, &mate).await, ("5".to_owned(), "0".to_owned()));
}

#[sqlx::test(migrations = "../schema")]
async fn a_delivered_order_line_keeps_its_product_and_is_kept_once(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let yerba = stocked_product(&app, "YERBA", &main, 10).await;
    let order = json!({ "customer_id": ana, "assigned_warehouse_id": main,
        "lines": [{ "product_id": mate, "quantity": 5, "unit_price": 10000 }] });
    let order = style_a(app.post_keyed(ORDERS, &order).await, 201).await["data"].clone();
    let (order_id, line) = (order["id"].as_str().expect("id").to_owned(), order["lines"][0]["id"].clone());
    let part = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos,
        "items": [{ "order_line_id": line, "quantity": 2 }] });
    let note = style_a(app.post_keyed(NOTES, &part).await, 201).await["data"].clone();
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    let edit = |lines: Value| {
        json!({ "lines": lines, "assigned_warehouse_id": main, "expected_updated_at": read["updated_at"] })
    };
    let path = format!("{ORDERS}/{order_id}");
    // Two of the mate left on that line: it may not become the yerba, nor free text.
    for moved in [
        json!([{ "id": line, "product_id": yerba, "quantity": 5, "unit_price": 10000 }]),
        json!([{ "id": line, "name": "Mate de regalo", "quantity": 5, "unit_price": 10000 }]),
    ] {
        let refused = error(app.fresh_keyed(Method::PATCH, &path, Some(&edit(moved))).await, 422, "business_error").await;
        assert_eq!(refused["error"]["details"][0]["field"], "lines[0].product_id");
        assert_eq!(refused["error"]["details"][0]["code"], "FULFILLED_LINE_PRODUCT");
    }
    // Nor be kept twice (the copy would carry the same two delivered).
    let twice = json!([{ "id": line, "product_id": mate, "quantity": 5, "unit_price": 10000 },
        { "id": line, "product_id": mate, "quantity": 5, "unit_price": 10000 }]);
    let refused =
        error(app.fresh_keyed(Method::PATCH, &path, Some(&edit(twice))).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["lines[1].id"]);
    let unchanged = style_a(app.get(&path).await, 200).await["data"].clone();
    assert_eq!(unchanged["updated_at"], read["updated_at"], "nothing was written");
    // Deleting the note gives the mate back.
    style_a(delete(&app, note["id"].as_str().expect("id"), &Uuid::now_v7().to_string()).await, 200).await;
    assert_eq!(level(&app, &mate).await.0, "10");
    assert_eq!(level(&app, &yerba).await.0, "10");
}

#[sqlx::test(migrations = "../schema")]
async fn bad_notes_are_refused_and_write_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 1).await;
    let unknown = json!({ "origin": { "type": "custom" }, "customer_id": ana, "point_of_sale_id": pos, "colour": 1,
        "items": [{ "quantity": 1 }, { "is_custom": true, "quantity": 1 }] });
    let refused = error(app.post_keyed(NOTES, &unknown).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["colour", "items[0].product_id", "items[1].name"]);
    // A null product is no custom line: it names neither.
    let null = json!({ "origin": { "type": "custom" }, "customer_id": ana, "point_of_sale_id": pos,
        "items": [{ "product_id": null, "quantity": 1 }] });
    let refused = error(app.post_keyed(NOTES, &null).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[0].product_id"]);
    let missing = json!({ "origin": { "type": "custom" }, "customer_id": Uuid::now_v7(), "point_of_sale_id": Uuid::now_v7(),
        "warehouse_id": Uuid::now_v7(), "items": [{ "product_id": Uuid::now_v7(), "quantity": 1 }] });
    let not_found = error(app.post_keyed(NOTES, &missing).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&not_found), ["point_of_sale_id", "customer_id", "warehouse_id", "items[0].product_id"]);
    // Ours but inactive: a closed warehouse and a discontinued product are unknown to a note.
    let (shut, off) = crate::orders::inactive(&app).await;
    let closed = json!({ "origin": { "type": "custom" }, "customer_id": ana, "point_of_sale_id": pos,
        "warehouse_id": shut, "items": [{ "product_id": off, "quantity": 1 }] });
    let not_found = error(app.post_keyed(NOTES, &closed).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&not_found), ["warehouse_id", "items[0].product_id"]);
    app.negative_stock("block").await;
    let short = json!({ "origin": { "type": "custom" }, "customer_id": ana, "point_of_sale_id": pos,
        "items": [{ "product_id": mate, "quantity": 2 }] });
    let business = error(app.post_keyed(NOTES, &short).await, 422, "business_error").await;
    assert_eq!(business["error"]["code"], "INSUFFICIENT_STOCK");
    let written: i64 = sqlx::query_scalar("select count(*) from events where stream_type = 'delivery_note'")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(written, 0, "nothing written");
    let numbered: Option<i64> =
        sqlx::query_scalar("select max(last) from document_numbers where series like 'delivery_note:%'")
            .fetch_one(&app.pool)
            .await
            .expect("numbers");
    assert_eq!(numbered, None, "no number was spent");
}

#[sqlx::test(migrations = "../schema")]
async fn sales_bill_an_order_and_each_unit_leaves_the_warehouse_once(pool: PgPool) {
    let AnasOrder { app, pos, ana, mate, order_id, line, today, .. } = anas_order(pool).await;
    let sale = |quantity: i64, voucher: i64, spelling: bool| {
        let mut body = json!({ "voucherType": voucher, "pointOfSaleId": pos, "invoiceDate": today,
            "customerId": ana, "invoice": false, "items": [{ "productId": mate, "quantity": quantity, "unitPrice": 1210, "orderLineId": line }] });
        // Both spellings are read.
        if spelling {
            body["order_id"] = json!(order_id);
        } else {
            body["orderId"] = json!(order_id);
        }
        body
    };

    // Billing 2 before any delivery: those 2 leave with the sale, out of the order's reservation.
    let sold = json(app.post_keyed("/api/v1/sales", &sale(2, 6, false)).await, 201).await["data"].clone();
    assert_eq!((sold["orderId"].as_str(), &sold["items"][0]["orderLineId"]), (Some(order_id.as_str()), &line));
    assert_eq!(level(&app, &mate).await, ("8".to_owned(), "3".to_owned()));
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["lines"][0]["billed"].as_str(), read["lines"][0]["reserved"].as_str()), (Some("2"), Some("3")));

    // Billing past the ordered quantity is refused and writes nothing.
    let before = app.event_count().await;
    let over = error(app.post_keyed("/api/v1/sales", &sale(4, 6, true)).await, 422, "business_error").await;
    assert_eq!(over["error"]["details"][0]["field"], "items[0].quantity");
    assert_eq!(app.event_count().await, before);

    // Delivering all 5: only the 3 the sale did not take leave now.
    let rest = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos });
    style_a(app.post_keyed(NOTES, &rest).await, 201).await;
    assert_eq!(level(&app, &mate).await, ("5".to_owned(), "0".to_owned()));

    // Billing the other 3 moves nothing more, and completes the order (all delivered and billed).
    json(app.post_keyed("/api/v1/sales", &sale(3, 6, true)).await, 201).await;
    assert_eq!(level(&app, &mate).await, ("5".to_owned(), "0".to_owned()));
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["status"].as_str(), read["fulfillment_status"].as_str()), (Some("completed"), Some("fulfilled")));
    let closed = error(app.post_keyed("/api/v1/sales", &sale(1, 6, false)).await, 409, "business_error").await;
    assert_eq!(closed["error"]["details"][0]["metadata"]["current_state"], "completed");

    // A line of another order, or a line without its order, is refused.
    let mut foreign = sale(1, 6, false);
    foreign["items"][0]["orderLineId"] = json!(Uuid::now_v7());
    let refused = error(app.post_keyed("/api/v1/sales", &foreign).await, 409, "business_error").await;
    assert_eq!(refused["error"]["code"], "STATE_CONFLICT", "the order is completed: checked first");
    let mut orphan = sale(1, 6, false);
    orphan.as_object_mut().expect("object").remove("orderId");
    let refused = error(app.post_keyed("/api/v1/sales", &orphan).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[0].orderLineId"]);

    // A credit note lowers what was billed; the goods were delivered, so no stock comes back. Billed no
    // more in full, the order its lines completed is open again.
    let mut credit = sale(1, 8, false);
    credit["associatedSaleId"] = sold["id"].clone();
    json(app.post_keyed("/api/v1/sales", &credit).await, 201).await;
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"][0]["billed"], "4");
    assert_eq!(read["status"], "open");
    assert_eq!(level(&app, &mate).await, ("5".to_owned(), "0".to_owned()));
}

#[sqlx::test(migrations = "../schema")]
async fn a_custom_note_for_a_combo_moves_its_components_and_deleting_it_restores_them(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana Pérez").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let bombilla = stocked_product(&app, "BOMBILLA", &main, 10).await;
    let yerba = stocked_product(&app, "YERBA", &main, 10).await;
    let kit = json!({ "name": "Kit matero", "sku": "KIT", "price": 30000, "productType": "combo",
        "components": [{ "productId": mate, "quantity": 2 }, { "productId": bombilla, "quantity": "0.5" }] });
    let combo =
        json(app.post_keyed("/api/v1/products", &kit).await, 201).await["data"]["id"].as_str().expect("id").to_owned();

    let body = json!({ "origin": { "type": "custom" }, "customer_id": ana, "point_of_sale_id": pos,
        "warehouse_id": main, "items": [{ "product_id": combo, "quantity": 3 }] });
    let note = style_a(app.post_keyed(NOTES, &body).await, 201).await["data"].clone();
    assert_eq!(note["lines"][0]["product_id"], combo.as_str());
    assert_eq!(note["lines"][0]["quantity"], "3");
    // Each component falls by its quantity in one combo times the combo's quantity.
    assert_eq!(level(&app, &mate).await, ("4".to_owned(), "0".to_owned()), "10 - 2 × 3");
    assert_eq!(level(&app, &bombilla).await, ("8.5".to_owned(), "0".to_owned()), "10 - 0.5 × 3");
    assert_eq!(level(&app, &yerba).await, ("10".to_owned(), "0".to_owned()), "not a component");
    let inventory = style_a(app.get(&format!("/api/v1/inventory?product_id={combo}")).await, 200).await;
    assert!(items(&inventory).is_empty(), "a combo holds no stock of its own");
    let id = note["id"].as_str().expect("id").to_owned();
    for component in [&mate, &bombilla] {
        let ledger = json(
            app.get(&format!("/api/v1/inventory/movements?product_id={component}&cause_type=delivery_note")).await,
            200,
        )
        .await;
        assert_eq!(items(&ledger).len(), 1, "one change of {component}");
        assert_eq!(items(&ledger)[0]["cause_id"], id.as_str());
    }

    // Deleting the note gives back exactly what it took from each component, and nothing to the combo.
    let deleted = style_a(delete(&app, &id, &Uuid::now_v7().to_string()).await, 200).await["data"].clone();
    assert_eq!(deleted["deleted"], true);
    assert_eq!(level(&app, &mate).await, ("10".to_owned(), "0".to_owned()));
    assert_eq!(level(&app, &bombilla).await, ("10".to_owned(), "0".to_owned()));
    assert_eq!(level(&app, &yerba).await, ("10".to_owned(), "0".to_owned()));
    let inventory = style_a(app.get(&format!("/api/v1/inventory?product_id={combo}")).await, 200).await;
    assert!(items(&inventory).is_empty(), "the delete gave the combo no stock");
}

/// A combo leaves as its components: one deactivated since the combo listed it refuses a custom note's
/// item naming the combo as an item naming an inactive product is refused (404 `not_found` naming the
/// item's product), and nothing is written, numbered or taken from stock. Active again, the combo leaves.
#[sqlx::test(migrations = "../schema")]
async fn a_custom_note_of_a_combo_whose_component_was_deactivated_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana Pérez").await;
    let (mate, bombilla, kit) = mate_kit(&app, &main).await;
    let retired = json!({ "name": "Producto BOMBILLA", "sku": "BOMBILLA", "price": 12100, "isActive": false });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &retired).await, 200).await;
    let events = app.event_count().await;
    let note = |items: Value| {
        json!({ "origin": { "type": "custom" }, "customer_id": ana, "point_of_sale_id": pos, "warehouse_id": main,
            "items": items })
    };

    // Delivered directly, the inactive product is refused, naming its item.
    let direct = note(json!([{ "product_id": bombilla, "quantity": 1 }]));
    let refused = error(app.post_keyed(NOTES, &direct).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[0].product_id"]);
    // So is the combo that holds it, on the combo's item; the mate's item is fine.
    let with_kit = note(json!([{ "product_id": mate, "quantity": 1 }, { "product_id": kit, "quantity": 1 }]));
    let refused = error(app.post_keyed(NOTES, &with_kit).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[1].product_id"]);
    let detail = &refused["error"]["details"][0];
    assert_eq!(detail["code"], "not_found", "{refused}");
    assert!(detail["message"].as_str().is_some_and(|m| m.contains(&bombilla)), "names the component: {refused}");
    assert_eq!(app.event_count().await, events, "nothing was written");
    for product in [&mate, &bombilla] {
        assert_eq!(level(&app, product).await, ("10".to_owned(), "0".to_owned()), "{product} stayed");
    }
    let numbered: Option<i64> =
        sqlx::query_scalar("select max(last) from document_numbers where series like 'delivery_note:%'")
            .fetch_one(&app.pool)
            .await
            .expect("numbers");
    assert_eq!(numbered, None, "no number was spent");

    // Active again, the combo leaves as its components: the mate's item and two of the kit's, one bombilla.
    let active = json!({ "name": "Producto BOMBILLA", "sku": "BOMBILLA", "price": 12100 });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &active).await, 200).await;
    style_a(app.post_keyed(NOTES, &with_kit).await, 201).await;
    assert_eq!(level(&app, &mate).await, ("7".to_owned(), "0".to_owned()));
    assert_eq!(level(&app, &bombilla).await, ("9".to_owned(), "0".to_owned()));
}

#[sqlx::test(migrations = "../schema")]
async fn a_note_prints_as_a_remito_without_prices_behind_a_signed_link(pool: PgPool) {
    use std::time::Duration;
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana Pérez").await;
    // Priced at 12100 cents: "121,00" must not be printed.
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let body = json!({ "origin": { "type": "custom" }, "customer_id": ana, "point_of_sale_id": pos,
        "warehouse_id": main, "items": [{ "product_id": mate, "quantity": 2.5 }] });
    let note = style_a(app.post_keyed(NOTES, &body).await, 201).await["data"].clone();
    let id = note["id"].as_str().expect("id").to_owned();
    let path = format!("{NOTES}/{id}/document");
    let location = crate::helpers::eventually(Duration::from_secs(20), "the delivery note's PDF", || {
        app.document_location(&path)
    })
    .await;
    let text = app.pdf_text(&location).await;
    assert!(text.contains("R-0001-00000001"), "the number is printed: {text}");
    assert!(text.contains("Almacén de Prueba"), "the issuer is printed: {text}");
    assert!(text.contains("Ana Pérez"), "the customer is printed: {text}");
    assert!(text.contains("Producto MATE"), "the line's name is printed: {text}");
    assert!(text.contains("2,5"), "the line's quantity is printed: {text}");
    assert!(!text.contains("121,00") && !text.contains('$'), "no price is printed: {text}");

    // Another organization's key finds nothing; a deleted note's document is gone.
    let (_, other_key) = app.other_org().await;
    error(app.request(Method::GET, &path, Some(&other_key), None).await, 404, "invalid_request_error").await;
    style_a(delete(&app, &id, &Uuid::now_v7().to_string()).await, 200).await;
    let gone =
        error(app.request(Method::GET, &path, Some(&app.api_key), None).await, 404, "invalid_request_error").await;
    assert_ne!(gone["error"]["code"], "DOCUMENT_NOT_READY", "{gone}");
}

/// A product's on hand in one warehouse.
async fn on_hand(app: &TestApp, product: &str, warehouse: &str) -> String {
    let body = json(app.get(&format!("/api/v1/inventory?product_id={product}")).await, 200).await;
    let row = items(&body).into_iter().find(|row| row["warehouse"]["id"] == warehouse).expect("the warehouse's level");
    row["on_hand"].as_str().expect("on_hand").to_owned()
}

/// A note for an order takes its goods from the warehouse it names, over the one a converted quote's
/// line kept; deleting the note of an order its lines completed opens the order again, to be delivered
/// again.
#[sqlx::test(migrations = "../schema")]
async fn a_note_takes_stock_where_it_says_and_its_delete_reopens_a_completed_order(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    crate::sales::fiscal_profile(&app, "Responsable Inscripto").await;
    let (second, mate) = second_warehouse_and_mate(&app, &main).await;
    let ana = customer(&app, "Ana").await;
    let quote = json!({ "customer_id": ana,
        "items": [{ "product_id": mate, "quantity": 2, "unit_price": 12100, "warehouse_id": main }] });
    let quote = style_a(app.post_keyed("/api/v1/quotes", &quote).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for step in ["send", "accept"] {
        style_a(app.fresh_keyed(Method::POST, &format!("/api/v1/quotes/{quote}/{step}"), None).await, 200).await;
    }
    let order = app.fresh_keyed(Method::POST, &format!("/api/v1/quotes/{quote}/convert"), None).await;
    let order = style_a(order, 201).await["data"].clone();
    let (order_id, line) = (order["id"].as_str().expect("id").to_owned(), order["lines"][0]["id"].clone());

    let elsewhere =
        json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos, "warehouse_id": second });
    let note = style_a(app.post_keyed(NOTES, &elsewhere).await, 201).await["data"].clone();
    assert_eq!(note["warehouse_id"], second.as_str());
    assert_eq!(on_hand(&app, &mate, &second).await, "8", "the goods left the warehouse the note names");
    assert_eq!(on_hand(&app, &mate, &main).await, "10");

    // Billed too: the order is completed by its lines.
    let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string();
    let sale = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today, "customerId": ana,
        "invoice": false, "orderId": order_id,
        "items": [{ "productId": mate, "quantity": 2, "unitPrice": 12100, "orderLineId": line }] });
    json(app.post_keyed("/api/v1/sales", &sale).await, 201).await;
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["status"], "completed");

    // The note deleted: the order is open, unfulfilled, to be delivered again. Its units stay out: the
    // bill holds them (a unit leaves once).
    style_a(delete(&app, note["id"].as_str().expect("id"), &Uuid::now_v7().to_string()).await, 200).await;
    assert_eq!(on_hand(&app, &mate, &second).await, "8");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["status"].as_str(), read["fulfillment_status"].as_str()), (Some("open"), Some("unfulfilled")));
    let again = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos });
    style_a(app.post_keyed(NOTES, &again).await, 201).await;
    assert_eq!(on_hand(&app, &mate, &main).await, "10", "the units left with the bill already");
    assert_eq!(on_hand(&app, &mate, &second).await, "8");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["status"].as_str(), read["fulfillment_status"].as_str()), (Some("completed"), Some("fulfilled")));
}

/// A sale bills an order line with the line's own product: another product, or a free-text item, is
/// 409 `CONFLICT` naming the item's `productId` (`not_in_order`) with nothing written. Accepted, the
/// sale took the other product out while the line counted as moved, so the line's own product never
/// left the warehouse when the order was delivered.
#[sqlx::test(migrations = "../schema")]
async fn a_sale_bills_an_order_line_only_with_the_lines_own_product(pool: PgPool) {
    let AnasOrder { app, main, pos, ana, mate, order_id, line, today } = anas_order(pool).await;
    let yerba = stocked_product(&app, "YERBA", &main, 10).await;
    let sale = |item: Value| {
        json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today, "customerId": ana,
            "invoice": false, "orderId": order_id, "items": [item] })
    };

    let before = app.event_count().await;
    for item in [
        json!({ "productId": yerba, "quantity": 5, "unitPrice": 1210, "orderLineId": line }),
        json!({ "name": "Mate", "quantity": 5, "unitPrice": 1210, "orderLineId": line }),
    ] {
        let refused = error(app.post_keyed("/api/v1/sales", &sale(item)).await, 409, "business_error").await;
        assert_eq!(refused["error"]["code"], "CONFLICT");
        assert_eq!(detail_fields(&refused), ["items[0].productId"]);
        assert_eq!(refused["error"]["details"][0]["code"], "not_in_order");
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(level(&app, &mate).await, ("10".to_owned(), "5".to_owned()), "the order still holds its mate");
    assert_eq!(level(&app, &yerba).await, ("10".to_owned(), "0".to_owned()), "no yerba left");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"][0]["billed"], "0");

    // The line's own product bills it: the mate leaves once, with the sale, and delivering moves no more.
    let own = sale(json!({ "productId": mate, "quantity": 5, "unitPrice": 1210, "orderLineId": line }));
    json(app.post_keyed("/api/v1/sales", &own).await, 201).await;
    assert_eq!(level(&app, &mate).await, ("5".to_owned(), "0".to_owned()));
    let rest = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos });
    style_a(app.post_keyed(NOTES, &rest).await, 201).await;
    assert_eq!(level(&app, &mate).await, ("5".to_owned(), "0".to_owned()));
    assert_eq!(level(&app, &yerba).await, ("10".to_owned(), "0".to_owned()));
}

/// A sale billing an order is the order's customer's: without `customerId` it takes that customer (not
/// the organization's default one), and another is 409 `CONFLICT` naming `customerId` (`not_in_order`)
/// with nothing written, as is a credit note whose corrected sale is another customer's. Accepted, the
/// other customer's account owed the order, or was credited for it, while its lines counted as billed.
#[sqlx::test(migrations = "../schema")]
async fn a_sale_billing_an_order_is_the_orders_customers(pool: PgPool) {
    let AnasOrder { app, pos, ana, mate, order_id, line, today, .. } = anas_order(pool).await;
    let bruno = customer(&app, "Bruno").await;
    let sale = |voucher: i64, customer: Option<&str>| {
        let item = json!({ "productId": mate, "quantity": 2, "unitPrice": 1210, "orderLineId": line });
        let mut body = json!({ "voucherType": voucher, "pointOfSaleId": pos, "invoiceDate": today, "invoice": false,
            "orderId": order_id, "items": [item] });
        if let Some(customer) = customer {
            body["customerId"] = json!(customer);
        }
        body
    };

    let before = app.event_count().await;
    let another = sale(6, Some(bruno.as_str()));
    let refused = error(app.post_keyed("/api/v1/sales", &another).await, 409, "business_error").await;
    assert_eq!(refused["error"]["code"], "CONFLICT");
    assert_eq!(detail_fields(&refused), ["customerId"]);
    assert_eq!(refused["error"]["details"][0]["code"], "not_in_order");
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(level(&app, &mate).await, ("10".to_owned(), "5".to_owned()), "the order still holds its mate");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"][0]["billed"], "0");

    // Without customerId the sale is the order's customer's, not the organization's default one.
    let sold = json(app.post_keyed("/api/v1/sales", &sale(6, None)).await, 201).await["data"].clone();
    assert_eq!(sold["customer"]["id"], ana.as_str());
    assert_eq!(level(&app, &mate).await, ("8".to_owned(), "3".to_owned()));

    // A credit note is its corrected sale's customer's: one correcting Bruno's sale un-bills nothing of
    // Ana's order.
    let plain = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today, "invoice": false,
        "customerId": bruno, "items": [{ "productId": mate, "quantity": 2, "unitPrice": 1210 }] });
    let brunos = json(app.post_keyed("/api/v1/sales", &plain).await, 201).await["data"]["id"].clone();
    let mut credit = sale(8, None);
    credit["associatedSaleId"] = brunos;
    let before = app.event_count().await;
    let refused = error(app.post_keyed("/api/v1/sales", &credit).await, 409, "business_error").await;
    assert_eq!(detail_fields(&refused), ["customerId"]);
    assert_eq!(refused["error"]["details"][0]["code"], "not_in_order");
    assert_eq!(app.event_count().await, before, "nothing written");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"][0]["billed"], "2");

    // Correcting Ana's own sale, it un-bills the line.
    credit["associatedSaleId"] = sold["id"].clone();
    let credited = json(app.post_keyed("/api/v1/sales", &credit).await, 201).await["data"].clone();
    assert_eq!(credited["customer"]["id"], ana.as_str());
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"][0]["billed"], "0");
}

/// An item naming an order line needs the sale's `orderId`: a null one is none, refused as an omitted
/// one is (400 naming the item) with nothing written. Accepted, the sale moved the stock as a plain
/// sale and billed nothing, and the order's delivery then took the same units out again.
#[sqlx::test(migrations = "../schema")]
async fn an_order_line_with_a_null_order_id_is_refused_and_writes_nothing(pool: PgPool) {
    let AnasOrder { app, pos, ana, mate, order_id, line, today, .. } = anas_order(pool).await;

    let before = app.event_count().await;
    // Both spellings are read.
    for field in ["orderId", "order_id"] {
        let item = json!({ "productId": mate, "quantity": 5, "unitPrice": 1210, "orderLineId": line });
        let mut sale = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today, "customerId": ana,
            "invoice": false, "items": [item] });
        sale[field] = Value::Null;
        let refused = error(app.post_keyed("/api/v1/sales", &sale).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), ["items[0].orderLineId"]);
        assert_eq!(refused["error"]["details"][0]["code"], "requires_order");
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    assert_eq!(level(&app, &mate).await, ("10".to_owned(), "5".to_owned()));
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"][0]["billed"], "0");
}

/// A note for an order takes nothing from a warehouse closed since the order was made: 404 naming
/// `warehouse_id` with nothing written and no number spent, as a sale billing the line answers. Named,
/// an active warehouse gives the goods instead.
#[sqlx::test(migrations = "../schema")]
async fn a_note_for_an_order_takes_nothing_from_a_warehouse_closed_since(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let (second, mate) = second_warehouse_and_mate(&app, &main).await;
    let ana = customer(&app, "Ana").await;
    let order = json!({ "customer_id": ana, "assigned_warehouse_id": second,
        "lines": [{ "product_id": mate, "quantity": 2, "unit_price": 10000 }] });
    let order = style_a(app.post_keyed(ORDERS, &order).await, 201).await["data"].clone();
    let order_id = order["id"].as_str().expect("id").to_owned();
    let closed = json!({ "name": "Depósito 2", "isActive": false });
    json(app.put(&format!("/api/v1/warehouses/{second}"), &closed).await, 200).await;

    let before = app.event_count().await;
    let note = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos });
    let refused = error(app.post_keyed(NOTES, &note).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["warehouse_id"]);
    assert_eq!(app.event_count().await, before, "nothing written");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"][0]["delivered"], "0");

    let elsewhere =
        json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos, "warehouse_id": main });
    let delivered = style_a(app.post_keyed(NOTES, &elsewhere).await, 201).await["data"].clone();
    assert_eq!((delivered["number"].as_i64(), delivered["warehouse_id"].as_str()), (Some(1), Some(main.as_str())));
    assert_eq!(on_hand(&app, &mate, &main).await, "8", "the goods left the active warehouse named");
}
