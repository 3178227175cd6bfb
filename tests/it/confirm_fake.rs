//! `evo confirm`'s whole pipeline (`confirm::run_confirm`) on a seeded fake runner: a real git
//! repository, real trees and a real patch, but every build, test, check and timed run scripted.
//! Each case of the verdict truth table (docs/design.md §3.11) gets its exact verdict, gates and
//! tier, the same on every run, which real timing cannot promise.

use crate::util;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use evo::confirm::{self, ConfirmOptions, ConfirmRequest};
use evo::host::Hold;
use evo::measure::cpus::CpuSplit;
use evo::measure::fake::{FakeBehavior, FakeRunner};
use evo::measure::runner::RunSpec;
use evo::measure::schedule::{PairsPlanned, RunEvent};
use evo::pipeline::event::Event;
use evo::spec::modes::SandboxMode;
use serde_json::Value;
use util::{patch_by_editing, write};

pub(crate) const WORKLOAD: &str = r#"{
  "name": "tiny",
  "build": { "command": "make prog", "timeout_s": 60 },
  "test": { "command": "make test", "timeout_s": 60 },
  "scenarios": [
    { "name": "main", "role": "training", "run": "./prog run {seed}",
      "check": "./prog check {seed}", "compare": "exact", "deterministic_output": true,
      "timeout_s": 20 }
  ]
}"#;

const HOLDOUTS: &str = r#"{ "scenarios": [
  { "name": "other", "role": "holdout", "run": "./prog holdout {seed}",
    "check": "./prog check {seed}", "compare": "exact", "deterministic_output": true }
] }"#;

/// The campaign's `confirm` settings unless a case says otherwise: no extension beyond 9 pairs.
const DEFAULT_CONFIRM: &str = r#"{ "pairs": 9, "aa_pairs": 11, "quiet_wait_s": 0 }"#;

/// The same fake seed everywhere: a case's figures are then the same on every run.
const SEED: u64 = 11;

/// A tree (`baseline`, `baseline-again`, `candidate`, or `*` for any), the start of a command
/// line, and how such runs behave.
pub(crate) type Rule = (&'static str, &'static str, FakeBehavior);

fn noisy(mean_s: f64, rel_sd: f64) -> FakeBehavior {
    FakeBehavior::Noisy { mean_s, rel_sd }
}

fn fails() -> FakeBehavior {
    FakeBehavior::Fails {
        code: 2,
        stderr: "error: it broke\n".into(),
    }
}

/// An honest candidate 25% faster on a quiet machine: everything builds, passes and matches.
fn good_candidate() -> Vec<Rule> {
    vec![
        ("*", "make prog", FakeBehavior::Prints(String::new())),
        ("*", "make test", FakeBehavior::Prints("ok\n".into())),
        ("*", "./prog check", FakeBehavior::Prints("42\n".into())),
        ("baseline", "./prog run", noisy(1.0, 0.01)),
        ("baseline-again", "./prog run", noisy(1.0, 0.01)),
        ("candidate", "./prog run", noisy(0.8, 0.01)),
        ("baseline", "./prog holdout", noisy(1.0, 0.01)),
        ("candidate", "./prog holdout", noisy(0.8, 0.01)),
    ]
}

/// No change at all, on a machine whose 5% noise per run 9 pairs cannot resolve to 1%.
fn noisy_machine() -> Vec<Rule> {
    let run = |tree| (tree, "./prog run", noisy(1.0, 0.05));
    vec![run("baseline"), run("baseline-again"), run("candidate")]
}

/// The CPUs the fake's timed runner says evo and the commands ran on.
fn split() -> CpuSplit {
    CpuSplit {
        evo: vec![0],
        command: vec![1, 2],
    }
}

/// The tree a run's working directory lies in, without the padding of its folder name.
/// A run of the check lanes: its output is kept as a check output (`….check.out`).
fn is_check_step(spec: &RunSpec) -> bool {
    (spec.stdout_file.as_ref()).is_some_and(|p| p.to_string_lossy().ends_with(".check.out"))
}

fn tree_of(spec: &RunSpec, work: &Path) -> Option<String> {
    let rel = spec.cwd.as_deref()?.strip_prefix(work).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches('.').to_string())
}

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    camp: PathBuf,
    work: PathBuf,
    patch: PathBuf,
}

