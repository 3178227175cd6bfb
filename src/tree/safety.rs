//! Refuse a candidate patch that could write outside its tree, into git metadata, into protected
//! files, or through a symlink — before it is applied, naming the path and the reason.
//!
//! Protected patterns are globs matched against the whole path from the tree root: `*` stays
//! within one directory, `**` crosses directories (`tests/**` is the top-level `tests` folder,
//! `**/tests/**` any of them). Both the old and the new path of every file are checked.
//!
//! A name with a control character (a carriage return, a line feed, an escape sequence) or a
//! bidi override is refused first: logs, receipts and the PR text quote file names, and such a
//! name can rewrite what a reader sees there. Messages show the name with those characters
//! escaped (`\r`, `\u{1b}`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use globset::GlobSet;

use super::{ChangeKind, FileChange, FileMode, PatchError, PatchSummary, Refusal, Tree};
use crate::spec::values::{escape_controls, is_control_or_bidi};

/// Check every path of `summary` against `tree` (as it is before the patch) and `protected`.
pub fn check_patch_safety(
    summary: &PatchSummary,
    tree: &Tree,
    protected: &[String],
) -> Result<(), PatchError> {
    let protected = Protected::new(protected)?;
    let new_links: Vec<&str> = summary
        .files
        .iter()
        .filter(|file| creates_symlink(file))
        .filter_map(|file| file.new_path.as_deref())
        .collect();
    for path in &summary.header_paths {
        let refuse = |reason| PatchError::Refused {
            path: shown_path(path),
            reason,
        };
        check_characters(path).map_err(refuse)?;
        check_components(path).map_err(refuse)?;
    }
    for file in &summary.files {
        for path in file.paths() {
            let refuse = |reason| PatchError::Refused {
                path: shown_path(path),
                reason,
            };
            check_characters(path).map_err(refuse)?;
            check_components(path).map_err(refuse)?;
            protected.check(path).map_err(refuse)?;
            check_tree_prefixes(tree, path)?.map_or(Ok(()), |r| Err(refuse(r)))?;
            check_new_links(&new_links, path).map_err(refuse)?;
        }
        check_in_place_edit(tree, file)?;
        if creates_symlink(file) {
            check_symlink_target(tree, file)?;
        }
    }
    Ok(())
}

fn creates_symlink(file: &FileChange) -> bool {
    file.new_mode == FileMode::Symlink && file.kind != ChangeKind::Deleted
}

/// Control characters (C0, DEL, C1) and bidi controls, then the replacement character that
/// stands for bytes that were not UTF-8 (the header lines are read lossily).
fn check_characters(path: &str) -> Result<(), Refusal> {
    if let Some(c) = path.chars().find(|&c| is_control_or_bidi(c)) {
        return Err(Refusal::ControlCharacter {
            shown: c.escape_default().to_string(),
        });
    }
    if path.contains(char::REPLACEMENT_CHARACTER) {
        return Err(Refusal::NotUtf8);
    }
    Ok(())
}

/// `path` for a message: control and bidi characters escaped as in Rust (`\r`, `\u{202e}`).
pub(crate) fn shown_path(path: &str) -> String {
    escape_controls(path)
}

/// Bytes of a path that may not be UTF-8, for a message: invalid bytes as `\xff`, control and
/// bidi characters escaped.
pub(crate) fn shown_path_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(&shown_path(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Absolute paths, `..` and `.git` components.
fn check_components(path: &str) -> Result<(), Refusal> {
    if path.starts_with('/') {
        return Err(Refusal::Absolute);
    }
    for part in path.split('/') {
        if part == ".." {
            return Err(Refusal::ParentDir);
        }
        if part.eq_ignore_ascii_case(".git") {
            return Err(Refusal::GitDir);
        }
    }
    Ok(())
}

/// The compiled `protected` globs, kept with their text for the message.
struct Protected<'a> {
    patterns: &'a [String],
    set: GlobSet,
}

impl<'a> Protected<'a> {
    fn new(patterns: &'a [String]) -> Result<Self, PatchError> {
        let set = super::globs::glob_set(patterns)?;
        Ok(Protected { patterns, set })
    }

    fn check(&self, path: &str) -> Result<(), Refusal> {
        match self.set.matches(path).first() {
            Some(&index) => Err(Refusal::Protected {
                pattern: self.patterns.get(index).cloned().unwrap_or_default(),
            }),
            None => Ok(()),
        }
    }
}

/// Proper prefixes of a relative path: `a/b/c` gives `a`, `a/b`.
fn prefixes(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(at, _)| &path[..at])
}

/// A directory on the way to `path` that is a symlink in the tree would be written through.
fn check_tree_prefixes(tree: &Tree, path: &str) -> Result<Option<Refusal>, PatchError> {
    for prefix in prefixes(path) {
        match lstat(&tree.root.join(prefix))? {
            Some(meta) if meta.file_type().is_symlink() => {
                return Ok(Some(Refusal::ThroughTreeSymlink {
                    link: prefix.to_string(),
                }));
            }
            Some(_) => {}
            None => break,
        }
    }
    Ok(None)
}

