//! The real [`Runner`]: spawns each command through evo's helper process.
//!
//! evo does not fork timed commands itself (its resident size would leak into their max RSS, see
//! `helper`). For each run it starts `evo __exec-helper`, reads the command's stdout and stderr
//! from the helper's pipes on their own threads (a noisy child must not deadlock), waits for the
//! helper, and turns the helper's JSON report plus what the pipes carried into a [`RunRecord`].

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use sha2::{Digest, Sha256};

use super::cpus::{self, CpuSplit};
use super::error::HelperError;
use super::helper::{HELPER_FAILURE_CODE, HelperArgs, HelperReport, REPORT_FD, REPORT_FD_PATH};
use super::record::RunRecord;
use super::runner::{LOG_CAP_BYTES, RunSpec, Runner, RunnerError};
use crate::spec::modes::Affinity;

/// Default time between TERM and KILL when a command times out.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// How long to keep reading output after the helper exits. The helper kills the command's whole
/// group, so the pipes normally close at once; only a process that escaped the group (`setsid`)
/// can keep them open, and evo must not wait for it forever.
const READER_GRACE: Duration = Duration::from_secs(2);

/// How much of the end of stderr a record keeps.
const STDERR_TAIL_BYTES: usize = 4096;

/// Runs commands for real, each through a fresh `evo __exec-helper` process.
pub struct ProcessRunner {
    helper: PathBuf,
    grace: Duration,
    /// Draws each run's environment padding (see [`ENV_PAD`]).
    pad: rand_chacha::ChaCha8Rng,
    /// The CPUs of evo and of the commands, when split (see [`ProcessRunner::with_affinity`]);
    /// together they are the calling thread's CPUs before the split, given back on drop.
    split: Option<CpuSplit>,
    /// Pad runs that inherit evo's environment too (`evo bench`), not only runs given their own
    /// (code under test in a confirmation, which is always padded).
    pad_inherited: bool,
}

/// A variable of random length (0 to 4095 bytes) added to every run of code under test: the size
/// of the environment moves the initial stack, and with it the alignment of everything on it. A
/// fixed size would favour one arm by chance; a random one per run averages the effect out.
pub const ENV_PAD: &str = "EVO_ENV_PAD";

impl ProcessRunner {
    /// Uses the running executable as the helper (the `evo` binary itself).
    pub fn new() -> std::io::Result<ProcessRunner> {
        Ok(ProcessRunner::with_helper(std::env::current_exe()?))
    }

