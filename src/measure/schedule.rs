//! The order of runs: warmups first, then pairs in a fixed, alternating or balanced random order.
//!
//! Alternation spreads slow drift and first-run effects evenly over both arms; a balanced random
//! order does the same and also keeps the order unknown to the code being timed (confirmations
//! use it for their comparison pairs). A/A checks keep a fixed order so a bias can show
//! (docs/design.md §3.1).

use super::record::{Arm, ExitStatus, Order, Pair, Purpose, RunRecord, WarmupRun};
use super::runner::{RunSpec, Runner, RunnerError};

/// The placeholder a timed command takes its pair's seed in (as in check commands).
pub const SEED_PLACEHOLDER: &str = "{seed}";

/// What the timed runs of a comparison compute on, and what their outputs must do
/// (docs/design.md §4.6).
///
/// With `seeds`, every pair (and every warmup round) draws a fresh seed that both arms' commands
/// get in place of `{seed}`: no run can know in advance what it will compute on, so a result
/// stored by an earlier run, in whatever state outlives it, answers another question. With
/// `agree`, the two arms' outputs for that seed are compared as soon as the pair has run, and a
/// disagreement stops the measurement.
#[derive(Default)]
pub struct Inputs<'a> {
    /// Draws the next seed.
    pub seeds: Option<&'a mut dyn FnMut() -> u64>,
    /// Why the outputs of one pair's two runs (same seed) disagree, or `None` when they agree.
    pub agree: Option<&'a Agreement<'a>>,
}

/// Says why the outputs of one pair's two runs disagree, or `None` when they agree.
pub type Agreement<'a> = dyn Fn(RunOutputs<'_>) -> Option<String> + 'a;

/// The two runs of one pair or warmup round that `Inputs::agree` compares, with the specs they
/// ran from (whose `stdout_file`, when set, holds what each printed).
#[derive(Clone, Copy)]
pub struct RunOutputs<'a> {
    pub baseline: (&'a RunSpec, &'a RunRecord),
    pub candidate: (&'a RunSpec, &'a RunRecord),
}

impl Inputs<'_> {
    /// The commands run as given, outputs not compared.
    pub fn none() -> Inputs<'static> {
        Inputs::default()
    }

    /// The seed of the next pair of `arms`: none when neither command takes one.
    fn next_seed(&mut self, arms: Arms<'_>) -> Option<u64> {
        self.next_seed_of([arms.baseline, arms.candidate])
    }

    /// The seed of the next round of `specs`: none when no command takes one.
    pub(super) fn next_seed_of<'s>(
        &mut self,
        specs: impl IntoIterator<Item = &'s RunSpec>,
    ) -> Option<u64> {
        let mut specs = specs.into_iter();
        if !specs.any(|spec| spec.command.contains(SEED_PLACEHOLDER)) {
            return None;
        }
        self.seeds.as_mut().map(|draw| draw())
    }
}

/// `spec` with its pair's seed filled in.
pub(super) fn seeded(spec: &RunSpec, seed: Option<u64>) -> std::borrow::Cow<'_, RunSpec> {
    match seed {
        Some(seed) if spec.command.contains(SEED_PLACEHOLDER) => std::borrow::Cow::Owned(RunSpec {
            command: spec.command.replace(SEED_PLACEHOLDER, &seed.to_string()),
            ..spec.clone()
        }),
        _ => std::borrow::Cow::Borrowed(spec),
    }
}

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
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

/// The comparison's pair count, announced before its first run: a training scenario's, or a
/// holdout's (planned from the training A/A noise, docs/design.md §3.10).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PairsPlanned {
    /// Pairs that run at most (a training comparison stops earlier once decided).
    pub planned: usize,
    /// The configured pair count (the least that runs), which progress reports counted on
    /// before the plan.
    pub configured: usize,
    /// Pairs by which a null is ruled out at the minimum effect 80% of the time, or for a holdout
    /// the pairs that resolve its 1% tolerance (more than `planned` when the cap stops it).
    pub needed: usize,
    /// The A/A noise per pair (σ of the log-ratios).
    pub sigma: f64,
    /// Estimated wall time of the planned pairs, from the A/A run times.
    pub estimated_s: f64,
    /// Estimated wall time of the needed pairs.
    pub needed_s: f64,
    /// A training comparison's: the true gain its cap accepts 80% of the time (a fraction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolves_gain: Option<f64>,
    /// A training comparison's minimum effect, the bar a null is ruled out at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_effect: Option<f64>,
    /// A training comparison's: `needed` and `resolves_gain` at the ends of the central 80%
    /// interval of σ the A/A pairs give (`stats::sequential::sigma_range`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranges: Option<PlanRanges>,
}

