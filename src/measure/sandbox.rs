//! Isolation of builds, tests, checks, timed runs and agents with bubblewrap (`bwrap`).
//!
//! Code under test is treated as an attacker with root inside its build. Each sandboxed command:
//! - runs as an unprivileged user in its own user namespace with every capability dropped and no
//!   way to make another namespace (`--unshare-user --uid 65534 --cap-drop ALL
//!   --disable-userns`), in a new session (no terminal injection), so it cannot remount anything;
//! - sees only an allow-list of the machine (see `view`): system folders and toolchains
//!   read-only, an empty private home, `/tmp` and `/dev`; never the signing key, the campaign or
//!   holdout files, the repository being judged, or evo's work, output and state folders;
//! - has its own PID, IPC, UTS and network namespaces, with evo as process 1 (see `init`), so it
//!   can neither see nor signal any other process, and everything it starts dies with it and is
//!   counted;
//! - gets its environment from an allow-list (see [`run_environment`]), recorded in the result.
//!
//! Whether the sandbox was on is part of every result and receipt; when the campaign asks for
//! `auto` and the machine has no working bubblewrap, runs go unsandboxed, loudly.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::caches::{MachineKind, SharedCaches};
pub use super::error::SandboxError;
use super::init::{self, INIT_ARG, INIT_PATH};
use super::overlay::Overlay;
use super::readonly::ReadOnlyPaths;
use super::view::{Covered, Shown, View};
use crate::spec::campaign::SandboxLimits;
use crate::spec::modes::{SandboxMode, never_passed};

/// The user and group id a sandboxed command has inside its user namespace.
const SANDBOX_ID: &str = "65534";

/// A folder a run binds on top of the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    /// What is mounted (a private copy of a cache, for a candidate).
    pub source: PathBuf,
    /// Where the command sees it.
    pub dest: PathBuf,
    pub writable: bool,
}

impl Bind {
    pub fn same(path: &Path, writable: bool) -> Bind {
        Bind {
            source: path.to_path_buf(),
            dest: path.to_path_buf(),
            writable,
        }
    }
}

/// How one command is isolated: everything `bwrap` needs besides the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub bwrap: PathBuf,
    pub view: Arc<View>,
    /// The run's own folders (its tree, declared caches and read-only folders), in mount order.
    pub binds: Vec<Bind>,
    /// The command's working directory inside the sandbox.
    pub cwd: Option<PathBuf>,
    /// Whether the command keeps the host's network (agents only).
    pub network: bool,
    /// What the command may use at most.
    pub limits: SandboxLimits,
    /// The copy-on-write caches of a candidate's build, mounted before `bwrap` starts; each is
    /// bound like any folder from its mount point (see `overlay`).
    pub overlays: Vec<Overlay>,
}

/// Accumulates `bwrap` arguments.
struct Args(Vec<OsString>);

impl Args {
    fn flag(&mut self, flag: &str) {
        self.0.push(flag.into());
    }

    fn with(&mut self, flag: &str, values: &[&std::ffi::OsStr]) {
        self.flag(flag);
        self.0.extend(values.iter().map(|v| v.to_os_string()));
    }

    fn cover(&mut self, covered: &Covered) {
        match covered {
            Covered::Folder(p) => self.with("--tmpfs", &[p.as_os_str()]),
            Covered::File(p) => self.with("--ro-bind", &["/dev/null".as_ref(), p.as_os_str()]),
        }
    }
}

