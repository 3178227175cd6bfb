//! What a reviewer reads first in the PR text (docs/design.md §5.11): per measured scenario what
//! each arm took and the change, a note where a speedup was bought with CPU time, where the plot
//! of every pair is, the tier in one sentence, and why a patch that was not accepted was not.
//!
//! The figures are `scenario_summary`'s, the same the terminal prints, so the two never disagree.
//! They are for reading: the verdict rests on the per-pair ratios (the statistics the PR text
//! folds below them).

use serde::Serialize;

use super::markdown::{Markdown, code, inline, prose};
use super::pr_context::{ReceiptRef, first_line};
use super::scenario_summary::{ArmComparison, Decided, cpu_note, mib, time};
use crate::evidence::result::{ConfirmResult, Verdict};
use crate::stats::Tier;

/// The file `evo confirm` writes beside `pr_body.md` (`pairs_svg`).
pub const PAIRS_PLOT: &str = "pairs.svg";

/// One measured scenario, every cell evo's own wording.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioRow {
    pub scenario: Markdown,
    pub role: Markdown,
    /// Wall time, median ± half the interquartile range.
    pub baseline: Markdown,
    pub candidate: Markdown,
    /// The change in wall time from the median per-pair ratio, e.g. `-6.8%`.
    pub change: Markdown,
    /// Median user CPU time, baseline → candidate.
    pub user_cpu: Markdown,
    /// Median peak resident memory, baseline → candidate.
    pub peak_memory: Markdown,
    pub verdict: Markdown,
}

/// The scenario table of the summary and what goes with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overview {
    pub rows: Vec<ScenarioRow>,
    /// One line per speedup bought with CPU time and per instruction count.
    pub notes: Vec<Markdown>,
    /// Where the plot of every pair is; `None` when nothing was measured.
    pub plot: Option<Markdown>,
}

/// The section after the workload: why the patch is faster, or why it was not accepted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Why {
    pub heading: String,
    /// The verdict's reasons, first line each; empty for an accepted patch (its caveats are
    /// among the limitations).
    pub reasons: Vec<Markdown>,
}

fn arm_pair(base: String, cand: String) -> Markdown {
    Markdown::assembled(format!("{} → {}", inline(&base), inline(&cand)))
}

pub(super) fn overview(r: &ConfirmResult, receipt: &ReceiptRef) -> Overview {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for s in &r.evidence.scenarios {
        let Some(decided) = Decided::of(s) else {
            continue;
        };
        let arms = ArmComparison::of(&s.pairs);
        let cell = |text: String| Markdown::assembled(inline(&text));
        let missing = || cell("–".into());
        rows.push(ScenarioRow {
            scenario: Markdown::assembled(code(&s.name)),
            role: cell(s.role.as_str().to_string()),
            baseline: arms.map_or_else(missing, |a| {
                cell(time(a.baseline.wall.median, Some(a.baseline.wall.half_iqr)))
            }),
            candidate: arms.map_or_else(missing, |a| {
                cell(time(
                    a.candidate.wall.median,
                    Some(a.candidate.wall.half_iqr),
                ))
            }),
            // A number: nothing to escape, and a leading `-` starts no list inside a cell.
            change: Markdown::assembled(format!("{:+.1}%", decided.change_pct())),
            user_cpu: arms.map_or_else(missing, |a| {
                arm_pair(
                    time(a.baseline.user_s, None),
                    time(a.candidate.user_s, None),
                )
            }),
            peak_memory: arms.map_or_else(missing, |a| {
                arm_pair(mib(a.baseline.max_rss_kib), mib(a.candidate.max_rss_kib))
            }),
            verdict: cell(super::wording::scenario_verdict(decided.verdict, r.verdict)),
        });
        if let Some(ratio) = arms.and_then(|a| a.cpu_bought_speedup()) {
            notes.push(Markdown::assembled(format!(
                "⚠️ {}: {}",
                code(&s.name),
                inline(&cpu_note(ratio))
            )));
        }
        if let Some(line) = super::terminal::instructions_sentence(s) {
            notes.push(Markdown::assembled(format!(
                "Deterministic lane, {}: {}",
                code(&s.name),
                inline(&line)
            )));
        }
    }
    let plot = (!rows.is_empty()).then(|| {
        Markdown::assembled(format!(
            "Plot of every pair's speedup, with the interval and the noise band: \
             [{PAIRS_PLOT}]({PAIRS_PLOT}), beside this file and {} in the run directory (the \
             link works there; attach the file to show it on a pull request).",
            code(&receipt.file)
        ))
    });
    Overview { rows, notes, plot }
}

