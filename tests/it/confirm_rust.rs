//! `evo confirm` on a small Rust program: a real speedup through Cargo builds, and an
//! out-of-bounds read in unsafe code that only the AddressSanitizer lane (stable toolchain with
//! `RUSTC_BOOTSTRAP=1 RUSTFLAGS=-Zsanitizer=address` and an explicit `--target`) can see.

use crate::util;

use std::path::PathBuf;

use serde_json::Value;
use util::{evo, fixture_repo, patch_by_editing, snapshot, text, write};

fn host_target() -> String {
    let out = std::process::Command::new("rustc")
        .arg("-vV")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

fn workload() -> String {
    let target = host_target();
    format!(
        r#"{{
  "name": "rsum",
  "build": {{ "command": "cargo build --release --quiet", "env": {{ "CARGO_TARGET_DIR": "target" }},
             "artifacts": ["target/release/rsum"], "timeout_s": 300 }},
  "test": {{ "command": "./target/release/rsum --selftest" }},
  "scenarios": [
    {{ "name": "sum-100k", "role": "training", "run": "./bench/run.sh 100000 {{seed}}",
      "check": "./bench/run.sh 500 {{seed}}", "compare": "exact", "deterministic_output": true }}
  ],
  "sanitize": {{
    "build": "RUSTC_BOOTSTRAP=1 RUSTFLAGS='-Zsanitizer=address -Coverflow-checks=on' cargo build --release --quiet --target {target} && mkdir -p target/release && cp target/{target}/release/rsum target/release/rsum",
    "env": {{ "CARGO_TARGET_DIR": "target" }}, "timeout_s": 300 }},
  "protected": ["bench/**"]
}}"#
    )
}

const CAMPAIGN: &str = r#"{ "name": "rsum", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "confirm": { "pairs": 9, "aa_pairs": 11 } }"#;

const TOTAL: &str = "        total = total.wrapping_add(slow_hash(v));";
const MEMO: &str = "        if cache[v as usize] == u64::MAX {
            cache[v as usize] = slow_hash(v);
        }
        total = total.wrapping_add(cache[v as usize]);";
const CACHE: (&str, &str, &str) = (
    "src/main.rs",
    "    let mut total = 0u64;",
    "    let mut total = 0u64;\n    let mut cache = vec![u64::MAX; 1000];",
);

fn confirm(edits: &[(&str, &str, &str)]) -> (std::process::Output, Value) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    fixture_repo("rsum", &repo);
    let camp = dir.path().join("camp");
    write(&camp.join("workload.json"), &workload());
    write(&camp.join("campaign.json"), CAMPAIGN);
    let patch: PathBuf = camp.join("candidate.patch");
    write(&patch, &patch_by_editing(&repo, edits));
    let before = snapshot(&repo);
    let out = evo()
        .arg("confirm")
        .arg(&patch)
        .current_dir(&camp)
        .arg("--campaign")
        .arg("campaign.json")
        .output()
        .unwrap();
    assert_eq!(before, snapshot(&repo), "the user's repository changed");
    let (_, result) =
        util::first_result(&camp).unwrap_or_else(|| panic!("no result.json\n{}", text(&out)));
    (out, result)
}

#[test]
fn a_rust_speedup_is_accepted_through_cargo_builds() {
    let (out, r) = confirm(&[CACHE, ("src/main.rs", TOTAL, MEMO)]);
    let training = &r["scenarios"][0]["training"];
    if util::real_verdict(&r, &out, &["accepted", "inconclusive"]) == "accepted" {
        assert_eq!(r["tier"], "measured");
    }
    assert!(training["median"].as_f64().unwrap() > 3.0, "{training:#}");
    assert_eq!(r["sanitizer_lane_ran"], true);
    assert!(
        r["reasons"][0]
            .as_str()
            .unwrap()
            .contains("no holdout was declared"),
        "{:#}",
        r["reasons"]
    );
}

#[test]
fn an_unsafe_out_of_bounds_read_is_caught_by_the_rust_asan_lane() {
    let oob = format!(
        "{MEMO}\n        std::hint::black_box(unsafe {{ *cache.as_ptr().add(cache.len()) }});"
    );
    let (out, r) = confirm(&[CACHE, ("src/main.rs", TOTAL, &oob)]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let gates = r["gates"].as_array().unwrap();
    let status = |name: &str| {
        gates
            .iter()
            .find(|g| g["name"] == name)
            .map(|g| g["status"].clone())
    };
    assert_eq!(status("differential"), Some("passed".into()), "{gates:#?}");
    assert_eq!(status("sanitizers"), Some("failed".into()), "{gates:#?}");
    assert_eq!(
        r["sanitizer_findings"][0]["kind"], "AddressSanitizer",
        "{:#}",
        r["sanitizer_findings"]
    );
    assert!(
        r["sanitizer_findings"][0]["excerpt"]
            .as_str()
            .unwrap()
            .contains("heap-buffer-overflow")
    );
}
