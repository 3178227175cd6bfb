//! Apply a candidate patch to a tree: libgit2 first, the `git` command line when libgit2 gives up
//! (it does not shift a hunk whose line numbers are off; `git apply` does). The receipt records
//! which one applied the patch. Both are all-or-nothing, so a patch that fails leaves the tree as
//! it was, and the error names the file and the `@@ … @@` hunk that did not apply.
//!
//! Both ways are kept on purpose. libgit2 alone would refuse patches people make by hand against a
//! slightly different base, which `git apply` takes; `git apply` alone would read the patch with
//! another parser than the one the safety checks used (`inspect.rs`). So libgit2 goes first,
//! `git apply` only after it refused, and only once `git apply --numstat` reads the same files;
//! `git apply --check -v` also names the failing hunk better. The receipt's `applier` says which.

use std::cell::RefCell;
use std::ffi::OsStr;
use std::io::Write;

use git2::{ApplyLocation, ApplyOptions, Diff, Repository};

use super::gitcli::run_git;
use super::{Content, PatchError, PatchSummary, Tree, inspect_patch};

/// Which program applied a patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applier {
    Libgit2,
    GitCli,
}

/// A patch that applied, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub applier: Applier,
    /// Why the fallback was used and what `git apply` reported (e.g. "offset 3 lines").
    pub note: Option<String>,
}

/// Where libgit2 stopped, from its apply callbacks.
#[derive(Debug, Default)]
struct Libgit2Failure {
    message: String,
    file: Option<String>,
    hunk: Option<String>,
}

/// Apply `bytes` (a `git diff`, `--binary` for binary files) to the work tree of `tree`.
pub fn apply_patch(tree: &Tree, bytes: &[u8]) -> Result<Applied, PatchError> {
    let summary = inspect_patch(bytes)?;
    let no_data = summary
        .files
        .iter()
        .find(|file| file.content == Content::BinaryWithoutData);
    if let Some(file) = no_data {
        return Err(PatchError::BinaryWithoutData {
            file: file.display_path().to_string(),
        });
    }
    match apply_libgit2(tree, bytes)? {
        None => Ok(Applied {
            applier: Applier::Libgit2,
            note: None,
        }),
        Some(failure) => apply_git_cli(tree, bytes, &summary, &failure),
    }
}

/// `Ok(None)` when applied; `Ok(Some(..))` when libgit2 refused the patch (the tree unchanged).
fn apply_libgit2(tree: &Tree, bytes: &[u8]) -> Result<Option<Libgit2Failure>, PatchError> {
    let git_err = |action| {
        move |source| PatchError::Git {
            action,
            path: tree.root.clone(),
            source,
        }
    };
    let repo = Repository::open(&tree.root).map_err(git_err("open the tree's repository"))?;
    let diff = Diff::from_buffer(bytes).map_err(|e| PatchError::Unparsable {
        detail: e.message().to_string(),
    })?;
    let file = RefCell::new(None);
    let hunk = RefCell::new(None);
    let mut options = ApplyOptions::new();
    options.delta_callback(|delta| {
        let path = delta.and_then(|d| d.new_file().path().or(d.old_file().path()).map(Into::into));
        *file.borrow_mut() = path.map(|p: std::path::PathBuf| p.to_string_lossy().into_owned());
        *hunk.borrow_mut() = None;
        true
    });
    options.hunk_callback(|h| {
        let header = h.map(|h| String::from_utf8_lossy(h.header()).trim_end().to_string());
        *hunk.borrow_mut() = header;
        true
    });
    let result = repo.apply(&diff, ApplyLocation::WorkDir, Some(&mut options));
    drop(options);
    match result {
        Ok(()) => Ok(None),
        Err(e) => Ok(Some(Libgit2Failure {
            message: e.message().to_string(),
            file: file.into_inner(),
            hunk: hunk.into_inner(),
        })),
    }
}

/// `git apply --check` first, so a failing patch touches nothing; then the real run.
fn apply_git_cli(
    tree: &Tree,
    bytes: &[u8],
    summary: &PatchSummary,
    libgit2: &Libgit2Failure,
) -> Result<Applied, PatchError> {
    let patch_file = write_temp_patch(bytes)?;
    let patch = patch_file.path().as_os_str();
    same_files_as_git(tree, patch, summary)?;
    let flags = ["apply", "-v", "--whitespace=nowarn"].map(OsStr::new);
    let check = [&flags[..], &[OsStr::new("--check"), patch]].concat();
    let run = run_git(&tree.root, &check)?;
    let run = if run.success {
        run_git(&tree.root, &[&flags[..], &[patch]].concat())?
    } else {
        run
    };
    if !run.success {
        return Err(does_not_apply(&run.stderr, summary, libgit2));
    }
    let hunks: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("Hunk #"))
        .collect();
    let git_said = if hunks.is_empty() {
        "applied cleanly".to_string()
    } else {
        hunks.join(" ")
    };
    Ok(Applied {
        applier: Applier::GitCli,
        note: Some(format!(
            "libgit2 could not apply the patch ({}); git apply: {git_said}",
            libgit2.message
        )),
    })
}

