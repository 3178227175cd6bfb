//! The sequential rule (rules 4, with the estimate, interval and spending of rules 9): the
//! comparison looks at its pairs as they come and stops as soon as they decide, in either
//! direction, instead of running a pair count fixed in advance.
//!
//! Each look `j` at `n_j` pairs judges the Hodges–Lehmann estimate of the ratios and its
//! distribution-free signed-rank interval [`super::signed_rank`], at the critical count `k_j`
//! whose exact one-sided tail `P(W ≤ k_j − 1)` is within the look's nominal level. The nominal
//! levels come from a Pocock-type spending function over the looks up to the cap `N`, with the
//! looks' correlation integrated out [`super::spending`]: the chance that any look's lower bound
//! lies above the true centre is `α = 2.5%` (likewise the upper bound below it), under continuous
//! looking, for any noise symmetric about its centre. The looks, their levels and the cap are
//! fixed before the first comparison pair; nothing the pairs show changes them, so a verifier
//! re-derives every stop from the recorded pairs.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

use super::signed_rank::{critical, estimate, w_plus};
use super::spending::{Boundaries, spent_by};
use super::{Ci95, MIN_INTERVAL_PAIRS};

/// The error budget per side: a false acceptance (and a false "no real gain") at most this often.
pub const ALPHA: f64 = 0.025;
/// The budget the boundaries are computed for: 85% of [`ALPHA`]. The integration treats the
/// standardized signed-rank statistic as Gaussian over the looks; its exact null process (the same
/// for every noise symmetric about its centre, so one simulation measures it) is lattice-valued
/// and crosses a little more often than the Gaussian does at the same levels — up to about 12% of
/// α with a few looks of a few pairs each (docs/calibration.md, "The boundaries under the null").
/// The margin keeps the rule's own crossing chance within α.
pub const DESIGN_ALPHA: f64 = 0.85 * ALPHA;
/// Each look after the first is at least a quarter larger than the one before…
const LOOK_GROWTH: f64 = 1.25;
/// …and at least this many pairs later.
const MIN_LOOK_STEP: usize = 3;
/// One-sided normal quantile of 80%: the power the plan's statements are made at.
const Z_POWER: f64 = 0.8416;
/// Efficiency of the MAD as an estimate of a normal σ: its spread is that of a standard deviation
/// from about 37% as many values, which the upper bound on σ takes into account.
const MAD_EFFICIENCY: f64 = 0.37;

/// One look: after `pairs` comparison pairs, its nominal one-sided level `alpha` (what the
/// spending function and the looks before leave it, [`super::spending`]), the critical count `k`
/// of the signed-rank statistic within that level (`None` when even the extreme Walsh averages
/// cannot meet it) and the exact tail `level = P(W ≤ k − 1)` the look really spends. Results of
/// rules 8 and before hold the share of the union bound in `alpha` and an order-statistic rank in
/// `k`, and no `spent` or `level`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Look {
    pub pairs: usize,
    pub alpha: f64,
    pub k: Option<usize>,
    /// The cumulative budget spent by this look, `α(n / cap)` (the first look's at least the tail of
    /// its most extreme interval when that is small, `first_look_floor`).
    #[serde(default)]
    pub spent: f64,
    /// `P(W ≤ k − 1)` under the null: what the look's interval spends on each side (0 without `k`).
    #[serde(default)]
    pub level: f64,
}

/// What a look decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The interval's lower bound is above 1 and the estimate reaches the minimum effect (with a
    /// valid A/A check).
    Accepted,
    /// The interval's upper bound is below 1 and the estimate is slower by the minimum effect.
    Slower,
    /// The interval's upper bound is below `1 + min_effect`: any gain is smaller than the
    /// minimum effect (an equivalence verdict).
    NoRealGain,
    /// The cap was reached with none of the above.
    Undecided,
}

impl Decision {
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::Accepted => "accepted",
            Decision::Slower => "slower",
            Decision::NoRealGain => "no real gain",
            Decision::Undecided => "undecided",
        }
    }
}

