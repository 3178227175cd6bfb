//! Faults (issue 7): SIGKILL and Ctrl-C in the middle of a run, a full disk under a build and
//! under evo's own output, a receipt folder evo cannot write, two evo processes on one
//! repository. Each fault ends with a specific exit code and message, the user's repository
//! byte-identical, nothing already journaled lost, and no receipt where none is due.
//!
//! Full disks and read-only folders are made in a private user and mount namespace
//! (`unshare -rm`), since file modes mean nothing to root; those tests say so and pass when the
//! machine does not allow it.

use crate::util;
use crate::util::faults;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use evo::exit_codes::{INTERNAL_ERROR, REJECTED, USAGE_ERROR};
use faults::{
    MARK_VAR, Running, Seeded, count, describe, entry, files_under, journal_lines,
    marked_processes, only_run_dir, pair_indices, receipts_under,
};
use serde_json::Value;
use util::cpairs::{HOLDOUTS, HOT_LINE, MEMO, WORKLOAD};
use util::{evo, fixture_repo, patch_by_editing, snapshot, text, write};

type Snapshot = std::collections::BTreeMap<PathBuf, (u32, String)>;

/// Exit code of a process stopped by Ctrl-C (128 + SIGINT), the shell convention.
const INTERRUPTED: i32 = 130;

/// How long a SIGKILLed evo's orphaned helpers may take to finish their commands.
const ORPHANS: Duration = Duration::from_secs(60);

/// The candidates every campaign here starts from: faster, slower, and one that does not build.
const CANDIDATES: [&str; 3] = ["memo", "slow", "broken"];

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    camp: PathBuf,
    /// In the environment of every process of this test's evo runs.
    marker: String,
}

impl Fixture {
    /// The cpairs repository, its workload, and the patches of `CANDIDATES` plus `fill`
    /// (a build that writes 64 MB) and `noisy` (a build that prints 3 MB).
    fn new(test: &str) -> Fixture {
        let marker = faults::marker(test);
        let dir = tempfile::Builder::new()
            .prefix(&format!("{marker}-"))
            .tempdir()
            .unwrap();
        let root = dir.path().to_path_buf();
        let repo = root.join("repo");
        fixture_repo("cpairs", &repo);
        let camp = root.join("camp");
        write(&camp.join("workload.json"), WORKLOAD);
        write(&camp.join("holdouts.json"), HOLDOUTS);
        let fx = Fixture {
            _dir: dir,
            root,
            repo,
            camp,
            marker,
        };
        let slower = "        volatile unsigned long sink = slow_hash(v + 1);\n        (void)sink;\n        total += slow_hash(v);";
        fx.patch(
            "memo",
            &[
                ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
                ("prog.c", "static unsigned long work(", MEMO),
            ],
        );
        fx.patch("slow", &[("prog.c", HOT_LINE, slower)]);
        fx.patch(
            "broken",
            &[("prog.c", "return h & 0xffff;", "return h & 0xffff")],
        );
        let fill = "\thead -c 64000000 /dev/zero > big.bin\n\tcc -O2";
        fx.patch("fill", &[("Makefile", "\tcc -O2", fill)]);
        let noisy = "\thead -c 3000000 /dev/zero | tr '\\0' x\n\tcc -O2";
        fx.patch("noisy", &[("Makefile", "\tcc -O2", noisy)]);
        fx
    }

    fn patch(&self, name: &str, edits: &[(&str, &str, &str)]) {
        let diff = patch_by_editing(&self.repo, edits);
        write(&self.camp.join(format!("{name}.patch")), &diff);
    }

