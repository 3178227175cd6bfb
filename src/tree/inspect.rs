//! Read a candidate patch into a summary — which files it touches, how, and by how much — before
//! anything is written, so the safety checks and the receipt work from the same facts.
//!
//! libgit2 (`Diff::from_buffer`), the same parser that applies the patch first (`apply.rs`), so
//! what the safety checks judge is what libgit2 writes. When the `git` CLI applies it instead,
//! `apply.rs` first checks that `git apply` reads the same files.

use std::cell::{Cell, RefCell};

use git2::{Delta, Diff, DiffDelta, DiffFile, Patch};

use super::PatchError;

/// Largest patch evo reads (64 MiB); a candidate bigger than this is refused, not parsed.
pub const MAX_PATCH_BYTES: usize = 64 * 1024 * 1024;

/// File modes a patch may set; anything else is refused while reading it.
const KNOWN_MODES: [u32; 5] = [0o100644, 0o100664, 0o100755, 0o120000, 0o160000];

/// What a patch does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
    /// Only the mode changes (e.g. the executable bit), not the content.
    ModeChange,
}

/// A file mode as git records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileMode {
    /// No file on this side (added or deleted), or the patch does not say.
    Absent,
    Regular,
    Executable,
    Symlink,
    Submodule,
}

/// Whether the change is text or binary, and whether binary data is actually present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    Text,
    /// A `git diff --binary` literal or delta.
    Binary,
    /// Only "Binary files … differ": nothing to apply.
    BinaryWithoutData,
}

/// What a binary change declares it writes, read from its header (`literal N`, `delta N`)
/// without inflating anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinarySize {
    /// A whole new file of this many bytes.
    Literal(u64),
    /// A delta against the old file, itself this many bytes once inflated.
    Delta(u64),
}

/// One hunk's `@@ -a,b +c,d @@` header and where it starts in the old file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub header: String,
    pub old_start: u32,
}

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Path before the change; `None` for an added file.
    pub old_path: Option<String>,
    /// Path after the change; `None` for a deleted file.
    pub new_path: Option<String>,
    pub kind: ChangeKind,
    pub content: Content,
    pub old_mode: FileMode,
    pub new_mode: FileMode,
    pub added_lines: usize,
    pub removed_lines: usize,
    pub hunks: Vec<Hunk>,
    /// For a file that is a symlink after the patch: the target the patch writes, if it shows one.
    pub symlink_target: Option<String>,
    /// Bytes of the added lines of a text change.
    pub added_bytes: u64,
    /// What a binary change with data declares it writes.
    pub binary_size: Option<BinarySize>,
}

impl FileChange {
    /// The path to name in messages: the new one, or the old one for a deletion.
    pub fn display_path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }

    /// Old and new path, each once.
    pub fn paths(&self) -> Vec<&str> {
        let mut paths: Vec<&str> = self.old_path.iter().map(String::as_str).collect();
        if let Some(new) = self.new_path.as_deref().filter(|new| !paths.contains(new)) {
            paths.push(new);
        }
        paths
    }
}

/// Every file of a patch, with totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchSummary {
    pub files: Vec<FileChange>,
    /// Every path as the patch's `---`, `+++`, `rename`/`copy` lines write it (minus `a/`, `b/`):
    /// libgit2 normalizes some paths (`b//etc/x` becomes `etc/x`), and `git apply` may read them
    /// differently, so the safety checks look at both.
    pub header_paths: Vec<String>,
    pub added_lines: usize,
    pub removed_lines: usize,
}

/// A patch file as read by [`read_patch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchFile {
    Bytes(Vec<u8>),
    /// Over [`MAX_PATCH_BYTES`]: refused, not read. The size in bytes.
    TooLarge(u64),
}

/// Reads a patch file, refusing one over [`MAX_PATCH_BYTES`] from its size alone: a hostile
/// gigabyte patch is never read into memory or copied.
pub fn read_patch(path: &std::path::Path) -> std::io::Result<PatchFile> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let cap = MAX_PATCH_BYTES as u64;
    if size > cap {
        return Ok(PatchFile::TooLarge(size));
    }
    // The size may change while reading (a file still being written): never read past the cap.
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Ok(PatchFile::TooLarge(bytes.len() as u64));
    }
    Ok(PatchFile::Bytes(bytes))
}

/// What evo says about a patch over the cap.
pub fn too_large_message(path: &std::path::Path, size: u64) -> String {
    format!(
        "the patch {} is {size} bytes, over evo's {} MiB cap for a patch: refused without reading it",
        path.display(),
        MAX_PATCH_BYTES / (1024 * 1024)
    )
}

