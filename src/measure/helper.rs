//! The helper mode of the `evo` binary: the tiny process that starts each timed command.
//!
//! A forked child's `ru_maxrss` starts from its parent's resident memory at fork time, and Linux
//! keeps that high-water mark across `exec`. evo itself may be large, so it never forks a timed
//! command itself: it re-executes its own binary as
//!
//! ```text
//! evo __exec-helper <report-path> <timeout-ms> <grace-ms> <command>
//! ```
//!
//! which parses those four arguments with std only, starts `/bin/sh -c <command>` in its own
//! process group, waits for it with `wait4`, enforces the timeout (TERM to the group, grace, KILL),
//! kills whatever the command left behind in its group, and writes a [`HelperReport`] as JSON to
//! the report path. The helper is a few MiB resident when it forks, so the command's max RSS is
//! the command's own. The command's stdout and stderr are the helper's, which the parent pipes.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::io::{Errno, FdFlags};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, WaitOptions};
use serde::{Deserialize, Serialize};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::init::{INIT_REPORT_FD, InitReport};
use super::record::{ExitStatus, Rusage};

/// The first argument that puts `evo` into helper mode.
pub const HELPER_ARG: &str = "__exec-helper";

/// The helper's exit code when it could not do its job (bad arguments, spawn or wait failed, report
/// not written). Distinct from anything the helper would report for a command, because the
/// helper's own exit code never carries the command's status: that goes in the report.
pub const HELPER_FAILURE_CODE: i32 = 125;

/// How long the helper waits for killed leftovers to disappear before it gives up on them.
const LEFTOVER_WAIT: Duration = Duration::from_secs(1);

/// The helper's arguments after [`HELPER_ARG`], in their fixed order.
#[derive(Debug, Clone, PartialEq)]
pub struct HelperArgs {
    /// Where the helper writes its JSON report.
    pub report: PathBuf,
    /// After this long the command's process group gets TERM.
    pub timeout: Duration,
    /// After TERM, this long before KILL.
    pub grace: Duration,
    /// The command's working directory (the helper's own stays where evo started it, outside
    /// any tree, so a candidate looking for processes working in the other arm's tree finds the
    /// other arm's command, never evo's helper). `None`: the helper's own.
    pub cwd: Option<PathBuf>,
    /// Passed to `/bin/sh -c`.
    pub command: OsString,
    /// Runs `/bin/sh -c <command>` through this argument list when not empty (the sandbox,
    /// `bwrap ... --`); the wrapper then is the process whose group and rusage are observed.
    pub wrapper: Vec<OsString>,
}

impl HelperArgs {
    /// The full argument list for the helper process, starting with [`HELPER_ARG`].
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = vec![
            HELPER_ARG.into(),
            self.report.clone().into_os_string(),
            millis(self.timeout).to_string().into(),
            millis(self.grace).to_string().into(),
            self.cwd.clone().unwrap_or_default().into_os_string(),
            self.command.clone(),
        ];
        args.extend(self.wrapper.iter().cloned());
        args
    }

    /// Parses the arguments that follow [`HELPER_ARG`].
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<HelperArgs, HelperError> {
        let mut args: Vec<OsString> = args.into_iter().collect();
        let wrapper = args.split_off(args.len().min(5));
        let [report, timeout, grace, cwd, command] =
            <[OsString; 5]>::try_from(args).map_err(|args| {
                HelperError::Usage(format!(
                    "expected at least 5 arguments (<report-path> <timeout-ms> <grace-ms> <cwd> \
                     <command> [wrapper...]), got {}",
                    args.len()
                ))
            })?;
        Ok(HelperArgs {
            report: report.into(),
            timeout: parse_millis("timeout-ms", &timeout)?,
            grace: parse_millis("grace-ms", &grace)?,
            cwd: (!cwd.is_empty()).then(|| PathBuf::from(cwd)),
            command,
            wrapper,
        })
    }
}

