//! An in-process job scheduler for tests (docs/design.md §2.8): deterministic, with no cluster and
//! no waiting. Each job submitted gets a [`Fate`], the next one scripted with
//! [`FakeScheduler::then`] or else [`Fate::Runs`], and lives it one step per look the coordinator
//! takes (`info`): queued, on a node, then its end. A job that runs hands its [`Job`] to the
//! scheduler's [`JobWork`], which does what a node's evo would do with the request (a test runs it
//! here on a fake runner); its output folder is then whatever the work left there.
//!
//! What it saw is kept for the test to read: the jobs submitted (kind and folder), the ids
//! cancelled, how often each job was looked at.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::job::JobFolder;
use super::scheduler::{Job, JobKind, Scheduler};
use super::slurm::{JobId, JobInfo, JobState, SlurmError};

/// Why a job's work failed: any error, as a node's evo would print it.
pub type WorkError = crate::failure::Cause;

/// What a node does with a job that runs: its request, run here. An error is the job's process
/// failing (the job ends `failed`, exit code 1).
pub trait JobWork: Send + Sync {
    fn run(&self, job: &Job) -> Result<(), WorkError>;
}

/// Work that does nothing: every job that runs leaves its output folder empty.
pub struct NoWork;

impl JobWork for NoWork {
    fn run(&self, _job: &Job) -> Result<(), WorkError> {
        Ok(())
    }
}

/// What the node does to a job's folder after its work, as a hostile or broken node might.
pub type Tamper = Arc<dyn Fn(&JobFolder) + Send + Sync>;

/// What becomes of one job.
#[derive(Clone)]
pub enum Fate {
    /// Queued, on a node, runs its work, ends `completed` (or `failed` when the work fails).
    Runs,
    /// Queued, on a node, then ends in `state` without running its work (cancelled from outside,
    /// a lost node, a time limit).
    EndsWithout(JobState),
    /// Queued, on a node, put back in the queue by the scheduler itself (one restart), then
    /// runs as [`Fate::Runs`].
    Requeued,
    /// The scheduler forgets it at once ([`JobState::Gone`]): it never runs.
    Lost,
    /// Stays queued until it is cancelled.
    NeverStarts,
    /// On a node until it is cancelled.
    StaysRunning,
    /// Runs as [`Fate::Runs`], and then the node changes what it left.
    RunsThen(Tamper),
}

/// One step of a job's life: what `info` says, and whether the work runs on reaching it.
#[derive(Clone)]
struct Step {
    state: JobState,
    on_node: bool,
    restarts: u32,
    work: bool,
}

fn step(state: JobState, on_node: bool) -> Step {
    Step {
        state,
        on_node,
        restarts: 0,
        work: false,
    }
}

impl Fate {
    fn steps(&self) -> Vec<Step> {
        let works = Step {
            work: true,
            ..step(JobState::Completed, true)
        };
        let start = [
            step(JobState::Pending, false),
            step(JobState::Running, true),
        ];
        match self {
            Fate::Runs | Fate::RunsThen(_) => [&start[..], &[works]].concat(),
            Fate::EndsWithout(state) => [&start[..], &[step(state.clone(), true)]].concat(),
            Fate::Requeued => {
                let again = |s: Step| Step { restarts: 1, ..s };
                let back = step(JobState::Other("REQUEUED".into()), false);
                let then = [back, start[0].clone(), start[1].clone(), works];
                [&start[..], &then.map(again)[..]].concat()
            }
            Fate::Lost => vec![step(JobState::Gone, false)],
            Fate::NeverStarts => vec![start[0].clone()],
            Fate::StaysRunning => start.to_vec(),
        }
    }
}

/// A job the fake knows.
struct FakeJob {
    job: Job,
    fate: Fate,
    /// The steps still to come; the last one stays.
    steps: Vec<Step>,
    now: Step,
    node: String,
    looks: usize,
}

/// A job as it was submitted, for the test to read.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    pub id: JobId,
    pub kind: JobKind,
    pub folder: JobFolder,
}

