//! The "trees" stage: pin the baseline, build clean trees in evo's own work directory, and check
//! and apply candidate patches to them.
//!
//! The user's repository is only ever read. Every tree is a fresh git repository of its own whose
//! single commit holds exactly the pinned commit's files, so a candidate can be applied there and
//! its `git diff` taken later without any link back to the user's history.

mod apply;
mod diff;
mod error;
mod gitcli;
mod globs;
mod inspect;
mod materialize;
mod overlay;
mod pin;
mod safety;
mod split;

use std::path::PathBuf;

pub use apply::{Applied, Applier, apply_patch};
pub use diff::diff_worktree;
pub use error::{PatchError, Refusal, TreeError};
pub use inspect::{
    ChangeKind, Content, FileChange, FileMode, MAX_PATCH_BYTES, PatchFile, PatchSummary,
    inspect_patch, read_patch, too_large_message,
};
pub use materialize::{COMMITTER_EMAIL, COMMITTER_NAME, dir_name, materialize};
pub use overlay::{OverlayFile, copy_overlay, digest_file, digest_tree_file};
pub use pin::pin;
pub use safety::check_patch_safety;
pub use split::{PatchSplit, split_patch};

/// A baseline resolved once to a full commit SHA in the user's repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// Canonical path of the repository (its work tree, or the git directory when bare).
    pub repo: PathBuf,
    /// What the user wrote (`main`, `HEAD~1`, a short SHA…), kept for the receipt.
    pub commitish: String,
    /// The full 40-hex commit SHA every tree is built from.
    pub sha: String,
}

/// A clean checkout of the pinned commit, itself a fresh git repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Where the files are (and `.git` of the tree's own repository).
    pub root: PathBuf,
    /// The pinned commit of the user's repository these files come from.
    pub base_sha: String,
    /// The tree's own single commit ("evo baseline <sha>"); diff against it to get a patch.
    pub commit: String,
}