/// How the looks' levels are computed, recorded beside them so a reader can re-derive the table.
pub const METHOD: &str = "Hodges-Lehmann estimate with the Wilcoxon signed-rank interval \
    (exact null distribution up to 200 pairs, normal with continuity correction above); \
    Lan-DeMets Pocock-type spending a*ln(1+(e-1)t) of a = 0.85 x 0.025 per side over the \
    information fraction t = I(n)/I(cap), I(n) = n(2n+1)/(n+1); nominal levels by recursive \
    numerical integration over the looks (Simpson's rule, step 0.05 on [-8, boundary]); the first \
    look spends at least 2^-n when that is at most 0.025/8; a level a look's discrete tail cannot \
    spend carries on";

/// The designs computed so far in this process, by `(first, cap)`.
type Designs = HashMap<(usize, usize), Vec<Look>>;

/// The looks of a comparison that starts deciding at `first` pairs and stops at `cap` at the
/// latest: `first` (at least 6 when the cap allows), then each at least a quarter and three pairs
/// larger, the last one exactly `cap`. Pure in `(first, cap)`, and remembered per pair of them
/// (the integration takes a few milliseconds per look).
pub fn looks(first: usize, cap: usize) -> Vec<Look> {
    static MEMO: OnceLock<Mutex<Designs>> = OnceLock::new();
    let memo = MEMO.get_or_init(Mutex::default);
    if let Some(found) = memo.lock().ok().and_then(|m| m.get(&(first, cap)).cloned()) {
        return found;
    }
    let made = design(first, cap);
    if let Ok(mut m) = memo.lock() {
        m.insert((first, cap), made.clone());
    }
    made
}

fn design(first: usize, cap: usize) -> Vec<Look> {
    let cap = cap.max(first).max(1);
    let mut counts = Vec::new();
    let mut n = first.max(MIN_INTERVAL_PAIRS).min(cap).max(1);
    loop {
        counts.push(n);
        if n >= cap {
            break;
        }
        let grown = (n as f64 * LOOK_GROWTH).ceil() as usize;
        n = grown.max(n + MIN_LOOK_STEP).min(cap);
    }
    let mut boundaries = Boundaries::new();
    counts
        .into_iter()
        .enumerate()
        .map(|(j, n)| {
            let t = information(n) / information(cap);
            let spent = if j == 0 {
                spent_by(DESIGN_ALPHA, t).max(first_look_floor(n))
            } else {
                spent_by(DESIGN_ALPHA, t)
            };
            let alpha = boundaries.nominal(t, spent);
            let found = critical(n, alpha);
            let level = found.map_or(0.0, |(_, tail)| tail);
            boundaries.commit(t, level);
            Look {
                pairs: n,
                alpha,
                k: found.map(|(k, _)| k),
                spent,
                level,
            }
        })
        .collect()
}

/// The signed-rank statistic's information at `n` pairs, `I_n = n(2n+1)/(n+1)`: under the null
/// `cov(W_m, W_n) = m(2m+1)(n+1)/24` for `m ≤ n`, so the standardized statistics have
/// `corr = √(I_m / I_n)`, the correlation of a Brownian motion at times `I_m` and `I_n` (about,
/// not exactly, `√(m/n)`). The looks' fractions are `I_n / I_cap`.
fn information(n: usize) -> f64 {
    let n = n as f64;
    n * (2.0 * n + 1.0) / (n + 1.0)
}

/// What the first look may spend at least: the tail `2^−n` of its most extreme interval (every
/// pair on one side), when that is within an eighth of the budget (from 9 pairs). A design with a
/// far cap would otherwise give its first look less than any interval spends, and a candidate
/// whose every pair shows it faster would wait for the second look; the looks after it spend what
/// the spending function has left.
fn first_look_floor(n: usize) -> f64 {
    let tail = 0.5f64.powi(n.min(1000) as i32);
    if tail <= ALPHA / 8.0 { tail } else { 0.0 }
}

/// The estimate and the interval a look allows on its ratios (`ratios.len()` is the look's pair
/// count).
pub fn look_estimate(ratios: &[f64], look: &Look) -> (f64, Option<Ci95>) {
    let (centre, bounds) = estimate(ratios, look.k);
    let interval = bounds.zip(look.k).map(|((lower, upper), k)| Ci95 {
        lower,
        upper,
        coverage: 1.0 - 2.0 * look.level,
        k,
    });
    (centre, interval)
}