    /// Writes `file` in the campaign folder: `candidates` screened with `pairs` pairs each, the
    /// best one confirmed, receipts under `output`.
    fn campaign(&self, file: &str, candidates: &[&str], pairs: usize, output: &str) {
        let list: Vec<String> = candidates
            .iter()
            .map(|c| format!(r#"{{ "name": "{c}", "patch": "{c}.patch" }}"#))
            .collect();
        let text = format!(
            r#"{{ "name": "{name}", "repo": "../repo", "baseline": "main", "workload": "workload.json",
  "holdouts": "holdouts.json", "candidates": [{list}], "output": "{output}",
  "search": {{ "pairs": {pairs} }}, "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1 }} }}"#,
            name = file.trim_end_matches(".json"),
            list = list.join(", "),
        );
        write(&self.camp.join(file), &text);
    }

    /// `evo args` in the campaign folder, marked.
    fn evo(&self, args: &[&str]) -> Command {
        let mut cmd = evo();
        cmd.args(args)
            .current_dir(&self.camp)
            .env(MARK_VAR, &self.marker);
        cmd
    }

    /// `evo args` inside a namespace where `setup` mounted something over `dir`.
    fn evo_in_namespace(
        &self,
        setup: &str,
        dir: &Path,
        listing: Option<&Path>,
        args: &[&str],
    ) -> Command {
        let mut cmd = faults::evo_in_namespace(setup, dir, listing);
        cmd.args(args)
            .current_dir(&self.camp)
            .env(MARK_VAR, &self.marker);
        cmd
    }

    /// Starts `evo args` in its own process group (as a shell starts a job), its stderr kept in
    /// `<root>/<name>.stderr`.
    fn spawn(&self, name: &str, args: &[&str]) -> Running {
        let stderr = self.root.join(format!("{name}.stderr"));
        let child = self
            .evo(args)
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Running { child, stderr }
    }

    fn receipts(&self) -> PathBuf {
        self.camp.join("receipts")
    }

    /// Waits at most `limit` until none of this test's processes is left.
    fn no_process_left(&self, what: &str, limit: Duration) {
        faults::wait_for(what, limit, || {
            marked_processes(&self.marker).is_empty().then_some(())
        });
    }
}

fn summary(run_dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap()
}

/// Candidate name → status, with `confirmed` and `inconclusive` one status: which of the two a
/// real speedup's confirmation ends in is the machine's load (an A/A check it biases, an effect
/// it leaves unresolved); what a resumed run must keep is everything load cannot change.
fn outcomes(run_dir: &Path) -> Vec<(String, String)> {
    let s = summary(run_dir);
    let lines = journal_lines(run_dir);
    s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let status = match row["status"].as_str().unwrap() {
                "confirmed" | "inconclusive" => "confirmed or inconclusive",
                // Screening's ruling follows from the run's own timed pairs, which differ between
                // runs: the status must be the ruling of this run's pairs, whichever it is.
                ruled @ ("screened" | "slower" | "no_real_gain") => {
                    let index = row["index"].as_u64().unwrap();
                    assert_eq!(ruled, ruling_of(&lines, index), "{row:#}");
                    "screened or ruled out"
                }
                other => other,
            };
            (
                row["name"].as_str().unwrap().to_string(),
                status.to_string(),
            )
        })
        .collect()
}

/// What screening's looks make of candidate `index`'s journaled pairs, with the fixture's
/// settings (`search.pairs` and no `max_pairs`: looks up to the pairs it has; the default
/// minimum effect): the status it ends with when no confirmation took it.
fn ruling_of(lines: &[String], index: u64) -> &'static str {
    use evo::search::ruling::{self, Ruling};
    use evo::stats::sequential::Decision;
    let ratios: Vec<f64> = (lines.iter().map(|l| entry(l)))
        .filter(|e| e["entry"] == "screening_pair" && e["index"] == index)
        .map(|e| e["pair"]["ratio"].as_f64().unwrap())
        .collect();
    let min_effect = evo::spec::campaign::ConfirmSettings::default()
        .min_effect
        .get();
    match ruling::rule(&ratios, ratios.len(), ratios.len(), min_effect) {
        Ruling::Out(stop) if stop.decision == Decision::Slower => "slower",
        Ruling::Out(_) => "no_real_gain",
        _ => "screened",
    }
}

/// The common promises after a run that was cut short and resumed: what was journaled before
/// is an unchanged prefix, every screening pair is there exactly once, and only finished
/// confirmations have receipts.
fn check_resumed(run_dir: &Path, before: &[String], pairs: u64, note: &str) -> Vec<String> {
    let after = journal_lines(run_dir);
    assert!(after.len() >= before.len(), "{note}: the journal shrank");
    assert_eq!(
        &after[..before.len()],
        before,
        "{note}: the journal was rewritten"
    );
    for kind in ["started", "baseline_ready", "confirmation", "finished"] {
        assert_eq!(count(&after, kind), 1, "{note}: {kind} entries\n{after:#?}");
    }
    assert_eq!(count(&after, "candidate"), CANDIDATES.len(), "{note}");
    let s = summary(run_dir);
    for row in s["rows"].as_array().unwrap() {
        let expected: Vec<u64> = if row["status"] == "build_failed" {
            Vec::new()
        } else {
            (0..pairs).collect()
        };
        let index = row["index"].as_u64().unwrap();
        assert_eq!(
            pair_indices(&after, index),
            expected,
            "{note}: screening pairs of candidate {index}"
        );
    }
    // A receipt only in the folder of the confirmation that finished.
    let finished: Vec<PathBuf> = after
        .iter()
        .map(|l| entry(l))
        .filter(|e| e["entry"] == "confirmation")
        .map(|e| run_dir.join(e["run_dir"].as_str().unwrap()))
        .collect();
    for receipt in receipts_under(&run_dir.join("confirmations")) {
        assert!(
            finished.iter().any(|d| receipt.starts_with(d)),
            "{note}: a receipt of an unfinished confirmation: {receipt:?}"
        );
    }
    after
}

