//! `evo campaign run`'s whole pipeline (`campaign::run_campaign`) on a seeded fake runner: real
//! trees and patches, scripted builds, checks and timed runs. Which candidate is refused, fails,
//! is screened and is confirmed is then exact, where real timing leaves a chance inconclusive.

use crate::util;

use std::path::PathBuf;
use std::sync::Arc;

use evo::campaign::{self, CampaignOptions};
use evo::host::Hold;
use evo::measure::fake::{FakeBehavior, FakeRunner};
use evo::measure::runner::RunSpec;
use evo::pipeline::event::Event;
use evo::spec::modes::SandboxMode;
use serde_json::Value;
use util::{patch_by_editing, write};

use crate::util::tiny::WORKLOAD;

use util::tiny::HOLDOUTS;

/// Whether the tree a run works in holds `text` in its program: the fake's runs behave as the
/// patch made them, in the search's trees and in the confirmation's alike.
fn holds(spec: &RunSpec, text: &str) -> bool {
    let program = spec.cwd.as_ref().map(|cwd| cwd.join("prog.sh"));
    program
        .and_then(|p| std::fs::read_to_string(p).ok())
        .is_some_and(|t| t.contains(text))
}

fn rule(
    command: &'static str,
    program: &'static str,
) -> impl Fn(&RunSpec) -> bool + Send + Sync + 'static {
    move |s: &RunSpec| s.command.starts_with(command) && holds(s, program)
}

fn noisy(mean_s: f64) -> FakeBehavior {
    FakeBehavior::Noisy {
        mean_s,
        rel_sd: 0.01,
    }
}

/// The script: `broken` does not build, `wrong` prints another result, `fast` runs in 80% of
/// the baseline's time, `quick` in 90%, `slower` in 125%.
fn fake() -> FakeRunner {
    script(FakeRunner::new(5))
}

/// The rules of [`fake`] after those `first` already has.
fn script(first: FakeRunner) -> FakeRunner {
    let broken = FakeBehavior::Fails {
        code: 2,
        stderr: "syntax error\n".into(),
    };
    let any = |command: &'static str| move |s: &RunSpec| s.command.starts_with(command);
    first
        .when(rule("make prog", "echo broken"), broken)
        .when(any("make "), FakeBehavior::Prints(String::new()))
        .when(
            rule("./prog check", "echo wrong"),
            FakeBehavior::Prints("43\n".into()),
        )
        .when(any("./prog check"), FakeBehavior::Prints("42\n".into()))
        .when(rule("./prog ", "echo quick"), noisy(0.9))
        .when(rule("./prog ", "echo fast"), noisy(0.8))
        .when(rule("./prog ", "echo slower"), noisy(1.25))
        .when(any("./prog "), noisy(1.0))
}

struct Fixture {
    _dir: tempfile::TempDir,
    camp: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        crate::util::tiny::repo(
            &repo,
            &[("bench/run.sh", "#!/bin/sh\nexec ./prog \"$@\"\n")],
        );
        let camp = dir.path().join("camp");
        let mut patches: Vec<(&str, String)> = [
            ("slower", "prog.sh", "echo slow", "echo slower"),
            ("wrong", "prog.sh", "echo slow", "echo wrong"),
            ("harness", "bench/run.sh", "exec ./prog", "exec nice ./prog"),
            ("broken", "prog.sh", "echo slow", "echo broken"),
            ("fast", "prog.sh", "echo slow", "echo fast"),
            // Screening's copy of the lane probes gate (review #25.4).
            (
                "probe",
                "prog.sh",
                "echo slow",
                "echo fast # RUNNING_ON_VALGRIND",
            ),
        ]
        .into_iter()
        .map(|(name, file, old, new)| (name, patch_by_editing(&repo, &[(file, old, new)])))
        .collect();
        // A file make reads before the declared Makefile (review #25.3).
        patches.push((
            "gnumakefile",
            "diff --git a/GNUmakefile b/GNUmakefile\nnew file mode 100644\nindex 0000000..1111111\n\
             --- /dev/null\n+++ b/GNUmakefile\n@@ -0,0 +1,2 @@\n+prog:\n+\tcp prog.sh prog\n"
                .to_string(),
        ));
        write_campaign(&camp, WORKLOAD, &patches, 1);
        Fixture { _dir: dir, camp }
    }
}

