//! Orders as a property: seeded random sequences of order operations through the HTTP API (orders with
//! and without a reservation, structural edits, partial delivery notes, sales billing order lines,
//! deleted notes, cancels, completions, quotes reserving and converted), each step's status predicted
//! by a model and, after every step, the stock invariants checked against the read side: a level's
//! `reserved` is what open orders have not moved yet plus what draft quotes hold, and its `on_hand` is
//! the sum of its ledger and the opening stock less what the model says left. Also: every `order.*`
//! webhook arrives once per transition.

use crate::helpers::{TestApp, WAREHOUSES, eventually, items, json, seeded, style_a, today};
use crate::receiver::Receiver;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::{Method, Response};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const ORDERS: &str = "/api/v1/orders";
const NOTES: &str = "/api/v1/delivery-notes";
const QUOTES: &str = "/api/v1/quotes";
const SALES: &str = "/api/v1/sales";
const CASES: u64 = 4;
const STEPS: usize = 25;

async fn keyed(app: &TestApp, method: Method, path: &str, body: Option<&Value>) -> Response {
    app.fresh_keyed(method, path, body).await
}

/// The body of a response expected with `status` (the body is shown when it is not).
async fn expect(response: Response, status: u16, what: &str) -> Value {
    let actual = response.status().as_u16();
    let text = response.text().await.expect("body");
    assert_eq!(actual, status, "{what}: unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// A quantity as the API writes it (decimal text), in whole units.
fn units(value: &Value) -> i64 {
    let text = value.as_str().unwrap_or_else(|| panic!("not a quantity: {value}"));
    let parsed: f64 = text.parse().unwrap_or_else(|_| panic!("not a quantity: {text}"));
    assert_eq!(parsed.fract(), 0.0, "whole units only in this test: {text}");
    parsed as i64
}

fn id(value: &Value) -> String {
    value.as_str().unwrap_or_else(|| panic!("not an id: {value}")).to_owned()
}

/// Prints the seed when the test fails, so the case can be replayed (`ORDER_PROPERTIES_SEED`).
struct SeedReport(u64);

impl Drop for SeedReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("order_properties failed with seed {} (rerun with ORDER_PROPERTIES_SEED={})", self.0, self.0);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Open,
    Completed,
    Cancelled,
}

#[derive(Debug, Clone)]
struct Line {
    id: String,
    /// Index into the case's products (none: free text).
    product: Option<usize>,
    quantity: i64,
    delivered: i64,
    billed: i64,
    /// Index into the warehouses; none: the order's assigned one.
    warehouse: Option<usize>,
}

impl Line {
    fn moved(&self) -> i64 {
        self.delivered.max(self.billed)
    }
}

#[derive(Debug, Clone)]
struct Order {
    id: String,
    lines: Vec<Line>,
    assigned: usize,
    reserves: bool,
    status: Status,
}

impl Order {
    fn started(&self) -> bool {
        self.lines.iter().any(|l| l.delivered > 0 || l.billed > 0)
    }

    fn warehouse_of(&self, line: &Line) -> usize {
        line.warehouse.unwrap_or(self.assigned)
    }

    /// Whether every line is delivered and billed, as `orders::served` says.
    fn served(&self) -> bool {
        self.lines.iter().all(|l| l.delivered >= l.quantity && l.billed >= l.quantity)
    }

    /// Completes an open order once it is served, as `settled` does.
    fn settle(&mut self) {
        if self.status == Status::Open && self.served() {
            self.status = Status::Completed;
        }
    }
}

#[derive(Debug, Clone)]
struct Note {
    id: String,
    order: usize,
    /// (order line id, quantity delivered, the warehouse its stock left from when some did).
    lines: Vec<(String, i64, Option<usize>)>,
    /// The order's warehouse when the note moved any stock.
    warehouse: Option<usize>,
    deleted: bool,
}

impl Note {
    /// Where a deleted note gives back a line's units: where that line's stock left from; else where
    /// the note took the product from (one warehouse, or the line's own among several); else the
    /// line's own warehouse, the note's, or the order's as it is now.
    fn back_to(&self, line: &Line, took: Option<usize>, order: &Order, lines: &[Line]) -> usize {
        let product = |id: &str| lines.iter().find(|l| l.id == id).and_then(|l| l.product);
        let taken: BTreeSet<usize> =
            self.lines.iter().filter(|(id, _, w)| w.is_some() && product(id) == line.product).filter_map(|l| l.2).collect();
        let from_note = match (taken.len(), line.warehouse) {
            (1, _) => taken.first().copied(),
            (_, Some(w)) if taken.contains(&w) => Some(w),
            _ => None,
        };
        took.or(from_note).or(line.warehouse).or(self.warehouse).unwrap_or(order.assigned)
    }
}

#[derive(Debug, Clone)]
struct Quote {
    /// (product, warehouse, quantity) held while the quote is a draft.
    items: Vec<(usize, usize, i64)>,
    draft: bool,
}

/// What the test believes: the stock of each (product, warehouse), and every document.
struct Model {
    products: Vec<String>,
    warehouses: Vec<String>,
    on_hand: BTreeMap<(usize, usize), i64>,
    orders: Vec<Order>,
    notes: Vec<Note>,
    quotes: Vec<Quote>,
    /// Every step so far, for the failure message.
    log: Vec<String>,
}

impl Model {
    fn take(&mut self, product: usize, warehouse: usize, quantity: i64) {
        *self.on_hand.entry((product, warehouse)).or_default() -= quantity;
    }

    /// What the model says `(product, warehouse)` holds reserved.
    fn reserved(&self, product: usize, warehouse: usize) -> i64 {
        let by_orders: i64 = self
            .orders
            .iter()
            .filter(|o| o.status == Status::Open && o.reserves)
            .flat_map(|o| o.lines.iter().map(move |l| (o, l)))
            .filter(|(o, l)| l.product == Some(product) && o.warehouse_of(l) == warehouse)
            .map(|(_, l)| (l.quantity - l.moved()).max(0))
            .sum();
        let by_quotes: i64 = self
            .quotes
            .iter()
            .filter(|q| q.draft)
            .flat_map(|q| q.items.iter())
            .filter(|(p, w, _)| *p == product && *w == warehouse)
            .map(|(_, _, q)| q)
            .sum();
        by_orders + by_quotes
    }

    fn history(&self) -> String {
        self.log.join("\n")
    }
}

/// The fixed world every case shares: warehouses, a point of sale, the organization's fiscal profile.
struct World {
    warehouses: Vec<String>,
    point_of_sale: String,
}

async fn world(app: &TestApp) -> World {
    let main = id(&seeded(app, WAREHOUSES, "Depósito principal").await["id"]);
    let second = id(&json(app.post(WAREHOUSES, &json!({ "name": "Depósito 2" })).await, 201).await["data"]["id"]);
    let point_of_sale = id(&seeded(app, "/api/v1/points-of-sale", "Punto de venta 1").await["id"]);
    crate::sales::fiscal_profile(app, "Responsable Inscripto").await;
    World { warehouses: vec![main, second], point_of_sale }
}

/// Follows every page of a cursor list (`path` already has its query).
async fn every_page(app: &TestApp, path: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    let mut url = format!("{path}&limit=100");
    for _ in 0..100 {
        let page = style_a(app.get(&url).await, 200).await;
        seen.extend(items(&page));
        if page["has_more"] != true {
            return seen;
        }
        let cursor = page["next_cursor"].as_str().unwrap_or_else(|| panic!("next_cursor with has_more: {page}"));
        url = format!("{path}&limit=100&cursor={cursor}");
    }
    panic!("{path} did not end after 100 pages");
}

/// The invariants after a step: every listed level's `reserved` and `on_hand` as the model says, its
/// ledger summing to its `on_hand`; every order as the model has it.
async fn check(app: &TestApp, model: &Model, touched: Option<usize>) {
    for (p, product) in model.products.iter().enumerate() {
        let levels = every_page(app, &format!("/api/v1/inventory?product_id={product}")).await;
        for (w, warehouse) in model.warehouses.iter().enumerate() {
            let expected_on_hand = model.on_hand.get(&(p, w)).copied().unwrap_or(0);
            let expected_reserved = model.reserved(p, w);
            let Some(level) = levels.iter().find(|l| l["warehouse"]["id"] == warehouse.as_str()) else {
                // A level no stock ever moved in is not listed (its reservations cannot be read).
                assert_eq!(expected_on_hand, 0, "product {p} warehouse {w} is not listed\n{}", model.history());
                continue;
            };
            let (on_hand, reserved) = (units(&level["on_hand"]), units(&level["reserved"]));
            let ledger =
                every_page(app, &format!("/api/v1/inventory/movements?product_id={product}&warehouse_id={warehouse}"))
                    .await;
            let summed: i64 = ledger.iter().map(|m| units(&m["quantity"])).sum();
            assert_eq!(
                summed,
                on_hand,
                "product {p} warehouse {w}: the ledger sums to {summed}, on_hand is {on_hand}\n{}",
                model.history()
            );
            assert_eq!(
                on_hand,
                expected_on_hand,
                "product {p} warehouse {w}: on_hand {on_hand}, the opening stock less what left is {expected_on_hand}\n{}",
                model.history()
            );
            assert_eq!(
                reserved,
                expected_reserved,
                "product {p} warehouse {w}: reserved {reserved}, open orders and quotes hold {expected_reserved}\n{}",
                model.history()
            );
        }
    }
    let orders: Vec<usize> = match touched {
        Some(o) => vec![o],
        None => (0..model.orders.len()).collect(),
    };
    for o in orders {
        let order = &model.orders[o];
        let read = style_a(app.get(&format!("{ORDERS}/{}", order.id)).await, 200).await["data"].clone();
        let status = match order.status {
            Status::Open => "open",
            Status::Completed => "completed",
            Status::Cancelled => "cancelled",
        };
        assert_eq!(read["status"], status, "order {o}: {read}\n{}", model.history());
        let lines = read["lines"].as_array().expect("lines");
        assert_eq!(lines.len(), order.lines.len(), "order {o}: {read}\n{}", model.history());
        for (line, seen) in order.lines.iter().zip(lines) {
            assert_eq!(seen["id"], line.id.as_str(), "order {o}: {read}\n{}", model.history());
            let got = (units(&seen["quantity"]), units(&seen["delivered"]), units(&seen["billed"]));
            assert_eq!(got, (line.quantity, line.delivered, line.billed), "order {o}: {read}\n{}", model.history());
        }
    }
}

/// The model's lines of an order as the API answered them (warehouses named by the model's indexes).
fn lines_of(model: &Model, order: &Value) -> Vec<Line> {
    order["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| Line {
            id: id(&l["id"]),
            product: l["product_id"].as_str().map(|p| model.products.iter().position(|x| x == p).expect("a product")),
            quantity: units(&l["quantity"]),
            delivered: units(&l["delivered"]),
            billed: units(&l["billed"]),
            warehouse: l["warehouse_id"].as_str().map(|w| model.warehouses.iter().position(|x| x == w).expect("w")),
        })
        .collect()
}

