//! The gates a candidate patch meets up to its apply, in confirmation and screening alike
//! (docs/design.md §2.2.3): it must read as a diff, then patch safety (paths, implicit build
//! files, applied size), then lane probes, then it must apply. Both commands call these, so
//! screening refuses exactly what confirmation would; each failure is a
//! [`GateStop`](crate::evidence::outcome::GateStop), which a confirmation records as its failed
//! gate and a campaign turns into the candidate's status.

use crate::evidence::names::GateName;
use crate::evidence::outcome::{Failure, GateStop};
use crate::failure::with_causes;
use crate::spec::workload::Workload;
use crate::tree::{self, PatchError, PatchSummary, Tree};

/// The patch read as a diff, or the `patch safety` gate it fails when it cannot be.
pub(crate) fn inspect(patch: &[u8]) -> Result<PatchSummary, GateStop> {
    tree::inspect_patch(patch).map_err(|e| GateStop::failed(GateName::PatchSafety, with_causes(&e)))
}

/// The gates before the apply, judged in order up to the first that fails: those passed, each
/// with its detail, and the one that failed, if one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BeforeApply {
    pub passed: Vec<(GateName, String)>,
    pub stop: Option<GateStop>,
}

/// Patch safety for `summary` against the baseline tree `baseline` (before the patch), then lane
/// probes for `patch`, under the workload's places and the applied-size limit `cap`.
pub(crate) fn before_apply(
    summary: &PatchSummary,
    patch: &[u8],
    baseline: &Tree,
    workload: &Workload,
    cap: u64,
) -> BeforeApply {
    let gates = [
        (
            GateName::PatchSafety,
            patch_safety(summary, baseline, workload, cap).map_err(|e| with_causes(&e)),
        ),
        (
            GateName::LaneProbes,
            tree::gate_detail(&tree::scan_probes(patch, &workload.allow_probes))
                .map_err(|e| with_causes(&e)),
        ),
    ];
    let mut passed = Vec::new();
    for (gate, judged) in gates {
        match judged {
            Ok(detail) => passed.push((gate, detail)),
            Err(detail) => {
                let stop = Some(GateStop::failed(gate, detail));
                return BeforeApply { passed, stop };
            }
        }
    }
    BeforeApply { passed, stop: None }
}

/// The `patch safety` gate: its detail when passed, the refusal when failed.
fn patch_safety(
    summary: &PatchSummary,
    baseline: &Tree,
    workload: &Workload,
    cap: u64,
) -> Result<String, PatchError> {
    let cwds = workload.command_cwds();
    let places = tree::BuildPlaces {
        cwds: &cwds,
        protected: &workload.protected,
        config_files: &workload.config_files,
    };
    let safe = tree::check_patch_safety(summary, baseline, &workload.protected)
        .and_then(|()| tree::check_build_files(summary, baseline, places))
        .and_then(|()| tree::check_applied_size(summary, baseline, cap));
    let applied_bytes = safe?;
    Ok(format!(
        "no path outside the tree, through a symlink, protected, or a new build file; writes at \
         most {applied_bytes} bytes (limit {cap})"
    ))
}

/// Applies `patch` to the fresh tree `candidate`: the name of what applied it (`libgit2`,
/// `git-cli`), or the failed `apply` gate — a refusal when what stopped it is not a hunk that
/// does not fit (or a binary change without its data).
pub(crate) fn apply(candidate: &Tree, patch: &[u8]) -> Result<&'static str, GateStop> {
    match tree::apply_patch(candidate, patch) {
        Ok(applied) => Ok(match applied.applier {
            tree::Applier::Libgit2 => "libgit2",
            tree::Applier::GitCli => "git-cli",
        }),
        Err(e) => Err(GateStop {
            gate: GateName::Apply,
            failure: match e {
                PatchError::DoesNotApply { .. } | PatchError::BinaryWithoutData { .. } => {
                    Failure::Failed
                }
                _ => Failure::Refused,
            },
            detail: with_causes(&e),
        }),
    }
}
