//! Isolation of builds, checks and timed runs with bubblewrap (`bwrap`): no network, the file
//! system read-only except the run's own tree and declared paths, and evo's work and output
//! folders hidden, so a candidate cannot read the other arm's tree, outputs or logs.
//!
//! Whether the sandbox was on is part of every result and receipt; when the campaign asks for
//! `auto` and the machine has no working bubblewrap, runs go unsandboxed and the record says so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// How one command is isolated: everything `bwrap` needs besides the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub bwrap: PathBuf,
    /// Mounted read-write (a building tree, declared caches), in this order.
    pub writable: Vec<PathBuf>,
    /// Mounted read-only on top of a hidden folder (a tree being tested, checked or timed).
    pub read_only: Vec<PathBuf>,
    /// Covered by an empty private tmpfs (evo's work and output folders, temp folders).
    pub hidden: Vec<PathBuf>,
    /// The command's working directory inside the sandbox.
    pub cwd: Option<PathBuf>,
}

impl Sandbox {
    /// The `bwrap` argument list up to and including `--`; the command follows it.
    pub fn argv(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![self.bwrap.clone().into()];
        let mut push = |flag: &str, path: &Path, twice: bool| {
            args.push(flag.into());
            args.push(path.into());
            if twice {
                args.push(path.into());
            }
        };
        push("--ro-bind", Path::new("/"), true);
        push("--dev-bind", Path::new("/dev"), true);
        // Shared memory is a shared folder too: each run gets its own.
        push("--tmpfs", Path::new("/dev/shm"), false);
        // Later mounts go on top of earlier ones: hide first, then open the writable paths (which
        // may lie inside a hidden folder, like a tree inside the work folder).
        for dir in &self.hidden {
            push("--tmpfs", dir, false);
        }
        for dir in &self.read_only {
            push("--ro-bind", dir, true);
        }
        for dir in &self.writable {
            push("--bind", dir, true);
        }
        if let Some(cwd) = &self.cwd {
            push("--chdir", cwd, false);
        }
        for flag in ["--unshare-net", "--die-with-parent", "--"] {
            args.push(flag.into());
        }
        args
    }
}

/// What the campaign asked for.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Use bubblewrap when it works on this machine; otherwise run unsandboxed and say so.
    #[default]
    Auto,
    /// Require bubblewrap; stop before anything runs when it does not work.
    On,
    /// Never sandbox.
    Off,
}

/// Whether runs were sandboxed, as recorded in results and receipts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    pub enabled: bool,
    /// e.g. `bubblewrap 0.8.0`, when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What the sandbox does, or why it is off.
    pub detail: String,
}

impl Default for SandboxRecord {
    fn default() -> SandboxRecord {
        SandboxRecord {
            enabled: false,
            tool: None,
            detail: "not recorded (older result)".to_string(),
        }
    }
}

/// The sandbox settings of one evo invocation, decided once before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// `None` when runs are not sandboxed.
    bwrap: Option<PathBuf>,
    /// Writable for every run besides its tree (from the campaign's `sandbox.writable`).
    extra_writable: Vec<PathBuf>,
    /// Hidden from every run (evo's work and output folders, temp folders).
    hidden: Vec<PathBuf>,
    pub record: SandboxRecord,
}

/// Said after a baseline failure when the runs were sandboxed: the commonest cause is a build or
/// run that needs what the sandbox takes away.
const BASELINE_HINT: &str = "(the runs are sandboxed: no network, and the tree is read-only \
                                 once built. A build that downloads dependencies needs them \
                                 fetched beforehand, a build cache outside the tree needs \
                                 `sandbox.writable`, and a run that writes into its tree must \
                                 write to $TMPDIR instead; or set `sandbox.mode` to \"off\")";

/// What the sandbox promises, for the record.
const PROMISE: &str = "builds, tests, checks and timed runs ran under bubblewrap: no network, the \
                       file system read-only outside the run's own tree, the tree itself \
                       read-only once built (no state carried from one run to the next), evo's \
                       work and output folders (the other arm's tree, outputs and logs) hidden";

impl SandboxPolicy {
    /// No sandbox, for tests and `evo bench` (which runs the user's own commands in place).
    pub fn off(reason: &str) -> SandboxPolicy {
        SandboxPolicy {
            bwrap: None,
            extra_writable: Vec::new(),
            hidden: Vec::new(),
            record: SandboxRecord {
                enabled: false,
                tool: None,
                detail: reason.to_string(),
            },
        }
    }

    /// Decides from the campaign's mode and what this machine has. `writable` are the campaign's
    /// extra writable paths (absolute); `hidden` the folders no run may see.
    pub fn decide(
        mode: SandboxMode,
        writable: Vec<PathBuf>,
        hidden: Vec<PathBuf>,
    ) -> Result<SandboxPolicy, String> {
        if mode == SandboxMode::Off {
            return Ok(SandboxPolicy::off(
                "off: the campaign sets sandbox.mode to \"off\"",
            ));
        }
        match probe() {
            Ok(found) => Ok(SandboxPolicy {
                bwrap: Some(found.path),
                extra_writable: writable,
                hidden,
                record: SandboxRecord {
                    enabled: true,
                    tool: Some(found.version),
                    detail: PROMISE.to_string(),
                },
            }),
            Err(why) if mode == SandboxMode::On => Err(format!(
                "the campaign requires the sandbox (sandbox.mode \"on\"), but {why}; install \
                 bubblewrap (Debian: apt-get install bubblewrap) or set sandbox.mode to \"auto\""
            )),
            Err(why) => Ok(SandboxPolicy::off(&format!(
                "off: {why} (sandbox.mode \"auto\"); runs could reach the network and the other \
                 arm's files"
            ))),
        }
    }