/// Whole milliseconds, rounded up so a tiny timeout never becomes "no time at all".
fn millis(duration: Duration) -> u64 {
    let ms = duration.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

fn parse_millis(name: &str, value: &OsStr) -> Result<Duration, HelperError> {
    value
        .to_str()
        .and_then(|text| text.parse::<u64>().ok())
        .map(Duration::from_millis)
        .ok_or_else(|| HelperError::Usage(format!("{name} must be a whole number, got {value:?}")))
}

/// The file descriptor on which `ProcessRunner` hands the helper a pipe for its report.
pub const REPORT_FD: libc::c_int = 3;
/// The report path that names that pipe.
pub const REPORT_FD_PATH: &str = "/dev/fd/3";

/// What the helper observed about the command; the parent turns it into a `RunRecord`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HelperReport {
    /// Monotonic time from just before spawn to the moment the command was seen to exit.
    pub wall_s: f64,
    pub rusage: Rusage,
    pub status: ExitStatus,
    pub timed_out: bool,
    pub leftover_processes: bool,
}

/// Why the helper could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("bad arguments: {0}")]
    Usage(String),
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("wait4 returned a status that is neither an exit nor a signal: {0:#x}")]
    OddStatus(i32),
}

fn os_error(what: &'static str) -> impl FnOnce(std::io::Error) -> HelperError {
    move |source| HelperError::Os { what, source }
}

/// Called first thing in `main`: when the arguments ask for helper mode, runs it and returns the
/// exit code; otherwise returns `None` without touching anything.
pub fn maybe_run_helper() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(HELPER_ARG)) {
        return None;
    }
    match HelperArgs::parse(args).and_then(|args| run_helper(&args)) {
        Ok(()) => Some(0),
        Err(error) => {
            eprintln!("evo {HELPER_ARG}: {error}");
            Some(HELPER_FAILURE_CODE)
        }
    }
}

fn run_helper(args: &HelperArgs) -> Result<(), HelperError> {
    if args.report == Path::new(REPORT_FD_PATH) {
        // The report pipe is the helper's alone: the command must not inherit it (a daemon
        // holding it would keep evo waiting for the end of the report). Best effort: a missing
        // descriptor makes the report's write below fail, which is reported.
        // SAFETY: the parent put the report pipe at this number before exec (`spawn.rs`), and
        // nothing in this process has claimed or closed it yet; the borrow lasts for this one
        // fcntl call, which on a descriptor that is not open fails with EBADF and does nothing.
        let report_fd = unsafe { BorrowedFd::borrow_raw(REPORT_FD) };
        let _ = rustix::io::fcntl_setfd(report_fd, FdFlags::CLOEXEC);
    }
    // Before the command exists, so all of it is inside; the helper's own few MiB count too.
    let groups = super::limits::RunGroup::enter_from_env();
    let report = observe_command(args);
    for line in groups.finish() {
        let _ = writeln!(io::stderr(), "{line}");
    }
    let report = report?;
    let json = serde_json::to_vec(&report).map_err(|error| HelperError::Os {
        what: "could not encode the report",
        source: error.into(),
    })?;
    std::fs::write(&args.report, json).map_err(os_error("could not write the report"))
}

