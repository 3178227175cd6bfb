//! The untimed lanes of the search: the baseline is built, tested and checked once; each candidate
//! is checked for safety, applied, built, tested and compared against the baseline's check
//! outputs by the one check engine (`pipeline::lane`), its baseline side the outputs the
//! baseline's tree left ([`Alone`]). Only candidates that pass everything are screened. A
//! candidate's checks end as a [`CheckOutcome`], the gate that stopped it as a confirmation names
//! it; its status is computed from that (`evidence::outcome`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::CampaignRun;
use super::journal::Entry;
use crate::evidence::outcome::{CheckOutcome, GateStop};
use crate::evidence::result::{CheckLane, GateName, TreeLabel};
use crate::pipeline::PipelineError;
use crate::pipeline::checks::{LaneStep, Shown, artifact_digest, failure_text};
use crate::pipeline::lane::{self, Lane, Ran, Sides, or_stop};
use crate::pipeline::patch_gates;
use crate::pipeline::steps::StepOutput;
use crate::pipeline::unchanged::TimedPrograms;
use crate::spec::workload::{Role, Scenario};
use crate::tree::{self, Protected, Tree};

/// A fresh tree with the overlay copied in, and the protected files it and every later tree of
/// the run must keep: what a build, test or check in it is checked against.
pub(super) struct Overlaid {
    pub tree: Tree,
    pub protected: Protected,
}

impl AsRef<Tree> for Overlaid {
    fn as_ref(&self) -> &Tree {
        &self.tree
    }
}

/// Screening's side of a step: the candidate's tree alone. The baseline's check outputs are the
/// ones its one tree left when the run began (`prepare_baseline`).
struct Alone<'r, 'a> {
    run: &'r CampaignRun<'a>,
    tree: (TreeLabel, &'r Tree),
}

impl Sides for Alone<'_, '_> {
    fn run(&mut self, step: &LaneStep<'_>, _: GateName) -> Result<Lane<Ran>, PipelineError> {
        let candidate = self.run.step(self.tree, step)?;
        Ok(Ok(Ran {
            candidate,
            baseline: None,
        }))
    }

    fn trees(&self) -> Vec<(TreeLabel, &Tree)> {
        vec![self.tree]
    }

    fn reference(&self, s: &Scenario, _: &Ran) -> Result<(PathBuf, String), PipelineError> {
        let path = (self.run.run_dir.output_path(TreeLabel::Baseline, &s.name))
            .map_err(|e| PipelineError::io("cannot find the baseline outputs", e))?;
        let sha256 = lane::output_sha256(&path)?;
        Ok((path, sha256))
    }
}

impl<'a> CampaignRun<'a> {
    /// [`CampaignRun::fresh_tree`] with the overlay, and the protected files its builds must keep.
    pub(super) fn overlaid_tree(&mut self, label: TreeLabel) -> Result<Overlaid, PipelineError> {
        let tree = self.fresh_tree(label, true)?;
        let recorded = match self.protected.take() {
            Some(recorded) => recorded,
            None => {
                let globs = &self.plan.workload.protected;
                crate::pipeline::checks::record_protected(&tree, globs, &mut self.sandbox)?
            }
        };
        self.protected = Some(recorded.clone());
        Ok(Overlaid {
            tree,
            protected: recorded,
        })
    }

    /// A fresh clean tree `work/<label>` (replacing a leftover of an interrupted run), with the
    /// overlay copied in when `overlay` is set. The protected files every tree of this run must
    /// keep are recorded from the first overlaid tree of this process (they all start with the
    /// same ones: no patch may touch them) and read-only in every build from then on
    /// (docs/design.md §2.2.3): [`CampaignRun::overlaid_tree`].
    pub(super) fn fresh_tree(
        &mut self,
        label: TreeLabel,
        overlay: bool,
    ) -> Result<Tree, PipelineError> {
        let dest = self.work.join(tree::dir_name(&label.to_string()));
        let overlay = overlay.then_some(lane::Overlay {
            files: &self.plan.overlay,
            base: &self.plan.overlay_base,
        });
        Ok(lane::fresh_tree(&self.pinned, &dest, label, overlay)?.0)
    }

