//! Simulated confirmations: no processes, log-ratios drawn from a noise model and sent through
//! evo's own sequential rule and verdict (`stats::training_cap`, `stats::looks`,
//! `stats::sequential::judge_look`, `stats::compare`), looking after every look as a confirmation
//! does.
//!
//! Shared by the calibration benchmark (`EVO_CALIB_MODE=simulated`) and the seeded false-accept
//! test in `tests/it/stats_props.rs`, so the figure in docs/calibration.md and the test measure one
//! thing.
//! Nothing here prints.

use evo::stats::{self, BenchVerdict, CapSettings, Ratios, Resolution};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{Beta, ContinuousCDF};

/// How one timed run's log-time deviates from its arm's true value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// Normal, with `sigma` the sd of a pair's log-ratio (each run has `sigma / √2`).
    Normal { sigma: f64 },
    /// Normal as above, and with probability `p` a run is slowed by `|N(0, outlier)|` (a
    /// neighbour's burst): heavy-tailed, and only ever slower.
    Outliers { sigma: f64, p: f64, outlier: f64 },
    /// Normal as above, and the first run of every pair is slower by `bias` (log): an order
    /// effect. The A/A pairs keep one order and see it; the comparison alternates.
    OrderEffect { sigma: f64, bias: f64 },
}

/// A named noise model, as printed in the tables.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    pub name: &'static str,
    pub noise: Noise,
}

/// The models the calibration reports: quiet, ordinary and noisy machines, heavy tails, and an
/// order effect.
pub const MODELS: [Model; 5] = [
    Model {
        name: "normal σ 1%",
        noise: Noise::Normal { sigma: 0.01 },
    },
    Model {
        name: "normal σ 3%",
        noise: Noise::Normal { sigma: 0.03 },
    },
    Model {
        name: "normal σ 8%",
        noise: Noise::Normal { sigma: 0.08 },
    },
    Model {
        name: "σ 2% + 10% outliers of ~20%",
        noise: Noise::Outliers {
            sigma: 0.02,
            p: 0.10,
            outlier: 0.20,
        },
    },
    Model {
        name: "σ 3% + order effect 1%",
        noise: Noise::OrderEffect {
            sigma: 0.03,
            bias: 0.01,
        },
    },
];

/// The configured counts of one simulated confirmation.
#[derive(Debug, Clone, Copy)]
pub struct SimSettings {
    /// The first look.
    pub pairs: usize,
    /// The cap.
    pub max_pairs: usize,
    pub aa_pairs: usize,
    pub min_effect: f64,
}

/// What one simulated confirmation ended with.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub verdict: BenchVerdict,
    /// Comparison pairs run: the look the rule stopped at.
    pub pairs: usize,
    /// The rule decided before the cap left it undecided.
    pub resolved: bool,
    /// What a fixed-n test at the cap would have said of the first `cap` pairs drawn (the rule
    /// of looking once): A/A valid, CI95 lower bound above 1, median at least `1 + min_effect`.
    pub fixed_n_accepts: bool,
    /// What the plan said before the first comparison pair, from this run's A/A pairs: at σ (as
    /// evo states it) and at σ's upper 80% bound (as rules 6 and before did).
    pub plan: Resolution,
    pub plan_upper: Resolution,
}

fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u = 1.0 - rng.random::<f64>();
    let v = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Log-time deviation of one run; `first` is whether it runs first in its pair.
fn run_noise(noise: Noise, first: bool, rng: &mut ChaCha8Rng) -> f64 {
    let core = |sigma: f64, rng: &mut ChaCha8Rng| sigma / 2f64.sqrt() * standard_normal(rng);
    match noise {
        Noise::Normal { sigma } => core(sigma, rng),
        Noise::Outliers { sigma, p, outlier } => {
            let burst = if rng.random::<f64>() < p {
                (outlier * standard_normal(rng)).abs()
            } else {
                0.0
            };
            core(sigma, rng) + burst
        }
        Noise::OrderEffect { sigma, bias } => core(sigma, rng) + if first { bias } else { 0.0 },
    }
}

/// One pair's ratio `t_baseline / t_candidate` for a candidate `speedup` times faster.
fn pair_ratio(noise: Noise, speedup: f64, baseline_first: bool, rng: &mut ChaCha8Rng) -> f64 {
    let baseline = run_noise(noise, baseline_first, rng);
    let candidate = run_noise(noise, !baseline_first, rng) - speedup.ln();
    (baseline - candidate).exp()
}

