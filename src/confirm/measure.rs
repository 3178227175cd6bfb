//! The timed part of a confirmation: A/A and comparison pairs on each training scenario (as many
//! as the A/A pairs say resolve the minimum effect and find the target effect 80% of the time, up
//! to `confirm.max_pairs`), then pairs on
//! each sealed holdout (as many as that A/A noise says a candidate no slower than the baseline
//! needs to show it, up to the same cap) — only after every build has finished. Comparison and
//! holdout pairs run in a balanced random order whose seed is recorded with the scenario.

use super::stages::{MainTrees, Measured, Step, TimedTrees, step};
use crate::bench::{self, BenchError, BenchPlan};
use crate::evidence::budget::{self, BudgetConfig, Share};
use crate::evidence::figures::BenchSettings;
use crate::evidence::replay::{ReplayCheck, TimedCompare};
use crate::measure::record::{Arm, Order, WarmupRun};
use crate::measure::runner::{RunSpec, Runner};
use crate::measure::schedule::{
    self, Arms, Inputs, MeasureError, PairOrder, PairsPlanned, Phase, RunEvent,
};
use crate::spec::workload::{Role, Scenario, TimedOutputRule};
use crate::tree::Tree;

use super::Run;
use crate::evidence::result::{
    GateName, GateStatus, HoldoutCounts, HoldoutPlan, ScenarioResult, holdout_figures,
    holdout_plan, outputs_consistent,
};
use crate::pipeline::PipelineError;
use crate::pipeline::event::Event;

use crate::pipeline::checks::{
    fresh_inputs, revealing_holdout_name, scenario_template, timed_agreement,
};
use crate::pipeline::io_err;