#[test]
fn sigkill_at_seeded_points_then_resume_ends_as_an_uninterrupted_run() {
    const PAIRS: u64 = 6;
    // The uninterrupted run: its statuses, and the journal positions to kill at.
    let reference = Fixture::new("sigkill-ref");
    reference.campaign("campaign.json", &CANDIDATES, PAIRS as usize, "receipts");
    let out = reference
        .evo(&["campaign", "run", "campaign.json"])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", text(&out));
    let ref_dir = only_run_dir(&reference.receipts()).unwrap();
    let expected = outcomes(&ref_dir);
    let lines = journal_lines(&ref_dir);
    let position = |kind: &str| {
        lines
            .iter()
            .position(|l| entry(l)["entry"] == kind)
            .unwrap()
    };
    // While the first candidate's pairs are measured: the second's pairs still follow.
    let first_pairs: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            entry(&lines[i])["entry"] == "screening_pair" && entry(&lines[i])["index"] == 1
        })
        .collect();
    let mut seeded = Seeded(0x5eed_f417);
    // (what, kill once the journal has this many lines, and wait for a confirmation's logs)
    let points = [
        ("baseline build", position("baseline_ready"), false),
        (
            "screening",
            first_pairs[seeded.below(first_pairs.len())],
            false,
        ),
        ("confirmation", position("confirmation_started") + 1, true),
        ("a seeded line", 1 + seeded.below(lines.len() - 1), false),
    ];
    for (what, after_lines, in_confirmation) in points {
        let note = format!("killed in {what} after {after_lines} journal lines");
        let fx = Fixture::new("sigkill");
        fx.campaign("campaign.json", &CANDIDATES, PAIRS as usize, "receipts");
        let repo_before = snapshot(&fx.repo);
        let mut evo_run = fx.spawn("first", &["campaign", "run", "campaign.json"]);
        let run_dir = faults::wait_for(&note, Duration::from_secs(120), || {
            let dir = only_run_dir(&fx.receipts())?;
            let confirming = !files_under(&dir.join("confirmations")).is_empty();
            (journal_lines(&dir).len() >= after_lines && (confirming || !in_confirmation))
                .then_some(dir)
        });
        evo_run.sigkill();
        let before = journal_lines(&run_dir);
        let reached = |kind: &str| count(&before, kind) > 0;
        let in_phase = match what {
            "baseline build" => !reached("baseline_ready"),
            "screening" => reached("warmups") && !reached("confirmation_started"),
            "confirmation" => reached("confirmation_started") && !reached("confirmation"),
            _ => true,
        };
        assert!(in_phase, "{note}: not killed in {what}\n{before:#?}");
        // A SIGKILLed evo orphans its helpers; they finish their command on their own.
        fx.no_process_left(&format!("{note}: orphaned helpers to finish"), ORPHANS);
        let out = fx
            .evo(&["campaign", "run", "campaign.json", "--resume", "latest"])
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 4)),
            "{note}\n{}",
            text(&out)
        );
        let after = check_resumed(&run_dir, &before, PAIRS, &note);
        // A confirmation cut short is accounted for, once.
        let cut_short = reached("confirmation_started") && !reached("confirmation");
        let discarded = count(&after, "confirmation_discarded");
        assert_eq!(discarded, usize::from(cut_short), "{note}");
        assert_eq!(outcomes(&run_dir), expected, "{note}\n{}", text(&out));
        assert_eq!(
            repo_before,
            snapshot(&fx.repo),
            "{note}: the repository changed"
        );
    }
}

