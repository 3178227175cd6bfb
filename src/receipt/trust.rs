//! Where a key may be kept: never inside a git work tree or a folder evo made.
//!
//! A pull request can add any file to the repository it changes, `.gitignore` notwithstanding
//! (`git add -f`), and a candidate's build writes into the trees evo made for it. A key found in
//! either is the attacker's: signing with it would sign for them, and trusting its public half
//! would accept whatever they signed. So every key evo signs with or trusts by default, and every
//! key folder (`$EVO_KEY_DIR`, a campaign's `key`, `evo keygen --out`), is refused when its
//! canonical path lies under a folder holding `.git` (a file or a folder: work trees and linked
//! worktrees), or under a folder the caller names (the campaign's repository, evo's output and
//! work folders).

use std::path::{Path, PathBuf};

/// Why a path is not a place for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InWorkTree {
    /// The key or key folder, canonical as far as it exists.
    pub path: PathBuf,
    /// What holds it: "the git work tree", or a named folder ("the campaign's repository").
    pub what: String,
    /// The folder that holds it.
    pub root: PathBuf,
}

impl std::fmt::Display for InWorkTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} lies inside {} {}: evo never signs with or trusts a key kept in a repository or \
             in a tree evo made, since a pull request or a candidate can put one there; keep \
             keys outside any clone (the default is $XDG_CONFIG_HOME/evo or ~/.config/evo)",
            self.path.display(),
            self.what,
            self.root.display()
        )
    }
}

impl std::error::Error for InWorkTree {}

/// A folder no key may be kept in, with what it is (for the message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    pub what: &'static str,
    pub root: PathBuf,
}

impl Untrusted {
    pub fn new(what: &'static str, root: impl Into<PathBuf>) -> Untrusted {
        Untrusted {
            what,
            root: root.into(),
        }
    }
}

/// `path` made absolute and canonical as far as it exists: the deepest existing ancestor is
/// resolved (links included) and the part not yet created appended, so a key folder evo is
/// about to create is judged where it will be.
pub fn canonical(path: &Path) -> PathBuf {
    let absolute = match std::env::current_dir() {
        Ok(cwd) if path.is_relative() => cwd.join(path),
        _ => path.to_path_buf(),
    };
    let absolute = crate::path::normalized(&absolute);
    let mut missing = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            return missing.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

/// The folder holding `.git` that `path` lies in, if any (the path itself included).
pub fn git_work_tree_of(path: &Path) -> Option<PathBuf> {
    let path = canonical(path);
    path.ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// Refuses `path` when it lies in a git work tree or in one of the `untrusted` folders.
pub fn check_outside(path: &Path, untrusted: &[Untrusted]) -> Result<(), InWorkTree> {
    let real = canonical(path);
    if let Some(root) = git_work_tree_of(&real) {
        return Err(InWorkTree {
            path: real,
            what: "the git work tree".to_string(),
            root,
        });
    }
    for u in untrusted {
        let root = canonical(&u.root);
        if real.starts_with(&root) {
            return Err(InWorkTree {
                path: real,
                what: u.what.to_string(),
                root,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_under_a_git_folder_or_file_at_any_depth_is_refused_even_before_it_exists() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let deep = repo.join(".evo/keys/signing.key");
        let e = check_outside(&deep, &[]).unwrap_err();
        assert_eq!(e.root, repo.canonicalize().unwrap());
        assert!(e.to_string().contains("outside any clone"), "{e}");
        // A linked worktree has a `.git` file.
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(linked.join(".git"), "gitdir: elsewhere\n").unwrap();
        assert!(check_outside(&linked.join("k"), &[]).is_err());
        assert!(check_outside(&dir.path().join("keys/signing.key"), &[]).is_ok());
    }

    #[test]
    fn a_link_into_a_work_tree_and_a_named_folder_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("keys")).unwrap();
        let link = dir.path().join("keys");
        std::os::unix::fs::symlink(repo.join("keys"), &link).unwrap();
        assert!(check_outside(&link.join("signing.key"), &[]).is_err());
        let out = dir.path().join("out");
        let named = [Untrusted::new("evo's output folder", &out)];
        let e = check_outside(&out.join("run/signing.key"), &named).unwrap_err();
        assert_eq!(e.what, "evo's output folder");
        let relative = dir.path().join("other/../out/x");
        assert!(check_outside(&relative, &named).is_err());
    }
}
