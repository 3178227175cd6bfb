//! Nothing is timed that did not change (docs/design.md §2.2.9): when every artifact the timed
//! commands run is byte for byte the baseline's, and the patch touches no build configuration and
//! no file a timed command names, the two arms run the same program on the same inputs, and any
//! ratio their runs showed would be noise. The confirmation then ends after its checks, in
//! seconds, with no real gain.

use super::Run;
use crate::evidence::result::{ArtifactDigest, TreeLabel};

impl Run<'_> {
    /// Whether the candidate's timed programs are the baseline's.
    pub(super) fn timed_programs_unchanged(&self) -> bool {
        let of = |tree: TreeLabel| -> Vec<(&str, &str)> {
            let mut v: Vec<(&str, &str)> = (self.result.artifacts.iter())
                .filter(|a: &&ArtifactDigest| a.tree == tree)
                .map(|a| (a.path.as_str(), a.sha256.as_str()))
                .collect();
            v.sort_unstable();
            v
        };
        let (baseline, candidate) = (of(TreeLabel::Baseline), of(TreeLabel::Candidate));
        if baseline.is_empty() || baseline != candidate {
            return false;
        }
        if !self.result.config_lane.files.is_empty() {
            return false;
        }
        let workload = &self.plan.campaign.workload;
        let holdouts = (self.plan.campaign.holdouts.iter()).flat_map(|h| &h.holdouts.scenarios);
        let commands: Vec<&str> = (workload.scenarios.iter().chain(holdouts))
            .flat_map(|s| {
                [
                    Some(s.run.as_str()),
                    s.count.as_ref().map(|c| c.run.as_str()),
                ]
                .into_iter()
                .flatten()
            })
            .collect();
        let named = |path: &str| {
            let name = path.rsplit('/').next().unwrap_or(path);
            commands.iter().any(|c| c.contains(name))
        };
        !self.result.patch.files.iter().any(|f| named(&f.path))
    }
}
