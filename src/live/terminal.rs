//! The terminal's reporter: the progress bars and their lines, human text on stdout. A
//! campaign's fleet jobs are tallied for the line under the bar.

use std::path::Path;

use super::Reporter;
use crate::evidence::summary::Status;
use crate::measure::schedule::{PairsPlanned, RunEvent};
use crate::report::events::{CandidateName, Final};
use crate::report::jobs::{JobObservation, JobTally};
use crate::report::outline::Outline;
use crate::report::progress::Progress;
use crate::report::terminal;
use crate::search::BudgetLeft;

/// Progress bars on stderr (hidden off a terminal), text on stdout.
pub struct TerminalReporter {
    progress: Progress,
    jobs: JobTally,
}

impl TerminalReporter {
    pub fn new() -> TerminalReporter {
        TerminalReporter {
            progress: Progress::new(),
            jobs: JobTally::default(),
        }
    }
}

impl Default for TerminalReporter {
    fn default() -> TerminalReporter {
        TerminalReporter::new()
    }
}

impl Reporter for TerminalReporter {
    fn say(&self, text: &str) {
        print!("{text}");
    }

    /// The bars name no run.
    fn set_run_id(&mut self, _id: &str) {}

    /// A lone confirmation's bars name no candidate.
    fn set_candidate(&mut self, _candidate: CandidateName) {}

    fn clear_candidate(&mut self) {
        self.progress.clear_candidate();
    }

    /// The run's folder is named with the outcome.
    fn started(&mut self, _run_id: &str, _run_dir: &Path) {}

    fn confirmation_started(&mut self, _confirmation_id: &str, _run_dir: &Path) {}

    fn stage(&mut self, name: &str, candidate: Option<CandidateName>) {
        self.progress.stage(name, candidate.map(|c| c.name));
    }

    fn expect_runs(&mut self, runs: usize) {
        self.progress.expect(runs);
    }

    fn scenario(&mut self, name: &str) {
        self.progress.scenario(name);
    }

    fn pairs_planned(&mut self, plan: &PairsPlanned) {
        self.progress.adjust(super::planned_runs_delta(plan));
        self.progress
            .line(&format!("evo: {}", terminal::pairs_planned_line(plan)));
    }

    fn run(&mut self, _event: &RunEvent) {
        self.progress.run();
    }

    fn warning(&mut self, message: &str) {
        self.progress.line(&format!("warning: {message}"));
    }

    fn plan(&mut self, outline: Outline) {
        for line in crate::report::outline::lines(&outline) {
            self.progress.line(&line);
        }
    }

    fn candidate_status(&mut self, index: usize, name: String, status: Status, reason: String) {
        self.progress.line(&format!(
            "candidate {index} ({name}): {} — {reason}",
            status.as_str()
        ));
    }

    fn job(&mut self, _candidate: Option<CandidateName>, job: JobObservation) {
        self.jobs.observe(&job);
        self.progress.detail(self.jobs.line());
    }

    fn budget(&mut self, left: &BudgetLeft) {
        self.progress.detail(Some(left.to_string()));
    }

    fn finish_progress(&mut self) {
        self.progress.finish();
    }

    fn finish(&mut self, _outcome: Final) {
        self.progress.finish();
    }
}
