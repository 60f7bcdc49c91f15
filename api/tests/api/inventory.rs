//! Inventory: stock levels, the ledger, stock movements under both negative-stock policies (also under
//! concurrency), transfers with combos, reservations, and the rebuild of the stock write model.

use crate::helpers::{
    TestApp, WAREHOUSES, detail_fields, error, eventually, ids, items, json, refused, seeded, style_a,
};
use commands::inventory::reservations::{self, Wanted};
use commands::inventory::{NegativeStock, rebuild};
use events::Metadata;
use events::catalogue::{ReservationOwner, ReservedLine, ar_date};
use events::domain::Quantity;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

const MOVEMENTS: &str = "/api/v1/stock-movements";
const TRANSFERS: &str = "/api/v1/stock-transfers";

async fn default_warehouse(app: &TestApp) -> String {
    seeded(app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned()
}

async fn warehouse(app: &TestApp, name: &str) -> String {
    json(app.post(WAREHOUSES, &json!({ "name": name })).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

/// A single product with opening stock in `warehouse` (none when `stock` is None).
async fn product(app: &TestApp, sku: &str, stock: Option<(&str, Value)>, extra: Value) -> String {
    let mut body = json!({ "name": format!("Producto {sku}"), "sku": sku, "price": 1000 });
    if let Some((warehouse, quantity)) = stock {
        body["warehouseStocks"] = json!([{ "warehouseId": warehouse, "quantity": quantity }]);
    }
    for (key, value) in extra.as_object().into_iter().flatten() {
        body[key] = value.clone();
    }
    json(app.post_keyed("/api/v1/products", &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned()
}

/// The inventory row of a variant in a warehouse.
async fn level(app: &TestApp, product: &str, warehouse: &str) -> Value {
    let body =
        style_a(app.get(&format!("/api/v1/inventory?product_id={product}&warehouse_id={warehouse}")).await, 200).await;
    items(&body).into_iter().next().unwrap_or_else(|| panic!("no level of {product} in {warehouse}: {body}"))
}

async fn on_hand(app: &TestApp, product: &str, warehouse: &str) -> String {
    level(app, product, warehouse).await["on_hand"].as_str().expect("on_hand").to_owned()
}

fn movement(kind: &str, warehouse: &str, lines: Value) -> Value {
    json!({ "type": kind, "warehouse_id": warehouse, "lines": lines, "reason": "prueba" })
}

#[sqlx::test(migrations = "../schema")]
async fn movements_change_stock_and_the_ledger_names_each_change(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let yerba = product(&app, "YERBA", Some((&main, json!("2.5"))), json!({ "stockMinimum": 5 })).await;

    let row = level(&app, &yerba, &main).await;
    assert_eq!(row["object"], "inventory_level");
    assert_eq!(
        (row["on_hand"].as_str(), row["reserved"].as_str(), row["available"].as_str()),
        (Some("2.5"), Some("0"), Some("2.5"))
    );
    assert_eq!(row["sku"], "YERBA");
    assert_eq!(row["warehouse"], json!({ "id": main, "name": "Depósito principal" }));
    assert_eq!((row["stock_minimum"].as_str(), row["below_minimum"].as_bool()), (Some("5"), Some(true)));

    let key = Uuid::now_v7().to_string();
    let body = movement("in", &main, json!([{ "product_id": yerba, "quantity": 1.25 }]));
    let first = style_a(app.post_key(MOVEMENTS, &key, &body).await, 201).await;
    let data = &first["data"];
    assert_eq!(data["object"], "stock_movement");
    assert_eq!(data["type"], "in");
    assert_eq!(data["idempotent_replay"], false);
    assert_eq!(data["warnings"], json!([]));
    assert_eq!(
        data["lines"],
        json!([{ "product_id": yerba, "quantity": "1.25", "change": "1.25", "on_hand": "3.75" }])
    );
    let events = app.event_count().await;
    let replay = style_a(app.post_key(MOVEMENTS, &key, &body).await, 201).await;
    assert_eq!(replay["data"]["id"], data["id"]);
    assert_eq!(replay["data"]["idempotent_replay"], true);
    assert_eq!(app.event_count().await, events, "a replay writes nothing");
    let other = movement("in", &main, json!([{ "product_id": yerba, "quantity": 2 }]));
    let conflict = error(app.post_key(MOVEMENTS, &key, &other).await, 409, "idempotency_error").await;
    assert_eq!(conflict["error"]["code"], "IDEMPOTENCY_CONFLICT");
    let missing = error(app.post(MOVEMENTS, &body).await, 400, "idempotency_error").await;
    assert_eq!(detail_fields(&missing), ["Idempotency-Key"]);

    let out = movement("out", &main, json!([{ "product_id": yerba, "quantity": "0.75" }]));
    style_a(app.post_keyed(MOVEMENTS, &out).await, 201).await;
    let count = movement("count", &main, json!([{ "product_id": yerba, "quantity": 10 }]));
    let counted = style_a(app.post_keyed(MOVEMENTS, &count).await, 201).await;
    assert_eq!(counted["data"]["lines"][0]["change"], "7");
    let row = level(&app, &yerba, &main).await;
    assert_eq!((row["on_hand"].as_str(), row["below_minimum"].as_bool()), (Some("10"), Some(false)));

    // The organization allows negative stock by default: a shortfall is a warning and goes through.
    let short = movement("out", &main, json!([{ "product_id": yerba, "quantity": 12 }]));
    let warned = style_a(app.post_keyed(MOVEMENTS, &short).await, 201).await;
    assert_eq!(
        warned["data"]["warnings"],
        json!([{ "product_id": yerba, "warehouse_id": main, "requested_quantity": "12", "available_quantity": "10" }])
    );
    assert_eq!(on_hand(&app, &yerba, &main).await, "-2");

    let ledger = style_a(app.get(&format!("/api/v1/inventory/movements?product_id={yerba}")).await, 200).await;
    let rows = items(&ledger);
    let summary: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["cause_type"].as_str().expect("cause"),
                r["quantity"].as_str().expect("q"),
                r["on_hand"].as_str().expect("on hand"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("opening_stock", "2.5", "2.5"),
            ("stock_movement", "1.25", "3.75"),
            ("stock_movement", "-0.75", "3"),
            ("stock_movement", "7", "10"),
            ("stock_movement", "-12", "-2"),
        ]
    );
    assert_eq!(rows[0]["cause_id"], yerba);
    assert_eq!(rows[1]["cause_id"], data["id"]);
    let today = ar_date(time::OffsetDateTime::now_utc()).to_string();
    assert_eq!(rows[1]["occurred_on"], today.as_str());
    let opening = style_a(app.get("/api/v1/inventory/movements?cause_type=opening_stock").await, 200).await;
    assert_eq!(items(&opening).len(), 1);
    let later = style_a(app.get("/api/v1/inventory/movements?date_from=2099-01-01").await, 200).await;
    assert!(items(&later).is_empty());
    let paged = style_a(app.get(&format!("/api/v1/inventory/movements?product_id={yerba}&limit=2")).await, 200).await;
    let cursor = paged["next_cursor"].as_str().expect("a second page");
    let second =
        style_a(app.get(&format!("/api/v1/inventory/movements?product_id={yerba}&limit=2&cursor={cursor}")).await, 200)
            .await;
    assert_eq!(items(&second)[0]["id"], rows[2]["id"]);
    let rebound = error(
        app.get(&format!("/api/v1/inventory/movements?limit=2&cursor={cursor}")).await,
        400,
        "invalid_request_error",
    )
    .await;
    assert!(detail_fields(&rebound).contains(&"cursor".to_owned()), "a cursor serves only its filters: {rebound}");
    let bad = error(
        app.get("/api/v1/inventory/movements?cause_type=gift&date_to=yesterday").await,
        400,
        "invalid_request_error",
    )
    .await;
    assert_eq!(detail_fields(&bad), ["date_to", "cause_type"]);

    let found = style_a(app.get("/api/v1/inventory?query=yerb&below_minimum=true").await, 200).await;
    assert_eq!(items(&found).len(), 1);
    let none = style_a(app.get("/api/v1/inventory?query=yerb&below_minimum=false").await, 200).await;
    assert!(items(&none).is_empty());
}

/// Appends on `conn`, as a stock command would, a manual movement bringing in each `(variant, quantity,
/// on_hand)` of `changes`; answers the movement's id and the position its event took.
async fn append_movement(
    conn: &mut sqlx::PgConnection,
    org_id: Uuid,
    warehouse: Uuid,
    changes: &[(Uuid, i64, i64)],
) -> (Uuid, i64) {
    use events::EventPayload;
    use events::catalogue::{StockChange, StockLine, StockMovementEvent, StockMovementRecorded};
    let units = |n: i64| Quantity::from_units(n).expect("a quantity");
    let event = StockMovementEvent::StockMovementRecorded(StockMovementRecorded {
        movement_type: "in".into(),
        warehouse_id: warehouse,
        reason: None,
        occurred_on: ar_date(time::OffsetDateTime::now_utc()),
        lines: changes
            .iter()
            .map(|(variant, quantity, _)| StockLine { variant_id: *variant, quantity: units(*quantity) })
            .collect(),
        changes: changes
            .iter()
            .map(|(variant, quantity, on_hand)| StockChange {
                variant_id: *variant,
                warehouse_id: warehouse,
                quantity: units(*quantity),
                on_hand: units(*on_hand),
            })
            .collect(),
    });
    let id = Uuid::now_v7();
    let stream = events::store::StreamRef {
        org_id,
        stream_type: StockMovementEvent::STREAM_TYPE,
        stream_id: id,
        expected_version: 0,
    };
    let new = event.to_new_event().expect("encodes");
    let appended = events::store::append(conn, stream, &[new], &Metadata::system("test")).await.expect("appended");
    (id, appended.key.position)
}

/// The whole ledger once it holds `count` rows (rows written outside the API reach it asynchronously).
async fn ledger_of(app: &TestApp, count: usize) -> Vec<Value> {
    eventually(Duration::from_secs(15), "the ledger's rows", || async move {
        let rows = items(&style_a(app.get("/api/v1/inventory/movements").await, 200).await);
        (rows.len() == count).then_some(rows)
    })
    .await
}

/// Positions are taken at insert, so a transaction can hold a lower position than one that commits, and
/// is folded, before it. The ledger lists its rows in the order they are folded (commit order), so a
/// client walking it by cursor while such a transaction is open finds its change on the next page.
/// (Before, the ledger was ordered and paged by position: the change that committed last sorted behind
/// the page already served, and the walk never saw it.)
#[sqlx::test(migrations = "../schema")]
async fn a_ledger_walked_by_cursor_misses_no_change_that_commits_late(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let a = product(&app, "A-1", Some((&main, json!(10))), json!({})).await;
    let b = product(&app, "B-1", Some((&main, json!(10))), json!({})).await;
    let (warehouse, a, b): (Uuid, Uuid, Uuid) =
        (main.parse().expect("id"), a.parse().expect("id"), b.parse().expect("id"));
    ledger_of(&app, 2).await;

    // The later position's transaction takes its id first: once it commits it is below the commit
    // horizon, and folded, although the earlier position's transaction is still open.
    let mut later = app.pool.begin().await.expect("a transaction");
    sqlx::query("select pg_current_xact_id()").execute(&mut *later).await.expect("a transaction id");
    let mut earlier = app.pool.begin().await.expect("a transaction");
    let (late, earlier_position) = append_movement(&mut earlier, app.org_id, warehouse, &[(a, 2, 13)]).await;
    let (_, later_position) = append_movement(&mut later, app.org_id, warehouse, &[(a, 1, 11), (b, 1, 11)]).await;
    assert!(earlier_position < later_position);
    later.commit().await.expect("the later position commits first");

    // A client's first page ends inside what has been folded; then the earlier position commits.
    ledger_of(&app, 4).await;
    let first = style_a(app.get("/api/v1/inventory/movements?limit=3").await, 200).await;
    let cursor = first["next_cursor"].as_str().expect("a second page").to_owned();
    earlier.commit().await.expect("the earlier position commits last");
    let all = ledger_of(&app, 5).await;

    let second = style_a(app.get(&format!("/api/v1/inventory/movements?limit=3&cursor={cursor}")).await, 200).await;
    assert_eq!(second["has_more"], false);
    let walked: Vec<Value> = items(&first).into_iter().chain(items(&second)).collect();
    assert_eq!(ids(&walked), ids(&all), "the walk shows every row once, in the ledger's order");
    let shown: Vec<(&str, &str)> = all
        .iter()
        .map(|r| (r["quantity"].as_str().expect("quantity"), r["on_hand"].as_str().expect("on hand")))
        .collect();
    assert_eq!(shown, [("10", "10"), ("10", "10"), ("1", "11"), ("1", "11"), ("2", "13")]);
    assert_eq!(all[4]["cause_id"], late.to_string(), "the change that committed last is listed last");
}

#[sqlx::test(migrations = "../schema")]
async fn a_blocking_policy_never_oversells_under_concurrency(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let item = product(&app, "ULTIMAS", Some((&main, json!(10))), json!({})).await;
    app.negative_stock("block").await;
    let events = app.event_count().await;
    let body = movement("out", &main, json!([{ "product_id": item, "quantity": 1 }]));
    let answers = futures::future::join_all((0..40).map(|_| async {
        let response = app.post_keyed(MOVEMENTS, &body).await;
        let status = response.status().as_u16();
        (status, response.json::<Value>().await.expect("json"))
    }))
    .await;
    let accepted = answers.iter().filter(|(s, _)| *s == 201).count();
    let refused: Vec<&Value> = answers.iter().filter(|(s, _)| *s == 422).map(|(_, b)| b).collect();
    assert_eq!((accepted, refused.len()), (10, 30), "{answers:?}");
    for body in refused {
        assert_eq!(body["error"]["type"], "business_error");
        assert_eq!(body["error"]["code"], "INSUFFICIENT_STOCK");
        let detail = &body["error"]["details"][0];
        assert_eq!(detail["field"], "lines[0].quantity");
        assert_eq!(detail["metadata"]["requested_quantity"], "1");
        assert_eq!(detail["metadata"]["available_quantity"], "0");
        assert_eq!(detail["metadata"]["product_id"], item.as_str());
    }
    assert_eq!(on_hand(&app, &item, &main).await, "0");
    let lowest: i64 =
        sqlx::query_scalar("select min(on_hand) from stock_levels").fetch_one(&app.pool).await.expect("min");
    assert_eq!(lowest, 0, "no level ever went negative");
    assert_eq!(app.event_count().await, events + 10, "refusals wrote nothing");
    let ledger = style_a(
        app.get(&format!("/api/v1/inventory/movements?product_id={item}&cause_type=stock_movement")).await,
        200,
    )
    .await;
    let mut left: Vec<i64> =
        items(&ledger).iter().map(|r| r["on_hand"].as_str().and_then(|q| q.parse().ok()).expect("whole")).collect();
    left.sort_unstable_by_key(|q| std::cmp::Reverse(*q));
    assert_eq!(left, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0], "each success left one fewer");
}

#[sqlx::test(migrations = "../schema")]
async fn transfers_move_combo_components_all_or_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let branch = warehouse(&app, "Sucursal Centro").await;
    let mate = product(&app, "MATE", Some((&main, json!(10))), json!({})).await;
    let bombilla = product(&app, "BOMBILLA", Some((&main, json!(10))), json!({})).await;
    let combo = product(
        &app,
        "KIT",
        None,
        json!({ "productType": "combo", "components": [{ "productId": mate, "quantity": 2 }, { "productId": bombilla, "quantity": "0.5" }] }),
    )
    .await;

    let body = json!({
        "origin_warehouse_id": main,
        "destination_warehouse_id": branch,
        "items": [{ "product_id": combo, "quantity": 3 }, { "product_id": mate, "quantity": 1 }],
        "notes": "reposición",
    });
    let created = style_a(app.post(TRANSFERS, &body).await, 201).await;
    let data = &created["data"];
    assert_eq!(data["object"], "stock_transfer");
    assert_eq!(
        data["items"],
        json!([{ "product_id": mate, "quantity": "7" }, { "product_id": bombilla, "quantity": "1.5" }])
    );
    assert_eq!(
        data["requested_items"],
        json!([{ "product_id": combo, "quantity": "3" }, { "product_id": mate, "quantity": "1" }])
    );
    assert_eq!(data["tags"], json!([]));
    for (item, at, expected) in
        [(&mate, &main, "3"), (&bombilla, &main, "8.5"), (&mate, &branch, "7"), (&bombilla, &branch, "1.5")]
    {
        assert_eq!(on_hand(&app, item, at).await, expected, "{item} in {at}");
    }
    let inventory = style_a(app.get(&format!("/api/v1/inventory?product_id={combo}")).await, 200).await;
    assert!(items(&inventory).is_empty(), "a combo holds no stock of its own");
    let id = data["id"].as_str().expect("id");
    let read = style_a(app.get(&format!("{TRANSFERS}/{id}")).await, 200).await;
    assert_eq!(read["data"]["items"], data["items"]);
    assert_eq!(read["data"]["notes"], "reposición");
    assert!(read["data"].get("warnings").is_none(), "reads carry no warnings: {read}");
    let listed = style_a(app.get(&format!("{TRANSFERS}?warehouse_id={branch}")).await, 200).await;
    assert_eq!(items(&listed).len(), 1);

    let tag = json(app.post("/api/v1/tags", &json!({ "name": "urgente" })).await, 201).await["data"]["id"].clone();
    json(app.post("/api/v1/stock-transfers/tags/apply", &json!({ "ids": [id], "add": [tag] })).await, 200).await;
    let tagged = style_a(app.get(&format!("{TRANSFERS}/{id}")).await, 200).await;
    assert_eq!(tagged["data"]["tags"][0]["name"], "urgente");

    // Refused transfers change and consume nothing.
    app.negative_stock("block").await;
    let (_, other_key) = app.other_org().await;
    let foreign = app.named_with(&other_key, WAREHOUSES, "Ajeno").await;
    let events = app.event_count().await;
    let short = json!({ "origin_warehouse_id": main, "destination_warehouse_id": branch,
                        "items": [{ "product_id": bombilla, "quantity": 1 }, { "product_id": mate, "quantity": 5 }] });
    let refusal = error(app.post(TRANSFERS, &short).await, 422, "business_error").await;
    assert_eq!(detail_fields(&refusal), ["items[1].quantity"]);
    let same = json!({ "origin_warehouse_id": main, "destination_warehouse_id": main, "items": [{ "product_id": mate, "quantity": 1 }] });
    assert_eq!(
        detail_fields(&error(app.post(TRANSFERS, &same).await, 400, "invalid_request_error").await),
        ["destination_warehouse_id"]
    );
    let half = json!({ "origin_warehouse_id": main, "destination_warehouse_id": branch, "items": [{ "product_id": combo, "quantity": 1.5 }] });
    assert_eq!(
        detail_fields(&error(app.post(TRANSFERS, &half).await, 400, "invalid_request_error").await),
        ["items[0].quantity"]
    );
    let abroad = json!({ "origin_warehouse_id": main, "destination_warehouse_id": foreign, "items": [{ "product_id": mate, "quantity": 1 }] });
    assert_eq!(detail_fields(&refused(app.post(TRANSFERS, &abroad).await).await), ["destination_warehouse_id"]);
    assert_eq!(app.event_count().await, events, "nothing was written");
    json(
        app.put(&format!("{WAREHOUSES}/{branch}"), &json!({ "name": "Sucursal Centro", "isActive": false })).await,
        200,
    )
    .await;
    let events = app.event_count().await;
    let inactive = json!({ "origin_warehouse_id": main, "destination_warehouse_id": branch, "items": [{ "product_id": mate, "quantity": 1 }] });
    // An inactive warehouse is unknown to a transfer, as any inactive reference is (404).
    let closed = error(app.post(TRANSFERS, &inactive).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&closed), ["destination_warehouse_id"]);
    assert_eq!(app.event_count().await, events, "nothing was written");
    assert_eq!(on_hand(&app, &mate, &main).await, "3");
    let foreign_read = app.request(Method::GET, &format!("{TRANSFERS}/{id}"), Some(&other_key), None).await;
    error(foreign_read, 404, "invalid_request_error").await;

    // A combo cannot be moved by hand, nor a service: well-formed lines that only the products' types
    // refuse, so 409 `CONFLICT` (404 when a product is missing too), as the gateway's rules have every
    // refusal the organization's data alone decides; nothing is written.
    let service = product(&app, "FLETE", None, json!({ "productType": "service" })).await;
    let south = warehouse(&app, "Sucursal Sur").await;
    let events = app.event_count().await;
    let by_hand = movement(
        "in",
        &main,
        json!([{ "product_id": combo, "quantity": 1 }, { "product_id": service, "quantity": 1 }]),
    );
    let refused_lines = error(app.post_keyed(MOVEMENTS, &by_hand).await, 409, "business_error").await;
    assert_eq!(refused_lines["error"]["code"], "CONFLICT");
    assert_eq!(detail_fields(&refused_lines), ["lines[0].product_id", "lines[1].product_id"]);
    let and_unknown = movement(
        "out",
        &main,
        json!([{ "product_id": service, "quantity": 1 }, { "product_id": Uuid::now_v7(), "quantity": 1 }]),
    );
    let missing = error(app.post_keyed(MOVEMENTS, &and_unknown).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&missing), ["lines[0].product_id", "lines[1].product_id"]);
    let moving_service = json!({ "origin_warehouse_id": main, "destination_warehouse_id": south,
                                 "items": [{ "product_id": service, "quantity": 1 }] });
    let refused_item = error(app.post(TRANSFERS, &moving_service).await, 409, "business_error").await;
    assert_eq!(detail_fields(&refused_item), ["items[0].product_id"]);
    assert_eq!(app.event_count().await, events, "nothing was written");
}

