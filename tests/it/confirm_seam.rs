//! The remote-execution seam (docs/design.md §2.7) on a scripted fake runner: a confirmation
//! request survives its file unchanged and runs as the in-process confirmation does, an outcome
//! is loaded back only as the receipt vouches for it, and a stop condition of the caller's own
//! stops a confirmation without touching the process-wide Ctrl-C state.

use crate::util;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use evo::confirm::{self, ConfirmOptions, ConfirmRequest};
use evo::host::{Hold, Stop, StopCondition};
use evo::measure::fake::{FakeBehavior, FakeRunner};
use evo::measure::runner::RunSpec;
use evo::pipeline::event::Event;
use evo::spec::modes::SandboxMode;
use serde_json::Value;
use util::{patch_by_editing, write};

const WORKLOAD: &str = r#"{
  "name": "tiny",
  "build": { "command": "make prog", "timeout_s": 60 },
  "test": { "command": "make test", "timeout_s": 60 },
  "scenarios": [
    { "name": "main", "role": "training", "run": "./prog run {seed}",
      "check": "./prog check {seed}", "compare": "exact", "deterministic_output": true }
  ]
}"#;

const HOLDOUTS: &str = r#"{ "scenarios": [
  { "name": "other", "role": "holdout", "run": "./prog holdout {seed}",
    "check": "./prog check {seed}", "compare": "exact", "deterministic_output": true }
] }"#;

/// A repository, a campaign with holdouts and a key, and a patch, all in one temp folder.
struct Fixture {
    dir: tempfile::TempDir,
    camp: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        crate::util::tiny::repo(&repo, &[]);
        let diff = patch_by_editing(&repo, &[("prog.sh", "echo slow", "echo fast")]);
        let camp = dir.path().join("camp");
        write(&camp.join("fast.patch"), &diff);
        write(&camp.join("workload.json"), WORKLOAD);
        write(&camp.join("holdouts.json"), HOLDOUTS);
        evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
        let campaign = format!(
            r#"{{
  "name": "tiny-speedups", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json",
  "confirm": {{ "pairs": 9, "aa_pairs": 11, "quiet_wait_s": 0 }},
  "key": "key/{}", "output": "receipts"
}}"#,
            evo::receipt::keys::PRIVATE_KEY_FILE
        );
        write(&camp.join("campaign.json"), &campaign);
        Fixture { dir, camp }
    }

    /// The request `evo confirm camp/fast.patch` runs, with the sandbox off.
    fn request(&self) -> ConfirmRequest {
        let plan = evo::plan::confirm_plan(
            &self.camp.join("fast.patch"),
            Some(&self.camp.join("campaign.json")),
            self.dir.path(),
        )
        .unwrap();
        ConfirmRequest::new(plan, None, Some(SandboxMode::Off))
    }

    fn key(&self) -> ed25519_dalek::VerifyingKey {
        let key = self
            .camp
            .join("key")
            .join(evo::receipt::keys::PRIVATE_KEY_FILE);
        evo::receipt::keys::load_signing_key(&key)
            .unwrap()
            .verifying_key()
    }
}

/// A candidate 25% faster than the baseline, on and off the holdout, that passes every check;
/// `work` is where its trees are built (the fake tells the trees apart by their folders).
fn fake(work: &Path) -> FakeRunner {
    let noisy = |mean_s| FakeBehavior::Noisy {
        mean_s,
        rel_sd: 0.01,
    };
    let rules = [
        ("*", "make prog", FakeBehavior::Prints(String::new())),
        ("*", "make test", FakeBehavior::Prints("ok\n".into())),
        ("*", "./prog check", FakeBehavior::Prints("42\n".into())),
        ("candidate", "./prog run", noisy(0.8)),
        ("*", "./prog run", noisy(1.0)),
        ("candidate", "./prog holdout", noisy(0.8)),
        ("*", "./prog holdout", noisy(1.0)),
    ];
    let mut fake = FakeRunner::new(11);
    for (tree, prefix, behavior) in rules {
        let work = work.to_path_buf();
        fake = fake.when(
            move |s: &RunSpec| {
                let in_tree = || {
                    let rel = s.cwd.as_deref()?.strip_prefix(&work).ok()?;
                    let first = rel.components().next()?.as_os_str().to_str()?;
                    Some(first.trim_end_matches('.') == tree)
                };
                s.command.starts_with(prefix) && (tree == "*" || in_tree() == Some(true))
            },
            behavior,
        );
    }
    fake
}

