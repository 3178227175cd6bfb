//! The end of a campaign in one table: every candidate's status and reason, its screening figures
//! and its confirmation — the same in `summary.json` and on the terminal.

use serde::Serialize;

use super::journal::{Source, Status};
use super::state::{Candidate, State};
use crate::stats::{self, Ratios};

/// One row of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Row {
    pub index: usize,
    pub name: String,
    pub source: Source,
    pub patch_file: String,
    pub status: Status,
    pub reason: String,
    pub screening_pairs: usize,
    pub screening_median: Option<f64>,
    /// Mean max RSS of the candidate's screening runs, KiB.
    pub screening_max_rss_kib: Option<f64>,
    pub instructions: Option<(u64, u64)>,
    pub confirmation_run_dir: Option<String>,
    pub confirmation_verdict: Option<crate::confirm::result::Verdict>,
    pub confirmation_tier: Option<stats::Tier>,
    /// The confirmation's median speedup on the training scenario, when it measured one.
    pub confirmation_median: Option<f64>,
    /// Confirmations of this candidate that an interruption cut short (their logs stay there).
    pub discarded_confirmations: Vec<String>,
}

/// The whole campaign, for `summary.json` and the terminal.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub run_id: String,
    pub candidates_tried: usize,
    pub rows: Vec<Row>,
    /// Seconds spent building trees in the search by this process (confirmations report their
    /// own in their results).
    pub build_s: f64,
    /// Seconds of timed runs in screening (both arms, warmups included), from the journal.
    pub screening_run_s: f64,
    pub total_s: f64,
    /// The best confirmed candidate, if any was accepted.
    pub accepted: Option<usize>,
}

fn median_of(c: &Candidate) -> Option<f64> {
    let r = Ratios::new(c.pairs.iter().map(|p| p.ratio).collect()).ok()?;
    Some(stats::median(&r))
}

/// When a confirmation measured much less than screening did (less than half the gain), a note
/// saying so: the search figure was luck or tuned to the search inputs, and the confirmed figure
/// is the one to believe. Empty otherwise.
pub fn held_up_note(screening: f64, confirmed: Option<f64>) -> String {
    match confirmed {
        Some(c) if screening > 1.0 && (c - 1.0) < (screening - 1.0) / 2.0 => format!(
            "; screening measured {screening:.3}× but the fresh confirmation {c:.3}×: the search \
             figure did not hold up (luck, or tuned to the search's inputs)"
        ),
        _ => String::new(),
    }
}

/// Screened candidates, best first, with their screening medians.
pub fn ranking(candidates: &[Candidate]) -> Vec<(usize, f64)> {
    let mut ranked: Vec<(usize, f64)> = candidates
        .iter()
        .filter(|c| !c.pairs.is_empty() && c.status != Status::Refused)
        .filter_map(|c| median_of(c).map(|m| (c.index, m)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

impl Summary {
    pub fn new(run_id: &str, state: &State, build_s: f64, total_s: f64) -> Summary {
        let rows: Vec<Row> = state
            .candidates
            .iter()
            .map(|c| {
                let rss: Vec<f64> = c
                    .pairs
                    .iter()
                    .map(|p| p.candidate.rusage.max_rss_kib as f64)
                    .collect();
                Row {
                    index: c.index,
                    name: c.name.clone(),
                    source: c.source.clone(),
                    patch_file: c.patch_file.clone(),
                    status: c.status,
                    reason: c.reason.clone(),
                    screening_pairs: c.pairs.len(),
                    screening_median: median_of(c),
                    screening_max_rss_kib: (!rss.is_empty())
                        .then(|| rss.iter().sum::<f64>() / rss.len() as f64),
                    instructions: c.instructions,
                    confirmation_run_dir: c.confirmation.as_ref().map(|x| x.run_dir.clone()),
                    confirmation_verdict: c.confirmation.as_ref().map(|x| x.verdict),
                    confirmation_tier: c.confirmation.as_ref().map(|x| x.tier),
                    confirmation_median: c.confirmation.as_ref().and_then(|x| x.median),
                    discarded_confirmations: c.discarded_confirmations.clone(),
                }
            })
            .collect();
        let accepted = ranking(&state.candidates)
            .into_iter()
            .map(|(i, _)| i)
            .find(|i| {
                rows.iter()
                    .any(|r| r.index == *i && r.status == Status::Confirmed)
            });
        let screening_run_s = state
            .candidates
            .iter()
            .flat_map(|c| {
                let warm = c.warmups.iter().map(|w| w.run.wall_s);
                let pairs = c
                    .pairs
                    .iter()
                    .map(|p| p.baseline.wall_s + p.candidate.wall_s);
                warm.chain(pairs)
            })
            .sum();
        Summary {
            run_id: run_id.to_string(),
            screening_run_s,
            candidates_tried: rows.len(),
            rows,
            build_s,
            total_s,
            accepted,
        }
    }

    /// Accepted if a candidate was confirmed; inconclusive if the best one could not be decided;
    /// rejected otherwise.
    /// The campaign's verdict: accepted when a candidate was, inconclusive when none was but
    /// one ended inconclusive, else rejected.
    pub fn verdict(&self) -> crate::confirm::result::Verdict {
        use crate::confirm::result::Verdict;
        if self.accepted.is_some() {
            Verdict::Accepted
        } else if self.rows.iter().any(|r| r.status == Status::Inconclusive) {
            Verdict::Inconclusive
        } else {
            Verdict::Rejected
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_figure_that_did_not_hold_up_is_said() {
        let note = held_up_note(5.546, Some(1.019));
        assert!(note.contains("5.546×"), "{note}");
        assert!(note.contains("1.019×"), "{note}");
        assert!(note.contains("did not hold up"), "{note}");
        // Half the gain or more held: nothing to say; nothing measured: nothing to compare.
        assert_eq!(held_up_note(1.10, Some(1.06)), "");
        assert_eq!(held_up_note(1.10, None), "");
        assert_eq!(held_up_note(0.98, Some(0.97)), "");
    }
}