/// The safety checks saw libgit2's reading of the patch; `git apply` must not read more files
/// into it (e.g. a plain unified diff appended after the git sections).
fn same_files_as_git(tree: &Tree, patch: &OsStr, summary: &PatchSummary) -> Result<(), PatchError> {
    let args = ["apply", "--numstat", "-z"].map(OsStr::new);
    let run = run_git(&tree.root, &[&args[..], &[patch]].concat())?;
    if !run.success {
        return Err(PatchError::Unparsable {
            detail: format!("git apply cannot read it: {}", run.stderr.trim()),
        });
    }
    let known: Vec<&str> = summary.files.iter().flat_map(|f| f.paths()).collect();
    let stranger = run
        .stdout
        .split('\0')
        // Each record is `added\tremoved\tpath`, or `added\tremoved\t` then old and new path.
        .map(|field| field.rsplit('\t').next().unwrap_or(field))
        .find(|path| !path.is_empty() && !known.contains(path));
    match stranger {
        Some(path) => Err(PatchError::Unparsable {
            detail: format!(
                "`git apply` reads it as also changing `{path}`, which libgit2 does not see; \
                 refusing an ambiguous patch"
            ),
        }),
        None => Ok(()),
    }
}

fn write_temp_patch(bytes: &[u8]) -> Result<tempfile::NamedTempFile, PatchError> {
    let io_err = |source| PatchError::Io {
        action: "write a temporary copy of the patch in",
        path: std::env::temp_dir(),
        source,
    };
    let mut file = tempfile::Builder::new()
        .prefix("evo-patch-")
        .suffix(".patch")
        .tempfile()
        .map_err(io_err)?;
    file.write_all(bytes).map_err(io_err)?;
    file.flush().map_err(io_err)?;
    Ok(file)
}

/// Name the file and hunk from `git apply --check -v` (falling back on libgit2's callbacks).
fn does_not_apply(stderr: &str, summary: &PatchSummary, libgit2: &Libgit2Failure) -> PatchError {
    let errors: Vec<&str> = stderr
        .lines()
        .filter_map(|line| line.strip_prefix("error: "))
        .collect();
    let failed_at = errors.iter().find_map(|e| {
        let (file, line) = e.strip_prefix("patch failed: ")?.rsplit_once(':')?;
        Some((file.to_string(), line.parse::<u32>().ok()?))
    });
    let file = failed_at
        .as_ref()
        .map(|(file, _)| file.clone())
        .or_else(|| errors.iter().find_map(|e| named_file(e, summary)))
        .or_else(|| libgit2.file.clone())
        .unwrap_or_else(|| first_path(summary));
    let hunk = match &failed_at {
        Some((file, line)) => hunk_at(summary, file, *line),
        None => None,
    }
    .or_else(|| {
        libgit2
            .hunk
            .clone()
            .filter(|_| libgit2.file.as_ref() == Some(&file))
    });
    let detail = if errors.is_empty() {
        format!("libgit2: {}; git apply: {}", libgit2.message, stderr.trim())
    } else {
        errors.join("; ")
    };
    PatchError::DoesNotApply { file, hunk, detail }
}

/// A path of the patch mentioned in a `git apply` error (`x: already exists…`, `… to 'x'`).
fn named_file(error: &str, summary: &PatchSummary) -> Option<String> {
    summary
        .files
        .iter()
        .flat_map(|file| file.paths())
        .find(|path| {
            error.starts_with(&format!("{path}: ")) || error.contains(&format!("'{path}'"))
        })
        .map(str::to_string)
}

/// The header of the hunk of `file` that starts at old line `line` (what `git apply` reports).
fn hunk_at(summary: &PatchSummary, file: &str, line: u32) -> Option<String> {
    summary
        .files
        .iter()
        .filter(|change| change.paths().contains(&file))
        .flat_map(|change| change.hunks.iter())
        .find(|hunk| hunk.old_start == line)
        .map(|hunk| hunk.header.clone())
}

fn first_path(summary: &PatchSummary) -> String {
    summary
        .files
        .first()
        .map(|file| file.display_path().to_string())
        .unwrap_or_default()
}
