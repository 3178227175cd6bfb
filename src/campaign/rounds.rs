//! The search loop of a campaign (docs/design.md §2.9): rounds of agent runs, each round's
//! candidates checked and screened before the next round's agents read their history, until the
//! last round, `search.stop_after` rounds without gain, or a budget ends it. Every decision is
//! drawn from the journal, so a resumed run makes the same ones and repeats no agent run.

use super::CampaignRun;
use super::collect::AgentRun;
use super::journal::Entry;
use crate::evidence::summary::Status;
use crate::fleet::FleetPlan;
use crate::pipeline::PipelineError;
use crate::pipeline::event::Event;
use crate::report::jobs::JobStage;
use crate::search::{Budget, Spent};
use crate::tree::Tree;

impl CampaignRun<'_> {
    /// The rounds the search may run: `search.rounds` with an agent, else one.
    pub(super) fn rounds(&self) -> usize {
        match self.plan.spec.agent {
            Some(_) => self.plan.spec.search.rounds.get(),
            None => 1,
        }
    }

    /// Wall seconds the search has taken, over this session and the journaled ones before it.
    pub(super) fn search_seconds(&self) -> f64 {
        self.search_s_before + self.session_started.elapsed().as_secs_f64()
    }

    /// The best screened candidate so far with a median above 1, and its median.
    pub(super) fn best_screened(&self) -> Option<(usize, f64)> {
        let screened: Vec<_> = (self.state.candidates.iter())
            .filter(|c| c.status == Status::Screened)
            .cloned()
            .collect();
        super::summary::ranking(&screened)
            .into_iter()
            .find(|(_, m)| *m > 1.0)
    }

    /// Collect, check and screen round after round; what is left for confirmation is screened.
    pub(super) fn search(&mut self, fleet: Option<&FleetPlan>) -> Result<(), PipelineError> {
        let mut baseline = None;
        for round in 1..=self.rounds() {
            if self.state.search_ended.is_none() {
                match self.no_gain(round) {
                    Some(reason) => self.record(Entry::SearchEnded {
                        round: round - 1,
                        reason,
                    })?,
                    None => {
                        // Before an agent reads its first brief: where the baseline's time goes.
                        self.profile_baseline(fleet, &mut baseline)?;
                        self.collect_round(round)?
                    }
                }
            }
            self.check_and_screen(fleet, &mut baseline)?;
            if self.state.search_ended.is_some() {
                break;
            }
        }
        // Screening pairs where the ranking is in doubt (fleet jobs screen on their own nodes).
        if fleet.is_none() {
            self.race(&mut baseline)?;
        }
        Ok(())
    }

    /// Why round `round` does not start: `search.stop_after` rounds in a row before it raised
    /// no best screening median.
    fn no_gain(&self, round: usize) -> Option<String> {
        let k = self.plan.spec.search.stop_after?.get();
        let best_by_round: Vec<Option<f64>> = (1..round)
            .map(|r| {
                let upto: Vec<_> = (self.state.candidates.iter())
                    .filter(|c| c.round <= r && c.status == Status::Screened)
                    .cloned()
                    .collect();
                super::summary::ranking(&upto).first().map(|(_, m)| *m)
            })
            .collect();
        (crate::search::rounds_without_gain(&best_by_round) >= k).then(|| {
            format!(
                "search.stop_after: {k} round(s) in a row without a better screening median, \
                 after round {}",
                round - 1
            )
        })
    }

    /// The agent runs of `round` not yet journaled, each after the budget allows it.
    fn collect_round(&mut self, round: usize) -> Result<(), PipelineError> {
        let Some(agent) = self.plan.spec.agent.clone() else {
            return Ok(());
        };
        let budget = Budget::of(&self.plan.spec.search);
        let count = agent.count.get();
        for run in self.state.agent_runs_in(round)..count {
            let spent = Spent {
                candidates: self.state.candidates.len(),
                agent_runs: self.state.agent_runs_done,
                seconds: self.search_seconds(),
                cost: self.state.cost_spent,
            };
            if let Some(reason) = budget.exhausted(spent) {
                return self.record(Entry::SearchEnded { round, reason });
            }
            let left = budget.left(spent, round, self.rounds());
            self.stage(&format!(
                "agent run {}/{count} of round {round}/{}",
                run + 1,
                self.rounds()
            ));
            (self.on_event)(Event::Budget(left));
            self.agent_run(
                &agent,
                AgentRun {
                    round,
                    run: run + 1,
                },
            )?;
        }
        Ok(())
    }

    /// Checks and screens every candidate not yet screened: as fleet jobs, or here against the
    /// baseline, built once per session (`baseline`).
    fn check_and_screen(
        &mut self,
        fleet: Option<&FleetPlan>,
        baseline: &mut Option<Tree>,
    ) -> Result<(), PipelineError> {
        let mut todo = self.indices_with(Status::Collected);
        todo.extend(self.indices_with(Status::Checked));
        if todo.is_empty() {
            return Ok(());
        }
        if let Some(fleet) = fleet {
            // Each candidate's checks and pairs as one job, against a baseline of its node.
            todo.sort_unstable();
            return self.run_jobs(fleet, JobStage::Screening, todo);
        }
        let baseline = match baseline {
            Some(b) => b,
            None => baseline.insert(self.prepare_baseline()?),
        };
        for index in self.indices_with(Status::Collected) {
            self.check_candidate(index, baseline)?;
        }
        // Every check is done before the first timed run: nothing else builds meanwhile.
        let checked = self.indices_with(Status::Checked);
        self.screen(&checked, baseline)
    }
}
