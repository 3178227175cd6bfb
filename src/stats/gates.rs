//! The gates (docs/design.md §3.8–§3.11): the only place where figures become verdicts.
//!
//! Keeping every threshold here, as small pure functions over already-computed figures, lets the
//! receipt verifier re-derive a verdict from a receipt and lets the tests walk the whole truth table.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{AaValidity, Ci95};

/// The holdout tolerance: slower than this is a practical slowdown (1%).
const HOLDOUT_REGRESSION_MEDIAN: f64 = 0.99;
/// How much slower than the baseline a holdout may be and still show no regression (1%).
pub const HOLDOUT_TOLERANCE: f64 = 1.0 - HOLDOUT_REGRESSION_MEDIAN;

/// The bar a comparison's median must clear, fixed before any A/B pair is seen: it depends on the
/// A/A noise and the pair count only.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// The practical threshold (0.01 for 1%), in both directions.
    pub min_effect: f64,
    /// The comparison's noise floor, `noise_floor(σ_AA, n)` at its `n` pairs.
    pub noise_floor: f64,
    /// Its `n` pairs find a true gain of the target effect 80% of the time (`plan::powered`, from
    /// the A/A pairs and `n` alone). Read only by [`Thresholds::resolved`]; the bars ignore it.
    pub powered: bool,
}

impl Thresholds {
    /// The effect the median must show, either way: the minimum effect, and beyond the noise floor.
    pub fn effect_bar(&self) -> f64 {
        self.min_effect.max(self.noise_floor)
    }

    /// The run resolves the minimum effect: its noise floor is within it and it is powered for
    /// the target effect (see `plan`).
    pub fn resolved(&self) -> bool {
        self.noise_floor <= self.min_effect && self.powered
    }
}

/// A speedup is shown: CI95 lower bound above 1 and median at least `1 + effect_bar`.
pub fn speedup_shown(median: f64, ci: Option<&Ci95>, t: &Thresholds) -> bool {
    ci.is_some_and(|c| c.lower > 1.0) && median >= 1.0 + t.effect_bar()
}

/// The mirror image of `speedup_shown`: CI95 upper bound below 1 and median at most
/// `1 / (1 + effect_bar)`. Swapping the arms turns one into the other exactly.
pub fn slowdown_shown(median: f64, ci: Option<&Ci95>, t: &Thresholds) -> bool {
    ci.is_some_and(|c| c.upper < 1.0) && median.recip() >= 1.0 + t.effect_bar()
}

/// Whether the training scenario passes, with each condition kept so a report can say which failed.
///
/// The rule (issue 15): accepted iff
/// 1. the A/A check is valid (its CI95 contains 1);
/// 2. the CI95 exists and its lower bound is above 1;
/// 3. the median is at least `1 + min_effect`;
/// 4. the median is at least `1 + noise floor` of the comparison (`noise_floor(σ_AA, n)`): an
///    estimate inside the noise floor is never accepted;
/// 5. the run resolves the minimum effect (its noise floor is within it, and its pairs find a
///    true gain of the target effect 80% of the time), or, when it does not, the observed effect
///    is at least the run's minimum detectable effect: an under-resolved run accepts only effects
///    it would find 80% of the time, never a lucky draw.
///
/// Conditions 1–4 only narrow the interval test of 2, whose one-sided error is at most 2.5% for a
/// pair count fixed before the comparison starts; condition 5 costs no power in a resolved run.
/// `regression` is the same rule mirrored (CI95 upper below 1, median at most
/// `1 / (1 + max(min_effect, floor))`, and resolved or a slowdown of at least the MDE).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrainingGate {
    pub passed: bool,
    pub aa_valid: bool,
    pub ci_lower_above_one: bool,
    pub median_meets_min_effect: bool,
    /// The median is at least `1 + noise floor` of the comparison.
    #[serde(default)]
    pub beyond_noise_floor: bool,
    /// The comparison's noise floor is within the minimum effect and its pairs are powered for
    /// the target effect.
    #[serde(default)]
    pub resolved: bool,
    /// Resolved, or the observed effect is at least the minimum detectable effect.
    #[serde(default)]
    pub effect_detectable: bool,
    /// The mirrored rule: a slowdown as well shown as an acceptance would need to be.
    #[serde(default)]
    pub regression: bool,
}