#[test]
fn a_torn_last_journal_line_is_dropped_and_the_resumed_journal_stays_readable() {
    // SIGKILL or a power cut in the middle of an append leaves a line without its newline.
    const PAIRS: u64 = 6;
    let fx = Fixture::new("torn");
    fx.campaign("campaign.json", &CANDIDATES, PAIRS as usize, "receipts");
    let mut evo_run = fx.spawn("first", &["campaign", "run", "campaign.json"]);
    let run_dir = faults::wait_for("screening pairs", Duration::from_secs(120), || {
        let dir = only_run_dir(&fx.receipts())?;
        (count(&journal_lines(&dir), "screening_pair") >= 2).then_some(dir)
    });
    evo_run.sigkill();
    fx.no_process_left("orphaned helpers to finish", ORPHANS);
    let before = journal_lines(&run_dir);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(run_dir.join("journal.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut file, br#"{"entry":"screening_pa"#).unwrap();
    drop(file);
    let resume = || {
        fx.evo(&["campaign", "run", "campaign.json", "--resume", "latest"])
            .output()
            .unwrap()
    };
    let out = resume();
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", text(&out));
    // The journal is still a journal: the torn bytes are gone, not glued to the next entry.
    let glued: Vec<String> = journal_lines(&run_dir)
        .into_iter()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .collect();
    assert_eq!(glued, Vec::<String>::new(), "lines that are not JSON");
    check_resumed(&run_dir, &before, PAIRS, "after a torn line");
    let again = resume();
    assert_eq!(again.status.code(), out.status.code(), "{}", text(&again));
}

#[test]
fn ctrl_c_in_screening_stops_cleanly_and_the_campaign_resumes() {
    const PAIRS: u64 = 15;
    let fx = Fixture::new("ctrlc-campaign");
    fx.campaign("campaign.json", &CANDIDATES, PAIRS as usize, "receipts");
    let repo_before = snapshot(&fx.repo);
    let mut evo_run = fx.spawn("first", &["campaign", "run", "campaign.json"]);
    let run_dir = faults::wait_for("screening pairs", Duration::from_secs(120), || {
        let dir = only_run_dir(&fx.receipts())?;
        (count(&journal_lines(&dir), "screening_pair") >= 2).then_some(dir)
    });
    let before = journal_lines(&run_dir);
    evo_run.ctrl_c();
    let status = evo_run.wait("evo to stop after Ctrl-C", Duration::from_secs(15));
    let stderr = evo_run.stderr();
    assert_eq!(
        status.code(),
        Some(INTERRUPTED),
        "{}\n{stderr}",
        describe(status)
    );
    assert!(stderr.contains("interrupted"), "{stderr}");
    let after = journal_lines(&run_dir);
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the journal was rewritten"
    );
    let last = entry(after.last().unwrap());
    assert_eq!(last["entry"], "interrupted", "{after:#?}");
    fx.no_process_left(
        "evo's children to stop after Ctrl-C",
        Duration::from_secs(5),
    );
    assert_eq!(receipts_under(&run_dir), Vec::<PathBuf>::new());
    assert_eq!(repo_before, snapshot(&fx.repo), "the repository changed");
    let out = fx
        .evo(&["campaign", "run", "campaign.json", "--resume", "latest"])
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", text(&out));
    check_resumed(&run_dir, &after, PAIRS, "resumed after Ctrl-C");
    assert_eq!(repo_before, snapshot(&fx.repo), "the repository changed");
}

#[test]
fn ctrl_c_during_confirm_measurement_leaves_an_error_and_no_receipt() {
    let fx = Fixture::new("ctrlc-confirm");
    fx.campaign("campaign.json", &CANDIDATES, 5, "receipts");
    let repo_before = snapshot(&fx.repo);
    let args = ["confirm", "memo.patch", "--campaign", "campaign.json"];
    let mut evo_run = fx.spawn("confirm", &args);
    faults::wait_for("the measurement", Duration::from_secs(120), || {
        evo_run.stderr().contains("evo: measure").then_some(())
    });
    evo_run.ctrl_c();
    let status = evo_run.wait("evo to stop after Ctrl-C", Duration::from_secs(15));
    let stderr = evo_run.stderr();
    assert_eq!(
        status.code(),
        Some(INTERRUPTED),
        "{}\n{stderr}",
        describe(status)
    );
    assert!(stderr.contains("interrupted"), "{stderr}");
    let run_dir = only_run_dir(&fx.receipts()).unwrap();
    let error = std::fs::read_to_string(run_dir.join("error.txt")).unwrap_or_default();
    assert!(
        error.contains("interrupted"),
        "error.txt: {error:?}\n{stderr}"
    );
    assert_eq!(receipts_under(&run_dir), Vec::<PathBuf>::new());
    assert!(
        !run_dir.join("result.json").exists(),
        "a result without a verdict"
    );
    fx.no_process_left(
        "evo's children to stop after Ctrl-C",
        Duration::from_secs(5),
    );
    assert_eq!(repo_before, snapshot(&fx.repo), "the repository changed");
}

#[test]
fn the_trees_of_a_confirm_killed_outright_are_removed_by_the_next_confirm() {
    // A SIGKILLed confirmation cannot remove its temporary trees folder; nothing else would.
    let fx = Fixture::new("sigkill-confirm");
    fx.campaign("campaign.json", &CANDIDATES, 5, "receipts");
    // A temporary folder of this test's own, so other tests' confirmations are not in it.
    let tmp = fx.root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let trees = || -> Vec<PathBuf> {
        (std::fs::read_dir(&tmp).unwrap().flatten())
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains("evo-trees-"))
            .collect()
    };
    let args = ["confirm", "memo.patch", "--campaign", "campaign.json"];
    let stderr = fx.root.join("killed.stderr");
    let child = (fx.evo(&args).env("TMPDIR", &tmp))
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut evo_run = Running { child, stderr };
    faults::wait_for("the measurement", Duration::from_secs(120), || {
        evo_run.stderr().contains("evo: measure").then_some(())
    });
    evo_run.sigkill();
    fx.no_process_left("the killed confirm's helpers to finish", ORPHANS);
    let left = trees();
    assert_eq!(left.len(), 1, "{left:?}");
    // The next confirmation, even one refused at once, removes it (and keeps none of its own).
    let out = (fx.evo(&["confirm", "broken.patch", "--campaign", "campaign.json"]))
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(&out));
    assert_eq!(trees(), Vec::<PathBuf>::new(), "{}", text(&out));
}

