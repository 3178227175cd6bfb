//! Rules side by side on the same pairs (`EVO_CALIB_TABLES=rules`): evo's sequential rule as it
//! decides now (rules 9), the one it replaced (rules 8: the median's order-statistic interval,
//! spending `α t³` split by the union bound), and two alternatives an auditor would try — the mean
//! of the log-ratios with a t interval, and an oracle that knows the noise's σ and uses the mean's
//! z interval — both with the same looks and the same exact Pocock-type boundaries as rules 9.
//! The oracle cannot be run for real (nobody knows σ), so it bounds what any rule of this shape
//! can spend; the t rule is what a careful implementer would build instead.
//!
//! Every rule sees the same drawn log-ratios in each repetition and the same decision (accepted
//! when the interval is above 1 and the estimate at least `1 + e`, slower and "no real gain" as
//! in docs/design.md §3.7). Nothing here prints.

use evo::stats::spending::{Boundaries, spent_by};
use evo::stats::{self, Decision, Look};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, Normal, StudentsT};

/// One rule's way of turning a look's log-ratios into an estimate and an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Rules9,
    Rules8,
    MeanT,
    Oracle,
}

pub const RULES: [Rule; 4] = [Rule::Rules9, Rule::Rules8, Rule::MeanT, Rule::Oracle];

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::Rules9 => "rules 9 (evo)",
            Rule::Rules8 => "rules 8",
            Rule::MeanT => "mean, t",
            Rule::Oracle => "oracle (σ known)",
        }
    }
}

/// How a run's log-time deviates: normal, Student's t with 3 degrees of freedom (scaled to the
/// same MAD-equivalent σ), or normal with bursts (a run slowed by `burst` with probability `p`)
/// in both arms or in the baseline's only (a candidate that is never slower, judged by the
/// median of a pair — the case that fools a mean).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Normal,
    StudentT3,
    Bursts { p: f64, burst: f64 },
    BaselineBursts { p: f64, burst: f64 },
}

pub struct Cell {
    pub name: &'static str,
    pub shape: Shape,
    pub sigma: f64,
}

pub const CELLS: [Cell; 8] = [
    Cell {
        name: "normal σ 3%",
        shape: Shape::Normal,
        sigma: 0.03,
    },
    Cell {
        name: "normal σ 7%",
        shape: Shape::Normal,
        sigma: 0.07,
    },
    Cell {
        name: "normal σ 10%",
        shape: Shape::Normal,
        sigma: 0.10,
    },
    Cell {
        name: "t₃ σ 3%",
        shape: Shape::StudentT3,
        sigma: 0.03,
    },
    Cell {
        name: "t₃ σ 7%",
        shape: Shape::StudentT3,
        sigma: 0.07,
    },
    Cell {
        name: "σ 3% + 5% bursts of 30%",
        shape: Shape::Bursts {
            p: 0.05,
            burst: 0.30,
        },
        sigma: 0.03,
    },
    Cell {
        name: "σ 7% + 5% bursts of 30%",
        shape: Shape::Bursts {
            p: 0.05,
            burst: 0.30,
        },
        sigma: 0.07,
    },
    Cell {
        name: "σ 3% + baseline-only bursts",
        shape: Shape::BaselineBursts {
            p: 0.05,
            burst: 0.30,
        },
        sigma: 0.03,
    },
];

fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u = 1.0 - rng.random::<f64>();
    let v = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// One run's log-time deviation; `baseline` says which arm it is.
