//! The fleet's coordinator (`campaign::fleet`, docs/design.md §2.8) on the in-process fake
//! scheduler (`fleet::fake`) and a seeded fake runner: no cluster and no waiting. A job that
//! runs does what a node's evo does with its request, here (`evo campaign screen-job`,
//! `evo confirm --unsigned`); the fake decides each job's fate, so every fault path is reached on
//! purpose: a job that ends without a result is submitted again up to `fleet.max_requeues`, then
//! the candidate ends `inconclusive` with the reason; a job cancelled from outside, lost by the
//! scheduler or requeued by it; a result that fails the coordinator's checks; a stop that cancels
//! the jobs; a coordinator that loses the scheduler and, resumed, reattaches to its job. What only
//! a cluster shows (sbatch, the environment a node gets, credentials) stays in `fleet_slurm`.
//! A search of several rounds on the fleet is in `fleet_rounds`.

use crate::util;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use evo::campaign::{self, CampaignOptions};
use evo::fleet::fake::{FakeScheduler, Fate, JobWork, WorkError};
use evo::fleet::job::JobFolder;
use evo::fleet::scheduler::{Job, JobKind};
use evo::fleet::slurm::JobState;
use evo::host::Hold;
use evo::measure::fake::{FakeBehavior, FakeRunner};
use evo::measure::runner::RunSpec;
use evo::pipeline::PipelineError;
use evo::pipeline::event::Event;
use evo::report::jobs::{
    JobEnded, JobObservation, JobRestarted, JobStage, JobStarted, JobSubmitted,
};
use evo::spec::modes::SandboxMode;
use serde_json::Value;
use util::{patch_by_editing, write};

use crate::util::tiny::WORKLOAD;

use util::tiny::HOLDOUTS;

/// The runs behave as the tree they run in makes them: `fast` takes 80% of the baseline's time,
/// `slower` 125%, `broken` does not build.
fn runner() -> FakeRunner {
    let holds = |text: &'static str| {
        move |s: &RunSpec| {
            let program = s.cwd.as_ref().map(|cwd| cwd.join("prog.sh"));
            let text_in = program.and_then(|p| std::fs::read_to_string(p).ok());
            text_in.is_some_and(|t| t.contains(text))
        }
    };
    let starts = |command: &'static str| move |s: &RunSpec| s.command.starts_with(command);
    let both = |command: &'static str, text: &'static str| {
        let (c, h) = (starts(command), holds(text));
        move |s: &RunSpec| c(s) && h(s)
    };
    let noisy = |mean_s| FakeBehavior::Noisy {
        mean_s,
        rel_sd: 0.01,
    };
    let broken = FakeBehavior::Fails {
        code: 2,
        stderr: "syntax error\n".into(),
    };
    FakeRunner::new(5)
        .when(both("make prog", "echo broken"), broken)
        .when(starts("make "), FakeBehavior::Prints(String::new()))
        .when(starts("./prog check"), FakeBehavior::Prints("42\n".into()))
        .when(both("./prog ", "echo fast"), noisy(0.8))
        .when(both("./prog ", "echo slower"), noisy(1.25))
        .when(starts("./prog "), noisy(1.0))
}

/// A node: runs a job's request here, on a fresh fake runner of its maker, as `evo` on a node
/// would.
pub(crate) struct Node(pub(crate) fn() -> FakeRunner);

impl JobWork for Node {
    fn run(&self, job: &Job) -> Result<(), WorkError> {
        let file = job.folder.request();
        let hidden = evo::confirm::request::hidden_folder(&file)?;
        let hold = || Hold::External("a fake node's exclusive allocation".into());
        let runners = Arc::new((self.0)());
        match job.kind {
            JobKind::Confirm => {
                let opts = evo::confirm::ConfirmOptions {
                    hidden: vec![hidden],
                    ..evo::confirm::ConfirmOptions::new(runners, hold())
                };
                let request: evo::confirm::ConfirmRequest = evo::confirm::read_request(&file)?;
                let done = evo::confirm::run_confirm_unsigned(&request, &opts, &mut |_| {});
                Ok(done.map(|_| ())?)
            }
            JobKind::Screening => {
                let opts = CampaignOptions::new(runners, hold());
                let request: campaign::ScreenRequest = evo::confirm::read_request(&file)?;
                let done = campaign::run_screening_job(&request, &opts, &[hidden], &mut |_| {});
                Ok(done.map(|_| ())?)
            }
        }
    }
}

/// A campaign over `candidates` (of `fast`, `slower`, `broken`) with a fleet section.
struct Fixture {
    _dir: tempfile::TempDir,
    camp: PathBuf,
}

