//! From input files to a plan the pipeline trusts: `evo confirm`'s campaign is located, every file
//! is parsed and validated, and every relative path is resolved against the file it appears in.
//! The paths derived from the plan (the signing key's, the folders no key may be kept in, the
//! folders hidden from every run) are computed here, once, as methods of [`CampaignPlan`].
//!
//! Nothing here runs a command, touches a repository or writes anything: the input files are
//! read, nothing else (a test checks that a plan whose output folder is missing leaves it
//! missing). What depends on the machine (the sandbox, the output folder, the signing key) is
//! settled after, in one step: [`settle`]. Errors are usage errors.

pub mod settle;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::spec::campaign::ConfirmSettings;
use crate::spec::{Campaign, Holdouts, SpecError, Workload, load_json};

/// The file a campaign run writes beside its `candidate_N.patch` files.
pub const RUN_MANIFEST: &str = "run_manifest.json";
/// The campaign file looked for in the current directory when nothing else names one.
pub const DEFAULT_CAMPAIGN: &str = "evo.json";

/// An input problem: evo stops before running anything.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(
        "no campaign file: --campaign was not given, and neither {} nor {} exists; \
         pass --campaign FILE",
        .looked[0].display(), .looked[1].display()
    )]
    NoCampaign { looked: Vec<PathBuf> },
    #[error("cannot read the patch {}: {source}", path.display())]
    Patch {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    PatchTooLarge(String),
    #[error("{}: {field}: {message}", file.display())]
    Invalid {
        file: PathBuf,
        field: String,
        message: String,
    },
}

/// What a campaign run leaves beside its patches so `evo confirm` works from anywhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunManifest {
    /// The campaign file, absolute or relative to the manifest.
    pub campaign: PathBuf,
    pub run_id: String,
}

/// The sealed holdouts with the digest the receipt publishes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldoutSet {
    pub file: PathBuf,
    pub holdouts: Holdouts,
    /// sha256 of the holdouts' canonical JSON (sorted keys, no whitespace).
    pub portfolio_digest: String,
}

/// A validated `evo confirm`: the campaign it runs under and the patch. It travels whole in a
/// confirmation request (`confirm::request`), holdouts included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmPlan {
    /// Everything but the patch; its `output_dir` is where this confirmation writes (a campaign
    /// sends its confirmations to its run's `confirmations/`).
    pub campaign: CampaignPlan,
    pub patch_file: PathBuf,
    /// The patch's bytes (base64 in JSON: a patch may hold binary data).
    #[serde(with = "base64_bytes")]
    pub patch: Vec<u8>,
    /// The candidate's stated reason from `evo confirm --explanation`; it wins over the
    /// campaign's text for this patch and the patch's commit message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

impl ConfirmPlan {
    /// How the confirmation measures and decides: the campaign's `confirm` section.
    pub fn settings(&self) -> &ConfirmSettings {
        &self.campaign.spec.confirm
    }

    /// Every path of the plan (not those written inside the campaign, which are resolved against
    /// `campaign_file` when used): what a request rewrites relative to its own folder.
    pub fn paths_mut(&mut self) -> Vec<&mut PathBuf> {
        let c = &mut self.campaign;
        let mut paths = vec![
            &mut c.campaign_file,
            &mut c.repo,
            &mut c.workload_file,
            &mut c.overlay_base,
            &mut c.output_dir,
            &mut self.patch_file,
        ];
        paths.extend(c.holdouts.as_mut().map(|h| &mut h.file));
        paths.extend(c.overlay.iter_mut());
        paths.extend(c.patches.iter_mut().map(|p| &mut p.file));
        paths
    }
}

/// Bytes as one standard base64 string.
mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