    /// What every step of the search is held to: a changed protected file or a tree over the
    /// disk limit is the candidate's (the baseline is built alone).
    fn rules<'p>(&self, protected: &'p Protected) -> lane::Rules<'p> {
        lane::Rules {
            protected,
            limit_mib: self.plan.spec.sandbox.limits.tree_mib.get(),
            isolated: true,
            shown: Shown::CANDIDATE,
        }
    }

    /// Whether `t` still holds the `recorded` protected files after `who` ran in it: a
    /// candidate's tree that differs is refused, naming the file; the baseline's (built alone)
    /// is the workload's own fault.
    pub(super) fn protected_unchanged(
        &self,
        recorded: &Protected,
        t: &Tree,
        label: TreeLabel,
        who: &str,
    ) -> Result<Lane<()>, PipelineError> {
        lane::protected_kept(self.rules(recorded), &[(label, t)], who)
    }

    pub(super) fn training(&self) -> Vec<Scenario> {
        let s = &self.plan.workload.scenarios;
        s.iter()
            .filter(|s| s.role == Role::Training)
            .cloned()
            .collect()
    }

    /// Runs `step` in one tree.
    fn step(
        &self,
        tree: (TreeLabel, &Tree),
        step: &LaneStep<'_>,
    ) -> Result<StepOutput, PipelineError> {
        step.run(tree, &self.run_dir, &self.sandbox, &*self.opts.runners)
    }

    /// Screening's sides of a step in the tree `t` labelled `label`.
    fn alone<'r>(&'r self, label: TreeLabel, t: &'r Tree) -> Alone<'r, 'a> {
        Alone {
            run: self,
            tree: (label, t),
        }
    }

    /// Build, artifacts and tests of one overlaid tree: `Err` carries the gate that stopped it.
    /// `build_s` counts the build step (and the checks of the tree it left).
    fn build_and_test(
        &mut self,
        o: &Overlaid,
        label: TreeLabel,
    ) -> Result<Lane<()>, PipelineError> {
        let (plan, rules) = (self.plan, self.rules(&o.protected));
        let step = LaneStep::build(&plan.workload);
        let started = Instant::now();
        let built = lane::build(
            &mut self.alone(label, &o.tree),
            rules,
            &step,
            (GateName::Build, "the build"),
        );
        self.build_s += started.elapsed().as_secs_f64();
        or_stop!(built);
        let mut sides = self.alone(label, &o.tree);
        or_stop!(lane::artifacts(&sides, &plan.workload.build));
        Ok(lane::tests(&mut sides, rules, &plan.workload.test)?.map(|_| ()))
    }

    fn run_check(
        &self,
        t: &Tree,
        label: TreeLabel,
        s: &Scenario,
    ) -> Result<StepOutput, PipelineError> {
        self.step((label, t), &LaneStep::check(s, &s.check, self.search_seed))
    }

    /// Builds, tests and checks the baseline once; its check outputs are the reference.
    pub(super) fn prepare_baseline(&mut self) -> Result<Tree, PipelineError> {
        let dest = self
            .work
            .join(tree::dir_name(&TreeLabel::Baseline.to_string()));
        if self.state.baseline_ready && dest.join(".git").exists() {
            return Ok(Tree {
                root: dest,
                base_sha: self.pinned.sha.clone(),
                commit: String::new(),
            });
        }
        self.stage("baseline: build, tests, checks");
        let overlaid = self.overlaid_tree(TreeLabel::Baseline)?;
        let started = Instant::now();
        if let Err(stop) = self.build_and_test(&overlaid, TreeLabel::Baseline)? {
            return Err(PipelineError::Baseline(stop.detail));
        }
        let t = overlaid.tree;
        for s in self.training() {
            let out = self.run_check(&t, TreeLabel::Baseline, &s)?;
            if !out.record.succeeded() {
                return Err(PipelineError::Baseline(format!(
                    "check of `{}`: {}",
                    s.name,
                    failure_text(&out, s.timeout_s.duration(), Shown::CANDIDATE)
                )));
            }
        }
        self.record(Entry::BaselineReady {
            build_s: started.elapsed().as_secs_f64(),
        })?;
        Ok(t)
    }

    /// Safety, apply, build, tests and differential for one candidate; the status is journaled.
    pub(super) fn check_candidate(
        &mut self,
        index: usize,
        baseline: &Tree,
    ) -> Result<(), PipelineError> {
        let bytes = self.candidate_patch(index)?.bytes;
        let label = TreeLabel::Numbered(index);
        self.candidate_stage(&format!("check {label}"), index);
        let started = Instant::now();
        let outcome = self.candidate_lane(label, &bytes, baseline)?;
        if outcome == CheckOutcome::Passed {
            self.check_s.push(started.elapsed().as_secs_f64());
        }
        let reason = match &outcome {
            // The built tree stays for screening, which comes next.
            CheckOutcome::Passed => "builds, tests and check outputs match".to_string(),
            CheckOutcome::Unchanged => UNCHANGED_REASON.to_string(),
            CheckOutcome::Stopped(stop) => stop.detail.clone(),
        };
        if outcome != CheckOutcome::Passed {
            let _ = std::fs::remove_dir_all(self.work.join(tree::dir_name(&label.to_string())));
        }
        self.set_status(index, outcome.status(), reason)
    }

    /// Candidate `index` stopped at a gate: its status, computed from the gate, and the reason.
    pub(super) fn stop_candidate(
        &mut self,
        index: usize,
        stop: GateStop,
    ) -> Result<(), PipelineError> {
        self.set_status(index, stop.status(), stop.detail)
    }

    /// The check lane of one candidate, up to the first gate that stops it, as the check engine
    /// (`pipeline::lane`) runs it for a confirmation: the gates before the apply and the apply,
    /// build, artifacts and tests, then the check outputs against the baseline's.
    fn candidate_lane(
        &mut self,
        label: TreeLabel,
        bytes: &[u8],
        baseline: &Tree,
    ) -> Result<CheckOutcome, PipelineError> {
        let summary = match patch_gates::inspect(bytes) {
            Ok(s) => s,
            Err(stop) => return Ok(stop.into()),
        };
        let plan = self.plan;
        let cap = plan.spec.confirm.max_applied_bytes;
        let applied =
            lane::gates_and_apply(bytes, &summary, baseline, &plan.workload, cap, || {
                self.overlaid_tree(label)
            })?;
        let overlaid = match applied.tree {
            Ok((overlaid, _)) => overlaid,
            Err(mut stop) => {
                // A screening reason names the lane-probes gate; a patch-safety one says itself.
                if stop.gate == GateName::LaneProbes {
                    stop.detail = format!("lane probes: {}", stop.detail);
                }
                return Ok(stop.into());
            }
        };
        let t = &overlaid.tree;
        seed_cargo_target(&baseline.root, &t.root, &plan.workload.build);
        if let Err(stop) = self.build_and_test(&overlaid, label)? {
            return Ok(stop.into());
        }
        let rules = self.rules(&overlaid.protected);
        let mut sides = self.alone(label, t);
        for s in sides.run.training() {
            let step = LaneStep::check(&s, &s.check, sides.run.search_seed);
            let checked = lane::check(
                &mut sides,
                rules,
                &s,
                &step,
                (CheckLane::Differential, true),
            )?;
            if let Some(stop) = checked.stop {
                return Ok(stop.into());
            }
        }
        if self.timed_programs_unchanged(baseline, t, bytes, &summary) {
            return Ok(CheckOutcome::Unchanged);
        }
        Ok(CheckOutcome::Passed)
    }

    /// `pipeline::unchanged` for screening: the two built trees' artifacts, the patch's paths and
    /// configuration files, and the training scenarios screening times. Anything that cannot be
    /// read counts as changed (the candidate is then screened as usual).
    fn timed_programs_unchanged(
        &self,
        baseline: &Tree,
        t: &Tree,
        bytes: &[u8],
        summary: &tree::PatchSummary,
    ) -> bool {
        let build = &self.plan.workload.build;
        let digests = |t: &Tree| -> Option<Vec<(String, String)>> {
            (build.artifacts.iter())
                .map(|a| Some((a.clone(), artifact_digest(t, build, a).ok()?)))
                .collect()
        };
        let (Some(b), Some(c)) = (digests(baseline), digests(t)) else {
            return false;
        };
        let Ok(split) = tree::split_patch(bytes, &self.plan.workload.config_files) else {
            return false;
        };
        fn pairs(v: &[(String, String)]) -> Vec<(&str, &str)> {
            v.iter().map(|(p, s)| (p.as_str(), s.as_str())).collect()
        }
        let training = self.training();
        crate::pipeline::unchanged::timed_programs_unchanged(&TimedPrograms {
            baseline: pairs(&b),
            candidate: pairs(&c),
            config_changed: !split.config_files.is_empty(),
            patch_paths: crate::pipeline::unchanged::patch_paths(summary),
            scenarios: training.iter().collect(),
        })
    }
}