impl Sandbox {
    /// The `bwrap` argument list up to and including evo's process 1 (bound from `init`, the evo
    /// executable); `/bin/sh -c COMMAND` follows it.
    pub fn argv(&self, init: &Path) -> Vec<OsString> {
        let mut a = Args(vec![self.bwrap.clone().into()]);
        for flag in [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ] {
            a.flag(flag);
        }
        if !self.network {
            a.flag("--unshare-net");
        }
        a.with("--uid", &[SANDBOX_ID.as_ref()]);
        a.with("--gid", &[SANDBOX_ID.as_ref()]);
        a.flag("--disable-userns");
        a.with("--cap-drop", &["ALL".as_ref()]);
        for flag in ["--new-session", "--die-with-parent", "--as-pid-1"] {
            a.flag(flag);
        }
        // Later mounts go on top of earlier ones: the empty home first, then what is shown (some
        // toolchains live in the home), then what is covered inside it.
        if let Some(home) = &self.view.home {
            a.with("--tmpfs", &[home.as_os_str()]);
        }
        for shown in &self.view.shown {
            match shown {
                Shown::Folder(p) => a.with("--ro-bind", &[p.as_os_str(), p.as_os_str()]),
                Shown::Link { link, target } => {
                    a.with("--symlink", &[target.as_os_str(), link.as_os_str()])
                }
            }
        }
        for covered in &self.view.covered {
            a.cover(covered);
        }
        a.with("--proc", &["/proc".as_ref()]);
        a.with("--dev", &["/dev".as_ref()]);
        // The private /tmp is a tmpfs of bounded size: a full one is memory evo cannot get back.
        let tmp_bytes = u64::from(self.limits.tmp_mib.get()) << 20;
        a.with("--size", &[tmp_bytes.to_string().as_ref()]);
        a.with("--tmpfs", &["/tmp".as_ref()]);
        for bind in &self.binds {
            let flag = if bind.writable { "--bind" } else { "--ro-bind" };
            a.with(flag, &[bind.source.as_os_str(), bind.dest.as_os_str()]);
        }
        for bind in &self.binds {
            for covered in self.view.secrets_inside(&bind.dest) {
                a.cover(&covered);
            }
        }
        a.with("--ro-bind", &[init.as_os_str(), INIT_PATH.as_ref()]);
        if let Some(cwd) = &self.cwd {
            a.with("--chdir", &[cwd.as_os_str()]);
        }
        let rlimits = init::RLimits::of(&self.limits).arg();
        a.with(
            "--",
            &[INIT_PATH.as_ref(), INIT_ARG.as_ref(), rlimits.as_ref()],
        );
        a.0
    }
}

/// Which side of a comparison a build belongs to: a candidate's build never writes what the
/// baseline's builds or runs read (`TreeLabel::sandbox_arm` says which a tree is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    Baseline,
    Candidate,
}

/// Whether runs were sandboxed, as recorded in results and receipts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SandboxRecord {
    pub enabled: bool,
    /// e.g. `bubblewrap 0.8.0`, when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What the sandbox does, or why it is off.
    pub detail: String,
    /// The environment every build, test, check and timed run starts from (the workload's own
    /// `env` is added to it); nothing else of evo's environment reaches code under test.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment: BTreeMap<String, String>,
    /// Where the baseline's builds found the declared caches when a fleet shared them among the
    /// nodes of one machine kind (docs/design.md §2.8); absent when each machine has its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_caches: Option<SharedCacheRecord>,
}

/// The fleet's caches a sandboxed build used: the machine kind they are for and their folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedCacheRecord {
    /// The kind's folder name under `<shared_dir>/caches`.
    pub key: String,
    pub kind: MachineKind,
    /// That folder, as the node saw it.
    pub folder: String,
}

impl Default for SandboxRecord {
    fn default() -> SandboxRecord {
        SandboxRecord {
            enabled: false,
            tool: None,
            detail: "not recorded (older result)".to_string(),
            environment: BTreeMap::new(),
            shared_caches: None,
        }
    }
}

/// What a campaign asks of the sandbox, with its paths resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxRequest {
    pub mode: SandboxMode,
    /// Folders builds may write besides their tree (caches); each candidate gets its own copy.
    pub writable: Vec<PathBuf>,
    /// Folders every run may read besides the system and its tree (data, an installed runtime).
    pub read_only: Vec<PathBuf>,
    /// evo's own paths no run may see: the key, the campaign and holdout files, the repository,
    /// evo's work, output and state folders.
    pub secrets: Vec<PathBuf>,
    /// Names of further environment variables to pass to code under test.
    pub pass_env: Vec<String>,
    /// What each sandboxed command may use at most.
    pub limits: SandboxLimits,
    /// Where a candidate's private copies of the writable folders are made.
    pub copies: PathBuf,
    /// A fleet's caches of this machine's kind, which the writable folders are bound from
    /// instead of this machine's own (`fleet.share_caches`); ignored when runs are not
    /// sandboxed, since an unsandboxed build writes where it likes.
    pub shared_caches: Option<SharedCaches>,
}

