//! Multi-arm rounds (docs/design.md §2.3.4): one baseline run shared by every candidate of a
//! round, all on one seed. A round of k candidates costs k + 1 runs where k separate pairs cost
//! 2k, and each candidate still gets one pair per round: its ratios stay independent across
//! rounds (a fresh seed and a fresh baseline run each), which is all its own sequential rule needs.
//! Only screening uses rounds; a confirmation keeps its own pairs.

use super::record::{Arm, Order, RunRecord};
use super::runner::Runner;
use super::schedule::{Inputs, MeasureError, Phase, RunEvent, checked_run, disagreement, seeded};
use crate::measure::runner::RunSpec;

/// One round to run: the baseline and each candidate once, on one seed.
pub struct Round<'a> {
    pub baseline: &'a RunSpec,
    pub candidates: &'a [&'a RunSpec],
    /// Whether the baseline runs before every candidate or after every one (alternate it from
    /// round to round, so that a drift within rounds cancels).
    pub baseline_first: bool,
    /// Where the candidates start: candidate `rotate % k` runs first, so that none always runs
    /// nearest the baseline.
    pub rotate: usize,
    pub phase: Phase,
}

/// What one round ran: the shared baseline run, and each candidate's run (in the order of
/// `Round::candidates`) with the reason its output disagrees with the baseline's, if it does.
#[derive(Debug)]
pub struct RoundRuns {
    pub seed: Option<u64>,
    /// Where the baseline ran relative to every candidate of the round.
    pub order: Order,
    pub baseline: RunRecord,
    pub candidates: Vec<Result<CandidateRun, MeasureError>>,
}

/// A candidate's run of a round that exited successfully.
#[derive(Debug)]
pub struct CandidateRun {
    pub run: RunRecord,
    /// Why its output disagrees with the baseline's for the same seed (`Inputs::agree`).
    pub differs: Option<String>,
}