/// The failed build gate of a rejected confirmation, after checking the common promises.
fn rejected_build(fx: &Fixture, out: &Output, repo_before: &Snapshot) {
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(out));
    assert_eq!(repo_before, &snapshot(&fx.repo), "the repository changed");
    let run_dir = only_run_dir(&fx.receipts()).unwrap();
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("result.json")).unwrap())
            .unwrap();
    assert_eq!(result["verdict"], "rejected");
    let gate = result["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "build")
        .unwrap_or_else(|| panic!("no build gate: {result:#}"));
    assert_eq!(gate["status"], "failed", "{gate:#}");
    let log = std::fs::read_to_string(run_dir.join("logs/candidate/build.stderr.log")).unwrap();
    assert!(log.contains("No space left on device"), "{log}");
    assert!(
        gate["detail"].as_str().unwrap().contains("candidate"),
        "{gate:#}"
    );
}

#[test]
fn a_build_that_fills_its_tree_disk_is_the_candidates_build_failure() {
    if !faults::namespaces_work() {
        eprintln!("skipped: no user and mount namespaces here");
        return;
    }
    let fx = Fixture::new("full-tree");
    fx.campaign("campaign.json", &CANDIDATES, 5, "receipts");
    // The candidate's tree alone is a small disk; the baseline's tree and $TMPDIR are not.
    let work = fx.root.join("work");
    let candidate = work.join(evo::tree::dir_name("candidate"));
    std::fs::create_dir_all(&candidate).unwrap();
    let repo_before = snapshot(&fx.repo);
    let args = [
        "confirm",
        "fill.patch",
        "--campaign",
        "campaign.json",
        "--work-dir",
    ];
    let out = fx
        .evo_in_namespace(&faults::tmpfs("8m"), &candidate, None, &args)
        .arg(&work)
        .output()
        .unwrap();
    rejected_build(&fx, &out, &repo_before);
    assert!(String::from_utf8_lossy(&out.stdout).contains("No space left on device"));
}

