//! Orders: the quote lifecycle up to conversion (the reservation moving to the order, also under a
//! race), orders of the service's own channel, notes and structural edits (stale versions, concurrent
//! edits, what a line keeps), cancel and complete, what credit notes un-bill, lists and bad input.

use crate::delivery_notes::{AnasOrder, anas_order};
use crate::helpers::{assert_nulls_documented, TestApp, WAREHOUSES, detail_fields, error, eventually, items, json, style_a, customer, main_warehouse, mate_kit, reserved_and_available, stocked_product, today, today_date};
use crate::sales::point_of_sale;
use commands::inventory::NegativeStock;
use commands::inventory::reservations::{self, Wanted};
use events::catalogue::{OrderEvent, OrderReservation, ReservationOwner, ReservedLine};
use events::store::{AppendRequest, StreamRef};
use events::{EventPayload, Metadata};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

const QUOTES: &str = "/api/v1/quotes";
const ORDERS: &str = "/api/v1/orders";
const NOTES: &str = "/api/v1/delivery-notes";
const SALES: &str = "/api/v1/sales";

async fn patch(app: &TestApp, id: &str, key: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = app.client.patch(format!("{}{ORDERS}/{id}", app.base)).bearer_auth(&app.api_key).json(body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await.expect("sent")
}

async fn act(app: &TestApp, path: &str) -> reqwest::Response {
    app.fresh_keyed(Method::POST, path, None).await
}

/// An inactive warehouse and an inactive product of the organization.
pub async fn inactive(app: &TestApp) -> (String, String) {
    let shut = json(app.post(WAREHOUSES, &json!({ "name": "Depósito Cerrado" })).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // Stocked while open: an inactive warehouse takes no opening stock.
    let off = stocked_product(app, "OFF", &shut, 0).await;
    let closed = json!({ "name": "Depósito Cerrado", "isActive": false });
    json(app.put(&format!("{WAREHOUSES}/{shut}"), &closed).await, 200).await;
    let retired = json!({ "name": "Producto OFF", "sku": "OFF", "price": 12100, "isActive": false });
    json(app.put(&format!("/api/v1/products/{off}"), &retired).await, 200).await;
    (shut, off)
}

fn quote_body(customer: &str, product: &str, warehouse: &str, quantity: i64) -> Value {
    json!({ "customer_id": customer, "reservation": { "enabled": true, "reserved_through_date": today() },
        "items": [{ "product_id": product, "quantity": quantity, "unit_price": 12100, "warehouse_id": warehouse }] })
}

#[sqlx::test(migrations = "../schema")]
async fn a_quote_is_sent_accepted_and_converted_with_its_reservation_moving_to_the_order(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana Pérez").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let quote = style_a(app.post_keyed(QUOTES, &quote_body(&ana, &mate, &main, 4)).await, 201).await["data"].clone();
    let id = quote["id"].as_str().expect("id").to_owned();
    assert_eq!(quote["converted_order_id"], Value::Null);

    // Only a sent quote is accepted or rejected; each refusal names the current state and changes nothing.
    let early = error(act(&app, &format!("{QUOTES}/{id}/accept")).await, 409, "business_error").await;
    assert_eq!(early["error"]["code"], "STATE_CONFLICT");
    assert_eq!(early["error"]["details"][0]["metadata"]["current_state"], "draft");
    let sent = style_a(act(&app, &format!("{QUOTES}/{id}/send")).await, 200).await["data"].clone();
    assert_eq!(sent["status"], "sent");
    let again = error(act(&app, &format!("{QUOTES}/{id}/send")).await, 409, "business_error").await;
    assert_eq!(again["error"]["details"][0]["metadata"]["current_state"], "sent");
    let accepted = style_a(act(&app, &format!("{QUOTES}/{id}/accept")).await, 200).await["data"].clone();
    assert_eq!(accepted["status"], "accepted");
    assert_eq!(accepted["reservation"]["lines"][0]["quantity"], "4", "accepting keeps the reservation");
    assert_eq!(reserved_and_available(&app, &mate).await, ("4".to_owned(), "6".to_owned()));

    let order = style_a(act(&app, &format!("{QUOTES}/{id}/convert")).await, 201).await["data"].clone();
    assert_nulls_documented(&order, "OrderData");
    assert_eq!((order["object"].as_str(), order["status"].as_str()), (Some("order"), Some("open")));
    assert_eq!(order["fulfillment_status"], "unfulfilled");
    assert_eq!(order["quote_id"], id.as_str());
    assert_eq!(order["number"], 1);
    assert_eq!(order["prices_include_tax"], true);
    assert_eq!(order["total"], 4 * 12100, "the quote's VAT-inclusive total, exactly");
    assert_eq!(order["lines"][0]["unit_price"], 10000, "net of 21% VAT");
    assert_eq!(order["lines"][0]["reserved"], "4");
    assert_eq!(order["assigned_warehouse_id"], main.as_str());
    assert_eq!(reserved_and_available(&app, &mate).await, ("4".to_owned(), "6".to_owned()), "the units moved, none were freed");
    let owners: Vec<String> = sqlx::query_scalar(
        "select distinct data->'owner'->>'kind' from events
         where stream_type = 'stock_reservation' and event_type = 'StockReserved'",
    )
    .fetch_all(&app.pool)
    .await
    .expect("owners");
    assert_eq!(owners.len(), 2, "the quote's reservation, then the order's: {owners:?}");
    let held: Vec<(String, i64)> = sqlx::query_as("select reservation_id::text, quantity from stock_reservations")
        .fetch_all(&app.pool)
        .await
        .expect("rows");
    assert_eq!(held.len(), 1, "only the order holds stock now: {held:?}");

    let converted = style_a(app.get(&format!("{QUOTES}/{id}")).await, 200).await["data"].clone();
    assert_eq!(converted["status"], "converted");
    assert_eq!(converted["converted_order_id"], order["id"]);
    assert_eq!(converted["reservation"], Value::Null);
    let twice = error(act(&app, &format!("{QUOTES}/{id}/convert")).await, 409, "business_error").await;
    assert_eq!(twice["error"]["code"], "STATE_CONFLICT");
    assert_eq!(twice["error"]["details"][0]["metadata"]["current_state"], "converted");
    let read = style_a(app.get(&format!("{ORDERS}/{}", order["id"].as_str().expect("id"))).await, 200).await;
    assert_eq!(read["data"]["lines"], order["lines"]);

    // A rejected quote releases what it held.
    let other = style_a(app.post_keyed(QUOTES, &quote_body(&ana, &mate, &main, 2)).await, 201).await["data"].clone();
    let other = other["id"].as_str().expect("id").to_owned();
    style_a(act(&app, &format!("{QUOTES}/{other}/send")).await, 200).await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("6".to_owned(), "4".to_owned()));
    let rejected = style_a(act(&app, &format!("{QUOTES}/{other}/reject")).await, 200).await["data"].clone();
    assert_eq!((rejected["status"].as_str(), &rejected["reservation"]), (Some("rejected"), &Value::Null));
    assert_eq!(reserved_and_available(&app, &mate).await, ("4".to_owned(), "6".to_owned()));
    let refused = error(act(&app, &format!("{QUOTES}/{other}/convert")).await, 409, "business_error").await;
    assert_eq!(refused["error"]["details"][0]["metadata"]["current_state"], "rejected");
}

#[sqlx::test(migrations = "../schema")]
async fn converting_a_quote_keeps_its_last_units_while_other_quotes_race_for_them(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana").await;
    let last = stocked_product(&app, "ULTIMOS", &main, 5).await;
    app.negative_stock("block").await;
    let quote = style_a(app.post_keyed(QUOTES, &quote_body(&ana, &last, &main, 5)).await, 201).await["data"].clone();
    let id = quote["id"].as_str().expect("id").to_owned();
    let racer = quote_body(&ana, &last, &main, 1);
    let convert = async { act(&app, &format!("{QUOTES}/{id}/convert")).await.status().as_u16() };
    let racers =
        futures::future::join_all((0..10).map(|_| async { app.post_keyed(QUOTES, &racer).await.status().as_u16() }));
    let (converted, raced) = tokio::join!(convert, racers);
    assert_eq!(converted, 201);
    assert!(raced.iter().all(|s| *s == 422), "no other quote took a unit: {raced:?}");
    assert_eq!(reserved_and_available(&app, &last).await, ("5".to_owned(), "0".to_owned()));
    let held: Vec<(String, i64)> = sqlx::query_as(
        "select r.kind, s.quantity from stock_reservations s
         join (select distinct stream_id, data->'owner'->>'kind' as kind from events
               where stream_type = 'stock_reservation' and data->'owner' is not null) r on r.stream_id = s.reservation_id",
    )
    .fetch_all(&app.pool)
    .await
    .expect("rows");
    assert_eq!(held, [("order".to_owned(), 5000)], "exactly those 5, held by the order");
}

#[sqlx::test(migrations = "../schema")]
async fn an_order_is_created_edited_and_closed(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let second = json(app.post(WAREHOUSES, &json!({ "name": "Depósito 2" })).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let body = json!({ "customer_id": ana, "assigned_warehouse_id": main, "delivery_method": "envío",
        "notes": "tocar timbre", "reservation": { "enabled": true },
        "lines": [{ "product_id": mate, "quantity": 3, "unit_price": 10000, "discount": { "percentage": 10 } },
                  { "name": "Flete", "quantity": 1, "unit_price": 2000, "tax_rate_id": 4 }] });
    let key = Uuid::now_v7().to_string();
    let order = style_a(app.post_key(ORDERS, &key, &body).await, 201).await["data"].clone();
    assert_nulls_documented(&order, "OrderData");
    let id = order["id"].as_str().expect("id").to_owned();
    // 27,000 at 21% and 2,000 at 10.5%: 29,000 net, 5,670 + 210 VAT.
    assert_eq!((order["subtotal"].as_i64(), order["tax_amount"].as_i64()), (Some(29000), Some(5880)));
    assert_eq!(order["total"], 34880);
    let amounts = json!({ "discount": order["discount_amount"], "subtotal": 29000, "tax": 5880, "total": 34880 });
    assert_eq!(order["amounts"], amounts, "the spec's grouped amounts");
    assert_eq!(order["formatted_number"], "PED-00000001");
    assert_eq!(order["lines"][1]["name"], "Flete");
    assert_eq!(order["lines"][1]["reserved"], "0");
    assert_eq!(reserved_and_available(&app, &mate).await, ("3".to_owned(), "7".to_owned()));
    let replay = style_a(app.post_key(ORDERS, &key, &body).await, 201).await["data"].clone();
    assert_eq!((replay["id"].as_str(), replay["idempotent_replay"].as_bool()), (Some(id.as_str()), Some(true)));

    // Notes alone: the historical contract, no key.
    let noted =
        style_a(patch(&app, &id, None, &json!({ "notes": "dejar en portería" })).await, 200).await["data"].clone();
    assert_eq!(noted["notes"], "dejar en portería");
    let updated_at = noted["updated_at"].as_str().expect("updated_at").to_owned();

    // A structural edit needs its version and a key.
    let lines = json!([{ "id": order["lines"][0]["id"], "product_id": mate, "quantity": 5, "unit_price": 10000 }]);
    let edit = json!({ "lines": lines, "assigned_warehouse_id": second, "expected_updated_at": updated_at });
    let missing = error(patch(&app, &id, None, &edit).await, 400, "idempotency_error").await;
    assert_eq!(missing["error"]["code"], "IDEMPOTENCY_KEY_REQUIRED");
    let unversioned = json!({ "lines": lines, "assigned_warehouse_id": second });
    let refused = error(patch(&app, &id, Some("k-1"), &unversioned).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["expected_updated_at"]);

    // Two edits against the same version: one wins, the other is 409 and writes nothing.
    let before = app.event_count().await;
    let (key_a, key_b) = (Uuid::now_v7().to_string(), Uuid::now_v7().to_string());
    let (a, b) = tokio::join!(patch(&app, &id, Some(&key_a), &edit), patch(&app, &id, Some(&key_b), &edit));
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409]);
    let edited = style_a(app.get(&format!("{ORDERS}/{id}")).await, 200).await["data"].clone();
    assert_eq!(edited["lines"].as_array().map(Vec::len), Some(1), "the free-text line was removed");
    assert_eq!(edited["lines"][0]["id"], order["lines"][0]["id"], "the kept line keeps its id");
    assert_eq!(edited["lines"][0]["discount"], Value::Null);
    assert_eq!(edited["assigned_warehouse_id"], second.as_str());
    assert_eq!(edited["notes"], "dejar en portería", "omitted: kept");
    assert_eq!(edited["delivery_method"], "envío");
    assert_eq!(edited["total"], 60500);
    assert!(app.event_count().await > before);
    // The reservation moved to the new warehouse (which has no stock: the policy allows it, with warnings).
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "10".to_owned()));
    assert_eq!(edited["lines"][0]["reserved"], "5");

    // `""` clears the notes; `0` the global discount.
    let clear = json!({ "lines": [{ "id": order["lines"][0]["id"], "product_id": mate, "quantity": 5, "unit_price": 10000 }],
        "assigned_warehouse_id": main, "notes": "", "global_discount_amount": 0,
        "expected_updated_at": edited["updated_at"] });
    let cleared = style_a(patch(&app, &id, Some(&Uuid::now_v7().to_string()), &clear).await, 200).await["data"].clone();
    assert_eq!((&cleared["notes"], &cleared["global_discount_amount"]), (&Value::Null, &Value::Null));
    assert_eq!(reserved_and_available(&app, &mate).await, ("5".to_owned(), "5".to_owned()));

    // Completing releases what is held; a closed order changes no more.
    let completed = style_a(act(&app, &format!("{ORDERS}/{id}/complete")).await, 200).await["data"].clone();
    assert_eq!(completed["status"], "completed");
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "10".to_owned()));
    let closed = error(act(&app, &format!("{ORDERS}/{id}/cancel")).await, 409, "business_error").await;
    assert_eq!(closed["error"]["details"][0]["metadata"]["current_state"], "completed");
    let closed = error(patch(&app, &id, None, &json!({ "notes": "x" })).await, 409, "business_error").await;
    assert_eq!(closed["error"]["code"], "STATE_CONFLICT");

    // Cancelling an untouched order releases its reservation.
    let other = style_a(app.post_keyed(ORDERS, &body).await, 201).await["data"].clone();
    assert_eq!(other["number"], 2);
    assert_eq!(reserved_and_available(&app, &mate).await, ("3".to_owned(), "7".to_owned()));
    let other_id = other["id"].as_str().expect("id");
    let cancelled = style_a(act(&app, &format!("{ORDERS}/{other_id}/cancel")).await, 200).await["data"].clone();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "10".to_owned()));

    // Lists filter by status and customer.
    let open = json(app.get(&format!("{ORDERS}?status=cancelled")).await, 200).await;
    assert_eq!(items(&open).len(), 1);
    assert_eq!(items(&open)[0]["id"], other["id"]);
    let all = json(app.get(&format!("{ORDERS}?customer_id={ana}&created_from={}", today())).await, 200).await;
    assert_eq!(items(&all).len(), 2);
    let bad = error(app.get(&format!("{ORDERS}?fulfillment_status=lost")).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&bad), ["fulfillment_status"]);
}