/// A/A pairs (baseline first, always) → cap and looks → alternating comparison, judged at each
/// look until one decides → verdict, for a candidate whose true speedup is `1 + effect`
/// (negative: slower).
pub fn simulate_once(noise: Noise, effect: f64, s: &SimSettings, rng: &mut ChaCha8Rng) -> Outcome {
    let aa: Vec<f64> = (0..s.aa_pairs)
        .map(|_| pair_ratio(noise, 1.0, true, rng))
        .collect();
    let aa = Ratios::new(aa).expect("simulated ratios are positive");
    let aa_valid = stats::aa_validity(&aa).is_valid();
    let cap_settings = CapSettings {
        min_pairs: s.pairs,
        max_pairs: s.max_pairs,
        budget_s: None,
    };
    let cap = stats::training_cap(&cap_settings, 1.0, aa_valid);
    let looks = stats::looks(s.pairs, cap);
    // Confirmation order: candidate first, then alternating. All `cap` pairs are drawn so the
    // fixed-n comparison sees the same first pairs; the rule reads only up to its stop.
    let all: Vec<f64> = (0..cap)
        .map(|i| pair_ratio(noise, 1.0 + effect, i % 2 == 1, rng))
        .collect();
    let stop = (0..looks.len())
        .find_map(|i| stats::sequential::judge_look(&all, &looks, i, s.min_effect, aa_valid))
        .expect("the last look always decides");
    let ab = Ratios::new(all[..stop.pairs].to_vec()).expect("simulated ratios are positive");
    let c = stats::compare(&aa, &ab, s.min_effect, &looks);
    let full = Ratios::new(all).expect("simulated ratios are positive");
    let fixed_n_accepts = aa_valid
        && stats::ci95(&full).is_some_and(|ci| ci.lower > 1.0)
        && stats::median(&full) >= 1.0 + s.min_effect;
    let sigma = stats::noise_sigma(&aa);
    let plan_at = |sigma| stats::sequential::resolution(s.pairs, cap, sigma, s.min_effect);
    Outcome {
        verdict: c.verdict,
        pairs: stop.pairs,
        resolved: c.gate.resolved,
        fixed_n_accepts,
        plan: plan_at(sigma),
        plan_upper: plan_at(stats::sequential::sigma_upper(sigma, s.aa_pairs)),
    }
}

/// Counts over many simulated confirmations of one configuration.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pub reps: usize,
    pub accepted: usize,
    pub regression: usize,
    pub inconclusive: usize,
    pub no_real_gain: usize,
    pub resolved: usize,
    pub fixed_n_accepted: usize,
    pub pairs: Vec<usize>,
    /// Each run's plan (at σ, at σ's upper bound), and whether it was ruled a null ("no real
    /// gain") by the pairs its plan at σ said.
    pub plans: Vec<(Resolution, Resolution)>,
    pub null_by_planned: usize,
}

impl Tally {
    pub fn add(&mut self, o: Outcome) {
        self.reps += 1;
        match o.verdict {
            BenchVerdict::Accepted => self.accepted += 1,
            BenchVerdict::Regression => self.regression += 1,
            BenchVerdict::Inconclusive => self.inconclusive += 1,
            BenchVerdict::NoRealGain => self.no_real_gain += 1,
        }
        self.resolved += usize::from(o.resolved);
        self.fixed_n_accepted += usize::from(o.fixed_n_accepts);
        self.pairs.push(o.pairs);
        self.plans.push((o.plan, o.plan_upper));
        self.null_by_planned +=
            usize::from(o.verdict == BenchVerdict::NoRealGain && o.pairs <= o.plan.null_pairs);
    }

    /// The `q` quantile (0–1) of the pair counts run.
    pub fn pairs_quantile(&self, q: f64) -> usize {
        quantile(&self.pairs, q)
    }

    /// The `q` quantile of the plans' null pairs: at σ, and at σ's upper bound.
    pub fn planned_null_quantile(&self, q: f64) -> (usize, usize) {
        let at: Vec<usize> = self.plans.iter().map(|p| p.0.null_pairs).collect();
        let upper: Vec<usize> = self.plans.iter().map(|p| p.1.null_pairs).collect();
        (quantile(&at, q), quantile(&upper, q))
    }

    /// The median of the plans' resolved gain: at σ, and at σ's upper bound.
    pub fn planned_gain_median(&self) -> (f64, f64) {
        let mut at: Vec<f64> = self.plans.iter().map(|p| p.0.gain).collect();
        let mut upper: Vec<f64> = self.plans.iter().map(|p| p.1.gain).collect();
        at.sort_by(f64::total_cmp);
        upper.sort_by(f64::total_cmp);
        let mid = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
        (mid(&at), mid(&upper))
    }

