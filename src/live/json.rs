//! The `--json` reporter: one line of the event stream (`report::events`) per event, a `final`
//! line last; human text goes to stderr, so stdout carries the stream alone.

use std::path::Path;

use super::Reporter;
use crate::evidence::summary::Status;
use crate::measure::schedule::{PairsPlanned, RunEvent};
use crate::path::shown;
use crate::report::events::{Body, CandidateName, Final, Source, Stream};
use crate::report::jobs::JobObservation;
use crate::report::outline::Outline;
use crate::search::BudgetLeft;

/// The event stream of one command on stdout.
pub struct JsonReporter {
    stream: Stream,
}

impl JsonReporter {
    pub fn new(command: Source) -> JsonReporter {
        JsonReporter {
            stream: Stream::new(command),
        }
    }

    /// Emits `body` as concerning `candidate`, then goes back to the current candidate.
    fn emit_for(&mut self, candidate: Option<CandidateName>, body: Body) {
        let before = std::mem::replace(&mut self.stream.candidate, candidate);
        self.stream.emit(body);
        self.stream.candidate = before;
    }
}

/// A value's name as its JSON says it (`differential_mismatch`), for the stream.
fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

impl Reporter for JsonReporter {
    fn say(&self, text: &str) {
        eprint!("{text}");
    }

    fn set_run_id(&mut self, id: &str) {
        self.stream.run_id = Some(id.to_string());
    }

    fn set_candidate(&mut self, candidate: CandidateName) {
        self.stream.candidate = Some(candidate);
    }

    fn clear_candidate(&mut self) {
        self.stream.candidate = None;
    }

    fn started(&mut self, run_id: &str, run_dir: &Path) {
        self.stream.run_id = Some(run_id.to_string());
        self.stream.emit(Body::Started {
            run_dir: shown(run_dir),
        });
    }

    fn confirmation_started(&mut self, confirmation_id: &str, run_dir: &Path) {
        self.stream.emit(Body::ConfirmationStarted {
            confirmation_id: confirmation_id.to_string(),
            run_dir: shown(run_dir),
        });
    }

    fn stage(&mut self, name: &str, candidate: Option<CandidateName>) {
        if candidate.is_some() {
            self.stream.candidate = candidate;
        }
        self.stream.new_stage();
        self.stream.emit(Body::Stage {
            name: name.to_string(),
        });
    }

    fn expect_runs(&mut self, runs: usize) {
        self.stream.runs_expected(runs);
    }

    fn scenario(&mut self, name: &str) {
        self.stream.scenario = Some(name.to_string());
    }

    fn pairs_planned(&mut self, plan: &PairsPlanned) {
        self.stream.runs_adjust(super::planned_runs_delta(plan));
        self.stream.emit(Body::PairsPlanned {
            planned: plan.planned,
            configured: plan.configured,
            needed: plan.needed,
            sigma: plan.sigma,
            estimated_s: plan.estimated_s,
            needed_s: plan.needed_s,
        });
    }

    fn run(&mut self, event: &RunEvent) {
        let (done, total) = self.stream.run_done();
        self.stream.emit(Body::Run {
            phase: event.phase,
            arm: event.arm,
            wall_s: event.wall_s,
            done,
            total,
        });
    }

    fn warning(&mut self, message: &str) {
        self.stream.emit(Body::Warning {
            message: message.to_string(),
        });
    }

    fn plan(&mut self, outline: Outline) {
        self.stream.emit(Body::Plan(outline));
    }

    fn candidate_status(&mut self, index: usize, name: String, status: Status, reason: String) {
        let candidate = CandidateName {
            index: Some(index),
            name,
        };
        let body = Body::Candidate {
            status: wire_name(&status),
            reason,
        };
        self.emit_for(Some(candidate), body);
    }

    fn job(&mut self, candidate: Option<CandidateName>, job: JobObservation) {
        self.emit_for(candidate, job.into());
    }

    fn budget(&mut self, left: &BudgetLeft) {
        self.stream.emit(Body::Budget(left.clone()));
    }

    /// The stream goes on to its `final` line.
    fn finish_progress(&mut self) {}

    fn finish(&mut self, outcome: Final) {
        self.stream.emit(Body::Final(outcome));
    }
}
