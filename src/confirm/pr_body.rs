//! A plain pull-request description of a confirmation: what was shown and what was not.
//!
//! The full user-editable template comes with the receipt work; this renderer already states the
//! headline, the evidence table, the gates and the limitations honestly.

use std::fmt::Write;

use super::result::{ConfirmResult, GateStatus, ScenarioResult};

fn ci_text(s: &ScenarioResult) -> String {
    let ci = s
        .training
        .as_ref()
        .map_or_else(|| s.holdout.as_ref().and_then(|h| h.ci95), |f| f.ci95);
    match ci {
        Some(ci) => format!("{:.3}–{:.3}×", ci.lower, ci.upper),
        None => "n/a (<6 pairs)".to_string(),
    }
}

fn row(s: &ScenarioResult) -> String {
    let (median, cov, verdict) = match (&s.training, &s.holdout) {
        (Some(f), _) => (
            f.median,
            f.cov,
            if f.training_gate.passed {
                "passes"
            } else {
                "does not pass"
            }
            .to_string(),
        ),
        (None, Some(h)) => (h.median, h.cov, h.verdict.as_str().to_string()),
        (None, None) => {
            return format!("| {} | {} | – | – | – | – | not measured |", s.name, s.role);
        }
    };
    format!(
        "| {} | {} | {} | {:.3}× | {} | {:.1}% / {:.1}% | {} |",
        s.name,
        s.role,
        s.pairs.len(),
        median,
        ci_text(s),
        100.0 * cov.baseline,
        100.0 * cov.candidate,
        verdict
    )
}

/// Renders the plain PR body.
pub fn render(r: &ConfirmResult) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## Summary\n");
    let _ = writeln!(
        o,
        "Candidate `{}` against baseline `{}` ({}), workload `{}`: **{:?}**, tier **{}**.\n",
        r.patch.source,
        r.baseline_commitish,
        &r.baseline_sha,
        r.workload_name,
        r.verdict,
        r.tier.as_str()
    );
    for f in &r.patch.files {
        let _ = writeln!(
            o,
            "- `{}` ({}, +{} −{})",
            f.path, f.status, f.added, f.removed
        );
    }
    if let Some(f) = r.scenarios.first().and_then(|s| s.training.as_ref()) {
        let ci = f.ci95.map_or_else(String::new, |c| {
            format!("; CI95 {:.3}–{:.3}×", c.lower, c.upper)
        });
        let _ = writeln!(
            o,
            "\nruns {:.3}× faster (median of {} paired runs{ci})",
            f.median,
            r.scenarios[0].pairs.len()
        );
    }
    let _ = writeln!(o, "\n## Evidence\n");
    let _ = writeln!(
        o,
        "| workload | role | pairs | median | CI95 | CoV base/cand | verdict |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|");
    for s in &r.scenarios {
        let _ = writeln!(o, "{}", row(s));
    }
    let _ = writeln!(o, "\n## Gates\n");
    for g in &r.gates {
        let mark = match g.status {
            GateStatus::Passed => "passed",
            GateStatus::Failed => "FAILED",
            GateStatus::Skipped => "skipped",
        };
        let first_line = g.detail.lines().next().unwrap_or_default();
        let _ = writeln!(o, "- {}: {mark} — {first_line}", g.name);
    }
    if !r.reasons.is_empty() {
        let _ = writeln!(o, "\n## Limitations and reasons\n");
        for reason in &r.reasons {
            let _ = writeln!(o, "- {}", reason.lines().next().unwrap_or_default());
        }
    }
    if let Some(f) = r.scenarios.first().and_then(|s| s.training.as_ref()) {
        let _ = writeln!(
            o,
            "\nNoise floor ±{:.2}% (A/A: baseline against itself, {} pairs; minimum detectable effect {} at {} pairs).",
            f.noise_floor_pct,
            f.aa.pairs,
            f.mde_pct
                .map_or_else(|| "n/a".to_string(), |m| format!("{m:.2}%")),
            r.scenarios[0].pairs.len()
        );
    }
    match &r.holdout_portfolio_digest {
        Some(d) => {
            let _ = writeln!(o, "\nSealed holdout portfolio: sha256 `{d}`.");
        }
        None => {
            let _ = writeln!(
                o,
                "\nNo holdout was declared, so generalization beyond the training workload is untested."
            );
        }
    }
    let _ = writeln!(
        o,
        "\nReproduce: `evo confirm {} --campaign {}` (fresh seed {} was used here).",
        r.patch.source, r.campaign_file, r.seed
    );
    o
}