#[test]
fn a_build_that_fills_the_temp_disk_is_still_the_candidates_build_failure() {
    if !faults::namespaces_work() {
        eprintln!("skipped: no user and mount namespaces here");
        return;
    }
    let fx = Fixture::new("full-tmp");
    fx.campaign("campaign.json", &CANDIDATES, 5, "receipts");
    // The trees (and evo's temporary files) on one small disk. The candidate fills it once the
    // baseline has built, so the baseline's build cannot be the one that meets the full disk.
    let late = "\tfor i in $$(seq 100); do [ -x ../baseline/prog ] && break; sleep 0.05; done; sleep 1\n\thead -c 64000000 /dev/zero > big.bin\n\tcc -O2";
    fx.patch("fill-late", &[("Makefile", "\tcc -O2", late)]);
    let tmp = fx.root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let repo_before = snapshot(&fx.repo);
    let args = ["confirm", "fill-late.patch", "--campaign", "campaign.json"];
    let out = fx
        .evo_in_namespace(&faults::tmpfs("8m"), &tmp, None, &args)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(!text(&out).contains("panicked"), "{}", text(&out));
    rejected_build(&fx, &out, &repo_before);
}

#[test]
fn a_baseline_build_starved_by_the_candidates_is_built_again_alone_before_any_blame() {
    if !faults::namespaces_work() {
        eprintln!("skipped: no user and mount namespaces here");
        return;
    }
    let fx = Fixture::new("starved");
    // This baseline pauses before compiling, so the candidate's build fills the shared disk
    // first and the baseline's compiler meets the full disk.
    let makefile = std::fs::read_to_string(fx.repo.join("Makefile")).unwrap();
    write(
        &fx.repo.join("Makefile"),
        &makefile.replace("\tcc -O2", "\tsleep 2\n\tcc -O2"),
    );
    util::git(&fx.repo, &["commit", "-qam", "a slower build"]);
    fx.campaign("campaign.json", &CANDIDATES, 5, "receipts");
    let early = "\thead -c 64000000 /dev/zero > big.bin\n\tcc -O2";
    fx.patch("fill-early", &[("Makefile", "\tsleep 2\n\tcc -O2", early)]);
    let tmp = fx.root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let repo_before = snapshot(&fx.repo);
    let args = ["confirm", "fill-early.patch", "--campaign", "campaign.json"];
    let out = fx
        .evo_in_namespace(&faults::tmpfs("8m"), &tmp, None, &args)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    // Not "the baseline itself fails" (exit 2): built alone, it succeeds, and the candidate's
    // build is the one that failed.
    rejected_build(&fx, &out, &repo_before);
    let run_dir = only_run_dir(&fx.receipts()).unwrap();
    let result = std::fs::read_to_string(run_dir.join("result.json")).unwrap();
    assert!(result.contains("succeeded alone"), "{}", text(&out));
    assert!(
        run_dir
            .join("logs/baseline-alone/build-alone.stdout.log")
            .is_file(),
        "{}",
        text(&out)
    );
}

/// Runs `args` in a namespace where `setup` mounted something over `output` (the campaign's
/// receipt folder); returns the output and every path that was under `output` at the end.
fn run_over_output(fx: &Fixture, setup: &str, output: &Path, args: &[&str]) -> (Output, String) {
    let listing = fx.root.join("listing.txt");
    let out = fx
        .evo_in_namespace(setup, output, Some(&listing), args)
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(faults::SETUP_FAILED),
        "{}",
        text(&out)
    );
    let paths = std::fs::read_to_string(&listing).unwrap_or_default();
    (out, paths)
}

