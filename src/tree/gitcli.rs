//! Run the `git` command line inside one of evo's trees, isolated from the user's environment:
//! no system or global config, no hooks, no inherited `GIT_DIR`, C locale so messages can be
//! read back. Used only where git's own behaviour is the point: taking a tree's diff (`diff.rs`)
//! and the apply fallback (`apply.rs`); everything else is libgit2 (see the table in `tree`).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

use super::PatchError;

/// What a `git` run printed and whether it succeeded.
pub(super) struct GitRun {
    pub success: bool,
    pub stdout: String,
    /// The exact bytes of stdout (a diff may hold any bytes).
    pub stdout_bytes: Vec<u8>,
    pub stderr: String,
}

/// Run `git <args>` in the tree at `root`.
pub(super) fn run_git(root: &Path, args: &[&OsStr]) -> Result<GitRun, PatchError> {
    let mut command = Command::new("git");
    command.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command
        .env("LC_ALL", "C")
        .env("LANG", "C")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_DIR", root.join(".git"))
        .env("GIT_WORK_TREE", root)
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.autocrlf=false",
        ])
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null());
    let output = command.output().map_err(|source| PatchError::Io {
        action: "run `git` in",
        path: root.to_path_buf(),
        source,
    })?;
    Ok(GitRun {
        success: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stdout_bytes: output.stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}
