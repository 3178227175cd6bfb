//! How much disk a tree takes: a build runs the candidate's code, which can fill the disk its
//! tree is on (a 2 GiB file from a small patch), and the file size limit bounds one file only.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The bytes of disk the files under `root` take (allocated blocks, so a sparse file counts what
/// it really uses); links are not followed, and what cannot be read counts nothing.
pub fn disk_usage(root: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut total = 0u64;
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        total = total.saturating_add(meta.blocks().saturating_mul(512));
        if meta.is_dir() {
            total = total.saturating_add(disk_usage(&entry.path()));
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_counts_its_files_below_folders_and_not_through_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/f"), vec![1u8; 1 << 20]).unwrap();
        std::os::unix::fs::symlink("/usr", dir.path().join("usr")).unwrap();
        let used = disk_usage(dir.path());
        assert!((1 << 20..4 << 20).contains(&used), "{used}");
    }
}
