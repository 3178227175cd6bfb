//! The order of runs: warmups first, then pairs whose order alternates pair by pair.
//!
//! Alternation spreads slow drift and first-run effects evenly over both arms; the first pair's
//! order is a parameter because confirmation starts with the candidate (DESIGN §2 step 6).

use super::record::{Arm, ExitStatus, Order, Pair, Purpose, RunRecord, WarmupRun};
use super::runner::{RunSpec, Runner, RunnerError};

/// The two commands being compared (for an A/A comparison both are the baseline).
#[derive(Debug, Clone, Copy)]
pub struct Arms<'a> {
    pub baseline: &'a RunSpec,
    pub candidate: &'a RunSpec,
}

impl Arms<'_> {
    fn spec(&self, arm: Arm) -> &RunSpec {
        match arm {
            Arm::Baseline => self.baseline,
            Arm::Candidate => self.candidate,
        }
    }
}

/// Which stretch of a measurement a run belongs to, for progress reporting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Warmup,
    AaPairs,
    Pairs,
}

/// Emitted after every run so a reporter can show progress; measurement itself never prints.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RunEvent {
    pub phase: Phase,
    /// 0-based index of the run within its phase.
    pub done: usize,
    /// Number of runs in the phase.
    pub total: usize,
    pub arm: Arm,
    pub wall_s: f64,
    /// Set only on the announcement that precedes the comparison pairs, once their number is
    /// chosen from the A/A noise; no run was made for that event (`done` 0, `wall_s` 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PairsPlanned>,
}

/// The comparison's pair count, announced before its first run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PairsPlanned {
    /// Pairs that will run.
    pub planned: usize,
    /// Pairs that would resolve the minimum effect (more than `planned` when the cap stops it).
    pub needed: usize,
    /// The A/A noise per pair (σ of the log-ratios).
    pub sigma: f64,
    /// Estimated wall time of the planned pairs, from the A/A run times.
    pub estimated_s: f64,
    /// Estimated wall time of the needed pairs.
    pub needed_s: f64,
}

impl RunEvent {
    /// The announcement of `plan` at the start of the comparison (`first` runs first).
    pub fn announce(plan: PairsPlanned, first: Arm) -> RunEvent {
        RunEvent {
            phase: Phase::Pairs,
            done: 0,
            total: plan.planned * 2,
            arm: first,
            wall_s: 0.0,
            plan: Some(plan),
        }
    }
}

/// A measurement that could not produce a usable number.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error(transparent)]
    Runner(#[from] RunnerError),
    #[error("the {arm} command failed ({status}): `{command}`\n{stderr_tail}", arm = arm_name(*.arm), status = describe_status(.status, *.timed_out), stderr_tail = tail_block(.stderr_tail))]
    RunFailed {
        arm: Arm,
        command: String,
        status: ExitStatus,
        timed_out: bool,
        stderr_tail: String,
    },
}

fn arm_name(arm: Arm) -> &'static str {
    match arm {
        Arm::Baseline => "baseline",
        Arm::Candidate => "candidate",
    }
}

fn describe_status(status: &ExitStatus, timed_out: bool) -> String {
    match (timed_out, status) {
        (true, _) => "timed out and was killed".to_string(),
        (false, ExitStatus::Exited { code }) => format!("exit code {code}"),
        (false, ExitStatus::Signaled { signal }) => {
            format!("killed by signal {signal}, shell code {}", 128 + signal)
        }
    }
}

fn tail_block(tail: &str) -> String {
    if tail.trim().is_empty() {
        "(it wrote nothing to stderr)".to_string()
    } else {
        let indented: Vec<String> = tail.lines().map(|l| format!("  | {l}")).collect();
        format!("last lines of its stderr:\n{}", indented.join("\n"))
    }
}

fn checked_run(
    runner: &mut dyn Runner,
    arms: Arms<'_>,
    arm: Arm,
) -> Result<RunRecord, MeasureError> {
    let spec = arms.spec(arm);
    let run = runner.run(spec)?;
    if !run.succeeded() {
        return Err(MeasureError::RunFailed {
            arm,
            command: spec.command.clone(),
            status: run.status,
            timed_out: run.timed_out,
            stderr_tail: run.stderr_tail.clone(),
        });
    }
    Ok(run)
}

/// Runs `per_arm` warmups of each arm, alternating, and keeps them marked as warmups.
pub fn run_warmups(
    runner: &mut dyn Runner,
    arms: Arms<'_>,
    per_arm: usize,
    first: Order,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<Vec<WarmupRun>, MeasureError> {
    let total = per_arm * 2;
    let mut warmups = Vec::with_capacity(total);
    let mut order = first;
    for _ in 0..per_arm {
        for arm in order.arms() {
            let run = checked_run(runner, arms, arm)?;
            on_run(RunEvent {
                phase: Phase::Warmup,
                done: warmups.len(),
                total,
                arm,
                wall_s: run.wall_s,
                plan: None,
            });
            warmups.push(WarmupRun {
                arm,
                purpose: Purpose::Warmup,
                run,
            });
        }
        order = order.flipped();
    }
    Ok(warmups)
}

/// How the order of runs within pairs evolves from pair to pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairOrder {
    pub first: Order,
    /// Flip the order after every pair (comparisons); `false` keeps it fixed (A/A checks, so a
    /// drift or an order effect shows up as a bias instead of cancelling out).
    pub alternate: bool,
}

