//! The public keys `evo receipt verify` and `evo pr render` trust: an explicit list, never a key
//! that came with the thing under review.
//!
//! Either every `--key FILE` the user named, or, when none is named, the key folder
//! (`$EVO_KEY_DIR` when set, else `$XDG_CONFIG_HOME/evo` and `~/.config/evo`) and the public half
//! of `$EVO_SIGNING_KEY` (a CI job checking the receipt it just signed). Any of them inside a git
//! work tree is refused (`trust`): `$EVO_KEY_DIR` or a `--key` there is an error, a config folder
//! there (a home kept in git) is skipped with a warning. Verification says which entry matched.

use std::path::{Path, PathBuf};

use ed25519_dalek::VerifyingKey;

use super::keys::{
    self, KEY_DIR_ENV, KeyError, KeyFiles, SIGNING_KEY_ENV, key_id, known_key_dirs,
    load_verifying_key,
};

/// One key verification may check a receipt against, and the entry of the list it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustedKey {
    pub key: VerifyingKey,
    /// The file, or "the public half of $EVO_SIGNING_KEY".
    pub entry: String,
}

/// The trusted keys, where evo looked, and what it skipped (said as warnings).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trusted {
    pub keys: Vec<TrustedKey>,
    pub looked: Vec<String>,
    pub skipped: Vec<String>,
}

impl Trusted {
    /// The key with an id in `wanted` (the ids the receipt names).
    pub fn matching(&self, wanted: &[String]) -> Option<&TrustedKey> {
        self.keys.iter().find(|k| wanted.contains(&key_id(&k.key)))
    }
}

fn file_entry(path: &Path) -> Result<TrustedKey, KeyError> {
    Ok(TrustedKey {
        key: load_verifying_key(path)?,
        entry: crate::path::shown(path),
    })
}

/// The keys named with `--key`, each refused when it lies in a git work tree.
pub fn from_flags(files: &[PathBuf]) -> Result<Trusted, KeyError> {
    let mut trusted = Trusted::default();
    for file in files {
        keys::check_place(file, "--key", &[])?;
        trusted.keys.push(file_entry(file)?);
        trusted.looked.push(crate::path::shown(file));
    }
    Ok(trusted)
}

/// The key in one key folder: its public key, else its private key's public half.
fn in_dir(dir: &Path) -> Result<Option<TrustedKey>, KeyError> {
    let files = KeyFiles::in_dir(dir);
    let path = match (files.public.exists(), files.private.exists()) {
        (true, _) => files.public,
        (false, true) => files.private,
        (false, false) => return Ok(None),
    };
    file_entry(&path).map(Some)
}

/// The keys evo trusts when none is named: the key folders and the public half of
/// `$EVO_SIGNING_KEY`. `$EVO_KEY_DIR` in a work tree is an error; a config folder in one is
/// skipped, and said.
pub fn defaults() -> Result<Trusted, KeyError> {
    let mut trusted = Trusted::default();
    let from_env = std::env::var_os(KEY_DIR_ENV).is_some_and(|v| !v.is_empty());
    for dir in known_key_dirs() {
        if let Err(e) = keys::check_place(&dir, "$EVO_KEY_DIR", &[]) {
            if from_env {
                return Err(e);
            }
            trusted.skipped.push(match e {
                KeyError::InWorkTree { place, .. } => format!("not trusting keys in {place}"),
                other => other.to_string(),
            });
            continue;
        }
        trusted.looked.push(crate::path::shown(&dir));
        trusted.keys.extend(in_dir(&dir)?);
    }
    if let Some(value) = std::env::var_os(SIGNING_KEY_ENV) {
        trusted.looked.push(format!("${SIGNING_KEY_ENV}"));
        match keys::Signer::from_env_value(&value, None) {
            Ok(signer) => trusted.keys.push(TrustedKey {
                key: signer.key.verifying_key(),
                entry: format!("the public half of ${SIGNING_KEY_ENV}"),
            }),
            Err(e) => trusted
                .skipped
                .push(format!("not trusting ${SIGNING_KEY_ENV}: {e}")),
        }
    }
    if trusted.looked.is_empty() && trusted.skipped.is_empty() {
        return Err(KeyError::NoHome);
    }
    Ok(trusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_named_inside_a_work_tree_is_refused_and_one_outside_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let (_, inside) = keys::write_new_pair(&repo.join(".evo/keys")).unwrap();
        match from_flags(std::slice::from_ref(&inside.public)) {
            Err(KeyError::InWorkTree { origin, .. }) => assert_eq!(origin, "--key"),
            other => panic!("trusted a key in a work tree: {other:?}"),
        }
        let (key, outside) = keys::write_new_pair(&dir.path().join("keys")).unwrap();
        let trusted = from_flags(std::slice::from_ref(&outside.public)).unwrap();
        let wanted = [key_id(&key.verifying_key())];
        let found = trusted.matching(&wanted).unwrap();
        assert_eq!(found.entry, crate::path::shown(&outside.public));
    }
}
