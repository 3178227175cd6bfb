//! The plan a campaign shows before its first build (docs/design.md §2.3.1): emitted once the
//! spec is validated, before any stage starts, again on `--resume`, and with the spec's numbers
//! only.

use crate::util;

use std::sync::Arc;

use evo::campaign::{self, CampaignOptions};
use evo::host::{Hold, Stop, StopCondition};
use evo::measure::fake::FakeRunner;
use evo::pipeline::event::Event;
use evo::report::outline::Outline;
use evo::spec::modes::SandboxMode;
use util::write;

/// A stop already requested: the campaign ends at its first step, resumably.
struct Already;

impl StopCondition for Already {
    fn requested(&self) -> bool {
        true
    }
}

fn campaign(dir: &std::path::Path, max_minutes: &str) -> std::path::PathBuf {
    let repo = dir.join("repo");
    crate::util::tiny::repo(&repo, &[]);
    let camp = dir.join("camp");
    let diff = util::patch_by_editing(&repo, &[("prog.sh", "echo slow", "echo fast")]);
    write(&camp.join("fast.patch"), &diff);
    write(
        &camp.join("workload.json"),
        r#"{ "name": "tiny", "build": { "command": "make prog", "timeout_s": 300 },
  "test": { "command": "make test", "timeout_s": 120 },
  "scenarios": [ { "name": "main", "role": "training", "run": "./prog run {seed}",
    "check": "./prog check {seed}", "compare": "exact", "timeout_s": 30 } ] }"#,
    );
    write(
        &camp.join("holdouts.json"),
        r#"{ "scenarios": [ { "name": "other", "role": "holdout", "run": "./prog h {seed}",
    "check": "./prog check {seed}", "compare": "exact" } ] }"#,
    );
    evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
    write(
        &camp.join("campaign.json"),
        &format!(
            r#"{{ "name": "tiny", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json",
  "candidates": [ {{ "name": "fast", "patch": "fast.patch" }} ],
  "agent": {{ "command": "true", "count": 2, "timeout_s": 600 }},
  "search": {{ "pairs": 5, "rounds": 3, "max_minutes": 20, "max_cost": 2.5 }},
  "confirm": {{ "pairs": 9, "max_pairs": 60, "aa_pairs": 11, "top": 2, "quiet_wait_s": 0
    {max_minutes} }},
  "key": "key/{}", "output": "receipts" }}"#,
            evo::receipt::keys::PRIVATE_KEY_FILE
        ),
    );
    camp.join("campaign.json")
}

/// The plan events of one interrupted session, and whether any stage began before the first.
fn session(plan: &evo::plan::CampaignPlan, resume: Option<String>) -> (Vec<Outline>, String) {
    let opts = CampaignOptions {
        sandbox: Some(SandboxMode::Off),
        resume,
        stop: Stop::new(Already),
        ..CampaignOptions::new(
            Arc::new(FakeRunner::new(5)),
            Hold::External("a test's own repository".into()),
        )
    };
    let (mut outlines, mut run_id, mut stage_before) = (Vec::new(), String::new(), false);
    let err = campaign::run_campaign(plan, &opts, &mut |e| match e {
        Event::Started { run_id: id, .. } => run_id = id,
        Event::Plan(o) => outlines.push(o),
        Event::Stage { .. } if outlines.is_empty() => stage_before = true,
        _ => {}
    })
    .unwrap_err();
    assert!(
        matches!(err, evo::pipeline::PipelineError::Interrupted { .. }),
        "{err}"
    );
    assert!(!stage_before, "a stage began before the plan was shown");
    (outlines, run_id)
}

#[test]
fn a_campaign_shows_its_whole_plan_before_its_first_build_and_again_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let file = campaign(dir.path(), r#", "max_minutes": 10"#);
    let plan = evo::plan::campaign_plan(&file).unwrap();
    let (outlines, run_id) = session(&plan, None);
    assert_eq!(outlines.len(), 1);
    let o = &outlines[0];
    assert_eq!(o.patches, ["fast"]);
    let agent = o.agent.as_ref().unwrap();
    assert_eq!(
        (agent.runs_per_round, agent.rounds, agent.max_runs),
        (2, 3, 6)
    );
    let names: Vec<&str> = o.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "agent runs",
            "baseline",
            "candidate checks",
            "screening",
            "confirmation"
        ]
    );
    // 6 runs × 10 min would be 60; no run starts after search.max_minutes 20, the last ends by 30.
    assert_eq!(o.stages[0].minutes, Some(30.0));
    assert_eq!(o.stages[0].budget_minutes, Some(20.0));
    let confirmation = &o.stages[4];
    assert_eq!(confirmation.minutes, None, "a budget, not a bound");
    assert_eq!(confirmation.budget_minutes, Some(20.0), "2 × 10 min");
    assert!(
        confirmation.detail.contains("9–60 pairs"),
        "{confirmation:?}"
    );
    assert!(
        confirmation.detail.contains("1 sealed holdout"),
        "{confirmation:?}"
    );
    let text = evo::report::outline::lines(o).join("\n");
    assert!(text.contains("build 300 s, tests 120 s"), "{text}");
    assert!(
        text.contains("reported cost reaches search.max_cost 2.5"),
        "{text}"
    );
    assert!(text.contains("5 round(s) on `main`"), "{text}");
    assert!(text.contains("timeout_s, 30 s"), "{text}");
    assert!(text.contains("no upper bound on the total"), "{text}");
    assert!(text.lines().count() <= 8, "a few lines: {text}");

    let (again, _) = session(&plan, Some(run_id));
    assert_eq!(again, outlines, "the resumed run shows the same plan");
}

#[test]
fn a_confirmation_without_max_minutes_is_said_to_have_no_time_budget() {
    let dir = tempfile::tempdir().unwrap();
    let plan = evo::plan::campaign_plan(&campaign(dir.path(), "")).unwrap();
    let (outlines, _) = session(&plan, None);
    let o = &outlines[0];
    assert_eq!(o.stages[4].budget_minutes, None);
    assert!(
        o.unbounded
            .iter()
            .any(|u| u.contains("confirm.max_minutes absent")),
        "{o:?}"
    );
}

#[test]
fn a_campaigns_max_minutes_is_in_its_plan_with_what_it_bounds_and_what_not() {
    let dir = tempfile::tempdir().unwrap();
    let file = campaign(dir.path(), "");
    crate::util::add_campaign_field(&file, r#""max_minutes": 13"#);
    let plan = evo::plan::campaign_plan(&file).unwrap();
    let (outlines, _) = session(&plan, None);
    let o = &outlines[0];
    assert_eq!(o.max_minutes, Some(13.0));
    let text = evo::report::outline::lines(o).join("\n");
    assert!(
        text.contains("the run aims to end within 13 min (max_minutes)")
            && text.contains("a confirmation that would not end by then is not started")
            && text.contains("the search is not cut by it"),
        "{text}"
    );
}
