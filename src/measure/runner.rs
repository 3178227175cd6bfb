//! The seam between measurement and real processes.
//!
//! Everything that schedules runs talks to a [`Runner`]; the real one spawns children through
//! evo's minimal helper process (see `spawn`), the fake one (see `fake`) returns scripted timings
//! so scheduling and statistics can be tested without processes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::record::RunRecord;

/// What to run: a shell command line, where, with which extra environment, for how long at most.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// Passed to `sh -c`.
    pub command: String,
    /// Working directory; `None` means evo's current directory.
    pub cwd: Option<PathBuf>,
    /// Variables added to (or overriding) the base environment.
    pub env: BTreeMap<String, String>,
    /// The base environment: when set, the command gets only this plus `env` (code under test);
    /// when `None`, evo's whole environment plus `env` (`evo bench`, the user's own commands).
    pub base_env: Option<BTreeMap<String, String>>,
    /// After this long the child's whole process group gets TERM, then KILL after the grace period.
    pub timeout: Duration,
    /// When set, the command reads its stdin from this file; otherwise stdin is empty.
    pub stdin_file: Option<PathBuf>,
    /// When set, stdout is also written to this file (capped at [`LOG_CAP_BYTES`]).
    pub stdout_file: Option<PathBuf>,
    /// When set, stderr is also written to this file (capped at [`LOG_CAP_BYTES`]).
    pub stderr_file: Option<PathBuf>,
    /// When set, the command runs inside this sandbox.
    pub sandbox: Option<super::sandbox::Sandbox>,
}

/// Most bytes of one stream evo writes to a log file; the hash still covers everything.
pub const LOG_CAP_BYTES: u64 = 64 * 1024 * 1024;

impl RunSpec {
    pub fn new(command: impl Into<String>, timeout: Duration) -> RunSpec {
        RunSpec {
            command: command.into(),
            cwd: None,
            env: BTreeMap::new(),
            base_env: None,
            timeout,
            stdin_file: None,
            stdout_file: None,
            stderr_file: None,
            sandbox: None,
        }
    }
}

/// Failure to run a command at all (as opposed to a command that ran and failed).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("could not start the helper process for `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the helper process for `{command}` failed: {source}")]
    Helper {
        command: String,
        #[source]
        source: super::error::HelperError,
    },
    /// The user stopped evo (Ctrl-C) before or while the command ran; the run is discarded.
    #[error("{}", crate::interrupt::MESSAGE)]
    Interrupted,
    #[error("I/O error while running `{command}`: {source}")]
    Io {
        command: String,
        #[source]
        source: std::io::Error,
    },
}

/// Runs one command to completion and reports what it observed.
///
/// A command that exits non-zero or times out is *not* an error here: it is a [`RunRecord`] whose
/// status says so. Callers decide whether that is fatal.
pub trait Runner {
    fn run(&mut self, spec: &RunSpec) -> Result<RunRecord, RunnerError>;

    /// The CPUs of evo and of the commands while this runner lives, when they are split (only
    /// the real runner splits them); recorded with the environment.
    fn cpu_split(&self) -> Option<&super::cpus::CpuSplit> {
        None
    }
}

/// Hands out runners, so a pipeline never decides how its commands are run: `evo` passes the
/// real ones (built from the command line, with the helper binary and the CPU split), tests a
/// scripted fake. Builds run on parallel threads, so each thread asks for its own runner.
pub trait RunnerFactory: Send + Sync {
    /// A runner for untimed work (builds, tests, checks, agents, instruction counts).
    fn runner(&self) -> Box<dyn Runner + Send>;

    /// A runner for timed runs. While it lives it may split the CPUs between evo's thread and
    /// the commands ([`Runner::cpu_split`]), so it is used and dropped on the thread that asked.
    fn timed_runner(&self) -> Box<dyn Runner + Send> {
        self.runner()
    }
}
