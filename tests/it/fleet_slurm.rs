//! A campaign's screening and confirmation as Slurm jobs on the local two-node cluster
//! (docs/design.md §2.8), on the C campaign with a `fleet` section: the candidate's checks and
//! screening pairs run as one job on a node, whose journal comes back, is checked and ranks the
//! candidate, with the node it ran on recorded; a confirmation job cancelled mid-run from outside
//! (as an administrator or a lost node would end it) is submitted again, and its result comes
//! back unsigned, is checked and signed by the coordinator, and verifies with `--recompute`; a
//! coordinator killed while its screening or confirmation job runs reattaches to that job on
//! `--resume latest`; Ctrl-C cancels the campaign's jobs and exits 130, and a resume submits them
//! again. With `--json`, every line of the coordinator's stream matches `evo schema events`, and
//! each job is followed in it from submission to its end, with its id, stage and node.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use evo::fleet::slurm::{JobId, JobInfo, JobState, Slurm};
use serde_json::Value;
use util::cpairs::{HOLDOUTS, HOT_LINE, MEMO_EDITS, WORKLOAD};
use util::{evo, fixture_repo, patch_by_editing, text, write};

fn journal(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn run_dir(receipts: &Path) -> Option<PathBuf> {
    std::fs::read_dir(receipts)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.join("journal.jsonl").is_file())
}

/// The ids of the jobs of `stage` (`screening`, `confirm`) the journal says were submitted.
fn submitted(entries: &[Value], stage: &str) -> Vec<u64> {
    (entries.iter())
        .filter(|e| e["entry"] == "job_submitted" && e["stage"] == stage)
        .map(|e| e["job_id"].as_u64().unwrap())
        .collect()
}

fn ended<'a>(entries: &'a [Value], stage: &str) -> Vec<&'a Value> {
    (entries.iter())
        .filter(|e| e["entry"] == "job_ended" && e["stage"] == stage)
        .collect()
}

/// Waits for a campaign run that must complete: any verdict (exit 0, 3 or 4; these tests are
/// about the jobs, not the speedup), not a usage or internal error.
fn completed(run: Reaped) -> Output {
    let out = run.output();
    assert!(
        matches!(out.status.code(), Some(0 | 3 | 4)),
        "{}",
        text(&out)
    );
    out
}

/// The one `event` line of the stream about `job`.
fn job_event<'a>(events: &'a [Value], event: &str, job: u64) -> &'a Value {
    let found: Vec<&Value> = (events.iter())
        .filter(|e| e["event"] == event && e["job_id"] == job)
        .collect();
    assert_eq!(found.len(), 1, "one {event} of job {job}: {events:#?}");
    found[0]
}

/// The stream follows `job` of candidate 1 (`memo`) in `stage` from its submission
/// (`reattached`: by an earlier session) to its end, on one of the cluster's nodes; returns its
/// `job_ended` line.
fn followed<'a>(events: &'a [Value], stage: &str, job: u64, reattached: bool) -> &'a Value {
    let submitted = job_event(events, "job_submitted", job);
    let started = job_event(events, "job_started", job);
    let ended = job_event(events, "job_ended", job);
    for line in [submitted, started, ended] {
        assert_eq!(line["candidate"]["index"], 1, "{line}");
        assert_eq!(line["candidate"]["name"], "memo", "{line}");
        assert_eq!(line["stage"], stage, "{line}");
    }
    assert_eq!(submitted["reattached"], reattached, "{submitted}");
    let node = started["node"].as_str().unwrap();
    assert!(["evo-n1", "evo-n2"].contains(&node), "{started}");
    assert_eq!(ended["node"], node, "{ended}");
    let position = |line: &Value| events.iter().position(|e| e == line).unwrap();
    assert!(position(submitted) < position(started) && position(started) < position(ended));
    ended
}

/// A child process that is killed and reaped at the latest when dropped.
struct Reaped(Option<std::process::Child>);

