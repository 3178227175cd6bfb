//! The first stage of a confirmation: the baseline's clean tree with the overlay, the patch's
//! gates (patch safety, lane probes), the candidate's tree with the patch applied, and the
//! configuration-only tree when that lane runs. It returns the [`Prepared`] trees the builds
//! take, or stops at the first failed gate.

use super::stages::{MainTrees, Prepared, Step};
use super::{PipelineError, Run};
use crate::evidence::result::{self, PatchFileChange, TreeLabel};
use crate::pipeline::{lane, patch_gates};
use crate::tree::{self, Tree};

impl Run<'_> {
    /// Trees, overlay, patch safety and apply: the two main trees, or the gate that stopped the
    /// confirmation.
    pub(super) fn prepare_trees(&mut self) -> Result<Step<Prepared>, PipelineError> {
        self.stage("prepare trees");
        let summary = match patch_gates::inspect(&self.plan.patch) {
            Ok(s) => s,
            Err(stop) => return Ok(self.stop(stop)),
        };
        self.evidence.patch.files = summary
            .files
            .iter()
            .map(|f| PatchFileChange {
                path: f.display_path().to_string(),
                status: change_name(f.kind).to_string(),
                added: f.added_lines,
                removed: f.removed_lines,
            })
            .collect();
        self.evidence.patch.added = summary.added_lines;
        self.evidence.patch.removed = summary.removed_lines;
        let baseline = self.materialize(TreeLabel::Baseline)?;
        self.find_unsealed_holdouts(&baseline);
        let protected = self.record_protected(&baseline)?;
        let plan = self.plan;
        let cap = plan.campaign.spec.confirm.max_applied_bytes;
        let (patch, workload) = (&plan.patch[..], &plan.campaign.workload);
        let applied = lane::gates_and_apply(patch, &summary, &baseline, workload, cap, || {
            self.materialize(TreeLabel::Candidate)
        })?;
        for (name, detail) in applied.passed {
            self.pass_gate(name, detail);
        }
        let (candidate, applier) = match applied.tree {
            Ok(applied) => applied,
            Err(stop) => return Ok(self.stop(stop)),
        };
        self.evidence.patch.applier = Some(applier.to_string());
        let config_only = self.prepare_config_lane()?;
        Ok(Step::Go(Prepared {
            main: MainTrees {
                baseline,
                candidate,
            },
            config_only,
            protected,
        }))
    }

    /// Records every holdout that the baseline's tree as a candidate sees it (overlay included)
    /// or the campaign's brief names (docs/design.md §2.2.12), and warns of each: such a holdout
    /// is not sealed, and the tier cannot be `tested`.
    fn find_unsealed_holdouts(&mut self, baseline: &Tree) {
        let campaign = &self.plan.campaign;
        let Some(h) = &campaign.holdouts else {
            return;
        };
        let brief = &campaign.spec.brief;
        let brief_text = [brief.objective.as_str(), brief.bottleneck.as_str()]
            .into_iter()
            .chain(brief.constraints.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let texts = [("the campaign's brief", brief_text.as_str())];
        let found = tree::holdout_mentions(
            &baseline.root,
            &texts,
            &h.holdouts.scenarios,
            &campaign.workload.scenarios,
        );
        for m in found {
            self.warn(format!(
                "holdout `{}` is not sealed: {} names its {}, and a candidate or an agent can \
                 read it (the tier cannot be tested; name no holdout where candidates look)",
                m.scenario, m.place, m.found
            ));
            self.evidence
                .unsealed_holdouts
                .push(result::UnsealedHoldout {
                    scenario: m.scenario,
                    place: m.place,
                    found: m.found.to_string(),
                });
        }
    }

    /// A fresh clean checkout of the baseline in the work directory, with the overlay copied in.
    pub(super) fn materialize(&mut self, label: TreeLabel) -> Result<Tree, PipelineError> {
        let dest = self.work.join(tree::dir_name(&label.to_string()));
        let campaign = &self.plan.campaign;
        let overlay = lane::Overlay {
            files: &campaign.overlay,
            base: &campaign.overlay_base,
        };
        let (t, copied) = lane::fresh_tree(&self.pinned, &dest, label, Some(overlay))?;
        if self.evidence.overlay.is_empty() {
            self.evidence.overlay = copied
                .into_iter()
                .map(|o| result::FileDigest {
                    path: o.dest_rel.display().to_string(),
                    sha256: o.sha256,
                })
                .collect();
        }
        Ok(t)
    }
}

/// How a changed file is named in the result.
fn change_name(kind: tree::ChangeKind) -> &'static str {
    match kind {
        tree::ChangeKind::Added => "added",
        tree::ChangeKind::Deleted => "deleted",
        tree::ChangeKind::Modified => "modified",
        tree::ChangeKind::Renamed => "renamed",
        tree::ChangeKind::Copied => "copied",
        tree::ChangeKind::ModeChange => "mode change",
    }
}