fn warehouse_index(model: &Model, value: &Value) -> usize {
    let text = value.as_str().unwrap_or_else(|| panic!("no warehouse: {value}"));
    model.warehouses.iter().position(|w| w == text).expect("a known warehouse")
}

async fn create_order(app: &TestApp, rng: &mut StdRng, model: &mut Model, customer: &str) -> Option<usize> {
    let count = rng.random_range(1..=3);
    let mut lines = Vec::new();
    for _ in 0..count {
        if rng.random_bool(0.15) {
            lines.push(json!({ "name": "Flete", "quantity": rng.random_range(1..=2), "unit_price": 500 }));
        } else {
            let p = rng.random_range(0..model.products.len());
            let quantity = rng.random_range(1..=5);
            lines.push(json!({ "product_id": model.products[p], "quantity": quantity, "unit_price": 1000 }));
        }
    }
    let assigned = rng.random_range(0..model.warehouses.len());
    let reserves = rng.random_bool(0.7);
    let body = json!({ "customer_id": customer, "assigned_warehouse_id": model.warehouses[assigned],
        "reservation": { "enabled": reserves }, "lines": lines });
    model.log.push(format!("create order {} (reserves {reserves}): {body}", model.orders.len()));
    let created =
        expect(keyed(app, Method::POST, ORDERS, Some(&body)).await, 201, "create order").await["data"].clone();
    let lines = lines_of(model, &created);
    model.orders.push(Order { id: id(&created["id"]), lines, assigned, reserves, status: Status::Open });
    Some(model.orders.len() - 1)
}

