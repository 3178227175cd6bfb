//! How many comparison pairs a run needs, decided from the A/A noise before any A/B pair is seen.
//!
//! A comparison resolves the minimum effect when its noise floor — how far from 1 the median of
//! `n` pairs of pure noise lands by chance, `exp(1.96 × 1.2533 × σ / √n) − 1` with σ from the A/A
//! pairs — is within the minimum effect, and it is *powered* when a true gain of the target effect
//! would clear the verdict's bars about 80% of the time. A plan that only resolved the minimum
//! effect left a true gain between the minimum effect and the minimum detectable effect a coin toss
//! (measured on the trainer: a true 2.3% gain, minimum effect 2%, accepted 4 times in 10). The pair
//! count is fixed from σ alone, before the first A/B pair, and never changed afterwards: nothing
//! the comparison shows can steer how long it runs, so the false-accept rate of the interval test
//! is that of a fixed-n test. The same function, fed the recorded A/A runs, re-derives the
//! decision when a receipt is verified.

use serde::{Deserialize, Serialize};

use super::{MdeSettings, PowerSimulation, Ratios, noise_floor, noise_sigma};

/// No interval below this many pairs (`order_rank`), so no plan goes below it either.
pub const MIN_INTERVAL_PAIRS: usize = 6;
/// Pair counts are saturated here: beyond it "how many pairs" has no practical meaning.
pub const MAX_PLANNABLE_PAIRS: usize = 1_000_000;

/// What the campaign or the command line allows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlanSettings {
    /// The configured pairs: never fewer are run.
    pub min_pairs: usize,
    /// The cap: never more are run (raised to `min_pairs` when smaller).
    pub max_pairs: usize,
    /// The practical threshold, as a fraction (0.01 for 1%).
    pub min_effect: f64,
    /// The true gain the plan sizes for (above `min_effect`): enough pairs that a gain this large
    /// is accepted about 80% of the time.
    pub target_effect: f64,
    /// Seed of the power simulation: the confirmation's, the one its MDE uses.
    pub mde_seed: u64,
}

/// The pair-count decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairPlan {
    /// Pairs that resolve the minimum effect and are powered for the target effect (saturated at
    /// `MAX_PLANNABLE_PAIRS` when none are, e.g. a zero minimum effect on a noisy machine).
    pub needed: usize,
    /// Pairs to run: `needed` clamped to `[min_pairs, max(min_pairs, max_pairs)]`.
    pub planned: usize,
    /// `planned` resolves the minimum effect and is powered for the target (`needed ≤ planned`).
    pub resolves: bool,
}

/// Whether `n` pairs resolve `min_effect` at noise `sigma`: the noise floor at `n` pairs is at
/// most the minimum effect.
pub fn resolves(sigma: f64, n: usize, min_effect: f64) -> bool {
    noise_floor(sigma, n) <= min_effect
}

/// One-sided normal quantile of 80%: the power the plan sizes for at the target effect.
const Z_POWER: f64 = 0.8416;

/// The target effect when none is configured: half as large again as the minimum effect. A
/// target equal to the minimum effect cannot be powered (a true gain exactly at the bar clears it
/// half the time at any pair count); 1.5 keeps the plan finite and the gap stated.
pub const DEFAULT_TARGET_FACTOR: f64 = 1.5;

/// The target effect for `min_effect` when the campaign names none.
pub fn default_target_effect(min_effect: f64) -> f64 {
    DEFAULT_TARGET_FACTOR * min_effect
}

/// Above this many pairs the power is taken from the normal approximation instead of the
/// resampling: the order-statistic interval is then close to normal, and simulating 2000
/// comparisons of that many pairs at every step of the search would cost seconds.
const MAX_SIMULATED_PAIRS: usize = 2_000;