/// Runs the command once and reports on it. Nothing big happens before the spawn.
fn observe_command(args: &HelperArgs) -> Result<HelperReport, HelperError> {
    // Caught before any child exists, so a Ctrl-C or TERM meant for evo cannot kill the helper and
    // orphan the command; `stop_on_signal` turns them into a group kill instead. A caught signal
    // is back to its default in the command after exec, so the command sees signals normally.
    let stop_signals = catch_stop_signals()?;
    // Orphans of the command (its background jobs) become our children instead of init's, so we
    // can reap them: a zombie still counts as a member of the process group. Best effort: without
    // it, leftovers are still killed, only their zombies are reaped by init instead. (The pid
    // only makes the flag non-zero.)
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));

    let mut command = match args.wrapper.split_first() {
        Some((program, wrapper_args)) => {
            let mut command = Command::new(program);
            command.args(wrapper_args).arg("/bin/sh");
            command
        }
        None => Command::new("/bin/sh"),
    };
    command.arg("-c").arg(&args.command);
    command.env_remove(super::limits::LIMITS_ENV);
    if let Some(cwd) = &args.cwd {
        command.current_dir(cwd);
    }
    // A sandboxed command's process 1 (evo's init) reports on its own pipe, handed over as fd 4.
    let init_pipe = if args.wrapper.is_empty() {
        None
    } else {
        let (reader, writer) = std::io::pipe().map_err(os_error("could not create a pipe"))?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&writer);
        // SAFETY: only dup2, which is async-signal-safe, runs between fork and exec; `fd` is the
        // pipe's write end, open until after the spawn (`writer` is dropped only then). A raw
        // dup2 because rustix's needs an owned target descriptor, which fd 4 is not yet.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(fd, INIT_REPORT_FD) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Some((reader, writer))
    };
    // The parent gives the helper an empty stdin or the run's stdin file; the command inherits it.
    command.process_group(0).stdin(Stdio::inherit());
    let start = Instant::now();
    let child = command
        .spawn()
        .map_err(os_error("could not start /bin/sh"))?;
    // Only the sandbox may hold the write end, or reading the init's report would never end.
    let init_reader = init_pipe.map(|(reader, writer)| {
        drop(writer);
        reader
    });
    let pid = Pid::from_child(&child);

    let watchdog = match Watchdog::start(pid, args.timeout, args.grace, stop_signals) {
        Ok(watchdog) => watchdog,
        Err(error) => {
            // Without a watchdog nothing would enforce the timeout: do not leave the command.
            signal_group(pid, Signal::KILL);
            let _ = reap(pid);
            return Err(error);
        }
    };
    wait_until_exited(pid)?;
    let wall = start.elapsed();
    let outcome = watchdog.finish();
    let (status, rusage) = reap(pid)?;
    // After a group KILL everything in the group is already dying; only count survivors of an
    // ordinary exit (or of TERM during the grace period) as leftovers.
    let leftover = clean_up_group(pid) && !outcome.killed_group;
    // A process that left the group (`setsid`) and was orphaned is now our child: also a leftover,
    // whatever ended the command.
    let escaped = kill_adopted_children();
    // Inside the sandbox, processes left in the run's namespace are counted by its process 1 (and
    // died with it); none is counted after a group kill, as above.
    let init = init_reader.and_then(read_init_report);
    let in_namespace = init
        .as_ref()
        .is_some_and(|r| r.leftovers > 0 && !outcome.killed_group);
    let leftover = leftover || escaped || in_namespace;
    // Inside the sandbox, the command's own time and resources as its process 1 saw them: the
    // namespaces' setup and teardown are not the command's work (a constant that would pull
    // every ratio towards 1). Without a report (killed at a timeout), the helper's own figures.
    let (wall_s, rusage) = match init {
        Some(report) => (report.wall_s, report.rusage),
        None => (wall.as_secs_f64(), rusage),
    };
    Ok(HelperReport {
        wall_s,
        rusage,
        status,
        timed_out: outcome.timed_out,
        leftover_processes: leftover,
    })
}

/// The sandbox init's report, once every holder of the pipe's write end has exited; `None` when
/// it wrote none (killed at a timeout) or it does not parse.
fn read_init_report(mut reader: std::io::PipeReader) -> Option<InitReport> {
    use std::io::Read;
    // Non-blocking: the write end's holders are gone by now, but nothing may keep the helper
    // waiting if one is not.
    let _ = rustix::io::ioctl_fionbio(&reader, true);
    let mut bytes = Vec::new();
    let _ = reader.read_to_end(&mut bytes);
    serde_json::from_slice(&bytes).ok()
}

/// Catches the stop signals; reading them is left to `stop_on_signal`.
fn catch_stop_signals() -> Result<Signals, HelperError> {
    Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(os_error("could not catch stop signals"))
}

/// A signal to the helper stops the command the way a timeout does (TERM, grace, KILL). The
/// thread keeps `signals`, and so the handlers, for the helper's whole life: a second Ctrl-C during
/// the grace is one more stop request, never the signal's default action, which would end the
/// helper in the middle of the stop and leave the command to run on.
fn stop_on_signal(mut signals: Signals, shared: Arc<Shared>) -> Result<(), HelperError> {
    let wait_for_signal = move || {
        for _ in signals.forever() {
            shared.update(|state| state.stop_requested = true);
        }
    };
    thread::Builder::new()
        .spawn(wait_for_signal)
        .map(drop)
        .map_err(os_error("could not start the signal thread"))
}

/// State shared between the helper's main thread, its watchdog and its signal thread.
#[derive(Default)]
struct Shared {
    state: Mutex<WatchState>,
    wake: Condvar,
}

#[derive(Default)]
struct WatchState {
    /// The command has exited (it is a zombie, not yet reaped, so its group id is still ours).
    exited: bool,
    /// A signal asked the helper to stop the command now.
    stop_requested: bool,
}

