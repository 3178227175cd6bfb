//! One paired comparison from ratios to verdict: the A/A noise, the comparison's figures, the
//! thresholds and the gate, in the one order every caller needs.
//!
//! `evo bench`, `evo confirm`, the receipt verifier and the simulated calibration all call this,
//! so the rule they measure is the rule that decides.

use serde::{Deserialize, Serialize};

use super::{
    AaValidity, BenchVerdict, Ci95, Mde, MdeSettings, PowerSimulation, Ratios, Thresholds,
    TrainingGate, aa_validity, bench_verdict, ci95, median, minimum_detectable_effect_of,
    noise_floor, noise_sigma, powered_by, training_gate,
};

/// Every figure of a comparison that the verdict depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Per-pair noise of the A/A pairs (1.4826 × MAD of their log-ratios).
    pub sigma: f64,
    pub aa_validity: AaValidity,
    pub median: f64,
    pub ci95: Option<Ci95>,
    pub thresholds: Thresholds,
    pub mde: Option<Mde>,
    pub gate: TrainingGate,
    pub verdict: BenchVerdict,
}

/// The comparison of `ab` (candidate against baseline) given the A/A ratios `aa`.
/// `target_effect` is the gain the pair plan sized for: the run resolves only when its pairs find
/// that gain 80% of the time.
pub fn compare(
    aa: &Ratios,
    ab: &Ratios,
    min_effect: f64,
    target_effect: f64,
    mde_seed: u64,
) -> Comparison {
    let sigma = noise_sigma(aa);
    let aa_validity = aa_validity(aa);
    let median = median(ab);
    let ci95 = ci95(ab);
    // One simulation answers both questions: the MDE, and whether the run is powered.
    let settings = MdeSettings::new(ab.len(), min_effect, mde_seed);
    let sim = PowerSimulation::new(aa, &settings);
    let thresholds = Thresholds {
        min_effect,
        noise_floor: noise_floor(sigma, ab.len()),
        powered: powered_by(sim.as_ref(), &settings, sigma, target_effect),
    };
    let mde = sim
        .as_ref()
        .and_then(|sim| minimum_detectable_effect_of(sim, &settings));
    let gate = training_gate(
        &aa_validity,
        median,
        ci95.as_ref(),
        &thresholds,
        mde.map(|m| m.effect),
    );
    let verdict = bench_verdict(&aa_validity, &gate, ci95.as_ref());
    Comparison {
        sigma,
        aa_validity,
        median,
        ci95,
        thresholds,
        mde,
        gate,
        verdict,
    }
}
