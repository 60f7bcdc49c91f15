//! The catalog phase: large product matrices and a bulk adjustment.

use crate::harness::{Setup, http_client};
use std::time::Instant;

/// Catalog: creating a 250-variant product (each a command, 250 SKU checks, one event, 250 read rows,
/// answered once readable), and one bulk adjustment over 10,000 variants.
pub async fn catalog(setup: &Setup, auth: &str) {
    let client = http_client();
    let base = format!("http://{}", setup.http_addr);
    let supplier = client
        .post(format!("{base}/api/v1/suppliers"))
        .header("authorization", auth)
        .json(&serde_json::json!({"name": "Proveedor bench"}))
        .send()
        .await
        .expect("supplier")
        .json::<serde_json::Value>()
        .await
        .expect("json")["data"]["id"]
        .clone();
    let matrix = |n: usize| {
        let variants: Vec<serde_json::Value> = (0..250)
            .map(|i| {
                serde_json::json!({"optionValues": {"Talle": format!("T{}", i % 10), "Color": format!("C{}", i / 10)},
                    "sku": format!("B{n}-{i}"), "cost": 1000 + i, "price": 2000 + i})
            })
            .collect();
        serde_json::json!({"name": format!("Producto {n}"), "options": ["Talle", "Color"], "variants": variants,
            "defaultSupplierId": supplier})
    };
    let mut timings = Vec::new();
    for n in 0..40 {
        let started = Instant::now();
        let response = client
            .post(format!("{base}/api/v1/products"))
            .header("authorization", auth)
            .header("idempotency-key", format!("bench-product-{n}"))
            .json(&matrix(n))
            .send()
            .await
            .expect("create product");
        assert_eq!(response.status().as_u16(), 201, "{}", response.text().await.unwrap_or_default());
        let _ = response.bytes().await;
        timings.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    timings.sort_by(f64::total_cmp);
    println!("catalog: POST /api/v1/products with 250 variants (read-your-writes), 40 products");
    println!(
        "  service : p50 {:.1} ms  p90 {:.1} ms  max {:.1} ms  ({:.0} variants/s)",
        timings[timings.len() / 2],
        timings[timings.len() * 9 / 10],
        timings[timings.len() - 1],
        250.0 * 1000.0 / timings[timings.len() / 2]
    );
    let mut bulk = Vec::new();
    for n in 0..3 {
        let started = Instant::now();
        let response = client
            .post(format!("{base}/api/v1/products/bulk-adjustments"))
            .header("authorization", auth)
            .header("idempotency-key", format!("bench-bulk-{n}"))
            .json(&serde_json::json!({"target": "price", "default_supplier_id": supplier, "percentage": 5}))
            .send()
            .await
            .expect("bulk adjustment");
        assert_eq!(response.status().as_u16(), 200, "{}", response.text().await.unwrap_or_default());
        let summary: serde_json::Value = response.json().await.expect("json");
        assert_eq!(summary["data"]["affected_variants"], 10_000, "{summary}");
        bulk.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    bulk.sort_by(f64::total_cmp);
    println!("catalog: POST /api/v1/products/bulk-adjustments over 10,000 variants (40 groups, read-your-writes)");
    println!("  service : median {:.0} ms  min {:.0} ms  max {:.0} ms (3 runs)", bulk[1], bulk[0], bulk[2]);
}