impl Shared {
    fn update(&self, change: impl FnOnce(&mut WatchState)) {
        change(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
        self.wake.notify_all();
    }
}

/// What the watchdog did.
#[derive(Debug, Clone, Copy, Default)]
struct WatchOutcome {
    timed_out: bool,
    killed_group: bool,
}

/// Enforces the timeout on the command's process group from its own thread.
struct Watchdog {
    shared: Arc<Shared>,
    thread: thread::JoinHandle<WatchOutcome>,
}

impl Watchdog {
    /// Starts the watchdog thread, and the thread that turns `stop_signals` into a stop request.
    fn start(
        pgid: Pid,
        timeout: Duration,
        grace: Duration,
        stop_signals: Signals,
    ) -> Result<Self, HelperError> {
        let shared = Arc::new(Shared::default());
        stop_on_signal(stop_signals, Arc::clone(&shared))?;
        let watched = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .spawn(move || watch(&watched, pgid, timeout, grace))
            .map_err(os_error("could not start the watchdog thread"))?;
        Ok(Watchdog { shared, thread })
    }

    /// Tells the watchdog the command has exited and waits for it, so that no signal is sent to
    /// the group after the command is reaped (when its group id could be reused).
    fn finish(self) -> WatchOutcome {
        self.shared.update(|state| state.exited = true);
        self.thread.join().unwrap_or_default()
    }
}

fn watch(shared: &Shared, pgid: Pid, timeout: Duration, grace: Duration) -> WatchOutcome {
    let state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    let (state, _) = shared
        .wake
        .wait_timeout_while(state, timeout, |s| !s.exited && !s.stop_requested)
        .unwrap_or_else(PoisonError::into_inner);
    if state.exited {
        return WatchOutcome::default();
    }
    let timed_out = !state.stop_requested;
    signal_group(pgid, Signal::TERM);
    let (state, _) = shared
        .wake
        .wait_timeout_while(state, grace, |s| !s.exited)
        .unwrap_or_else(PoisonError::into_inner);
    let killed_group = !state.exited;
    if killed_group {
        signal_group(pgid, Signal::KILL);
    }
    WatchOutcome {
        timed_out,
        killed_group,
    }
}

fn signal_group(pgid: Pid, signal: Signal) {
    // The group's leader is not reaped yet (see `finish`), so the id still names the command's
    // group. ESRCH just means the group is already gone.
    let _ = rustix::process::kill_process_group(pgid, signal);
}

/// Blocks until the command has exited, without reaping it (`WNOWAIT`).
fn wait_until_exited(pid: Pid) -> Result<(), HelperError> {
    loop {
        match rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(_) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(errno) => return Err(os_error("waitid failed")(errno.into())),
        }
    }
}

/// A child reaped by [`wait4`]: which one, how it ended (the raw wait status) and what it used.
pub(super) struct Reaped {
    pub pid: libc::pid_t,
    pub status: libc::c_int,
    pub usage: libc::rusage,
}

/// `wait4(pid, …, 0, …)`: blocks until the child `pid` (or any child, for -1) has exited and reaps
/// it, with its own resource usage. The one system call evo makes through `libc` directly: neither
/// rustix nor nix wraps `wait4`, and `waitid` or `waitpid` do not give the child's rusage.
pub(super) fn wait4(pid: libc::pid_t) -> io::Result<Reaped> {
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers and `timeval`s, so all zero bytes is a valid value.
    // `wait4` only writes through the two pointers, which point to this frame's own `status` and
    // `usage` and are valid, aligned and exclusive for the length of the call; it keeps neither.
    let (reaped, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let reaped = libc::wait4(pid, &mut status, 0, &mut usage);
        (reaped, usage)
    };
    if reaped == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(Reaped {
        pid: reaped,
        status,
        usage,
    })
}

/// Reaps the command with `wait4`, which is what gives its own resource usage.
fn reap(pid: Pid) -> Result<(ExitStatus, Rusage), HelperError> {
    let Reaped { status, usage, .. } = loop {
        match wait4(pid.as_raw_nonzero().get()) {
            Ok(reaped) => break reaped,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(os_error("wait4 failed")(error)),
        }
    };
    let status = if libc::WIFEXITED(status) {
        ExitStatus::Exited {
            code: libc::WEXITSTATUS(status),
        }
    } else if libc::WIFSIGNALED(status) {
        ExitStatus::Signaled {
            signal: libc::WTERMSIG(status),
        }
    } else {
        return Err(HelperError::OddStatus(status));
    };
    Ok((status, rusage_from(&usage)))
}

