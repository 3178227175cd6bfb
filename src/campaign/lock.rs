//! One evo process per run directory: an exclusive `flock` on `<run>/.lock`, held for the life of
//! the process and released by the kernel however the process ends (even SIGKILL).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// Held while the run is in use; dropping it releases the lock.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Takes the lock or says which process holds it.
    pub fn acquire(run_dir: &Path) -> io::Result<RunLock> {
        let path = run_dir.join(".lock");
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)?;
        // SAFETY: flock on a file descriptor we own; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "run {} is in use by another evo process (pid {}); wait for it or stop it",
                    run_dir.display(),
                    holder.trim()
                ),
            ));
        }
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())?;
        file.flush()?;
        Ok(RunLock { _file: file })
    }
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
        assert!(RunLock::acquire(dir.path()).is_ok());
    }
}
