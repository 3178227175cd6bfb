//! The build-configuration lane (docs/design.md §2.2.11). When a patch touches the workload's
//! `config_files` or a file a build tool reads by itself (`tree::IMPLICIT_BUILD_FILES`), evo also builds the baseline with only the configuration part of the patch and
//! measures it against the baseline, so the receipt says how much of the gain flags alone give and
//! how much the code change gives. When the lane does not run, the result says why.

use super::stages::{Step, step};
use super::{Run, io_err};
use crate::evidence::result::TreeLabel;
use crate::failure::with_causes;
use crate::measure::record::Order;
use crate::measure::schedule::{self, Arms, PairOrder, Phase};
use crate::pipeline::PipelineError;
use crate::pipeline::checks::{LaneStep, Shown, failure_text};
use crate::pipeline::event::Event;
use crate::spec::workload::Role;
use crate::tree::{self, Protected, Tree};

/// The configuration-only patch's name in the run directory.
const CONFIG_PATCH: &str = "config_only.patch";

impl Run<'_> {
    fn skip_config_lane(&mut self, reason: impl Into<String>) {
        self.evidence.config_lane.ran = false;
        self.evidence.config_lane.reason = reason.into();
    }

    /// Splits the patch; when it mixes configuration and code, prepares the configuration-only
    /// tree (built later with the others). `None`: the lane does not run, and the result says
    /// why.
    pub(crate) fn prepare_config_lane(&mut self) -> Result<Option<Tree>, PipelineError> {
        // Files a build tool reads by itself count as configuration too (`tree::split_patch`).
        let globs = &self.plan.campaign.workload.config_files;
        let split = match tree::split_patch(&self.plan.patch, globs) {
            Ok(s) => s,
            Err(e) => {
                self.skip_config_lane(format!(
                    "the patch could not be split by file: {}",
                    with_causes(&e)
                ));
                return Ok(None);
            }
        };
        self.evidence.config_lane.files = split.config_files.clone();
        if split.config.is_empty() {
            self.skip_config_lane("the patch touches no build configuration file");
            return Ok(None);
        }
        if split.code.is_empty() {
            self.skip_config_lane(
                "the patch changes only build configuration, so all of its effect is configuration",
            );
            return Ok(None);
        }
        self.run_dir
            .write(CONFIG_PATCH, &split.config)
            .map_err(io_err("cannot write the configuration-only patch"))?;
        let t = self.materialize(TreeLabel::ConfigOnly)?;
        if let Err(e) = tree::apply_patch(&t, &split.config) {
            self.skip_config_lane(format!(
                "the configuration part does not apply alone: {}",
                with_causes(&e)
            ));
            return Ok(None);
        }
        self.evidence.config_lane.patch_file = Some(CONFIG_PATCH.to_string());
        Ok(Some(t))
    }

    /// Builds the configuration-only tree, if the lane runs: the tree when it built. A failure
    /// ends the lane, not the confirmation, but a changed protected file fails gate `patch
    /// safety`.
    pub(crate) fn build_config_tree(
        &mut self,
        config_only: Option<Tree>,
        protected: &Protected,
    ) -> Result<Step<Option<Tree>>, PipelineError> {
        let Some(t) = config_only else {
            return Ok(Step::Go(None));
        };
        self.stage("configuration-only build");
        let step = LaneStep::build(&self.plan.campaign.workload);
        let out = self.run_single(&step, (TreeLabel::ConfigOnly, &t))?;
        step!(self.protected_unchanged(protected, &[(TreeLabel::ConfigOnly, &t)], "the build"));
        if !out.record.succeeded() {
            let text = failure_text(&out, step.timeout, Shown::GATE);
            self.skip_config_lane(format!("the configuration-only build failed: {text}"));
            return Ok(Step::Go(None));
        }
        Ok(Step::Go(Some(t)))
    }

    /// Pairs of baseline against baseline + configuration on the first training scenario; runs
    /// only once the whole patch has passed its training gate (otherwise there is no gain to
    /// attribute).
    pub(crate) fn measure_config_lane(
        &mut self,
        bt: &Tree,
        config: Option<&Tree>,
    ) -> Result<(), PipelineError> {
        let Some(config) = config else {
            return Ok(());
        };
        let Some(s) = self
            .plan
            .campaign
            .workload
            .scenarios
            .iter()
            .find(|s| s.role == Role::Training)
            .cloned()
        else {
            return Ok(());
        };
        let whole = self
            .evidence
            .scenarios
            .iter()
            .find(|r| r.name == s.name)
            .and_then(|r| r.training.as_ref())
            .filter(|f| f.training_gate.passed)
            .map(|f| f.median);
        let Some(whole) = whole else {
            self.skip_config_lane("not measured: the whole patch did not pass its training gate");
            return Ok(());
        };
        self.stage("configuration-only pairs");
        let b = crate::pipeline::checks::scenario_template(bt, &s, &self.sandbox);
        let c = crate::pipeline::checks::scenario_template(config, &s, &self.sandbox);
        let arms = Arms {
            baseline: &b,
            candidate: &c,
        };
        let mut runner = self.opts.runners.timed_runner();
        let order = PairOrder::Alternating(Order::CandidateFirst);
        let n = self.plan.settings().pairs.get();
        (self.on_event)(Event::Expect { runs: 2 + 2 * n });
        (self.on_event)(Event::Scenario(s.name.clone()));
        let on_event = &mut *self.on_event;
        let mut emit = |e| on_event(Event::Run(e));
        // The warmups are kept: their leftover processes count against the candidate like those
        // of every other timed run of its code (the gate is decided after this lane).
        // Every pair on a fresh seed, as the whole patch's pairs.
        let mut seeds = crate::measure::seeds::Seeds::fresh()
            .map_err(super::io_err("cannot read a fresh seed"))?;
        let mut draw = || seeds.next_seed();
        let mut inputs = schedule::Inputs {
            seeds: Some(&mut draw),
            agree: None,
        };
        let first = Order::CandidateFirst;
        let measured = schedule::run_warmups(&mut *runner, arms, &mut inputs, 1, first, &mut emit)
            .and_then(|warmups| {
                let phase = Phase::Pairs;
                schedule::run_pairs(&mut *runner, arms, &mut inputs, n, order, phase, &mut emit)
                    .map(|pairs| (warmups, pairs))
            });
        let (warmups, pairs) = match measured {
            Ok(p) => p,
            Err(e) => {
                self.skip_config_lane(format!(
                    "the configuration-only runs failed: {}",
                    with_causes(&e)
                ));
                return Ok(());
            }
        };
        let figures = crate::evidence::result::holdout_figures(&pairs, None)
            .map_err(PipelineError::internal)?;
        let lane = &mut self.evidence.config_lane;
        lane.ran = true;
        lane.scenario = Some(s.name.clone());
        lane.median = Some(figures.median);
        lane.ci95 = figures.ci95;
        lane.configuration_share = (whole > 1.0).then(|| figures.median.ln() / whole.ln());
        lane.reason = format!(
            "the patch changes {} besides code; baseline + configuration only measured {:.4}× \
             against the whole patch's {whole:.4}×",
            lane.files.join(", "),
            figures.median
        );
        lane.warmups = warmups;
        lane.pairs = pairs;
        Ok(())
    }
}
