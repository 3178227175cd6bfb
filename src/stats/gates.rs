//! The gates of DESIGN §3: the only place where figures become verdicts.
//!
//! Keeping every threshold here, as small pure functions over already-computed figures, lets the
//! receipt verifier re-derive a verdict from a receipt and lets the tests walk the whole truth table.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{AaValidity, Ci95};

/// Below this median a holdout counts as slower (a 1% practical tolerance).
const HOLDOUT_REGRESSION_MEDIAN: f64 = 0.99;

/// Whether the training scenario passes, with each condition kept so a report can say which failed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrainingGate {
    pub passed: bool,
    pub aa_valid: bool,
    pub ci_lower_above_one: bool,
    pub median_meets_min_effect: bool,
}

/// Passes iff the A/A check is valid, the CI95 exists with lower bound > 1, and the median is at
/// least `1 + min_effect`.
pub fn training_gate(
    aa: &AaValidity,
    median: f64,
    ci: Option<&Ci95>,
    min_effect: f64,
) -> TrainingGate {
    let aa_valid = aa.is_valid();
    let ci_lower_above_one = ci.is_some_and(|c| c.lower > 1.0);
    let median_meets_min_effect = median >= 1.0 + min_effect;
    TrainingGate {
        passed: aa_valid && ci_lower_above_one && median_meets_min_effect,
        aa_valid,
        ci_lower_above_one,
        median_meets_min_effect,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// Rejected only when the slowdown is both practical (median < 0.99) and shown (CI upper < 1);
/// a median ≥ 0.99 is no regression; anything else, including a slow median without an interval,
/// is inconclusive.
pub fn holdout_gate(median: f64, ci: Option<&Ci95>) -> HoldoutVerdict {
    if median >= HOLDOUT_REGRESSION_MEDIAN {
        HoldoutVerdict::NoRegression
    } else if median < HOLDOUT_REGRESSION_MEDIAN && ci.is_some_and(|c| c.upper < 1.0) {
        HoldoutVerdict::Rejected
    } else {
        HoldoutVerdict::Inconclusive
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
/// gate passes, a regression when the whole interval is below 1, and not significant in between.
pub fn bench_verdict(aa: &AaValidity, training: &TrainingGate, ci: Option<&Ci95>) -> BenchVerdict {
    match ci {
        _ if !aa.is_valid() => BenchVerdict::Inconclusive,
        None => BenchVerdict::Inconclusive,
        Some(_) if training.passed => BenchVerdict::Accepted,
        Some(c) if c.upper < 1.0 => BenchVerdict::Regression,
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

    #[test]
    fn training_gate_needs_all_three_conditions() {
        let v = AaValidity::Valid;
        let good = ci(1.005, 1.08);
        assert!(training_gate(&v, 1.02, Some(&good), 0.01).passed);
        assert!(
            training_gate(&v, 1.01, Some(&good), 0.01).passed,
            "median = 1 + min_effect"
        );

        let low_median = training_gate(&v, 1.009, Some(&good), 0.01);
        assert!(!low_median.passed && !low_median.median_meets_min_effect);
        assert!(low_median.aa_valid && low_median.ci_lower_above_one);

        let ci_touches_one = training_gate(&v, 1.05, Some(&ci(1.0, 1.08)), 0.01);
        assert!(!ci_touches_one.passed && !ci_touches_one.ci_lower_above_one);
        assert!(!training_gate(&v, 1.05, None, 0.01).passed);

        let biased = training_gate(&BIASED, 1.05, Some(&good), 0.01);
        assert!(!biased.passed && !biased.aa_valid);
        let few = AaValidity::TooFewPairs { n: 3 };
        assert!(!training_gate(&few, 1.05, Some(&good), 0.01).passed);
    }

    #[test]
    fn holdout_truth_table() {
        use HoldoutVerdict::*;
        let cases = [
            (0.98, Some(ci(0.95, 0.995)), Rejected),
            (0.98, Some(ci(0.95, 1.0)), Inconclusive),
            (0.98, Some(ci(0.95, 1.02)), Inconclusive),
            (0.98, None, Inconclusive),
            (0.99, Some(ci(0.95, 0.995)), NoRegression),
            (0.99, None, NoRegression),
            (1.05, Some(ci(1.01, 1.1)), NoRegression),
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
        let pass = training_gate(&v, 1.05, Some(&ci(1.02, 1.08)), 0.01);
        let fail = training_gate(&v, 1.0, Some(&ci(0.98, 1.02)), 0.01);
        let c = |l, u| Some(ci(l, u));
        use BenchVerdict::*;
        assert_eq!(bench_verdict(&v, &pass, c(1.02, 1.08).as_ref()), Accepted);
        assert_eq!(
            bench_verdict(&v, &fail, c(0.98, 1.02).as_ref()),
            NotSignificant
        );
        assert_eq!(bench_verdict(&v, &fail, c(0.9, 0.99).as_ref()), Regression);
        assert_eq!(bench_verdict(&v, &fail, None), Inconclusive);
        assert_eq!(
            bench_verdict(&BIASED, &fail, c(0.9, 0.99).as_ref()),
            Inconclusive
        );
        let few = AaValidity::TooFewPairs { n: 2 };
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