impl Fixture {
    fn new(holdouts: bool) -> Fixture {
        Fixture::with(WORKLOAD, holdouts, &[("prog.sh", "echo slow", "echo fast")])
    }

    /// A fixture with its own workload and patch (`edits` of the repository's files).
    fn with(workload: &str, holdouts: bool, edits: &[(&str, &str, &str)]) -> Fixture {
        Fixture::configured(workload, holdouts, edits, DEFAULT_CONFIRM)
    }

    /// A fixture whose campaign has `confirm` as its `confirm` settings.
    pub(crate) fn configured(
        workload: &str,
        holdouts: bool,
        edits: &[(&str, &str, &str)],
        confirm: &str,
    ) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        crate::util::tiny::repo(&repo, &[]);
        let diff = patch_by_editing(&repo, edits);
        let camp = dir.path().join("camp");
        let patch = camp.join("fast.patch");
        write(&patch, &diff);
        write(&camp.join("workload.json"), workload);
        let holdouts_line = if holdouts {
            write(&camp.join("holdouts.json"), HOLDOUTS);
            r#""holdouts": "holdouts.json","#
        } else {
            ""
        };
        evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
        let campaign = format!(
            r#"{{
  "name": "tiny-speedups", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", {holdouts_line}
  "confirm": {confirm},
  "key": "key/{}", "output": "receipts"
}}"#,
            evo::receipt::keys::PRIVATE_KEY_FILE
        );
        write(&camp.join("campaign.json"), &campaign);
        let work = dir.path().join("work");
        Fixture {
            _dir: dir,
            camp,
            work,
            patch,
        }
    }

    /// The fake: the case's `rules` first, then the good candidate's (the first match answers).
    fn fake(&self, rules: Vec<Rule>) -> FakeRunner {
        let mut fake = FakeRunner::new(SEED).with_cpu_split(split());
        for (tree, prefix, behavior) in rules.into_iter().chain(good_candidate()) {
            let work = self.work.clone();
            // `<tree>-timed`: that tree's timed runs only, not the differential's run of the
            // timed command (a step whose output is kept as a check output).
            let (tree, timed_only) = match tree.strip_suffix("-timed") {
                Some(t) => (t, true),
                None => (tree, false),
            };
            fake = fake.when(
                move |s: &RunSpec| {
                    s.command.starts_with(prefix)
                        && (tree == "*" || tree_of(s, &work).as_deref() == Some(tree))
                        && !(timed_only && is_check_step(s))
                },
                behavior,
            );
        }
        fake
    }

    /// Runs the whole confirmation on the fake.
    pub(crate) fn confirm(&self, rules: Vec<Rule>) -> Outcome {
        self.confirm_by(rules, None)
    }

    /// [`Fixture::confirm`] for a run that must end at `deadline` (a campaign's `max_minutes`).
    pub(crate) fn confirm_by(
        &self,
        rules: Vec<Rule>,
        deadline: Option<std::time::Instant>,
    ) -> Outcome {
        let fake = self.fake(rules);
        let cwd = std::env::current_dir().unwrap();
        let plan =
            evo::plan::confirm_plan(&self.patch, Some(&self.camp.join("campaign.json")), &cwd)
                .unwrap();
        let request = ConfirmRequest::new(plan, None, Some(SandboxMode::Off));
        let opts = ConfirmOptions {
            work_dir: Some(self.work.clone()),
            deadline,
            ..ConfirmOptions::new(
                Arc::new(fake.clone()),
                Hold::External("a test's own".into()),
            )
        };
        let mut announced = Vec::new();
        let mut on_event = |e| {
            if let Event::Run(RunEvent { plan: Some(p), .. }) = e {
                announced.push(p);
            }
        };
        let done = confirm::run_confirm(&request, &opts, &mut on_event).unwrap();
        let json = std::fs::read_to_string(done.run_dir.join("result.json")).unwrap();
        Outcome {
            result: serde_json::from_str(&json).unwrap(),
            fake,
            run_dir: done.run_dir,
            announced,
        }
    }
}

/// A finished confirmation: `result.json` as written, the fake (for its call log) and the run
/// directory.
pub(crate) struct Outcome {
    pub(crate) result: Value,
    fake: FakeRunner,
    run_dir: PathBuf,
    /// Every pair-count announcement, in order.
    announced: Vec<PairsPlanned>,
}

/// Runs one case on a fresh fixture.
fn case(holdouts: bool, rules: Vec<Rule>) -> Value {
    Fixture::new(holdouts).confirm(rules).result
}

