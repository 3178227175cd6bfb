//! Nothing is timed that did not change (docs/design.md §2.2.9): the confirmation's side of
//! `pipeline::unchanged`. When the candidate's timed programs are the baseline's, the
//! confirmation ends after its checks, in seconds, with no real gain.

use super::Run;
use crate::evidence::result::TreeLabel;
use crate::pipeline::unchanged::{TimedPrograms, patch_paths, timed_programs_unchanged};
use crate::tree;

impl Run<'_> {
    /// Whether the candidate's timed programs are the baseline's. The patch is read again for its
    /// paths before and after (the result records one per file); one that cannot be read counts
    /// as changed.
    pub(super) fn timed_programs_unchanged(&self) -> bool {
        let Ok(summary) = tree::inspect_patch(&self.plan.patch) else {
            return false;
        };
        let of = |tree: TreeLabel| -> Vec<(&str, &str)> {
            (self.evidence.artifacts.iter())
                .filter(|a| a.tree == tree)
                .map(|a| (a.path.as_str(), a.sha256.as_str()))
                .collect()
        };
        let workload = &self.plan.campaign.workload;
        let holdouts = (self.plan.campaign.holdouts.iter()).flat_map(|h| &h.holdouts.scenarios);
        timed_programs_unchanged(&TimedPrograms {
            baseline: of(TreeLabel::Baseline),
            candidate: of(TreeLabel::Candidate),
            config_changed: !self.evidence.config_lane.files.is_empty(),
            patch_paths: patch_paths(&summary),
            scenarios: workload.scenarios.iter().chain(holdouts).collect(),
        })
    }
}