fn options(fake: &FakeRunner, work: &Path) -> ConfirmOptions {
    ConfirmOptions {
        work_dir: Some(work.to_path_buf()),
        ..ConfirmOptions::new(
            Arc::new(fake.clone()),
            Hold::External("a test's own".into()),
        )
    }
}

fn result_of(run_dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(run_dir.join("result.json")).unwrap()).unwrap()
}

/// What must not depend on where the confirmation was described: the decision and its grounds.
fn decision(r: &Value) -> Value {
    serde_json::json!({
        "verdict": r["verdict"],
        "tier": r["tier"],
        "gates": r["gates"],
        "reasons": r["reasons"],
        "pairs": r["scenarios"].as_array().unwrap().iter().map(|s| s["pairs"].as_array().unwrap().len()).collect::<Vec<_>>(),
    })
}

#[test]
fn a_request_read_back_from_its_file_runs_the_same_confirmation_as_in_process() {
    let fx = Fixture::new();
    let work = fx.dir.path().join("work-in-process");
    let direct =
        confirm::run_confirm(&fx.request(), &options(&fake(&work), &work), &mut |_| {}).unwrap();

    let file = fx.dir.path().join("jobs").join("request.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    confirm::write_request(&file, &fx.request()).unwrap();
    let read: ConfirmRequest = confirm::read_request(&file).unwrap();
    assert_eq!(read, fx.request());
    let work = fx.dir.path().join("work-from-file");
    let remote = confirm::run_confirm(&read, &options(&fake(&work), &work), &mut |_| {}).unwrap();

    let (a, b) = (result_of(&direct.run_dir), result_of(&remote.run_dir));
    assert_eq!(a["verdict"], "accepted", "{:#}", a["reasons"]);
    assert_eq!(a["tier"], "tested");
    assert_eq!(decision(&a), decision(&b));
    // The same campaign, patch and holdouts: the identities agree too.
    for field in [
        "campaign_file",
        "repo",
        "workload_digest",
        "holdout_portfolio_digest",
    ] {
        assert_eq!(a[field], b[field], "{field}");
    }
    assert_eq!(a["patch"]["sha256"], b["patch"]["sha256"]);
    assert_ne!(direct.run_dir, remote.run_dir);
}

#[test]
fn a_request_survives_its_json_byte_for_byte_with_paths_relative_to_its_folder() {
    let fx = Fixture::new();
    // In the fixture's top folder, every path of the plan lies inside the request's folder.
    let file = fx.dir.path().join("request.json");
    confirm::write_request(&file, &fx.request()).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let read: ConfirmRequest = confirm::read_request(&file).unwrap();
    assert_eq!(read, fx.request());
    assert_eq!(
        confirm::request::to_bytes(&read, fx.dir.path()).unwrap(),
        bytes
    );
    let text = String::from_utf8(bytes.clone()).unwrap();
    let top = fx.dir.path().display().to_string();
    assert!(!text.contains(&top), "an absolute path in\n{text}");
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["version"], 2);
    assert_eq!(json["kind"], "confirmation");
    // As the plan resolved it: relative to the campaign file, not tidied.
    assert_eq!(json["plan"]["campaign"]["repo"], "camp/../repo");
    assert_eq!(json["plan"]["campaign"]["output_dir"], "camp/receipts");
    assert_eq!(
        json["plan"]["campaign"]["holdouts"]["file"],
        "camp/holdouts.json"
    );
    // The holdouts travel whole: the request is as secret as the holdout file.
    assert!(text.contains("./prog holdout {seed}"));
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");

    // The same bytes in another folder mean that folder's repository and output.
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join("request.json");
    std::fs::write(&moved, &bytes).unwrap();
    let there: ConfirmRequest = confirm::read_request(&moved).unwrap();
    assert_eq!(
        there.plan.campaign.repo,
        elsewhere.path().join("camp/../repo")
    );
    assert_eq!(
        there.plan.campaign.output_dir,
        elsewhere.path().join("camp/receipts")
    );
    assert_eq!(
        confirm::request::to_bytes(&there, elsewhere.path()).unwrap(),
        bytes
    );

    // Written from a folder outside the fixture, the paths stay absolute and read back the same.
    let outside = elsewhere.path().join("request-abs.json");
    confirm::write_request(&outside, &fx.request()).unwrap();
    let text = std::fs::read_to_string(&outside).unwrap();
    assert!(text.contains(&top), "{text}");
    let read: ConfirmRequest = confirm::read_request(&outside).unwrap();
    assert_eq!(read, fx.request());
}

