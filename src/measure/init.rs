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
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rustix::io::FdFlags;
use rustix::process::{DumpableBehavior, WaitOptions};
use serde::{Deserialize, Serialize};

use super::error::InitError;
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
    let mut command: Vec<OsString> = args.collect();
    let limits = match command.first().and_then(|a| RLimits::parse(a)) {
        Some(limits) => {
            command.remove(0);
            Some(limits)
        }
        None => None,
    };
    if let Some(limits) = &limits
        && let Err(message) = limits.apply()
    {
        eprintln!("evo {INIT_ARG}: {message}");
        return Some(INIT_FAILURE);
    }
    Some(match run(&command) {
        Ok(code) => {
            if let Some(limits) = &limits {
                limits.say_if_reached(code);
            }
            code
        }
        Err(message) => {
            eprintln!("evo {INIT_ARG}: {message}");
            INIT_FAILURE
        }
    })
}

fn run(command: &[OsString]) -> Result<i32, InitError> {
    let (program, args) = command.split_first().ok_or(InitError::NoCommand)?;
    // Not dumpable: no process of the run can trace this one or read its descriptors. Setting it
    // on oneself to "not dumpable" has no failure case the kernel documents.
    let _ = rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable);
    let mut pipe = report_pipe()?;
    let start = Instant::now();
    let child = Command::new(program)
        .args(args)
        .spawn()
        .map_err(|source| InitError::Start {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
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
    let json = serde_json::to_vec(&report).map_err(InitError::Report)?;
    // A helper that stopped listening (evo interrupted) is not this run's failure.
    let _ = pipe.write_all(&json);
    Ok(status)
}

/// Takes the report pipe at [`INIT_REPORT_FD`], close-on-exec so no process of the run inherits
/// it; an error when it is not open.
fn report_pipe() -> Result<File, InitError> {
    // SAFETY: the helper put the report pipe's write end at this number before exec and bubblewrap
    // passed it through; nothing in this process has claimed or closed it (this runs before any
    // other file is opened). The borrow lasts for one fcntl call, which on a descriptor that is
    // not open fails with EBADF and changes nothing; only once it succeeded, so the descriptor is
    // open, does the returned `File` own it, and nothing else ever uses or closes that number.
    unsafe {
        rustix::io::fcntl_setfd(BorrowedFd::borrow_raw(INIT_REPORT_FD), FdFlags::CLOEXEC)
            .map_err(InitError::ReportPipe)?;
        Ok(File::from_raw_fd(INIT_REPORT_FD))
    }
}

/// The per-process limits evo's process 1 sets on itself before it starts the command, which
/// every process of the command inherits and none can raise (no capabilities): `RLIMIT_FSIZE`
/// and `RLIMIT_CPU` (`sandbox.limits.file_mib`, `cpu_s`). Never `RLIMIT_AS`, which breaks
/// AddressSanitizer's huge reservations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RLimits {
    pub file_mib: u32,
    pub cpu_s: u32,
}

/// How the limits are passed to the init: the argument right after [`INIT_ARG`].
const LIMITS_PREFIX: &str = "--rlimits=";

impl RLimits {
    pub fn of(limits: &crate::spec::campaign::SandboxLimits) -> RLimits {
        RLimits {
            file_mib: limits.file_mib.get(),
            cpu_s: limits.cpu_s.get(),
        }
    }

    /// `--rlimits=FILE_MIB,CPU_S`.
    pub fn arg(&self) -> String {
        format!("{LIMITS_PREFIX}{},{}", self.file_mib, self.cpu_s)
    }

    fn parse(arg: &OsStr) -> Option<RLimits> {
        let (file, cpu) = arg.to_str()?.strip_prefix(LIMITS_PREFIX)?.split_once(',')?;
        Some(RLimits {
            file_mib: file.parse().ok()?,
            cpu_s: cpu.parse().ok()?,
        })
    }

    fn apply(&self) -> Result<(), InitError> {
        use rustix::process::{Resource, Rlimit, setrlimit};
        let both = |n: u64| Rlimit {
            current: Some(n),
            maximum: Some(n),
        };
        let file = both(u64::from(self.file_mib) << 20);
        setrlimit(Resource::Fsize, file).map_err(InitError::FileLimit)?;
        // The kernel sends SIGXCPU at the soft limit but SIGKILL at the hard one, and checks the
        // hard one first: one second apart, the process is told why it ends.
        let cpu = Rlimit {
            current: Some(u64::from(self.cpu_s)),
            maximum: Some(u64::from(self.cpu_s) + 1),
        };
        setrlimit(Resource::Cpu, cpu).map_err(InitError::CpuLimit)
    }

    /// Says on stderr which limit a failed command reached: a process killed by `SIGXFSZ` or
    /// `SIGXCPU` (its status, or the shell's `128 + n` for it), or, since a build tool reports
    /// its child's death its own way, a file of the largest size left in `/tmp` or below the
    /// working directory.
    fn say_if_reached(&self, code: i32) {
        if code == 0 {
            return;
        }
        let limit = u64::from(self.file_mib) << 20;
        let full_file = code - 128 == libc::SIGXFSZ
            || [Path::new("/tmp"), Path::new(".")]
                .iter()
                .any(|dir| holds_file_of(dir, limit, &mut { FILES_LOOKED_AT }));
        let line = match code - 128 {
            _ if full_file => format!(
                "evo: the file size limit ({} MiB, sandbox.limits.file_mib) was reached",
                self.file_mib
            ),
            libc::SIGXCPU => format!(
                "evo: the CPU time limit ({} s per process, sandbox.limits.cpu_s) was reached",
                self.cpu_s
            ),
            _ => return,
        };
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// How many entries the look for a file at the size limit reads at most, per folder searched.
const FILES_LOOKED_AT: usize = 100_000;

/// Whether a regular file of at least `size` bytes lies below `dir` (links not followed; at
/// most `budget` entries read).
fn holds_file_of(dir: &Path, size: u64, budget: &mut usize) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && holds_file_of(&entry.path(), size, budget) {
            return true;
        }
        if kind.is_file() && entry.metadata().is_ok_and(|m| m.len() >= size) {
            return true;
        }
    }
    false
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_argument_round_trips_and_a_command_is_never_taken_for_it() {
        let limits = RLimits {
            file_mib: 16384,
            cpu_s: 7200,
        };
        let arg = OsString::from(limits.arg());
        assert_eq!(RLimits::parse(&arg), Some(limits));
        for other in ["/bin/sh", "--rlimits=1", "--rlimits=a,2", "-c"] {
            assert_eq!(RLimits::parse(OsStr::new(other)), None, "{other}");
        }
    }

    #[test]
    fn a_file_at_the_limit_is_found_below_a_folder_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/small"), [0u8; 10]).unwrap();
        std::os::unix::fs::symlink("/usr", dir.path().join("a/usr")).unwrap();
        assert!(!holds_file_of(dir.path(), 11, &mut { FILES_LOOKED_AT }));
        assert!(holds_file_of(dir.path(), 10, &mut { FILES_LOOKED_AT }));
        assert!(!holds_file_of(dir.path(), 10, &mut 1));
    }
}
