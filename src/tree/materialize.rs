//! Build a clean tree of the pinned commit in evo's own directory, as a fresh git repository.
//!
//! Objects are read from the user's repository and copied byte for byte: no checkout, no index,
//! no filters, so nothing is written there and the user's dirty, staged or untracked files cannot
//! leak in. The same raw tree and blob objects are written into the new repository, so its tree id
//! equals the pinned commit's tree id, and its single commit has a fixed identity and date: the
//! same baseline always gives the same tree commit.
//!
//! libgit2, not the `git` CLI: copying raw objects from one object database to another and
//! writing the files by hand is exactly what this module needs. The command line would go through
//! an index and `checkout-index` (or `git archive`), which apply `.gitattributes` (filters, line
//! endings, `export-ignore`) that must not touch a baseline.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use git2::{ConfigLevel, Odb, Oid, Repository, RepositoryInitOptions, Signature, Time};

use super::{Pinned, Tree, TreeError};

/// Author and committer name of every tree's baseline commit (never the user's config).
pub const COMMITTER_NAME: &str = "evo";
/// Author and committer email of every tree's baseline commit.
pub const COMMITTER_EMAIL: &str = "evo@localhost";
/// Branch the tree's repository starts on.
const BRANCH: &str = "evo";

/// The folder name of the tree labelled `label`: the label padded with dots to one length, so
/// every tree of a run lies at a path of the same length. A path's length moves the stack and the
/// environment in memory, which changes timings by itself; equal lengths keep that out of the
/// comparison of two arms.
pub fn dir_name(label: &str) -> String {
    format!("{label:.<24}")
}

/// Write a clean checkout of exactly `pinned` into `dest` (absent or empty) and make it a fresh
/// git repository with one commit, "evo baseline <sha>", holding exactly those files.
///
/// Executable bits and symlinks are kept as git stores them; submodules become empty directories,
/// as in a checkout without `--recurse-submodules`; files are written as stored, with no
/// `.gitattributes` filters (an LFS file stays a pointer).
pub fn materialize(pinned: &Pinned, dest: &Path) -> Result<Tree, TreeError> {
    prepare_dest(dest)?;
    let root = dest
        .canonicalize()
        .map_err(io_err("resolve the path of", dest))?;
    let source = Repository::open(&pinned.repo).map_err(|source| TreeError::NotARepository {
        path: pinned.repo.clone(),
        source,
    })?;
    let commit = Oid::from_str(&pinned.sha)
        .and_then(|id| source.find_commit(id))
        .map_err(git_err("find the pinned commit", &pinned.repo))?;
    let tree_id = commit.tree_id();

    let target = init_repo(&root)?;
    let copier = Copier {
        source: &source,
        src_odb: source
            .odb()
            .map_err(git_err("open the objects", &pinned.repo))?,
        dst_odb: target.odb().map_err(git_err("open the objects", &root))?,
        commit: &pinned.sha,
        src_path: &pinned.repo,
        dst_path: &root,
    };
    copier.copy_tree(tree_id, &root, "")?;
    drop(copier);
    let commit = commit_baseline(&target, &root, tree_id, &pinned.sha)?;
    Ok(Tree {
        root,
        base_sha: pinned.sha.clone(),
        commit: commit.to_string(),
    })
}

/// `dest` must not exist (it is created) or be an empty directory (not a symlink to one).
fn prepare_dest(dest: &Path) -> Result<(), TreeError> {
    match fs::symlink_metadata(dest) {
        Ok(meta) if meta.is_dir() => {
            let mut entries = fs::read_dir(dest).map_err(io_err("list", dest))?;
            if entries.next().is_some() {
                return Err(TreeError::DestinationNotEmpty { dest: dest.into() });
            }
            Ok(())
        }
        Ok(_) => Err(TreeError::DestinationNotEmpty { dest: dest.into() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dest).map_err(io_err("create", dest))
        }
        Err(e) => Err(io_err("inspect", dest)(e)),
    }
}

/// A new repository that owes nothing to the user's configuration or templates.
fn init_repo(root: &Path) -> Result<Repository, TreeError> {
    let mut opts = RepositoryInitOptions::new();
    opts.no_reinit(true)
        .mkdir(false)
        .external_template(false)
        .initial_head(BRANCH);
    let repo = Repository::init_opts(root, &opts).map_err(git_err("create a repository", root))?;
    let mut config = repo
        .config()
        .and_then(|config| config.open_level(ConfigLevel::Local))
        .map_err(git_err("open the config", root))?;
    let settings = [
        ("core.autocrlf", "false"),
        ("core.filemode", "true"),
        ("core.symlinks", "true"),
        ("core.hooksPath", "/dev/null"),
        ("gc.auto", "0"),
    ];
    for (key, value) in settings {
        config
            .set_str(key, value)
            .map_err(git_err("write the config", root))?;
    }
    Ok(repo)
}