/// A combo moves as its components: one deactivated since the combo listed it refuses the combo's item
/// of a transfer as an inactive product transferred directly is refused (404 `not_found` naming the
/// item's product), and nothing is written or moved. Active again, the combo moves.
#[sqlx::test(migrations = "../schema")]
async fn a_transfer_of_a_combo_whose_component_was_deactivated_is_refused(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let branch = warehouse(&app, "Sucursal Centro").await;
    let mate = product(&app, "MATE", Some((&main, json!(10))), json!({})).await;
    let bombilla = product(&app, "BOMBILLA", Some((&main, json!(10))), json!({})).await;
    let components = json!([{ "productId": mate, "quantity": 2 }, { "productId": bombilla, "quantity": 1 }]);
    let combo = product(&app, "KIT", None, json!({ "productType": "combo", "components": components })).await;
    let off = json!({ "name": "Producto BOMBILLA", "sku": "BOMBILLA", "price": 1000, "isActive": false });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &off).await, 200).await;
    let ledger = || async { items(&style_a(app.get("/api/v1/inventory/movements").await, 200).await) };
    let (events, rows) = (app.event_count().await, ledger().await);
    assert_eq!(rows.len(), 2, "the two opening levels: {rows:?}");

    // Transferred directly, the inactive product is refused, naming its item.
    let transfer =
        |lines: Value| json!({ "origin_warehouse_id": main, "destination_warehouse_id": branch, "items": lines });
    let direct = transfer(json!([{ "product_id": bombilla, "quantity": 1 }]));
    let refused = error(app.post(TRANSFERS, &direct).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[0].product_id"]);
    // So is the combo that holds it, on the combo's item; the mate's item is fine.
    let with_kit = transfer(json!([{ "product_id": mate, "quantity": 1 }, { "product_id": combo, "quantity": 1 }]));
    let refused = error(app.post(TRANSFERS, &with_kit).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[1].product_id"]);
    let detail = &refused["error"]["details"][0];
    assert_eq!(detail["code"], "not_found", "{refused}");
    assert!(detail["message"].as_str().is_some_and(|m| m.contains(&bombilla)), "names the component: {refused}");
    assert_eq!(app.event_count().await, events, "nothing was written");
    assert_eq!(ledger().await, rows, "the ledger is unchanged");
    for (item, expected) in [(&mate, "10"), (&bombilla, "10")] {
        assert_eq!(on_hand(&app, item, &main).await, expected, "{item} stayed");
    }
    let listed = style_a(app.get(&format!("{TRANSFERS}?warehouse_id={branch}")).await, 200).await;
    assert!(items(&listed).is_empty(), "no transfer recorded: {listed}");

    // Active again, the combo moves as its components.
    let on = json!({ "name": "Producto BOMBILLA", "sku": "BOMBILLA", "price": 1000 });
    json(app.put(&format!("/api/v1/products/{bombilla}"), &on).await, 200).await;
    let moved = style_a(app.post(TRANSFERS, &with_kit).await, 201).await;
    assert_eq!(
        moved["data"]["items"],
        json!([{ "product_id": mate, "quantity": "3" }, { "product_id": bombilla, "quantity": "1" }])
    );
    for (item, at, expected) in
        [(&mate, &main, "7"), (&bombilla, &main, "9"), (&mate, &branch, "3"), (&bombilla, &branch, "1")]
    {
        assert_eq!(on_hand(&app, item, at).await, expected, "{item} in {at}");
    }
}

#[sqlx::test(migrations = "../schema")]
async fn bad_stock_input_is_refused_and_writes_nothing(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let item = product(&app, "TORNILLO", Some((&main, json!(3))), json!({})).await;
    let retired = product(&app, "RETIRADO", Some((&main, json!(2))), json!({})).await;
    let off = json!({ "name": "Producto RETIRADO", "sku": "RETIRADO", "price": 1000, "isActive": false });
    json(app.put(&format!("/api/v1/products/{retired}"), &off).await, 200).await;
    let branch = warehouse(&app, "Sucursal").await;
    let (_, other_key) = app.other_org().await;
    let foreign_product = json(
        app.client
            .post(format!("{}/api/v1/products", app.base))
            .bearer_auth(&other_key)
            .header("Idempotency-Key", "k1")
            .json(&json!({ "name": "Ajeno", "sku": "AJENO", "price": 1 }))
            .send()
            .await
            .expect("sent"),
        201,
    )
    .await["data"]["id"]
        .clone();
    // Another organization's warehouse is unknown here; an inactive one of ours is refused.
    let shut = warehouse(&app, "Depósito Cerrado").await;
    json(
        app.put(&format!("{WAREHOUSES}/{shut}"), &json!({ "name": "Depósito Cerrado", "isActive": false })).await,
        200,
    )
    .await;
    let theirs = style_a(app.request(Method::GET, WAREHOUSES, Some(&other_key), None).await, 200).await;
    let theirs = items(&theirs)[0]["id"].as_str().expect("their warehouse").to_owned();
    let before = app.event_count().await;
    let abroad = movement("in", &theirs, json!([{ "product_id": item, "quantity": 1 }]));
    let abroad = error(app.post_keyed(MOVEMENTS, &abroad).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&abroad), ["warehouse_id"]);
    let into_shut = movement("in", &shut, json!([{ "product_id": item, "quantity": 1 }]));
    let closed = error(app.post_keyed(MOVEMENTS, &into_shut).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&closed), ["warehouse_id"]);
    // An inactive product is refused as a missing one (spec: platform rule 2), moved or transferred.
    let out_of_retired = movement("out", &main, json!([{ "product_id": retired, "quantity": 1 }]));
    let refused = error(app.post_keyed(MOVEMENTS, &out_of_retired).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["lines[0].product_id"]);
    let moving_retired = json!({ "origin_warehouse_id": main, "destination_warehouse_id": branch,
        "items": [{ "product_id": retired, "quantity": 1 }] });
    let refused = error(app.post(TRANSFERS, &moving_retired).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["items[0].product_id"]);
    assert_eq!(app.event_count().await, before, "nothing was written");
    assert_eq!(on_hand(&app, &retired, &main).await, "2");
    let events = app.event_count().await;

    let unknown =
        movement("in", &Uuid::now_v7().to_string(), json!([{ "product_id": foreign_product, "quantity": 1 }]));
    let missing = error(app.post_keyed(MOVEMENTS, &unknown).await, 404, "invalid_request_error").await;
    assert_eq!(detail_fields(&missing), ["warehouse_id", "lines[0].product_id"]);
    for (quantity, code) in [
        (json!("abc"), "invalid_format"),
        (json!("1.2345"), "too_many_decimals"),
        (json!(0.0001), "too_many_decimals"),
        (json!(0), "not_positive"),
        (json!(-1), "not_positive"),
        (json!("2e3"), "invalid_format"),
        (json!(true), "invalid_type"),
        (json!(1e13), "out_of_range"),
    ] {
        let body = movement("out", &main, json!([{ "product_id": item, "quantity": quantity }]));
        let refusal = error(app.post_keyed(MOVEMENTS, &body).await, 400, "invalid_request_error").await;
        assert_eq!(detail_fields(&refusal), ["lines[0].quantity"], "{quantity}: {refusal}");
        assert_eq!(refusal["error"]["details"][0]["code"], code, "{quantity}: {refusal}");
    }
    let shapes = [
        json!({ "type": "sideways", "warehouse_id": main, "lines": [{ "product_id": item, "quantity": 1 }] }),
        json!({ "type": "in", "warehouse_id": main, "lines": [] }),
        json!({ "type": "in", "warehouse_id": main, "lines": [{ "product_id": item, "quantity": 1 }, { "product_id": item, "quantity": 2 }] }),
        json!({ "type": "in", "warehouse_id": main, "lines": [{ "product_id": item, "quantity": 1 }], "occurred_on": "2999-01-01" }),
        json!({ "type": "in", "warehouse_id": "nope", "lines": [{ "product_id": item, "quantity": 1 }] }),
    ];
    for body in shapes {
        error(app.post_keyed(MOVEMENTS, &body).await, 400, "invalid_request_error").await;
    }
    let bad_transfer = json!({ "origin_warehouse_id": main, "destination_warehouse_id": Uuid::now_v7(), "items": [{ "product_id": item, "quantity": -2 }] });
    let refusal = error(app.post(TRANSFERS, &bad_transfer).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refusal), ["items[0].quantity"]);
    assert_eq!(app.event_count().await, events, "nothing was written");
    assert_eq!(on_hand(&app, &item, &main).await, "3");
    for bad in ["warehouse_id=x", "product_id=1", "below_minimum=maybe", "limit=0", "page=2"] {
        error(app.get(&format!("/api/v1/inventory?{bad}")).await, 400, "invalid_request_error").await;
    }
}

