//! API tests: the gateway driven over real HTTP with every role running against a fresh database.

mod categories;
mod command_batches;
mod configuration;
mod customers;
mod documents;
mod fiscal_simulator;
mod helpers;
mod hostile;
mod inventory;
mod observability;
mod openapi;
mod organization;
mod payment_methods;
mod platform;
mod platform_rules;
mod points_of_sale;
mod price_lists;
mod products;
mod purchases;
mod quotes;
mod receiver;
mod reference;
mod sales;
mod suppliers;
mod tags;
mod tenancy;
mod warehouses;
mod webhooks;

/// A test file nobody declares is never compiled, so its tests silently never run: every file of the
/// API and process test folders must be a module of its crate.
#[test]
fn every_test_file_is_declared() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    for (folder, main) in [("api", include_str!("main.rs")), ("process", include_str!("../process/main.rs"))] {
        let declared: Vec<&str> = main
            .lines()
            .filter_map(|line| line.trim().strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')))
            .collect();
        for entry in std::fs::read_dir(root.join(folder)).expect("the test folder") {
            let path = entry.expect("an entry").path();
            let Some(name) = path.file_stem().and_then(|stem| stem.to_str()) else { continue };
            if path.extension().is_some_and(|ext| ext == "rs") && name != "main" {
                assert!(declared.contains(&name), "tests/{folder}/{name}.rs is not declared in tests/{folder}/main.rs");
            }
        }
    }
}
