//! The deterministic lane: instructions of both arms on each measured training scenario, one
//! run each under callgrind with the confirmation's fresh seed (`confirm.counters:
//! ["callgrind"]`). On a machine whose wall-time noise hides a few percent, this says what the
//! candidate changed exactly ("instructions −3.1%") beside the wall-time verdict; instructions
//! are not time, which the reports say wherever they show it.

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
    pub(crate) fn count_instructions(&mut self) -> Result<(), PipelineError> {
        if !self.plan.settings().counters.contains(&Counter::Callgrind) {
            return Ok(());
        }
        let (Some(bt), Some(ct)) = (self.trees.baseline.clone(), self.trees.candidate.clone())
        else {
            return Ok(());
        };
        let training: Vec<Scenario> = (self.plan.campaign.workload.scenarios.iter())
            .filter(|s| s.role == Role::Training)
            .cloned()
            .collect();
        let seed = self.result.seed;
        let mut runner = self.opts.runners.runner();
        for s in &training {
            let Some(index) = self.result.scenarios.iter().position(|r| r.name == s.name) else {
                continue;
            };
            self.stage(&format!("count instructions: {}", s.name));
            let b = count_spec(&bt, s, seed, &self.sandbox);
            let c = count_spec(&ct, s, seed, &self.sandbox);
            let dir = self.work.join(format!("callgrind-{index}"));
            let counted = count_both(&*self.opts.runners, (&b, &c), &dir);
            let _ = std::fs::remove_dir_all(&dir);
            if self.opts.stop.requested() {
                return Err(PipelineError::Interrupted(
                    crate::interrupt::MESSAGE.to_string(),
                ));
            }
            // The counted runs must compute what the arm computes outside valgrind: a program
            // that behaves otherwise under it is not counted. The reference is the arm's timed
            // runs, or a native run of the counted command when the scenario counts a shorter run.
            let mut figures = counted
                .and_then(|(base, cand)| {
                    let (ref_b, ref_c) = match &s.count {
                        None => self.timed_outputs(index),
                        Some(_) => native_outputs(&mut *runner, &b, &c)?,
                    };
                    let same = ref_b.is_none_or(|h| h == base.stdout_sha256)
                        && ref_c.is_none_or(|h| h == cand.stdout_sha256);
                    if s.deterministic_output && !same {
                        return Err("a run under callgrind printed other output than the same \
                                    arm outside it: its count is not used"
                            .to_string());
                    }
                    Ok(InstructionFigures::of(base.instructions, cand.instructions))
                })
                .unwrap_or_else(InstructionFigures::missing);
            if s.count.is_some() {
                figures.command = Some(b.command.clone());
            }
            self.result.scenarios[index].instructions = Some(figures);
        }
        Ok(())
    }
}

impl Run<'_> {
    /// The sha256 of what each arm's first timed pair printed on scenario `index`.
    fn timed_outputs(&self, index: usize) -> (Option<String>, Option<String>) {
        let first = self.result.scenarios[index].pairs.first();
        (
            first.map(|p| p.baseline.stdout_sha256.clone()),
            first.map(|p| p.candidate.stdout_sha256.clone()),
        )
    }
}

/// Counts both arms at once, each on a thread and runner of its own, into `dir/baseline` and
/// `dir/candidate`. Instructions do not depend on what else the machine runs, so the two counts
/// are the ones they would be one after the other, in half the time (under callgrind the
/// trainer's counted step takes over a minute an arm); nothing is timed meanwhile.
fn count_both(
    runners: &dyn RunnerFactory,
    (b, c): (&RunSpec, &RunSpec),
    dir: &Path,
) -> Result<(InstructionCount, InstructionCount), String> {
    std::thread::scope(|scope| {
        let base =
            scope.spawn(|| callgrind::count(&mut *runners.runner(), b, &dir.join("baseline")));
        let cand = callgrind::count(&mut *runners.runner(), c, &dir.join("candidate"));
        let base = (base.join()).unwrap_or_else(|_| Err("the baseline's count panicked".into()));
        Ok((base?, cand?))
    })
}

/// What each arm's counted command prints when run once outside valgrind (untimed), as sha256s.
fn native_outputs(
    runner: &mut dyn Runner,
    b: &RunSpec,
    c: &RunSpec,
) -> Result<(Option<String>, Option<String>), String> {
    let mut output = |spec: &RunSpec| {
        let run = runner.run(spec).map_err(|e| e.to_string())?;
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
