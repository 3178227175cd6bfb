//! What a running command shows while it works: the pipelines' one event type
//! (`pipeline::event::Event`), which each [`Reporter`] renders: drawn as the terminal's progress
//! bars ([`TerminalReporter`]) or written as the `--json` event stream ([`JsonReporter`]: one
//! line per event, a `final` line last).
//!
//! This sits between the pipelines (`bench`, `confirm`, `campaign`), which only emit events,
//! and the renderers in `report` (`progress`, `events`), which know nothing of the pipelines:
//! [`Live`] hands a pipeline's events on, the reporter decides how each one looks.

mod json;
mod terminal;

use crate::failure::Failure;
use crate::measure::schedule::{PairsPlanned, RunEvent};
use crate::pipeline::event::Event;
use crate::report::events::{CandidateName, Final, Source};

pub use json::JsonReporter;
pub use terminal::TerminalReporter;

/// What a command reports while it works, and how it ends: the context the following events
/// carry, the events, and the outcome.
pub trait Reporter {
    /// Text for the reader, apart from the events (a table, where a file went).
    fn say(&self, text: &str);
    /// The run id the following events carry (the run's folder name, or a bench's start).
    fn set_run_id(&mut self, id: &str);
    /// The candidate the following events concern, until another is named.
    fn set_candidate(&mut self, candidate: CandidateName);
    /// One event, shown this reporter's way.
    fn event(&mut self, event: Event);
    /// The work is done: clear what is drawn before the outcome is printed.
    fn finish_progress(&mut self);
    /// The command's outcome, last.
    fn finish(&mut self, outcome: Final);
}

/// How many timed runs a pair plan adds to (or takes from) the stage's expected runs: two a
/// pair over the configured count the progress was counting on.
pub fn planned_runs_delta(plan: &PairsPlanned) -> isize {
    2 * (plan.planned as isize - plan.configured as isize)
}

/// The reporter of one command, fed its pipeline's events.
pub struct Live {
    reporter: Box<dyn Reporter>,
}

impl Live {
    /// The `--json` stream when `json`, else the terminal's bars.
    pub fn new(json: bool, command: Source) -> Live {
        match json {
            true => Live::with(Box::new(JsonReporter::new(command))),
            false => Live::with(Box::new(TerminalReporter::new())),
        }
    }

    /// Events reported by `reporter`.
    pub fn with(reporter: Box<dyn Reporter>) -> Live {
        Live { reporter }
    }

    /// Text for the reader: on stdout, or on stderr when stdout carries the `--json` stream.
    pub fn say(&self, text: &str) {
        self.reporter.say(text);
    }

    /// The run id every following event carries (a run without a run folder).
    pub fn set_run_id(&mut self, id: &str) {
        self.reporter.set_run_id(id);
    }

    /// The candidate every following event concerns (a lone `evo confirm`'s patch).
    pub fn set_candidate(&mut self, name: &str) {
        self.reporter.set_candidate(CandidateName {
            index: None,
            name: name.to_string(),
        });
    }

    /// A stage of the current candidate begins.
    pub fn stage(&mut self, name: &str) {
        self.reporter.event(Event::stage(name));
    }

    /// The current stage will make `runs` timed runs.
    pub fn expect_runs(&mut self, runs: usize) {
        self.reporter.event(Event::Expect { runs });
    }

    /// One run finished, or (with a plan) the comparison's pair count was chosen.
    pub fn run(&mut self, event: RunEvent) {
        self.reporter.event(Event::Run(event));
    }

    /// An event of a pipeline (`evo confirm`'s, or a campaign's and its confirmations').
    pub fn event(&mut self, event: Event) {
        self.reporter.event(event);
    }

    /// Clears the bars (before the outcome is printed); the stream goes on to its `final` line.
    pub fn finish_progress(&mut self) {
        self.reporter.finish_progress();
    }

    /// Clears the bars, or writes the `final` line.
    pub fn finish(&mut self, outcome: Final) {
        self.reporter.finish(outcome);
    }