/// A clear error: the exit code, the error line naming `path` and `reason`, no panic, no
/// result or receipt in `paths` (half-written under a temporary name or whole).
fn clear_output_error(out: &Output, codes: &[i32], path: &Path, reason: &str, paths: &str) {
    let all = text(out);
    assert!(
        out.status.code().is_some_and(|c| codes.contains(&c)),
        "expected exit code {codes:?}\n{all}"
    );
    assert!(!all.contains("panicked"), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = stderr
        .find("error: ")
        .map(|at| &stderr[at..])
        .unwrap_or_else(|| panic!("no error line\n{all}"));
    assert!(error.contains(reason), "{reason:?} missing\n{all}");
    let dir = path.display().to_string();
    assert!(error.contains(&dir), "{dir} missing\n{all}");
    for name in ["result.json", "receipt", "summary.json", "pr_body.md"] {
        assert!(!paths.contains(name), "{name} was written:\n{paths}\n{all}");
    }
}

impl Fixture {
    /// A fixture whose campaign (`campaign.json`, 5 screening pairs) writes to the folder
    /// `<root>/out`, created here, over which a test mounts its fault.
    fn with_output_folder(test: &str, candidates: &[&str]) -> (Fixture, PathBuf) {
        let fx = Fixture::new(test);
        let output = fx.root.join("out");
        std::fs::create_dir_all(&output).unwrap();
        fx.campaign(
            "campaign.json",
            candidates,
            5,
            &output.display().to_string(),
        );
        (fx, output)
    }
}

/// `evo confirm` and `evo campaign run` on the campaign whose output is `output`.
const BOTH: [&[&str]; 2] = [
    &["confirm", "memo.patch", "--campaign", "campaign.json"],
    &["campaign", "run", "campaign.json"],
];

#[test]
fn a_full_output_disk_is_a_clear_error_before_anything_runs() {
    if !faults::namespaces_work() {
        eprintln!("skipped: no user and mount namespaces here");
        return;
    }
    let (fx, output) = Fixture::with_output_folder("full-output", &CANDIDATES);
    let repo_before = snapshot(&fx.repo);
    for args in BOTH {
        let setup = faults::full_tmpfs("1m");
        let (out, paths) = run_over_output(&fx, &setup, &output, args);
        let codes = [USAGE_ERROR, INTERNAL_ERROR];
        clear_output_error(&out, &codes, &output, "No space left on device", &paths);
        assert!(
            !paths.contains(".log"),
            "{args:?} built something:\n{paths}"
        );
        assert_eq!(repo_before, snapshot(&fx.repo), "the repository changed");
    }
}

#[test]
fn an_output_disk_filled_by_a_noisy_build_is_a_clear_error() {
    if !faults::namespaces_work() {
        eprintln!("skipped: no user and mount namespaces here");
        return;
    }
    // The candidate's build prints 3 MB; its log goes to the receipt folder, a 1 MB disk.
    let (fx, output) = Fixture::with_output_folder("noisy-output", &["noisy"]);
    let repo_before = snapshot(&fx.repo);
    let confirm = ["confirm", "noisy.patch", "--campaign", "campaign.json"];
    for args in [&confirm[..], BOTH[1]] {
        let (out, paths) = run_over_output(&fx, &faults::tmpfs("1m"), &output, args);
        let reason = "No space left on device";
        clear_output_error(&out, &[INTERNAL_ERROR], &output, reason, &paths);
        assert_eq!(repo_before, snapshot(&fx.repo), "the repository changed");
    }
}

#[test]
fn a_read_only_receipt_folder_is_refused_before_anything_builds() {
    if !faults::namespaces_work() {
        eprintln!("skipped: no user and mount namespaces here");
        return;
    }
    let (fx, output) = Fixture::with_output_folder("read-only", &CANDIDATES);
    let repo_before = snapshot(&fx.repo);
    for args in BOTH {
        let (out, paths) = run_over_output(&fx, faults::READ_ONLY, &output, args);
        clear_output_error(&out, &[USAGE_ERROR], &output, "cannot write", &paths);
        let logs: Vec<PathBuf> = files_under(&fx.root)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        assert_eq!(logs, Vec::<PathBuf>::new(), "{args:?} built something");
        assert_eq!(repo_before, snapshot(&fx.repo), "the repository changed");
    }
}

#[test]
fn a_receipt_folder_under_a_regular_file_is_refused_before_anything_builds() {
    let fx = Fixture::new("under-file");
    let file = fx.root.join("not-a-folder");
    write(&file, "a regular file\n");
    let output = file.join("receipts");
    fx.campaign(
        "campaign.json",
        &CANDIDATES,
        5,
        &output.display().to_string(),
    );
    let repo_before = snapshot(&fx.repo);
    for args in BOTH {
        let out = fx.evo(args).output().unwrap();
        clear_output_error(&out, &[USAGE_ERROR], &file, "cannot write", "");
        let logs: Vec<PathBuf> = files_under(&fx.root)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        assert_eq!(logs, Vec::<PathBuf>::new(), "{args:?} built something");
        assert_eq!(repo_before, snapshot(&fx.repo), "the repository changed");
        assert!(file.is_file());
    }
}

/// Starts `first`, waits until `started` says it is under way, runs `second` on the same
/// repository: refused at once as busy, naming the first's pid; the first ends as usual.
fn second_is_refused_while_first_runs(
    fx: &Fixture,
    first: &[&str],
    started: impl Fn(&Running) -> bool,
    second: &[&str],
) {
    let repo_before = snapshot(&fx.repo);
    let mut running = fx.spawn("first", first);
    faults::wait_for(
        "the first evo to get going",
        Duration::from_secs(120),
        || started(&running).then_some(()),
    );
    let out = fx.evo(second).output().unwrap();
    let first_ended = running.child.try_wait().unwrap();
    assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("busy"), "{stderr}");
    let pid = running.pid().to_string();
    assert!(stderr.contains(&pid), "no pid {pid}: {stderr}");
    assert!(
        first_ended.is_none(),
        "the first evo ended before the second was refused"
    );
    let status = running.wait("the first evo to finish", Duration::from_secs(300));
    let first_stderr = running.stderr();
    assert!(
        matches!(status.code(), Some(0 | 4)),
        "the first evo: {}\n{first_stderr}",
        describe(status)
    );
    assert_eq!(repo_before, snapshot(&fx.repo), "the repository changed");
}