impl Reaped {
    fn running(&mut self) -> bool {
        (self.0.as_mut()).is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    fn output(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The C campaign with one real speedup and a `fleet` section, in a temp folder.
struct Fixture {
    dir: tempfile::TempDir,
    camp: PathBuf,
    conf: PathBuf,
}

impl Fixture {
    /// `max_requeues`: how often a job without a result is submitted again.
    fn new(conf: PathBuf, max_requeues: u32) -> Fixture {
        Fixture::with(conf, max_requeues, &[])
    }

    /// The campaign with `more` candidates after `memo`: (name, patch text).
    fn with(conf: PathBuf, max_requeues: u32, more: &[(&str, String)]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo("cpairs", &repo);
        let camp = dir.path().join("camp");
        write(&camp.join("workload.json"), WORKLOAD);
        write(&camp.join("holdouts.json"), HOLDOUTS);
        write(
            &camp.join("memo.patch"),
            &patch_by_editing(&repo, &MEMO_EDITS),
        );
        let mut candidates = vec![r#"{ "name": "memo", "patch": "memo.patch" }"#.to_string()];
        for (name, patch) in more {
            write(&camp.join(format!("{name}.patch")), patch);
            candidates.push(format!(
                r#"{{ "name": "{name}", "patch": "{name}.patch" }}"#
            ));
        }
        let candidates = candidates.join(", ");
        let campaign = format!(
            r#"{{ "name": "cpairs", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json",
  "candidates": [{candidates}],
  "search": {{ "pairs": 3 }}, "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1 }},
  "fleet": {{ "engine": "slurm", "max_jobs": 2, "max_requeues": {max_requeues} }} }}"#
        );
        write(&camp.join("campaign.json"), &campaign);
        Fixture { dir, camp, conf }
    }

    fn keys(&self) -> PathBuf {
        self.dir.path().join("keys")
    }

    /// `evo campaign run` on the campaign, as the coordinator, with `extra` arguments.
    fn start(&self, extra: &[&str]) -> Reaped {
        let child = evo()
            .args(["campaign", "run"])
            .arg(self.camp.join("campaign.json"))
            .args(extra)
            .env("EVO_KEY_DIR", self.keys())
            .env("SLURM_CONF", &self.conf)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        Reaped(Some(child))
    }

    /// The first job of `stage` the campaign submits, once it runs.
    fn first_job_running(&self, slurm: &Slurm, coordinator: &mut Reaped, stage: &str) -> JobId {
        let receipts = self.camp.join("receipts");
        let started = Instant::now();
        let first = loop {
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "no job was submitted"
            );
            let journaled =
                run_dir(&receipts).and_then(|d| submitted(&journal(&d), stage).first().copied());
            if let Some(id) = journaled {
                break JobId(id);
            }
            assert!(coordinator.running(), "evo ended early");
            std::thread::sleep(Duration::from_millis(200));
        };
        loop {
            let info = slurm.info(first).unwrap();
            assert!(!info.state.is_final(), "job {first} ended first: {info:?}");
            if info.state == JobState::Running {
                return first;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The one confirmation the run recorded: its folder, and its result.
    fn confirmation(&self, run: &Path) -> (PathBuf, Value) {
        let entries = journal(run);
        let confirmations: Vec<&Value> = (entries.iter())
            .filter(|e| e["entry"] == "confirmation")
            .collect();
        assert_eq!(confirmations.len(), 1, "{entries:#?}");
        let folder = run.join(confirmations[0]["run_dir"].as_str().unwrap());
        let bytes = std::fs::read(folder.join("result.json")).unwrap();
        (folder, serde_json::from_slice(&bytes).unwrap())
    }

    /// The confirmation's receipt verifies with the coordinator's key, every figure recomputed.
    fn verifies(&self, confirmation: &Path) {
        let verify = evo()
            .args(["receipt", "verify"])
            .arg(confirmation.join(evo::receipt::RECEIPT_FILE))
            .arg("--recompute")
            .arg("--key")
            .arg(self.keys().join(evo::receipt::keys::PUBLIC_KEY_FILE))
            .output()
            .unwrap();
        assert!(verify.status.success(), "{}", text(&verify));
    }
}

#[test]
fn a_campaign_confirms_on_slurm_resubmits_a_cancelled_job_and_signs_a_checked_result() {
    let Some(conf) = util::slurm::cluster_conf() else {
        return;
    };
    let slurm = Slurm::new(Some(&conf));
    let fx = Fixture::new(conf, 1);
    let mut coordinator = fx.start(&["--json"]);
    // The first confirmation job, cancelled from outside once it runs.
    let first = fx.first_job_running(&slurm, &mut coordinator, "confirm");
    std::thread::sleep(Duration::from_secs(1));
    slurm.cancel(&[first]).unwrap();

    let out = completed(coordinator);
    let events = util::schema::events(&out);
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let entries = journal(&run);
    let jobs = submitted(&entries, "confirm");
    assert_eq!(
        jobs.len(),
        2,
        "one job cancelled, one submitted again: {entries:#?}"
    );
    assert_eq!(jobs[0], first.0);
    let ended = ended(&entries, "confirm");
    assert_eq!(ended.len(), 2, "{entries:#?}");
    assert_eq!(ended[0]["counted"], true);
    assert!(
        ended[0]["reason"].as_str().unwrap().contains("cancelled"),
        "{entries:#?}"
    );
    assert_eq!(ended[1]["counted"], false);

    // The signed confirmation records the job and node it ran in.
    let (confirmation, result) = fx.confirmation(&run);
    let job = &result["environment"]["job"];
    assert_eq!(job["job_id"], jobs[1], "{job}");
    assert_eq!(job["attempt"], 2, "{job}");
    assert!(
        ["evo-n1", "evo-n2"].contains(&job["node"].as_str().unwrap()),
        "{job}"
    );
    fx.verifies(&confirmation);

    // The stream followed both jobs: the cancelled one was submitted again, the second's result
    // was signed, and its node is the one the signed result records.
    let cancelled = followed(&events, "confirm", jobs[0], false);
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["outcome"], "requeued", "{cancelled}");
    assert_eq!(
        (&cancelled["attempt"], &cancelled["requeues"]),
        (&1.into(), &0.into())
    );
    let done = followed(&events, "confirm", jobs[1], false);
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["outcome"], "done", "{done}");
    assert_eq!(
        (&done["attempt"], &done["requeues"]),
        (&2.into(), &1.into())
    );
    assert_eq!(done["node"], job["node"], "{done}");
    assert_eq!(events.last().unwrap()["event"], "final");
    // The node wrote its result into the shared folder; it was moved out to be signed.
    let attempt = run.join("fleet/candidate_1/attempt_2");
    assert!(attempt.join("request.json").is_file());
    assert_eq!(std::fs::read_dir(attempt.join("out")).unwrap().count(), 0);
}

/// Kills the coordinator (SIGKILL: no chance to cancel anything) once its first job of `stage`
/// runs, and resumes it to the end: the resumed run follows that job again, reattached, to its
/// result, and submits no other job of `stage`. Returns the fixture, the job and the run folder.
fn killed_and_resumed(stage: &str) -> Option<(Fixture, JobId, PathBuf)> {
    let conf = util::slurm::cluster_conf()?;
    let slurm = Slurm::new(Some(&conf));
    let fx = Fixture::new(conf, 1);
    let mut coordinator = fx.start(&[]);
    let first = fx.first_job_running(&slurm, &mut coordinator, stage);
    drop(coordinator);
    assert!(
        !slurm.info(first).unwrap().state.is_final(),
        "the job outlives its coordinator"
    );
    let out = completed(fx.start(&["--resume", "latest", "--json"]));
    // The resumed coordinator says it follows the job again rather than submitting it.
    let events = util::schema::events(&out);
    let ended = followed(&events, stage, first.0, true);
    assert_eq!(ended["outcome"], "done", "{ended}");
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let entries = journal(&run);
    assert_eq!(
        submitted(&entries, stage),
        [first.0],
        "submitted again: {entries:#?}"
    );
    Some((fx, first, run))
}

#[test]
fn a_coordinator_killed_while_its_job_runs_reattaches_on_resume_instead_of_submitting_again() {
    let Some((fx, first, run)) = killed_and_resumed("confirm") else {
        return;
    };
    let (confirmation, result) = fx.confirmation(&run);
    assert_eq!(result["environment"]["job"]["job_id"], first.0);
    assert_eq!(result["environment"]["job"]["attempt"], 1);
    fx.verifies(&confirmation);
}

/// Ctrl-C once the campaign's first job of `stage` runs: the job is cancelled, journaled as ended
/// without counting, and the campaign exits 130; the resumed run submits that stage's job again,
/// once, and goes to the end. Returns the fixture and the run folder.
fn ctrl_c_then_resumed(stage: &str) -> Option<(Fixture, PathBuf)> {
    let conf = util::slurm::cluster_conf()?;
    let slurm = Slurm::new(Some(&conf));
    let fx = Fixture::new(conf, 1);
    let mut coordinator = fx.start(&["--json"]);
    let first = fx.first_job_running(&slurm, &mut coordinator, stage);
    let out = signalled(coordinator, "-INT");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let events = util::schema::events(&out);
    let cancelled = job_event(&events, "job_ended", first.0);
    assert_eq!(cancelled["outcome"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["stage"], stage, "{cancelled}");
    assert_eq!(events.last().unwrap()["exit_code"], 130);
    let state = slurm.info(first).unwrap().state;
    assert!(
        matches!(state, JobState::Cancelled | JobState::Other(_)),
        "job {first} was not cancelled: {state:?}"
    );
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let entries = journal(&run);
    let ended = ended(&entries, stage);
    assert_eq!(ended.len(), 1, "{entries:#?}");
    assert_eq!(ended[0]["counted"], false, "{entries:#?}");

    completed(fx.start(&["--resume", "latest"]));
    let entries = journal(&run);
    assert_eq!(submitted(&entries, stage).len(), 2, "{entries:#?}");
    Some((fx, run))
}

#[test]
fn ctrl_c_cancels_the_campaigns_jobs_exits_130_and_resume_submits_them_again_uncounted() {
    let Some((fx, run)) = ctrl_c_then_resumed("confirm") else {
        return;
    };
    // The resumed run submitted the cancelled confirmation again, as its second attempt.
    let (confirmation, result) = fx.confirmation(&run);
    assert_eq!(result["environment"]["job"]["attempt"], 2);
    fx.verifies(&confirmation);
}

#[test]
fn ctrl_c_during_screening_cancels_its_job_and_resume_screens_again_from_scratch() {
    let Some((_fx, run)) = ctrl_c_then_resumed("screening") else {
        return;
    };
    let entries = journal(&run);
    let screened = screening_jobs(&entries);
    assert_eq!(screened.len(), 1, "{entries:#?}");
    assert_eq!(screened[0]["attempt"], 2, "{entries:#?}");
    let pairs = (entries.iter())
        .filter(|e| e["entry"] == "screening_pair")
        .count();
    assert_eq!(pairs, 3, "{entries:#?}");
}

/// With `max_requeues` 0, cancels the campaign's first job of `stage` once it runs: the candidate
/// ends `inconclusive`, saying why, after that one job. Returns the run's journal.
fn given_up_after_one_job(stage: &str) -> Option<Vec<Value>> {
    let conf = util::slurm::cluster_conf()?;
    let slurm = Slurm::new(Some(&conf));
    let fx = Fixture::new(conf, 0);
    let mut coordinator = fx.start(&[]);
    let first = fx.first_job_running(&slurm, &mut coordinator, stage);
    slurm.cancel(&[first]).unwrap();
    let out = coordinator.output();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let entries = journal(&run);
    assert_eq!(submitted(&entries, stage), [first.0], "{entries:#?}");
    let summary = summary(&run);
    let row = &summary["rows"][0];
    assert_eq!(row["status"], "inconclusive", "{summary:#}");
    let reason = row["reason"].as_str().unwrap();
    assert!(
        reason.contains("no result after 1 Slurm jobs") && reason.contains("cancelled"),
        "{reason}"
    );
    Some(entries)
}

#[test]
fn a_candidate_whose_jobs_all_end_without_a_result_ends_inconclusive_with_the_reason() {
    given_up_after_one_job("confirm");
}

#[test]
fn a_candidate_whose_screening_jobs_all_end_without_a_result_is_never_confirmed() {
    let Some(entries) = given_up_after_one_job("screening") else {
        return;
    };
    assert!(submitted(&entries, "confirm").is_empty(), "{entries:#?}");
    assert!(
        !entries.iter().any(|e| e["entry"] == "screening_pair"),
        "{entries:#?}"
    );
}

/// The journal's `screening_job` entries: which job screened which candidate, on which node.
/// A patch of the fixture repository made by `edits`, for a campaign's further candidates.
fn fixture_patch(edits: &[(&str, &str, &str)]) -> String {
    let repo = tempfile::tempdir().unwrap();
    fixture_repo("cpairs", repo.path());
    patch_by_editing(repo.path(), edits)
}

/// The campaign run's `summary.json`.
fn summary(run: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap()).unwrap()
}

fn screening_jobs(entries: &[Value]) -> Vec<&Value> {
    (entries.iter())
        .filter(|e| e["entry"] == "screening_job")
        .collect()
}

#[test]
fn a_candidates_checks_and_screening_pairs_run_as_one_job_whose_checked_journal_ranks_it() {
    let Some(conf) = util::slurm::cluster_conf() else {
        return;
    };
    let fx = Fixture::new(conf, 1);
    let out = completed(fx.start(&["--json"]));
    let events = util::schema::events(&out);
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let entries = journal(&run);
    let jobs = submitted(&entries, "screening");
    assert_eq!(jobs.len(), 1, "one screening job: {entries:#?}");
    let ended = followed(&events, "screening", jobs[0], false);
    assert_eq!(ended["outcome"], "done", "{ended}");

    // The node the job ran on and its machine are recorded with the screening it returned.
    let screened = screening_jobs(&entries);
    assert_eq!(screened.len(), 1, "{entries:#?}");
    let screened = screened[0];
    assert_eq!(screened["job_id"], jobs[0], "{screened}");
    assert_eq!(screened["node"], ended["node"], "{screened}");
    assert!(screened["machine"]["logical_cores"].as_u64().unwrap() > 0);
    let kept = run.join(screened["run_dir"].as_str().unwrap());
    assert!(kept.join("journal.jsonl").is_file(), "{}", kept.display());

    // Its pairs were journaled here, once each, and ranked the candidate for confirmation.
    let pairs: Vec<&Value> = (entries.iter())
        .filter(|e| e["entry"] == "screening_pair")
        .collect();
    assert_eq!(pairs.len(), 3, "{entries:#?}");
    let position = |e: &Value| entries.iter().position(|x| x == e).unwrap();
    assert!(position(screened) < position(pairs[0]));
    let status = (entries.iter())
        .find(|e| e["entry"] == "status" && e["status"] == "screened")
        .unwrap();
    let reason = status["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(
            "Slurm job {} on {}",
            jobs[0],
            ended["node"].as_str().unwrap()
        )),
        "{reason}"
    );
    assert!(
        !entries.iter().any(|e| e["entry"] == "baseline_ready"),
        "the coordinator built no baseline: {entries:#?}"
    );
    assert_eq!(submitted(&entries, "confirm").len(), 1, "{entries:#?}");
    // The screening job went first, and the confirmation ranked on it came after its end.
    let confirm_job = submitted(&entries, "confirm")[0];
    let started = job_event(&events, "job_submitted", confirm_job);
    let at = |line: &Value| events.iter().position(|e| e == line).unwrap();
    assert!(at(ended) < at(started));
}

