//! The parts of a writable tree a sandboxed build still cannot change: the workload's protected
//! files and folders.
//!
//! A build runs code the candidate wrote (a recipe, a `build.rs`, a script), and it sees its tree
//! writable. Each protected folder (`bench/**`) and each protected file outside one is bound
//! read-only over the tree, so it cannot be written, truncated, chmod-ed, deleted or renamed (a
//! mount point is busy), and nothing can be made in a protected folder. Binds go by path, so a
//! file could still be swapped by renaming the folder it is in and making a new one: every folder
//! from the tree root down to a protected path is therefore bound onto itself too (writable, as
//! it was), which makes it a mount point that cannot be renamed or removed either. Links are never
//! bound (a bind follows them). The digest check (`tree::protected`) stands behind this and holds
//! unsandboxed.
//!
//! A side effect a build may notice: a hard link or a `rename` between two of these folders
//! crosses a mount (`EXDEV`); `mv` falls back to a copy, and `ln` needs `-s`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::sandbox::Bind;

/// The protected paths of a tree, relative to its root.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadOnlyPaths {
    /// Folders all of whose contents are protected.
    pub folders: Vec<PathBuf>,
    /// Protected regular files outside those folders.
    pub files: Vec<PathBuf>,
}

impl ReadOnlyPaths {
    pub fn is_empty(&self) -> bool {
        self.folders.is_empty() && self.files.is_empty()
    }

    /// The binds that keep these paths read-only in the tree at `root`, to go after the tree's
    /// own bind: the folders on the way, each onto itself, shallowest first, then the protected
    /// paths read-only. A path that is not what it was (a link, a file for a folder, gone) is
    /// left out: the digest check after the step names it.
    pub fn binds(&self, root: &Path) -> Vec<Bind> {
        let wanted = (self.folders.iter().map(|p| (p, true)))
            .chain(self.files.iter().map(|p| (p, false)))
            .filter(|(p, folder)| is_kind(&root.join(p), *folder))
            .filter(|(p, _)| ancestors(p).all(|a| is_kind(&root.join(a), true)));
        let mut ways = BTreeSet::new();
        let mut shut = Vec::new();
        for (path, _) in wanted {
            ways.extend(ancestors(path).map(Path::to_path_buf));
            shut.push(path);
        }
        let mut ways: Vec<PathBuf> = ways.into_iter().collect();
        ways.sort_by_key(|p| p.components().count());
        let ways = ways.into_iter().map(|p| Bind::same(&root.join(p), true));
        let shut = shut.into_iter().map(|p| Bind::same(&root.join(p), false));
        ways.chain(shut).collect()
    }
}

/// The folders strictly between the tree root and `path`.
fn ancestors(path: &Path) -> impl Iterator<Item = &Path> {
    path.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
}

/// Whether `path` is, without following a link, a folder (`folder`) or a regular file.
fn is_kind(path: &Path, folder: bool) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if folder => m.is_dir(),
        Ok(m) => m.is_file(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_on_the_way_are_bound_before_the_protected_paths_and_links_never() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("w/c/bench")).unwrap();
        std::fs::write(root.join("w/c/run.sh"), "x").unwrap();
        std::fs::write(root.join("top"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("w/link")).unwrap();
        let paths = ReadOnlyPaths {
            folders: vec!["w/c/bench".into(), "gone".into()],
            files: vec!["w/c/run.sh".into(), "top".into(), "w/link".into()],
        };
        let binds = paths.binds(root);
        let shown: Vec<(String, bool)> = (binds.iter())
            .map(|b| {
                let rel = b.dest.strip_prefix(root).unwrap();
                (rel.display().to_string(), b.writable)
            })
            .collect();
        let want = [
            ("w", true),
            ("w/c", true),
            ("w/c/bench", false),
            ("w/c/run.sh", false),
            ("top", false),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|(p, w)| (p.to_string(), *w)).collect();
        assert_eq!(shown, want);
        assert!(binds.iter().all(|b| b.source == b.dest));
    }
}
