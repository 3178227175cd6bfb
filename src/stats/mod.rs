//! Pure statistics of paired measurements; docs/design.md §3 gives each formula as computed here.
//!
//! Nothing here spawns, prints or reads a clock: every function maps numbers to numbers, so the
//! receipt verifier can recompute a verdict from raw runs and tests can compare against brute force.
//! The submodules, in the order of that section: the interval for the median (§3.3), the A/A
//! noise figures (§3.5), the caps and holdout counts planned from that noise (§3.6), the
//! sequential rule that stops a comparison when it is decided (§3.7), the gates that turn figures
//! into verdicts (§3.8–§3.11), and `compare`, the one path from ratios to a verdict.

mod compare;
mod gates;
pub mod holdout;
mod interval;
mod noise;
mod plan;
pub mod sequential;
pub mod signed_rank;
pub mod spending;

pub use compare::{Comparison, compare};
pub use gates::{
    BenchVerdict, HOLDOUT_TOLERANCE, HoldoutVerdict, Tier, TrainingGate, bench_verdict,
    holdout_gate, tier, training_gate,
};
pub use holdout::{
    HoldoutStop, first_holdout_stop, holdout_looks, holdout_pairs_to_resolve, judge_holdout_look,
};
pub use interval::{Ci95, OrderRank, ci95, order_rank};
pub use noise::{AaValidity, aa_validity, cov, noise_floor, noise_sigma};
pub use plan::{
    CapSettings, DEFAULT_TARGET_FACTOR, MAX_PLANNABLE_PAIRS, MIN_INTERVAL_PAIRS, PairPlan,
    budget_share_s, default_target_effect, holdout_reserve_s, pairs_to_resolve, plan_holdout_pairs,
    resolves, training_cap,
};
pub use sequential::{Decision, Look, Resolution, Stop, first_stop, looks};

/// Per-pair speedup ratios `t_baseline / t_candidate`: at least one, all finite and > 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratios(Vec<f64>);

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no ratios given")]
    Empty,
    #[error("ratio #{index} is {value}: every ratio must be finite and positive")]
    NotPositive { index: usize, value: f64 },
}

impl Ratios {
    /// Checks the invariant once so that every statistic below can rely on it: logs are finite,
    /// the median exists and sorting has a total order.
    pub fn new(values: Vec<f64>) -> Result<Ratios, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some((index, &value)) = values
            .iter()
            .enumerate()
            .find(|(_, v)| !(v.is_finite() && **v > 0.0))
        {
            return Err(StatsError::NotPositive { index, value });
        }
        Ok(Ratios(values))
    }
    pub fn values(&self) -> &[f64] {
        &self.0
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn log_ratios(&self) -> Vec<f64> {
        self.0.iter().map(|r| r.ln()).collect()
    }
    /// The ratios in ascending order (the order statistics `r_(1) ≤ … ≤ r_(n)`).
    pub fn sorted(&self) -> Vec<f64> {
        sorted(&self.0)
    }
}

/// Median of the ratios (geometric midpoint of the two middle values when n is even).
///
/// The geometric midpoint makes the median commute with swapping the arms: the median of `1/r`
/// is `1/median(r)`, which an arithmetic midpoint would break.
pub fn median(ratios: &Ratios) -> f64 {
    let s = ratios.sorted();
    median_of_sorted_ratios(&s)
}

/// Geometric-midpoint median of ascending, positive values; callers guarantee `s` is non-empty.
pub(crate) fn median_of_sorted_ratios(s: &[f64]) -> f64 {
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        // sqrt(a)·sqrt(b) rather than sqrt(a·b): the product of two large ratios could overflow.
        s[n / 2 - 1].sqrt() * s[n / 2].sqrt()
    }
}

/// Plain median (arithmetic midpoint when n is even) of arbitrary finite values; NaN when empty.
pub(crate) fn plain_median(values: &[f64]) -> f64 {
    let s = sorted(values);
    let n = s.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => s[n / 2],
        _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The `q` quantile of sorted, non-empty values: linear between the closest order statistics
/// (`q` 0.5 is [`plain_median`]).
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    sorted[below] + (position - below as f64) * (sorted[above] - sorted[below])
}

pub(crate) fn sorted(values: &[f64]) -> Vec<f64> {
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(v: &[f64]) -> Ratios {
        Ratios::new(v.to_vec()).expect("valid ratios")
    }

    #[test]
    fn ratios_reject_empty_zero_negative_nan_and_infinity() {
        assert_eq!(Ratios::new(vec![]), Err(StatsError::Empty));
        for bad in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            match Ratios::new(vec![1.0, bad]) {
                Err(StatsError::NotPositive { index, .. }) => assert_eq!(index, 1, "{bad}"),
                other => panic!("{bad} accepted: {other:?}"),
            }
        }
        assert_eq!(r(&[2.0, 0.5]).values(), &[2.0, 0.5]);
    }

    #[test]
    fn median_of_odd_count_is_the_middle_value() {
        assert_eq!(median(&r(&[3.0, 1.0, 2.0])), 2.0);
        assert_eq!(median(&r(&[1.7])), 1.7);
    }

    #[test]
    fn median_of_even_count_is_the_geometric_midpoint() {
        assert!((median(&r(&[4.0, 1.0, 9.0, 0.5])) - 2.0).abs() < 1e-15);
        assert!((median(&r(&[1.0, 1.21])) - 1.1).abs() < 1e-15);
    }

    #[test]
    fn median_of_huge_even_pair_does_not_overflow() {
        let m = median(&r(&[1e300, 1e300]));
        assert!((m / 1e300 - 1.0).abs() < 1e-12, "{m}");
    }

    #[test]
    fn plain_median_uses_the_arithmetic_midpoint() {
        assert_eq!(plain_median(&[4.0, 1.0, 9.0, 0.0]), 2.5);
        assert_eq!(quantile(&sorted(&[4.0, 1.0, 9.0, 0.0]), 0.5), 2.5);
        assert_eq!(plain_median(&[-1.0, 5.0, 2.0]), 2.0);
        assert!(plain_median(&[]).is_nan());
    }
}
