//! `--json` on the commands that run: stdout carries only event lines, each valid against
//! `evo schema events`, in one envelope (schema, time, command, run id, candidate, scenario), the
//! runs counted against their stage's total, and a `final` line whose verdict, exit code and
//! paths match what the command did.

mod util;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use util::{evo, fixture_repo, patch_by_editing, text, write};

/// The stdout lines of `out`, each parsed and checked against the published schema.
fn events(out: &Output) -> Vec<Value> {
    let schema_out = evo().args(["schema", "events"]).output().unwrap();
    assert!(schema_out.status.success(), "{}", text(&schema_out));
    let schema: Value = serde_json::from_slice(&schema_out.stdout).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the events schema compiles");
    // The schema bites: a line without its envelope and event is refused.
    let bare = serde_json::json!({ "schema": "evo-events/1", "event": "run" });
    assert!(!validator.is_valid(&bare), "the schema accepts anything");
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(!stdout.is_empty(), "no event at all\n{}", text(out));
    stdout
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout holds a line that is not JSON ({e}): {line}"));
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(
                errors.is_empty(),
                "{line}\ndoes not match the schema: {errors:?}"
            );
            assert_eq!(v["schema"], "evo-events/1", "{line}");
            v
        })
        .collect()
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
    let out = evo()
        .args(["bench", "--baseline", "true", "--candidate", "true"])
        .args(["--pairs", "6", "--aa-pairs", "6", "--warmup", "1", "--json"])
        .output()
        .unwrap();
    let events = events(&out);
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
    // The table is still shown, on stderr.
    assert!(String::from_utf8_lossy(&out.stderr).contains("verdict"));
}

#[test]
fn confirm_streams_its_stages_and_ends_with_the_receipt_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    fixture_repo("cpairs", &repo);
    let camp = dir.path().join("camp");
    write(&camp.join("workload.json"), util::cpairs::WORKLOAD);
    write(
        &camp.join("campaign.json"),
        r#"{ "name": "json", "repo": "../repo", "baseline": "main",
             "workload": "workload.json", "output": "receipts" }"#,
    );
    // A protected file: rejected by patch safety before anything builds, with a receipt.
    let diff = patch_by_editing(
        &repo,
        &[("bench/run.sh", "exec ./prog", "exec nice ./prog")],
    );
    let patch = camp.join("harness.patch");
    write(&patch, &diff);
    let out = evo()
        .arg("confirm")
        .arg(&patch)
        .arg("--campaign")
        .arg(camp.join("campaign.json"))
        .arg("--json")
        .output()
        .unwrap();
    let events = events(&out);
    let last = final_line(&events, &out);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(last["verdict"], "rejected");
    assert_eq!(last["tier"], "rejected");
    let started = of_kind(&events, "started");
    assert_eq!(started.len(), 1, "{events:#?}");
    let run_id = started[0]["run_id"].as_str().unwrap();
    let run_dir = Path::new(last["run_dir"].as_str().unwrap());
    assert!(run_dir.ends_with(run_id), "{run_dir:?} is not run {run_id}");
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
