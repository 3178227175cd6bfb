//! What the pipelines report while they work: one event type that `evo confirm`, a campaign and
//! the confirmations inside it emit, and that every reporter renders (`live`: the terminal's
//! bars, the `--json` stream). The pipelines never print.

use std::path::PathBuf;

use crate::evidence::summary::Status;
use crate::measure::schedule::RunEvent;
use crate::report::events::CandidateName;
use crate::report::jobs::JobObservation;
use crate::report::outline::Outline;
use crate::search::BudgetLeft;

/// One thing a pipeline did or is about to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The run directory exists (new or resumed); everything after belongs to this run.
    Started { run_id: String, run_dir: PathBuf },
    /// A campaign's confirmation of its current candidate started its own run directory.
    ConfirmationStarted {
        confirmation_id: String,
        run_dir: PathBuf,
    },
    /// A campaign's whole plan, from the spec alone, before the first build (new or resumed run).
    Plan(Outline),
    /// A stage begins (and the previous one has ended).
    Stage { name: String, of: StageOf },
    /// How many runs the current stage will make, as far as is known at its start (a pair plan
    /// announced later may change it).
    Expect { runs: usize },
    /// The runs that follow measure this scenario.
    Scenario(String),
    /// One timed run finished, or (with a plan) the comparison's pair count was chosen.
    Run(RunEvent),
    /// A campaign candidate reached a status (`reason`: the first line of why).
    Candidate {
        index: usize,
        name: String,
        status: Status,
        reason: String,
    },
    /// Something the user should look at that is no verdict (a confirmation also keeps it in
    /// `result.warnings`).
    Warning(String),
    /// A campaign's agent run is about to start: its round and what is left of the search's
    /// budgets.
    Budget(BudgetLeft),
    /// What the coordinator saw of one of the candidate's fleet jobs (docs/design.md §2.8).
    Job {
        candidate: Option<CandidateName>,
        job: JobObservation,
    },
}

/// Whose a stage is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageOf {
    /// The candidate the events already concern (a confirmation's stages).
    Current,
    /// This candidate of a campaign, from now on.
    Candidate(CandidateName),
    /// The whole campaign: no candidate until one is named again.
    Campaign,
}

impl Event {
    /// A stage of the candidate the events already concern.
    pub fn stage(name: impl Into<String>) -> Event {
        Event::Stage {
            name: name.into(),
            of: StageOf::Current,
        }
    }

    /// A confirmation's event as its campaign reports it: its stages named as the
    /// confirmation's, its run directory as the confirmation's own (the campaign's run id and
    /// candidate stay).
    pub fn in_campaign(self) -> Event {
        match self {
            Event::Stage { name, of } => Event::Stage {
                name: format!("confirm: {name}"),
                of,
            },
            Event::Started { run_id, run_dir } => Event::ConfirmationStarted {
                confirmation_id: run_id,
                run_dir,
            },
            other => other,
        }
    }
}
