//! The applied size of a patch: how many bytes it would write into the tree, bounded like the
//! patch's own bytes (`confirm.max_applied_bytes`), so a small patch that inflates to gigabytes
//! (a compressed binary literal, a delta that repeats its source, a copy of a large file) is
//! refused before anything is applied or built (docs/design.md §2.2.3).
//!
//! Nothing is inflated to find out: a binary literal declares its size (`literal N`, which libgit2
//! checks when it applies it); a delta declares only its own inflated size `D`, and each of its at
//! most `D` instructions inserts at most 127 bytes or copies at most the whole old file (and at
//! most 16 MiB), so `D × max(min(old size, 16 MiB), 127)` bounds what it writes; a text change
//! writes its added lines; a copy writes the old file again.

use std::fs;
use std::io;

use super::{BinarySize, ChangeKind, Content, FileChange, PatchError, PatchSummary, Tree};

/// The default `confirm.max_applied_bytes`: 64 MiB, the cap on a patch's own bytes.
pub const DEFAULT_MAX_APPLIED_BYTES: u64 = 64 * 1024 * 1024;

/// The largest copy one delta instruction can make (a 3-byte size field).
const MAX_DELTA_COPY: u64 = 0xff_ffff;

/// The most bytes one delta insert instruction writes.
const MAX_DELTA_INSERT: u64 = 127;

/// What a patch would write into the tree, at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedSize {
    pub bytes: u64,
    /// The file that writes the most, and how much.
    pub largest: Option<(String, u64)>,
}

/// The bytes each file of `summary` would write into `tree` (as it is before the patch), summed.
pub fn applied_size(summary: &PatchSummary, tree: &Tree) -> Result<AppliedSize, PatchError> {
    let mut size = AppliedSize {
        bytes: 0,
        largest: None,
    };
    for file in &summary.files {
        let bytes = file_bytes(file, tree)?;
        size.bytes = size.bytes.saturating_add(bytes);
        if size.largest.as_ref().is_none_or(|(_, most)| bytes > *most) {
            size.largest = Some((file.display_path().to_string(), bytes));
        }
    }
    Ok(size)
}

/// Refuses `summary` when it would write more than `cap` bytes into `tree`; else its size.
pub fn check_applied_size(
    summary: &PatchSummary,
    tree: &Tree,
    cap: u64,
) -> Result<u64, PatchError> {
    let size = applied_size(summary, tree)?;
    if size.bytes <= cap {
        return Ok(size.bytes);
    }
    let (file, file_bytes) = size.largest.unwrap_or_default();
    Err(PatchError::AppliedTooLarge {
        bytes: size.bytes,
        cap,
        file: super::safety::shown_path(&file),
        file_bytes,
    })
}

fn file_bytes(file: &FileChange, tree: &Tree) -> Result<u64, PatchError> {
    if file.kind == ChangeKind::Deleted {
        return Ok(0);
    }
    let old_size = || old_file_size(file, tree);
    Ok(match (file.content, file.binary_size) {
        (Content::Binary, Some(BinarySize::Literal(n))) => n,
        (Content::Binary, Some(BinarySize::Delta(d))) => {
            let per_instruction = old_size()?.clamp(MAX_DELTA_INSERT, MAX_DELTA_COPY);
            d.saturating_mul(per_instruction)
        }
        (Content::Binary | Content::BinaryWithoutData, _) => 0,
        (Content::Text, _) if file.kind == ChangeKind::Copied => {
            old_size()?.saturating_add(file.added_bytes)
        }
        (Content::Text, _) => file.added_bytes,
    })
}

/// The size of the file's old path in the tree (not following a symlink); 0 when there is none.
fn old_file_size(file: &FileChange, tree: &Tree) -> Result<u64, PatchError> {
    let Some(old) = file.old_path.as_deref() else {
        return Ok(0);
    };
    let path = tree.root.join(old);
    match fs::symlink_metadata(&path) {
        Ok(meta) => Ok(meta.len()),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(0)
        }
        Err(source) => Err(PatchError::Io {
            action: "inspect",
            path,
            source,
        }),
    }
}
