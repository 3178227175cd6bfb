//! The deterministic lane: instructions of both arms on each measured training scenario, one
//! run each under callgrind with the confirmation's fresh seed (`confirm.counters:
//! ["callgrind"]`). On a machine whose wall-time noise hides a few percent, this says what the
//! candidate changed exactly ("instructions −3.1%") beside the wall-time verdict; instructions
//! are not time, which the reports say wherever they show it.

use crate::measure::callgrind;
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
            let b = super::measure::spec(&bt, s, seed, &self.sandbox);
            let c = super::measure::spec(&ct, s, seed, &self.sandbox);
            let dir = self.work.join(format!("callgrind-{index}"));
            let counted =
                callgrind::count(&mut *runner, &b, &dir.join("baseline")).and_then(|base| {
                    callgrind::count(&mut *runner, &c, &dir.join("candidate"))
                        .map(|cand| (base, cand))
                });
            let _ = std::fs::remove_dir_all(&dir);
            if self.opts.stop.requested() {
                return Err(PipelineError::Interrupted(
                    crate::interrupt::MESSAGE.to_string(),
                ));
            }
            let scenario = &self.result.scenarios[index];
            let figures = match counted {
                Err(why) => InstructionFigures::missing(why),
                Ok((base, cand)) => {
                    // The counted runs must compute what the timed runs did: a program that
                    // behaves otherwise under valgrind is not counted.
                    let timed = |f: fn(&crate::measure::record::Pair) -> &str| {
                        scenario.pairs.first().map(|p| f(p).to_string())
                    };
                    let same_b = timed(|p| &p.baseline.stdout_sha256)
                        .is_none_or(|h| h == base.stdout_sha256);
                    let same_c = timed(|p| &p.candidate.stdout_sha256)
                        .is_none_or(|h| h == cand.stdout_sha256);
                    if s.deterministic_output && !(same_b && same_c) {
                        InstructionFigures::missing(
                            "a run under callgrind printed other output than the timed runs of \
                             its arm: its count is not used"
                                .to_string(),
                        )
                    } else {
                        InstructionFigures::of(base.instructions, cand.instructions)
                    }
                }
            };
            self.result.scenarios[index].instructions = Some(figures);
        }
        Ok(())
    }
}