/// The gate of a comparison with median `median`, interval `ci`, thresholds `t` and minimum
/// detectable effect `mde` (a fraction; `None` when none could be computed).
pub fn training_gate(
    aa: &AaValidity,
    median: f64,
    ci: Option<&Ci95>,
    t: &Thresholds,
    mde: Option<f64>,
) -> TrainingGate {
    let aa_valid = aa.is_valid();
    let ci_lower_above_one = ci.is_some_and(|c| c.lower > 1.0);
    let median_meets_min_effect = median >= 1.0 + t.min_effect;
    let beyond_noise_floor = median >= 1.0 + t.noise_floor;
    let resolved = t.resolved();
    let detectable = |effect: f64| resolved || mde.is_some_and(|m| effect >= m);
    let effect_detectable = detectable(median - 1.0);
    TrainingGate {
        passed: aa_valid
            && ci_lower_above_one
            && median_meets_min_effect
            && beyond_noise_floor
            && effect_detectable,
        aa_valid,
        ci_lower_above_one,
        median_meets_min_effect,
        beyond_noise_floor,
        resolved,
        effect_detectable,
        regression: slowdown_shown(median, ci, t) && detectable(median.recip() - 1.0),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HoldoutVerdict {
    Rejected,
    NoRegression,
    Inconclusive,
}

impl HoldoutVerdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            HoldoutVerdict::Rejected => "rejected",
            HoldoutVerdict::NoRegression => "no regression",
            HoldoutVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// A holdout shows no regression only when its interval shows it: CI95 lower bound at least 0.99
/// (not slower by the 1% tolerance, whatever the noise). It is rejected when the slowdown is
/// both practical (median < 0.99) and shown (CI upper < 1). Anything else, a noisy run or one
/// without an interval, is inconclusive: on a machine too noisy to tell, a holdout proves
/// nothing either way, and the tier stays `measured`.
pub fn holdout_gate(median: f64, ci: Option<&Ci95>) -> HoldoutVerdict {
    if ci.is_some_and(|c| c.lower >= HOLDOUT_REGRESSION_MEDIAN) {
        HoldoutVerdict::NoRegression
    } else if median < HOLDOUT_REGRESSION_MEDIAN && ci.is_some_and(|c| c.upper < 1.0) {
        HoldoutVerdict::Rejected
    } else {
        HoldoutVerdict::Inconclusive
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Rejected,
    Measured,
    Tested,
}

impl Tier {
    pub fn as_str(&self) -> &'static str {
        match self {
            Tier::Rejected => "rejected",
            Tier::Measured => "measured",
            Tier::Tested => "tested",
        }
    }
}

/// `tested` needs at least one holdout and all of them without regression; an inconclusive
/// holdout, or none, caps the tier at `measured`.
pub fn tier(checks_green: bool, training_passed: bool, holdouts: &[HoldoutVerdict]) -> Tier {
    if !checks_green || !training_passed || holdouts.contains(&HoldoutVerdict::Rejected) {
        Tier::Rejected
    } else if !holdouts.is_empty() && holdouts.iter().all(|h| *h == HoldoutVerdict::NoRegression) {
        Tier::Tested
    } else {
        Tier::Measured
    }
}

/// The one-line answer of a single paired comparison (`evo bench`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BenchVerdict {
    Accepted,
    NotSignificant,
    Regression,
    Inconclusive,
}

impl BenchVerdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            BenchVerdict::Accepted => "accepted",
            BenchVerdict::NotSignificant => "not significant",
            BenchVerdict::Regression => "regression",
            BenchVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// Inconclusive without a valid A/A check or an interval; otherwise accepted when the training
/// gate passes and a regression when its mirror does. Anything else is not significant in a run
/// that resolves the minimum effect, and inconclusive in one that does not: there, a null answer
/// says nothing about an effect of the minimum size.
pub fn bench_verdict(aa: &AaValidity, training: &TrainingGate, ci: Option<&Ci95>) -> BenchVerdict {
    match ci {
        _ if !aa.is_valid() => BenchVerdict::Inconclusive,
        None => BenchVerdict::Inconclusive,
        Some(_) if training.passed => BenchVerdict::Accepted,
        Some(_) if training.regression => BenchVerdict::Regression,
        Some(_) if !training.resolved => BenchVerdict::Inconclusive,
        Some(_) => BenchVerdict::NotSignificant,
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(HoldoutVerdict, Tier, BenchVerdict);

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(lower: f64, upper: f64) -> Ci95 {
        Ci95 {
            lower,
            upper,
            coverage: 0.9609,
            k: 2,
        }
    }

    const BIASED: AaValidity = AaValidity::Biased {
        ci95: Ci95 {
            lower: 1.01,
            upper: 1.05,
            coverage: 0.9609,
            k: 2,
        },
    };

    /// Thresholds of a quiet run: floor 0.5%, below the 1% minimum effect.
    const QUIET: Thresholds = Thresholds {
        min_effect: 0.01,
        noise_floor: 0.005,
        powered: true,
    };
    /// Thresholds of a noisy, under-resolved run: floor 6%.
    const NOISY: Thresholds = Thresholds {
        min_effect: 0.01,
        noise_floor: 0.06,
        powered: false,
    };

    #[test]
    fn training_gate_needs_every_condition() {
        let v = AaValidity::Valid;
        let good = ci(1.005, 1.08);
        assert!(training_gate(&v, 1.02, Some(&good), &QUIET, None).passed);
        assert!(
            training_gate(&v, 1.01, Some(&good), &QUIET, None).passed,
            "median = 1 + min_effect"
        );

        let low_median = training_gate(&v, 1.009, Some(&good), &QUIET, None);
        assert!(!low_median.passed && !low_median.median_meets_min_effect);
        assert!(low_median.aa_valid && low_median.ci_lower_above_one);

        let ci_touches_one = training_gate(&v, 1.05, Some(&ci(1.0, 1.08)), &QUIET, None);
        assert!(!ci_touches_one.passed && !ci_touches_one.ci_lower_above_one);
        assert!(!training_gate(&v, 1.05, None, &QUIET, None).passed);

        let biased = training_gate(&BIASED, 1.05, Some(&good), &QUIET, None);
        assert!(!biased.passed && !biased.aa_valid);
        let few = AaValidity::TooFewPairs { n: 3 };
        assert!(!training_gate(&few, 1.05, Some(&good), &QUIET, None).passed);
    }

    /// Issue 15: median 1.048× under a ±5.94% floor and a 20% MDE was accepted.
    #[test]
    fn an_estimate_inside_the_noise_floor_is_never_accepted() {
        let v = AaValidity::Valid;
        let lucky = ci(1.001, 1.09);
        let g = training_gate(&v, 1.048, Some(&lucky), &NOISY, Some(0.20));
        assert!(!g.passed && !g.beyond_noise_floor && !g.resolved, "{g:?}");
        assert_eq!(
            bench_verdict(&v, &g, Some(&lucky)),
            BenchVerdict::Inconclusive
        );
        // Beyond the floor but below the MDE of an under-resolved run: still a lucky draw.
        let g = training_gate(&v, 1.10, Some(&lucky), &NOISY, Some(0.20));
        assert!(
            g.beyond_noise_floor && !g.effect_detectable && !g.passed,
            "{g:?}"
        );
        // At least the MDE: a run this noisy finds such an effect 80% of the time.
        let g = training_gate(&v, 1.25, Some(&ci(1.1, 1.4)), &NOISY, Some(0.20));
        assert!(g.passed, "{g:?}");
        // Without an MDE an under-resolved run cannot accept at all.
        assert!(!training_gate(&v, 1.25, Some(&ci(1.1, 1.4)), &NOISY, None).passed);
    }

    #[test]
    fn regression_mirrors_acceptance() {
        let v = AaValidity::Valid;
        for t in [QUIET, NOISY] {
            for (median, lower, upper, mde) in [
                (1.02, 1.005, 1.08, None),
                (1.009, 1.002, 1.02, None),
                (1.048, 1.001, 1.09, Some(0.2)),
                (1.25, 1.1, 1.4, Some(0.2)),
                (1.25, 1.1, 1.4, Some(0.3)),
                (1.05, 0.99, 1.1, Some(0.01)),
            ] {
                let fast = training_gate(&v, median, Some(&ci(lower, upper)), &t, mde);
                let swapped = ci(1.0 / upper, 1.0 / lower);
                let slow = training_gate(&v, 1.0 / median, Some(&swapped), &t, mde);
                assert_eq!(fast.passed, slow.regression, "{median} {t:?}");
                assert!(!fast.regression && !slow.passed);
            }
        }
        // Issue 15: `sleep 0.05` against itself came out a regression; a slowdown smaller than
        // the minimum effect is not one, however tight its interval.
        let tight_and_tiny = ci(0.993, 0.999);
        let g = training_gate(&v, 0.996, Some(&tight_and_tiny), &QUIET, None);
        assert!(!g.regression);
        assert_eq!(
            bench_verdict(&v, &g, Some(&tight_and_tiny)),
            BenchVerdict::NotSignificant
        );
    }

    #[test]
    fn holdout_truth_table() {
        use HoldoutVerdict::*;
        let cases = [
            (0.98, Some(ci(0.95, 0.995)), Rejected),
            (0.98, Some(ci(0.95, 1.0)), Inconclusive),
            (0.98, Some(ci(0.95, 1.02)), Inconclusive),
            (0.98, None, Inconclusive),
            // A median at the tolerance is no proof: the interval must clear it.
            (0.99, Some(ci(0.95, 0.995)), Inconclusive),
            (0.99, None, Inconclusive),
            (1.0, Some(ci(0.97, 1.03)), Inconclusive),
            (1.0, Some(ci(0.99, 1.01)), NoRegression),
            (1.05, Some(ci(1.01, 1.1)), NoRegression),
            (1.2, None, Inconclusive),
            (f64::NAN, None, Inconclusive),
        ];
        for (median, c, want) in cases {
            assert_eq!(holdout_gate(median, c.as_ref()), want, "{median} {c:?}");
        }
    }

    #[test]
    fn tier_truth_table() {
        use HoldoutVerdict::*;
        let cases: [(bool, bool, &[HoldoutVerdict], Tier); 9] = [
            (true, true, &[], Tier::Measured),
            (true, true, &[NoRegression], Tier::Tested),
            (true, true, &[NoRegression, NoRegression], Tier::Tested),
            (true, true, &[NoRegression, Inconclusive], Tier::Measured),
            (true, true, &[Inconclusive], Tier::Measured),
            (true, true, &[NoRegression, Rejected], Tier::Rejected),
            (true, true, &[Inconclusive, Rejected], Tier::Rejected),
            (false, true, &[NoRegression], Tier::Rejected),
            (true, false, &[NoRegression], Tier::Rejected),
        ];
        for (green, trained, holdouts, want) in cases {
            assert_eq!(
                tier(green, trained, holdouts),
                want,
                "{green} {trained} {holdouts:?}"
            );
        }
    }

    #[test]
    fn bench_verdict_truth_table() {
        let v = AaValidity::Valid;
        let c = |l, u| Some(ci(l, u));
        let gate = |median, interval: Option<Ci95>, t: &Thresholds| {
            training_gate(&v, median, interval.as_ref(), t, Some(0.2))
        };
        use BenchVerdict::*;
        let cases = [
            (1.05, c(1.02, 1.08), QUIET, Accepted),
            (1.0, c(0.98, 1.02), QUIET, NotSignificant),
            (0.95, c(0.9, 0.99), QUIET, Regression),
            (0.995, c(0.99, 0.999), QUIET, NotSignificant),
            (1.0, None, QUIET, Inconclusive),
            (1.0, c(0.98, 1.02), NOISY, Inconclusive),
            (0.95, c(0.9, 0.99), NOISY, Inconclusive),
            (0.7, c(0.6, 0.8), NOISY, Regression),
            (1.3, c(1.2, 1.4), NOISY, Accepted),
        ];
        for (median, interval, t, want) in cases {
            let g = gate(median, interval, &t);
            assert_eq!(
                bench_verdict(&v, &g, interval.as_ref()),
                want,
                "{median} {t:?}"
            );
        }
        let fail = gate(0.95, c(0.9, 0.99), &QUIET);
        assert_eq!(
            bench_verdict(&BIASED, &fail, c(0.9, 0.99).as_ref()),
            Inconclusive
        );
        let few = AaValidity::TooFewPairs { n: 2 };
        let pass = gate(1.05, c(1.02, 1.08), &QUIET);
        assert_eq!(
            bench_verdict(&few, &pass, c(1.02, 1.08).as_ref()),
            Inconclusive
        );
    }

    #[test]
    fn verdicts_read_as_words_and_serialize_as_snake_case() {
        assert_eq!(BenchVerdict::NotSignificant.to_string(), "not significant");
        assert_eq!(HoldoutVerdict::NoRegression.as_str(), "no regression");
        assert_eq!(Tier::Tested.as_str(), "tested");
        let json = serde_json::to_string(&HoldoutVerdict::NoRegression).unwrap();
        assert_eq!(json, "\"no_regression\"");
        let json = serde_json::to_string(&BenchVerdict::NotSignificant).unwrap();
        assert_eq!(json, "\"not_significant\"");
    }
}
