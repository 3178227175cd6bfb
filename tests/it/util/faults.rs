//! Helpers of the fault tests: evo run inside a private mount namespace (a small tmpfs, a full
//! one, a read-only folder: root ignores file modes, so only a mount can refuse it a write),
//! processes found by a marker in their environment, and polling with a deadline.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::Value;

/// Every process evo starts inherits this variable; its value is unique to one test.
pub const MARK_VAR: &str = "EVO_FAULT_MARK";

/// The folder a namespace setup mounts over (set in the namespace's environment).
pub const DIR_VAR: &str = "EVO_FAULT_DIR";

/// A marker for one test's processes, unique on this machine for this run.
pub fn marker(test: &str) -> String {
    format!("evo-fault-{}-{test}", std::process::id())
}

/// A small tmpfs over `$EVO_FAULT_DIR`.
pub fn tmpfs(size: &str) -> String {
    format!(r#"mount -t tmpfs -o size={size} tmpfs "${DIR_VAR}""#)
}

/// A small tmpfs over `$EVO_FAULT_DIR`, filled to the last byte before evo starts.
pub fn full_tmpfs(size: &str) -> String {
    format!(
        r#"{} && {{ head -c 64000000 /dev/zero > "${DIR_VAR}/filler" 2>/dev/null; true; }}"#,
        tmpfs(size)
    )
}

/// `$EVO_FAULT_DIR` made read-only for evo (a read-only bind mount of itself).
pub const READ_ONLY: &str = r#"mount --bind "$EVO_FAULT_DIR" "$EVO_FAULT_DIR" && mount -o remount,bind,ro "$EVO_FAULT_DIR""#;

/// Exit code of the namespace shell when its setup (mounting) failed, before evo ran.
pub const SETUP_FAILED: i32 = 97;

/// True when this machine lets an unprivileged user and mount namespace mount a tmpfs.
pub fn namespaces_work() -> bool {
    Command::new("unshare")
        .args([
            "-rm",
            "sh",
            "-c",
            r#"mount -t tmpfs -o size=1m tmpfs "$1""#,
            "sh",
        ])
        .arg(std::env::temp_dir())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `evo` (with the test environment of `util::evo`) run in a fresh user and mount namespace
/// after `setup` mounted something over `dir`. When `listing` is given, every path under `dir`
/// is written there (one a line) after evo exits, while the namespace's mounts still exist.
pub fn evo_in_namespace(setup: &str, dir: &Path, listing: Option<&Path>) -> Command {
    let base = crate::util::evo();
    let list = listing.map_or(String::new(), |_| {
        r#"find "$EVO_FAULT_DIR" > "$EVO_FAULT_LIST";"#.to_string()
    });
    let script = format!(r#"{setup} || exit {SETUP_FAILED}; "$@"; rc=$?; {list} exit $rc"#);
    let mut cmd = Command::new("unshare");
    cmd.args(["-rm", "sh", "-c", &script, "sh"])
        .arg(base.get_program())
        .env(DIR_VAR, dir);
    if let Some(path) = listing {
        cmd.env("EVO_FAULT_LIST", path);
    }
    for (key, value) in base.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    cmd
}

/// `pid: command line` of every process whose environment holds `MARK_VAR=marker`.
pub fn marked_processes(marker: &str) -> Vec<String> {
    let needle = format!("{MARK_VAR}={marker}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            // A zombie has an empty command line: it is no longer running.
            if !cmdline.trim().is_empty() {
                found.push(format!("{name}: {cmdline}"));
            }
        }
    }
    found
}

/// Polls `probe` every 20 ms until it returns `Some`, or panics naming `what` after `limit`.
pub fn wait_for<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(
            started.elapsed() < limit,
            "gave up after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub use crate::util::files_under;

/// The raw lines of `<run_dir>/journal.jsonl` (empty when there is none yet).
pub fn journal_lines(run_dir: &Path) -> Vec<String> {
    std::fs::read_to_string(run_dir.join("journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The only run directory under `output`, once there is one.
pub fn only_run_dir(output: &Path) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = std::fs::read_dir(output)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    match dirs.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// A small deterministic generator (splitmix64), so the fault points are the same every run.
pub struct Seeded(pub u64);

impl Seeded {
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z % n as u64) as usize
    }
}

/// An evo process of a test; killed (SIGKILL, its whole group) and reaped if the test fails.
pub struct Running {
    pub child: Child,
    pub stderr: PathBuf,
}

impl Running {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Ctrl-C as a terminal sends it: SIGINT to the whole foreground process group.
    pub fn ctrl_c(&self) {
        // The group is our unreaped child's.
        kill_process_group(Pid::from_child(&self.child), Signal::INT).unwrap();
    }

    pub fn sigkill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The exit status, waiting at most `limit`.
    pub fn wait(&mut self, what: &str, limit: Duration) -> ExitStatus {
        let child = &mut self.child;
        wait_for(what, limit, || child.try_wait().unwrap())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = kill_process_group(Pid::from_child(&self.child), Signal::KILL);
            let _ = self.child.wait();
        }
    }
}

pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => format!("{status:?}"),
    }
}

pub fn entry(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

pub fn count(lines: &[String], kind: &str) -> usize {
    lines.iter().filter(|l| entry(l)["entry"] == kind).count()
}

/// The screening pair indices journaled for candidate `index`, in journal order.
pub fn pair_indices(lines: &[String], index: u64) -> Vec<u64> {
    lines
        .iter()
        .map(|l| entry(l))
        .filter(|e| e["entry"] == "screening_pair" && e["index"] == index)
        .map(|e| e["pair"]["index"].as_u64().unwrap())
        .collect()
}

/// Every file under `dir` whose name says it is a receipt.
pub fn receipts_under(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains("receipt"))
        })
        .collect()
}
