//! From gates to tier and verdict (DESIGN §3), as pure functions over a finished result.

use super::result::{Gate, GateStatus, ScenarioResult, Verdict};
use crate::stats::{self, HoldoutVerdict, Tier};

/// Names of the gates that must be green before anything is measured, in pipeline order.
pub const CHECK_GATES: [&str; 7] = [
    "patch safety",
    "apply",
    "build",
    "tests",
    "differential",
    "sanitizers",
    "timed output",
];

pub fn gate(name: &str, status: GateStatus, detail: impl Into<String>) -> Gate {
    Gate {
        name: name.to_string(),
        status,
        detail: detail.into(),
    }
}

/// The tier, verdict and reasons implied by the gates and the scenario figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub tier: Tier,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
}

fn failed(gates: &[Gate]) -> impl Iterator<Item = &Gate> {
    gates.iter().filter(|g| g.status == GateStatus::Failed)
}

/// Decides from the gates (any failure rejects) and the measured scenarios.
pub fn decide(gates: &[Gate], scenarios: &[ScenarioResult]) -> Decision {
    let mut reasons: Vec<String> = failed(gates)
        .map(|g| format!("{} failed: {}", g.name, g.detail))
        .collect();
    let checks_green = CHECK_GATES
        .iter()
        .all(|name| !failed(gates).any(|g| g.name == *name));
    let training: Vec<_> = scenarios
        .iter()
        .filter_map(|s| s.training.as_ref().map(|f| (s, f)))
        .collect();
    let measured = !training.is_empty();
    let training_passed = measured && training.iter().all(|(_, f)| f.training_gate.passed);
    let aa_biased = training.iter().any(|(_, f)| !f.training_gate.aa_valid);
    let holdouts: Vec<HoldoutVerdict> = scenarios
        .iter()
        .filter_map(|s| s.holdout.as_ref().map(|h| h.verdict))
        .collect();
    for (s, f) in &training {
        if !f.training_gate.passed {
            reasons.push(training_reason(&s.name, f));
        }
    }
    for s in scenarios {
        if let Some(h) = &s.holdout {
            if h.verdict != HoldoutVerdict::NoRegression {
                reasons.push(format!(
                    "holdout `{}` is {} (median {:.4}×)",
                    s.name,
                    h.verdict.as_str(),
                    h.median
                ));
            }
        }
    }
    let tier = stats::tier(checks_green, training_passed, &holdouts);
    let verdict = if tier != Tier::Rejected {
        Verdict::Accepted
    } else if checks_green && aa_biased && !holdouts.contains(&HoldoutVerdict::Rejected) {
        // The setup, not the candidate, failed: nothing can be concluded from this run.
        Verdict::Inconclusive
    } else {
        Verdict::Rejected
    };
    if tier == Tier::Measured && holdouts.is_empty() {
        reasons.push(
            "no holdout was declared, so generalization beyond the training workload is untested"
                .to_string(),
        );
    }
    Decision {
        tier,
        verdict,
        reasons,
    }
}

fn training_reason(name: &str, f: &crate::bench::Figures) -> String {
    let g = &f.training_gate;
    let why = if !g.aa_valid {
        "the A/A check found the setup biased".to_string()
    } else if !g.ci_lower_above_one {
        match f.ci95 {
            Some(ci) => format!("the CI95 lower bound {:.4}× is not above 1", ci.lower),
            None => "no 95% interval".to_string(),
        }
    } else {
        format!("the median {:.4}× is below the minimum effect", f.median)
    };
    format!("training scenario `{name}` did not pass: {why}")
}