    /// Median of the pair counts run.
    pub fn median_pairs(&self) -> usize {
        let mut p = self.pairs.clone();
        p.sort_unstable();
        p.get(p.len() / 2).copied().unwrap_or(0)
    }

    pub fn mean_pairs(&self) -> f64 {
        self.pairs.iter().sum::<usize>() as f64 / self.reps.max(1) as f64
    }
}

/// `reps` seeded simulated confirmations of one configuration.
pub fn run(noise: Noise, effect: f64, s: &SimSettings, reps: usize, seed: u64) -> Tally {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = Tally::default();
    for _ in 0..reps {
        t.add(simulate_once(noise, effect, s, &mut rng));
    }
    t
}

/// Exact (Clopper–Pearson) two-sided 95% interval for a binomial proportion `x / n`.
pub fn clopper_pearson(x: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (xf, nf) = (x as f64, n as f64);
    let lower = if x == 0 {
        0.0
    } else {
        Beta::new(xf, nf - xf + 1.0).map_or(0.0, |b| b.inverse_cdf(0.025))
    };
    let upper = if x == n {
        1.0
    } else {
        Beta::new(xf + 1.0, nf - xf).map_or(1.0, |b| b.inverse_cdf(0.975))
    };
    (lower, upper)
}

/// How a simulated holdout's pair count is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HoldoutPairs {
    /// Looks up to the cap planned from the A/A noise, as `evo confirm` does
    /// (`stats::plan_holdout_pairs`).
    Planned,
    /// One look at the configured pairs, whatever the noise (the rule before holdout plans).
    Fixed,
}

/// Counts over many simulated holdouts of one configuration.
#[derive(Debug, Clone, Default)]
pub struct HoldoutTally {
    pub reps: usize,
    pub no_regression: usize,
    pub rejected: usize,
    pub inconclusive: usize,
    /// Pairs run: those up to the look that decided.
    pub pairs: Vec<usize>,
    /// The planned cap (the last look) of each.
    pub caps: Vec<usize>,
}

impl HoldoutTally {
    pub fn mean_pairs(&self) -> f64 {
        self.pairs.iter().sum::<usize>() as f64 / self.reps.max(1) as f64
    }
    pub fn mean_cap(&self) -> f64 {
        self.caps.iter().sum::<usize>() as f64 / self.reps.max(1) as f64
    }
}

/// `reps` seeded simulated holdouts: the training scenario's A/A pairs (baseline first) give σ,
/// σ gives the holdout's cap, and the holdout's pairs (alternating, candidate first; the
/// candidate truly `ratio` times as fast, below 1 slower) go through the holdout gate look by
/// look, exactly as `evo confirm` runs them (`stats::first_holdout_stop`).
pub fn run_holdout(
    noise: Noise,
    ratio: f64,
    s: &SimSettings,
    pairs: HoldoutPairs,
    reps: usize,
    seed: u64,
) -> HoldoutTally {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = HoldoutTally::default();
    for _ in 0..reps {
        let aa: Vec<f64> = (0..s.aa_pairs)
            .map(|_| pair_ratio(noise, 1.0, true, &mut rng))
            .collect();
        let aa = Ratios::new(aa).expect("simulated ratios are positive");
        let cap = match pairs {
            HoldoutPairs::Planned => {
                let sigma = stats::noise_sigma(&aa);
                stats::plan_holdout_pairs(sigma, stats::HOLDOUT_TOLERANCE, s.pairs, s.max_pairs)
                    .planned
            }
            HoldoutPairs::Fixed => s.pairs,
        };
        // The planned cap's pairs, drawn up front; the looks decide how many of them count (the
        // pairs after the stop are never run by `evo confirm`, and nothing here depends on them).
        let measured: Vec<f64> = (0..cap)
            .map(|i| pair_ratio(noise, ratio, i % 2 == 1, &mut rng))
            .collect();
        let looks = stats::holdout_looks(s.pairs, cap);
        let stop = stats::first_holdout_stop(&measured, &looks).expect("the last look decides");
        let (verdict, n) = (stop.verdict, stop.pairs);
        t.reps += 1;
        match verdict {
            stats::HoldoutVerdict::NoRegression => t.no_regression += 1,
            stats::HoldoutVerdict::Rejected => t.rejected += 1,
            stats::HoldoutVerdict::Inconclusive => t.inconclusive += 1,
        }
        t.pairs.push(n);
        t.caps.push(cap);
    }
    t
}

/// The `q` quantile (0–1, nearest rank) of `values`; 0 when empty.
fn quantile(values: &[usize], q: f64) -> usize {
    let mut v = values.to_vec();
    v.sort_unstable();
    let at = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    v.get(at).copied().unwrap_or(0)
}
