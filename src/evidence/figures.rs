//! The figures of one paired comparison, computed from the raw pairs alone: `figures` is pure so
//! a verifier can recompute the pair count and the verdict from a saved report, and `evo bench`,
//! each scenario of a confirmation and `receipt::recompute` all go through it.

use serde::{Deserialize, Serialize};

use crate::environment::Environment;
use crate::measure::record::{Order, Pair, WarmupRun};
use crate::measure::schedule::PairOrder;
use crate::stats::{
    self, AaValidity, BenchVerdict, Ci95, Mde, PairPlan, PlanSettings, Ratios, TrainingGate,
};

/// The knobs of one paired comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchSettings {
    /// Comparison pairs: the fewest that run.
    pub pairs: usize,
    /// The cap on comparison pairs: evo runs as many as resolve the minimum effect and find the
    /// target effect 80% of the time, between `pairs` and `max(pairs, max_pairs)`; 0 (the
    /// default) means exactly `pairs`.
    #[serde(default)]
    pub max_pairs: usize,
    pub aa_pairs: usize,
    /// Warmup runs per arm, discarded from the statistics.
    pub warmup: usize,
    /// Practical threshold: the median must reach `1 + min_effect`.
    pub min_effect: f64,
    /// The true gain the pair plan sizes for (found 80% of the time), above `min_effect`.
    pub target_effect: f64,
    /// Order of the first pair; later pairs alternate (unless `order_seed` is set).
    pub first: Order,
    /// The comparison pairs run in a balanced random order drawn from this seed
    /// ([`PairOrder::Shuffled`]); `None`: alternating from `first`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// Seed of the resampling behind the minimum detectable effect.
    pub mde_seed: u64,
    pub timeout_s: f64,
}

impl BenchSettings {
    /// The order of the comparison pairs these settings ask for.
    pub fn comparison_order(&self) -> PairOrder {
        match self.order_seed {
            Some(seed) => PairOrder::Shuffled { seed },
            None => PairOrder::Alternating(self.first),
        }
    }
}

/// What the A/A pairs (baseline against itself) say about the setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AaFigures {
    pub pairs: usize,
    pub median: f64,
    pub ci95: Option<Ci95>,
    /// Per-pair noise: 1.4826 × MAD of the A/A log-ratios.
    pub sigma: f64,
    pub validity: AaValidity,
}

/// Coefficient of variation of each arm's wall times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArmCov {
    pub baseline: f64,
    pub candidate: f64,
}

/// Every statistic of a comparison, computed from the raw pairs alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Figures {
    pub aa: AaFigures,
    pub median: f64,
    pub ci95: Option<Ci95>,
    pub cov: ArmCov,
    pub noise_floor_pct: f64,
    /// Minimum detectable effect at this many pairs, in percent; `None` below 6 pairs.
    pub mde_pct: Option<f64>,
    pub mde: Option<Mde>,
    pub training_gate: TrainingGate,
    pub verdict: BenchVerdict,
    /// The comparison's noise floor at its pair count, in percent: the bar a median must clear
    /// (the A/A figure above is the same formula at the A/A pair count).
    #[serde(default)]
    pub pairs_noise_floor_pct: f64,
    /// The pair-count decision, re-derivable from the A/A pairs and the configured counts.
    #[serde(default)]
    pub plan: Option<PlanRecord>,
}

