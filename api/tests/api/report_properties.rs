//! A property test of reports: a random history (sales at an electronic and at a manual point of sale
//! over many past dates, credit notes, purchases received into two warehouses, customer and supplier
//! payments and their voids, stock movements, products moved between categories and tagged and
//! untagged), then random queries (every report, random groups, filters, statuses and sorts, today or
//! as of a random position or instant) answered by the service, each checked against a brute-force
//! recomputation from the stored events. `REPORT_PROPERTIES_SEED` picks the history (printed when a run
//! fails), `REPORT_PROPERTIES_STEPS` its length (default 120; halfway, the event store's positions jump past a
//! rollup epoch, as rolled-back appends leave gaps, so answers as of a position cross epochs) and `REPORT_PROPERTIES_QUERIES` how many
//! queries are checked (default 80).

use crate::helpers::{CATEGORIES, Rng, TestApp, WAREHOUSES, json, seeded};
use crate::reports::{REPORTS, folded};
use crate::sales::{fiscal_profile, payment_method, point_of_sale, sell};
use crate::treasury::open;
use events::catalogue::{Currency, LocationKind, StockEffect, ar_date, stock_effect};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::{BTreeMap, BTreeSet};
use time::{Date, Duration as Days, OffsetDateTime};
use uuid::Uuid;

/// One fact as the brute force derives it from an event.
#[derive(Debug, Clone)]
struct Fact {
    report: &'static str,
    position: i64,
    day: Date,
    status: Option<String>,
    document: Uuid,
    keys: BTreeMap<&'static str, Option<String>>,
    tags: Vec<String>,
    /// count, quantity (thousandths), net, tax, total, cost, amount, fee, value
    sums: [i64; 9],
}

const SUMS: [&str; 9] = ["count", "quantity", "net", "tax", "total", "cost", "amount", "fee", "value"];

fn thousandths(value: &Value) -> i64 {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let quantity: events::domain::Quantity = text.parse().expect("a quantity");
    quantity.thousandths()
}

fn date(value: &Value) -> Date {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(value.as_str().expect("a date"), &format).expect("a date")
}