    /// Uses another `evo` binary as the helper (tests and benchmarks are not `evo` themselves).
    pub fn with_helper(helper: PathBuf) -> ProcessRunner {
        use rand::SeedableRng;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()).rotate_left(32);
        ProcessRunner {
            helper,
            grace: DEFAULT_GRACE,
            pad: rand_chacha::ChaCha8Rng::seed_from_u64(seed),
            split: None,
            pad_inherited: false,
        }
    }

    /// Also pads runs that inherit evo's environment ([`ENV_PAD`]; `evo bench --env-pad on`).
    pub fn with_env_pad(mut self, on: bool) -> ProcessRunner {
        self.pad_inherited = on;
        self
    }

    /// When `affinity` splits the CPUs evo may use ([`Affinity::splits`]), pins the calling thread (evo's
    /// main thread, and the threads it starts from now on) to the first CPU and every command to
    /// the others, until the runner is dropped. Where the CPUs cannot be read or set, nothing is
    /// pinned and [`ProcessRunner::cpu_split`] says so.
    pub fn with_affinity(mut self, affinity: Affinity) -> ProcessRunner {
        if self.split.is_some() {
            return self;
        }
        let Ok(allowed) = cpus::allowed() else {
            return self;
        };
        if !affinity.splits(allowed.len()) {
            return self;
        }
        self.split = CpuSplit::of(&allowed).filter(|s| cpus::pin_current_thread(&s.evo).is_ok());
        self
    }

    /// Sets the time between TERM and KILL for commands that time out.
    pub fn with_grace(mut self, grace: Duration) -> ProcessRunner {
        self.grace = grace;
        self
    }

    /// The helper's command line. Its report comes back through a pipe on the helper's fd 3
    /// (`/dev/fd/3`), not a file: a command that fills the disk must not take evo's record of
    /// it down too.
    fn helper_command(
        &self,
        spec: &RunSpec,
        report: &io::PipeWriter,
        pad: usize,
    ) -> io::Result<Command> {
        let args = HelperArgs {
            report: PathBuf::from(REPORT_FD_PATH),
            timeout: spec.timeout,
            grace: self.grace,
            // Absolute: the helper stays in evo's directory and sets it for the command alone.
            cwd: spec.cwd.as_deref().map(std::path::absolute).transpose()?,
            command: spec.command.clone().into(),
            wrapper: match &spec.sandbox {
                // The helper binary is also the sandbox's process 1.
                Some(sandbox) => sandbox.argv(&std::path::absolute(&self.helper)?),
                None => Vec::new(),
            },
        };
        // Absolute: the path must not depend on any directory.
        let mut command = Command::new(std::path::absolute(&self.helper)?);
        command.args(args.to_args());
        if let Some(base) = &spec.base_env {
            // Code under test gets an allow-list, never evo's whole environment.
            command.env_clear().envs(base).env(ENV_PAD, "_".repeat(pad));
        } else if self.pad_inherited {
            command.env(ENV_PAD, "_".repeat(pad));
        }
        command.envs(&spec.env);
        if let Some(sandbox) = &spec.sandbox {
            // For the helper alone, which puts the command in cgroups with these limits.
            let l = &sandbox.limits;
            command.env(
                super::limits::LIMITS_ENV,
                format!("{},{}", l.memory_mib, l.pids),
            );
        }
        let stdin = match &spec.stdin_file {
            Some(path) => Stdio::from(File::open(path)?),
            None => Stdio::null(),
        };
        command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let report_fd = report.as_raw_fd();
        let command_cpus = self.split.as_ref().map(|s| s.command.clone());
        // A candidate build's copy-on-write caches, mounted in the helper's own mount namespace
        // (which `bwrap` then binds from); strings made here, before the fork.
        let overlays = match &spec.sandbox {
            Some(sandbox) if !sandbox.overlays.is_empty() => {
                Some(super::overlay::Mounts::of(&sandbox.overlays)?)
            }
            _ => None,
        };
        // SAFETY: only dup2, fcntl, sched_setaffinity, unshare and mount run between fork and
        // exec, all async-signal-safe system calls (the CPU list and the overlays' strings were
        // allocated before the fork). dup2
        // leaves fd 3 without close-on-exec, so the helper gets the pipe's write end there; when
        // the pipe already is fd 3, dup2 does nothing and the flag is cleared by hand.
        // `report_fd` is the pipe's write end, which the caller keeps open until after the spawn.
        // Raw calls because rustix's dup2 needs an owned target descriptor, which fd 3 is not.
        unsafe {
            command.pre_exec(move || {
                let rc = if report_fd == REPORT_FD {
                    libc::fcntl(REPORT_FD, libc::F_SETFD, 0)
                } else {
                    libc::dup2(report_fd, REPORT_FD)
                };
                if rc == -1 {
                    return Err(io::Error::last_os_error());
                }
                if let Some(cpus) = &command_cpus {
                    cpus::pin_current_thread(cpus)?;
                }
                if let Some(mounts) = &overlays {
                    mounts.enter()?;
                }
                Ok(())
            });
        }
        Ok(command)
    }
}

