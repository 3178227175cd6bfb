//! Copy harness files that live outside the repository into a tree, recording their digests so
//! the receipt can say exactly which harness was used.
//!
//! Where a file goes: if its path, taken lexically from `base_dir` (symlinks not followed), stays
//! inside `base_dir`, it keeps that relative path in the tree (`bench/main.c` → `bench/main.c`);
//! otherwise (`../harness/main.c`, or an absolute path elsewhere) it goes to the tree root under
//! its file name (`main.c`). An overlay never replaces a file the tree already has unless the
//! content is identical (then nothing is written), never writes through a symlink or into
//! `.git`, and two overlay files may not land on the same path. Copied files are listed in the
//! tree's `.git/info/exclude`, so they never show up in a candidate's `git add -A` diff.

use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{OverlayRefusal, Tree, TreeError};

/// One harness file copied into a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayFile {
    /// The file as given, resolved against `base_dir`.
    pub source: PathBuf,
    /// Where it is in the tree, relative to the root.
    pub dest_rel: PathBuf,
    /// Hex sha256 of its content.
    pub sha256: String,
}

/// Hex sha256 of a file's content, read in a stream.
pub fn digest_file(path: &Path) -> Result<String, io::Error> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

/// The sha256 of a file a build left in the tree at `root`: only a regular file inside the tree.
/// The build is untrusted: an "artifact" that is a link to a secret outside the tree, a FIFO
/// that would block evo for ever, or `/dev/zero` is refused, never read.
pub fn digest_tree_file(root: &Path, path: &Path) -> Result<String, io::Error> {
    digest_file(&tree_file(root, path)?)
}

/// `path` resolved, when it is a regular file inside the tree at `root` (see
/// [`digest_tree_file`] for why nothing else may be read).
pub fn tree_file(root: &Path, path: &Path) -> Result<std::path::PathBuf, io::Error> {
    let resolved = path.canonicalize()?;
    if !resolved.starts_with(root.canonicalize()?) {
        return Err(io::Error::other(format!(
            "it leads outside the tree (to {})",
            resolved.display()
        )));
    }
    if !fs::metadata(&resolved)?.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    Ok(resolved)
}

/// Copy `files` (relative ones are relative to `base_dir`) into `tree`; see the module comment
/// for where each one goes.
pub fn copy_overlay(
    files: &[PathBuf],
    tree: &Tree,
    base_dir: &Path,
) -> Result<Vec<OverlayFile>, TreeError> {
    let base = absolute(base_dir)?;
    let mut copied: Vec<OverlayFile> = Vec::with_capacity(files.len());
    for file in files {
        let source = normalize(&base.join(file));
        let dest_rel = destination(&source, &base);
        let refuse = |reason: OverlayRefusal| TreeError::Overlay {
            source_path: source.clone(),
            reason,
        };
        if let Some(other) = copied.iter().find(|c| c.dest_rel == dest_rel) {
            return Err(refuse(OverlayRefusal::SameDestination {
                dest: dest_rel,
                other: other.source.clone(),
            }));
        }
        check_destination(tree, &dest_rel).map_err(refuse)?;
        let sha256 = copy_one(&source, &tree.root.join(&dest_rel), &dest_rel).map_err(refuse)?;
        copied.push(OverlayFile {
            source,
            dest_rel,
            sha256,
        });
    }
    exclude(tree, &copied)?;
    Ok(copied)
}

fn absolute(path: &Path) -> Result<PathBuf, TreeError> {
    std::path::absolute(path)
        .map(|path| normalize(&path))
        .map_err(|source| TreeError::Io {
            action: "resolve the path of",
            path: path.to_path_buf(),
            source,
        })
}

/// Drop `.` and fold `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn destination(source: &Path, base: &Path) -> PathBuf {
    match source.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => source.file_name().map(PathBuf::from).unwrap_or_default(),
    }
}

/// No `.git`, no symlink on the way, nothing different already there.
fn check_destination(tree: &Tree, dest_rel: &Path) -> Result<(), OverlayRefusal> {
    if dest_rel.as_os_str().is_empty() {
        return Err(OverlayRefusal::NoFileName);
    }
    let mut prefix = tree.root.clone();
    for component in dest_rel.components() {
        let name = component.as_os_str();
        if name.eq_ignore_ascii_case(".git") {
            return Err(OverlayRefusal::IntoGit {
                dest: dest_rel.to_path_buf(),
            });
        }
        prefix.push(name);
        let is_link = fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink());
        if is_link {
            let link = prefix.strip_prefix(&tree.root).unwrap_or(&prefix);
            return Err(OverlayRefusal::ThroughSymlink {
                link: link.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// Copy unless an identical file is already there; returns the digest of what is in the tree.
fn copy_one(source: &Path, dest: &Path, dest_rel: &Path) -> Result<String, OverlayRefusal> {
    let meta = fs::metadata(source).map_err(OverlayRefusal::Unreadable)?;
    if !meta.is_file() {
        return Err(OverlayRefusal::NotAFile);
    }
    let digest = digest_file(source).map_err(OverlayRefusal::Unreadable)?;
    if fs::symlink_metadata(dest).is_ok() {
        return match digest_file(dest) {
            Ok(existing) if existing == digest => Ok(digest),
            _ => Err(OverlayRefusal::WouldReplace {
                dest: dest_rel.to_path_buf(),
            }),
        };
    }
    if let Some(parent) = dest.parent() {
        fs::create_dir_all(parent).map_err(|source| OverlayRefusal::CreateFolder {
            folder: parent.to_path_buf(),
            source,
        })?;
    }
    fs::copy(source, dest).map_err(|source| OverlayRefusal::Copy {
        dest: dest.to_path_buf(),
        source,
    })?;
    match digest_file(dest) {
        Ok(copied) if copied == digest => Ok(digest),
        _ => Err(OverlayRefusal::Changed),
    }
}

/// Keep overlay files out of candidates' diffs.
fn exclude(tree: &Tree, copied: &[OverlayFile]) -> Result<(), TreeError> {
    let path = tree.root.join(".git").join("info").join("exclude");
    let io_err = |source| TreeError::Io {
        action: "write",
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io_err)?;
    }
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io_err)?;
    for overlay in copied {
        writeln!(file, "/{}", escape_ignore(&overlay.dest_rel)).map_err(io_err)?;
    }
    Ok(())
}

/// A literal path as a gitignore line.
fn escape_ignore(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        if matches!(c, '*' | '?' | '[' | '\\' | '!' | '#' | ' ') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
