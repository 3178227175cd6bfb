//! The search loop (docs/design.md §2.9) on a seeded fake runner with real, scripted agents: the
//! builds, checks and timed runs are the fake's, the agents are real scripts in real trees. Each
//! round's agents read the history of the rounds before; `agent.base: "best"` starts from the
//! best tree; `stop_after` and the budgets end the search; a round cut short resumes without
//! repeating a finished agent run; nothing sealed reaches a brief.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use evo::campaign::{self, CampaignOptions};
use evo::host::Hold;
use evo::measure::fake::{FakeBehavior, FakeRunner};
use evo::measure::record::RunRecord;
use evo::measure::runner::{RunSpec, Runner, RunnerError, RunnerFactory};
use evo::measure::spawn::ProcessRunner;
use evo::pipeline::event::Event;
use evo::spec::modes::SandboxMode;
use serde_json::Value;
use util::write;

use crate::util::tiny::WORKLOAD;

/// A holdout whose name and command must never reach an agent.
const SEALED_NAME: &str = "sealed-zebra-7731";
const SEALED_COMMAND: &str = "./prog holdout-quokka";

fn holdouts() -> String {
    format!(
        r#"{{ "scenarios": [
  {{ "name": "{SEALED_NAME}", "role": "holdout", "run": "{SEALED_COMMAND} {{seed}}",
    "check": "./prog check {{seed}}", "compare": "exact", "deterministic_output": true }}
] }}"#
    )
}

/// Agent runs (they read a brief on stdin) run for real; everything else is the fake's.
#[derive(Clone)]
pub(crate) struct Runners {
    fake: FakeRunner,
    agent_runs: Arc<AtomicUsize>,
}

struct Routed {
    fake: Box<dyn Runner + Send>,
    agent_runs: Arc<AtomicUsize>,
}

impl Runner for Routed {
    fn run(&mut self, spec: &RunSpec) -> Result<RunRecord, RunnerError> {
        if spec.stdin_file.is_some() {
            self.agent_runs.fetch_add(1, Ordering::SeqCst);
            let mut real = ProcessRunner::with_helper(env!("CARGO_BIN_EXE_evo").into());
            return real.run(spec);
        }
        self.fake.run(spec)
    }
}

impl RunnerFactory for Runners {
    fn runner(&self) -> Box<dyn Runner + Send> {
        Box::new(Routed {
            fake: self.fake.runner(),
            agent_runs: Arc::clone(&self.agent_runs),
        })
    }
    fn timed_runner(&self) -> Box<dyn Runner + Send> {
        Box::new(Routed {
            fake: self.fake.timed_runner(),
            agent_runs: Arc::clone(&self.agent_runs),
        })
    }
}

/// The program's speed follows the last `speed-*` line of its `prog.sh`: each idea is faster.
pub(crate) fn runners() -> Runners {
    let holds = |text: &'static str| {
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
    // A check lane's run of the timed command (its output kept as `….check.out`) prints one
    // answer in every tree, and draws nothing from the timed runs' noise.
    let check_step = |s: &RunSpec| {
        s.command.starts_with("./prog ")
            && (s.stdout_file.as_ref()).is_some_and(|p| p.to_string_lossy().ends_with(".check.out"))
    };
    let fake = FakeRunner::new(7)
        .when(any("make "), FakeBehavior::Prints(String::new()))
        .when(check_step, FakeBehavior::Prints("42\n".into()))
        .when(any("./prog check"), FakeBehavior::Prints("42\n".into()))
        .when(holds("echo speed-d"), noisy(0.4))
        .when(holds("echo speed-c"), noisy(0.5))
        .when(holds("echo speed-b"), noisy(0.65))
        .when(holds("echo speed-a"), noisy(0.8))
        .when(any("./prog "), noisy(1.0));
    Runners {
        fake,
        agent_runs: Arc::new(AtomicUsize::new(0)),
    }
}

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    camp: PathBuf,
}

