//! Building a confirmation plan: where the campaign is found, how paths resolve, and which
//! combinations of files are refused before anything runs.

use crate::util;

use std::path::Path;

use evo::plan::{PlanError, canonical_digest, confirm_plan, locate_campaign};
use util::write;

const WORKLOAD: &str = r#"{ "name": "w", "build": { "command": "true" }, "test": { "command": "true" },
  "scenarios": [ { "name": "t", "role": "training", "run": "true", "check": "true", "compare": "exact" } ],
  "overlay": ["harness/h.sh"] }"#;

fn campaign(holdouts: Option<&str>) -> String {
    let h = holdouts.map_or(String::new(), |h| format!(r#", "holdouts": "{h}""#));
    format!(
        r#"{{ "name": "c", "repo": "../repo", "baseline": "main", "workload": "w/workload.json"{h} }}"#
    )
}

#[test]
fn the_campaign_is_found_by_flag_then_manifest_then_evo_json() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let patch = d.join("run/candidate_1.patch");
    write(&patch, "x");
    let err = locate_campaign(&patch, None, d).unwrap_err();
    assert!(matches!(err, PlanError::NoCampaign { .. }), "{err}");
    write(&d.join("evo.json"), "{}");
    assert_eq!(
        locate_campaign(&patch, None, d).unwrap(),
        d.join("evo.json")
    );
    write(
        &d.join("run/run_manifest.json"),
        r#"{ "campaign": "../camp/c.json", "run_id": "r1" }"#,
    );
    assert_eq!(
        locate_campaign(&patch, None, d).unwrap(),
        d.join("run").join("../camp/c.json")
    );
    let flag = Path::new("other.json");
    assert_eq!(
        locate_campaign(&patch, Some(flag), d).unwrap(),
        d.join("other.json")
    );
}

#[test]
fn paths_resolve_against_the_file_that_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("camp/c.json"), &campaign(None));
    write(&d.join("camp/w/workload.json"), WORKLOAD);
    write(&d.join("p.patch"), "diff");
    let plan = confirm_plan(Path::new("p.patch"), Some(Path::new("camp/c.json")), d).unwrap();
    assert_eq!(plan.campaign.repo, d.join("camp").join("../repo"));
    assert_eq!(
        plan.campaign.workload_file,
        d.join("camp").join("w/workload.json")
    );
    assert_eq!(
        plan.campaign.overlay,
        vec![d.join("camp/w").join("harness/h.sh")]
    );
    assert_eq!(plan.campaign.output_dir, d.join("camp").join("receipts"));
    assert_eq!(plan.patch, b"diff");
    assert_eq!(plan.settings().pairs.get(), 9);
    assert_eq!(plan.campaign.workload_digest.len(), 64);
}

#[test]
fn a_holdout_in_the_workload_or_a_training_scenario_in_the_holdouts_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("p.patch"), "diff");
    write(&d.join("c.json"), &campaign(Some("h.json")));
    let leaky = WORKLOAD.replace(r#""role": "training""#, r#""role": "holdout""#);
    write(&d.join("w/workload.json"), &leaky);
    let err = confirm_plan(Path::new("p.patch"), Some(Path::new("c.json")), d).unwrap_err();
    assert!(err.to_string().contains("holdouts are sealed"), "{err}");

    write(&d.join("w/workload.json"), WORKLOAD);
    write(
        &d.join("h.json"),
        r#"{ "scenarios": [ { "name": "h", "role": "training", "run": "x", "check": "x", "compare": "exact" } ] }"#,
    );
    let err = confirm_plan(Path::new("p.patch"), Some(Path::new("c.json")), d).unwrap_err();
    assert!(err.to_string().contains("scenarios[0].role"), "{err}");
}

#[test]
fn the_portfolio_digest_does_not_depend_on_key_order() {
    let a: serde_json::Value =
        serde_json::from_str(r#"{"b": 1, "a": [1, {"y": 2, "x": 3}]}"#).unwrap();
    let b: serde_json::Value =
        serde_json::from_str(r#"{"a": [1, {"x": 3, "y": 2}], "b": 1}"#).unwrap();
    assert_eq!(canonical_digest(&a), canonical_digest(&b));
    let c: serde_json::Value =
        serde_json::from_str(r#"{"a": [1, {"x": 3, "y": 2}], "b": 2}"#).unwrap();
    assert_ne!(canonical_digest(&a), canonical_digest(&c));
}

#[test]
fn a_missing_patch_or_workload_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("c.json"), &campaign(None));
    let err = confirm_plan(Path::new("nope.patch"), Some(Path::new("c.json")), d).unwrap_err();
    assert!(err.to_string().contains("workload.json"), "{err}");
    write(&d.join("w/workload.json"), WORKLOAD);
    let err = confirm_plan(Path::new("nope.patch"), Some(Path::new("c.json")), d).unwrap_err();
    assert!(err.to_string().contains("nope.patch"), "{err}");
}

/// `allow_probes` names probes evo looks for; a misspelt one would silently allow nothing, so
/// it is refused with its place in the file. The applied-size limit must be at least a byte.
#[test]
fn an_unknown_allowed_probe_or_a_zero_applied_size_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("p.patch"), "diff");
    write(&d.join("c.json"), &campaign(None));
    let allowing = |names: &str| {
        WORKLOAD.replace(
            r#""overlay": ["harness/h.sh"]"#,
            &format!(r#""overlay": ["harness/h.sh"], "allow_probes": [{names}]"#),
        )
    };
    write(
        &d.join("w/workload.json"),
        &allowing(r#""fadvise", "posix_fadvice""#),
    );
    let err = confirm_plan(Path::new("p.patch"), Some(Path::new("c.json")), d).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("allow_probes[1]"), "{message}");
    assert!(
        message.contains("`posix_fadvice` is not a lane probe"),
        "{message}"
    );
    write(
        &d.join("w/workload.json"),
        &allowing(r#""fadvise", "mincore""#),
    );
    let plan = confirm_plan(Path::new("p.patch"), Some(Path::new("c.json")), d).unwrap();
    assert_eq!(plan.campaign.workload.allow_probes, ["fadvise", "mincore"]);
    assert_eq!(plan.settings().max_applied_bytes, 64 << 20);

    let capped = campaign(None).replace(" }", r#", "confirm": { "max_applied_bytes": 0 } }"#);
    write(&d.join("c.json"), &capped);
    let err = confirm_plan(Path::new("p.patch"), Some(Path::new("c.json")), d).unwrap_err();
    assert!(err.to_string().contains("max_applied_bytes"), "{err}");
}
