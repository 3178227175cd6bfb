//! The test suite's own shape: one test binary. A file put in `tests/it/` without its `mod` line
//! in `main.rs` would never be compiled, and a file put back in `tests/` would link the crate
//! into a binary of its own again; both fail here with the file's name.

use std::path::Path;

/// The `.rs` files directly in `dir`, by name, sorted.
fn rust_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".rs"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_test_file_is_a_module_of_the_one_test_binary() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(tests.join("it/main.rs")).unwrap();
    let declared: Vec<&str> = (main.lines())
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let forgotten: Vec<String> = rust_files(&tests.join("it"))
        .into_iter()
        .filter(|n| n != "main.rs" && !declared.contains(&n.trim_end_matches(".rs")))
        .collect();
    assert!(
        forgotten.is_empty(),
        "in tests/it/ but not a `mod` of tests/it/main.rs, so never compiled: {forgotten:?}"
    );
    let apart = rust_files(&tests);
    assert!(
        apart.is_empty(),
        "test files of their own binary in tests/ (move them into tests/it/ with a `mod` line \
         in main.rs): {apart:?}"
    );
}
