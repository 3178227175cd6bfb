//! Ties a verified receipt to what its reviewer is looking at. A valid signature says only that
//! the key's holder signed *some* confirmation: a pull request can ship a genuine accepted
//! receipt of another patch, or a genuine rejected one. So verification can require that
//! the receipt is about the patch under review (`--patch FILE`: the same bytes), about the pull
//! request's change (`--diff BASE..HEAD`: the same baseline, and the receipt's patch turns the
//! range's start into exactly its end), and has the verdict and tier the reviewer needs
//! (`--require accepted`, `--require tier=tested`).
//!
//! The range is compared by effect, not by the bytes of a `git diff`: the same change has many
//! textual forms (context lines, rename detection, `--binary`), and the patch evo confirmed was
//! written by whoever made it. The receipt's patch, whose digest must match, is applied with
//! libgit2 to the range's start tree in memory (an object store that is never written to disk,
//! so the repository is only read), and the tree it gives must be the end's tree, object id for
//! object id.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::evidence::result::{ConfirmResult, Verdict};
use crate::stats::Tier;

/// One thing a reviewer requires of a valid receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// This verdict exactly.
    Verdict(Verdict),
    /// This tier or a higher one (`tested` > `measured` > `counted` > `rejected`, `none`).
    Tier(Tier),
}

fn tier_rank(t: Tier) -> u8 {
    match t {
        Tier::None | Tier::Rejected => 0,
        Tier::Counted => 1,
        Tier::Measured => 2,
        Tier::Tested => 3,
    }
}

fn verdict_named(name: &str) -> Option<Verdict> {
    [Verdict::Accepted, Verdict::Rejected, Verdict::Inconclusive]
        .into_iter()
        .find(|v| v.as_str() == name)
}

fn tier_named(name: &str) -> Option<Tier> {
    [Tier::Rejected, Tier::Counted, Tier::Measured, Tier::Tested]
        .into_iter()
        .find(|t| t.as_str() == name)
}

/// A `--require` value that names no verdict or tier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a requirement: say accepted, rejected or inconclusive (the verdict), or \
     tier=tested, tier=measured, tier=counted (that tier or a higher one)"
)]
pub struct NotARequirement(String);

impl std::str::FromStr for Requirement {
    type Err = NotARequirement;

    /// `accepted` (a verdict), `verdict=accepted`, or `tier=tested`.
    fn from_str(text: &str) -> Result<Requirement, NotARequirement> {
        let text = text.trim();
        let (kind, value) = text.split_once('=').unwrap_or(("verdict", text));
        let found = match kind.trim() {
            "verdict" => verdict_named(value.trim()).map(Requirement::Verdict),
            "tier" => tier_named(value.trim()).map(Requirement::Tier),
            _ => None,
        };
        found.ok_or_else(|| NotARequirement(text.to_string()))
    }
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Requirement::Verdict(v) => write!(f, "verdict {}", v.as_str()),
            Requirement::Tier(t) => write!(f, "tier {} or higher", t.as_str()),
        }
    }
}

/// The requirements `p` does not meet, each said as a sentence.
pub fn unmet(p: &ConfirmResult, required: &[Requirement]) -> Vec<String> {
    let unmet = |r: &Requirement| match r {
        Requirement::Verdict(v) => p.verdict != *v,
        Requirement::Tier(t) => tier_rank(p.tier) < tier_rank(*t),
    };
    (required.iter().filter(|r| unmet(r)))
        .map(|r| {
            format!(
                "required {r}, the receipt says verdict {}, tier {}",
                p.verdict.as_str(),
                p.tier.as_str()
            )
        })
        .collect()
}

/// Why a receipt is not about the change under review.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BindingError {
    #[error(
        "the receipt is about another patch: it names {recorded} (sha256 {recorded_sha}), \
         {file} has sha256 {actual_sha} (compared byte for byte, as given)"
    )]
    Patch {
        recorded: String,
        recorded_sha: String,
        file: String,
        actual_sha: String,
    },
    #[error(
        "the receipt's baseline is commit {recorded}, the range's base {base} is commit {actual}"
    )]
    Baseline {
        recorded: String,
        base: String,
        actual: String,
    },
    #[error(
        "the receipt's patch does not make the range's change: applied to {from} it gives tree \
         {made}, {to} has tree {wanted}{paths}"
    )]
    Effect {
        from: String,
        to: String,
        made: String,
        wanted: String,
        /// The first paths that differ, as `; differs: a, b`.
        paths: String,
    },
    #[error("the receipt's patch does not apply to {from} with libgit2: {reason}")]
    Apply { from: String, reason: String },
    /// The range or the repository cannot be read: a usage error, not a mismatch.
    #[error("{0}")]
    Git(String),
}

/// Refuses `bytes` (the file `shown`) unless they are the receipt's patch, byte for byte.
pub fn check_patch(p: &ConfirmResult, bytes: &[u8], shown: &str) -> Result<(), BindingError> {
    let actual = hex::encode(Sha256::digest(bytes));
    if actual == p.evidence.patch.sha256 {
        return Ok(());
    }
    Err(BindingError::Patch {
        recorded: p.evidence.patch.file.clone(),
        recorded_sha: p.evidence.patch.sha256.clone(),
        file: shown.to_string(),
        actual_sha: actual,
    })
}