/// Configured and reached pair counts, and the pair count chosen from the A/A noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanRecord {
    /// Configured: the fewest comparison pairs.
    pub pairs: usize,
    /// Configured: the cap on comparison pairs (at most `pairs` means no extension).
    pub max_pairs: usize,
    /// Configured: A/A pairs.
    pub aa_pairs: usize,
    /// Configured: warmup runs per arm.
    pub warmups: usize,
    /// Configured: the minimum effect the plan resolves.
    pub min_effect: f64,
    /// Configured: the true gain the plan sizes for (found 80% of the time); 0 in results from
    /// before rules 2.
    #[serde(default)]
    pub target_effect: f64,
    /// Pairs whose noise floor is within the minimum effect and that find the target effect 80%
    /// of the time.
    pub needed: usize,
    /// Pairs chosen from the A/A noise: `needed` within `[pairs, max(pairs, max_pairs)]`.
    pub planned: usize,
    /// Reached: A/A pairs measured.
    pub reached_aa_pairs: usize,
    /// Reached: comparison pairs measured (equal to `planned` in a complete run).
    pub reached_pairs: usize,
    /// Mean wall time of one pair (two runs), from the A/A pairs.
    pub seconds_per_pair: f64,
}

impl Figures {
    /// What the pairs resolved, as one phrase: the noise floor against the minimum effect and the
    /// minimum detectable effect against the target the plan sized for; `None` without a plan.
    pub fn resolution(&self) -> Option<String> {
        let p = self.plan.as_ref()?;
        let mde = self
            .mde_pct
            .map_or_else(|| "none".to_string(), |m| format!("{m:.2}%"));
        Some(format!(
            "noise floor ±{:.2}% against the {:.2}% minimum effect, minimum detectable effect \
             {mde} against the {:.2}% target",
            self.pairs_noise_floor_pct,
            100.0 * p.min_effect,
            100.0 * p.target_effect
        ))
    }
}

impl Figures {
    /// A decision was reached either way (the gate passed, or the candidate is shown slower), so
    /// no text offers more pairs to resolve it.
    pub fn decided(&self) -> bool {
        self.training_gate.passed
            || self.training_gate.regression
            || matches!(
                self.verdict,
                BenchVerdict::Accepted | BenchVerdict::Regression
            )
    }
}

impl PlanRecord {
    /// Estimated minutes of running `pairs` pairs (the runs alone, not evo's own work).
    pub fn minutes(&self, pairs: usize) -> f64 {
        pairs as f64 * self.seconds_per_pair / 60.0
    }
}

/// Everything `evo bench` observed and concluded; this is the `--json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchReport {
    pub evo_version: String,
    pub baseline_command: String,
    pub candidate_command: String,
    pub settings: BenchSettings,
    /// Every run had a random-length `EVO_ENV_PAD` variable (`evo bench --env-pad`); false in
    /// reports from before it existed, whose runs had none.
    #[serde(default)]
    pub env_pad: bool,
    pub environment: Environment,
    pub warmups: Vec<WarmupRun>,
    pub aa_pairs: Vec<Pair>,
    pub pairs: Vec<Pair>,
    #[serde(flatten)]
    pub figures: Figures,
    pub warnings: Vec<String>,
}

pub(crate) fn ratios(pairs: &[Pair]) -> Result<Ratios, stats::StatsError> {
    Ratios::new(pairs.iter().map(|p| p.ratio).collect())
}

fn plan_settings(s: &BenchSettings) -> PlanSettings {
    PlanSettings {
        min_pairs: s.pairs,
        max_pairs: s.max_pairs,
        min_effect: s.min_effect,
        target_effect: s.target_effect,
        mde_seed: s.mde_seed,
    }
}

pub(crate) fn seconds_per_pair(aa_pairs: &[Pair]) -> f64 {
    let total: f64 = aa_pairs
        .iter()
        .map(|p| p.baseline.wall_s + p.candidate.wall_s)
        .sum();
    total / aa_pairs.len().max(1) as f64
}

/// The pair count chosen from the A/A pairs alone, before any comparison pair runs.
pub fn pair_plan(
    settings: &BenchSettings,
    aa_pairs: &[Pair],
) -> Result<PairPlan, stats::StatsError> {
    Ok(stats::plan_pairs(
        &ratios(aa_pairs)?,
        &plan_settings(settings),
    ))
}

