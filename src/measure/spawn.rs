//! The real [`Runner`]: spawns each command through evo's helper process. (In progress.)

use std::path::PathBuf;

use super::record::RunRecord;
use super::runner::{RunSpec, Runner, RunnerError};

/// Runs commands for real, each through a fresh `evo __exec-helper` process.
pub struct ProcessRunner {
    helper: PathBuf,
}

impl ProcessRunner {
    /// Uses the running executable as the helper (the `evo` binary itself).
    pub fn new() -> std::io::Result<ProcessRunner> {
        Ok(ProcessRunner {
            helper: std::env::current_exe()?,
        })
    }

    /// Uses another `evo` binary as the helper (tests and benchmarks are not `evo` themselves).
    pub fn with_helper(helper: PathBuf) -> ProcessRunner {
        ProcessRunner { helper }
    }
}

impl Runner for ProcessRunner {
    fn run(&mut self, spec: &RunSpec) -> Result<RunRecord, RunnerError> {
        todo!("{:?} {spec:?}", self.helper)
    }
}