/// Each gate's name and status, in order.
fn gates(r: &Value) -> Vec<(String, String)> {
    let gates = r["gates"].as_array().unwrap();
    (gates.iter())
        .map(|g| (str_of(&g["name"]), str_of(&g["status"])))
        .collect()
}

fn str_of(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_string()
}

fn expect_gates(r: &Value, expected: &[(&str, &str)]) {
    let expected: Vec<(String, String)> = (expected.iter())
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect();
    assert_eq!(gates(r), expected, "{:#}", r["reasons"]);
}

fn expect_decision(r: &Value, verdict: &str, tier: &str) {
    assert_eq!(
        (str_of(&r["verdict"]), str_of(&r["tier"])),
        (verdict.to_string(), tier.to_string()),
        "{:#}\n{:#}",
        r["reasons"],
        r["gates"]
    );
}

/// Every gate up to and including `differential` passed (the lanes that run before measuring).
const CHECKED: [(&str, &str); 6] = [
    ("patch safety", "passed"),
    ("lane probes", "passed"),
    ("apply", "passed"),
    ("build", "passed"),
    ("tests", "passed"),
    ("differential", "passed"),
];

/// The gates of a confirmation whose every check passed and whose runs were measured.
fn all_green() -> Vec<(&'static str, &'static str)> {
    let mut all = CHECKED.to_vec();
    all.extend([
        ("sanitizers", "skipped"),
        ("timed output", "passed"),
        ("leftover processes", "passed"),
    ]);
    all
}

fn training_gate(r: &Value) -> &Value {
    &r["scenarios"][0]["training"]["training_gate"]
}

#[test]
fn a_clear_speedup_with_holdouts_is_accepted_as_tested() {
    let r = case(true, Vec::new());
    expect_decision(&r, "accepted", "tested");
    expect_gates(&r, &all_green());
    assert_eq!(r["scenarios"][1]["holdout"]["verdict"], "no_regression");
    let median = r["scenarios"][0]["training"]["median"].as_f64().unwrap();
    assert!((median - 1.25).abs() < 0.03, "{median}");
    assert_eq!(r["reasons"], serde_json::json!([]));
    // The CPU split is recorded from the runner the timed runs used.
    let cpus: CpuSplit = serde_json::from_value(r["environment"]["cpus"].clone()).unwrap();
    assert_eq!(cpus, split());
}

#[test]
fn a_clear_speedup_without_holdouts_is_accepted_as_measured_and_says_generalization_is_untested() {
    let r = case(false, Vec::new());
    expect_decision(&r, "accepted", "measured");
    expect_gates(&r, &all_green());
    assert_eq!(r["scenarios"].as_array().unwrap().len(), 1);
    assert!(str_of(&r["reasons"][0]).contains("no holdout was declared"));
}

#[test]
fn a_candidate_whose_build_fails_is_rejected_before_anything_else_runs() {
    let done = Fixture::new(true).confirm(vec![("candidate", "make prog", fails())]);
    let r = &done.result;
    expect_decision(r, "rejected", "rejected");
    expect_gates(
        r,
        &[
            ("patch safety", "passed"),
            ("lane probes", "passed"),
            ("apply", "passed"),
            ("build", "failed"),
        ],
    );
    assert!(
        str_of(&r["reasons"][0]).contains("error: it broke"),
        "{r:#}"
    );
    // Nothing ran after the two builds (no second baseline build, test, check or timed run).
    assert_eq!(done.fake.calls(), ["make prog", "make prog"]);
}

#[test]
fn a_candidate_whose_tests_fail_is_rejected_and_not_measured() {
    let r = case(true, vec![("candidate", "make test", fails())]);
    expect_decision(&r, "rejected", "rejected");
    expect_gates(
        &r,
        &[
            CHECKED[0],
            CHECKED[1],
            CHECKED[2],
            CHECKED[3],
            ("tests", "failed"),
        ],
    );
    assert!(r["scenarios"].as_array().unwrap().is_empty());
}

