//! Resolve the user's baseline once to a full commit SHA, so every later tree is built from the
//! same commit even if the branch moves while evo runs.

use std::path::Path;

use git2::Repository;

use super::{Pinned, TreeError};

/// Open `repo` (read only) and resolve `commitish` — full or short SHA, branch, tag, `HEAD~1` —
/// to the full SHA of a commit.
///
/// libgit2, not `git rev-parse`: the same revision syntax, answered in process from the
/// repository alone (`Repository::open` ignores `GIT_DIR` and friends in evo's environment), with
/// a typed error instead of stderr to parse.
pub fn pin(repo: &Path, commitish: &str) -> Result<Pinned, TreeError> {
    let git = Repository::open(repo).map_err(|source| TreeError::NotARepository {
        path: repo.to_path_buf(),
        source,
    })?;
    let location = git.workdir().unwrap_or_else(|| git.path());
    let canonical = location.canonicalize().map_err(|source| TreeError::Io {
        action: "resolve the path of",
        path: location.to_path_buf(),
        source,
    })?;
    let bad = |source| TreeError::BadBaseline {
        commitish: commitish.to_string(),
        repo: canonical.clone(),
        source,
    };
    let commit = git
        .revparse_single(commitish)
        .and_then(|object| object.peel_to_commit())
        .map_err(bad)?;
    Ok(Pinned {
        repo: canonical,
        commitish: commitish.to_string(),
        sha: commit.id().to_string(),
    })
}