impl Run<'_> {
    /// Times the scenarios on `timed`'s trees; a gate that fails here ends the timed runs (what
    /// comes after them still runs: the counts, the protected files' check, the leftover gate).
    pub(crate) fn measure_all<'t>(
        &mut self,
        timed: &'t TimedTrees,
    ) -> Result<Measured<'t>, PipelineError> {
        self.time_scenarios(timed)?;
        Ok(Measured { main: &timed.main })
    }

    /// [`Run::measure_all`]'s timed runs: the training scenarios, then (when they can still
    /// matter) the holdouts and the configuration lane.
    fn time_scenarios(&mut self, timed: &TimedTrees) -> Result<(), PipelineError> {
        self.stage("measure");
        // Pinned while it lives: dropped before the configuration lane, whose build must not
        // inherit evo's single CPU.
        let mut runner = self.opts.runners.timed_runner();
        self.evidence.environment.cpus = runner.cpu_split().cloned();
        let training: Vec<Scenario> = self
            .plan
            .campaign
            .workload
            .scenarios
            .iter()
            .filter(|s| s.role == Role::Training)
            .cloned()
            .collect();
        let holdout_count =
            (self.plan.campaign.holdouts.as_ref()).map_or(0, |h| h.holdouts.scenarios.len());
        let runs = self.expected_runs(training.len(), holdout_count);
        (self.on_event)(Event::Expect { runs });
        for s in &training {
            if let Step::Stopped(_) = self.measure_training(&mut *runner, s, timed)? {
                return Ok(());
            }
        }
        let metric = self.plan.campaign.spec.confirm.metric;
        if !crate::evidence::verdict::holdouts_can_matter(metric, &self.evidence.scenarios) {
            // The verdict is already "not accepted"; holdouts cannot change it, so spare their runs.
            self.finish_timed_output_gate();
            return Ok(());
        }
        // With the inputs drawn for this confirmation (`holdout_scenarios`).
        let holdouts = self.holdout_scenarios();
        for s in &holdouts {
            if let Step::Stopped(_) = self.measure_holdout(&mut *runner, s, &timed.main)? {
                return Ok(());
            }
        }
        drop(runner);
        self.finish_timed_output_gate();
        self.measure_config_lane(&timed.main.baseline, timed.config_only.as_ref())
    }

    /// What the budget of timed pairs is split from (docs/design.md §3.6), if there is one
    /// (`settle_budget` fixed it): the training scenarios get it less a reserve for the
    /// holdouts, the holdouts what is left.
    fn budget_config(&self) -> Option<BudgetConfig> {
        let campaign = &self.plan.campaign;
        Some(BudgetConfig {
            total_s: self.pairs_budget.flatten()?,
            training: (campaign.workload.scenarios.iter())
                .filter(|s| s.role == Role::Training)
                .count(),
            holdouts: (campaign.holdouts.as_ref()).map_or(0, |h| h.holdouts.scenarios.len()),
            pairs: self.plan.settings().pairs.get(),
        })
    }

    /// The next scenario's share of the budget, after the scenarios measured so far.
    fn budget_share(&self, role: Role, warmups: &[WarmupRun]) -> Option<Share> {
        let config = self.budget_config()?;
        Some(budget::share(
            &config,
            &self.evidence.scenarios,
            role,
            warmups,
        ))
    }

    /// The runs of the measuring stage at the configured pair counts (the A/A runs may plan more
    /// comparison and holdout pairs; each announcement says so): warmups, A/A and comparison pairs of each
    /// training scenario, warmups and pairs of each holdout.
    fn expected_runs(&self, training: usize, holdouts: usize) -> usize {
        let set = self.plan.settings();
        let (warmup, aa, pairs) = (set.warmup.get(), set.aa_pairs.get(), set.pairs.get());
        2 * (training * (warmup + aa + pairs) + holdouts * (warmup + pairs))
    }

    fn finish_timed_output_gate(&mut self) {
        if !self
            .evidence
            .gates
            .iter()
            .any(|g| g.name == GateName::TimedOutput)
        {
            let detail = timed_output_detail(&self.evidence.scenarios);
            self.pass_gate(GateName::TimedOutput, detail);
        }
    }

    /// Turns a failed timed run into a baseline error or a failed gate: a candidate's failed run
    /// is blamed on it only once `baseline`'s same run succeeds alone (`baseline_fails_too`).
    fn timed_failure<T>(
        &mut self,
        e: MeasureError,
        runner: &mut dyn Runner,
        baseline: &RunSpec,
    ) -> Result<Step<T>, PipelineError> {
        match e {
            MeasureError::RunFailed {
                arm: Arm::Candidate,
                seed,
                ..
            } => {
                // The baseline's same run: its command on the seed the candidate's run had.
                let same = RunSpec {
                    command: crate::check::fill_seed(
                        &baseline.command,
                        match seed {
                            Some(seed) => seed,
                            None => crate::check::fresh_seed()
                                .map_err(super::io_err("cannot read a fresh seed"))?,
                        },
                    ),
                    ..baseline.clone()
                };
                self.baseline_fails_too(runner, &same, "a timed run")?;
                Ok(self.fail_gate(
                    GateName::TimedOutput,
                    format!("a timed run of the candidate failed: {e}"),
                ))
            }
            MeasureError::RunFailed { .. } => {
                Err(PipelineError::Baseline(format!("a timed run failed: {e}")))
            }
            e @ MeasureError::OutputsDiffer { .. } => self.outputs_failure(e),
            MeasureError::Runner(r) => Err(PipelineError::internal(r)),
        }
    }

    /// Two runs of one pair that disagreed for the same seed: a failed gate, or, between the
    /// baseline and its second build, the baseline's own failure.
    fn outputs_failure<T>(&mut self, e: MeasureError) -> Result<Step<T>, PipelineError> {
        match e {
            // The baseline against its second build: the baseline itself does not print the same
            // for the same seed, so no candidate's output can be held against it.
            MeasureError::OutputsDiffer {
                phase: Phase::AaPairs,
                ..
            } => Err(PipelineError::Baseline(format!(
                "the baseline's timed output is not reproducible: {e}; declare \
                 `compare_timed_output` with a tolerance instead of `deterministic_output`, or \
                 make the timed output depend only on the seed"
            ))),
            MeasureError::OutputsDiffer { .. } => Ok(self.fail_gate(
                GateName::TimedOutput,
                format!(
                    "the candidate's timed output differs from the baseline's for the same seed \
                     (a result replayed or not computed; the checked call must be the timed \
                     call): {e}"
                ),
            )),
            other => Err(PipelineError::internal(other)),
        }
    }

    /// The timed run of `s` in `tree`, with `{seed}` left for each pair's fresh seed, and its
    /// output kept where the scenario's rule needs to read it back.
    fn timed_spec(
        &self,
        s: &Scenario,
        label: crate::evidence::result::TreeLabel,
        tree: &Tree,
    ) -> Result<RunSpec, PipelineError> {
        let mut spec = scenario_template(tree, s, &self.sandbox);
        if s.timed_output_rule() == Some(TimedOutputRule::Compare) {
            let path = (self.run_dir.timed_output_path(label, &s.name))
                .map_err(io_err("cannot create the outputs folder"))?;
            spec.stdout_file = Some(path);
        }
        Ok(spec)
    }

    /// Records whether replay could show in a scenario's runs, and (for an exact rule) whether
    /// the two runs of every pair printed the same bytes; runs that disagree under a scenario's
    /// own rule already stopped the measurement with the gate failed.
    fn check_timed_output(&mut self, s: &Scenario, result: &mut ScenarioResult) -> Step<()> {
        let compared = s.timed_output_rule().map(|r| match r {
            TimedOutputRule::Exact => TimedCompare::Exact,
            TimedOutputRule::Compare => TimedCompare::Rule,
        });
        // What the baseline's timed command printed in the differential (`<scenario>.timed`),
        // searched for the same work printed twice (`replay::repeated_block`) and, where the
        // scenario declares one, for an iteration digest that repeats or is not printed
        // (`replay::repeated_digest`; an output that cannot be read shows no digest either).
        let output = (self.run_dir)
            .output_path(
                crate::evidence::result::TreeLabel::Baseline,
                &super::lanes::timed_check_name(&s.name),
            )
            .ok()
            .and_then(|path| std::fs::read(path).ok());
        let repeated = (output.as_deref())
            .and_then(crate::evidence::replay::repeated_block)
            .or_else(|| {
                // Training scenarios only: a holdout's output and file are sealed, and the
                // differential keeps no timed output of a holdout to search.
                let prefix = (s.role == Role::Training)
                    .then_some(s.iteration_digest.as_deref())
                    .flatten()?;
                crate::evidence::replay::repeated_digest(
                    output.as_deref().unwrap_or_default(),
                    prefix,
                )
            });
        result.replay = Some(
            ReplayCheck::of_runs(
                Some(crate::check::has_seed(&s.run)),
                compared,
                &result.warmups,
                &result.aa_pairs,
                &result.pairs,
            )
            .with_repeated(repeated),
        );
        let Some(compared) = compared else {
            return Step::Go(());
        };
        let consistent = match compared {
            TimedCompare::Exact => {
                outputs_consistent(&result.warmups, &result.aa_pairs, &result.pairs)
            }
            TimedCompare::Rule => !self.gate_failed(GateName::TimedOutput),
        };
        result.timed_output_consistent = Some(consistent);
        if consistent || self.gate_failed(GateName::TimedOutput) {
            return Step::Go(());
        }
        self.fail_gate(
            GateName::TimedOutput,
            format!(
                "scenario `{}` declares deterministic output, but the two runs of a pair printed \
                 different bytes for the same seed (the checked call must be the timed call)",
                s.name
            ),
        )
    }

    fn gate_failed(&self, name: GateName) -> bool {
        (self.evidence.gates.iter()).any(|g| g.name == name && g.status == GateStatus::Failed)
    }

    /// The timed runs of `s` in both main trees, then the warmups of both arms, each round on a
    /// fresh seed. When a round's two runs already disagree, the scenario is recorded with its
    /// warmups alone and nothing more is measured (a gamed timed call costs two runs).
    fn warm_up(
        &mut self,
        runner: &mut dyn Runner,
        s: &Scenario,
        main: &MainTrees,
        role: Role,
    ) -> Result<Step<Warmed>, PipelineError> {
        use crate::evidence::result::TreeLabel;
        let baseline = self.timed_spec(s, TreeLabel::Baseline, &main.baseline)?;
        let candidate = self.timed_spec(s, TreeLabel::Candidate, &main.candidate)?;
        let arms = Arms {
            baseline: &baseline,
            candidate: &candidate,
        };
        (self.on_event)(Event::Scenario(s.name.clone()));
        let warmup = self.plan.settings().warmup.get();
        let agree = timed_agreement(s);
        let mut seeds = crate::measure::seeds::Seeds::fresh()
            .map_err(super::io_err("cannot read a fresh seed"))?;
        let mut draw = || seeds.next_seed();
        let mut inputs = fresh_inputs(&mut draw, agree.as_ref());
        let on_event = &mut *self.on_event;
        let mut emit = |e| on_event(Event::Run(e));
        let order = Order::CandidateFirst;
        let warmups =
            match schedule::run_warmups(runner, arms, &mut inputs, warmup, order, &mut emit) {
                Ok(w) => w,
                Err(mut e @ MeasureError::OutputsDiffer { .. }) => {
                    let runs = partial_runs(&mut e);
                    return self.disagreed(s, role, arms, runs.warmups, Vec::new(), e);
                }
                Err(e) => return self.timed_failure(e, runner, arms.baseline),
            };
        Ok(Step::Go(Warmed {
            baseline,
            candidate,
            warmups,
        }))
    }

    /// Records a scenario whose runs disagreed for the same seed, with the runs made so far, and
    /// fails the timed-output gate (or, for the baseline against itself, stops).
    fn disagreed<T>(
        &mut self,
        s: &Scenario,
        role: Role,
        arms: Arms<'_>,
        warmups: Vec<WarmupRun>,
        pairs: Vec<crate::measure::record::Pair>,
        e: MeasureError,
    ) -> Result<Step<T>, PipelineError> {
        let stopped = self.outputs_failure(e)?;
        let mut result = scenario_result(s, role, arms, warmups);
        result.pairs = pairs;
        result.timed_output_consistent = Some(false);
        // The gate has already failed above: this records the replay check alone.
        let _ = self.check_timed_output(s, &mut result);
        result.timed_output_consistent = Some(false);
        self.evidence.scenarios.push(result);
        Ok(stopped)
    }

    /// Warmups, A/A and comparison pairs of training scenario `s`; the A/A pairs' other arm is
    /// the second baseline when it built.
    fn measure_training(
        &mut self,
        runner: &mut dyn Runner,
        s: &Scenario,
        timed: &TimedTrees,
    ) -> Result<Step<()>, PipelineError> {
        use crate::evidence::result::TreeLabel;
        let Warmed {
            baseline: b,
            candidate: c,
            warmups,
        } = step!(self.warm_up(runner, s, &timed.main, Role::Training));
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        self.settle_budget(&warmups);
        let set = self.plan.settings();
        let share = self.budget_share(Role::Training, &warmups);
        let again = match timed.baseline_again.as_ref() {
            Some(t) => Some(self.timed_spec(s, TreeLabel::BaselineAgain, t)?),
            None => None,
        };
        let mut seeds = crate::measure::seeds::Seeds::fresh()
            .map_err(super::io_err("cannot read a fresh seed"))?;
        let order_seed = seeds.next_seed();
        let earlier = self.earlier_aa_for(s, again.is_some());
        let plan = BenchPlan {
            earlier_aa: earlier.as_ref().map(|(_, pairs)| pairs.clone()),
            baseline: b.clone(),
            candidate: c.clone(),
            baseline_again: again.clone(),
            quiet: None,
            env_pad: true,
            settings: BenchSettings {
                pairs: set.pairs.get(),
                max_pairs: set.max_pairs(),
                budget_s: share.map(|s| s.budget_s),
                aa_pairs: set.aa_pairs.get(),
                // Already done above, where a differing timed output can stop early.
                warmup: 0,
                min_effect: set.min_effect.get(),
                target_effect: set.target_effect(),
                first: Order::CandidateFirst,
                order_seed: Some(order_seed),
                mde_seed: self.evidence.seed,
                timeout_s: s.timeout_s.get(),
            },
        };
        let agree = timed_agreement(s);
        let mut draw = || seeds.next_seed();
        let mut inputs = fresh_inputs(&mut draw, agree.as_ref());
        let on_event = &mut *self.on_event;
        let measured =
            bench::run_bench(&plan, runner, &mut inputs, &mut |e| on_event(Event::Run(e)));
        let report = match measured {
            Ok(r) => r,
            Err(BenchError::Measure(mut e @ MeasureError::OutputsDiffer { .. })) => {
                let runs = partial_runs(&mut e);
                return self.disagreed(s, Role::Training, arms, warmups, runs.pairs, e);
            }
            Err(BenchError::Measure(e)) => return self.timed_failure(e, runner, &b),
            Err(BenchError::Stats(e)) => return Err(PipelineError::internal(e)),
        };
        let mut result = scenario_result(s, Role::Training, arms, warmups);
        result.aa_second_build = again.is_some();
        result.aa_from = earlier.map(|(run_id, _)| run_id);
        result.order_seed = plan.settings.order_seed;
        result.aa_pairs = report.aa_pairs;
        result.pairs = report.pairs;
        let mut figures = report.figures;
        if let Some(plan) = figures.plan.as_mut() {
            // The warmups ran above, outside the bench; record the configured count.
            plan.warmups = self.plan.settings().warmup.get();
            plan.budget_split = share.map(|s| s.split);
        }
        result.training = Some(figures);
        let checked = self.check_timed_output(s, &mut result);
        self.evidence.scenarios.push(result);
        Ok(checked)
    }

    /// The earlier confirmation's A/A pairs of training scenario `s` with its run id, when this
    /// run may reuse them (`earlier_aa::EarlierAa::pairs_for`: byte-identical baseline binaries,
    /// a second build this time too, as many pairs as configured); announced when so.
    fn earlier_aa_for(
        &mut self,
        s: &Scenario,
        second_build: bool,
    ) -> Option<(String, Vec<crate::measure::record::Pair>)> {
        let earlier = self.earlier_aa.as_ref()?;
        let count = self.plan.settings().aa_pairs.get();
        let pairs = earlier.pairs_for(&s.name, &self.evidence.artifacts, second_build, count)?;
        let found = (earlier.run_id.clone(), pairs.to_vec());
        self.stage(&format!(
            "A/A pairs: the {count} of confirmation {} (the same baseline binaries, byte for \
             byte), not measured again",
            found.0
        ));
        Some(found)
    }

    /// Warmups and pairs of sealed holdout `s`, as many as the training scenarios' A/A noise
    /// plans.
    fn measure_holdout(
        &mut self,
        runner: &mut dyn Runner,
        s: &Scenario,
        main: &MainTrees,
    ) -> Result<Step<()>, PipelineError> {
        // Said where the holdout is timed, not on a run that stops before it.
        if let Some(warning) = revealing_holdout_name(s) {
            self.warn(warning);
        }
        let Warmed {
            baseline: b,
            candidate: c,
            warmups,
        } = step!(self.warm_up(runner, s, main, Role::Holdout));
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        self.settle_budget(&warmups);
        let set = self.plan.settings();
        let share = self.budget_share(Role::Holdout, &warmups);
        let counts = HoldoutCounts {
            pairs: set.pairs.get(),
            max_pairs: set.max_pairs(),
            warmups: set.warmup.get(),
            budget_s: share.map(|s| s.budget_s),
            budget_split: share.map(|s| s.split),
        };
        let Some(plan) = holdout_plan(&self.evidence.scenarios, counts, &warmups) else {
            return Err(PipelineError::internal(
                "no training scenario's A/A runs to plan the holdout's pairs from",
            ));
        };
        let mut seeds = crate::measure::seeds::Seeds::fresh()
            .map_err(super::io_err("cannot read a fresh seed"))?;
        let order_seed = seeds.next_seed();
        let order = PairOrder::Shuffled { seed: order_seed };
        let agree = timed_agreement(s);
        let mut draw = || seeds.next_seed();
        let mut inputs = fresh_inputs(&mut draw, agree.as_ref());
        let on_event = &mut *self.on_event;
        let mut emit = |e| on_event(Event::Run(e));
        emit(RunEvent::announce(
            holdout_announcement(&plan, &warmups),
            order.order_of(0).arms()[0],
        ));
        let measured = holdout_pairs(runner, arms, &mut inputs, &plan, order, &mut emit);
        let pairs = match measured {
            Ok(p) => p,
            Err(mut e @ MeasureError::OutputsDiffer { .. }) => {
                let runs = partial_runs(&mut e);
                return self.disagreed(s, Role::Holdout, arms, warmups, runs.pairs, e);
            }
            Err(e) => return self.timed_failure(e, runner, &b),
        };
        let mut result = scenario_result(s, Role::Holdout, arms, warmups);
        let figures = holdout_figures(&pairs, Some(&plan)).map_err(PipelineError::internal)?;
        result.holdout = Some(figures);
        result.pairs = pairs;
        result.order_seed = Some(order_seed);
        let checked = self.check_timed_output(s, &mut result);
        self.evidence.scenarios.push(result);
        Ok(checked)
    }
}