fn id(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

/// Cents times thousandths of a unit, half away from zero.
fn times(thousandths: i64, cents: i64) -> i64 {
    let exact = i128::from(thousandths) * i128::from(cents);
    let rounded = (exact.abs() + 500) / 1000;
    (if exact < 0 { -rounded } else { rounded }) as i64
}

#[derive(Default, Clone)]
struct Variant {
    category: Option<String>,
    tags: BTreeSet<String>,
    cost: i64,
}

struct Stored {
    position: i64,
    stream_type: String,
    stream_id: Uuid,
    event_type: String,
    schema_version: i32,
    data: Value,
    recorded_at: OffsetDateTime,
}

/// Every fact of the organization's events, in the order they were folded.
fn brute_force(events: &[Stored]) -> Vec<Fact> {
    let mut variants: BTreeMap<String, Variant> = BTreeMap::new();
    let mut facts: Vec<Fact> = Vec::new();
    for event in events {
        let d = &event.data;
        let base = |report: &'static str, day: Date| Fact {
            report,
            position: event.position,
            day,
            status: None,
            document: event.stream_id,
            keys: BTreeMap::new(),
            tags: Vec::new(),
            sums: [0; 9],
        };
        let with_product = |mut fact: Fact, variant: Option<String>, variants: &BTreeMap<String, Variant>| {
            let state = variant.as_ref().and_then(|v| variants.get(v)).cloned().unwrap_or_default();
            fact.keys.insert("category", if variant.is_some() { state.category.clone() } else { None });
            fact.tags = if variant.is_some() { state.tags.iter().cloned().collect() } else { Vec::new() };
            fact.keys.insert("product", variant);
            fact
        };
        match (event.stream_type.as_str(), event.event_type.as_str()) {
            ("product", _) => {
                for variant in d["variants"].as_array().expect("variants") {
                    let state = variants.entry(id(&variant["id"]).expect("id")).or_default();
                    state.category = id(&d["shared"]["category_id"]);
                    state.cost = variant["cost"].as_i64().expect("cost");
                }
            }
            ("tag", "TagApplied" | "TagRemoved") if d["resource_type"] == "product" => {
                let tag = event.stream_id.to_string();
                for target in d["resource_ids"].as_array().expect("ids") {
                    let state = variants.entry(id(target).expect("id")).or_default();
                    if event.event_type == "TagApplied" {
                        state.tags.insert(tag.clone());
                    } else {
                        state.tags.remove(&tag);
                    }
                }
            }
            ("sale", "SaleRecorded") => {
                let sign = if d["document_kind"] == "credit_note" { -1 } else { 1 };
                for line in d["lines"].as_array().expect("lines") {
                    let mut fact = with_product(base("sales", date(&d["invoice_date"])), id(&line["variant_id"]), &variants);
                    fact.status = id(&d["fiscal"]["status"]);
                    let customer = id(&d["customer"]["id"]).filter(|c| c != &Uuid::nil().to_string());
                    fact.keys.insert("customer", customer);
                    fact.keys.insert("warehouse", id(&line["warehouse_id"]));
                    fact.keys.insert("point_of_sale", id(&d["point_of_sale_id"]));
                    fact.keys.insert("voucher_type", Some(d["voucher_type"].to_string()));
                    fact.keys.insert("currency", id(&d["currency"]));
                    let quantity = thousandths(&line["quantity"]);
                    let cost = line["unit_cost"].as_i64().map_or(0, |unit| times(quantity, unit));
                    let cents = |k: &str| line[k].as_i64().expect("cents");
                    fact.sums = [sign, sign * quantity, sign * cents("net"), sign * cents("vat"), sign * cents("total"), sign * cost, 0, 0, 0];
                    facts.push(fact);
                }
            }
            ("sale", "SaleFiscalChanged") => {
                let status = id(&d["fiscal"]["status"]);
                let mine: Vec<Fact> = facts.iter().filter(|f| f.report == "sales" && f.document == event.stream_id).cloned().collect();
                let before = mine.last().and_then(|f| f.status.clone());
                if before != status {
                    let first = mine.first().map(|f| f.position);
                    let recorded: Vec<Fact> = mine.into_iter().filter(|f| Some(f.position) == first).collect();
                    for f in &recorded {
                        let mut out = f.clone();
                        out.position = event.position;
                        out.status = before.clone();
                        out.sums = f.sums.map(|s| -s);
                        facts.push(out);
                    }
                    for f in recorded {
                        facts.push(Fact { position: event.position, status: status.clone(), ..f });
                    }
                }
            }
            ("purchase", _) => {
                for line in d["lines"].as_array().expect("lines") {
                    let mut fact = with_product(base("purchases", date(&d["invoice_date"])), id(&line["variant_id"]), &variants);
                    fact.keys.insert("supplier", id(&d["supplier_id"]));
                    fact.keys.insert("warehouse", id(&d["warehouse_id"]));
                    fact.keys.insert("voucher_type", Some(d["voucher_type"].to_string()));
                    fact.keys.insert("currency", id(&d["currency"]));
                    let cents = |k: &str| line[k].as_i64().expect("cents");
                    fact.sums = [1, thousandths(&line["quantity"]), cents("net_ars"), cents("vat_ars"), cents("total_ars"), 0, 0, 0, 0];
                    facts.push(fact);
                }
                // The stock it received (below) is worth the costs it set.
                for update in d["cost_updates"].as_array().expect("cost updates") {
                    let state = variants.entry(id(&update["variant_id"]).expect("id")).or_default();
                    state.cost = update["current"].as_i64().expect("cost");
                }
            }
            ("customer_payment" | "supplier_payment", kind) if kind.ends_with("Recorded") => {
                let customer = event.stream_type == "customer_payment";
                for line in d["lines"].as_array().expect("lines") {
                    let mut fact = base("payments", date(&d["occurred_on"]));
                    fact.status = Some("recorded".into());
                    fact.keys.insert("customer", if customer { id(&d["contact_id"]) } else { None });
                    fact.keys.insert("supplier", if customer { None } else { id(&d["contact_id"]) });
                    fact.keys.insert("side", Some(if customer { "customer" } else { "supplier" }.into()));
                    fact.keys.insert("payment_method", id(&line["method_id"]));
                    fact.keys.insert("location", id(&line["location"]["id"]));
                    fact.keys.insert("currency", Some(if line["rate"].is_null() { "PES" } else { "DOL" }.into()));
                    fact.sums = [1, 0, 0, 0, 0, 0, line["pesos"].as_i64().expect("pesos"), line["fee"].as_i64().expect("fee"), 0];
                    facts.push(fact);
                }
            }
            ("customer_payment" | "supplier_payment", kind) if kind.ends_with("Voided") => {
                let day = date(&d["reversal"]["occurred_on"]);
                let recorded: Vec<Fact> = facts
                    .iter()
                    .filter(|f| f.report == "payments" && f.document == event.stream_id && f.status.as_deref() == Some("recorded"))
                    .cloned()
                    .collect();
                for f in recorded {
                    facts.push(Fact { position: event.position, day, status: Some("voided".into()), sums: f.sums.map(|s| -s), ..f });
                }
            }
            _ => {}
        }
        // Stock, as the catalogue says each event moves it.
        let effect = stock_effect(&event.stream_type, &event.event_type, event.schema_version, &event.data).expect("decodes");
        let changes: Vec<(String, String, i64, Date)> = match effect {
            Some(StockEffect::Changes { occurred_on, changes, .. }) => changes
                .into_iter()
                .map(|c| (c.variant_id.to_string(), c.warehouse_id.to_string(), c.quantity.thousandths(), occurred_on))
                .collect(),
            Some(StockEffect::Opening(opening)) => opening
                .into_iter()
                .map(|o| (o.variant_id.to_string(), o.warehouse_id.to_string(), o.quantity.thousandths(), ar_date(event.recorded_at)))
                .collect(),
            _ => Vec::new(),
        };
        for (variant, warehouse, quantity, day) in changes {
            let cost = variants.get(&variant).map_or(0, |v| v.cost);
            let mut fact = with_product(base("inventory", day), Some(variant), &variants);
            fact.keys.insert("warehouse", Some(warehouse));
            fact.sums = [1, quantity, 0, 0, 0, 0, 0, 0, times(quantity, cost)];
            facts.push(fact);
        }
    }
    facts
}