async fn edit_order(app: &TestApp, rng: &mut StdRng, model: &mut Model) -> Option<usize> {
    let o = rng.random_range(0..model.orders.len());
    let read = style_a(app.get(&format!("{ORDERS}/{}", model.orders[o].id)).await, 200).await["data"].clone();
    let order = model.orders[o].clone();
    let mut below = false;
    let mut sent = Vec::new();
    let mut kept = Vec::new();
    for (i, line) in order.lines.iter().enumerate() {
        let floor = line.moved();
        // An untouched line may go; a delivered or billed one stays.
        if floor == 0 && rng.random_bool(0.2) && order.lines.len() > 1 && i > 0 {
            continue;
        }
        let quantity = if floor >= 2 && rng.random_bool(0.3) {
            below = true;
            rng.random_range(1..floor)
        } else {
            rng.random_range(floor.max(1)..=floor + 4)
        };
        let price = read["lines"][i]["unit_price"].clone();
        let mut body = json!({ "id": line.id, "quantity": quantity, "unit_price": price });
        match line.product {
            Some(p) => body["product_id"] = json!(model.products[p]),
            None => body["name"] = json!("Flete"),
        }
        sent.push(body);
        kept.push((i, quantity));
    }
    let added = rng.random_bool(0.3).then(|| (rng.random_range(0..model.products.len()), rng.random_range(1..=4)));
    if let Some((p, quantity)) = added {
        sent.push(json!({ "product_id": model.products[p], "quantity": quantity, "unit_price": 1000 }));
    }
    let assigned = rng.random_range(0..model.warehouses.len());
    let body = json!({ "lines": sent, "assigned_warehouse_id": model.warehouses[assigned],
        "expected_updated_at": read["updated_at"] });
    let status = match (order.status, below) {
        (Status::Open, false) => 200,
        (Status::Open, true) => 422,
        _ => 409,
    };
    model.log.push(format!("edit order {o} (expect {status}): {body}"));
    let path = format!("{ORDERS}/{}", order.id);
    let answer = expect(keyed(app, Method::PATCH, &path, Some(&body)).await, status, "edit order").await;
    if status != 200 {
        return Some(o);
    }
    let answered = lines_of(model, &answer["data"]);
    let mut lines = Vec::new();
    for (at, (i, quantity)) in kept.iter().enumerate() {
        // Another warehouse takes every line with it; the order's own leaves a kept line where it was.
        let warehouse = order.lines[*i].warehouse.filter(|_| assigned == order.assigned);
        let line = Line { quantity: *quantity, warehouse, ..order.lines[*i].clone() };
        assert_eq!(answered[at].id, line.id, "kept lines keep their ids\n{}", model.history());
        lines.push(line);
    }
    if added.is_some() {
        lines.push(answered.last().expect("the new line").clone());
    }
    let order = &mut model.orders[o];
    order.lines = lines;
    order.assigned = assigned;
    order.settle();
    Some(o)
}