/// How far a plan's statements may be off from the A/A pairs' own uncertainty: each figure at
/// the quieter and the noisier end of σ's 80% interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PlanRanges {
    pub sigma: [f64; 2],
    pub needed: [usize; 2],
    pub gain: [f64; 2],
    /// A/A pairs σ was estimated from.
    pub aa_pairs: usize,
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
    /// The two runs of one pair, given the same seed, printed outputs that disagree.
    #[error("{what} {index} (seed {seed}): the two runs printed different output for the same seed: {detail}", what = phase_noun(*.phase))]
    OutputsDiffer {
        phase: Phase,
        /// 0-based index of the pair (or warmup round) within its phase.
        index: usize,
        seed: u64,
        detail: String,
        /// The runs of the phase so far, the disagreeing ones last, for the record.
        runs: Box<PhaseRuns>,
    },
    #[error("the {arm} command failed ({status}): `{command}`\n{stderr_tail}", arm = arm_name(*.arm), status = describe_status(.status, *.timed_out), stderr_tail = tail_block(.stderr_tail))]
    RunFailed {
        arm: Arm,
        /// The seed the failed run computed on, when its command takes one.
        seed: Option<u64>,
        command: String,
        status: ExitStatus,
        timed_out: bool,
        stderr_tail: String,
    },
}

fn phase_noun(phase: Phase) -> &'static str {
    match phase {
        Phase::Warmup => "warmup round",
        Phase::AaPairs => "A/A pair",
        Phase::Pairs => "pair",
    }
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

pub(super) fn checked_run(
    runner: &mut dyn Runner,
    spec: &RunSpec,
    arm: Arm,
    seed: Option<u64>,
) -> Result<RunRecord, MeasureError> {
    let run = runner.run(spec)?;
    if !run.succeeded() {
        return Err(MeasureError::RunFailed {
            arm,
            seed,
            command: spec.command.clone(),
            status: run.status,
            timed_out: run.timed_out,
            stderr_tail: run.stderr_tail.clone(),
        });
    }
    Ok(run)
}

