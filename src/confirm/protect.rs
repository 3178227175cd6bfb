//! The protected files of every tree stay as they were made: recorded from the first tree right
//! after it is made and overlaid, kept read-only to sandboxed builds from then on, and checked
//! after every build and on both sides of the timed runs (docs/design.md §2.2.3). Patch safety
//! keeps protected paths out of the patch; this catches the build, test or run that edits one
//! itself (a build file the build tool reads first, a `build.rs`, a test script), sandboxed or
//! not.

use super::{Flow, Run};
use crate::evidence::result::{GateName, GateStatus, TreeLabel};
use crate::pipeline::PipelineError;
use crate::tree::{self, Tree};

impl Run<'_> {
    /// Records the protected files of `t`, a tree fresh from make and overlay, as the reference
    /// for every tree of this run, and keeps them read-only in every build from now on.
    pub(super) fn record_protected(&mut self, t: &Tree) -> Result<(), PipelineError> {
        let globs = &self.plan.campaign.workload.protected;
        let recorded = tree::record_protected(&t.root, globs).map_err(|e| {
            PipelineError::Internal(format!("cannot record the protected files: {e}"))
        })?;
        self.sandbox.protect(recorded.read_only());
        self.protected = Some(recorded);
        Ok(())
    }

    /// Whether `trees` still hold the protected files as recorded after `who` ran ("the build").
    /// A tree that differs fails gate `patch safety`, naming the file and the tree, unless it is
    /// a baseline's tree under the sandbox: no candidate can reach it there, so the baseline's
    /// own steps write what the workload protects.
    pub(super) fn protected_unchanged(
        &mut self,
        trees: &[(TreeLabel, &Tree)],
        who: &str,
    ) -> Result<Flow, PipelineError> {
        let Some(recorded) = &self.protected else {
            return Err(PipelineError::Internal(
                "the protected files were never recorded".to_string(),
            ));
        };
        for (label, t) in trees {
            let change = recorded.changed_in(&t.root).map_err(|e| {
                PipelineError::Internal(format!("cannot check the protected files: {e}"))
            })?;
            let Some(change) = change else { continue };
            let what = format!("{} in the {label} tree", change.describe(who));
            if self.sandbox.enabled() && !holds_the_patch(*label) {
                return Err(PipelineError::Baseline(format!(
                    "{what}: the workload's own steps must leave its protected files as they are"
                )));
            }
            self.fail_patch_safety(what);
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    }

    /// [`Run::protected_unchanged`] for the trees the timed runs use: the baseline, the candidate,
    /// the second baseline and the configuration-only tree.
    pub(super) fn measured_trees_unchanged(&mut self, who: &str) -> Result<Flow, PipelineError> {
        let t = &self.trees;
        let trees: Vec<(TreeLabel, Tree)> = [
            (TreeLabel::Baseline, &t.baseline),
            (TreeLabel::Candidate, &t.candidate),
            (TreeLabel::BaselineAgain, &t.baseline_again),
            (TreeLabel::ConfigOnly, &t.config_only),
        ]
        .into_iter()
        .filter_map(|(label, tree)| tree.clone().map(|tree| (label, tree)))
        .collect();
        let trees: Vec<(TreeLabel, &Tree)> = trees.iter().map(|(l, t)| (*l, t)).collect();
        self.protected_unchanged(&trees, who)
    }

    /// Turns the passed `patch safety` gate into a failed one with `detail` (one gate each).
    fn fail_patch_safety(&mut self, detail: String) {
        const GATE: GateName = GateName::PatchSafety;
        match self.result.gates.iter_mut().find(|g| g.name == GATE) {
            Some(g) => {
                g.status = GateStatus::Failed;
                g.detail = detail;
            }
            None => {
                self.fail_gate(GATE, detail);
            }
        }
    }
}

/// Whether a tree has the candidate's patch (or part of it) applied.
fn holds_the_patch(label: TreeLabel) -> bool {
    matches!(
        label,
        TreeLabel::Candidate
            | TreeLabel::CandidateSanitize
            | TreeLabel::ConfigOnly
            | TreeLabel::Numbered(_)
            | TreeLabel::Agent(_)
    )
}