async fn deliver(app: &TestApp, rng: &mut StdRng, model: &mut Model, world: &World) -> Option<usize> {
    let o = rng.random_range(0..model.orders.len());
    let order = model.orders[o].clone();
    let everything = rng.random_bool(0.15);
    let mut items = Vec::new();
    let mut over = false;
    if !everything {
        for line in &order.lines {
            // Each line with some chance; the last one when none was taken, so a note lists something.
            let last = items.is_empty() && line.id == order.lines.last().expect("a line").id;
            if !(rng.random_bool(0.6) || last) {
                continue;
            }
            let pending = line.quantity - line.delivered;
            let quantity = if pending == 0 || rng.random_bool(0.15) {
                over = true;
                pending + rng.random_range(1..=2)
            } else {
                rng.random_range(1..=pending)
            };
            items.push((line.id.clone(), quantity));
        }
    }
    let nothing_pending = order.lines.iter().all(|l| l.delivered >= l.quantity);
    let status = match (order.status, everything, over) {
        (Status::Open, true, _) if nothing_pending => 400,
        (Status::Open, true, _) => 201,
        (Status::Open, false, true) => 422,
        (Status::Open, false, false) => 201,
        _ => 409,
    };
    let mut body =
        json!({ "origin": { "type": "order", "order_id": order.id }, "point_of_sale_id": world.point_of_sale });
    if !everything {
        body["items"] = items.iter().map(|(line, q)| json!({ "order_line_id": line, "quantity": q })).collect();
    }
    model.log.push(format!("deliver order {o} (expect {status}): {body}"));
    let answer = expect(keyed(app, Method::POST, NOTES, Some(&body)).await, status, "delivery note").await;
    if status != 201 {
        return Some(o);
    }
    let delivered: Vec<(String, i64)> = if everything {
        order
            .lines
            .iter()
            .filter(|l| l.quantity > l.delivered)
            .map(|l| (l.id.clone(), l.quantity - l.delivered))
            .collect()
    } else {
        items
    };
    let note_lines = answer["data"]["lines"].as_array().expect("lines").len();
    assert_eq!(note_lines, delivered.len(), "the note lists what it delivered: {answer}\n{}", model.history());
    let mut lines = Vec::new();
    for (line_id, quantity) in delivered {
        let order = &mut model.orders[o];
        let at = order.lines.iter().position(|l| l.id == line_id).expect("the line");
        let warehouse = order.warehouse_of(&order.lines[at]);
        let line = &mut order.lines[at];
        let before = line.moved();
        line.delivered += quantity;
        let leaving = line.moved() - before;
        let took = match (line.product, leaving > 0) {
            (Some(p), true) => {
                model.take(p, warehouse, leaving);
                Some(warehouse)
            }
            _ => None,
        };
        lines.push((line_id, quantity, took));
    }
    let warehouse = lines.iter().any(|l| l.2.is_some()).then_some(model.orders[o].assigned);
    model.orders[o].settle();
    model.notes.push(Note { id: id(&answer["data"]["id"]), order: o, lines, warehouse, deleted: false });
    Some(o)
}