impl Fixture {
    fn new(candidates: &[&str], fleet: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        util::tiny::repo(
            &repo,
            &[("bench/run.sh", "#!/bin/sh\nexec ./prog \"$@\"\n")],
        );
        let camp = dir.path().join("camp");
        let mut listed = Vec::new();
        for name in candidates {
            let diff =
                patch_by_editing(&repo, &[("prog.sh", "echo slow", &format!("echo {name}"))]);
            write(&camp.join(format!("{name}.patch")), &diff);
            listed.push(format!(
                r#"{{ "name": "{name}", "patch": "{name}.patch" }}"#
            ));
        }
        write(&camp.join("workload.json"), WORKLOAD);
        write(&camp.join("holdouts.json"), HOLDOUTS);
        evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
        let campaign = format!(
            r#"{{ "name": "tiny", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json", "candidates": [{}],
  "search": {{ "pairs": 5 }},
  "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1, "quiet_wait_s": 0 }},
  "fleet": {{ "engine": "slurm", {fleet} }},
  "key": "key/{}", "output": "receipts" }}"#,
            listed.join(", "),
            evo::receipt::keys::PRIVATE_KEY_FILE
        );
        write(&camp.join("campaign.json"), &campaign);
        Fixture { _dir: dir, camp }
    }

    fn opts(&self, fake: &Arc<FakeScheduler>) -> CampaignOptions {
        CampaignOptions {
            sandbox: Some(SandboxMode::Off),
            scheduler: Arc::clone(fake) as Arc<dyn evo::fleet::scheduler::Scheduler>,
            ..CampaignOptions::new(
                Arc::new(runner()),
                Hold::External("a test's own repository".into()),
            )
        }
    }

    fn run(&self, opts: &CampaignOptions, events: &mut Vec<Event>) -> Result<Run, PipelineError> {
        let plan = evo::plan::campaign_plan(&self.camp.join("campaign.json")).unwrap();
        let done = campaign::run_campaign(&plan, opts, &mut |e| events.push(e))?;
        Ok(Run {
            summary: serde_json::to_value(&done.summary).unwrap(),
            dir: done.run_dir,
        })
    }

    /// The newest run folder.
    fn run_dir(&self) -> PathBuf {
        let receipts = self.camp.join("receipts");
        (std::fs::read_dir(&receipts).unwrap().filter_map(Result::ok))
            .map(|e| e.path())
            .find(|p| p.join("journal.jsonl").is_file())
            .unwrap()
    }
}

struct Run {
    summary: Value,
    dir: PathBuf,
}

impl Run {
    fn row(&self, name: &str) -> &Value {
        (self.summary["rows"].as_array().unwrap().iter())
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no row {name} in {:#}", self.summary))
    }
}

fn journal(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn entries<'a>(journal: &'a [Value], entry: &str, stage: &str) -> Vec<&'a Value> {
    (journal.iter())
        .filter(|e| e["entry"] == entry && (stage.is_empty() || e["stage"] == stage))
        .collect()
}

fn kinds(fake: &FakeScheduler) -> Vec<JobKind> {
    fake.submitted().iter().map(|s| s.kind).collect()
}

fn scheduler(fates: Vec<Fate>) -> Arc<FakeScheduler> {
    let fake = fates.into_iter().fold(
        FakeScheduler::new(Arc::new(Node(runner))),
        FakeScheduler::then,
    );
    Arc::new(fake)
}

/// Every job's observations, as (stage, what) in the order the reporter got them.
fn observed(events: &[Event]) -> Vec<(JobStage, &'static str)> {
    (events.iter())
        .filter_map(|e| match e {
            Event::Job { job, .. } => Some(match job {
                JobObservation::Submitted(JobSubmitted {
                    stage, reattached, ..
                }) => (
                    *stage,
                    if *reattached {
                        "reattached"
                    } else {
                        "submitted"
                    },
                ),
                JobObservation::Started(JobStarted { stage, .. }) => (*stage, "started"),
                JobObservation::Restarted(JobRestarted { stage, .. }) => (*stage, "restarted"),
                JobObservation::Ended(JobEnded { stage, .. }) => (*stage, "ended"),
            }),
            _ => None,
        })
        .collect()
}