#[sqlx::test(migrations = "../schema")]
async fn a_creation_records_no_more_opening_stock_than_the_ledger_numbers(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let mut warehouses = vec![default_warehouse(&app).await];
    for i in 1..5 {
        warehouses.push(warehouse(&app, &format!("Depósito {i}")).await);
    }
    // A matrix of `count` sizes, each with one unit in every warehouse.
    let matrix = |sku: &str, count: usize| {
        let stocks: Vec<Value> = warehouses.iter().map(|w| json!({ "warehouseId": w, "quantity": 1 })).collect();
        let variants: Vec<Value> = (0..count)
            .map(|i| {
                json!({ "optionValues": { "Talle": format!("T{i}") }, "sku": format!("{sku}-{i}"), "price": 1000,
                        "warehouseStocks": stocks })
            })
            .collect();
        json!({ "name": format!("Remera {sku}"), "options": ["Talle"], "variants": variants })
    };
    // 201 sizes in 5 warehouses are 1,005 opening levels: the ledger numbers an event's rows from its
    // position × 1,000, so the last five would share numbers with the next event's first rows.
    let events = app.event_count().await;
    let refused =
        error(app.post_keyed("/api/v1/products", &matrix("GRANDE", 201)).await, 400, "invalid_request_error").await;
    assert_eq!(detail_fields(&refused), ["variants[200].warehouseStocks"]);
    assert_eq!(refused["error"]["details"][0]["code"], "too_many_changes");
    assert_eq!(app.event_count().await, events, "nothing was written");

    // 200 sizes are 1,000 levels, the most: every one a ledger row of its own, beside the next event's.
    json(app.post_keyed("/api/v1/products", &matrix("JUSTA", 200)).await, 201).await;
    let first = items(&style_a(app.get("/api/v1/inventory?query=JUSTA-0&limit=100").await, 200).await);
    let size = first[0]["product_id"].as_str().expect("a variant").to_owned();
    let body = movement("in", &warehouses[0], json!([{ "product_id": size, "quantity": 2 }]));
    style_a(app.post_keyed(MOVEMENTS, &body).await, 201).await;
    let rows: Vec<(String, i64)> =
        sqlx::query_as("select cause_type, count(*) from inventory_movements where org_id = $1 group by 1 order by 1")
            .bind(app.org_id)
            .fetch_all(&app.pool)
            .await
            .expect("ledger rows");
    assert_eq!(rows, [("opening_stock".to_owned(), 1000), ("stock_movement".to_owned(), 1)]);
    assert_eq!(on_hand(&app, &size, &warehouses[0]).await, "3");
}