/// Parse a `git diff` patch. Refuses an empty patch, one over [`MAX_PATCH_BYTES`], one with no
/// file changes, one with a file mode git does not use, and one with a non-UTF-8 path.
pub fn inspect_patch(bytes: &[u8]) -> Result<PatchSummary, PatchError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(PatchError::Empty);
    }
    if bytes.len() > MAX_PATCH_BYTES {
        return Err(PatchError::TooLarge {
            size: bytes.len(),
            cap: MAX_PATCH_BYTES,
        });
    }
    check_modes(bytes)?;
    let diff = Diff::from_buffer(bytes).map_err(|e| PatchError::Unparsable {
        detail: e.message().to_string(),
    })?;
    if diff.deltas().len() == 0 {
        return Err(PatchError::NoFiles);
    }
    let binary_data = binary_payloads(&diff)?;
    let mut files = Vec::with_capacity(binary_data.len());
    for (index, payload) in binary_data.into_iter().enumerate() {
        files.push(file_change(&diff, index, payload)?);
    }
    Ok(PatchSummary {
        header_paths: header_paths(bytes),
        added_lines: files.iter().map(|f| f.added_lines).sum(),
        removed_lines: files.iter().map(|f| f.removed_lines).sum(),
        files,
    })
}

/// git2 panics on a mode it does not know, so unknown modes are refused before parsing.
fn check_modes(bytes: &[u8]) -> Result<(), PatchError> {
    const MODE_LINES: [&str; 4] = [
        "old mode ",
        "new mode ",
        "new file mode ",
        "deleted file mode ",
    ];
    for (number, line) in header_lines(bytes) {
        let mode_text = if let Some(rest) = line.strip_prefix("index ") {
            rest.split_whitespace().nth(1)
        } else {
            MODE_LINES
                .iter()
                .find_map(|prefix| line.strip_prefix(prefix))
                .map(str::trim)
        };
        let Some(mode) = mode_text.and_then(|text| u32::from_str_radix(text, 8).ok()) else {
            continue;
        };
        if !KNOWN_MODES.contains(&mode) {
            return Err(PatchError::UnsupportedMode { mode, line: number });
        }
    }
    Ok(())
}

/// The lines of each file's header (from `diff --git` to its first hunk or binary data), with
/// their 1-based numbers: hunk lines such as `--- x` (a removed `-- x`) are not headers.
fn header_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, String)> + '_ {
    let mut in_header = false;
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter_map(move |(index, line)| {
            let line = String::from_utf8_lossy(line).into_owned();
            if line.starts_with("diff --git ") {
                in_header = true;
            } else if line.starts_with("@@ ")
                || line.starts_with("GIT binary patch")
                || line.starts_with("Binary files ")
            {
                in_header = false;
            }
            in_header.then_some((index + 1, line))
        })
}

fn header_paths(bytes: &[u8]) -> Vec<String> {
    const PATH_LINES: [&str; 6] = [
        "--- ",
        "+++ ",
        "rename from ",
        "rename to ",
        "copy from ",
        "copy to ",
    ];
    let mut paths: Vec<String> = Vec::new();
    for (_, line) in header_lines(bytes) {
        let Some(rest) = PATH_LINES.iter().find_map(|p| line.strip_prefix(p)) else {
            continue;
        };
        let rest = rest.trim_end_matches(['\r', '\t']).trim_matches('"');
        let rest = if line.starts_with("---") || line.starts_with("+++") {
            let path = rest.split('\t').next().unwrap_or(rest);
            path.strip_prefix("a/")
                .or(path.strip_prefix("b/"))
                .unwrap_or(path)
        } else {
            rest
        };
        if rest != "/dev/null" && !paths.iter().any(|p| p == rest) {
            paths.push(rest.to_string());
        }
    }
    paths
}

/// What [`binary_payloads`] found for one delta.
#[derive(Debug, Clone, Copy)]
enum Payload {
    Text,
    Binary(Option<BinarySize>),
}

/// For each delta, in order: text, or binary with what its new side declares (`None`: no data).
fn binary_payloads(diff: &Diff<'_>) -> Result<Vec<Payload>, PatchError> {
    let seen = RefCell::new(Vec::new());
    let current = Cell::new(0usize);
    let mut on_file = |_: DiffDelta<'_>, _: f32| {
        current.set(seen.borrow().len());
        seen.borrow_mut().push(Payload::Text);
        true
    };
    let mut on_binary = |_: DiffDelta<'_>, binary: git2::DiffBinary<'_>| {
        if let Some(slot) = seen.borrow_mut().get_mut(current.get()) {
            let new = binary.new_file();
            let len = new.inflated_len() as u64;
            *slot = Payload::Binary(binary.contains_data().then_some(match new.kind() {
                git2::DiffBinaryKind::Delta => BinarySize::Delta(len),
                _ => BinarySize::Literal(len),
            }));
        }
        true
    };
    diff.foreach(&mut on_file, Some(&mut on_binary), None, None)
        .map_err(|e| PatchError::Unparsable {
            detail: e.message().to_string(),
        })?;
    Ok(seen.into_inner())
}

