//! The screenings and confirmations of a campaign with a `fleet` section, as Slurm jobs
//! (docs/design.md §2.8): each candidate's request is written to the shared folder and submitted
//! as one job holding a whole node; at most `max_jobs` are queued or running at once. Both stages
//! share this one loop. A job's id is journaled before the campaign waits on it, so a resumed
//! campaign reattaches to it. A job that ends without a result that passes the checks is
//! submitted again, at most `max_requeues` times, then the candidate ends `inconclusive` with the
//! reason. A confirmation that passes (`fleet::collect`) is moved into the run's
//! `confirmations/`, signed here and recorded as a local confirmation is; a screening that passes
//! (`screen`) is journaled as a local screening is. A stop cancels the campaign's jobs.
//! What the coordinator sees of each job (submitted, running on a node, ended) goes to the
//! reporter as it sees it. The loop drives the campaign's `fleet::scheduler::Scheduler`: the
//! Slurm client, or in tests the in-process fake (`fleet::fake`).
//!
//! The campaign's side of the fleet is this folder: the loop (here), a screening job's request
//! and the check of what it left (`screen`), and what a node runs for a screening job
//! (`screen_job`, `evo campaign screen-job`). The scheduler's side (the trait, the Slurm client,
//! the fake, a job's script, the check of a node's confirmation) is `crate::fleet`.

mod screen;
pub(super) mod screen_job;

use crate::failure::with_causes;
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

use super::journal::{self, Entry};
use super::{CampaignRun, CandidatePatch};
use crate::confirm::{self, ConfirmRequest};
use crate::environment::FleetJob;
use crate::evidence::summary::Status;
use crate::fleet::FleetPlan;
use crate::fleet::collect::{self, Expected};
use crate::fleet::job::{self, JobFolder};
use crate::fleet::slurm::{JobId, JobInfo, JobState};
use crate::pipeline::PipelineError;
use crate::pipeline::event::Event;
use crate::pipeline::rundir::RunDir;
use crate::receipt::{self, keys::Signer};
use crate::report::jobs::{
    JobEnded, JobObservation, JobOutcome, JobRestarted, JobStage, JobStarted, JobSubmitted,
};

/// A job the campaign waits on.
pub(super) struct Active {
    pub(super) stage: JobStage,
    pub(super) index: usize,
    pub(super) attempt: u32,
    pub(super) job: JobId,
    pub(super) folder: JobFolder,
    /// The node Slurm last said it runs on.
    pub(super) node: String,
    /// Slurm's last state of it, as seen by the coordinator.
    state: String,
    /// How often Slurm itself restarted it, as last seen.
    restarts: u32,
    /// Its start was reported.
    started: bool,
}

impl Active {
    fn new(
        stage: JobStage,
        index: usize,
        attempt: u32,
        job: JobId,
        folder: JobFolder,
        state: &str,
    ) -> Active {
        Active {
            stage,
            index,
            attempt,
            job,
            folder,
            node: String::new(),
            state: state.to_string(),
            restarts: 0,
            started: false,
        }
    }

    /// `Slurm job 12 on n1`, or without the node while none is known.
    pub(super) fn named(&self) -> String {
        match self.node.as_str() {
            "" => format!("Slurm job {}", self.job),
            node => format!("Slurm job {} on {node}", self.job),
        }
    }

    /// Its end, for the reporter.
    fn ended(&self, requeues: usize, outcome: JobOutcome, reason: &str) -> JobObservation {
        JobObservation::Ended(JobEnded {
            job_id: self.job.0,
            stage: self.stage,
            node: self.node.clone(),
            state: self.state.clone(),
            attempt: self.attempt,
            requeues: u32::try_from(requeues).unwrap_or(u32::MAX),
            restarts: self.restarts,
            outcome,
            reason: reason.to_string(),
        })
    }
}

/// What became of a job that ended.
pub(super) enum JobResult {
    /// Its result was checked and recorded (signed, for a confirmation): the reason to journal
    /// with its end.
    Kept(String),
    /// It left no result that passes (why).
    Missing(String),
}

/// What the journal says of one candidate's jobs.
#[derive(Default)]
struct Journaled {
    /// (job id, attempt, folder) in submission order.
    submitted: Vec<(u64, u32, String)>,
    ended: Vec<u64>,
    /// Jobs that ended without a result.
    failed: usize,
}

impl Journaled {
    /// The last job submitted that has not ended: the one to reattach to.
    fn unfinished(&self) -> Option<&(u64, u32, String)> {
        (self.submitted.last()).filter(|(id, _, _)| !self.ended.contains(id))
    }
}

