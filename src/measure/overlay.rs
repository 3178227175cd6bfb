//! A candidate build's view of a declared cache as a copy-on-write overlay (docs/design.md
//! §1.4): the real cache is the overlay's read-only lower layer and everything the build writes
//! lands in an upper layer of its own, removed after the build. Nothing is copied up front, so a
//! 1.6 GB cache costs a candidate no time (a `cp -a` of it took 17 s on this machine kind).
//!
//! The overlay is mounted between fork and exec of the command's helper, in a mount namespace of
//! the helper's own with private propagation: no other process sees it, and it disappears with
//! the helper, whatever becomes of evo. Mounting needs privilege (evo run as root, as in CI); where
//! the probe finds it cannot be had, or `EVO_CACHE_COPIES=copy` asks for it, each candidate build
//! gets a plain copy instead, with the same guarantee and its cost.
//!
//! The lower layer must not change while an overlay over it is mounted: a candidate's build runs
//! after the baseline's, never beside it (`confirm::lanes::run_pair`), and a shared fleet cache,
//! which other nodes' baseline builds write, is always copied.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The environment variable that turns overlays off: `copy` makes every candidate build copy
/// the declared caches, as on a machine where overlays cannot be mounted.
pub const COPIES_ENV: &str = "EVO_CACHE_COPIES";

/// One cache as a candidate build sees it: `merged` shows `lower` with `upper`'s changes on top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlay {
    /// The real cache, never written.
    pub lower: PathBuf,
    /// The build's own writes.
    pub upper: PathBuf,
    /// The overlay's scratch folder, on the same file system as `upper`.
    pub work: PathBuf,
    /// Where the overlay is mounted; the sandbox binds it where the build expects the cache.
    pub merged: PathBuf,
}

impl Overlay {
    /// The overlay of `lower` whose layers live in `folder` (created by [`Overlay::create`]).
    pub fn in_folder(lower: &Path, folder: &Path) -> Overlay {
        Overlay {
            lower: lower.to_path_buf(),
            upper: folder.join("upper"),
            work: folder.join("work"),
            merged: folder.join("merged"),
        }
    }

    /// Makes the empty upper, work and mount-point folders.
    pub fn create(&self) -> io::Result<()> {
        for dir in [&self.upper, &self.work, &self.merged] {
            std::fs::create_dir_all(dir)?;
        }
        Ok(())
    }

    /// The mount's option string. `None` for a path the option syntax cannot carry as it is
    /// (`,` and `:` separate options and layers): then the cache is copied instead. With
    /// `redirect_dir=on` a build may rename a folder of the real cache in its view, as it could in
    /// a copy (without it some kernels refuse with `EXDEV`, a failed build the baseline's would
    /// not have had).
    fn options(&self) -> Option<String> {
        let mut data = String::new();
        for (key, path) in [
            ("lowerdir", &self.lower),
            ("upperdir", &self.upper),
            ("workdir", &self.work),
        ] {
            let path = path.to_str()?;
            if path.contains([',', ':', '\\']) {
                return None;
            }
            if !data.is_empty() {
                data.push(',');
            }
            data.push_str(&format!("{key}={path}"));
        }
        data.push_str(",redirect_dir=on");
        Some(data)
    }
}

/// Whether `overlay`'s paths can be mounted as they are (see [`Overlay::options`]).
pub fn expressible(overlay: &Overlay) -> bool {
    overlay.options().is_some()
}

/// Overlays ready to mount after a fork: every string allocated beforehand.
pub struct Mounts(Vec<(CString, CString)>);

