//! `evo campaign run`: many candidates in, one confirmed and signed result out, and a status and
//! reason for every other candidate (docs/design.md §2.3).
//!
//! The stages: collect candidates (patch files, agent runs) → build, test and check the baseline
//! once → check each candidate (safety, apply, build, tests, differential) → screen the survivors
//! with a few pairs each (ranking only) → fresh confirmation of the top candidate(s) with
//! `evo confirm`'s pipeline. Every finished step is journaled (`journal`), so `--resume` picks up
//! where a crash left off; a lock (`host::lock`) keeps a second evo off the same run.

mod checks;
mod collect;
mod confirmation;
mod fleet;
pub mod journal;
pub mod outline;
mod profile;
pub mod review;
mod rounds;
mod screen;
pub mod state;
pub mod summary;

use crate::failure::with_causes;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::evidence::summary::{Status, Summary};
use crate::host::lock::RunLock;
use crate::host::{Hold, SignWith, Stop};
use crate::measure::runner::RunnerFactory;
use crate::measure::sandbox::SandboxPolicy;
use crate::path::shown;
use crate::pipeline::PipelineError;
use crate::pipeline::event::{Event, StageOf};
use crate::pipeline::rundir::{self, RunDir};
use crate::plan::{CampaignPlan, RUN_MANIFEST, RunManifest};
use crate::report::events::CandidateName;
use crate::tree::{self, Pinned};
pub use fleet::screen_job::{ScreenRequest, ScreeningOrder, run_screening_job};
use journal::{Entry, Journal};
use state::State;

/// How to run a campaign.
#[derive(Clone)]
pub struct CampaignOptions {
    /// Where every command of the search and of its confirmations gets its runner (the real
    /// ones, or a test's fake).
    pub runners: Arc<dyn RunnerFactory>,
    /// `Some(run id)` or `Some("latest")` to continue an interrupted run.
    pub resume: Option<String>,
    /// Overrides the campaign's `sandbox.mode` (`--sandbox`).
    pub sandbox: Option<crate::spec::modes::SandboxMode>,
    /// When to stop: nothing more is run or journaled, and the campaign ends `Interrupted`,
    /// resumable.
    pub stop: Stop,
    /// Who keeps a second evo off the repository; held for as long as these options live, and
    /// passed on to the confirmations.
    pub hold: Hold,
    /// The key the confirmations sign with, or where they look it up.
    pub sign_with: SignWith,
    /// Who runs the jobs of a campaign with a `fleet` section: the Slurm client, or a test's
    /// fake (`fleet::fake`).
    pub scheduler: Arc<dyn crate::fleet::scheduler::Scheduler>,
}

impl CampaignOptions {
    /// A new run that stops on this process's Ctrl-C, signs with the campaign's key and keeps
    /// the campaign's sandbox mode; `hold` says who keeps other runs off the repository.
    pub fn new(runners: Arc<dyn RunnerFactory>, hold: Hold) -> CampaignOptions {
        CampaignOptions {
            runners,
            resume: None,
            sandbox: None,
            stop: Stop::ctrl_c(),
            hold,
            sign_with: SignWith::CampaignKey,
            scheduler: Arc::new(crate::fleet::slurm::Slurm::default()),
        }
    }
}

/// A running campaign.
pub(crate) struct CampaignRun<'a> {
    plan: &'a CampaignPlan,
    opts: &'a CampaignOptions,
    run_dir: RunDir,
    journal: Journal,
    _lock: RunLock,
    pinned: Pinned,
    search_seed: u64,
    state: State,
    work: PathBuf,
    on_event: &'a mut dyn FnMut(Event),
    build_s: f64,
    /// Isolation of the search's builds, checks and screening runs.
    sandbox: SandboxPolicy,
    /// The protected files as the first overlaid tree of this process had them, once it exists
    /// (`checks::CampaignRun::overlaid_tree` hands them out with every overlaid tree).
    protected: Option<crate::tree::Protected>,
    /// When this session began, and the search's seconds journaled by the sessions before it
    /// (`search.max_minutes` counts both).
    session_started: Instant,
    search_s_before: f64,
    /// The seconds of each candidate check that passed (safety, apply, build, tests,
    /// differential) in this session: their median is the pace a confirmation's builds and
    /// checks are estimated at before one ran (`confirmation::estimate_s`).
    check_s: Vec<f64>,
    /// Screening rounds run in this session: the baseline runs first in every other one
    /// (`screen::CampaignRun::screen_round`).
    screening_rounds: usize,
    /// The first confirmation's A/A pairs, offered to the later ones of this session
    /// (`confirm::earlier_aa`: reused only on byte-identical baseline binaries).
    earlier_aa: Option<crate::confirm::earlier_aa::EarlierAa>,
}

