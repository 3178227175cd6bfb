//! The runners of this machine: what `evo confirm` and `evo campaign run` are given to run their
//! commands for real. The helper binary and the CPU split are settled here, from the command line
//! and the campaign, so the pipelines never build a process runner themselves.

use std::path::PathBuf;

use super::runner::{Runner, RunnerFactory};
use super::spawn::ProcessRunner;
use crate::spec::modes::Affinity;

/// Hands out [`ProcessRunner`]s that start their commands through `helper`.
#[derive(Debug, Clone)]
pub struct LocalRunners {
    /// The `evo` binary used as the helper for every child process.
    pub helper: PathBuf,
    /// Whether a timed runner splits the CPUs between evo and the commands.
    pub affinity: Affinity,
}

impl RunnerFactory for LocalRunners {
    fn runner(&self) -> Box<dyn Runner + Send> {
        Box::new(ProcessRunner::with_helper(self.helper.clone()))
    }

    fn timed_runner(&self) -> Box<dyn Runner + Send> {
        Box::new(ProcessRunner::with_helper(self.helper.clone()).with_affinity(self.affinity))
    }
}
