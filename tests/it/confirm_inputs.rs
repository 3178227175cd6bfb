//! What a confirmation records of where its candidate and its inputs came from (issue 27, item
//! 5): the digest of every `sandbox.read_only` folder the runs could read, and the candidate's
//! stated reason (`evo confirm --explanation`, else a `git format-patch` commit message), both in
//! `result.json`, the signed receipt and the PR text. The whole pipeline on a fake runner.

use crate::util;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use evo::confirm::{self, ConfirmOptions, ConfirmRequest};
use evo::host::Hold;
use evo::measure::fake::{FakeBehavior, FakeRunner};
use evo::measure::runner::RunSpec;
use evo::spec::modes::SandboxMode;
use util::write;

const WORKLOAD: &str = r#"{
  "name": "tiny",
  "build": { "command": "make prog", "timeout_s": 60 },
  "test": { "command": "make test", "timeout_s": 60 },
  "scenarios": [
    { "name": "main", "role": "training", "run": "./prog run {seed}",
      "check": "./prog check {seed}", "compare": "exact", "deterministic_output": true,
      "timeout_s": 20 }
  ]
}"#;

/// A stated reason that would add a heading and a link to the PR text if quoted raw.
const HOSTILE_REASON: &str = "Faster\n## Verdict: accepted\n[click](https://evil.example)";

struct Fixture {
    dir: tempfile::TempDir,
    camp: PathBuf,
    patch: PathBuf,
}

/// A repository whose candidate is a `git format-patch` of one commit with `message`, and a
/// campaign that shows its runs the folder `data/` (`sandbox.read_only`).
fn fixture(message: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    crate::util::tiny::repo(&repo, &[]);
    write(&repo.join("prog.sh"), "#!/bin/sh\necho fast\n");
    util::git(&repo, &["commit", "-q", "-am", message]);
    let patch_text = util::git(&repo, &["format-patch", "-1", "--stdout"]);
    util::git(&repo, &["reset", "-q", "--hard", "HEAD~1"]);
    let camp = dir.path().join("camp");
    let patch = camp.join("fast.patch");
    write(&patch, &patch_text);
    write(&camp.join("workload.json"), WORKLOAD);
    write(&camp.join("data/input.txt"), "1 2 3\n");
    write(&camp.join("data/more/weights.bin"), "0123");
    evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
    let campaign = format!(
        r#"{{
  "name": "tiny", "repo": "../repo", "baseline": "main", "workload": "workload.json",
  "confirm": {{ "pairs": 9, "aa_pairs": 11, "quiet_wait_s": 0 }},
  "sandbox": {{ "read_only": ["data"] }},
  "key": "key/{}", "output": "receipts"
}}"#,
        evo::receipt::keys::PRIVATE_KEY_FILE
    );
    write(&camp.join("campaign.json"), &campaign);
    Fixture { dir, camp, patch }
}

/// A candidate 25% faster on a quiet machine: everything builds, passes and matches.
fn fake(work: &Path) -> FakeRunner {
    let noisy = |mean_s| FakeBehavior::Noisy {
        mean_s,
        rel_sd: 0.01,
    };
    let mut fake = FakeRunner::new(11);
    for (tree, prefix, behavior) in [
        ("*", "make prog", FakeBehavior::Prints(String::new())),
        ("*", "make test", FakeBehavior::Prints("ok\n".into())),
        ("*", "./prog check", FakeBehavior::Prints("42\n".into())),
        ("candidate", "./prog run", noisy(0.8)),
        ("*", "./prog run", noisy(1.0)),
    ] {
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

/// Runs the confirmation, with `explanation` as `--explanation` gives it; the result as written
/// and the PR text.
fn confirm(
    f: &Fixture,
    explanation: Option<&str>,
) -> (evo::evidence::result::ConfirmResult, String) {
    let work = f.dir.path().join("work");
    let cwd = std::env::current_dir().unwrap();
    let mut plan =
        evo::plan::confirm_plan(&f.patch, Some(&f.camp.join("campaign.json")), &cwd).unwrap();
    plan.explanation = explanation.map(str::to_string);
    let request = ConfirmRequest::new(plan, None, Some(SandboxMode::Off));
    let opts = ConfirmOptions {
        work_dir: Some(work.clone()),
        ..ConfirmOptions::new(Arc::new(fake(&work)), Hold::External("a test's own".into()))
    };
    let done = confirm::run_confirm(&request, &opts, &mut |_| {}).unwrap();
    let json = std::fs::read_to_string(done.run_dir.join("result.json")).unwrap();
    let pr = std::fs::read_to_string(done.run_dir.join("pr_body.md")).unwrap();
    (serde_json::from_str(&json).unwrap(), pr)
}

#[test]
fn the_read_only_folders_are_digested_into_the_result_the_receipt_and_the_pr_text() {
    let f = fixture("Print less");
    let (r, pr) = confirm(&f, None);
    let expected = evo::tree::digest_folder(&f.camp.join("data")).unwrap();
    assert_eq!(
        r.evidence.read_only_inputs.len(),
        1,
        "{:?}",
        r.evidence.read_only_inputs
    );
    let input = &r.evidence.read_only_inputs[0];
    assert_eq!(
        input.path, "data",
        "the campaign's own words, no path of this machine"
    );
    assert_eq!(
        (&input.sha256, input.files, input.bytes),
        (&expected.sha256, 2, 10)
    );
    assert!(
        pr.contains(&format!(
            "#   data  {} (2 files, 10 bytes)",
            expected.sha256
        )),
        "{pr}"
    );
    // The receipt beside it verifies and recomputes with the new field in its predicate.
    let receipt_dir = f.camp.join("receipts");
    let run = std::fs::read_dir(&receipt_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let bytes = std::fs::read(run.path().join(evo::receipt::RECEIPT_FILE)).unwrap();
    let public = evo::receipt::keys::load_verifying_key(
        &f.camp.join("key").join(evo::receipt::keys::PUBLIC_KEY_FILE),
    )
    .unwrap();
    let verified = evo::receipt::verify(&bytes, &public).unwrap();
    assert_eq!(
        verified.statement.predicate.evidence.read_only_inputs,
        r.evidence.read_only_inputs
    );
    assert_eq!(
        evo::receipt::recompute::recompute(&verified.statement.predicate),
        vec![]
    );
}

#[test]
fn a_format_patch_commit_message_is_the_stated_reason_unless_one_is_given() {
    let f = fixture("Print less\n\nThe old loop printed every line twice.");
    let (r, pr) = confirm(&f, None);
    assert_eq!(
        r.evidence.explanation.as_deref(),
        Some("Print less\n\nThe old loop printed every line twice.")
    );
    assert!(
        pr.contains("> Print less\n>\n> The old loop printed every line twice."),
        "{pr}"
    );
    let f = fixture("Print less");
    let (r, pr) = confirm(&f, Some(HOSTILE_REASON));
    assert_eq!(r.evidence.explanation.as_deref(), Some(HOSTILE_REASON));
    // Quoted and escaped like any candidate-written text: no heading, no link.
    assert!(!pr.lines().any(|l| l.starts_with("## Verdict")), "{pr}");
    assert!(!pr.contains("[click](https"), "{pr}");
    assert!(pr.contains("> Faster\n> \\## Verdict: accepted"), "{pr}");
}
