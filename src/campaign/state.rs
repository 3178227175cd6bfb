//! The state of a campaign, rebuilt from its journal: what every candidate became and every
//! screening run, so a resumed run knows exactly what is left to do.

use std::path::PathBuf;

use serde::Serialize;

use super::journal::Entry;
use crate::evidence::summary::{InstructionCounts, Source, Status};
use crate::measure::record::{Pair, WarmupRun};

/// One candidate and everything learned about it so far.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// 1-based; the patch is `candidate_<index>.patch` in the run directory.
    pub index: usize,
    pub name: String,
    pub source: Source,
    pub patch_file: String,
    pub explanation: Option<String>,
    /// The search round it was collected in (patch files: 1).
    pub round: usize,
    /// The candidate its agent run started from, when `agent.base` is `best`.
    pub parent: Option<usize>,
    /// What its agent run reported it cost (`EVO_COST.json`).
    pub cost: Option<f64>,
    pub status: Status,
    pub reason: String,
    pub warmups: Vec<WarmupRun>,
    pub pairs: Vec<Pair>,
    /// Screening's instruction counts, when the search counts them.
    pub instructions: Option<InstructionCounts>,
    /// Median of the screening ratios, once screened.
    pub screening_median: Option<f64>,
    pub confirmation: Option<ConfirmationRef>,
    /// A confirmation began and has not finished (yet, or ever: it was interrupted).
    pub confirmation_started: bool,
    /// Run folders of confirmations that were interrupted and discarded.
    pub discarded_confirmations: Vec<String>,
    /// Its checks and screening ran as a fleet job, with their builds on the job's node.
    pub screened_in_job: bool,
}

/// Where a candidate's fresh confirmation went and what it concluded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfirmationRef {
    pub run_dir: String,
    pub verdict: crate::evidence::result::Verdict,
    pub tier: crate::stats::Tier,
    pub median: Option<f64>,
}

/// Everything the journal says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    pub run_id: Option<String>,
    pub baseline_sha: Option<String>,
    pub search_seed: Option<u64>,
    pub baseline_ready: bool,
    pub candidates: Vec<Candidate>,
    /// Agent runs already journaled (their candidates exist even when they made no change).
    pub agent_runs_done: usize,
    /// Seconds the search had taken when its last candidate was collected, over all sessions.
    pub search_s: f64,
    /// The sum of the costs the agent runs reported (what `search.max_cost` counts).
    pub cost_spent: f64,
    /// Why the search ended before its last round, once journaled.
    pub search_ended: Option<String>,
    pub finished: bool,
}

