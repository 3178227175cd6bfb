//! The key that signs a confirmation's receipt, and where it came from: a private key file (the
//! campaign's `key`, or the per-user default, created on first use) or, in CI, the PEM text in
//! `$EVO_SIGNING_KEY`, which evo never writes anywhere.
//!
//! Where the key came from decides what evo tells the user: the file it signed with, or the key
//! id whose public key a reviewer needs, and what `evo receipt verify --key` must name.

use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::DecodePrivateKey;

use super::keys::{
    KeyError, KeyFiles, SIGNING_KEY_ENV, Untrusted, check_place, create_dir, default_dir,
    default_dir_origin, generate, key_id, load_signing_key, private_pem, publish, verify_flag_for,
    write_public,
};

/// Where the signing key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// A private key file: the campaign's `key`, or the per-user default.
    File(PathBuf),
    /// The PEM text in `$EVO_SIGNING_KEY`. `instead_of` is the campaign's key file, which the
    /// variable took precedence over.
    Env { instead_of: Option<PathBuf> },
}

/// What a reviewer passes to `evo receipt verify --key` for a receipt signed from a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyWith {
    /// Nothing: verification finds the key in the key directories by itself.
    Found,
    /// This file.
    File(PathBuf),
    /// The public key file of the key with this id, which evo cannot name (the private key came
    /// from `$EVO_SIGNING_KEY`).
    PublicKeyOf(String),
}

impl KeySource {
    /// Where [`Signer::for_campaign`] takes its key from, decided without reading any key:
    /// `$EVO_SIGNING_KEY` when it is set, else the campaign's key file when it names one, else
    /// the per-user default key. The variable wins because it is the choice of whoever runs evo
    /// (a CI job's secret), while the campaign file may come from the change being judged.
    ///
    /// A key file in a git work tree or in one of `untrusted` (the campaign's repository, evo's
    /// output and work folders) is refused, whichever of the two named it: a pull request can
    /// commit a `signing.key`, and evo would sign for whoever wrote it.
    pub fn for_campaign(
        key: Option<&Path>,
        untrusted: &[Untrusted],
    ) -> Result<KeySource, KeyError> {
        if std::env::var_os(SIGNING_KEY_ENV).is_some() {
            return Ok(KeySource::Env {
                instead_of: key.map(Path::to_path_buf),
            });
        }
        let (path, origin) = match key {
            Some(path) => (path.to_path_buf(), "the campaign's `key`"),
            None => (
                KeyFiles::in_dir(&default_dir()?).private,
                default_dir_origin(),
            ),
        };
        check_place(&path, origin, untrusted)?;
        Ok(KeySource::File(path))
    }

    /// The source as evo names it to the user.
    pub fn describe(&self) -> String {
        match self {
            KeySource::File(path) => crate::path::shown(path),
            KeySource::Env { instead_of: None } => format!("the key from ${SIGNING_KEY_ENV}"),
            KeySource::Env {
                instead_of: Some(file),
            } => format!(
                "the key from ${SIGNING_KEY_ENV}, which takes precedence over the campaign's key \
                 {}",
                crate::path::shown(file)
            ),
        }
    }

    /// What `--key` must name to verify what this source signed as `key_id`.
    pub fn verify_with(&self, key_id: &str) -> VerifyWith {
        match self {
            KeySource::File(private) => {
                verify_flag_for(private).map_or(VerifyWith::Found, VerifyWith::File)
            }
            KeySource::Env { .. } => VerifyWith::PublicKeyOf(key_id.to_string()),
        }
    }
}

/// A signing key ready for use, and where it came from (evo says so to the user).
#[derive(Debug, Clone)]
pub struct Signer {
    pub key: SigningKey,
    pub key_id: String,
    pub source: KeySource,
    /// The default key was created by this call.
    pub created: bool,
}

impl Signer {
    fn new(key: SigningKey, source: KeySource, created: bool) -> Signer {
        Signer {
            key_id: key_id(&key.verifying_key()),
            key,
            source,
            created,
        }
    }

    fn from_path(key: SigningKey, path: PathBuf, created: bool) -> Signer {
        Signer::new(key, KeySource::File(path), created)
    }

    /// The key the campaign names; it must exist (evo creates only the default key).
    pub fn from_file(path: &Path) -> Result<Signer, KeyError> {
        Ok(Signer::from_path(
            load_signing_key(path)?,
            path.to_path_buf(),
            false,
        ))
    }