async fn bill(app: &TestApp, rng: &mut StdRng, model: &mut Model, world: &World, customer: &str) -> Option<usize> {
    let o = rng.random_range(0..model.orders.len());
    let order = model.orders[o].clone();
    let products: Vec<&Line> = order.lines.iter().filter(|l| l.product.is_some()).collect();
    if products.is_empty() {
        return None;
    }
    let mut billed = Vec::new();
    let mut over = false;
    for line in products.iter().take(rng.random_range(1..=2)) {
        let unbilled = line.quantity - line.billed;
        let quantity = if unbilled == 0 || rng.random_bool(0.15) {
            over = true;
            unbilled + rng.random_range(1..=2)
        } else {
            rng.random_range(1..=unbilled)
        };
        billed.push((line.id.clone(), line.product.expect("a product"), quantity));
    }
    let status = match (order.status, over) {
        (Status::Open, false) => 201,
        (Status::Open, true) => 422,
        _ => 409,
    };
    let items: Vec<Value> = billed
        .iter()
        .map(|(line, p, q)| {
            json!({ "productId": model.products[*p], "quantity": q, "unitPrice": 1210, "orderLineId": line })
        })
        .collect();
    let body = json!({ "voucherType": 6, "pointOfSaleId": world.point_of_sale, "invoiceDate": today(),
        "customerId": customer, "invoice": false, "orderId": order.id, "items": items });
    model.log.push(format!("bill order {o} (expect {status}): {body}"));
    expect(keyed(app, Method::POST, SALES, Some(&body)).await, status, "sale billing an order").await;
    if status != 201 {
        return Some(o);
    }
    for (line_id, p, quantity) in billed {
        let order = &mut model.orders[o];
        let at = order.lines.iter().position(|l| l.id == line_id).expect("the line");
        let warehouse = order.warehouse_of(&order.lines[at]);
        let line = &mut order.lines[at];
        let before = line.moved();
        line.billed += quantity;
        let leaving = line.moved() - before;
        if leaving > 0 {
            model.take(p, warehouse, leaving);
        }
    }
    model.orders[o].settle();
    Some(o)
}

