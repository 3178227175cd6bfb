//! Helpers shared by the `tree_*` tests: small repositories built with the real `git`, isolated
//! from the developer's git config, and snapshots of directories to compare.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use evo::tree::{Pinned, Tree, materialize, pin};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

/// Run `git` in `dir` with a fixed identity and no user/system config; panics on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@e")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Write `content` at `rel` under `dir`, creating directories.
pub fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    fs::write(path, content).expect("write");
}

pub fn set_mode(dir: &Path, rel: &str, mode: u32) {
    fs::set_permissions(dir.join(rel), fs::Permissions::from_mode(mode)).expect("chmod");
}

pub fn symlink(dir: &Path, rel: &str, target: &str) {
    std::os::unix::fs::symlink(target, dir.join(rel)).expect("symlink");
}

/// A new repository on branch `main` with `files` committed as its first commit.
pub fn repo_with(files: &[(&str, &str)]) -> TempDir {
    let dir = TempDir::new().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    for (rel, content) in files {
        write(dir.path(), rel, content);
    }
    commit_all(dir.path(), "first");
    dir
}

pub fn commit_all(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A repository with `files` committed, pinned at HEAD, and a tree of it (the repository and the
/// folder holding the tree live as long as the fixture).
pub struct Fixture {
    _repo: TempDir,
    _pinned: Pinned,
    _work: TempDir,
    pub tree: Tree,
}

pub fn fixture(files: &[(&str, &str)]) -> Fixture {
    let repo = repo_with(files);
    fixture_from(repo)
}

pub fn fixture_from(repo: TempDir) -> Fixture {
    let pinned = pin(repo.path(), "HEAD").expect("pin");
    let work = TempDir::new().expect("tempdir");
    let tree = materialize(&pinned, &work.path().join("tree")).expect("materialize");
    Fixture {
        _repo: repo,
        _pinned: pinned,
        _work: work,
        tree,
    }
}

/// The patch `git diff --binary -M` gives for `edit` applied to a repository holding `files`.
pub fn patch_of(files: &[(&str, &str)], edit: impl FnOnce(&Path)) -> Vec<u8> {
    edited(files, edit).1
}

/// A repository holding `files` after `edit`, and the patch of that edit.
pub fn edited(files: &[(&str, &str)], edit: impl FnOnce(&Path)) -> (TempDir, Vec<u8>) {
    let repo = repo_with(files);
    edit(repo.path());
    git(repo.path(), &["add", "-A"]);
    let output = Command::new("git")
        .args(["diff", "--cached", "--binary", "-M"])
        .current_dir(repo.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git diff runs");
    assert!(output.status.success());
    (repo, output.stdout)
}

/// What a directory entry is, for comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    File { mode: u32, sha256: String },
    Link(PathBuf),
    Dir { mode: u32 },
}

/// Every entry under `root` (including `.git` when `with_git`), by relative path.
pub fn snapshot(root: &Path, with_git: bool) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    walk(root, root, with_git, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, with_git: bool, out: &mut BTreeMap<PathBuf, Entry>) {
    for entry in fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        let rel = path.strip_prefix(root).expect("under root").to_path_buf();
        if !with_git && rel == Path::new(".git") {
            continue;
        }
        let meta = fs::symlink_metadata(&path).expect("lstat");
        let mode = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            out.insert(rel, Entry::Link(fs::read_link(&path).expect("readlink")));
        } else if meta.is_dir() {
            out.insert(rel, Entry::Dir { mode });
            walk(root, &path, with_git, out);
        } else {
            let sha256 = hex::encode(Sha256::digest(fs::read(&path).expect("read")));
            out.insert(rel, Entry::File { mode, sha256 });
        }
    }
}

/// Content of a file in the tree, as text.
pub fn read(root: &Path, rel: &str) -> String {
    fs::read_to_string(root.join(rel)).expect("read")
}

pub fn is_executable(root: &Path, rel: &str) -> bool {
    fs::metadata(root.join(rel))
        .expect("stat")
        .permissions()
        .mode()
        & 0o111
        != 0
}
