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
use crate::measure::multi_arm::{self, Round};
use crate::measure::record::{Arm, Pair, Purpose, WarmupRun};
use crate::measure::runner::{RunSpec, Runner};
use crate::measure::schedule::{MeasureError, Phase};
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
    /// Screens the checked candidates `indices` on the first training scenario, in rounds that
    /// share one baseline run (`screen_round`) until each has `search.pairs`; a resumed
    /// screening continues each after its last journaled pair. Each is then counted (when
    /// `search.counters` asks) and becomes `screened`.
    pub(super) fn screen(
        &mut self,
        indices: &[usize],
        baseline: &Tree,
    ) -> Result<(), PipelineError> {
        let want = self.plan.spec.search.pairs.get();
        loop {
            let short: Vec<usize> = (indices.iter().copied())
                .filter(|&i| self.is(i, Status::Checked) && self.pairs_of(i) < want)
                .collect();
            if short.is_empty() {
                break;
            }
            self.screen_round(&short, baseline)?;
        }
        for &index in indices {
            if self.is(index, Status::Checked) {
                self.screened(index, baseline, want)?;
            }
        }
        // Racing may come back to them: the trees stay until the ruling ends (`rule_screened`).
        if self.race_cap().is_none() {
            for &index in indices {
                if let Some(t) = self.built_tree(TreeLabel::Numbered(index)) {
                    let _ = std::fs::remove_dir_all(&t.root);
                }
            }
        }
        Ok(())
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
            self.screen_round(&next, baseline)?;
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
            self.screen_round(&open, b)?;
        }
    }

    /// Whether the campaign's deadline leaves less than one more round of `open` candidates
    /// (`open` + 1 runs, a pair's two runs at screening's pace).
    fn out_of_ruling_time(&self, open: usize) -> bool {
        let round_s = (open + 1) as f64 * self.screening_pace_s() / 2.0;
        self.time_left_s().is_some_and(|left| left < round_s)
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

    /// Whether candidate `index` has `status`.
    fn is(&self, index: usize, status: Status) -> bool {
        self.state
            .candidate(index)
            .is_some_and(|c| c.status == status)
    }

    /// The screening pairs candidate `index` has.
    fn pairs_of(&self, index: usize) -> usize {
        self.state.candidate(index).map_or(0, |c| c.pairs.len())
    }

    /// One screening round (`measure::multi_arm`): one more pair for each of `indices`, every
    /// one against a single baseline run on one fresh seed, the baseline first in every other
    /// round and the candidates' order rotated; a warmup round first for those not yet warmed.
    /// A candidate whose tree is lost is rebuilt; one whose run fails or whose output differs
    /// is stopped, and the others go on; a failed baseline run fails the campaign.
    fn screen_round(&mut self, indices: &[usize], baseline: &Tree) -> Result<(), PipelineError> {
        let Some(s) = self.training().into_iter().next() else {
            return Err(PipelineError::internal("no training scenario"));
        };
        let names: Vec<String> = indices.iter().map(|i| format!("#{i}")).collect();
        self.stage(&format!("screen {}", names.join(" ")));
        let mut arms = Vec::new();
        for &index in indices {
            if let Some(t) = self.screening_tree(index, baseline)? {
                let spec = self.screening_spec(&s, &t, Some(index))?;
                arms.push((index, spec));
            }
        }
        let b = self.screening_spec(&s, baseline, None)?;
        let unwarmed: Vec<(usize, RunSpec)> = (arms.iter())
            .filter(|(i, _)| self.pairs_of(*i) == 0 && !self.warmed(*i))
            .cloned()
            .collect();
        if !unwarmed.is_empty() {
            self.run_screening_round(&s, &b, &unwarmed, Phase::Warmup)?;
        }
        arms.retain(|(i, _)| self.is(*i, Status::Checked) || self.is(*i, Status::Screened));
        if arms.is_empty() {
            return Ok(());
        }
        self.run_screening_round(&s, &b, &arms, Phase::Pairs)
    }

    /// Runs one round of `arms` against the baseline spec `b` and journals what each candidate
    /// got: its warmup runs or its next pair, or the stop its failure earns.
    fn run_screening_round(
        &mut self,
        s: &Scenario,
        b: &RunSpec,
        arms: &[(usize, RunSpec)],
        phase: Phase,
    ) -> Result<(), PipelineError> {
        let agree = timed_agreement(s);
        let mut seeds = crate::measure::seeds::Seeds::fresh()
            .map_err(crate::pipeline::error::io_err("cannot read a fresh seed"))?;
        let mut draw = || seeds.next_seed();
        let specs: Vec<&RunSpec> = arms.iter().map(|(_, spec)| spec).collect();
        let round = Round {
            baseline: b,
            candidates: &specs,
            baseline_first: self.screening_rounds % 2 == 1,
            rotate: self.screening_rounds,
            phase,
        };
        if phase == Phase::Pairs {
            self.screening_rounds += 1;
        }
        (self.on_event)(Event::Expect {
            runs: arms.len() + 1,
        });
        let ran = {
            let on_event = &mut *self.on_event;
            let mut emit = |e| on_event(Event::Run(e));
            let mut inputs = fresh_inputs(&mut draw, agree.as_ref());
            multi_arm::run_round(
                &mut *self.opts.runners.runner(),
                round,
                &mut inputs,
                &mut emit,
            )
        };
        let ran = ran.map_err(|e| PipelineError::Baseline(e.to_string()))?;
        for ((index, _), got) in arms.iter().zip(ran.candidates) {
            let index = *index;
            let next = self.pairs_of(index);
            let got = got.and_then(|c| match c.differs {
                None => Ok(c.run),
                Some(detail) => Err(MeasureError::OutputsDiffer {
                    phase,
                    index: next,
                    seed: ran.seed.unwrap_or_default(),
                    detail,
                    runs: Box::default(),
                }),
            });
            let run = match got {
                Ok(run) => run,
                Err(e) => {
                    self.screening_failure(index, e)?;
                    continue;
                }
            };
            let entry = match phase {
                Phase::Warmup => Entry::Warmups {
                    index,
                    runs: [(Arm::Baseline, ran.baseline.clone()), (Arm::Candidate, run)]
                        .map(|(arm, run)| WarmupRun {
                            arm,
                            purpose: Purpose::Warmup,
                            run,
                            seed: ran.seed,
                        })
                        .into(),
                },
                _ => {
                    let mut pair = Pair::new(next, ran.order, ran.baseline.clone(), run);
                    pair.seed = ran.seed;
                    Entry::ScreeningPair { index, pair }
                }
            };
            self.record(entry)?;
        }
        Ok(())
    }

    /// Whether candidate `index` has journaled warmup runs.
    fn warmed(&self, index: usize) -> bool {
        self.state
            .candidate(index)
            .is_some_and(|c| !c.warmups.is_empty())
    }

    /// The tree candidate `index` is screened in: the one its check left built, or a rebuild
    /// when an interrupted run lost it (`None`, the candidate stopped, when that fails).
    fn screening_tree(
        &mut self,
        index: usize,
        baseline: &Tree,
    ) -> Result<Option<Tree>, PipelineError> {
        let label = TreeLabel::Numbered(index);
        if let Some(t) = self.built_tree(label) {
            return Ok(Some(t));
        }
        let bytes = self.candidate_patch(index)?.bytes;
        let mut runner = self.opts.runners.runner();
        match self.rebuild_for_screening(label, &bytes, baseline, &mut *runner)? {
            Some(t) => Ok(Some(t)),
            None => {
                let stop = GateStop::failed(GateName::Build, "the rebuild for screening failed");
                self.stop_candidate(index, stop)?;
                Ok(None)
            }
        }
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

    /// Candidate `index`'s screening ends: counted when `search.counters` asks (fresh seed), then
    /// `screened` with the median of its `want` pairs.
    fn screened(
        &mut self,
        index: usize,
        baseline: &Tree,
        want: usize,
    ) -> Result<(), PipelineError> {
        let Some(s) = self.training().into_iter().next() else {
            return Err(PipelineError::internal("no training scenario"));
        };
        let counted = self.plan.spec.search.counters.contains(&Counter::Callgrind);
        if counted {
            let Some(t) = self.built_tree(TreeLabel::Numbered(index)) else {
                return Err(PipelineError::internal("the screened tree went missing"));
            };
            let mut seeds = crate::measure::seeds::Seeds::fresh()
                .map_err(crate::pipeline::error::io_err("cannot read a fresh seed"))?;
            let seed = seeds.next_seed();
            let count = |tree| count_spec(tree, &s, seed, &self.sandbox);
            if !self.count_instructions(index, &count(baseline), &count(&t))? {
                return Ok(());
            }
        }
        let ratios: Vec<f64> = (self.state.candidate(index))
            .map_or_else(Vec::new, |c| c.pairs.iter().map(|p| p.ratio).collect());
        let median = Ratios::new(ratios)
            .map(|r| stats::median(&r))
            .unwrap_or(f64::NAN);
        self.set_status(index, Status::Screened, screened_reason(median, want))
    }

    /// The timed spec of `tree` on scenario `s`; when the scenario compares timed outputs, what it
    /// prints is kept where the rule reads it back: the candidate's in its own folder, the
    /// baseline's (`index` none) in one folder its rounds share.
    fn screening_spec(
        &self,
        s: &Scenario,
        tree: &Tree,
        index: Option<usize>,
    ) -> Result<RunSpec, PipelineError> {
        let mut spec = scenario_template(tree, s, &self.sandbox);
        if s.timed_output_rule() == Some(crate::spec::workload::TimedOutputRule::Compare) {
            let (folder, file) = match index {
                Some(i) => (format!("timed-outputs-{i}"), "candidate.out"),
                None => ("timed-outputs-baseline".to_string(), "baseline.out"),
            };
            let dir = self.work.join(folder);
            std::fs::create_dir_all(&dir).map_err(crate::pipeline::io_err(
                "cannot create the timed outputs folder",
            ))?;
            spec.stdout_file = Some(dir.join(file));
        }
        Ok(spec)
    }

    fn screening_failure(&mut self, index: usize, e: MeasureError) -> Result<(), PipelineError> {
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
