//! `evo bench`: one paired comparison of two commands, from runs to verdict.
//!
//! `run_bench` measures (warmups, A/A pairs of the baseline against itself in a fixed order, then
//! as many comparison pairs, alternating or in a balanced random order, as the A/A noise says
//! resolve the minimum effect within the cap); `evidence::figures` turns the raw pairs into every
//! statistic.

use crate::environment::{self, Environment};
use crate::evidence::figures::{
    BenchReport, BenchSettings, SequentialPlan, figure_warnings, figures, pair_plan,
};
use crate::measure::record::Order;
use crate::measure::record::Pair;
use crate::measure::runner::{RunSpec, Runner};
use crate::measure::schedule::{
    self, Arms, Inputs, MeasureError, MorePairs, PairOrder, PairsPlanned, Phase, RunEvent,
};
use crate::stats;

/// A validated comparison: two commands and the settings.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    pub baseline: RunSpec,
    pub candidate: RunSpec,
    /// The second arm of the A/A pairs: the baseline built a second time in its own tree (laid
    /// out like the candidate's), so the noise of two builds and two trees shows in the A/A check
    /// as it would in the comparison. `None`: the baseline against itself (`evo bench`).
    pub baseline_again: Option<RunSpec>,
    /// What the wait for a quiet machine found before the first run (`evo bench --quiet-wait`);
    /// `None` when there was no wait (a confirmation records its own wait in its result).
    pub quiet: Option<environment::QuietWait>,
    /// Every run gets a random-length `EVO_ENV_PAD` (the runner pads; this records it).
    pub env_pad: bool,
    pub settings: BenchSettings,
    /// A/A pairs measured before, on these very programs, used instead of measuring
    /// `settings.aa_pairs` again (a campaign's later confirmation, `confirm::earlier_aa`).
    pub earlier_aa: Option<Vec<Pair>>,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Measure(#[from] MeasureError),
    #[error("the runs gave an unusable ratio: {0}")]
    Stats(#[from] stats::StatsError),
}

/// Runs the comparison look by look: the pairs up to each look, then that look's decision
/// (`stats::first_stop` over the pairs so far, the rule `figures` re-derives), stopping at the
/// first that decides or at the cap.
fn sequential_pairs(
    runner: &mut dyn Runner,
    arms: Arms<'_>,
    inputs: &mut Inputs<'_>,
    plan: &SequentialPlan,
    s: &BenchSettings,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<Vec<Pair>, BenchError> {
    let mut pairs = Vec::with_capacity(plan.cap);
    for (index, look) in plan.looks.iter().enumerate() {
        let more = MorePairs {
            until: look.pairs,
            total: plan.cap,
            pair_order: s.comparison_order(),
            phase: Phase::Pairs,
        };
        pairs = schedule::extend_pairs(runner, arms, inputs, pairs, more, on_run)?;
        let r: Vec<f64> = pairs.iter().map(|p| p.ratio).collect();
        let stop =
            stats::sequential::judge_look(&r, &plan.looks, index, s.min_effect, plan.aa_valid);
        if stop.is_some() {
            break;
        }
    }
    Ok(pairs)
}

/// Measures warmups, A/A pairs and the comparison, then computes the figures. Every warmup round,
/// A/A pair and pair takes its inputs from `inputs` (a fresh seed each, and the two runs'
/// outputs compared, when it says so).
pub fn run_bench(
    plan: &BenchPlan,
    runner: &mut dyn Runner,
    inputs: &mut Inputs<'_>,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<BenchReport, BenchError> {
    let s = &plan.settings;
    let machine = environment::machine();
    let load_1m_before = environment::load_1m();
    let arms = Arms {
        baseline: &plan.baseline,
        candidate: &plan.candidate,
    };
    let aa_arms = Arms {
        baseline: &plan.baseline,
        candidate: plan.baseline_again.as_ref().unwrap_or(&plan.baseline),
    };
    let warmups = schedule::run_warmups(runner, arms, inputs, s.warmup, s.first, on_run)?;
    // The A/A pairs come first: their noise alone fixes how many comparison pairs run.
    // A/A pairs keep a fixed order: the ratio is first run / second run, so drift or an order
    // effect biases it and the A/A check can see it. The comparison alternates to cancel both.
    let aa_order = PairOrder::Fixed(Order::BaselineFirst);
    let aa_pairs = match &plan.earlier_aa {
        Some(pairs) => pairs.clone(),
        None => schedule::run_pairs(
            runner,
            aa_arms,
            inputs,
            s.aa_pairs,
            aa_order,
            Phase::AaPairs,
            on_run,
        )?,
    };
    let design = pair_plan(s, &aa_pairs)?;
    let order = s.comparison_order();
    on_run(RunEvent::announce(
        PairsPlanned {
            planned: design.cap,
            configured: s.pairs,
            needed: design.resolution.null_pairs,
            sigma: design.sigma,
            estimated_s: design.cap as f64 * design.seconds_per_pair,
            needed_s: design.resolution.null_pairs as f64 * design.seconds_per_pair,
            resolves_gain: Some(design.resolution.gain),
            min_effect: Some(s.min_effect),
            ranges: Some(schedule::PlanRanges {
                sigma: design.sigma_range,
                needed: design.resolution_range.map(|r| r.null_pairs),
                gain: design.resolution_range.map(|r| r.gain),
                aa_pairs: aa_pairs.len(),
            }),
        },
        order.order_of(0).arms()[0],
    ));
    let pairs = sequential_pairs(runner, arms, inputs, &design, s, on_run)?;
    let environment = Environment {
        machine,
        load_1m_before,
        load_1m_after: environment::load_1m(),
        quiet: plan.quiet.clone(),
        cpus: runner.cpu_split().cloned(),
        job: None,
    };
    let figures = figures(s, &aa_pairs, &pairs)?;
    let mut warnings: Vec<String> = environment.load_warning().into_iter().collect();
    warnings.extend(figure_warnings(&figures, pairs.len()));
    Ok(BenchReport {
        evo_version: env!("CARGO_PKG_VERSION").to_string(),
        baseline_command: plan.baseline.command.clone(),
        candidate_command: plan.candidate.command.clone(),
        settings: s.clone(),
        env_pad: plan.env_pad,
        environment,
        warmups,
        aa_pairs,
        pairs,
        figures,
        warnings,
    })
}
