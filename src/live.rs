//! What a running command shows while it works: the pipelines' events turned into the terminal's
//! progress bars or the `--json` event stream (one line per event, a `final` line last).
//!
//! This sits between the pipelines (`bench`, `confirm`, `campaign`), which only emit events,
//! and the reporters in `report` (`progress`, `events`), which know nothing of the pipelines.

use crate::campaign::{CampaignEvent, CandidateRef};
use crate::confirm::ConfirmEvent;
use crate::failure::Failure;
use crate::measure::schedule::RunEvent;
use crate::path::shown;
use crate::report::events::{Body, CandidateName, Final, Source, Stream};
use crate::report::jobs::{JobObservation, JobTally};
use crate::report::progress::Progress;
use crate::report::terminal;

/// The reporter of one command. On the terminal, a campaign's fleet jobs are tallied for the
/// line under the bar.
pub enum Live {
    Terminal(Progress, JobTally),
    Json(Stream),
}

fn candidate_name(c: CandidateRef) -> CandidateName {
    CandidateName {
        index: Some(c.index),
        name: c.name,
    }
}

/// A value's name as its JSON says it (`differential_mismatch`), for the stream.
fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

/// A job observation as a line of the stream.
fn job_body(job: JobObservation) -> Body {
    match job {
        JobObservation::Submitted {
            job_id,
            stage,
            attempt,
            reattached,
        } => Body::JobSubmitted {
            job_id,
            stage,
            attempt,
            reattached,
        },
        JobObservation::Started {
            job_id,
            stage,
            node,
        } => Body::JobStarted {
            job_id,
            stage,
            node,
        },
        JobObservation::Restarted {
            job_id,
            stage,
            restarts,
        } => Body::JobRestarted {
            job_id,
            stage,
            restarts,
        },
        JobObservation::Ended {
            job_id,
            stage,
            node,
            state,
            attempt,
            requeues,
            restarts,
            outcome,
            reason,
        } => Body::JobEnded {
            job_id,
            stage,
            node,
            state,
            attempt,
            requeues,
            restarts,
            outcome,
            reason,
        },
    }
}

/// What is left of the search's budgets before an agent run, as a line of the stream.
pub fn budget_body(left: &crate::search::BudgetLeft) -> Body {
    Body::Budget {
        round: left.round,
        rounds: left.rounds,
        candidates_left: left.candidates,
        agent_runs_left: left.agent_runs,
        minutes_left: left.minutes,
        cost_left: left.cost,
    }
}

impl Live {
    /// The `--json` stream when `json`, else the terminal's bars.
    pub fn new(json: bool, command: Source) -> Live {
        if json {
            Live::Json(Stream::new(command))
        } else {
            Live::Terminal(Progress::new(), JobTally::default())
        }
    }

    /// Text for the reader: on stdout, or on stderr when stdout carries the `--json` stream.
    pub fn say(&self, text: &str) {
        match self {
            Live::Terminal(..) => print!("{text}"),
            Live::Json(_) => eprint!("{text}"),
        }
    }

