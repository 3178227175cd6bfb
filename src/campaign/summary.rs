//! The campaign's summary (`evidence::summary`) built from its state: the rows, the ranking of
//! the screened candidates, and what a confirmation said against screening.

use super::state::{Candidate, State};
use crate::evidence::summary::{Row, Status, Summary};
use crate::stats::{self, Ratios};

pub(super) fn screening_median(c: &Candidate) -> Option<f64> {
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
        .filter_map(|c| screening_median(c).map(|m| (c.index, m)))
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
                    round: c.round,
                    parent: c.parent,
                    cost: c.cost,
                    status: c.status,
                    reason: c.reason.clone(),
                    screening_pairs: c.pairs.len(),
                    screening_median: screening_median(c),
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
            // A fold from +0: an empty `sum` of floats is -0, which printed as "-0 s".
            .fold(0.0, |total, s| total + s);
        let screened_in_jobs = (state.candidates.iter())
            .filter(|c| c.screened_in_job)
            .count();
        Summary {
            run_id: run_id.to_string(),
            screened_in_jobs,
            screening_run_s,
            candidates_tried: rows.len(),
            rows,
            build_s,
            total_s,
            search_ended: state.search_ended.clone(),
            cost_total: state
                .candidates
                .iter()
                .any(|c| c.cost.is_some())
                .then_some(state.cost_spent),
            accepted,
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
