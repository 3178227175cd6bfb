//! What a run learns from the machine before anything is built, settled once into what every
//! later stage trusts: the signing key (checked, or the signer made), the output folder (evo can
//! write there), the sandbox (declared caches created, bubblewrap probed, the runs' view decided).
//!
//! Unlike the rest of `plan`, this touches the machine: it creates folders, writes and removes a
//! probe file and runs bubblewrap. Errors are usage errors, as the plan's are.

use std::io;
use std::path::{Path, PathBuf};

use super::{CampaignPlan, resolve_in};
use crate::host::SignWith;
use crate::measure::error::SandboxError;
use crate::measure::sandbox::SandboxPolicy;
use crate::receipt::keys::{KeyError, Signer};

/// Why the machine cannot give a run what it needs: each names the field, folder or key
/// involved, and keeps the error below it as its cause.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    #[error("cannot use the signing key: {0}")]
    Key(#[source] KeyError),
    #[error("cannot write to the receipt directory {}: {source}", dir.display())]
    OutputDir {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("sandbox.{field} `{raw}`: HOME is not set")]
    NoHome { field: &'static str, raw: String },
    #[error("sandbox.writable `{raw}`: cannot create {}: {source}", path.display())]
    CreateWritable {
        raw: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("sandbox.read_only `{raw}`: {} is not a folder", path.display())]
    NotAFolder { raw: String, path: PathBuf },
    #[error(
        "sandbox: {} would show code under test {}, which it must never see; declare a folder \
         that does not hold it",
        folder.display(),
        secret.display()
    )]
    ShowsSecret { folder: PathBuf, secret: PathBuf },
    #[error(
        "cannot make this machine kind's folder of shared caches in {}: {source}",
        root.display()
    )]
    SharedCaches {
        root: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// What a run needs of the signing key.
pub enum Key<'a> {
    /// Nothing: the run signs nothing.
    Unsigned,
    /// A key it will look up later must be usable (found now, not after the whole search); the
    /// per-user default key is not created yet.
    Check(&'a SignWith),
    /// The signer itself.
    Sign(&'a SignWith),
}

/// What a run asks of its machine besides the plan.
pub struct Ask<'a> {
    pub key: Key<'a>,
    /// evo's work folder of this run when it is not inside the output folder (a confirmation's
    /// trees): hidden from every run, and no key may be kept there.
    pub work: Option<&'a Path>,
    /// What no run may see besides the plan's folders (a request's folder).
    pub hidden: &'a [&'a Path],
    /// Where a candidate's private copies of the writable caches go.
    pub copies: PathBuf,
    /// Overrides the campaign's `sandbox.mode`.
    pub mode: Option<crate::spec::modes::SandboxMode>,
    /// A fleet's folder of shared caches (`<shared_dir>/caches`) on a node a fleet job runs on.
    pub shared_caches: Option<&'a Path>,
}

/// The machine's facts as one run settled them.
pub struct Settled {
    pub sandbox: SandboxPolicy,
    /// Made when the run asked for [`Key::Sign`].
    pub signer: Option<Signer>,
    /// What the run should be told before anything is built: each writable cache so large that
    /// copying it for every candidate build costs real time ([`large_caches`]).
    pub warnings: Vec<String>,
}

/// A declared writable cache above this many bytes is named before anything is built when every
/// sandboxed candidate build copies it whole (`cp -a`, sharing blocks only where the file system
/// can; no overlay, see `measure::overlay`). The trainer's own caches, 1.6 GB, copy in a few seconds; evo's 3.8 GB target folder
/// once declared there made each candidate's checks take 63 s instead of 7 (2026-12-03).
pub const LARGE_CACHE_BYTES: u64 = 2 << 30;

/// One warning per writable cache of `sandbox` over [`LARGE_CACHE_BYTES`], with its size and
/// what to do; none when builds are not sandboxed (then nothing is copied) or a candidate's
/// build sees the caches through a copy-on-write overlay (then nothing is copied either).
pub fn large_caches(sandbox: &SandboxPolicy, declared: &[String]) -> Vec<String> {
    if !sandbox.enabled() || sandbox.overlays_caches() {
        return Vec::new();
    }
    (declared.iter().zip(sandbox.cache_sources()))
        .filter_map(|(raw, folder)| {
            let bytes = crate::tree::disk_usage(&folder);
            (bytes > LARGE_CACHE_BYTES).then(|| {
                format!(
                    "sandbox.writable `{raw}` holds {:.1} GiB: every candidate build copies it \
                     whole before it starts, which can cost minutes per candidate; declare only \
                     the cache folders the build writes, or clear what it no longer needs",
                    bytes as f64 / f64::from(1u32 << 30)
                )
            })
        })
        .collect()
}

/// Settles the signing key, then the output folder, then the sandbox, so a bad key or an
/// unwritable folder costs no build.
pub fn settle(plan: &CampaignPlan, ask: Ask<'_>) -> Result<Settled, SettleError> {
    let key_file = plan.key_file();
    let untrusted = plan.key_untrusted(ask.work);
    let cannot = SettleError::Key;
    let signer = match ask.key {
        Key::Unsigned => None,
        Key::Check(SignWith::CampaignKey) => {
            Signer::check_configured(key_file.as_deref(), &untrusted).map_err(cannot)?;
            None
        }
        Key::Check(SignWith::Signer(_)) => None,
        Key::Sign(with) => Some(
            with.signer(key_file.as_deref(), &untrusted)
                .map_err(cannot)?,
        ),
    };
    check_output_dir(&plan.output_dir)?;
    let sandbox = sandbox_policy(plan, &ask)?;
    let warnings = large_caches(&sandbox, &plan.spec.sandbox.writable);
    Ok(Settled {
        sandbox,
        signer,
        warnings,
    })
}

