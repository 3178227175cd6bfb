//! How many comparison pairs a run needs, decided from the A/A noise before any A/B pair is seen.
//!
//! A comparison resolves the minimum effect when its noise floor — how far from 1 the median of
//! `n` pairs of pure noise lands by chance, `exp(1.96 × 1.2533 × σ / √n) − 1` with σ from the A/A
//! pairs — is within the minimum effect. The pair count is fixed from σ alone, before the first
//! A/B pair, and never changed afterwards: nothing the comparison shows can steer how long it runs,
//! so the false-accept rate of the interval test is that of a fixed-n test. The same function,
//! fed the recorded A/A runs, re-derives the decision when a receipt is verified.

use serde::{Deserialize, Serialize};

use super::noise_floor;

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
}

/// The pair-count decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairPlan {
    /// Pairs whose noise floor is within the minimum effect (saturated at
    /// `MAX_PLANNABLE_PAIRS` when none is, e.g. a zero minimum effect on a noisy machine).
    pub needed: usize,
    /// Pairs to run: `needed` clamped to `[min_pairs, max(min_pairs, max_pairs)]`.
    pub planned: usize,
    /// `planned` resolves the minimum effect (`needed ≤ planned`).
    pub resolves: bool,
}

/// Whether `n` pairs resolve `min_effect` at noise `sigma`: the noise floor at `n` pairs is at
/// most the minimum effect.
pub fn resolves(sigma: f64, n: usize, min_effect: f64) -> bool {
    noise_floor(sigma, n) <= min_effect
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

/// The pairs to run, from the A/A noise alone.
pub fn plan_pairs(sigma: f64, s: &PlanSettings) -> PairPlan {
    let needed = pairs_to_resolve(sigma, s.min_effect);
    let cap = s.max_pairs.max(s.min_pairs);
    let planned = needed.clamp(s.min_pairs, cap);
    PairPlan {
        needed,
        planned,
        resolves: needed <= planned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(min_pairs: usize, max_pairs: usize) -> PlanSettings {
        PlanSettings {
            min_pairs,
            max_pairs,
            min_effect: 0.01,
        }
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
    fn the_plan_is_clamped_between_the_configured_pairs_and_the_cap() {
        let quiet = plan_pairs(0.005, &settings(9, 60));
        assert_eq!((quiet.planned, quiet.resolves), (9, true));
        let medium = plan_pairs(0.02, &settings(9, 60));
        assert_eq!(medium.planned, medium.needed);
        assert!(medium.resolves && medium.needed > 9 && medium.needed < 60);
        let noisy = plan_pairs(0.078, &settings(9, 60));
        assert_eq!(
            (noisy.needed, noisy.planned, noisy.resolves),
            (371, 60, false)
        );
        // A cap below the configured pairs means "no extension".
        let capped = plan_pairs(0.078, &settings(9, 0));
        assert_eq!((capped.planned, capped.resolves), (9, false));
    }
}
