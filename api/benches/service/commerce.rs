//! The commercial phases (`BENCH_PHASES`): stock movements, the contended case, purchases and sales,
//! each beside the customer-create rate of the same run.

use crate::cpu::{cpu_line, cpu_times};
use crate::harness::{Api, Load, Make, Setup, backoffice, backoffice_if_known, load, psql};
use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;
use std::sync::Arc;

/// A JSON POST carrying a fresh `Idempotency-Key` (every commercial write takes one).
pub fn keyed_post(addr: &str, auth: &str, path: &str, n: u64, run: &str, body: &Bytes) -> Request<Full<Bytes>> {
    Request::post(format!("http://{addr}{path}"))
        .header("host", addr)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .header("idempotency-key", format!("bench-{run}-{n}"))
        .body(Full::new(body.clone()))
        .expect("request")
}

/// Requests that POST `bodies` in turn to `path`, each keyed `run`-n.
pub fn rotating_posts(setup: &Setup, auth: &str, path: &'static str, run: &'static str, bodies: Vec<Bytes>) -> Make {
    let (auth, addr) = (auth.to_owned(), setup.http_addr.clone());
    Arc::new(move |n| keyed_post(&addr, &auth, path, n, run, &bodies[n as usize % bodies.len()]))
}

/// How a commercial write phase is printed: its title, its rate's unit (`sales/s`), what one
/// operation is called in the CPU line (`sale`), and the ratio to the creates it should reach.
pub struct Phase<'a> {
    pub title: &'a str,
    pub unit: &'a str,
    pub each: &'a str,
    pub target: f64,
}

/// Runs `make`'s writes (each answered 201) for the run's time and prints them beside the
/// customer-create rate of the same run, with the target ratio and the CPU each took.
pub async fn writes_against_creates(setup: &Setup, make: Make, creates: f64, phase: Phase<'_>) {
    let cpu = cpu_times();
    let writes = load(setup, make, 201).await;
    let cpu = cpu_line(&cpu, writes.count, phase.each, true);
    print_against_creates(phase.title, &writes, phase.unit, creates, phase.target, &cpu);
}

/// Prints one commercial phase beside the customer-create rate of the same run, with its target ratio.
fn print_against_creates(title: &str, phase: &Load, unit: &str, creates: f64, target: f64, cpu: &str) {
    println!("{title}");
    println!(
        "  service : {:>10.0} {unit}  p50 {:.2} ms  p99 {:.2} ms  errors {}",
        phase.rate, phase.p50_ms, phase.p99_ms, phase.errors
    );
    println!("  creates : {creates:>10.0} customer creates/s (this run)");
    println!("  ratio   : {:>10.3} (target at least {target})", phase.rate / creates);
    if !cpu.is_empty() {
        println!("  {cpu}");
    }
}

/// Whether `BENCH_PHASES` (all commercial phases when unset) names this one.
fn phase(name: &str) -> bool {
    std::env::var("BENCH_PHASES").map_or(true, |phases| phases.split(',').any(|p| p.trim() == name))
}