/// What one look saw, recorded for every look a run's pairs reach so a reader can re-derive each
/// one (`evo receipt verify --recompute` does): on the look's first `pairs` ratios, the
/// Hodges–Lehmann estimate, the look's interval (none when its level allows none), and the
/// signed-rank statistic in Tukey's form, `w_plus`: how many of the `n(n+1)/2` Walsh averages of
/// the log-ratios lie above 0, a half for each at 0. The interval's bounds are the `k`-th smallest
/// and largest Walsh averages, so the lower bound is above 1 exactly when `w_plus ≥ M − k + 1`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Seen {
    pub pairs: usize,
    pub estimate: f64,
    pub interval: Option<(f64, f64)>,
    pub w_plus: f64,
}

/// What each look `ratios` reach saw (the looks after the last one reached are not).
pub fn seen(ratios: &[f64], looks: &[Look]) -> Vec<Seen> {
    (looks.iter())
        .take_while(|l| l.pairs <= ratios.len())
        .map(|l| {
            let first = &ratios[..l.pairs];
            let (estimate, interval) = estimate(first, l.k);
            Seen {
                pairs: l.pairs,
                estimate,
                interval,
                w_plus: w_plus(first),
            }
        })
        .collect()
}

/// What one look of ascending ratios decides: `None` to go on (never at the cap).
pub fn decide(
    interval: Option<&Ci95>,
    median: f64,
    min_effect: f64,
    aa_valid: bool,
    at_cap: bool,
) -> Option<Decision> {
    let bar = 1.0 + min_effect;
    let decided = match interval {
        Some(c) if aa_valid && c.lower > 1.0 && median >= bar => Some(Decision::Accepted),
        Some(c) if c.upper < 1.0 && median.recip() >= bar => Some(Decision::Slower),
        Some(c) if c.upper < bar => Some(Decision::NoRealGain),
        _ => None,
    };
    decided.or(at_cap.then_some(Decision::Undecided))
}

/// The look a run of these ratios stops at and what it decided there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stop {
    /// Index into the looks.
    pub look: usize,
    pub pairs: usize,
    pub decision: Decision,
    pub median: f64,
    pub interval: Option<Ci95>,
}

/// What the look `looks[index]` decides on the first `look.pairs` of `ratios` (`None`: go on;
/// never at the cap, the last look). The caller guarantees the ratios reach the look.
pub fn judge_look(
    ratios: &[f64],
    looks: &[Look],
    index: usize,
    min_effect: f64,
    aa_valid: bool,
) -> Option<Stop> {
    let look = looks[index];
    let cap = looks.last().map_or(look.pairs, |l| l.pairs);
    let (median, interval) = look_estimate(&ratios[..look.pairs], &look);
    let at_cap = look.pairs >= cap;
    decide(interval.as_ref(), median, min_effect, aa_valid, at_cap).map(|decision| Stop {
        look: index,
        pairs: look.pairs,
        decision,
        median,
        interval,
    })
}

/// Walks the looks over `ratios` in order and returns the first that decides; `None` when the
/// ratios end before any look decides (a run cut short).
pub fn first_stop(ratios: &[f64], looks: &[Look], min_effect: f64, aa_valid: bool) -> Option<Stop> {
    (0..looks.len())
        .take_while(|&i| looks[i].pairs <= ratios.len())
        .find_map(|i| judge_look(ratios, looks, i, min_effect, aa_valid))
}

/// An upper 80% confidence bound on the per-pair noise σ estimated from `aa_pairs` A/A pairs by
/// the MAD: `σ · √(ν / χ²_{0.2}(ν))` with `ν = 0.37 (n − 1)` degrees of freedom.
pub fn sigma_upper(sigma: f64, aa_pairs: usize) -> f64 {
    sigma_bound(sigma, aa_pairs, 0.2)
}