impl Runner for ProcessRunner {
    fn run(&mut self, spec: &RunSpec) -> Result<RunRecord, RunnerError> {
        if crate::interrupt::requested() {
            return Err(RunnerError::Interrupted);
        }
        let io_error = |source| RunnerError::Io {
            command: spec.command.clone(),
            source,
        };
        let (mut report_reader, report_writer) = io::pipe().map_err(io_error)?;
        let stdout_log = CappedLog::create(spec.stdout_file.as_deref()).map_err(io_error)?;
        let stderr_log = CappedLog::create(spec.stderr_file.as_deref()).map_err(io_error)?;
        let pad = rand::Rng::random_range(&mut self.pad, 0..4096);
        let steal_cpus = self.split.as_ref().map(|s| s.command.as_slice());
        let steal_before = cpus::steal_ticks(steal_cpus);
        let spawned = self
            .helper_command(spec, &report_writer, pad)
            .and_then(|mut command| command.spawn());
        // Only the helper may hold the write end, or reading the report would never end.
        drop(report_writer);
        let mut child = spawned.map_err(|source| RunnerError::Spawn {
            command: spec.command.clone(),
            source,
        })?;
        let readers = match Readers::start(&mut child, stdout_log, stderr_log) {
            Ok(readers) => readers,
            Err(error) => {
                abandon(child);
                return Err(io_error(error));
            }
        };
        let helper_status = child.wait().map_err(io_error)?;
        let steal_s = steal_before
            .zip(cpus::steal_ticks(steal_cpus))
            .map(|(before, after)| cpus::ticks_to_seconds(after.saturating_sub(before)));
        let output = readers.finish(READER_GRACE);
        // Stopped on the user's request: whatever it printed or however it ended is no result.
        if crate::interrupt::requested() {
            return Err(RunnerError::Interrupted);
        }
        // The helper has exited and it alone held the write end: this read ends.
        let mut report_bytes = Vec::new();
        let report = match report_reader.read_to_end(&mut report_bytes) {
            Ok(_) => read_report(helper_status, &report_bytes, &output.stderr_tail),
            Err(error) => Err(HelperError::ReadReport(error)),
        };
        let report = report.map_err(|source| RunnerError::Helper {
            command: spec.command.clone(),
            source,
        })?;
        if let Some(error) = output.error {
            return Err(io_error(error));
        }
        Ok(RunRecord {
            wall_s: report.wall_s,
            rusage: report.rusage,
            status: report.status,
            timed_out: report.timed_out,
            leftover_processes: report.leftover_processes,
            stdout_sha256: output.stdout_sha256,
            stdout_bytes: output.stdout_bytes,
            stderr_tail: output.stderr_tail,
            steal_s,
        })
    }

    fn cpu_split(&self) -> Option<&CpuSplit> {
        self.split.as_ref()
    }
}

impl Drop for ProcessRunner {
    fn drop(&mut self) {
        if let Some(split) = self.split.take() {
            // Later work of evo (builds, signing) gets every CPU again.
            let _ = cpus::pin_current_thread(&split.all());
        }
    }
}

/// Stops a helper we can no longer serve: TERM makes it stop its command's group (it turns the
/// signal into a group kill), closing our pipe ends makes any further output fail, then reap it.
fn abandon(mut child: Child) {
    // The helper is our unreaped child, so the pid is still its own.
    let _ = rustix::process::kill_process(Pid::from_child(&child), Signal::TERM);
    drop(child.stdout.take());
    drop(child.stderr.take());
    let _ = child.wait();
}

/// Reads the helper's report, or says why there is none.
fn read_report(
    status: std::process::ExitStatus,
    bytes: &[u8],
    stderr_tail: &str,
) -> Result<HelperReport, HelperError> {
    // The helper's own complaint is the last line it wrote to stderr.
    let last_line = stderr_tail.lines().last().unwrap_or("").to_string();
    if status.code() == Some(HELPER_FAILURE_CODE) {
        return Err(HelperError::Said(last_line));
    }
    if !status.success() {
        return Err(HelperError::Ended { status, last_line });
    }
    if bytes.is_empty() {
        return Err(HelperError::NoReport { last_line });
    }
    serde_json::from_slice(bytes).map_err(HelperError::Unreadable)
}

