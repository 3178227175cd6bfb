//! The protected files of a tree as they were before anything ran in it, and the check that they
//! still are.
//!
//! Patch safety keeps protected paths out of the patch, but a build, a test or a timed run runs
//! code the candidate wrote, and that code can edit a protected bench file itself (a recipe in a
//! build file the build tool reads first, a `build.rs`, a test script, a rename over the file).
//! So every tree's protected files are recorded right after the tree is made and overlaid — each
//! path that matches a `protected` glob with its kind, permissions and sha256, and the set of such
//! paths, so a file added or deleted counts — and compared after every build and around the
//! timed runs. The sandbox keeps them read-only as well (`measure::readonly`); this check holds
//! without it.
//!
//! Every tree of a run starts with the same protected files (the pinned commit and the overlay,
//! and no patch may touch a protected path), so one record, taken from the first tree, is the
//! reference for all of them.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use globset::GlobSet;

use super::PatchError;
use super::globs::glob_set;
use crate::measure::readonly::ReadOnlyPaths;

/// Why the protected files could not be recorded or checked.
#[derive(Debug, thiserror::Error)]
pub enum ProtectedError {
    #[error(transparent)]
    Glob(#[from] PatchError),
    #[error("cannot read the protected path {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What a protected path is, as far as the check cares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A regular file: its permission bits and the sha256 of its content.
    File { mode: u32, sha256: String },
    /// A symbolic link (never followed): where it points.
    Link { target: PathBuf },
    /// A folder (never recorded: only what is in it counts).
    Folder,
    /// Anything else (a FIFO, a device): only that it is there.
    Other,
}

/// The protected files of one tree, keyed by their path from the tree root.
#[derive(Debug, Clone)]
pub struct Protected {
    globs: GlobSet,
    /// Where the walk starts: the literal folder part of each glob with a pattern in it.
    roots: Vec<PathBuf>,
    /// The globs without a pattern: each names one path.
    exact: Vec<PathBuf>,
    /// The globs of the form `folder/**` (every path below `folder` is protected) whose folder
    /// was a folder when recorded.
    folders: Vec<PathBuf>,
    /// Every protected path that is not a folder, and any link on the way to one.
    entries: BTreeMap<PathBuf, Entry>,
}

/// How a tree's protected files differ from the reference: the first path that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtectedChange {
    Changed(PathBuf),
    Added(PathBuf),
    Deleted(PathBuf),
}

impl ProtectedChange {
    /// "the build changed protected file workloads/ckernels/bench/main.c", with `who` first.
    pub fn describe(&self, who: &str) -> String {
        let (what, path) = match self {
            ProtectedChange::Changed(p) => ("changed", p),
            ProtectedChange::Added(p) => ("added", p),
            ProtectedChange::Deleted(p) => ("deleted", p),
        };
        format!("{who} {what} protected file {}", path.display())
    }
}

/// Records the protected files of the tree at `root` (its `.git` is never looked at).
pub fn record_protected(root: &Path, globs: &[String]) -> Result<Protected, ProtectedError> {
    let set = glob_set(globs)?;
    let folders = (globs.iter().filter_map(|g| whole_folder(g)))
        .filter(|f| fs::symlink_metadata(root.join(f)).is_ok_and(|m| m.is_dir()))
        .collect();
    let mut protected = Protected {
        globs: set,
        roots: walk_roots(globs),
        exact: (globs.iter().filter(|g| !is_pattern(g)))
            .map(|g| g.split('/').filter(|p| !p.is_empty()).collect())
            .collect(),
        folders,
        entries: BTreeMap::new(),
    };
    protected.entries = protected.scan(root)?;
    Ok(protected)
}

impl Protected {
    /// The first difference between the tree at `root` and this record, if any.
    pub fn changed_in(&self, root: &Path) -> Result<Option<ProtectedChange>, ProtectedError> {
        let now = self.scan(root)?;
        for (path, entry) in &self.entries {
            match now.get(path) {
                None => return Ok(Some(ProtectedChange::Deleted(path.clone()))),
                Some(e) if e != entry => return Ok(Some(ProtectedChange::Changed(path.clone()))),
                Some(_) => {}
            }
        }
        let added = now.keys().find(|p| !self.entries.contains_key(*p));
        Ok(added.map(|p| ProtectedChange::Added(p.clone())))
    }

    /// How many protected files there are (for the record).
    pub fn files(&self) -> usize {
        self.entries.len()
    }

