//! What a running command shows while it works: the pipelines' events turned into what a
//! [`Reporter`] reports, drawn as the terminal's progress bars ([`TerminalReporter`]) or written
//! as the `--json` event stream ([`JsonReporter`]: one line per event, a `final` line last).
//!
//! This sits between the pipelines (`bench`, `confirm`, `campaign`), which only emit events,
//! and the renderers in `report` (`progress`, `events`), which know nothing of the pipelines:
//! [`Live`] reads a pipeline's events, the reporter decides how each one looks.

mod json;
mod terminal;

use std::path::Path;

use crate::campaign::{CampaignEvent, CandidateRef};
use crate::confirm::ConfirmEvent;
use crate::evidence::summary::Status;
use crate::failure::Failure;
use crate::measure::schedule::{PairsPlanned, RunEvent};
use crate::report::events::{CandidateName, Final, Source};
use crate::report::jobs::JobObservation;
use crate::report::outline::Outline;
use crate::search::BudgetLeft;

pub use json::JsonReporter;
pub use terminal::TerminalReporter;

/// What a command reports while it works, and how it ends: each method one kind of event, which
/// an implementation shows its own way.
pub trait Reporter {
    /// Text for the reader, apart from the events (a table, where a file went).
    fn say(&self, text: &str);
    /// The run id the following events carry (the run's folder name, or a bench's start).
    fn set_run_id(&mut self, id: &str);
    /// The candidate the following events concern, until another is named.
    fn set_candidate(&mut self, candidate: CandidateName);
    /// No candidate from now on: a stage of the whole campaign follows.
    fn clear_candidate(&mut self);
    /// The run's folder was made (`run_id` names it).
    fn started(&mut self, run_id: &str, run_dir: &Path);
    /// A campaign's confirmation of its current candidate started, in its own folder.
    fn confirmation_started(&mut self, confirmation_id: &str, run_dir: &Path);
    /// A stage begins; `candidate` replaces the current one when given.
    fn stage(&mut self, name: &str, candidate: Option<CandidateName>);
    /// The current stage will make `runs` timed runs.
    fn expect_runs(&mut self, runs: usize);
    /// The scenario the following runs measure.
    fn scenario(&mut self, name: &str);
    /// The comparison's pair count was chosen: the stage's expected runs change by
    /// [`planned_runs_delta`].
    fn pairs_planned(&mut self, plan: &PairsPlanned);
    /// One timed run finished.
    fn run(&mut self, event: &RunEvent);
    /// Something to see before trusting the outcome.
    fn warning(&mut self, message: &str);
    /// A campaign's outline, before anything runs.
    fn plan(&mut self, outline: Outline);
    /// A candidate reached `status` (`reason`: the first line of why).
    fn candidate_status(&mut self, index: usize, name: String, status: Status, reason: String);
    /// What the coordinator saw of a fleet job of `candidate`.
    fn job(&mut self, candidate: Option<CandidateName>, job: JobObservation);
    /// What is left of the search's budgets before an agent run.
    fn budget(&mut self, left: &BudgetLeft);
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

fn candidate_name(c: CandidateRef) -> CandidateName {
    CandidateName {
        index: Some(c.index),
        name: c.name,
    }
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

    /// A stage begins; `candidate` replaces the current one when given.
    pub fn stage(&mut self, name: &str, candidate: Option<CandidateName>) {
        self.reporter.stage(name, candidate);
    }

    /// The current stage will make `runs` timed runs.
    pub fn expect_runs(&mut self, runs: usize) {
        self.reporter.expect_runs(runs);
    }

    /// One run finished, or (with a plan) the comparison's pair count was chosen.
    pub fn run(&mut self, event: RunEvent) {
        match &event.plan {
            Some(plan) => self.reporter.pairs_planned(plan),
            None => self.reporter.run(&event),
        }
    }

    /// An event of `evo confirm`'s pipeline; `nested` inside a campaign, whose run id and
    /// candidate stay.
    pub fn confirm(&mut self, event: ConfirmEvent, nested: bool) {
        let r = &mut self.reporter;
        match event {
            ConfirmEvent::Stage(name) if nested => r.stage(&format!("confirm: {name}"), None),
            ConfirmEvent::Stage(name) => r.stage(&name, None),
            ConfirmEvent::Started { run_id, run_dir } if nested => {
                r.confirmation_started(&run_id, &run_dir)
            }
            ConfirmEvent::Started { run_id, run_dir } => r.started(&run_id, &run_dir),
            ConfirmEvent::Expect { runs } => r.expect_runs(runs),
            ConfirmEvent::Scenario(name) => r.scenario(&name),
            ConfirmEvent::Run(run) => self.run(run),
            ConfirmEvent::Warning(message) => r.warning(&message),
        }
    }

    /// An event of `evo campaign run`'s pipeline.
    pub fn campaign(&mut self, event: CampaignEvent) {
        let r = &mut self.reporter;
        match event {
            CampaignEvent::Started { run_id, run_dir } => r.started(&run_id, &run_dir),
            CampaignEvent::Stage { name, candidate } => {
                if candidate.is_none() {
                    // A stage of the whole campaign: no candidate until one is named again.
                    r.clear_candidate();
                }
                r.stage(&name, candidate.map(candidate_name));
            }
            CampaignEvent::Expect { runs } => r.expect_runs(runs),
            CampaignEvent::Plan(outline) => r.plan(outline),
            CampaignEvent::Candidate {
                index,
                name,
                status,
                reason,
            } => r.candidate_status(index, name, status, reason),
            CampaignEvent::Run(run) => self.run(run),
            CampaignEvent::Confirm(e) => self.confirm(e, true),
            CampaignEvent::Warning { message } => r.warning(&message),
            CampaignEvent::Job { candidate, job } => r.job(candidate.map(candidate_name), job),
            CampaignEvent::Budget(left) => r.budget(&left),
        }
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
        fn clear_candidate(&mut self) {
            self.tell("no candidate".into());
        }
        fn started(&mut self, run_id: &str, run_dir: &Path) {
            self.tell(format!("started {run_id} {}", run_dir.display()));
        }
        fn confirmation_started(&mut self, id: &str, run_dir: &Path) {
            self.tell(format!("confirmation {id} {}", run_dir.display()));
        }
        fn stage(&mut self, name: &str, c: Option<CandidateName>) {
            self.tell(format!("stage {name} {:?}", c.map(|c| c.name)));
        }
        fn expect_runs(&mut self, runs: usize) {
            self.tell(format!("expect {runs}"));
        }
        fn scenario(&mut self, name: &str) {
            self.tell(format!("scenario {name}"));
        }
        fn pairs_planned(&mut self, plan: &PairsPlanned) {
            self.tell(format!("planned {}", planned_runs_delta(plan)));
        }
        fn run(&mut self, event: &RunEvent) {
            self.tell(format!("run {:?}", event.arm));
        }
        fn warning(&mut self, message: &str) {
            self.tell(format!("warning {message}"));
        }
        fn plan(&mut self, _outline: Outline) {
            self.tell("plan".into());
        }
        fn candidate_status(&mut self, index: usize, name: String, status: Status, _: String) {
            self.tell(format!("status {index} {name} {}", status.as_str()));
        }
        fn job(&mut self, _: Option<CandidateName>, _: JobObservation) {
            self.tell("job".into());
        }
        fn budget(&mut self, _: &BudgetLeft) {
            self.tell("budget".into());
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
        let started = || ConfirmEvent::Started {
            run_id: "c1".into(),
            run_dir: PathBuf::from("/r/c1"),
        };
        live.confirm(ConfirmEvent::Stage("build".into()), false);
        live.confirm(started(), false);
        live.campaign(CampaignEvent::Confirm(ConfirmEvent::Stage("build".into())));
        live.campaign(CampaignEvent::Confirm(started()));
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
        let candidate = CandidateRef {
            index: 2,
            name: "fast".into(),
        };
        live.campaign(CampaignEvent::Stage {
            name: "check".into(),
            candidate: Some(candidate),
        });
        live.campaign(CampaignEvent::Stage {
            name: "baseline".into(),
            candidate: None,
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
        live.campaign(CampaignEvent::Run(run_event(None)));
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
