//! A confirmation request: everything a confirmation needs that is not about the machine it runs
//! on (the plan with its holdouts and patch bytes, the search that chose the candidate, the
//! sandbox override), as one JSON value, so that something other than this process can run it
//! (`evo confirm --request FILE`) and a campaign can read the outcome back (`outcome`).
//! docs/design.md §2.7.
//!
//! Each kind of job has a request type of its own, [`JobRequest`]: this one, and a campaign
//! candidate's screening (`campaign::ScreenRequest`, `evo campaign screen-job --request FILE`).
//! A request file names its kind, and reading it as another kind is refused by name.
//!
//! Who may read a request file: the key holder, and the process that runs it. It holds the
//! holdout scenarios (their commands and inputs), which a candidate must never see, so it is
//! written readable by its owner only, and `evo confirm --request` hides the folder it lies in
//! from every sandboxed run, like the campaign and holdout files
//! (`plan::CampaignPlan::hidden_from_runs`). Never put one in a folder the campaign shows its
//! runs (`sandbox.read_only`, `sandbox.writable`): the run is then refused before anything is
//! built.
//!
//! Paths: a relative path in a request is relative to the folder of the request file. Writing a
//! request makes relative every path of the plan that lies inside that folder and keeps the others
//! absolute; those must then mean the same on every machine that runs it (a shared file system
//! mounted at the same place). Paths written inside the campaign (`repo`, `output`, `key`,
//! `sandbox.*`) stay as the campaign wrote them and are resolved against `campaign_file`.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SearchContext;
use crate::plan::ConfirmPlan;
use crate::spec::SpecError;
use crate::spec::modes::SandboxMode;

/// The request layout this evo writes and reads; another version is refused, never guessed at.
/// (2: each job kind its own request, named by `kind`.)
pub const REQUEST_VERSION: u32 = 2;

/// Which job a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    Confirmation,
    Screening,
}

impl RequestKind {
    /// The command that runs a request of this kind.
    pub fn command(self) -> &'static str {
        match self {
            RequestKind::Confirmation => "evo confirm --request",
            RequestKind::Screening => "evo campaign screen-job --request",
        }
    }
}

impl std::fmt::Display for RequestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RequestKind::Confirmation => "confirmation",
            RequestKind::Screening => "screening",
        })
    }
}

/// One job's request, as a file holds it: its layout `version`, its `kind`, and the plan it runs,
/// whose paths the file holds relative to its own folder where they lie inside it.
pub trait JobRequest: Serialize + serde::de::DeserializeOwned + Clone {
    /// The kind every request of this type names.
    const KIND: RequestKind;

    /// The plan the job runs.
    fn plan_mut(&mut self) -> &mut ConfirmPlan;
}

/// One confirmation, as a campaign would run it here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmRequest {
    /// [`REQUEST_VERSION`].
    pub version: u32,
    /// [`RequestKind::Confirmation`].
    pub kind: RequestKind,
    /// The campaign, workload, holdouts, patch bytes and output folder.
    pub plan: ConfirmPlan,
    /// What the campaign's search knew of the candidate; `None` for a lone confirmation.
    pub search: Option<SearchContext>,
    /// Overrides the campaign's `sandbox.mode` (`--sandbox`).
    pub sandbox: Option<SandboxMode>,
    /// A fleet's folder of build caches (`<shared_dir>/caches`, absolute, the same on every
    /// node): the run binds the campaign's `sandbox.writable` folders from its folder for the
    /// node's machine kind (`measure::caches`, docs/design.md §2.8). `None`: the machine's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_caches: Option<PathBuf>,
    /// An earlier confirmation's A/A pairs the run may reuse on byte-identical baseline binaries
    /// (a campaign's later confirmations on this machine, `confirm::earlier_aa`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_aa: Option<super::earlier_aa::EarlierAa>,
}

/// A request that cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(
        "{}: a confirmation request of version {found}; this evo reads version {REQUEST_VERSION} \
         only: run it with the evo that wrote it",
        path.display()
    )]
    Version { path: PathBuf, found: u32 },
    #[error(
        "{} is a {found} request, not a {wanted} one: run it with `{} {}`",
        path.display(),
        found.command(),
        path.display()
    )]
    Kind {
        path: PathBuf,
        found: RequestKind,
        wanted: RequestKind,
    },
    #[error("cannot write the confirmation request {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "a confirmation request holds the holdouts, so no run may see the folder it lies in, and \
         {} holds the home directory or is the root: put the request in a folder of its own",
        .0.display()
    )]
    Folder(PathBuf),
    #[error("cannot serialize the confirmation request: {0}")]
    Serialize(#[source] serde_json::Error),
    #[error(
        "the plan's path {} is relative: a request holds absolute paths, or paths inside its \
         own folder",
        .0.display()
    )]
    RelativePath(PathBuf),
}

