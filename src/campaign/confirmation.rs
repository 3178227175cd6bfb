//! Fresh confirmation of the top candidates (docs/design.md §2.3.5): each is sent to `evo
//! confirm`'s pipeline as a request, read back from its run directory as a confirmation that ran
//! elsewhere would be, and journaled with the status it gives the candidate.

use std::path::PathBuf;
use std::sync::Arc;

use super::journal::Entry;
use super::{CampaignEvent, CampaignRun, CandidatePatch, summary};
use crate::confirm::{self, ConfirmEvent, ConfirmOptions, ConfirmRequest};
use crate::evidence;
use crate::evidence::summary::Status;
use crate::path::shown;
use crate::pipeline::PipelineError;

impl CampaignRun<'_> {
    /// Fresh confirmations of the best-screened candidates (only those faster in screening), until
    /// `confirm.top` of them were measured: a confirmation that ended without a median (a gate
    /// stopped it before its pairs, as a sanitizer finding or identical binaries do, or while they
    /// ran, as a timed output that disagrees between the arms does) decided nothing about speed,
    /// so the next candidate in the ranking gets the place. A confirmation that failed with an
    /// error keeps it. Then every screened candidate left unconfirmed is told so, with what
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
            let started = std::time::Instant::now();
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
            };
            let on_event = &mut *self.on_event;
            let mut forward = |e: ConfirmEvent| on_event(CampaignEvent::Confirm(e));
            match confirm::run_confirm(&request, &opts, &mut forward) {
                Ok(done) => {
                    // Read back as a confirmation that ran elsewhere would be: the receipt
                    // vouches for what is recorded.
                    let outcome = confirm::load_outcome(&done.run_dir, &done.receipt.verifying_key)
                        .map_err(PipelineError::internal)?;
                    let sent =
                        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&request.plan.patch));
                    if outcome.patch_sha256 != sent {
                        return Err(PipelineError::Internal(format!(
                            "{} confirmed another patch than candidate {index}'s",
                            shown(&outcome.run_dir)
                        )));
                    }
                    let screened = request
                        .search
                        .as_ref()
                        .map_or(f64::NAN, |s| s.figures.median);
                    self.record_confirmation(index, &outcome, screened)?;
                    if outcome.median.is_some() {
                        measured += 1;
                        let took = started.elapsed().as_secs_f64();
                        longest_s = Some(longest_s.map_or(took, |l: f64| l.max(took)));
                    }
                }
                Err(e) => {
                    let status = match e {
                        // Already the confirmation's whole account (and its logs): not wrapped
                        // again, which said "the baseline itself fails" twice.
                        PipelineError::Baseline(_) => return Err(e),
                        PipelineError::Interrupted(_) => return Err(e),
                        PipelineError::KeyLeak(_) => {
                            let why = "its records carried the private signing key; nothing was \
                                       signed";
                            self.set_status(index, Status::Rejected, why.to_string())?;
                            return Err(PipelineError::CampaignKeyLeak(Box::new(e)));
                        }
                        _ => Status::Inconclusive,
                    };
                    self.set_status(index, status, format!("the confirmation stopped: {e}"))?;
                    measured += 1;
                }
            }
        }
        self.note_unconfirmed(&ranking, longest_s)
    }

    /// Gives every candidate still `screened` its last word: not confirmed, so undecided, with
    /// its place in the ranking and what a confirmation of it would take (`longest_s`: the
    /// longest timed confirmation of this run, when one ran here).
    fn note_unconfirmed(
        &mut self,
        ranking: &[(usize, f64)],
        longest_s: Option<f64>,
    ) -> Result<(), PipelineError> {
        let top = self.plan.spec.confirm.top.get();
        let budget_min = self.plan.spec.confirm.max_minutes.map(|m| m.get());
        let takes = match (longest_s, budget_min) {
            (Some(s), _) if s < 60.0 => "under a minute, as this run's confirmation took".into(),
            (Some(s), _) => format!("about {:.0} min, as this run's confirmation took", s / 60.0),
            (None, Some(m)) => format!("its builds and checks plus up to {m} min of pairs"),
            (None, None) => "its builds and checks plus its pairs".to_string(),
        };
        let shown = ranking.len();
        for (place, (index, median)) in ranking.iter().enumerate() {
            let Some(c) = self.state.candidates.iter().find(|c| c.index == *index) else {
                continue;
            };
            if c.status != Status::Screened {
                continue;
            }
            let screened = super::screen::screened_reason(*median, c.pairs.len());
            let why = if *median > 1.0 {
                format!(
                    "ranked {} of {shown}, below the top {top} confirmed (confirm.top)",
                    place + 1
                )
            } else {
                "no faster than the baseline in screening, which ranks and never decides"
                    .to_string()
            };
            let reason = format!(
                "undecided, not confirmed: {screened}, {why}; a confirmation (`evo confirm` its \
                 patch with this campaign) would take {takes}"
            );
            self.set_status(*index, Status::Screened, reason)?;
        }
        Ok(())
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
        ConfirmRequest::new(plan, Some(self.search_context(index)), self.opts.sandbox)
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
