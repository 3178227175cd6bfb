//! The check lane of a candidate, one engine for confirmation and screening (docs/design.md
//! §2.2, §3.3): a fresh tree with the overlay, the patch's gates and its apply, then the build
//! (protected files, tree size, exit), the artifacts, each test command, and each scenario's
//! check compared with the baseline's output. Every stop is a [`GateStop`], which a confirmation
//! records as its failed gate and screening turns into the candidate's status.
//!
//! Where the baseline's side of a step comes from is the caller's [`Sides`]: a confirmation runs
//! the baseline's step beside the candidate's and runs a failed one again alone before blaming
//! the baseline (`confirm::lanes`); screening reads what its one baseline tree left
//! (`campaign::checks`). The engine decides everything else, so both judge a candidate alike.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::checks::{
    LaneStep, Shown, artifact_digest, compare_check_outputs, failure_text, mismatch_text,
    over_limit, protected_stop, silent_check_warning, step_stop,
};
use super::steps::StepOutput;
use super::{PipelineError, io_err};
use crate::check::Comparison;
use crate::evidence::outcome::GateStop;
use crate::evidence::result::{
    ArtifactDigest, CheckLane, DifferentialRecord, GateName, SanitizerFinding, TreeLabel,
};
use crate::failure::with_causes;
use crate::spec::workload::{BuildStep, Compare, Scenario, TestStep, Workload};
use crate::tree::{self, Pinned, Protected, Tree};

/// What a stage of the lane made, or the gate that stopped the candidate there.
pub(crate) type Lane<T> = Result<T, GateStop>;

/// The candidate's output of one step, and the baseline's when it ran beside it.
pub(crate) struct Ran {
    pub candidate: StepOutput,
    pub baseline: Option<StepOutput>,
}

/// How the baseline's side of each step is had.
pub(crate) trait Sides {
    /// Runs `step` on the candidate's side, and on the baseline's where this arrangement runs it.
    /// A baseline step that fails, and fails again alone, is the baseline's own failure
    /// (`Err(PipelineError::Baseline)`); one that passes alone was disturbed by the candidate's
    /// beside it, which stops the lane at `gate`.
    fn run(&mut self, step: &LaneStep<'_>, gate: GateName) -> Result<Lane<Ran>, PipelineError>;

    /// Every tree the steps run in, labelled, the baseline's first.
    fn trees(&self) -> Vec<(TreeLabel, &Tree)>;

    /// The baseline's output of scenario `s`'s check (run now, in `ran`, or before): the file and
    /// its sha256.
    fn reference(&self, s: &Scenario, ran: &Ran) -> Result<(PathBuf, String), PipelineError>;
}

/// What every step of a lane is held to.
#[derive(Clone, Copy)]
pub(crate) struct Rules<'a> {
    /// The protected files every tree must keep, as the first fresh tree had them.
    pub protected: &'a Protected,
    /// `sandbox.limits.tree_mib`.
    pub limit_mib: u32,
    /// A baseline's tree no candidate could reach (under the sandbox, or built alone): what
    /// goes wrong in it is the workload's own failure.
    pub isolated: bool,
    /// How much of a failed step a reason shows.
    pub shown: Shown,
}

/// Moves a leftover tree of an interrupted run out of the way, then removes it as far as it can.
/// A SIGKILLed evo leaves its build processes running, and one of them may still be writing into
/// the tree when the resumed run starts: removing in place then fails with "Directory not empty".
/// The rename is atomic and lets the writer finish in the moved folder; whatever it leaves goes
/// with the run's work folder. An empty folder (not a link to one) is left where it is: it may
/// be a mount point the caller made for the tree, which cannot be moved.
pub(crate) fn clear_leftover(dest: &Path) -> std::io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(dest) else {
        return Ok(());
    };
    if meta.is_dir() && std::fs::read_dir(dest).is_ok_and(|mut e| e.next().is_none()) {
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

/// The overlay files a fresh tree gets (`workload.overlay`), with the folder their paths are
/// relative to.
#[derive(Clone, Copy)]
pub(crate) struct Overlay<'a> {
    pub files: &'a [PathBuf],
    pub base: &'a Path,
}