/// A `BASE..HEAD` or `BASE...HEAD` range, resolved: the receipt's baseline must be `base`; the
/// patch must turn `from` (`BASE`, or with three dots the merge base, as `git diff` reads it)
/// into `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// `BASE` as the user wrote it.
    pub base_name: String,
    pub base: String,
    pub from: String,
    pub to: String,
}

fn git(e: git2::Error, what: &str) -> BindingError {
    BindingError::Git(format!("{what}: {}", e.message()))
}

fn commit<'r>(repo: &'r git2::Repository, rev: &str) -> Result<git2::Commit<'r>, BindingError> {
    (repo.revparse_single(rev).and_then(|o| o.peel_to_commit()))
        .map_err(|e| git(e, &format!("`{rev}` is not a commit")))
}

/// Resolves `range` in the repository at `repo`.
pub fn resolve_range(repo: &Path, range: &str) -> Result<Range, BindingError> {
    let r = git2::Repository::open(repo)
        .map_err(|e| git(e, &format!("cannot open the repository {}", repo.display())))?;
    let (base, head, three) = match (range.split_once("..."), range.split_once("..")) {
        (Some((b, h)), _) => (b, h, true),
        (None, Some((b, h))) => (b, h, false),
        (None, None) => {
            return Err(BindingError::Git(format!(
                "`{range}` is not a range: say BASE..HEAD (or BASE...HEAD for the change since \
                 their merge base, as `git diff` reads it)"
            )));
        }
    };
    let head = if head.is_empty() { "HEAD" } else { head };
    let base_c = commit(&r, base)?;
    let head_c = commit(&r, head)?;
    let from = match three {
        true => (r.merge_base(base_c.id(), head_c.id()))
            .map_err(|e| git(e, &format!("`{base}` and `{head}` have no merge base")))?,
        false => base_c.id(),
    };
    Ok(Range {
        base_name: base.to_string(),
        base: base_c.id().to_string(),
        from: from.to_string(),
        to: head_c.id().to_string(),
    })
}

/// Refuses the receipt unless its baseline is the range's base and `patch` (already checked to
/// be the receipt's) turns the range's start tree into its end tree.
pub fn check_range(
    p: &ConfirmResult,
    repo: &Path,
    range: &Range,
    patch: &[u8],
) -> Result<(), BindingError> {
    if p.evidence.baseline_sha != range.base {
        return Err(BindingError::Baseline {
            recorded: p.evidence.baseline_sha.clone(),
            base: range.base_name.clone(),
            actual: range.base.clone(),
        });
    }
    let r = git2::Repository::open(repo)
        .map_err(|e| git(e, &format!("cannot open the repository {}", repo.display())))?;
    // New objects (the patched blobs and trees) go to memory, never into the repository.
    let odb = r
        .odb()
        .map_err(|e| git(e, "cannot open the object store"))?;
    let _memory = (odb.add_new_mempack_backend(1000))
        .map_err(|e| git(e, "cannot add an in-memory object store"))?;
    let tree_of = |sha: &str| {
        (git2::Oid::from_str(sha).and_then(|id| r.find_commit(id)?.tree()))
            .map_err(|e| git(e, &format!("cannot read the tree of {sha}")))
    };
    let (from, to) = (tree_of(&range.from)?, tree_of(&range.to)?);
    let not_applied = |e: git2::Error| BindingError::Apply {
        from: range.from.clone(),
        reason: e.message().to_string(),
    };
    let diff = git2::Diff::from_buffer(patch).map_err(not_applied)?;
    let mut index = r.apply_to_tree(&from, &diff, None).map_err(not_applied)?;
    let made = index.write_tree_to(&r).map_err(not_applied)?;
    if made == to.id() {
        return Ok(());
    }
    Err(BindingError::Effect {
        from: range.from.clone(),
        to: range.to.clone(),
        made: made.to_string(),
        wanted: to.id().to_string(),
        paths: differing_paths(&r, made, &to),
    })
}

/// `; differs: a, b, …` for the first few paths where the tree `made` and `to` differ.
fn differing_paths(r: &git2::Repository, made: git2::Oid, to: &git2::Tree) -> String {
    let Ok(made) = r.find_tree(made) else {
        return String::new();
    };
    let Ok(diff) = r.diff_tree_to_tree(Some(&made), Some(to), None) else {
        return String::new();
    };
    let paths: Vec<String> = (diff.deltas())
        .filter_map(|d| {
            d.new_file()
                .path()
                .or(d.old_file().path())
                .map(|p| p.display().to_string())
        })
        .take(5)
        .collect();
    match paths.is_empty() {
        true => String::new(),
        false => format!("; differs: {}", paths.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_parse_as_a_verdict_or_a_tier_and_a_tier_means_at_least_it() {
        let r = |t: &str| t.parse::<Requirement>();
        assert_eq!(r("accepted"), Ok(Requirement::Verdict(Verdict::Accepted)));
        assert_eq!(
            r("verdict=rejected"),
            Ok(Requirement::Verdict(Verdict::Rejected))
        );
        assert_eq!(r(" tier = tested "), Ok(Requirement::Tier(Tier::Tested)));
        assert!(r("tier=gold").is_err());
        assert!(r("accept").is_err());
        assert!(tier_rank(Tier::Tested) > tier_rank(Tier::Measured));
    }
}
