//! The reports phase (`BENCH_REPORTS_ONLY`): one organization's two years of sales, `BENCH_REPORT_LINES`
//! lines (1,000,000 by default) in sales of ten lines over 1,000 products in 20 categories, written
//! straight into the event store (the write path has its own phases); then `projections rebuild
//! reports` folds them (the projection's folding rate), and the gateway alone (no projector folding the
//! load beside it) answers a month-by-category sales report, today and as of random positions, one
//! request at a time: p50 and p99 of each.

use crate::harness::{Api, Service, Setup, backoffice, env, http_client, psql, start_role};
use std::time::Instant;

const CATEGORIES: usize = 20;
const PRODUCTS: usize = 1_000;
const LINES_PER_SALE: i64 = 10;
/// Sales are written in chunks of this many, with progress.
const CHUNK: i64 = 10_000;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// `count` sequential answers of `body(n)`: (p50, p99) in milliseconds.
async fn latencies(setup: &Setup, auth: &str, count: usize, body: impl Fn(usize) -> serde_json::Value) -> (f64, f64) {
    let client = http_client();
    let url = format!("http://{}/api/v1/reports/query", setup.http_addr);
    let mut times = Vec::with_capacity(count);
    for n in 0..count {
        let started = Instant::now();
        let answer = client.post(&url).header("authorization", auth).json(&body(n)).send().await.expect("sent");
        assert_eq!(answer.status().as_u16(), 200, "{}", answer.text().await.unwrap_or_default());
        let data: serde_json::Value = answer.json().await.expect("json");
        assert!(!data["data"]["rows"].as_array().expect("rows").is_empty());
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

pub async fn reports(setup: &Setup, auth: &str, org_id: &str, service: Service) {
    let lines: i64 = env("BENCH_REPORT_LINES", "1000000").parse().expect("BENCH_REPORT_LINES");
    let sales = (lines / LINES_PER_SALE).max(1);
    let api = Api::new(setup, auth);
    let mut categories = Vec::new();
    for n in 0..CATEGORIES {
        let category = serde_json::json!({ "name": format!("Categoría {n}") });
        categories.push(format!("'{}'", api.create("/api/v1/categories", &[], category).await));
    }
    let warehouse = api.first("/api/v1/warehouses").await;
    let pos = api.first("/api/v1/points-of-sale").await;
    drop(service);

    let started = Instant::now();
    psql(
        &setup.database_url,
        &format!(
            "insert into events (org_id, stream_type, stream_id, version, event_id, event_type, schema_version, data, metadata)
             select '{org_id}', 'product', gen_random_uuid(), 1, gen_random_uuid(), 'ProductCreated', 1,
                    json_build_object('shared', json_build_object('name', 'Producto ' || g, 'description', null,
                        'category_id', (array[{categories}]::uuid[])[1 + g % {CATEGORIES}], 'oem_code', null,
                        'currency', 'PES', 'tax_rate_id', 5, 'stock_minimum', null, 'default_supplier_id', null,
                        'product_type', 'product'),
                      'options', '[]'::json,
                      'variants', json_build_array(json_build_object('id', md5('v' || g)::uuid, 'sku', 'SKU-' || g,
                        'barcode', null, 'cost', 500, 'price', 1210, 'option_values', '[]'::json, 'is_active', true)),
                      'metafields', '[]'::json, 'opening_stock', '[]'::json),
                    '{{\"actor\": \"bench\"}}'
             from generate_series(0, {}) g",
            PRODUCTS - 1,
            categories = categories.join(", ")
        ),
    );
    let mut written = 0;
    while written < sales {
        let to = (written + CHUNK).min(sales);
        psql(
            &setup.database_url,
            &format!(
                "insert into events (org_id, stream_type, stream_id, version, event_id, event_type, schema_version, data, metadata)
                 select '{org_id}', 'sale', gen_random_uuid(), 1, gen_random_uuid(), 'SaleRecorded', 1,
                   json_build_object('contract', 'historical', 'voucher_type', 6, 'document_kind', 'invoice', 'letter', 'B',
                     'point_of_sale_id', '{pos}', 'point_of_sale_number', 1, 'number', g,
                     'invoice_date', to_char(current_date - 730 + (g * 730 / {sales})::int, 'YYYY-MM-DD'),
                     'concept', 1, 'currency', 'PES',
                     'customer', json_build_object('id', '00000000-0000-0000-0000-000000000000', 'name', 'Consumidor Final',
                       'email', null, 'phone', null, 'tax_id', null, 'tax_id_type', null, 'tax_category', null,
                       'address', null, 'apartment', null, 'city', null, 'province', null),
                     'prices_include_tax', true,
                     'lines', (select json_agg(json_build_object('id', gen_random_uuid(),
                         'variant_id', md5('v' || ((g * {LINES_PER_SALE} + k) % {PRODUCTS}))::uuid, 'name', 'Producto',
                         'sku', null, 'quantity', '2', 'unit_price', 1210, 'unit_cost', 500, 'tax_rate_id', 5,
                         'discount_hundredths', null, 'warehouse_id', '{warehouse}', 'amount', 2420, 'discount', 0,
                         'global_discount', 0, 'net', 2000, 'vat', 420, 'total', 2420))
                       from generate_series(1, {LINES_PER_SALE}) k),
                     'discount_type', null, 'discount_value', null, 'exempt', 0, 'non_taxed', 0, 'subtotal', 20000,
                     'tax_amount', 4200, 'discount_amount', 0, 'total', 24200, 'vat', '[]'::json, 'payments', '[]'::json,
                     'balance', 24200, 'notes', null, 'fiscal_notes', null, 'integration_source', null,
                     'integration_id', null, 'associated_sale_id', null, 'changes', '[]'::json,
                     'fiscal', json_build_object('status', 'internal', 'authorization', null,
                       'unconfirmed_number', null, 'rejection', '[]'::json)),
                   '{{\"actor\": \"bench\"}}'
                 from generate_series({}, {to}) g",
                written + 1
            ),
        );
        written = to;
        eprintln!("reports: {written}/{sales} sales written ({:.0} s)", started.elapsed().as_secs_f64());
    }
    psql(&setup.database_url, "analyze events");

    let rebuilt: serde_json::Value =
        serde_json::from_str(&backoffice(setup, &["projections", "rebuild", "reports"])).expect("rebuild json");
    let seconds = rebuilt["seconds"].as_f64().unwrap_or(0.0);
    let folded = rebuilt["events"].as_f64().unwrap_or(0.0);
    let facts: i64 = psql(&setup.database_url, "select count(*) from report_facts").parse().expect("count");
    let rollups: i64 = psql(&setup.database_url, "select count(*) from report_rollups").parse().expect("count");
    // What autovacuum does to freshly written tables within moments (it vacuums after inserts): their
    // visibility map lets a report read the rollups from their index alone.
    psql(&setup.database_url, "vacuum analyze report_facts");
    psql(&setup.database_url, "vacuum analyze report_rollups");
    println!("reports: projections rebuild reports over {sales} sales of {LINES_PER_SALE} lines");
    println!(
        "  folding : {:>10.0} events/s ({:.0} facts/s) over {folded} events in {seconds:.1} s; {facts} facts, {rollups} rollup rows",
        folded / seconds.max(1e-9),
        facts as f64 / seconds.max(1e-9)
    );

    let _api = start_role(setup, "api", true);
    let (low, high): (i64, i64) = {
        let row = psql(
            &setup.database_url,
            "select min(position) || ' ' || max(position) from events where stream_type = 'sale'",
        );
        let (low, high) = row.split_once(' ').expect("positions");
        (low.parse().expect("low"), high.parse().expect("high"))
    };
    let query = serde_json::json!({ "report": "sales", "group_by": ["month", "category"],
        "metrics": ["count", "quantity", "net", "total", "margin"], "limit": 1000 });
    let count: usize = env("BENCH_REPORT_QUERIES", "200").parse().expect("BENCH_REPORT_QUERIES");
    let (p50, p99) = latencies(setup, auth, count, |_| query.clone()).await;
    println!("reports: sales by month and category over {lines} lines, {count} queries one at a time");
    println!("  now     : p50 {p50:>7.1} ms, p99 {p99:>7.1} ms (target p99 < 50 ms)");
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let positions: Vec<i64> = (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            low + (state % (high - low + 1) as u64) as i64
        })
        .collect();
    let (p50, p99) = latencies(setup, auth, count, |n| {
        let mut body = query.clone();
        body["as_of"] = serde_json::json!(positions[n]);
        body
    })
    .await;
    println!("  as_of   : p50 {p50:>7.1} ms, p99 {p99:>7.1} ms (target p99 < 500 ms), random positions");
}