fn dir_of(file: &Path) -> PathBuf {
    file.parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Resolves `raw` (as written in `file`) against `file`'s directory; `~/` means the home directory.
pub fn resolve_in(file: &Path, raw: &str) -> PathBuf {
    if let (Some(rest), Some(home)) = (raw.strip_prefix("~/"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    absolute(Path::new(raw), &dir_of(file))
}

/// Finds the campaign for `patch`: `--campaign`, else the run manifest beside the patch, else
/// `evo.json` in `cwd`.
pub fn locate_campaign(
    patch: &Path,
    flag: Option<&Path>,
    cwd: &Path,
) -> Result<PathBuf, PlanError> {
    if let Some(file) = flag {
        return Ok(absolute(file, cwd));
    }
    let manifest = dir_of(&absolute(patch, cwd)).join(RUN_MANIFEST);
    if manifest.is_file() {
        let m: RunManifest = load_json(&manifest)?;
        return Ok(absolute(&m.campaign, &dir_of(&manifest)));
    }
    let default = cwd.join(DEFAULT_CAMPAIGN);
    if default.is_file() {
        return Ok(default);
    }
    Err(PlanError::NoCampaign {
        looked: vec![manifest, default],
    })
}

/// sha256 of a value's canonical JSON: keys sorted, no insignificant whitespace.
pub fn canonical_digest<T: Serialize>(value: &T) -> String {
    // serde_json's `Value` keeps object keys in a BTreeMap, so printing it sorts them.
    let text = serde_json::to_value(value)
        .and_then(|v| serde_json::to_string(&v))
        .unwrap_or_default();
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, PlanError> {
    std::fs::read(path).map_err(|source| {
        PlanError::Spec(SpecError::Read {
            path: path.to_path_buf(),
            source,
        })
    })
}

fn invalid(file: &Path, field: &str, message: String) -> PlanError {
    PlanError::Invalid {
        file: file.to_path_buf(),
        field: field.to_string(),
        message,
    }
}

fn load_holdouts(campaign_file: &Path, raw: &str) -> Result<HoldoutSet, PlanError> {
    let file = resolve_in(campaign_file, raw);
    let holdouts: Holdouts = load_json(&file)?;
    if let Some((i, s)) = holdouts
        .scenarios
        .iter()
        .enumerate()
        .find(|(_, s)| s.role != crate::spec::workload::Role::Holdout)
    {
        return Err(invalid(
            &file,
            &format!("scenarios[{i}].role"),
            format!(
                "scenario `{}` is in the holdout file, so its role must be \"holdout\"",
                s.name
            ),
        ));
    }
    if let Some(i) = holdouts.scenarios.iter().position(|s| s.draw.is_some()) {
        return Err(invalid(
            &file,
            &format!("scenarios[{i}].draw"),
            "drawn checks run on training scenarios; a holdout draws its inputs with `inputs`"
                .to_string(),
        ));
    }
    for (i, s) in holdouts.scenarios.iter().enumerate() {
        let field = format!("scenarios[{i}].inputs");
        if let Some(why) = crate::check::draw::range_problem(&s.inputs) {
            return Err(invalid(&file, &field, why));
        }
        let values = crate::check::draw::values(&s.inputs, 0, 0);
        for command in [&s.run, &s.check] {
            let filled = crate::check::draw::fill(command, &values);
            if let Some(p) = crate::check::draw::unfilled(&filled) {
                return Err(invalid(
                    &file,
                    &field,
                    format!("`{p}` of `{command}` is neither `{{seed}}` nor one of its inputs"),
                ));
            }
        }
    }
    let portfolio_digest = canonical_digest(&holdouts);
    Ok(HoldoutSet {
        file,
        holdouts,
        portfolio_digest,
    })
}

fn check_workload(file: &Path, w: &Workload) -> Result<(), PlanError> {
    use crate::spec::workload::Role;
    if let Some((i, s)) = w
        .scenarios
        .iter()
        .enumerate()
        .find(|(_, s)| s.role == Role::Holdout)
    {
        return Err(invalid(
            file,
            &format!("scenarios[{i}].role"),
            format!(
                "scenario `{}` is a holdout: holdouts are sealed in the campaign's holdout file, \
                 never in the workload an agent can read",
                s.name
            ),
        ));
    }
    for (i, s) in w.scenarios.iter().enumerate() {
        if let Some(why) = s.draw.as_ref().and_then(crate::check::draw::problem) {
            return Err(invalid(file, &format!("scenarios[{i}].draw"), why));
        }
        if let Some(why) =
            (s.iteration_digest.as_deref()).and_then(crate::evidence::replay::digest_prefix_problem)
        {
            return Err(invalid(
                file,
                &format!("scenarios[{i}].iteration_digest"),
                why.to_string(),
            ));
        }
        if !s.inputs.is_empty() {
            return Err(invalid(
                file,
                &format!("scenarios[{i}].inputs"),
                "only a sealed holdout draws its inputs; a training scenario's checks draw theirs \
                 with `draw`"
                    .to_string(),
            ));
        }
    }
    if !w.scenarios.iter().any(|s| s.role == Role::Training) {
        return Err(invalid(
            file,
            "scenarios",
            "at least one scenario must have the role \"training\"".to_string(),
        ));
    }
    if let Some((i, name)) =
        (w.allow_probes.iter().enumerate()).find(|(_, name)| !crate::tree::is_probe_name(name))
    {
        return Err(invalid(
            file,
            &format!("allow_probes[{i}]"),
            format!(
                "`{}` is not a lane probe evo looks for (docs/design.md §2.2.3 lists them)",
                crate::spec::values::escape_controls(name)
            ),
        ));
    }
    let mut names: Vec<&str> = w.scenarios.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    if let Some(dup) = names.windows(2).find(|p| p[0] == p[1]) {
        return Err(invalid(
            file,
            "scenarios",
            format!("two scenarios are named `{}`", dup[0]),
        ));
    }
    Ok(())
}

/// A validated campaign: every file parsed, every path absolute, candidates' patch files located.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignPlan {
    pub campaign_file: PathBuf,
    /// The campaign file as parsed.
    pub spec: Campaign,
    pub repo: PathBuf,
    pub workload_file: PathBuf,
    pub workload: Workload,
    /// sha256 of the workload file's bytes.
    pub workload_digest: String,
    pub holdouts: Option<HoldoutSet>,
    /// Overlay files, resolved against the workload file's directory.
    pub overlay: Vec<PathBuf>,
    pub overlay_base: PathBuf,
    /// The campaign's patch candidates, resolved against the campaign file.
    pub patches: Vec<PatchCandidate>,
    pub output_dir: PathBuf,
}

/// A candidate given as a patch file in the campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchCandidate {
    pub name: String,
    pub file: PathBuf,
    pub explanation: Option<String>,
}

/// Parses and checks the campaign file and everything it names (but no patch contents).
pub fn campaign_plan(campaign_file: &Path) -> Result<CampaignPlan, PlanError> {
    let campaign: Campaign = load_json(campaign_file)?;
    let workload_file = resolve_in(campaign_file, &campaign.workload);
    let workload_bytes = read_bytes(&workload_file)?;
    let workload: Workload =
        crate::spec::parse_json(&workload_file, &String::from_utf8_lossy(&workload_bytes))?;
    check_workload(&workload_file, &workload)?;
    let holdouts = match &campaign.holdouts {
        Some(raw) => Some(load_holdouts(campaign_file, raw)?),
        None => None,
    };
    let overlay = workload
        .overlay
        .iter()
        .map(|raw| resolve_in(&workload_file, raw))
        .collect();
    let patches = campaign
        .candidates
        .iter()
        .map(|c| PatchCandidate {
            name: c.name.clone(),
            file: resolve_in(campaign_file, &c.patch),
            explanation: c.explanation.clone(),
        })
        .collect();
    Ok(CampaignPlan {
        repo: resolve_in(campaign_file, &campaign.repo),
        output_dir: resolve_in(campaign_file, &campaign.output),
        workload_digest: hex::encode(Sha256::digest(&workload_bytes)),
        overlay_base: dir_of(&workload_file),
        campaign_file: campaign_file.to_path_buf(),
        spec: campaign,
        workload_file,
        workload,
        holdouts,
        overlay,
        patches,
    })
}

impl CampaignPlan {
    /// The private key file the campaign names (`"key"`), resolved against the campaign file.
    pub fn key_file(&self) -> Option<PathBuf> {
        (self.spec.key.as_deref()).map(|key| resolve_in(&self.campaign_file, key))
    }

    /// The campaign's own output folder, as its file names it: `output_dir` unless this plan
    /// writes elsewhere (a campaign's confirmations write to its run's `confirmations/`).
    pub fn campaign_output(&self) -> PathBuf {
        resolve_in(&self.campaign_file, &self.spec.output)
    }

    /// The folders no signing key may be kept in, besides any git work tree: the campaign's
    /// repository and output folder (the campaign file may come from the change under review, so
    /// its `key` is never taken on trust), the folder this plan writes to when it is another,
    /// and evo's `work` folder of this run, if any.
    pub fn key_untrusted(&self, work: Option<&Path>) -> Vec<crate::receipt::trust::Untrusted> {
        use crate::receipt::trust::Untrusted;
        let campaign_output = self.campaign_output();
        let mut untrusted = vec![
            Untrusted::new("the campaign's repository", self.repo.clone()),
            Untrusted::new("the campaign's output folder", campaign_output.clone()),
        ];
        if self.output_dir != campaign_output {
            untrusted.push(Untrusted::new(
                "evo's output folder",
                self.output_dir.clone(),
            ));
        }
        untrusted.extend(work.map(|w| Untrusted::new("evo's work folder", w)));
        untrusted
    }

    /// Every folder and file no sandboxed run may see, canonical where it exists (so a path
    /// reached through a link is still recognised), each once, in this order: evo's `work`
    /// folder of this run, if any; the folder this plan writes to and the campaign's output
    /// folder; what the caller hides besides (`hidden`: a request's folder); the campaign file,
    /// its repository, holdouts and key; the per-user key folder; evo's state; the local Slurm
    /// cluster's secret folder; a fleet's shared folder.
    pub fn hidden_from_runs(&self, work: Option<&Path>, hidden: &[&Path]) -> Vec<PathBuf> {
        let mut all: Vec<PathBuf> = work.map(Path::to_path_buf).into_iter().collect();
        all.push(self.output_dir.clone());
        all.push(self.campaign_output());
        all.extend(hidden.iter().map(|p| p.to_path_buf()));
        all.push(self.campaign_file.clone());
        all.push(self.repo.clone());
        all.extend((self.spec.holdouts.as_deref()).map(|h| resolve_in(&self.campaign_file, h)));
        all.extend(self.key_file());
        all.extend(crate::receipt::keys::default_dir().ok());
        all.push(crate::host::lock::state_dir());
        // The local Slurm cluster's munge key and socket: whoever holds them submits jobs as
        // root.
        all.extend(crate::host::slurm_state_dir());
        // A fleet's shared folder holds every job's request (the holdouts with it) and the
        // nodes' unsigned results before the coordinator checks them: a run that could read it
        // would see the holdouts, one that could write it could rewrite another candidate's runs
        // (§2.8). Its default, the output folder, is in the list already.
        let shared = self.spec.fleet.as_ref().and_then(|f| f.shared_dir.as_ref());
        all.extend(shared.map(|dir| resolve_in(&self.campaign_file, dir)));
        let mut once: Vec<PathBuf> = Vec::with_capacity(all.len());
        for path in all {
            let path = path.canonicalize().unwrap_or(path);
            if !once.contains(&path) {
                once.push(path);
            }
        }
        once
    }

    /// The confirmation of one patch under this campaign.
    pub fn confirm_plan(&self, patch_file: PathBuf, patch: Vec<u8>) -> ConfirmPlan {
        ConfirmPlan {
            campaign: self.clone(),
            patch_file,
            patch,
            explanation: None,
        }
    }
}

/// Builds the plan for `evo confirm PATCH [--campaign FILE]`.
pub fn confirm_plan(
    patch: &Path,
    campaign_flag: Option<&Path>,
    cwd: &Path,
) -> Result<ConfirmPlan, PlanError> {
    let campaign_file = locate_campaign(patch, campaign_flag, cwd)?;
    let campaign = campaign_plan(&campaign_file)?;
    let patch_file = absolute(patch, cwd);
    let read = crate::tree::read_patch(&patch_file).map_err(|source| PlanError::Patch {
        path: patch_file.clone(),
        source,
    })?;
    let bytes = match read {
        crate::tree::PatchFile::Bytes(bytes) => bytes,
        crate::tree::PatchFile::TooLarge(size) => {
            let message = crate::tree::too_large_message(&patch_file, size);
            return Err(PlanError::PatchTooLarge(message));
        }
    };
    Ok(campaign.confirm_plan(patch_file, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry under `dir`, recursively, sorted.
    fn tree_of(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(tree_of(&path));
            }
            out.push(path);
        }
        out.sort();
        out
    }

    /// Parsing touches nothing: the output folder, a `sandbox.writable` cache and the key's
    /// folder it names stay missing, and the folder holding the files is as it was.
    #[test]
    fn parsing_a_campaign_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write(
            "workload.json",
            r#"{ "name": "w", "build": { "command": "make", "timeout_s": 60 },
  "test": { "command": "make test", "timeout_s": 60 },
  "scenarios": [ { "name": "main", "role": "training", "run": "./prog {seed}",
    "check": "./prog {seed}", "compare": "exact" } ] }"#,
        );
        write(
            "campaign.json",
            r#"{ "name": "c", "repo": "repo", "baseline": "main", "workload": "workload.json",
  "key": "keys/signing.key", "output": "out/deeper",
  "sandbox": { "writable": ["cache"] } }"#,
        );
        let before = tree_of(dir.path());
        let plan = campaign_plan(&dir.path().join("campaign.json")).unwrap();
        assert_eq!(plan.output_dir, dir.path().join("out/deeper"));
        // What is derived from the plan is computed, never made, either.
        assert_eq!(plan.key_file(), Some(dir.path().join("keys/signing.key")));
        let hidden = plan.hidden_from_runs(None, &[]);
        assert!(
            hidden.contains(&dir.path().join("out/deeper")),
            "{hidden:?}"
        );
        assert_eq!(plan.key_untrusted(None).len(), 2);
        assert_eq!(tree_of(dir.path()), before);
        assert!(!dir.path().join("out").exists() && !dir.path().join("cache").exists());
    }
}
