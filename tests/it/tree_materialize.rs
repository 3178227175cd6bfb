//! Materializing a tree: exactly the pinned commit's files (not a later commit's, not the user's
//! dirty, staged, stashed or untracked work), modes and symlinks kept, a fresh one-commit
//! repository with no link to the user's — and the user's repository byte-identical afterwards.

use crate::util::tree_common;

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use evo::tree::{TreeError, materialize, pin};
use tempfile::TempDir;
use tree_common::{Entry, commit_all, git, read, repo_with, set_mode, snapshot, symlink, write};

/// A repository whose pinned first commit is followed by a later commit, a stash, a staged
/// change, a dirty file and an untracked file.
fn busy_repo() -> (TempDir, String, String) {
    let repo = repo_with(&[("a.txt", "base\n"), ("sub/dir/b.txt", "bee\n")]);
    let dir = repo.path();
    write(dir, "run.sh", "#!/bin/sh\necho hi\n");
    set_mode(dir, "run.sh", 0o755);
    symlink(dir, "link", "a.txt");
    let pinned = commit_all(dir, "pinned");
    write(dir, "a.txt", "later\n");
    write(dir, "later.txt", "only later\n");
    let later = commit_all(dir, "later");
    write(dir, "sub/dir/b.txt", "stashed\n");
    git(dir, &["stash", "push", "-q", "-m", "wip"]);
    write(dir, "staged.txt", "staged\n");
    git(dir, &["add", "staged.txt"]);
    write(dir, "a.txt", "dirty\n");
    write(dir, "untracked.txt", "untracked\n");
    (repo, pinned, later)
}

#[test]
fn the_tree_holds_exactly_the_pinned_commit_and_the_user_repo_is_untouched() {
    let (repo, pinned_sha, _later) = busy_repo();
    let before = snapshot(repo.path(), true);
    let pinned = pin(repo.path(), &pinned_sha[..10]).expect("pin");
    let work = TempDir::new().expect("tempdir");
    let tree = materialize(&pinned, &work.path().join("t")).expect("materialize");
    let after = snapshot(repo.path(), true);
    assert_eq!(before, after, "the user's repository changed");
    assert!(
        before.keys().any(
            |p| p.starts_with(".git/refs/stash") || p == &PathBuf::from(".git/logs/refs/stash")
        )
    );

    let files = snapshot(&tree.root, false);
    let paths: Vec<String> = files.keys().map(|p| p.display().to_string()).collect();
    assert_eq!(
        paths,
        ["a.txt", "link", "run.sh", "sub", "sub/dir", "sub/dir/b.txt"]
    );
    assert_eq!(read(&tree.root, "a.txt"), "base\n");
    assert_eq!(read(&tree.root, "sub/dir/b.txt"), "bee\n");
    assert_eq!(files[&PathBuf::from("link")], Entry::Link("a.txt".into()));
    assert!(matches!(
        files[&PathBuf::from("run.sh")],
        Entry::File { mode: 0o755, .. }
    ));
    assert!(matches!(
        files[&PathBuf::from("a.txt")],
        Entry::File { mode: 0o644, .. }
    ));
    assert_eq!(tree.base_sha, pinned_sha);
}

#[test]
fn the_tree_is_a_fresh_one_commit_repository_without_the_users_history() {
    let (repo, pinned_sha, later) = busy_repo();
    let pinned = pin(repo.path(), "HEAD~1").expect("pin");
    assert_eq!(pinned.sha, pinned_sha);
    let work = TempDir::new().expect("tempdir");
    let tree = materialize(&pinned, &work.path().join("t")).expect("materialize");
    let root = &tree.root;

    let user_tree = git(
        repo.path(),
        &["rev-parse", &format!("{pinned_sha}^{{tree}}")],
    );
    assert_eq!(git(root, &["rev-parse", "HEAD^{tree}"]), user_tree);
    assert_eq!(git(root, &["rev-parse", "HEAD"]), tree.commit);
    assert_eq!(git(root, &["rev-list", "--count", "HEAD"]), "1");
    assert_eq!(
        git(root, &["log", "-1", "--format=%s|%an <%ae>|%cn <%ce>"]),
        format!("evo baseline {pinned_sha}|evo <evo@localhost>|evo <evo@localhost>")
    );
    assert_eq!(
        git(root, &["status", "--porcelain"]),
        "",
        "index and files agree"
    );
    assert_eq!(git(root, &["remote"]), "");
    assert!(!root.join(".git/objects/info/alternates").exists());
    for foreign in [&pinned_sha, &later] {
        let found = Command::new("git")
            .args(["cat-file", "-e", foreign])
            .current_dir(root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .expect("git runs");
        assert!(
            !found.success(),
            "user commit {foreign} leaked into the tree"
        );
    }
}

#[test]
fn the_same_baseline_always_gives_the_same_tree_commit() {
    let (repo, pinned_sha, _) = busy_repo();
    let pinned = pin(repo.path(), &pinned_sha).expect("pin");
    let work = TempDir::new().expect("tempdir");
    let one = materialize(&pinned, &work.path().join("one")).expect("one");
    let two = materialize(&pinned, &work.path().join("two")).expect("two");
    assert_eq!(one.commit, two.commit);
    assert_ne!(one.root, two.root);
}

#[test]
fn an_empty_destination_is_used_and_a_non_empty_one_refused() {
    let repo = repo_with(&[("a.txt", "a\n")]);
    let pinned = pin(repo.path(), "main").expect("pin");
    let empty = TempDir::new().expect("tempdir");
    let tree = materialize(&pinned, empty.path()).expect("empty dir is fine");
    assert_eq!(read(&tree.root, "a.txt"), "a\n");

    let full = TempDir::new().expect("tempdir");
    fs::write(full.path().join("x"), "x").expect("write");
    let err = materialize(&pinned, full.path()).expect_err("non-empty");
    assert!(
        matches!(err, TreeError::DestinationNotEmpty { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(&full.path().display().to_string()));
    assert_eq!(fs::read_dir(full.path()).expect("ls").count(), 1);
}