impl Mounts {
    pub fn of(overlays: &[Overlay]) -> io::Result<Mounts> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
        let mut mounts = Vec::with_capacity(overlays.len());
        for o in overlays {
            let data = o
                .options()
                .ok_or_else(|| invalid("an overlay path holds `,`, `:` or `\\`"))?;
            let target = CString::new(o.merged.as_os_str().as_bytes())
                .map_err(|_| invalid("an overlay path holds a NUL byte"))?;
            let data = CString::new(data).map_err(|_| invalid("overlay options hold a NUL"))?;
            mounts.push((target, data));
        }
        Ok(Mounts(mounts))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Moves the calling process into a mount namespace of its own whose mounts propagate
    /// nowhere, and mounts every overlay there. Meant for between fork and exec: only the
    /// `unshare` and `mount` system calls run, on strings allocated before the fork.
    pub fn enter(&self) -> io::Result<()> {
        let check = |rc: libc::c_int| {
            if rc == -1 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        // SAFETY: plain system calls on NUL-terminated strings this value owns; null pointers
        // where the calls take none (the source of a propagation change, its data).
        unsafe {
            check(libc::unshare(libc::CLONE_NEWNS))?;
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for (target, data) in &self.0 {
                check(libc::mount(
                    c"overlay".as_ptr(),
                    target.as_ptr(),
                    c"overlay".as_ptr(),
                    0,
                    data.as_ptr().cast(),
                ))?;
            }
        }
        Ok(())
    }
}

/// Why candidate builds copy the caches instead of seeing them through overlays.
#[derive(Debug, thiserror::Error)]
pub enum NoOverlay {
    #[error("{COPIES_ENV}=copy")]
    TurnedOff,
    #[error("no writable caches")]
    NoCaches,
    /// Other nodes' baseline builds change a fleet's shared caches, which an overlay's lower
    /// layer must not.
    #[error("the caches are shared by a fleet")]
    SharedByFleet,
    #[error("cannot make the probe's folders in {}", folder.display())]
    Folders {
        folder: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot mount an overlay")]
    Mount(#[source] io::Error),
    #[error("a write through an overlay failed: {stderr}")]
    WriteFailed { stderr: String },
    #[error("a write through an overlay did not land in its upper layer")]
    WriteMisplaced,
}

/// Whether candidate builds on this machine can see caches through overlays: turned off by
/// [`COPIES_ENV`], else tried for real in `scratch` (made and removed here) — a file written and
/// a folder of the lower layer renamed through a mounted overlay must land in its upper layer and
/// leave the lower one as it was. `Err` says why not.
pub fn probe(scratch: &Path) -> Result<(), NoOverlay> {
    if std::env::var_os(COPIES_ENV).is_some_and(|v| v == "copy") {
        return Err(NoOverlay::TurnedOff);
    }
    let folder = scratch.join(format!("overlay-probe-{}", std::process::id()));
    let outcome = try_overlay(&folder);
    let _ = std::fs::remove_dir_all(&folder);
    outcome
}

fn try_overlay(folder: &Path) -> Result<(), NoOverlay> {
    let lower = folder.join("lower");
    let overlay = Overlay::in_folder(&lower, folder);
    let made = std::fs::create_dir_all(lower.join("folder")).and_then(|()| overlay.create());
    made.map_err(|source| NoOverlay::Folders {
        folder: folder.to_path_buf(),
        source,
    })?;
    let mounts = Mounts::of(std::slice::from_ref(&overlay)).map_err(NoOverlay::Mount)?;
    let mut command = Command::new("/bin/sh");
    command
        .args([
            "-c",
            "echo probe > \"$0/written\" && mv \"$0/folder\" \"$0/renamed\"",
        ])
        .arg(&overlay.merged)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: `Mounts::enter` only makes system calls on strings allocated before the fork.
    unsafe {
        command.pre_exec(move || mounts.enter());
    }
    let out = command.output().map_err(NoOverlay::Mount)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(NoOverlay::WriteFailed { stderr });
    }
    let lower_kept = lower.join("folder").is_dir() && !lower.join("written").exists();
    if !lower_kept || !overlay.upper.join("written").is_file() {
        return Err(NoOverlay::WriteMisplaced);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_root_the_probe_writes_and_renames_through_an_overlay_and_leaves_nothing() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: only root can mount an overlay here");
            return;
        }
        let scratch = tempfile::tempdir().unwrap();
        let probed = probe(scratch.path());
        assert!(probed.is_ok(), "{probed:?}");
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
        // The mount was the probe's alone: nothing of it is left in evo's own namespace.
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(
            !mounts.contains(scratch.path().to_str().unwrap()),
            "{mounts}"
        );
    }

    #[test]
    fn a_path_the_options_cannot_carry_is_no_overlay() {
        let o = Overlay::in_folder(Path::new("/c/a,b"), Path::new("/w"));
        assert!(!expressible(&o));
        let o = Overlay::in_folder(Path::new("/c/a:b"), Path::new("/w"));
        assert!(!expressible(&o));
        let o = Overlay::in_folder(Path::new("/c/cache"), Path::new("/w/copy"));
        assert_eq!(
            o.options().unwrap(),
            "lowerdir=/c/cache,upperdir=/w/copy/upper,workdir=/w/copy/work,redirect_dir=on"
        );
    }
}
