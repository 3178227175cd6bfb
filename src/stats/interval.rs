//! The distribution-free confidence interval for the median of the per-pair ratios.
//!
//! Order statistics need no assumption about the shape of the noise, which on a busy machine is
//! skewed and heavy-tailed; the price is that coverage moves in steps, so the achieved coverage is
//! reported alongside the interval rather than assumed to be exactly 95%.

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

use super::Ratios;

/// Order-statistic confidence interval for the median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ci95 {
    pub lower: f64,
    pub upper: f64,
    /// Achieved coverage, e.g. 0.9609 for n = 9.
    pub coverage: f64,
    /// 1-based rank: the interval is `[r_(k), r_(n+1-k)]`.
    pub k: usize,
}

impl Ci95 {
    /// The interval's name in every text, by its achieved coverage ("96.1% CI"): an order
    /// statistic's coverage moves in steps, and the interval of a look that spends a small share
    /// of the error budget covers more ("99.6% CI"), so nothing is called a CI95 that is not one.
    pub fn name(&self) -> String {
        let pct = 100.0 * self.coverage;
        if pct >= 99.95 {
            ">99.9% CI".to_string()
        } else {
            format!("{pct:.1}% CI")
        }
    }

    /// "96.1% CI 1.066–1.087×", the bounds with `digits` decimals.
    pub fn text(&self, digits: usize) -> String {
        format!(
            "{} {:.*}–{:.*}×",
            self.name(),
            digits,
            self.lower,
            digits,
            self.upper
        )
    }
}

/// The rank k and its coverage for n pairs; `None` when n < 6 (95% is unreachable).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OrderRank {
    pub k: usize,
    pub coverage: f64,
}

const TARGET_COVERAGE: f64 = 0.95;

/// The largest k ≥ 1 with `1 − 2·P(Binomial(n, ½) ≤ k−1) ≥ 0.95`, and that coverage.
pub fn order_rank(n: usize) -> Option<OrderRank> {
    let binomial = Binomial::new(0.5, n as u64).ok()?;
    let coverage = |k: usize| 1.0 - 2.0 * binomial.cdf(k as u64 - 1);
    // Coverage falls as k grows, and k cannot pass the middle (k ≤ n+1−k), so binary search the
    // last k in [1, (n+1)/2] that still reaches the target.
    let (mut good, mut bad) = (0usize, n.div_ceil(2) + 1);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if coverage(mid) >= TARGET_COVERAGE {
            good = mid;
        } else {
            bad = mid;
        }
    }
    (good >= 1).then(|| OrderRank {
        k: good,
        coverage: coverage(good),
    })
}

/// `[r_(k), r_(n+1−k)]` of the sorted ratios; `None` when fewer than 6 pairs make 95% unreachable.
pub fn ci95(ratios: &Ratios) -> Option<Ci95> {
    let n = ratios.len();
    let OrderRank { k, coverage } = order_rank(n)?;
    let s = ratios.sorted();
    Some(Ci95 {
        lower: s[k - 1],
        upper: s[n - k],
        coverage,
        k,
    })
}

#[cfg(test)]
mod tests {

    /// Every text names an interval by what it covers: a look's interval that covers 99.6% is
    /// never called a CI95.
    #[test]
    fn an_interval_is_named_by_its_achieved_coverage() {
        let ci = |coverage| Ci95 {
            lower: 1.0,
            upper: 1.2,
            coverage,
            k: 1,
        };
        assert_eq!(ci(0.9609).name(), "96.1% CI");
        assert_eq!(ci(0.99609375).text(3), "99.6% CI 1.000–1.200×");
        assert_eq!(ci(0.99999).name(), ">99.9% CI");
    }

    use super::*;

    fn rank(n: usize) -> (usize, f64) {
        let r = order_rank(n).expect("rank exists");
        (r.k, r.coverage)
    }

    #[test]
    fn order_rank_matches_the_design_examples() {
        let cases = [
            (9, 2, 0.9609),
            (7, 1, 0.9844),
            (11, 2, 0.9883),
            (6, 1, 0.96875),
        ];
        for (n, k, coverage) in cases {
            let (got_k, got_c) = rank(n);
            assert_eq!(got_k, k, "n = {n}");
            assert!((got_c - coverage).abs() < 5e-5, "n = {n}: {got_c}");
        }
    }

    #[test]
    fn order_rank_has_exact_coverage_for_n_6() {
        // 1 − 2·(1/64) = 0.96875 exactly.
        assert!((rank(6).1 - 0.96875).abs() < 1e-12);
    }

    #[test]
    fn fewer_than_six_pairs_have_no_rank() {
        for n in 0..6 {
            assert_eq!(order_rank(n), None, "n = {n}");
        }
    }

    #[test]
    fn order_rank_of_large_n_is_near_the_normal_approximation() {
        // k ≈ n/2 − 1.96·√n/2 for large n.
        let (k, c) = rank(10_000);
        assert!((k as f64 - (5000.0 - 98.0)).abs() <= 2.0, "k = {k}");
        assert!((0.95..0.96).contains(&c), "coverage {c}");
    }

    #[test]
    fn ci95_picks_the_kth_values_from_each_end() {
        let r = Ratios::new(vec![1.09, 1.01, 1.05, 1.02, 1.08, 1.03, 1.07, 1.04, 1.06]).unwrap();
        let ci = ci95(&r).expect("n = 9 has a ci");
        assert_eq!((ci.lower, ci.upper, ci.k), (1.02, 1.08, 2));
        let short = Ratios::new(vec![1.0; 5]).unwrap();
        assert_eq!(ci95(&short), None);
    }
}