/// A scenario's two timed runs and the warmups both arms made of them.
struct Warmed {
    baseline: RunSpec,
    candidate: RunSpec,
    warmups: Vec<WarmupRun>,
}

/// Runs a holdout's pairs look by look (`stats::holdout_looks` of its plan), stopping at the first
/// look whose gate decides (`stats::judge_holdout_look`, the rule `holdout_figures` re-derives) or
/// at the plan's last look.
fn holdout_pairs(
    runner: &mut dyn Runner,
    arms: Arms<'_>,
    inputs: &mut Inputs<'_>,
    plan: &HoldoutPlan,
    order: PairOrder,
    on_run: &mut dyn FnMut(RunEvent),
) -> Result<Vec<crate::measure::record::Pair>, MeasureError> {
    let looks = crate::stats::holdout_looks(plan.pairs, plan.planned);
    let mut pairs = Vec::with_capacity(plan.planned);
    for index in 0..looks.len() {
        let more = schedule::MorePairs {
            until: looks[index].pairs,
            total: plan.planned,
            pair_order: order,
            phase: Phase::Pairs,
        };
        pairs = schedule::extend_pairs(runner, arms, inputs, pairs, more, on_run)?;
        let ratios: Vec<f64> = pairs.iter().map(|p| p.ratio).collect();
        if crate::stats::judge_holdout_look(&ratios, &looks, index).is_some() {
            break;
        }
    }
    Ok(pairs)
}

