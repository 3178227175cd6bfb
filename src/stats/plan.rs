//! How many pairs a run may take, decided before any A/B pair is seen.
//!
//! A training comparison (rules 4) stops when the sequential rule decides (`sequential`), so its
//! plan is only a cap: the configured `max_pairs`, lowered to what the time budget allows at the
//! A/A pairs' pace, and cut to the first look when the A/A check is not valid (nothing can be
//! accepted then; a slowdown still shows). A holdout's cap comes from the training A/A
//! noise alone: enough pairs that a candidate no slower than the baseline shows it by the last
//! look (rules 5; a holdout stops earlier when a look decides, `holdout`). The same
//! functions, fed the recorded A/A runs, re-derive the decisions when a receipt is verified.

use serde::{Deserialize, Serialize};

use super::noise_floor;

/// No interval below this many pairs (`order_rank`), so no plan goes below it either.
pub const MIN_INTERVAL_PAIRS: usize = 6;
/// Pair counts are saturated here: beyond it "how many pairs" has no practical meaning.
pub const MAX_PLANNABLE_PAIRS: usize = 1_000_000;

/// A count decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairPlan {
    /// Pairs that resolve the question (saturated at `MAX_PLANNABLE_PAIRS`).
    pub needed: usize,
    /// Pairs to run: `needed` clamped to `[min_pairs, max(min_pairs, max_pairs)]`.
    pub planned: usize,
    /// `needed ≤ planned`.
    pub resolves: bool,
}

/// What bounds a training comparison's pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CapSettings {
    /// The configured pairs: the first look.
    pub min_pairs: usize,
    /// The configured cap (raised to `min_pairs` when smaller).
    pub max_pairs: usize,
    /// The comparison's share of the time budget, in seconds of runs; `None` without a budget.
    pub budget_s: Option<f64>,
}

/// The most comparison pairs a training scenario may take: `max(min_pairs, max_pairs)`, lowered
/// to the pairs `budget_s` holds at `seconds_per_pair` (never below `min_pairs`), and only
/// `min_pairs` when the A/A check is not valid.
pub fn training_cap(s: &CapSettings, seconds_per_pair: f64, aa_valid: bool) -> usize {
    let most = s.max_pairs.max(s.min_pairs);
    if !aa_valid {
        return s.min_pairs;
    }
    match s.budget_s {
        Some(budget) if seconds_per_pair > 0.0 => {
            let fit = (budget / seconds_per_pair).floor();
            let fit = if fit.is_finite() && fit >= 0.0 {
                fit.min(MAX_PLANNABLE_PAIRS as f64) as usize
            } else {
                most
            };
            fit.clamp(s.min_pairs, most)
        }
        _ => most,
    }
}

/// The seconds of the confirmation's time budget a training scenario leaves for the holdouts:
/// each holdout's planned minimum (`pairs`) at `seconds_per_pair`, the pace of the scenario's
/// baseline warmups (a holdout's own pace is not known before its warmups run).
pub fn holdout_reserve_s(holdouts: usize, pairs: usize, seconds_per_pair: f64) -> f64 {
    holdouts as f64 * pairs as f64 * seconds_per_pair.max(0.0)
}

/// One scenario's share of a time budget, in seconds of pairs: what `total_s` has left after
/// `spent_s` and the `reserve_s` held back for later scenarios, split evenly among the
/// `remaining` scenarios of its kind (itself included); never negative. A training scenario's
/// reserve is the holdouts' ([`holdout_reserve_s`]), a holdout's is 0, so the holdouts get
/// whatever training left, and training gets the budget less the holdouts' minimum.
pub fn budget_share_s(total_s: f64, spent_s: f64, reserve_s: f64, remaining: usize) -> f64 {
    (total_s - spent_s - reserve_s).max(0.0) / remaining.max(1) as f64
}

/// Whether `n` pairs resolve `min_effect` at noise `sigma`: the noise floor at `n` pairs is at
/// most the minimum effect.
pub fn resolves(sigma: f64, n: usize, min_effect: f64) -> bool {
    noise_floor(sigma, n) <= min_effect
}

/// The target effect of rules 2 and 3 (`confirm.target_effect`), when none is configured: half as
/// large again as the minimum effect. Rules 4 records it and decides nothing by it.
pub const DEFAULT_TARGET_FACTOR: f64 = 1.5;

