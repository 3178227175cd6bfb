//! The run directory `receipts/<run-id>/`: where every log, output and result of one run goes.
//!
//! Layout: `candidate.patch`, `result.json`, `pr_body.md`, `logs/<tree>/<step>.{stdout,stderr}.log`,
//! `outputs/<tree>/<scenario>.check.out`, and `holdout_seal.key`, the secret the receipt's sealed
//! holdout fields are keyed with (mode 0600; never published, handed over only by the user).
//! Files are written whole through a temporary name and a rename, so an interrupted run never
//! leaves a half-written result.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::evidence::result::{StepName, TreeLabel};
use crate::receipt::SealKey;

/// An open run directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub id: String,
    pub path: PathBuf,
}

/// Keeps letters, digits, `-`, `_` and `.`; everything else becomes `-`.
fn slug(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(48)
        .collect();
    if s.is_empty() { "run".to_string() } else { s }
}

/// `20261129T192621Z-<label>-<sha7>`, from a UTC RFC 3339 timestamp.
pub fn run_id(now: std::time::SystemTime, label: &str, sha: &str) -> String {
    let stamp: String = humantime::format_rfc3339_seconds(now)
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("{stamp}-{}-{}", slug(label), &sha[..sha.len().min(7)])
}

impl RunDir {
    /// Creates `<output>/<id>` (adding `-2`, `-3`, ... if it exists) with its subfolders.
    pub fn create(output: &Path, id: &str) -> io::Result<RunDir> {
        std::fs::create_dir_all(output)?;
        for n in 1..1000 {
            let candidate_id = if n == 1 {
                id.to_string()
            } else {
                format!("{id}-{n}")
            };
            let path = output.join(&candidate_id);
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    std::fs::create_dir_all(path.join("logs"))?;
                    std::fs::create_dir_all(path.join("outputs"))?;
                    return Ok(RunDir {
                        id: candidate_id,
                        path,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("too many runs named {id} in {}", output.display()),
        ))
    }

    /// Log files of one step in one tree, as (stdout, stderr), created folders included.
    pub fn log_paths(&self, tree: TreeLabel, step: &StepName) -> io::Result<(PathBuf, PathBuf)> {
        let dir = self.path.join("logs").join(slug(&tree.to_string()));
        std::fs::create_dir_all(&dir)?;
        let base = slug(&step.to_string());
        Ok((
            dir.join(format!("{base}.stdout.log")),
            dir.join(format!("{base}.stderr.log")),
        ))
    }

    /// Where the check output of `scenario` in `tree` is kept.
    pub fn output_path(&self, tree: TreeLabel, scenario: &str) -> io::Result<PathBuf> {
        let dir = self.path.join("outputs").join(slug(&tree.to_string()));
        std::fs::create_dir_all(&dir)?;
        Ok(dir.join(format!("{}.check.out", slug(scenario))))
    }

    /// Where the timed runs of `scenario` in `tree` leave what they printed, for comparing the two
    /// runs of each pair (`outputs/<tree>/<scenario>.timed.out`, the last run's).
    pub fn timed_output_path(&self, tree: TreeLabel, scenario: &str) -> io::Result<PathBuf> {
        let dir = self.path.join("outputs").join(slug(&tree.to_string()));
        std::fs::create_dir_all(&dir)?;
        Ok(dir.join(format!("{}.timed.out", slug(scenario))))
    }

    /// `path` relative to the run directory, for records that must not hold absolute paths.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.path)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// The run's holdout seal key: the one its folder holds, else a fresh one, stored first
    /// (readable by its owner only) so a receipt is never sealed under a key that is then lost.
    pub fn seal_key(&self) -> io::Result<SealKey> {
        if let Some(key) = read_seal_key(&self.path)? {
            return Ok(key);
        }
        let key = SealKey::fresh()?;
        let path = self.path.join(SealKey::FILE);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
            })?;
        file.write_all(format!("{}\n", key.to_hex()).as_bytes())
            .and_then(|()| file.sync_all())?;
        Ok(key)
    }

    /// Writes `name` in the run directory atomically.
    pub fn write(&self, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
        let dest = self.path.join(name);
        let tmp = self.path.join(format!(".{name}.tmp"));
        let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, &dest));
        if let Err(e) = written {
            // A full disk must not leave a half-written file behind, not even under a temp name.
            let _ = std::fs::remove_file(&tmp);
            return Err(io::Error::new(
                e.kind(),
                format!("cannot write {}: {e}", dest.display()),
            ));
        }
        Ok(dest)
    }
}

/// The holdout seal key kept in the run folder `dir`; `None` when it holds none.
pub fn read_seal_key(dir: &Path) -> io::Result<Option<SealKey>> {
    let path = dir.join(SealKey::FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => SealKey::from_hex(&text).map(Some).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_sortable_and_safe() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let id = run_id(t, "my patch/../x", "0123456789abcdef");
        assert_eq!(id, "20270115T080000Z-my-patch-..-x-0123456");
    }

    #[test]
    fn a_taken_id_gets_a_suffix() {
        let out = tempfile::tempdir().unwrap();
        let a = RunDir::create(out.path(), "r").unwrap();
        let b = RunDir::create(out.path(), "r").unwrap();
        assert_eq!((a.id.as_str(), b.id.as_str()), ("r", "r-2"));
        assert!(b.path.join("logs").is_dir());
        let (o, e) = b
            .log_paths(TreeLabel::Baseline, &StepName::check("x:y z"))
            .unwrap();
        assert!(o.ends_with("logs/baseline/check-x-y-z.stdout.log"), "{o:?}");
        assert!(e.ends_with("check-x-y-z.stderr.log"));
        b.write("result.json", b"{}").unwrap();
        assert_eq!(std::fs::read(b.path.join("result.json")).unwrap(), b"{}");
    }

    #[test]
    fn the_seal_key_is_made_once_kept_private_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let out = tempfile::tempdir().unwrap();
        let dir = RunDir::create(out.path(), "r").unwrap();
        assert_eq!(read_seal_key(&dir.path).unwrap(), None);
        let key = dir.seal_key().unwrap();
        assert_eq!(
            dir.seal_key().unwrap(),
            key,
            "the second call reads the first key"
        );
        assert_eq!(read_seal_key(&dir.path).unwrap(), Some(key));
        let mode = std::fs::metadata(dir.path.join(SealKey::FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