#[test]
fn several_candidates_are_screened_as_jobs_and_the_best_is_confirmed_by_one_and_signed() {
    let fx = Fixture::new(&["slower", "fast", "broken"], r#""max_jobs": 2"#);
    let fake = scheduler(Vec::new());
    let run = fx.run(&fx.opts(&fake), &mut Vec::new()).unwrap();
    assert_eq!(run.row("slower")["status"], "screened", "{:#}", run.summary);
    assert_eq!(
        run.row("broken")["status"],
        "build_failed",
        "{:#}",
        run.summary
    );
    assert_eq!(run.row("fast")["status"], "confirmed", "{:#}", run.summary);
    assert_eq!(run.row("fast")["screening_pairs"], 5);
    use JobKind::{Confirm, Screening};
    assert_eq!(kinds(&fake), [Screening, Screening, Screening, Confirm]);
    let j = journal(&run.dir);
    let screened = entries(&j, "screening_job", "");
    assert_eq!(screened.len(), 3, "{j:#?}");
    // Two jobs started together (max_jobs 2, the same second on the fake's clock or not) keep a
    // folder each, named by the coordinator.
    for (i, s) in screened.iter().enumerate() {
        let folder = run.dir.join(s["run_dir"].as_str().unwrap());
        assert_eq!(
            folder.file_name().unwrap().to_string_lossy(),
            format!("candidate_{}-attempt_1", i + 1)
        );
        let theirs = journal(&folder);
        assert_eq!(theirs[1]["index"], i + 1, "{theirs:#?}");
        assert!(["fake-n1", "fake-n2"].contains(&s["node"].as_str().unwrap()));
    }
    let receipt = (run.dir)
        .join(run.row("fast")["confirmation_run_dir"].as_str().unwrap())
        .join(evo::receipt::RECEIPT_FILE);
    assert!(receipt.is_file(), "{}", receipt.display());
    let result = receipt.with_file_name("result.json");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(result).unwrap()).unwrap();
    assert_eq!(
        result["environment"]["job"]["node"], "fake-n2",
        "{result:#}"
    );
}

#[test]
fn a_job_that_ends_without_a_result_is_resubmitted_up_to_max_requeues_then_inconclusive() {
    let fx = Fixture::new(&["fast"], r#""max_requeues": 1"#);
    let failed = || Fate::EndsWithout(JobState::Failed { code: 2, signal: 0 });
    let fake = scheduler(vec![failed(), failed()]);
    let run = fx.run(&fx.opts(&fake), &mut Vec::new()).unwrap();
    let fast = run.row("fast");
    assert_eq!(fast["status"], "inconclusive", "{fast:#}");
    let reason = fast["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("no result after 2 Slurm jobs (fleet.max_requeues is 1); the last: ")
            && reason.contains("failed (exit code 2)"),
        "{reason}"
    );
    // Never screened, so never confirmed.
    assert_eq!(kinds(&fake), [JobKind::Screening, JobKind::Screening]);
    let j = journal(&run.dir);
    let ended = entries(&j, "job_ended", "screening");
    assert!(ended.iter().all(|e| e["counted"] == true), "{ended:#?}");
    let attempts: Vec<&Value> = (entries(&j, "job_submitted", "screening").iter())
        .map(|e| &e["attempt"])
        .collect();
    assert_eq!(attempts, [1, 2]);
}

#[test]
fn a_cancelled_a_lost_and_a_node_failed_job_are_each_submitted_again() {
    let fx = Fixture::new(&["fast"], r#""max_requeues": 3"#);
    let fake = scheduler(vec![
        Fate::Lost,
        Fate::Runs,
        Fate::EndsWithout(JobState::Cancelled),
        Fate::EndsWithout(JobState::NodeFail),
        Fate::Runs,
    ]);
    let run = fx.run(&fx.opts(&fake), &mut Vec::new()).unwrap();
    assert_eq!(run.row("fast")["status"], "confirmed", "{:#}", run.summary);
    let j = journal(&run.dir);
    let reasons: Vec<&str> = (entries(&j, "job_ended", "").iter())
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 5, "{reasons:#?}");
    assert!(reasons[0].contains("ended gone"), "{reasons:#?}");
    assert!(reasons[1].starts_with("screening checked"), "{reasons:#?}");
    assert!(reasons[2].contains("ended cancelled"), "{reasons:#?}");
    assert!(
        reasons[3].contains("on fake-n2 ended node_fail"),
        "{reasons:#?}"
    );
    assert!(
        reasons[4].starts_with("result checked and signed"),
        "{reasons:#?}"
    );
    let result = (run.dir)
        .join(run.row("fast")["confirmation_run_dir"].as_str().unwrap())
        .join("result.json");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(result).unwrap()).unwrap();
    assert_eq!(result["environment"]["job"]["attempt"], 3, "{result:#}");
}

