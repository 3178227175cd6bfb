//! Running one untimed step (build, test, check) in one tree, with its timeout and its logs.
//!
//! Steps go through the same [`Runner`] as timed runs, so a step that hangs is killed with its whole
//! process group and a step's output is hashed the same way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::evidence::result::{StepName, StepRecord, TreeLabel};
use crate::measure::record::RunRecord;
use crate::measure::runner::{RunSpec, Runner, RunnerError};
use crate::pipeline::rundir::RunDir;

/// One step to run.
#[derive(Debug, Clone)]
pub struct StepInput<'a> {
    pub step: StepName,
    pub tree_label: TreeLabel,
    pub tree_root: &'a Path,
    /// Relative to the tree root.
    pub cwd: Option<&'a str>,
    pub command: String,
    pub env: &'a BTreeMap<String, String>,
    pub timeout: Duration,
    /// Also keep stdout here (check outputs), besides the log.
    pub keep_stdout: Option<PathBuf>,
    /// Isolation of the command (off, or bubblewrap with the tree writable).
    pub sandbox: &'a crate::measure::sandbox::SandboxPolicy,
    /// A folder of evo's tools shown read-only and put first on the PATH.
    pub tools: Option<&'a Path>,
}

/// A finished step: its record for the result and the raw run.
#[derive(Debug, Clone)]
pub struct StepOutput {
    pub record: StepRecord,
    pub run: RunRecord,
    pub stdout_path: PathBuf,
    pub stderr_path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("cannot create the log files of step `{step}` in {}: {source}", dir.display())]
    Logs {
        step: String,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot prepare the sandbox of step `{step}`: {source}")]
    Sandbox {
        step: String,
        #[source]
        source: crate::measure::error::SandboxError,
    },
    #[error(transparent)]
    Runner(#[from] RunnerError),
}

/// Runs the step and records it; a failing command is a record, not an error.
pub fn run_step(
    runner: &mut dyn Runner,
    run_dir: &RunDir,
    input: StepInput<'_>,
) -> Result<StepOutput, StepError> {
    let (stdout_log, stderr_log) =
        run_dir
            .log_paths(input.tree_label, &input.step)
            .map_err(|source| StepError::Logs {
                step: input.step.to_string(),
                dir: run_dir.path.clone(),
                source,
            })?;
    let stdout_path = input
        .keep_stdout
        .clone()
        .unwrap_or_else(|| stdout_log.clone());
    let cwd_rel = input.cwd.unwrap_or(".");
    let cwd = input.tree_root.join(cwd_rel);
    let sandbox_error = |source| StepError::Sandbox {
        step: input.step.to_string(),
        source,
    };
    // A baseline build writing a fleet's shared caches holds them until it ends (`_caches`).
    let (sandbox, _caches) = if input.step.builds() {
        let arm = input.tree_label.sandbox_arm();
        let sandbox =
            (input.sandbox.for_build(input.tree_root, Some(&cwd), arm)).map_err(sandbox_error)?;
        (
            sandbox,
            input.sandbox.hold_caches(arm).map_err(sandbox_error)?,
        )
    } else {
        (
            input.sandbox.for_run(input.tree_root, Some(&cwd)),
            Vec::new(),
        )
    };
    let (mut sandbox, mut env) = (sandbox, input.env.clone());
    if let Some(tools) = input.tools {
        if let Some(s) = &mut sandbox {
            s.binds
                .push(crate::measure::sandbox::Bind::same(tools, false));
        }
        let path = (env.get("PATH").cloned()).unwrap_or_else(|| input.sandbox.search_path());
        env.insert("PATH".to_string(), format!("{}:{path}", tools.display()));
    }
    let spec = RunSpec {
        command: input.command.clone(),
        sandbox,
        cwd: Some(cwd),
        env,
        base_env: Some(input.sandbox.environment().clone()),
        timeout: input.timeout,
        stdin_file: None,
        stdout_file: Some(stdout_path.clone()),
        stderr_file: Some(stderr_log.clone()),
    };
    let run = runner.run(&spec);
    if input.step.builds() {
        // Only a build had private cache copies.
        input.sandbox.release(input.tree_root);
    }
    let run = run?;
    let record = StepRecord {
        step: input.step,
        tree: input.tree_label,
        command: input.command,
        cwd: cwd_rel.to_string(),
        status: run.status,
        timed_out: run.timed_out,
        leftover_processes: run.leftover_processes,
        wall_s: run.wall_s,
        stdout_sha256: run.stdout_sha256.clone(),
        stdout_log: run_dir.relative(&stdout_path),
        stderr_log: run_dir.relative(&stderr_log),
    };
    Ok(StepOutput {
        record,
        run,
        stdout_path,
        stderr_path: stderr_log,
    })
}

/// "exit code 2", "killed by signal 11", "timed out after 600 s": for reasons and messages.
pub fn describe_failure(record: &StepRecord, timeout: Duration) -> String {
    use crate::measure::record::ExitStatus;
    if record.timed_out {
        return format!("timed out after {} s and was killed", timeout.as_secs_f64());
    }
    match record.status {
        // The shell's codes for a command it could not find or run.
        ExitStatus::Exited { code: 127 } => "exit code 127 (command not found)".to_string(),
        ExitStatus::Exited { code: 126 } => "exit code 126 (command not executable)".to_string(),
        ExitStatus::Exited { code } => format!("exit code {code}"),
        ExitStatus::Signaled { signal } => format!("killed by signal {signal}"),
    }
}