/// Runs the campaign at `file` to its end on [`fake`], unsandboxed.
fn run_unsandboxed(file: &std::path::Path) -> campaign::CampaignOutcome {
    let plan = evo::plan::campaign_plan(file).unwrap();
    let opts = CampaignOptions {
        sandbox: Some(SandboxMode::Off),
        ..CampaignOptions::new(
            Arc::new(fake()),
            Hold::External("a test's own repository".into()),
        )
    };
    campaign::run_campaign(&plan, &opts, &mut |_| {}).unwrap()
}

fn row<'a>(summary: &'a Value, name: &str) -> &'a Value {
    (summary["rows"].as_array().unwrap().iter())
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {summary:#}"))
}

#[test]
fn every_candidate_gets_its_exact_status_and_only_the_fast_one_is_confirmed() {
    let fx = Fixture::new();
    let done = run_unsandboxed(&fx.camp.join("campaign.json"));
    let s = serde_json::to_value(&done.summary).unwrap();
    let statuses: Vec<(&str, &str)> = (s["rows"].as_array().unwrap().iter())
        .map(|r| (r["name"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("slower", "screened"),
            ("wrong", "differential_mismatch"),
            ("harness", "refused"),
            ("broken", "build_failed"),
            ("fast", "confirmed"),
            ("probe", "refused"),
            ("gnumakefile", "refused"),
        ],
        "{s:#}"
    );
    let reason = |name| row(&s, name)["reason"].as_str().unwrap().to_string();
    assert!(reason("harness").contains("bench/run.sh"), "{s:#}");
    assert!(
        reason("probe").starts_with("lane probes: ") && reason("probe").contains("prog.sh:2"),
        "{s:#}"
    );
    assert!(
        reason("gnumakefile").contains("make reads by itself"),
        "{s:#}"
    );
    assert!(reason("broken").contains("syntax error"), "{s:#}");
    assert!(reason("wrong").contains("+43"), "{s:#}");
    // A differing check output is told as a confirmation's differential gate tells it: one engine.
    assert!(
        reason("wrong").starts_with("scenario `main` (differential): "),
        "{s:#}"
    );
    let fast = row(&s, "fast");
    assert_eq!(s["accepted"], fast["index"]);
    assert_eq!(s["candidates_tried"], 7);
    assert_eq!(fast["screening_pairs"], 5);
    assert_eq!(fast["confirmation_verdict"], "accepted");
    assert_eq!(fast["confirmation_tier"], "tested", "{fast:#}");
    let screened = fast["screening_median"].as_f64().unwrap();
    assert!((screened - 1.25).abs() < 0.03, "{fast:#}");
    assert!(row(&s, "slower")["screening_median"].as_f64().unwrap() < 0.85);
    assert!(row(&s, "slower")["confirmation_verdict"].is_null());
    // The accepted confirmation's receipt lies in the campaign's run directory.
    let receipt = (done.run_dir)
        .join(fast["confirmation_run_dir"].as_str().unwrap())
        .join(evo::receipt::RECEIPT_FILE);
    assert!(receipt.is_file(), "{}", receipt.display());
}

/// Stops once the fake has made `runs` timed runs of the training scenario.
struct AfterTimedRuns {
    fake: FakeRunner,
    runs: usize,
}

impl evo::host::StopCondition for AfterTimedRuns {
    fn requested(&self) -> bool {
        let calls = self.fake.calls();
        calls.iter().filter(|c| c.starts_with("./prog run")).count() >= self.runs
    }
}

#[test]
fn a_stop_of_the_callers_own_ends_the_campaign_resumably_and_the_resumed_run_finishes() {
    let fx = Fixture::new();
    let plan = evo::plan::campaign_plan(&fx.camp.join("campaign.json")).unwrap();
    let hold = || Hold::External("a test's own repository".into());
    let stopping = fake();
    let opts = CampaignOptions {
        sandbox: Some(SandboxMode::Off),
        stop: evo::host::Stop::new(AfterTimedRuns {
            fake: stopping.clone(),
            runs: 4,
        }),
        ..CampaignOptions::new(Arc::new(stopping.clone()), hold())
    };
    let mut started = None;
    let err = campaign::run_campaign(&plan, &opts, &mut |e| {
        if let Event::Started { run_id, .. } = e {
            started = Some(run_id);
        }
    })
    .unwrap_err();
    assert!(
        matches!(err, evo::pipeline::PipelineError::Interrupted { .. }),
        "{err}"
    );
    assert_eq!(err.exit_code(), evo::exit_codes::INTERRUPTED);
    assert!(err.to_string().contains("--resume"), "{err}");
    let timed = (stopping.calls().iter())
        .filter(|c| c.starts_with("./prog run"))
        .count();
    assert_eq!(timed, 4);
    assert!(!evo::interrupt::requested());
    let run_id = started.unwrap();
    let journal = fx.camp.join("receipts").join(&run_id).join("journal.jsonl");
    let lines = std::fs::read_to_string(&journal).unwrap();
    let last: Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert_eq!(last["entry"], "interrupted", "{lines}");

    // Resumed with a stop that never fires, it finishes as an uninterrupted campaign would.
    let opts = CampaignOptions {
        resume: Some(run_id),
        sandbox: Some(SandboxMode::Off),
        ..CampaignOptions::new(Arc::new(fake()), hold())
    };
    let done = campaign::run_campaign(&plan, &opts, &mut |_| {}).unwrap();
    let s = serde_json::to_value(&done.summary).unwrap();
    let fast = row(&s, "fast");
    assert_eq!(fast["status"], "confirmed", "{s:#}");
    assert_eq!(fast["screening_pairs"], 5, "{fast:#}");
    assert_eq!(row(&s, "slower")["screening_pairs"], 5, "{s:#}");
}

#[test]
fn a_baseline_that_fails_only_in_the_confirmation_says_so_once() {
    let fx = Fixture::new();
    let plan = evo::plan::campaign_plan(&fx.camp.join("campaign.json")).unwrap();
    // The baseline's tests pass in the search and fail in the confirmation's fresh trees.
    let confirmation_baseline_test = |s: &RunSpec| {
        let cwd = s.cwd.as_ref().map(|c| c.to_string_lossy().into_owned());
        s.command.starts_with("make test")
            && cwd.is_some_and(|c| c.contains("evo-trees-") && c.contains("/baseline"))
    };
    let flaky = FakeBehavior::Fails {
        code: 1,
        stderr: "flaky test\n".into(),
    };
    let runner = script(FakeRunner::new(5).when(confirmation_baseline_test, flaky));
    let opts = CampaignOptions {
        sandbox: Some(SandboxMode::Off),
        ..CampaignOptions::new(
            Arc::new(runner),
            Hold::External("a test's own repository".into()),
        )
    };
    let Err(e) = campaign::run_campaign(&plan, &opts, &mut |_| {}) else {
        panic!("the campaign went on past a baseline that fails");
    };
    let message = e.to_string();
    assert_eq!(e.exit_code(), evo::exit_codes::USAGE_ERROR, "{message}");
    assert_eq!(
        message.matches("the baseline itself fails").count(),
        1,
        "{message}"
    );
    assert!(message.contains("flaky test"), "{message}");
}

/// A confirmation that a gate stops before its pairs (here the sanitizer lane, which screening
/// does not run) took builds, not a measurement: the next candidate in the ranking gets the place
/// (`confirm.top` 1), and the candidates left unconfirmed are told they are undecided and why.
/// With the place not given back, `fast` stays `screened` and nothing is confirmed.
#[test]
fn a_confirmation_stopped_by_a_gate_gives_its_place_to_the_next_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    crate::util::tiny::repo(&repo, &[]);
    let camp = dir.path().join("camp");
    let mut candidates = Vec::new();
    for name in ["fastest", "fast", "faster", "slower"] {
        let diff = patch_by_editing(&repo, &[("prog.sh", "echo slow", &format!("echo {name}"))]);
        write(&camp.join(format!("{name}.patch")), &diff);
        candidates.push(format!(
            r#"{{ "name": "{name}", "patch": "{name}.patch" }}"#
        ));
    }
    let workload = WORKLOAD.replacen(
        r#""protected""#,
        r#""sanitize": { "build": "make sanitized" }, "protected""#,
        1,
    );
    write(&camp.join("workload.json"), &workload);
    evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
    write(
        &camp.join("campaign.json"),
        &format!(
            r#"{{ "name": "tiny", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "candidates": [{}], "search": {{ "pairs": 5 }},
  "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1, "quiet_wait_s": 0 }},
  "key": "key/{}", "output": "receipts" }}"#,
            candidates.join(", "),
            evo::receipt::keys::PRIVATE_KEY_FILE
        ),
    );
    let plan = evo::plan::campaign_plan(&camp.join("campaign.json")).unwrap();
    // `fastest` reads out of bounds: only its sanitized build's checks say so.
    let sanitized_fastest = |s: &RunSpec| {
        let cwd = s.cwd.as_ref().map(|c| c.to_string_lossy().into_owned());
        s.command.starts_with("./prog check")
            && cwd.is_some_and(|c| c.contains("candidate-sanitize"))
            && holds(s, "echo fastest")
    };
    let asan = FakeBehavior::Fails {
        code: 1,
        stderr: "==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602\n".into(),
    };
    let runner = script(
        FakeRunner::new(5)
            .when(sanitized_fastest, asan)
            .when(rule("./prog run", "echo fastest"), noisy(0.6))
            .when(rule("./prog run", "echo faster"), noisy(0.9)),
    );
    let opts = CampaignOptions {
        sandbox: Some(SandboxMode::Off),
        ..CampaignOptions::new(
            Arc::new(runner),
            Hold::External("a test's own repository".into()),
        )
    };
    let done = campaign::run_campaign(&plan, &opts, &mut |_| {}).unwrap();
    let s = serde_json::to_value(&done.summary).unwrap();
    let status = |name| row(&s, name)["status"].as_str().unwrap().to_string();
    let reason = |name| row(&s, name)["reason"].as_str().unwrap().to_string();
    assert_eq!(status("fastest"), "rejected", "{s:#}");
    assert!(reason("fastest").contains("AddressSanitizer"), "{s:#}");
    assert_eq!(status("fast"), "confirmed", "{s:#}");
    assert_eq!(s["accepted"], row(&s, "fast")["index"]);
    // `faster` (0.9 s against 1.0) was faster in screening but below the top; `slower` was not.
    assert_eq!(status("faster"), "screened", "{s:#}");
    assert!(
        reason("faster").starts_with("undecided: would need ")
            && reason("faster").contains("not confirmed: screening median ")
            && reason("faster").contains("ranked 3 of 4, below the top 1 confirmed"),
        "{s:#}"
    );
    assert!(
        reason("slower").contains("no faster than the baseline in screening"),
        "{s:#}"
    );
    assert!(
        reason("faster").contains(
            "for a confirmation (as this run's confirmations took, builds at warm caches; "
        ),
        "{s:#}"
    );
    assert!(row(&s, "faster")["confirmation_verdict"].is_null());
}