async fn delete_note(app: &TestApp, rng: &mut StdRng, model: &mut Model) -> Option<usize> {
    let live: Vec<usize> = (0..model.notes.len()).filter(|n| !model.notes[*n].deleted).collect();
    if live.is_empty() {
        return None;
    }
    let n = live[rng.random_range(0..live.len())];
    let note = model.notes[n].clone();
    model.log.push(format!("delete note {n} of order {} (expect 200)", note.order));
    expect(keyed(app, Method::DELETE, &format!("{NOTES}/{}", note.id), None).await, 200, "delete note").await;
    // An order its lines completed opens again (one completed by hand stays closed).
    let order = &mut model.orders[note.order];
    if order.status == Status::Completed && order.served() {
        order.status = Status::Open;
    }
    // What leaves the lines unmoved again comes back where the note took it, even if the order's
    // warehouse changed since (a unit a bill took stays out).
    for (line_id, quantity, took) in &note.lines {
        let order = &model.orders[note.order];
        let at = order.lines.iter().position(|l| &l.id == line_id).expect("the line");
        let warehouse = note.back_to(&order.lines[at], *took, order, &order.lines);
        let line = &mut model.orders[note.order].lines[at];
        let before = line.moved();
        line.delivered = (line.delivered - quantity).max(0);
        let returning = before - line.moved();
        if let (Some(p), true) = (line.product, returning > 0) {
            model.take(p, warehouse, -returning);
        }
    }
    model.notes[n].deleted = true;
    Some(note.order)
}

async fn close(app: &TestApp, rng: &mut StdRng, model: &mut Model, cancel: bool) -> Option<usize> {
    let o = rng.random_range(0..model.orders.len());
    let order = &model.orders[o];
    let status = match (order.status, cancel, order.started()) {
        (Status::Open, true, true) => 409,
        (Status::Open, _, _) => 200,
        _ => 409,
    };
    let what = if cancel { "cancel" } else { "complete" };
    model.log.push(format!("{what} order {o} (expect {status})"));
    let path = format!("{ORDERS}/{}/{what}", order.id);
    expect(keyed(app, Method::POST, &path, None).await, status, what).await;
    if status == 200 {
        model.orders[o].status = if cancel { Status::Cancelled } else { Status::Completed };
    }
    Some(o)
}

async fn quote(app: &TestApp, rng: &mut StdRng, model: &mut Model, customer: &str) -> Option<usize> {
    let mut held = Vec::new();
    for _ in 0..rng.random_range(1..=2) {
        let (p, w) = (rng.random_range(0..model.products.len()), rng.random_range(0..model.warehouses.len()));
        held.push((p, w, rng.random_range(1..=4)));
    }
    let items: Vec<Value> = held
        .iter()
        .map(|(p, w, q)| {
            json!({ "product_id": model.products[*p], "quantity": q, "unit_price": 12100,
                "warehouse_id": model.warehouses[*w] })
        })
        .collect();
    let body = json!({ "customer_id": customer, "reservation": { "enabled": true, "reserved_through_date": today() },
        "items": items });
    let convert = rng.random_bool(0.7);
    model.log.push(format!("quote (convert {convert}): {body}"));
    let created = expect(keyed(app, Method::POST, QUOTES, Some(&body)).await, 201, "quote").await["data"].clone();
    model.quotes.push(Quote { items: held, draft: true });
    if !convert {
        return None;
    }
    let path = format!("{QUOTES}/{}/convert", id(&created["id"]));
    let order = expect(keyed(app, Method::POST, &path, None).await, 201, "convert").await["data"].clone();
    model.quotes.last_mut().expect("the quote").draft = false;
    let assigned = warehouse_index(model, &order["assigned_warehouse_id"]);
    let lines = lines_of(model, &order);
    model.orders.push(Order { id: id(&order["id"]), lines, assigned, reserves: true, status: Status::Open });
    Some(model.orders.len() - 1)
}

async fn run_case(app: &TestApp, world: &World, case: u64, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let customer = id(
        &json(app.post("/api/v1/customers", &json!({ "name": format!("Cliente {case}") })).await, 201).await["data"]["id"]
    );
    let mut model = Model {
        products: Vec::new(),
        warehouses: world.warehouses.clone(),
        on_hand: BTreeMap::new(),
        orders: Vec::new(),
        notes: Vec::new(),
        quotes: Vec::new(),
        log: vec![format!("case {case}, seed {seed}")],
    };
    for p in 0..rng.random_range(2..=3) {
        let mut stocks = Vec::new();
        for (w, warehouse) in world.warehouses.iter().enumerate() {
            if w == 0 || rng.random_bool(0.5) {
                let quantity = rng.random_range(5..=30);
                stocks.push(json!({ "warehouseId": warehouse, "quantity": quantity }));
                model.on_hand.insert((p, w), quantity);
            }
        }
        let body = json!({ "name": format!("Producto {case}-{p}"), "sku": format!("P{case}-{p}"), "price": 12100,
            "warehouseStocks": stocks });
        model.log.push(format!("product {p}: {body}"));
        let created = json(app.post_keyed("/api/v1/products", &body).await, 201).await;
        model.products.push(id(&created["data"]["id"]));
    }
    check(app, &model, None).await;
    for _ in 0..STEPS {
        let touched = match rng.random_range(0..100) {
            _ if model.orders.is_empty() => create_order(app, &mut rng, &mut model, &customer).await,
            0..15 => create_order(app, &mut rng, &mut model, &customer).await,
            15..30 => edit_order(app, &mut rng, &mut model).await,
            30..50 => deliver(app, &mut rng, &mut model, world).await,
            50..65 => bill(app, &mut rng, &mut model, world, &customer).await,
            65..75 => delete_note(app, &mut rng, &mut model).await,
            75..82 => close(app, &mut rng, &mut model, true).await,
            82..88 => close(app, &mut rng, &mut model, false).await,
            _ => quote(app, &mut rng, &mut model, &customer).await,
        };
        check(app, &model, touched).await;
    }
    check(app, &model, None).await;
}

