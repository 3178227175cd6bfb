//! A receipt from a real `evo confirm` run on the small C fixture: it is signed with the per-user
//! default key (created on first use, in a temp dir), verifies, recomputes, keeps the holdouts
//! sealed, and `evo pr render` gives back the `pr_body.md` the run wrote.

use crate::util;

use std::path::Path;

use util::cpairs::{HOLDOUTS, MEMO, WORKLOAD};
use util::{evo, first_result, fixture_repo, patch_by_editing, text, write};

const CAMPAIGN: &str = r#"{
  "name": "cpairs-speedups",
  "repo": "../repo",
  "baseline": "main",
  "workload": "workload.json",
  "holdouts": "holdouts.json",
  "candidates": [ { "name": "memo", "patch": "memo.patch",
                    "explanation": "Caches slow_hash for the 1000 distinct inputs." } ],
  "confirm": { "pairs": 9, "aa_pairs": 11 },
  "output": "receipts"
}"#;

fn campaign(dir: &Path, campaign: &str) -> std::path::PathBuf {
    let repo = dir.join("repo");
    fixture_repo("cpairs", &repo);
    let camp = dir.join("camp");
    write(&camp.join("workload.json"), WORKLOAD);
    write(&camp.join("holdouts.json"), HOLDOUTS);
    write(&camp.join("campaign.json"), campaign);
    let diff = patch_by_editing(
        &repo,
        &[
            (
                "prog.c",
                "        total += slow_hash(v);",
                "        total += cached_hash(v);",
            ),
            ("prog.c", "static unsigned long work(", MEMO),
        ],
    );
    write(&camp.join("memo.patch"), &diff);
    camp
}

#[test]
fn a_real_confirmation_leaves_a_receipt_that_verifies_and_recomputes() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let camp = campaign(dir.path(), CAMPAIGN);
    let out = evo()
        .env("EVO_KEY_DIR", &keys)
        .arg("confirm")
        .arg(camp.join("memo.patch"))
        .arg("--campaign")
        .arg(camp.join("campaign.json"))
        .output()
        .unwrap();
    let (run_dir, result) = first_result(&camp).unwrap_or_else(|| panic!("{}", text(&out)));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("created this default signing key")
            && stdout.contains(&keys.join("signing.key").display().to_string()),
        "evo must say where the new key is\n{}",
        text(&out)
    );
    assert!(keys.join("signing.pub.pem").is_file());
    let receipt = run_dir.join("validation_receipt.json");
    for file in [
        "validation_receipt.json",
        "pr_body.md",
        "runs.csv",
        "pairs.svg",
    ] {
        assert!(
            run_dir.join(file).is_file(),
            "missing {file}\n{}",
            text(&out)
        );
    }

    let verify = evo()
        .env("EVO_KEY_DIR", &keys)
        .args(["receipt", "verify", "--recompute"])
        .arg(&receipt)
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("recomputed: every figure"));

    let bytes = std::fs::read(&receipt).unwrap();
    let env: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let payload = String::from_utf8(payload).unwrap();
    assert!(
        payload.contains("./bench/run.sh 100000"),
        "training is public"
    );
    if result["scenarios"].as_array().unwrap().len() > 1 {
        assert!(payload.contains("\"sum-30k-sealed\""));
    }
    for sealed in ["./bench/run.sh 30000", "./bench/run.sh 300 "] {
        assert!(!payload.contains(sealed), "holdout command {sealed} leaked");
    }

    let body = std::fs::read_to_string(run_dir.join("pr_body.md")).unwrap();
    let digest = evo::receipt::file_digest(&bytes);
    assert!(
        body.contains(&digest),
        "the PR body quotes the receipt digest"
    );
    assert!(
        body.contains("Caches slow_hash for the 1000 distinct inputs.")
            && body.contains("not independently verified"),
        "{body}"
    );
    // What a reviewer reads (issue 12): no path of this machine, the plot beside the receipt,
    // the statistics folded.
    let temp = dir.path().display().to_string();
    assert!(!body.contains(&temp), "a path of this machine in\n{body}");
    assert!(
        body.contains("[pairs.svg](pairs.svg)") && body.contains("\n<details>\n<summary>"),
        "{body}"
    );
    let render = evo()
        .env("EVO_KEY_DIR", &keys)
        .args(["pr", "render"])
        .arg(&receipt)
        .output()
        .unwrap();
    assert_eq!(render.status.code(), Some(0), "{}", text(&render));
    assert_eq!(String::from_utf8_lossy(&render.stdout), body);

    let csv = std::fs::read_to_string(run_dir.join("runs.csv")).unwrap();
    let runs: usize = result["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s["warmups"].as_array().unwrap().len()
                + 2 * (s["aa_pairs"].as_array().unwrap().len()
                    + s["pairs"].as_array().unwrap().len())
        })
        .sum();
    assert_eq!(csv.lines().count(), 1 + runs);
    let svg = std::fs::read_to_string(run_dir.join("pairs.svg")).unwrap();
    assert!(svg.contains("sum-100k (training)"));
}

#[test]
fn a_campaign_key_that_does_not_exist_stops_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let with_key = CAMPAIGN.replace(
        "\"output\": \"receipts\"",
        "\"output\": \"receipts\", \"key\": \"keys/none.key\"",
    );
    let camp = campaign(dir.path(), &with_key);
    let out = evo()
        .env("EVO_KEY_DIR", dir.path().join("default"))
        .arg("confirm")
        .arg(camp.join("memo.patch"))
        .arg("--campaign")
        .arg(camp.join("campaign.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("signing key") && stderr.contains("none.key"),
        "{stderr}"
    );
    assert!(!camp.join("receipts").exists(), "something ran");
    assert!(
        !dir.path().join("default").exists(),
        "a default key was made"
    );
}
