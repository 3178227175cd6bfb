//! Running a campaign's confirmations on other machines (issue 13, docs/design.md §2.8): each
//! confirmation becomes one Slurm job holding a whole node, which runs
//! `evo confirm --request … --unsigned`; the coordinator (the process running
//! `evo campaign run`, the only one with the key) checks what comes back as untrusted input and
//! signs it.
//!
//! `scheduler` is what the coordinator asks of a scheduler (the [`scheduler::Scheduler`] trait),
//! `slurm` the client that implements it on a cluster and `fake` an in-process one for tests;
//! `job` builds a confirmation's job (its script and environment),
//! `collect` checks a node's unsigned result. (The build caches the nodes of one machine kind share
//! are `measure::caches`, beside the sandbox that binds them.) The campaign's side (journal, waiting, resubmitting)
//! is `campaign::fleet` (its folder).

pub mod collect;
pub mod fake;
pub mod job;
pub mod scheduler;
pub mod slurm;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::spec::Campaign;
use crate::spec::fleet::{Engine, FleetSettings};

/// `--fleet ENGINE` applied to the campaign: `local` drops the section, `slurm` keeps the
/// campaign's settings (or takes the defaults) with the Slurm engine.
pub fn choose_engine(spec: &mut Campaign, engine: Engine) {
    match engine {
        Engine::Local => spec.fleet = None,
        Engine::Slurm => {
            spec.fleet.get_or_insert_with(FleetSettings::slurm).engine = Engine::Slurm;
        }
    }
}

/// A campaign's fleet, resolved: where jobs' files go, which evo the nodes run, which cluster.
#[derive(Debug, Clone)]
pub struct FleetPlan {
    pub settings: FleetSettings,
    /// Absolute; mounted at the same path on every node.
    pub shared_dir: PathBuf,
    /// The evo binary the jobs run: this one, which must be at the same path on the nodes.
    pub evo: PathBuf,
    /// Who runs the jobs: the Slurm client, or a test's fake.
    pub scheduler: Arc<dyn scheduler::Scheduler>,
}

impl FleetPlan {
    /// The folder of the caches the jobs share (`<shared_dir>/caches`), `None` when the campaign
    /// turned sharing off.
    pub fn caches_root(&self) -> Option<PathBuf> {
        (self.settings.share_caches)
            .then(|| self.shared_dir.join(crate::measure::caches::CACHES_DIR))
    }
}

/// Why a campaign's fleet cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("cannot find the evo binary the fleet's jobs would run: {0}")]
    NoEvo(#[source] std::io::Error),
}

/// The fleet of the campaign in `campaign_file`, whose jobs go to `scheduler`; `None` when its
/// confirmations run here.
pub fn plan(
    campaign_file: &Path,
    spec: &Campaign,
    output_dir: &Path,
    scheduler: Arc<dyn scheduler::Scheduler>,
) -> Result<Option<FleetPlan>, FleetError> {
    let Some(settings) = spec.fleet.clone() else {
        return Ok(None);
    };
    if settings.engine == Engine::Local {
        return Ok(None);
    }
    let shared_dir = match &settings.shared_dir {
        Some(dir) => crate::plan::resolve_in(campaign_file, dir),
        None => output_dir.to_path_buf(),
    };
    let evo = std::env::current_exe().map_err(FleetError::NoEvo)?;
    Ok(Some(FleetPlan {
        settings,
        shared_dir,
        evo,
        scheduler,
    }))
}
