//! One evo process per run directory (an exclusive lock on `<run>/.lock`) and per repository
//! (a lock file in evo's state folder), held for the life of the process and released by the kernel
//! however the process ends (even SIGKILL). The lock is `flock` (through rustix): tied to the open
//! file, not to a path or a thread. (std's `File::try_lock` is the same call but needs Rust 1.89.)

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};
use rustix::io::Errno;

/// Why a lock was not taken: another evo holds it (its pid and command line, as it wrote them),
/// or the lock file could not be made or locked (the path, and the system's error as the cause).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "run {} is in use by another evo process (pid {holder}); wait for it or stop it",
        run.display()
    )]
    RunInUse { run: PathBuf, holder: String },
    #[error(
        "the repository {} is busy: evo pid {holder} is using it. Two evo runs on one repository \
         would build and measure at the same time and spoil each other's timings; wait for it \
         to finish or stop it",
        repo.display()
    )]
    RepoBusy { repo: PathBuf, holder: String },
    #[error("cannot create evo's lock folder {}: {source}", path.display())]
    Folder {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot lock {}: {source}", path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Held while the run is in use; dropping it releases the lock.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Takes the lock or says which process holds it.
    pub fn acquire(run_dir: &Path) -> Result<RunLock, LockError> {
        match exclusive(&run_dir.join(".lock"), &std::process::id().to_string())? {
            Attempt::Taken(file) => Ok(RunLock { _file: file }),
            Attempt::HeldBy(holder) => Err(LockError::RunInUse {
                run: run_dir.to_path_buf(),
                holder,
            }),
        }
    }
}

/// One evo process per repository: two would build and measure at the same time and spoil each
/// other's timings. The lock file lives in evo's state folder (never in the user's repository),
/// named after the repository's canonical path.
#[derive(Debug)]
pub struct RepoLock {
    _file: File,
}

impl RepoLock {
    /// Takes the repository's lock for `what` (the command line, shown to a second evo), or
    /// says which process holds it.
    pub fn acquire(repo: &Path, what: &str) -> Result<RepoLock, LockError> {
        let canonical = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
        let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
            canonical.as_os_str().as_encoded_bytes(),
        ));
        let dir = lock_dir();
        std::fs::create_dir_all(&dir).map_err(|source| LockError::Folder {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(format!("repo-{}.lock", &digest[..16]));
        let me = format!("{} ({what})", std::process::id());
        match exclusive(&path, &me)? {
            Attempt::Taken(file) => Ok(RepoLock { _file: file }),
            Attempt::HeldBy(holder) => Err(LockError::RepoBusy {
                repo: canonical,
                holder,
            }),
        }
    }
}

/// evo's own state (its repository locks): `$EVO_STATE_DIR`, else `$XDG_STATE_HOME/evo`, else
/// `~/.local/state/evo`, else a folder in the temp dir. Never a cache: a campaign may let builds
/// write its caches, and code under test must not be able to delete evo's locks. No sandboxed
/// run sees this folder.
pub fn state_dir() -> PathBuf {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("EVO_STATE_DIR")
        .or_else(|| env("XDG_STATE_HOME").map(|d| d.join("evo")))
        .or_else(|| env("HOME").map(|d| d.join(".local/state/evo")))
        .unwrap_or_else(|| std::env::temp_dir().join("evo-state"))
}

fn lock_dir() -> PathBuf {
    state_dir().join("locks")
}

/// What an attempt at a lock found.
enum Attempt {
    /// The lock, held through this file.
    Taken(File),
    /// Another process has it: the text it wrote (its pid and what it runs).
    HeldBy(String),
}

/// An exclusive `flock` on `path`, holding `holder` as its text.
fn exclusive(path: &Path, holder: &str) -> Result<Attempt, LockError> {
    let locking = |source: io::Error| LockError::Lock {
        path: path.to_path_buf(),
        source,
    };
    take(path, holder).map_err(locking)
}

fn take(path: &Path, holder: &str) -> io::Result<Attempt> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(Errno::WOULDBLOCK) => {
            let mut current = String::new();
            let _ = file.read_to_string(&mut current);
            return Ok(Attempt::HeldBy(current.trim().to_string()));
        }
        // Not held by anyone, but not lockable either (a file system without locks).
        Err(errno) => return Err(errno.into()),
    }
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "{holder}")?;
    file.flush()?;
    Ok(Attempt::Taken(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(dir.path()).unwrap();
        let err = RunLock::acquire(dir.path()).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        assert!(acquired_soon(|| RunLock::acquire(dir.path()).is_ok()));
    }

    /// Whether `try_once` succeeds within a second. A flock belongs to the open file, and a test
    /// running beside this one that forks a child between our open and our drop gives the child
    /// a copy of the descriptor until it execs (close-on-exec), so the release can lag the drop
    /// by that window. That is the likely cause of the one failure seen (an immediate re-acquire
    /// refused in a whole-suite run), inferred, not observed; a lock still held after a second is
    /// a real failure.
    fn acquired_soon(mut try_once: impl FnMut() -> bool) -> bool {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        loop {
            if try_once() {
                return true;
            }
            if std::time::Instant::now() > until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn a_repository_is_locked_by_its_canonical_path() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        let first = RepoLock::acquire(&repo, "evo confirm a.patch").unwrap();
        // The same repository under another spelling is the same lock.
        let err = RepoLock::acquire(&repo.join("sub/.."), "evo campaign run c.json").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("is busy"), "{text}");
        assert!(text.contains(&format!("pid {} (evo confirm a.patch)", std::process::id())));
        drop(first);
        assert!(acquired_soon(|| RepoLock::acquire(
            &repo,
            "evo confirm a.patch"
        )
        .is_ok()));
    }
}
