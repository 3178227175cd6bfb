//! Screening: a few pairs per surviving candidate against the shared baseline build, with rusage
//! (and callgrind instruction counts when enabled). Screening ranks; it never accepts. Every pair
//! is journaled as it completes, so a resumed campaign continues at the next pair.

use super::CampaignRun;
use super::journal::Entry;
use crate::evidence::outcome::{Failure, GateStop};
use crate::evidence::result::{GateName, StepKind, StepName, TreeLabel};
use crate::evidence::summary::Status;
use crate::failure::with_causes;
use crate::measure::callgrind;
use crate::measure::record::Order;
use crate::measure::runner::{RunSpec, Runner};
use crate::measure::schedule::{self, Arms, MeasureError, PairOrder, Phase};
use crate::pipeline::PipelineError;
use crate::pipeline::checks::{
    LaneStep, count_spec, fresh_inputs, scenario_template, timed_agreement,
};
use crate::pipeline::event::Event;
use crate::search::racing::{self, Entrant};
use crate::search::ruling::{self, Ruling};
use crate::spec::campaign::Counter;
use crate::spec::workload::Scenario;
use crate::stats::sequential::Decision;
use crate::stats::{self, Ratios};
use crate::tree::Tree;

/// The reason of a `screened` status: the median of its `pairs` screening ratios.
pub(super) fn screened_reason(median: f64, pairs: usize) -> String {
    format!("screening median {median:.4}× over {pairs} pairs")
}

