//! A holdout's pairs under the sequential rule (rules 5): like a training comparison, a holdout
//! looks at its pairs as they come and stops at the first look that decides.
//!
//! The looks are `sequential::looks(pairs, planned)`: from the configured pairs up to the count
//! planned from the training scenarios' A/A noise, with the same spending of the 2.5%-per-side
//! budget and the same estimate and interval (rules 9: Hodges–Lehmann and signed rank). At each
//! look the holdout gate (`gates::holdout_gate`) is applied to that look's interval: a lower
//! bound at or above 0.99 is "no regression", an upper bound below 1 with an estimate below 0.99
//! is "rejected", anything else goes on; at the last look it is "inconclusive". Over the looks, a
//! holdout truly slower than the tolerance shows "no regression" at most 2.5% of the time, and
//! one truly no slower than the baseline is rejected at most 2.5% of the time, under continuous
//! looking and for noise symmetric about its centre. The looks are fixed before the first pair,
//! so a verifier re-derives the stop.

use serde::{Deserialize, Serialize};

use super::sequential::{ALPHA, Look, estimate_se, look_estimate, looks, z_of};
use super::{Ci95, HoldoutVerdict, MAX_PLANNABLE_PAIRS, MIN_INTERVAL_PAIRS, holdout_gate};

/// One-sided normal quantile of 95%: the margin, in standard errors of the median, between a
/// null candidate's expected lower bound at the last look and the holdout tolerance.
const Z_HOLDOUT_POWER: f64 = 1.6449;

/// The look a holdout stopped at and what its gate said there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HoldoutStop {
    /// Index into the looks.
    pub look: usize,
    pub pairs: usize,
    pub verdict: HoldoutVerdict,
    pub median: f64,
    pub interval: Option<Ci95>,
}

/// The looks of a holdout that starts deciding at `pairs` and runs `planned` pairs at most.
pub fn holdout_looks(pairs: usize, planned: usize) -> Vec<Look> {
    looks(pairs, planned)
}

/// What the look `looks[index]` decides on the first `look.pairs` of `ratios`: `None` to go on
/// (never at the last look). The caller guarantees the ratios reach the look.
pub fn judge_holdout_look(ratios: &[f64], looks: &[Look], index: usize) -> Option<HoldoutStop> {
    let look = looks[index];
    let last = index + 1 == looks.len();
    let (median, interval) = look_estimate(&ratios[..look.pairs], &look);
    let verdict = holdout_gate(median, interval.as_ref());
    (verdict != HoldoutVerdict::Inconclusive || last).then_some(HoldoutStop {
        look: index,
        pairs: look.pairs,
        verdict,
        median,
        interval,
    })
}

/// Walks the looks over `ratios` in order and returns the first that decides; `None` when the
/// ratios end before any look decides (a holdout cut short).
pub fn first_holdout_stop(ratios: &[f64], looks: &[Look]) -> Option<HoldoutStop> {
    (0..looks.len())
        .take_while(|&i| looks[i].pairs <= ratios.len())
        .find_map(|i| judge_holdout_look(ratios, looks, i))
}

/// Whether a holdout whose looks start at `first` and end at `n` pairs shows "no regression" at
/// its last look 95% of the time for a candidate exactly as fast as the baseline, at per-pair
/// noise `sigma` (normal approximation): `(z(α_last) + 1.6449) · 1.0233 σ / √n ≤ ln(1/(1 − t))`,
/// where `α_last` is the level the last look spends.
fn holdout_resolves(sigma: f64, tolerance: f64, first: usize, n: usize) -> bool {
    let alpha = looks(first, n).last().map_or(ALPHA, |l| l.level);
    (z_of(alpha) + Z_HOLDOUT_POWER) * estimate_se(sigma, n) <= (1.0 / (1.0 - tolerance)).ln()
}

/// The smallest pair count (at least `first`, at least 6) at which a candidate exactly as fast as
/// the baseline passes the holdout gate by the last look with probability 95% at per-pair noise
/// `sigma` (`holdout_resolves`; the earlier looks only add to that chance). Saturated at
/// `MAX_PLANNABLE_PAIRS`.
///
/// The margin is 95% rather than the minimum detectable effect's 80% because σ comes from a few
/// A/A pairs and is often estimated low, and the order-statistic interval is wider than the
/// normal one (`tests/it/stats_props.rs`, docs/design.md §3.10).
pub fn holdout_pairs_to_resolve(sigma: f64, tolerance: f64, first: usize) -> usize {
    let ok = |n: usize| holdout_resolves(sigma, tolerance, first, n);
    let mut low = first.max(MIN_INTERVAL_PAIRS);
    if ok(low) {
        return low;
    }
    // Double until resolved, then halve the gap: the smallest count found that way (the last
    // look's share moves a little with the count, so the search is what defines the answer).
    let mut high = low;
    while !ok(high) {
        if high >= MAX_PLANNABLE_PAIRS {
            return MAX_PLANNABLE_PAIRS;
        }
        low = high;
        high = (high * 2).min(MAX_PLANNABLE_PAIRS);
    }
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if ok(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pairs_to_resolve_grow_with_the_noise_and_start_at_the_first_look() {
        let t = super::super::HOLDOUT_TOLERANCE;
        assert_eq!(holdout_pairs_to_resolve(0.0, t, 9), 9);
        assert_eq!(holdout_pairs_to_resolve(0.0001, t, 4), 6);
        let quiet = holdout_pairs_to_resolve(0.01, t, 9);
        let noisy = holdout_pairs_to_resolve(0.03, t, 9);
        assert!(quiet < noisy, "{quiet} {noisy}");
        assert!(holdout_resolves(0.03, t, 9, noisy));
        assert!(!holdout_resolves(0.03, t, 9, noisy - 1));
        assert_eq!(holdout_pairs_to_resolve(10.0, t, 9), MAX_PLANNABLE_PAIRS);
    }

    #[test]
    fn a_holdout_stops_at_the_first_look_its_gate_decides() {
        let looks = holdout_looks(9, 40);
        assert!(looks.len() > 2, "{looks:?}");
        // The first look with an interval (at 9 pairs, no rank meets the first share, which is
        // carried on to the next look).
        let first = looks.iter().position(|l| l.k.is_some()).unwrap();
        assert!(first < looks.len() - 1, "{looks:?}");
        let at = looks[first].pairs;
        // Clearly faster: no regression at the first look that can decide.
        let fast = vec![1.2; 40];
        let stop = first_holdout_stop(&fast, &looks).unwrap();
        assert_eq!((stop.look, stop.pairs), (first, at));
        assert_eq!(stop.verdict, HoldoutVerdict::NoRegression);
        // Clearly slower: rejected there too.
        let slow = vec![0.8; 40];
        let stop = first_holdout_stop(&slow, &looks).unwrap();
        assert_eq!((stop.pairs, stop.verdict), (at, HoldoutVerdict::Rejected));
        // Straddling the tolerance: goes to the last look and is inconclusive there.
        let mixed: Vec<f64> = (0..40).map(|i| [0.85, 1.05, 0.95, 1.15][i % 4]).collect();
        let stop = first_holdout_stop(&mixed, &looks).unwrap();
        assert_eq!(stop.pairs, 40);
        assert_eq!(stop.verdict, HoldoutVerdict::Inconclusive);
        // Cut short before the first look: no stop.
        assert_eq!(first_holdout_stop(&mixed[..8], &looks), None);
    }
}