fn period(group: &str, day: Date) -> String {
    match group {
        "week" => {
            let (year, week, _) = day.to_iso_week_date();
            format!("{year}-W{week:02}")
        }
        "month" => format!("{}-{:02}", day.year(), u8::from(day.month())),
        "year" => day.year().to_string(),
        _ => day.to_string(),
    }
}

/// The keys of `group` a fact counts under.
fn keys_of(fact: &Fact, group: &str) -> Vec<Option<String>> {
    match group {
        "day" | "week" | "month" | "year" => vec![Some(period(group, fact.day))],
        "tag" if fact.tags.is_empty() => vec![None],
        "tag" => fact.tags.iter().cloned().map(Some).collect(),
        other => vec![fact.keys.get(other).cloned().flatten()],
    }
}

/// What a query answers, grouped: keys to metric sums, and the totals.
type Answer = (BTreeMap<Vec<Option<String>>, [i64; 9]>, [i64; 9]);

fn expected(facts: &[Fact], query: &Value, cut: i64) -> Answer {
    let report = query["report"].as_str().expect("report");
    let groups: Vec<&str> = query["group_by"].as_array().map_or(Vec::new(), |g| g.iter().map(|g| g.as_str().expect("group")).collect());
    let filters = &query["filters"];
    let mut grouped: Answer = (BTreeMap::new(), [0; 9]);
    for fact in facts.iter().filter(|f| f.report == report && f.position <= cut) {
        if filters["date_from"].as_str().is_some_and(|from| fact.day < date(&json!(from))) {
            continue;
        }
        if filters["date_to"].as_str().is_some_and(|to| fact.day > date(&json!(to))) {
            continue;
        }
        if let Some(statuses) = filters["status"].as_array()
            && !statuses.iter().any(|s| s.as_str() == fact.status.as_deref())
        {
            continue;
        }
        let mut counted = true;
        let mut tag_filter: Option<Vec<String>> = None;
        for (group, values) in filters.as_object().into_iter().flatten() {
            if ["date_from", "date_to", "status"].contains(&group.as_str()) {
                continue;
            }
            let wanted: Vec<String> = values.as_array().expect("values").iter().map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }).collect();
            if group == "tag" {
                counted &= fact.tags.iter().any(|t| wanted.contains(t));
                tag_filter = Some(wanted);
            } else {
                counted &= keys_of(fact, group)[0].as_ref().is_some_and(|k| wanted.contains(k));
            }
        }
        if !counted {
            continue;
        }
        for (total, add) in grouped.1.iter_mut().zip(fact.sums) {
            *total += add;
        }
        let mut keys: Vec<Vec<Option<String>>> = vec![Vec::new()];
        for group in &groups {
            let mut options = keys_of(fact, group);
            if *group == "tag"
                && let Some(wanted) = &tag_filter
            {
                options.retain(|k| k.as_ref().is_some_and(|k| wanted.contains(k)));
            }
            keys = keys.iter().flat_map(|k| options.iter().map(move |o| [k.clone(), vec![o.clone()]].concat())).collect();
        }
        for key in keys {
            let row = grouped.0.entry(key).or_insert([0; 9]);
            for (sum, add) in row.iter_mut().zip(fact.sums) {
                *sum += add;
            }
        }
    }
    grouped
}