/// The reason of a candidate whose timed programs are the baseline's: it is not screened.
pub(super) const UNCHANGED_REASON: &str = "the timed programs are identical to the baseline's \
     (every build artifact byte for byte, no build configuration or timed input changed): no \
     real gain, nothing to time";

/// Cargo targets: when the candidate's `Cargo.lock` equals the baseline's, start its build from a
/// copy of the baseline's compiled dependencies so only the changed crates rebuild. Best effort:
/// any failure just means a full build.
pub(super) fn seed_cargo_target(
    baseline: &Path,
    candidate: &Path,
    build: &crate::spec::workload::BuildStep,
) {
    let cwd = build.cwd.as_deref().unwrap_or(".");
    let target_rel = build
        .env
        .get("CARGO_TARGET_DIR")
        .map_or("target", String::as_str);
    if Path::new(target_rel).is_absolute() {
        return;
    }
    let (b, c) = (baseline.join(cwd), candidate.join(cwd));
    let same_lock = match (
        std::fs::read(b.join("Cargo.lock")),
        std::fs::read(c.join("Cargo.lock")),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    };
    let from = b.join(target_rel);
    if !same_lock || !from.is_dir() || c.join(target_rel).exists() {
        return;
    }
    let _ = std::process::Command::new("cp")
        .arg("-a")
        .arg("--reflink=auto")
        .arg(&from)
        .arg(c.join(target_rel))
        .status();
}
