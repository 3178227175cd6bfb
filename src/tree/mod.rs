//! The "trees" stage: pin the baseline, build clean trees in evo's own work directory, and check
//! and apply candidate patches to them.
//!
//! The user's repository is only ever read. Every tree is a fresh git repository of its own whose
//! single commit holds exactly the pinned commit's files, so a candidate can be applied there and
//! its `git diff` taken later without any link back to the user's history.
//!
//! Each git operation has one way of doing it, chosen on purpose (the reason is at each place):
//!
//! | operation | how | where |
//! |---|---|---|
//! | resolve and pin the baseline | libgit2 | `pin.rs` |
//! | build a tree (copy objects, write files, commit) | libgit2 | `materialize.rs` |
//! | read a patch (files, modes, hunks, binary data) | libgit2 | `inspect.rs` |
//! | apply a patch | libgit2, then the `git` CLI when libgit2 gives up | `apply.rs` |
//! | take an agent's edits as a patch | the `git` CLI | `diff.rs` |
//! | facts about the user's repository for `evo init` | libgit2 | `scaffold/mod.rs` |
//!
//! libgit2 is the default: it runs in evo's process, runs no hooks, leaves no output to parse and
//! does not depend on which `git` is installed. The command line is used only where its output or
//! behaviour is the point (`gitcli.rs` isolates it from the user's configuration).

mod apply;
mod build_files;
mod commit_message;
mod diff;
mod disk;
mod error;
mod folder_digest;
mod gitcli;
mod globs;
mod holdout_names;
mod inspect;
mod materialize;
mod overlay;
mod pin;
mod probes;
mod protected;
mod safety;
mod size;
mod split;

use std::path::PathBuf;

pub use apply::{Applied, Applier, apply_patch};
pub use build_files::{BuildPlaces, IMPLICIT_BUILD_FILES, check_build_files};
pub use commit_message::format_patch_message;
pub use diff::diff_worktree;
pub use disk::disk_usage;
pub use error::{OverlayRefusal, PatchError, Refusal, TreeError};
pub use folder_digest::{FolderDigest, digest_folder, file_hashes};
pub use holdout_names::{Mention, holdout_mentions};
pub use inspect::{
    BinarySize, ChangeKind, Content, FileChange, FileMode, MAX_PATCH_BYTES, PatchFile,
    PatchSummary, inspect_patch, read_patch, too_large_message,
};
pub use materialize::{COMMITTER_EMAIL, COMMITTER_NAME, dir_name, materialize};
pub use overlay::{OverlayFile, copy_overlay, digest_file, digest_tree_file, tree_file};
pub use pin::pin;
pub use probes::{
    COMPUTED_GETENV, LaneProbed, PROBES, Probe, ProbeHit, ProbeScan, gate_detail, hits_text,
    is_probe_name, scan_probes,
};
pub use protected::{Protected, ProtectedChange, ProtectedError, record_protected};
pub use safety::check_patch_safety;
pub use size::{AppliedSize, DEFAULT_MAX_APPLIED_BYTES, applied_size, check_applied_size};
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

/// So a caller can hand a tree, or a tree with what it keeps beside it, where a tree is read.
impl AsRef<Tree> for Tree {
    fn as_ref(&self) -> &Tree {
        self
    }
}