/// A file under a symlink this same patch creates would be written through it.
fn check_new_links(new_links: &[&str], path: &str) -> Result<(), Refusal> {
    match prefixes(path).find(|prefix| new_links.contains(prefix)) {
        Some(link) => Err(Refusal::ThroughNewSymlink {
            link: link.to_string(),
        }),
        None => Ok(()),
    }
}

/// Editing a tree symlink's content as if it were a regular file would write through it.
fn check_in_place_edit(tree: &Tree, file: &FileChange) -> Result<(), PatchError> {
    let in_place = matches!(file.kind, ChangeKind::Modified | ChangeKind::ModeChange);
    let Some(path) = file.old_path.as_deref().filter(|_| in_place) else {
        return Ok(());
    };
    let is_link = lstat(&tree.root.join(path))?.is_some_and(|m| m.file_type().is_symlink());
    if is_link && file.new_mode != FileMode::Symlink {
        return Err(PatchError::Refused {
            path: path.to_string(),
            reason: Refusal::ThroughTreeSymlink {
                link: path.to_string(),
            },
        });
    }
    Ok(())
}

/// A symlink the patch creates must point inside the tree, and not into `.git`.
fn check_symlink_target(tree: &Tree, file: &FileChange) -> Result<(), PatchError> {
    let path = file.display_path();
    let refuse = |reason| PatchError::Refused {
        path: path.to_string(),
        reason,
    };
    let target = match &file.symlink_target {
        Some(target) => target.clone(),
        None => {
            existing_target(tree, file)?.ok_or_else(|| refuse(Refusal::UnknownSymlinkTarget))?
        }
    };
    if target.starts_with('/') {
        return Err(refuse(Refusal::AbsoluteSymlink { target }));
    }
    let escaping = || {
        refuse(Refusal::EscapingSymlink {
            target: target.clone(),
        })
    };
    let mut resolved: Vec<&str> = match prefixes(path).last() {
        Some(dir) => dir.split('/').collect(),
        None => Vec::new(),
    };
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                // `..` after a symlink goes up from wherever the link points: refuse rather
                // than guess.
                if is_tree_symlink(tree, &resolved)? || resolved.pop().is_none() {
                    return Err(escaping());
                }
            }
            git if git.eq_ignore_ascii_case(".git") => {
                return Err(refuse(Refusal::SymlinkIntoGitDir {
                    target: target.clone(),
                }));
            }
            part => resolved.push(part),
        }
    }
    if !stays_inside(tree, &resolved)? {
        return Err(escaping());
    }
    Ok(())
}

fn is_tree_symlink(tree: &Tree, parts: &[&str]) -> Result<bool, PatchError> {
    if parts.is_empty() {
        return Ok(false);
    }
    let meta = lstat(&tree.root.join(parts.join("/")))?;
    Ok(meta.is_some_and(|meta| meta.file_type().is_symlink()))
}

/// When the patch shows no target (a rename, or a mode change to 120000), the target is the
/// content the old path has in the tree.
fn existing_target(tree: &Tree, file: &FileChange) -> Result<Option<String>, PatchError> {
    let Some(old) = file.old_path.as_deref() else {
        return Ok(None);
    };
    let full = tree.root.join(old);
    let target = match lstat(&full)? {
        Some(meta) if meta.file_type().is_symlink() => fs::read_link(&full)
            .map_err(io_err("read the symlink", &full))?
            .to_string_lossy()
            .into_owned(),
        Some(meta) if meta.is_file() => {
            let bytes = fs::read(&full).map_err(io_err("read", &full))?;
            String::from_utf8_lossy(&bytes)
                .trim_end_matches('\n')
                .to_string()
        }
        _ => return Ok(None),
    };
    Ok(Some(target))
}

/// Lexically inside the tree is not enough when the way there goes through a symlink the tree
/// already has: resolve the longest existing part and check it is still under the root.
fn stays_inside(tree: &Tree, resolved: &[&str]) -> Result<bool, PatchError> {
    for len in (1..=resolved.len()).rev() {
        let candidate: PathBuf = tree.root.join(resolved[..len].join("/"));
        if lstat(&candidate)?.is_none() {
            continue;
        }
        return Ok(match candidate.canonicalize() {
            Ok(real) => real.starts_with(&tree.root) && !real.starts_with(tree.root.join(".git")),
            Err(_) => false,
        });
    }
    Ok(true)
}

fn lstat(path: &Path) -> Result<Option<fs::Metadata>, PatchError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        // A prefix that is a regular file: nothing can be under it.
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Ok(None),
        Err(source) => Err(io_err("inspect", path)(source)),
    }
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PatchError {
    let path = path.to_path_buf();
    move |source| PatchError::Io {
        action,
        path,
        source,
    }
}