#[sqlx::test(migrations = "../schema")]
async fn bad_orders_are_refused_and_write_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 1).await;
    let unknown = json!({ "customer_id": ana, "colour": "red", "total": 1,
        "lines": [{ "product_id": mate, "quantity": 1, "unit_price": 1, "delivered": 1 }] });
    let refused = error(app.post_keyed(ORDERS, &unknown).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["colour", "total", "lines[0].delivered"]);
    let foreign = app.foreign("/api/v1/customers", "Ajena").await;
    let missing = json!({ "customer_id": foreign, "assigned_warehouse_id": Uuid::now_v7(),
        "lines": [{ "product_id": Uuid::now_v7(), "quantity": 1, "unit_price": 1 }] });
    let not_found = error(app.post_keyed(ORDERS, &missing).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&not_found), ["customer_id", "assigned_warehouse_id", "lines[0].product_id"]);
    // Ours but inactive: a closed warehouse and a discontinued product are unknown to an order.
    let (shut, off) = inactive(&app).await;
    let closed = json!({ "customer_id": ana, "assigned_warehouse_id": shut,
        "lines": [{ "product_id": off, "quantity": 1, "unit_price": 1 }] });
    let not_found = error(app.post_keyed(ORDERS, &closed).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&not_found), ["assigned_warehouse_id", "lines[0].product_id"]);
    app.negative_stock("block").await;
    let short = json!({ "customer_id": ana, "assigned_warehouse_id": main, "reservation": { "enabled": true },
        "lines": [{ "product_id": mate, "quantity": 2, "unit_price": 1 }] });
    let business = error(app.post_keyed(ORDERS, &short).await, 422, "business_error").await;
    assert_eq!(business["error"]["code"], "INSUFFICIENT_STOCK");
    let orders: i64 =
        sqlx::query_scalar("select count(*) from events where stream_type in ('order', 'stock_reservation')")
            .fetch_one(&app.pool)
            .await
            .expect("count");
    assert_eq!(orders, 0, "nothing written");
    let numbered: Option<i64> = sqlx::query_scalar("select last from document_numbers where series = 'order'")
        .fetch_optional(&app.pool)
        .await
        .expect("numbers");
    assert_eq!(numbered, None, "no number was spent");
    error(app.get(&format!("{ORDERS}/{}", Uuid::now_v7())).await, 404, "invalid_request_error").await;
}