#[test]
fn a_candidate_whose_check_output_differs_is_rejected_by_the_differential_with_a_diff() {
    let changed = FakeBehavior::Prints("43\n".into());
    let fx = Fixture::new(true);
    let done = fx.confirm(vec![("candidate", "./prog check", changed)]);
    let r = &done.result;
    expect_decision(r, "rejected", "rejected");
    let mut expected = CHECKED[..5].to_vec();
    expected.push(("differential", "failed"));
    expect_gates(r, &expected);
    let detail = str_of(&r["gates"][5]["detail"]);
    assert!(detail.contains("-42") && detail.contains("+43"), "{detail}");
    assert!(r["scenarios"].as_array().unwrap().is_empty());
    // Both scenarios were compared, on the outputs the fake printed into the run directory.
    let scenarios: Vec<&Value> = (r["differential"].as_array().unwrap().iter())
        .map(|d| &d["scenario"])
        .collect();
    // The training scenario's timed command too, once per tree (`main.timed`).
    assert_eq!(scenarios, ["main", "other", "main.timed"]);
    let kept = |tree: &str| {
        let path = done.run_dir.join(format!("outputs/{tree}/main.check.out"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: {:?}",
                path.display(),
                util::files_under(&done.run_dir)
            )
        })
    };
    assert_eq!(
        (kept("baseline"), kept("candidate")),
        ("42\n".into(), "43\n".into())
    );
}

#[test]
fn a_candidate_that_leaves_processes_behind_is_rejected_before_measuring() {
    let r = case(
        true,
        vec![("candidate", "make test", FakeBehavior::LeavesProcesses)],
    );
    expect_decision(&r, "rejected", "rejected");
    let mut expected = CHECKED.to_vec();
    expected.extend([("sanitizers", "skipped"), ("leftover processes", "failed")]);
    expect_gates(&r, &expected);
    assert!(r["scenarios"].as_array().unwrap().is_empty());
}

#[test]
fn a_significant_slowdown_is_rejected_and_spares_the_holdouts() {
    let r = case(true, vec![("candidate", "./prog run", noisy(1.25, 0.01))]);
    expect_decision(&r, "rejected", "rejected");
    expect_gates(&r, &all_green());
    assert_eq!(training_gate(&r)["regression"], true);
    assert_eq!(r["scenarios"].as_array().unwrap().len(), 1, "holdouts ran");
    let reason = str_of(&r["reasons"][0]);
    assert!(
        reason.contains("training scenario `main` did not pass: it is slower"),
        "{reason}"
    );
    assert!(r["scenarios"][0]["training"]["median"].as_f64().unwrap() < 0.85);
}

#[test]
fn a_run_the_cap_leaves_undecided_is_inconclusive_with_the_pairs_that_would_decide_it() {
    let r = case(true, noisy_machine());
    expect_decision(&r, "inconclusive", "none");
    expect_gates(&r, &all_green());
    let gate = training_gate(&r);
    assert_eq!(
        (&gate["resolved"], &gate["aa_valid"]),
        (&false.into(), &true.into())
    );
    let reason = str_of(&r["reasons"][0]);
    assert!(reason.contains("undecided at the cap"), "{r:#}");
    assert!(
        reason.contains("would decide it") || reason.contains("no practical number"),
        "{r:#}"
    );
    assert_eq!(r["scenarios"].as_array().unwrap().len(), 1);
}

#[test]
fn a_biased_aa_check_is_inconclusive_even_for_a_fast_candidate() {
    // The second baseline build runs 10% slower than the first: the setup, not the candidate.
    let r = case(
        true,
        vec![("baseline-again", "./prog run", noisy(1.1, 0.01))],
    );
    expect_decision(&r, "inconclusive", "none");
    expect_gates(&r, &all_green());
    assert_eq!(training_gate(&r)["aa_valid"], false);
    assert_eq!(r["scenarios"][0]["aa_second_build"], true);
    assert!(str_of(&r["reasons"][0]).contains("A/A check found the setup biased"));
}

#[test]
fn a_candidate_slower_on_a_holdout_is_rejected_though_it_wins_in_training() {
    let r = case(
        true,
        vec![("candidate", "./prog holdout", noisy(1.2, 0.01))],
    );
    expect_decision(&r, "rejected", "rejected");
    expect_gates(&r, &all_green());
    assert_eq!(training_gate(&r)["passed"], true);
    assert_eq!(r["scenarios"][1]["holdout"]["verdict"], "rejected");
    assert!(
        str_of(&r["reasons"][0]).contains("holdout `other` is rejected"),
        "{r:#}"
    );
}

