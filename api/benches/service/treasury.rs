//! The treasury phase (`BENCH_PHASES=transfers`): funds transfers beside the customer creates of the
//! same run, then the balances read with a ledger of a million movements, now and as of a past instant.

use crate::commerce::{Phase, rotating_posts, writes_against_creates};
use crate::harness::{Api, Make, Setup, backoffice, load, psql};
use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;
use std::sync::Arc;

/// Lines the balances read is measured over.
const LEDGER_LINES: i64 = 1_000_000;

fn open(setup: &Setup, org: &str, what: &str, name: &str) -> String {
    let out = backoffice(setup, &["admin", what, "--org", org, "--name", name]);
    let created: serde_json::Value = serde_json::from_str(&out).expect("created json");
    created.as_object().and_then(|o| o.values().next()).and_then(|v| v.as_str()).expect("an id").to_owned()
}

pub async fn transfers(setup: &Setup, auth: &str, creates: f64) {
    let org = psql(&setup.database_url, "select id from organizations order by created_at limit 1");
    // Sixteen registers and sixteen safes: each connection moves money between its own pair, so the
    // phase measures the path rather than one location's contention (the tests race one register).
    let pairs: Vec<(String, String)> = (0..16)
        .map(|n| {
            (
                open(setup, &org, "create-cash-register", &format!("Caja {n}")),
                open(setup, &org, "create-safe", &format!("Tesoro {n}")),
            )
        })
        .collect();
    let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string();
    let bodies: Vec<Bytes> = pairs
        .iter()
        .map(|(register, safe)| {
            let body = serde_json::json!({ "source": { "balance_type": "cash_register", "balance_id": register },
                "destination": { "balance_type": "safe", "balance_id": safe }, "amount": 1_000, "occurred_on": today });
            Bytes::from(body.to_string())
        })
        .collect();
    let make = rotating_posts(setup, auth, "/api/v1/funds-transfers", "transfer", bodies);
    let title =
        "funds transfers: POST /api/v1/funds-transfers between peso locations (one balanced entry, read-your-writes)";
    let transfers = Phase { title, unit: "transfers/s", each: "transfer", target: 0.5 };
    writes_against_creates(setup, make, creates, transfers).await;

    // A ledger of a million lines over every location (the 32 above and the register and safe the
    // organization is seeded with), written straight into the journal's read table with the running
    // figures the projection keeps (posting them through the API would take the phase's whole budget
    // many times over); the read is what is measured.
    let before = psql(
        &setup.database_url,
        "select to_char((now() - interval '1 hour') at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
    );
    psql(
        &setup.database_url,
        &format!(
            "insert into journal_lines (org_id, location_kind, location_id, recorded_at, position, line_no, entry_id,
                                        functional, native, created_by, running_functional, running_native, running_gaps)
             select l.org_id, l.kind, l.id, now() - interval '2 hours' + s.n * interval '1 millisecond',
                    -s.n, 0, gen_random_uuid(), 100, 100, null,
                    100 * row_number() over (partition by l.kind, l.id order by s.n),
                    100 * row_number() over (partition by l.kind, l.id order by s.n), 0
             from generate_series(1, {LEDGER_LINES}) as s(n)
             join (select org_id, kind, id, row_number() over (order by kind, id) - 1 as k,
                          count(*) over () as total
                   from treasury_locations_view) l on s.n % l.total = l.k;
             analyze journal_lines"
        ),
    );
    let lines = psql(&setup.database_url, "select count(*) from journal_lines");
    let locations = psql(&setup.database_url, "select count(*) from treasury_locations_view");
    for (what, query) in [("now", String::new()), ("as_of an hour ago", format!("?as_of={before}"))] {
        let make: Make = {
            let (auth, addr) = (auth.to_owned(), setup.http_addr.clone());
            Arc::new(move |_| {
                Request::get(format!("http://{addr}/api/v1/treasury/balances{query}"))
                    .header("host", &addr)
                    .header("authorization", &auth)
                    .body(Full::new(Bytes::new()))
                    .expect("request")
            })
        };
        let reads = load(setup, make, 200).await;
        println!(
            "balances ({what}, {lines} ledger lines over {locations} locations): {:.0} reads/s  p50 {:.2} ms  p99 {:.2} ms  errors {} (target p99 < 20 ms)",
            reads.rate, reads.p50_ms, reads.p99_ms, reads.errors
        );
    }
}

/// The payments phase (`BENCH_PHASES=payments`): customer payments of one line into a register, each
/// allocated to one of sixteen open sales, beside the customer creates of the same run.
pub async fn payments(setup: &Setup, auth: &str, creates: f64) {
    let org = psql(&setup.database_url, "select id from organizations order by created_at limit 1");
    let api = Api::new(setup, auth);
    let method = api.first("/api/v1/payment-methods").await;
    let point = api.first("/api/v1/points-of-sale").await;
    let today = events::catalogue::ar_date(time::OffsetDateTime::now_utc()).to_string();
    let mut bodies = Vec::new();
    for n in 0..16 {
        let register = open(setup, &org, "create-cash-register", &format!("Caja de cobro {n}"));
        let customer =
            api.create("/api/v1/customers", &[], serde_json::json!({ "name": format!("Cliente de cobro {n}") })).await;
        // A sale that owes a million pesos: every payment of the phase settles a peso of one of them.
        let key = format!("bench-payment-sale-{n}");
        let sale = serde_json::json!({ "voucherType": 6, "pointOfSaleId": point, "invoiceDate": today,
            "customerId": customer, "total": 100_000_000,
            "items": [{ "name": "Mercadería", "quantity": 1, "unitPrice": 100_000_000 }] });
        let headers = [("idempotency-key", key.as_str()), ("service-version", "2026-08-20")];
        let sale = api.create("/api/v1/sales", &headers, sale).await;
        let body = serde_json::json!({ "customer_id": customer, "occurred_on": today,
            "lines": [{ "payment_method_id": method, "amount": 100, "balance_type": "cash_register", "balance_id": register }],
            "allocations": [{ "sale_id": sale, "amount": 100 }] });
        bodies.push(Bytes::from(body.to_string()));
    }
    let make = rotating_posts(setup, auth, "/api/v1/customer-payments", "payment", bodies);
    let title = "customer payments: POST /api/v1/customer-payments, one line into a register and one allocation (read-your-writes)";
    let payments = Phase { title, unit: "payments/s", each: "payment", target: 0.5 };
    writes_against_creates(setup, make, creates, payments).await;
}