fn run_noise(shape: Shape, sigma: f64, baseline: bool, rng: &mut ChaCha8Rng) -> f64 {
    let per_run = sigma / 2f64.sqrt();
    match shape {
        Shape::Normal => per_run * standard_normal(rng),
        Shape::StudentT3 => {
            // t₃ = Z / √(χ²₃ / 3); its MAD is 0.765 of a unit normal's 0.674, so scale it to
            // the same MAD-equivalent σ.
            let z = standard_normal(rng);
            let chi: f64 = (0..3).map(|_| standard_normal(rng).powi(2)).sum();
            per_run * (0.6745 / 0.7649) * z / (chi / 3.0).sqrt()
        }
        Shape::Bursts { p, burst } => {
            per_run * standard_normal(rng) + if rng.random::<f64>() < p { burst } else { 0.0 }
        }
        Shape::BaselineBursts { p, burst } => {
            let hit = baseline && rng.random::<f64>() < p;
            per_run * standard_normal(rng) + if hit { burst } else { 0.0 }
        }
    }
}

/// A pair's log-ratio `ln(t_baseline / t_candidate)` for a candidate `ln_speedup` faster.
pub fn log_ratio(shape: Shape, sigma: f64, ln_speedup: f64, rng: &mut ChaCha8Rng) -> f64 {
    let b = run_noise(shape, sigma, true, rng);
    let c = run_noise(shape, sigma, false, rng) - ln_speedup;
    b - c
}

/// The looks of rules 8: the same counts, the union bound's shares of `α t³`, ranks of the sign
/// test. Kept here, as it was in `src/stats/sequential.rs` before rules 9, to compare against.
pub fn rules8_looks(first: usize, cap: usize) -> Vec<(usize, Option<usize>)> {
    let counts: Vec<usize> = stats::looks(first, cap).iter().map(|l| l.pairs).collect();
    let spent = |n: usize| 0.025 * (n as f64 / cap as f64).powi(3);
    let (mut before, mut carried) = (0.0, 0.0);
    counts
        .into_iter()
        .map(|n| {
            let share = spent(n) - before + carried;
            before = spent(n);
            let b = Binomial::new(0.5, n as u64).expect("n ≥ 1");
            let k = (1..=n.div_ceil(2))
                .take_while(|&k| b.cdf(k as u64 - 1) <= share)
                .last();
            carried = if k.is_some() { 0.0 } else { share };
            (n, k)
        })
        .collect()
}

/// The z boundary of each look for a continuous statistic: the nominal levels of the same
/// Pocock-type spending with the looks' correlation integrated, each spent in full.
pub fn continuous_levels(looks: &[Look]) -> Vec<f64> {
    let cap = looks.last().map_or(1, |l| l.pairs) as f64;
    let mut b = Boundaries::new();
    looks
        .iter()
        .map(|l| {
            let t = l.pairs as f64 / cap;
            let level = b.nominal(t, spent_by(stats::sequential::ALPHA, t));
            b.commit(t, level);
            level
        })
        .collect()
}

fn decide(lower: f64, upper: f64, estimate: f64, e: f64, at_cap: bool) -> Option<Decision> {
    let bar = (1.0 + e).ln();
    if lower > 0.0 && estimate >= bar {
        Some(Decision::Accepted)
    } else if upper < 0.0 && -estimate >= bar {
        Some(Decision::Slower)
    } else if upper < bar {
        Some(Decision::NoRealGain)
    } else {
        at_cap.then_some(Decision::Undecided)
    }
}

