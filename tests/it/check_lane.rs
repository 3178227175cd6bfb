//! One check engine (`pipeline::lane`) for a campaign's search and for a confirmation: a
//! candidate the search's checks stop is stopped by `evo confirm` at the same gate, for the same
//! reason, whatever stops it (its build, an artifact that leaves the tree, its tests, its check's
//! output, a test or a check that rewrites a protected file). Two copies of the lane used to
//! drift apart: the search took a built artifact that leads outside the tree for a file and
//! passed it on, where a confirmation refused it at its build.

use crate::util;

use std::path::Path;

use serde_json::Value;
use util::{evo, patch_by_editing, text, write};

const WORKLOAD: &str = r#"{
  "name": "lane",
  "build": { "command": "sh build.sh", "artifacts": ["prog"] },
  "test": { "command": "sh test.sh" },
  "scenarios": [
    { "name": "main", "role": "training", "run": "./prog {seed}", "check": "./prog {seed}",
      "compare": "exact" }
  ],
  "protected": ["bench/**"]
}"#;

/// Each candidate, a line: its name; the file it edits, the text it replaces and the new text;
/// the gate a confirmation fails; the status the search gives it; a phrase both reasons hold.
const CANDIDATES: &str = "
broken_build | build.sh | cp prog.sh prog | exit 3 | build | build_failed | exit code 3
artifact_outside | build.sh | cp prog.sh prog | ln -sf /etc/hostname prog | build | build_failed | leads outside the tree
failing_test | test.sh | exit 0 | exit 1 | tests | tests_failed | exit code 1
wrong_output | prog.sh | echo 42 | echo 43 | differential | differential_mismatch | scenario `main`
test_rewrites_protected | test.sh | exit 0 | echo x >> bench/run.sh | patch safety | refused | bench/run.sh
check_rewrites_protected | prog.sh | echo 42 | echo x >> bench/run.sh; echo 42 | patch safety | refused | bench/run.sh
";

/// The fields of each line of [`CANDIDATES`].
fn candidates() -> Vec<[&'static str; 7]> {
    (CANDIDATES.lines().filter(|l| !l.is_empty()))
        .map(|l| {
            let fields: Vec<&str> = l.split(" | ").collect();
            fields
                .try_into()
                .unwrap_or_else(|_| panic!("not 7 fields: {l}"))
        })
        .collect()
}

/// The repository, the campaign listing every candidate, and its folder.
fn fixture(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("repo");
    util::tiny::repo(
        &repo,
        &[
            ("prog.sh", "#!/bin/sh\necho 42\n"),
            ("build.sh", "cp prog.sh prog\nchmod +x prog\n"),
            ("test.sh", "exit 0\n"),
            ("bench/run.sh", "#!/bin/sh\nexec ./prog \"$@\"\n"),
        ],
    );
    let camp = dir.join("camp");
    let mut listed = Vec::new();
    for [name, file, old, new, ..] in candidates() {
        write(
            &camp.join(format!("{name}.patch")),
            &patch_by_editing(&repo, &[(file, old, new)]),
        );
        listed.push(format!(
            r#"{{ "name": "{name}", "patch": "{name}.patch" }}"#
        ));
    }
    write(&camp.join("workload.json"), WORKLOAD);
    evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
    let campaign = format!(
        r#"{{ "name": "lane", "repo": "../repo", "baseline": "main", "workload": "workload.json",
  "candidates": [{}], "search": {{ "pairs": 3 }},
  "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1, "quiet_wait_s": 0 }},
  "key": "key/{}", "output": "receipts" }}"#,
        listed.join(", "),
        evo::receipt::keys::PRIVATE_KEY_FILE
    );
    write(&camp.join("campaign.json"), &campaign);
    camp
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_candidate_the_searchs_checks_stop_is_stopped_by_a_confirmation_at_the_same_gate() {
    let dir = tempfile::tempdir().unwrap();
    let camp = fixture(dir.path());
    // Unsandboxed, so a test or a check can write the tree it runs in.
    let out = evo()
        .current_dir(&camp)
        .args(["campaign", "run", "campaign.json", "--sandbox", "off"])
        .output()
        .unwrap();
    let run_dir = (std::fs::read_dir(camp.join("receipts")).unwrap())
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("summary.json").is_file())
        .unwrap_or_else(|| panic!("no campaign summary\n{}", text(&out)));
    let summary = read_json(&run_dir.join("summary.json"));
    let rows = summary["rows"].as_array().unwrap();
    for [name, _, _, _, gate, status, phrase] in candidates() {
        let row = (rows.iter().find(|r| r["name"] == *name))
            .unwrap_or_else(|| panic!("no row {name} in {summary:#}"));
        let reason = row["reason"].as_str().unwrap();
        assert_eq!(row["status"], status, "{name}: {reason}");
        assert!(reason.contains(phrase), "{name}: {reason}");

        let confirms = camp.join(format!("confirms-{name}"));
        let out = evo()
            .current_dir(&camp)
            .args(["confirm", &format!("{name}.patch"), "--campaign"])
            .args(["campaign.json", "--sandbox", "off", "--out-dir"])
            .arg(&confirms)
            .output()
            .unwrap();
        let result = (std::fs::read_dir(&confirms).unwrap())
            .filter_map(Result::ok)
            .map(|e| e.path().join("result.json"))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{name}: no result.json\n{}", text(&out)));
        let result = read_json(&result);
        let failed: Vec<&Value> = (result["gates"].as_array().unwrap().iter())
            .filter(|g| g["status"] == "failed")
            .collect();
        assert_eq!(failed.len(), 1, "{name}: {failed:#?}");
        assert_eq!(failed[0]["name"], gate, "{name}: {:#}", failed[0]);
        let detail = failed[0]["detail"].as_str().unwrap();
        assert!(detail.contains(phrase), "{name}: {detail}");
    }
}