/// A metric of an answer's metrics object as the brute force sums it.
fn metric_value(metric: &str, sums: &[i64; 9]) -> Value {
    let at = |name: &str| sums[SUMS.iter().position(|s| *s == name).expect("sum")];
    match metric {
        "quantity" | "on_hand" => {
            let q = at("quantity");
            json!(events::domain::Quantity::from_thousandths(q).expect("quantity").to_string())
        }
        "margin" => json!(at("net") - at("cost")),
        other => json!(at(other)),
    }
}

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[rng.below(items.len() as u64) as usize]
}

/// A random query over what the history has: a report, up to two groups, random filters.
fn random_query(rng: &mut Rng, facts: &[Fact], today: Date) -> Value {
    use projections::reports::query::{Group, Metric, Report};
    let report = *pick(rng, &Report::ALL);
    let metrics: Vec<&str> = report.metrics().iter().map(|m| m.as_str()).collect();
    let levels = metrics.iter().any(|m| *m == Metric::OnHand.as_str()) && rng.below(2) == 0;
    let metrics: Vec<&str> = metrics.into_iter().filter(|m| levels || !["on_hand", "value"].contains(m)).collect();
    let mut groups: Vec<&str> = Vec::new();
    for _ in 0..rng.below(3) {
        let group = pick(rng, report.groups());
        if groups.contains(&group.as_str()) || (levels && group.is_period()) {
            continue;
        }
        groups.push(group.as_str());
    }
    let mut filters = serde_json::Map::new();
    if rng.below(3) == 0 {
        let mut to = today - Days::days(rng.between(0, 200));
        let mut from = to - Days::days(rng.between(0, 300));
        // Half the ranges are whole months (which the month rollups answer).
        if rng.below(2) == 0 {
            from = from.replace_day(1).expect("a first day");
            to = to.replace_day(1).expect("a first day") - Days::days(1);
        }
        if !levels && from <= to {
            filters.insert("date_from".into(), json!(from.to_string()));
        }
        filters.insert("date_to".into(), json!(to.to_string()));
    }
    let mine: Vec<&Fact> = facts.iter().filter(|f| f.report == report.as_str()).collect();
    if rng.below(3) == 0 && !mine.is_empty() {
        let dimensions: Vec<&Group> = report.groups().iter().filter(|g| !g.is_period()).collect();
        let dimension = pick(rng, &dimensions).as_str();
        let mut values: Vec<Value> = Vec::new();
        for _ in 0..rng.between(1, 2) {
            let fact = pick(rng, &mine);
            let key = keys_of(fact, dimension).into_iter().flatten().next();
            if let Some(key) = key {
                let value = if dimension == "voucher_type" { json!(key.parse::<i64>().expect("code")) } else { json!(key) };
                if !values.contains(&value) {
                    values.push(value);
                }
            }
        }
        if !values.is_empty() {
            filters.insert(dimension.into(), json!(values));
        }
    }
    if !report.statuses().is_empty() && rng.below(4) == 0 {
        filters.insert("status".into(), json!([pick(rng, report.statuses())]));
    }
    let mut query = json!({ "report": report.as_str(), "metrics": metrics, "limit": 1000 });
    if !groups.is_empty() {
        query["group_by"] = json!(groups);
    }
    if !filters.is_empty() {
        query["filters"] = Value::Object(filters);
    }
    if rng.below(3) == 0 {
        query["sort"] = json!([format!("-{}", pick(rng, &metrics))]);
    }
    query
}