#[sqlx::test(migrations = "../schema")]
async fn inventory_routes_need_their_scopes(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let reader = commands::organization::create_api_key(
        &app.pool,
        app.org_id,
        &["inventory:read".into(), "transfers:read".into()],
    )
    .await
    .expect("key");
    let read = app.request(Method::GET, "/api/v1/inventory", Some(&reader), None).await;
    style_a(read, 200).await;
    let body = movement("in", &main, json!([{ "product_id": Uuid::now_v7(), "quantity": 1 }]));
    let denied = app.request(Method::POST, MOVEMENTS, Some(&reader), Some(&body)).await;
    assert_eq!(error(denied, 403, "authorization_error").await["error"]["code"], "MISSING_SCOPE");
    let transfer = json!({ "origin_warehouse_id": main, "destination_warehouse_id": Uuid::now_v7(), "items": [{ "product_id": Uuid::now_v7(), "quantity": 1 }] });
    let denied = app.request(Method::POST, TRANSFERS, Some(&reader), Some(&transfer)).await;
    error(denied, 403, "authorization_error").await;
    let writer =
        commands::organization::create_api_key(&app.pool, app.org_id, &["customers:read".into()]).await.expect("key");
    let denied = app.request(Method::GET, "/api/v1/inventory/movements", Some(&writer), None).await;
    error(denied, 403, "authorization_error").await;
}

