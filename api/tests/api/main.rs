//! API tests: the gateway driven over real HTTP with every role running against a fresh database.

// One module per file of this folder, declared by the crate's build script (`api/build.rs`).
include!(concat!(env!("OUT_DIR"), "/api_test_modules.rs"));

/// A test file nobody declares is never compiled, so its tests silently never run: every file of the
/// process test folder must be a module of its crate (this folder's are declared by the build script).
#[test]
fn every_test_file_is_declared() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    for (folder, main) in [("process", include_str!("../process/main.rs"))] {
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