#[sqlx::test(migrations = "../schema")]
async fn every_report_equals_a_brute_force_recomputation_from_the_events(pool: PgPool) {
    let seed: u64 =
        std::env::var("REPORT_PROPERTIES_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_F00D_u64);
    let steps: usize = std::env::var("REPORT_PROPERTIES_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(120);
    let queries: usize = std::env::var("REPORT_PROPERTIES_QUERIES").ok().and_then(|s| s.parse().ok()).unwrap_or(80);
    println!("REPORT_PROPERTIES_SEED={seed} REPORT_PROPERTIES_STEPS={steps} REPORT_PROPERTIES_QUERIES={queries}");
    let mut rng = Rng(seed | 1);
    let app = TestApp::spawn(pool).await;
    fiscal_profile(&app, "Responsable Inscripto").await;
    let electronic = point_of_sale(&app).await;
    let manual = commands::organization::create_point_of_sale(&app.pool, app.org_id, 9, Some("Mostrador"), "manual")
        .await
        .expect("manual point of sale")
        .to_string();
    let main = seeded(&app, WAREHOUSES, "Depósito principal").await["id"].as_str().expect("id").to_owned();
    let back = json(app.post(WAREHOUSES, &json!({ "name": "Trastienda" })).await, 201).await["data"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let warehouses = [main.clone(), back];
    let cash = payment_method(&app).await;
    let card = app.created_id("/api/v1/payment-methods", &json!({ "name": "Tarjeta", "feePercentage": "2", "feeFixed": 50 })).await;
    let register = open(&app, app.org_id, LocationKind::CashRegister, "Caja 1", Currency::Pes).await;
    let mut categories = Vec::new();
    for name in ["Bebidas", "Almacén", "Limpieza"] {
        categories.push(json(app.post(CATEGORIES, &json!({ "name": name })).await, 201).await["data"]["id"].as_str().expect("id").to_owned());
    }
    let mut tags = Vec::new();
    for name in ["Oferta", "Importado"] {
        tags.push(json(app.post("/api/v1/tags", &json!({ "name": name })).await, 201).await["data"]["id"].as_str().expect("id").to_owned());
    }
    let mut customers = Vec::new();
    let mut suppliers = Vec::new();
    for (path, name) in [("/api/v1/customers", "Ana"), ("/api/v1/customers", "Beto"), ("/api/v1/suppliers", "Molino"), ("/api/v1/suppliers", "Granja")] {
        let created = json(app.post_keyed(path, &json!({ "name": name })).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
        if path.ends_with("customers") { customers.push(created) } else { suppliers.push(created) }
    }
    let mut products: Vec<(String, usize)> = Vec::new();
    for n in 0..4 {
        let category = n % categories.len();
        let body = json!({ "name": format!("Artículo {n}"), "sku": format!("ART-{n}"), "price": 1000, "cost": 300 + 100 * n,
            "categoryId": categories[category], "warehouseStocks": [{ "warehouseId": main, "quantity": 1000 }] });
        let created = json(app.post_keyed("/api/v1/products", &body).await, 201).await["data"]["id"].as_str().expect("id").to_owned();
        products.push((created, category));
    }
    let today = ar_date(OffsetDateTime::now_utc());
    let mut sales: Vec<(String, String, bool)> = Vec::new();
    let mut payments: Vec<(String, bool)> = Vec::new();
    let mut deferred: Vec<String> = Vec::new();

    let epoch = 1_i64 << projections::reports::EPOCH_BITS;
    for step in 0..steps {
        if step == steps / 2 {
            sqlx::query("select setval(pg_get_serial_sequence('events', 'position'), (select max(position) from events) + $1)")
                .bind(epoch + 100)
                .execute(&app.pool)
                .await
                .expect("a gap of positions");
        }
        match rng.below(10) {
            // A sale: today at the electronic point of sale (issued), or on a past date at the manual one.
            0..=2 => {
                let past = rng.below(2) == 0;
                let (pos, day) = if past {
                    (&manual, today - Days::days(rng.between(1, 500)))
                } else {
                    (&electronic, today)
                };
                let mut items = Vec::new();
                let mut total = 0;
                for _ in 0..rng.between(1, 3) {
                    let (product, _) = pick(&mut rng, &products).clone();
                    let (quantity, thousandths) = pick(&mut rng, &[(json!(1), 1000), (json!(2), 2000), (json!("0.5"), 500)]).clone();
                    // VAT-inclusive prices whose 21% splits exactly (the authority checks each rate's VAT).
                    let price = 242 * rng.between(1, 20);
                    total += price * thousandths / 1000;
                    items.push(json!({ "productId": product, "quantity": quantity, "unitPrice": price, "warehouseId": main }));
                }
                // Now and then the authority is away: the sale is deferred, and issued later by the
                // worker (its lines move from one status to the other).
                if !past && rng.below(4) == 0 {
                    crate::sales::script(&app, json!([{ "outcome": "unavailable" }])).await;
                }
                let customer = pick(&mut rng, &customers).clone();
                let body = json!({ "voucherType": 6, "pointOfSaleId": pos, "invoiceDate": day.to_string(), "total": total,
                    "customerId": customer, "items": items });
                let sale = json(sell(&app, &body, true).await, 201).await["data"].clone();
                if sale["fiscal"]["status"] == "deferred" {
                    deferred.push(sale["id"].as_str().expect("id").to_owned());
                }
                let line = sale["items"][0]["productId"].as_str().unwrap_or_default().to_owned();
                sales.push((sale["id"].as_str().expect("id").to_owned(), line, past));
            }
            // A credit note of one unit of a sale's first product, at the sale's point of sale, today.
            3 => {
                let Some((sale, product, past)) = sales.get(rng.below(sales.len().max(1) as u64) as usize).cloned() else { continue };
                if product.is_empty() {
                    continue;
                }
                let pos = if past { &manual } else { &electronic };
                let body = json!({ "voucherType": 8, "pointOfSaleId": pos, "invoiceDate": today.to_string(), "total": 242,
                    "associatedSaleId": sale, "items": [{ "productId": product, "quantity": 1, "unitPrice": 242, "warehouseId": main }] });
                let note = json(sell(&app, &body, true).await, 201).await["data"].clone();
                // The authority may be slow to answer under load: the note is then issued later too.
                if note["fiscal"]["status"] == "deferred" {
                    deferred.push(note["id"].as_str().expect("id").to_owned());
                }
            }
            // A purchase received into a random warehouse, on a random past date.
            4 => {
                let supplier = pick(&mut rng, &suppliers).clone();
                let warehouse = pick(&mut rng, &warehouses).clone();
                let lines: Vec<Value> = (0..rng.between(1, 2))
                    .map(|_| json!({ "productId": pick(&mut rng, &products).0, "quantity": rng.between(1, 5), "unitCost": 100 * rng.between(1, 9) }))
                    .collect();
                let mut body = crate::purchases::purchase(&supplier, &format!("0001-{step:08}"), Some(&warehouse), json!(lines));
                body["invoiceDate"] = json!((today - Days::days(rng.between(0, 500))).to_string());
                json(app.post_keyed("/api/v1/purchases", &body).await, 201).await;
            }
            // A payment of either side on a random past date.
            5 => {
                let customer = rng.below(2) == 0;
                let (path, field, contact) = if customer {
                    ("/api/v1/customer-payments", "customer_id", pick(&mut rng, &customers).clone())
                } else {
                    ("/api/v1/supplier-payments", "supplier_id", pick(&mut rng, &suppliers).clone())
                };
                let method = if rng.below(2) == 0 { &cash } else { &card };
                let body = json!({ field: contact, "occurred_on": (today - Days::days(rng.between(0, 400))).to_string(),
                    "lines": [{ "payment_method_id": method, "amount": rng.between(1_000, 20_000), "balance_type": "cash_register",
                        "balance_id": register, "reference": "r" }] });
                let answer = crate::payments::send(&app, path, &format!("pay-{step}"), &body).await;
                let created = json(answer, 201).await["data"]["id"].as_str().expect("id").to_owned();
                payments.push((created, customer));
            }
            // Voiding a payment.
            6 => {
                if payments.is_empty() {
                    continue;
                }
                let (payment, customer) = payments.remove(rng.below(payments.len() as u64) as usize);
                let side = if customer { "customer-payments" } else { "supplier-payments" };
                let answer = crate::payments::send(&app, &format!("/api/v1/{side}/{payment}/void"), &format!("void-{step}"), &json!({})).await;
                json(answer, 200).await;
            }
            // A stock movement.
            7 => {
                let kind = if rng.below(2) == 0 { "in" } else { "out" };
                let body = json!({ "type": kind, "warehouse_id": main, "reason": "ajuste",
                    "lines": [{ "product_id": pick(&mut rng, &products).0, "quantity": rng.between(1, 4) }] });
                json(app.post_keyed("/api/v1/stock-movements", &body).await, 201).await;
            }
            // A product moved to another category (and a new cost).
            8 => {
                let n = rng.below(products.len() as u64) as usize;
                let category = (products[n].1 + 1) % categories.len();
                products[n].1 = category;
                let body = json!({ "name": format!("Artículo {n}"), "sku": format!("ART-{n}"), "price": 1000,
                    "cost": 100 * rng.between(1, 9), "categoryId": categories[category] });
                json(app.put(&format!("/api/v1/products/{}", products[n].0), &body).await, 200).await;
            }
            // A tag applied to or removed from a product.
            _ => {
                let verb = if rng.below(3) == 0 { "remove" } else { "add" };
                let body = json!({ "ids": [pick(&mut rng, &products).0], verb: [pick(&mut rng, &tags)] });
                json(app.post("/api/v1/products/tags/apply", &body).await, 200).await;
            }
        }
    }
    crate::helpers::eventually(std::time::Duration::from_secs(60), "every deferred sale issued", || async {
        let settled: Vec<Uuid> = sqlx::query_scalar(
            "select distinct stream_id from events where org_id = $1 and event_type = 'SaleFiscalChanged'
               and data->'fiscal'->>'status' in ('issued', 'rejected')",
        )
        .bind(app.org_id)
        .fetch_all(&app.pool)
        .await
        .expect("settled");
        deferred.iter().all(|id| settled.iter().any(|s| s.to_string() == *id)).then_some(())
    })
    .await;
    folded(&app, app.org_id).await;

    let rows = sqlx::query_as::<_, (i64, String, Uuid, String, i32, Value, OffsetDateTime)>(
        "select position, stream_type, stream_id, event_type, schema_version, data::jsonb, recorded_at from events
         where org_id = $1 order by transaction_id, position",
    )
    .bind(app.org_id)
    .fetch_all(&app.pool)
    .await
    .expect("events");
    let events: Vec<Stored> = rows
        .into_iter()
        .map(|(position, stream_type, stream_id, event_type, schema_version, data, recorded_at)| Stored {
            position,
            stream_type,
            stream_id,
            event_type,
            schema_version,
            data,
            recorded_at,
        })
        .collect();
    let facts = brute_force(&events);
    assert!(facts.iter().any(|f| f.report == "sales") && facts.iter().any(|f| f.report == "inventory"));
    let moved = facts.iter().any(|f| f.status.as_deref() == Some("deferred") && f.sums[0] < 0);
    assert_eq!(moved, !deferred.is_empty(), "deferred sales moved to issued ({} deferred)", deferred.len());
    let folds = projections::projection(projections::ProjectionId::Reports).folds();
    let last = events.iter().filter(|e| folds.includes(&e.stream_type)).map(|e| e.position).max().expect("events");
    assert!(last > epoch, "the history ({last} positions) spans more than one rollup epoch ({epoch})");
    // The position the projection's checkpoint names: its last event in commit order. Two transactions can
    // commit in the other order than their events' positions (one took its id first and appended later),
    // so it may stand below `last` with every event folded.
    let newest = events.iter().filter(|e| folds.includes(&e.stream_type)).map(|e| e.position).next_back().expect("events");

    for n in 0..queries {
        let mut query = random_query(&mut rng, &facts, today);
        // What the answer counts, and the position it names: now, every folded event and the checkpoint's;
        // as of a position, none past it or past the checkpoint's.
        let (cut, reflected) = match rng.below(3) {
            0 => (last, newest),
            1 => {
                let position = pick(&mut rng, &events).position;
                query["as_of"] = json!(position);
                (position.min(newest), position.min(newest))
            }
            _ => {
                // The last position of an event the reports fold, recorded by then.
                let at = pick(&mut rng, &events).recorded_at;
                query["as_of"] = json!(at.format(&time::format_description::well_known::Rfc3339).expect("instant"));
                let folds = projections::projection(projections::ProjectionId::Reports).folds();
                let folded = events.iter().filter(|e| folds.includes(&e.stream_type) && e.recorded_at <= at);
                let position = folded.map(|e| e.position).max().unwrap_or(0).min(newest);
                (position, position)
            }
        };
        let context = format!("query {n} (seed {seed}): {query}");
        let answer = json(app.post(REPORTS, &query).await, 200).await["data"].clone();
        assert_eq!(answer["as_of"]["position"], reflected, "{context}");
        let (groups, totals) = expected(&facts, &query, cut);
        let metrics: Vec<&str> = query["metrics"].as_array().expect("metrics").iter().map(|m| m.as_str().expect("m")).collect();
        let grouped = query.get("group_by").is_some();
        let answered: BTreeMap<Vec<Option<String>>, Value> = answer["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|row| {
                let keys = row["keys"].as_array().expect("keys").iter().map(|k| id(&k["value"])).collect();
                (keys, row["metrics"].clone())
            })
            .collect();
        let want: BTreeMap<Vec<Option<String>>, Value> = if grouped {
            groups.iter().map(|(k, sums)| (k.clone(), metrics.iter().map(|m| (m.to_string(), metric_value(m, sums))).collect())).collect()
        } else {
            [(Vec::new(), metrics.iter().map(|m| (m.to_string(), metric_value(m, &totals))).collect())].into()
        };
        assert_eq!(answered, want, "{context}");
        let want_totals: Value = metrics.iter().map(|m| (m.to_string(), metric_value(m, &totals))).collect::<serde_json::Map<_, _>>().into();
        assert_eq!(answer["totals"], want_totals, "{context}");
        if let Some(sort) = query["sort"][0].as_str() {
            let metric = &sort[1..];
            let values: Vec<i64> = answer["rows"].as_array().expect("rows").iter().map(|r| match &r["metrics"][metric] {
                Value::String(q) => thousandths(&json!(q)),
                other => other.as_i64().expect("number"),
            }).collect();
            assert!(values.windows(2).all(|w| w[0] >= w[1]), "{context}: sorted descending by {metric}");
        }
    }
}