/// The runs a measurement made before two of them disagreed, taken out of its error.
fn partial_runs(e: &mut MeasureError) -> schedule::PhaseRuns {
    match e {
        MeasureError::OutputsDiffer { runs, .. } => std::mem::take(&mut **runs),
        _ => schedule::PhaseRuns::default(),
    }
}

/// The announcement of a holdout's pair count, as the training comparison makes it; its time
/// estimate comes from the holdout's warmups (it has no A/A pairs).
fn holdout_announcement(plan: &HoldoutPlan, warmups: &[WarmupRun]) -> PairsPlanned {
    let per_pair = crate::evidence::result::warmup_seconds_per_pair(warmups);
    PairsPlanned {
        planned: plan.planned,
        configured: plan.pairs,
        needed: plan.needed,
        sigma: plan.sigma,
        estimated_s: plan.planned as f64 * per_pair,
        needed_s: plan.needed as f64 * per_pair,
        resolves_gain: None,
        min_effect: None,
        ranges: None,
    }
}

/// A scenario's record with its warmups; the caller fills in pairs and figures.
fn scenario_result(
    s: &Scenario,
    role: Role,
    arms: Arms<'_>,
    warmups: Vec<WarmupRun>,
) -> ScenarioResult {
    ScenarioResult {
        baseline_command: arms.baseline.command.clone(),
        candidate_command: arms.candidate.command.clone(),
        cwd: s.cwd.clone().unwrap_or_else(|| ".".to_string()),
        warmups,
        description: (role == Role::Training)
            .then(|| s.description.clone())
            .flatten(),
        ..ScenarioResult::unmeasured(&s.name, role)
    }
}