#[test]
fn a_coordinator_killed_while_a_screening_job_runs_reattaches_to_it_on_resume() {
    let Some((_fx, _first, run)) = killed_and_resumed("screening") else {
        return;
    };
    let entries = journal(&run);
    let pairs = (entries.iter())
        .filter(|e| e["entry"] == "screening_pair")
        .count();
    assert_eq!(pairs, 3, "no pair lost or counted twice: {entries:#?}");
    assert_eq!(screening_jobs(&entries).len(), 1, "{entries:#?}");
}

#[test]
fn a_candidate_that_fails_its_checks_on_a_node_ends_with_the_nodes_reason_and_no_pairs() {
    let Some(conf) = util::slurm::cluster_conf() else {
        return;
    };
    // A second candidate whose build fails (it calls a function nobody defines).
    let broken = fixture_patch(&[("prog.c", HOT_LINE, "        total += no_such_hash(v);")]);
    let fx = Fixture::with(conf, 1, &[("broken", broken)]);
    completed(fx.start(&[]));
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let entries = journal(&run);
    // One screening job per candidate, each checked and journaled with its node.
    let jobs = submitted(&entries, "screening");
    assert_eq!(jobs.len(), 2, "{entries:#?}");
    let screened = screening_jobs(&entries);
    let by_index = |i: u64| (screened.iter()).find(|e| e["index"] == i).copied();
    let (memo, broken) = (by_index(1).unwrap(), by_index(2).unwrap());
    assert_ne!(memo["job_id"], broken["job_id"]);
    for job in [memo, broken] {
        let node = job["node"].as_str().unwrap();
        assert!(["evo-n1", "evo-n2"].contains(&node), "{job}");
    }
    let summary = summary(&run);
    let row = (summary["rows"].as_array().unwrap().iter())
        .find(|r| r["name"] == "broken")
        .unwrap();
    assert_eq!(row["status"], "build_failed", "{summary:#}");
    let reason = row["reason"].as_str().unwrap();
    assert!(reason.contains("no_such_hash"), "{reason}");
    let pairs_of = |i: u64| {
        (entries.iter())
            .filter(|e| e["entry"] == "screening_pair" && e["index"] == i)
            .count()
    };
    assert_eq!((pairs_of(1), pairs_of(2)), (3, 0), "{entries:#?}");
    // Only the candidate that screened faster is confirmed.
    assert_eq!(submitted(&entries, "confirm").len(), 1, "{entries:#?}");
}

