//! The untimed lanes of the search: the baseline is built, tested and checked once; each candidate
//! is checked for safety, applied, built, tested and compared against the baseline's check
//! outputs. Only candidates that pass everything are screened. A candidate's checks end as a
//! [`CheckOutcome`], the gate that stopped it as a confirmation names it; its status is computed
//! from that (`evidence::outcome`).

use std::path::Path;
use std::time::Instant;

use super::CampaignRun;
use super::journal::Entry;
use crate::check::Comparison;
use crate::evidence::outcome::{CheckOutcome, GateStop};
use crate::evidence::result::{CheckLane, GateName, TreeLabel};
use crate::pipeline::PipelineError;
use crate::pipeline::checks::{
    LaneStep, Shown, artifact_digest, compare_check_outputs, failure_text, mismatch_text,
    over_limit, protected_stop, step_stop,
};
use crate::pipeline::patch_gates;
use crate::pipeline::steps::StepOutput;
use crate::pipeline::unchanged::TimedPrograms;
use crate::spec::workload::{Role, Scenario};
use crate::tree::{self, Tree};

/// The outcome of one lane step for a candidate: go on, or the gate that stopped it.
type Lane = Result<(), GateStop>;

/// Moves a leftover tree of an interrupted run out of the way, then removes it as far as it can.
/// A SIGKILLed evo leaves its build processes running, and one of them may still be writing into
/// the tree when the resumed run starts: removing in place then fails with "Directory not empty".
/// The rename is atomic and lets the writer finish in the moved folder; whatever it leaves goes
/// with the run's work folder.
fn clear_leftover(dest: &std::path::Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(dest).is_err() {
        return Ok(());
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = dest.file_name().unwrap_or_default().to_string_lossy();
    let aside = dest.with_file_name(format!(".{name}.leftover-{nanos}"));
    std::fs::rename(dest, &aside)?;
    let _ = std::fs::remove_dir_all(&aside);
    Ok(())
}

/// A fresh tree with the overlay copied in, and the protected files it and every later tree of
/// the run must keep: what a build, test or check in it is checked against.
pub(super) struct Overlaid {
    pub tree: Tree,
    pub protected: crate::tree::Protected,
}

impl CampaignRun<'_> {
    /// [`CampaignRun::fresh_tree`] with the overlay, and the protected files its builds must keep.
    pub(super) fn overlaid_tree(&mut self, label: TreeLabel) -> Result<Overlaid, PipelineError> {
        let tree = self.fresh_tree(label, false)?;
        let protected = self.overlay(&tree)?;
        Ok(Overlaid { tree, protected })
    }

    /// A fresh clean tree `work/<label>` (replacing a leftover of an interrupted run), with the
    /// overlay copied in when `overlay` is set.
    pub(super) fn fresh_tree(
        &mut self,
        label: TreeLabel,
        overlay: bool,
    ) -> Result<Tree, PipelineError> {
        let dest = self.work.join(tree::dir_name(&label.to_string()));
        clear_leftover(&dest).map_err(|e| PipelineError::io("cannot clear a leftover tree", e))?;
        let t = tree::materialize(&self.pinned, &dest)
            .map_err(|e| PipelineError::internal_while(format!("cannot check out {label}"), e))?;
        if overlay {
            self.overlay(&t)?;
        }
        Ok(t)
    }

    /// Copies the overlay into the fresh tree `t`; the protected files every tree of this run
    /// must keep, recorded from the first such tree of this process (they all start with the same
    /// ones: no patch may touch them) and read-only in every build from then on (docs/design.md
    /// §2.2.3).
    fn overlay(&mut self, t: &Tree) -> Result<crate::tree::Protected, PipelineError> {
        tree::copy_overlay(&self.plan.overlay, t, &self.plan.overlay_base)
            .map_err(|e| PipelineError::usage_while("cannot copy the overlay", e))?;
        let recorded = match self.protected.take() {
            Some(recorded) => recorded,
            None => {
                let globs = &self.plan.workload.protected;
                crate::pipeline::checks::record_protected(t, globs, &mut self.sandbox)?
            }
        };
        self.protected = Some(recorded.clone());
        Ok(recorded)
    }

    /// Whether `t` still holds the `recorded` protected files after `who` ran in it: a
    /// candidate's tree that differs is refused, naming the file; the baseline's (built alone)
    /// is the workload's own fault.
    pub(super) fn protected_unchanged(
        &self,
        recorded: &crate::tree::Protected,
        t: &Tree,
        label: TreeLabel,
        who: &str,
    ) -> Result<Lane, PipelineError> {
        match protected_stop(recorded, (label, t), who, true, Shown::CANDIDATE)? {
            Some(stop) => Ok(Err(stop)),
            None => Ok(Ok(())),
        }
    }

    pub(super) fn training(&self) -> Vec<Scenario> {
        let s = &self.plan.workload.scenarios;
        s.iter()
            .filter(|s| s.role == Role::Training)
            .cloned()
            .collect()
    }

    fn step(
        &self,
        tree: &Tree,
        label: TreeLabel,
        step: LaneStep<'_>,
    ) -> Result<StepOutput, PipelineError> {
        step.run(
            (label, tree),
            &self.run_dir,
            &self.sandbox,
            &*self.opts.runners,
        )
    }

    /// Build, artifacts and tests of one overlaid tree: `Err` carries the gate that stopped it.
    fn build_and_test(&mut self, o: &Overlaid, label: TreeLabel) -> Result<Lane, PipelineError> {
        let (t, protected) = (&o.tree, &o.protected);
        let w = self.plan.workload.clone();
        let started = Instant::now();
        let out = self.step(t, label, LaneStep::build(&w))?;
        self.build_s += started.elapsed().as_secs_f64();
        if let Err(stop) = self.protected_unchanged(protected, t, label, "the build")? {
            return Ok(Err(stop));
        }
        let limit_mib = self.plan.spec.sandbox.limits.tree_mib.get();
        if let Some(over) = over_limit(t, limit_mib) {
            if label == TreeLabel::Baseline {
                return Err(PipelineError::Baseline(format!(
                    "the baseline tree: {over}"
                )));
            }
            return Ok(Err(GateStop::failed(GateName::Build, over)));
        }
        if !out.record.succeeded() {
            let timeout = w.build.timeout_s.duration();
            return Ok(Err(step_stop(
                GateName::Build,
                &out,
                timeout,
                Shown::CANDIDATE,
            )));
        }
        let cwd = w.build.cwd.as_deref().unwrap_or(".");
        if let Some(missing) = w
            .build
            .artifacts
            .iter()
            .find(|a| !t.root.join(cwd).join(a).is_file())
        {
            return Ok(Err(GateStop::failed(
                GateName::Build,
                format!("the build did not produce `{missing}`"),
            )));
        }
        for (i, command) in w.test.command.as_slice().iter().enumerate() {
            let out = self.step(t, label, LaneStep::test(&w.test, i, command))?;
            if let Err(stop) = self.protected_unchanged(protected, t, label, "a test")? {
                return Ok(Err(stop));
            }
            if !out.record.succeeded() {
                let timeout = w.test.timeout_s.duration();
                return Ok(Err(step_stop(
                    GateName::Tests,
                    &out,
                    timeout,
                    Shown::CANDIDATE,
                )));
            }
        }
        Ok(Ok(()))
    }

    fn run_check(
        &self,
        t: &Tree,
        label: TreeLabel,
        s: &Scenario,
    ) -> Result<StepOutput, PipelineError> {
        self.step(t, label, LaneStep::check(s, &s.check, self.search_seed))
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

    /// The check lane of one candidate, up to the first gate that stops it: the gates before
    /// the apply and the apply (`pipeline::patch_gates`, as a confirmation meets them), build,
    /// artifacts and tests, then the check outputs against the baseline's.
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
        let cap = self.plan.spec.confirm.max_applied_bytes;
        let judged = patch_gates::before_apply(&summary, bytes, baseline, &self.plan.workload, cap);
        if let Some(mut stop) = judged.stop {
            // A screening reason names the lane-probes gate; a patch-safety one says itself.
            if stop.gate == GateName::LaneProbes {
                stop.detail = format!("lane probes: {}", stop.detail);
            }
            return Ok(stop.into());
        }
        let overlaid = self.overlaid_tree(label)?;
        let t = &overlaid.tree;
        if let Err(stop) = patch_gates::apply(t, bytes) {
            return Ok(stop.into());
        }
        seed_cargo_target(&baseline.root, &t.root, &self.plan.workload.build);
        if let Err(stop) = self.build_and_test(&overlaid, label)? {
            return Ok(stop.into());
        }
        for s in self.training() {
            let cand = self.run_check(t, label, &s)?;
            let protected = &overlaid.protected;
            if let Err(stop) = self.protected_unchanged(protected, t, label, "a check")? {
                return Ok(stop.into());
            }
            if !cand.record.succeeded() {
                return Ok(CheckOutcome::Stopped(GateStop::failed(
                    GateName::Differential,
                    format!(
                        "check of `{}`: {}",
                        s.name,
                        failure_text(&cand, s.timeout_s.duration(), Shown::CANDIDATE)
                    ),
                )));
            }
            let reference = self
                .run_dir
                .output_path(TreeLabel::Baseline, &s.name)
                .map_err(|e| PipelineError::io("cannot find the baseline outputs", e))?;
            if let Comparison::Differs(m) =
                compare_check_outputs(&s, &reference, &cand.stdout_path)?
            {
                return Ok(CheckOutcome::Stopped(GateStop::failed(
                    GateName::Differential,
                    mismatch_text(&s, CheckLane::Differential, &m),
                )));
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

#[cfg(test)]
mod tests {
    use super::clear_leftover;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_leftover_tree_still_being_written_is_cleared() {
        // An orphaned build of a killed run keeps writing into the leftover tree; removing it in
        // place races with the writer ("Directory not empty"). Clearing must succeed every time.
        let dir = tempfile::tempdir().unwrap();
        for round in 0..20 {
            let dest = dir.path().join("baseline");
            std::fs::create_dir_all(dest.join("target/deep")).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            // Writes through an open directory handle, as a process whose cwd is there. Opened
            // here, not in the writer: a writer started late on a busy machine would otherwise
            // find the tree already moved aside.
            let deep = std::fs::File::open(dest.join("target/deep")).unwrap();
            let writer = {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut i = 0u64;
                    let at = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&deep));
                    while !stop.load(Ordering::Relaxed) {
                        let _ = std::fs::write(format!("{at}/f{i}"), b"x");
                        i += 1;
                    }
                })
            };
            std::thread::sleep(std::time::Duration::from_millis(5));
            let cleared = clear_leftover(&dest);
            stop.store(true, Ordering::Relaxed);
            writer.join().unwrap();
            assert!(cleared.is_ok(), "round {round}: {cleared:?}");
            assert!(!dest.exists(), "round {round}");
        }
        assert!(clear_leftover(&dir.path().join("never-there")).is_ok());
    }
}
