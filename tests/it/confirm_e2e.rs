//! `evo confirm` end to end on a small C repository built in a temp dir, with real builds, checks
//! and timing: the outcomes that need real processes (a real speedup, sanitizers, timeouts, a
//! gamed timed call, the deterministic lane), and the user's repository (left dirty on purpose)
//! untouched every time. The verdict truth table on scripted runs is in `confirm_fake.rs`.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use util::cpairs::{HOT_LINE, MEMO, MEMO_OOB};
use util::{evo, fixture_repo, patch_by_editing, snapshot, text, write};

const WORKLOAD: &str = r#"{
  "name": "cpairs",
  "build": { "command": "make -s", "artifacts": ["prog"], "timeout_s": 4 },
  "test": { "command": "./prog --selftest", "timeout_s": 10 },
  "scenarios": [
    { "name": "sum-100k", "role": "training",
      "run": "./bench/run.sh 100000 {seed}", "check": "sh harness/check.sh 500 {seed}",
      "compare": "exact", "deterministic_output": true, "timeout_s": 20 }
  ],
  "overlay": ["harness/check.sh"],
  "sanitize": { "build": "cc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o prog prog.c", "timeout_s": 60 },
  "protected": ["bench/**", "harness/**"],
  "config_files": ["Makefile"]
}"#;

/// The hot line of a slowdown: the hash runs twice per value.
const TWICE_THE_WORK: &str = "        volatile unsigned long sink = slow_hash(v + 1);\n        (void)sink;\n        total += slow_hash(v);";

/// The hot line of a large slowdown: the hash runs nine times per value.
const NINE_TIMES_THE_WORK: &str = "        for (unsigned long k = 1; k < 9; k++) {\n            volatile unsigned long sink = slow_hash(v + k);\n            (void)sink;\n        }\n        total += slow_hash(v);";

/// A harness file that lives outside the repository and is copied into every tree.
const HARNESS: &str =
    "#!/bin/sh\n# Check harness kept outside the repository.\nexec ./prog \"$1\" \"$2\"\n";

const HOLDOUTS: &str = r#"{ "scenarios": [
  { "name": "sum-30k", "role": "holdout", "run": "./bench/run.sh 30000 {seed}",
    "check": "./bench/run.sh 300 {seed}", "compare": "exact", "deterministic_output": true }
] }"#;