/// The target effect for `min_effect` when the campaign names none.
pub fn default_target_effect(min_effect: f64) -> f64 {
    DEFAULT_TARGET_FACTOR * min_effect
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

/// `needed` within `[min_pairs, max(min_pairs, max_pairs)]`.
fn clamped(needed: usize, min_pairs: usize, max_pairs: usize) -> PairPlan {
    let planned = needed.clamp(min_pairs, max_pairs.max(min_pairs));
    PairPlan {
        needed,
        planned,
        resolves: needed <= planned,
    }
}

/// A holdout's cap, from the training scenarios' A/A noise (a holdout has no A/A pairs of its
/// own), between the configured pairs and `max_pairs`: its looks run from `min_pairs` to it
/// (`holdout::holdout_pairs_to_resolve`).
pub fn plan_holdout_pairs(
    sigma: f64,
    tolerance: f64,
    min_pairs: usize,
    max_pairs: usize,
) -> PairPlan {
    clamped(
        super::holdout::holdout_pairs_to_resolve(sigma, tolerance, min_pairs),
        min_pairs,
        max_pairs,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_training_cap_is_the_configured_cap_within_the_budget() {
        let s = |max_pairs, budget_s| CapSettings {
            min_pairs: 9,
            max_pairs,
            budget_s,
        };
        assert_eq!(training_cap(&s(60, None), 2.0, true), 60);
        assert_eq!(
            training_cap(&s(0, None), 2.0, true),
            9,
            "no cap: exactly the pairs"
        );
        assert_eq!(training_cap(&s(60, Some(60.0)), 2.0, true), 30);
        assert_eq!(
            training_cap(&s(60, Some(1.0)), 2.0, true),
            9,
            "never below the pairs"
        );
        assert_eq!(training_cap(&s(60, Some(1e9)), 2.0, true), 60);
        assert_eq!(
            training_cap(&s(60, None), 2.0, false),
            9,
            "a biased setup: one look"
        );
    }

    /// The budget is not wasted: a training scenario that runs to its budgeted cap undecided
    /// still leaves the holdouts their planned minimum, and one that decides early leaves them
    /// its unused time.
    #[test]
    fn training_gets_the_budget_less_the_holdouts_reserve_and_the_holdouts_get_the_rest() {
        // 20 min, one training scenario and two holdouts of at least 9 pairs, 2 s per pair.
        let (total, pace) = (1200.0, 2.0);
        let reserve = holdout_reserve_s(2, 9, pace);
        assert_eq!(reserve, 36.0);
        let training = budget_share_s(total, 0.0, reserve, 1);
        assert_eq!(training, 1164.0);
        let s = |budget_s| CapSettings {
            min_pairs: 9,
            max_pairs: 1000,
            budget_s: Some(budget_s),
        };
        let cap = training_cap(&s(training), pace, true);
        assert_eq!(cap, 582);
        // Undecided at the cap: the holdouts still get their 9 pairs each.
        let spent = cap as f64 * pace;
        let first = budget_share_s(total, spent, 0.0, 2);
        assert_eq!(training_cap(&s(first), pace, true), 9);
        let second = budget_share_s(total, spent + first, 0.0, 1);
        assert_eq!(training_cap(&s(second), pace, true), 9);
        // Decided after 30 pairs: the holdouts share what training did not use.
        let first = budget_share_s(total, 60.0, 0.0, 2);
        assert_eq!(first, 570.0);
        assert_eq!(training_cap(&s(first), pace, true), 285);
        let second = budget_share_s(total, 60.0 + 9.0 * pace, 0.0, 1);
        // The first ran 9 pairs; the second gets the rest.
        assert_eq!(training_cap(&s(second), pace, true), 561);
        // Spent past the budget: nothing is left, and the floor is still the planned minimum.
        assert_eq!(budget_share_s(total, 5000.0, 0.0, 2), 0.0);
        assert_eq!(training_cap(&s(0.0), pace, true), 9);
        // Without holdouts nothing is held back.
        assert_eq!(
            budget_share_s(total, 0.0, holdout_reserve_s(0, 9, pace), 1),
            total
        );
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
        use super::super::holdout::holdout_pairs_to_resolve;
        for sigma in [0.0, 0.005, 0.014, 0.03, 0.078] {
            let n = holdout_pairs_to_resolve(sigma, 0.01, 9);
            let se = |n: usize| 1.0233 * sigma / (n as f64).sqrt();
            let margin = (1.0f64 / 0.99).ln();
            // The last look's share is at most the whole 2.5%, so its quantile is at least 1.96:
            // at least the margin of one look at the same count.
            assert!(
                (1.96 + 1.6449) * se(n) <= margin * (1.0 + 1e-12),
                "{sigma}: {n}"
            );
        }
        // One look would take (3.6049 · 1.0233 · 0.02 / ln(1/0.99))² = 53.8 pairs; the level the
        // looks leave the last one (a fraction of the budget) asks for more.
        let n = holdout_pairs_to_resolve(0.02, 0.01, 9);
        assert!((54..=90).contains(&n), "{n}");
        let capped = plan_holdout_pairs(0.078, 0.01, 9, 60);
        assert_eq!((capped.planned, capped.resolves), (60, false));
        let quiet = plan_holdout_pairs(0.002, 0.01, 9, 60);
        // Never fewer than the first look.
        assert_eq!((quiet.needed, quiet.planned, quiet.resolves), (9, 9, true));
    }
}