/// A log file for one stream, written up to [`LOG_CAP_BYTES`].
struct CappedLog {
    file: Option<File>,
    path: Option<PathBuf>,
    written: u64,
    error: Option<io::Error>,
}

impl CappedLog {
    /// Creates the file before the command starts, so a bad path fails the run up front.
    fn create(path: Option<&Path>) -> io::Result<CappedLog> {
        Ok(CappedLog {
            file: path.map(File::create).transpose()?,
            path: path.map(Path::to_path_buf),
            written: 0,
            error: None,
        })
    }

    fn write(&mut self, chunk: &[u8]) {
        let Some(file) = &mut self.file else { return };
        let room =
            usize::try_from(LOG_CAP_BYTES.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let part = &chunk[..chunk.len().min(room)];
        if part.is_empty() {
            return;
        }
        match file.write_all(part) {
            Ok(()) => self.written += part.len() as u64,
            Err(error) => {
                // Keep draining the pipe (the command must not block), but stop logging.
                let place = self.path.as_deref().unwrap_or(Path::new("the log"));
                self.error = Some(io::Error::new(
                    error.kind(),
                    format!("cannot write {}: {error}", place.display()),
                ));
                self.file = None;
            }
        }
    }
}

/// What a reader thread does with each chunk of one stream.
trait Sink: Send + 'static {
    fn consume(&mut self, chunk: &[u8]);
    fn log(&mut self) -> &mut CappedLog;
}

/// Stdout: hashed and counted in full, optionally logged.
struct StdoutSink {
    hasher: Sha256,
    bytes: u64,
    log: CappedLog,
}

impl Sink for StdoutSink {
    fn consume(&mut self, chunk: &[u8]) {
        self.hasher.update(chunk);
        self.bytes += chunk.len() as u64;
        self.log.write(chunk);
    }
    fn log(&mut self) -> &mut CappedLog {
        &mut self.log
    }
}

/// Stderr: the last few KiB kept in memory, optionally logged.
struct StderrSink {
    tail: Vec<u8>,
    truncated: bool,
    log: CappedLog,
}

impl Sink for StderrSink {
    fn consume(&mut self, chunk: &[u8]) {
        self.tail.extend_from_slice(chunk);
        // Trim only when twice the size, so each byte is moved a bounded number of times.
        if self.tail.len() > 2 * STDERR_TAIL_BYTES {
            self.tail.drain(..self.tail.len() - STDERR_TAIL_BYTES);
            self.truncated = true;
        }
        self.log.write(chunk);
    }
    fn log(&mut self) -> &mut CappedLog {
        &mut self.log
    }
}

impl StderrSink {
    /// The last whole lines within [`STDERR_TAIL_BYTES`], as text.
    fn tail_text(&self) -> String {
        let start = self.tail.len().saturating_sub(STDERR_TAIL_BYTES);
        let mut tail = &self.tail[start..];
        if self.truncated || start > 0 {
            // Drop the partial first line, unless that would leave nothing.
            if let Some(newline) = tail.iter().position(|&b| b == b'\n') {
                if newline + 1 < tail.len() {
                    tail = &tail[newline + 1..];
                }
            }
        }
        String::from_utf8_lossy(tail).into_owned()
    }
}

/// A stream's sink plus any read error, shared with the thread that fills it.
struct Stream<S> {
    sink: S,
    error: Option<io::Error>,
}

type Shared<S> = Arc<Mutex<Stream<S>>>;

fn lock<S>(shared: &Shared<S>) -> std::sync::MutexGuard<'_, Stream<S>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Copies one pipe into its sink until EOF, then says so on `done`.
fn pump<S: Sink>(mut pipe: impl Read, shared: Shared<S>, done: mpsc::Sender<()>) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => lock(&shared).sink.consume(&buffer[..n]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => {
                lock(&shared).error = Some(error);
                break;
            }
        }
    }
    // The receiver may have stopped waiting already; that is fine.
    let _ = done.send(());
}

