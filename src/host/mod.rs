//! What whoever starts a run gives it, instead of the run assuming one machine: when to stop
//! (Ctrl-C here, a job scheduler's signal or a coordinator's decision elsewhere), who keeps other
//! evo runs off the repository, and which key signs (docs/design.md §2.7).
//!
//! `evo confirm` and `evo campaign run` build the local ones in `app`; a test or a remote job
//! passes its own. Nothing here reads process-wide state except [`Stop::ctrl_c`] and
//! [`Hold::lock_repo`], which wrap `interrupt` and `host::lock`.

pub mod lock;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::measure::record::RunRecord;
use crate::measure::runner::{RunSpec, Runner, RunnerError, RunnerFactory};
use crate::receipt::keys::{KeyError, Signer};

/// Something that says whether a run must stop now.
pub trait StopCondition: Send + Sync {
    fn requested(&self) -> bool;
}

/// The stop condition of a run, shared by every stage and runner of it.
#[derive(Clone)]
pub struct Stop(Arc<dyn StopCondition>);

impl Stop {
    /// This process's Ctrl-C, SIGTERM and SIGHUP (`crate::interrupt`).
    pub fn ctrl_c() -> Stop {
        Stop::new(CtrlC)
    }

    pub fn new(condition: impl StopCondition + 'static) -> Stop {
        Stop(Arc::new(condition))
    }

    pub fn requested(&self) -> bool {
        self.0.requested()
    }
}

impl std::fmt::Debug for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Stop").field(&self.requested()).finish()
    }
}

/// The process-wide signal handler's flag.
struct CtrlC;

impl StopCondition for CtrlC {
    fn requested(&self) -> bool {
        crate::interrupt::requested()
    }
}

/// A stop raised by hand: by a coordinator thread, a scheduler's signal handler of the caller's
/// own, or a test.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl StopCondition for StopFlag {
    fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl From<StopFlag> for Stop {
    fn from(flag: StopFlag) -> Stop {
        Stop::new(flag)
    }
}

/// Runners that honour `stop`: none starts once it is requested, and a run that ends after it is
/// discarded (`RunnerError::Interrupted`), as the process runner does for Ctrl-C. So a stop
/// condition other than this process's signals stops a pipeline the same way.
pub fn stoppable(runners: Arc<dyn RunnerFactory>, stop: Stop) -> Arc<dyn RunnerFactory> {
    Arc::new(StoppableRunners { runners, stop })
}

struct StoppableRunners {
    runners: Arc<dyn RunnerFactory>,
    stop: Stop,
}

impl RunnerFactory for StoppableRunners {
    fn runner(&self) -> Box<dyn Runner + Send> {
        Box::new(StoppableRunner {
            runner: self.runners.runner(),
            stop: self.stop.clone(),
        })
    }

    fn timed_runner(&self) -> Box<dyn Runner + Send> {
        Box::new(StoppableRunner {
            runner: self.runners.timed_runner(),
            stop: self.stop.clone(),
        })
    }
}

struct StoppableRunner {
    runner: Box<dyn Runner + Send>,
    stop: Stop,
}

impl Runner for StoppableRunner {
    fn run(&mut self, spec: &RunSpec) -> Result<RunRecord, RunnerError> {
        if self.stop.requested() {
            return Err(RunnerError::Interrupted);
        }
        let record = self.runner.run(spec)?;
        if self.stop.requested() {
            return Err(RunnerError::Interrupted);
        }
        Ok(record)
    }

    fn cpu_split(&self) -> Option<&crate::measure::cpus::CpuSplit> {
        self.runner.cpu_split()
    }
}

/// Who keeps a second evo off the repository while a run builds and measures (two would spoil
/// each other's timings). Held for as long as the run's options live.
#[derive(Debug, Clone)]
pub enum Hold {
    /// This process holds the repository's lock in evo's state folder.
    RepoLock(Arc<crate::host::lock::RepoLock>),
    /// Something outside this process gives the run its machine alone and keeps other runs off
    /// it (a job scheduler's exclusive allocation, or a test's private repository); says what.
    External(String),
}

impl Hold {
    /// Takes the repository's lock for `what` (the command line, shown to a second evo).
    pub fn lock_repo(repo: &Path, what: &str) -> Result<Hold, crate::host::lock::LockError> {
        crate::host::lock::RepoLock::acquire(repo, what).map(|lock| Hold::RepoLock(lock.into()))
    }
}

/// Which key signs a confirmation's receipt.
#[derive(Debug, Clone)]
pub enum SignWith {
    /// The key `evo confirm` looks up on this machine when the run is settled
    /// (`Signer::for_campaign`: `$EVO_SIGNING_KEY`, the campaign's `key`, else the per-user
    /// default, created on first use).
    CampaignKey,
    /// This key, chosen by the caller: a coordinator that keeps its key to itself.
    Signer(Arc<Signer>),
}

impl SignWith {
    /// The signer, looking it up when asked to; `key_file` is the campaign's `key`, resolved;
    /// no key in a work tree or in `untrusted` is used.
    pub fn signer(
        &self,
        key_file: Option<&Path>,
        untrusted: &[crate::receipt::keys::Untrusted],
    ) -> Result<Signer, KeyError> {
        match self {
            SignWith::CampaignKey => Signer::for_campaign(key_file, untrusted),
            SignWith::Signer(signer) => Ok(Signer::clone(signer)),
        }
    }
}

/// The folder of the local cluster `scripts/slurm-cluster` runs (its munge key and socket, the
/// daemons' state): `$EVO_SLURM_DIR`, else `evo/slurm` in the user's cache folder, as the script
/// decides it. A credential for the cluster: no sandboxed run may see it.
pub fn slurm_state_dir() -> Option<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os("EVO_SLURM_DIR") {
        return Some(std::path::PathBuf::from(dir));
    }
    let cache = match std::env::var_os("XDG_CACHE_HOME") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
    };
    Some(cache.join("evo/slurm"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::fake::{FakeBehavior, FakeRunner};
    use std::time::Duration;

    #[test]
    fn a_raised_flag_stops_the_runs_after_it_and_discards_the_run_it_ends() {
        let flag = StopFlag::default();
        let fake = FakeRunner::new(1).with("echo", FakeBehavior::Prints("x\n".into()));
        let runners = stoppable(Arc::new(fake.clone()), flag.clone().into());
        let mut runner = runners.runner();
        let spec = RunSpec::new("echo", Duration::from_secs(1));
        assert!(runner.run(&spec).is_ok());
        flag.raise();
        assert!(matches!(runner.run(&spec), Err(RunnerError::Interrupted)));
        assert!(matches!(
            runners.timed_runner().run(&spec),
            Err(RunnerError::Interrupted)
        ));
        // The first run only: nothing starts after the stop.
        assert_eq!(fake.calls(), ["echo"]);
        assert!(!crate::interrupt::requested());
    }

    #[test]
    fn a_stop_during_a_run_discards_its_record() {
        struct AfterOneCall(FakeRunner);
        impl StopCondition for AfterOneCall {
            fn requested(&self) -> bool {
                !self.0.calls().is_empty()
            }
        }
        let fake = FakeRunner::new(1).with("echo", FakeBehavior::Prints("x\n".into()));
        let runners = stoppable(
            Arc::new(fake.clone()),
            Stop::new(AfterOneCall(fake.clone())),
        );
        let spec = RunSpec::new("echo", Duration::from_secs(1));
        assert!(matches!(
            runners.runner().run(&spec),
            Err(RunnerError::Interrupted)
        ));
        assert_eq!(fake.calls(), ["echo"]);
    }
}