/// Runs one reservation change in its own transaction, as a quote or order command would.
async fn reserve(
    app: &TestApp,
    owner: Uuid,
    lines: &[(&str, &str, &str)],
    through: time::Date,
    policy: NegativeStock,
) -> Result<reservations::Decided, commands::engine::ExecuteError> {
    let wanted = Wanted {
        reserved_through: through,
        lines: lines
            .iter()
            .enumerate()
            .map(|(i, (variant, warehouse, quantity))| {
                let line = ReservedLine {
                    variant_id: variant.parse().expect("id"),
                    warehouse_id: warehouse.parse().expect("id"),
                    quantity: quantity.parse::<Quantity>().expect("quantity"),
                };
                (line, format!("items[{i}].quantity"))
            })
            .collect(),
    };
    change_reservation(app, owner, Some(&wanted), policy).await
}

async fn change_reservation(
    app: &TestApp,
    owner: Uuid,
    wanted: Option<&Wanted>,
    policy: NegativeStock,
) -> Result<reservations::Decided, commands::engine::ExecuteError> {
    let mut tx = app.pool.begin().await.expect("tx");
    let owner = ReservationOwner { kind: "quote".into(), id: owner };
    let today = ar_date(time::OffsetDateTime::now_utc());
    let decided =
        reservations::set(&mut tx, app.org_id, &owner, wanted, today, policy, &Metadata::system("test")).await?;
    if let Some(append) = &decided.append {
        events::store::append_many(&mut tx, std::slice::from_ref(append)).await.expect("appended");
    }
    tx.commit().await.expect("commit");
    Ok(decided)
}