impl Fixture {
    /// A campaign whose agent is `agent` (a script in tests/fixtures/agents, then its arguments)
    /// with these `agent` and `search` settings added.
    pub(crate) fn new(agent: &str, agent_extra: &str, search: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        crate::util::tiny::repo(&repo, &[]);
        let camp = dir.path().join("camp");
        write(&camp.join("workload.json"), WORKLOAD);
        write(&camp.join("holdouts.json"), &holdouts());
        evo::receipt::keys::write_new_pair(&camp.join("key")).unwrap();
        let (agent, args) = agent.split_once(' ').unwrap_or((agent, ""));
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/agents")
            .join(agent);
        let interpreter = if agent.ends_with(".py") {
            "python3"
        } else {
            "sh"
        };
        let campaign = format!(
            r#"{{ "name": "tiny", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json",
  "agent": {{ "command": "{interpreter} '{}' {args}", "timeout_s": 60 {agent_extra} }},
  "search": {{ "pairs": 5 {search} }},
  "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1, "quiet_wait_s": 0 }},
  "key": "key/{}", "output": "receipts" }}"#,
            script.display(),
            evo::receipt::keys::PRIVATE_KEY_FILE
        );
        write(&camp.join("campaign.json"), &campaign);
        Fixture { _dir: dir, camp }
    }

    pub(crate) fn run(&self, runners: &Runners, events: &mut Vec<Event>) -> (Value, PathBuf) {
        self.run_with(runners, events, None, None).unwrap()
    }

    fn run_with(
        &self,
        runners: &Runners,
        events: &mut Vec<Event>,
        stop: Option<evo::host::Stop>,
        resume: Option<String>,
    ) -> Result<(Value, PathBuf), evo::pipeline::PipelineError> {
        let plan = evo::plan::campaign_plan(&self.camp.join("campaign.json")).unwrap();
        let mut opts = CampaignOptions {
            sandbox: Some(SandboxMode::Off),
            resume,
            ..CampaignOptions::new(
                Arc::new(runners.clone()),
                Hold::External("a test's own repository".into()),
            )
        };
        if let Some(stop) = stop {
            opts.stop = stop;
        }
        let done = campaign::run_campaign(&plan, &opts, &mut |e| events.push(e))?;
        let table = evo::report::terminal::render_campaign(&done.summary, &done.run_dir);
        std::fs::write(done.run_dir.join("table.txt"), table).unwrap();
        Ok((serde_json::to_value(&done.summary).unwrap(), done.run_dir))
    }
}

pub(crate) fn rows(s: &Value) -> Vec<&Value> {
    s["rows"].as_array().unwrap().iter().collect()
}

fn brief(run_dir: &Path, agent_run: usize) -> Value {
    let text = std::fs::read_to_string(run_dir.join(format!("logs/agent-{agent_run}.brief.json")));
    serde_json::from_str(&text.unwrap()).unwrap()
}

pub(crate) fn patch(run_dir: &Path, row: &Value) -> String {
    std::fs::read_to_string(run_dir.join(row["patch_file"].as_str().unwrap())).unwrap()
}

