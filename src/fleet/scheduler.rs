//! What the coordinator asks of a job scheduler (docs/design.md §2.8): submit one job, say where
//! a job is, cancel jobs. The Slurm client is the one real implementation; `fleet::fake` is an
//! in-process one for tests, which plays a job's life step by step and can run its work here.
//!
//! A job is submitted as a [`Job`]: its kind (a confirmation or a candidate's screening), the
//! folder its request is in, and the batch job a real cluster runs. Slurm takes the batch job;
//! the fake reads the kind and the folder, as a node's evo would.

use std::time::Duration;

use super::job::JobFolder;
use super::slurm::{JobId, JobInfo, JobSpec, Slurm, SlurmError};

/// How often the coordinator asks Slurm about its jobs.
pub const SLURM_POLL: Duration = Duration::from_millis(500);

/// The two kinds of fleet job, each with its own request and command on the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// `evo confirm --request … --unsigned`: one candidate's confirmation.
    Confirm,
    /// `evo campaign screen-job --request …`: one candidate's checks and screening pairs.
    Screening,
}

/// One job to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub kind: JobKind,
    /// Where its request is (`request.json`) and where it writes (`out`).
    pub folder: JobFolder,
    /// The batch job that runs it on a node.
    pub batch: JobSpec,
}

/// A job scheduler, as the coordinator uses one.
pub trait Scheduler: Send + Sync + std::fmt::Debug {
    /// Submits `job`; its id.
    fn submit(&self, job: &Job) -> Result<JobId, SlurmError>;
    /// Where the job is; [`super::slurm::JobState::Gone`] when the scheduler no longer knows it.
    fn info(&self, id: JobId) -> Result<JobInfo, SlurmError>;
    /// Cancels the jobs; those already finished are no error.
    fn cancel(&self, ids: &[JobId]) -> Result<(), SlurmError>;
    /// How long the coordinator waits between two looks at its jobs.
    fn poll_interval(&self) -> Duration;
}

impl Scheduler for Slurm {
    fn submit(&self, job: &Job) -> Result<JobId, SlurmError> {
        Slurm::submit(self, &job.batch)
    }

    fn info(&self, id: JobId) -> Result<JobInfo, SlurmError> {
        Slurm::info(self, id)
    }

    fn cancel(&self, ids: &[JobId]) -> Result<(), SlurmError> {
        Slurm::cancel(self, ids)
    }

    fn poll_interval(&self) -> Duration {
        SLURM_POLL
    }
}