impl State {
    pub fn candidate(&self, index: usize) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.index == index)
    }

    pub fn candidate_mut(&mut self, index: usize) -> Option<&mut Candidate> {
        self.candidates.iter_mut().find(|c| c.index == index)
    }

    /// Applies one journal entry.
    pub fn apply(&mut self, entry: &Entry) {
        match entry {
            Entry::Started {
                run_id,
                baseline_sha,
                search_seed,
                ..
            } => {
                self.run_id = Some(run_id.clone());
                self.baseline_sha = Some(baseline_sha.clone());
                self.search_seed = Some(*search_seed);
            }
            Entry::Candidate {
                index,
                name,
                source,
                patch_file,
                explanation,
                round,
                parent,
                search_s,
                cost,
            } => {
                if *source == Source::Agent {
                    self.agent_runs_done += 1;
                }
                self.search_s = self.search_s.max(*search_s);
                self.cost_spent += cost.unwrap_or(0.0);
                self.candidates.push(Candidate {
                    index: *index,
                    name: name.clone(),
                    source: source.clone(),
                    patch_file: patch_file.clone(),
                    explanation: explanation.clone(),
                    round: *round,
                    parent: *parent,
                    cost: *cost,
                    status: Status::Collected,
                    reason: String::new(),
                    warmups: Vec::new(),
                    pairs: Vec::new(),
                    instructions: None,
                    screening_median: None,
                    confirmation: None,
                    confirmation_started: false,
                    screened_in_job: false,
                    discarded_confirmations: Vec::new(),
                });
            }
            Entry::Status {
                index,
                status,
                reason,
            } => {
                if let Some(c) = self.candidate_mut(*index) {
                    c.status = *status;
                    c.reason = reason.clone();
                }
            }
            Entry::BaselineReady { .. } => self.baseline_ready = true,
            Entry::Warmups { index, runs } => {
                if let Some(c) = self.candidate_mut(*index) {
                    c.warmups = runs.clone();
                }
            }
            Entry::ScreeningPair { index, pair } => {
                if let Some(c) = self.candidate_mut(*index) {
                    c.pairs.push(pair.clone());
                }
            }
            Entry::Instructions {
                index,
                baseline,
                candidate,
            } => {
                if let Some(c) = self.candidate_mut(*index) {
                    c.instructions = Some(InstructionCounts {
                        baseline: *baseline,
                        candidate: *candidate,
                    });
                }
            }
            Entry::Confirmation {
                index,
                run_dir,
                verdict,
                tier,
                median,
            } => {
                if let Some(c) = self.candidate_mut(*index) {
                    c.confirmation_started = false;
                    c.confirmation = Some(ConfirmationRef {
                        run_dir: run_dir.clone(),
                        verdict: *verdict,
                        tier: *tier,
                        median: *median,
                    });
                }
            }
            Entry::ConfirmationStarted { index } => {
                if let Some(c) = self.candidate_mut(*index) {
                    c.confirmation_started = true;
                }
            }
            Entry::ConfirmationDiscarded { index, run_dirs } => {
                if let Some(c) = self.candidate_mut(*index) {
                    c.confirmation_started = false;
                    c.discarded_confirmations.extend(run_dirs.iter().cloned());
                }
            }
            // The fleet's jobs: `campaign::fleet` reads them from the journal itself.
            Entry::JobSubmitted { .. } | Entry::JobEnded { .. } => {}
            // What follows is the candidate's screening from one job, on one node: nothing
            // measured before it (elsewhere, by a session that ran the search here) is kept, so
            // no median mixes ratios of two machines.
            Entry::ScreeningJob { index, .. } => {
                if let Some(c) = self.candidate_mut(*index) {
                    c.warmups.clear();
                    c.pairs.clear();
                    c.instructions = None;
                    c.screened_in_job = true;
                }
            }
            Entry::SearchEnded { reason, .. } => self.search_ended = Some(reason.clone()),
            Entry::Finished { .. } => self.finished = true,
            // A stop changes nothing: what was finished before it is already applied.
            Entry::Interrupted { .. } => {}
        }
    }

    pub fn from_entries(entries: &[Entry]) -> State {
        let mut s = State::default();
        for e in entries {
            s.apply(e);
        }
        s
    }

    /// Agent runs journaled in `round`.
    pub fn agent_runs_in(&self, round: usize) -> usize {
        (self.candidates.iter())
            .filter(|c| c.source == Source::Agent && c.round == round)
            .count()
    }

    pub fn patch_path(&self, run_dir: &std::path::Path, index: usize) -> Option<PathBuf> {
        self.candidates
            .iter()
            .find(|c| c.index == index)
            .map(|c| run_dir.join(&c.patch_file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::{Order, RunRecord};

    #[test]
    fn a_screening_job_replaces_the_pairs_measured_before_it() {
        let pair = |i, c| Entry::ScreeningPair {
            index: 1,
            pair: Pair::new(
                i,
                Order::CandidateFirst,
                RunRecord::exited_ok(1.0),
                RunRecord::exited_ok(c),
            ),
        };
        let entries = [
            Entry::Candidate {
                index: 1,
                name: "memo".into(),
                source: Source::Patch,
                patch_file: "candidate_1.patch".into(),
                explanation: None,
                round: 1,
                parent: None,
                search_s: 0.0,
                cost: None,
            },
            pair(0, 0.5),
            Entry::ScreeningJob {
                index: 1,
                job_id: 9,
                node: "n1".into(),
                attempt: 1,
                machine: None,
                run_dir: "screenings/r".into(),
            },
            pair(0, 0.8),
        ];
        let before = State::from_entries(&entries[..2]);
        assert!(!before.candidates[0].screened_in_job);
        let state = State::from_entries(&entries);
        let ratios: Vec<f64> = state.candidates[0].pairs.iter().map(|p| p.ratio).collect();
        assert_eq!(ratios, [1.25]);
        assert!(state.candidates[0].screened_in_job);
    }
}