#[test]
fn an_outcome_is_loaded_back_from_its_run_folder_and_refused_once_result_json_is_edited() {
    let fx = Fixture::new();
    let work = fx.dir.path().join("work");
    let done =
        confirm::run_confirm(&fx.request(), &options(&fake(&work), &work), &mut |_| {}).unwrap();
    let outcome = confirm::load_outcome(&done.run_dir, &fx.key()).unwrap();
    assert_eq!(outcome.verdict, done.result.verdict);
    assert_eq!(outcome.tier, done.result.tier);
    assert_eq!(outcome.reasons, done.result.reasons);
    let median = done.result.evidence.scenarios[0]
        .training
        .as_ref()
        .unwrap()
        .median;
    assert_eq!(outcome.median, Some(median));
    assert_eq!(outcome.receipt_sha256, done.receipt.sha256);
    let patch = std::fs::read(fx.camp.join("fast.patch")).unwrap();
    let sent = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&patch));
    assert_eq!(outcome.patch_sha256, sent);

    // Another key than the one expected: refused, whatever the folder says.
    let other = evo::receipt::keys::generate().unwrap().verifying_key();
    let err = confirm::load_outcome(&done.run_dir, &other).unwrap_err();
    assert!(
        matches!(err, confirm::OutcomeError::Receipt { .. }),
        "{err}"
    );

    // A figure of result.json changed after signing: the receipt is what counts.
    let path = done.run_dir.join("result.json");
    let original = std::fs::read(&path).unwrap();
    let mut edited: Value = serde_json::from_slice(&original).unwrap();
    edited["scenarios"][0]["training"]["median"] = serde_json::json!(median * 2.0);
    std::fs::write(&path, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
    let err = confirm::load_outcome(&done.run_dir, &fx.key()).unwrap_err();
    assert!(
        err.to_string().contains("/scenarios/0/training/median"),
        "{err}"
    );

    // A holdout's output, sealed in the receipt as its digest, cannot be changed either.
    let mut edited: Value = serde_json::from_slice(&original).unwrap();
    let holdout = (edited["scenarios"].as_array_mut().unwrap().iter_mut())
        .find(|s| s["name"] == "other")
        .unwrap();
    holdout["pairs"][0]["candidate"]["stderr_tail"] = serde_json::json!("edited");
    std::fs::write(&path, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
    let err = confirm::load_outcome(&done.run_dir, &fx.key()).unwrap_err();
    assert!(
        matches!(err, confirm::OutcomeError::Differs { .. }),
        "{err}"
    );

    // Put back byte for byte, it loads again.
    std::fs::write(&path, &original).unwrap();
    assert_eq!(
        confirm::load_outcome(&done.run_dir, &fx.key()).unwrap(),
        outcome
    );
}

/// Stops once the fake has made `runs` timed runs of the training scenario.
struct AfterTimedRuns {
    fake: FakeRunner,
    runs: usize,
}

impl StopCondition for AfterTimedRuns {
    fn requested(&self) -> bool {
        let calls = self.fake.calls();
        calls.iter().filter(|c| c.starts_with("./prog run")).count() >= self.runs
    }
}

#[test]
fn a_stop_of_the_callers_own_ends_a_confirmation_mid_measurement_without_a_receipt() {
    let fx = Fixture::new();
    let work = fx.dir.path().join("work");
    let fake = fake(&work);
    let opts = ConfirmOptions {
        stop: Stop::new(AfterTimedRuns {
            fake: fake.clone(),
            runs: 5,
        }),
        ..options(&fake, &work)
    };
    let mut run_dir = None;
    let err = confirm::run_confirm(&fx.request(), &opts, &mut |e| {
        if let Event::Started { run_dir: dir, .. } = e {
            run_dir = Some(dir);
        }
    })
    .unwrap_err();
    assert!(
        matches!(err, evo::pipeline::PipelineError::Interrupted { .. }),
        "{err}"
    );
    assert_eq!(err.exit_code(), evo::exit_codes::INTERRUPTED);
    // Nothing ran after the stop: the fifth timed run was the last, and it was discarded.
    let calls = fake.calls();
    let timed = calls.iter().filter(|c| c.starts_with("./prog run")).count();
    assert_eq!(timed, 5, "{calls:#?}");
    let run_dir = run_dir.unwrap();
    assert!(run_dir.join("error.txt").is_file());
    for name in [evo::receipt::RECEIPT_FILE, "result.json", "pr_body.md"] {
        assert!(!run_dir.join(name).exists(), "{name} was written");
    }
    assert!(!evo::interrupt::requested());
}

#[test]
fn evo_confirm_refuses_a_request_of_another_version_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("request.json");
    std::fs::write(&file, r#"{ "version": 99, "plan": {} }"#).unwrap();
    refused_request("confirm", &file, "version 99");
}

/// `evo <command> --request FILE` is a usage error whose message `says` what is wrong.
fn refused_request(command: &str, file: &Path, says: &str) {
    let out = util::evo()
        .args(command.split(' '))
        .arg("--request")
        .arg(file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(evo::exit_codes::USAGE_ERROR),
        "{command}: {}",
        util::text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(says), "{command}: {stderr}");
}

#[test]
fn a_screening_request_is_refused_by_evo_confirm_and_a_confirmation_by_screen_job() {
    let fx = Fixture::new();
    let folder = fx.dir.path().join("requests");
    std::fs::create_dir_all(&folder).unwrap();
    let order = evo::campaign::ScreeningOrder {
        index: 1,
        name: "fast".into(),
        search_seed: 1,
        baseline_sha: "0".repeat(40),
    };
    let screening = evo::campaign::ScreenRequest::new(fx.request().plan, None, order);
    let file = folder.join("request.json");
    evo::confirm::write_request(&file, &screening).unwrap();
    refused_request(
        "confirm",
        &file,
        "is a screening request, not a confirmation one",
    );
    evo::confirm::write_request(&file, &fx.request()).unwrap();
    refused_request("campaign screen-job", &file, "is a confirmation request");
}

#[test]
fn evo_confirm_runs_a_request_file_for_real_and_hides_its_folder_from_the_runs() {
    let fx = Fixture::new();
    // A folder the campaign shows its runs, with the request's folder inside it.
    let data = fx.dir.path().join("data");
    let file = data.join("jobs").join("request.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let seen = format!("test -e '{}'", file.display());
    let workload = format!(
        r#"{{
  "name": "tiny",
  "build": {{ "command": "cp prog.sh prog && chmod +x prog" }},
  "test": {{ "command": "./prog && ! {seen}" }},
  "scenarios": [
    {{ "name": "main", "role": "training", "run": "./prog {{seed}}", "check": "./prog {{seed}}",
      "compare": "exact", "deterministic_output": true }}
  ]
}}"#
    );
    write(&fx.camp.join("workload.json"), &workload);
    let campaign = std::fs::read_to_string(fx.camp.join("campaign.json")).unwrap();
    let campaign = campaign.replacen(
        r#""output": "receipts""#,
        r#""output": "receipts", "sandbox": { "read_only": ["../data"] }"#,
        1,
    );
    write(&fx.camp.join("campaign.json"), &campaign);
    let mut request = fx.request();
    request.sandbox = None;
    confirm::write_request(&file, &request).unwrap();

    let out = util::evo()
        .args(["confirm", "--request"])
        .arg(&file)
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 3 | 4)), "{}", util::text(&out));
    let receipts = fx.camp.join("receipts");
    let run_dir = std::fs::read_dir(&receipts)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let outcome = confirm::load_outcome(&run_dir, &fx.key()).unwrap();
    assert_eq!(code, Some(outcome.verdict.exit_code()));
    let r = result_of(&run_dir);
    assert_eq!(r["search"], Value::Null);
    if r["sandbox"]["enabled"] == true {
        // The read-only folder is shown, the request's folder inside it is not.
        let tests = (r["gates"].as_array().unwrap().iter())
            .find(|g| g["name"] == "tests")
            .unwrap();
        assert_eq!(tests["status"], "passed", "{:#}", r["gates"]);
    }
}