/// The central 80% confidence interval of the per-pair noise σ estimated from `aa_pairs` A/A
/// pairs by the MAD: `σ · √(ν / χ²_q(ν))` at `q` = 0.9 and 0.1, `ν` as for [`sigma_upper`].
/// What a plan stated at σ may be off by, from the A/A pairs' own uncertainty.
pub fn sigma_range(sigma: f64, aa_pairs: usize) -> (f64, f64) {
    (
        sigma_bound(sigma, aa_pairs, 0.9),
        sigma_bound(sigma, aa_pairs, 0.1),
    )
}

/// `σ · √(ν / χ²_q(ν))`: the bound on σ at quantile `q` of the chi-squared with the MAD's
/// degrees of freedom (an upper bound for small `q`, a lower one for large).
fn sigma_bound(sigma: f64, aa_pairs: usize, q: f64) -> f64 {
    let nu = (MAD_EFFICIENCY * aa_pairs.saturating_sub(1) as f64).max(0.5);
    let Ok(chi) = ChiSquared::new(nu) else {
        return sigma;
    };
    sigma * (nu / chi.inverse_cdf(q)).sqrt()
}

pub(super) fn z_of(alpha: f64) -> f64 {
    let normal = Normal::new(0.0, 1.0).expect("the standard normal exists");
    normal.inverse_cdf(1.0 - alpha.clamp(1e-12, 0.5))
}

/// `√(π/3)`: the Hodges–Lehmann estimate's standard error relative to the mean's under normal
/// noise (its efficiency is 3/π).
pub const HL_SE_FACTOR: f64 = 1.0233;

/// Standard error of the Hodges–Lehmann estimate of `n` log-ratios at per-pair noise `sigma`
/// (normal noise).
pub(super) fn estimate_se(sigma: f64, n: usize) -> f64 {
    HL_SE_FACTOR * sigma / (n as f64).sqrt()
}

/// What a design with looks up to `cap` can resolve at per-pair noise `sigma` (normal
/// approximation, for the plan's statements only; the verdict never uses it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Resolution {
    /// The true gain accepted at least 80% of the time by the cap, as a fraction.
    pub gain: f64,
    /// Pairs by which a true null is called "no real gain" 80% of the time (saturated).
    pub null_pairs: usize,
}

/// The gain found 80% of the time within `cap` pairs, and the pairs a null needs to be ruled out
/// at `min_effect` 80% of the time, both at noise `sigma`: within the cap, the first of the
/// design's looks whose own error share does it; beyond it, what a design capped there needs.
pub fn resolution(first: usize, cap: usize, sigma: f64, min_effect: f64) -> Resolution {
    // Each look's interval is a discrete statistic's, which spends only part of its nominal
    // level (the largest k whose tail is within it): the level it does spend is the one its
    // power follows. A look without an interval spends nothing and decides nothing.
    let spent = |l: &Look| l.k.map(|_| l.level);
    let last_spent = |cap: usize| looks(first, cap).last().and_then(spent).unwrap_or(ALPHA);
    let se = estimate_se(sigma, cap.max(1));
    let bar = (z_of(last_spent(cap)) * se).max(min_effect.ln_1p());
    let gain = (bar + Z_POWER * se).exp() - 1.0;
    // A look at `n` pairs spending `alpha` rules a null out 80% of the time.
    let rules_out = |n: usize, alpha: f64| {
        (z_of(alpha) + Z_POWER) * estimate_se(sigma, n) <= min_effect.ln_1p()
    };
    // Within the cap, the design's own looks, each at what it spends (an early look spends
    // little): the first that rules the null out. Beyond it, what a design capped there needs
    // at its last look.
    let within = (looks(first, cap).iter())
        .find(|l| spent(l).is_some_and(|alpha| rules_out(l.pairs, alpha)))
        .copied();
    let null_pairs = match within {
        Some(look) => look.pairs,
        None => {
            let mut n = cap.max(first.max(MIN_INTERVAL_PAIRS));
            while !rules_out(n, last_spent(n)) && n < super::MAX_PLANNABLE_PAIRS {
                n = (n as f64 * LOOK_GROWTH).ceil() as usize;
            }
            n
        }
    };
    Resolution {
        gain,
        null_pairs: null_pairs.min(super::MAX_PLANNABLE_PAIRS),
    }
}

