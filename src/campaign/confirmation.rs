//! Fresh confirmation of the top candidates (docs/design.md §2.3.5): each is sent to `evo
//! confirm`'s pipeline as a request, read back from its run directory as a confirmation that ran
//! elsewhere would be, and journaled with the status it gives the candidate.

use crate::failure::with_causes;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::journal::Entry;
use super::{CampaignRun, CandidatePatch, summary};
use crate::confirm::COUNT_PAIRS;
use crate::confirm::{self, ConfirmOptions, ConfirmRequest};
use crate::evidence;
use crate::evidence::summary::Status;
use crate::path::shown;
use crate::pipeline::PipelineError;
use crate::pipeline::event::Event;
use crate::search::ruling::Ruling;
use crate::spec::campaign::Counter;
use crate::spec::workload::Role;

/// A confirmation's builds and checks take about this many times the median candidate check
/// of the search (one build, tests and the differential): the two arms' builds, the second
/// baseline build, the sanitizer twins, and tests, differential and sanitizer checks on both.
/// Seen on the bundled trainer (2026-12-03, quiet 2-core machine): a candidate's check 7 s;
/// the confirmation's pinning (digests of the read-only inputs), builds and checks about 70 s
/// with warm caches, plus about 3 min when the sanitizer build's cache is cold (once per
/// machine), which no estimate made before it ran can know.
const CHECKS_PER_CONFIRMATION: f64 = 10.0;

/// The next confirmation would not end before the run's deadline.
#[derive(Debug, Clone, Copy)]
struct OutOfTime {
    left_s: f64,
    needs_s: f64,
}

/// The upper median of `values` (0 when there are none): one slow check or pair, such as the
/// first build in a new clone, does not set the pace.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// What the next confirmation should take, from one that took `took` seconds in all, `measure_s`
/// of them timed runs: those as they were, and its preparation, builds and checks no longer than
/// `checks_estimate_s`, the search's estimate of them. The first confirmation on a machine fills
/// the build caches (on the bundled trainer the sanitizer build's, minutes); the ones after it
/// reuse them, so its own time would keep the next one from starting where it fits.
fn next_confirmation_s(took: f64, measure_s: f64, checks_estimate_s: f64) -> f64 {
    let measure_s = measure_s.clamp(0.0, took.max(0.0));
    measure_s + (took - measure_s).min(checks_estimate_s.max(0.0))
}

/// `s` seconds as "under a minute" or "about N min".
fn minutes_text(s: f64) -> String {
    if s < 60.0 {
        "under a minute".to_string()
    } else {
        format!("about {:.0} min", s / 60.0)
    }
}