#[test]
fn a_candidate_whose_timed_runs_print_other_bytes_is_rejected_after_two_warmups() {
    // It prints the baseline's answer wherever it is checked (the differential's run of the
    // timed command included) and another in its timed runs.
    let gamed = FakeBehavior::Prints("n=0\n".into());
    let r = case(true, vec![("candidate-timed", "./prog run", gamed)]);
    expect_decision(&r, "rejected", "rejected");
    let mut expected = CHECKED.to_vec();
    expected.extend([
        ("sanitizers", "skipped"),
        ("timed output", "failed"),
        ("leftover processes", "passed"),
    ]);
    expect_gates(&r, &expected);
    assert_eq!(r["scenarios"][0]["warmups"].as_array().unwrap().len(), 2);
}

#[test]
fn the_same_seed_gives_the_same_figures_whatever_order_the_pairs_ran_in() {
    let figures = |r: &Value| {
        let t = &r["scenarios"][0]["training"];
        (
            t["median"].clone(),
            t["ci95"].clone(),
            t["noise_floor_pct"].clone(),
        )
    };
    // Each confirmation draws its own pair order and `{seed}` from the operating system.
    let (a, b) = (case(false, noisy_machine()), case(false, noisy_machine()));
    assert_eq!(figures(&a), figures(&b));
    let ratios = |r: &Value| {
        r["scenarios"][0]["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["ratio"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ratios(&a), ratios(&b));
}

#[test]
fn a_patch_with_build_flags_gets_the_build_configuration_lane() {
    let workload = WORKLOAD.replace(
        r#""name": "tiny","#,
        r#""name": "tiny", "config_files": ["Makefile"],"#,
    );
    let edits = [
        ("prog.sh", "echo slow", "echo fast"),
        ("Makefile", "cp prog.sh", "cp -p prog.sh"),
    ];
    let fx = Fixture::with(&workload, false, &edits);
    // The flags alone give 3% of the whole patch's 25%.
    let config_only = ("config-only", "./prog run", noisy(0.97, 0.01));
    let done = fx.confirm(vec![config_only]);
    let r = &done.result;
    expect_decision(r, "accepted", "measured");
    let lane = &r["config_lane"];
    assert_eq!(lane["ran"], true, "{lane:#}");
    assert_eq!(lane["files"], serde_json::json!(["Makefile"]));
    assert_eq!(lane["pairs"].as_array().unwrap().len(), 9);
    let median = lane["median"].as_f64().unwrap();
    assert!(
        (median - 1.0 / 0.97).abs() < 0.01,
        "configuration-only median {median}"
    );
    let share = lane["configuration_share"].as_f64().unwrap();
    assert!(share > 0.05 && share < 0.25, "{lane:#}");
    let config_patch = std::fs::read_to_string(done.run_dir.join("config_only.patch")).unwrap();
    assert!(config_patch.contains("a/Makefile") && !config_patch.contains("a/prog.sh"));
    let pr = std::fs::read_to_string(done.run_dir.join("pr_body.md")).unwrap();
    assert!(pr.contains("Baseline + configuration only"), "{pr}");
    let public = fx
        .camp
        .join("key")
        .join(evo::receipt::keys::PUBLIC_KEY_FILE);
    let verify = util::evo()
        .args(["receipt", "verify", "--recompute"])
        .arg(done.run_dir.join(evo::receipt::RECEIPT_FILE))
        .arg("--key")
        .arg(public)
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", util::text(&verify));
}

#[test]
fn no_change_in_a_run_that_resolves_the_minimum_effect_is_rejected_not_inconclusive() {
    // A quiet machine (0.5% noise per run): 9 pairs resolve 1%, and they show nothing.
    let run = |tree| (tree, "./prog run", noisy(1.0, 0.005));
    let r = case(
        true,
        vec![run("baseline"), run("baseline-again"), run("candidate")],
    );
    expect_decision(&r, "rejected", "rejected");
    expect_gates(&r, &all_green());
    let gate = training_gate(&r);
    for (condition, value) in [
        ("resolved", true),
        ("aa_valid", true),
        ("passed", false),
        ("regression", false),
    ] {
        assert_eq!(gate[condition], value, "{condition}: {gate:#}");
    }
    assert!(
        str_of(&r["reasons"][0]).starts_with("training scenario `main` did not pass"),
        "{r:#}"
    );
    assert_eq!(r["scenarios"].as_array().unwrap().len(), 1, "holdouts ran");
}

/// `evo receipt verify --recompute` on a confirmation's receipt; its exit code and output.
pub(crate) fn recompute_receipt(fx: &Fixture, done: &Outcome) -> (Option<i32>, String) {
    let public = (fx.camp.join("key")).join(evo::receipt::keys::PUBLIC_KEY_FILE);
    let verify = util::evo()
        .args(["receipt", "verify", "--recompute"])
        .arg(done.run_dir.join(evo::receipt::RECEIPT_FILE))
        .arg("--key")
        .arg(public)
        .output()
        .unwrap();
    (verify.status.code(), util::text(&verify))
}

/// The recorded result as the library reads it, and what `--recompute` finds in it.
pub(crate) fn recompute(r: &Value) -> Vec<String> {
    let result: evo::evidence::result::ConfirmResult = serde_json::from_value(r.clone()).unwrap();
    (evo::receipt::recompute::recompute(&result).iter())
        .map(|d| d.field.clone())
        .collect()
}

/// A candidate 25% faster in training and as fast as the baseline on the holdout, on a machine
/// with 2% noise per run: 9 pairs cannot show the holdout within its 1% tolerance.
fn two_percent_noise() -> Vec<Rule> {
    let run = |tree, mean| (tree, "./prog run", noisy(mean, 0.02));
    let holdout = |tree| (tree, "./prog holdout", noisy(1.0, 0.02));
    vec![
        run("baseline", 1.0),
        run("baseline-again", 1.0),
        run("candidate", 0.8),
        holdout("baseline"),
        holdout("candidate"),
    ]
}

#[test]
fn a_holdout_on_a_noisy_machine_gets_the_pairs_its_gate_needs_and_recomputes() {
    // The cap of 400 lets the plan reach the pairs the holdout needs.
    let settings = r#"{ "pairs": 9, "max_pairs": 400, "aa_pairs": 11, "quiet_wait_s": 0 }"#;
    let fx = Fixture::configured(
        WORKLOAD,
        true,
        &[("prog.sh", "echo slow", "echo fast")],
        settings,
    );
    let done = fx.confirm(two_percent_noise());
    let r = &done.result;
    expect_gates(r, &all_green());
    let sigma = r["scenarios"][0]["training"]["aa"]["sigma"]
        .as_f64()
        .unwrap();
    let plan = &r["scenarios"][1]["holdout"]["plan"];
    assert_eq!(plan["sigma"].as_f64(), Some(sigma), "{plan:#}");
    let (needed, planned) = (
        plan["needed"].as_u64().unwrap(),
        plan["planned"].as_u64().unwrap(),
    );
    assert_eq!(
        needed as usize,
        evo::stats::holdout_pairs_to_resolve(sigma, evo::stats::HOLDOUT_TOLERANCE, 9)
    );
    assert!(
        planned > 9 && planned == needed && planned <= 400,
        "{plan:#}"
    );
    assert_eq!(
        (&plan["pairs"], &plan["max_pairs"], &plan["warmups"]),
        (&9.into(), &400.into(), &1.into())
    );
    // The holdout stops at the first look that decides, at the planned count at the latest.
    let holdout_pairs = r["scenarios"][1]["pairs"].as_array().unwrap().len() as u64;
    let stop = &r["scenarios"][1]["holdout"]["sequential"]["stop"];
    assert_eq!(stop["pairs"].as_u64(), Some(holdout_pairs), "{stop:#}");
    assert!(holdout_pairs <= planned, "{holdout_pairs} of {planned}");
    let looks = r["scenarios"][1]["holdout"]["sequential"]["looks"]
        .as_array()
        .unwrap();
    assert_eq!(looks.last().unwrap()["pairs"].as_u64(), Some(planned));
    // Announced like the training comparison, counting from the configured pairs.
    assert_eq!(done.announced.len(), 2, "{:?}", done.announced);
    let a = done.announced[1];
    assert_eq!(
        (a.planned as u64, a.needed as u64, a.configured),
        (planned, needed, 9)
    );
    assert_eq!(a.sigma, sigma);
    assert_eq!(recompute(r), Vec::<String>::new());
    let rr = recompute_receipt(&fx, &done);
    assert_eq!(rr.0, Some(0), "{}", rr.1);

    // A holdout cut short (its last pair dropped) or extended (one more) does not follow.
    let mut short = r.clone();
    short["scenarios"][1]["pairs"].as_array_mut().unwrap().pop();
    assert!(recompute(&short).contains(&"scenarios[1].pairs".to_string()));
    let mut long = r.clone();
    let pairs = long["scenarios"][1]["pairs"].as_array_mut().unwrap();
    let mut extra = pairs[0].clone();
    extra["index"] = pairs.len().into();
    pairs.push(extra);
    let found = recompute(&long);
    assert!(
        found.contains(&"scenarios[1].pairs".to_string()),
        "{found:?}"
    );
    // Nor does a plan edited to fit the count, or a configured cap that is not the campaign's.
    let mut edited = short.clone();
    edited["scenarios"][1]["holdout"]["plan"]["planned"] = (planned - 1).into();
    let found = recompute(&edited);
    assert!(
        found.contains(&"scenarios[1].holdout.plan.planned".to_string()),
        "{found:?}"
    );
    let mut capped = short;
    capped["scenarios"][1]["holdout"]["plan"]["max_pairs"] = (planned - 1).into();
    let found = recompute(&capped);
    assert!(
        found.contains(&"scenarios[1].holdout.plan".to_string()),
        "{found:?}"
    );
}

#[test]
fn without_a_cap_a_holdout_runs_the_configured_pairs_and_says_what_it_needed() {
    let settings = r#"{ "pairs": 9, "aa_pairs": 11, "quiet_wait_s": 0 }"#;
    let fx = Fixture::configured(
        WORKLOAD,
        true,
        &[("prog.sh", "echo slow", "echo fast")],
        settings,
    );
    let done = fx.confirm(two_percent_noise());
    let r = &done.result;
    let plan = &r["scenarios"][1]["holdout"]["plan"];
    assert_eq!(plan["planned"], 9, "{plan:#}");
    assert!(plan["needed"].as_u64().unwrap() > 9, "{plan:#}");
    assert_eq!(r["scenarios"][1]["pairs"].as_array().unwrap().len(), 9);
    assert_eq!(recompute(r), Vec::<String>::new());
}

/// The fields `--recompute` names after `edit` changes a recorded result.
fn recompute_after(r: &Value, edit: impl FnOnce(&mut Value)) -> Vec<String> {
    let mut edited = r.clone();
    edit(&mut edited);
    recompute(&edited)
}

#[test]
fn recompute_fails_a_passed_leftover_gate_over_a_candidate_run_that_left_processes() {
    let r = case(true, Vec::new());
    assert_eq!(recompute(&r), Vec::<String>::new());
    let field = "gates[leftover processes].status".to_string();
    for (scenario, runs, i, arm) in [(0, "pairs", 3, "candidate"), (1, "pairs", 0, "candidate")] {
        let found = recompute_after(&r, |r| {
            r["scenarios"][scenario][runs][i][arm]["leftover_processes"] = true.into();
        });
        assert!(found.contains(&field), "{scenario} {runs}: {found:?}");
    }
    let warmup = recompute_after(&r, |r| {
        let warmups = r["scenarios"][0]["warmups"].as_array_mut().unwrap();
        let candidate = (warmups.iter_mut())
            .find(|w| w["arm"] == "candidate")
            .unwrap();
        candidate["run"]["leftover_processes"] = true.into();
    });
    assert!(warmup.contains(&field), "{warmup:?}");
    let step = recompute_after(&r, |r| {
        let steps = r["steps"].as_array_mut().unwrap();
        let test = (steps.iter_mut())
            .find(|s| s["tree"] == "candidate" && s["step"] != "build")
            .unwrap();
        test["leftover_processes"] = true.into();
    });
    assert!(step.contains(&field), "{step:?}");
    // The baseline's runs are not the candidate's: its flags do not touch the gate.
    let baseline = recompute_after(&r, |r| {
        r["scenarios"][0]["pairs"][3]["baseline"]["leftover_processes"] = true.into();
    });
    assert!(!baseline.contains(&field), "{baseline:?}");
}

#[test]
fn a_configuration_only_build_whose_runs_leave_processes_fails_the_leftover_gate() {
    let workload = WORKLOAD.replace(
        r#""name": "tiny","#,
        r#""name": "tiny", "config_files": ["Makefile"],"#,
    );
    let edits = [
        ("prog.sh", "echo slow", "echo fast"),
        ("Makefile", "cp prog.sh", "cp -p prog.sh"),
    ];
    let fx = Fixture::with(&workload, false, &edits);
    let config_only = ("config-only", "./prog run", FakeBehavior::LeavesProcesses);
    let done = fx.confirm(vec![config_only]);
    let r = &done.result;
    assert_eq!(r["config_lane"]["ran"], true, "{:#}", r["config_lane"]);
    assert_eq!(r["config_lane"]["warmups"].as_array().unwrap().len(), 2);
    expect_decision(r, "rejected", "rejected");
    let gate = &r["gates"].as_array().unwrap().last().unwrap();
    assert_eq!(
        (&gate["name"], &gate["status"]),
        (&"leftover processes".into(), &"failed".into())
    );
    assert!(
        str_of(&gate["detail"]).contains("configuration-only build"),
        "{gate:#}"
    );
    assert_eq!(recompute_receipt(&fx, &done).0, Some(0));
    // Recorded as passed, the gate does not follow from the lane's runs.
    let found = recompute_after(r, |r| {
        let gates = r["gates"].as_array_mut().unwrap();
        gates.last_mut().unwrap()["status"] = "passed".into();
    });
    assert!(
        found.contains(&"gates[leftover processes].status".to_string()),
        "{found:?}"
    );
}

#[test]
fn recompute_fails_warmup_counts_that_are_not_the_configured_ones() {
    let r = case(true, Vec::new());
    for scenario in [0, 1] {
        let found = recompute_after(&r, |r| {
            r["scenarios"][scenario]["warmups"]
                .as_array_mut()
                .unwrap()
                .pop();
        });
        let field = format!("scenarios[{scenario}].warmups");
        assert!(found.contains(&field), "{field}: {found:?}");
    }
}

#[test]
fn a_scenario_stopped_at_its_warmups_recomputes_and_one_without_cause_does_not() {
    let gamed = FakeBehavior::Prints("n=0\n".into());
    let r = case(true, vec![("candidate-timed", "./prog run", gamed)]);
    assert!(r["scenarios"][0]["pairs"].as_array().unwrap().is_empty());
    assert_eq!(recompute(&r), Vec::<String>::new());
    // The same stop after warmups that printed the same bytes does not follow.
    let found = recompute_after(&r, |r| {
        let warmups = r["scenarios"][0]["warmups"].as_array_mut().unwrap();
        let first = warmups[0]["run"]["stdout_sha256"].clone();
        for w in warmups.iter_mut() {
            w["run"]["stdout_sha256"] = first.clone();
        }
    });
    assert!(
        found.contains(&"scenarios[0].pairs".to_string()),
        "{found:?}"
    );
}

/// Rules 4: a training comparison stops at the first look of the sequential rule that decides,
/// and `--recompute` holds it to that stop: a run cut short before it, or one that went on
/// past it (extra pairs appended, as a candidate's author fishing for a better median would),
/// does not follow from its own rule.
#[test]
fn a_training_run_stops_at_its_first_deciding_look_and_recompute_holds_it_there() {
    let settings = r#"{ "pairs": 9, "max_pairs": 400, "aa_pairs": 11, "quiet_wait_s": 0 }"#;
    let fx = Fixture::configured(
        WORKLOAD,
        true,
        &[("prog.sh", "echo slow", "echo fast")],
        settings,
    );
    let done = fx.confirm(two_percent_noise());
    let r = &done.result;
    let training = &r["scenarios"][0];
    let pairs = training["pairs"].as_array().unwrap().len();
    let stop = &training["training"]["sequential"]["stop"];
    assert_eq!(stop["decision"], "accepted", "{stop:#}");
    assert_eq!(stop["pairs"].as_u64(), Some(pairs as u64));
    // A 25% gain at 2% noise is decided long before the cap of 400.
    assert!(pairs < 40, "{pairs}");
    assert_eq!(training["training"]["plan"]["planned"], 400);
    assert_eq!(recompute(r), Vec::<String>::new());

    let mut short = r.clone();
    short["scenarios"][0]["pairs"].as_array_mut().unwrap().pop();
    let found = recompute(&short);
    assert!(
        found.contains(&"scenarios[0].pairs".to_string()),
        "{found:?}"
    );
    let mut long = r.clone();
    let more = long["scenarios"][0]["pairs"].as_array_mut().unwrap();
    for _ in 0..3 {
        let mut extra = more[0].clone();
        extra["index"] = more.len().into();
        more.push(extra);
    }
    let found = recompute(&long);
    assert!(
        found.contains(&"scenarios[0].pairs".to_string()),
        "{found:?}"
    );
}