/// A candidate's patch as the run directory keeps it.
struct CandidatePatch {
    file: PathBuf,
    bytes: Vec<u8>,
}

/// A finished campaign: its summary and run directory.
#[derive(Debug)]
pub struct CampaignOutcome {
    pub summary: Summary,
    pub run_dir: PathBuf,
}

/// The run directory to resume: an id under the output folder, or the newest one there.
fn resume_dir(output: &Path, which: &str) -> Result<PathBuf, PipelineError> {
    if which != "latest" {
        let dir = output.join(which);
        return if dir.join(journal::JOURNAL).is_file() {
            Ok(dir)
        } else {
            Err(PipelineError::usage(format!(
                "no campaign run `{which}` in {} to resume",
                output.display()
            )))
        };
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(output)
        .map_err(|e| PipelineError::io(format!("cannot list {}", output.display()), e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(journal::JOURNAL).is_file())
        .collect();
    runs.sort();
    runs.pop().ok_or_else(|| {
        PipelineError::usage(format!("no campaign run in {} to resume", output.display()))
    })
}

/// Runs (or resumes) the campaign to the end.
pub fn run_campaign(
    plan: &CampaignPlan,
    opts: &CampaignOptions,
    on_event: &mut dyn FnMut(Event),
) -> Result<CampaignOutcome, PipelineError> {
    let started = Instant::now();
    // Every runner honours the run's stop, whatever stop condition its maker knows.
    let opts = &CampaignOptions {
        runners: crate::host::stoppable(Arc::clone(&opts.runners), opts.stop.clone()),
        ..opts.clone()
    };
    if plan.patches.is_empty() && plan.spec.agent.is_none() {
        return Err(PipelineError::usage(format!(
            "{}: the campaign has no candidates: give `candidates` (patch files) or `agent`",
            plan.campaign_file.display()
        )));
    }
    let pinned = tree::pin(&plan.repo, &plan.spec.baseline).map_err(PipelineError::usage)?;
    // A configured key that cannot be used is found now, not after the whole search.
    let settled = crate::plan::settle::settle(
        plan,
        search_ask(
            plan,
            opts,
            crate::plan::settle::Key::Check(&opts.sign_with),
            None,
        ),
    )
    .map_err(PipelineError::usage)?;
    for message in settled.warnings {
        on_event(Event::Warning(message));
    }
    let sandbox = warn_unsandboxed(settled.sandbox, on_event);
    let run_dir = match &opts.resume {
        Some(which) => {
            let path = resume_dir(&plan.output_dir, which)?;
            let id = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            RunDir { id, path }
        }
        None => {
            let id = rundir::run_id(SystemTime::now(), &plan.spec.name, &pinned.sha);
            RunDir::create(&plan.output_dir, &id)
                .map_err(|e| PipelineError::io("cannot create the run directory", e))?
        }
    };
    // A resumed run keeps the seed it started with, even if the campaign file changed since.
    let mut run = CampaignRun::open(plan, opts, run_dir, pinned, sandbox, None, on_event)?;
    let search_seed = run.search_seed;
    (run.on_event)(Event::Started {
        run_id: run.run_dir.id.clone(),
        run_dir: run.run_dir.path.clone(),
    });
    (run.on_event)(Event::Plan(outline::outline(plan)));
    if run.state.run_id.is_none() {
        run.record(Entry::Started {
            run_id: run.run_dir.id.clone(),
            campaign_file: plan.campaign_file.display().to_string(),
            baseline_sha: run.pinned.sha.clone(),
            search_seed,
            evo_version: env!("CARGO_PKG_VERSION").to_string(),
        })?;
    }
    run.write_manifest()?;
    let staged = run.stages();
    if run.opts.stop.requested() {
        return Err(run.interrupted());
    }
    match staged {
        Err(PipelineError::Baseline(m)) => {
            return Err(PipelineError::Baseline(run.sandbox.explain(m)));
        }
        other => other?,
    }
    run.finish(started)
}

/// The folder of a campaign run's trees and scratch files, removed when a screening job ends.
fn work_folder(run_dir: &RunDir) -> PathBuf {
    run_dir.path.join("work")
}

/// What a fleet's screening job adds to its search's sandbox: the request's folder, which no run
/// may see; the fleet's shared caches; and where its candidates' private cache copies go (inside
/// its own work folder, removed with it, so the job leaves one run folder and nothing else).
pub(super) struct JobSandbox<'a> {
    pub hidden: &'a [&'a Path],
    pub shared_caches: Option<&'a Path>,
    pub copies: PathBuf,
}