/// Whether an `n`-pair comparison finds a true gain of `target` with probability at least 80%:
/// the share of simulated comparisons that the speedup test accepts, drawn from the A/A
/// log-ratios exactly as the minimum detectable effect draws them (`MdeSettings::new(n,
/// min_effect, seed)`), so the question and the reported MDE share one simulation. Above
/// `MAX_SIMULATED_PAIRS`, the normal approximation: the median, with standard error
/// `se = 1.2533 × σ / √n`, lands at least `0.8416 × se` above both bars it must clear (the
/// minimum effect, and the noise floor `1.96 × se`). Never with `target ≤ min_effect` unless
/// there is no noise.
pub fn powered(aa: &Ratios, n: usize, min_effect: f64, target: f64, seed: u64) -> bool {
    let settings = MdeSettings::new(n, min_effect, seed);
    let sim = (n <= MAX_SIMULATED_PAIRS)
        .then(|| PowerSimulation::new(aa, &settings))
        .flatten();
    powered_by(sim.as_ref(), &settings, noise_sigma(aa), target)
}

/// [`powered`] for the comparison `settings` describe, from its simulation drawn with them
/// (`compare` draws it once for the MDE and this question; `None` below 6 pairs). Above
/// `MAX_SIMULATED_PAIRS` the normal approximation decides, whatever was drawn.
pub fn powered_by(
    sim: Option<&PowerSimulation>,
    settings: &MdeSettings,
    sigma: f64,
    target: f64,
) -> bool {
    if settings.pairs > MAX_SIMULATED_PAIRS {
        return powered_normal(sigma, settings.pairs, settings.min_effect, target);
    }
    sim.is_some_and(|sim| sim.power(target) >= settings.power)
}

/// Simulated comparisons for counts the run cannot reach: they only inform the "would need"
/// figure, so a coarser simulation (power within about ±2 points) keeps planning cheap.
const ESTIMATE_RESAMPLES: usize = 400;

fn powered_normal(sigma: f64, n: usize, min_effect: f64, target: f64) -> bool {
    let se = super::noise::MEDIAN_EFFICIENCY * sigma / (n as f64).sqrt();
    let bar = min_effect.ln_1p().max(super::noise::Z_95 * se);
    target.ln_1p() - bar >= Z_POWER * se
}

/// The smallest pair count (at least 6) whose noise floor is within `min_effect`.
pub fn pairs_to_resolve(sigma: f64, min_effect: f64) -> usize {
    if !resolves(sigma, MAX_PLANNABLE_PAIRS, min_effect) {
        return MAX_PLANNABLE_PAIRS;
    }
    // Closed form of `floor(σ, n) ≤ e` solved for n, then nudged so that the answer agrees with
    // `resolves` to the last bit (the check the verdict makes).
    let z = super::noise::Z_95 * super::noise::MEDIAN_EFFICIENCY;
    let guess = (z * sigma / min_effect.ln_1p()).powi(2).ceil();
    let mut n = if guess.is_finite() {
        (guess as usize).clamp(MIN_INTERVAL_PAIRS, MAX_PLANNABLE_PAIRS)
    } else {
        MIN_INTERVAL_PAIRS
    };
    while !resolves(sigma, n, min_effect) {
        n += 1;
    }
    while n > MIN_INTERVAL_PAIRS && resolves(sigma, n - 1, min_effect) {
        n -= 1;
    }
    n
}