/// A kept line of an order with VAT-inclusive prices takes a new rate at the net price sent, and keeps
/// its rate when the edit omits it, whatever its product's rate is now.
#[sqlx::test(migrations = "../schema")]
async fn a_kept_line_changes_its_rate_only_when_the_edit_names_one(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let quote = json!({ "customer_id": ana,
        "items": [{ "product_id": mate, "quantity": 1, "unit_price": 12100, "warehouse_id": main }] });
    let quote = style_a(app.post_keyed(QUOTES, &quote).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    for step in ["send", "accept"] {
        style_a(act(&app, &format!("{QUOTES}/{quote}/{step}")).await, 200).await;
    }
    let order = style_a(act(&app, &format!("{QUOTES}/{quote}/convert")).await, 201).await["data"].clone();
    let id = order["id"].as_str().expect("id").to_owned();
    assert_eq!((order["lines"][0]["unit_price"].as_i64(), order["total"].as_i64()), (Some(10000), Some(12100)));

    // The net price read, at 10.5%: 10,000 net and 1,050 VAT.
    let line = |rate: Option<i64>| {
        let mut line = json!({ "id": order["lines"][0]["id"], "product_id": mate, "quantity": 1, "unit_price": 10000 });
        if let Some(rate) = rate {
            line["tax_rate_id"] = json!(rate);
        }
        line
    };
    let edit = json!({ "lines": [line(Some(4))], "assigned_warehouse_id": main, "expected_updated_at": order["updated_at"] });
    let key = Uuid::now_v7().to_string();
    let edited = style_a(patch(&app, &id, Some(&key), &edit).await, 200).await["data"].clone();
    // Its replay answers the same version: the one a next edit sends.
    let replayed = style_a(patch(&app, &id, Some(&key), &edit).await, 200).await["data"].clone();
    assert_eq!(replayed["idempotent_replay"], true);
    assert_eq!(replayed["updated_at"], edited["updated_at"]);
    assert_eq!(edited["lines"][0]["tax_rate_id"], 4);
    assert_eq!(edited["lines"][0]["unit_price"], 10000);
    assert_eq!((edited["tax_amount"].as_i64(), edited["total"].as_i64()), (Some(1050), Some(11050)));

    // The rate omitted: the line keeps 10.5% though its product is at 21%.
    let edit = json!({ "lines": [line(None)], "assigned_warehouse_id": main, "expected_updated_at": replayed["updated_at"] });
    let kept = style_a(patch(&app, &id, Some(&Uuid::now_v7().to_string()), &edit).await, 200).await["data"].clone();
    assert_eq!(kept["lines"][0]["tax_rate_id"], 4);
    assert_eq!((kept["tax_amount"].as_i64(), kept["total"].as_i64()), (Some(1050), Some(11050)));
}

/// What the inventory read shows reserved of `product` in `warehouse`.
async fn reserved_in(app: &TestApp, product: &str, warehouse: &str) -> String {
    let path = format!("/api/v1/inventory?product_id={product}&warehouse_id={warehouse}");
    let body = style_a(app.get(&path).await, 200).await;
    let level =
        items(&body).into_iter().next().unwrap_or_else(|| panic!("no level of {product} in {warehouse}: {body}"));
    level["reserved"].as_str().expect("reserved").to_owned()
}

/// The warehouse each line of `order` leaves from, as read.
fn line_warehouses(order: &Value) -> Vec<String> {
    let lines = order["lines"].as_array().expect("lines");
    lines.iter().map(|l| l["warehouse_id"].as_str().expect("a warehouse").to_owned()).collect()
}

/// A structural edit keeping the order's `assigned_warehouse_id` leaves each kept line in the warehouse
/// it had, and what it holds there (a converted quote's line may leave from another than the order's),
/// and a new line leaves from the order's; an edit naming another warehouse takes every line's pending
/// work there. The edit moved every line, and its reservation, to the order's warehouse whatever it named.
#[sqlx::test(migrations = "../schema")]
async fn a_kept_line_keeps_its_warehouse_unless_the_edit_names_another(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let north = json(app.post(WAREHOUSES, &json!({ "name": "Depósito Norte" })).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let ana = customer(&app, "Ana").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let termo = stocked_product(&app, "TERMO", &north, 10).await;
    let quote = json!({ "customer_id": ana, "reservation": { "enabled": true, "reserved_through_date": today() },
        "items": [{ "product_id": mate, "quantity": 2, "unit_price": 12100, "warehouse_id": main },
                  { "product_id": termo, "quantity": 3, "unit_price": 12100, "warehouse_id": north }] });
    let quote = style_a(app.post_keyed(QUOTES, &quote).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
    let order = style_a(act(&app, &format!("{QUOTES}/{quote}/convert")).await, 201).await["data"].clone();
    let id = order["id"].as_str().expect("id").to_owned();
    assert_eq!(order["assigned_warehouse_id"], main.as_str(), "the first line's");
    assert_eq!(line_warehouses(&order), [main.clone(), north.clone()]);
    assert_eq!(order["lines"][1]["reserved"], "3");
    let (mates, termos) = (order["lines"][0]["id"].clone(), order["lines"][1]["id"].clone());

    // The order's own warehouse: the termos stay in Norte with what they hold, the new line leaves
    // from the order's.
    let edit = json!({ "assigned_warehouse_id": main, "expected_updated_at": order["updated_at"],
        "lines": [{ "id": mates, "product_id": mate, "quantity": 2, "unit_price": 10000 },
                  { "id": termos, "product_id": termo, "quantity": 4, "unit_price": 10000 },
                  { "product_id": mate, "quantity": 1, "unit_price": 10000 }] });
    let kept = style_a(patch(&app, &id, Some(&Uuid::now_v7().to_string()), &edit).await, 200).await["data"].clone();
    assert_eq!(line_warehouses(&kept), [main.clone(), north.clone(), main.clone()]);
    assert_eq!(kept["lines"][1]["reserved"], "4");
    assert_eq!(reserved_in(&app, &termo, &north).await, "4");
    assert_eq!(reserved_in(&app, &mate, &main).await, "3");
    let read = style_a(app.get(&format!("{ORDERS}/{id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"], kept["lines"]);

    // Another warehouse takes every line's pending work, and what it holds, with it.
    let edit = json!({ "assigned_warehouse_id": north, "expected_updated_at": kept["updated_at"],
        "lines": [{ "id": mates, "product_id": mate, "quantity": 2, "unit_price": 10000 },
                  { "id": termos, "product_id": termo, "quantity": 4, "unit_price": 10000 },
                  { "id": kept["lines"][2]["id"], "product_id": mate, "quantity": 1, "unit_price": 10000 }] });
    let moved = style_a(patch(&app, &id, Some(&Uuid::now_v7().to_string()), &edit).await, 200).await["data"].clone();
    assert_eq!(moved["assigned_warehouse_id"], north.as_str());
    assert_eq!(line_warehouses(&moved), [north.clone(), north.clone(), north.clone()]);
    let lines = moved["lines"].as_array().expect("lines");
    let held: Vec<&str> = lines.iter().filter_map(|l| l["reserved"].as_str()).collect();
    assert_eq!(held, ["2", "4", "1"], "held in Norte, which has no mate: the policy allows it");
    assert_eq!(reserved_in(&app, &mate, &main).await, "0");
    assert_eq!(reserved_in(&app, &termo, &north).await, "4");
}

/// Brings an order reserving through today to the next day: its state again, reserving through
/// yesterday, and its reservation held through yesterday, appended as its commands append them (what
/// an order made yesterday leaves); then the sweeper records the expiry.
async fn reserved_through_yesterday(app: &TestApp, id: &str) {
    let id: Uuid = id.parse().expect("an order id");
    let (day, yesterday) = (today_date(), today_date().previous_day().expect("a date"));
    let metadata = Metadata::system("test");
    let mut tx = app.pool.begin().await.expect("tx");
    let (order, version, _) = commands::orders::load_order(&mut tx, app.org_id, id).await.expect("loaded");
    let mut order = order.expect("the order");
    order.reservation = Some(OrderReservation { enabled: true, reserved_through_date: Some(yesterday) });
    let lines: Vec<(ReservedLine, String)> = order
        .lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let (variant_id, warehouse_id) = (l.variant_id?, order.assigned_warehouse_id?);
            Some((ReservedLine { variant_id, warehouse_id, quantity: l.quantity }, format!("lines[{i}].quantity")))
        })
        .collect();
    let wanted = Wanted { reserved_through: yesterday, lines };
    let owner = ReservationOwner { kind: "order".into(), id };
    // Held yesterday, when that date had not passed.
    let held = reservations::set(&mut tx, app.org_id, &owner, Some(&wanted), yesterday, NegativeStock::Allow, &metadata)
        .await
        .expect("held");
    let stream = StreamRef {
        org_id: app.org_id,
        stream_type: OrderEvent::STREAM_TYPE,
        stream_id: id,
        expected_version: version,
    };
    let updated = OrderEvent::OrderUpdated(Box::new(order)).to_new_event().expect("an event");
    let mut requests = vec![AppendRequest { stream, events: vec![updated], metadata }];
    requests.extend(held.append);
    events::store::append_many(&mut tx, &requests).await.expect("appended");
    tx.commit().await.expect("commit");
    // The workers' own sweeper may get there first.
    reservations::expire_due(&app.pool, day, 100).await.expect("swept");
    let last: Option<String> = sqlx::query_scalar(
        "select event_type from events where stream_type = 'stock_reservation' and stream_id = $1
         order by position desc limit 1",
    )
    .bind(reservations::reservation_id(id))
    .fetch_optional(&app.pool)
    .await
    .expect("events");
    assert_eq!(last.as_deref(), Some("ReservationExpired"));
}

/// Ana's order for 3 of `mate`'s 10 in `main`, reserving through today, brought to the next day: its
/// reservation expired and the inventory read showing all 10 free again. The order as created.
async fn expired_order(app: &TestApp, main: &str, mate: &str) -> Value {
    let ana = customer(app, "Ana").await;
    let body = json!({ "customer_id": ana, "assigned_warehouse_id": main,
        "reservation": { "enabled": true, "reserved_through_date": today() },
        "lines": [{ "product_id": mate, "quantity": 3, "unit_price": 1000 }] });
    let order = style_a(app.post_keyed(ORDERS, &body).await, 201).await["data"].clone();
    assert_eq!(reserved_and_available(app, mate).await, ("3".to_owned(), "7".to_owned()));
    reserved_through_yesterday(app, order["id"].as_str().expect("id")).await;
    let free = ("0".to_owned(), "10".to_owned());
    eventually(Duration::from_secs(15), "the expiry in the inventory read", || async {
        (reserved_and_available(app, mate).await == free).then_some(())
    })
    .await;
    order
}

/// The reservation events and the reservation rows written so far.
async fn reservations_written(app: &TestApp) -> (i64, i64) {
    sqlx::query_as(
        "select (select count(*) from events where stream_type = 'stock_reservation'),
                (select count(*) from stock_reservations)",
    )
    .fetch_one(&app.pool)
    .await
    .expect("counts")
}

/// An edit of an order whose reservation passed its `reserved_through_date` (its expiry recorded) leaves
/// it ended: the order changes, and nothing is held again nor recorded through a past date. The edit
/// reserved the lines anew through that past date: a reservation that never counted, which the sweeper
/// then expired a second time.
#[sqlx::test(migrations = "../schema")]
async fn an_edit_leaves_an_expired_reservation_ended(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let order = expired_order(&app, &main, &mate).await;
    let id = order["id"].as_str().expect("id").to_owned();
    let aged = eventually(Duration::from_secs(15), "the order reserving through yesterday", || async {
        let read = style_a(app.get(&format!("{ORDERS}/{id}")).await, 200).await["data"].clone();
        (read["updated_at"] != order["updated_at"]).then_some(read)
    })
    .await;
    assert_eq!(aged["lines"][0]["reserved"], "0");
    let before = reservations_written(&app).await;
    let edit = json!({ "assigned_warehouse_id": main, "expected_updated_at": aged["updated_at"],
        "lines": [{ "id": aged["lines"][0]["id"], "product_id": mate, "quantity": 4, "unit_price": 1000 }] });
    let edited = style_a(patch(&app, &id, Some(&Uuid::now_v7().to_string()), &edit).await, 200).await["data"].clone();
    let line = &edited["lines"][0];
    assert_eq!((line["quantity"].as_str(), line["reserved"].as_str()), (Some("4"), Some("0")));
    assert_eq!(edited["status"], "open");
    assert_eq!(reservations_written(&app).await, before, "nothing held again, nor recorded through a past date");
    assert_eq!(before.1, 0, "no reservation rows");
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "10".to_owned()));
    let read = style_a(app.get(&format!("{ORDERS}/{id}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"][0]["quantity"], "4");
}

/// A delivery of part of an order whose reservation passed its date takes the goods from the shelf and
/// holds nothing again: it set the rest aside anew through that past date, a reservation that never
/// counted and that the sweeper expired a second time.
#[sqlx::test(migrations = "../schema")]
async fn a_delivery_after_the_reservation_expired_holds_nothing_again(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let order = expired_order(&app, &main, &mate).await;
    let id = order["id"].as_str().expect("id").to_owned();
    let before = reservations_written(&app).await;

    let part = json!({ "origin": { "type": "order", "order_id": id }, "point_of_sale_id": pos,
        "items": [{ "order_line_id": order["lines"][0]["id"], "quantity": 1 }] });
    style_a(app.post_keyed(NOTES, &part).await, 201).await;
    assert_eq!(reservations_written(&app).await, before, "nothing held again, nor recorded through a past date");
    assert_eq!(before.1, 0, "no reservation rows");
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "9".to_owned()));
    let read = style_a(app.get(&format!("{ORDERS}/{id}")).await, 200).await["data"].clone();
    assert_eq!((read["lines"][0]["delivered"].as_str(), read["lines"][0]["reserved"].as_str()), (Some("1"), Some("0")));
}