/// Runs `count` pairs, back to back, ordered as `order` says.
pub fn run_pairs(
    runner: &mut dyn Runner,
    arms: Arms<'_>,
    count: usize,
    pair_order: PairOrder,
    phase: Phase,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<Vec<Pair>, MeasureError> {
    let mut pairs = Vec::with_capacity(count);
    let mut order = pair_order.first;
    for index in 0..count {
        let mut baseline = None;
        let mut candidate = None;
        for (slot, arm) in order.arms().into_iter().enumerate() {
            let run = checked_run(runner, arms, arm)?;
            on_run(RunEvent {
                phase,
                done: index * 2 + slot,
                total: count * 2,
                arm,
                wall_s: run.wall_s,
                plan: None,
            });
            match arm {
                Arm::Baseline => baseline = Some(run),
                Arm::Candidate => candidate = Some(run),
            }
        }
        if let (Some(b), Some(c)) = (baseline, candidate) {
            pairs.push(Pair::new(index, order, b, c));
        }
        if pair_order.alternate {
            order = order.flipped();
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::measure::fake::{FakeBehavior, FakeRunner};

    fn specs() -> (RunSpec, RunSpec) {
        (
            RunSpec::new("base", Duration::from_secs(1)),
            RunSpec::new("cand", Duration::from_secs(1)),
        )
    }

    #[test]
    fn pairs_alternate_starting_with_the_requested_arm() {
        let (b, c) = specs();
        let mut runner = FakeRunner::new(1)
            .with("base", FakeBehavior::Times(vec![2.0]))
            .with("cand", FakeBehavior::Times(vec![1.0]));
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        let pairs = run_pairs(
            &mut runner,
            arms,
            3,
            PairOrder {
                first: Order::CandidateFirst,
                alternate: true,
            },
            Phase::Pairs,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(
            runner.calls,
            ["cand", "base", "base", "cand", "cand", "base"]
        );
        let orders: Vec<Order> = pairs.iter().map(|p| p.order).collect();
        assert_eq!(
            orders,
            [
                Order::CandidateFirst,
                Order::BaselineFirst,
                Order::CandidateFirst
            ]
        );
        assert!(pairs.iter().all(|p| p.ratio == 2.0));
        assert_eq!(pairs[2].index, 2);
    }

    #[test]
    fn fixed_order_never_flips() {
        let (b, _) = specs();
        let mut runner = FakeRunner::new(1).with("base", FakeBehavior::Times(vec![1.0, 2.0]));
        let arms = Arms {
            baseline: &b,
            candidate: &b,
        };
        let fixed = PairOrder {
            first: Order::BaselineFirst,
            alternate: false,
        };
        let pairs = run_pairs(&mut runner, arms, 3, fixed, Phase::AaPairs, &mut |_| {}).unwrap();
        // First run of each pair takes 1.0, second 2.0: the position effect survives as ratio 0.5.
        assert!(
            pairs
                .iter()
                .all(|p| p.order == Order::BaselineFirst && p.ratio == 0.5)
        );
    }

    #[test]
    fn warmups_are_marked_and_cover_both_arms() {
        let (b, c) = specs();
        let mut runner = FakeRunner::new(1)
            .with("base", FakeBehavior::Times(vec![2.0]))
            .with("cand", FakeBehavior::Times(vec![1.0]));
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        let mut events = Vec::new();
        let w = run_warmups(&mut runner, arms, 2, Order::BaselineFirst, &mut |e| {
            events.push(e)
        })
        .unwrap();
        assert_eq!(w.len(), 4);
        assert!(w.iter().all(|r| r.purpose == Purpose::Warmup));
        assert_eq!(runner.calls, ["base", "cand", "cand", "base"]);
        assert_eq!(events.last().map(|e| (e.done, e.total)), Some((3, 4)));
    }

    #[test]
    fn a_failing_run_names_the_command_and_shows_stderr() {
        let (b, c) = specs();
        let mut runner = FakeRunner::new(1)
            .with("base", FakeBehavior::Times(vec![2.0]))
            .with(
                "cand",
                FakeBehavior::Fails {
                    code: 3,
                    stderr: "boom: no such file\n".to_string(),
                },
            );
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        let err = run_pairs(
            &mut runner,
            arms,
            2,
            PairOrder {
                first: Order::BaselineFirst,
                alternate: true,
            },
            Phase::Pairs,
            &mut |_| {},
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("candidate command failed (exit code 3): `cand`"),
            "{text}"
        );
        assert!(text.contains("  | boom: no such file"), "{text}");
    }
}