/// The pair count that resolves the minimum effect and is [`powered`] for `target`: from the
/// normal approximation's count, grown by a quarter at a time until a count passes, then bisected
/// down to the smallest passing count the search meets (simulated power is not exactly monotone in
/// the pair count, so this is the count of a deterministic search, not a proven minimum; the
/// verdict re-checks power at the count actually run). `MAX_PLANNABLE_PAIRS` when none passes.
///
/// Counts up to `simulated_up_to` (the most pairs the run may take) are judged exactly as the
/// verdict judges them ([`powered`]); larger ones, which the run cannot reach and which only
/// inform the "would need" figure, by a coarser simulation (`ESTIMATE_RESAMPLES`), and beyond
/// `MAX_SIMULATED_PAIRS` by the normal approximation, which is optimistic at small counts (for one
/// trainer run the resampling planned 54 pairs where the formula, worked by hand, gives 18) and
/// closer at large ones.
pub fn pairs_to_power(
    aa: &Ratios,
    min_effect: f64,
    target: f64,
    seed: u64,
    simulated_up_to: usize,
) -> usize {
    let sigma = noise_sigma(aa);
    let normal =
        |n: usize| resolves(sigma, n, min_effect) && powered_normal(sigma, n, min_effect, target);
    let holds = |n: usize| {
        if n <= simulated_up_to {
            resolves(sigma, n, min_effect) && powered(aa, n, min_effect, target, seed)
        } else if n <= MAX_SIMULATED_PAIRS {
            let coarse = MdeSettings {
                resamples: ESTIMATE_RESAMPLES,
                ..MdeSettings::new(n, min_effect, seed)
            };
            resolves(sigma, n, min_effect)
                && powered_by(
                    PowerSimulation::new(aa, &coarse).as_ref(),
                    &coarse,
                    sigma,
                    target,
                )
        } else {
            normal(n)
        }
    };
    if !normal(MAX_PLANNABLE_PAIRS) {
        return MAX_PLANNABLE_PAIRS;
    }
    // The normal count (monotone in n) as the starting point.
    let start = bisect(MIN_INTERVAL_PAIRS - 1, MAX_PLANNABLE_PAIRS, normal);
    // Grow until the resampled power agrees, then bisect below the first passing count.
    let mut lo = MIN_INTERVAL_PAIRS - 1;
    let mut n = start;
    while !holds(n) {
        if n >= MAX_PLANNABLE_PAIRS {
            return MAX_PLANNABLE_PAIRS;
        }
        lo = n;
        n = (n + n.div_ceil(4)).min(MAX_PLANNABLE_PAIRS);
    }
    bisect(lo, n, holds)
}