/// Runs one round. A failed baseline run fails the round; a failed candidate run is that
/// candidate's alone, and the others still run.
pub fn run_round(
    runner: &mut dyn Runner,
    round: Round<'_>,
    inputs: &mut Inputs<'_>,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<RoundRuns, MeasureError> {
    let k = round.candidates.len();
    let specs = std::iter::once(round.baseline).chain(round.candidates.iter().copied());
    let seed = inputs.next_seed_of(specs);
    let total = k + 1;
    let mut done = 0;
    let mut event = |arm, wall_s| {
        on_run(RunEvent {
            phase: round.phase,
            done,
            total,
            arm,
            wall_s,
            plan: None,
        });
        done += 1;
    };
    let b_spec = seeded(round.baseline, seed);
    let run_baseline = |runner: &mut dyn Runner| checked_run(runner, &b_spec, Arm::Baseline, seed);
    let mut baseline = None;
    if round.baseline_first {
        let run = run_baseline(runner)?;
        event(Arm::Baseline, run.wall_s);
        baseline = Some(run);
    }
    let mut ran = Vec::with_capacity(k);
    for j in (0..k).map(|i| (i + round.rotate) % k) {
        let spec = seeded(round.candidates[j], seed);
        let run = checked_run(runner, &spec, Arm::Candidate, seed);
        if let Ok(r) = &run {
            event(Arm::Candidate, r.wall_s);
        }
        ran.push((j, run));
    }
    ran.sort_by_key(|(j, _)| *j);
    let baseline = match baseline {
        Some(b) => b,
        None => {
            let run = run_baseline(runner)?;
            event(Arm::Baseline, run.wall_s);
            run
        }
    };
    let candidates = (ran.into_iter().zip(round.candidates))
        .map(|((_, run), spec)| {
            let run = run?;
            let spec = seeded(spec, seed);
            let differs = disagreement(inputs, (&b_spec, &baseline), (&spec, &run));
            Ok(CandidateRun { run, differs })
        })
        .collect();
    Ok(RoundRuns {
        seed,
        order: match round.baseline_first {
            true => Order::BaselineFirst,
            false => Order::CandidateFirst,
        },
        baseline,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::measure::fake::{FakeBehavior, FakeRunner};

    fn spec(command: &str) -> RunSpec {
        RunSpec::new(command, Duration::from_secs(1))
    }

    #[test]
    fn one_baseline_run_serves_every_candidate_of_a_round() {
        let mut runner = FakeRunner::new(1)
            .with("base", FakeBehavior::Times(vec![2.0]))
            .with("c1", FakeBehavior::Times(vec![1.0]))
            .with("c2", FakeBehavior::Times(vec![4.0]))
            .with(
                "c3",
                FakeBehavior::Fails {
                    code: 3,
                    stderr: String::new(),
                },
            );
        let (b, c1, c2, c3) = (spec("base"), spec("c1"), spec("c2"), spec("c3"));
        let candidates = [&c1, &c2, &c3];
        let mut events = 0;
        let round = Round {
            baseline: &b,
            candidates: &candidates,
            baseline_first: false,
            rotate: 1,
            phase: Phase::Pairs,
        };
        let runs = run_round(&mut runner, round, &mut Inputs::none(), &mut |_| {
            events += 1
        })
        .expect("the baseline ran");
        // Rotated by one, the baseline last: k + 1 runs for k candidates.
        assert_eq!(runner.calls(), ["c2", "c3", "c1", "base"]);
        assert_eq!(runs.order, Order::CandidateFirst);
        assert_eq!(runs.baseline.wall_s, 2.0);
        let walls: Vec<Option<f64>> = (runs.candidates.iter())
            .map(|c| c.as_ref().ok().map(|c| c.run.wall_s))
            .collect();
        assert_eq!(walls, [Some(1.0), Some(4.0), None]);
        assert!(matches!(
            runs.candidates[2],
            Err(MeasureError::RunFailed {
                arm: Arm::Candidate,
                ..
            })
        ));
        // A failed run is not a finished one for progress.
        assert_eq!(events, 3);
    }

    #[test]
    fn a_failed_baseline_fails_the_round() {
        let mut runner = FakeRunner::new(1)
            .with(
                "base",
                FakeBehavior::Fails {
                    code: 1,
                    stderr: String::new(),
                },
            )
            .with("c1", FakeBehavior::Times(vec![1.0]));
        let (b, c1) = (spec("base"), spec("c1"));
        let round = Round {
            baseline: &b,
            candidates: &[&c1],
            baseline_first: true,
            rotate: 0,
            phase: Phase::Pairs,
        };
        let e = run_round(&mut runner, round, &mut Inputs::none(), &mut |_| {});
        assert!(matches!(
            e,
            Err(MeasureError::RunFailed {
                arm: Arm::Baseline,
                ..
            })
        ));
        assert_eq!(runner.calls(), ["base"], "no candidate runs after it");
    }

    #[test]
    fn every_run_of_a_round_computes_on_one_seed() {
        let mut runner = FakeRunner::new(1)
            .with("base 42", FakeBehavior::Times(vec![1.0]))
            .with("c1 42", FakeBehavior::Times(vec![1.0]))
            .with("c2 42", FakeBehavior::Times(vec![1.0]));
        let (b, c1, c2) = (spec("base {seed}"), spec("c1 {seed}"), spec("c2 {seed}"));
        let mut next = 41;
        let mut draw = || {
            next += 1;
            next
        };
        let mut inputs = Inputs {
            seeds: Some(&mut draw),
            agree: None,
        };
        let round = Round {
            baseline: &b,
            candidates: &[&c1, &c2],
            baseline_first: true,
            rotate: 0,
            phase: Phase::Pairs,
        };
        let runs = run_round(&mut runner, round, &mut inputs, &mut |_| {}).unwrap();
        assert_eq!(runs.seed, Some(42));
        assert_eq!(runner.calls(), ["base 42", "c1 42", "c2 42"]);
    }
}
