//! A content digest of a whole folder: what a confirmation's `sandbox.read_only` inputs were, so
//! a reviewer can tell which data and runtime the runs read (docs/design.md §2.2.1).
//!
//! The digest covers every entry below the folder, never following a link: its path from the
//! folder, its kind, its permission bits and its content (a file's sha256, a link's target). It
//! is the same on any machine for the same files, whatever their order on disk or their times.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The digest of one folder and what it counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderDigest {
    /// `sha256:` of the listing (see [`digest_folder`]).
    pub sha256: String,
    /// Regular files below the folder.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// One line of the listing per entry below `root`, sorted by path (bytes, `/`-separated), each
/// `KIND MODE CONTENT PATH` and a NUL: `KIND` is `file`, `dir`, `link` or `other` (a device,
/// FIFO or socket), `MODE` the permission bits in octal (four digits), `CONTENT` a file's hex
/// sha256, a link's target's, `-` otherwise. The digest is the sha256 of the listing.
pub fn digest_folder(root: &Path) -> std::io::Result<FolderDigest> {
    let mut entries = Vec::new();
    collect(root, PathBuf::new(), &mut entries)?;
    entries.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
    let mut listing = Sha256::new();
    let (mut files, mut bytes) = (0u64, 0u64);
    for rel in &entries {
        let path = root.join(rel);
        let meta = std::fs::symlink_metadata(&path)?;
        let kind = meta.file_type();
        let (name, content) = if kind.is_symlink() {
            let target = std::fs::read_link(&path)?;
            (
                "link",
                hex::encode(Sha256::digest(target.as_os_str().as_bytes())),
            )
        } else if kind.is_file() {
            files += 1;
            bytes += meta.len();
            ("file", file_sha256(&path)?)
        } else if kind.is_dir() {
            ("dir", "-".to_string())
        } else {
            ("other", "-".to_string())
        };
        listing.update(format!(
            "{name} {:04o} {content} ",
            meta.permissions().mode() & 0o7777
        ));
        listing.update(rel.as_os_str().as_bytes());
        listing.update([0u8]);
    }
    Ok(FolderDigest {
        sha256: format!("sha256:{}", hex::encode(listing.finalize())),
        files,
        bytes,
    })
}

/// The hex sha256 of every regular file below `root` (links not followed) but its top-level
/// `.git`, each once: what a tree's files hold, whatever their names (the sanitizer lane's
/// compilers tell the baseline's own code from any other by it, `pipeline::compilers`).
pub fn file_hashes(root: &Path) -> std::io::Result<std::collections::BTreeSet<String>> {
    let mut entries = Vec::new();
    collect(root, PathBuf::new(), &mut entries)?;
    let mut hashes = std::collections::BTreeSet::new();
    for rel in entries.iter().filter(|rel| !rel.starts_with(".git")) {
        let path = root.join(rel);
        if std::fs::symlink_metadata(&path)?.file_type().is_file() {
            hashes.insert(file_sha256(&path)?);
        }
    }
    Ok(hashes)
}

fn collect(root: &Path, rel: PathBuf, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root.join(&rel))? {
        let entry = entry?;
        let child = rel.join(entry.file_name());
        // `file_type` does not follow links: a link to a folder is an entry, not a folder.
        let is_dir = entry.file_type()?.is_dir();
        out.push(child.clone());
        if is_dir {
            collect(root, child, out)?;
        }
    }
    Ok(())
}

fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("data/sub")).unwrap();
        fs::write(dir.path().join("data/a.bin"), b"alpha").unwrap();
        fs::write(dir.path().join("data/sub/b.txt"), b"beta").unwrap();
        std::os::unix::fs::symlink("a.bin", dir.path().join("data/link")).unwrap();
        dir
    }

    #[test]
    fn file_hashes_name_contents_once_whatever_the_names_and_leave_out_git() {
        let dir = folder();
        let root = dir.path().join("data");
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join(".git/HEAD"), b"ref").unwrap();
        fs::write(root.join("copy.bin"), b"alpha").unwrap();
        let hashes = file_hashes(&root).unwrap();
        let sha = |b: &[u8]| hex::encode(Sha256::digest(b));
        let expected: std::collections::BTreeSet<String> =
            [sha(b"alpha"), sha(b"beta")].into_iter().collect();
        assert_eq!(hashes, expected);
    }

    #[test]
    fn the_same_files_give_the_same_digest_and_any_change_another() {
        let one = folder();
        let two = folder();
        let d = digest_folder(&one.path().join("data")).unwrap();
        assert_eq!(d, digest_folder(&two.path().join("data")).unwrap());
        assert_eq!((d.files, d.bytes), (2, 9));
        assert!(
            d.sha256.starts_with("sha256:") && d.sha256.len() == 71,
            "{d:?}"
        );

        let root = two.path().join("data");
        let changed = |what: &str| {
            let got = digest_folder(&root).unwrap();
            assert_ne!(got.sha256, d.sha256, "{what} did not change the digest");
        };
        fs::write(root.join("sub/b.txt"), b"betA").unwrap();
        changed("content");
        fs::write(root.join("sub/b.txt"), b"beta").unwrap();
        assert_eq!(digest_folder(&root).unwrap(), d);
        fs::set_permissions(root.join("a.bin"), fs::Permissions::from_mode(0o755)).unwrap();
        changed("a mode");
        fs::set_permissions(root.join("a.bin"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::rename(root.join("sub/b.txt"), root.join("sub/c.txt")).unwrap();
        changed("a name");
        fs::rename(root.join("sub/c.txt"), root.join("sub/b.txt")).unwrap();
        fs::remove_file(root.join("link")).unwrap();
        std::os::unix::fs::symlink("sub/b.txt", root.join("link")).unwrap();
        changed("a link's target");
    }

    #[test]
    fn a_link_to_a_folder_is_not_followed() {
        let dir = folder();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, dir.path().join("data/out")).unwrap();
        let before = digest_folder(&dir.path().join("data")).unwrap();
        fs::write(outside.join("big"), vec![0u8; 1000]).unwrap();
        assert_eq!(digest_folder(&dir.path().join("data")).unwrap(), before);
    }
}