#[sqlx::test(migrations = "../schema")]
async fn random_order_operations_keep_reservations_and_stock_consistent(pool: PgPool) {
    let seed = std::env::var("ORDER_PROPERTIES_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| time::OffsetDateTime::now_utc().unix_timestamp_nanos() as u64);
    let _report = SeedReport(seed);
    eprintln!("order_properties seed {seed}");
    let app = TestApp::spawn(pool).await;
    let world = world(&app).await;
    for case in 0..CASES {
        run_case(&app, &world, case, seed.wrapping_add(case)).await;
    }
}

/// Creates an endpoint for `events` at the receiver's `path`.
async fn endpoint(app: &TestApp, receiver: &Receiver, path: &str, events: &[&str]) -> String {
    let body = json!({ "label": "Pedidos", "url": receiver.url(path), "enabled_events": events,
        "api_version": "2026-06-29" });
    id(&json(keyed(app, Method::POST, "/api/v1/webhook-endpoints", Some(&body)).await, 201).await["data"]["id"])
}

#[sqlx::test(migrations = "../schema")]
async fn each_order_webhook_arrives_once_per_transition(pool: PgPool) {
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(crate::webhooks::sender(&receiver))).await;
    let world = world(&app).await;
    let subscribed = [
        "order.created",
        "order.updated",
        "order.partially_fulfilled",
        "order.fulfilled",
        "order.completed",
        "order.cancelled",
        "fulfillment.created",
    ];
    let hook = endpoint(&app, &receiver, "/orders", &subscribed).await;
    let customer = id(&json(app.post("/api/v1/customers", &json!({ "name": "Ana" })).await, 201).await["data"]["id"]);
    let (main, pos) = (&world.warehouses[0], &world.point_of_sale);
    let body = json!({ "name": "Mate", "sku": "MATE", "price": 12100,
        "warehouseStocks": [{ "warehouseId": main, "quantity": 10 }] });
    let mate = id(&json(app.post_keyed("/api/v1/products", &body).await, 201).await["data"]["id"]);
    let order = json!({ "customer_id": customer, "assigned_warehouse_id": main, "reservation": { "enabled": true },
        "lines": [{ "product_id": mate, "quantity": 4, "unit_price": 1000 }] });

    // One order through create → partial delivery → full delivery → billing (which completes it).
    let delivered = style_a(app.post_keyed(ORDERS, &order).await, 201).await["data"].clone();
    let (delivered_id, line) = (id(&delivered["id"]), delivered["lines"][0]["id"].clone());
    let part = json!({ "origin": { "type": "order", "order_id": delivered_id }, "point_of_sale_id": pos,
        "items": [{ "order_line_id": line, "quantity": 1 }] });
    style_a(app.post_keyed(NOTES, &part).await, 201).await;
    let rest = json!({ "origin": { "type": "order", "order_id": delivered_id }, "point_of_sale_id": pos });
    style_a(app.post_keyed(NOTES, &rest).await, 201).await;
    let sale = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": today(), "customerId": customer,
        "invoice": false, "orderId": delivered_id,
        "items": [{ "productId": mate, "quantity": 4, "unitPrice": 1210, "orderLineId": line }] });
    json(app.post_keyed(SALES, &sale).await, 201).await;
    let read = style_a(app.get(&format!("{ORDERS}/{delivered_id}")).await, 200).await["data"].clone();
    assert_eq!(read["status"], "completed");

    // Another through create → cancel.
    let cancelled = id(&style_a(app.post_keyed(ORDERS, &order).await, 201).await["data"]["id"]);
    style_a(keyed(&app, Method::POST, &format!("{ORDERS}/{cancelled}/cancel"), None).await, 200).await;

    let mut expected: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    expected.insert(
        delivered_id.clone(),
        vec![
            "fulfillment.created",
            "fulfillment.created",
            "order.completed",
            "order.created",
            "order.fulfilled",
            "order.partially_fulfilled",
            "order.updated",
            "order.updated",
            "order.updated",
        ],
    );
    expected.insert(cancelled.clone(), vec!["order.cancelled", "order.created"]);
    let total: usize = expected.values().map(Vec::len).sum();
    // Every delivery recorded and sent (the store keeps one per endpoint and event)...
    eventually(Duration::from_secs(30), "every delivery succeeded", || async {
        let list = json(app.get(&format!("/api/v1/webhook-endpoints/{hook}/deliveries?limit=100")).await, 200).await;
        let done = items(&list);
        (done.len() >= total && done.iter().all(|d| d["status"] == "succeeded")).then_some(())
    })
    .await;
    let got = receiver.wait_for("/orders", total).await;
    // ...and the receiver got each exactly once.
    let mut received: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut ids = Vec::new();
    for delivery in &got {
        let body = delivery.json();
        let object = &body["data"]["object"];
        let order_id = match body["type"].as_str() {
            Some("fulfillment.created") => id(&object["origin"]["order_id"]),
            _ => id(&object["id"]),
        };
        received.entry(order_id).or_default().push(id(&body["type"]));
        ids.push(id(&body["id"]));
    }
    for types in received.values_mut() {
        types.sort();
    }
    let expected: BTreeMap<String, Vec<String>> =
        expected.into_iter().map(|(k, v)| (k, v.into_iter().map(str::to_owned).collect())).collect();
    assert_eq!(received, expected, "per order, each event type once per transition");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), total, "no event delivered twice");
}

