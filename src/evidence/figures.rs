//! The figures of one paired comparison, computed from the raw pairs alone: `figures` is pure so
//! a verifier can recompute the pair count and the verdict from a saved report, and `evo bench`,
//! each scenario of a confirmation and `receipt::recompute` all go through it.

use serde::{Deserialize, Serialize};

use crate::environment::Environment;
use crate::measure::record::{Order, Pair, WarmupRun};
use crate::measure::schedule::PairOrder;
use crate::stats::{
    self, AaValidity, BenchVerdict, CapSettings, Ci95, Look, Ratios, Resolution, Stop, TrainingGate,
};

/// The knobs of one paired comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchSettings {
    /// Comparison pairs at the first look of the sequential rule: the fewest that run.
    pub pairs: usize,
    /// The cap on comparison pairs, at least `pairs` (`spec::campaign::pair_cap`; `pairs`: no
    /// extension): the run stops at the first look that decides, at `max_pairs` at the latest.
    /// Reports from before it was always resolved may hold 0 (absent), which meant `pairs`, and
    /// `stats::training_cap` still reads it so.
    #[serde(default)]
    pub max_pairs: usize,
    /// The comparison's share of the time budget (`confirm.max_minutes`), in seconds of runs: it
    /// lowers the cap to the pairs it holds at the A/A pairs' pace. `None`: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
    pub aa_pairs: usize,
    /// Warmup runs per arm, discarded from the statistics.
    pub warmup: usize,
    /// Practical threshold: the median must reach `1 + min_effect`.
    pub min_effect: f64,
    /// The target effect of rules 2 and 3 (`confirm.target_effect`): recorded, decides nothing.
    pub target_effect: f64,
    /// Order of the first pair; later pairs alternate (unless `order_seed` is set).
    pub first: Order,
    /// The comparison pairs run in a balanced random order drawn from this seed
    /// ([`PairOrder::Shuffled`]); `None`: alternating from `first`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// The confirmation's seed (the resampling of rules 2 and 3 used it; rules 4 records it).
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
    pub training_gate: TrainingGate,
    pub verdict: BenchVerdict,
    /// The cap and what it can resolve, re-derivable from the A/A pairs and the configured counts.
    #[serde(default)]
    pub plan: Option<PlanRecord>,
    /// The looks of the sequential rule and the one the run stopped at.
    #[serde(default)]
    pub sequential: Option<SequentialRecord>,
}

/// The sequential rule's looks (fixed before the first comparison pair) and where it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SequentialRecord {
    /// How the looks' levels were computed (`stats::sequential::METHOD`); empty in results of
    /// rules 8 and before.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub method: String,
    pub looks: Vec<Look>,
    /// The first look that decided; `None` when the pairs end before any did.
    pub stop: Option<Stop>,
    /// What every look the pairs reached saw (`stats::sequential::seen`): its estimate, interval
    /// and signed-rank statistic. Empty in results of rules 9 and before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<stats::sequential::Seen>,
    /// For a run the cap left undecided: the pairs that would decide it at the noise and median
    /// its own pairs show (normal approximation, 80% of the time; saturated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs_to_decide: Option<usize>,
}

/// Configured and reached pair counts, and the cap chosen from the A/A pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanRecord {
    /// Configured: the fewest comparison pairs.
    pub pairs: usize,
    /// Configured: the cap on comparison pairs, at least `pairs` (`spec::campaign::pair_cap`;
    /// `pairs`: no extension). Older results may hold less, 0 included, which meant `pairs`.
    pub max_pairs: usize,
    /// Configured: A/A pairs.
    pub aa_pairs: usize,
    /// Configured: warmup runs per arm.
    pub warmups: usize,
    /// Configured: the minimum effect the plan resolves.
    pub min_effect: f64,
    /// Configured: the target effect of rules 2 and 3; recorded, decides nothing.
    #[serde(default)]
    pub target_effect: f64,
    /// The comparison's share of the time budget, in seconds of pairs (`budget_split` says how
    /// it was made; without one, as configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
    /// How a confirmation's budget was split to give `budget_s` (docs/design.md §3.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_split: Option<super::budget::BudgetSplit>,
    /// Pairs by which a true null is ruled out at the minimum effect 80% of the time, at the A/A
    /// noise's estimate σ (normal approximation; under rules 6 and before, at `sigma_upper`).
    pub needed: usize,
    /// `needed` at the ends of `sigma_range`: what the A/A pairs' own uncertainty allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_range: Option<[usize; 2]>,
    /// The cap: `max(pairs, max_pairs)` within the budget (`stats::training_cap`).
    pub planned: usize,
    /// The true gain accepted 80% of the time by the cap, as a fraction, at σ (under rules 6 and
    /// before, at `sigma_upper`).
    #[serde(default)]
    pub resolves_gain: f64,
    /// `resolves_gain` at the ends of `sigma_range`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gain_range: Option<[f64; 2]>,
    /// An upper 80% bound on the per-pair noise from the A/A pairs (`sequential::sigma_upper`);
    /// recorded, no statement uses it since rules 7.
    #[serde(default)]
    pub sigma_upper: f64,
    /// The central 80% interval of the per-pair noise from the A/A pairs
    /// (`sequential::sigma_range`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma_range: Option<[f64; 2]>,
    /// Reached: A/A pairs measured.
    pub reached_aa_pairs: usize,
    /// Reached: comparison pairs measured (the look the run stopped at).
    pub reached_pairs: usize,
    /// Mean wall time of one pair (two runs), from the A/A pairs.
    pub seconds_per_pair: f64,
}