const CAMPAIGN: &str = r#"{
  "name": "cpairs-speedups",
  "repo": "../repo",
  "baseline": "main",
  "workload": "workload.json",
  "holdouts": "holdouts.json",
  "confirm": { "pairs": 9, "aa_pairs": 11 },
  "output": "receipts"
}"#;

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    camp: PathBuf,
    sha: String,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let sha = fixture_repo("cpairs", &repo);
        let camp = dir.path().join("camp");
        write(&camp.join("workload.json"), WORKLOAD);
        write(&camp.join("holdouts.json"), HOLDOUTS);
        write(&camp.join("campaign.json"), CAMPAIGN);
        write(&camp.join("harness/check.sh"), HARNESS);
        Fixture {
            _dir: dir,
            repo,
            camp,
            sha,
        }
    }

    /// Writes the campaign with `fields` added to its `confirm` section (JSON members, e.g.
    /// `"counters": ["callgrind"]`).
    fn confirm_settings(&self, fields: &str) {
        let campaign = CAMPAIGN.replace(
            r#""aa_pairs": 11 }"#,
            &format!(r#""aa_pairs": 11, {fields} }}"#),
        );
        assert_ne!(campaign, CAMPAIGN, "the confirm section moved");
        write(&self.camp.join("campaign.json"), &campaign);
    }

    fn patch(&self, name: &str, edits: &[(&str, &str, &str)]) -> PathBuf {
        let diff = patch_by_editing(&self.repo, edits);
        let path = self.camp.join(name);
        write(&path, &diff);
        path
    }

    /// The memo speedup: the slow hash runs once per distinct input.
    fn memo_patch(&self) -> PathBuf {
        self.patch(
            "memo.patch",
            &[
                ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
                ("prog.c", "static unsigned long work(", MEMO),
            ],
        )
    }

    /// Leaves the user's work tree dirty: a broken prog.c, a staged file and an untracked one.
    fn dirty_the_user_tree(&self) {
        write(&self.repo.join("staged.txt"), "staged\n");
        util::git(&self.repo, &["add", "staged.txt"]);
        write(&self.repo.join("prog.c"), "this is not C\n");
        write(&self.repo.join("untracked.txt"), "untracked\n");
    }

    fn confirm(&self, patch: &Path) -> (Output, Option<Value>) {
        self.dirty_the_user_tree();
        let before = snapshot(&self.repo);
        let out = evo()
            .arg("confirm")
            .arg(patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .output()
            .unwrap();
        assert_eq!(
            before,
            snapshot(&self.repo),
            "the user's repository changed\n{}",
            text(&out)
        );
        (out, self.result())
    }

    fn result(&self) -> Option<Value> {
        let runs = std::fs::read_dir(self.camp.join("receipts")).ok()?;
        let dir = runs
            .filter_map(Result::ok)
            .find(|e| e.path().is_dir())?
            .path();
        let json = std::fs::read_to_string(dir.join("result.json")).ok()?;
        Some(serde_json::from_str(&json).unwrap())
    }
}

fn gate<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no gate {name} in {:#}", result["gates"]))
}

#[test]
fn a_real_speedup_is_accepted_with_all_lanes_green() {
    let fx = Fixture::new();
    let patch = fx.memo_patch();
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap_or_else(|| panic!("no result.json\n{}", text(&out)));
    let training = &r["scenarios"][0]["training"];
    let verdict = util::real_verdict(&r, &out, &["accepted", "inconclusive"]);
    if verdict == "accepted" {
        assert_eq!(r["tier"], "tested", "{:#}", r["reasons"]);
        // The interval is the one of the look the run stopped at.
        let stop = training["sequential"]["stop"]["look"].as_u64().unwrap() as usize;
        assert_eq!(
            training["ci95"]["k"],
            training["sequential"]["looks"][stop]["k"]
        );
        assert_eq!(r["scenarios"][1]["holdout"]["verdict"], "no_regression");
    } else {
        assert_ne!(r["tier"], "tested", "{:#}", r["reasons"]);
    }
    assert_eq!(r["baseline_sha"], fx.sha.as_str());
    assert_eq!(r["patch"]["applier"], "libgit2");
    assert!(training["median"].as_f64().unwrap() > 3.0, "{training:#}");
    // The comparison pairs ran in a balanced random order: each block of two holds both orders.
    assert!(
        r["scenarios"][0]["order_seed"].is_u64(),
        "{:#}",
        r["scenarios"][0]
    );
    let orders: Vec<&str> = r["scenarios"][0]["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["order"].as_str().unwrap())
        .collect();
    assert!(orders.chunks_exact(2).all(|b| b[0] != b[1]), "{orders:?}");
    assert_eq!(r["sanitizer_lane_ran"], true);
    for name in [
        "patch safety",
        "apply",
        "build",
        "tests",
        "differential",
        "sanitizers",
        "timed output",
    ] {
        assert_eq!(
            gate(&r, name)["status"],
            "passed",
            "{name}: {:#}",
            gate(&r, name)
        );
    }
    let artifacts = r["artifacts"].as_array().unwrap();
    let of = |tree: &str| {
        let found = artifacts.iter().find(|a| a["tree"] == tree);
        found.unwrap_or_else(|| panic!("no {tree} artifact: {artifacts:#?}"))["sha256"].clone()
    };
    // Baseline, candidate and the second baseline build the A/A pairs ran (its digest is what
    // a later confirmation's reuse of them rests on, `confirm::earlier_aa`).
    assert_eq!(artifacts.len(), 3, "{artifacts:#?}");
    assert_ne!(of("baseline"), of("candidate"));
    assert_eq!(of("baseline-again").as_str().map(str::len), Some(64));
    assert!(r["seed"].as_u64().unwrap() > 0);
    assert!(r["holdout_portfolio_digest"].as_str().unwrap().len() == 64);
    assert_eq!(r["overlay"][0]["path"], "harness/check.sh");
    assert_eq!(r["config_lane"]["ran"], false);
    assert!(
        r["config_lane"]["reason"]
            .as_str()
            .unwrap()
            .contains("no build configuration")
    );
    assert_eq!(r["overlay"][0]["sha256"].as_str().unwrap().len(), 64);
    let run_dir = fx.camp.join("receipts").join(r["run_id"].as_str().unwrap());
    for file in [
        "candidate.patch",
        "pr_body.md",
        "logs/baseline/build.stderr.log",
    ] {
        assert!(run_dir.join(file).is_file(), "missing {file}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("verdict: accepted"), "{stdout}");
    // What each arm took, from the real runs' rusage, comes first; the statistics only with
    // --verbose.
    assert!(stdout.contains("wall time (median ± ½IQR)"), "{stdout}");
    assert!(stdout.contains(" MiB\n    candidate  "), "{stdout}");
    assert!(!stdout.contains("A/A check"), "{stdout}");
    // The commands printed last work when pasted: the receipt verifies and renders.
    // The key came through `EVO_KEY_DIR`, which a fresh shell lacks: the commands name it.
    let receipt = run_dir.join(evo::receipt::RECEIPT_FILE);
    let commands = util::next_commands(&stdout);
    assert_eq!(commands.len(), 2, "{stdout}");
    let verify = format!("evo receipt verify {} --key ", receipt.display());
    let render = format!("evo pr render {} --key ", receipt.display());
    assert!(commands[0].starts_with(&verify), "{stdout}");
    assert!(commands[0].ends_with(" --recompute"), "{stdout}");
    assert!(commands[1].starts_with(&render), "{stdout}");
    assert!(commands[1].ends_with(" > pr.md"), "{stdout}");
    for command in &commands {
        let pasted = util::shell(&fx.camp, command);
        assert_eq!(
            pasted.status.code(),
            Some(0),
            "{command}\n{}",
            text(&pasted)
        );
    }
    assert!(fx.camp.join("pr.md").is_file());
}

#[test]
fn a_numerics_change_is_rejected_by_the_differential_with_a_diff() {
    let fx = Fixture::new();
    let patch = fx.patch(
        "numerics.patch",
        &[("prog.c", "h ^= h >> 29;", "h ^= h >> 28;")],
    );
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let g = gate(&r, "differential");
    assert_eq!(g["status"], "failed");
    let detail = g["detail"].as_str().unwrap();
    assert!(
        detail.contains("-n=500 seed=") && detail.contains("+n=500 seed="),
        "{detail}"
    );
    assert!(
        r["scenarios"].as_array().unwrap().is_empty(),
        "nothing is measured"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("+n=500"));
}

#[test]
fn an_out_of_bounds_write_is_caught_only_by_the_sanitizer_lane() {
    let fx = Fixture::new();
    let patch = fx.patch(
        "oob.patch",
        &[
            ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
            ("prog.c", "static unsigned long work(", MEMO_OOB),
        ],
    );
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(gate(&r, "differential")["status"], "passed");
    let g = gate(&r, "sanitizers");
    assert_eq!(g["status"], "failed");
    // UBSan's object-size check or ASan, whichever sees the write first, must report it.
    let detail = g["detail"].as_str().unwrap();
    assert!(
        detail.contains("insufficient space") || detail.contains("heap-buffer-overflow"),
        "{g:#}"
    );
    let finding = &r["sanitizer_findings"][0];
    assert_eq!(finding["tree"], "candidate-sanitize");
    assert!(
        finding["excerpt"].as_str().unwrap().contains("prog.c:"),
        "{finding:#}"
    );
}

#[test]
fn a_patch_to_a_protected_file_is_refused_before_anything_runs() {
    let fx = Fixture::new();
    let patch = fx.patch(
        "harness.patch",
        &[("bench/run.sh", "exec ./prog", "exec nice ./prog")],
    );
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let g = gate(&r, "patch safety");
    assert_eq!(g["status"], "failed");
    assert!(
        g["detail"].as_str().unwrap().contains("bench/run.sh"),
        "{g:#}"
    );
    assert!(r["steps"].as_array().unwrap().is_empty(), "something ran");
}

#[test]
fn a_patch_that_does_not_apply_names_the_file_and_hunk() {
    let fx = Fixture::new();
    let good = fx.patch(
        "memo.patch",
        &[("prog.c", HOT_LINE, "        total += cached_hash(v);")],
    );
    let stale = std::fs::read_to_string(&good).unwrap().replace(
        "-        total += slow_hash(v);",
        "-        total += slower_hash(v);",
    );
    let patch = fx.camp.join("stale.patch");
    write(&patch, &stale);
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let detail = gate(&r, "apply")["detail"].as_str().unwrap().to_string();
    assert!(
        detail.contains("prog.c") && detail.contains("@@"),
        "{detail}"
    );
}

#[test]
fn a_build_that_hangs_is_killed_at_its_timeout() {
    let fx = Fixture::new();
    let patch = fx.patch(
        "hang.patch",
        &[("Makefile", "\tcc -O2", "\tsleep 120; cc -O2")],
    );
    let started = std::time::Instant::now();
    let (out, result) = fx.confirm(&patch);
    assert!(
        started.elapsed().as_secs() < 60,
        "the hang was not cut short"
    );
    let r = result.unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let detail = gate(&r, "build")["detail"].as_str().unwrap().to_string();
    assert!(detail.contains("timed out after 4 s"), "{detail}");
}

#[test]
fn without_a_campaign_evo_says_where_it_looked() {
    let fx = Fixture::new();
    let patch = fx.patch("p.patch", &[("prog.c", "h ^= h >> 29;", "h ^= h >> 28;")]);
    let out = evo()
        .arg("confirm")
        .arg(&patch)
        .current_dir(&fx.camp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("run_manifest.json") && stderr.contains("evo.json"),
        "{stderr}"
    );
}

#[test]
fn a_baseline_that_does_not_resolve_is_a_usage_error() {
    let fx = Fixture::new();
    let campaign = CAMPAIGN.replace("\"main\"", "\"no-such-branch\"");
    write(&fx.camp.join("campaign.json"), &campaign);
    let patch = fx.patch("p.patch", &[("prog.c", "h ^= h >> 29;", "h ^= h >> 28;")]);
    let (out, _) = fx.confirm(&patch);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-branch"));
}

#[test]
fn a_candidate_that_games_the_timed_call_is_rejected_before_anything_is_timed() {
    // Skips the work whenever the input is as large as the benchmark's: the small checked call
    // still matches, but the timed call prints something the baseline never printed, which the
    // differential's run of the timed command shows before any pair is timed.
    let fx = Fixture::new();
    let patch = fx.patch(
        "gamed.patch",
        &[(
            "prog.c",
            "    long n = atol(argv[1]);\n",
            "    long n = atol(argv[1]);\n    if (n >= 50000) {\n        printf(\"n=%ld total=0\\n\", n);\n        return 0;\n    }\n",
        )],
    );
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let g = gate(&r, "differential");
    assert_eq!(g["status"], "failed", "{g:#}");
    let detail = g["detail"].as_str().unwrap();
    assert!(
        detail.contains("scenario `sum-100k.timed` (differential)"),
        "{detail}"
    );
    assert!(detail.contains("total=0"), "{detail}");
    // Nothing was timed: no warmup, A/A or paired run is spent on it.
    assert!(
        r["scenarios"].as_array().unwrap().is_empty(),
        "{:#}",
        r["scenarios"]
    );
}

#[test]
fn a_baseline_that_fails_its_own_tests_stops_with_the_logs_kept() {
    let fx = Fixture::new();
    let workload = WORKLOAD.replace("./prog --selftest", "./prog --selftest && false");
    write(&fx.camp.join("workload.json"), &workload);
    let patch = fx.patch("p.patch", &[("prog.c", "h ^= h >> 29;", "h ^= h >> 28;")]);
    let (out, result) = fx.confirm(&patch);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        result.is_none(),
        "no verdict may be written for a broken baseline"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the baseline itself fails: tests failed"),
        "{stderr}"
    );
    assert!(stderr.contains("error.txt"), "{stderr}");
    // Under the sandbox, what it takes away is named as the likely cause.
    if evo::measure::sandbox::probe().is_ok() {
        assert!(
            stderr.contains("the runs are sandboxed: no network"),
            "{stderr}"
        );
    }
}

#[test]
fn the_deterministic_lane_counts_instructions_of_both_arms_beside_the_wall_time_verdict() {
    let fx = Fixture::new();
    fx.confirm_settings(r#""counters": ["callgrind"]"#);
    // A change that only removes work: the memo runs the slow hash once per distinct input.
    let patch = fx.memo_patch();
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap_or_else(|| panic!("no result\n{}", text(&out)));
    let lane = &r["scenarios"][0]["instructions"];
    let (b, c) = (lane["baseline"].as_u64(), lane["candidate"].as_u64());
    let (Some(b), Some(c)) = (b, c) else {
        panic!("no counts: {lane}\n{}", text(&out));
    };
    assert!(
        c * 2 < b,
        "the memo should halve the instructions at least: {lane}"
    );
    let pct = lane["change_pct"].as_f64().unwrap();
    assert!((pct - (c as f64 / b as f64 - 1.0) * 100.0).abs() < 1e-9);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("instructions -"), "{stdout}");
    assert!(stdout.contains("not time"), "{stdout}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("count instructions"),
        "{}",
        text(&out)
    );
    let (dir, _) = util::first_result(&fx.camp).unwrap();
    let pr = std::fs::read_to_string(dir.join("pr_body.md")).unwrap();
    assert!(pr.contains("Deterministic lane"), "{pr}");
    // The A/A pairs compared the baseline with a second build of it in its own tree.
    assert_eq!(r["scenarios"][0]["aa_second_build"], true, "{}", text(&out));
    assert!(
        r["steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["tree"] == "baseline-again" && s["step"] == "build"),
        "{:#}",
        r["steps"]
    );
    assert!(pr.contains("a second build of the baseline"), "{pr}");
    // The change follows from the counts, and --recompute says so when it does not.
    let json = std::fs::read_to_string(dir.join("result.json")).unwrap();
    let mut parsed: evo::evidence::result::ConfirmResult = serde_json::from_str(&json).unwrap();
    let field = "scenarios[0].instructions.change_pct";
    let fields = |r: &evo::evidence::result::ConfirmResult| -> Vec<String> {
        evo::receipt::recompute::recompute(r)
            .into_iter()
            .map(|d| d.field)
            .collect()
    };
    assert!(!fields(&parsed).iter().any(|f| f == field));
    parsed.evidence.scenarios[0]
        .instructions
        .as_mut()
        .unwrap()
        .change_pct = Some(-90.0);
    assert!(fields(&parsed).iter().any(|f| f == field));
}

#[test]
fn a_significant_slowdown_is_rejected_without_counting_its_instructions() {
    let fx = Fixture::new();
    fx.confirm_settings(r#""max_pairs": 60, "counters": ["callgrind"]"#);
    // Nine times the work: rejected as slower in wall time, which no count can change, so none
    // runs. On a loaded machine 9 pairs of a 2× slowdown have been seen undecided (0.46–1.14×),
    // and then the count is made; a 9× one, with looks up to 60 pairs, is decided.
    let patch = fx.patch("slow.patch", &[("prog.c", HOT_LINE, NINE_TIMES_THE_WORK)]);
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap_or_else(|| panic!("no result\n{}", text(&out)));
    assert_eq!(r["verdict"], "rejected", "{}", text(&out));
    let lane = &r["scenarios"][0]["instructions"];
    assert!(
        lane["baseline"].is_null() && lane["candidate"].is_null(),
        "{lane}\n{}",
        text(&out)
    );
    let note = (lane["note"].as_str()).unwrap_or_else(|| panic!("{lane}\n{}", text(&out)));
    assert!(
        note.contains("significantly slower"),
        "{note}\n{}",
        text(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("count instructions"),
        "{}",
        text(&out)
    );
}

#[test]
fn no_real_gain_in_wall_time_is_rejected_without_counting_its_instructions() {
    let fx = Fixture::new();
    // A 20% minimum effect: a change that does not touch the timed work is ruled out at the first
    // look, and under the wall-time metric no count can turn that into a gain.
    fx.confirm_settings(r#""min_effect": 0.2, "max_pairs": 60, "counters": ["callgrind"]"#);
    let usage = "usage: prog N SEED | prog --selftest";
    let patch = fx.patch(
        "usage.patch",
        &[("prog.c", usage, "usage: prog N SEED, or prog --selftest")],
    );
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap_or_else(|| panic!("no result\n{}", text(&out)));
    // Load can bias the A/A check (inconclusive) but never make the null a gain; which verdicts
    // spare the count is `evidence::verdict::counts_cannot_matter`'s unit tests.
    if util::real_verdict(&r, &out, &["rejected", "inconclusive"]) == "inconclusive" {
        return;
    }
    let gate = &r["scenarios"][0]["training"]["training_gate"];
    assert_eq!(gate["no_real_gain"], true, "{gate}\n{}", text(&out));
    let lane = &r["scenarios"][0]["instructions"];
    assert!(lane["baseline"].is_null(), "{lane}\n{}", text(&out));
    let note = (lane["note"].as_str()).unwrap_or_else(|| panic!("{lane}\n{}", text(&out)));
    assert!(note.contains("no real gain"), "{note}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("count instructions"),
        "{}",
        text(&out)
    );
}

/// The fixture with the deterministic lane on, counting `count_run` instead of the timed run.
fn with_count_run(fx: &Fixture, count_run: &str) {
    fx.confirm_settings(r#""counters": ["callgrind"]"#);
    let count = serde_json::json!({ "run": count_run, "timeout_s": 120 });
    write(
        &fx.camp.join("workload.json"),
        &WORKLOAD.replace(
            r#""timeout_s": 20 }"#,
            &format!(r#""timeout_s": 20, "count": {count} }}"#),
        ),
    );
}

#[test]
fn a_scenario_may_count_a_shorter_run_and_the_reports_name_it() {
    let fx = Fixture::new();
    with_count_run(&fx, "./bench/run.sh 3000 {seed}");
    let (out, result) = fx.confirm(&fx.memo_patch());
    let r = result.unwrap_or_else(|| panic!("no result\n{}", text(&out)));
    let lane = &r["scenarios"][0]["instructions"];
    let (Some(b), Some(c)) = (lane["baseline"].as_u64(), lane["candidate"].as_u64()) else {
        panic!("no counts: {lane}\n{}", text(&out));
    };
    assert!(c < b, "the memo removes work in the short run too: {lane}");
    // The counted command is the short one, on a seed of its own that no timed run used (a
    // count never follows a run whose result it could replay), and it is said.
    let command = lane["command"].as_str().unwrap();
    let seed: u64 = (command.strip_prefix("./bench/run.sh 3000 "))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{lane}"));
    let scenario = &r["scenarios"][0];
    let timed_seeds: Vec<u64> = (scenario["pairs"].as_array().unwrap().iter())
        .chain(scenario["aa_pairs"].as_array().unwrap())
        .chain(scenario["warmups"].as_array().unwrap())
        .map(|p| p["seed"].as_u64().unwrap())
        .collect();
    assert!(!timed_seeds.contains(&seed), "{lane}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("not the timed command"), "{stdout}");
    let (dir, _) = util::first_result(&fx.camp).unwrap();
    let pr = std::fs::read_to_string(dir.join("pr_body.md")).unwrap();
    assert!(pr.contains("not the timed command"), "{pr}");
}

#[test]
fn a_counted_run_that_prints_otherwise_under_valgrind_in_both_arms_is_still_counted() {
    let fx = Fixture::new();
    // The workload's counted command prints one thing natively and another under valgrind, in
    // both arms alike (as a library that picks other kernels for the CPU valgrind reports does):
    // that says nothing against the candidate, so the count is used, the two arms' counted
    // outputs agreeing. A candidate alone that behaves otherwise is not counted (the baseline's
    // output under valgrind then differs from its own), and code that asks for valgrind fails
    // the lane-probes gate first.
    with_count_run(
        &fx,
        r#"case "$LD_PRELOAD" in *vgpreload*) echo counted ;; *) echo native ;; esac; ./bench/run.sh 300 {seed} >/dev/null"#,
    );
    let (out, result) = fx.confirm(&fx.memo_patch());
    let r = result.unwrap_or_else(|| panic!("no result\n{}", text(&out)));
    let lane = &r["scenarios"][0]["instructions"];
    assert!(lane["baseline"].as_u64().is_some(), "{lane}");
    assert!(lane["candidate"].as_u64().is_some(), "{lane}");
}

#[test]
fn a_campaign_may_decide_on_instructions_and_says_so() {
    let fx = Fixture::new();
    fx.confirm_settings(r#""counters": ["callgrind"], "metric": "instructions""#);
    // A slowdown in work: the hash runs twice per value. Fewer instructions it is not.
    let patch = fx.patch("slow.patch", &[("prog.c", HOT_LINE, TWICE_THE_WORK)]);
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap_or_else(|| panic!("no result\n{}", text(&out)));
    assert_eq!(r["metric"], "instructions", "{}", text(&out));
    assert_eq!(r["verdict"], "rejected", "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("decided on instructions"), "{stdout}");
    let (dir, _) = util::first_result(&fx.camp).unwrap();
    let pr = std::fs::read_to_string(dir.join("pr_body.md")).unwrap();
    assert!(pr.contains("decides on instructions"), "{pr}");
    // Without the lane the setting is refused before anything runs.
    fx.confirm_settings(r#""metric": "instructions""#);
    let out = evo()
        .arg("confirm")
        .arg(&patch)
        .arg("--campaign")
        .arg(fx.camp.join("campaign.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("callgrind"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_patch_that_leaves_the_timed_program_byte_identical_is_no_real_gain_and_times_nothing() {
    // A comment-only change: the checks run, but the built program is the baseline's byte for
    // byte, so any ratio of its runs would be noise. Nothing is timed and it is said why.
    let fx = Fixture::new();
    let patch = fx.patch(
        "comment.patch",
        &[(
            "prog.c",
            "static unsigned long slow_hash(unsigned long v) {\n",
            "/* The hash every value goes through. */\nstatic unsigned long slow_hash(unsigned long v) {\n",
        )],
    );
    let (out, result) = fx.confirm(&patch);
    let r = result.unwrap_or_else(|| panic!("no result\n{}", text(&out)));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(r["verdict"], "rejected");
    assert_eq!(r["timed_programs_unchanged"], true);
    let reasons = r["reasons"].as_array().unwrap();
    assert!(
        reasons[0]
            .as_str()
            .unwrap()
            .starts_with("no real gain: the timed programs are identical to the baseline's"),
        "{reasons:#?}"
    );
    assert!(
        r["scenarios"].as_array().unwrap().is_empty(),
        "{:#}",
        r["scenarios"]
    );
    for g in r["gates"].as_array().unwrap() {
        assert_ne!(g["status"], "failed", "{g:#}");
    }
    let (Some(b), Some(c)) = (
        r["artifacts"][0]["sha256"].as_str(),
        r["artifacts"][1]["sha256"].as_str(),
    ) else {
        panic!("{:#}", r["artifacts"]);
    };
    assert_eq!(b, c);
    // The receipt's figures follow: nothing was timed, and that is the verdict.
    let run = std::fs::read_dir(fx.camp.join("receipts"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.path().is_dir())
        .unwrap()
        .path();
    let verify = evo()
        .args(["receipt", "verify", "--recompute"])
        .arg(run.join("validation_receipt.json"))
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));
}
