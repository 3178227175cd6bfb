//! The deterministic lane: instructions of both arms on each measured training scenario, one
//! run each under callgrind with the confirmation's fresh seed (`confirm.counters:
//! ["callgrind"]`). On a machine whose wall-time noise hides a few percent, this says what the
//! candidate changed exactly ("instructions −3.1%") beside the wall-time verdict; instructions
//! are not time, which the reports say wherever they show it. A candidate the timed runs already
//! rejected (significantly slower, or, under the wall-time metric, no real gain on every training
//! scenario) is not counted: no count could change that verdict. An undecided one is: its count
//! says what changed where the wall time could not.

use super::stages::Measured;
use crate::failure::with_causes;
use std::path::Path;

use crate::measure::callgrind::{self, InstructionCount};
use crate::measure::runner::{RunSpec, Runner, RunnerFactory};
use crate::pipeline::checks::count_spec;
use crate::spec::campaign::Counter;
use crate::spec::workload::{Role, Scenario};

use super::Run;
use crate::evidence::result::InstructionFigures;
use crate::pipeline::PipelineError;

impl Run<'_> {
    /// Counts both arms of every training scenario that was measured; a count that cannot be had
    /// is recorded with its reason, never a failure of the confirmation.
    pub(crate) fn count_instructions(
        &mut self,
        measured: Measured<'_>,
    ) -> Result<(), PipelineError> {
        if !self.plan.settings().counters.contains(&Counter::Callgrind) {
            return Ok(());
        }
        let (bt, ct) = (&measured.main.baseline, &measured.main.candidate);
        let training: Vec<Scenario> = (self.plan.campaign.workload.scenarios.iter())
            .filter(|s| s.role == Role::Training)
            .cloned()
            .collect();
        // A verdict the counts cannot change (significantly slower, or no real gain in wall time)
        // is not counted: the counts, minutes of valgrind on a real workload, are spared, and
        // each scenario's lane says why.
        let metric = self.plan.settings().metric;
        let scenarios = &self.evidence.scenarios;
        if let Some(why) = crate::evidence::verdict::counts_cannot_matter(metric, scenarios) {
            let note = format!("not counted: {why}");
            for s in (self.evidence.scenarios.iter_mut()).filter(|s| s.training.is_some()) {
                s.instructions = Some(InstructionFigures::missing(note.clone()));
            }
            return Ok(());
        }
        let mut runner = self.opts.runners.runner();
        for s in &training {
            let Some(index) = self
                .evidence
                .scenarios
                .iter()
                .position(|r| r.name == s.name)
            else {
                continue;
            };
            self.stage(&format!("count instructions: {}", s.name));
            // A seed no timed run used: a result stored by an earlier run answers another seed.
            let seed = crate::measure::schedule::fresh_order_seed();
            let b = count_spec(bt, s, seed, &self.sandbox);
            let c = count_spec(ct, s, seed, &self.sandbox);
            let dir = self.work.join(format!("callgrind-{index}"));
            let counted = count_both(&*self.opts.runners, [&b, &c], &dir);
            let _ = std::fs::remove_dir_all(&dir);
            if self.opts.stop.requested() {
                return Err(PipelineError::interrupted());
            }
            // The counted runs must compute what the arm computes outside valgrind: a program
            // that behaves otherwise under it is not counted. The reference is a native run of
            // the counted command on the same seed, after the counts (so a count never follows a
            // run it could replay). Under `deterministic_output` both arms must also print the
            // same for that seed.
            let mut figures = counted
                .and_then(|(base, cand)| {
                    let (ref_b, ref_c) = native_outputs(&mut *runner, &b, &c)?;
                    // A baseline that prints otherwise under valgrind too (a library choosing
                    // other kernels for the CPU valgrind reports) says nothing against the
                    // candidate: then only the two arms' counted outputs must agree.
                    let baseline_same = ref_b.is_none_or(|h| h == base.stdout_sha256);
                    let candidate_same = ref_c.is_none_or(|h| h == cand.stdout_sha256);
                    if s.deterministic_output && baseline_same && !candidate_same {
                        return Err("a run under callgrind printed other output than the same \
                                    arm outside it: its count is not used"
                            .to_string());
                    }
                    if s.deterministic_output && base.stdout_sha256 != cand.stdout_sha256 {
                        return Err("under callgrind the candidate printed other output than \
                                    the baseline for the same seed: its count is not used"
                            .to_string());
                    }
                    Ok(InstructionFigures::of(base.instructions, cand.instructions))
                })
                .unwrap_or_else(InstructionFigures::missing);
            if s.count.is_some() {
                figures.command = Some(b.command.clone());
            }
            self.evidence.scenarios[index].instructions = Some(figures);
        }
        Ok(())
    }
}

/// Both arms' counts, `[baseline, candidate]`, at the same time on a thread and a runner each:
/// valgrind runs a program on one CPU, and an instruction count does not depend on what else
/// runs, so on two CPUs the pair takes the time of one. A failed count is its message, causes and
/// all (the baseline's when both failed).
fn count_both(
    runners: &dyn RunnerFactory,
    [b, c]: [&RunSpec; 2],
    dir: &Path,
) -> Result<(InstructionCount, InstructionCount), String> {
    let count = |spec: &RunSpec, arm: &str| {
        let mut runner = runners.runner();
        callgrind::count(&mut *runner, spec, &dir.join(arm)).map_err(|e| with_causes(&e))
    };
    let (base, cand) = std::thread::scope(|scope| {
        let candidate = scope.spawn(|| count(c, "candidate"));
        let base = count(b, "baseline");
        let cand = candidate
            .join()
            .unwrap_or_else(|_| Err("the candidate's count panicked".to_string()));
        (base, cand)
    });
    Ok((base?, cand?))
}

/// What each arm's counted command prints when run once outside valgrind (untimed), as sha256s.
fn native_outputs(
    runner: &mut dyn Runner,
    b: &RunSpec,
    c: &RunSpec,
) -> Result<(Option<String>, Option<String>), String> {
    let mut output = |spec: &RunSpec| {
        let run = runner.run(spec).map_err(|e| with_causes(&e))?;
        if !run.succeeded() {
            return Err(format!(
                "the counted command failed outside callgrind: {}",
                run.stderr_tail.trim()
            ));
        }
        Ok(Some(run.stdout_sha256))
    };
    Ok((output(b)?, output(c)?))
}