/// The reserved and available quantities the inventory read shows, once they equal `expected`.
async fn shows(app: &TestApp, product: &str, warehouse: &str, expected: (&str, &str)) {
    eventually(Duration::from_secs(15), "the reservation in the inventory read", || async {
        let row = level(app, product, warehouse).await;
        (row["reserved"] == expected.0 && row["available"] == expected.1).then_some(())
    })
    .await;
}

#[sqlx::test(migrations = "../schema")]
async fn reservations_count_until_their_date_and_honour_the_policy(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let item = product(&app, "RESERVA", Some((&main, json!(10))), json!({})).await;
    let today = ar_date(time::OffsetDateTime::now_utc());
    let (quote, other) = (Uuid::now_v7(), Uuid::now_v7());

    let taken = reserve(&app, quote, &[(&item, &main, "4")], today, NegativeStock::Block).await.expect("reserved");
    assert!(taken.append.is_some() && taken.warnings.is_empty());
    shows(&app, &item, &main, ("4", "6")).await;
    let same = reserve(&app, quote, &[(&item, &main, "4")], today, NegativeStock::Block).await.expect("unchanged");
    assert!(same.append.is_none(), "the same reservation again changes nothing");
    reserve(&app, quote, &[(&item, &main, "3"), (&item, &main, "3")], today, NegativeStock::Block)
        .await
        .expect("adjusted");
    shows(&app, &item, &main, ("6", "4")).await;

    // Only 4 are left for anyone else: blocked, or a warning when negative stock is allowed.
    let refused = reserve(&app, other, &[(&item, &main, "5")], today, NegativeStock::Block).await;
    assert!(
        matches!(refused, Err(commands::engine::ExecuteError::Rejected(commands::Rejection::Unprocessable { ref code, .. })) if code == "INSUFFICIENT_STOCK"),
        "{refused:?}"
    );
    let warned = reserve(&app, other, &[(&item, &main, "5")], today, NegativeStock::Allow).await.expect("allowed");
    assert_eq!(warned.warnings.len(), 1);
    assert_eq!(warned.warnings[0].available_quantity, "4".parse::<Quantity>().expect("q"));
    shows(&app, &item, &main, ("11", "-1")).await;

    // A stock movement sees reservations too.
    app.negative_stock("block").await;
    let out = movement("out", &main, json!([{ "product_id": item, "quantity": 1 }]));
    error(app.post_keyed(MOVEMENTS, &out).await, 422, "business_error").await;

    let released = change_reservation(&app, quote, None, NegativeStock::Block).await.expect("released");
    assert!(released.released);
    shows(&app, &item, &main, ("5", "5")).await;

    // A reservation past its date stops counting at once; the sweeper records its expiry.
    let yesterday = today.previous_day().expect("a date");
    reserve(&app, other, &[(&item, &main, "5")], yesterday, NegativeStock::Block).await.expect("moved");
    shows(&app, &item, &main, ("0", "10")).await;
    let expired = reservations::expire_due(&app.pool, today, 100).await.expect("swept");
    assert_eq!(expired, 1);
    assert_eq!(reservations::expire_due(&app.pool, today, 100).await.expect("swept"), 0, "once");
    let types: Vec<String> =
        sqlx::query_scalar("select event_type from events where stream_type = 'stock_reservation' order by position")
            .fetch_all(&app.pool)
            .await
            .expect("events");
    assert_eq!(
        types,
        [
            "StockReserved",
            "ReservationAdjusted",
            "StockReserved",
            "ReservationReleased",
            "ReservationAdjusted",
            "ReservationExpired"
        ]
    );
    let rows: i64 =
        sqlx::query_scalar("select count(*) from stock_reservations").fetch_one(&app.pool).await.expect("count");
    assert_eq!(rows, 0);
}

#[sqlx::test(migrations = "../schema")]
async fn the_stock_write_model_and_the_inventory_reads_rebuild_to_the_same_rows(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let branch = warehouse(&app, "Depósito Norte").await;
    let a = product(&app, "A-1", Some((&main, json!("7.5"))), json!({})).await;
    let b = product(&app, "B-1", Some((&main, json!(4))), json!({})).await;
    style_a(
        app.post_keyed(
            MOVEMENTS,
            &movement(
                "out",
                &main,
                json!([{ "product_id": a, "quantity": "0.5" }, { "product_id": b, "quantity": 6 }]),
            ),
        )
        .await,
        201,
    )
    .await;
    let transfer = json!({ "origin_warehouse_id": main, "destination_warehouse_id": branch, "items": [{ "product_id": a, "quantity": 2 }] });
    style_a(app.post(TRANSFERS, &transfer).await, 201).await;
    let today = ar_date(time::OffsetDateTime::now_utc());
    reserve(&app, Uuid::now_v7(), &[(&a, &branch, "1.5")], today, NegativeStock::Allow).await.expect("reserved");
    shows(&app, &a, &branch, ("1.5", "0.5")).await;

    let levels = || async {
        let rows: Vec<(Uuid, Uuid, i64)> = sqlx::query_as(
            "select variant_id, warehouse_id, on_hand from stock_levels where on_hand <> 0 order by 1, 2",
        )
        .fetch_all(&app.pool)
        .await
        .expect("levels");
        let held: Vec<(Uuid, Uuid, i64)> =
            sqlx::query_as("select reservation_id, variant_id, quantity from stock_reservations order by 1, 2")
                .fetch_all(&app.pool)
                .await
                .expect("reservations");
        (rows, held)
    };
    let live = levels().await;
    assert_eq!(live.0.len(), 3, "{live:?}");
    let report = rebuild::rebuild(&app.pool, |_| {}).await.expect("rebuilt");
    assert_eq!((report.corrected, report.levels, report.reservations), (0, 3, 1), "{report:?}");
    assert_eq!(levels().await, live, "rebuilt rows equal the live ones");
    // A corrupted row is put right.
    sqlx::query("update stock_levels set on_hand = on_hand + 1000").execute(&app.pool).await.expect("corrupt");
    assert_eq!(rebuild::rebuild(&app.pool, |_| {}).await.expect("rebuilt").corrected, 3);
    assert_eq!(levels().await, live);

    let reads = || async {
        let inventory = style_a(app.get("/api/v1/inventory").await, 200).await;
        let ledger = style_a(app.get("/api/v1/inventory/movements").await, 200).await;
        let transfers = style_a(app.get(TRANSFERS).await, 200).await;
        (items(&inventory), items(&ledger), items(&transfers))
    };
    let before = reads().await;
    assert_eq!(before.1.len(), 6, "{:?}", before.1);
    let projection = projections::projection(projections::ProjectionId::Inventory);
    projections::rebuild::rebuild(&app.pool, projection.as_ref(), |_| {}).await.expect("rebuilt");
    assert_eq!(reads().await, before, "the rebuilt read model answers the same");
}