/// The tier in one sentence, for a reader who has not read docs/design.md.
pub(super) fn tier_sentence(r: &ConfirmResult) -> Markdown {
    Markdown::assembled(
        match r.tier {
            Tier::Tested => {
                "**tested** is the highest of evo's tiers: every gate passed, every training scenario passed \
                 its speed gate, and every sealed holdout showed no regression."
            }
            Tier::Measured => {
                "**measured** is the middle of evo's tiers, below **tested**: every gate passed and every training \
                 scenario passed its speed gate, but no holdout has shown that the gain \
                 generalizes (none was declared, or one was inconclusive)."
            }
            Tier::Counted => {
                "**counted** is the lowest of evo's tiers, below **measured**: every gate passed, \
                 but the wall time could not decide within the budget, so the gain was decided on \
                 exact evidence: the estimated cycles of a cache-simulated instruction count of \
                 the timed command, which the wall-time and CPU-time intervals do not contradict. \
                 Estimated cycles are a model of time, not time, and no holdout was timed; \
                 `--require tier=measured` excludes this tier."
            }
            Tier::None => {
                "No tier was reached: evo's tiers, **counted** below **measured** below **tested**, \
                 need every gate passed and every training scenario through its speed gate (or, \
                 for **counted**, its exact evidence), with no holdout regressing. Nothing was decided about the candidate either way, and the receipt \
                 records tier `none`."
            }
            // Before rules 7 the tier `rejected` was recorded for every patch not accepted;
            // beside the verdict `inconclusive` it read as a contradiction, so an older receipt's
            // is called what it is.
            Tier::Rejected if r.verdict == Verdict::Inconclusive => {
                "No tier was reached: evo's tiers, **counted** below **measured** below **tested**, \
                 need every gate passed and every training scenario through its speed gate (or, \
                 for **counted**, its exact evidence), with no holdout regressing. The receipt records this as tier `rejected`, the lowest, which names \
                 no rejection: nothing was decided about the candidate either way."
            }
            Tier::Rejected => {
                "No tier was reached: evo's tiers, **counted** below **measured** below **tested**, \
                 need every gate passed and every training scenario through its speed gate (or, \
                 for **counted**, its exact evidence), with no holdout regressing. The receipt records this as tier `rejected`, the lowest."
            }
        }
        .to_string(),
    )
}

pub(super) fn why(r: &ConfirmResult) -> Why {
    let heading = match r.verdict {
        Verdict::Accepted => "Why it is faster",
        Verdict::Rejected => "Why it was rejected",
        Verdict::Inconclusive => "Why it is inconclusive",
    };
    let reasons = match r.verdict {
        // An acceptance on exact evidence (tier `counted`) says what the counts showed.
        Verdict::Accepted if r.tier == Tier::Counted => (r.reasons.iter())
            .filter(|reason| reason.contains(crate::evidence::verdict::ACCEPTED_ON_EXACT_EVIDENCE))
            .map(|reason| Markdown::assembled(prose(reason)))
            .collect(),
        Verdict::Accepted => Vec::new(),
        // Reasons quote gate details, which quote the candidate's output.
        _ => r
            .reasons
            .iter()
            .map(|reason| Markdown::assembled(prose(&first_line(reason))))
            .collect(),
    };
    Why {
        heading: heading.to_string(),
        reasons,
    }
}