/// The passed timed-output gate's detail: how many scenarios declare deterministic output (their
/// timed output was compared), or that none does. Names would be sealed away with a holdout's.
fn timed_output_detail(scenarios: &[ScenarioResult]) -> String {
    let compared = scenarios
        .iter()
        .filter(|s| s.timed_output_consistent.is_some())
        .count();
    match compared {
        0 => "every timed run succeeded; no scenario declares deterministic output, so timed \
              outputs were not compared"
            .to_string(),
        1 => "every timed run succeeded; the one scenario declaring deterministic output printed \
              the same bytes on every run of both arms"
            .to_string(),
        n => format!(
            "every timed run succeeded; each of the {n} scenarios declaring deterministic output \
             printed the same bytes on every run of both arms"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(name: &str, timed_output_consistent: Option<bool>) -> ScenarioResult {
        ScenarioResult {
            timed_output_consistent,
            ..ScenarioResult::unmeasured(name, Role::Training)
        }
    }

    #[test]
    fn a_passed_timed_output_gate_calls_no_scenario_deterministic_that_is_not() {
        let none = timed_output_detail(&[scenario("a", None)]);
        assert!(!none.contains("declared"), "{none}");
        assert!(
            none.contains("no scenario declares deterministic output"),
            "{none}"
        );
        let one = timed_output_detail(&[scenario("a", None), scenario("b", Some(true))]);
        assert!(one.contains("the one scenario declaring"), "{one}");
    }
}