/// A keyed stock movement as the gateway sends it to the workers (the request hash stands in for the
/// body's).
fn keyed_movement(
    app: &TestApp,
    key: &str,
    hash: &str,
    movement_type: commands::inventory::MovementType,
    warehouse: &str,
    lines: &[(&str, i64)],
) -> commands::protocol::CommandRequest {
    let command = commands::inventory::StockMovementCommand {
        id: Uuid::now_v7(),
        movement_type,
        warehouse_id: warehouse.parse().expect("warehouse id"),
        reason: Some("lote".into()),
        occurred_on: ar_date(time::OffsetDateTime::now_utc()),
        lines: lines
            .iter()
            .map(|(variant, units)| events::catalogue::StockLine {
                variant_id: variant.parse().expect("variant id"),
                quantity: Quantity::from_thousandths(units * 1000).expect("quantity"),
            })
            .collect(),
    };
    commands::protocol::CommandRequest {
        org_id: app.org_id,
        actor: commands::protocol::Actor { name: "lote".into(), credential_id: None },
        request_id: format!("req_{key}"),
        idempotency: Some(commands::protocol::Idempotency {
            key: key.into(),
            operation: "createStockMovement".into(),
            request_hash: hash.parse().expect("a hex hash"),
        }),
        command: commands::protocol::Command::StockMovement(command),
    }
}

/// Waits for the inventory read of a level to show `expected` on hand: batches sent past the gateway
/// do not wait for the read side, which catches up.
async fn reads_on_hand(app: &TestApp, product: &str, warehouse: &str, expected: &str) {
    eventually(Duration::from_secs(10), "the inventory read catches up", || async {
        // A level the batch created is missing until the read side has it.
        let path = format!("/api/v1/inventory?product_id={product}&warehouse_id={warehouse}");
        let body = style_a(app.get(&path).await, 200).await;
        let row = items(&body).into_iter().next()?;
        (row["on_hand"] == expected).then_some(())
    })
    .await;
}

/// Sends `requests` to the workers as one batch, as a loaded gateway does, and answers their replies.
async fn send_batch(
    app: &TestApp,
    requests: Vec<commands::protocol::CommandRequest>,
) -> Vec<commands::protocol::CommandReply> {
    let batch = commands::protocol::CommandBatch { requests };
    send_batch_body(app, serde_json::to_vec(&batch).expect("batch")).await
}

async fn send_batch_body(app: &TestApp, body: Vec<u8>) -> Vec<commands::protocol::CommandReply> {
    let message =
        app.bus.client.request(app.bus.command_batch_subject(), body.into()).await.expect("the workers answer");
    serde_json::from_slice::<commands::protocol::CommandBatchReply>(&message.payload).expect("a batch reply").replies
}

#[sqlx::test(migrations = "../schema")]
async fn a_request_the_worker_cannot_read_fails_alone_and_its_batch_runs(pool: PgPool) {
    use commands::inventory::MovementType::In;
    use commands::protocol::CommandReply;
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let item = product(&app, "LEER", Some((&main, json!(1))), json!({})).await;
    let batch = commands::protocol::CommandBatch {
        requests: vec![
            keyed_movement(&app, "r1", "01", In, &main, &[(&item, 2)]),
            keyed_movement(&app, "r2", "02", In, &main, &[(&item, 4)]),
            keyed_movement(&app, "r3", "03", In, &main, &[(&item, 8)]),
        ],
    };
    let mut body = serde_json::to_value(&batch).expect("batch");
    // A command only a newer gateway knows.
    body["requests"][1]["command"] = json!({ "StockMovementFromTheFuture": { "id": Uuid::now_v7() } });
    let replies = send_batch_body(&app, serde_json::to_vec(&body).expect("body")).await;
    assert_eq!(replies.len(), 3, "a reply for every request: {replies:?}");
    let on_hand = |reply: &CommandReply| match reply {
        CommandReply::Accepted { state, .. } => state["changes"][0]["on_hand"].clone(),
        other => panic!("expected an acceptance, got {other:?}"),
    };
    assert_eq!((on_hand(&replies[0]), on_hand(&replies[2])), (json!("3"), json!("11")));
    assert!(
        matches!(&replies[1], CommandReply::Failed { retryable: false, message, .. } if message.starts_with("malformed command")),
        "{:?}",
        replies[1]
    );
    let keys: Vec<String> =
        sqlx::query_scalar("select key from idempotency_keys where org_id = $1 and key like 'r%' order by key")
            .bind(app.org_id)
            .fetch_all(&app.pool)
            .await
            .expect("keys");
    assert_eq!(keys, ["r1", "r3"], "nothing of the unread request is kept");
    reads_on_hand(&app, &item, &main, "11").await;

    // A batch whose envelope does not decode is one malformed reply.
    let replies = send_batch_body(&app, b"{\"requests\": 7}".to_vec()).await;
    assert!(matches!(replies.as_slice(), [CommandReply::Failed { retryable: false, .. }]), "{replies:?}");
}

