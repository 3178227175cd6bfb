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
    /// What the cache simulation (`--cache-sim=yes`) counted, when every dump has its events.
    pub cache: Option<CacheEvents>,
    /// sha256 of what the counted run printed on stdout.
    pub stdout_sha256: String,
}

/// One arm's events under callgrind's cache simulation (`--cache-sim=yes`: a first-level
/// instruction and data cache and a last-level cache modelled on the host's), summed over every
/// traced process. Exact for a deterministic program, like the instruction count, and closer to
/// time: a miss costs cycles an instruction count does not show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CacheEvents {
    /// Instructions executed (`Ir`).
    pub instructions: u64,
    /// First-level misses: instruction reads, data reads and data writes (`I1mr + D1mr + D1mw`).
    pub l1_misses: u64,
    /// Last-level misses, the same three kinds (`ILmr + DLmr + DLmw`).
    pub ll_misses: u64,
}

/// The cycles a first-level miss costs in [`CacheEvents::estimated_cycles`].
pub const L1_MISS_CYCLES: u64 = 10;
/// The cycles a last-level miss costs in [`CacheEvents::estimated_cycles`].
pub const LL_MISS_CYCLES: u64 = 100;

/// The events of `--cache-sim=yes` that [`CacheEvents`] reads, by callgrind's names.
const CACHE_EVENT_NAMES: [&str; 7] = ["Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"];

impl CacheEvents {
    /// The usual estimate of cycles from a cache simulation: one per instruction,
    /// [`L1_MISS_CYCLES`] per first-level miss and [`LL_MISS_CYCLES`] per last-level miss. It
    /// knows nothing of latencies, branch mispredictions, ports or the kernel: a model, which
    /// the wall time must not contradict (docs/design.md §3.12.4).
    pub fn estimated_cycles(&self) -> u64 {
        self.instructions
            .saturating_add(self.l1_misses.saturating_mul(L1_MISS_CYCLES))
            .saturating_add(self.ll_misses.saturating_mul(LL_MISS_CYCLES))
    }
}

/// `'text'` for `sh`, with embedded single quotes escaped.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What a count simulates besides instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simulate {
    /// Instructions only.
    Nothing,
    /// The caches too (`--cache-sim=yes`, about 2.8 times slower: the C kernels' bench 18.7 s
    /// counted, 52.6 s with the caches), for exact evidence's estimated cycles.
    Caches,
}

/// Runs `spec` once under callgrind, writing its counts into `out` (created empty), and returns
/// the total. An `Err` says why no count could be had.
pub fn count(
    runner: &mut dyn Runner,
    spec: &RunSpec,
    out: &Path,
    simulate: Simulate,
) -> Result<InstructionCount, CallgrindError> {
    let stdout_sha256 = run_counted(runner, spec, out, simulate)?;
    let instructions = sum_callgrind_totals(out)?;
    if instructions == 0 {
        return Err(CallgrindError::NoCount);
    }
    Ok(InstructionCount {
        instructions,
        cache: sum_cache_events(out)?,
        stdout_sha256,
    })
}

/// Runs `spec` once under callgrind as [`count`] does and returns where its instructions went.
pub fn profile(
    runner: &mut dyn Runner,
    spec: &RunSpec,
    out: &Path,
) -> Result<super::callgrind_profile::CallgrindProfile, CallgrindError> {
    run_counted(runner, spec, out, Simulate::Nothing)?;
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
    simulate: Simulate,
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
            "valgrind --tool=callgrind{} --trace-children=yes --callgrind-out-file={}/cg.%p \
             sh -c {}",
            match simulate {
                Simulate::Nothing => "",
                Simulate::Caches => " --cache-sim=yes",
            },
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

/// The cache simulation's events summed over every callgrind file in `dir`, read by the names of
/// each file's `events:` line from its `summary:` (or `totals:`) line; `None` when a file lacks
/// one of them (a count made without the simulation).
pub fn sum_cache_events(dir: &Path) -> Result<Option<CacheEvents>, CallgrindError> {
    let mut sums = [0u64; CACHE_EVENT_NAMES.len()];
    for (name, text) in dumps(dir)? {
        let Some(events) = text.lines().find_map(|l| l.strip_prefix("events:")) else {
            return Ok(None);
        };
        let names: Vec<&str> = events.split_whitespace().collect();
        let line = (text.lines().find_map(|l| l.strip_prefix("summary:")))
            .or_else(|| text.lines().find_map(|l| l.strip_prefix("totals:")))
            .ok_or_else(|| CallgrindError::NotADump { name: name.clone() })?;
        let values: Vec<&str> = line.split_whitespace().collect();
        for (sum, wanted) in sums.iter_mut().zip(CACHE_EVENT_NAMES) {
            let Some(column) = names.iter().position(|n| *n == wanted) else {
                return Ok(None);
            };
            // A missing trailing value is zero in callgrind's format.
            let value = match values.get(column) {
                None => 0,
                Some(v) => v.parse::<u64>().map_err(|_| CallgrindError::Dump {
                    name: name.clone(),
                    source: DumpError::Count {
                        line: line.to_string(),
                    },
                })?,
            };
            *sum = sum.saturating_add(value);
        }
    }
    let [instructions, i1, d1r, d1w, il, dlr, dlw] = sums;
    Ok(Some(CacheEvents {
        instructions,
        l1_misses: i1.saturating_add(d1r).saturating_add(d1w),
        ll_misses: il.saturating_add(dlr).saturating_add(dlw),
    }))
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
    fn cache_events_are_read_by_name_and_summed_over_every_process() {
        let dir = tempfile::tempdir().unwrap();
        let events = "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\n";
        std::fs::write(
            dir.path().join("cg.1"),
            format!("{events}summary: 1000 300 200 5 40 10 1 4 2\n"),
        )
        .unwrap();
        // A trailing zero may be left out.
        std::fs::write(
            dir.path().join("cg.2"),
            format!("{events}fn=main\ntotals: 100 30 20 1 2 3 1\n"),
        )
        .unwrap();
        let e = sum_cache_events(dir.path()).unwrap().unwrap();
        assert_eq!(
            e,
            CacheEvents {
                instructions: 1100,
                l1_misses: 5 + 40 + 10 + 1 + 2 + 3,
                ll_misses: 1 + 4 + 2 + 1,
            }
        );
        assert_eq!(e.estimated_cycles(), 1100 + 10 * 61 + 100 * 8);
        // A count without the simulation has no cache events.
        std::fs::write(dir.path().join("cg.3"), "events: Ir\nsummary: 5\n").unwrap();
        assert_eq!(sum_cache_events(dir.path()).unwrap(), None);
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
