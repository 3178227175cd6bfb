//! Build caches shared by the nodes of one machine kind (issue 13, docs/design.md §2.8).
//!
//! A campaign's `sandbox.writable` folders are build caches (Cargo's target folder, ccache): on a
//! fleet each node would otherwise fill its own, compiling every dependency once per node. With
//! `fleet.share_caches` (the default), a job's sandbox binds each declared cache from
//! `<shared_dir>/caches/<machine kind>/` instead, at the path the campaign declared, so the first
//! node of a kind compiles and the others reuse. What makes that sound:
//!
//! - **One kind per folder.** The kind is the hardware and system a build can depend on without
//!   the cache knowing (the architecture, the CPU's model and instruction-set flags, the
//!   operating system and its release), never the node's name, core count or memory. A Cargo
//!   build with `-C target-cpu=native` fingerprints the word `native`, not the CPU it resolved
//!   to, so a cache of one CPU would be reused on another; a folder per kind prevents it.
//! - **Only the baseline writes.** As on one machine (§1.4), baseline builds bind the cache
//!   itself; every other build (a candidate's, the second baseline build) gets a private copy,
//!   so no candidate writes what another job reads.
//! - **One writer at a time.** A baseline build holds an exclusive lock on the cache for as long
//!   as it runs, and a private copy is taken under a shared lock, so no copy is torn by a build
//!   on another node and no two nodes' builds write one cache at once.
//! - **Hidden from runs.** The shared folder is one of the sandbox's secrets: only the bind of
//!   the cache itself, at the declared path, is visible, and only to builds.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The folder under a fleet's shared folder that holds the caches of every machine kind.
pub const CACHES_DIR: &str = "caches";

/// What a build may depend on without its cache knowing: machines that agree on all of it share
/// caches, machines that differ in any of it never do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MachineKind {
    /// `x86_64`, `aarch64`, … (the architecture evo was built for, which is the node's).
    pub arch: String,
    /// `/proc/cpuinfo`'s `model name` (or `CPU part` where there is none).
    pub cpu_model: String,
    /// The instruction-set flags of the first CPU (`flags`, or `Features`), sorted.
    pub cpu_flags: Vec<String>,
    /// `/etc/os-release`'s `ID` and `VERSION_ID` (the C library and the system compilers come
    /// with them).
    pub os: String,
}

impl MachineKind {
    /// This machine's kind.
    pub fn of_this_machine() -> MachineKind {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        MachineKind::from_texts(
            std::env::consts::ARCH,
            &read("/proc/cpuinfo"),
            &read("/etc/os-release"),
        )
    }

    /// The kind from the architecture and the texts of `/proc/cpuinfo` and `/etc/os-release`.
    pub fn from_texts(arch: &str, cpuinfo: &str, os_release: &str) -> MachineKind {
        let first_cpu = cpuinfo.split("\n\n").next().unwrap_or_default();
        let field = |names: &[&str]| {
            first_cpu.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                names
                    .contains(&key.trim())
                    .then(|| value.trim().to_string())
            })
        };
        let model = field(&["model name", "CPU part", "cpu model"]);
        let mut cpu_flags: Vec<String> = field(&["flags", "Features"])
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        cpu_flags.sort();
        cpu_flags.dedup();
        let release = |name: &str| {
            os_release.lines().find_map(|line| {
                let value = line.strip_prefix(name)?.strip_prefix('=')?;
                Some(value.trim().trim_matches('"').to_string())
            })
        };
        let os = [release("ID"), release("VERSION_ID")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        MachineKind {
            arch: arch.to_string(),
            cpu_model: model.unwrap_or_else(|| "unknown".to_string()),
            cpu_flags,
            os: if os.is_empty() { "unknown".into() } else { os },
        }
    }

    /// The kind's folder name: the architecture and 16 hex digits of the digest of all of it.
    pub fn key(&self) -> String {
        let mut hash = Sha256::new();
        for part in [&self.arch, &self.cpu_model, &self.os] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        for flag in &self.cpu_flags {
            hash.update(flag.as_bytes());
            hash.update([b' ']);
        }
        let arch: String = (self.arch.chars())
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        format!("{arch}-{}", &hex::encode(hash.finalize())[..16])
    }
}

/// The caches of this machine's kind under `root` (`<shared_dir>/caches`): where each declared
/// cache is bound from, and which kind they are for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCaches {
    pub kind: MachineKind,
    /// `<root>/<kind key>`, made by [`SharedCaches::for_this_machine`].
    pub folder: PathBuf,
}

impl SharedCaches {
    /// The folder of this machine's kind under `root`, made when missing, with a `kind.json`
    /// that says which machines it is for.
    pub fn for_this_machine(root: &Path) -> io::Result<SharedCaches> {
        SharedCaches::at(root, MachineKind::of_this_machine())
    }

    /// The folder of `kind` under `root`, made when missing, with its `kind.json`.
    pub fn at(root: &Path, kind: MachineKind) -> io::Result<SharedCaches> {
        let folder = root.join(kind.key());
        std::fs::create_dir_all(&folder)?;
        let described = folder.join("kind.json");
        if !described.exists() {
            let mut text = serde_json::to_vec_pretty(&kind).map_err(io::Error::other)?;
            text.push(b'\n');
            let mut temp = tempfile::NamedTempFile::new_in(&folder)?;
            temp.write_all(&text)?;
            // Another node may have written it meanwhile: the same text, so either stays.
            if let Err(e) = temp.persist_noclobber(&described) {
                if e.error.kind() != io::ErrorKind::AlreadyExists {
                    return Err(e.error);
                }
            }
        }
        Ok(SharedCaches { kind, folder })
    }