/// Nothing is timed that did not change, in screening as in a confirmation (one judgement,
/// `pipeline::unchanged`): a candidate whose build artifacts are byte for byte the baseline's,
/// with no build configuration or timed input changed, gets no screening pairs and says why; a
/// candidate that changes the artifact is screened and confirmed as usual.
#[test]
fn a_candidate_whose_timed_programs_are_the_baselines_is_not_screened() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    crate::util::tiny::repo(
        &repo,
        &[
            ("bench/run.sh", "#!/bin/sh\nexec ./prog \"$@\"\n"),
            ("NOTES.md", "the program prints slow\n"),
        ],
    );
    let camp = dir.path().join("camp");
    let patches = [
        ("notes", "NOTES.md", "prints slow", "prints slow, for now"),
        ("fast", "prog.sh", "echo slow", "echo fast"),
    ]
    .map(|(name, file, old, new)| (name, patch_by_editing(&repo, &[(file, old, new)])));
    write_campaign(&camp, &workload_with_artifact(), &patches, 2);
    let done = run_unsandboxed(&camp.join("campaign.json"));
    let s = serde_json::to_value(&done.summary).unwrap();
    let notes = row(&s, "notes");
    assert_eq!(notes["status"], "no_change", "{s:#}");
    let reason = notes["reason"].as_str().unwrap();
    assert!(
        reason.contains("identical to the baseline's") && reason.contains("nothing to time"),
        "{reason}"
    );
    assert!(
        notes["screening_pairs"].as_u64().unwrap_or(0) == 0,
        "{notes:#}"
    );
    assert!(notes["confirmation_verdict"].is_null(), "{notes:#}");
    let fast = row(&s, "fast");
    assert_eq!(fast["status"], "confirmed", "{s:#}");
    assert_eq!(fast["screening_pairs"], 5);
}

