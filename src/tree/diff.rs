//! The patch an agent's edits amount to: everything that changed in a tree since its baseline
//! commit, new files included, as `git diff --binary` (the format `apply_patch` takes back).
//!
//! The `git` CLI, not libgit2: these bytes become the candidate patch, which is digested into the
//! receipt and shown to reviewers, so it is git's own output, the same a person would get by
//! running `git add -A && git diff --cached --binary` in the tree. libgit2's printer would give
//! other bytes for the same change (it finds renames only when asked, where `git diff` does by
//! default).

use std::ffi::OsStr;

use super::gitcli::run_git;
use super::{PatchError, Tree};

/// Stages every change of the tree's work tree (respecting `.git/info/exclude`, which lists the
/// overlay) and returns the binary diff against the tree's baseline commit; empty when unchanged.
pub fn diff_worktree(tree: &Tree) -> Result<Vec<u8>, PatchError> {
    let add = run_git(&tree.root, &[OsStr::new("add"), OsStr::new("-A")])?;
    if !add.success {
        return Err(PatchError::GitCommand {
            command: "add -A".into(),
            path: tree.root.clone(),
            stderr: add.stderr.trim().to_string(),
        });
    }
    let args = [
        "diff",
        "--cached",
        "--binary",
        "--no-color",
        "--no-ext-diff",
        &tree.commit,
    ];
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let diff = run_git(&tree.root, &args)?;
    if !diff.success {
        return Err(PatchError::GitCommand {
            command: "diff --cached --binary".into(),
            path: tree.root.clone(),
            stderr: diff.stderr.trim().to_string(),
        });
    }
    Ok(diff.stdout_bytes)
}
