//! Declares every file of `tests/api/` as a module of the API test crate (`tests/api/main.rs` includes
//! the list this writes), so a domain's test file is picked up by being there: no line to add, none to
//! forget.

use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let folder = Path::new(&manifest).join("tests").join("api");
    println!("cargo::rerun-if-changed=tests/api");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
                .filter_map(|path| path.file_stem().and_then(|stem| stem.to_str()).map(str::to_owned))
                .filter(|name| name != "main")
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let modules: String = names
        .iter()
        .map(|name| format!("#[path = {:?}]\nmod {name};\n", folder.join(format!("{name}.rs")).display().to_string()))
        .collect();
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    if let Err(error) = std::fs::write(Path::new(&out).join("api_test_modules.rs"), modules) {
        println!("cargo::error=cannot write the API test modules: {error}");
    }
}
