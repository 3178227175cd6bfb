//! The `--json` event stream: one JSON object per line on stdout while a command runs, ending
//! with a `final` event that holds the verdict, the exit code and the paths of what was written.
//!
//! Every line has the same envelope (schema version, UTC timestamp, command, run id, candidate,
//! scenario) and an `event` tag naming its body, so a consumer can follow a campaign without
//! knowing evo's internals. `evo schema events` prints the JSON Schema of a line.

use schemars::JsonSchema;
use serde::Serialize;

use crate::measure::record::Arm;
use crate::measure::schedule::Phase;
use crate::report::jobs::{JobEnded, JobObservation, JobRestarted, JobStarted, JobSubmitted};
use crate::search::BudgetLeft;

/// The version of the line format; a change that can break a reader changes it.
pub const SCHEMA: &str = "evo-events/1";

/// The command that produces the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Bench,
    Confirm,
    Campaign,
}

/// One line of the stream.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Line {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// When evo emitted the line, RFC 3339 UTC with milliseconds.
    pub time: String,
    pub command: Source,
    /// The run this line belongs to (the campaign's run for every line of a campaign); null
    /// before the run directory exists.
    pub run_id: Option<String>,
    /// The candidate being worked on, when the line concerns one.
    pub candidate: Option<CandidateName>,
    /// The scenario being measured, when the line concerns one.
    pub scenario: Option<String>,
    #[serde(flatten)]
    pub body: Body,
}

/// A candidate: its 1-based index in a campaign (null for a lone `evo confirm`) and its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CandidateName {
    pub index: Option<usize>,
    pub name: String,
}

// The fleet jobs' records (docs/design.md §2.8) and the search's budget left are declared once
// where they are made (`report::jobs`, `search::budget`) and are their lines' bodies as they
// are. A job's record's doc comment describes its line in the schema; a `///` on its variant
// here would replace it.
/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Body {
    /// The run directory exists.
    Started {
        run_dir: String,
    },
    /// A confirmation inside a campaign started its own run directory.
    ConfirmationStarted {
        confirmation_id: String,
        run_dir: String,
    },
    /// A stage begins; the previous one has ended.
    Stage {
        name: String,
    },
    /// One timed run finished. `done` of `total` counts the stage's runs so far (the total can
    /// grow when the A/A runs plan more pairs).
    Run {
        phase: Phase,
        arm: Arm,
        wall_s: f64,
        done: usize,
        total: usize,
    },
    /// The comparison's pair count (a training scenario's or a holdout's), chosen from the A/A
    /// noise before its first pair.
    PairsPlanned {
        planned: usize,
        configured: usize,
        needed: usize,
        sigma: f64,
        estimated_s: f64,
        needed_s: f64,
    },
    /// A campaign's whole plan, from its spec alone, before its first build (also on
    /// `--resume`): the candidates, the stages and the minutes each may take (docs/design.md
    /// §2.3.1).
    Plan(crate::report::outline::Outline),
    /// A campaign candidate reached a status.
    Candidate {
        status: String,
        reason: String,
    },
    /// A campaign's agent run is about to start (docs/design.md §2.9): its round of `rounds`,
    /// and what is left of the search's budgets before it (null: no such limit).
    Budget(BudgetLeft),
    JobSubmitted(JobSubmitted),
    JobStarted(JobStarted),
    JobRestarted(JobRestarted),
    JobEnded(JobEnded),
    /// Something to see before trusting the outcome.
    Warning {
        message: String,
    },
    /// The last line: what the command concluded and where its evidence is.
    Final(Final),
}

impl From<JobObservation> for Body {
    /// A job observation is its line's body as it is.
    fn from(job: JobObservation) -> Body {
        match job {
            JobObservation::Submitted(job) => Body::JobSubmitted(job),
            JobObservation::Started(job) => Body::JobStarted(job),
            JobObservation::Restarted(job) => Body::JobRestarted(job),
            JobObservation::Ended(job) => Body::JobEnded(job),
        }
    }
}

/// The outcome of the command, as its exit code says it, with the files a reader wants next.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Final {
    /// `accepted`, `rejected` or `inconclusive` (`evo bench`: `accepted`, `not significant`,
    /// `regression` or `inconclusive`); null when the command stopped with an error.
    pub verdict: Option<String>,
    /// `tested`, `measured` or `rejected` (confirm, and a campaign's accepted candidate).
    pub tier: Option<String>,
    /// The process's exit code (after `--fail-on`).
    pub exit_code: i32,
    /// Why there is no verdict, when there is none: the error, then a `caused by: …` line for
    /// each cause it does not already say.
    pub error: Option<String>,
    pub run_dir: Option<String>,
    /// The signed receipt to verify (`evo receipt verify`).
    pub receipt: Option<String>,
    /// The PR text rendered from it.
    pub pr_body: Option<String>,
    /// `result.json` of a confirmation, `summary.json` of a campaign, the bench report file.
    pub result: Option<String>,
}