/// For a run the cap left undecided: about how many pairs in all would decide it 80% of the time
/// if its pairs went on as they did (per-pair noise `sigma` and median `median` from its own
/// pairs), at a last look with share `alpha`. A median above the minimum effect must clear 1, one
/// below it must clear `1 + min_effect`; at the bar itself nothing decides (saturated).
pub fn pairs_to_decide(sigma: f64, median: f64, min_effect: f64, alpha: f64) -> usize {
    let (m, bar) = (median.ln(), min_effect.ln_1p());
    let gap = if m >= bar { m } else { bar - m };
    let n = ((z_of(alpha) + Z_POWER) * HL_SE_FACTOR * sigma / gap)
        .powi(2)
        .ceil();
    if n.is_finite() && n >= 0.0 {
        (n as usize).clamp(MIN_INTERVAL_PAIRS, super::MAX_PLANNABLE_PAIRS)
    } else {
        super::MAX_PLANNABLE_PAIRS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_look_reached_is_seen_and_its_bounds_follow_its_statistic() {
        // Log-ratios with a drift of 2% and a spread of about 4%, none exactly 0.
        let ratios: Vec<f64> = (0..30)
            .map(|i| (0.02 + 0.04 * ((i * 7 % 11) as f64 - 5.0) / 5.0 + 1e-6).exp())
            .collect();
        let looks = looks(9, 40);
        let all = seen(&ratios, &looks);
        let reached = looks.iter().filter(|l| l.pairs <= 30).count();
        assert_eq!(all.len(), reached);
        let mut with_interval = 0;
        for (s, l) in all.iter().zip(&looks) {
            assert_eq!(s.pairs, l.pairs);
            let m = (l.pairs * (l.pairs + 1) / 2) as f64;
            let Some(((lower, upper), k)) = s.interval.zip(l.k) else {
                continue;
            };
            with_interval += 1;
            // The k-th smallest Walsh average is above 0 exactly when at least M − k + 1 are.
            assert_eq!(lower > 1.0, s.w_plus >= m - k as f64 + 1.0, "{s:?}");
            assert_eq!(upper < 1.0, s.w_plus <= k as f64 - 1.0, "{s:?}");
        }
        // Not vacuous: the identity was checked on looks with an interval.
        assert!(with_interval >= 2, "{all:?}");
        assert!(seen(&ratios[..8], &looks).is_empty());
    }

    /// The levels the looks really spend, integrated with their correlation, stay within the
    /// design's budget; each is within its nominal level; the last look has spent it all.
    #[test]
    fn the_looks_spend_at_most_the_budget_and_end_at_the_cap() {
        for (first, cap) in [(9, 60), (6, 6), (9, 9), (6, 1000), (12, 40), (3, 5)] {
            let l = looks(first, cap);
            assert_eq!(l.last().unwrap().pairs, cap.max(first), "{first}..{cap}");
            let mut b = Boundaries::new();
            let end = information(cap.max(first));
            for look in &l {
                assert!(look.level <= look.alpha + 1e-15, "{first}..{cap}: {look:?}");
                b.commit(information(look.pairs) / end, look.level);
            }
            assert!(
                b.crossed() <= DESIGN_ALPHA + 1e-5,
                "{first}..{cap}: {}",
                b.crossed()
            );
            assert!((l.last().unwrap().spent - DESIGN_ALPHA).abs() < 1e-12);
            assert!(
                l.windows(2)
                    .all(|w| w[1].pairs >= w[0].pairs + 3 || w[1].pairs == cap)
            );
        }
    }

    /// The correlation of the looks is what lets them spend more than a union bound would: over
    /// many looks, the levels add up to more than the budget while the crossing chance does not.
    #[test]
    fn correlated_looks_spend_more_than_their_union_bound() {
        let l = looks(9, 200);
        let sum: f64 = l.iter().map(|look| look.level).sum();
        assert!(sum > ALPHA, "{sum}");
    }

    #[test]
    fn a_cap_below_six_pairs_has_one_look_without_an_interval() {
        let l = looks(3, 5);
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].pairs, l[0].k), (5, None));
    }

    #[test]
    fn a_large_effect_stops_at_an_early_look() {
        let ratios = vec![1.5; 60];
        let l = looks(9, 60);
        let stop = first_stop(&ratios, &l, 0.02, true).unwrap();
        assert_eq!(stop.decision, Decision::Accepted);
        assert!(stop.pairs <= 20, "{stop:?}");
    }

    #[test]
    fn without_a_valid_aa_check_nothing_is_accepted() {
        let ratios = vec![1.5; 60];
        let stop = first_stop(&ratios, &looks(9, 60), 0.02, false).unwrap();
        assert_eq!(stop.decision, Decision::Undecided);
        assert_eq!(stop.pairs, 60);
    }

    #[test]
    fn a_tight_null_is_no_real_gain_and_a_clear_slowdown_is_slower() {
        let null: Vec<f64> = (0..60)
            .map(|i| 1.0 + 0.001 * ((i % 7) as f64 - 3.0))
            .collect();
        let stop = first_stop(&null, &looks(9, 60), 0.02, true).unwrap();
        assert_eq!(stop.decision, Decision::NoRealGain);
        let slow = vec![0.8; 60];
        let stop = first_stop(&slow, &looks(9, 60), 0.02, true).unwrap();
        assert_eq!(stop.decision, Decision::Slower);
    }

    #[test]
    fn ratios_that_end_before_a_decision_have_no_stop() {
        let wide: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 0.7 } else { 1.4 })
            .collect();
        assert_eq!(first_stop(&wide, &looks(9, 60), 0.02, true), None);
    }

    #[test]
    fn the_upper_bound_on_sigma_is_above_the_estimate_and_shrinks_with_pairs() {
        let few = sigma_upper(0.05, 11);
        let many = sigma_upper(0.05, 200);
        assert!(few > many && many > 0.05, "{few} {many}");
    }

    /// A design with a much higher cap spends less at each early look, so it rules a null out later:
    /// the plan follows the design's own looks (a plan that assumed the last look's share at
    /// every count, as rules 6 did, said the same count for every cap).
    #[test]
    fn a_null_s_plan_follows_the_looks_of_its_own_cap() {
        let near = resolution(9, 400, 0.03, 0.01).null_pairs;
        let far = resolution(9, 20_000, 0.03, 0.01).null_pairs;
        assert!(far > near, "{near} {far}");
        assert!(looks(9, 20_000).iter().any(|l| l.pairs == far), "{far}");
        // Beyond the cap, what a design capped there would need: more than the cap.
        assert!(resolution(9, 60, 0.08, 0.01).null_pairs > 60);
    }

    #[test]
    fn the_range_of_sigma_holds_the_estimate_and_narrows_with_pairs() {
        let (lo, hi) = sigma_range(0.05, 11);
        assert!(lo < 0.05 && 0.05 < hi, "{lo} {hi}");
        // Wider than the one-sided 80% bound on the upper side (it is a 90% bound).
        assert!(hi > sigma_upper(0.05, 11), "{hi}");
        let (lo2, hi2) = sigma_range(0.05, 200);
        assert!(lo < lo2 && hi2 < hi, "{lo2} {hi2}");
    }

    #[test]
    fn pairs_to_decide_grow_as_the_median_nears_the_bar() {
        let far = pairs_to_decide(0.05, 1.10, 0.02, 0.0125);
        let near = pairs_to_decide(0.05, 1.019, 0.02, 0.0125);
        let below = pairs_to_decide(0.05, 1.0, 0.02, 0.0125);
        assert!(far < below && below < near, "{far} {below} {near}");
        assert_eq!(
            pairs_to_decide(0.05, 1.0199999, 0.02, 0.0125),
            super::super::MAX_PLANNABLE_PAIRS
        );
    }

    #[test]
    fn resolution_grows_with_noise() {
        let quiet = resolution(9, 60, 0.01, 0.02);
        let noisy = resolution(9, 60, 0.08, 0.02);
        assert!(noisy.gain > quiet.gain && noisy.null_pairs > quiet.null_pairs);
        assert!(quiet.gain >= 0.02);
    }
}