/// What the search asks of its machine: its builds, checks and screening runs may not see the
/// output folder, which holds every run's work folder, nor what a fleet `job` adds.
fn search_ask<'a>(
    plan: &'a CampaignPlan,
    opts: &'a CampaignOptions,
    key: crate::plan::settle::Key<'a>,
    job: Option<JobSandbox<'a>>,
) -> crate::plan::settle::Ask<'a> {
    let (hidden, copies, shared_caches) = match job {
        Some(job) => (job.hidden, job.copies, job.shared_caches),
        None => (&[][..], plan.output_dir.join(".cache-copies"), None),
    };
    crate::plan::settle::Ask {
        key,
        work: None,
        hidden,
        copies,
        mode: opts.sandbox,
        shared_caches,
    }
}

/// The search's sandbox, warning when runs are not sandboxed.
fn warn_unsandboxed(sandbox: SandboxPolicy, on_event: &mut dyn FnMut(Event)) -> SandboxPolicy {
    if !sandbox.enabled() {
        on_event(Event::Warning(format!(
            "runs are NOT sandboxed: {}",
            sandbox.record.detail
        )));
    }
    sandbox
}

/// The sandbox of a fleet's screening job, settled once its run folder exists (its candidates'
/// cache copies go inside it); the output folder was checked before the run folder was made.
fn job_sandbox(
    plan: &CampaignPlan,
    opts: &CampaignOptions,
    job: JobSandbox<'_>,
    on_event: &mut dyn FnMut(Event),
) -> Result<SandboxPolicy, PipelineError> {
    let ask = search_ask(plan, opts, crate::plan::settle::Key::Unsigned, Some(job));
    let sandbox = crate::plan::settle::sandbox_policy(plan, &ask).map_err(PipelineError::usage)?;
    Ok(warn_unsandboxed(sandbox, on_event))
}

impl<'a> CampaignRun<'a> {
    /// Opens the run in `run_dir`: takes its lock, replays its journal (refusing a run that
    /// pinned another baseline) and makes its work folder. The search seed is `seed`, else the
    /// one the run started with, else the campaign's.
    fn open(
        plan: &'a CampaignPlan,
        opts: &'a CampaignOptions,
        run_dir: RunDir,
        pinned: Pinned,
        sandbox: SandboxPolicy,
        seed: Option<u64>,
        on_event: &'a mut dyn FnMut(Event),
    ) -> Result<CampaignRun<'a>, PipelineError> {
        // Shown to people and kept in records: say it without `..` detours.
        let run_dir = RunDir {
            path: run_dir.path.canonicalize().unwrap_or(run_dir.path),
            id: run_dir.id,
        };
        let lock = RunLock::acquire(&run_dir.path).map_err(PipelineError::usage)?;
        let entries = journal::read(&run_dir.path)
            .map_err(|e| PipelineError::io("cannot read the journal", e))?;
        let state = State::from_entries(&entries);
        if let Some(sha) = &state.baseline_sha {
            if *sha != pinned.sha {
                return Err(PipelineError::usage(format!(
                    "run {} pinned {sha}, but the campaign's baseline now resolves to {}: start a \
                     new run",
                    run_dir.id, pinned.sha
                )));
            }
        }
        let journal = Journal::open(&run_dir.path)
            .map_err(|e| PipelineError::io("cannot open the journal", e))?;
        let work = work_folder(&run_dir);
        std::fs::create_dir_all(&work)
            .map_err(|e| PipelineError::io("cannot create the work folder", e))?;
        let search_seed = seed.or(state.search_seed).unwrap_or(plan.spec.search.seed);
        let search_s_before = state.search_s;
        Ok(CampaignRun {
            plan,
            opts,
            run_dir,
            journal,
            _lock: lock,
            pinned,
            search_seed,
            state,
            work,
            on_event,
            build_s: 0.0,
            sandbox,
            protected: None,
            session_started: Instant::now(),
            search_s_before,
            check_s: Vec::new(),
            screening_rounds: 0,
            earlier_aa: None,
        })
    }
}