#[derive(Default)]
struct Inner {
    jobs: BTreeMap<JobId, FakeJob>,
    fates: Vec<Fate>,
    cancelled: Vec<JobId>,
    /// `info` fails while set: the scheduler cannot be reached.
    unreachable: bool,
}

/// The fake scheduler; share it as an `Arc` with the campaign (`CampaignOptions::scheduler`).
pub struct FakeScheduler {
    work: Arc<dyn JobWork>,
    nodes: Vec<String>,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for FakeScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeScheduler").finish_non_exhaustive()
    }
}

impl FakeScheduler {
    /// A scheduler whose jobs run `work`, on the nodes `fake-n1` and `fake-n2` in turn.
    pub fn new(work: Arc<dyn JobWork>) -> FakeScheduler {
        FakeScheduler {
            work,
            nodes: vec!["fake-n1".into(), "fake-n2".into()],
            inner: Mutex::default(),
        }
    }

    /// The next job submitted that has no fate yet gets `fate`.
    pub fn then(self, fate: Fate) -> FakeScheduler {
        self.lock().fates.push(fate);
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The jobs submitted, in order.
    pub fn submitted(&self) -> Vec<Submitted> {
        let inner = self.lock();
        (inner.jobs.iter())
            .map(|(id, j)| Submitted {
                id: *id,
                kind: j.job.kind,
                folder: j.job.folder.clone(),
            })
            .collect()
    }

    /// The ids `cancel` was given, in order.
    pub fn cancelled(&self) -> Vec<JobId> {
        self.lock().cancelled.clone()
    }

    /// What the job is now, without taking a step.
    pub fn state(&self, id: JobId) -> Option<JobState> {
        self.lock().jobs.get(&id).map(|j| j.now.state.clone())
    }

    /// While `unreachable`, every `info` fails as a scheduler that cannot be reached does.
    pub fn set_unreachable(&self, unreachable: bool) {
        self.lock().unreachable = unreachable;
    }

    fn info_of(id: JobId, j: &FakeJob) -> JobInfo {
        JobInfo {
            id,
            state: j.now.state.clone(),
            node: if j.now.on_node {
                j.node.clone()
            } else {
                String::new()
            },
            reason: String::new(),
            restarts: j.now.restarts,
        }
    }
}

impl Scheduler for FakeScheduler {
    fn submit(&self, job: &Job) -> Result<JobId, SlurmError> {
        let mut inner = self.lock();
        let n = inner.jobs.len();
        let fate = match inner.fates.is_empty() {
            true => Fate::Runs,
            false => inner.fates.remove(0),
        };
        let mut steps = fate.steps();
        let now = steps.remove(0);
        let id = JobId(u64::try_from(n).unwrap_or(u64::MAX) + 1);
        let fake = FakeJob {
            job: job.clone(),
            fate,
            steps,
            now,
            node: self.nodes[n % self.nodes.len()].clone(),
            looks: 0,
        };
        inner.jobs.insert(id, fake);
        Ok(id)
    }

    fn info(&self, id: JobId) -> Result<JobInfo, SlurmError> {
        let mut inner = self.lock();
        if inner.unreachable {
            return Err(SlurmError::Failed {
                command: format!("scontrol show job -o {id}"),
                stderr: "the fake scheduler is unreachable".into(),
            });
        }
        let Some(j) = inner.jobs.get_mut(&id) else {
            return Ok(JobInfo {
                id,
                state: JobState::Gone,
                node: String::new(),
                reason: String::new(),
                restarts: 0,
            });
        };
        j.looks += 1;
        if j.looks > 1 && !j.steps.is_empty() {
            j.now = j.steps.remove(0);
        }
        if j.now.work {
            j.now.work = false;
            let (job, fate) = (j.job.clone(), j.fate.clone());
            // The work runs without the lock: it may take a while and look at nothing here.
            drop(inner);
            let ran = self.work.run(&job);
            if let Fate::RunsThen(tamper) = &fate {
                tamper(&job.folder);
            }
            inner = self.lock();
            let j = inner.jobs.get_mut(&id).expect("the job is known");
            if ran.is_err() && j.now.state == JobState::Completed {
                j.now.state = JobState::Failed { code: 1, signal: 0 };
            }
            return Ok(FakeScheduler::info_of(id, j));
        }
        Ok(FakeScheduler::info_of(id, j))
    }

