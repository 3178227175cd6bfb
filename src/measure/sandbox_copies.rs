//! The declared writable caches as a build sees them (`sandbox.writable`): a baseline build
//! writes the real folder (with shared caches, the fleet's folder for this machine's kind, under
//! its lock); a candidate build gets a private copy, made fresh before its build and removed
//! after it, so nothing one candidate's build wrote reaches the baseline's or another
//! candidate's (docs/design.md §1.4). The copy is a copy-on-write overlay where this machine can
//! mount one (see `overlay`), else a `cp -a`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Arm, Bind, SandboxError, SandboxPolicy};
use crate::measure::caches::{self, CacheLock};
use crate::measure::overlay::Overlay;

impl SandboxPolicy {
    /// Each declared writable folder as a candidate build copies it: the fleet's folder for this
    /// machine's kind when caches are shared, else the declared folder.
    pub fn cache_sources(&self) -> Vec<PathBuf> {
        (self.writable.iter())
            .map(|declared| self.source_of(declared))
            .collect()
    }

    /// Where the cache declared at `declared` really is: the fleet's folder for this machine's
    /// kind when caches are shared, else the declared folder itself.
    fn source_of(&self, declared: &Path) -> PathBuf {
        match &self.shared {
            Some(shared) => shared.source(declared),
            None => declared.to_path_buf(),
        }
    }

    /// The declared caches as `arm`'s build in `tree` sees them, and the overlays to mount
    /// for them before the build starts.
    pub(super) fn caches(
        &self,
        tree: &Path,
        arm: Arm,
    ) -> Result<(Vec<Bind>, Vec<Overlay>), SandboxError> {
        let mut binds = Vec::new();
        let mut overlays = Vec::new();
        for (index, cache) in self.writable.iter().enumerate() {
            let real = self.real_cache(cache)?;
            let source = match arm {
                Arm::Baseline => real,
                Arm::Candidate => match self.private_overlay(tree, index, &real)? {
                    Some(overlay) => {
                        let merged = overlay.merged.clone();
                        overlays.push(overlay);
                        merged
                    }
                    None => self.private_copy(tree, index, &real)?,
                },
            };
            binds.push(Bind {
                source,
                dest: cache.clone(),
                writable: true,
            });
        }
        Ok((binds, overlays))
    }

    /// The copy-on-write overlay of cache number `index` for a build of the candidate `tree`,
    /// when candidate caches are overlays and its paths can be mounted as they are; its empty
    /// layers are made here and removed after the build (`release`), like a copy.
    fn private_overlay(
        &self,
        tree: &Path,
        index: usize,
        cache: &Path,
    ) -> Result<Option<Overlay>, SandboxError> {
        if !self.overlay {
            return Ok(None);
        }
        let overlay = Overlay::in_folder(cache, &self.copy_path(tree, index));
        if !crate::measure::overlay::expressible(&overlay) {
            return Ok(None);
        }
        overlay
            .create()
            .map_err(|source| SandboxError::CreateCopies {
                path: self.copy_path(tree, index),
                source,
            })?;
        Ok(Some(overlay))
    }

    /// [`SandboxPolicy::source_of`], made when it is the fleet's folder and missing.
    fn real_cache(&self, declared: &Path) -> Result<PathBuf, SandboxError> {
        let source = self.source_of(declared);
        if self.shared.is_none() {
            return Ok(source);
        }
        match std::fs::create_dir_all(&source) {
            Ok(()) => Ok(source),
            Err(e) => Err(SandboxError::CreateSharedCache {
                path: source,
                source: e,
            }),
        }
    }

    /// The locks a build of `arm` holds while it runs: with shared caches, a baseline build
    /// writes them and so holds each one's lock exclusively (waiting for builds and copies on
    /// other nodes to finish); nothing otherwise. Released when dropped.
    pub fn hold_caches(&self, arm: Arm) -> Result<Vec<CacheLock>, SandboxError> {
        if self.bwrap.is_none() || self.shared.is_none() || arm != Arm::Baseline {
            return Ok(Vec::new());
        }
        let mut held = Vec::new();
        for cache in &self.writable {
            let real = self.real_cache(cache)?;
            match caches::lock(&real, true) {
                Ok(lock) => held.push(lock),
                Err(source) => return Err(SandboxError::LockSharedCache { path: real, source }),
            }
        }
        Ok(held)
    }

    /// Where the candidate tree's own copy of cache number `index` goes.
    fn copy_path(&self, tree: &Path, index: usize) -> PathBuf {
        use sha2::Digest;
        let tag = hex::encode(&sha2::Sha256::digest(tree.as_os_str().as_encoded_bytes())[..8]);
        self.copies.join(format!("{tag}-{index}"))
    }

    /// Makes the copies a build of `arm` in `tree` will use, now: before a baseline build that
    /// runs beside it starts changing the real caches under `cp`.
    pub fn prepare_build(&self, tree: &Path, arm: Arm) -> Result<(), SandboxError> {
        if self.bwrap.is_some() {
            self.caches(tree, arm)?;
        }
        Ok(())
    }

    /// The copy of cache number `index` for a build of the candidate `tree`: made fresh from the
    /// real one (`cp -a`, sharing blocks where the file system can) unless `prepare_build` made
    /// it already; removed after the build (`release`), so nothing an earlier candidate's build
    /// wrote is in it.
    fn private_copy(
        &self,
        tree: &Path,
        index: usize,
        cache: &Path,
    ) -> Result<PathBuf, SandboxError> {
        let copy = self.copy_path(tree, index);
        if copy.is_dir() {
            return Ok(copy);
        }
        std::fs::create_dir_all(&self.copies).map_err(|source| SandboxError::CreateCopies {
            path: self.copies.clone(),
            source,
        })?;
        // A shared cache is copied while no baseline build (on any node) writes it.
        let _reading = (self.shared.as_ref())
            .map(|_| caches::lock(cache, false))
            .transpose()
            .map_err(|source| SandboxError::LockSharedCache {
                path: cache.to_path_buf(),
                source,
            })?;
        let status = Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(cache)
            .arg(&copy)
            .status()
            .map_err(|source| SandboxError::RunCopy {
                cache: cache.to_path_buf(),
                source,
            })?;
        if !status.success() {
            let _ = std::fs::remove_dir_all(&copy);
            return Err(SandboxError::CopyFailed {
                cache: cache.to_path_buf(),
                status,
            });
        }
        Ok(copy)
    }

    /// Removes the copies a build of `tree` used (runs never see them).
    pub fn release(&self, tree: &Path) {
        for index in 0..self.writable.len() {
            let _ = std::fs::remove_dir_all(self.copy_path(tree, index));
        }
    }
}