impl CampaignRun<'_> {
    /// Screens candidate `index` on the first training scenario; resumes after its last pair.
    pub(super) fn screen(&mut self, index: usize, baseline: &Tree) -> Result<(), PipelineError> {
        let Some(s) = self.training().into_iter().next() else {
            return Err(PipelineError::internal("no training scenario"));
        };
        let label = TreeLabel::Numbered(index);
        let bytes = self.candidate_patch(index)?.bytes;
        self.candidate_stage(&format!("screen {label}"), index);
        let mut runner = self.opts.runners.runner();
        let t = match self.built_tree(label) {
            Some(t) => t,
            // Lost with an interrupted run: rebuild it before measuring anything.
            None => match self.rebuild_for_screening(label, &bytes, baseline, &mut *runner)? {
                Some(t) => t,
                None => {
                    let stop =
                        GateStop::failed(GateName::Build, "the rebuild for screening failed");
                    return self.stop_candidate(index, stop);
                }
            },
        };
        let want = self.plan.spec.search.pairs.get();
        let result = self.screen_pairs(index, &s, baseline, &t, &mut *runner, want);
        // Racing may come back to it: the tree stays until the race ends (`race`).
        if self.race_cap().is_none() {
            let _ = std::fs::remove_dir_all(&t.root);
        }
        result
    }

    /// `search.max_pairs` when it is above `search.pairs`: screening races (§2.3.4).
    pub(super) fn race_cap(&self) -> Option<usize> {
        let search = &self.plan.spec.search;
        let cap = search.max_pairs?.get();
        (cap > search.pairs.get()).then_some(cap)
    }

    /// Racing (docs/design.md §2.3.4, `search::racing`): round after round, one more pair for
    /// each screened candidate whose place among the top `confirm.top` is still in doubt, until
    /// none is, each has `search.max_pairs`, or the campaign's time left is what its
    /// confirmations need. The baseline is built only when a pair is due. The candidate trees
    /// stay for the ruling after the confirmations (`rule_screened`).
    pub(super) fn race(&mut self, baseline: &mut Option<Tree>) -> Result<(), PipelineError> {
        let Some(cap) = self.race_cap() else {
            return Ok(());
        };
        let places = self.plan.spec.confirm.top.get();
        let mut announced = false;
        loop {
            let entrants: Vec<Entrant> = (self.state.candidates.iter())
                .filter(|c| c.status == Status::Screened)
                .map(|c| Entrant {
                    index: c.index,
                    ratios: c.pairs.iter().map(|p| p.ratio).collect(),
                })
                .collect();
            let next = racing::next_pairs(&entrants, places, cap);
            if next.is_empty() || self.out_of_racing_time(places) {
                break;
            }
            if !announced {
                self.stage("race");
                announced = true;
            }
            let baseline = match baseline {
                Some(b) => &*b,
                None => &*baseline.insert(self.prepare_baseline()?),
            };
            for index in next {
                self.screen_one_more(index, baseline)?;
            }
        }
        Ok(())
    }

    /// Rules out what the screening pairs can (docs/design.md §2.3.4, `search::ruling`): every
    /// candidate still `screened` after the confirmations is judged by the confirmation's
    /// sequential rule on its screening pairs, and ends `slower` or `no real gain` at the first
    /// look that says so. While screening races, those no look has decided get one more pair per
    /// round, up to `search.max_pairs`, while the campaign's deadline leaves time for a round (one
    /// a look found faster waits for a confirmation: more screening pairs cannot accept it). Then the
    /// candidate trees kept for racing are removed.
    pub(super) fn rule_screened(&mut self) -> Result<(), PipelineError> {
        let result = self.rule_rounds();
        let indices: Vec<usize> = self.state.candidates.iter().map(|c| c.index).collect();
        for index in indices {
            if let Some(t) = self.built_tree(TreeLabel::Numbered(index)) {
                let _ = std::fs::remove_dir_all(&t.root);
            }
        }
        result
    }

    /// What screening's looks say of a candidate's screening `ratios`: a comparison from
    /// `search.pairs` to the screening cap at `confirm.min_effect` (`search::ruling`).
    pub(super) fn screening_ruling(&self, ratios: &[f64]) -> Ruling {
        let first = self.plan.spec.search.pairs.get();
        let cap = self.race_cap().unwrap_or(first);
        ruling::rule(ratios, first, cap, self.plan.spec.confirm.min_effect.get())
    }

    fn rule_rounds(&mut self) -> Result<(), PipelineError> {
        let cap = self.race_cap().unwrap_or(self.plan.spec.search.pairs.get());
        let min_effect = self.plan.spec.confirm.min_effect.get();
        let mut baseline = None;
        let mut announced = false;
        loop {
            let mut open = Vec::new();
            let screened: Vec<(usize, Vec<f64>)> = (self.state.candidates.iter())
                .filter(|c| c.status == Status::Screened)
                .map(|c| (c.index, c.pairs.iter().map(|p| p.ratio).collect()))
                .collect();
            for (index, ratios) in screened {
                match self.screening_ruling(&ratios) {
                    Ruling::Out(stop) => {
                        let status = match stop.decision {
                            Decision::Slower => Status::Slower,
                            _ => Status::NoRealGain,
                        };
                        self.set_status(index, status, ruling::reason(&stop, min_effect))?;
                    }
                    Ruling::Open if ratios.len() < cap => open.push(index),
                    Ruling::Open | Ruling::Faster(_) => {}
                }
            }
            if open.is_empty() || self.out_of_ruling_time(open.len()) {
                return Ok(());
            }
            if !announced {
                self.stage("rule out in screening");
                announced = true;
            }
            if baseline.is_none() {
                baseline = Some(self.prepare_baseline()?);
            }
            let Some(b) = baseline.as_ref() else {
                return Ok(());
            };
            for index in open {
                self.screen_one_more(index, b)?;
            }
        }
    }

    /// Whether the campaign's deadline leaves less than one more pair for each of `open`
    /// candidates, at screening's pace.
    fn out_of_ruling_time(&self, open: usize) -> bool {
        self.time_left_s()
            .is_some_and(|left| left < open as f64 * self.screening_pace_s())
    }

    /// Whether the campaign's deadline leaves less than `places` confirmations need.
    fn out_of_racing_time(&self, places: usize) -> bool {
        self.time_left_s()
            .is_some_and(|left| left < places as f64 * self.estimate_s())
    }

    /// Seconds left before the campaign's deadline (`max_minutes`), when it has one.
    fn time_left_s(&self) -> Option<f64> {
        let deadline = self.deadline()?;
        Some((deadline.saturating_duration_since(std::time::Instant::now())).as_secs_f64())
    }

    /// One more screening pair of candidate `index`, in the tree racing kept (rebuilt if lost).
    fn screen_one_more(&mut self, index: usize, baseline: &Tree) -> Result<(), PipelineError> {
        let Some(s) = self.training().into_iter().next() else {
            return Err(PipelineError::internal("no training scenario"));
        };
        let label = TreeLabel::Numbered(index);
        let want = self.state.candidate_mut(index).map_or(0, |c| c.pairs.len()) + 1;
        self.candidate_stage(&format!("race {label}"), index);
        let mut runner = self.opts.runners.runner();
        let t = match self.built_tree(label) {
            Some(t) => t,
            None => {
                let bytes = self.candidate_patch(index)?.bytes;
                match self.rebuild_for_screening(label, &bytes, baseline, &mut *runner)? {
                    Some(t) => t,
                    None => {
                        let stop =
                            GateStop::failed(GateName::Build, "the rebuild for racing failed");
                        return self.stop_candidate(index, stop);
                    }
                }
            }
        };
        self.screen_pairs(index, &s, baseline, &t, &mut *runner, want)
    }

    /// The candidate tree the check lane left built, if it is still there.
    fn built_tree(&self, label: TreeLabel) -> Option<Tree> {
        let root = self.work.join(crate::tree::dir_name(&label.to_string()));
        root.join(".git").is_dir().then(|| Tree {
            root,
            base_sha: self.pinned.sha.clone(),
            commit: String::new(),
        })
    }

    fn rebuild_for_screening(
        &mut self,
        label: TreeLabel,
        bytes: &[u8],
        baseline: &Tree,
        runner: &mut dyn Runner,
    ) -> Result<Option<Tree>, PipelineError> {
        let super::checks::Overlaid { tree: t, protected } = self.overlaid_tree(label)?;
        crate::tree::apply_patch(&t, bytes).map_err(PipelineError::internal)?;
        super::checks::seed_cargo_target(&baseline.root, &t.root, &self.plan.workload.build);
        let build =
            LaneStep::build(&self.plan.workload).renamed(StepName::new(StepKind::ScreenBuild));
        let input = build.input((label, &t), &self.run_dir, &self.sandbox)?;
        let started = std::time::Instant::now();
        let built = crate::pipeline::steps::run_step(runner, &self.run_dir, input)
            .map_err(PipelineError::internal)?;
        self.build_s += started.elapsed().as_secs_f64();
        let unchanged = (self.protected_unchanged(&protected, &t, label, "the build")?).is_ok();
        Ok((unchanged && built.record.succeeded()).then_some(t))
    }

    fn screen_pairs(
        &mut self,
        index: usize,
        s: &Scenario,
        baseline: &Tree,
        t: &Tree,
        runner: &mut dyn Runner,
        want: usize,
    ) -> Result<(), PipelineError> {
        // Fresh seeds, as in confirmation: a patch tuned to the search seed the agent saw wins
        // nothing here, and a replayed result shows as a disagreement.
        let (b, c) = (
            scenario_template(baseline, s, &self.sandbox),
            scenario_template(t, s, &self.sandbox),
        );
        let (b, c) = self.screening_outputs(index, s, b, c)?;
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        let agree = timed_agreement(s);
        let mut seeds = crate::measure::seeds::Seeds::fresh()
            .map_err(crate::pipeline::error::io_err("cannot read a fresh seed"))?;
        let mut draw = || seeds.next_seed();
        let (done, warmed) = self
            .state
            .candidate_mut(index)
            .map_or((0, false), |c| (c.pairs.len(), !c.warmups.is_empty()));
        let warmup_runs = if done == 0 && !warmed { 2 } else { 0 };
        (self.on_event)(Event::Expect {
            runs: warmup_runs + 2 * want.saturating_sub(done),
        });
        if done == 0 && !warmed {
            let measured = {
                let on_event = &mut *self.on_event;
                let mut emit = |e| on_event(Event::Run(e));
                let mut inputs = fresh_inputs(&mut draw, agree.as_ref());
                let first = Order::CandidateFirst;
                schedule::run_warmups(runner, arms, &mut inputs, 1, first, &mut emit)
            };
            match measured {
                Ok(runs) => self.record(Entry::Warmups { index, runs })?,
                Err(e) => return self.screening_failure(index, e),
            }
        }
        for i in done..want {
            // One pair at a time (a resumed screening continues where it stopped), alternating.
            let order = PairOrder::Fixed(PairOrder::Alternating(Order::CandidateFirst).order_of(i));
            let measured = {
                let on_event = &mut *self.on_event;
                let mut emit = |e| on_event(Event::Run(e));
                let mut inputs = fresh_inputs(&mut draw, agree.as_ref());
                schedule::run_pairs(runner, arms, &mut inputs, 1, order, Phase::Pairs, &mut emit)
            };
            let mut pair = match measured {
                Ok(mut p) if !p.is_empty() => p.remove(0),
                Ok(_) => return Err(PipelineError::internal("a pair went missing")),
                Err(e) => return self.screening_failure(index, e),
            };
            pair.index = i;
            self.record(Entry::ScreeningPair { index, pair })?;
        }
        let counted = self.plan.spec.search.counters.contains(&Counter::Callgrind);
        let seed = seeds.next_seed();
        let count = |tree| count_spec(tree, s, seed, &self.sandbox);
        if counted && !self.count_instructions(index, &count(baseline), &count(t))? {
            return Ok(());
        }
        let ratios: Vec<f64> = self
            .state
            .candidate_mut(index)
            .map_or_else(Vec::new, |c| c.pairs.iter().map(|p| p.ratio).collect());
        let median = Ratios::new(ratios)
            .map(|r| stats::median(&r))
            .unwrap_or(f64::NAN);
        self.set_status(index, Status::Screened, screened_reason(median, want))
    }

    /// The two timed specs with their outputs kept where the scenario's rule reads them back.
    fn screening_outputs(
        &self,
        index: usize,
        s: &Scenario,
        mut b: RunSpec,
        mut c: RunSpec,
    ) -> Result<(RunSpec, RunSpec), PipelineError> {
        if s.timed_output_rule() == Some(crate::spec::workload::TimedOutputRule::Compare) {
            let dir = self.work.join(format!("timed-outputs-{index}"));
            std::fs::create_dir_all(&dir).map_err(crate::pipeline::io_err(
                "cannot create the timed outputs folder",
            ))?;
            b.stdout_file = Some(dir.join("baseline.out"));
            c.stdout_file = Some(dir.join("candidate.out"));
        }
        Ok((b, c))
    }

    fn screening_failure(&mut self, index: usize, e: MeasureError) -> Result<(), PipelineError> {
        use crate::measure::record::Arm;
        // Only the candidate's own failure is the candidate's: a baseline run that times out or
        // fails is the baseline's, whichever way it failed.
        // The gate a confirmation fails for these: `timed output`.
        let stop = match e {
            MeasureError::RunFailed {
                arm: Arm::Candidate,
                timed_out,
                ..
            } => GateStop {
                gate: GateName::TimedOutput,
                failure: match timed_out {
                    true => Failure::TimedOut,
                    false => Failure::Failed,
                },
                detail: with_causes(&e),
            },
            MeasureError::OutputsDiffer {
                phase: Phase::Warmup | Phase::Pairs,
                ..
            } => GateStop::failed(
                GateName::TimedOutput,
                format!(
                    "its timed output differs from the baseline's for the same seed (a result \
                     replayed or not computed): {e}"
                ),
            ),
            other => return Err(PipelineError::Baseline(other.to_string())),
        };
        self.stop_candidate(index, stop)
    }

    /// Instruction counts of one run of each arm under callgrind (children traced). `false`
    /// when the candidate's counted run failed: the candidate is rejected for it (a run that
    /// fails only under callgrind must not stop the whole campaign). A baseline that cannot be
    /// counted is the campaign's problem, as before.
    fn count_instructions(
        &mut self,
        index: usize,
        b: &RunSpec,
        c: &RunSpec,
    ) -> Result<bool, PipelineError> {
        let dir = self.work.join(format!("callgrind-{index}"));
        let mut runner = self.opts.runners.runner();
        let baseline = callgrind::count(
            &mut *runner,
            b,
            &dir.join("baseline"),
            callgrind::Simulate::Nothing,
        )
        .map(|c| c.instructions)
        .map_err(PipelineError::usage)?;
        let candidate = callgrind::count(
            &mut *runner,
            c,
            &dir.join("candidate"),
            callgrind::Simulate::Nothing,
        );
        let _ = std::fs::remove_dir_all(&dir);
        match candidate {
            Ok(counted) => {
                self.record(Entry::Instructions {
                    index,
                    baseline,
                    candidate: counted.instructions,
                })?;
                Ok(true)
            }
            Err(e) => {
                let why = format!("its run under callgrind could not be counted: {e}");
                self.set_status(index, Status::Rejected, why)?;
                Ok(false)
            }
        }
    }
}
