//! Instruction counts under callgrind: evidence that does not depend on the machine's noise.
//!
//! On a shared 2-core machine wall time varies 7–8% from run to run whatever is done about it;
//! the number of instructions a deterministic program executes does not. One run of an arm under
//! `valgrind --tool=callgrind --trace-children=yes` gives the instructions of every process it
//! starts. Instructions are not time (a change in memory traffic or parallelism may not show),
//! which every report that uses them says.
//!
//! The count is written by valgrind into a folder the counted run can write, so a hostile run can
//! forge it: a counting run that leaves processes behind, fails, prints other bytes than the
//! arm's timed runs, or leaves anything in the folder that is not a callgrind dump is refused,
//! but a run that writes a plausible dump for one of its own processes and keeps valgrind from
//! overwriting it is not caught. The counts are evidence against honest mistakes, not against an
//! attacker; wall time stays the metric that holds against one.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::{CallgrindError, DumpError};
use super::runner::{RunSpec, Runner};
use super::sandbox::Bind;

/// One arm's instruction count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionCount {
    /// Instructions executed (callgrind's `Ir`), summed over every traced process.
    pub instructions: u64,
    /// sha256 of what the counted run printed on stdout.
    pub stdout_sha256: String,
}

/// `'text'` for `sh`, with embedded single quotes escaped.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Runs `spec` once under callgrind, writing its counts into `out` (created empty), and returns
/// the total. An `Err` says why no count could be had.
pub fn count(
    runner: &mut dyn Runner,
    spec: &RunSpec,
    out: &Path,
) -> Result<InstructionCount, CallgrindError> {
    let stdout_sha256 = run_counted(runner, spec, out)?;
    let instructions = sum_callgrind_totals(out)?;
    if instructions == 0 {
        return Err(CallgrindError::NoCount);
    }
    Ok(InstructionCount {
        instructions,
        stdout_sha256,
    })
}

/// Runs `spec` once under callgrind as [`count`] does and returns where its instructions went.
pub fn profile(
    runner: &mut dyn Runner,
    spec: &RunSpec,
    out: &Path,
) -> Result<super::callgrind_profile::CallgrindProfile, CallgrindError> {
    run_counted(runner, spec, out)?;
    let profile = super::callgrind_profile::read_dir(out)?;
    if profile.instructions == 0 {
        return Err(CallgrindError::NoCount);
    }
    Ok(profile)
}

/// The one run under callgrind, its dumps left in `out`; returns the sha256 of its stdout.
fn run_counted(
    runner: &mut dyn Runner,
    spec: &RunSpec,
    out: &Path,
) -> Result<String, CallgrindError> {
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).map_err(|source| CallgrindError::CreateFolder {
        path: out.to_path_buf(),
        source,
    })?;
    let mut sandbox = spec.sandbox.clone();
    if let Some(sandbox) = &mut sandbox {
        // callgrind writes its counts outside the tree.
        sandbox.binds.push(Bind::same(out, true));
    }
    // The environment pad that spreads timed runs over stack layouts would move the count by
    // however many bytes the shell copies: a counted run gets an empty one.
    let mut env = spec.env.clone();
    env.insert(super::spawn::ENV_PAD.to_string(), String::new());
    let wrapped = RunSpec {
        sandbox,
        env,
        command: format!(
            "valgrind --tool=callgrind --trace-children=yes --callgrind-out-file={}/cg.%p sh -c {}",
            out.display(),
            shell_quote(&spec.command)
        ),
        ..spec.clone()
    };
    let run = runner.run(&wrapped)?;
    if !run.succeeded() {
        return Err(CallgrindError::RunFailed {
            stderr: run.stderr_tail.trim().to_string(),
        });
    }
    if run.leftover_processes {
        return Err(CallgrindError::LeftProcesses);
    }
    Ok(run.stdout_sha256)
}

/// Sum of the `summary:` (or `totals:`) instruction counts of every callgrind file in `dir`.
///
/// The folder is writable by the counted run, so anything in it that valgrind would not have
/// written (a link redirecting a dump elsewhere, a folder, a file that is not a callgrind dump)
/// refuses the whole count instead of being skipped: skipping would let a run drop its own work
/// from the total.
pub fn sum_callgrind_totals(dir: &Path) -> Result<u64, CallgrindError> {
    let mut total = 0u64;
    for (name, text) in dumps(dir)? {
        let line = (text.lines().find(|l| l.starts_with("summary:")))
            .or_else(|| text.lines().find(|l| l.starts_with("totals:")))
            .ok_or_else(|| CallgrindError::NotADump { name: name.clone() })?;
        let count = (line.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| CallgrindError::Dump {
                name,
                source: DumpError::Count {
                    line: line.to_string(),
                },
            })?;
        total = total.saturating_add(count);
    }
    Ok(total)
}

/// The name and text of every file in the callgrind folder `dir`; anything there that is not a
/// plain file refuses the folder.
pub(crate) fn dumps(dir: &Path) -> Result<Vec<(std::ffi::OsString, String)>, CallgrindError> {
    let read_folder = |source| CallgrindError::ReadFolder {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_folder)? {
        let entry = entry.map_err(read_folder)?;
        let path = entry.path();
        let read_file = |source| CallgrindError::ReadFile {
            path: path.clone(),
            source,
        };
        let meta = std::fs::symlink_metadata(&path).map_err(read_file)?;
        let name = entry.file_name();
        if !meta.file_type().is_file() {
            return Err(CallgrindError::NotAFile { name });
        }
        let text = std::fs::read_to_string(&path).map_err(read_file)?;
        files.push((name, text));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("echo 'a b'"), r"'echo '\''a b'\'''");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("sh -c {}", shell_quote("printf '%s' 'x y'")))
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"x y");
    }

    #[test]
    fn callgrind_totals_are_summed_over_every_traced_process() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cg.1"), "events: Ir\nsummary: 1200\n").unwrap();
        std::fs::write(dir.path().join("cg.2"), "events: Ir\nfn=main\ntotals: 34\n").unwrap();
        assert_eq!(sum_callgrind_totals(dir.path()).unwrap(), 1234);
    }

    #[test]
    fn anything_valgrind_would_not_write_refuses_the_count() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cg.1"), "events: Ir\nsummary: 1200\n").unwrap();
        // A link that would send a process's dump out of the folder, so its work is not summed.
        std::os::unix::fs::symlink("/dev/null", dir.path().join("cg.2")).unwrap();
        assert!(sum_callgrind_totals(dir.path()).is_err());
        std::fs::remove_file(dir.path().join("cg.2")).unwrap();
        std::fs::write(dir.path().join("cg.3"), "not a callgrind file\n").unwrap();
        assert!(sum_callgrind_totals(dir.path()).is_err());
    }
}