    /// The key from [`KeySource::for_campaign`]: the variable's, the campaign's key file, or the
    /// per-user default key (created if needed); never one in a work tree (see
    /// [`KeySource::for_campaign`]).
    pub fn for_campaign(key: Option<&Path>, untrusted: &[Untrusted]) -> Result<Signer, KeyError> {
        match (KeySource::for_campaign(key, untrusted)?, key) {
            (KeySource::Env { .. }, _) => {
                let value = std::env::var_os(SIGNING_KEY_ENV).unwrap_or_default();
                Signer::from_env_value(&value, key)
            }
            (KeySource::File(path), Some(_)) => Signer::from_file(&path),
            (KeySource::File(_), None) => Signer::default_in(&default_dir()?),
        }
    }

    /// Loads the key [`Signer::for_campaign`] would use, unless that is the default key (which
    /// may not exist yet, so only its place is checked): a key that cannot be used is found
    /// before a campaign runs.
    pub fn check_configured(key: Option<&Path>, untrusted: &[Untrusted]) -> Result<(), KeyError> {
        KeySource::for_campaign(key, untrusted)?;
        if std::env::var_os(SIGNING_KEY_ENV).is_some() || key.is_some() {
            Signer::for_campaign(key, untrusted)?;
        }
        Ok(())
    }

    /// The key in the value of `$EVO_SIGNING_KEY`; `campaign_key` is the file it replaces. An
    /// error says what is wrong with the value without quoting any of it.
    pub fn from_env_value(
        value: &std::ffi::OsStr,
        campaign_key: Option<&Path>,
    ) -> Result<Signer, KeyError> {
        let bad = |reason: &str| KeyError::Env {
            reason: reason.to_string(),
        };
        let text = value
            .to_str()
            .ok_or_else(|| bad("it is not UTF-8 text"))?
            .trim();
        if text.is_empty() {
            return Err(bad(
                "it is set but empty (a CI secret this job cannot read, such as one withheld \
                 from a pull request from a fork?); set it to the text of a private key file \
                 (`evo keygen`), or unset it to sign with the campaign's or the default key",
            ));
        }
        if text.contains("PUBLIC KEY") {
            return Err(bad(
                "it holds a public key; it must hold the private key, the text of signing.key",
            ));
        }
        if !text.contains("-----BEGIN") {
            return Err(bad(
                "it must hold the PEM text of a private key (the content of a signing.key \
                 written by `evo keygen`, from -----BEGIN PRIVATE KEY----- to -----END PRIVATE \
                 KEY-----), not a path or a bare key",
            ));
        }
        // The decoder's messages name what is malformed (a label, base64, a length, the ASN.1
        // structure), never the bytes.
        // A secret pasted from Windows has CRLF line ends, which the PEM decoder refuses.
        let key =
            SigningKey::from_pkcs8_pem(&text.replace("\r\n", "\n")).map_err(|e| KeyError::Env {
                reason: format!("not a PKCS#8 Ed25519 private key in PEM ({e})"),
            })?;
        let source = KeySource::Env {
            instead_of: campaign_key.map(Path::to_path_buf),
        };
        Ok(Signer::new(key, source, false))
    }