#[test]
fn screening_jobs_that_start_together_keep_a_folder_each() {
    let Some(conf) = util::slurm::cluster_conf() else {
        return;
    };
    // Two candidates that both pass their checks; with two nodes free their jobs start at once,
    // and their nodes name their run folders alike (same campaign, baseline and second). The
    // second does the same work in another binary (a comment alone would leave the program the
    // baseline's, which is not screened at all).
    let same = format!(
        "        volatile unsigned long same_work = 0;\n        (void)same_work;\n{HOT_LINE}"
    );
    let same = fixture_patch(&[("prog.c", HOT_LINE, &same)]);
    let fx = Fixture::with(conf, 0, &[("same", same)]);
    // Both jobs become eligible at the same instant, so Slurm starts them together.
    let at = std::process::Command::new("date")
        .args(["-d", "+6 sec", "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .unwrap();
    let at = String::from_utf8(at.stdout).unwrap();
    let file = fx.camp.join("campaign.json");
    let campaign = std::fs::read_to_string(&file).unwrap().replace(
        r#""max_requeues": 0 }"#,
        &format!(
            r#""max_requeues": 0, "sbatch_args": ["--begin={}"] }}"#,
            at.trim()
        ),
    );
    write(&file, &campaign);
    let out = completed(fx.start(&[]));
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let entries = journal(&run);
    let screened = screening_jobs(&entries);
    assert_eq!(screened.len(), 2, "{}\n{entries:#?}", text(&out));
    let folders: Vec<&str> = (screened.iter())
        .map(|e| e["run_dir"].as_str().unwrap())
        .collect();
    assert_ne!(folders[0], folders[1], "{entries:#?}");
    for folder in &folders {
        assert!(run.join(folder).join("journal.jsonl").is_file(), "{folder}");
    }
    // Each job's result reached the coordinator: a lost one leaves its candidate without the
    // campaign's 3 screening pairs. (The confirmation's own verdict is not this test's concern:
    // a loaded machine may leave it undecided.)
    let summary = summary(&run);
    for row in summary["rows"].as_array().unwrap() {
        assert_eq!(row["screening_pairs"], 3, "{summary:#}");
    }
}

#[test]
fn baseline_builds_share_the_declared_cache_of_their_machine_kind_and_candidates_only_copy_it() {
    let Some(conf) = util::slurm::cluster_conf() else {
        return;
    };
    let fx = Fixture::new(conf, 0);
    // A declared build cache: each baseline build adds a line to it, and a candidate's build
    // requires a baseline's line in what it sees (its copy) and adds its own.
    let cache = fx.dir.path().join("cache");
    let log = cache.join("builds.log");
    let log = log.display();
    let build = format!(
        "make -s && if grep -q cached_hash prog.c; then grep -q baseline '{log}' && echo \
         candidate >> '{log}'; else echo baseline >> '{log}'; fi"
    );
    let workload = WORKLOAD.replace(
        r#""command": "make -s""#,
        &format!(r#""command": {}"#, serde_json::to_string(&build).unwrap()),
    );
    write(&fx.camp.join("workload.json"), &workload);
    let file = fx.camp.join("campaign.json");
    let sandbox = format!(
        r#""sandbox": {{ "mode": "on", "writable": ["{}"] }}, "fleet": {{"#,
        cache.display()
    );
    let campaign = std::fs::read_to_string(&file).unwrap();
    write(&file, &campaign.replace(r#""fleet": {"#, &sandbox));

    let out = completed(fx.start(&[]));
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let (confirmation, result) = fx.confirmation(&run);
    assert_eq!(result["verdict"], "accepted", "{}", text(&out));
    fx.verifies(&confirmation);
    // The nodes wrote the shared folder of their kind, never the declared folder itself.
    let kind = evo::measure::caches::MachineKind::of_this_machine();
    let folder = fx.camp.join("receipts/caches").join(kind.key());
    let shared: Vec<PathBuf> = (std::fs::read_dir(&folder).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(shared.len(), 1, "one folder per declared cache: {shared:?}");
    let lines = std::fs::read_to_string(shared[0].join("builds.log")).unwrap();
    // The screening job's baseline build, then the confirmation's; candidates wrote only their
    // copies (their builds succeeded, so each found a baseline's line there).
    assert_eq!(lines, "baseline\nbaseline\n");
    assert!(
        !cache.join("builds.log").exists(),
        "the node's own cache was written"
    );
    let described: evo::measure::caches::MachineKind =
        serde_json::from_slice(&std::fs::read(folder.join("kind.json")).unwrap()).unwrap();
    assert_eq!(described, kind);
    // The signed result says which kind's caches its builds used.
    let recorded = &result["sandbox"]["shared_caches"];
    assert_eq!(recorded["key"], kind.key(), "{recorded}");
    assert_eq!(recorded["kind"]["cpu_model"], kind.cpu_model, "{recorded}");
}

/// The bundled C campaign (`campaigns/c_kernels.json`, the real kernels and patches of this
/// repository, and no `fleet` section: `--fleet slurm` sends it to the cluster with the default
/// settings) in a temp folder: its paths made absolute, its receipts in the folder.
fn c_kernels(conf: PathBuf) -> Fixture {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let campaigns = root.join("campaigns");
    let bytes = std::fs::read(campaigns.join("c_kernels.json")).unwrap();
    let mut campaign: Value = serde_json::from_slice(&bytes).unwrap();
    let absolute = |value: &mut Value| {
        let path = campaigns.join(value.as_str().unwrap());
        *value = Value::String(path.display().to_string());
    };
    absolute(&mut campaign["repo"]);
    absolute(&mut campaign["workload"]);
    absolute(&mut campaign["holdouts"]);
    for candidate in campaign["candidates"].as_array_mut().unwrap() {
        absolute(&mut candidate["patch"]);
    }
    campaign.as_object_mut().unwrap().remove("output");
    // No instruction counts and the fewest A/A pairs that give an interval: what this fixture's
    // test checks is how jobs survive signals, requeues and a killed coordinator, not the lanes
    // (the bundled campaign runs whole in CI); valgrind would only make every confirm job longer.
    let confirm = &mut campaign["confirm"];
    confirm["counters"] = serde_json::json!([]);
    confirm["aa_pairs"] = 6.into();
    let dir = tempfile::tempdir().unwrap();
    let camp = dir.path().join("camp");
    let text = serde_json::to_string_pretty(&campaign).unwrap();
    write(&camp.join("campaign.json"), &text);
    Fixture { dir, camp, conf }
}

/// The attempt folder the journal of `run` names for `job`.
fn job_folder(run: &Path, job: JobId) -> PathBuf {
    let entries = journal(run);
    let submitted = (entries.iter())
        .find(|e| e["entry"] == "job_submitted" && e["job_id"] == job.0)
        .unwrap_or_else(|| panic!("job {job} not journaled: {entries:#?}"));
    PathBuf::from(submitted["folder"].as_str().unwrap())
}

/// Waits until job `id` runs, with its `restarts` at least `restarts`.
fn running_again(slurm: &Slurm, id: JobId, restarts: u32) -> JobInfo {
    let started = Instant::now();
    loop {
        let info = slurm.info(id).unwrap();
        assert!(!info.state.is_final(), "job {id} ended: {info:?}");
        if info.state == JobState::Running && info.restarts >= restarts {
            return info;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "job {id} did not run again: {info:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ids of the jobs of `stage` the journal of `run` names, once it names at least `count`.
fn journaled(fx: &Fixture, coordinator: &mut Reaped, stage: &str, count: usize) -> Vec<u64> {
    let started = Instant::now();
    loop {
        let ids = run_dir(&fx.camp.join("receipts"))
            .map(|run| submitted(&journal(&run), stage))
            .unwrap_or_default();
        if ids.len() >= count {
            return ids;
        }
        assert!(coordinator.running(), "evo ended early");
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "no job {count} of {stage}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `--json` lines of a running coordinator, read as it writes them, each checked against
/// `evo schema events`.
struct Lines {
    seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Lines {
    /// Takes the coordinator's stdout (its `output()` then has none).
    fn of(coordinator: &mut Reaped) -> Lines {
        use std::io::BufRead;
        let stdout = (coordinator.0.as_mut().unwrap().stdout.take()).unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let into = seen.clone();
        let reader = std::thread::spawn(move || {
            let validator = util::schema::validator("events");
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                util::schema::check(&validator, &value, &line);
                into.lock().unwrap().push(value);
            }
        });
        Lines {
            seen,
            reader: Some(reader),
        }
    }

    /// Waits (five minutes at most) until the lines so far satisfy `done`; returns their count.
    fn until(&self, done: impl Fn(&[Value]) -> bool) -> usize {
        let started = Instant::now();
        loop {
            {
                let seen = self.seen.lock().unwrap();
                if done(&seen) {
                    return seen.len();
                }
                assert!(
                    started.elapsed() < Duration::from_secs(300),
                    "not seen: {seen:#?}"
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every line, once the coordinator has ended.
    fn all(mut self) -> Vec<Value> {
        self.reader.take().unwrap().join().unwrap();
        std::mem::take(&mut self.seen.lock().unwrap())
    }
}

/// Sends SIGINT (Ctrl-C) or SIGKILL to the coordinator and returns what it wrote.
fn signalled(coordinator: Reaped, signal: &str) -> Output {
    let pid = coordinator.0.as_ref().unwrap().id().to_string();
    let sent = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    coordinator.output()
}

#[test]
fn the_c_campaign_survives_ctrl_c_a_killed_job_a_requeue_and_a_killed_coordinator() {
    let Some(conf) = util::slurm::cluster_conf() else {
        return;
    };
    let slurm = Slurm::new(Some(&conf));
    let fx = c_kernels(conf);

    // Ctrl-C while the first screening jobs run: every job of the campaign is cancelled.
    let mut coordinator = fx.start(&["--fleet", "slurm", "--json"]);
    let first = fx.first_job_running(&slurm, &mut coordinator, "screening");
    let out = signalled(coordinator, "-INT");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let run = run_dir(&fx.camp.join("receipts")).unwrap();
    let screenings = submitted(&journal(&run), "screening");
    assert!(screenings.contains(&first.0), "{screenings:?}");
    let events = util::schema::events(&out);
    for &id in &screenings {
        let state = slurm.info(JobId(id)).unwrap().state;
        assert!(
            matches!(state, JobState::Cancelled | JobState::Other(_)),
            "job {id} was not cancelled: {state:?}"
        );
        let cancelled = job_event(&events, "job_ended", id);
        assert_eq!(cancelled["outcome"], "cancelled", "{cancelled}");
        assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    }

    // Resumed: screening again; the confirmation's first job is killed mid-run (scancel, as an
    // administrator or a lost node ends it) and submitted again; Slurm requeues the second by
    // itself; the coordinator is SIGKILLed while that job runs again.
    let mut coordinator = fx.start(&["--resume", "latest", "--fleet", "slurm", "--json"]);
    let lines = Lines::of(&mut coordinator);
    let killed = fx.first_job_running(&slurm, &mut coordinator, "confirm");
    std::thread::sleep(Duration::from_secs(1));
    slurm.cancel(&[killed]).unwrap();
    let second = JobId(journaled(&fx, &mut coordinator, "confirm", 2)[1]);
    // Requeued once the coordinator has seen it on its node and its run has begun to write its
    // output, which the run after the restart must not find.
    let is = |line: &Value, event: &str| line["event"] == event && line["job_id"] == second.0;
    lines.until(|events| events.iter().any(|e| is(e, "job_started")));
    let out = job_folder(&run, second).join("out");
    let writing = Instant::now();
    // The job's script makes the folder afresh (`rm -rf`, `mkdir`): until then it is absent.
    while std::fs::read_dir(&out).map_or(0, |d| d.count()) == 0 {
        assert!(
            writing.elapsed() < Duration::from_secs(120),
            "nothing in {out:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    slurm.requeue(second).unwrap();
    let node = running_again(&slurm, second, 1).node;
    // The coordinator saw it back in the queue, then on its next node, before it is killed.
    let seen = lines.until(|events| {
        let restarted = events.iter().position(|e| is(e, "job_restarted"));
        restarted.is_some_and(|r| events[r..].iter().any(|e| is(e, "job_started")))
    });
    let out = signalled(coordinator, "-KILL");
    assert_eq!(out.status.code(), None, "killed by a signal");
    let events = lines.all();
    assert!(events.len() >= seen, "{events:#?}");
    let restarted = job_event(&events, "job_restarted", second.0);
    assert_eq!(restarted["restarts"], 1, "{restarted}");
    assert_eq!(restarted["stage"], "confirm", "{restarted}");
    let position = |line: &Value| events.iter().position(|e| e == line).unwrap();
    let again = (events.iter()).rfind(|e| is(e, "job_started")).unwrap();
    assert!(position(restarted) < position(again), "{events:#?}");
    assert_eq!(again["node"], node.as_str(), "{again}");
    let cancelled = job_event(&events, "job_ended", killed.0);
    assert_eq!(cancelled["outcome"], "requeued", "{cancelled}");
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert!(
        !slurm.info(second).unwrap().state.is_final(),
        "the job outlives its coordinator"
    );

    // Resumed again: it follows the running job to its end instead of submitting another, and
    // the coordinator signs the checked result of the real speedup.
    let out = completed(fx.start(&["--resume", "latest", "--fleet", "slurm", "--json"]));
    let events = util::schema::events(&out);
    let reattached = job_event(&events, "job_submitted", second.0);
    assert_eq!(reattached["reattached"], true, "{reattached}");
    let entries = journal(&run);
    assert_eq!(
        submitted(&entries, "confirm"),
        [killed.0, second.0],
        "{entries:#?}"
    );
    let (confirmation, result) = fx.confirmation(&run);
    let summary = summary(&run);
    let rows = summary["rows"].as_array().unwrap();
    let confirmed: Vec<&Value> = (rows.iter())
        .filter(|r| r["confirmation_run_dir"].is_string())
        .collect();
    assert_eq!(confirmed.len(), 1, "{summary:#}");
    // `top` is 1: the candidate that screened fastest is confirmed. Two of the C campaign's
    // candidates are real speedups whose screening medians have been seen in either order on a
    // loaded machine (1.436× and 1.460× in one run), so which one ranks first is the machine's.
    let fastest = (rows.iter())
        .filter(|r| r["screening_median"].is_number())
        .max_by(|a, b| {
            let (a, b) = (&a["screening_median"], &b["screening_median"]);
            a.as_f64().unwrap().total_cmp(&b.as_f64().unwrap())
        })
        .unwrap();
    assert_eq!(confirmed[0]["name"], fastest["name"], "{summary:#}");
    assert!(
        ["tiled-matmul", "unrolled-dot"].contains(&confirmed[0]["name"].as_str().unwrap()),
        "{summary:#}"
    );
    // The coordinator built nothing: every candidate was built and screened on a node.
    assert_eq!(summary["screened_in_jobs"], 3, "{summary:#}");
    let folder = confirmation.file_name().unwrap().to_str().unwrap();
    assert!(
        (confirmed[0]["confirmation_run_dir"].as_str().unwrap()).ends_with(folder),
        "{summary:#}"
    );
    // A real speedup is never rejected; a loaded machine can leave it inconclusive.
    let verdict = result["verdict"].as_str().unwrap_or_default();
    assert!(
        ["accepted", "inconclusive"].contains(&verdict),
        "{}",
        text(&out)
    );
    if verdict == "accepted" {
        assert_eq!(confirmed[0]["status"], "confirmed", "{summary:#}");
    }
    let job = &result["environment"]["job"];
    assert_eq!(
        (&job["job_id"], &job["attempt"]),
        (&second.0.into(), &2.into())
    );
    assert_eq!(job["node"], node.as_str(), "{job}");
    fx.verifies(&confirmation);
}
