//! The metrics phase: the write path's CPU with the metrics recorder on and off.

use crate::cpu::{cpu_times, deployment_cpu_per_op};
use crate::harness::{Make, Setup, http_client, load, start_service_metrics};
use std::time::Duration;

/// The write path's CPU with the metrics recorder and without it, in alternated rounds (each on a fresh
/// service), with `/metrics` scraped every second while it is on (a scrape reads the lag of every
/// projection from Postgres and NATS). Prints both medians and the overhead; the bound is 5%.
pub async fn metrics_overhead(setup: &Setup, make_post: Make) {
    let mut off = Vec::new();
    let mut on = Vec::new();
    for round in 1..=setup.write_rounds {
        for metrics in [false, true] {
            let service = start_service_metrics(setup, metrics);
            let scraper = metrics.then(|| {
                let url = format!("http://{}/metrics", setup.http_addr);
                tokio::spawn(async move {
                    let client = http_client();
                    loop {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        let _ = client.get(&url).send().await.map(|r| r.bytes());
                    }
                })
            });
            let cpu = cpu_times();
            let writes = load(setup, make_post.clone(), 201).await;
            let per_create = deployment_cpu_per_op(&cpu, writes.count);
            if let Some(scraper) = scraper {
                scraper.abort();
            }
            drop(service);
            let label = if metrics { "on " } else { "off" };
            println!(
                "metrics round {round} {label}: {:.0} creates/s, cpu per create {} µs (service, Postgres and NATS)",
                writes.rate,
                per_create.map_or_else(|| "?".to_owned(), |v| format!("{v:.0}"))
            );
            if let Some(value) = per_create {
                if metrics { on.push(value) } else { off.push(value) }
            }
        }
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    if let (Some(off), Some(on)) = (median(&mut off), median(&mut on)) {
        println!(
            "metrics overhead: POST /api/v1/customers, CPU per create (median of {} alternated rounds)",
            setup.write_rounds
        );
        println!("  metrics off: {off:>8.0} µs");
        println!("  metrics on : {on:>8.0} µs");
        println!("  overhead   : {:>8.1}% (bound 5%)", (on / off - 1.0) * 100.0);
    }
}
