//! The `--json` reporter: one line of the event stream (`report::events`) per event, a `final`
//! line last; human text goes to stderr, so stdout carries the stream alone.

use super::Reporter;
use crate::measure::schedule::RunEvent;
use crate::path::shown;
use crate::pipeline::event::{Event, StageOf};
use crate::report::events::{Body, CandidateName, Final, Source, Stream};

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

    fn event(&mut self, event: Event) {
        let stream = &mut self.stream;
        match event {
            Event::Started { run_id, run_dir } => {
                stream.run_id = Some(run_id);
                stream.emit(Body::Started {
                    run_dir: shown(&run_dir),
                });
            }
            Event::ConfirmationStarted {
                confirmation_id,
                run_dir,
            } => stream.emit(Body::ConfirmationStarted {
                confirmation_id,
                run_dir: shown(&run_dir),
            }),
            Event::Stage { name, of } => {
                match of {
                    StageOf::Current => {}
                    StageOf::Candidate(candidate) => stream.candidate = Some(candidate),
                    StageOf::Campaign => stream.candidate = None,
                }
                stream.new_stage();
                stream.emit(Body::Stage { name });
            }
            Event::Expect { runs } => stream.runs_expected(runs),
            Event::Scenario(name) => stream.scenario = Some(name),
            Event::Run(RunEvent {
                plan: Some(plan), ..
            }) => {
                stream.runs_adjust(super::planned_runs_delta(&plan));
                stream.emit(Body::PairsPlanned {
                    planned: plan.planned,
                    configured: plan.configured,
                    needed: plan.needed,
                    sigma: plan.sigma,
                    estimated_s: plan.estimated_s,
                    needed_s: plan.needed_s,
                });
            }
            Event::Run(run) => {
                let (done, total) = stream.run_done();
                stream.emit(Body::Run {
                    phase: run.phase,
                    arm: run.arm,
                    wall_s: run.wall_s,
                    done,
                    total,
                });
            }
            Event::Warning(message) => stream.emit(Body::Warning { message }),
            Event::Plan(outline) => stream.emit(Body::Plan(outline)),
            Event::Candidate {
                index,
                name,
                status,
                reason,
            } => {
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
            Event::Job { candidate, job } => self.emit_for(candidate, job.into()),
            Event::Budget(left) => stream.emit(Body::Budget(left)),
        }
    }

    /// The stream goes on to its `final` line.
    fn finish_progress(&mut self) {}

    fn finish(&mut self, outcome: Final) {
        self.stream.emit(Body::Final(outcome));
    }
}