/// The sandbox settings of one evo invocation, decided once before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// `None` when runs are not sandboxed.
    bwrap: Option<PathBuf>,
    view: Arc<View>,
    writable: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    copies: PathBuf,
    /// Whether a candidate's build sees the writable folders through copy-on-write overlays
    /// rather than copies (see `overlay`).
    overlay: bool,
    /// Where the writable folders really are when a fleet shares them (see `measure::caches`).
    shared: Option<SharedCaches>,
    environment: BTreeMap<String, String>,
    /// The workload's protected paths, kept read-only in every build's writable tree.
    protected: ReadOnlyPaths,
    limits: SandboxLimits,
    pub record: SandboxRecord,
}

/// Said after a baseline failure when the runs were sandboxed: the commonest cause is a build or
/// run that needs what the sandbox takes away.
const BASELINE_HINT: &str = "(the runs are sandboxed: no network, only the system folders, \
                             toolchains and the run's own tree are visible, and the tree is \
                             read-only once built. A build that downloads dependencies needs \
                             them fetched beforehand, a build cache outside the tree needs \
                             `sandbox.writable`, data or a runtime outside the tree needs \
                             `sandbox.read_only`, a variable it needs `sandbox.pass_env`, a \
                             build cannot write the workload's `protected` paths, and a run that \
                             writes into its tree must write to $TMPDIR instead; or set \
                             `sandbox.mode` to \"off\")";

/// What the sandbox promises, for the record.
const PROMISE: &str = "builds, tests, checks and timed runs ran under bubblewrap as an \
                       unprivileged user with no capabilities, in their own user, PID, IPC and \
                       network namespaces (no network; evo's process 1 counts and kills every \
                       process a run starts; no run can see or signal another's processes); \
                       they saw only the system folders, toolchains, declared folders and their \
                       own tree, never the signing key, the campaign or holdout files, the \
                       repository or evo's folders; the workload's protected paths were \
                       read-only to builds and the tree was read-only once built; a \
                       candidate's builds wrote only their own copies of the declared caches; \
                       the environment was an allow-list";

/// Variables passed from evo's environment to code under test; nothing else is.
pub const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_MESSAGES",
    "TZ",
    "TERM",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CC",
    "CXX",
    "SOURCE_DATE_EPOCH",
    "XDG_CACHE_HOME",
    "EVO_CACHE_DIR",
];

/// The environment code under test starts from: the allow-list above and `pass` taken from
/// evo's environment (values that are not UTF-8 are left out), and `TMPDIR` (`/tmp` inside the
/// sandbox, where evo's own temp folder is not visible).
pub fn run_environment(sandboxed: bool, pass: &[String]) -> BTreeMap<String, String> {
    let var = |name: &str| std::env::var_os(name).and_then(|v| v.into_string().ok());
    environment_from(sandboxed, pass, &var)
}

/// [`run_environment`] with the variables read through `var`.
fn environment_from(
    sandboxed: bool,
    pass: &[String],
    var: &dyn Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let names = PASSED_ENV
        .iter()
        .copied()
        .chain(pass.iter().map(String::as_str))
        .filter(|name| !never_passed(name));
    for name in names {
        if let Some(value) = var(name) {
            env.insert(name.to_string(), value);
        }
    }
    if sandboxed {
        env.insert("TMPDIR".into(), "/tmp".into());
    } else if let Some(tmp) = var("TMPDIR") {
        env.insert("TMPDIR".into(), tmp);
    }
    env
}

impl SandboxPolicy {
    /// No sandbox, for tests and `evo bench` (which runs the user's own commands in place).
    pub fn off(reason: &str) -> SandboxPolicy {
        SandboxPolicy::unsandboxed(reason.to_string(), &[])
    }

    fn unsandboxed(detail: String, pass: &[String]) -> SandboxPolicy {
        let environment = run_environment(false, pass);
        SandboxPolicy {
            bwrap: None,
            view: Arc::new(View::default()),
            writable: Vec::new(),
            read_only: Vec::new(),
            copies: std::env::temp_dir(),
            overlay: false,
            shared: None,
            environment: environment.clone(),
            protected: ReadOnlyPaths::default(),
            limits: SandboxLimits::default(),
            record: SandboxRecord {
                enabled: false,
                tool: None,
                detail,
                environment,
                shared_caches: None,
            },
        }
    }

