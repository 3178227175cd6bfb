//! Ed25519 signing keys: generating, storing, loading, and the per-user default key.
//!
//! Keys are stored as PEM so that tools other than evo can use them: the private key as PKCS#8
//! (`signing.key`, mode 0600) and the public key as SPKI (`signing.pub.pem`), which
//! `openssl pkeyutl -verify -pubin -rawin` accepts as is. Files are published with a hard link
//! from a fully written temporary file, which never replaces an existing key and lets two evo
//! processes that create the default key at once agree on one of them.
//!
//! In CI the private key is a secret, which reaches a job as an environment variable:
//! `$EVO_SIGNING_KEY` holds the PKCS#8 PEM text, and evo signs with it without writing it
//! anywhere (it is not on the sandbox's environment allow-list, and a campaign may not pass it on).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

pub use super::signer::{KeySource, Signer, VerifyWith};
use super::trust::check_outside;
pub use super::trust::{InWorkTree, Untrusted};

/// File name of the private key in a key directory.
pub const PRIVATE_KEY_FILE: &str = "signing.key";
/// File name of the public key (SPKI PEM) in a key directory.
pub const PUBLIC_KEY_FILE: &str = "signing.pub.pem";
/// Overrides the default key directory (tests set it so they never touch the real home).
pub const KEY_DIR_ENV: &str = "EVO_KEY_DIR";
/// Holds the private key's PKCS#8 PEM text (a CI secret); when set, it signs, whatever the
/// campaign's `key` says. Named with the input files (`spec::modes`), which refuse to pass it
/// to a run, as the sandbox does.
pub use crate::spec::modes::SIGNING_KEY_ENV;

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{context} {}: {source}", path.display())]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} already exists; evo never overwrites a key (choose another --out directory, or \
         remove the old key pair yourself)",
        .0.display()
    )]
    Exists(PathBuf),
    #[error("{} is not a PEM Ed25519 {expected} key: {reason}", path.display())]
    Format {
        path: PathBuf,
        expected: &'static str,
        reason: String,
    },
    #[error(
        "{} does not belong to the private key {} (their key ids differ); remove the stale \
         public key or regenerate the pair",
        public.display(), private.display()
    )]
    Mismatch { public: PathBuf, private: PathBuf },
    #[error(
        "no default key directory: set {KEY_DIR_ENV}, XDG_CONFIG_HOME or HOME, or name a key \
         in the campaign (\"key\")"
    )]
    NoHome,
    /// A key or key folder in a git work tree or a folder evo made (`trust`).
    #[error("{origin}: {place}")]
    InWorkTree {
        /// Where evo was told to look: "$EVO_KEY_DIR", "the campaign's `key`", "--key".
        origin: String,
        place: super::trust::InWorkTree,
    },
    /// The variable is set but unusable. `reason` never quotes its value.
    #[error("${SIGNING_KEY_ENV} does not hold a usable Ed25519 private key: {reason}")]
    Env { reason: String },
}

fn io(context: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> KeyError {
    let path = path.to_path_buf();
    move |source| KeyError::Io {
        context,
        path,
        source,
    }
}

/// `sha256:` + hex sha256 of the 32-byte raw public key.
pub fn key_id(key: &VerifyingKey) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(key.as_bytes())))
}

/// The paths of a key pair in one directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFiles {
    pub private: PathBuf,
    pub public: PathBuf,
}

impl KeyFiles {
    pub fn in_dir(dir: &Path) -> KeyFiles {
        KeyFiles {
            private: dir.join(PRIVATE_KEY_FILE),
            public: dir.join(PUBLIC_KEY_FILE),
        }
    }
}

/// A fresh key from the operating system's random source.
pub fn generate() -> Result<SigningKey, KeyError> {
    let path = Path::new("/dev/urandom");
    let mut seed = [0u8; 32];
    std::io::Read::read_exact(
        &mut std::fs::File::open(path).map_err(io("cannot open", path))?,
        &mut seed,
    )
    .map_err(io("cannot read", path))?;
    Ok(SigningKey::from_bytes(&seed))
}