    /// Runs `inner`, then closes the reporter with its outcome (the `final` line of `--json`),
    /// also when `inner` fails with an error of evo's own; returns the outcome's exit code.
    pub fn reported(
        mut self,
        inner: impl FnOnce(&mut Live) -> Result<Final, Failure>,
    ) -> Result<i32, Failure> {
        match inner(&mut self) {
            Ok(outcome) => {
                let code = outcome.exit_code;
                self.finish(outcome);
                Ok(code)
            }
            Err(failure) => {
                self.finish(Final {
                    exit_code: failure.code,
                    error: Some(failure.message()),
                    ..Final::default()
                });
                Err(failure)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::path::PathBuf;
    use std::rc::Rc;

    use super::*;
    use crate::measure::record::Arm;
    use crate::measure::schedule::Phase;
    use crate::pipeline::event::StageOf;

    /// A reporter that writes down what it was told, one line an event.
    #[derive(Default)]
    struct Told(Rc<RefCell<Vec<String>>>);

    impl Told {
        fn tell(&self, what: String) {
            self.0.borrow_mut().push(what);
        }
    }

    impl Reporter for Told {
        fn say(&self, text: &str) {
            self.tell(format!("say {text}"));
        }
        fn set_run_id(&mut self, id: &str) {
            self.tell(format!("run id {id}"));
        }
        fn set_candidate(&mut self, c: CandidateName) {
            self.tell(format!("candidate {:?} {}", c.index, c.name));
        }
        fn event(&mut self, event: Event) {
            self.tell(match event {
                Event::Started { run_id, run_dir } => {
                    format!("started {run_id} {}", run_dir.display())
                }
                Event::ConfirmationStarted {
                    confirmation_id,
                    run_dir,
                } => format!("confirmation {confirmation_id} {}", run_dir.display()),
                Event::Stage { name, of } => {
                    let candidate = match of {
                        StageOf::Current => None,
                        StageOf::Candidate(c) => Some(c.name),
                        StageOf::Campaign => {
                            self.tell("no candidate".into());
                            None
                        }
                    };
                    format!("stage {name} {candidate:?}")
                }
                Event::Expect { runs } => format!("expect {runs}"),
                Event::Scenario(name) => format!("scenario {name}"),
                Event::Run(RunEvent {
                    plan: Some(plan), ..
                }) => format!("planned {}", planned_runs_delta(&plan)),
                Event::Run(run) => format!("run {:?}", run.arm),
                Event::Warning(message) => format!("warning {message}"),
                Event::Plan(_) => "plan".into(),
                Event::Candidate {
                    index,
                    name,
                    status,
                    ..
                } => format!("status {index} {name} {}", status.as_str()),
                Event::Job { .. } => "job".into(),
                Event::Budget(_) => "budget".into(),
            });
        }
        fn finish_progress(&mut self) {
            self.tell("finish progress".into());
        }
        fn finish(&mut self, outcome: Final) {
            self.tell(format!("final {} {:?}", outcome.exit_code, outcome.error));
        }
    }

    fn recorded() -> (Live, Rc<RefCell<Vec<String>>>) {
        let told = Told::default();
        let lines = told.0.clone();
        (Live::with(Box::new(told)), lines)
    }

    fn run_event(plan: Option<PairsPlanned>) -> RunEvent {
        RunEvent {
            phase: Phase::Pairs,
            done: 0,
            total: 4,
            arm: Arm::Candidate,
            wall_s: 0.5,
            plan,
        }
    }

    #[test]
    fn a_confirmation_inside_a_campaign_keeps_the_campaigns_run_and_names_its_stages() {
        let (mut live, told) = recorded();
        let started = || Event::Started {
            run_id: "c1".into(),
            run_dir: PathBuf::from("/r/c1"),
        };
        live.event(Event::stage("build"));
        live.event(started());
        live.event(Event::stage("build").in_campaign());
        live.event(started().in_campaign());
        assert_eq!(
            *told.borrow(),
            [
                "stage build None",
                "started c1 /r/c1",
                "stage confirm: build None",
                "confirmation c1 /r/c1",
            ]
        );
    }

    #[test]
    fn a_stage_of_the_whole_campaign_clears_the_candidate_and_a_plan_is_no_run() {
        let (mut live, told) = recorded();
        let candidate = CandidateName {
            index: Some(2),
            name: "fast".into(),
        };
        live.event(Event::Stage {
            name: "check".into(),
            of: StageOf::Candidate(candidate),
        });
        live.event(Event::Stage {
            name: "baseline".into(),
            of: StageOf::Campaign,
        });
        let plan = PairsPlanned {
            planned: 30,
            configured: 12,
            needed: 28,
            sigma: 0.01,
            estimated_s: 60.0,
            needed_s: 55.0,
            resolves_gain: None,
            min_effect: None,
            ranges: None,
        };
        live.run(run_event(Some(plan)));
        live.event(Event::Run(run_event(None)));
        assert_eq!(
            *told.borrow(),
            [
                "stage check Some(\"fast\")",
                "no candidate",
                "stage baseline None",
                "planned 36",
                "run Candidate",
            ]
        );
    }

    #[test]
    fn the_outcome_is_reported_last_also_after_an_error() {
        let (live, told) = recorded();
        let code = live.reported(|live| {
            live.say("table\n");
            Ok(Final {
                exit_code: 3,
                ..Final::default()
            })
        });
        assert_eq!(code.unwrap(), 3);
        assert_eq!(*told.borrow(), ["say table\n", "final 3 None"]);

        let (live, told) = recorded();
        let failure = live.reported(|_| Err(Failure::usage("no such campaign")));
        let code = failure.unwrap_err().code;
        assert_eq!(
            *told.borrow(),
            [format!("final {code} Some(\"no such campaign\")")]
        );
    }
}
