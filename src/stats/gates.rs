//! The gates (docs/design.md §3.8–§3.11): the only place where figures become verdicts.
//!
//! Keeping every threshold here, as small pure functions over already-computed figures, lets the
//! receipt verifier re-derive a verdict from a receipt and lets the tests walk the whole truth table.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{AaValidity, Ci95, Decision, Stop};

/// The holdout tolerance: slower than this is a practical slowdown (1%).
const HOLDOUT_REGRESSION_MEDIAN: f64 = 0.99;
/// How much slower than the baseline a holdout may be and still show no regression (1%).
pub const HOLDOUT_TOLERANCE: f64 = 1.0 - HOLDOUT_REGRESSION_MEDIAN;

/// Whether the training scenario passes, with each condition kept so a report can say which failed.
///
/// Rules 4: the comparison stops at the first look of the sequential rule that decides
/// (`sequential::first_stop`), and the gate reads that look: accepted iff the A/A check is valid,
/// the look's interval has its lower bound above 1, and the median is at least `1 + min_effect`.
/// The interval's one-sided error over all looks together is at most 2.5%, so a candidate that
/// is not faster is accepted at most that often however early the run stops. `no_real_gain` is
/// the equivalence verdict (the upper bound below `1 + min_effect`), `regression` its slower part
/// (upper bound below 1 and the median slower by the minimum effect), `resolved` that the rule
/// decided before the cap left it undecided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrainingGate {
    pub passed: bool,
    pub aa_valid: bool,
    pub ci_lower_above_one: bool,
    pub median_meets_min_effect: bool,
    /// The sequential rule decided: accepted, slower or no real gain.
    pub resolved: bool,
    /// The interval's upper bound is below `1 + min_effect`: any gain is smaller than the minimum
    /// effect.
    pub no_real_gain: bool,
    /// Shown slower: upper bound below 1 and the median slower by the minimum effect.
    pub regression: bool,
}

/// The gate of the look a comparison stopped at (`None`: its pairs reached no look's decision,
/// which only a run cut short or a tampered record has).
pub fn training_gate(aa: &AaValidity, stop: Option<&Stop>, min_effect: f64) -> TrainingGate {
    let aa_valid = aa.is_valid();
    let decision = stop.map(|s| s.decision);
    let interval = stop.and_then(|s| s.interval);
    let median = stop.map_or(f64::NAN, |s| s.median);
    TrainingGate {
        passed: aa_valid && decision == Some(Decision::Accepted),
        aa_valid,
        ci_lower_above_one: interval.is_some_and(|c| c.lower > 1.0),
        median_meets_min_effect: median >= 1.0 + min_effect,
        resolved: matches!(
            decision,
            Some(Decision::Accepted | Decision::Slower | Decision::NoRealGain)
        ),
        no_real_gain: matches!(decision, Some(Decision::Slower | Decision::NoRealGain)),
        regression: decision == Some(Decision::Slower),
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

/// How far a confirmation got. `None` is an inconclusive verdict's: no tier was reached, and
/// nothing was rejected either (before rules 7 it was recorded as `rejected`). `Counted` (rules
/// 8) is an acceptance on exact evidence where the wall time could not decide: below `measured`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    None,
    Rejected,
    Counted,
    Measured,
    Tested,
}

impl Tier {
    pub fn as_str(&self) -> &'static str {
        match self {
            Tier::None => "none",
            Tier::Rejected => "rejected",
            Tier::Counted => "counted",
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
    /// The interval rules out a gain of the minimum effect (an equivalence verdict).
    NoRealGain,
    Regression,
    Inconclusive,
}

impl BenchVerdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            BenchVerdict::Accepted => "accepted",
            BenchVerdict::NoRealGain => "no real gain",
            BenchVerdict::Regression => "regression",
            BenchVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// Inconclusive without a valid A/A check; otherwise what the sequential rule decided: accepted,
/// a regression (shown slower), no real gain (the gain is ruled out at the minimum effect), or
/// inconclusive when the cap came first.
pub fn bench_verdict(aa: &AaValidity, training: &TrainingGate) -> BenchVerdict {
    match training {
        _ if !aa.is_valid() => BenchVerdict::Inconclusive,
        g if g.passed => BenchVerdict::Accepted,
        g if g.regression => BenchVerdict::Regression,
        g if g.no_real_gain => BenchVerdict::NoRealGain,
        _ => BenchVerdict::Inconclusive,
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

    fn stop(decision: Decision, median: f64, interval: Option<Ci95>) -> Stop {
        Stop {
            look: 0,
            pairs: 9,
            decision,
            median,
            interval,
        }
    }

    #[test]
    fn the_gate_reads_the_decision_of_the_look_it_stopped_at() {
        let v = AaValidity::Valid;
        let accepted = stop(Decision::Accepted, 1.05, Some(ci(1.01, 1.09)));
        let g = training_gate(&v, Some(&accepted), 0.02);
        assert!(
            g.passed && g.resolved && !g.no_real_gain && !g.regression,
            "{g:?}"
        );
        assert!(g.ci_lower_above_one && g.median_meets_min_effect);
        let biased = training_gate(&BIASED, Some(&accepted), 0.02);
        assert!(!biased.passed && !biased.aa_valid);
        let null = stop(Decision::NoRealGain, 1.0, Some(ci(0.99, 1.01)));
        let g = training_gate(&v, Some(&null), 0.02);
        assert!(
            !g.passed && g.resolved && g.no_real_gain && !g.regression,
            "{g:?}"
        );
        let slow = stop(Decision::Slower, 0.9, Some(ci(0.85, 0.95)));
        let g = training_gate(&v, Some(&slow), 0.02);
        assert!(
            !g.passed && g.resolved && g.no_real_gain && g.regression,
            "{g:?}"
        );
        let open = stop(Decision::Undecided, 1.03, Some(ci(0.97, 1.09)));
        let g = training_gate(&v, Some(&open), 0.02);
        assert!(
            !g.passed && !g.resolved && !g.no_real_gain && !g.regression,
            "{g:?}"
        );
        let none = training_gate(&v, None, 0.02);
        assert!(!none.passed && !none.resolved && !none.median_meets_min_effect);
    }

    #[test]
    fn bench_verdict_follows_the_decision_and_needs_a_valid_aa_check() {
        use BenchVerdict::*;
        let v = AaValidity::Valid;
        let cases = [
            (Decision::Accepted, Accepted),
            (Decision::Slower, Regression),
            (Decision::NoRealGain, NoRealGain),
            (Decision::Undecided, Inconclusive),
        ];
        for (decision, want) in cases {
            let g = training_gate(&v, Some(&stop(decision, 1.0, None)), 0.02);
            assert_eq!(bench_verdict(&v, &g), want, "{decision:?}");
            assert_eq!(bench_verdict(&BIASED, &g), Inconclusive, "{decision:?}");
        }
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
    fn verdicts_read_as_words_and_serialize_as_snake_case() {
        assert_eq!(BenchVerdict::NoRealGain.to_string(), "no real gain");
        assert_eq!(HoldoutVerdict::NoRegression.as_str(), "no regression");
        assert_eq!(Tier::Tested.as_str(), "tested");
        let json = serde_json::to_string(&HoldoutVerdict::NoRegression).unwrap();
        assert_eq!(json, "\"no_regression\"");
        let json = serde_json::to_string(&BenchVerdict::NoRealGain).unwrap();
        assert_eq!(json, "\"no_real_gain\"");
    }
}
