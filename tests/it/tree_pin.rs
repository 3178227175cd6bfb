//! Pinning a baseline: every kind of commit-ish resolves to the right full SHA, and the two
//! user mistakes get the messages the design promises.

use crate::util::tree_common;

use evo::tree::{TreeError, pin};
use tempfile::TempDir;
use tree_common::{commit_all, git, repo_with, write};

#[test]
fn short_sha_branch_tag_and_ancestor_resolve_to_full_shas() {
    let repo = repo_with(&[("a.txt", "one\n")]);
    let dir = repo.path();
    let first = git(dir, &["rev-parse", "HEAD"]);
    git(dir, &["tag", "v1", "-m", "annotated"]);
    git(dir, &["branch", "old"]);
    write(dir, "a.txt", "two\n");
    let second = commit_all(dir, "second");
    assert_ne!(first, second);

    let cases = [
        (&first[..7], &first),
        (first.as_str(), &first),
        ("old", &first),
        ("v1", &first),
        ("HEAD~1", &first),
        ("main", &second),
        ("HEAD", &second),
    ];
    for (commitish, expected) in cases {
        let pinned = pin(dir, commitish).expect(commitish);
        assert_eq!(&pinned.sha, expected, "{commitish}");
        assert_eq!(pinned.sha.len(), 40);
        assert_eq!(pinned.commitish, commitish);
        assert_eq!(pinned.repo, dir.canonicalize().expect("canonical"));
    }
}

#[test]
fn a_commitish_that_does_not_resolve_is_named_with_the_repository() {
    let repo = repo_with(&[("a.txt", "one\n")]);
    let err = pin(repo.path(), "no-such-branch").expect_err("must fail");
    assert!(matches!(err, TreeError::BadBaseline { .. }), "{err:?}");
    let canonical = repo.path().canonicalize().expect("canonical");
    assert_eq!(
        err.to_string(),
        format!(
            "baseline `no-such-branch` does not resolve to a commit in {}",
            canonical.display()
        )
    );
}

#[test]
fn a_tree_object_is_not_a_commit() {
    let repo = repo_with(&[("a.txt", "one\n")]);
    let tree = git(repo.path(), &["rev-parse", "HEAD^{tree}"]);
    let err = pin(repo.path(), &tree).expect_err("a tree is not a commit");
    assert!(matches!(err, TreeError::BadBaseline { .. }), "{err:?}");
}

#[test]
fn a_directory_that_is_not_a_repository_is_named() {
    let dir = TempDir::new().expect("tempdir");
    let err = pin(dir.path(), "HEAD").expect_err("must fail");
    assert_eq!(
        err.to_string(),
        format!("{} is not a git repository", dir.path().display())
    );
}