impl CampaignRun<'_> {
    /// A stage of the whole campaign.
    fn stage(&mut self, name: &str) {
        (self.on_event)(Event::Stage {
            name: name.to_string(),
            of: StageOf::Campaign,
        });
    }

    /// Candidate `index`, named.
    fn candidate_name(&self, index: usize) -> Option<CandidateName> {
        (self.state.candidates.iter().find(|c| c.index == index)).map(|c| CandidateName {
            index: Some(index),
            name: c.name.clone(),
        })
    }

    /// A stage that works on candidate `index`.
    fn candidate_stage(&mut self, name: &str, index: usize) {
        let of = self
            .candidate_name(index)
            .map_or(StageOf::Campaign, StageOf::Candidate);
        (self.on_event)(Event::Stage {
            name: name.to_string(),
            of,
        });
    }

    /// Journals an entry (durably) and applies it to the state. After a stop request nothing is
    /// journaled: a status or pair drawn from a run cut short would be wrong.
    fn record(&mut self, entry: Entry) -> Result<(), PipelineError> {
        if self.opts.stop.requested() {
            return Err(PipelineError::interrupted());
        }
        self.journal
            .append(&entry)
            .map_err(|e| PipelineError::io("cannot write the journal", e))?;
        self.state.apply(&entry);
        Ok(())
    }

    fn set_status(
        &mut self,
        index: usize,
        status: Status,
        reason: String,
    ) -> Result<(), PipelineError> {
        let name = self
            .state
            .candidate_mut(index)
            .map_or_else(String::new, |c| c.name.clone());
        (self.on_event)(Event::Candidate {
            index,
            name,
            status,
            reason: reason.lines().next().unwrap_or_default().to_string(),
        });
        self.record(Entry::Status {
            index,
            status,
            reason,
        })
    }

    fn write_manifest(&self) -> Result<(), PipelineError> {
        let manifest = RunManifest {
            campaign: self.plan.campaign_file.clone(),
            run_id: self.run_dir.id.clone(),
        };
        let text = serde_json::to_vec_pretty(&manifest).map_err(PipelineError::internal)?;
        self.run_dir
            .write(RUN_MANIFEST, &text)
            .map_err(|e| PipelineError::io("cannot write the run manifest", e))?;
        Ok(())
    }

    fn indices_with(&self, status: Status) -> Vec<usize> {
        self.state
            .candidates
            .iter()
            .filter(|c| c.status == status)
            .map(|c| c.index)
            .collect()
    }

    fn stages(&mut self) -> Result<(), PipelineError> {
        if self.state.finished {
            return Ok(());
        }
        self.stage("collect candidates");
        self.collect_patches()?;
        let fleet = self.fleet()?;
        self.search(fleet.as_ref())?;
        self.confirm_top()
    }

    /// Candidate `index`'s patch file in the run directory, and its bytes.
    fn candidate_patch(&self, index: usize) -> Result<CandidatePatch, PipelineError> {
        let file = (self.state.patch_path(&self.run_dir.path, index))
            .ok_or_else(|| PipelineError::internal(format!("candidate {index} is unknown")))?;
        let bytes = std::fs::read(&file)
            .map_err(|e| PipelineError::io("cannot read a candidate patch", e))?;
        Ok(CandidatePatch { file, bytes })
    }

    /// Journals the stop and says how to go on; everything journaled before stays.
    fn interrupted(&mut self) -> PipelineError {
        let noted = self.journal.append(&Entry::Interrupted {
            at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        });
        let journal_note = match noted {
            Ok(()) => String::new(),
            Err(e) => format!(
                " (the stop itself could not be journaled: {})",
                with_causes(&e)
            ),
        };
        PipelineError::Interrupted {
            note: format!(
                ".\nEverything finished before the stop is in {}{journal_note}; continue with: \
                 evo campaign run {} --resume {}",
                shown(&self.run_dir.path.join(journal::JOURNAL)),
                shown(&self.plan.campaign_file),
                self.run_dir.id
            ),
        }
    }

    fn finish(mut self, started: Instant) -> Result<CampaignOutcome, PipelineError> {
        let seconds = started.elapsed().as_secs_f64();
        if !self.state.finished {
            self.record(Entry::Finished { seconds })?;
        }
        let summary = Summary::new(&self.run_dir.id, &self.state, self.build_s, seconds);
        let text = serde_json::to_vec_pretty(&summary).map_err(PipelineError::internal)?;
        self.run_dir
            .write("summary.json", &text)
            .map_err(|e| PipelineError::io("cannot write summary.json", e))?;
        // The trees are rebuilt from the journal if ever needed; keep the run directory small.
        let _ = std::fs::remove_dir_all(&self.work);
        Ok(CampaignOutcome {
            summary,
            run_dir: self.run_dir.path.clone(),
        })
    }
}