    /// What the sandbox keeps read-only in a writable tree: every wholly protected folder, and
    /// every protected regular file outside them (links are not bound: a bind follows them; the
    /// check sees a changed link).
    pub fn read_only(&self) -> ReadOnlyPaths {
        let folders = self.folders.clone();
        let files = (self.entries.iter())
            .filter(|(p, e)| matches!(e, Entry::File { .. }) && self.globs.is_match(p))
            .filter(|(p, _)| !folders.iter().any(|f| p.starts_with(f)))
            .map(|(p, _)| p.clone())
            .collect();
        ReadOnlyPaths { folders, files }
    }

    /// The protected paths of the tree at `root` now, and the folders on the way to them.
    fn scan(&self, root: &Path) -> Result<BTreeMap<PathBuf, Entry>, ProtectedError> {
        let mut out = BTreeMap::new();
        for start in &self.roots {
            if !self.walk_to(root, start, &mut out)? {
                continue;
            }
            self.walk(root, start, &mut out)?;
        }
        for path in &self.exact {
            let parent = path.parent().unwrap_or(Path::new(""));
            if !self.walk_to(root, parent, &mut out)? {
                continue;
            }
            match entry_of(root, path)? {
                Some(Entry::Folder) | None => {}
                Some(entry) => {
                    out.insert(path.clone(), entry);
                }
            }
        }
        Ok(out)
    }

    /// Whether the folders from the root down to `start` are all there; a link on the way is
    /// recorded, and not followed.
    fn walk_to(
        &self,
        root: &Path,
        start: &Path,
        out: &mut BTreeMap<PathBuf, Entry>,
    ) -> Result<bool, ProtectedError> {
        let mut rel = PathBuf::new();
        for part in start.components() {
            rel.push(part);
            let Some(entry) = entry_of(root, &rel)? else {
                return Ok(false);
            };
            if entry != Entry::Folder {
                out.insert(rel.clone(), entry);
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Every path below the folder `rel` that matches, and the folders between.
    fn walk(
        &self,
        root: &Path,
        rel: &Path,
        out: &mut BTreeMap<PathBuf, Entry>,
    ) -> Result<(), ProtectedError> {
        let dir = root.join(rel);
        let listing = fs::read_dir(&dir).map_err(|e| io_error(&dir, e))?;
        for item in listing {
            let item = item.map_err(|e| io_error(&dir, e))?;
            let path = rel.join(item.file_name());
            if rel.as_os_str().is_empty() && path == Path::new(".git") {
                continue;
            }
            let Some(entry) = entry_of(root, &path)? else {
                continue;
            };
            if entry == Entry::Folder {
                self.walk(root, &path, out)?;
            } else if self.globs.is_match(&path) {
                out.insert(path, entry);
            }
        }
        Ok(())
    }
}

/// What is at `rel` in the tree at `root`, without following a link; `None` when nothing is.
fn entry_of(root: &Path, rel: &Path) -> Result<Option<Entry>, ProtectedError> {
    let path = root.join(rel);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(&path, e)),
    };
    let kind = meta.file_type();
    let entry = if kind.is_dir() {
        Entry::Folder
    } else if kind.is_symlink() {
        let target = fs::read_link(&path).map_err(|e| io_error(&path, e))?;
        Entry::Link { target }
    } else if kind.is_file() {
        let sha256 = super::digest_file(&path).map_err(|e| io_error(&path, e))?;
        let mode = meta.permissions().mode() & 0o7777;
        Entry::File { mode, sha256 }
    } else {
        Entry::Other
    };
    Ok(Some(entry))
}

fn io_error(path: &Path, source: std::io::Error) -> ProtectedError {
    ProtectedError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether a path component holds a glob character.
fn is_pattern(part: &str) -> bool {
    part.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// The literal folder a glob's matches all lie in: its components before the first pattern;
/// the tree root when the first is one.
fn literal_folder(glob: &str) -> PathBuf {
    let parts = glob.split('/').filter(|p| !p.is_empty());
    parts.take_while(|p| !is_pattern(p)).collect()
}

/// The folders the walk starts from: one per glob with a pattern, none inside another.
fn walk_roots(globs: &[String]) -> Vec<PathBuf> {
    let patterns = globs.iter().filter(|g| is_pattern(g));
    let mut roots: Vec<PathBuf> = patterns.map(|g| literal_folder(g)).collect();
    roots.sort();
    roots.dedup();
    let all = roots.clone();
    roots.retain(|r| !all.iter().any(|o| o != r && r.starts_with(o)));
    roots
}

/// `folder` for a glob `folder/**` with a literal, non-empty `folder`.
fn whole_folder(glob: &str) -> Option<PathBuf> {
    let folder = glob.strip_suffix("/**")?;
    let parts: Vec<&str> = folder.split('/').collect();
    let literal = !folder.is_empty() && parts.iter().all(|p| !p.is_empty() && !is_pattern(p));
    literal.then(|| PathBuf::from(folder))
}

#[cfg(test)]
#[path = "protected_tests.rs"]
mod tests;
