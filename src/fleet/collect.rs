//! A node's unsigned result, checked as untrusted input before the coordinator signs it
//! (docs/design.md §2.8).
//!
//! What a job leaves in its output folder is one run folder written by evo on the node. The
//! coordinator checks its layout (one run folder, named after its run, with the patch that was
//! sent and no receipt), that it is the confirmation that was asked for (evo version and rules,
//! baseline, workload, holdouts, settings, search context, the configured counts of every
//! measured scenario, every scenario present when accepted), and recomputes every figure, gate
//! and the verdict from the raw runs (`receipt::recompute`). Only a result that passes all of it
//! is signed. The raw runs themselves are taken as the node's evo recorded them: the node is
//! trusted to run evo, not to hold the key.

use std::path::{Path, PathBuf};

use crate::confirm::ConfirmRequest;
use crate::evidence::result::{ConfirmResult, Role, Verdict};
use crate::receipt;

/// What the coordinator expects of the result of `request`.
pub struct Expected<'a> {
    pub request: &'a ConfirmRequest,
    /// The baseline the campaign pinned.
    pub baseline_sha: &'a str,
}

/// A checked result, and the run folder it came in.
#[derive(Debug)]
pub struct Collected {
    pub run_folder: PathBuf,
    pub result: ConfirmResult,
}

/// Why a job's output is not a result to sign.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// Nothing usable was left (the job failed, was cancelled or lost its node first).
    #[error("the job left no result in {}: {why}", folder.display())]
    Missing {
        folder: PathBuf,
        #[source]
        why: NoResult,
    },
    /// A result is there, and it is not what evo on the node writes for this request.
    #[error("the result in {} is refused: {why}", folder.display())]
    Refused {
        folder: PathBuf,
        #[source]
        why: Refusal,
    },
}