    /// The run id every following line of the stream carries (a run without a run folder).
    pub fn set_run_id(&mut self, id: &str) {
        match self {
            Live::Terminal(..) => {}
            Live::Json(s) => s.run_id = Some(id.to_string()),
        }
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

    /// The candidate every following event concerns (a lone `evo confirm`'s patch).
    pub fn set_candidate(&mut self, name: &str) {
        let name = CandidateName {
            index: None,
            name: name.to_string(),
        };
        match self {
            Live::Terminal(..) => {}
            Live::Json(s) => s.candidate = Some(name),
        }
    }

    /// A stage begins; `candidate` replaces the current one when given.
    pub fn stage(&mut self, name: &str, candidate: Option<CandidateName>) {
        match self {
            Live::Terminal(p, _) => {
                let label = candidate.as_ref().map(|c| c.name.clone());
                p.stage(name, label);
            }
            Live::Json(s) => {
                if candidate.is_some() {
                    s.candidate = candidate;
                }
                s.new_stage();
                s.emit(Body::Stage {
                    name: name.to_string(),
                });
            }
        }
    }

    /// The current stage will make `runs` timed runs.
    pub fn expect_runs(&mut self, runs: usize) {
        match self {
            Live::Terminal(p, _) => p.expect(runs),
            Live::Json(s) => s.runs_expected(runs),
        }
    }

    fn scenario(&mut self, name: &str) {
        match self {
            Live::Terminal(p, _) => p.scenario(name),
            Live::Json(s) => s.scenario = Some(name.to_string()),
        }
    }

    /// One run finished, or (with a plan) the comparison's pair count was chosen.
    pub fn run(&mut self, event: RunEvent) {
        if let Some(plan) = event.plan {
            let delta = 2 * (plan.planned as isize - plan.configured as isize);
            match self {
                Live::Terminal(p, _) => {
                    p.adjust(delta);
                    p.line(&format!("evo: {}", terminal::pairs_planned_line(&plan)));
                }
                Live::Json(s) => {
                    s.runs_adjust(delta);
                    s.emit(Body::PairsPlanned {
                        planned: plan.planned,
                        configured: plan.configured,
                        needed: plan.needed,
                        sigma: plan.sigma,
                        estimated_s: plan.estimated_s,
                        needed_s: plan.needed_s,
                    });
                }
            }
            return;
        }
        match self {
            Live::Terminal(p, _) => p.run(),
            Live::Json(s) => {
                let (done, total) = s.run_done();
                s.emit(Body::Run {
                    phase: event.phase,
                    arm: event.arm,
                    wall_s: event.wall_s,
                    done,
                    total,
                });
            }
        }
    }

    /// Something to see before trusting the outcome.
    pub fn warning(&mut self, message: &str) {
        match self {
            Live::Terminal(p, _) => p.line(&format!("warning: {message}")),
            Live::Json(s) => s.emit(Body::Warning {
                message: message.to_string(),
            }),
        }
    }

    /// An event of `evo confirm`'s pipeline; `nested` inside a campaign, whose run id and
    /// candidate stay.
    pub fn confirm(&mut self, event: ConfirmEvent, nested: bool) {
        match event {
            ConfirmEvent::Stage(name) if nested => self.stage(&format!("confirm: {name}"), None),
            ConfirmEvent::Stage(name) => self.stage(&name, None),
            ConfirmEvent::Started { run_id, run_dir } => match self {
                Live::Terminal(..) => {}
                Live::Json(s) if nested => s.emit(Body::ConfirmationStarted {
                    confirmation_id: run_id,
                    run_dir: shown(&run_dir),
                }),
                Live::Json(s) => {
                    s.run_id = Some(run_id);
                    s.emit(Body::Started {
                        run_dir: shown(&run_dir),
                    });
                }
            },
            ConfirmEvent::Expect { runs } => self.expect_runs(runs),
            ConfirmEvent::Scenario(name) => self.scenario(&name),
            ConfirmEvent::Run(run) => self.run(run),
            ConfirmEvent::Warning(message) => self.warning(&message),
        }
    }

    /// An event of `evo campaign run`'s pipeline.
    pub fn campaign(&mut self, event: CampaignEvent) {
        match event {
            CampaignEvent::Started { run_id, run_dir } => match self {
                Live::Terminal(..) => {}
                Live::Json(s) => {
                    s.run_id = Some(run_id);
                    s.emit(Body::Started {
                        run_dir: shown(&run_dir),
                    });
                }
            },
            CampaignEvent::Stage { name, candidate } => {
                if candidate.is_none() {
                    // A stage of the whole campaign: no candidate until one is named again.
                    match self {
                        Live::Terminal(p, _) => p.clear_candidate(),
                        Live::Json(s) => s.candidate = None,
                    }
                }
                self.stage(&name, candidate.map(candidate_name));
            }
            CampaignEvent::Expect { runs } => self.expect_runs(runs),
            CampaignEvent::Plan(outline) => match self {
                Live::Terminal(p, _) => {
                    for line in crate::report::outline::lines(&outline) {
                        p.line(&line);
                    }
                }
                Live::Json(s) => s.emit(Body::Plan(outline)),
            },
            CampaignEvent::Candidate {
                index,
                name,
                status,
                reason,
            } => match self {
                Live::Terminal(p, _) => p.line(&format!(
                    "candidate {index} ({name}): {} — {reason}",
                    status.as_str()
                )),
                Live::Json(s) => {
                    let before = s.candidate.replace(CandidateName {
                        index: Some(index),
                        name,
                    });
                    s.emit(Body::Candidate {
                        status: wire_name(&status),
                        reason,
                    });
                    s.candidate = before;
                }
            },
            CampaignEvent::Run(run) => self.run(run),
            CampaignEvent::Confirm(e) => self.confirm(e, true),
            CampaignEvent::Warning { message } => self.warning(&message),
            CampaignEvent::Job { candidate, job } => self.job(candidate.map(candidate_name), job),
            CampaignEvent::Budget(left) => match self {
                Live::Terminal(p, _) => p.detail(Some(left.to_string())),
                Live::Json(s) => s.emit(budget_body(&left)),
            },
        }
    }

    /// What the coordinator saw of a fleet job of `candidate`.
    fn job(&mut self, candidate: Option<CandidateName>, job: JobObservation) {
        match self {
            Live::Terminal(p, tally) => {
                tally.observe(&job);
                p.detail(tally.line());
            }
            Live::Json(s) => {
                let before = std::mem::replace(&mut s.candidate, candidate);
                s.emit(job_body(job));
                s.candidate = before;
            }
        }
    }

    /// Clears the bars (before the outcome is printed); the stream goes on to its `final` line.
    pub fn finish_progress(&mut self) {
        if let Live::Terminal(p, _) = self {
            p.finish();
        }
    }

    /// Clears the bars, or writes the `final` line.
    pub fn finish(&mut self, outcome: Final) {
        match self {
            Live::Terminal(p, _) => p.finish(),
            Live::Json(s) => s.emit(Body::Final(outcome)),
        }
    }
}
