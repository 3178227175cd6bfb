//! Where a confirmation builds its trees: the folder `--work-dir` names, kept, or a temporary
//! `evo-trees-*` folder, removed when the confirmation ends. A confirmation killed outright
//! (SIGKILL, a machine's OOM killer) cannot remove its own, so each temporary folder holds a lock
//! for as long as its confirmation lives, and the next confirmation removes every such folder
//! whose lock nobody holds.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

/// The prefix of a temporary trees folder in the system's temporary folder.
const PREFIX: &str = "evo-trees-";

/// The lock file inside a temporary trees folder, locked while its confirmation lives.
const LOCK: &str = ".evo-alive";

pub(super) enum Scratch {
    Kept(PathBuf),
    /// The lock file stays open, and so locked, as long as this value lives.
    Temp {
        dir: tempfile::TempDir,
        _alive: File,
    },
}

impl Scratch {
    /// `work_dir` when given, else a new temporary folder, after removing those left by
    /// confirmations that no longer run.
    pub(super) fn new(work_dir: Option<&Path>) -> io::Result<Scratch> {
        if let Some(dir) = work_dir {
            return Ok(Scratch::Kept(dir.to_path_buf()));
        }
        let parent = std::env::temp_dir();
        sweep(&parent);
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(&parent)?;
        // Locked under another name, then renamed: a sweep never finds the lock file unlocked.
        let taking = dir.path().join(".evo-alive.new");
        let file = File::create(&taking)?;
        flock(&file, FlockOperation::NonBlockingLockExclusive)?;
        std::fs::rename(&taking, dir.path().join(LOCK))?;
        Ok(Scratch::Temp { dir, _alive: file })
    }

    pub(super) fn path(&self) -> &Path {
        match self {
            Scratch::Kept(p) => p,
            Scratch::Temp { dir, .. } => dir.path(),
        }
    }
}

/// Removes each `evo-trees-*` folder in `parent` whose lock file exists and is not locked: its
/// confirmation was killed. A folder without a lock file (being made, or made by an older evo) is
/// left alone; so is anything that cannot be read. Returns the folders removed.
pub(super) fn sweep(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let dir = entry.path();
        let Ok(file) = File::open(dir.join(LOCK)) else {
            continue;
        };
        if flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok()
            && std::fs::remove_dir_all(&dir).is_ok()
        {
            removed.push(dir);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(parent: &Path, name: &str, lock: bool) -> PathBuf {
        let dir = parent.join(name);
        std::fs::create_dir_all(dir.join("candidate")).unwrap();
        if lock {
            File::create(dir.join(LOCK)).unwrap();
        }
        dir
    }

    #[test]
    fn only_folders_whose_confirmation_is_gone_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        let gone = folder(parent.path(), "evo-trees-gone", true);
        let alive = folder(parent.path(), "evo-trees-alive", true);
        let held = File::open(alive.join(LOCK)).unwrap();
        flock(&held, FlockOperation::NonBlockingLockExclusive).unwrap();
        let unlocked = folder(parent.path(), "evo-trees-being-made", false);
        let other = folder(parent.path(), "not-evo", true);
        assert_eq!(sweep(parent.path()), vec![gone.clone()]);
        assert!(!gone.exists());
        for kept in [&alive, &unlocked, &other] {
            assert!(kept.join("candidate").is_dir(), "{}", kept.display());
        }
        drop(held);
    }

    #[test]
    fn a_live_confirmations_folder_survives_a_sweep_and_goes_with_it() {
        let scratch = Scratch::new(None).unwrap();
        let path = scratch.path().to_path_buf();
        assert!(path.join(LOCK).is_file());
        sweep(&std::env::temp_dir());
        assert!(path.is_dir());
        drop(scratch);
        assert!(!path.exists());
    }
}
