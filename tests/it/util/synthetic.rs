//! The one synthetic confirmation the tests build results from: fixed runs whose figures are
//! computed by evo's own statistics (so the result is self-consistent and recomputes), no builds
//! or runs. [`plain`] is a clean accepted confirmation with a training scenario `plain` and a
//! sealed holdout `held`; [`hostile_result`] puts one string in every field a candidate controls.
//! A test that needs another confirmation says what differs: its scenarios ([`Scenario`]), its
//! steps ([`step`]), and any field of the evidence by struct update on [`evidence`], then
//! [`decided`] decides it as a confirmation does.

use evo::environment::{Environment, Machine};
use evo::evidence::figures::{self, BenchSettings};
use evo::evidence::result::*;
use evo::evidence::verdict::{self, gate};
use evo::measure::record::{Arm, ExitStatus, Order, Pair, Purpose, RunRecord, Rusage, WarmupRun};
use evo::measure::sandbox::SandboxRecord;
use evo::receipt;

/// The training scenario's and the holdout's commands in [`plain`]. Sealing replaces holdout
/// commands wherever they appear: the two are kept apart.
pub const TRAINING_COMMAND: &str = "./run 100";
pub const HOLDOUT_COMMAND: &str = "./run-holdout 30";

/// A run that took `wall_s` (all of it user CPU time, 1000 KiB at its peak) and left
/// `stderr_tail`.
pub fn run(wall_s: f64, stderr_tail: &str) -> RunRecord {
    RunRecord {
        wall_s,
        rusage: Rusage {
            user_s: wall_s,
            sys_s: 0.001,
            max_rss_kib: 1000,
            voluntary_cs: 1,
            involuntary_cs: 1,
        },
        status: ExitStatus::Exited { code: 0 },
        timed_out: false,
        leftover_processes: false,
        stdout_sha256: "5".repeat(64),
        stdout_bytes: 1,
        stderr_tail: stderr_tail.to_string(),
        steal_s: None,
    }
}

/// Relative jitter of noisy runs, symmetric so an A/A interval contains 1.
const JITTER: [f64; 11] = [
    0.004, -0.003, 0.001, 0.006, -0.005, 0.002, -0.001, 0.003, -0.004, 0.005, 0.0,
];

/// `n` pairs: the baseline about 0.5 s, the candidate `speedup` times faster, the runs leaving
/// `tails` on stderr (the baseline's, the candidate's). Quiet (`noisy` false), the baseline's runs are 0.1% apart from pair to pair
/// and each candidate's exactly `speedup` times faster; noisy, both jitter (see [`JITTER`]) and
/// the ratio with them. Compared pairs alternate, candidate first in the even ones; A/A pairs
/// (`aa`) keep the baseline first, as a confirmation runs them.
pub fn pairs(n: usize, speedup: f64, tails: [&str; 2], aa: bool, noisy: bool) -> Vec<Pair> {
    (0..n)
        .map(|i| {
            let (b, c) = match noisy {
                true => {
                    let j = JITTER[i % JITTER.len()];
                    let b = 0.5 * (1.0 + j);
                    (b, b / (speedup * (1.0 + j / 2.0)))
                }
                false => {
                    let b = 0.5 * (1.0 + 0.001 * (i % 3) as f64);
                    (b, b / speedup)
                }
            };
            let order = match aa {
                true => Order::BaselineFirst,
                false => [Order::CandidateFirst, Order::BaselineFirst][i % 2],
            };
            Pair::new(i, order, run(b, tails[0]), run(c, tails[1]))
        })
        .collect()
}

/// The settings a synthetic confirmation ran under: `pairs` compared pairs, no more, after
/// `aa_pairs` A/A pairs, one warmup per arm, a 1% minimum effect.
pub fn settings(pairs: usize, aa_pairs: usize) -> BenchSettings {
    BenchSettings {
        pairs,
        max_pairs: pairs,
        budget_s: None,
        aa_pairs,
        warmup: 1,
        min_effect: 0.01,
        target_effect: 0.015,
        first: Order::CandidateFirst,
        order_seed: None,
        mde_seed: 7,
        timeout_s: 20.0,
    }
}