    /// Decides from the campaign's request and what this machine has.
    pub fn for_request(request: SandboxRequest) -> Result<SandboxPolicy, SandboxError> {
        if request.mode == SandboxMode::Off {
            return Ok(SandboxPolicy::unsandboxed(
                format!("off: sandbox.mode is \"off\"; {UNSANDBOXED}"),
                &request.pass_env,
            ));
        }
        match probe() {
            Ok(found) => {
                let environment = run_environment(true, &request.pass_env);
                let view = View::of_this_machine(&request.read_only, &request.secrets);
                let shared = request
                    .shared_caches
                    .filter(|_| !request.writable.is_empty());
                // A fleet's shared caches change under other nodes' baseline builds, which an
                // overlay's lower layer must not: those are always copied.
                let overlay = match (&shared, request.writable.is_empty()) {
                    (None, false) => super::overlay::probe(&request.copies),
                    (Some(_), _) => Err(super::overlay::NoOverlay::SharedByFleet),
                    (None, true) => Err(super::overlay::NoOverlay::NoCaches),
                };
                let caches = match &overlay {
                    Ok(()) if !request.writable.is_empty() => {
                        "; a candidate's build saw the declared caches through a copy-on-write \
                         overlay of its own"
                            .to_string()
                    }
                    Err(why) if !request.writable.is_empty() => {
                        format!(
                            "; a candidate's build got a private copy of the declared caches \
                                 (no overlay: {})",
                            crate::failure::with_causes(why)
                        )
                    }
                    _ => String::new(),
                };
                let shared_caches = shared.as_ref().map(|s| SharedCacheRecord {
                    key: s.kind.key(),
                    kind: s.kind.clone(),
                    folder: s.folder.display().to_string(),
                });
                Ok(SandboxPolicy {
                    bwrap: Some(found.path),
                    view: Arc::new(view),
                    writable: request.writable,
                    read_only: request.read_only,
                    copies: request.copies,
                    overlay: overlay.is_ok(),
                    shared,
                    environment: environment.clone(),
                    protected: ReadOnlyPaths::default(),
                    limits: request.limits,
                    record: SandboxRecord {
                        enabled: true,
                        tool: Some(found.version),
                        detail: format!("{PROMISE}{caches}; {}", limits_held(&request.limits)),
                        environment,
                        shared_caches,
                    },
                })
            }
            Err(why) if request.mode == SandboxMode::On => {
                Err(SandboxError::Required(Box::new(why)))
            }
            Err(why) => Ok(SandboxPolicy::unsandboxed(
                format!("off: {why} (sandbox.mode \"auto\"); {UNSANDBOXED}"),
                &request.pass_env,
            )),
        }
    }

    pub fn enabled(&self) -> bool {
        self.bwrap.is_some()
    }

    /// Whether a candidate's build gets private copies of declared build caches (sandboxed, with
    /// `sandbox.writable` folders), as copies or as overlays: a copy is only as warm as the real
    /// cache when it is taken, and an overlay's lower layer must not change under it, so such a
    /// build runs after the baseline's, never beside it.
    pub fn copies_caches(&self) -> bool {
        self.bwrap.is_some() && !self.writable.is_empty()
    }

    /// Whether those private copies are copy-on-write overlays, which cost nothing to make.
    pub fn overlays_caches(&self) -> bool {
        self.copies_caches() && self.overlay
    }

    /// Keeps `paths` (relative to a tree's root) read-only in every build's tree from now on.
    pub fn protect(&mut self, paths: ReadOnlyPaths) {
        self.protected = paths;
    }

    /// The environment every command starts from (the workload's `env` goes on top).
    pub fn environment(&self) -> &BTreeMap<String, String> {
        &self.environment
    }

    /// The `PATH` code under test gets: the run environment's, else evo's own (empty when
    /// neither has one).
    pub fn search_path(&self) -> String {
        (self.environment.get("PATH").cloned())
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_default()
    }

    /// A baseline failure's message, with what the sandbox takes away when it was on (once: a
    /// campaign passes on its confirmations' messages).
    pub fn explain(&self, baseline_failure: String) -> String {
        if !self.enabled() || baseline_failure.contains(BASELINE_HINT) {
            return baseline_failure;
        }
        format!("{baseline_failure}\n{BASELINE_HINT}")
    }

