//! The gates a candidate patch meets before it is applied, in confirmation and screening alike
//! (docs/design.md §2.2.3): patch safety (paths, implicit build files, applied size), then lane
//! probes. Both commands call these, so screening refuses exactly what confirmation would.

use crate::spec::workload::Workload;
use crate::tree::{self, LaneProbed, PatchError, PatchSummary, Tree};

/// The `patch safety` gate for `summary` against the baseline tree `baseline` (before the
/// patch), the workload's places, and the applied-size limit `cap`: its detail when passed, the
/// refusal (a record keeps it with [`crate::failure::with_causes`]) when failed.
pub(crate) fn patch_safety(
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

/// The `lane probes` gate for `patch`: its detail (naming what the workload allowed) when
/// passed, the probes found when failed.
pub(crate) fn lane_probes(patch: &[u8], workload: &Workload) -> Result<String, LaneProbed> {
    tree::gate_detail(&tree::scan_probes(patch, &workload.allow_probes))
}
