//! The deterministic lane: instructions of both arms on each measured training scenario, one
//! run each under callgrind with the confirmation's fresh seed (`confirm.counters:
//! ["callgrind"]`). On a machine whose wall-time noise hides a few percent, this says what the
//! candidate changed exactly ("instructions −3.1%") beside the wall-time verdict; instructions
//! are not time, which the reports say wherever they show it. A candidate the timed runs already
//! rejected (significantly slower, or, under the wall-time metric, no real gain on every training
//! scenario) is not counted: no count could change that verdict. An undecided one is: its count
//! says what changed where the wall time could not.

use super::stages::{MainTrees, Measured};
use crate::failure::with_causes;
use std::path::Path;

use crate::check::words::same_argv;
use crate::measure::callgrind::{self, InstructionCount};
use crate::measure::runner::{RunSpec, Runner, RunnerFactory};
use crate::pipeline::checks::count_spec;
use crate::spec::campaign::Counter;
use crate::spec::workload::{Role, Scenario, TimedOutputRule};

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
        // The caches are simulated in every count only where exact evidence may decide (rules
        // 8): it costs about 2.8 times the count. Under the wall-time metric a scenario whose
        // gain the instructions do not back is counted again with them (rules 10).
        let simulate = match metric {
            crate::spec::campaign::Metric::WallTimeOrCounts => callgrind::Simulate::Caches,
            _ => callgrind::Simulate::Nothing,
        };
        // The commands the timed runs execute: a count of one of them is a count of what is
        // timed (a candidate cannot tell the two apart by their arguments).
        let timed: Vec<&str> = training.iter().map(|s| s.run.as_str()).collect();
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
            let mut figures = self.count_scenario(s, index, measured.main, simulate)?;
            let counted = &mut self.evidence.scenarios[index];
            counted.instructions = Some(figures.clone());
            if crate::evidence::verdict::wants_cycles(metric, counted) {
                self.count_cycles(s, index, measured.main, &mut figures)?;
            }
            if let Some(count) = &s.count {
                if !timed.iter().any(|run| same_argv(run, &count.run)) {
                    figures.unverified = Some(
                        "the counted command (`count.run`) is none of the timed commands, so a \
                         candidate can tell the count from a timed run by its arguments: the \
                         count can stop a gain it does not back, never vouch for one"
                            .to_string(),
                    );
                }
            }
            if s.timed_output_rule().is_none() && figures.unverified.is_none() {
                figures.unverified = Some(
                    "the scenario declares no rule for its timed output (`deterministic_output` \
                     or `compare_timed_output`), so what the counted runs printed cannot be \
                     compared with the timed runs: the count can stop a gain it does not back, \
                     never vouch for one"
                        .to_string(),
                );
            }
            self.evidence.scenarios[index].instructions = Some(figures);
        }
        Ok(())
    }

    /// Counts scenario `s` a second time, with the cache simulation, for estimated cycles that
    /// could back the wall-time gain the instructions in `figures` do not (rules 10). It is a
    /// count like the first, on a fresh seed, its outputs checked against native runs on that
    /// seed: reusing the first count's seed would let a candidate answer it from what it stored
    /// then. Its events go into `figures.cache`, why there are none into `cache_note`, and its
    /// outputs' disagreement, if any, into `mismatch`.
    fn count_cycles(
        &mut self,
        s: &Scenario,
        index: usize,
        trees: &MainTrees,
        figures: &mut InstructionFigures,
    ) -> Result<(), PipelineError> {
        self.stage(&format!("count estimated cycles: {}", s.name));
        let again = self.count_scenario(s, index, trees, callgrind::Simulate::Caches)?;
        figures.cache = again.cache;
        if figures.cache.is_none() {
            let why = again
                .note
                .unwrap_or_else(|| "it had no cache events".to_string());
            figures.cache_note = Some(why);
        }
        figures.mismatch = figures.mismatch.take().or(again.mismatch);
        Ok(())
    }

    /// One count of both arms of training scenario `s` (the `index`-th result) on a fresh seed,
    /// with the native runs its outputs are checked against; a count that cannot be had is its
    /// figures' note.
    fn count_scenario(
        &self,
        s: &Scenario,
        index: usize,
        trees: &MainTrees,
        simulate: callgrind::Simulate,
    ) -> Result<InstructionFigures, PipelineError> {
        // A seed no timed run, and no earlier count, used: a result stored by an earlier run
        // answers another seed.
        let seed = crate::check::fresh_seed().map_err(super::io_err("cannot read a fresh seed"))?;
        let outputs = self.work.join(format!("count-outputs-{index}"));
        std::fs::create_dir_all(&outputs)
            .map_err(super::io_err("cannot create the count's outputs folder"))?;
        let keep = |mut spec: RunSpec, name: &str| {
            spec.stdout_file = Some(outputs.join(name));
            spec
        };
        let b = keep(
            count_spec(&trees.baseline, s, seed, &self.sandbox),
            "baseline.counted",
        );
        let c = keep(
            count_spec(&trees.candidate, s, seed, &self.sandbox),
            "candidate.counted",
        );
        let dir = self.work.join(format!("callgrind-{index}"));
        let counted = count_both(&*self.opts.runners, [&b, &c], &dir, simulate);
        let _ = std::fs::remove_dir_all(&dir);
        if self.opts.stop.requested() {
            return Err(PipelineError::interrupted());
        }
        // The counted runs must compute what the arm computes outside valgrind: a program
        // that behaves otherwise under it is caught. The reference is a native run of the
        // counted command on the same seed, after the counts (so a count never follows a
        // run it could replay).
        let mut runner = self.opts.runners.runner();
        let mut figures = counted
            .and_then(|(base, cand)| {
                let natives = [
                    keep(b.clone(), "baseline.native"),
                    keep(c.clone(), "candidate.native"),
                ];
                native_outputs(&mut *runner, &natives)?;
                let mut figures = InstructionFigures::of(base.instructions, cand.instructions);
                figures.cache = base.cache.zip(cand.cache).map(|(baseline, candidate)| {
                    crate::evidence::result::ArmCache {
                        baseline,
                        candidate,
                    }
                });
                figures.mismatch = counted_outputs_differ(s, &outputs);
                Ok(figures)
            })
            .unwrap_or_else(InstructionFigures::missing);
        let _ = std::fs::remove_dir_all(&outputs);
        if s.count.is_some() {
            figures.command = Some(b.command.clone());
        }
        Ok(figures)
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
    simulate: callgrind::Simulate,
) -> Result<(InstructionCount, InstructionCount), String> {
    let count = |spec: &RunSpec, arm: &str| {
        let mut runner = runners.runner();
        callgrind::count(&mut *runner, spec, &dir.join(arm), simulate).map_err(|e| with_causes(&e))
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

/// Runs each arm's counted command once outside valgrind (untimed), its output kept where its
/// spec says.
fn native_outputs(runner: &mut dyn Runner, natives: &[RunSpec; 2]) -> Result<(), String> {
    for spec in natives {
        let run = runner.run(spec).map_err(|e| with_causes(&e))?;
        if !run.succeeded() {
            return Err(format!(
                "the counted command failed outside callgrind: {}",
                run.stderr_tail.trim()
            ));
        }
    }
    Ok(())
}

/// Whether the counted runs computed what the timed ones do, from the four outputs in
/// `outputs` (each arm counted and native, on one seed), under the scenario's timed-output rule:
/// the candidate's counted output must agree with its own native one and with the baseline's
/// counted one. A baseline that prints otherwise under valgrind too (a library choosing other
/// kernels for the CPU valgrind reports) says nothing against the candidate: then only the two
/// arms' counted outputs must agree. `None`: they agree, or the scenario has no rule to compare
/// by (which leaves the count unverified instead).
fn counted_outputs_differ(s: &Scenario, outputs: &Path) -> Option<String> {
    let rule = s.timed_output_rule()?;
    let read = |name: &str| std::fs::read(outputs.join(name)).unwrap_or_default();
    let [bc, bn, cc, cn] = [
        "baseline.counted",
        "baseline.native",
        "candidate.counted",
        "candidate.native",
    ]
    .map(read);
    let agree = |a: &[u8], b: &[u8]| match rule {
        TimedOutputRule::Exact => a == b,
        TimedOutputRule::Compare => {
            matches!(
                crate::check::compare_outputs(&s.compare, a, b),
                crate::check::Comparison::Same
            )
        }
    };
    let digest = |name: &str| {
        crate::tree::digest_file(&outputs.join(name))
            .unwrap_or_else(|e| format!("unreadable ({e})"))
    };
    if agree(&bc, &bn) && !agree(&cc, &cn) {
        return Some(format!(
            "training scenario `{}`: the candidate computed otherwise when counted: under \
             callgrind it printed sha256 {}, outside it on the same seed sha256 {} (the \
             baseline printed the same in both): its count is not what is timed",
            s.name,
            digest("candidate.counted"),
            digest("candidate.native")
        ));
    }
    if !agree(&bc, &cc) {
        return Some(format!(
            "training scenario `{}`: under callgrind the candidate printed other output than the \
             baseline for the same seed (baseline sha256 {}, candidate sha256 {}): its count is \
             not what is timed",
            s.name,
            digest("baseline.counted"),
            digest("candidate.counted")
        ));
    }
    None
}