/// The jobs of `stage` the journal of `run_dir` knows, per candidate.
fn journaled_jobs(
    run_dir: &Path,
    stage: JobStage,
) -> Result<BTreeMap<usize, Journaled>, PipelineError> {
    let entries =
        journal::read(run_dir).map_err(|e| PipelineError::io("cannot read the journal", e))?;
    let mut jobs: BTreeMap<usize, Journaled> = BTreeMap::new();
    for entry in entries {
        match entry {
            Entry::JobSubmitted {
                index,
                stage: s,
                job_id,
                attempt,
                folder,
            } if s == stage => {
                (jobs.entry(index).or_default().submitted).push((job_id, attempt, folder));
            }
            Entry::JobEnded {
                index,
                stage: s,
                job_id,
                counted,
                ..
            } if s == stage => {
                let j = jobs.entry(index).or_default();
                j.ended.push(job_id);
                j.failed += usize::from(counted);
            }
            _ => {}
        }
    }
    Ok(jobs)
}

impl CampaignRun<'_> {
    /// The campaign's fleet, `None` when its confirmations run here.
    pub(super) fn fleet(&self) -> Result<Option<FleetPlan>, PipelineError> {
        crate::fleet::plan(
            &self.plan.campaign_file,
            &self.plan.spec,
            &self.plan.output_dir,
            Arc::clone(&self.opts.scheduler),
        )
        .map_err(PipelineError::usage)
    }

    /// Runs the `stage` of each of the `chosen` candidates as a job of `fleet`, reattaching to
    /// those a previous session of this run left queued or running.
    pub(super) fn run_jobs(
        &mut self,
        fleet: &FleetPlan,
        stage: JobStage,
        chosen: Vec<usize>,
    ) -> Result<(), PipelineError> {
        let signer = match stage {
            JobStage::Confirm => {
                let key_file = self.plan.key_file();
                let untrusted = self.plan.key_untrusted(None);
                let signer = (self.opts.sign_with.signer(key_file.as_deref(), &untrusted))
                    .map_err(|e| PipelineError::usage_while("cannot use the signing key", e))?;
                Some(signer)
            }
            JobStage::Screening => None,
        };
        let journaled = journaled_jobs(&self.run_dir.path, stage)?;
        let mut failed: BTreeMap<usize, usize> = BTreeMap::new();
        let mut waiting = VecDeque::new();
        let mut active = Vec::new();
        for index in chosen {
            let done = self.stage_done(stage, index);
            let mine = journaled.get(&index);
            let given_up = mine.is_some_and(|j| j.failed > fleet.settings.max_requeues as usize);
            if done || given_up {
                continue;
            }
            failed.insert(index, mine.map_or(0, |j| j.failed));
            match mine.and_then(Journaled::unfinished) {
                Some((job, attempt, folder)) => {
                    let folder = JobFolder::new(folder.into());
                    let a = Active::new(stage, index, *attempt, JobId(*job), folder, "unknown");
                    self.job_event(
                        index,
                        JobObservation::Submitted(JobSubmitted {
                            job_id: a.job.0,
                            stage,
                            attempt: a.attempt,
                            reattached: true,
                        }),
                    );
                    active.push(a);
                }
                None => waiting.push_back(index),
            }
        }
        loop {
            if self.opts.stop.requested() {
                return Err(self.cancel_jobs(fleet, &mut active, &failed));
            }
            while active.len() < fleet.settings.max_jobs.get() {
                let Some(index) = waiting.pop_front() else {
                    break;
                };
                active.push(self.submit(fleet, stage, index)?);
            }
            if active.is_empty() {
                return Ok(());
            }
            std::thread::sleep(fleet.scheduler.poll_interval());
            let mut still = Vec::new();
            for mut a in std::mem::take(&mut active) {
                let info = (fleet.scheduler.info(a.job))
                    .map_err(|e| PipelineError::internal_while("cannot follow the jobs", e))?;
                self.observe(&mut a, &info);
                if !info.state.is_final() {
                    still.push(a);
                    continue;
                }
                let before = failed.get(&a.index).copied().unwrap_or(0);
                let collected = match &signer {
                    Some(signer) => self.collect_job(signer, &a, &info)?,
                    None => self.collect_screening(&a, &info)?,
                };
                let (counted, reason) = match collected {
                    JobResult::Kept(note) => (false, note),
                    JobResult::Missing(reason) => (true, reason),
                };
                self.record(Entry::JobEnded {
                    index: a.index,
                    stage,
                    job_id: a.job.0,
                    counted,
                    reason: reason.clone(),
                })?;
                if !counted {
                    self.job_event(a.index, a.ended(before, JobOutcome::Done, &reason));
                    continue;
                }
                let count = before + 1;
                failed.insert(a.index, count);
                let again = count <= fleet.settings.max_requeues as usize;
                let outcome = if again {
                    JobOutcome::Requeued
                } else {
                    JobOutcome::Failed
                };
                self.job_event(a.index, a.ended(before, outcome, &reason));
                if again {
                    waiting.push_front(a.index);
                } else {
                    let why = format!(
                        "no result after {count} Slurm jobs (fleet.max_requeues is {}); the last: \
                         {reason}",
                        fleet.settings.max_requeues
                    );
                    self.set_status(a.index, Status::Inconclusive, why)?;
                }
            }
            active = still;
        }
    }

    /// The candidate's `stage` is over: its screening ended with a status, or its confirmation
    /// was recorded.
    fn stage_done(&mut self, stage: JobStage, index: usize) -> bool {
        let Some(c) = self.state.candidate_mut(index) else {
            return true;
        };
        match stage {
            JobStage::Screening => !matches!(c.status, Status::Collected | Status::Checked),
            JobStage::Confirm => c.confirmation.is_some(),
        }
    }

    /// Tells the reporter about one of the candidate's jobs.
    fn job_event(&mut self, index: usize, job: JobObservation) {
        let candidate = self.candidate_name(index);
        (self.on_event)(Event::Job { candidate, job });
    }

    /// Takes what Slurm now says of job `a` (its node and state), and reports its start the first
    /// time it is seen on a node (also when it is seen only after it ended there), and again
    /// after Slurm put it back in its queue by itself.
    fn observe(&mut self, a: &mut Active, info: &JobInfo) {
        let on_node = info.state == JobState::Running || info.state.is_final();
        if a.started && (info.restarts > a.restarts || info.state.is_queued()) {
            a.started = false;
            a.node.clear();
            let restarted = JobObservation::Restarted(JobRestarted {
                job_id: a.job.0,
                stage: a.stage,
                restarts: info.restarts,
            });
            self.job_event(a.index, restarted);
        }
        if !info.node.is_empty() {
            a.node.clone_from(&info.node);
        }
        a.state = info.state.name();
        a.restarts = a.restarts.max(info.restarts);
        if on_node && !a.started && !a.node.is_empty() {
            a.started = true;
            let started = JobObservation::Started(JobStarted {
                job_id: a.job.0,
                stage: a.stage,
                node: a.node.clone(),
            });
            self.job_event(a.index, started);
        }
    }

    /// Writes the request of the `stage` of candidate `index`'s next attempt to the shared
    /// folder and submits it.
    fn submit(
        &mut self,
        fleet: &FleetPlan,
        stage: JobStage,
        index: usize,
    ) -> Result<Active, PipelineError> {
        let mut root = fleet.shared_dir.join(&self.run_dir.id).join("fleet");
        if stage == JobStage::Screening {
            root.push("screening");
        }
        let job::Attempt {
            number: attempt,
            folder,
        } = job::next_attempt(&root, index)
            .map_err(|e| PipelineError::io("cannot make the job's folder", e))?;
        let (file, caches) = (folder.request(), fleet.caches_root());
        let written = match stage {
            JobStage::Confirm => confirm::write_request(
                &file,
                &ConfirmRequest {
                    shared_caches: caches,
                    ..self.fleet_request(index, &folder)?
                },
            ),
            JobStage::Screening => confirm::write_request(
                &file,
                &screen_job::ScreenRequest {
                    shared_caches: caches,
                    ..self.screening_request(index, &folder)?
                },
            ),
        };
        written.map_err(PipelineError::internal)?;
        let env = job::job_environment(&self.plan.spec.sandbox.pass_env, &|name| {
            std::env::var(name).ok()
        });
        let (letter, what) = match stage {
            JobStage::Confirm => ('c', "confirm"),
            JobStage::Screening => ('s', "screen"),
        };
        let name = format!("evo-{}-{letter}{index}", self.run_dir.id);
        let spec = match stage {
            JobStage::Confirm => job::confirmation_job(fleet, &name, &folder, &env),
            JobStage::Screening => job::screening_job(fleet, &name, &folder, &env),
        };
        let id = fleet.scheduler.submit(&spec).map_err(|e| {
            PipelineError::usage_while(
                format!(
                    "cannot submit the {} job of candidate {index}",
                    stage.as_str()
                ),
                e,
            )
        })?;
        let started = (self.state.candidate_mut(index)).is_some_and(|c| c.confirmation_started);
        let mut journaled = Ok(());
        if stage == JobStage::Confirm && !started {
            journaled = self.record(Entry::ConfirmationStarted { index });
        }
        journaled = journaled.and_then(|()| {
            self.record(Entry::JobSubmitted {
                index,
                stage,
                job_id: id.0,
                attempt,
                folder: folder.dir.display().to_string(),
            })
        });
        if let Err(e) = journaled {
            // A stop (or a journal that cannot be written) between the submission and its entry:
            // no session would know the job, so it must not run.
            let _ = fleet.scheduler.cancel(&[id]);
            return Err(e);
        }
        self.candidate_stage(
            &format!("{what} candidate {index} as Slurm job {id} (attempt {attempt})"),
            index,
        );
        let submitted = JobObservation::Submitted(JobSubmitted {
            job_id: id.0,
            stage,
            attempt,
            reattached: false,
        });
        self.job_event(index, submitted);
        Ok(Active::new(stage, index, attempt, id, folder, "pending"))
    }

    /// What candidate `index`'s job in `folder` runs: the campaign's request, writing into the
    /// folder's `out`. Rebuilt from the journal whenever needed, never read back from the shared
    /// folder, where a node could have changed it.
    fn fleet_request(
        &self,
        index: usize,
        folder: &JobFolder,
    ) -> Result<ConfirmRequest, PipelineError> {
        let CandidatePatch { file, bytes } = self.candidate_patch(index)?;
        let mut request = self.confirm_request(index, file, bytes);
        request.plan.campaign.output_dir = folder.out();
        Ok(request)
    }

    /// Collects a job that ended: checks its result, signs and records it.
    fn collect_job(
        &mut self,
        signer: &Signer,
        a: &Active,
        info: &JobInfo,
    ) -> Result<JobResult, PipelineError> {
        let request = self.fleet_request(a.index, &a.folder)?;
        let expected = Expected {
            request: &request,
            baseline_sha: &self.pinned.sha,
        };
        let collected = match collect::collect(&a.folder.out(), &expected) {
            Ok(c) => c,
            Err(e) => {
                let state = info.state.described();
                let job = a.named();
                return Ok(JobResult::Missing(format!(
                    "{job} ended {state}: {}",
                    with_causes(&e)
                )));
            }
        };
        let dest = self.run_dir.path.join("confirmations");
        std::fs::create_dir_all(&dest)
            .map_err(|e| PipelineError::io("cannot create confirmations/", e))?;
        let run_dir = RunDir {
            id: collected.result.evidence.run_id.clone(),
            path: dest.join(&collected.result.evidence.run_id),
        };
        move_folder(&collected.run_folder, &run_dir.path)
            .map_err(|e| PipelineError::io("cannot move the job's run folder", e))?;
        let mut result = collected.result;
        result.evidence.environment.job = Some(FleetJob {
            engine: "slurm".into(),
            job_id: a.job.0,
            node: a.node.clone(),
            attempt: a.attempt,
        });
        let scanner = receipt::KeyScanner::new(&signer.key);
        receipt::check_result(&result, &scanner).map_err(|leak| PipelineError::KeyLeak {
            leak,
            note: String::new(),
        })?;
        confirm::write_result(&run_dir, &result)?;
        let signed = confirm::write_evidence(&run_dir, &result, signer)?;
        let outcome = confirm::load_outcome(&run_dir.path, &signed.verifying_key)
            .map_err(PipelineError::internal)?;
        let screened = (request.search.as_ref()).map_or(f64::NAN, |s| s.figures.median);
        self.record_confirmation(a.index, &outcome, screened)?;
        Ok(JobResult::Kept(format!(
            "result checked and signed ({})",
            run_dir.id
        )))
    }

    /// Cancels the campaign's jobs on a stop and journals that they did not fail (directly: after
    /// a stop `record` journals nothing), so a resumed run submits them again without counting
    /// them against `max_requeues`.
    fn cancel_jobs(
        &mut self,
        fleet: &FleetPlan,
        active: &mut [Active],
        failed: &BTreeMap<usize, usize>,
    ) -> PipelineError {
        let ids: Vec<JobId> = active.iter().map(|a| a.job).collect();
        let (cancelled, note) = match fleet.scheduler.cancel(&ids) {
            Ok(()) => (true, String::new()),
            Err(e) => (
                false,
                format!(" (cancelling its Slurm jobs failed: {})", with_causes(&e)),
            ),
        };
        let reason = "cancelled: the campaign was stopped";
        for a in active.iter_mut() {
            let _ = self.journal.append(&Entry::JobEnded {
                index: a.index,
                stage: a.stage,
                job_id: a.job.0,
                counted: false,
                reason: reason.into(),
            });
            if cancelled {
                a.state = JobState::Cancelled.name();
            }
            let before = failed.get(&a.index).copied().unwrap_or(0);
            self.job_event(a.index, a.ended(before, JobOutcome::Cancelled, reason));
        }
        PipelineError::Interrupted { note }
    }
}

/// Moves the folder `from` to `to` (copying when they lie on two file systems).
pub(super) fn move_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    copy_folder(from, to)?;
    std::fs::remove_dir_all(from)
}

fn copy_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_folder(&entry.path(), &target)?;
        } else if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