impl Figures {
    /// What this machine can resolve within the cap, as one phrase; `None` without a plan.
    pub fn resolution(&self) -> Option<String> {
        self.plan.as_ref().map(PlanRecord::resolution)
    }

    /// The decision of the look the run stopped at; `None` for a record without one.
    pub fn decision(&self) -> Option<stats::Decision> {
        self.sequential.as_ref()?.stop.map(|s| s.decision)
    }
}

impl Figures {
    /// A decision was reached either way (the gate passed, or the candidate is shown slower), so
    /// no text offers more pairs to resolve it.
    pub fn decided(&self) -> bool {
        self.training_gate.resolved
    }
}

impl PlanRecord {
    /// Estimated minutes of running `pairs` pairs (the runs alone, not evo's own work).
    pub fn minutes(&self, pairs: usize) -> f64 {
        pairs as f64 * self.seconds_per_pair / 60.0
    }

    /// "resolves a gain of at least X% (A–B%) within N pairs (about M min of runs); a null is
    /// ruled out at the E% minimum effect after about K pairs (L min; C–D pairs)", the ranges
    /// where recorded.
    pub fn resolution(&self) -> String {
        // A range whose ends read alike (a gain held at the minimum effect, pairs at the first
        // look) says nothing and is left out.
        let gain_range = (self.gain_range)
            .map(|[lo, hi]| (format!("{:.1}", 100.0 * lo), format!("{:.1}", 100.0 * hi)))
            .filter(|(lo, hi)| lo != hi)
            .map(|(lo, hi)| format!(" ({lo}–{hi}%)"))
            .unwrap_or_default();
        let needed_range = (self.needed_range)
            .filter(|[lo, hi]| lo != hi)
            .map(|[lo, hi]| format!("; {lo}–{hi} pairs"))
            .unwrap_or_default();
        let basis = if gain_range.is_empty() && needed_range.is_empty() {
            ""
        } else {
            PLAN_BASIS
        };
        format!(
            "resolves a gain of at least {:.1}%{gain_range} (80% of the time) within {} pairs \
             (about {} of runs); a null is ruled out at the {:.1}% minimum effect after about {} \
             pairs ({}{needed_range}){}",
            100.0 * self.resolves_gain,
            self.planned,
            span(60.0 * self.minutes(self.planned)),
            100.0 * self.min_effect,
            self.needed,
            span(60.0 * self.minutes(self.needed)),
            basis
        )
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

/// Seconds under 90 as seconds, longer spans in minutes.
pub fn span(seconds: f64) -> String {
    if seconds >= 90.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{seconds:.0} s")
    }
}

pub(crate) fn ratios(pairs: &[Pair]) -> Result<Ratios, stats::StatsError> {
    Ratios::new(pairs.iter().map(|p| p.ratio).collect())
}

pub(crate) fn seconds_per_pair(aa_pairs: &[Pair]) -> f64 {
    let total: f64 = aa_pairs
        .iter()
        .map(|p| p.baseline.wall_s + p.candidate.wall_s)
        .sum();
    total / aa_pairs.len().max(1) as f64
}

/// What the ranges of a plan's statements are, in words.
pub const PLAN_BASIS: &str = "; figures at the A/A noise σ, ranges over its 80% interval";

/// The sequential design of a comparison, chosen from the A/A pairs alone before any comparison
/// pair runs: its cap, its looks and what it can resolve.
#[derive(Debug, Clone, PartialEq)]
pub struct SequentialPlan {
    pub cap: usize,
    pub looks: Vec<Look>,
    /// What the design resolves at the A/A noise's estimate σ.
    pub resolution: Resolution,
    /// The same at the ends of `sigma_range` (the quieter end first).
    pub resolution_range: [Resolution; 2],
    pub sigma: f64,
    pub sigma_upper: f64,
    pub sigma_range: [f64; 2],
    pub seconds_per_pair: f64,
    pub aa_valid: bool,
}

/// The design [`figures`] judges by, from the settings and the A/A pairs.
pub fn pair_plan(
    settings: &BenchSettings,
    aa_pairs: &[Pair],
) -> Result<SequentialPlan, stats::StatsError> {
    let aa = ratios(aa_pairs)?;
    let sigma = stats::noise_sigma(&aa);
    let seconds_per_pair = seconds_per_pair(aa_pairs);
    let cap_settings = CapSettings {
        min_pairs: settings.pairs,
        max_pairs: settings.max_pairs,
        budget_s: settings.budget_s,
    };
    let aa_valid = stats::aa_validity(&aa).is_valid();
    let cap = stats::training_cap(&cap_settings, seconds_per_pair, aa_valid);
    let sigma_upper = stats::sequential::sigma_upper(sigma, aa_pairs.len());
    let (low, high) = stats::sequential::sigma_range(sigma, aa_pairs.len());
    let at = |sigma| stats::sequential::resolution(settings.pairs, cap, sigma, settings.min_effect);
    Ok(SequentialPlan {
        cap,
        looks: stats::looks(settings.pairs, cap),
        resolution: at(sigma),
        resolution_range: [at(low), at(high)],
        sigma,
        sigma_upper,
        sigma_range: [low, high],
        seconds_per_pair,
        aa_valid,
    })
}

/// Computes every figure from the A/A pairs and the comparison pairs.
pub fn figures(
    settings: &BenchSettings,
    aa_pairs: &[Pair],
    pairs: &[Pair],
) -> Result<Figures, stats::StatsError> {
    let aa_ratios = ratios(aa_pairs)?;
    let r = ratios(pairs)?;
    let plan = pair_plan(settings, aa_pairs)?;
    let c = stats::compare(&aa_ratios, &r, settings.min_effect, &plan.looks);
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
    let undecided = c
        .stop
        .is_none_or(|s| s.decision == stats::Decision::Undecided);
    let pairs_to_decide = undecided.then(|| {
        stats::sequential::pairs_to_decide(
            stats::noise_sigma(&r),
            c.median,
            settings.min_effect,
            plan.looks
                .last()
                .map_or(stats::sequential::ALPHA, |l| l.alpha),
        )
    });
    Ok(Figures {
        aa,
        median: c.median,
        ci95: c.ci95,
        cov,
        noise_floor_pct: 100.0 * stats::noise_floor(sigma, aa_pairs.len()),
        training_gate: c.gate,
        verdict: c.verdict,
        plan: Some(PlanRecord {
            pairs: settings.pairs,
            max_pairs: settings.max_pairs,
            aa_pairs: settings.aa_pairs,
            warmups: settings.warmup,
            min_effect: settings.min_effect,
            target_effect: settings.target_effect,
            budget_s: settings.budget_s,
            budget_split: None,
            needed: plan.resolution.null_pairs,
            needed_range: Some(plan.resolution_range.map(|r| r.null_pairs)),
            planned: plan.cap,
            resolves_gain: plan.resolution.gain,
            gain_range: Some(plan.resolution_range.map(|r| r.gain)),
            sigma_upper: plan.sigma_upper,
            sigma_range: Some(plan.sigma_range),
            reached_aa_pairs: aa_pairs.len(),
            reached_pairs: pairs.len(),
            seconds_per_pair: plan.seconds_per_pair,
        }),
        sequential: Some(SequentialRecord {
            method: stats::sequential::METHOD.to_string(),
            seen: stats::sequential::seen(r.values(), &plan.looks),
            looks: plan.looks,
            stop: c.stop,
            pairs_to_decide,
        }),
    })
}

/// Warnings that follow from the figures alone.
pub fn figure_warnings(f: &Figures, pairs: usize) -> Vec<String> {
    let mut w = Vec::new();
    match f.aa.validity {
        AaValidity::Valid => {}
        AaValidity::Biased { ci95 } => w.push(format!(
            "A/A check failed: the baseline against itself gave {}, which excludes 1 (drift, \
             order effect or thermal state); nothing is accepted from this run",
            ci95.text(4)
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
    if let (Some(plan), Some(seq)) = (&f.plan, &f.sequential) {
        if !f.training_gate.resolved {
            w.push(format!(
                "undecided at the cap of {} pairs: {}",
                plan.planned,
                undecided_detail(plan, seq)
            ));
        }
    }
    w
}

/// Why a run the cap left undecided says nothing yet, and what more pairs would cost.
pub fn undecided_detail(plan: &PlanRecord, seq: &SequentialRecord) -> String {
    let bar = 100.0 * plan.min_effect;
    let interval = seq.stop.and_then(|s| s.interval).map_or_else(
        || "no interval".to_string(),
        |c| format!("the interval {:.4}–{:.4}×", c.lower, c.upper),
    );
    let more = match seq.pairs_to_decide {
        Some(n) if n >= stats::MAX_PLANNABLE_PAIRS => {
            "its estimate is at the minimum effect, so no practical number of pairs would decide it"
                .to_string()
        }
        Some(n) => {
            let extra = n.saturating_sub(plan.reached_pairs);
            format!(
                "about {n} pairs in all would decide it ({extra} more, about {} more of runs; \
                 raise confirm.max_pairs or confirm.max_minutes)",
                span(60.0 * plan.minutes(extra))
            )
        }
        None => "more pairs would decide it".to_string(),
    };
    format!("{interval} neither excludes 1 nor rules out the {bar:.1}% minimum effect; {more}")
}
