//! What machines read from evo, checked against what `evo schema` publishes: the `--json` event
//! stream of each command that runs (only event lines on stdout, one envelope, runs counted
//! against their stage's total, a `final` line matching what the command did), and the files
//! `result.json`, `summary.json` and the bench report, from real runs and a rich synthetic one.
//! A fleet campaign's stream is checked the same way in `tests/fleet_slurm.rs`, on the local
//! Slurm cluster.

use crate::util;
use crate::util::synthetic;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use util::schema::{check, events, validator};
use util::{evo, fixture_repo, patch_by_editing, text, write};

fn check_file(kind: &str, path: &Path) {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    check(&validator(kind), &doc, &path.display().to_string());
}

/// Runs `command` with `--json`; it must exit 3 and end its stream with a `rejected` verdict.
fn rejected(command: &mut std::process::Command) -> (Output, Vec<Value>) {
    let out = command.arg("--json").output().unwrap();
    let events = events(&out);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(events.last().unwrap()["verdict"], "rejected");
    (out, events)
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

/// The last line is the only `final` one, and its exit code is the process's.
fn final_line<'a>(events: &'a [Value], out: &Output) -> &'a Value {
    let last = events.last().unwrap();
    assert_eq!(last["event"], "final", "the stream must end with `final`");
    assert_eq!(of_kind(events, "final").len(), 1);
    assert_eq!(last["exit_code"].as_i64(), out.status.code().map(i64::from));
    last
}

#[test]
fn bench_streams_every_run_against_the_stage_total_and_ends_with_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("bench.json");
    let out = evo()
        .args(["bench", "--baseline", "true", "--candidate", "true"])
        .args(["--pairs", "6", "--aa-pairs", "6", "--warmup", "1", "--json"])
        .arg("--export-json")
        .arg(&report)
        .output()
        .unwrap();
    let events = events(&out);
    check_file("bench", &report);
    let runs = of_kind(&events, "run");
    // 1 warmup, 6 A/A and 6 comparison pairs: 26 runs, counted 1..=26 against 26.
    assert_eq!(runs.len(), 26, "{events:#?}");
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r["done"], i + 1);
        assert_eq!(r["total"], 26);
    }
    let planned = of_kind(&events, "pairs_planned");
    assert_eq!(planned.len(), 1);
    assert_eq!(planned[0]["planned"], 6);
    let run_id = events[0]["run_id"]
        .as_str()
        .expect("a run id from the start");
    assert!(
        events
            .iter()
            .all(|e| e["run_id"] == run_id && e["command"] == "bench")
    );
    let last = final_line(&events, &out);
    assert!(last["verdict"].is_string(), "{last}");
    assert_eq!(last["error"], Value::Null);
    assert_eq!(
        last["result"].as_str().map(Path::new),
        Some(report.as_path())
    );
    // The table is still shown, on stderr.
    assert!(String::from_utf8_lossy(&out.stderr).contains("verdict"));
}

#[test]
fn confirm_streams_its_stages_and_ends_with_the_receipt_it_wrote() {
    let dir = util::cpairs::campaign("json", "");
    let repo = dir.path().join("repo");
    let camp = dir.path().join("camp");
    // A protected file: rejected by patch safety before anything builds, with a receipt.
    let diff = patch_by_editing(
        &repo,
        &[("bench/run.sh", "exec ./prog", "exec nice ./prog")],
    );
    let patch = camp.join("harness.patch");
    write(&patch, &diff);
    let mut confirm = evo();
    confirm.arg("confirm").arg(&patch).arg("--campaign");
    let (out, events) = rejected(confirm.arg(camp.join("campaign.json")));
    let last = final_line(&events, &out);
    assert_eq!(last["tier"], "rejected");
    let started = of_kind(&events, "started");
    assert_eq!(started.len(), 1, "{events:#?}");
    let run_id = started[0]["run_id"].as_str().unwrap();
    let run_dir = Path::new(last["run_dir"].as_str().unwrap());
    assert!(run_dir.ends_with(run_id), "{run_dir:?} is not run {run_id}");
    check_file("result", Path::new(last["result"].as_str().unwrap()));
    for key in ["receipt", "pr_body", "result"] {
        let path = last[key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key}: {last}"));
        assert!(Path::new(path).is_file(), "{key} {path} does not exist");
        assert!(Path::new(path).starts_with(run_dir));
    }
    // Every line names the candidate; every line after `started` names the run.
    let after: Vec<&Value> = events
        .iter()
        .skip_while(|e| e["event"] != "started")
        .collect();
    assert!(after.iter().all(|e| e["run_id"] == run_id));
    assert!(
        events
            .iter()
            .all(|e| e["candidate"]["name"] == "harness" && e["command"] == "confirm")
    );
    assert!(
        of_kind(&events, "stage")
            .iter()
            .any(|e| e["name"] == "prepare trees")
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("verdict: rejected"), "{stderr}");
}