/// A clean checkout of `pinned` at `dest` (replacing a leftover of an interrupted run), named
/// `label` in errors, with `overlay` copied in when given: the tree and the overlay files copied.
pub(crate) fn fresh_tree(
    pinned: &Pinned,
    dest: &Path,
    label: TreeLabel,
    overlay: Option<Overlay<'_>>,
) -> Result<(Tree, Vec<tree::OverlayFile>), PipelineError> {
    clear_leftover(dest).map_err(|e| PipelineError::io("cannot clear a leftover tree", e))?;
    let t = tree::materialize(pinned, dest).map_err(|e| {
        PipelineError::internal_while(format!("cannot check out the {label} tree"), e)
    })?;
    let copied = match overlay {
        Some(o) => tree::copy_overlay(o.files, &t, o.base)
            .map_err(|e| PipelineError::usage_while("cannot copy the overlay", e))?,
        None => Vec::new(),
    };
    Ok((t, copied))
}

/// What the gates up to the apply made of a patch.
pub(crate) struct Applied<T> {
    /// The gates passed, each with its detail, in order.
    pub passed: Vec<(GateName, String)>,
    /// The candidate's tree (`T`: a [`Tree`], or one with what a caller keeps beside it) with the
    /// patch applied, and what applied it; or the gate that stopped the patch.
    pub tree: Lane<(T, &'static str)>,
}

/// Patch safety and lane probes for `patch` (read as `summary`) against the `baseline` tree, then
/// the apply in the fresh tree `fresh` makes (only when the gates passed).
pub(crate) fn gates_and_apply<T: AsRef<Tree>>(
    patch: &[u8],
    summary: &tree::PatchSummary,
    baseline: &Tree,
    workload: &Workload,
    cap: u64,
    fresh: impl FnOnce() -> Result<T, PipelineError>,
) -> Result<Applied<T>, PipelineError> {
    let judged = super::patch_gates::before_apply(summary, patch, baseline, workload, cap);
    let mut passed = judged.passed;
    if let Some(stop) = judged.stop {
        return Ok(Applied {
            passed,
            tree: Err(stop),
        });
    }
    let candidate = fresh()?;
    let tree = match super::patch_gates::apply(candidate.as_ref(), patch) {
        Ok(applier) => {
            passed.push((GateName::Apply, format!("applied with {applier}")));
            Ok((candidate, applier))
        }
        Err(stop) => Err(stop),
    };
    Ok(Applied { passed, tree })
}

/// Whether every tree of `sides` still holds the protected files after `who` ran ("the build"):
/// a candidate's tree that changed one stops the lane at `patch safety`; a baseline's tree no
/// candidate could reach is the workload's failure.
pub(crate) fn protected_kept(
    rules: Rules<'_>,
    trees: &[(TreeLabel, &Tree)],
    who: &str,
) -> Result<Lane<()>, PipelineError> {
    for &t in trees {
        if let Some(stop) = protected_stop(rules.protected, t, who, rules.isolated, rules.shown)? {
            return Ok(Err(stop));
        }
    }
    Ok(Ok(()))
}

/// Whether the trees a build just ran in stay within the tree disk limit: a candidate's over it
/// stops the lane at `gate`; a baseline's no candidate could reach is the baseline's failure.
fn within_limit(
    rules: Rules<'_>,
    trees: &[(TreeLabel, &Tree)],
    gate: GateName,
) -> Result<Lane<()>, PipelineError> {
    for &(label, t) in trees {
        let Some(over) = over_limit(t, rules.limit_mib) else {
            continue;
        };
        let text = format!("the {label} tree: {over}");
        if label.holds_baseline() && rules.isolated {
            return Err(PipelineError::Baseline(text));
        }
        return Ok(Err(GateStop::failed(
            gate,
            if rules.shown.tree { text } else { over },
        )));
    }
    Ok(Ok(()))
}

/// The value of a `Result<Lane<T>, _>`, or, when the lane stopped or failed, a return with that
/// from the function it is used in.
macro_rules! or_stop {
    ($stage:expr) => {
        match $stage? {
            Ok(value) => value,
            Err(stop) => return Ok(Err(stop)),
        }
    };
}
pub(crate) use or_stop;

/// A build `step` (the workload's, or the sanitizer build) in every tree of `sides`; then the
/// protected files after it (`who`: "the build"), the trees' size, and its exit. Stops at `gate`
/// (build, sanitizers).
pub(crate) fn build(
    sides: &mut dyn Sides,
    rules: Rules<'_>,
    step: &LaneStep<'_>,
    (gate, who): (GateName, &str),
) -> Result<Lane<Ran>, PipelineError> {
    let ran = or_stop!(sides.run(step, gate));
    or_stop!(protected_kept(rules, &sides.trees(), who));
    or_stop!(within_limit(rules, &sides.trees(), gate));
    if !ran.candidate.record.succeeded() {
        let stop = step_stop(gate, &ran.candidate, step.timeout, rules.shown);
        return Ok(Err(stop));
    }
    Ok(Ok(ran))
}

/// Every artifact of the workload's `build` in every tree of `sides`, digested: one the
/// candidate's build did not make stops the lane at `build`; one the baseline's did not make is
/// the baseline's failure.
pub(crate) fn artifacts(
    sides: &dyn Sides,
    build: &BuildStep,
) -> Result<Lane<Vec<ArtifactDigest>>, PipelineError> {
    let mut digests = Vec::new();
    for artifact in &build.artifacts {
        for (label, t) in sides.trees() {
            match artifact_digest(t, build, artifact) {
                Ok(sha256) => digests.push(ArtifactDigest {
                    tree: label,
                    path: artifact.clone(),
                    sha256,
                }),
                Err(e) if label.holds_baseline() => {
                    return Err(PipelineError::Baseline(format!(
                        "the build did not produce the artifact `{artifact}`: {}",
                        with_causes(&e)
                    )));
                }
                Err(e) => {
                    return Ok(Err(GateStop::failed(
                        GateName::Build,
                        format!(
                            "the candidate's build did not produce `{artifact}`: {}",
                            with_causes(&e)
                        ),
                    )));
                }
            }
        }
    }
    Ok(Ok(digests))
}

/// Every test command in every tree of `sides`, each followed by the protected files; stops at
/// `tests` with the first the candidate fails. The number of commands run.
pub(crate) fn tests(
    sides: &mut dyn Sides,
    rules: Rules<'_>,
    test: &TestStep,
) -> Result<Lane<usize>, PipelineError> {
    let commands = test.command.as_slice();
    for (i, command) in commands.iter().enumerate() {
        let step = LaneStep::test(test, i, command);
        let ran = or_stop!(sides.run(&step, GateName::Tests));
        or_stop!(protected_kept(rules, &sides.trees(), "a test"));
        if !ran.candidate.record.succeeded() {
            let stop = step_stop(GateName::Tests, &ran.candidate, step.timeout, rules.shown);
            return Ok(Err(stop));
        }
    }
    Ok(Ok(commands.len()))
}

/// The gate a check of `lane` fails.
pub(crate) fn check_gate(lane: CheckLane) -> GateName {
    match lane {
        CheckLane::Differential => GateName::Differential,
        CheckLane::Sanitizer => GateName::Sanitizers,
    }
}

/// What one scenario's check found.
#[derive(Default)]
pub(crate) struct Checked {
    /// The comparison of the two outputs, when both checks ran to it.
    pub record: Option<DifferentialRecord>,
    /// A sanitizer's report in the candidate's check.
    pub finding: Option<SanitizerFinding>,
    /// A check that may have failed silently in both trees.
    pub warning: Option<String>,
    /// The gate the check stops the candidate at, if it does.
    pub stop: Option<GateStop>,
}

impl Checked {
    fn stopped(stop: GateStop) -> Checked {
        Checked {
            stop: Some(stop),
            ..Checked::default()
        }
    }
}

/// Scenario `s`'s check `step` in every tree of `sides` (`lane`: the differential, or the
/// sanitizer lane on sanitized builds); then the protected files, a sanitizer's report, the
/// candidate's exit, and, when `compared`, its output against the baseline's under the
/// scenario's rule (equal digests are equal outputs).
pub(crate) fn check(
    sides: &mut dyn Sides,
    rules: Rules<'_>,
    s: &Scenario,
    step: &LaneStep<'_>,
    (lane, compared): (CheckLane, bool),
) -> Result<Checked, PipelineError> {
    let gate = check_gate(lane);
    let ran = match sides.run(step, gate)? {
        Ok(ran) => ran,
        Err(stop) => return Ok(Checked::stopped(stop)),
    };
    if let Err(stop) = protected_kept(rules, &sides.trees(), "a check")? {
        return Ok(Checked::stopped(stop));
    }
    if let Some(base) = &ran.baseline {
        if let Some(f) = sanitizer_finding(base)? {
            return Err(PipelineError::Baseline(format!(
                "{} reported in the {} tree:\n{}",
                f.kind, f.tree, f.excerpt
            )));
        }
    }
    let cand = &ran.candidate;
    if let Some(f) = sanitizer_finding(cand)? {
        let text = format!("{} in `{}`:\n{}", f.kind, s.name, f.excerpt);
        return Ok(Checked {
            finding: Some(f),
            ..Checked::stopped(GateStop::failed(gate, text))
        });
    }
    if !cand.record.succeeded() {
        let text = format!(
            "check of scenario `{}` failed: {}",
            s.name,
            failure_text(cand, step.timeout, rules.shown)
        );
        return Ok(Checked::stopped(GateStop::failed(gate, text)));
    }
    if !compared {
        return Ok(Checked::default());
    }
    let warning = (ran.baseline.as_ref()).and_then(|b| silent_check_warning(&s.name, b, cand));
    let (reference, reference_sha256) = sides.reference(s, &ran)?;
    // Equal digests are the same output: no need to read them again.
    let comparison = if reference_sha256 == cand.run.stdout_sha256 {
        Comparison::Same
    } else {
        compare_check_outputs(s, &reference, &cand.stdout_path)?
    };
    let (stop, summary, diff) = match comparison {
        Comparison::Same => (None, None, None),
        Comparison::Differs(m) => (
            Some(GateStop::failed(gate, mismatch_text(s, lane, &m))),
            Some(m.summary),
            Some(m.diff),
        ),
    };
    let record = DifferentialRecord {
        scenario: s.name.clone(),
        role: s.role,
        lane,
        rule: rule_name(&s.compare),
        baseline_sha256: reference_sha256,
        candidate_sha256: cand.run.stdout_sha256.clone(),
        same: stop.is_none(),
        summary,
        diff,
    };
    Ok(Checked {
        record: Some(record),
        finding: None,
        warning,
        stop,
    })
}

fn rule_name(rule: &Compare) -> String {
    match rule {
        Compare::Exact => "exact".to_string(),
        Compare::Tolerance(t) => format!("tolerance abs {} rel {}", t.abs.get(), t.rel.get()),
    }
}

/// The sha256 of the check output at `path`: a reference kept from an earlier run.
pub(crate) fn output_sha256(path: &Path) -> Result<String, PipelineError> {
    tree::digest_file(path).map_err(io_err(format!("cannot read {}", path.display())))
}

/// A sanitizer's report in a step's whole stderr log (looked for only in sanitized trees).
fn sanitizer_finding(out: &StepOutput) -> Result<Option<SanitizerFinding>, PipelineError> {
    if !out.record.tree.is_sanitized() {
        return Ok(None);
    }
    let stderr = read_log(&out.stderr_path)?;
    Ok(
        crate::check::find_sanitizer_report(&stderr).map(|r| SanitizerFinding {
            tree: out.record.tree,
            step: out.record.step.clone(),
            kind: r.kind.to_string(),
            excerpt: r.excerpt,
        }),
    )
}

/// A step's log, lossily decoded (logs may hold any bytes), read no further than the log cap
/// ([`crate::measure::runner::LOG_CAP_BYTES`]) the runner writes them to, whatever wrote the
/// file.
fn read_log(path: &Path) -> Result<String, PipelineError> {
    let cannot = || io_err(format!("cannot read {}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot())?;
    let mut bytes = Vec::new();
    (file.take(crate::measure::runner::LOG_CAP_BYTES))
        .read_to_end(&mut bytes)
        .map_err(cannot())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
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
        // An empty folder may be a mount point made for the tree: it stays, to be checked out into.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert!(clear_leftover(&empty).is_ok());
        assert!(empty.is_dir());
        // A link to an empty folder is not that folder: it is moved aside, never checked out into.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&empty, &link).unwrap();
        assert!(clear_leftover(&link).is_ok());
        assert!(std::fs::symlink_metadata(&link).is_err() && empty.is_dir());
    }
}