fn file_change(diff: &Diff<'_>, index: usize, payload: Payload) -> Result<FileChange, PatchError> {
    let unparsable = |e: git2::Error| PatchError::Unparsable {
        detail: e.message().to_string(),
    };
    let patch = Patch::from_diff(diff, index)
        .map_err(unparsable)?
        .ok_or(PatchError::NoFiles)?;
    let delta = patch.delta();
    let (_, added_lines, removed_lines) = patch.line_stats().map_err(unparsable)?;
    let (old_mode, new_mode) = (mode(&delta.old_file()), mode(&delta.new_file()));
    let (content, binary_size) = match payload {
        Payload::Text if !delta.flags().is_binary() => (Content::Text, None),
        Payload::Binary(None) => (Content::BinaryWithoutData, None),
        Payload::Binary(size) => (Content::Binary, size),
        Payload::Text => (Content::Binary, None),
    };
    let kind = change_kind(&delta, old_mode, new_mode, patch.num_hunks(), content);
    let old_path = (kind != ChangeKind::Added)
        .then(|| path(&delta.old_file()))
        .transpose()?;
    let new_path = (kind != ChangeKind::Deleted)
        .then(|| path(&delta.new_file()))
        .transpose()?;
    let symlink_target = (new_mode == FileMode::Symlink)
        .then(|| added_text(&patch))
        .transpose()
        .map_err(unparsable)?
        .flatten();
    Ok(FileChange {
        old_path,
        new_path,
        kind,
        content,
        old_mode,
        new_mode,
        added_lines,
        removed_lines,
        hunks: hunks(&patch).map_err(unparsable)?,
        symlink_target,
        added_bytes: added_bytes(&patch).map_err(unparsable)?,
        binary_size,
    })
}

fn change_kind(
    delta: &DiffDelta<'_>,
    old_mode: FileMode,
    new_mode: FileMode,
    hunks: usize,
    content: Content,
) -> ChangeKind {
    match delta.status() {
        Delta::Added => ChangeKind::Added,
        Delta::Deleted => ChangeKind::Deleted,
        Delta::Renamed => ChangeKind::Renamed,
        Delta::Copied => ChangeKind::Copied,
        _ if old_mode != new_mode && hunks == 0 && content == Content::Text => {
            ChangeKind::ModeChange
        }
        _ => ChangeKind::Modified,
    }
}

fn mode(file: &DiffFile<'_>) -> FileMode {
    match file.mode() {
        git2::FileMode::Blob | git2::FileMode::BlobGroupWritable => FileMode::Regular,
        git2::FileMode::BlobExecutable => FileMode::Executable,
        git2::FileMode::Link => FileMode::Symlink,
        git2::FileMode::Commit => FileMode::Submodule,
        // `check_modes` refused a tree mode; 0 means no file on this side.
        git2::FileMode::Unreadable | git2::FileMode::Tree => FileMode::Absent,
    }
}

fn path(file: &DiffFile<'_>) -> Result<String, PatchError> {
    let bytes = file.path_bytes().unwrap_or_default();
    String::from_utf8(bytes.to_vec()).map_err(|_| PatchError::Unparsable {
        detail: format!(
            "the path `{}` is not UTF-8",
            super::safety::shown_path_bytes(bytes)
        ),
    })
}

fn hunks(patch: &Patch<'_>) -> Result<Vec<Hunk>, git2::Error> {
    (0..patch.num_hunks())
        .map(|index| {
            let (hunk, _) = patch.hunk(index)?;
            Ok(Hunk {
                header: String::from_utf8_lossy(hunk.header())
                    .trim_end()
                    .to_string(),
                old_start: hunk.old_start(),
            })
        })
        .collect()
}

/// Bytes of the added lines of one file's patch.
fn added_bytes(patch: &Patch<'_>) -> Result<u64, git2::Error> {
    let mut total = 0u64;
    for hunk in 0..patch.num_hunks() {
        for line in 0..patch.num_lines_in_hunk(hunk)? {
            let line = patch.line_in_hunk(hunk, line)?;
            if line.origin() == '+' {
                total += line.content().len() as u64;
            }
        }
    }
    Ok(total)
}

/// The added lines of a patch, joined: for a symlink, its target.
fn added_text(patch: &Patch<'_>) -> Result<Option<String>, git2::Error> {
    let mut text = Vec::new();
    for hunk in 0..patch.num_hunks() {
        for line in 0..patch.num_lines_in_hunk(hunk)? {
            let line = patch.line_in_hunk(hunk, line)?;
            if line.origin() == '+' {
                text.extend_from_slice(line.content());
            }
        }
    }
    if text.is_empty() {
        return Ok(None);
    }
    while text.last() == Some(&b'\n') {
        text.pop();
    }
    Ok(Some(String::from_utf8_lossy(&text).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_over_the_cap_is_refused_from_its_size_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.patch");
        // Sparse: a gigabyte that takes no disk and must take no memory either.
        std::fs::File::create(&path)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        assert_eq!(read_patch(&path).unwrap(), PatchFile::TooLarge(1 << 30));
        let message = too_large_message(&path, 1 << 30);
        assert!(message.contains("1073741824 bytes"), "{message}");
        assert!(message.contains("64 MiB"), "{message}");
        std::fs::write(&path, b"diff --git a/x b/x\n").unwrap();
        assert_eq!(
            read_patch(&path).unwrap(),
            PatchFile::Bytes(b"diff --git a/x b/x\n".to_vec())
        );
    }
}
