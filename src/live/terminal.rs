//! The terminal's reporter: the progress bars and their lines, human text on stdout. A
//! campaign's fleet jobs are tallied for the line under the bar.

use super::Reporter;
use crate::measure::schedule::RunEvent;
use crate::pipeline::event::{Event, StageOf};
use crate::report::events::{CandidateName, Final};
use crate::report::jobs::JobTally;
use crate::report::progress::Progress;
use crate::report::terminal;

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

    fn event(&mut self, event: Event) {
        let progress = &mut self.progress;
        match event {
            // The run's folder is named with the outcome.
            Event::Started { .. } | Event::ConfirmationStarted { .. } => {}
            Event::Stage { name, of } => {
                let candidate = match of {
                    StageOf::Current => None,
                    StageOf::Candidate(c) => Some(c.name),
                    StageOf::Campaign => {
                        progress.clear_candidate();
                        None
                    }
                };
                progress.stage(&name, candidate);
            }
            Event::Expect { runs } => progress.expect(runs),
            Event::Scenario(name) => progress.scenario(&name),
            Event::Run(RunEvent {
                plan: Some(plan), ..
            }) => {
                progress.adjust(super::planned_runs_delta(&plan));
                progress.line(&format!("evo: {}", terminal::pairs_planned_line(&plan)));
            }
            Event::Run(_) => progress.run(),
            Event::Warning(message) => progress.line(&format!("warning: {message}")),
            Event::Plan(outline) => {
                for line in crate::report::outline::lines(&outline) {
                    progress.line(&line);
                }
            }
            Event::Candidate {
                index,
                name,
                status,
                reason,
            } => progress.line(&format!(
                "candidate {index} ({name}): {} — {reason}",
                status.as_str()
            )),
            Event::Job { job, .. } => {
                self.jobs.observe(&job);
                progress.detail(self.jobs.line());
            }
            Event::Budget(left) => progress.detail(Some(left.to_string())),
        }
    }

    fn finish_progress(&mut self) {
        self.progress.finish();
    }

    fn finish(&mut self, _outcome: Final) {
        self.progress.finish();
    }
}