/// The two reader threads of one run.
struct Readers {
    stdout: Shared<StdoutSink>,
    stderr: Shared<StderrSink>,
    done: mpsc::Receiver<()>,
}

/// What the pipes carried.
struct Output {
    stdout_sha256: String,
    stdout_bytes: u64,
    stderr_tail: String,
    /// The first read or log-write error, if any.
    error: Option<io::Error>,
}

impl Readers {
    fn start(child: &mut Child, stdout_log: CappedLog, stderr_log: CappedLog) -> io::Result<Self> {
        let (Some(stdout_pipe), Some(stderr_pipe)) = (child.stdout.take(), child.stderr.take())
        else {
            return Err(io::Error::other("the helper's output pipes are missing"));
        };
        let stdout = Arc::new(Mutex::new(Stream {
            sink: StdoutSink {
                hasher: Sha256::new(),
                bytes: 0,
                log: stdout_log,
            },
            error: None,
        }));
        let stderr = Arc::new(Mutex::new(Stream {
            sink: StderrSink {
                tail: Vec::new(),
                truncated: false,
                log: stderr_log,
            },
            error: None,
        }));
        let (done_tx, done) = mpsc::channel();
        spawn_pump(
            "evo-stdout",
            stdout_pipe,
            Arc::clone(&stdout),
            done_tx.clone(),
        )?;
        spawn_pump("evo-stderr", stderr_pipe, Arc::clone(&stderr), done_tx)?;
        Ok(Readers {
            stdout,
            stderr,
            done,
        })
    }

    /// Waits up to `grace` for both streams to reach EOF, then takes what they have. A reader
    /// still blocked after that is left behind (detached) on a pipe some stray process holds.
    fn finish(self, grace: Duration) -> Output {
        let deadline = Instant::now() + grace;
        let mut finished = 0;
        while finished < 2 {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done.recv_timeout(left).is_err() {
                break;
            }
            finished += 1;
        }
        let mut stdout = lock(&self.stdout);
        let mut stderr = lock(&self.stderr);
        let mut stderr_tail = stderr.sink.tail_text();
        if finished < 2 {
            stderr_tail.push_str(&format!(
                "\n[evo: output was still open {} s after the command ended (a process outside \
                 its group?); stopped reading]\n",
                grace.as_secs_f64()
            ));
        }
        let error = [
            stdout.error.take(),
            stderr.error.take(),
            stdout.sink.log().error.take(),
            stderr.sink.log().error.take(),
        ]
        .into_iter()
        .flatten()
        .next();
        Output {
            stdout_sha256: hex::encode(stdout.sink.hasher.clone().finalize()),
            stdout_bytes: stdout.sink.bytes,
            stderr_tail,
            error,
        }
    }
}

fn spawn_pump<S: Sink>(
    name: &str,
    pipe: impl Read + Send + 'static,
    shared: Shared<S>,
    done: mpsc::Sender<()>,
) -> io::Result<()> {
    thread::Builder::new()
        .name(name.to_string())
        .spawn(move || pump(pipe, shared, done))
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stderr_sink() -> StderrSink {
        StderrSink {
            tail: Vec::new(),
            truncated: false,
            log: CappedLog::create(None).unwrap(),
        }
    }

    #[test]
    fn short_stderr_is_kept_whole() {
        let mut sink = stderr_sink();
        sink.consume(b"partial first\nsecond\n");
        assert_eq!(sink.tail_text(), "partial first\nsecond\n");
    }

    #[test]
    fn long_stderr_tail_starts_at_a_whole_line() {
        let mut sink = stderr_sink();
        for i in 0..10_000 {
            sink.consume(format!("line {i}\n").as_bytes());
        }
        let tail = sink.tail_text();
        assert!(tail.len() <= STDERR_TAIL_BYTES);
        assert!(tail.starts_with("line "), "{tail:?}");
        assert!(tail.ends_with("line 9999\n"));
    }
}