/// One scenario of a synthetic confirmation: a warmup run of each arm, then 9 pairs (and, for a
/// training scenario, 11 A/A pairs) of [`pairs`].
#[derive(Clone, Copy)]
pub struct Scenario<'a> {
    pub name: &'a str,
    pub role: Role,
    pub command: &'a str,
    pub speedup: f64,
    /// What every run of the candidate leaves on stderr.
    pub stderr: &'a str,
    /// What every run of the baseline leaves on stderr.
    pub baseline_stderr: &'a str,
    /// Runs that jitter from pair to pair (see [`pairs`]).
    pub noisy: bool,
}

impl<'a> Scenario<'a> {
    /// Training scenario `name`: 1.05× faster, [`TRAINING_COMMAND`], quiet runs.
    pub fn training(name: &'a str) -> Scenario<'a> {
        Scenario {
            name,
            role: Role::Training,
            command: TRAINING_COMMAND,
            speedup: 1.05,
            stderr: "",
            baseline_stderr: "",
            noisy: false,
        }
    }

    /// Holdout `name`: 1.05× faster, [`HOLDOUT_COMMAND`], quiet runs.
    pub fn holdout(name: &'a str) -> Scenario<'a> {
        Scenario {
            role: Role::Holdout,
            command: HOLDOUT_COMMAND,
            ..Scenario::training(name)
        }
    }

    /// The scenario's runs and figures (a holdout's without a plan: see [`plan_holdouts`]).
    pub fn result(&self) -> ScenarioResult {
        let training = self.role == Role::Training;
        let tails = [self.baseline_stderr, self.stderr];
        let measured = pairs(9, self.speedup, tails, false, self.noisy);
        let aa = if training {
            pairs(11, 1.0, [""; 2], true, self.noisy)
        } else {
            vec![]
        };
        let settings = settings(measured.len(), aa.len());
        // One warmup of each arm, as `confirm.warmup: 1` runs them.
        let warmups = [(Arm::Candidate, 0.5 / self.speedup), (Arm::Baseline, 0.5)]
            .into_iter()
            .map(|(arm, wall_s)| WarmupRun {
                arm,
                purpose: Purpose::Warmup,
                run: run(wall_s, tails[usize::from(arm == Arm::Candidate)]),
                seed: None,
            })
            .collect();
        ScenarioResult {
            name: self.name.into(),
            role: self.role,
            baseline_command: self.command.into(),
            candidate_command: self.command.into(),
            cwd: ".".into(),
            warmups,
            training: training.then(|| figures::figures(&settings, &aa, &measured).unwrap()),
            holdout: (!training)
                .then(|| receipt::recompute::holdout_figures(&measured, None).unwrap()),
            aa_pairs: aa,
            pairs: measured,
            timed_output_consistent: Some(true),
            replay: None,
            instructions: None,
            aa_second_build: false,
            aa_from: None,
            order_seed: None,
            description: None,
        }
    }
}

/// The holdouts' figures as their plan's looks decide them (9 pairs, no more), as a confirmation
/// computes them once its training scenarios are measured.
pub fn plan_holdouts(scenarios: &mut [ScenarioResult]) {
    let counts = HoldoutCounts {
        pairs: 9,
        max_pairs: 9,
        warmups: 1,
        budget_s: None,
        budget_split: None,
    };
    let plan = holdout_plan(scenarios, counts, &[]);
    for s in scenarios.iter_mut().filter(|s| s.role == Role::Holdout) {
        s.holdout = Some(receipt::recompute::holdout_figures(&s.pairs, plan.as_ref()).unwrap());
    }
}

/// Every gate passed, each with the detail `detail` gives it.
pub fn passed_gates(detail: impl Fn(GateName) -> String) -> Vec<Gate> {
    (GateName::ALL.iter())
        .map(|name| gate(*name, GateStatus::Passed, detail(*name)))
        .collect()
}

/// A step of `tree` that ran `command` and succeeded in 0.25 s.
pub fn step(step: &str, tree: &str, command: &str) -> StepRecord {
    StepRecord {
        step: step.parse().unwrap(),
        tree: tree.parse().unwrap(),
        command: command.into(),
        cwd: ".".into(),
        status: ExitStatus::Exited { code: 0 },
        timed_out: false,
        leftover_processes: false,
        wall_s: 0.25,
        stdout_sha256: "6".repeat(64),
        stdout_log: format!("logs/{tree}/{step}.stdout.log"),
        stderr_log: format!("logs/{tree}/{step}.stderr.log"),
    }
}

/// The differential record of `scenario`: the same output in both trees.
pub fn differential(scenario: &str, role: Role) -> DifferentialRecord {
    DifferentialRecord {
        scenario: scenario.into(),
        role,
        lane: CheckLane::Differential,
        rule: "exact".into(),
        baseline_sha256: "7".repeat(64),
        candidate_sha256: "7".repeat(64),
        same: true,
        summary: None,
        diff: None,
    }
}

/// The evidence of [`plain`] around `scenarios` and `gates`: its identities, patch, machine and
/// records, each a field a test may replace by struct update.
pub fn evidence(scenarios: Vec<ScenarioResult>, gates: Vec<Gate>) -> Evidence {
    let holdouts = scenarios.iter().filter(|s| s.role == Role::Holdout);
    let holdout_names: Vec<String> = holdouts.map(|s| s.name.clone()).collect();
    let differential = (scenarios.iter())
        .map(|s| differential(&s.name, s.role))
        .collect();
    Evidence {
        evo_version: "0.0.0-test".into(),
        rules: verdict::RULES,
        run_id: "20261201T120000Z-x-0123456".into(),
        campaign_file: "/c/campaign.json".into(),
        campaign_name: "c".into(),
        repo: "/c/repo".into(),
        baseline_commitish: "main".into(),
        baseline_sha: "0123456789abcdef0123456789abcdef01234567".into(),
        workload_name: "w".into(),
        workload_digest: "1".repeat(64),
        holdout_portfolio_digest: (!holdout_names.is_empty()).then(|| "2".repeat(64)),
        holdout_names,
        patch: PatchInfo {
            source: "candidate.patch".into(),
            file: "candidate.patch".into(),
            sha256: "3".repeat(64),
            files: vec![PatchFileChange {
                path: "prog.c".into(),
                status: "modified".into(),
                added: 1,
                removed: 1,
            }],
            added: 1,
            removed: 1,
            applier: Some("libgit2".into()),
        },
        overlay: vec![FileDigest {
            path: "bench/harness.c".into(),
            sha256: "4".repeat(64),
        }],
        seed: 7,
        holdout_seed: None,
        warnings: Vec::new(),
        min_effect: 0.01,
        metric: Default::default(),
        environment: Environment {
            machine: Machine {
                cpu_model: "CPU".into(),
                logical_cores: 4,
                mem_total_kib: 1 << 24,
                kernel: "6.1".into(),
                virtualization: "none".into(),
            },
            load_1m_before: Some(0.1),
            load_1m_after: Some(0.1),
            quiet: None,
            cpus: None,
            job: None,
        },
        steps: vec![],
        artifacts: vec![],
        differential,
        sanitizer_lane_ran: true,
        sanitizer_findings: vec![],
        scenarios,
        gates,
        timings: Timings::default(),
        candidates_tried: 1,
        search: None,
        explanation: None,
        config_lane: ConfigLane {
            reason: "the patch touches no build configuration file".into(),
            ..Default::default()
        },
        sandbox: SandboxRecord {
            enabled: false,
            tool: None,
            detail: "off: the campaign sets sandbox.mode to \"off\"".into(),
            ..Default::default()
        },
        timed_programs_unchanged: false,
        single_threaded: false,
        unsealed_holdouts: Vec::new(),
        draws: Vec::new(),
        from_agent: false,
        read_only_inputs: Vec::new(),
    }
}

/// The result of `evidence`, decided from its gates and scenarios as a confirmation decides.
pub fn decided(evidence: Evidence) -> ConfirmResult {
    let d = verdict::decide(&evidence.gates, &evidence.scenarios);
    ConfirmResult::decided(evidence, d)
}

/// `r` decided again, after a test changed its gates or scenarios.
pub fn decide_again(r: &mut ConfirmResult) {
    let d = verdict::decide(&r.evidence.gates, &r.evidence.scenarios);
    (r.tier, r.verdict, r.reasons) = (d.tier, d.verdict, d.reasons);
}

/// A clean accepted confirmation: training scenario `plain` and holdout `held`, each 1.05× over 9
/// pairs of about 0.5 s per baseline run, every gate passed.
pub fn plain() -> ConfirmResult {
    let mut scenarios = vec![
        Scenario::training("plain").result(),
        Scenario::holdout("held").result(),
    ];
    plan_holdouts(&mut scenarios);
    decided(evidence(scenarios, passed_gates(|g| format!("{g} passed"))))
}

/// [`plain`] with `h` in every field the candidate controls, and in the training scenario's name
/// and description (the workload's, but they fill a table cell and the summary). The holdout's output stays plain: the receipt
/// seals it, and every gate detail quoting it whole, which would hide `h`. `rejected`: the tests
/// gate failed (with `h` as its detail), so the verdict is rejected.
pub fn hostile_result(h: &str, rejected: bool) -> ConfirmResult {
    let mut gates = passed_gates(|_| h.to_string());
    if rejected {
        gates[4] = gate(GateName::Tests, GateStatus::Failed, h);
    }
    let training = Scenario {
        stderr: h,
        ..Scenario::training(h)
    };
    let mut scenarios = vec![training.result(), Scenario::holdout("held").result()];
    // The workload's description of what is timed (the user's, shown beside the speed).
    scenarios[0].description = Some(h.into());
    plan_holdouts(&mut scenarios);
    let differs = |scenario: &str, role: Role, said: &str| DifferentialRecord {
        candidate_sha256: "8".repeat(64),
        same: false,
        summary: Some(said.into()),
        diff: Some(said.into()),
        ..differential(scenario, role)
    };
    let plain = evidence(scenarios, gates);
    decided(Evidence {
        patch: PatchInfo {
            source: h.into(),
            files: vec![PatchFileChange {
                path: h.into(),
                ..plain.patch.files[0].clone()
            }],
            ..plain.patch.clone()
        },
        differential: vec![
            differs(h, Role::Training, h),
            differs("held", Role::Holdout, "no output"),
        ],
        sanitizer_findings: vec![SanitizerFinding {
            tree: TreeLabel::Candidate,
            // The step names the scenario, whose name is the workload's (here, hostile).
            step: StepName::check(h),
            kind: h.into(),
            excerpt: h.into(),
        }],
        candidates_tried: 2,
        // The candidate names of the search: the campaign's.
        search: Some(SearchFigures {
            scenario: "sum-100k".into(),
            pairs: 5,
            median: 1.04,
            ci95: None,
            lineage: Some(Lineage {
                name: h.into(),
                round: 2,
                rounds: 2,
                agent_runs: 1,
                ancestors: vec![Ancestor {
                    name: h.into(),
                    round: 1,
                }],
            }),
        }),
        explanation: Some(h.into()),
        config_lane: ConfigLane {
            reason: h.into(),
            files: vec![h.into()],
            ..Default::default()
        },
        ..plain
    })
}