impl CampaignRun<'_> {
    /// Fresh confirmations of the best-screened candidates (only those faster in screening), until
    /// `confirm.top` of them were measured: a confirmation that ended without a median (a gate
    /// stopped it before its pairs, as a sanitizer finding or identical binaries do, or while they
    /// ran, as a timed output that disagrees between the arms does) decided nothing about speed,
    /// so the next candidate in the ranking gets the place. A confirmation that failed with an
    /// error keeps it. Then the screened candidates left unconfirmed are judged on their
    /// screening pairs, which may rule them out (`rule_screened`: slower or no real gain, with
    /// more pairs while the deadline allows), and every one still screened is told so, with what
    /// deciding it would take.
    pub(super) fn confirm_top(&mut self) -> Result<(), PipelineError> {
        let ranking = summary::ranking(&self.state.candidates);
        let top = self.plan.spec.confirm.top.get();
        let faster: Vec<usize> = ranking
            .iter()
            .filter(|(_, median)| *median > 1.0)
            .map(|(i, _)| *i)
            .collect();
        if let Some(fleet) = self.fleet()? {
            let chosen = faster.into_iter().take(top).collect();
            return self.run_jobs(&fleet, crate::report::jobs::JobStage::Confirm, chosen);
        }
        let mut measured = 0;
        let mut longest_s: Option<f64> = None;
        let deadline = self.deadline();
        let mut out_of_time = None;
        for index in faster {
            if measured >= top {
                break;
            }
            if let Some(done) = self
                .state
                .candidate_mut(index)
                .and_then(|c| c.confirmation.as_ref())
            {
                measured += usize::from(done.median.is_some());
                continue;
            }
            if let Some(deadline) = deadline {
                let left_s = deadline
                    .saturating_duration_since(Instant::now())
                    .as_secs_f64();
                let needs_s = longest_s.unwrap_or_else(|| self.estimate_s());
                if needs_s > left_s {
                    out_of_time = Some(OutOfTime { left_s, needs_s });
                    break;
                }
            }
            let started = Instant::now();
            self.discard_interrupted_confirmation(index)?;
            self.candidate_stage(&format!("confirm candidate {index}"), index);
            self.record(Entry::ConfirmationStarted { index })?;
            let CandidatePatch { file, bytes } = self.candidate_patch(index)?;
            let request = self.confirm_request(index, file, bytes);
            let opts = ConfirmOptions {
                runners: Arc::clone(&self.opts.runners),
                work_dir: None,
                stop: self.opts.stop.clone(),
                hold: self.opts.hold.clone(),
                sign_with: self.opts.sign_with.clone(),
                hidden: Vec::new(),
                deadline,
            };
            let on_event = &mut *self.on_event;
            let mut forward = |e: Event| on_event(e.in_campaign());
            match confirm::run_confirm(&request, &opts, &mut forward) {
                Ok(done) => {
                    // Read back as a confirmation that ran elsewhere would be: the receipt
                    // vouches for what is recorded.
                    let outcome = confirm::load_outcome(&done.run_dir, &done.receipt.verifying_key)
                        .map_err(PipelineError::internal)?;
                    let sent =
                        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&request.plan.patch));
                    if outcome.patch_sha256 != sent {
                        return Err(PipelineError::internal(format!(
                            "{} confirmed another patch than candidate {index}'s",
                            shown(&outcome.run_dir)
                        )));
                    }
                    let screened = request
                        .search
                        .as_ref()
                        .map_or(f64::NAN, |s| s.figures.median);
                    self.record_confirmation(index, &outcome, screened)?;
                    if self.earlier_aa.is_none() {
                        self.earlier_aa = confirm::earlier_aa::EarlierAa::of(&done.result);
                    }
                    if outcome.median.is_some() {
                        measured += 1;
                        // Its A/A runs are not timed again when the later ones can reuse them: its
                        // two baseline builds came out byte for byte alike, as theirs then will.
                        let aa_s = match &self.earlier_aa {
                            Some(e) if e.reproducible() => {
                                confirm::earlier_aa::measured_aa_s(&done.result)
                            }
                            _ => 0.0,
                        };
                        let took = started.elapsed().as_secs_f64() - aa_s;
                        let measure_s = done.result.evidence.timings.measure_s - aa_s;
                        let next = next_confirmation_s(took, measure_s, self.checks_estimate_s());
                        longest_s = Some(longest_s.map_or(next, |l: f64| l.max(next)));
                    }
                }
                Err(e) => {
                    let status = match e {
                        // Already the confirmation's whole account (and its logs): not wrapped
                        // again, which said "the baseline itself fails" twice.
                        PipelineError::Baseline(_) => return Err(e),
                        PipelineError::Interrupted { .. } => return Err(e),
                        PipelineError::KeyLeak { .. } => {
                            let why = "its records carried the private signing key; nothing was \
                                       signed";
                            self.set_status(index, Status::Rejected, why.to_string())?;
                            return Err(PipelineError::CampaignKeyLeak(Box::new(e)));
                        }
                        _ => Status::Inconclusive,
                    };
                    self.set_status(
                        index,
                        status,
                        format!("the confirmation stopped: {}", with_causes(&e)),
                    )?;
                    measured += 1;
                }
            }
        }
        self.rule_screened()?;
        self.note_unconfirmed(&ranking, longest_s, out_of_time)
    }

    /// When the run must end (the campaign's `max_minutes`): that long after this session
    /// began, less the search time the sessions before it journaled.
    pub(super) fn deadline(&self) -> Option<Instant> {
        let minutes = self.plan.spec.max_minutes?.get();
        let before = Duration::from_secs_f64(self.search_s_before.max(0.0));
        let total = Duration::from_secs_f64(60.0 * minutes).saturating_sub(before);
        Some(self.session_started + total)
    }

    /// About how long one confirmation takes here, before one ran: its builds and checks at
    /// [`CHECKS_PER_CONFIRMATION`] times the median candidate check of the search, and its
    /// timed runs at screening's pace: per training scenario the warmups, A/A pairs, first look
    /// and instruction counts, per holdout the warmups and first look.
    pub(super) fn estimate_s(&self) -> f64 {
        let c = &self.plan.spec.confirm;
        let scenarios = &self.plan.workload.scenarios;
        let training = scenarios
            .iter()
            .filter(|s| s.role == Role::Training)
            .count() as f64;
        let holdouts =
            (self.plan.holdouts.as_ref()).map_or(0, |h| h.holdouts.scenarios.len()) as f64;
        let (warmup, aa, pairs) = (
            c.warmup.get() as f64,
            c.aa_pairs.get() as f64,
            c.pairs.get() as f64,
        );
        let counts = if c.counters.contains(&Counter::Callgrind) {
            COUNT_PAIRS
        } else {
            0.0
        };
        let timed_pairs = training * (warmup + aa + pairs + counts) + holdouts * (warmup + pairs);
        self.checks_estimate_s() + timed_pairs * self.screening_pace_s()
    }

    /// About how long a confirmation's preparation, builds and checks take here:
    /// [`CHECKS_PER_CONFIRMATION`] times the median candidate check of the search.
    fn checks_estimate_s(&self) -> f64 {
        CHECKS_PER_CONFIRMATION * median(self.check_s.clone())
    }

    /// The median seconds of one screening pair (both runs), over every screened pair.
    pub(super) fn screening_pace_s(&self) -> f64 {
        median(
            (self.state.candidates.iter())
                .flat_map(|c| c.pairs.iter())
                .map(|p| p.baseline.wall_s + p.candidate.wall_s)
                .collect(),
        )
    }

    /// Gives every candidate still `screened` its last word: not confirmed, so undecided, with
    /// its place in the ranking and what a confirmation of it would take (`longest_s`: the
    /// longest of this run's confirmations as `next_confirmation_s` counts them, when one ran
    /// here; else this run's estimate).
    /// `out_of_time`: the run's deadline left too little for the next confirmation.
    fn note_unconfirmed(
        &mut self,
        ranking: &[(usize, f64)],
        longest_s: Option<f64>,
        out_of_time: Option<OutOfTime>,
    ) -> Result<(), PipelineError> {
        let top = self.plan.spec.confirm.top.get();
        let estimated = "estimated from this run's checks and screening";
        let (needs_s, how) = match (longest_s, out_of_time) {
            (Some(s), _) => (s, "as this run's confirmations took, builds at warm caches"),
            (None, Some(o)) => (o.needs_s, estimated),
            (None, None) => (self.estimate_s(), estimated),
        };
        let needs = minutes_text(needs_s);
        let shown = ranking.len();
        for (place, (index, median)) in ranking.iter().enumerate() {
            let Some(c) = self.state.candidates.iter().find(|c| c.index == *index) else {
                continue;
            };
            if c.status != Status::Screened {
                continue;
            }
            // The median of every pair it has now: the ruling may have added some since the
            // ranking was made.
            let ratios: Vec<f64> = c.pairs.iter().map(|p| p.ratio).collect();
            let now = summary::screening_median(c).unwrap_or(*median);
            let screened = super::screen::screened_reason(now, c.pairs.len());
            let why = match out_of_time {
                _ if *median <= 1.0 => "no faster than the baseline in screening".to_string(),
                Some(o) if place < top => format!(
                    "ranked {} of {shown}, but the campaign's max_minutes left {} for its \
                     confirmation",
                    place + 1,
                    minutes_text(o.left_s)
                ),
                _ => format!(
                    "ranked {} of {shown}, below the top {top} confirmed (confirm.top)",
                    place + 1
                ),
            };
            let looks = self.screening_looks_say(&ratios);
            let reason = format!(
                "undecided: would need {needs} more for a confirmation ({how}; `evo confirm` its \
                 patch with this campaign); not confirmed: {screened}, {why}; {looks}"
            );
            self.set_status(*index, Status::Screened, reason)?;
        }
        Ok(())
    }

    /// What screening's looks (`search::ruling`) say of a candidate still screened: found faster
    /// (which only a confirmation may accept), or neither faster nor ruled out in its pairs.
    fn screening_looks_say(&self, ratios: &[f64]) -> String {
        let min_effect = self.plan.spec.confirm.min_effect.get();
        match self.screening_ruling(ratios) {
            Ruling::Faster(stop) => format!(
                "screening's looks find it faster (estimate {:.4}×{} at {} pairs), which only a \
                 confirmation may accept",
                stop.median,
                stop.interval
                    .map_or_else(String::new, |c| format!(", interval from {:.4}×", c.lower)),
                stop.pairs
            ),
            _ => format!(
                "its {} screening pairs neither rule it out nor find it faster by the {:.1}% \
                 minimum effect",
                ratios.len(),
                100.0 * min_effect
            ),
        }
    }

    /// What the confirmation of candidate `index` (its patch file and bytes) runs: the campaign's
    /// plan with the run's `confirmations/` as output folder, and the search's figures.
    pub(super) fn confirm_request(
        &self,
        index: usize,
        patch_file: PathBuf,
        bytes: Vec<u8>,
    ) -> ConfirmRequest {
        let mut plan = self.plan.confirm_plan(patch_file, bytes);
        plan.campaign.output_dir = self.run_dir.path.join("confirmations");
        ConfirmRequest {
            earlier_aa: self.earlier_aa.clone(),
            ..ConfirmRequest::new(plan, Some(self.search_context(index)), self.opts.sandbox)
        }
    }

    /// Journals a finished confirmation of `index` and the status it gives the candidate
    /// (`screened`: its screening median, to say whether that held up).
    pub(super) fn record_confirmation(
        &mut self,
        index: usize,
        outcome: &confirm::Outcome,
        screened: f64,
    ) -> Result<(), PipelineError> {
        let status = match outcome.verdict {
            evidence::result::Verdict::Accepted => Status::Confirmed,
            evidence::result::Verdict::Rejected => Status::Rejected,
            evidence::result::Verdict::Inconclusive => Status::Inconclusive,
        };
        let run_dir = self.run_dir.relative(&outcome.run_dir);
        self.record(Entry::Confirmation {
            index,
            run_dir: run_dir.clone(),
            verdict: outcome.verdict,
            tier: outcome.tier,
            median: outcome.median,
        })?;
        let reason = (outcome.reasons.first().cloned())
            .unwrap_or_else(|| format!("tier {}", outcome.tier.as_str()));
        let held = summary::held_up_note(screened, outcome.median);
        self.set_status(index, status, format!("{reason}{held} ({run_dir})"))
    }

    /// When a confirmation of `index` began but never finished, journals the folders it left so
    /// their runs are accounted for, before a new confirmation starts from scratch.
    fn discard_interrupted_confirmation(&mut self, index: usize) -> Result<(), PipelineError> {
        if !self
            .state
            .candidate_mut(index)
            .is_some_and(|c| c.confirmation_started)
        {
            return Ok(());
        }
        let known: Vec<String> = self
            .state
            .candidates
            .iter()
            .flat_map(|c| {
                let done = c.confirmation.iter().map(|x| x.run_dir.clone());
                done.chain(c.discarded_confirmations.iter().cloned())
            })
            .collect();
        let folder = self.run_dir.path.join("confirmations");
        let mut run_dirs: Vec<String> = std::fs::read_dir(&folder)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| self.run_dir.relative(&e.path()))
                    .filter(|d| !known.contains(d))
                    .collect()
            })
            .unwrap_or_default();
        run_dirs.sort();
        self.record(Entry::ConfirmationDiscarded { index, run_dirs })
    }

    /// Candidate `index`'s round and the parents it was built on, and how long the search was.
    fn lineage(&self, index: usize) -> evidence::result::Lineage {
        let all = &self.state.candidates;
        let find = |i: usize| all.iter().find(|c| c.index == i);
        let mut ancestors = Vec::new();
        let mut next = find(index).and_then(|c| c.parent);
        // A parent is always collected before its child; the bound only guards a bad journal.
        while let Some(p) = next.and_then(find).filter(|_| ancestors.len() < all.len()) {
            ancestors.push(evidence::result::Ancestor {
                name: p.name.clone(),
                round: p.round,
            });
            next = p.parent;
        }
        evidence::result::Lineage {
            name: find(index).map_or_else(String::new, |c| c.name.clone()),
            round: find(index).map_or(1, |c| c.round),
            rounds: all.iter().map(|c| c.round).max().unwrap_or(1),
            agent_runs: self.state.agent_runs_done,
            ancestors,
        }
    }

    /// The screening figures and stated reason of candidate `index`, for its confirmation.
    fn search_context(&self, index: usize) -> confirm::SearchContext {
        let c = self.state.candidates.iter().find(|c| c.index == index);
        let ratios = c.map_or_else(Vec::new, |c| c.pairs.iter().map(|p| p.ratio).collect());
        let (median, ci95) = match crate::stats::Ratios::new(ratios) {
            Ok(r) => (crate::stats::median(&r), crate::stats::ci95(&r)),
            Err(_) => (f64::NAN, None),
        };
        let scenario = self
            .training()
            .first()
            .map_or_else(String::new, |s| s.name.clone());
        confirm::SearchContext {
            candidates_tried: self.state.candidates.len(),
            figures: evidence::result::SearchFigures {
                scenario,
                pairs: c.map_or(0, |c| c.pairs.len()),
                median,
                ci95,
                lineage: Some(self.lineage(index)),
            },
            explanation: c.and_then(|c| c.explanation.clone()),
            from_agent: c.is_some_and(|c| c.source == evidence::summary::Source::Agent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_confirmation_is_planned_with_warm_builds_and_the_timed_runs_seen() {
        // A first confirmation on a fresh machine (seen 2026-12-05): 254 s in all, 133 s of
        // timed runs, 121 s of cold builds and checks; with a search estimate of 70 s for them.
        assert_eq!(next_confirmation_s(254.0, 133.0, 70.0), 203.0);
        // A warm one is counted as it took.
        assert_eq!(next_confirmation_s(165.0, 131.0, 70.0), 165.0);
        // Timed runs are never discounted, whatever the estimate of the checks.
        assert_eq!(next_confirmation_s(300.0, 290.0, 0.0), 290.0);
        // A result whose timings say more than the whole took is not trusted beyond it.
        assert_eq!(next_confirmation_s(100.0, 400.0, 70.0), 100.0);
    }

    #[test]
    fn one_slow_check_does_not_set_the_pace_of_the_estimate() {
        // A new clone's first candidate build compiles more than the others.
        assert_eq!(median(vec![31.0, 8.0, 7.5, 8.5]), 8.5);
        assert_eq!(median(vec![31.0, 8.0, 7.5]), 8.0);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