/// Where one rule stopped on these log-ratios: the pairs and the decision.
pub fn stop(
    rule: Rule,
    logs: &[f64],
    looks: &[Look],
    old: &[(usize, Option<usize>)],
    z_levels: &[f64],
    sigma: f64,
    min_effect: f64,
) -> (usize, Decision) {
    let normal = Normal::new(0.0, 1.0).expect("standard normal");
    for (j, look) in looks.iter().enumerate() {
        let n = look.pairs;
        let at_cap = j + 1 == looks.len();
        let d = &logs[..n];
        let decided = match rule {
            Rule::Rules9 => {
                let ratios: Vec<f64> = d.iter().map(|x| x.exp()).collect();
                let (est, interval) = stats::sequential::look_estimate(&ratios, look);
                match interval {
                    Some(c) => decide(c.lower.ln(), c.upper.ln(), est.ln(), min_effect, at_cap),
                    None => at_cap.then_some(Decision::Undecided),
                }
            }
            Rule::Rules8 => {
                let mut s = d.to_vec();
                s.sort_by(f64::total_cmp);
                let med = if n % 2 == 1 {
                    s[n / 2]
                } else {
                    0.5 * (s[n / 2 - 1] + s[n / 2])
                };
                match old[j].1 {
                    Some(k) => decide(s[k - 1], s[n - k], med, min_effect, at_cap),
                    None => at_cap.then_some(Decision::Undecided),
                }
            }
            Rule::MeanT | Rule::Oracle => {
                let mean = d.iter().sum::<f64>() / n as f64;
                let level = z_levels[j].max(1e-12);
                let half = if rule == Rule::Oracle {
                    normal.inverse_cdf(1.0 - level) * sigma / (n as f64).sqrt()
                } else {
                    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
                    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n ≥ 2");
                    t.inverse_cdf(1.0 - level) * (var / n as f64).sqrt()
                };
                decide(mean - half, mean + half, mean, min_effect, at_cap)
            }
        };
        if let Some(decision) = decided {
            return (n, decision);
        }
    }
    unreachable!("the last look always decides")
}

/// Per rule: decisions by kind and pairs spent, over `reps` repetitions of one cell and effect.
#[derive(Debug, Clone, Default)]
pub struct RuleTally {
    pub accepted: usize,
    pub slower: usize,
    pub no_real_gain: usize,
    pub undecided: usize,
    pub pairs: usize,
}

impl RuleTally {
    pub fn decided(&self) -> usize {
        self.accepted + self.slower + self.no_real_gain
    }
    /// Every pair spent, undecided runs' included, per decided verdict.
    pub fn pairs_per_decision(&self, extra_per_run: usize) -> f64 {
        let runs = self.decided() + self.undecided;
        (self.pairs + extra_per_run * runs) as f64 / self.decided().max(1) as f64
    }
}

/// `reps` repetitions of one cell at one true effect (a fraction; negative: slower), every rule
/// on the same pairs.
pub fn compare_rules(
    cell: &Cell,
    effect: f64,
    first: usize,
    cap: usize,
    min_effect: f64,
    reps: usize,
    seed: u64,
) -> Vec<RuleTally> {
    let draw = |rng: &mut ChaCha8Rng| {
        (0..cap)
            .map(|_| log_ratio(cell.shape, cell.sigma, effect.ln_1p(), rng))
            .collect()
    };
    compare_rules_on(draw, cell.sigma, first, cap, min_effect, reps, seed)
}

/// `reps` repetitions, every rule on the same `cap` log-ratios that `draw` makes for each; `sigma`
/// is what the oracle is told the noise is.
pub fn compare_rules_on(
    mut draw: impl FnMut(&mut ChaCha8Rng) -> Vec<f64>,
    sigma: f64,
    first: usize,
    cap: usize,
    min_effect: f64,
    reps: usize,
    seed: u64,
) -> Vec<RuleTally> {
    let looks = stats::looks(first, cap);
    let old = rules8_looks(first, cap);
    let z_levels = continuous_levels(&looks);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut tallies = vec![RuleTally::default(); RULES.len()];
    for _ in 0..reps {
        let logs = draw(&mut rng);
        assert_eq!(logs.len(), cap, "one log-ratio per pair up to the cap");
        for (rule, t) in RULES.iter().zip(tallies.iter_mut()) {
            let (n, d) = stop(*rule, &logs, &looks, &old, &z_levels, sigma, min_effect);
            t.pairs += n;
            match d {
                Decision::Accepted => t.accepted += 1,
                Decision::Slower => t.slower += 1,
                Decision::NoRealGain => t.no_real_gain += 1,
                Decision::Undecided => t.undecided += 1,
            }
        }
    }
    tallies
}