#[test]
fn a_confirm_that_cannot_start_still_ends_the_stream_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let patch = dir.path().join("x.patch");
    write(&patch, "not a patch\n");
    let out = evo()
        .current_dir(dir.path())
        .arg("confirm")
        .arg(&patch)
        .arg("--json")
        .output()
        .unwrap();
    let events = events(&out);
    let last = final_line(&events, &out);
    assert_eq!(out.status.code(), Some(evo::exit_codes::USAGE_ERROR));
    assert_eq!(last["verdict"], Value::Null);
    assert!(
        last["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{last}"
    );
}

#[test]
fn a_rich_result_matches_the_published_schema() {
    // Every section filled: scenarios with pairs and figures, holdouts, gates, a search.
    let r = synthetic::hostile_result("plain", false);
    check(
        &validator("result"),
        &serde_json::to_value(&r).unwrap(),
        "a synthetic result.json",
    );
}

#[test]
fn a_campaign_streams_its_candidates_and_its_summary_matches_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    fixture_repo("cpairs", &repo);
    let camp = dir.path().join("camp");
    write(&camp.join("workload.json"), util::cpairs::WORKLOAD);
    // A numerics change: stopped by the differential, so nothing is screened or confirmed.
    let diff = patch_by_editing(&repo, &[("prog.c", "h ^= h >> 29;", "h ^= h >> 28;")]);
    write(&camp.join("numerics.patch"), &diff);
    write(
        &camp.join("campaign.json"),
        r#"{ "name": "json", "repo": "../repo", "baseline": "main", "workload": "workload.json",
             "candidates": [{ "name": "numerics", "patch": "numerics.patch" }],
             "output": "receipts" }"#,
    );
    let mut campaign = evo();
    campaign.args(["campaign", "run"]);
    let (out, events) = rejected(campaign.arg(camp.join("campaign.json")));
    let last = final_line(&events, &out);
    assert_eq!(last["receipt"], Value::Null, "nothing was confirmed");
    let summary = Path::new(last["result"].as_str().unwrap());
    assert!(summary.ends_with("summary.json"));
    check_file("summary", summary);
    let run_id = of_kind(&events, "started")[0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(events.iter().all(|e| e["command"] == "campaign"));
    // The whole plan comes once, after `started` and before the first stage (§2.3.1).
    let at = |kind: &str| events.iter().position(|e| e["event"] == kind).unwrap();
    assert!(
        at("started") < at("plan") && at("plan") < at("stage"),
        "{events:#?}"
    );
    let plan = of_kind(&events, "plan");
    assert_eq!(plan.len(), 1, "{events:#?}");
    assert_eq!(plan[0]["patches"], serde_json::json!(["numerics"]));
    assert_eq!(plan[0]["agent"], Value::Null);
    assert!(!plan[0]["unbounded"].as_array().unwrap().is_empty());
    let verdicts = of_kind(&events, "candidate");
    assert_eq!(verdicts.len(), 1, "{events:#?}");
    assert_eq!(verdicts[0]["candidate"]["name"], "numerics");
    assert_eq!(verdicts[0]["candidate"]["index"], 1);
    assert_eq!(verdicts[0]["status"], "differential_mismatch");
    assert_eq!(verdicts[0]["run_id"], run_id.as_str());
    let check_stage = of_kind(&events, "stage")
        .into_iter()
        .find(|e| e["name"] == "check candidate-1")
        .expect("a check stage");
    assert_eq!(check_stage["candidate"]["name"], "numerics");
}