/// A combo holds no stock: a line naming one reserves its components (each one's quantity in the combo
/// times the line's), as a sale takes them; the hold moves with the quote to its order, shrinks as the
/// order is delivered and ends with it, and a deleted quote frees it.
#[sqlx::test(migrations = "../schema")]
async fn a_combo_line_reserves_its_components_from_the_quote_to_the_order(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (main, pos) = (main_warehouse(&app).await, point_of_sale(&app).await);
    let ana = customer(&app, "Ana Pérez").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    let bombilla = stocked_product(&app, "BOMBILLA", &main, 10).await;
    let kit = json!({ "name": "Kit matero", "sku": "KIT", "price": 30000, "productType": "combo",
        "components": [{ "productId": mate, "quantity": 2 }, { "productId": bombilla, "quantity": "0.5" }] });
    let combo =
        json(app.post_keyed("/api/v1/products", &kit).await, 201).await["data"]["id"].as_str().expect("id").to_owned();

    // A combo is held in whole units, as it is sold.
    let mut half = quote_body(&ana, &combo, &main, 1);
    half["items"][0]["quantity"] = json!(1.5);
    let refused = error(app.post_keyed(QUOTES, &half).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[0].quantity"]);

    let quote = style_a(app.post_keyed(QUOTES, &quote_body(&ana, &combo, &main, 3)).await, 201).await["data"].clone();
    let id = quote["id"].as_str().expect("id").to_owned();
    assert_eq!(quote["reservation"]["lines"].as_array().map(Vec::len), Some(2), "{quote}");
    assert_eq!(reserved_and_available(&app, &mate).await, ("6".to_owned(), "4".to_owned()), "2 × 3");
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("1.5".to_owned(), "8.5".to_owned()), "0.5 × 3");
    let inventory = style_a(app.get(&format!("/api/v1/inventory?product_id={combo}")).await, 200).await;
    assert!(items(&inventory).is_empty(), "a combo holds no stock of its own");

    // Converting moves the components' hold to the order: none freed, none held twice.
    let order = style_a(act(&app, &format!("{QUOTES}/{id}/convert")).await, 201).await["data"].clone();
    let order_id = order["id"].as_str().expect("id").to_owned();
    assert_eq!(reserved_and_available(&app, &mate).await, ("6".to_owned(), "4".to_owned()));
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("1.5".to_owned(), "8.5".to_owned()));
    let held: Vec<(String, i64)> = sqlx::query_as(
        "select r.kind, s.quantity from stock_reservations s
         join (select distinct stream_id, data->'owner'->>'kind' as kind from events
               where stream_type = 'stock_reservation' and data->'owner' is not null) r on r.stream_id = s.reservation_id
         order by s.quantity",
    )
    .fetch_all(&app.pool)
    .await
    .expect("rows");
    assert_eq!(held, [("order".to_owned(), 1500), ("order".to_owned(), 6000)], "the components, held by the order");

    // Delivering one kit takes its components and holds what is left of them.
    let one = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos,
        "items": [{ "order_line_id": order["lines"][0]["id"], "quantity": 1 }] });
    style_a(app.post_keyed("/api/v1/delivery-notes", &one).await, 201).await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("4".to_owned(), "4".to_owned()), "8 on hand, 2 × 2 held");
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("1".to_owned(), "8.5".to_owned()), "9.5 on hand");

    // Completing the order releases the rest.
    style_a(act(&app, &format!("{ORDERS}/{order_id}/complete")).await, 200).await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "8".to_owned()));
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("0".to_owned(), "9.5".to_owned()));

    // A deleted quote frees its components.
    let other = style_a(app.post_keyed(QUOTES, &quote_body(&ana, &combo, &main, 1)).await, 201).await["data"].clone();
    assert_eq!(reserved_and_available(&app, &mate).await, ("2".to_owned(), "6".to_owned()));
    let path = format!("{QUOTES}/{}", other["id"].as_str().expect("id"));
    let gone = style_a(app.keyed(Method::DELETE, &path, &Uuid::now_v7().to_string(), None).await, 200).await;
    assert_eq!(gone["data"]["reservation_released"], true);
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "8".to_owned()));
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("0".to_owned(), "9.5".to_owned()));
}