    fn cancel(&self, ids: &[JobId]) -> Result<(), SlurmError> {
        let mut inner = self.lock();
        for id in ids {
            inner.cancelled.push(*id);
            if let Some(j) = inner.jobs.get_mut(id) {
                if !j.now.state.is_final() {
                    j.now = step(JobState::Cancelled, j.now.on_node);
                    j.steps.clear();
                }
            }
        }
        Ok(())
    }

    fn poll_interval(&self) -> Duration {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::slurm::JobSpec;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize);

    impl JobWork for Counting {
        fn run(&self, _job: &Job) -> Result<(), WorkError> {
            match self.0.fetch_add(1, Ordering::SeqCst) {
                0 => Ok(()),
                _ => Err("the second run fails".into()),
            }
        }
    }

    fn job() -> Job {
        let folder = JobFolder::new("/nowhere/attempt_1".into());
        Job {
            kind: JobKind::Confirm,
            folder: folder.clone(),
            batch: JobSpec {
                name: "evo-test".into(),
                script: "true".into(),
                output: folder.log(),
                workdir: folder.dir.clone(),
                partition: None,
                exclusive: true,
                time_limit: None,
                extra_args: Vec::new(),
            },
        }
    }

    fn states(s: &FakeScheduler, id: JobId, looks: usize) -> Vec<(String, String, u32)> {
        (0..looks)
            .map(|_| {
                let i = s.info(id).unwrap();
                (i.state.name(), i.node, i.restarts)
            })
            .collect()
    }

    #[test]
    fn a_job_is_queued_then_on_a_node_then_runs_its_work_once() {
        let work = Arc::new(Counting(AtomicUsize::new(0)));
        let s = FakeScheduler::new(work.clone());
        let id = s.submit(&job()).unwrap();
        let seen = states(&s, id, 4);
        let n1 = "fake-n1".to_string();
        assert_eq!(
            seen,
            [
                ("pending".into(), String::new(), 0),
                ("running".into(), n1.clone(), 0),
                ("completed".into(), n1.clone(), 0),
                ("completed".into(), n1, 0),
            ]
        );
        assert_eq!(work.0.load(Ordering::SeqCst), 1);
        let second = s.submit(&job()).unwrap();
        let last = states(&s, second, 3).pop().unwrap();
        assert_eq!(last, ("failed".into(), "fake-n2".into(), 0));
    }

    #[test]
    fn a_requeued_job_goes_back_to_the_queue_with_a_restart_and_then_runs() {
        let s = FakeScheduler::new(Arc::new(NoWork)).then(Fate::Requeued);
        let id = s.submit(&job()).unwrap();
        let seen: Vec<String> = states(&s, id, 6).into_iter().map(|s| s.0).collect();
        assert_eq!(
            seen,
            [
                "pending",
                "running",
                "requeued",
                "pending",
                "running",
                "completed"
            ]
        );
        assert_eq!(s.info(id).unwrap().restarts, 1);
    }

    #[test]
    fn cancel_ends_a_job_that_would_never_start_and_lost_jobs_are_gone() {
        let s = FakeScheduler::new(Arc::new(NoWork))
            .then(Fate::NeverStarts)
            .then(Fate::Lost);
        let stuck = s.submit(&job()).unwrap();
        let lost = s.submit(&job()).unwrap();
        assert_eq!(states(&s, stuck, 3)[2].0, "pending");
        assert_eq!(s.info(lost).unwrap().state, JobState::Gone);
        s.cancel(&[stuck]).unwrap();
        assert_eq!(s.info(stuck).unwrap().state, JobState::Cancelled);
        assert_eq!(s.cancelled(), [stuck]);
        s.set_unreachable(true);
        assert!(s.info(stuck).is_err());
        assert_eq!(s.submitted().len(), 2);
    }
}