/// `campaign.json` in `camp` for the tiny repository beside it: `workload`, its holdouts, a key,
/// and the `patches` (name, patch) as candidates, the `top` best screened of them confirmed.
fn write_campaign(camp: &std::path::Path, workload: &str, patches: &[(&str, String)], top: usize) {
    let mut candidates = Vec::new();
    for (name, patch) in patches {
        write(&camp.join(format!("{name}.patch")), patch);
        candidates.push(format!(
            r#"{{ "name": "{name}", "patch": "{name}.patch" }}"#
        ));
    }
    write(&camp.join("workload.json"), workload);
    write(&camp.join("holdouts.json"), HOLDOUTS);
    evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
    let campaign = format!(
        r#"{{ "name": "tiny", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json", "candidates": [{}],
  "search": {{ "pairs": 5 }},
  "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": {top}, "quiet_wait_s": 0 }},
  "key": "key/{}", "output": "receipts" }}"#,
        candidates.join(", "),
        evo::receipt::keys::PRIVATE_KEY_FILE
    );
    write(&camp.join("campaign.json"), &campaign);
}

#[test]
fn a_candidate_whose_hunk_does_not_fit_did_not_apply_as_the_apply_gate_says() {
    // Screening's status comes from the gate a confirmation would fail (`GateStop::status`): a
    // hunk whose context is not in the tree fails `apply`, which is `did not apply`, not a
    // refusal, and its reason names the file and hunk as the confirmation's gate does.
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    crate::util::tiny::repo(
        &repo,
        &[("bench/run.sh", "#!/bin/sh\nexec ./prog \"$@\"\n")],
    );
    let fast = patch_by_editing(&repo, &[("prog.sh", "echo slow", "echo fast")]);
    let stale = fast.replace("-echo slow", "-echo gone");
    assert_ne!(stale, fast);
    let camp = dir.path().join("camp");
    write_campaign(&camp, WORKLOAD, &[("stale", stale), ("fast", fast)], 2);
    let done = run_unsandboxed(&camp.join("campaign.json"));
    let s = serde_json::to_value(&done.summary).unwrap();
    let stale = row(&s, "stale");
    assert_eq!(stale["status"], "did_not_apply", "{s:#}");
    let reason = stale["reason"].as_str().unwrap();
    assert!(reason.contains("prog.sh"), "{reason}");
    assert_eq!(row(&s, "fast")["status"], "confirmed", "{s:#}");
}