#[sqlx::test(migrations = "../schema")]
async fn an_order_webhook_shows_the_orders_net_prices_and_its_amounts_as_the_api_reads_them(pool: PgPool) {
    use crate::helpers::{customer, main_warehouse, stocked_product};
    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with_sender(pool, Some(crate::webhooks::sender(&receiver))).await;
    endpoint(&app, &receiver, "/orders", &["order.created"]).await;
    let main = main_warehouse(&app).await;
    let ana = customer(&app, "Ana Pérez").await;
    let mate = stocked_product(&app, "MATE", &main, 10).await;
    // A converted quote's order keeps the quote's VAT-inclusive prices; the API reads them net.
    let quote = json!({ "customer_id": ana, "global_discount_amount": 500,
        "items": [{ "product_id": mate, "quantity": 3, "unit_price": 12100 }] });
    let quote = id(&style_a(app.post_keyed(QUOTES, &quote).await, 201).await["data"]["id"]);
    for step in ["send", "accept"] {
        style_a(keyed(&app, Method::POST, &format!("{QUOTES}/{quote}/{step}"), None).await, 200).await;
    }
    let converted = keyed(&app, Method::POST, &format!("{QUOTES}/{quote}/convert"), None).await;
    let order = id(&style_a(converted, 201).await["data"]["id"]);
    let read = style_a(app.get(&format!("{ORDERS}/{order}")).await, 200).await["data"].clone();
    assert_eq!(read["prices_include_tax"], true);
    assert_eq!(read["lines"][0]["unit_price"], 10000, "net of 21% VAT");

    let got = receiver.wait_for("/orders", 1).await;
    let body = got[0].json();
    let object = &body["data"]["object"];
    assert_eq!((body["type"].as_str(), object["id"].as_str()), (Some("order.created"), Some(order.as_str())));
    assert_eq!(object["lines"][0]["unit_price"], read["lines"][0]["unit_price"], "the webhook's line price is the API's");
    let amounts = json!({ "discount": read["discount_amount"], "subtotal": read["subtotal"], "tax": read["tax_amount"],
        "total": read["total"] });
    assert_eq!(object["amounts"], amounts);
    assert_eq!(object["amounts"]["total"], 3 * 12100 - 500, "the quote's VAT-inclusive total less its discount");
}