/// A combo reserves its components: one deactivated since the combo listed it refuses a line naming the
/// combo as a line naming an inactive product is refused (404 `not_found` naming the line's product), in
/// a new order and as an edit's new line, and nothing is written or reserved; a line that already named
/// the combo is kept, as one naming an inactive product is. Active again, the combo is ordered.
#[sqlx::test(migrations = "../schema")]
async fn an_order_of_a_combo_whose_component_was_deactivated_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana Pérez").await;
    let (mate, bombilla, kit) = mate_kit(&app, &main).await;
    let order = |lines: Value| {
        json!({ "customer_id": ana, "assigned_warehouse_id": main, "reservation": { "enabled": true },
            "lines": lines })
    };
    let mate_line = json!({ "product_id": mate, "quantity": 1, "unit_price": 10000 });
    let kit_line = json!({ "product_id": kit, "quantity": 1, "unit_price": 25000 });
    // Before the bombilla is deactivated: an order of a mate, and one of a kit (two mates and a bombilla).
    let of_mate = style_a(app.post_keyed(ORDERS, &order(json!([mate_line]))).await, 201).await["data"].clone();
    let of_kit = style_a(app.post_keyed(ORDERS, &order(json!([kit_line]))).await, 201).await["data"].clone();
    let (mate_order, kit_order) = (of_mate["id"].as_str().expect("id"), of_kit["id"].as_str().expect("id"));
    let retired = json!({ "name": "Producto BOMBILLA", "sku": "BOMBILLA", "price": 12100, "isActive": false });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &retired).await, 200).await;
    let events = app.event_count().await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("3".to_owned(), "7".to_owned()), "1 + 2");
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("1".to_owned(), "9".to_owned()));

    // Ordered directly, the inactive product is refused, naming its line.
    let direct = json!([{ "product_id": bombilla, "quantity": 1, "unit_price": 10000 }]);
    let refused = error(app.post_keyed(ORDERS, &order(direct)).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["lines[0].product_id"]);
    // So is the combo that holds it, on the combo's line, in a new order and added by an edit; the mate's
    // line is fine.
    let created = app.post_keyed(ORDERS, &order(json!([mate_line, kit_line]))).await;
    let kept_mate = json!({ "id": of_mate["lines"][0]["id"], "product_id": mate, "quantity": 1, "unit_price": 10000 });
    let add_kit = json!({ "lines": [kept_mate, kit_line], "assigned_warehouse_id": main,
        "expected_updated_at": of_mate["updated_at"] });
    let edited = patch(&app, mate_order, Some(&Uuid::now_v7().to_string()), &add_kit).await;
    for (what, response) in [("created", created), ("edited", edited)] {
        let refused = error(response, 404, "invalid_request_error").await;
        assert_eq!(detail_fields(&refused), ["lines[1].product_id"], "{what}");
        let detail = &refused["error"]["details"][0];
        assert_eq!(detail["code"], "not_found", "{what}: {refused}");
        assert!(detail["message"].as_str().is_some_and(|m| m.contains(&bombilla)), "names the component: {refused}");
    }
    assert_eq!(app.event_count().await, events, "nothing was written");
    assert_eq!(reserved_and_available(&app, &mate).await, ("3".to_owned(), "7".to_owned()), "nothing more held");
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("1".to_owned(), "9".to_owned()));
    let read = style_a(app.get(&format!("{ORDERS}/{mate_order}")).await, 200).await["data"].clone();
    assert_eq!(read["lines"].as_array().map(Vec::len), Some(1), "the order keeps its one line: {read}");

    // The order that already named the kit keeps its line through an edit, holding what it held.
    let kept_kit = json!({ "id": of_kit["lines"][0]["id"], "product_id": kit, "quantity": 1, "unit_price": 25000 });
    let keep = json!({ "lines": [kept_kit], "assigned_warehouse_id": main, "delivery_method": "retira",
        "expected_updated_at": of_kit["updated_at"] });
    let kept = style_a(patch(&app, kit_order, Some(&Uuid::now_v7().to_string()), &keep).await, 200).await;
    assert_eq!(kept["data"]["delivery_method"], "retira");
    assert_eq!(reserved_and_available(&app, &mate).await, ("3".to_owned(), "7".to_owned()));
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("1".to_owned(), "9".to_owned()));

    // Active again, the edit adds the kit: two more mates and a bombilla held.
    let active = json!({ "name": "Producto BOMBILLA", "sku": "BOMBILLA", "price": 12100 });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &active).await, 200).await;
    style_a(patch(&app, mate_order, Some(&Uuid::now_v7().to_string()), &add_kit).await, 200).await;
    assert_eq!(reserved_and_available(&app, &mate).await, ("5".to_owned(), "5".to_owned()));
    assert_eq!(reserved_and_available(&app, &bombilla).await, ("2".to_owned(), "8".to_owned()));
}

