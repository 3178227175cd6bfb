//! A search of two rounds on the fleet (docs/design.md §2.8, §2.9), on the fake scheduler: each
//! round's candidates are screened as jobs before the next round's agent reads their history,
//! and the best is confirmed by a job of its own. The agent is a real script; the builds, checks
//! and timed runs are a seeded fake runner's, here and on the fake's nodes.

use std::path::Path;
use std::sync::Arc;

use evo::campaign::{self, CampaignOptions};
use evo::fleet::fake::FakeScheduler;
use evo::fleet::scheduler::JobKind;
use evo::host::Hold;
use evo::measure::fake::{FakeBehavior, FakeRunner};
use evo::measure::record::RunRecord;
use evo::measure::runner::{RunSpec, Runner, RunnerError, RunnerFactory};
use evo::measure::spawn::ProcessRunner;
use evo::spec::modes::SandboxMode;
use serde_json::Value;

use crate::fleet_fake::Node;
use crate::util::write;

use crate::util::tiny::WORKLOAD;

/// The program's speed follows the last `echo` line of its `prog.sh`: each idea is faster.
fn fake() -> FakeRunner {
    let last_echo = |text: &'static str| {
        move |s: &RunSpec| {
            let program = s.cwd.as_ref().map(|cwd| cwd.join("prog.sh"));
            let text_of = program.and_then(|p| std::fs::read_to_string(p).ok());
            s.command.starts_with("./prog ")
                && text_of
                    .is_some_and(|t| t.lines().rev().find(|l| l.contains("echo")) == Some(text))
        }
    };
    let noisy = |mean_s| FakeBehavior::Noisy {
        mean_s,
        rel_sd: 0.01,
    };
    let any = |command: &'static str| move |s: &RunSpec| s.command.starts_with(command);
    FakeRunner::new(7)
        .when(any("make "), FakeBehavior::Prints(String::new()))
        .when(any("./prog check"), FakeBehavior::Prints("42\n".into()))
        .when(last_echo("echo speed-b"), noisy(0.65))
        .when(last_echo("echo speed-a"), noisy(0.8))
        .when(any("./prog "), noisy(1.0))
}

/// The coordinator's runners: agent runs (they read a brief on stdin) for real, the rest fake.
struct Coordinator(FakeRunner);

struct Routed(Box<dyn Runner + Send>);

impl Runner for Routed {
    fn run(&mut self, spec: &RunSpec) -> Result<RunRecord, RunnerError> {
        if spec.stdin_file.is_some() {
            return ProcessRunner::with_helper(env!("CARGO_BIN_EXE_evo").into()).run(spec);
        }
        self.0.run(spec)
    }
}

impl RunnerFactory for Coordinator {
    fn runner(&self) -> Box<dyn Runner + Send> {
        Box::new(Routed(self.0.runner()))
    }
}

#[test]
fn each_rounds_candidates_are_screened_as_jobs_before_the_next_round_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    crate::util::tiny::repo(&repo, &[]);
    let camp = dir.path().join("camp");
    write(&camp.join("workload.json"), WORKLOAD);
    evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
    let agent =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/history_agent.py");
    let campaign = format!(
        r#"{{ "name": "tiny", "repo": "../repo", "baseline": "main", "workload": "workload.json",
  "agent": {{ "command": "python3 '{}'", "timeout_s": 60 }},
  "search": {{ "pairs": 5, "rounds": 2 }},
  "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1, "quiet_wait_s": 0 }},
  "fleet": {{ "engine": "slurm" }},
  "key": "key/{}", "output": "receipts" }}"#,
        agent.display(),
        evo::receipt::keys::PRIVATE_KEY_FILE
    );
    write(&camp.join("campaign.json"), &campaign);
    let scheduler = Arc::new(FakeScheduler::new(Arc::new(Node(fake))));
    let plan = evo::plan::campaign_plan(&camp.join("campaign.json")).unwrap();
    let opts = CampaignOptions {
        sandbox: Some(SandboxMode::Off),
        scheduler: Arc::clone(&scheduler) as Arc<dyn evo::fleet::scheduler::Scheduler>,
        ..CampaignOptions::new(
            Arc::new(Coordinator(fake())),
            Hold::External("a test's own repository".into()),
        )
    };
    let done = campaign::run_campaign(&plan, &opts, &mut |_| {}).unwrap();
    let s = serde_json::to_value(&done.summary).unwrap();
    let statuses: Vec<(&Value, &Value)> = (s["rows"].as_array().unwrap().iter())
        .map(|r| (&r["round"], &r["status"]))
        .collect();
    assert_eq!(
        statuses,
        [
            (&1.into(), &"screened".into()),
            (&2.into(), &"confirmed".into())
        ],
        "{s:#}"
    );
    let kinds: Vec<JobKind> = scheduler.submitted().iter().map(|j| j.kind).collect();
    assert_eq!(
        kinds,
        [JobKind::Screening, JobKind::Screening, JobKind::Confirm]
    );
    // Round 1's candidate was screened by its job before round 2's agent ran, and its brief holds
    // what that job measured.
    let journal = std::fs::read_to_string(done.run_dir.join("journal.jsonl")).unwrap();
    let entries: Vec<Value> = (journal.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = |what: &dyn Fn(&Value) -> bool| entries.iter().position(what).unwrap();
    let screened_1 = at(&|e| e["entry"] == "screening_job" && e["index"] == 1);
    let candidate_2 = at(&|e| e["entry"] == "candidate" && e["index"] == 2);
    let submitted_2 = at(&|e| e["entry"] == "job_submitted" && e["index"] == 2);
    assert!(
        screened_1 < candidate_2 && candidate_2 < submitted_2,
        "{journal}"
    );
    let brief = std::fs::read_to_string(done.run_dir.join("logs/agent-2.brief.json")).unwrap();
    let brief: Value = serde_json::from_str(&brief).unwrap();
    let history = brief["history"].as_array().unwrap();
    assert_eq!(history.len(), 1, "{brief:#}");
    assert_eq!(history[0]["status"], "screened");
    assert_eq!(history[0]["screening_pairs"], 5);
}