impl ConfirmRequest {
    pub fn new(
        plan: ConfirmPlan,
        search: Option<SearchContext>,
        sandbox: Option<SandboxMode>,
    ) -> ConfirmRequest {
        ConfirmRequest {
            version: REQUEST_VERSION,
            kind: RequestKind::Confirmation,
            plan,
            search,
            sandbox,
            shared_caches: None,
            earlier_aa: None,
        }
    }
}

impl JobRequest for ConfirmRequest {
    const KIND: RequestKind = RequestKind::Confirmation;

    fn plan_mut(&mut self) -> &mut ConfirmPlan {
        &mut self.plan
    }
}

/// The request as the JSON bytes of a file in `dir` (absolute): paths inside `dir` relative.
pub fn to_bytes<R: JobRequest>(request: &R, dir: &Path) -> Result<Vec<u8>, RequestError> {
    let mut shown = request.clone();
    for path in shown.plan_mut().paths_mut() {
        if !path.is_absolute() {
            return Err(RequestError::RelativePath(path.clone()));
        }
        if let Ok(inside) = path.strip_prefix(dir) {
            *path = match inside.as_os_str().is_empty() {
                true => PathBuf::from("."),
                false => inside.to_path_buf(),
            };
        }
    }
    let mut bytes = serde_json::to_vec_pretty(&shown).map_err(RequestError::Serialize)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The request in `bytes`, read from `file`: relative paths resolved against its folder. A file
/// of another layout version or another kind is refused by name.
pub fn from_bytes<R: JobRequest>(file: &Path, bytes: &[u8]) -> Result<R, RequestError> {
    let text = String::from_utf8_lossy(bytes);
    /// Only the version and the kind, so another layout or kind is named as such instead of as
    /// a bad field.
    #[derive(Deserialize)]
    struct Header {
        version: u32,
        kind: Option<RequestKind>,
    }
    let Header { version, kind } = crate::spec::parse_json(file, &text)?;
    if version != REQUEST_VERSION {
        return Err(RequestError::Version {
            path: file.to_path_buf(),
            found: version,
        });
    }
    if let Some(found) = kind.filter(|k| *k != R::KIND) {
        return Err(RequestError::Kind {
            path: file.to_path_buf(),
            found,
            wanted: R::KIND,
        });
    }
    let mut request: R = crate::spec::parse_json(file, &text)?;
    let dir = folder_of(file);
    for path in request.plan_mut().paths_mut() {
        if path.is_relative() {
            *path = match path.components().collect::<Vec<_>>()[..] {
                [Component::CurDir] => dir.clone(),
                _ => dir.join(&*path),
            };
        }
    }
    Ok(request)
}

/// The absolute folder a request file lies in: what its relative paths are relative to.
pub fn folder_of(file: &Path) -> PathBuf {
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    file.parent()
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}

/// The folder `evo confirm --request` hides from every sandboxed run: the one `file` lies in. A
/// folder that holds the home directory or is the root is refused: hiding it would hide the
/// tools the runs need along with the request.
pub fn hidden_folder(file: &Path) -> Result<PathBuf, RequestError> {
    let folder = folder_of(file);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let holds_home = home.is_some_and(|h| h.starts_with(&folder));
    if holds_home || folder.parent().is_none() {
        return Err(RequestError::Folder(folder));
    }
    Ok(folder)
}

/// Writes `request` to `file`, readable by its owner only (it holds the holdouts), whole or not
/// at all.
pub fn write_request<R: JobRequest>(file: &Path, request: &R) -> Result<(), RequestError> {
    let dir = folder_of(file);
    let bytes = to_bytes(request, &dir)?;
    let failed = |source| RequestError::Write {
        path: file.to_path_buf(),
        source,
    };
    // A named temporary file is created with mode 0600; the rename publishes it whole.
    let mut temp = tempfile::NamedTempFile::new_in(&dir).map_err(failed)?;
    temp.write_all(&bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(failed)?;
    temp.persist(file).map_err(|e| failed(e.error))?;
    Ok(())
}

/// Reads the request of kind `R` in `file`.
pub fn read_request<R: JobRequest>(file: &Path) -> Result<R, RequestError> {
    let bytes = std::fs::read(file).map_err(|source| SpecError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    from_bytes(file, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_version_is_refused_by_name() {
        let file = Path::new("/x/request.json");
        let bytes = br#"{"version": 1, "plan": {}}"#;
        let err = from_bytes::<ConfirmRequest>(file, bytes).unwrap_err();
        assert!(
            matches!(err, RequestError::Version { found: 1, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("version 1"), "{err}");
    }

    #[test]
    fn a_request_without_a_version_is_refused_at_its_line() {
        let err = from_bytes::<ConfirmRequest>(Path::new("/x/r.json"), b"{}").unwrap_err();
        assert!(err.to_string().starts_with("/x/r.json:1:"), "{err}");
        assert!(err.to_string().contains("version"), "{err}");
    }
}
