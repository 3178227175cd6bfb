//! The protected files of every tree stay as they were made: recorded from the first tree right
//! after it is made and overlaid, kept read-only to sandboxed builds from then on, and checked
//! after every build and on both sides of the timed runs (docs/design.md §2.2.3). Patch safety
//! keeps protected paths out of the patch; this catches the build, test or run that edits one
//! itself (a build file the build tool reads first, a `build.rs`, a test script), sandboxed or
//! not.

use super::Run;
use super::stages::{Step, TimedTrees};
use crate::evidence::result::{GateName, GateStatus, TreeLabel};
use crate::pipeline::PipelineError;
use crate::tree::{Protected, Tree};

impl Run<'_> {
    /// Records the protected files of `t`, a tree fresh from make and overlay, as the reference
    /// for every tree of this run, and keeps them read-only in every build from now on.
    pub(super) fn record_protected(&mut self, t: &Tree) -> Result<Protected, PipelineError> {
        let globs = &self.plan.campaign.workload.protected;
        crate::pipeline::checks::record_protected(t, globs, &mut self.sandbox)
    }

    /// Whether `trees` still hold the protected files as `recorded` after `who` ran ("the
    /// build"): a tree that differs fails gate `patch safety`, naming the file and the tree,
    /// unless it is a baseline's tree under the sandbox: no candidate can reach it there, so the
    /// baseline's own steps write what the workload protects (the check engine's
    /// `lane::protected_kept`).
    pub(super) fn protected_unchanged(
        &mut self,
        recorded: &Protected,
        trees: &[(TreeLabel, &Tree)],
        who: &str,
    ) -> Result<Step<()>, PipelineError> {
        let kept = crate::pipeline::lane::protected_kept(self.rules(recorded), trees, who);
        self.settle(kept)
    }

    /// [`Run::protected_unchanged`] for the trees the timed runs use: the baseline, the candidate,
    /// the second baseline and the configuration-only tree.
    pub(super) fn measured_trees_unchanged(
        &mut self,
        timed: &TimedTrees,
        who: &str,
    ) -> Result<Step<()>, PipelineError> {
        self.protected_unchanged(&timed.protected, &timed.labelled(), who)
    }

    /// Turns the passed `patch safety` gate into a failed one with `detail` (one gate each).
    pub(super) fn fail_patch_safety<T>(&mut self, detail: String) -> Step<T> {
        const GATE: GateName = GateName::PatchSafety;
        match self.evidence.gates.iter_mut().find(|g| g.name == GATE) {
            Some(g) => {
                g.status = GateStatus::Failed;
                g.detail = detail;
                Step::Stopped(GATE)
            }
            None => self.fail_gate(GATE, detail),
        }
    }
}
