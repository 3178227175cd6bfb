//! Errors of the trees stage, each naming the repository, commit, path or hunk involved so the
//! message alone tells the user what to fix.

use std::io;
use std::path::PathBuf;

/// Failures while pinning, materializing or overlaying a tree.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("{path} is not a git repository")]
    NotARepository {
        path: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("baseline `{commitish}` does not resolve to a commit in {repo}")]
    BadBaseline {
        commitish: String,
        repo: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("{dest} already exists and is not an empty directory; trees are built in a fresh one")]
    DestinationNotEmpty { dest: PathBuf },
    #[error("commit {commit} has an entry `{path}` that cannot be written safely ({reason})")]
    UnsafeEntry {
        commit: String,
        path: String,
        reason: &'static str,
    },
    #[error("cannot {action} in {repo}")]
    Git {
        action: &'static str,
        repo: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("cannot {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("overlay file {} {reason}", source_path.display())]
    Overlay {
        source_path: PathBuf,
        #[source]
        reason: OverlayRefusal,
    },
}

/// Why an overlay file is not copied into a tree (what follows "overlay file X").
#[derive(Debug, thiserror::Error)]
pub enum OverlayRefusal {
    #[error("has no file name")]
    NoFileName,
    #[error("would land on `{}`, like {}", dest.display(), other.display())]
    SameDestination { dest: PathBuf, other: PathBuf },
    #[error("would go into git metadata at `{}`", dest.display())]
    IntoGit { dest: PathBuf },
    #[error("would be written through the symlink `{}` of the tree", link.display())]
    ThroughSymlink { link: PathBuf },
    #[error("cannot be read: {0}")]
    Unreadable(#[source] io::Error),
    #[error("is not a regular file")]
    NotAFile,
    #[error("would replace `{}`, which the tree already has with other content", dest.display())]
    WouldReplace { dest: PathBuf },
    #[error("cannot create {}: {source}", folder.display())]
    CreateFolder {
        folder: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot be copied to {}: {source}", dest.display())]
    Copy {
        dest: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("changed while it was being copied")]
    Changed,
}

/// Why a patch touching `path` is refused before it is applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("is an absolute path")]
    Absolute,
    #[error("has a `..` component and could leave the tree")]
    ParentDir,
    #[error("touches git metadata (a `.git` component)")]
    GitDir,
    #[error("matches the protected pattern `{pattern}`")]
    Protected { pattern: String },
    #[error("would write through the symlink `{link}` of the tree")]
    ThroughTreeSymlink { link: String },
    #[error("would write through the symlink `{link}` that this same patch creates")]
    ThroughNewSymlink { link: String },
    #[error("is a symlink to the absolute path `{target}`")]
    AbsoluteSymlink { target: String },
    #[error("is a symlink to `{target}`, which leaves the tree")]
    EscapingSymlink { target: String },
    #[error("is a symlink to `{target}`, which points into git metadata")]
    SymlinkIntoGitDir { target: String },
    #[error("is a symlink whose target the patch does not show")]
    UnknownSymlinkTarget,
    #[error(
        "has the control character {shown} in its name; file names must be plain text, since \
         logs, receipts and the PR text quote them"
    )]
    ControlCharacter { shown: String },
    #[error("is not valid UTF-8 (shown with U+FFFD); file names must be plain text")]
    NotUtf8,
    #[error(
        "is a new file that {tool} reads by itself, in, above or below {place}, where the \
         workload's {what}: it could change what is built or rewrite what is protected; list it \
         in the workload's `config_files` to allow it"
    )]
    ImplicitBuildFile {
        tool: String,
        place: String,
        what: String,
    },
}

/// Failures while reading, checking or applying a candidate patch.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("the patch is empty")]
    Empty,
    #[error("the patch is {size} bytes, over the {cap}-byte limit")]
    TooLarge { size: usize, cap: usize },
    #[error(
        "the patch would write {bytes} bytes into the tree (`{file}` alone {file_bytes}, as its \
         headers declare: nothing was inflated), over the {cap}-byte limit \
         (confirm.max_applied_bytes): refused before anything is applied or built"
    )]
    AppliedTooLarge {
        bytes: u64,
        cap: u64,
        file: String,
        file_bytes: u64,
    },
    #[error("the patch cannot be parsed as a `git diff`: {detail}")]
    Unparsable { detail: String },
    #[error("the patch contains no file changes (is it the output of `git diff`?)")]
    NoFiles,
    #[error("the patch sets the unsupported file mode {mode:o} on line {line}")]
    UnsupportedMode { mode: u32, line: usize },
    #[error("the pattern `{pattern}` (protected or config_files) is not a valid glob")]
    BadProtectedGlob {
        pattern: String,
        #[source]
        source: globset::Error,
    },
    #[error("refusing the patch: `{path}` {reason}")]
    Refused { path: String, reason: Refusal },
    #[error(
        "the patch for `{file}` only says \"Binary files differ\" and carries no binary data, so \
         it cannot be applied; regenerate it with `git diff --binary`"
    )]
    BinaryWithoutData { file: String },
    #[error("{}", does_not_apply(file, hunk.as_deref(), detail))]
    DoesNotApply {
        file: String,
        hunk: Option<String>,
        detail: String,
    },
    #[error("cannot {action} in {path}")]
    Git {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("cannot {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("`git {command}` failed in {}: {stderr}", path.display())]
    GitCommand {
        command: String,
        path: PathBuf,
        stderr: String,
    },
}

fn does_not_apply(file: &str, hunk: Option<&str>, detail: &str) -> String {
    match hunk {
        Some(hunk) => format!("the patch does not apply to `{file}` at hunk `{hunk}`: {detail}"),
        None => format!("the patch does not apply to `{file}`: {detail}"),
    }
}