/// The JSON Schema of one line, for `evo schema events`.
pub fn schema() -> String {
    let schema = schemars::schema_for!(Line);
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}

/// Writes lines to stdout, one per event, flushed as they come.
pub struct Stream {
    command: Source,
    pub run_id: Option<String>,
    pub candidate: Option<CandidateName>,
    pub scenario: Option<String>,
    /// Runs of the current stage so far, and its expected total.
    done: usize,
    total: usize,
}

impl Stream {
    pub fn new(command: Source) -> Stream {
        Stream {
            command,
            run_id: None,
            candidate: None,
            scenario: None,
            done: 0,
            total: 0,
        }
    }

    /// A new stage: its runs are counted from zero, and no scenario is being measured yet.
    pub fn new_stage(&mut self) {
        self.scenario = None;
        self.done = 0;
        self.total = 0;
    }

    pub fn runs_expected(&mut self, runs: usize) {
        self.total = runs;
    }

    pub fn runs_adjust(&mut self, delta: isize) {
        self.total = (self.total as isize + delta).max(self.done as isize) as usize;
    }

    /// Counts one finished run; returns the stage's runs so far and its total.
    pub fn run_done(&mut self) -> (usize, usize) {
        self.done += 1;
        self.total = self.total.max(self.done);
        (self.done, self.total)
    }

    /// The line `body` makes now, in this stream's context.
    pub fn line(&self, body: Body) -> Line {
        Line {
            schema: SCHEMA.to_string(),
            time: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            command: self.command,
            run_id: self.run_id.clone(),
            candidate: self.candidate.clone(),
            scenario: self.scenario.clone(),
            body,
        }
    }

    pub fn emit(&self, body: Body) {
        use std::io::Write;
        let Ok(text) = serde_json::to_string(&self.line(body)) else {
            return;
        };
        let mut out = std::io::stdout().lock();
        // A reader that went away must not stop the measurement: the files hold everything.
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_flattens_its_body_under_the_envelope() {
        let mut stream = Stream::new(Source::Campaign);
        stream.run_id = Some("run-1".into());
        stream.candidate = Some(CandidateName {
            index: Some(3),
            name: "fused".into(),
        });
        let line = stream.line(Body::Stage {
            name: "screen".into(),
        });
        let v = serde_json::to_value(&line).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["event"], "stage");
        assert_eq!(v["name"], "screen");
        assert_eq!(v["command"], "campaign");
        assert_eq!(v["run_id"], "run-1");
        assert_eq!(v["candidate"]["index"], 3);
        assert_eq!(v["scenario"], serde_json::Value::Null);
        assert!(v["time"].as_str().unwrap().ends_with('Z'), "{v}");
    }

    #[test]
    fn the_final_line_carries_the_outcome_fields_at_the_top() {
        let stream = Stream::new(Source::Confirm);
        let line = stream.line(Body::Final(Final {
            verdict: Some("rejected".into()),
            exit_code: 3,
            ..Final::default()
        }));
        let v = serde_json::to_value(&line).unwrap();
        assert_eq!(v["event"], "final");
        assert_eq!(v["verdict"], "rejected");
        assert_eq!(v["exit_code"], 3);
        assert_eq!(v["receipt"], serde_json::Value::Null);
    }

    #[test]
    fn a_job_line_is_its_record_field_for_field_in_the_records_order() {
        use crate::report::jobs::{JobOutcome, JobStage};
        let ended = JobObservation::Ended(JobEnded {
            job_id: 12,
            stage: JobStage::Confirm,
            node: "n1".into(),
            state: "completed".into(),
            attempt: 2,
            requeues: 1,
            restarts: 0,
            outcome: JobOutcome::Done,
            reason: "signed".into(),
        });
        let line = Stream::new(Source::Campaign).line(ended.into());
        let text = serde_json::to_string(&line).unwrap();
        let body = text.split_once(r#""scenario":null,"#).unwrap().1;
        assert_eq!(
            body,
            r#""event":"job_ended","job_id":12,"stage":"confirm","node":"n1","state":"completed","attempt":2,"requeues":1,"restarts":0,"outcome":"done","reason":"signed"}"#
        );
    }

    #[test]
    fn a_budget_line_names_what_is_left_as_before() {
        let left = BudgetLeft {
            round: 2,
            rounds: 3,
            candidates: None,
            agent_runs: Some(4),
            minutes: Some(1.5),
            cost: None,
        };
        let line = Stream::new(Source::Campaign).line(Body::Budget(left));
        let text = serde_json::to_string(&line).unwrap();
        let body = text.split_once(r#""scenario":null,"#).unwrap().1;
        assert_eq!(
            body,
            r#""event":"budget","round":2,"rounds":3,"candidates_left":null,"agent_runs_left":4,"minutes_left":1.5,"cost_left":null}"#
        );
    }
}