    /// The per-user default key in `dir`, created (with its public key) if it does not exist.
    pub fn default_in(dir: &Path) -> Result<Signer, KeyError> {
        let files = KeyFiles::in_dir(dir);
        if files.private.exists() {
            let key = load_signing_key(&files.private)?;
            write_public(&key, &files)?;
            return Ok(Signer::from_path(key, files.private, false));
        }
        create_dir(dir)?;
        let key = generate()?;
        let pem = private_pem(&key, &files.private)?;
        match publish(&files.private, pem.as_bytes(), 0o600) {
            Ok(()) => {
                write_public(&key, &files)?;
                Ok(Signer::from_path(key, files.private, true))
            }
            // Another evo created it first: use that one.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let key = load_signing_key(&files.private)?;
                write_public(&key, &files)?;
                Ok(Signer::from_path(key, files.private, false))
            }
            Err(e) => Err(KeyError::Io {
                context: "cannot write",
                path: files.private,
                source: e,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::keys::{PRIVATE_KEY_FILE, PUBLIC_KEY_FILE, public_pem};

    #[test]
    fn the_default_key_is_created_once_and_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("nested/evo");
        let first = Signer::default_in(&keys).unwrap();
        assert!(first.created);
        let second = Signer::default_in(&keys).unwrap();
        assert!(!second.created);
        assert_eq!(first.key_id, second.key_id);
        assert_eq!(second.source, KeySource::File(keys.join(PRIVATE_KEY_FILE)));
    }

    #[test]
    fn a_stale_public_key_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        Signer::default_in(dir.path()).unwrap();
        let other = generate().unwrap();
        std::fs::write(
            dir.path().join(PUBLIC_KEY_FILE),
            public_pem(&other.verifying_key()),
        )
        .unwrap();
        assert!(matches!(
            Signer::default_in(dir.path()),
            Err(KeyError::Mismatch { .. })
        ));
    }

    fn pem_of(key: &SigningKey) -> String {
        private_pem(key, Path::new("test")).unwrap()
    }

    fn env_error(value: &std::ffi::OsStr) -> String {
        match Signer::from_env_value(value, None) {
            Err(e @ KeyError::Env { .. }) => e.to_string(),
            other => panic!("accepted or another error: {other:?}"),
        }
    }

    #[test]
    fn the_key_in_the_variable_signs_and_is_named_by_the_variable_not_a_path() {
        let key = generate().unwrap();
        let pem = pem_of(&key);
        let signer = Signer::from_env_value(pem.as_ref(), None).unwrap();
        assert_eq!(signer.key, key);
        assert_eq!(signer.key_id, key_id(&key.verifying_key()));
        assert_eq!(signer.source, KeySource::Env { instead_of: None });
        assert!(!signer.created);
        assert_eq!(signer.source.describe(), "the key from $EVO_SIGNING_KEY");
        assert_eq!(
            signer.source.verify_with(&signer.key_id),
            VerifyWith::PublicKeyOf(signer.key_id.clone())
        );
        // Surrounding blank lines and CRLF line ends, as secrets get pasted, are accepted.
        let pasted = format!("\n{}\n\n", pem.replace('\n', "\r\n"));
        let again = Signer::from_env_value(pasted.as_ref(), None).unwrap();
        assert_eq!(again.key, key);
    }

    #[test]
    fn the_variable_takes_precedence_over_the_campaign_key_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let (_, files) = crate::receipt::keys::write_new_pair(dir.path()).unwrap();
        let env_key = generate().unwrap();
        let signer =
            Signer::from_env_value(pem_of(&env_key).as_ref(), Some(files.private.as_path()))
                .unwrap();
        assert_eq!(signer.key, env_key);
        let said = signer.source.describe();
        assert!(
            said.contains("$EVO_SIGNING_KEY")
                && said.contains("precedence")
                && said.contains(&crate::path::shown(&files.private)),
            "{said}"
        );
    }

    #[test]
    fn a_malformed_variable_is_named_and_its_value_never_quoted() {
        let marker = "Zm9vYmFyc2VjcmV0bWFya2Vy";
        let cases: Vec<(std::ffi::OsString, &str)> = vec![
            ("".into(), "empty"),
            ("  \n ".into(), "empty"),
            (
                format!("/home/ci/{marker}/signing.key").into(),
                "not a path",
            ),
            (
                public_pem(&generate().unwrap().verifying_key()).into(),
                "public key",
            ),
            (
                format!("-----BEGIN PRIVATE KEY-----\n{marker}\n-----END PRIVATE KEY-----\n")
                    .into(),
                "PKCS#8",
            ),
            (
                format!(
                    "-----BEGIN RSA PRIVATE KEY-----\n{marker}==\n-----END RSA PRIVATE KEY-----\n"
                )
                .into(),
                "PKCS#8",
            ),
            (
                std::os::unix::ffi::OsStringExt::from_vec(vec![0x2d, 0xff, 0xfe]),
                "not UTF-8",
            ),
        ];
        for (value, why) in cases {
            let message = env_error(&value);
            assert!(message.contains("$EVO_SIGNING_KEY"), "{message}");
            assert!(message.contains(why), "{why}: {message}");
            assert!(!message.contains(marker), "the value was quoted: {message}");
        }
        // A real key with its body cut short: the message quotes no part of the body.
        let pem = pem_of(&generate().unwrap());
        let body = pem.lines().nth(1).unwrap();
        let cut = pem.replace(body, &body[..40]);
        let message = env_error(cut.as_ref());
        assert!(!message.contains(&body[..12]), "{message}");
    }
}