/// Why a job's folder holds no result.
#[derive(Debug, thiserror::Error)]
pub enum NoResult {
    #[error("cannot list it: {0}")]
    CannotList(#[source] std::io::Error),
    #[error("it is empty")]
    Empty,
    /// The first line of the `error.txt` evo on the node wrote.
    #[error("no result.json; error.txt says: {0}")]
    NodeSaid(String),
    #[error("no result.json ({0})")]
    NoResultFile(#[source] std::io::Error),
}

/// Why a job's result is not what evo on the node writes for the request.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("{0} entries where one run folder belongs")]
    Entries(usize),
    #[error("result.json is not a confirmation result: {0}")]
    NotAResult(#[source] serde_json::Error),
    #[error("the folder is not named after its run `{0}`")]
    Misnamed(String),
    #[error("the node wrote {0}; only the coordinator signs and renders")]
    Signed(&'static str),
    #[error("no candidate.patch: {0}")]
    NoPatch(#[source] std::io::Error),
    #[error("it confirmed another patch than the one sent")]
    OtherPatch,
    /// A field of the result that differs from the request (the values as Rust prints them).
    #[error("{what} is {got}, the request says {want}")]
    Differs {
        what: &'static str,
        got: String,
        want: String,
    },
    #[error(transparent)]
    Rules(#[from] receipt::recompute::RulesMismatch),
    #[error("its search context is not the one sent")]
    OtherSearch,
    #[error(
        "scenario {scenario} was planned with (pairs, max_pairs, aa_pairs, warmups) {got}, the \
         campaign says {want}"
    )]
    Counts {
        scenario: String,
        got: String,
        want: String,
    },
    #[error("{count} figure(s) do not follow from its raw runs, first {first}")]
    Recomputed { count: usize, first: String },
}

/// Checks the output folder `out` of a job that ran `expected.request`.
pub fn collect(out: &Path, expected: &Expected) -> Result<Collected, CollectError> {
    let missing = |why: NoResult| CollectError::Missing {
        folder: out.to_path_buf(),
        why,
    };
    let entries: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| missing(NoResult::CannotList(e)))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    let run_folder = match entries.as_slice() {
        [] => return Err(missing(NoResult::Empty)),
        [one] if one.is_dir() => one.clone(),
        _ => {
            return Err(CollectError::Refused {
                folder: out.to_path_buf(),
                why: Refusal::Entries(entries.len()),
            });
        }
    };
    let refused = |why: Refusal| CollectError::Refused {
        folder: run_folder.clone(),
        why,
    };
    let bytes = match std::fs::read(run_folder.join("result.json")) {
        Ok(bytes) => bytes,
        Err(e) => {
            let error = std::fs::read_to_string(run_folder.join("error.txt")).unwrap_or_default();
            let why = match error.lines().next() {
                Some(line) => NoResult::NodeSaid(line.to_string()),
                None => NoResult::NoResultFile(e),
            };
            return Err(CollectError::Missing {
                folder: run_folder,
                why,
            });
        }
    };
    let result: ConfirmResult =
        serde_json::from_slice(&bytes).map_err(|e| refused(Refusal::NotAResult(e)))?;
    check_layout(&run_folder, &result, expected).map_err(refused)?;
    check_identity(&result, expected).map_err(refused)?;
    let differences = receipt::recompute::recompute(&result);
    if let Some(first) = differences.first() {
        return Err(refused(Refusal::Recomputed {
            count: differences.len(),
            first: first.to_string(),
        }));
    }
    Ok(Collected { run_folder, result })
}

/// One run folder, named after its run, holding the patch that was sent and nothing signed.
fn check_layout(folder: &Path, r: &ConfirmResult, expected: &Expected) -> Result<(), Refusal> {
    if folder.file_name() != Some(std::ffi::OsStr::new(&r.evidence.run_id)) {
        return Err(Refusal::Misnamed(r.evidence.run_id.clone()));
    }
    for signed in [receipt::RECEIPT_FILE, "pr_body.md"] {
        if folder.join(signed).exists() {
            return Err(Refusal::Signed(signed));
        }
    }
    let patch = std::fs::read(folder.join("candidate.patch")).map_err(Refusal::NoPatch)?;
    let sent = &expected.request.plan.patch;
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(sent));
    if patch != *sent || r.evidence.patch.sha256 != sha {
        return Err(Refusal::OtherPatch);
    }
    Ok(())
}

/// The result is of the confirmation that was asked for, under this evo's rules and settings.
fn check_identity(r: &ConfirmResult, expected: &Expected) -> Result<(), Refusal> {
    let plan = &expected.request.plan;
    let campaign = &plan.campaign;
    let settings = plan.settings();
    let differ = |what: &'static str, got: &dyn std::fmt::Debug, want: &dyn std::fmt::Debug| {
        Err(Refusal::Differs {
            what,
            got: format!("{got:?}"),
            want: format!("{want:?}"),
        })
    };
    if r.evidence.evo_version != env!("CARGO_PKG_VERSION") {
        return differ(
            "evo_version",
            &r.evidence.evo_version,
            &env!("CARGO_PKG_VERSION"),
        );
    }
    receipt::recompute::same_rules(r)?;
    if r.evidence.baseline_sha != expected.baseline_sha {
        return differ(
            "baseline_sha",
            &r.evidence.baseline_sha,
            &expected.baseline_sha,
        );
    }
    if r.evidence.campaign_name != campaign.spec.name {
        return differ(
            "campaign_name",
            &r.evidence.campaign_name,
            &campaign.spec.name,
        );
    }
    if r.evidence.workload_digest != campaign.workload_digest {
        return differ(
            "workload_digest",
            &r.evidence.workload_digest,
            &campaign.workload_digest,
        );
    }
    let holdouts = campaign.holdouts.as_ref();
    let portfolio = holdouts.map(|h| h.portfolio_digest.clone());
    if r.evidence.holdout_portfolio_digest != portfolio {
        return differ(
            "holdout_portfolio_digest",
            &r.evidence.holdout_portfolio_digest,
            &portfolio,
        );
    }
    let holdout_names: Vec<String> = (holdouts.iter())
        .flat_map(|h| h.holdouts.scenarios.iter().map(|s| s.name.clone()))
        .collect();
    if r.evidence.holdout_names != holdout_names {
        return differ("holdout_names", &r.evidence.holdout_names, &holdout_names);
    }
    if r.evidence.min_effect != settings.min_effect.get() {
        return differ(
            "min_effect",
            &r.evidence.min_effect,
            &settings.min_effect.get(),
        );
    }
    if r.evidence.metric != settings.metric {
        return differ("metric", &r.evidence.metric, &settings.metric);
    }
    if let Some(search) = &expected.request.search {
        if r.evidence.candidates_tried != search.candidates_tried
            || r.evidence.search != Some(search.figures.clone())
        {
            return Err(Refusal::OtherSearch);
        }
    }
    check_counts(r, expected)?;
    if r.verdict == Verdict::Accepted {
        let mut want: Vec<&str> = (campaign.workload.scenarios.iter())
            .filter(|s| s.role == Role::Training)
            .map(|s| s.name.as_str())
            .chain(holdout_names.iter().map(String::as_str))
            .collect();
        let mut got: Vec<&str> = r
            .evidence
            .scenarios
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        want.sort_unstable();
        got.sort_unstable();
        if got != want {
            return differ("the accepted result's scenarios", &got, &want);
        }
    }
    Ok(())
}

/// Every measured scenario was planned with the campaign's configured counts.
fn check_counts(r: &ConfirmResult, expected: &Expected) -> Result<(), Refusal> {
    let settings = expected.request.plan.settings();
    let want = (
        settings.pairs.get(),
        settings.max_pairs(),
        settings.aa_pairs.get(),
        settings.warmup.get(),
    );
    for s in &r.evidence.scenarios {
        let plan = s.training.as_ref().and_then(|f| f.plan.as_ref());
        if let Some(p) = plan {
            let got = (p.pairs, p.max_pairs, p.aa_pairs, p.warmups);
            if got != want {
                return Err(Refusal::Counts {
                    scenario: s.name.clone(),
                    got: format!("{got:?}"),
                    want: format!("{want:?}"),
                });
            }
        }
    }
    Ok(())
}
