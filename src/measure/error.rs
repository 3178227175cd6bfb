//! Why a measurement could not be made: the sandbox could not be had, evo's process 1 or the
//! helper failed, or a run under callgrind gave no count. One enum per stage, each variant
//! carrying the path, command or status involved and, where another error caused it, that error
//! as its `source`, so `failure::Failure` prints the whole chain.
//!
//! Messages name the cause inline ("cannot create X: permission denied") as the rest of evo's
//! do; the chain is kept besides, for what reads it (`Failure::render` prints a cause only when
//! the message above does not say it already).

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use super::init::INIT_REPORT_FD;

/// Why runs cannot be sandboxed as asked, or a sandboxed build cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("bubblewrap (`bwrap`) is not installed")]
    NotInstalled,
    #[error("`{}` could not start: {source}", bwrap.display())]
    CannotStart {
        bwrap: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "`{}` cannot create an unprivileged sandbox on this machine (user and PID namespaces): \
         {stderr}",
        bwrap.display()
    )]
    NoNamespaces { bwrap: PathBuf, stderr: String },
    /// `sandbox.mode` is `on` and the probe failed for the reason inside.
    #[error(
        "the sandbox is required (sandbox.mode \"on\"), but {0}; install bubblewrap (Debian: \
         apt-get install bubblewrap) on a machine that allows user namespaces, or use sandbox \
         mode \"auto\" to run unsandboxed with a warning"
    )]
    Required(#[source] Box<SandboxError>),
    #[error("cannot create the shared cache {}: {source}", path.display())]
    CreateSharedCache {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot lock the shared cache {}: {source}", path.display())]
    LockSharedCache {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The folder of a candidate's private cache copies.
    #[error("cannot create {}: {source}", path.display())]
    CreateCopies {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot run `cp` to copy {}: {source}", cache.display())]
    RunCopy {
        cache: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(
        "could not copy the cache {} for the candidate's build ({status})",
        cache.display()
    )]
    CopyFailed { cache: PathBuf, status: ExitStatus },
}

/// Why evo's process 1 inside a sandbox (`measure::init`) could not run the command.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("no command given")]
    NoCommand,
    #[error("report descriptor {INIT_REPORT_FD} is not open: {0}")]
    ReportPipe(#[source] rustix::io::Errno),
    #[error("cannot start {program}: {source}")]
    Start {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot write the report: {0}")]
    Report(#[source] serde_json::Error),
    #[error("cannot limit file sizes: {0}")]
    FileLimit(#[source] rustix::io::Errno),
    #[error("cannot limit CPU time: {0}")]
    CpuLimit(#[source] rustix::io::Errno),
}

/// Why the helper process gave no report of its command (`runner::RunnerError::Helper`).
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// The helper's own complaint: the last line it wrote to stderr.
    #[error("{0}")]
    Said(String),
    #[error("helper ended with {status}; last stderr line: {last_line:?}")]
    Ended {
        status: ExitStatus,
        last_line: String,
    },
    #[error("it wrote no report; last stderr line: {last_line:?}")]
    NoReport { last_line: String },
    #[error("could not read its report: {0}")]
    ReadReport(#[source] io::Error),
    #[error("unreadable report: {0}")]
    Unreadable(#[source] serde_json::Error),
    /// The thread that ran the command panicked (a step run beside another).
    #[error("the thread running this step panicked")]
    Panicked,
    /// The fake runner of tests was asked for a command it has no answer for.
    #[error("the fake runner has no script for this command")]
    Unscripted,
}

/// Why one callgrind file is not a dump evo can read (`measure::callgrind_profile`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DumpError {
    #[error("a cost line without its positions: `{line}`")]
    NoPositions { line: String },
    #[error("unreadable position in `{line}`")]
    Position { line: String },
    #[error("unreadable cost in `{line}`")]
    Cost { line: String },
    #[error("not a callgrind dump (no `summary:` or `totals:` line)")]
    NoTotal,
    #[error("unreadable count `{line}`")]
    Count { line: String },
}

/// Why a run under callgrind gave no instruction count or profile (`measure::callgrind`).
#[derive(Debug, thiserror::Error)]
pub enum CallgrindError {
    #[error("cannot create the callgrind folder {}: {source}", path.display())]
    CreateFolder {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read the callgrind folder {}: {source}", path.display())]
    ReadFolder {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// One entry of the folder (its type or its text).
    #[error("cannot read {} in the callgrind folder: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Runner(#[from] super::runner::RunnerError),
    #[error("the run under callgrind failed (is valgrind installed?): {stderr}")]
    RunFailed { stderr: String },
    #[error("the run under callgrind left processes behind")]
    LeftProcesses,
    #[error("callgrind wrote no count")]
    NoCount,
    /// A link, a folder or anything else valgrind would not have written.
    #[error("the callgrind folder holds {name:?}, which is not a plain file: not counted")]
    NotAFile { name: OsString },
    #[error("{name:?} in the callgrind folder is not a callgrind dump")]
    NotADump { name: OsString },
    #[error("{name:?}: {source}")]
    Dump {
        name: OsString,
        #[source]
        source: DumpError,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Failure;

    #[test]
    fn a_required_sandbox_says_why_once_and_keeps_the_cause() {
        let io = io::Error::new(io::ErrorKind::PermissionDenied, "permission denied");
        let why = SandboxError::CannotStart {
            bwrap: "/usr/bin/bwrap".into(),
            source: io,
        };
        let f = Failure::usage(SandboxError::Required(Box::new(why)));
        let chain: Vec<String> = f.error.chain().map(|c| c.to_string()).collect();
        assert_eq!(chain.len(), 3, "{chain:?}");
        assert_eq!(chain[2], "permission denied");
        assert!(chain[0].contains("but `/usr/bin/bwrap` could not start: permission denied;"));
        // Every cause is in the message already: printed once.
        assert_eq!(f.render().lines().count(), 1, "{}", f.render());
    }
}