fn campaign_started(fx: &Fixture, output: &str) -> impl Fn(&Running) -> bool {
    let output = fx.camp.join(output);
    move |_| only_run_dir(&output).is_some_and(|d| count(&journal_lines(&d), "started") == 1)
}

#[test]
fn two_campaigns_on_one_repository_the_second_is_refused_as_busy() {
    let fx = Fixture::new("busy-campaigns");
    fx.campaign("campaign.json", &CANDIDATES, 15, "receipts");
    fx.campaign("other.json", &["memo"], 5, "receipts-other");
    second_is_refused_while_first_runs(
        &fx,
        &["campaign", "run", "campaign.json"],
        campaign_started(&fx, "receipts"),
        &["campaign", "run", "other.json"],
    );
    let logs = files_under(&fx.camp.join("receipts-other"));
    assert!(
        logs.iter()
            .all(|p| p.extension().is_none_or(|e| e != "log")),
        "{logs:?}"
    );
}

#[test]
fn a_confirm_during_a_campaign_on_one_repository_is_refused_as_busy() {
    let fx = Fixture::new("busy-campaign-confirm");
    fx.campaign("campaign.json", &CANDIDATES, 15, "receipts");
    fx.campaign("other.json", &["memo"], 5, "receipts-other");
    second_is_refused_while_first_runs(
        &fx,
        &["campaign", "run", "campaign.json"],
        campaign_started(&fx, "receipts"),
        &["confirm", "memo.patch", "--campaign", "other.json"],
    );
}

#[test]
fn a_campaign_during_a_confirm_on_one_repository_is_refused_as_busy() {
    let fx = Fixture::new("busy-confirm-campaign");
    fx.campaign("campaign.json", &CANDIDATES, 5, "receipts");
    fx.campaign("other.json", &["memo"], 5, "receipts-other");
    second_is_refused_while_first_runs(
        &fx,
        &["confirm", "memo.patch", "--campaign", "campaign.json"],
        |r: &Running| r.stderr().contains("evo: build"),
        &["campaign", "run", "other.json"],
    );
}

/// A timed command that reads an input neither tree can see (here a path that does not exist; on
/// real code, a file under `/tmp`, which the sandbox hides) fails for the baseline as for the
/// candidate: that is the setup, not the patch. The candidate's warmup fails first; evo then runs
/// the baseline's same run alone, sees it fail too, and stops with exit 2 and the cause in the
/// user's terms, signing nothing (it used to sign "rejected").
#[test]
fn a_timed_run_that_fails_in_both_trees_is_a_setup_error_not_a_rejection() {
    let fx = Fixture::new("setup-error");
    let hidden = "cat /evo-test-hidden-input/data.bin >/dev/null && ./bench/run.sh 100000 {seed}";
    write(
        &fx.camp.join("workload.json"),
        &WORKLOAD.replace("./bench/run.sh 100000 {seed}", hidden),
    );
    fx.campaign("campaign.json", &CANDIDATES, 5, "receipts");
    let out = fx
        .evo(&["confirm", "memo.patch", "--campaign", "campaign.json"])
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(USAGE_ERROR), "{all}");
    // The differential runs the timed command once per tree before anything is timed: the
    // baseline fails there too, beside the candidate and again alone.
    assert!(all.contains("the baseline itself fails"), "{all}");
    assert!(all.contains("/evo-test-hidden-input/data.bin"), "{all}");
    assert!(all.contains("sandbox.read_only"), "{all}");
    let run_dir = only_run_dir(&fx.receipts()).unwrap();
    assert_eq!(receipts_under(&run_dir), Vec::<PathBuf>::new(), "{all}");
}
