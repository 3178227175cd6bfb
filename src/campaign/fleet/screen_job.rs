//! One candidate's checks and screening pairs as a fleet job runs them on its node
//! (`evo campaign screen-job --request FILE`, docs/design.md §2.8): the search's own steps
//! (`checks`, `screen`) in a run folder of their own under the request's output folder, against a
//! baseline built, checked and measured on the same node, so no ratio is formed across nodes.
//!
//! What the job leaves is that run folder: its journal (the run's start, the candidate, its
//! statuses, warmups, pairs and counts), the candidate's patch, the step logs, and the node's
//! machine (`environment.json`). Nothing is signed; the coordinator checks the journal as
//! untrusted input (`fleet::screen`) and uses it only to rank.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::campaign::journal::Entry;
use crate::campaign::{CampaignOptions, CampaignRun};
use crate::confirm::request::{JobRequest, REQUEST_VERSION, RequestKind};
use crate::evidence::summary::{Source, Status};
use crate::pipeline::PipelineError;
use crate::pipeline::event::Event;
use crate::pipeline::rundir::{self, RunDir};
use crate::plan::ConfirmPlan;
use crate::spec::modes::SandboxMode;
use crate::tree;

/// The file of a screening job's run folder that holds the node's machine.
pub const MACHINE_FILE: &str = "environment.json";

/// One campaign candidate's checks and screening pairs, as one fleet job runs them
/// (`evo campaign screen-job --request FILE`, docs/design.md §2.8): a request file as a
/// confirmation's is (`confirm::request`), of its own kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenRequest {
    /// [`REQUEST_VERSION`].
    pub version: u32,
    /// [`RequestKind::Screening`].
    pub kind: RequestKind,
    /// The campaign, workload and output folder, the patch the candidate's.
    pub plan: ConfirmPlan,
    /// Overrides the campaign's `sandbox.mode` (`--sandbox`).
    pub sandbox: Option<SandboxMode>,
    /// A fleet's folder of build caches, as a confirmation request's (`measure::caches`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_caches: Option<PathBuf>,
    pub order: ScreeningOrder,
}

/// What a screening job needs besides the plan: which candidate it is, the search's seed (a
/// resumed campaign keeps the one it started with) and the baseline the campaign pinned, which
/// the node must resolve the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreeningOrder {
    pub index: usize,
    pub name: String,
    pub search_seed: u64,
    pub baseline_sha: String,
}

impl ScreenRequest {
    pub fn new(plan: ConfirmPlan, sandbox: Option<SandboxMode>, order: ScreeningOrder) -> Self {
        ScreenRequest {
            version: REQUEST_VERSION,
            kind: RequestKind::Screening,
            plan,
            sandbox,
            shared_caches: None,
            order,
        }
    }
}

impl JobRequest for ScreenRequest {
    const KIND: RequestKind = RequestKind::Screening;

    fn plan_mut(&mut self) -> &mut ConfirmPlan {
        &mut self.plan
    }
}

/// Runs the screening `request` here, hiding `hidden` (the request's folder) from every run as
/// well; returns the run folder it wrote. A failure that is not the candidate's (the baseline
/// fails, the run is stopped) is also written to the run folder's `error.txt`.
pub fn run_screening_job(
    request: &ScreenRequest,
    opts: &CampaignOptions,
    hidden: &[PathBuf],
    on_event: &mut dyn FnMut(Event),
) -> Result<PathBuf, PipelineError> {
    let order = &request.order;
    let opts = &CampaignOptions {
        runners: crate::host::stoppable(Arc::clone(&opts.runners), opts.stop.clone()),
        sandbox: request.sandbox,
        ..opts.clone()
    };
    let plan = &request.plan.campaign;
    let pinned = tree::pin(&plan.repo, &plan.spec.baseline).map_err(PipelineError::usage)?;
    if pinned.sha != order.baseline_sha {
        return Err(PipelineError::usage(format!(
            "the baseline `{}` resolves to {} on this node, the campaign pinned {}",
            plan.spec.baseline, pinned.sha, order.baseline_sha
        )));
    }
    crate::plan::settle::check_output_dir(&plan.output_dir).map_err(PipelineError::usage)?;
    let hidden: Vec<&Path> = hidden.iter().map(PathBuf::as_path).collect();
    let id = rundir::run_id(SystemTime::now(), &plan.spec.name, &pinned.sha);
    let run_dir = RunDir::create(&plan.output_dir, &id)
        .map_err(|e| PipelineError::io("cannot create the run directory", e))?;
    let job = crate::campaign::JobSandbox {
        hidden: &hidden,
        shared_caches: request.shared_caches.as_deref(),
        copies: crate::campaign::work_folder(&run_dir).join("cache-copies"),
    };
    let sandbox = crate::campaign::job_sandbox(plan, opts, job, on_event)?;
    let seed = Some(order.search_seed);
    let mut run = CampaignRun::open(plan, opts, run_dir, pinned, sandbox, seed, on_event)?;
    (run.on_event)(Event::Started {
        run_id: run.run_dir.id.clone(),
        run_dir: run.run_dir.path.clone(),
    });
    let screened = run.screen_one(order, &request.plan.patch);
    let _ = std::fs::remove_dir_all(&run.work);
    if let Err(e) = &screened {
        let _ = run.run_dir.write("error.txt", format!("{e}\n").as_bytes());
    }
    screened.map(|()| run.run_dir.path.clone())
}

impl CampaignRun<'_> {
    /// The search's steps for the one candidate of `order`, whose patch is `patch`.
    fn screen_one(&mut self, order: &ScreeningOrder, patch: &[u8]) -> Result<(), PipelineError> {
        self.record(Entry::Started {
            run_id: self.run_dir.id.clone(),
            campaign_file: self.plan.campaign_file.display().to_string(),
            baseline_sha: self.pinned.sha.clone(),
            search_seed: self.search_seed,
            evo_version: env!("CARGO_PKG_VERSION").to_string(),
        })?;
        let machine = serde_json::to_vec_pretty(&crate::environment::machine())
            .map_err(PipelineError::internal)?;
        self.run_dir
            .write(MACHINE_FILE, &machine)
            .map_err(|e| PipelineError::io("cannot write the node's machine", e))?;
        let index = order.index;
        let new = crate::campaign::collect::NewCandidate {
            name: &order.name,
            source: Source::Patch,
            explanation: None,
            round: 1,
            parent: None,
            cost: None,
        };
        self.add_candidate(index, new, patch)?;
        let baseline = self.prepare_baseline()?;
        self.check_candidate(index, &baseline)?;
        let checked =
            (self.state.candidate_mut(index)).is_some_and(|c| c.status == Status::Checked);
        if checked {
            self.screen(&[index], &baseline)?;
        }
        Ok(())
    }
}