/// Copies one commit's tree: objects into the new repository, files into its work tree.
struct Copier<'a> {
    source: &'a Repository,
    src_odb: Odb<'a>,
    dst_odb: Odb<'a>,
    commit: &'a str,
    src_path: &'a Path,
    dst_path: &'a Path,
}

impl Copier<'_> {
    fn copy_tree(&self, id: Oid, dir: &Path, rel: &str) -> Result<(), TreeError> {
        self.copy_object(id)?;
        let tree = self
            .source
            .find_tree(id)
            .map_err(git_err("read a tree object", self.src_path))?;
        for entry in tree.iter() {
            let name = entry.name_bytes();
            let rel = if rel.is_empty() {
                String::from_utf8_lossy(name).into_owned()
            } else {
                format!("{rel}/{}", String::from_utf8_lossy(name))
            };
            self.check_name(name, &rel)?;
            let path = dir.join(OsStr::from_bytes(name));
            self.copy_entry(entry.id(), entry.filemode(), &path, &rel)?;
        }
        Ok(())
    }

    fn copy_entry(&self, id: Oid, mode: i32, path: &Path, rel: &str) -> Result<(), TreeError> {
        match mode {
            0o040000 => {
                fs::create_dir(path).map_err(io_err("create", path))?;
                self.copy_tree(id, path, rel)
            }
            0o100644 | 0o100664 => self.write_file(id, path, 0o644),
            0o100755 => self.write_file(id, path, 0o755),
            0o120000 => {
                let target = self.copy_object(id)?;
                std::os::unix::fs::symlink(OsStr::from_bytes(&target), path)
                    .map_err(io_err("create the symlink", path))
            }
            0o160000 => fs::create_dir(path).map_err(io_err("create", path)),
            _ => Err(self.unsafe_entry(rel, "unknown file mode")),
        }
    }

    /// Copy one object into the new repository unchanged; returns its content.
    fn copy_object(&self, id: Oid) -> Result<Vec<u8>, TreeError> {
        let object = self
            .src_odb
            .read(id)
            .map_err(git_err("read an object", self.src_path))?;
        let data = object.data().to_vec();
        if !self.dst_odb.exists(id) {
            self.dst_odb
                .write(object.kind(), &data)
                .map_err(git_err("write an object", self.dst_path))?;
        }
        Ok(data)
    }

    fn write_file(&self, id: Oid, path: &Path, mode: u32) -> Result<(), TreeError> {
        let data = self.copy_object(id)?;
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
            .map_err(io_err("create", path))?;
        file.write_all(&data).map_err(io_err("write", path))?;
        // The umask may have removed bits git records; set them exactly.
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .map_err(io_err("set the mode of", path))
    }

    /// Names git itself would never check out: they could write outside the tree or into `.git`.
    fn check_name(&self, name: &[u8], rel: &str) -> Result<(), TreeError> {
        if name.is_empty() || name == b"." || name == b".." {
            return Err(self.unsafe_entry(rel, "empty, `.` or `..` name"));
        }
        if name.contains(&b'/') || name.contains(&0) {
            return Err(self.unsafe_entry(rel, "`/` or NUL in a name"));
        }
        if name.eq_ignore_ascii_case(b".git") {
            return Err(self.unsafe_entry(rel, "a `.git` entry"));
        }
        Ok(())
    }

    fn unsafe_entry(&self, rel: &str, reason: &'static str) -> TreeError {
        TreeError::UnsafeEntry {
            commit: self.commit.to_string(),
            path: rel.to_string(),
            reason,
        }
    }
}

/// The tree's only commit, with a fixed identity and date, and an index matching it.
fn commit_baseline(repo: &Repository, root: &Path, tree: Oid, sha: &str) -> Result<Oid, TreeError> {
    let tree = repo
        .find_tree(tree)
        .map_err(git_err("find the copied tree", root))?;
    let who = Signature::new(COMMITTER_NAME, COMMITTER_EMAIL, &Time::new(0, 0))
        .map_err(git_err("build the signature", root))?;
    let message = format!("evo baseline {sha}\n");
    let id = repo
        .commit(Some("HEAD"), &who, &who, &message, &tree, &[])
        .map_err(git_err("commit the baseline", root))?;
    let mut index = repo.index().map_err(git_err("open the index", root))?;
    index
        .read_tree(&tree)
        .map_err(git_err("fill the index", root))?;
    index.write().map_err(git_err("write the index", root))?;
    Ok(id)
}

fn git_err(action: &'static str, repo: &Path) -> impl FnOnce(git2::Error) -> TreeError {
    let repo: PathBuf = repo.to_path_buf();
    move |source| TreeError::Git {
        action,
        repo,
        source,
    }
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> TreeError {
    let path = path.to_path_buf();
    move |source| TreeError::Io {
        action,
        path,
        source,
    }
}
