//! One paired comparison from ratios to verdict: the A/A noise, the look the sequential rule
//! stopped at, the gate, in the one order every caller needs.
//!
//! `evo bench`, `evo confirm`, the receipt verifier and the simulated calibration all call this,
//! so the rule they measure is the rule that decides.

use serde::{Deserialize, Serialize};

use super::{
    AaValidity, BenchVerdict, Ci95, Look, Ratios, Stop, TrainingGate, aa_validity, bench_verdict,
    first_stop, noise_sigma, training_gate,
};

/// Every figure of a comparison that the verdict depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Per-pair noise of the A/A pairs (1.4826 × MAD of their log-ratios).
    pub sigma: f64,
    pub aa_validity: AaValidity,
    /// The estimate of all the comparison's pairs: their Hodges–Lehmann estimate (rules 9; the
    /// median of their ratios before), which the look the run stopped at judged.
    pub median: f64,
    /// The interval of the look the run stopped at (its achieved coverage in `coverage`).
    pub ci95: Option<Ci95>,
    /// The first look that decided; `None` when the pairs end before any did.
    pub stop: Option<Stop>,
    pub gate: TrainingGate,
    pub verdict: BenchVerdict,
}

/// The comparison of `ab` (candidate against baseline) given the A/A ratios `aa`, judged at
/// `looks` (fixed from the A/A pairs before the first comparison pair).
pub fn compare(aa: &Ratios, ab: &Ratios, min_effect: f64, looks: &[Look]) -> Comparison {
    let sigma = noise_sigma(aa);
    let aa_validity = aa_validity(aa);
    let stop = first_stop(ab.values(), looks, min_effect, aa_validity.is_valid());
    let gate = training_gate(&aa_validity, stop.as_ref(), min_effect);
    let verdict = bench_verdict(&aa_validity, &gate);
    Comparison {
        sigma,
        aa_validity,
        median: super::signed_rank::estimate(ab.values(), None).0,
        ci95: stop.and_then(|s| s.interval),
        stop,
        gate,
        verdict,
    }
}