/// Computes every figure from the A/A pairs and the comparison pairs.
pub fn figures(
    settings: &BenchSettings,
    aa_pairs: &[Pair],
    pairs: &[Pair],
) -> Result<Figures, stats::StatsError> {
    let aa_ratios = ratios(aa_pairs)?;
    let r = ratios(pairs)?;
    let c = stats::compare(
        &aa_ratios,
        &r,
        settings.min_effect,
        settings.target_effect,
        settings.mde_seed,
    );
    let sigma = c.sigma;
    let aa = AaFigures {
        pairs: aa_pairs.len(),
        median: stats::median(&aa_ratios),
        ci95: stats::ci95(&aa_ratios),
        sigma,
        validity: c.aa_validity,
    };
    let times = |f: fn(&Pair) -> f64| pairs.iter().map(f).collect::<Vec<f64>>();
    let cov = ArmCov {
        baseline: stats::cov(&times(|p| p.baseline.wall_s)),
        candidate: stats::cov(&times(|p| p.candidate.wall_s)),
    };
    let plan = stats::plan_pairs(&aa_ratios, &plan_settings(settings));
    Ok(Figures {
        aa,
        median: c.median,
        ci95: c.ci95,
        cov,
        noise_floor_pct: 100.0 * stats::noise_floor(sigma, aa_pairs.len()),
        mde_pct: c.mde.map(|m| 100.0 * m.effect),
        mde: c.mde,
        training_gate: c.gate,
        verdict: c.verdict,
        pairs_noise_floor_pct: 100.0 * c.thresholds.noise_floor,
        plan: Some(PlanRecord {
            pairs: settings.pairs,
            max_pairs: settings.max_pairs,
            aa_pairs: settings.aa_pairs,
            warmups: settings.warmup,
            min_effect: settings.min_effect,
            target_effect: settings.target_effect,
            needed: plan.needed,
            planned: plan.planned,
            reached_aa_pairs: aa_pairs.len(),
            reached_pairs: pairs.len(),
            seconds_per_pair: seconds_per_pair(aa_pairs),
        }),
    })
}

/// Warnings that follow from the figures alone.
pub fn figure_warnings(f: &Figures, pairs: usize) -> Vec<String> {
    let mut w = Vec::new();
    match f.aa.validity {
        AaValidity::Valid => {}
        AaValidity::Biased { ci95 } => w.push(format!(
            "A/A check failed: the baseline against itself gave CI95 {:.4}–{:.4}×, which excludes 1 \
             (drift, order effect or thermal state); nothing is accepted from this run",
            ci95.lower, ci95.upper
        )),
        AaValidity::TooFewPairs { n } => w.push(format!(
            "only {n} A/A pairs: fewer than 6 cannot show the setup is unbiased; nothing is accepted"
        )),
    }
    if pairs < 6 {
        w.push(format!(
            "only {pairs} pairs: fewer than 6 pairs cannot give a 95% interval; nothing is accepted"
        ));
    }
    if let (Some(plan), Some(resolution)) = (&f.plan, f.resolution()) {
        // More pairs are offered only while nothing is decided: never beside an acceptance.
        if !f.training_gate.resolved && !f.decided() {
            w.push(format!(
                "not resolved at {pairs} pairs ({resolution}); {} pairs (about {:.1} min of runs) \
                 would resolve it (the cap was {}); until then only an effect of at least the \
                 minimum detectable effect is accepted",
                plan.needed,
                plan.minutes(plan.needed),
                plan.max_pairs.max(plan.pairs)
            ));
        }
    }
    if let Some(mde) = f.mde {
        let observed = f.median - 1.0;
        if observed > 0.0 && observed < mde.effect {
            w.push(format!(
                "underpowered: the observed effect {:.2}% is below the minimum detectable effect \
                 {:.2}% at {pairs} pairs; the estimate is likely inflated",
                100.0 * observed,
                100.0 * mde.effect
            ));
        }
    }
    w
}