    pub fn enabled(&self) -> bool {
        self.bwrap.is_some()
    }

    /// A baseline failure's message, with what the sandbox takes away when it was on (once: a
    /// campaign passes on its confirmations' messages).
    pub fn explain(&self, baseline_failure: String) -> String {
        if !self.enabled() || baseline_failure.contains(BASELINE_HINT) {
            return baseline_failure;
        }
        format!("{baseline_failure}\n{BASELINE_HINT}")
    }

    /// The sandbox for a build in `tree` from `cwd`: the tree and the campaign's extra folders
    /// writable. `None` when off.
    pub fn for_build(&self, tree: &Path, cwd: Option<&Path>) -> Option<Sandbox> {
        let bwrap = self.bwrap.clone()?;
        let mut writable = vec![tree.to_path_buf()];
        writable.extend(self.extra_writable.iter().cloned());
        Some(Sandbox {
            bwrap,
            writable,
            read_only: Vec::new(),
            hidden: self.hidden.clone(),
            cwd: cwd.map(Path::to_path_buf),
        })
    }

    /// The sandbox for a test, check or timed run of the built `tree`: the tree read-only, so no
    /// run can leave anything (a cache of answers) for the next; only a private `/tmp` is
    /// writable. `None` when off.
    pub fn for_run(&self, tree: &Path, cwd: Option<&Path>) -> Option<Sandbox> {
        let bwrap = self.bwrap.clone()?;
        Some(Sandbox {
            bwrap,
            writable: Vec::new(),
            read_only: vec![tree.to_path_buf()],
            hidden: self.hidden.clone(),
            cwd: cwd.map(Path::to_path_buf),
        })
    }
}

/// The folders every sandboxed run sees empty: `/tmp`, `$TMPDIR`, and evo's own folders (the
/// work folder holding both arms' trees, the output folder holding their logs and outputs).
pub fn default_hidden(own: &[&Path]) -> Vec<PathBuf> {
    let mut hidden = vec![PathBuf::from("/tmp")];
    if let Some(tmp) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
        hidden.push(PathBuf::from(tmp));
    }
    hidden.extend(own.iter().map(|p| p.to_path_buf()));
    // Only folders that exist can be covered; a nested one after its parent is harmless.
    hidden.retain(|p| p.is_dir());
    hidden.dedup();
    hidden
}

/// A bubblewrap that works on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bubblewrap {
    pub path: PathBuf,
    /// e.g. `bubblewrap 0.8.0`.
    pub version: String,
}

/// Finds `bwrap` on the PATH and checks that it can actually build a sandbox here (containers
/// may forbid the namespaces it needs).
pub fn probe() -> Result<Bubblewrap, String> {
    let bwrap =
        which("bwrap").ok_or_else(|| "bubblewrap (`bwrap`) is not installed".to_string())?;
    let trial = Command::new(&bwrap)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev-bind",
            "/dev",
            "/dev",
            "--tmpfs",
            "/tmp",
        ])
        .args(["--unshare-net", "--die-with-parent", "--", "/bin/true"])
        .output()
        .map_err(|e| format!("`{}` could not start: {e}", bwrap.display()))?;
    if !trial.status.success() {
        return Err(format!(
            "`{}` cannot create a sandbox on this machine: {}",
            bwrap.display(),
            String::from_utf8_lossy(&trial.stderr).trim()
        ));
    }
    let version = Command::new(&bwrap)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "bubblewrap".to_string());
    Ok(Bubblewrap {
        path: bwrap,
        version,
    })
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_folders_come_before_the_writable_tree_inside_them() {
        let sandbox = Sandbox {
            bwrap: "bwrap".into(),
            writable: vec!["/w/work/candidate".into()],
            read_only: vec![],
            hidden: vec!["/w/work".into()],
            cwd: Some("/w/work/candidate/src".into()),
        };
        let args: Vec<String> = sandbox
            .argv()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let at = |flag: &str| args.iter().position(|a| a == flag).unwrap();
        let hidden = args.iter().position(|a| a == "/w/work").unwrap();
        assert_eq!(args[hidden - 1], "--tmpfs", "{args:?}");
        assert!(hidden < at("--bind"), "{args:?}");
        assert!(
            args.windows(2).any(|w| w == ["--tmpfs", "/dev/shm"]),
            "{args:?}"
        );
        assert_eq!(args[at("--chdir") + 1], "/w/work/candidate/src");
        assert!(args.contains(&"--unshare-net".to_string()));
        assert_eq!(args.last().unwrap(), "--");
    }

    #[test]
    fn off_mode_never_probes_and_says_why() {
        let policy = SandboxPolicy::decide(SandboxMode::Off, vec![], vec![]).unwrap();
        assert!(!policy.enabled());
        assert!(policy.record.detail.contains("off"));
        assert_eq!(policy.for_build(Path::new("/t"), None), None);
        assert_eq!(policy.for_run(Path::new("/t"), None), None);
    }
}