/// A fleet job's run (docs/design.md §2.8): the campaign's key is gone, as on a compute node, and
/// the confirmation still runs and writes its result, with nothing signed or rendered from it.
fn unsigned_run(fx: &Fixture) -> (evo::confirm::Unsigned, ConfirmRequest) {
    std::fs::remove_dir_all(fx.camp.join("key")).unwrap();
    let mut request = fx.request();
    request.plan.campaign.output_dir = fx.dir.path().join("job").join("out");
    std::fs::create_dir_all(&request.plan.campaign.output_dir).unwrap();
    let work = fx.dir.path().join("work");
    let done = confirm::run_confirm_unsigned(&request, &options(&fake(&work), &work), &mut |_| {})
        .unwrap();
    (done, request)
}

#[test]
fn an_unsigned_run_needs_no_key_and_writes_its_result_and_nothing_signed() {
    let fx = Fixture::new();
    let (done, _) = unsigned_run(&fx);
    assert_eq!(done.result.verdict.as_str(), "accepted");
    assert!(done.run_dir.join("result.json").is_file());
    assert!(done.run_dir.join("candidate.patch").is_file());
    for name in [evo::receipt::RECEIPT_FILE, "pr_body.md", "runs.csv"] {
        assert!(!done.run_dir.join(name).exists(), "{name} was written");
    }
    // The signed path still refuses to run without its key, before anything runs.
    let work = fx.dir.path().join("work-signed");
    let err = confirm::run_confirm(&fx.request(), &options(&fake(&work), &work), &mut |_| {})
        .unwrap_err();
    assert!(err.to_string().contains("signing key"), "{err}");
}