/// The run's sandbox: `ask.hidden` and its `work` folder are hidden from every run besides the
/// plan's own secrets ([`CampaignPlan::hidden_from_runs`]); `ask.copies` is where a candidate's
/// private copies of the writable caches go. Declared folders are created when missing (they
/// are caches), since bubblewrap cannot mount a path that does not exist. With
/// `ask.shared_caches` (a fleet's folder of caches, on a node that a fleet job runs on) the
/// writable folders are bound from its folder for this machine's kind. Part of [`settle`]; a
/// screening job calls it alone, once its run folder (which holds the copies) exists.
pub fn sandbox_policy(plan: &CampaignPlan, ask: &Ask<'_>) -> Result<SandboxPolicy, SettleError> {
    let (campaign_file, campaign) = (&plan.campaign_file, &plan.spec);
    let resolve = |field: &'static str, raw: &str| -> Result<PathBuf, SettleError> {
        if raw.starts_with("~/") && std::env::var_os("HOME").is_none() {
            return Err(SettleError::NoHome {
                field,
                raw: raw.to_string(),
            });
        }
        Ok(resolve_in(campaign_file, raw))
    };
    let mut writable = Vec::new();
    for raw in &campaign.sandbox.writable {
        let path = resolve("writable", raw)?;
        std::fs::create_dir_all(&path).map_err(|source| SettleError::CreateWritable {
            raw: raw.clone(),
            path: path.clone(),
            source,
        })?;
        writable.push(path);
    }
    let mut read_only = Vec::new();
    for raw in &campaign.sandbox.read_only {
        let path = resolve("read_only", raw)?;
        if !path.is_dir() {
            return Err(SettleError::NotAFolder {
                raw: raw.clone(),
                path,
            });
        }
        read_only.push(path);
    }
    let secrets = plan.hidden_from_runs(ask.work, ask.hidden);
    for path in writable.iter().chain(&read_only) {
        if let Some(secret) = secret_within(path, &secrets) {
            return Err(SettleError::ShowsSecret {
                folder: path.clone(),
                secret: secret.clone(),
            });
        }
    }
    let shared_caches = match ask.shared_caches {
        Some(root) if !writable.is_empty() => Some(
            crate::measure::caches::SharedCaches::for_this_machine(root).map_err(|source| {
                SettleError::SharedCaches {
                    root: root.to_path_buf(),
                    source,
                }
            })?,
        ),
        _ => None,
    };
    let policy = SandboxPolicy::for_request(crate::measure::sandbox::SandboxRequest {
        mode: ask.mode.unwrap_or(campaign.sandbox.mode),
        writable,
        read_only,
        secrets,
        pass_env: campaign.sandbox.pass_env.clone(),
        limits: campaign.sandbox.limits,
        copies: ask.copies.clone(),
        shared_caches,
    })?;
    Ok(policy)
}

/// A secret that a declared folder would show whole (the folder is one of them, or lies inside
/// one). A secret deeper inside the folder is covered instead.
fn secret_within<'s>(folder: &Path, secrets: &'s [PathBuf]) -> Option<&'s PathBuf> {
    let folder = folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf());
    secrets.iter().find(|s| folder.starts_with(s))
}

/// Fails unless evo can create files in the output folder (created when missing): found out
/// before anything is built, not when the first log or the receipt is written.
pub fn check_output_dir(dir: &Path) -> Result<(), SettleError> {
    let cannot = |source: io::Error| SettleError::OutputDir {
        dir: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(cannot)?;
    // Some bytes, not just a name: a full disk still has room for an empty file.
    let mut probe = tempfile::Builder::new()
        .prefix(".evo-write-test-")
        .tempfile_in(dir)
        .map_err(cannot)?;
    std::io::Write::write_all(&mut probe, &[0u8; 64 * 1024])
        .and_then(|()| probe.as_file().sync_data())
        .map_err(cannot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Failure;

    /// The output folder's error keeps the system's as its cause all the way to the failure
    /// `main` prints, which says it once (the message names it already).
    #[test]
    fn an_output_folder_evo_cannot_make_keeps_the_systems_error_as_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let e = check_output_dir(&file.join("receipts")).unwrap_err();
        assert!(matches!(e, SettleError::OutputDir { .. }), "{e:?}");
        let f = Failure::usage(e);
        let chain: Vec<&(dyn std::error::Error + 'static)> = f.error.chain().collect();
        assert_eq!(chain.len(), 2, "{chain:?}");
        let io = chain[1].downcast_ref::<io::Error>();
        assert_eq!(
            io.map(io::Error::kind),
            Some(io::ErrorKind::NotADirectory),
            "{chain:?}"
        );
        assert!(
            f.render()
                .starts_with("error: cannot write to the receipt directory ")
        );
        assert_eq!(f.render().lines().count(), 1, "{}", f.render());
    }
}