/// With `passes(hi)` true and `lo < hi`: the count `n ∈ (lo, hi]` where the bisection's bracket
/// closes, `passes(n)` true and `passes(n − 1)` false or `n − 1 = lo`.
fn bisect(mut lo: usize, mut hi: usize, passes: impl Fn(usize) -> bool) -> usize {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The pairs to run, from the A/A pairs alone: enough to resolve the minimum effect and to be
/// powered for the target effect.
pub fn plan_pairs(aa: &Ratios, s: &PlanSettings) -> PairPlan {
    let most = s.max_pairs.max(s.min_pairs).min(MAX_SIMULATED_PAIRS);
    clamped(
        pairs_to_power(aa, s.min_effect, s.target_effect, s.mde_seed, most),
        s.min_pairs,
        s.max_pairs,
    )
}

/// `needed` within `[min_pairs, max(min_pairs, max_pairs)]`.
fn clamped(needed: usize, min_pairs: usize, max_pairs: usize) -> PairPlan {
    let planned = needed.clamp(min_pairs, max_pairs.max(min_pairs));
    PairPlan {
        needed,
        planned,
        resolves: needed <= planned,
    }
}

/// One-sided normal quantile of 95%: the margin, in standard errors of the median, between a
/// null candidate's expected CI95 lower bound and the holdout tolerance.
const Z_HOLDOUT_POWER: f64 = 1.6449;

/// The smallest pair count (at least 6) at which a candidate exactly as fast as the baseline
/// passes the holdout gate (CI95 lower bound at least `1 − tolerance`) with probability 95% at
/// per-pair noise `sigma`, under the normal approximation the noise floor uses:
/// `(1.96 + 1.6449) × 1.2533 × σ / √n ≤ ln(1 / (1 − tolerance))`.
///
/// A plan that only made the noise floor reach the tolerance (as the training plan does for the
/// minimum effect) would put a null candidate's lower bound right at the threshold: it would pass
/// half the time. The margin is 95% rather than the minimum detectable effect's 80% because σ
/// comes from a few A/A pairs and is often estimated low, and the order-statistic interval is
/// wider than the normal one: simulated with σ estimated from 11 A/A pairs, a null holdout passes
/// about 75–80% of the time (`tests/stats_props.rs`, docs/design.md §3.10).
pub fn holdout_pairs_to_resolve(sigma: f64, tolerance: f64) -> usize {
    // Exactly `resolves(σ', n, e')` with σ' = σ (1.96 + 1.6449) / 1.96 and 1 + e' = 1 / (1 − t),
    // so the answer agrees to the last bit with the same search the training plan uses.
    let z = super::noise::Z_95;
    pairs_to_resolve(
        sigma * (z + Z_HOLDOUT_POWER) / z,
        1.0 / (1.0 - tolerance) - 1.0,
    )
}

/// A holdout's pairs, from the training scenarios' A/A noise (a holdout has no A/A pairs of its
/// own), between the configured pairs and the cap.
pub fn plan_holdout_pairs(
    sigma: f64,
    tolerance: f64,
    min_pairs: usize,
    max_pairs: usize,
) -> PairPlan {
    clamped(
        holdout_pairs_to_resolve(sigma, tolerance),
        min_pairs,
        max_pairs,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(min_pairs: usize, max_pairs: usize) -> PlanSettings {
        PlanSettings {
            min_pairs,
            max_pairs,
            min_effect: 0.01,
            target_effect: 0.015,
            mde_seed: 7,
        }
    }

    /// Eleven A/A ratios whose log-ratios are `scale` times a fixed, scrambled spread of about one
    /// standard deviation (σ of the result ≈ `scale`).
    fn aa(scale: f64) -> Ratios {
        let z = [
            0.40, -0.71, 0.13, 0.93, -0.30, -1.01, 0.57, 0.03, -0.47, 0.77, -0.10,
        ];
        Ratios::new(z.iter().map(|x| (scale * x).exp()).collect()).unwrap()
    }

    #[test]
    fn the_plan_is_the_edge_where_the_floor_is_within_the_min_effect_and_the_target_is_powered() {
        for scale in [0.0, 0.003, 0.01, 0.03, 0.078] {
            let a = aa(scale);
            let sigma = noise_sigma(&a);
            let holds = |n: usize| resolves(sigma, n, 0.01) && powered(&a, n, 0.01, 0.015, 7);
            let n = pairs_to_power(&a, 0.01, 0.015, 7, MAX_SIMULATED_PAIRS);
            assert!(holds(n), "{scale}: {n}");
            assert!(!holds(n - 1), "{scale}: {n}");
            // Never fewer than resolving the minimum effect alone asks for.
            assert!(n >= pairs_to_resolve(sigma, 0.01), "{scale}: {n}");
            // Whatever the count, it comes from the A/A pairs alone: the same inputs, the same n.
            assert_eq!(n, pairs_to_power(&a, 0.01, 0.015, 7, MAX_SIMULATED_PAIRS));
        }
        // A target barely above the minimum effect costs many more pairs than resolving it.
        let a = aa(0.03);
        let resolve_only = pairs_to_resolve(noise_sigma(&a), 0.01);
        let close = pairs_to_power(&a, 0.01, 0.011, 7, MAX_SIMULATED_PAIRS);
        assert!(close > 3 * resolve_only, "{close} vs {resolve_only}");
        // A target at or below the minimum effect is never powered on a noisy machine.
        assert_eq!(
            pairs_to_power(&a, 0.01, 0.01, 7, MAX_SIMULATED_PAIRS),
            MAX_PLANNABLE_PAIRS
        );
        assert_eq!(
            pairs_to_power(&a, 0.0, 0.0, 7, MAX_SIMULATED_PAIRS),
            MAX_PLANNABLE_PAIRS
        );
    }

    #[test]
    fn powered_counts_are_what_the_resampled_power_says_and_normal_beyond_the_simulated_range() {
        let a = aa(0.03);
        let n = pairs_to_power(&a, 0.01, 0.015, 7, MAX_SIMULATED_PAIRS);
        let sim = |n: usize| {
            let s = MdeSettings::new(n, 0.01, 7);
            PowerSimulation::new(&a, &s).unwrap().power(0.015)
        };
        assert!(sim(n) >= 0.8, "{n}: {}", sim(n));
        // Far beyond the simulated range the normal approximation decides: a huge count is
        // powered, and a count just past the range is too when the normal edge is below it.
        assert!(powered(&a, 10 * MAX_SIMULATED_PAIRS, 0.01, 0.015, 7));
        assert!(!powered(&a, 10 * MAX_SIMULATED_PAIRS, 0.01, 0.0101, 7));
    }

    #[test]
    fn needed_pairs_are_the_edge_where_the_floor_meets_the_min_effect() {
        for sigma in [0.0, 0.003, 0.01, 0.03, 0.078, 0.2] {
            let n = pairs_to_resolve(sigma, 0.01);
            assert!(resolves(sigma, n, 0.01), "{sigma}: {n}");
            assert!(
                n == MIN_INTERVAL_PAIRS || !resolves(sigma, n - 1, 0.01),
                "{sigma}"
            );
        }
        // (1.96 · 1.2533 · 0.078 / ln 1.01)² = 370.8: the 2-core machine of issue 15.
        assert_eq!(pairs_to_resolve(0.078, 0.01), 371);
        assert_eq!(pairs_to_resolve(0.0, 0.01), MIN_INTERVAL_PAIRS);
        assert_eq!(pairs_to_resolve(0.01, 0.0), MAX_PLANNABLE_PAIRS);
        assert_eq!(pairs_to_resolve(0.0, 0.0), MIN_INTERVAL_PAIRS);
    }

    #[test]
    fn a_holdout_plan_puts_a_null_candidates_lower_bound_a_margin_above_the_tolerance() {
        for sigma in [0.0, 0.005, 0.014, 0.03, 0.078] {
            let n = holdout_pairs_to_resolve(sigma, 0.01);
            let se = |n: usize| 1.2533 * sigma / (n as f64).sqrt();
            let margin = (1.0f64 / 0.99).ln();
            assert!(
                (1.96 + 1.6449) * se(n) <= margin * (1.0 + 1e-12),
                "{sigma}: {n}"
            );
            assert!(
                n == MIN_INTERVAL_PAIRS || (1.96 + 1.6449) * se(n - 1) > margin,
                "{sigma}: {n}"
            );
            // Stricter than resolving the tolerance as a training minimum effect.
            assert!(n >= pairs_to_resolve(sigma, 0.01), "{sigma}");
        }
        // (3.6049 · 1.2533 · 0.02 / ln(1/0.99))² = 80.7.
        assert_eq!(holdout_pairs_to_resolve(0.02, 0.01), 81);
        let capped = plan_holdout_pairs(0.078, 0.01, 9, 60);
        assert_eq!((capped.planned, capped.resolves), (60, false));
        let quiet = plan_holdout_pairs(0.002, 0.01, 9, 60);
        assert_eq!((quiet.needed, quiet.planned, quiet.resolves), (6, 9, true));
    }

    #[test]
    fn the_plan_is_clamped_between_the_configured_pairs_and_the_cap() {
        let quiet = plan_pairs(&aa(0.002), &settings(9, 60));
        assert_eq!((quiet.planned, quiet.resolves), (9, true));
        let medium = plan_pairs(&aa(0.015), &settings(9, 60));
        assert_eq!(medium.planned, medium.needed);
        assert!(
            medium.resolves && medium.needed > 9 && medium.needed < 60,
            "{medium:?}"
        );
        // Within the cap the count is the resampling's, the one the verdict asks again.
        assert!(powered(&aa(0.015), medium.planned, 0.01, 0.015, 7));
        assert!(!powered(&aa(0.015), medium.planned - 1, 0.01, 0.015, 7));
        let noisy = plan_pairs(&aa(0.078), &settings(9, 60));
        assert_eq!((noisy.planned, noisy.resolves), (60, false));
        let sigma = noise_sigma(&aa(0.078));
        assert!(noisy.needed >= pairs_to_resolve(sigma, 0.01), "{noisy:?}");
        // A cap below the configured pairs means "no extension".
        let capped = plan_pairs(&aa(0.078), &settings(9, 0));
        assert_eq!((capped.planned, capped.resolves), (9, false));
    }
}
