//! evo's process 1 inside a sandbox: every process a run starts is accounted for.
//!
//! A sandboxed run gets its own PID namespace, and its first process is evo itself in this mode
//! (`bwrap --as-pid-1 … /run/evo/init __sandbox-init /bin/sh -c CMD`). It starts the command,
//! reaps whatever is orphaned to it, and when the command has exited counts the processes still
//! alive in the namespace, whatever they did to their names, threads, groups or sessions: a
//! daemon is a process in `/proc`, and the namespace's `/proc` shows nothing else. It reports the
//! count on a pipe the helper gave it, then exits; the kernel kills everything left in a PID
//! namespace whose process 1 has gone, so nothing a run starts outlives it, and no run can see or
//! signal another run's processes. It also times the command itself, from its spawn to its exit,
//! so the sandbox's setup is not counted as the command's time.
//!
//! Processes inside cannot stop this one (process 1 of a namespace ignores signals it has no
//! handler for, even SIGKILL, from inside), trace it or read its descriptors (it is not dumpable),
//! or write to its report pipe (close-on-exec before anything else starts).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{BorrowedFd, FromRawFd};
use std::process::Command;
use std::time::Instant;

use rustix::io::FdFlags;
use rustix::process::{DumpableBehavior, WaitOptions};
use serde::{Deserialize, Serialize};

use super::helper::{Reaped, rusage_from, wait4};
use super::record::Rusage;

/// The argument that selects this mode.
pub const INIT_ARG: &str = "__sandbox-init";
/// Where the evo executable is bound inside the sandbox.
pub const INIT_PATH: &str = "/run/evo/init";
/// The descriptor the report goes to (set up by the helper, passed through bubblewrap).
pub const INIT_REPORT_FD: i32 = 4;
/// Exit code when the init itself cannot work (not the command's).
const INIT_FAILURE: i32 = 125;

/// What process 1 tells the helper.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitReport {
    /// Processes still alive when the command exited (all killed with the namespace).
    pub leftovers: u32,
    /// Monotonic time from just before the command's spawn to its exit, inside the sandbox.
    pub wall_s: f64,
    /// The command's resource usage (with that of the descendants it waited for).
    pub rusage: Rusage,
}

/// Runs process 1 when evo was started as `evo __sandbox-init PROGRAM ARGS…`; returns its exit
/// code, or `None` in any other mode.
pub fn maybe_run_init() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(INIT_ARG)) {
        return None;
    }
    let command: Vec<OsString> = args.collect();
    Some(match run(&command) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("evo {INIT_ARG}: {message}");
            INIT_FAILURE
        }
    })
}

fn run(command: &[OsString]) -> Result<i32, String> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| "no command given".to_string())?;
    // Not dumpable: no process of the run can trace this one or read its descriptors. Setting it
    // on oneself to "not dumpable" has no failure case the kernel documents.
    let _ = rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable);
    let mut pipe = report_pipe()?;
    let start = Instant::now();
    let child = Command::new(program)
        .args(args)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
    // Linux pids are at most 2^22, so they fit a pid_t.
    let pid = child.id() as libc::pid_t;
    let (status, rusage) = reap_until(pid);
    let wall_s = start.elapsed().as_secs_f64();
    reap_exited();
    say_if_tmp_is_full();
    let report = InitReport {
        leftovers: living_processes(),
        wall_s,
        rusage,
    };
    let json = serde_json::to_vec(&report).map_err(|e| e.to_string())?;
    // A helper that stopped listening (evo interrupted) is not this run's failure.
    let _ = pipe.write_all(&json);
    Ok(status)
}

/// Takes the report pipe at [`INIT_REPORT_FD`], close-on-exec so no process of the run inherits
/// it; an error when it is not open.
fn report_pipe() -> Result<File, String> {
    // SAFETY: the helper put the report pipe's write end at this number before exec and bubblewrap
    // passed it through; nothing in this process has claimed or closed it (this runs before any
    // other file is opened). The borrow lasts for one fcntl call, which on a descriptor that is
    // not open fails with EBADF and changes nothing; only once it succeeded, so the descriptor is
    // open, does the returned `File` own it, and nothing else ever uses or closes that number.
    unsafe {
        rustix::io::fcntl_setfd(BorrowedFd::borrow_raw(INIT_REPORT_FD), FdFlags::CLOEXEC)
            .map_err(|errno| format!("report descriptor {INIT_REPORT_FD} is not open: {errno}"))?;
        Ok(File::from_raw_fd(INIT_REPORT_FD))
    }
}

/// When the command left the sandbox's `/tmp` (a tmpfs of `sandbox.limits.tmp_mib`) full, says so
/// as the last line of its stderr, so the step's record and its gate's detail name the limit
/// rather than leave "No space left on device" to be guessed at.
fn say_if_tmp_is_full() {
    let Ok(fs) = rustix::fs::statvfs("/tmp") else {
        return;
    };
    let total = fs.f_blocks.saturating_mul(fs.f_frsize);
    let free = fs.f_bavail.saturating_mul(fs.f_frsize);
    if total > 0 && free.saturating_mul(1000) < total {
        let mib = total >> 20;
        let line = format!("evo: the /tmp limit ({mib} MiB, sandbox.limits.tmp_mib) was reached");
        // Nothing to do when stderr is gone: the status still says the command failed.
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// Reaps children (the command and any orphan) until the command itself has exited; returns its
/// exit code as a shell would (128 + n for a signal) and its resource usage.
fn reap_until(command: libc::pid_t) -> (i32, Rusage) {
    loop {
        let Reaped { pid, status, usage } = match wait4(-1) {
            Ok(reaped) => reaped,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return (INIT_FAILURE, Rusage::default()),
        };
        if pid == command {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else if libc::WIFSIGNALED(status) {
                128 + libc::WTERMSIG(status)
            } else {
                INIT_FAILURE
            };
            return (code, rusage_from(&usage));
        }
    }
}

/// Reaps every child that has already exited, so zombies are not counted as living.
fn reap_exited() {
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

/// Processes in this namespace other than process 1. A process whose leader thread has exited
/// still has its `/proc` entry while any of its threads runs, so it is counted too.
fn living_processes() -> u32 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let count = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != 1)
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}
