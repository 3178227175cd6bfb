//! `evo init`: starting input files for the repository evo is run in, so that the first
//! `evo confirm PATCH` needs no file written by hand (docs/design.md §2.6).
//!
//! Reads the repository (git2, read only) and its build files (`detect`, and a reader for each
//! kind: `make`, `cmake`, `cargo`; `steps` turns what they read into steps), then writes the
//! campaign, the workload and an empty holdout file, never over an existing file unless forced.
//! Nothing here prints: the caller reports what was written.

pub mod cargo;
pub mod cmake;
pub mod detect;
pub mod files;
pub mod make;
mod steps;

use std::path::{Path, PathBuf};

pub use detect::ProjectKind;
pub use files::{
    CAMPAIGN_FILE, HOLDOUTS_FILE, OUTPUT_DIR, StarterFiles, StarterInput, WORKLOAD_FILE,
};

/// Why `evo init` wrote nothing (or, for `Write`, stopped part way).
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(
        "{} is not inside a git repository: evo compares commits, so run evo init in a \
         repository (git init, then commit the program)",
        .0.display()
    )]
    NotARepository(PathBuf),
    #[error("{} is a bare repository: run evo init in a work tree", .0.display())]
    Bare(PathBuf),
    #[error(
        "the repository at {} has no commit yet: commit the program first, since the baseline \
         is a commit",
        .0.display()
    )]
    NoCommit(PathBuf),
    #[error("{}", exists_message(.0))]
    Exists(Vec<PathBuf>),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn exists_message(paths: &[PathBuf]) -> String {
    let others = match paths.len() {
        0 | 1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    let first = paths
        .first()
        .map_or_else(String::new, |p| p.display().to_string());
    format!(
        "{first} already exists{others}; evo init never overwrites a file: edit it, or pass \
         --force to replace all three files"
    )
}

impl InitError {
    /// Everything but a failed write is the user's situation to change: a usage error.
    pub fn exit_code(&self) -> i32 {
        match self {
            InitError::Write { .. } => crate::exit_codes::INTERNAL_ERROR,
            _ => crate::exit_codes::USAGE_ERROR,
        }
    }
}

impl From<InitError> for crate::failure::Failure {
    fn from(error: InitError) -> crate::failure::Failure {
        crate::failure::Failure::new(error.exit_code(), error)
    }
}

/// What `evo init` was asked for.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    pub run: Option<String>,
    pub check: Option<String>,
    pub force: bool,
}

/// What `evo init` did.
#[derive(Debug, Clone)]
pub struct Initialized {
    pub root: PathBuf,
    pub kind: ProjectKind,
    pub baseline: String,
    /// The files written, absolute, campaign first.
    pub written: Vec<PathBuf>,
    /// Left for the user before the first confirmation.
    pub todo: Vec<String>,
    /// The work tree has uncommitted changes, which the pinned baseline does not hold.
    pub dirty: bool,
    /// The output folder is not ignored by git yet.
    pub output_not_ignored: bool,
}

/// The repository's root, the commit checked out, and what git says about the tree.
struct RepoFacts {
    root: PathBuf,
    head: String,
    dirty: bool,
    output_not_ignored: bool,
}

/// libgit2, not `git rev-parse`/`status`/`check-ignore`: one open repository answers all four
/// questions in process, read only, with no porcelain output to parse.
fn repo_facts(cwd: &Path) -> Result<RepoFacts, InitError> {
    let repo = git2::Repository::discover(cwd)
        .map_err(|_| InitError::NotARepository(cwd.to_path_buf()))?;
    let root = repo
        .workdir()
        .ok_or_else(|| InitError::Bare(repo.path().to_path_buf()))?
        .to_path_buf();
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|_| InitError::NoCommit(root.clone()))?
        .id()
        .to_string();
    let mut status = git2::StatusOptions::new();
    status.include_untracked(false);
    let dirty = repo
        .statuses(Some(&mut status))
        .is_ok_and(|s| !s.is_empty());
    // git answers for a path inside the folder: a folder pattern such as `.evo/` matches it.
    let probe = Path::new(OUTPUT_DIR).join("run");
    let output_not_ignored = !repo.is_path_ignored(&probe).unwrap_or(false);
    Ok(RepoFacts {
        root,
        head,
        dirty,
        output_not_ignored,
    })
}

/// Writes the starting files for the repository that holds `cwd`.
pub fn init(cwd: &Path, options: &InitOptions) -> Result<Initialized, InitError> {
    let facts = repo_facts(cwd)?;
    let root = facts.root.canonicalize().unwrap_or(facts.root);
    let kind = ProjectKind::detect(&root);
    let name = root.file_name().map_or_else(
        || "program".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let starter = files::starter_files(&StarterInput {
        kind: kind.clone(),
        name,
        baseline: facts.head.clone(),
        run: options.run.clone(),
        check: options.check.clone(),
    });
    let targets = [
        (root.join(CAMPAIGN_FILE), &starter.campaign),
        (root.join(WORKLOAD_FILE), &starter.workload),
        (root.join(HOLDOUTS_FILE), &starter.holdouts),
    ];
    if !options.force {
        // Checked for all three before any is written, so a refusal leaves nothing half done.
        let existing: Vec<PathBuf> = targets
            .iter()
            .filter(|(path, _)| path.symlink_metadata().is_ok())
            .map(|(path, _)| path.clone())
            .collect();
        if !existing.is_empty() {
            return Err(InitError::Exists(existing));
        }
    }
    let mut written = Vec::new();
    for (path, text) in &targets {
        write_file(path, text, options.force)?;
        written.push(path.clone());
    }
    Ok(Initialized {
        root,
        kind,
        baseline: facts.head,
        written,
        todo: starter.todo,
        dirty: facts.dirty,
        output_not_ignored: facts.output_not_ignored,
    })
}

fn write_file(path: &Path, text: &str, force: bool) -> Result<(), InitError> {
    use std::io::Write;
    let failed = |source| InitError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    let mut open = std::fs::OpenOptions::new();
    open.write(true);
    if force {
        open.create(true).truncate(true);
    } else {
        // Even a file that appeared since the check above is never overwritten.
        open.create_new(true);
    }
    let mut file = open.open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::AlreadyExists => InitError::Exists(vec![path.to_path_buf()]),
        _ => failed(source),
    })?;
    file.write_all(text.as_bytes()).map_err(failed)
}