/// A credit note un-billing an order its lines completed (all delivered and billed) opens it again, as
/// deleting its delivery note does, to be billed again; one completed by hand stays closed. Left
/// completed, the order counted as done while part of it was billed no more, and no sale could bill it
/// again.
#[sqlx::test(migrations = "../schema")]
async fn a_credit_note_unbilling_an_order_its_lines_completed_opens_it_again(pool: PgPool) {
    let AnasOrder { app, main, pos, ana, mate, order_id, line, today } = anas_order(pool).await;
    let sale = |voucher: i64, order: &str, line: &Value, quantity: i64| {
        json!({ "voucherType": voucher, "pointOfSaleId": pos, "invoiceDate": today, "customerId": ana,
            "invoice": false, "orderId": order,
            "items": [{ "productId": mate, "quantity": quantity, "unitPrice": 1210, "orderLineId": line }] })
    };

    // Delivered and billed in full: completed by its lines.
    let whole = json!({ "origin": { "type": "order", "order_id": order_id }, "point_of_sale_id": pos });
    style_a(app.post_keyed(NOTES, &whole).await, 201).await;
    let sold = json(app.post_keyed(SALES, &sale(6, &order_id, &line, 5)).await, 201).await["data"].clone();
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["status"].as_str(), read["fulfillment_status"].as_str()), (Some("completed"), Some("fulfilled")));

    // A credit note un-bills 2: the order is open again, its goods still delivered (none come back, none
    // are held).
    let mut credit = sale(8, &order_id, &line, 2);
    credit["associatedSaleId"] = sold["id"].clone();
    let credited = json(app.post_keyed(SALES, &credit).await, 201).await["data"].clone();
    assert_eq!(credited["documentKind"], "credit_note");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["status"].as_str(), read["fulfillment_status"].as_str()), (Some("open"), Some("fulfilled")));
    assert_eq!(read["lines"][0]["billed"], "3");
    assert_eq!(reserved_and_available(&app, &mate).await, ("0".to_owned(), "5".to_owned()));

    // Billed again in full, it completes again.
    json(app.post_keyed(SALES, &sale(6, &order_id, &line, 2)).await, 201).await;
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["status"].as_str(), read["lines"][0]["billed"].as_str()), (Some("completed"), Some("5")));

    // One completed by hand stays closed: its lines did not complete it.
    let body = json!({ "customer_id": ana, "assigned_warehouse_id": main,
        "lines": [{ "product_id": mate, "quantity": 3, "unit_price": 1000 }] });
    let other = style_a(app.post_keyed(ORDERS, &body).await, 201).await["data"].clone();
    let (other_id, other_line) = (other["id"].as_str().expect("id").to_owned(), other["lines"][0]["id"].clone());
    let billed = json(app.post_keyed(SALES, &sale(6, &other_id, &other_line, 1)).await, 201).await["data"].clone();
    style_a(act(&app, &format!("{ORDERS}/{other_id}/complete")).await, 200).await;
    let mut credit = sale(8, &other_id, &other_line, 1);
    credit["associatedSaleId"] = billed["id"].clone();
    json(app.post_keyed(SALES, &credit).await, 201).await;
    let read = style_a(app.get(&format!("{ORDERS}/{other_id}")).await, 200).await["data"].clone();
    assert_eq!((read["status"].as_str(), read["lines"][0]["billed"].as_str()), (Some("completed"), Some("0")));
}

