//! A synthetic confirmation whose candidate-controlled fields all hold one hostile string, for
//! `hostile_pr_text`: self-consistent figures from evo's own statistics, no builds or runs.

use evo::environment::{Environment, Machine};
use evo::evidence::figures::{self, BenchSettings};
use evo::evidence::result::*;
use evo::evidence::verdict::{self, gate};
use evo::measure::record::{ExitStatus, Order, Pair, RunRecord, Rusage};
use evo::measure::sandbox::SandboxRecord;
use evo::receipt;

fn run(wall_s: f64, stderr_tail: &str) -> RunRecord {
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

fn pairs(n: usize, speedup: f64, tail: &str) -> Vec<Pair> {
    (0..n)
        .map(|i| {
            let b = 0.5 * (1.0 + 0.001 * (i % 3) as f64);
            let order = [Order::CandidateFirst, Order::BaselineFirst][i % 2];
            Pair::new(i, order, run(b, ""), run(b / speedup, tail))
        })
        .collect()
}

fn scenario(name: &str, training: bool, h: &str) -> ScenarioResult {
    let measured = pairs(9, 1.05, h);
    let aa = if training { pairs(11, 1.0, "") } else { vec![] };
    // Sealing replaces holdout commands wherever they appear: keep them apart from the rest.
    let command = if training {
        "./run 100"
    } else {
        "./run-holdout 30"
    };
    let settings = BenchSettings {
        pairs: 9,
        max_pairs: 9,
        budget_s: None,
        aa_pairs: 11,
        warmup: 1,
        min_effect: 0.01,
        target_effect: 0.015,
        first: Order::CandidateFirst,
        order_seed: None,
        mde_seed: 7,
        timeout_s: 20.0,
    };
    ScenarioResult {
        name: name.into(),
        role: if training {
            Role::Training
        } else {
            Role::Holdout
        },
        baseline_command: command.into(),
        candidate_command: command.into(),
        cwd: ".".into(),
        warmups: vec![],
        training: training.then(|| figures::figures(&settings, &aa, &measured).unwrap()),
        holdout: (!training).then(|| receipt::recompute::holdout_figures(&measured, None).unwrap()),
        aa_pairs: aa,
        pairs: measured,
        timed_output_consistent: Some(true),
        replay: None,
        instructions: None,
        aa_second_build: false,
        order_seed: None,
    }
}

fn differential(scenario: &str, role: Role, h: &str) -> DifferentialRecord {
    DifferentialRecord {
        scenario: scenario.into(),
        role,
        lane: CheckLane::Differential,
        rule: "exact".into(),
        baseline_sha256: "7".repeat(64),
        candidate_sha256: "8".repeat(64),
        same: false,
        summary: Some(h.into()),
        diff: Some(h.into()),
    }
}

/// A measured result with `h` in every field the candidate controls, and in the training
/// scenario's name (the workload's, but it fills a table cell). The holdout's output stays plain:
/// the receipt seals it, and every gate detail quoting it whole, which would hide `h`.
/// `rejected`: the tests gate failed (with `h` as its detail), so the verdict is rejected.
pub fn hostile_result(h: &str, rejected: bool) -> ConfirmResult {
    let mut gates: Vec<Gate> = GateName::ALL
        .iter()
        .map(|name| gate(*name, GateStatus::Passed, h))
        .collect();
    if rejected {
        gates[4] = gate(GateName::Tests, GateStatus::Failed, h);
    }
    let mut scenarios = vec![scenario(h, true, h), scenario("held", false, "")];
    let plan = evo::evidence::result::holdout_plan(
        &scenarios,
        evo::evidence::result::HoldoutCounts {
            pairs: 9,
            max_pairs: 9,
            warmups: 1,
            budget_s: None,
            budget_split: None,
        },
        &[],
    );
    // The holdout's figures follow its plan's looks.
    scenarios[1].holdout =
        Some(receipt::recompute::holdout_figures(&scenarios[1].pairs, plan.as_ref()).unwrap());
    let d = verdict::decide(&gates, &scenarios);
    ConfirmResult::decided(
        Evidence {
            evo_version: "0.0.0-test".into(),
            rules: evo::evidence::verdict::RULES,
            run_id: "20261201T120000Z-x-0123456".into(),
            campaign_file: "/c/campaign.json".into(),
            campaign_name: "c".into(),
            repo: "/c/repo".into(),
            baseline_commitish: "main".into(),
            baseline_sha: "0123456789abcdef0123456789abcdef01234567".into(),
            workload_name: "w".into(),
            workload_digest: "1".repeat(64),
            holdout_portfolio_digest: Some("2".repeat(64)),
            holdout_names: vec!["held".into()],
            patch: PatchInfo {
                source: h.into(),
                file: "candidate.patch".into(),
                sha256: "3".repeat(64),
                files: vec![PatchFileChange {
                    path: h.into(),
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
            differential: vec![
                differential(h, Role::Training, h),
                differential("held", Role::Holdout, "no output"),
            ],
            sanitizer_lane_ran: true,
            sanitizer_findings: vec![SanitizerFinding {
                tree: TreeLabel::Candidate,
                // The step names the scenario, whose name is the workload's (here, hostile).
                step: StepName::check(h),
                kind: h.into(),
                excerpt: h.into(),
            }],
            scenarios,
            gates,
            timings: Timings::default(),
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
            sandbox: SandboxRecord {
                enabled: false,
                tool: None,
                detail: "off: the campaign sets sandbox.mode to \"off\"".into(),
                ..Default::default()
            },
            timed_programs_unchanged: false,
            from_agent: false,
            read_only_inputs: Vec::new(),
        },
        d,
    )
}