#[test]
fn a_job_the_scheduler_requeues_by_itself_is_followed_to_its_end_as_one_job() {
    let fx = Fixture::new(&["fast"], r#""max_requeues": 0"#);
    let fake = scheduler(vec![Fate::Requeued, Fate::Requeued]);
    let mut events = Vec::new();
    let run = fx.run(&fx.opts(&fake), &mut events).unwrap();
    assert_eq!(run.row("fast")["status"], "confirmed", "{:#}", run.summary);
    assert_eq!(fake.submitted().len(), 2);
    let what: Vec<&str> = observed(&events).iter().map(|(_, w)| *w).collect();
    let one = ["submitted", "started", "restarted", "started", "ended"];
    assert_eq!(what, [one, one].concat());
}

/// Replaces the first `from` in the result of the confirmation a job left.
fn edit_result(folder: &JobFolder, from: &str, to: &str) {
    let run = std::fs::read_dir(folder.out())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = run.join("result.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_confirmation_whose_result_fails_its_checks_is_never_signed_and_counts_as_no_result() {
    let fx = Fixture::new(&["fast"], r#""max_requeues": 1"#);
    let tampered = |from: &'static str, to: &'static str| {
        Fate::RunsThen(Arc::new(move |f: &JobFolder| edit_result(f, from, to)))
    };
    let fake = scheduler(vec![
        Fate::Runs,
        tampered(
            "\"campaign_name\": \"tiny\"",
            "\"campaign_name\": \"other\"",
        ),
        tampered(
            "\"campaign_name\": \"tiny\"",
            "\"campaign_name\": \"other\"",
        ),
    ]);
    let run = fx.run(&fx.opts(&fake), &mut Vec::new()).unwrap();
    let fast = run.row("fast");
    assert_eq!(fast["status"], "inconclusive", "{fast:#}");
    let reason = fast["reason"].as_str().unwrap();
    assert!(
        reason.contains("is refused: campaign_name is \"other\""),
        "{reason}"
    );
    // Refused before anything of it was moved or signed.
    assert!(!run.dir.join("confirmations").exists());
    assert!(fast["confirmation_run_dir"].is_null(), "{fast:#}");
}

/// Stops once set, or (with the fake) once the fake took a confirmation job.
struct Flag(Arc<AtomicBool>, Option<Arc<FakeScheduler>>);

impl evo::host::StopCondition for Flag {
    fn requested(&self) -> bool {
        let confirm = (self.1.as_ref()).is_some_and(|f| kinds(f).contains(&JobKind::Confirm));
        confirm || self.0.load(Ordering::SeqCst)
    }
}

/// Stops the campaign as soon as its confirmation job is submitted (`at_submission`: before the
/// coordinator journaled it; else once it was reported), then resumes it; the resumed run's
/// summary and the journal of the first session.
fn stopped_at_the_confirmation(
    fx: &Fixture,
    fake: &Arc<FakeScheduler>,
    at_submission: bool,
) -> (Run, Vec<Value>) {
    let flag = Arc::new(AtomicBool::new(false));
    let opts = CampaignOptions {
        stop: evo::host::Stop::new(Flag(
            Arc::clone(&flag),
            at_submission.then(|| Arc::clone(fake)),
        )),
        ..fx.opts(fake)
    };
    let plan = evo::plan::campaign_plan(&fx.camp.join("campaign.json")).unwrap();
    let err = campaign::run_campaign(&plan, &opts, &mut |e| {
        let reported = matches!(
            &e,
            Event::Job {
                job: JobObservation::Submitted(JobSubmitted {
                    stage: JobStage::Confirm,
                    ..
                }),
                ..
            }
        );
        if reported {
            flag.store(true, Ordering::SeqCst);
        }
    })
    .err()
    .unwrap();
    assert!(matches!(err, PipelineError::Interrupted { .. }), "{err}");
    let confirm = confirm_job(fake);
    assert_eq!(fake.cancelled(), [confirm]);
    assert_eq!(fake.state(confirm), Some(JobState::Cancelled));
    let first = journal(&fx.run_dir());
    let run_id = fx
        .run_dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let opts = CampaignOptions {
        resume: Some(run_id),
        ..fx.opts(fake)
    };
    let run = fx.run(&opts, &mut Vec::new()).unwrap();
    assert_eq!(run.row("fast")["status"], "confirmed", "{:#}", run.summary);
    use JobKind::{Confirm, Screening};
    assert_eq!(kinds(fake), [Screening, Confirm, Confirm]);
    (run, first)
}

#[test]
fn a_stop_cancels_the_jobs_uncounted_and_the_resumed_run_submits_them_again() {
    let fx = Fixture::new(&["fast"], r#""max_requeues": 0"#);
    let fake = scheduler(vec![Fate::Runs, Fate::NeverStarts]);
    let (_, first) = stopped_at_the_confirmation(&fx, &fake, false);
    let ended = entries(&first, "job_ended", "confirm");
    assert_eq!(ended.len(), 1, "{first:#?}");
    assert_eq!(ended[0]["counted"], false);
    assert_eq!(ended[0]["reason"], "cancelled: the campaign was stopped");
}

#[test]
fn a_job_submitted_as_the_stop_came_is_cancelled_though_it_was_never_journaled() {
    let fx = Fixture::new(&["fast"], r#""max_requeues": 0"#);
    let fake = scheduler(vec![Fate::Runs, Fate::StaysRunning]);
    let (run, first) = stopped_at_the_confirmation(&fx, &fake, true);
    assert!(
        entries(&first, "job_submitted", "confirm").is_empty(),
        "{first:#?}"
    );
    // The resumed run's job has a folder of its own: the cancelled one's is never reused.
    let j = journal(&run.dir);
    let submitted = entries(&j, "job_submitted", "confirm");
    assert_eq!(submitted.len(), 1, "{j:#?}");
    assert_eq!(submitted[0]["attempt"], 2);
    assert_ne!(fake.submitted()[1].folder, fake.submitted()[2].folder);
}

#[test]
fn a_coordinator_that_lost_its_scheduler_reattaches_to_its_running_job_on_resume() {
    let fx = Fixture::new(&["fast"], r#""max_requeues": 0"#);
    let fake = scheduler(Vec::new());
    let mut events = Vec::new();
    let lose = Arc::clone(&fake);
    let plan = evo::plan::campaign_plan(&fx.camp.join("campaign.json")).unwrap();
    let err = campaign::run_campaign(&plan, &fx.opts(&fake), &mut |e| {
        if let Event::Job {
            job:
                JobObservation::Started(JobStarted {
                    stage: JobStage::Confirm,
                    ..
                }),
            ..
        } = &e
        {
            lose.set_unreachable(true);
        }
        events.push(e);
    })
    .err()
    .unwrap();
    assert!(err.to_string().contains("cannot follow the jobs"), "{err}");
    assert_eq!(fake.state(confirm_job(&fake)), Some(JobState::Running));

    fake.set_unreachable(false);
    let run_id = fx
        .run_dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let opts = CampaignOptions {
        resume: Some(run_id),
        ..fx.opts(&fake)
    };
    let mut again = Vec::new();
    let run = fx.run(&opts, &mut again).unwrap();
    assert_eq!(run.row("fast")["status"], "confirmed", "{:#}", run.summary);
    assert_eq!(kinds(&fake), [JobKind::Screening, JobKind::Confirm]);
    let resumed: Vec<(JobStage, &str)> = observed(&again);
    assert_eq!(
        resumed,
        [
            (JobStage::Confirm, "reattached"),
            (JobStage::Confirm, "started"),
            (JobStage::Confirm, "ended")
        ]
    );
}

/// The id of the fake's confirmation job.
fn confirm_job(fake: &FakeScheduler) -> evo::fleet::slurm::JobId {
    let submitted = fake.submitted();
    let confirm = submitted.iter().find(|s| s.kind == JobKind::Confirm);
    confirm.unwrap().id
}

#[test]
fn a_screening_whose_journal_fails_its_checks_is_not_used_and_is_screened_again() {
    let fx = Fixture::new(&["fast"], r#""max_requeues": 1"#);
    let faster = |f: &JobFolder| {
        let run = std::fs::read_dir(f.out())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let file = run.join("journal.jsonl");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("\"ratio\":"), "{text}");
        std::fs::write(&file, text.replacen("\"ratio\":", "\"ratio\":9", 1)).unwrap();
    };
    let fake = scheduler(vec![Fate::RunsThen(Arc::new(faster)), Fate::Runs]);
    let run = fx.run(&fx.opts(&fake), &mut Vec::new()).unwrap();
    assert_eq!(run.row("fast")["status"], "confirmed", "{:#}", run.summary);
    let j = journal(&run.dir);
    let ended = entries(&j, "job_ended", "screening");
    let reason = ended[0]["reason"].as_str().unwrap();
    assert!(reason.contains("refused"), "{reason}");
    assert_eq!(ended[0]["counted"], true);
    let screened = entries(&j, "screening_job", "");
    assert_eq!(screened.len(), 1, "{j:#?}");
    assert_eq!(screened[0]["attempt"], 2);
    let pairs = entries(&j, "screening_pair", "");
    assert_eq!(pairs.len(), 5, "only the second job's pairs: {j:#?}");
}