#[test]
fn each_round_reads_the_history_and_proposes_something_not_yet_tried() {
    let fx = Fixture::new("history_agent.py", "", r#", "rounds": 3"#);
    let (s, run_dir) = fx.run(&runners(), &mut Vec::new());
    let rows = rows(&s);
    assert_eq!(rows.len(), 3, "{s:#}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["round"], i + 1, "{s:#}");
        assert!(r["parent"].is_null(), "{s:#}");
        assert!(patch(&run_dir, r).contains(&format!("+echo speed-{}", ["a", "b", "c"][i])));
    }
    // Screening ranks; only the confirmation says confirmed, of the fastest idea.
    assert_eq!(rows[0]["status"], "screened");
    assert_eq!(rows[1]["status"], "screened");
    assert_eq!(rows[2]["status"], "confirmed", "{s:#}");
    // Round 2's brief holds round 1's candidate with its figures and patch, and nothing of its own.
    let second = brief(&run_dir, 2);
    assert_eq!(second["brief_version"], 4);
    // No `count` run and no lane counting instructions: no profile, and the brief says why.
    assert!(second["profile"].is_null(), "{second:#}");
    let why = second["profile_unavailable"].as_str().unwrap();
    assert!(why.contains("`main` declares no `count` run"), "{why}");
    assert_eq!(
        (second["round"].clone(), second["rounds"].clone()),
        (2.into(), 3.into())
    );
    let history = second["history"].as_array().unwrap();
    assert_eq!(history.len(), 1, "{second:#}");
    assert_eq!(history[0]["name"], "agent-1");
    assert_eq!(history[0]["status"], "screened");
    assert_eq!(history[0]["screening_pairs"], 5);
    let median = history[0]["screening_median"].as_f64().unwrap();
    assert!((median - 1.25).abs() < 0.05, "{second:#}");
    assert!(
        history[0]["patch"]
            .as_str()
            .unwrap()
            .contains("+echo speed-a")
    );
    assert!(brief(&run_dir, 1)["history"].as_array().unwrap().is_empty());
    assert_eq!(brief(&run_dir, 3)["history"].as_array().unwrap().len(), 2);
    // The journal carries the round too.
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let candidates: Vec<Value> = (journal.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["entry"] == "candidate")
        .collect();
    let rounds: Vec<&Value> = candidates.iter().map(|c| &c["round"]).collect();
    assert_eq!(rounds, [1, 2, 3]);
}

#[test]
fn no_holdout_name_command_or_finding_ever_reaches_a_brief() {
    let fx = Fixture::new("history_agent.py", "", r#", "rounds": 3"#);
    let (s, run_dir) = fx.run(&runners(), &mut Vec::new());
    assert_eq!(rows(&s).len(), 3);
    let mut seen = 0;
    for entry in std::fs::read_dir(run_dir.join("logs")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // What evo gave each agent, and what each agent printed of what it read.
        if name.starts_with("agent-") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(!text.contains(SEALED_NAME), "{name}: {text}");
            assert!(!text.contains("holdout-quokka"), "{name}: {text}");
            assert!(!text.contains("holdout"), "{name}: {text}");
            seen += usize::from(text.contains("\"history\""));
        }
    }
    // Three briefs and the three copies the agents printed.
    assert_eq!(seen, 6);
    // The confirmation did run the holdout: the names were there to leak.
    let fast = rows(&s)[2];
    let result = run_dir
        .join(fast["confirmation_run_dir"].as_str().unwrap())
        .join("result.json");
    assert!(
        std::fs::read_to_string(result)
            .unwrap()
            .contains(SEALED_NAME)
    );
}

#[test]
fn with_base_best_a_run_starts_from_the_best_tree_and_its_patch_is_the_whole_change() {
    let fx = Fixture::new(
        "history_agent.py",
        r#", "base": "best""#,
        r#", "rounds": 2"#,
    );
    let (s, run_dir) = fx.run(&runners(), &mut Vec::new());
    let rows = rows(&s);
    assert_eq!(rows[1]["parent"], rows[0]["index"], "{s:#}");
    assert_eq!(rows[1]["round"], 2);
    let second = patch(&run_dir, rows[1]);
    // Its parent's change and its own, both against the baseline.
    assert!(
        second.contains("+echo speed-a") && second.contains("+echo speed-b"),
        "{second}"
    );
    assert_eq!(brief(&run_dir, 2)["parent"]["index"], rows[0]["index"]);
    assert_eq!(rows[1]["status"], "confirmed", "{s:#}");
    // The confirmation records where the search found it, and the PR text says so.
    let confirmed = run_dir.join(rows[1]["confirmation_run_dir"].as_str().unwrap());
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(confirmed.join("result.json")).unwrap())
            .unwrap();
    let lineage = &result["search"]["lineage"];
    assert_eq!(
        (&lineage["name"], &lineage["round"], &lineage["rounds"]),
        (&Value::from("agent-2"), &Value::from(2), &Value::from(2)),
        "{lineage:#}"
    );
    assert_eq!(lineage["agent_runs"], 2, "{lineage:#}");
    assert_eq!(
        lineage["ancestors"],
        serde_json::json!([{ "name": "agent-1", "round": 1 }])
    );
    let body = std::fs::read_to_string(confirmed.join("pr_body.md")).unwrap();
    assert!(
        body.contains("2 candidates were tried over 2 rounds (2 agent runs);")
            && body.contains(
                "This candidate, `agent-2`, came from round 2 and was built on `agent-1` (round 1)."
            ),
        "{body}"
    );
    // The terminal table says each candidate's round and what it was built on.
    let table = std::fs::read_to_string(run_dir.join("table.txt")).unwrap();
    assert!(table.contains("agent-1 (round 1) "), "{table}");
    assert!(table.contains("agent-2 (round 2, on #1) "), "{table}");
}

#[test]
fn stop_after_ends_the_search_once_rounds_stop_gaining() {
    let fx = Fixture::new("stubborn_agent.sh", "", r#", "rounds": 5, "stop_after": 1"#);
    let (s, run_dir) = fx.run(&runners(), &mut Vec::new());
    let rows = rows(&s);
    // Round 1 gains, round 2 changes nothing: round 3 never starts.
    assert_eq!(rows.len(), 2, "{s:#}");
    assert_eq!(rows[1]["status"], "no_change");
    let why = s["search_ended"].as_str().unwrap();
    assert!(
        why.starts_with("search.stop_after") && why.contains("after round 2"),
        "{why}"
    );
    let table = std::fs::read_to_string(run_dir.join("table.txt")).unwrap();
    assert!(
        table.contains("the search ended early: search.stop_after"),
        "{table}"
    );
    assert_eq!(rows[0]["status"], "confirmed");
}

#[test]
fn the_budgets_end_the_search_before_a_new_agent_run_and_say_what_is_left() {
    let fx = Fixture::new(
        "history_agent.py",
        r#", "count": 2"#,
        r#", "rounds": 3, "max_agent_runs": 3"#,
    );
    let mut events = Vec::new();
    let (s, _) = fx.run(&runners(), &mut events);
    assert_eq!(rows(&s).len(), 3, "{s:#}");
    assert!(
        s["search_ended"]
            .as_str()
            .unwrap()
            .starts_with("search.max_agent_runs"),
        "{s:#}"
    );
    let left: Vec<(usize, Option<usize>)> = (events.iter())
        .filter_map(|e| match e {
            Event::Budget(b) => Some((b.round, b.agent_runs)),
            _ => None,
        })
        .collect();
    assert_eq!(left, [(1, Some(3)), (1, Some(2)), (2, Some(1))]);

    let fx = Fixture::new(
        "history_agent.py",
        "",
        r#", "rounds": 3, "max_candidates": 2"#,
    );
    let (s, _) = fx.run(&runners(), &mut Vec::new());
    assert_eq!(rows(&s).len(), 2, "{s:#}");
    assert!(
        s["search_ended"]
            .as_str()
            .unwrap()
            .starts_with("search.max_candidates")
    );
}

/// Stops the run once the agent has started `after` times.
struct AfterAgentRuns {
    runs: Arc<AtomicUsize>,
    after: usize,
}

impl evo::host::StopCondition for AfterAgentRuns {
    fn requested(&self) -> bool {
        self.runs.load(Ordering::SeqCst) >= self.after
    }
}

#[test]
fn a_round_cut_short_resumes_without_repeating_a_finished_agent_run() {
    let fx = Fixture::new("history_agent.py", r#", "count": 2"#, r#", "rounds": 2"#);
    let first = runners();
    let stop = evo::host::Stop::new(AfterAgentRuns {
        runs: Arc::clone(&first.agent_runs),
        after: 4,
    });
    let mut events = Vec::new();
    let err = fx
        .run_with(&first, &mut events, Some(stop), None)
        .unwrap_err();
    assert!(
        matches!(err, evo::pipeline::PipelineError::Interrupted { .. }),
        "{err}"
    );
    // The fourth run was cut short; three are journaled, the third in round 2.
    assert_eq!(first.agent_runs.load(Ordering::SeqCst), 4);
    let run_id = events
        .iter()
        .find_map(|e| match e {
            Event::Started { run_id, .. } => Some(run_id.clone()),
            _ => None,
        })
        .unwrap();
    let again = runners();
    let (s, run_dir) = fx
        .run_with(&again, &mut Vec::new(), None, Some(run_id))
        .unwrap();
    assert_eq!(
        again.agent_runs.load(Ordering::SeqCst),
        1,
        "only the unfinished run again"
    );
    let rows = rows(&s);
    let rounds: Vec<&Value> = rows.iter().map(|r| &r["round"]).collect();
    assert_eq!(rounds, [1, 1, 2, 2], "{s:#}");
    // Round 2's two runs read the same history: round 1's two candidates.
    assert_eq!(brief(&run_dir, 4)["history"].as_array().unwrap().len(), 2);
    assert_eq!(brief(&run_dir, 4)["run"], 2);
}

#[test]
fn the_search_settings_refuse_unknown_keys_and_the_shipped_campaigns_parse() {
    let campaign = |search: &str| {
        serde_json::from_str::<evo::spec::campaign::Campaign>(&format!(
            r#"{{ "name": "n", "repo": ".", "baseline": "main", "workload": "w.json",
  "search": {search} }}"#
        ))
    };
    let set = campaign(r#"{ "rounds": 3, "stop_after": 1, "max_minutes": 5 }"#).unwrap();
    assert_eq!(set.search.rounds.get(), 3);
    assert_eq!(campaign("{}").unwrap().search.rounds.get(), 1);
    assert!(campaign(r#"{ "round": 3 }"#).is_err());
    assert!(campaign(r#"{ "rounds": 0 }"#).is_err());
    let costed = campaign(r#"{ "max_cost": 2.5 }"#).unwrap();
    assert_eq!(costed.search.max_cost.map(|c| c.get()), Some(2.5));
    for bad in ["0", "-1"] {
        let err = campaign(&format!(r#"{{ "max_cost": {bad} }}"#)).unwrap_err();
        assert!(
            err.to_string().contains("expected a positive cost"),
            "{bad}: {err}"
        );
    }
    assert!(campaign(r#"{ "max_cost": "5" }"#).is_err());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "campaigns/c_kernels_search.json",
        "examples/agents/campaign.json",
    ] {
        let plan =
            evo::plan::campaign_plan(&root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(plan.spec.search.rounds.get() >= 2, "{file}");
        let agent = plan.spec.agent.unwrap();
        assert_eq!(agent.base, evo::spec::campaign::AgentBase::Best, "{file}");
    }
}

#[test]
fn evo_agent_build_flags_edits_the_tree_it_runs_in_from_the_brief_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("w/Makefile"),
        "CFLAGS ?= -O2\nprog:\n\tcc $(CFLAGS) -o prog p.c\n",
    );
    let schema = util::evo().args(["schema", "brief"]).output().unwrap();
    assert!(schema.status.success());
    let schema: Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert!(schema["properties"]["history"].is_object(), "{schema:#}");
    // A brief of round 2 whose history says -O3 was tried and gained.
    let history = r#"[{ "index": 1, "name": "agent-1", "source": "agent", "round": 1,
      "parent": null, "status": "screened", "reason": "", "screening_median": 1.2,
      "screening_pairs": 3, "explanation": null, "patch_truncated": false,
      "patch": "--- a/w/Makefile\n+++ b/w/Makefile\n-CFLAGS ?= -O2\n+CFLAGS ?= -O3\n" }]"#;
    let brief = format!(
        r#"{{ "brief_version": 1, "objective": "", "bottleneck": "", "constraints": [],
  "workload": "w", "build": "make", "build_cwd": "w", "test": [], "scenarios": [],
  "protected": [], "config_files": [], "search_seed": 1,
  "explanation_file": "EVO_EXPLANATION.md", "round": 2, "rounds": 2, "run": 1,
  "runs_per_round": 1, "parent": null, "history": {history} }}"#
    );
    let mut child = util::evo()
        .args(["agent", "build-flags"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(brief.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", util::text(&out));
    let makefile = std::fs::read_to_string(dir.path().join("w/Makefile")).unwrap();
    assert!(
        makefile.starts_with("CFLAGS ?= -O3 -march=native\n"),
        "{makefile}"
    );
    let why = std::fs::read_to_string(dir.path().join("EVO_EXPLANATION.md")).unwrap();
    assert!(
        why.contains("-march=native") && why.contains("1.200×"),
        "{why}"
    );
    // Not a brief: a usage error, nothing changed.
    let bad = util::evo()
        .args(["agent", "build-flags"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", util::text(&bad));
}

#[test]
fn a_baseline_that_cannot_be_profiled_leaves_the_briefs_without_a_profile_and_the_search_goes_on() {
    let fx = Fixture::new("history_agent.py", "", "");
    // A count run, which the fake runner cannot run under valgrind.
    let counted = WORKLOAD.replace(
        r#""deterministic_output": true }"#,
        r#""deterministic_output": true, "count": { "run": "./prog count {seed}" } }"#,
    );
    assert_ne!(counted, WORKLOAD);
    write(&fx.camp.join("workload.json"), &counted);
    let (s, run_dir) = fx.run(&runners(), &mut Vec::new());
    let first = brief(&run_dir, 1);
    assert!(first["profile"].is_null(), "{first:#}");
    let why = first["profile_unavailable"].as_str().unwrap();
    assert!(
        why.starts_with("the baseline's run of `main` under callgrind gave no profile")
            || why.starts_with("valgrind is not installed"),
        "{why}"
    );
    assert!(!why.contains(&run_dir.display().to_string()), "{why}");
    assert_eq!(rows(&s)[0]["status"], "confirmed", "{s:#}");
}

/// Whether the machine's `cc` is GCC, the compiler `evo agent build-flags` writes a
/// profile-guided build for.
fn cc_is_gcc() -> bool {
    let out = Command::new("cc").arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.contains("Free Software Foundation") && !text.contains("clang")
}

#[test]
fn evo_agent_build_flags_writes_a_profile_guided_build_that_builds_and_computes_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/ckernels");
    for arm in ["base", "pgo"] {
        let status = Command::new("cp")
            .args(["-r", kernels.to_str().unwrap()])
            .arg(dir.path().join(arm))
            .status()
            .unwrap();
        assert!(status.success());
    }
    // Round 1, run 5: with no history the runs take -O3, -march=native, -flto, unrolling, then
    // profile-guided optimisation, where the compiler is GCC.
    let brief = r#"{ "brief_version": 4, "objective": "", "bottleneck": "", "constraints": [],
  "workload": "ckernels", "build": "make -s", "build_cwd": "", "test": [],
  "scenarios": [{ "name": "train", "cwd": "",
    "run": "./ckernels bench --seed {seed} --B 2 --T 16 --C 32 --NH 4 --iters 1",
    "check": "./ckernels check --seed {seed} --B 3 --T 11 --C 40 --NH 4" }],
  "protected": [], "config_files": ["Makefile"], "search_seed": 1,
  "explanation_file": "EVO_EXPLANATION.md", "round": 1, "rounds": 1, "run": 5,
  "runs_per_round": 5, "parent": null, "history": [] }"#;
    let mut child = util::evo()
        .args(["agent", "build-flags"])
        .current_dir(dir.path().join("pgo"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    (child.stdin.take().unwrap())
        .write_all(brief.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", util::text(&out));
    let makefile = std::fs::read_to_string(dir.path().join("pgo/Makefile")).unwrap();
    if !cc_is_gcc() {
        assert!(!makefile.contains("-fprofile-use"), "{makefile}");
        assert!(
            util::text(&out).contains("no change"),
            "{}",
            util::text(&out)
        );
        return;
    }
    assert!(
        makefile.contains("-fprofile-generate")
            && makefile.contains("--seed 2 ")
            && makefile.contains("-fprofile-use"),
        "{makefile}"
    );
    let why = std::fs::read_to_string(dir.path().join("pgo/EVO_EXPLANATION.md")).unwrap();
    assert!(why.contains("profile-guided"), "{why}");
    // Both arms build; the profile-guided one recorded its profile and uses it.
    for arm in ["base", "pgo"] {
        let built = Command::new("make")
            .args(["-s", "test"])
            .current_dir(dir.path().join(arm))
            .output()
            .unwrap();
        assert!(built.status.success(), "{arm}: {}", util::text(&built));
    }
    let profiles = std::fs::read_dir(dir.path().join("pgo")).unwrap();
    let gcda = profiles
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".gcda"))
        .count();
    assert!(gcda > 0, "no profile was recorded");
    // The same computation: the check's output is the baseline build's, byte for byte.
    let check = |arm: &str| {
        let out = Command::new("./ckernels")
            .args([
                "check", "--seed", "9", "--B", "3", "--T", "11", "--C", "40", "--NH", "4",
            ])
            .current_dir(dir.path().join(arm))
            .output()
            .unwrap();
        assert!(out.status.success(), "{arm}: {}", util::text(&out));
        out.stdout
    };
    assert_eq!(check("base"), check("pgo"));
}