/// The commercial core under load: stock movements of three lines on distinct variants, and the
/// contended case where every connection moves the same variant.
pub async fn commerce(setup: &Setup, auth: &str, creates: f64) {
    let api = Api::new(setup, auth);
    let warehouse = api.first("/api/v1/warehouses").await;
    let mut products = Vec::new();
    for n in 0..48 {
        let key = format!("bench-stock-product-{n}");
        let product = serde_json::json!({"name": format!("Artículo {n}"), "sku": format!("ART-{n}"), "cost": 500,
            "price": 1000, "warehouseStocks": [{"warehouseId": warehouse, "quantity": 1_000_000}]});
        products.push(api.create("/api/v1/products", &[("idempotency-key", &key)], product).await);
    }

    // Stock movements of three lines, each request on three variants of its own rotation.
    let bodies: Vec<Bytes> = (0..16)
        .map(|i| {
            let lines: Vec<serde_json::Value> = (0..3)
                .map(|j| serde_json::json!({"product_id": products[(i * 3 + j) % products.len()], "quantity": "1.5"}))
                .collect();
            Bytes::from(serde_json::json!({"type": "in", "warehouse_id": warehouse, "lines": lines}).to_string())
        })
        .collect();
    if phase("stock") {
        let make = rotating_posts(setup, auth, "/api/v1/stock-movements", "stock", bodies);
        let title = "stock: POST /api/v1/stock-movements, 3 lines each (read-your-writes)";
        let stock = Phase { title, unit: "movements/s", each: "movement", target: 0.5 };
        writes_against_creates(setup, make, creates, stock).await;
    }

    // Contended: every connection moves the same variant; the level's row lock serializes them.
    let one = Bytes::from(
        serde_json::json!({"type": "out", "warehouse_id": warehouse, "lines": [{"product_id": products[0], "quantity": 1}]})
            .to_string(),
    );
    if phase("contended") {
        let make = rotating_posts(setup, auth, "/api/v1/stock-movements", "contended", vec![one]);
        let title = "stock (contended): every connection moves the same variant";
        let contended = Phase { title, unit: "movements/s", each: "movement", target: 0.25 };
        writes_against_creates(setup, make, creates, contended).await;
    }
    if std::env::var("BENCH_STOCK_ONLY").is_ok() {
        return;
    }

    // Purchases of three received lines: each records the invoice, raises three levels and moves the
    // products' costs (the unit cost alternates, so every purchase changes them).
    let supplier = api.create("/api/v1/suppliers", &[], serde_json::json!({"name": "Proveedor de compras"})).await;
    let make: Make = {
        let (auth, addr, products) = (auth.to_owned(), setup.http_addr.clone(), products.clone());
        let (supplier, warehouse) = (supplier.clone(), warehouse.clone());
        Arc::new(move |n| {
            let lines: Vec<serde_json::Value> = (0..3)
                .map(|j| {
                    let product = &products[(n as usize * 3 + j) % products.len()];
                    serde_json::json!({"productId": product, "quantity": 2, "unitCost": 500 + (n % 2) * 10})
                })
                .collect();
            let body = serde_json::json!({"supplierId": supplier, "voucherType": 1,
                "supplierInvoiceNumber": format!("0001-{n:08}"), "invoiceDate": "2026-01-02",
                "productsReceived": true, "warehouseId": warehouse, "items": lines});
            keyed_post(&addr, &auth, "/api/v1/purchases", n, "purchase", &Bytes::from(body.to_string()))
        })
    };
    if phase("purchases") {
        let title = "purchases: POST /api/v1/purchases, 3 received lines (stock, costs, read-your-writes)";
        let purchases = Phase { title, unit: "purchases/s", each: "purchase", target: 0.3 };
        writes_against_creates(setup, make, creates, purchases).await;
    }

    // Sales of three product lines, each authorized by the tax authority (the built-in simulator the
    // service runs) before it answers.
    let org = api.get("/api/v1/organization").await;
    let org_id = org["data"]["id"].as_str().expect("org id").to_owned();
    psql(
        &setup.database_url,
        &format!(
            "update organizations set tax_id = '20267565393', tax_category = 'Responsable Inscripto' where id = '{org_id}'"
        ),
    );
    // The certificate its login tickets are signed with (the test fixtures' own, for that CUIT).
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../commands/tests/fixtures/fiscal");
    let (cert, key) = (format!("{fixtures}/org.crt"), format!("{fixtures}/org.key"));
    // A binary from before the authority's login tickets has no such command and needs no certificate.
    let certificate = ["admin", "set-fiscal-certificate", "--org", &org_id, "--cert", &cert, "--key", &key];
    if !backoffice_if_known(setup, &certificate) {
        println!("  (this binary has no set-fiscal-certificate: its fiscal simulator signs in without one)");
    }
    let point = api.first("/api/v1/points-of-sale").await;
    // Sales of three product lines at `point` (keys prefixed `prefix`).
    let sales_at = |point: String, prefix: &'static str| -> Make {
        let (auth, addr, products) = (auth.to_owned(), setup.http_addr.clone(), products.clone());
        let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string();
        Arc::new(move |n| {
            let lines: Vec<serde_json::Value> = (0..3)
                .map(|j| {
                    let product = &products[(n as usize * 3 + j) % products.len()];
                    serde_json::json!({"productId": product, "quantity": 1, "unitPrice": 1210})
                })
                .collect();
            let body = serde_json::json!({"voucherType": 6, "pointOfSaleId": point, "invoiceDate": today,
                "total": 3630, "items": lines});
            let mut request = keyed_post(&addr, &auth, "/api/v1/sales", n, prefix, &Bytes::from(body.to_string()));
            request.headers_mut().insert("service-version", hyper::header::HeaderValue::from_static("2026-08-20"));
            request
        })
    };
    if phase("sales") {
        let title = "sales: POST /api/v1/sales, 3 product lines, each authorized by the tax authority (the simulator)";
        let sales = Phase { title, unit: "sales/s", each: "sale", target: 0.15 };
        writes_against_creates(setup, sales_at(point.clone(), "sale"), creates, sales).await;
    }
    // The same sales at a manual point of sale: numbered by the service, no authority involved.
    if phase("sales_manual") {
        let created = backoffice(
            setup,
            &["admin", "create-point-of-sale", "--org", &org_id, "--number", "90", "--kind", "manual"],
        );
        let created: serde_json::Value = serde_json::from_str(&created).expect("the new point of sale");
        let manual = created["point_of_sale_id"].as_str().expect("point of sale id").to_owned();
        let title = "sales (not invoiced): the same sales at a manual point of sale";
        let sales = Phase { title, unit: "sales/s", each: "sale", target: 0.3 };
        writes_against_creates(setup, sales_at(manual, "manual-sale"), creates, sales).await;
    }

    // Delivery notes for orders of five lines: 64 open orders that reserve their lines, each note
    // delivering one unit of every line of one of them (consuming that much of its reservation).
    if phase("delivery_notes") {
        let customer = api.create("/api/v1/customers", &[], serde_json::json!({"name": "Cliente de pedidos"})).await;
        let mut orders = Vec::new();
        for n in 0..64usize {
            let lines: Vec<serde_json::Value> = (0..5)
                .map(|j| serde_json::json!({"product_id": products[(n * 5 + j) % products.len()], "quantity": 100_000, "unit_price": 1000}))
                .collect();
            let key = format!("bench-order-{n}");
            let order = serde_json::json!({"customer_id": customer, "assigned_warehouse_id": warehouse,
                "reservation": {"enabled": true}, "lines": lines});
            let order = api.post("/api/v1/orders", &[("idempotency-key", &key)], order).await;
            let id = order["data"]["id"].as_str().expect("order id").to_owned();
            let items: Vec<serde_json::Value> = order["data"]["lines"]
                .as_array()
                .expect("lines")
                .iter()
                .map(|l| serde_json::json!({"order_line_id": l["id"], "quantity": 1}))
                .collect();
            let body = serde_json::json!({"origin": {"type": "order", "order_id": id}, "point_of_sale_id": point,
                "items": items});
            orders.push(Bytes::from(body.to_string()));
        }
        let make = rotating_posts(setup, auth, "/api/v1/delivery-notes", "note", orders);
        let title = "delivery notes: POST /api/v1/delivery-notes for orders of 5 lines (stock, reservation, order, read-your-writes)";
        let notes = Phase { title, unit: "notes/s", each: "note", target: 0.4 };
        writes_against_creates(setup, make, creates, notes).await;
    }

    if phase("transfers") {
        crate::treasury::transfers(setup, auth, creates).await;
    }
    if phase("payments") {
        crate::treasury::payments(setup, auth, creates).await;
    }
}