    /// The sandbox for a build of `arm` in `tree` from `cwd`: the tree writable but for its
    /// protected paths (see `readonly`), and the declared
    /// caches writable: the real ones for the baseline, a private copy of them for a candidate
    /// (made on first use for that tree), so nothing a candidate's build writes reaches the
    /// baseline. `Ok(None)` when off.
    pub fn for_build(
        &self,
        tree: &Path,
        cwd: Option<&Path>,
        arm: Arm,
    ) -> Result<Option<Sandbox>, SandboxError> {
        let Some(bwrap) = self.bwrap.clone() else {
            return Ok(None);
        };
        let (caches, overlays) = self.caches(tree, arm)?;
        let mut sandbox = self.sandbox(bwrap, caches, Bind::same(tree, true), cwd, false);
        sandbox.binds.extend(self.protected.binds(tree));
        sandbox.overlays = overlays;
        Ok(Some(sandbox))
    }

    /// The sandbox for a test, check or timed run of the built `tree`: the tree read-only, so no
    /// run can leave anything (a cache of answers) for the next; only a private `/tmp` is
    /// writable. Runs do not see the build caches (what a run needs outside its tree is declared
    /// read-only), so nothing a candidate's build wrote can reach the baseline's runs. `None`
    /// when off.
    pub fn for_run(&self, tree: &Path, cwd: Option<&Path>) -> Option<Sandbox> {
        let bwrap = self.bwrap.clone()?;
        Some(self.sandbox(bwrap, Vec::new(), Bind::same(tree, false), cwd, false))
    }

    /// The sandbox for an agent working in `tree`: like a build (the tree writable) but with the
    /// network, and without the caches. `None` when off.
    pub fn for_agent(&self, tree: &Path, cwd: Option<&Path>) -> Option<Sandbox> {
        let bwrap = self.bwrap.clone()?;
        Some(self.sandbox(bwrap, Vec::new(), Bind::same(tree, true), cwd, true))
    }

    /// A sandbox showing `caches`, the declared read-only folders and `tree`, in that order.
    fn sandbox(
        &self,
        bwrap: PathBuf,
        caches: Vec<Bind>,
        tree: Bind,
        cwd: Option<&Path>,
        network: bool,
    ) -> Sandbox {
        let mut binds = caches;
        binds.extend(self.read_only.iter().map(|p| Bind::same(p, false)));
        binds.push(tree);
        Sandbox {
            bwrap,
            view: Arc::clone(&self.view),
            binds,
            cwd: cwd.map(Path::to_path_buf),
            network,
            limits: self.limits,
            overlays: Vec::new(),
        }
    }
}

/// The limits that held, for the record.
fn limits_held(limits: &SandboxLimits) -> String {
    let groups = super::limits::detect();
    let groups = super::limits::held(&groups, limits.memory_mib.get(), limits.pids.get());
    format!(
        "limits: each command's /tmp was a {} MiB tmpfs (sandbox.limits.tmp_mib); no \
         process could write a file over {} MiB (file_mib) or use over {} s of CPU (cpu_s); \
         {groups}",
        limits.tmp_mib, limits.file_mib, limits.cpu_s
    )
}

/// What an unsandboxed record says.
const UNSANDBOXED: &str = "WARNING: code under test ran with evo's user rights: it could read \
                           the signing key, the holdout files and the other arm's tree, reach \
                           the network and signal other processes, so this verdict does not \
                           hold against a hostile candidate";

/// A bubblewrap that works on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bubblewrap {
    pub path: PathBuf,
    /// e.g. `bubblewrap 0.8.0`.
    pub version: String,
}

/// Finds `bwrap` on the PATH and checks that it can build a sandbox with every guarantee evo
/// relies on here (containers may forbid the namespaces it needs).
pub fn probe() -> Result<Bubblewrap, SandboxError> {
    let bwrap = which("bwrap").ok_or(SandboxError::NotInstalled)?;
    let trial = Command::new(&bwrap)
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            "--uid",
            SANDBOX_ID,
            "--gid",
            SANDBOX_ID,
            "--disable-userns",
            "--cap-drop",
            "ALL",
            "--new-session",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--",
            "/bin/true",
        ])
        .output();
    let trial = match trial {
        Ok(trial) => trial,
        Err(source) => return Err(SandboxError::CannotStart { bwrap, source }),
    };
    if !trial.status.success() {
        return Err(SandboxError::NoNamespaces {
            bwrap,
            stderr: String::from_utf8_lossy(&trial.stderr).trim().to_string(),
        });
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
#[path = "sandbox_tests.rs"]
mod tests;

#[path = "sandbox_copies.rs"]
mod copies;