/// A credit note un-bills of an order only what the sale it corrects billed: correcting a sale that
/// billed no order, naming a line that sale did not bill, or more of a line than it billed (the note's
/// earlier items counted) is 422 `PRECONDITION_FAILED` (`ASSOCIATED_SALE_ORDER`, naming `orderId` or the
/// item) with nothing written. Accepted, the note took back what other sales billed, and the order
/// counted less billed than its sales bill.
#[sqlx::test(migrations = "../schema")]
async fn a_credit_note_unbills_only_what_the_sale_it_corrects_billed(pool: PgPool) {
    let AnasOrder { app, main, pos, ana, today, .. } = anas_order(pool).await;
    let yerba = stocked_product(&app, "YERBA", &main, 10).await;
    let bombilla = stocked_product(&app, "BOMBILLA", &main, 10).await;
    let body = json!({ "customer_id": ana, "assigned_warehouse_id": main,
        "lines": [{ "product_id": yerba, "quantity": 5, "unit_price": 1000 },
                  { "product_id": bombilla, "quantity": 5, "unit_price": 1000 }] });
    let order = style_a(app.post_keyed(ORDERS, &body).await, 201).await["data"].clone();
    let order_id = order["id"].as_str().expect("id").to_owned();
    let (yerbas, bombillas) = (order["lines"][0]["id"].clone(), order["lines"][1]["id"].clone());
    let item = |product: &str, quantity: i64, line: &Value| {
        json!({ "productId": product, "quantity": quantity, "unitPrice": 1210, "orderLineId": line })
    };
    let sale = |voucher: i64, items: Value| {
        json!({ "voucherType": voucher, "pointOfSaleId": pos, "invoiceDate": today, "customerId": ana,
            "invoice": false, "orderId": order_id, "items": items })
    };
    let credit = |corrected: &Value, items: Value| {
        let mut note = sale(8, items);
        note["associatedSaleId"] = corrected.clone();
        note
    };

    // Two sales bill the order: 2 of its yerba, then 2 more and 2 of its bombilla. A third sale of Ana's
    // bills no order.
    let first = json(app.post_keyed(SALES, &sale(6, json!([item(&yerba, 2, &yerbas)]))).await, 201).await;
    let both = json!([item(&yerba, 2, &yerbas), item(&bombilla, 2, &bombillas)]);
    let second = json(app.post_keyed(SALES, &sale(6, both)).await, 201).await;
    let (first, second) = (first["data"]["id"].clone(), second["data"]["id"].clone());
    let plain = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today, "customerId": ana,
        "invoice": false, "items": [{ "productId": yerba, "quantity": 1, "unitPrice": 1210 }] });
    let unordered = json(app.post_keyed(SALES, &plain).await, 201).await["data"]["id"].clone();

    let levels = (reserved_and_available(&app, &yerba).await, reserved_and_available(&app, &bombilla).await);
    let before = app.event_count().await;
    for (corrected, items, field, available) in [
        (&unordered, json!([item(&yerba, 1, &yerbas)]), "orderId", Value::Null),
        (&first, json!([item(&bombilla, 1, &bombillas)]), "items[0].orderLineId", json!("0")),
        (&first, json!([item(&yerba, 3, &yerbas)]), "items[0].quantity", json!("2")),
        (&second, json!([item(&yerba, 1, &yerbas), item(&yerba, 2, &yerbas)]), "items[1].quantity", json!("1")),
    ] {
        let refused = error(app.post_keyed(SALES, &credit(corrected, items)).await, 422, "business_error").await;
        assert_eq!(refused["error"]["code"], "PRECONDITION_FAILED", "{field}: {refused}");
        assert_eq!(detail_fields(&refused), [field]);
        assert_eq!(refused["error"]["details"][0]["code"], "ASSOCIATED_SALE_ORDER");
        assert_eq!(refused["error"]["details"][0]["metadata"]["available_quantity"], available, "{field}");
    }
    assert_eq!(app.event_count().await, before, "nothing written");
    let after = (reserved_and_available(&app, &yerba).await, reserved_and_available(&app, &bombilla).await);
    assert_eq!(after, levels, "no stock came back");
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["lines"][0]["billed"].as_str(), read["lines"][1]["billed"].as_str()), (Some("4"), Some("2")));
    assert_eq!(read["status"], "open");

    // What the corrected sale billed is credited: the first sale's 2 of yerba.
    json(app.post_keyed(SALES, &credit(&first, json!([item(&yerba, 2, &yerbas)]))).await, 201).await;
    let read = style_a(app.get(&format!("{ORDERS}/{order_id}")).await, 200).await["data"].clone();
    assert_eq!((read["lines"][0]["billed"].as_str(), read["lines"][1]["billed"].as_str()), (Some("2"), Some("2")));
}