pub(super) fn private_pem(key: &SigningKey, path: &Path) -> Result<String, KeyError> {
    key.to_pkcs8_pem(LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(|e| KeyError::Format {
            path: path.to_path_buf(),
            expected: "private",
            reason: e.to_string(),
        })
}

/// The SPKI PEM text of a public key.
pub fn public_pem(key: &VerifyingKey) -> String {
    key.to_public_key_pem(LineEnding::LF)
        .unwrap_or_else(|_| unreachable!("an Ed25519 public key always encodes as SPKI"))
}

/// Writes `bytes` to `dest` with `mode`, failing with `AlreadyExists` if `dest` exists.
///
/// The bytes go to a temporary file first, so `dest` never exists half-written.
pub(super) fn publish(dest: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        dest.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::hard_link(&tmp, dest)
    })();
    let _ = std::fs::remove_file(&tmp);
    written
}

pub(super) fn create_dir(dir: &Path) -> Result<(), KeyError> {
    std::fs::create_dir_all(dir).map_err(io("cannot create the key directory", dir))?;
    Ok(())
}

/// `evo keygen`: writes a new key pair into `dir`, refusing to replace either file.
pub fn write_new_pair(dir: &Path) -> Result<(SigningKey, KeyFiles), KeyError> {
    let files = KeyFiles::in_dir(dir);
    for path in [&files.private, &files.public] {
        if path.exists() {
            return Err(KeyError::Exists(path.clone()));
        }
    }
    create_dir(dir)?;
    let key = generate()?;
    let pem = private_pem(&key, &files.private)?;
    publish(&files.private, pem.as_bytes(), 0o600).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => KeyError::Exists(files.private.clone()),
        _ => KeyError::Io {
            context: "cannot write",
            path: files.private.clone(),
            source: e,
        },
    })?;
    write_public(&key, &files)?;
    Ok((key, files))
}

/// Writes the public key beside its private key, or checks the one already there.
pub(super) fn write_public(key: &SigningKey, files: &KeyFiles) -> Result<(), KeyError> {
    let pem = public_pem(&key.verifying_key());
    match publish(&files.public, pem.as_bytes(), 0o644) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if load_verifying_key(&files.public)? == key.verifying_key() {
                Ok(())
            } else {
                Err(KeyError::Mismatch {
                    public: files.public.clone(),
                    private: files.private.clone(),
                })
            }
        }
        Err(e) => Err(KeyError::Io {
            context: "cannot write",
            path: files.public.clone(),
            source: e,
        }),
    }
}

fn read_text(path: &Path) -> Result<String, KeyError> {
    std::fs::read_to_string(path).map_err(io("cannot read the key", path))
}

/// Loads a PKCS#8 PEM private key.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    SigningKey::from_pkcs8_pem(&read_text(path)?).map_err(|e| KeyError::Format {
        path: path.to_path_buf(),
        expected: "private",
        reason: e.to_string(),
    })
}

/// Loads a public key from an SPKI PEM file, or derives it from a PKCS#8 private key file.
pub fn load_verifying_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    let text = read_text(path)?;
    if text.contains("PRIVATE KEY") {
        return load_signing_key(path).map(|k| k.verifying_key());
    }
    VerifyingKey::from_public_key_pem(&text).map_err(|e| KeyError::Format {
        path: path.to_path_buf(),
        expected: "public",
        reason: e.to_string(),
    })
}

/// Refuses a key or key folder that lies in a git work tree or in one of `untrusted`; `origin`
/// says where evo was told to look (the error names it).
pub fn check_place(path: &Path, origin: &str, untrusted: &[Untrusted]) -> Result<(), KeyError> {
    check_outside(path, untrusted).map_err(|place| KeyError::InWorkTree {
        origin: origin.to_string(),
        place,
    })
}