/// Runs `per_arm` warmup rounds, each one run of either arm on one seed of `inputs`, alternating
/// which arm starts, and keeps them marked as warmups.
pub fn run_warmups(
    runner: &mut dyn Runner,
    arms: Arms<'_>,
    inputs: &mut Inputs<'_>,
    per_arm: usize,
    first: Order,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<Vec<WarmupRun>, MeasureError> {
    let total = per_arm * 2;
    let mut warmups = Vec::with_capacity(total);
    let mut order = first;
    for round in 0..per_arm {
        let seed = inputs.next_seed(arms);
        let mut ran: Vec<(Arm, std::borrow::Cow<'_, RunSpec>, RunRecord)> = Vec::new();
        for arm in order.arms() {
            let spec = seeded(arms.spec(arm), seed);
            let run = checked_run(runner, &spec, arm, seed)?;
            on_run(RunEvent {
                phase: Phase::Warmup,
                done: warmups.len() + ran.len(),
                total,
                arm,
                wall_s: run.wall_s,
                plan: None,
            });
            ran.push((arm, spec, run));
        }
        let differs = match ran.as_slice() {
            [(a0, s0, r0), (_, s1, r1)] => {
                let (b, c) = match a0 {
                    Arm::Baseline => ((&**s0, r0), (&**s1, r1)),
                    Arm::Candidate => ((&**s1, r1), (&**s0, r0)),
                };
                disagreement(inputs, b, c)
            }
            _ => None,
        };
        warmups.extend(ran.into_iter().map(|(arm, _, run)| WarmupRun {
            arm,
            purpose: Purpose::Warmup,
            run,
            seed,
        }));
        if let Some(detail) = differs {
            let runs = PhaseRuns {
                warmups,
                pairs: Vec::new(),
            };
            return Err(outputs_differ(Phase::Warmup, round, seed, detail, runs));
        }
        order = order.flipped();
    }
    Ok(warmups)
}

/// The runs a phase made before two of them disagreed.
#[derive(Debug, Default)]
pub struct PhaseRuns {
    pub warmups: Vec<WarmupRun>,
    pub pairs: Vec<Pair>,
}

/// Why the two runs disagree, when `inputs` compares outputs and they do.
pub(super) fn disagreement(
    inputs: &Inputs<'_>,
    baseline: (&RunSpec, &RunRecord),
    candidate: (&RunSpec, &RunRecord),
) -> Option<String> {
    (inputs.agree?)(RunOutputs {
        baseline,
        candidate,
    })
}

fn outputs_differ(
    phase: Phase,
    index: usize,
    seed: Option<u64>,
    detail: String,
    runs: PhaseRuns,
) -> MeasureError {
    MeasureError::OutputsDiffer {
        phase,
        index,
        seed: seed.unwrap_or_default(),
        detail,
        runs: Box::new(runs),
    }
}

/// How the order of the two runs within each pair is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairOrder {
    /// Every pair in this order (A/A checks: a drift or an order effect shows up as a bias
    /// instead of cancelling out).
    Fixed(Order),
    /// This order first, then flipped after every pair.
    Alternating(Order),
    /// Balanced random order: pairs come in blocks of two with opposite orders, and a coin drawn
    /// from `seed` and the block's index picks which order the block starts with. Each order runs
    /// equally often (up to one pair), so an order effect cancels as under alternation, but
    /// neither arm can know in advance whether it runs first; the seed is drawn by evo when the
    /// measurement starts, never shown to code under test, and recorded afterwards.
    Shuffled { seed: u64 },
}

impl PairOrder {
    /// The order of pair `index` (0-based); pure, so a verifier re-derives it from the record.
    pub fn order_of(self, index: usize) -> Order {
        match self {
            PairOrder::Fixed(order) => order,
            PairOrder::Alternating(first) if index.is_multiple_of(2) => first,
            PairOrder::Alternating(first) => first.flipped(),
            PairOrder::Shuffled { seed } => {
                let block = (index / 2) as u64;
                let start = if mix(seed ^ block.wrapping_mul(0x9E37_79B9_7F4A_7C15)) & 1 == 0 {
                    Order::CandidateFirst
                } else {
                    Order::BaselineFirst
                };
                if index.is_multiple_of(2) {
                    start
                } else {
                    start.flipped()
                }
            }
        }
    }
}

/// SplitMix64's output function: a fixed, well-spread 64-bit mix (Steele, Lea and Flood, 2014).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs `count` pairs, back to back, ordered as `order` says, each on its own seed of `inputs`.
pub fn run_pairs(
    runner: &mut dyn Runner,
    arms: Arms<'_>,
    inputs: &mut Inputs<'_>,
    count: usize,
    pair_order: PairOrder,
    phase: Phase,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<Vec<Pair>, MeasureError> {
    let more = MorePairs {
        until: count,
        total: count,
        pair_order,
        phase,
    };
    extend_pairs(
        runner,
        arms,
        inputs,
        Vec::with_capacity(count),
        more,
        on_run,
    )
}

/// How far [`extend_pairs`] goes: up to `until` pairs in all, out of at most `total` (for the
/// progress events), in `pair_order` (by each pair's index, so the order runs on unbroken).
#[derive(Debug, Clone, Copy)]
pub struct MorePairs {
    pub until: usize,
    pub total: usize,
    pub pair_order: PairOrder,
    pub phase: Phase,
}

/// [`run_pairs`] continued: runs pairs after those in `pairs` until there are `more.until`, as a
/// sequential rule's next look needs. A failure's runs include the earlier pairs.
pub fn extend_pairs(
    runner: &mut dyn Runner,
    arms: Arms<'_>,
    inputs: &mut Inputs<'_>,
    mut pairs: Vec<Pair>,
    more: MorePairs,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<Vec<Pair>, MeasureError> {
    let MorePairs {
        until,
        total,
        pair_order,
        phase,
    } = more;
    let total = total.max(until);
    for index in pairs.len()..until {
        let order = pair_order.order_of(index);
        let seed = inputs.next_seed(arms);
        let (b_spec, c_spec) = (seeded(arms.baseline, seed), seeded(arms.candidate, seed));
        let mut baseline = None;
        let mut candidate = None;
        for (slot, arm) in order.arms().into_iter().enumerate() {
            let spec = match arm {
                Arm::Baseline => &b_spec,
                Arm::Candidate => &c_spec,
            };
            let run = checked_run(runner, spec, arm, seed)?;
            on_run(RunEvent {
                phase,
                done: index * 2 + slot,
                total: total * 2,
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
            let differs = disagreement(inputs, (&b_spec, &b), (&c_spec, &c));
            let mut pair = Pair::new(index, order, b, c);
            pair.seed = seed;
            pairs.push(pair);
            if let Some(detail) = differs {
                let runs = PhaseRuns {
                    warmups: Vec::new(),
                    pairs,
                };
                return Err(outputs_differ(phase, index, seed, detail, runs));
            }
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::measure::fake::{FakeBehavior, FakeRunner};

    /// A baseline of 2 s and a candidate of 1 s, always.
    fn two_speeds() -> FakeRunner {
        FakeRunner::new(1)
            .with("base", FakeBehavior::Times(vec![2.0]))
            .with("cand", FakeBehavior::Times(vec![1.0]))
    }

    fn specs() -> (RunSpec, RunSpec) {
        (
            RunSpec::new("base", Duration::from_secs(1)),
            RunSpec::new("cand", Duration::from_secs(1)),
        )
    }

    #[test]
    fn pairs_alternate_starting_with_the_requested_arm() {
        let (b, c) = specs();
        let mut runner = two_speeds();
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        let pairs = run_pairs(
            &mut runner,
            arms,
            &mut Inputs::none(),
            3,
            PairOrder::Alternating(Order::CandidateFirst),
            Phase::Pairs,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(
            runner.calls(),
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
    fn shuffled_order_is_balanced_per_block_and_follows_its_seed() {
        let orders = |seed: u64, n: usize| -> Vec<Order> {
            (0..n)
                .map(|i| PairOrder::Shuffled { seed }.order_of(i))
                .collect()
        };
        for seed in [0, 1, 42, u64::MAX] {
            let o = orders(seed, 40);
            // Every block of two holds both orders, so each arm runs first equally often.
            assert!(o.chunks(2).all(|b| b[0] == b[1].flipped()), "{o:?}");
            assert_eq!(o, orders(seed, 40), "the same seed gives the same order");
        }
        // Across seeds, the first pair starts with either arm: it is not alternation in disguise.
        let starts: Vec<Order> = (0..64).map(|seed| orders(seed, 1)[0]).collect();
        let candidate_first = starts
            .iter()
            .filter(|o| **o == Order::CandidateFirst)
            .count();
        assert!(
            (16..=48).contains(&candidate_first),
            "{candidate_first} of 64"
        );
        // Within one seed, blocks do not all start alike.
        let o = orders(7, 64);
        let block_starts: Vec<Order> = o.iter().step_by(2).copied().collect();
        assert!(block_starts.contains(&Order::CandidateFirst));
        assert!(block_starts.contains(&Order::BaselineFirst));
        assert_ne!(orders(1, 64), orders(2, 64));
    }

    #[test]
    fn run_pairs_runs_the_shuffled_order_it_records() {
        let (b, c) = specs();
        let mut runner = two_speeds();
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        let scheme = PairOrder::Shuffled { seed: 99 };
        let pairs = run_pairs(
            &mut runner,
            arms,
            &mut Inputs::none(),
            6,
            scheme,
            Phase::Pairs,
            &mut |_| {},
        )
        .unwrap();
        let expected_calls: Vec<&str> = (0..6)
            .flat_map(|i| match scheme.order_of(i) {
                Order::CandidateFirst => ["cand", "base"],
                Order::BaselineFirst => ["base", "cand"],
            })
            .collect();
        assert_eq!(runner.calls(), expected_calls);
        for (i, p) in pairs.iter().enumerate() {
            assert_eq!(p.order, scheme.order_of(i));
        }
    }

    #[test]
    fn fixed_order_never_flips() {
        let (b, _) = specs();
        let mut runner = FakeRunner::new(1).with("base", FakeBehavior::Times(vec![1.0, 2.0]));
        let arms = Arms {
            baseline: &b,
            candidate: &b,
        };
        let fixed = PairOrder::Fixed(Order::BaselineFirst);
        let pairs = run_pairs(
            &mut runner,
            arms,
            &mut Inputs::none(),
            3,
            fixed,
            Phase::AaPairs,
            &mut |_| {},
        )
        .unwrap();
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
        let mut runner = two_speeds();
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        let mut events = Vec::new();
        let w = run_warmups(
            &mut runner,
            arms,
            &mut Inputs::none(),
            2,
            Order::BaselineFirst,
            &mut |e| events.push(e),
        )
        .unwrap();
        assert_eq!(w.len(), 4);
        assert!(w.iter().all(|r| r.purpose == Purpose::Warmup));
        assert_eq!(runner.calls(), ["base", "cand", "cand", "base"]);
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
            &mut Inputs::none(),
            2,
            PairOrder::Alternating(Order::BaselineFirst),
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