#[sqlx::test(migrations = "../schema")]
async fn movements_batched_together_are_decided_in_order_each_as_if_alone(pool: PgPool) {
    use commands::inventory::MovementType::{Count, In, Out};
    use commands::protocol::CommandReply;
    let app = TestApp::spawn(pool).await;
    let main = default_warehouse(&app).await;
    let item = product(&app, "LOTE", Some((&main, json!(5))), json!({})).await;
    app.negative_stock("block").await;
    // Two keys already used, before the batch (5 + 1 + 1).
    let earlier = keyed_movement(&app, "k-earlier", "0e", In, &main, &[(&item, 1)]);
    let other = keyed_movement(&app, "k-other", "0f", In, &main, &[(&item, 1)]);
    let first = send_batch(&app, vec![earlier.clone(), other]).await;
    assert!(first.iter().all(|r| matches!(r, CommandReply::Accepted { replayed: false, .. })), "{first:?}");
    let events = app.event_count().await;

    let unknown = Uuid::now_v7().to_string();
    let batch = vec![
        keyed_movement(&app, "k1", "01", Out, &main, &[(&item, 2)]), // 7 → 5
        keyed_movement(&app, "k2", "02", Out, &main, &[(&item, 6)]), // short: 5 available
        keyed_movement(&app, "k3", "03", Out, &main, &[(&item, 5)]), // 5 → 0
        keyed_movement(&app, "k4", "04", In, &main, &[(&unknown, 1)]), // unknown product
        earlier.clone(),                                             // replayed
        keyed_movement(&app, "k-other", "ff", In, &main, &[(&item, 9)]), // a used key, another body
        keyed_movement(&app, "k5", "05", Count, &main, &[(&item, 7)]), // counted: 7
    ];
    let replies = send_batch(&app, batch).await;
    assert_eq!(replies.len(), 7);
    let accepted = |reply: &CommandReply| match reply {
        CommandReply::Accepted { state, replayed, commit, .. } => (state.clone(), *replayed, *commit),
        other => panic!("expected an acceptance, got {other:?}"),
    };
    let refusal = |reply: &CommandReply| match reply {
        CommandReply::Rejected { rejection } => serde_json::to_value(rejection).expect("rejection"),
        other => panic!("expected a refusal, got {other:?}"),
    };
    let (k1, replayed, k1_commit) = accepted(&replies[0]);
    assert!(!replayed);
    assert_eq!(k1["changes"][0]["on_hand"], "5", "{k1}");
    assert!(refusal(&replies[1]).to_string().contains("INSUFFICIENT_STOCK"), "{:?}", replies[1]);
    let (k3, _, k3_commit) = accepted(&replies[2]);
    assert_eq!(k3["changes"][0]["on_hand"], "0", "{k3}");
    assert!(refusal(&replies[3]).to_string().contains("not_found"), "{:?}", replies[3]);
    let (again, replayed, _) = accepted(&replies[4]);
    assert!(replayed, "the stored outcome is replayed");
    assert_eq!(again, accepted(&first[0]).0);
    assert!(refusal(&replies[5]).to_string().contains("IDEMPOTENCY_CONFLICT"), "{:?}", replies[5]);
    let (k5, _, k5_commit) = accepted(&replies[6]);
    assert_eq!(k5["changes"][0]["on_hand"], "7", "{k5}");

    // One transaction wrote the three accepted movements, their levels and their keys; nothing of the
    // refused ones.
    let commits: Vec<i64> =
        [k1_commit, k3_commit, k5_commit].iter().map(|c| c.expect("a commit key").transaction_id).collect();
    assert!(commits.windows(2).all(|w| w[0] == w[1]), "one transaction: {commits:?}");
    assert_eq!(app.event_count().await, events + 3);
    let stored: Vec<String> =
        sqlx::query_scalar("select key from idempotency_keys where org_id = $1 and key like 'k%' order by key")
            .bind(app.org_id)
            .fetch_all(&app.pool)
            .await
            .expect("keys");
    assert_eq!(stored, ["k-earlier", "k-other", "k1", "k3", "k5"]);
    let lowest: i64 =
        sqlx::query_scalar("select min(on_hand) from stock_levels").fetch_one(&app.pool).await.expect("min");
    assert_eq!(lowest, 7_000);
    reads_on_hand(&app, &item, &main, "7").await;

    // A refused key is free: sent again after the stock arrives, it is decided afresh.
    let again = send_batch(
        &app,
        vec![
            keyed_movement(&app, "k2", "02", Out, &main, &[(&item, 6)]),
            keyed_movement(&app, "k1", "01", Out, &main, &[(&item, 2)]),
        ],
    )
    .await;
    assert_eq!(accepted(&again[0]).0["changes"][0]["on_hand"], "1");
    assert!(accepted(&again[1]).1, "k1 is replayed, not moved again");
    reads_on_hand(&app, &item, &main, "1").await;

    // Only additions and takings: the locking statement adds them all at once, and a refusal among
    // them puts the level back where the accepted ones leave it.
    let mixed = send_batch(
        &app,
        vec![
            keyed_movement(&app, "k6", "06", Out, &main, &[(&item, 1)]), // 1 → 0
            keyed_movement(&app, "k7", "07", Out, &main, &[(&item, 100)]), // short
            keyed_movement(&app, "k8", "08", In, &main, &[(&item, 2)]),  // 0 → 2
        ],
    )
    .await;
    assert_eq!(accepted(&mixed[0]).0["changes"][0]["on_hand"], "0");
    assert!(refusal(&mixed[1]).to_string().contains("INSUFFICIENT_STOCK"), "{:?}", mixed[1]);
    assert_eq!(accepted(&mixed[2]).0["changes"][0]["on_hand"], "2");
    let level: i64 = sqlx::query_scalar("select on_hand from stock_levels").fetch_one(&app.pool).await.expect("level");
    assert_eq!(level, 2_000, "the refused taking is not in the level");

    // Several warehouses in one group: each is read from its own stream (a renamed one has two
    // events), an inactive one and an unknown one are refused, and the others move.
    let north = warehouse(&app, "Depósito Norte").await;
    json(app.put(&format!("{WAREHOUSES}/{north}"), &json!({ "name": "Depósito Norte 2" })).await, 200).await;
    let closed = warehouse(&app, "Depósito Cerrado").await;
    json(
        app.put(&format!("{WAREHOUSES}/{closed}"), &json!({ "name": "Depósito Cerrado", "isActive": false })).await,
        200,
    )
    .await;
    let nowhere = Uuid::now_v7().to_string();
    let spread = send_batch(
        &app,
        vec![
            keyed_movement(&app, "k9", "09", In, &north, &[(&item, 3)]), // 0 → 3 in the north
            keyed_movement(&app, "k10", "10", In, &closed, &[(&item, 1)]), // inactive
            keyed_movement(&app, "k11", "11", In, &nowhere, &[(&item, 1)]), // unknown
            keyed_movement(&app, "k12", "12", In, &main, &[(&item, 1)]), // 2 → 3 in the main one
        ],
    )
    .await;
    assert_eq!(accepted(&spread[0]).0["changes"][0]["on_hand"], "3");
    let inactive = refusal(&spread[1]).to_string();
    assert!(inactive.contains("not_found") && inactive.contains("warehouse_id"), "{inactive}");
    let unknown = refusal(&spread[2]).to_string();
    assert!(unknown.contains("not_found") && unknown.contains("warehouse_id"), "{unknown}");
    assert_eq!(accepted(&spread[3]).0["changes"][0]["on_hand"], "3");
    let transaction = |reply: &CommandReply| accepted(reply).2.expect("a commit key").transaction_id;
    assert_eq!(transaction(&spread[0]), transaction(&spread[3]), "the group ran, not one by one");
    reads_on_hand(&app, &item, &north, "3").await;
    reads_on_hand(&app, &item, &main, "3").await;
}