/// Where `$EVO_KEY_DIR`, if set, says the key folder is, else the config folder
/// ([`default_dir`]), named as [`check_place`] wants it.
pub fn default_dir_origin() -> &'static str {
    match std::env::var_os(KEY_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(_) => "$EVO_KEY_DIR",
        None => "the default key folder",
    }
}

/// Where the per-user default key lives: `$EVO_KEY_DIR`, else `$XDG_CONFIG_HOME/evo`, else
/// `~/.config/evo`.
pub fn default_dir() -> Result<PathBuf, KeyError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(KEY_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(config) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(config).join("evo"));
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".config").join("evo"))
        .ok_or(KeyError::NoHome)
}

/// The key directories `evo receipt verify` searches when no key is named: `$EVO_KEY_DIR` alone
/// when set, else `$XDG_CONFIG_HOME/evo` and `~/.config/evo`. Only places the user controls: a
/// key found beside a receipt, or in the repository a candidate patches, would prove nothing.
pub fn known_key_dirs() -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(KEY_DIR_ENV) {
        return vec![PathBuf::from(dir)];
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    let xdg = var("XDG_CONFIG_HOME").map(|c| PathBuf::from(c).join("evo"));
    let home = var("HOME").map(|h| PathBuf::from(h).join(".config").join("evo"));
    for dir in [xdg, home].into_iter().flatten() {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// The file `--key` must name to verify what `private` signed, or `None` when verification finds
/// that key by itself. Its public key beside it is named when it is its pair (a reviewer needs
/// only that one), else the private key file, whose public half evo derives. A key found through
/// `$EVO_KEY_DIR` is always named: the shell the commands are pasted into may not have the
/// variable (`scripts/run-campaign` sets it for evo alone).
pub fn verify_flag_for(private: &Path) -> Option<PathBuf> {
    let shown = crate::path::normalized;
    let from_env = std::env::var_os(KEY_DIR_ENV).is_some_and(|v| !v.is_empty());
    let known = !from_env
        && known_key_dirs()
            .iter()
            .any(|dir| shown(&KeyFiles::in_dir(dir).private) == shown(private));
    if known {
        return None;
    }
    let public = private.with_file_name(PUBLIC_KEY_FILE);
    let pair = match (load_verifying_key(&public), load_verifying_key(private)) {
        (Ok(p), Ok(k)) => p == k,
        _ => false,
    };
    Some(if pair { public } else { private.to_path_buf() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_outside_the_key_directories_is_named_by_its_public_half_when_it_has_one() {
        let dir = tempfile::tempdir().unwrap();
        let (_, files) = write_new_pair(dir.path()).unwrap();
        assert_eq!(verify_flag_for(&files.private), Some(files.public.clone()));
        std::fs::remove_file(&files.public).unwrap();
        assert_eq!(verify_flag_for(&files.private), Some(files.private.clone()));
    }

    #[test]
    fn keygen_writes_a_private_key_only_its_owner_reads_and_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let (key, files) = write_new_pair(dir.path()).unwrap();
        let mode = std::fs::metadata(&files.private)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(load_signing_key(&files.private).unwrap(), key);
        assert_eq!(
            load_verifying_key(&files.public).unwrap(),
            key.verifying_key()
        );
        assert_eq!(
            load_verifying_key(&files.private).unwrap(),
            key.verifying_key()
        );
        assert!(
            std::fs::read_to_string(&files.public)
                .unwrap()
                .starts_with("-----BEGIN PUBLIC KEY-----\n")
        );
        match write_new_pair(dir.path()) {
            Err(KeyError::Exists(p)) => assert_eq!(p, files.private),
            other => panic!("overwrote: {other:?}"),
        }
        assert_eq!(load_signing_key(&files.private).unwrap(), key);
    }

    #[test]
    fn key_id_is_the_sha256_of_the_raw_public_key() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let raw = key.verifying_key().to_bytes();
        assert_eq!(
            key_id(&key.verifying_key()),
            format!("sha256:{}", hex::encode(Sha256::digest(raw)))
        );
    }
}