#[test]
fn a_nodes_result_is_collected_only_when_every_figure_and_the_verdict_recompute() {
    use evo::fleet::collect::{CollectError, Expected, collect};
    let fx = Fixture::new();
    let (done, request) = unsigned_run(&fx);
    let out = request.plan.campaign.output_dir.clone();
    let pinned = evo::tree::pin(&request.plan.campaign.repo, "main").unwrap();
    let expected = Expected {
        request: &request,
        baseline_sha: &pinned.sha,
    };
    let collected = collect(&out, &expected).unwrap();
    assert_eq!(collected.run_folder, done.run_dir);
    assert_eq!(collected.result, done.result);

    let path = done.run_dir.join("result.json");
    let original = std::fs::read(&path).unwrap();
    let refused_with = |edit: &dyn Fn(&mut Value), words: &str| {
        let mut edited: Value = serde_json::from_slice(&original).unwrap();
        edit(&mut edited);
        std::fs::write(&path, serde_json::to_vec_pretty(&edited).unwrap()).unwrap();
        let err = collect(&out, &expected).unwrap_err();
        assert!(matches!(err, CollectError::Refused { .. }), "{err}");
        assert!(err.to_string().contains(words), "{words}: {err}");
    };
    // A figure that does not follow from the raw runs.
    refused_with(
        &|r| r["scenarios"][0]["training"]["median"] = serde_json::json!(9.0),
        "scenarios[0].training.median",
    );
    // A raw run made faster: its pair's ratio no longer follows.
    refused_with(
        &|r| r["scenarios"][0]["pairs"][0]["candidate"]["wall_s"] = serde_json::json!(0.001),
        "scenarios[0].pairs[0]",
    );
    // A verdict the gates do not give.
    refused_with(
        &|r| r["verdict"] = serde_json::json!("rejected"),
        "verdict: recorded \"rejected\"",
    );
    // Another baseline, or fewer pairs than the campaign asks for.
    refused_with(
        &|r| r["baseline_sha"] = serde_json::json!("0".repeat(40)),
        "baseline_sha",
    );
    refused_with(
        &|r| r["scenarios"][0]["training"]["plan"]["pairs"] = serde_json::json!(6),
        "planned with",
    );
    std::fs::write(&path, &original).unwrap();
    // A node that signed or rendered anything itself.
    std::fs::write(done.run_dir.join("pr_body.md"), "# accepted").unwrap();
    let err = collect(&out, &expected).unwrap_err();
    assert!(
        err.to_string().contains("only the coordinator signs"),
        "{err}"
    );
    std::fs::remove_file(done.run_dir.join("pr_body.md")).unwrap();
    assert!(collect(&out, &expected).is_ok());
    // Nothing at all: missing, which the campaign submits again.
    let empty = fx.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(matches!(
        collect(&empty, &expected),
        Err(CollectError::Missing { .. })
    ));
}
