//! The commercial phases (`BENCH_PHASES`): stock movements, the contended case, purchases and sales,
//! each beside the customer-create rate of the same run.

use crate::cpu::{cpu_line, cpu_times};
use crate::harness::{Load, Setup, backoffice, backoffice_if_known, http_client, load, psql};
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

/// Prints one commercial phase beside the customer-create rate of the same run, with its target ratio.
pub fn print_against_creates(title: &str, phase: &Load, unit: &str, creates: f64, target: f64, cpu: &str) {
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
    let client = http_client();
    let base = format!("http://{}", setup.http_addr);
    let warehouses: serde_json::Value = client
        .get(format!("{base}/api/v1/warehouses"))
        .header("authorization", auth)
        .send()
        .await
        .expect("warehouses")
        .json()
        .await
        .expect("json");
    let warehouse = warehouses["data"][0]["id"].as_str().expect("the seeded warehouse").to_owned();
    let mut products = Vec::new();
    for n in 0..48 {
        let created: serde_json::Value = client
            .post(format!("{base}/api/v1/products"))
            .header("authorization", auth)
            .header("idempotency-key", format!("bench-stock-product-{n}"))
            .json(&serde_json::json!({"name": format!("Artículo {n}"), "sku": format!("ART-{n}"), "cost": 500, "price": 1000,
                "warehouseStocks": [{"warehouseId": warehouse, "quantity": 1_000_000}]}))
            .send()
            .await
            .expect("product")
            .json()
            .await
            .expect("json");
        products.push(created["data"]["id"].as_str().expect("product id").to_owned());
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
    let make: Arc<dyn Fn(u64) -> Request<Full<Bytes>> + Send + Sync> = {
        let (auth, addr) = (auth.to_owned(), setup.http_addr.clone());
        Arc::new(move |n| {
            keyed_post(&addr, &auth, "/api/v1/stock-movements", n, "stock", &bodies[n as usize % bodies.len()])
        })
    };
    if phase("stock") {
        let cpu = cpu_times();
        let stock = load(setup, make, 201).await;
        let cpu = cpu_line(&cpu, stock.count, "movement", true);
        print_against_creates(
            "stock: POST /api/v1/stock-movements, 3 lines each (read-your-writes)",
            &stock,
            "movements/s",
            creates,
            0.5,
            &cpu,
        );
    }

    // Contended: every connection moves the same variant; the level's row lock serializes them.
    let one = Bytes::from(
        serde_json::json!({"type": "out", "warehouse_id": warehouse, "lines": [{"product_id": products[0], "quantity": 1}]})
            .to_string(),
    );
    let make: Arc<dyn Fn(u64) -> Request<Full<Bytes>> + Send + Sync> = {
        let (auth, addr) = (auth.to_owned(), setup.http_addr.clone());
        Arc::new(move |n| keyed_post(&addr, &auth, "/api/v1/stock-movements", n, "contended", &one))
    };
    if phase("contended") {
        let contended = load(setup, make, 201).await;
        print_against_creates(
            "stock (contended): every connection moves the same variant",
            &contended,
            "movements/s",
            creates,
            0.25,
            "",
        );
    }
    if std::env::var("BENCH_STOCK_ONLY").is_ok() {
        return;
    }

    // Purchases of three received lines: each records the invoice, raises three levels and moves the
    // products' costs (the unit cost alternates, so every purchase changes them).
    let supplier: serde_json::Value = client
        .post(format!("{base}/api/v1/suppliers"))
        .header("authorization", auth)
        .json(&serde_json::json!({"name": "Proveedor de compras"}))
        .send()
        .await
        .expect("supplier")
        .json()
        .await
        .expect("json");
    let supplier = supplier["data"]["id"].as_str().expect("supplier id").to_owned();
    let make: Arc<dyn Fn(u64) -> Request<Full<Bytes>> + Send + Sync> = {
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
        let cpu = cpu_times();
        let purchases = load(setup, make, 201).await;
        let cpu = cpu_line(&cpu, purchases.count, "purchase", true);
        print_against_creates(
            "purchases: POST /api/v1/purchases, 3 received lines (stock, costs, read-your-writes)",
            &purchases,
            "purchases/s",
            creates,
            0.3,
            &cpu,
        );
    }

    // Sales of three product lines, each authorized by the tax authority (the built-in simulator the
    // service runs) before it answers.
    let org: serde_json::Value = client
        .get(format!("{base}/api/v1/organization"))
        .header("authorization", auth)
        .send()
        .await
        .expect("organization")
        .json()
        .await
        .expect("json");
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
    let points: serde_json::Value = client
        .get(format!("{base}/api/v1/points-of-sale"))
        .header("authorization", auth)
        .send()
        .await
        .expect("points of sale")
        .json()
        .await
        .expect("json");
    let point = points["data"][0]["id"].as_str().expect("the seeded point of sale").to_owned();
    // Sales of three product lines at `point` (keys prefixed `prefix`).
    let sales_at = |point: String, prefix: &'static str| -> Arc<dyn Fn(u64) -> Request<Full<Bytes>> + Send + Sync> {
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
        let cpu = cpu_times();
        let sales = load(setup, sales_at(point.clone(), "sale"), 201).await;
        let cpu = cpu_line(&cpu, sales.count, "sale", true);
        print_against_creates(
            "sales: POST /api/v1/sales, 3 product lines, each authorized by the tax authority (the simulator)",
            &sales,
            "sales/s",
            creates,
            0.15,
            &cpu,
        );
    }
    // The same sales at a manual point of sale: numbered by the service, no authority involved.
    if phase("sales_manual") {
        let created = backoffice(
            setup,
            &["admin", "create-point-of-sale", "--org", &org_id, "--number", "90", "--kind", "manual"],
        );
        let created: serde_json::Value = serde_json::from_str(&created).expect("the new point of sale");
        let manual = created["point_of_sale_id"].as_str().expect("point of sale id").to_owned();
        let cpu = cpu_times();
        let sales = load(setup, sales_at(manual, "manual-sale"), 201).await;
        let cpu = cpu_line(&cpu, sales.count, "sale", true);
        print_against_creates(
            "sales (not invoiced): the same sales at a manual point of sale",
            &sales,
            "sales/s",
            creates,
            0.3,
            &cpu,
        );
    }

    // Delivery notes for orders of five lines: 64 open orders that reserve their lines, each note
    // delivering one unit of every line of one of them (consuming that much of its reservation).
    if phase("delivery_notes") {
        let customer: serde_json::Value = client
            .post(format!("{base}/api/v1/customers"))
            .header("authorization", auth)
            .json(&serde_json::json!({"name": "Cliente de pedidos"}))
            .send()
            .await
            .expect("customer")
            .json()
            .await
            .expect("json");
        let customer = customer["data"]["id"].as_str().expect("customer id").to_owned();
        let mut orders = Vec::new();
        for n in 0..64usize {
            let lines: Vec<serde_json::Value> = (0..5)
                .map(|j| serde_json::json!({"product_id": products[(n * 5 + j) % products.len()], "quantity": 100_000, "unit_price": 1000}))
                .collect();
            let order: serde_json::Value = client
                .post(format!("{base}/api/v1/orders"))
                .header("authorization", auth)
                .header("idempotency-key", format!("bench-order-{n}"))
                .json(&serde_json::json!({"customer_id": customer, "assigned_warehouse_id": warehouse,
                    "reservation": {"enabled": true}, "lines": lines}))
                .send()
                .await
                .expect("order")
                .json()
                .await
                .expect("json");
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
        let make: Arc<dyn Fn(u64) -> Request<Full<Bytes>> + Send + Sync> = {
            let (auth, addr) = (auth.to_owned(), setup.http_addr.clone());
            Arc::new(move |n| {
                keyed_post(&addr, &auth, "/api/v1/delivery-notes", n, "note", &orders[n as usize % orders.len()])
            })
        };
        let cpu = cpu_times();
        let notes = load(setup, make, 201).await;
        let cpu = cpu_line(&cpu, notes.count, "note", true);
        print_against_creates(
            "delivery notes: POST /api/v1/delivery-notes for orders of 5 lines (stock, reservation, order, read-your-writes)",
            &notes,
            "notes/s",
            creates,
            0.4,
            &cpu,
        );
    }

    if phase("transfers") {
        crate::treasury::transfers(setup, auth, creates).await;
    }
    if phase("payments") {
        crate::treasury::payments(setup, auth, creates).await;
    }
}