pub(super) fn rusage_from(usage: &libc::rusage) -> Rusage {
    let seconds = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    let count = |value: libc::c_long| u64::try_from(value).unwrap_or(0);
    Rusage {
        user_s: seconds(usage.ru_utime),
        sys_s: seconds(usage.ru_stime),
        // Linux reports ru_maxrss in KiB.
        max_rss_kib: count(usage.ru_maxrss),
        voluntary_cs: count(usage.ru_nvcsw),
        involuntary_cs: count(usage.ru_nivcsw),
    }
}

/// After the command is reaped: kills whatever of its process group is still alive and waits
/// (briefly) until it is gone. Returns whether anything was alive.
fn clean_up_group(pgid: Pid) -> bool {
    reap_orphans();
    if !group_alive(pgid) {
        return false;
    }
    signal_group(pgid, Signal::KILL);
    let deadline = Instant::now() + LEFTOVER_WAIT;
    while group_alive(pgid) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
        reap_orphans();
    }
    true
}

fn group_alive(pgid: Pid) -> bool {
    // Signal 0 only checks for existence. EPERM means someone is there.
    match rustix::process::test_kill_process_group(pgid) {
        Ok(()) | Err(Errno::PERM) => true,
        Err(_) => false,
    }
}

/// Kills every living process whose parent is this helper (orphans adopted as subreaper, such as
/// a daemon that called `setsid` to leave the group), until none is left or the wait runs out.
/// Returns whether there was any.
fn kill_adopted_children() -> bool {
    let me = std::process::id();
    let deadline = Instant::now() + LEFTOVER_WAIT;
    let mut found = false;
    loop {
        reap_orphans();
        let children = living_children(me);
        if children.is_empty() || Instant::now() >= deadline {
            return found;
        }
        found = true;
        for child in children {
            // A pid we just read as our own living child: it cannot be reused before we reap it.
            let _ = rustix::process::kill_process(child, Signal::KILL);
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Pids of the non-zombie processes whose parent is `parent`, from `/proc/<pid>/stat`.
fn living_children(parent: u32) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| Pid::from_raw(entry.file_name().to_str()?.parse().ok()?))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
                .ok()
                .and_then(|stat| parent_and_state(&stat))
                .is_some_and(|(ppid, state)| ppid == parent && state != 'Z')
        })
        .collect()
}

/// The parent pid and state letter of a `/proc/<pid>/stat` line. The command name in parentheses
/// may itself hold spaces and parentheses, so the fields are read after its last `)`.
fn parent_and_state(stat: &str) -> Option<(u32, char)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((ppid, state))
}

/// Reaps every child that has already exited (orphans handed to us as subreaper).
fn reap_orphans() {
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let stat = "4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 106 0 0 0";
        assert_eq!(parent_and_state(stat), Some((17, 'S')));
        assert_eq!(parent_and_state("4242 (sh) Z 1 0"), Some((1, 'Z')));
        assert_eq!(parent_and_state("garbage"), None);
    }

    #[test]
    fn arguments_round_trip() {
        let args = HelperArgs {
            report: "/tmp/r.json".into(),
            timeout: Duration::from_millis(1500),
            grace: Duration::from_secs(2),
            cwd: Some("/tmp/a tree".into()),
            command: "echo 'a b' && exit 3".into(),
            wrapper: vec!["bwrap".into(), "--".into()],
        };
        let all = args.to_args();
        assert_eq!(all[0], HELPER_ARG);
        assert_eq!(HelperArgs::parse(all.into_iter().skip(1)).unwrap(), args);
    }

    #[test]
    fn sub_millisecond_timeout_rounds_up_not_to_zero() {
        assert_eq!(millis(Duration::from_micros(1)), 1);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }

    #[test]
    fn wrong_argument_count_is_a_usage_error() {
        let error = HelperArgs::parse(os(&["/tmp/r", "10", "10"])).unwrap_err();
        assert!(error.to_string().contains("got 3"), "{error}");
    }

    #[test]
    fn non_numeric_timeout_is_a_usage_error() {
        let error = HelperArgs::parse(os(&["/tmp/r", "1s", "10", "true"])).unwrap_err();
        assert!(error.to_string().contains("timeout-ms"), "{error}");
    }
}