/// The campaign's `max_minutes` bounds the whole run: a confirmation that would not end within
/// it is not started, and its candidate is told what deciding it would take. Here the bound
/// (6 ms) is over before the search ends, so nothing is confirmed and `fast`, first in the
/// ranking, is undecided for want of time, not for its rank. Without the bound, `fast` is
/// confirmed (the first test above).
#[test]
fn a_confirmation_that_cannot_end_within_the_campaigns_max_minutes_is_not_started() {
    let fx = Fixture::new();
    let file = fx.camp.join("campaign.json");
    crate::util::add_campaign_field(&file, r#""max_minutes": 0.0001"#);
    let done = run_unsandboxed(&file);
    let s = serde_json::to_value(&done.summary).unwrap();
    let fast = row(&s, "fast");
    assert_eq!(fast["status"], "screened", "{s:#}");
    assert!(fast["confirmation_verdict"].is_null(), "{fast:#}");
    assert!(s["accepted"].is_null(), "{s:#}");
    let reason = fast["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("undecided: would need ")
            && reason.contains("more for a confirmation (estimated from this run's checks")
            && reason.contains("ranked 1 of 2, but the campaign's max_minutes left under a minute"),
        "{reason}"
    );
    assert!(!done.run_dir.join("confirmations").exists());
}

/// A tiny repository in `dir` (`repo/`) and, per `(name, line)`, the patch that turns its
/// program's `echo slow` into `line`.
fn program_edits(
    dir: &std::path::Path,
    edits: &[(&'static str, &str)],
) -> Vec<(&'static str, String)> {
    let repo = dir.join("repo");
    crate::util::tiny::repo(
        &repo,
        &[("bench/run.sh", "#!/bin/sh\nexec ./prog \"$@\"\n")],
    );
    (edits.iter())
        .map(|(name, new)| {
            let patch = patch_by_editing(&repo, &[("prog.sh", "echo slow", new)]);
            (*name, patch)
        })
        .collect()
}

/// Racing (`search.max_pairs`, docs/design.md §2.3.4): after the first `search.pairs`, pairs go
/// only to candidates whose place among the top `confirm.top` is in doubt. `fast` (25% faster,
/// 1% noise) is certainly first and `slower` certainly out; the two nulls compete for the second
/// place and get pairs up to the cap. Without the cap every candidate keeps its 5 pairs (no
/// look of a comparison capped at 5 pairs can rule anything out).
#[test]
fn racing_spends_pairs_only_where_the_ranking_is_in_doubt() {
    let dir = tempfile::tempdir().unwrap();
    let patches = program_edits(
        dir.path(),
        &[
            ("fast", "echo fast"),
            ("slower", "echo slower"),
            ("null-a", "echo slow # a"),
            ("null-b", "echo slow # b"),
        ],
    );
    let pairs = |camp: &std::path::Path, racing: bool| {
        write_campaign(camp, WORKLOAD, &patches, 2);
        let file = camp.join("campaign.json");
        if racing {
            let text = std::fs::read_to_string(&file).unwrap();
            let raced = text.replace(r#""pairs": 5 }"#, r#""pairs": 5, "max_pairs": 8 }"#);
            assert_ne!(text, raced);
            write(&file, &raced);
        }
        let done = run_unsandboxed(&file);
        let s = serde_json::to_value(&done.summary).unwrap();
        let counted: Vec<(String, u64)> = ["fast", "slower", "null-a", "null-b"]
            .iter()
            .map(|n| {
                (
                    n.to_string(),
                    row(&s, n)["screening_pairs"].as_u64().unwrap(),
                )
            })
            .collect();
        (
            counted,
            row(&s, "fast")["status"].as_str().unwrap().to_string(),
        )
    };
    let (raced, fast) = pairs(&dir.path().join("raced"), true);
    let want = |n: [u64; 4]| {
        (["fast", "slower", "null-a", "null-b"].iter())
            .zip(n)
            .map(|(name, n)| (name.to_string(), n))
            .collect::<Vec<_>>()
    };
    // The race gave the nulls pairs up to the cap and `slower` none; after the confirmation,
    // screening's ruling gave `slower` the one more pair its first look needs (6) to rule it out.
    assert_eq!(raced, want([5, 6, 8, 8]));
    assert_eq!(fast, "confirmed");
    let (plain, _) = pairs(&dir.path().join("plain"), false);
    assert_eq!(plain, want([5, 5, 5, 5]));
}

/// Screening rules out what its pairs can (docs/design.md §2.3.4, `search::ruling`): after the
/// one confirmation (`fast`), the candidates left are judged by the confirmation's sequential rule
/// on their screening pairs, with more pairs up to `search.max_pairs`. The null ends "no real
/// gain", the slowdown "slower"; `quick`, a real gain the confirmation had no place for, is found
/// faster and left to a confirmation, never ruled out and never accepted by screening.
#[test]
fn screening_rules_out_nulls_and_slowdowns_and_leaves_real_gains_to_a_confirmation() {
    let dir = tempfile::tempdir().unwrap();
    let patches = program_edits(
        dir.path(),
        &[
            ("fast", "echo fast"),
            ("quick", "echo quick"),
            (
                "null",
                "echo slow # a comment the program prints nothing of",
            ),
            ("slower", "echo slower"),
        ],
    );
    let camp = dir.path().join("camp");
    write_campaign(&camp, WORKLOAD, &patches, 1);
    let file = camp.join("campaign.json");
    let text = std::fs::read_to_string(&file).unwrap();
    let raced = text.replace(r#""pairs": 5 }"#, r#""pairs": 5, "max_pairs": 24 }"#);
    assert_ne!(text, raced);
    write(&file, &raced);
    let done = run_unsandboxed(&file);
    let s = serde_json::to_value(&done.summary).unwrap();
    let status = |n| row(&s, n)["status"].as_str().unwrap().to_string();
    let reason = |n| row(&s, n)["reason"].as_str().unwrap().to_string();
    let pairs = |n| row(&s, n)["screening_pairs"].as_u64().unwrap();
    assert_eq!(status("fast"), "confirmed", "{s:#}");
    assert_eq!(status("null"), "no_real_gain", "{s:#}");
    assert!(
        reason("null").starts_with("any gain is below the ")
            && reason("null").contains("at screening's look of"),
        "{}",
        reason("null")
    );
    assert_eq!(status("slower"), "slower", "{s:#}");
    assert!(
        reason("slower").starts_with("slower than the baseline"),
        "{}",
        reason("slower")
    );
    // Ruled at a look, not at the cap: the pairs stop where the rule decided.
    assert!(pairs("null") < 24 && pairs("slower") < 24, "{s:#}");
    assert_eq!(status("quick"), "screened", "{s:#}");
    assert!(
        reason("quick").starts_with("undecided: ")
            && reason("quick").contains("screening's looks find it faster"),
        "{}",
        reason("quick")
    );
    assert!(
        pairs("quick") < 24,
        "its pairs stop once found faster: {s:#}"
    );
    shares_one_baseline_run_per_round(&done.run_dir, 4);
    // Only the confirmation's verdict is a verdict: the campaign accepted `fast` alone.
    assert_eq!(s["accepted"], row(&s, "fast")["index"]);
    assert!(
        done.run_dir
            .join("confirmations")
            .read_dir()
            .unwrap()
            .count()
            == 1
    );
}

/// Screening runs in rounds that share one baseline run (`measure::multi_arm`): in the journal of
/// `run_dir`, the pairs of one seed hold one and the same baseline run, each candidate's pairs
/// have seeds of their own, and the first `search.pairs` (5) rounds each served all `screened`
/// candidates with one baseline run, not one per pair.
fn shares_one_baseline_run_per_round(run_dir: &std::path::Path, screened: usize) {
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let pairs: Vec<Value> = (journal.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["entry"] == "screening_pair")
        .collect();
    let mut by_seed: std::collections::BTreeMap<u64, Vec<&Value>> = Default::default();
    for e in &pairs {
        let seed = e["pair"]["seed"]
            .as_u64()
            .expect("the tiny program takes a seed");
        by_seed.entry(seed).or_default().push(e);
    }
    for round in by_seed.values() {
        assert!(
            round
                .iter()
                .all(|e| e["pair"]["baseline"] == round[0]["pair"]["baseline"]),
            "one baseline run per round: {round:#?}"
        );
        let mut indices: Vec<u64> = round.iter().map(|e| e["index"].as_u64().unwrap()).collect();
        indices.sort_unstable();
        indices.dedup();
        assert_eq!(
            indices.len(),
            round.len(),
            "a candidate's pairs never share a seed"
        );
    }
    let full = by_seed.values().filter(|r| r.len() == screened).count();
    assert!(
        full >= 5,
        "{full} rounds served all {screened} candidates; {} pairs on {} seeds",
        pairs.len(),
        by_seed.len()
    );
}

/// A campaign's later confirmation reuses the first one's A/A pairs when its baseline binaries
/// are byte for byte the first's (`confirm::earlier_aa`): the second result records whose pairs
/// they are, holds the very same runs, and `--recompute` re-derives both results from what they
/// record.
#[test]
fn a_later_confirmation_reuses_the_first_ones_aa_pairs_on_the_same_baseline_binaries() {
    let dir = tempfile::tempdir().unwrap();
    let patches = program_edits(
        dir.path(),
        &[("fast", "echo fast"), ("quick", "echo quick")],
    );
    let camp = dir.path().join("camp");
    // The baseline's two builds hold the same artifact: it is a file of the tree.
    write_campaign(&camp, &workload_with_artifact(), &patches, 2);
    let done = run_unsandboxed(&camp.join("campaign.json"));
    let s = serde_json::to_value(&done.summary).unwrap();
    let result = |name| -> evo::evidence::result::ConfirmResult {
        let folder = row(&s, name)["confirmation_run_dir"]
            .as_str()
            .unwrap()
            .to_string();
        let text = std::fs::read_to_string(done.run_dir.join(folder).join("result.json"));
        serde_json::from_str(&text.unwrap()).unwrap()
    };
    let (first, second) = (result("fast"), result("quick"));
    let main = |r: &evo::evidence::result::ConfirmResult| {
        (r.evidence.scenarios.iter())
            .find(|s| s.name == "main")
            .cloned()
            .unwrap()
    };
    let (a, b) = (main(&first), main(&second));
    assert_eq!(a.aa_from, None, "the first confirmation measures its own");
    assert_eq!(b.aa_from.as_deref(), Some(first.evidence.run_id.as_str()));
    assert_eq!(b.aa_pairs, a.aa_pairs, "the very runs the first one made");
    assert_eq!(b.aa_pairs.len(), 11);
    // The binaries the reuse rests on are in the second result: the same digests as the first's.
    let baseline = |r: &evo::evidence::result::ConfirmResult| {
        evo::confirm::earlier_aa::baseline_artifacts(&r.evidence.artifacts)
    };
    assert_eq!(baseline(&second), baseline(&first));
    assert_eq!(baseline(&second).len(), 2, "baseline and second build");
    for r in [&first, &second] {
        assert_eq!(
            r.verdict,
            evo::evidence::result::Verdict::Accepted,
            "{:?}",
            r.reasons
        );
        assert!(evo::receipt::recompute::recompute(r).is_empty());
    }
}

/// The tiny workload with the timed program's bytes as its artifact (the fake's build writes
/// nothing).
fn workload_with_artifact() -> String {
    let workload = WORKLOAD.replace(
        r#""build": { "command": "make prog" }"#,
        r#""build": { "command": "make prog", "artifacts": ["prog.sh"] }"#,
    );
    assert_ne!(workload, WORKLOAD);
    workload
}