    /// Where the cache declared at `declared` lives for this kind: named after the declared path
    /// (its last part, for people, and a digest of all of it, so two declared folders of one
    /// name never meet).
    pub fn source(&self, declared: &Path) -> PathBuf {
        let digest = hex::encode(&Sha256::digest(declared.as_os_str().as_encoded_bytes())[..6]);
        let name = declared
            .file_name()
            .map_or_else(|| "cache".into(), |n| n.to_string_lossy().into_owned());
        self.folder.join(format!("{name}-{digest}"))
    }
}

/// The lock file of the shared cache at `source`: beside it, not in it, so no build sees it.
pub fn lock_file(source: &Path) -> PathBuf {
    let mut name = source.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    source.with_file_name(name)
}

/// A lock on a shared cache, released when dropped (or when the process ends, however it ends).
#[derive(Debug)]
pub struct CacheLock {
    _file: File,
}

/// Waits for the lock of the shared cache at `source`: `exclusive` for a build that writes it,
/// shared for a copy that reads it.
pub fn lock(source: &Path, exclusive: bool) -> io::Result<CacheLock> {
    use rustix::fs::{FlockOperation, flock};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_file(source))?;
    let operation = match exclusive {
        true => FlockOperation::LockExclusive,
        false => FlockOperation::LockShared,
    };
    flock(&file, operation)?;
    Ok(CacheLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OS: &str = "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nID=debian\nVERSION_ID=\"13\"\n";

    fn cpuinfo(model: &str, flags: &str, cpus: usize, mhz: &str) -> String {
        (0..cpus)
            .map(|i| {
                format!(
                    "processor\t: {i}\nmodel name\t: {model}\ncpu MHz\t\t: {mhz}\nflags\t\t: \
                     {flags}\ncore id\t\t: {i}\n"
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn machines_that_differ_only_in_size_name_or_clock_are_one_kind() {
        let a = MachineKind::from_texts(
            "x86_64",
            &cpuinfo("Xeon 8375C", "sse avx2 fma", 2, "2900"),
            OS,
        );
        let b = MachineKind::from_texts(
            "x86_64",
            &cpuinfo("Xeon 8375C", "fma avx2 sse", 64, "3500.1"),
            OS,
        );
        assert_eq!(a, b);
        assert_eq!(a.key(), b.key());
        assert_eq!(a.os, "debian 13");
        assert_eq!(a.cpu_flags, ["avx2", "fma", "sse"]);
        assert!(a.key().starts_with("x86_64-") && a.key().len() == "x86_64-".len() + 16);
    }

    #[test]
    fn a_different_instruction_set_model_architecture_or_system_is_another_kind() {
        let base =
            MachineKind::from_texts("x86_64", &cpuinfo("Xeon 8375C", "sse avx2", 2, "1"), OS);
        let others = [
            MachineKind::from_texts(
                "x86_64",
                &cpuinfo("Xeon 8375C", "sse avx2 avx512f", 2, "1"),
                OS,
            ),
            MachineKind::from_texts("x86_64", &cpuinfo("EPYC 7R13", "sse avx2", 2, "1"), OS),
            MachineKind::from_texts("aarch64", &cpuinfo("Xeon 8375C", "sse avx2", 2, "1"), OS),
            MachineKind::from_texts(
                "x86_64",
                &cpuinfo("Xeon 8375C", "sse avx2", 2, "1"),
                "ID=debian\nVERSION_ID=\"12\"\n",
            ),
            MachineKind::from_texts("x86_64", &cpuinfo("Xeon 8375C", "sse avx2", 2, "1"), ""),
        ];
        for other in &others {
            assert_ne!(other.key(), base.key(), "{other:?}");
        }
        let keys: std::collections::BTreeSet<String> =
            others.iter().map(MachineKind::key).collect();
        assert_eq!(keys.len(), others.len());
    }

    #[test]
    fn an_arm_cpu_is_told_by_its_part_and_features() {
        let text =
            "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd aes\nCPU part\t: 0xd0c\n";
        let kind = MachineKind::from_texts("aarch64", text, OS);
        assert_eq!(
            (kind.cpu_model.as_str(), kind.cpu_flags.len()),
            ("0xd0c", 3)
        );
    }

    #[test]
    fn each_declared_cache_has_its_own_folder_inside_the_kinds() {
        let root = tempfile::tempdir().unwrap();
        let kind = MachineKind::from_texts("x86_64", &cpuinfo("m", "f", 1, "1"), OS);
        let caches = SharedCaches::at(root.path(), kind.clone()).unwrap();
        assert_eq!(caches.folder, root.path().join(kind.key()));
        let written: MachineKind =
            serde_json::from_slice(&std::fs::read(caches.folder.join("kind.json")).unwrap())
                .unwrap();
        assert_eq!(written, kind);
        let a = caches.source(Path::new("/home/u/.cache/evo/cargo-target"));
        let b = caches.source(Path::new("/other/cargo-target"));
        assert_ne!(a, b);
        assert!(a.starts_with(&caches.folder) && b.starts_with(&caches.folder));
        assert!(
            a.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("cargo-target-")
        );
        assert_eq!(lock_file(&a).parent(), a.parent());
        // Made twice (another node, the same kind): the same folder, kind.json kept.
        assert_eq!(SharedCaches::at(root.path(), kind).unwrap(), caches);
    }

    #[test]
    fn a_writer_waits_for_a_reader_and_readers_share() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("cache");
        let reader = lock(&source, false).unwrap();
        let second_reader = lock(&source, false).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let path = source.clone();
        let writer = std::thread::spawn(move || {
            let held = lock(&path, true).unwrap();
            tx.send(()).unwrap();
            drop(held);
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "the writer got the lock while two readers held it"
        );
        drop((reader, second_reader));
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the writer never got the lock after the readers let go");
        writer.join().unwrap();
    }
}
