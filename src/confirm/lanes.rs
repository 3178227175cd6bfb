//! The untimed lanes of a confirmation: builds, tests, the differential check and the sanitizer
//! lane, each step judged by the one check engine (`pipeline::lane`) with the baseline's step
//! run beside the candidate's ([`Paired`]). Baseline and candidate steps run side by side (two
//! threads): nothing is being measured yet, and the two trees share nothing.

use std::time::Duration;

use super::Run;
use super::stages::{Built, MainTrees, Prepared, SanitizedTrees, Step, TimedTrees, step};
use crate::check;
use crate::evidence::outcome::GateStop;
use crate::evidence::result::{
    ArtifactDigest, CheckLane, DrawnInputs, FilledCommand, GateName, GateStatus, HoldoutSeed, Role,
    StepKind, StepName, TreeLabel,
};
use crate::evidence::verdict::gate;
use crate::pipeline::PipelineError;
use crate::pipeline::checks::{LaneStep, Shown, failure_text, hidden_path_hint};
use crate::pipeline::lane::{self, Lane, Ran, Sides};
use crate::pipeline::steps::{self, StepOutput};
use crate::spec::workload::Scenario;
use crate::tree::{self, Protected, Tree};

/// How the candidate's own step went, beside a baseline step that failed.
fn candidate_side(cand: &StepOutput, timeout: Duration) -> String {
    if cand.record.succeeded() {
        "the candidate's own step succeeded".to_string()
    } else {
        format!(
            "the candidate's step failed too: {}",
            failure_text(cand, timeout, Shown::GATE)
        )
    }
}

/// What failed, in the words of a baseline that fails alone too: "tests failed".
fn failed_step(step: &LaneStep<'_>) -> String {
    match &step.step.kind {
        StepKind::Test(_) => "tests failed".to_string(),
        StepKind::Check(name) => format!("check of scenario `{name}` failed"),
        _ => format!("{} failed", step.step),
    }
}

/// A confirmation's two sides of a step: the baseline's tree and the candidate's at once, and a
/// baseline step that fails run again alone before the baseline is blamed.
struct Paired<'r, 'a> {
    run: &'r mut Run<'a>,
    trees: [(TreeLabel, &'r Tree); 2],
    /// Where a failed baseline build runs again: a fresh tree of this label, after the
    /// candidate's tree is removed (a build writes its tree, and the candidate's may have filled
    /// the disk). `None`: in the baseline's own tree (a test or a check leaves it as it was).
    alone: Option<TreeLabel>,
}

impl Sides for Paired<'_, '_> {
    fn run(&mut self, step: &LaneStep<'_>, gate: GateName) -> Result<Lane<Ran>, PipelineError> {
        let [base, cand] = self.run.run_pair(step, self.trees)?;
        if base.record.succeeded() {
            return Ok(Ok(Ran {
                candidate: cand,
                baseline: Some(base),
            }));
        }
        let what = failed_step(step);
        let disturbed = match self.alone {
            Some(label) => {
                let _ = std::fs::remove_dir_all(&self.trees[1].1.root);
                self.run.stage(&format!("{} alone", step.step));
                let fresh = self.run.materialize(label)?;
                let beside = (&base, &cand);
                self.run
                    .baseline_alone(step, beside, (label, &fresh), &what)?
            }
            None => (self.run).baseline_alone(step, (&base, &cand), self.trees[0], &what)?,
        };
        Ok(Err(GateStop::failed(gate, disturbed)))
    }

    fn trees(&self) -> Vec<(TreeLabel, &Tree)> {
        self.trees.to_vec()
    }

    fn reference(
        &self,
        _: &Scenario,
        ran: &Ran,
    ) -> Result<(std::path::PathBuf, String), PipelineError> {
        let base = (ran.baseline.as_ref())
            .ok_or_else(|| PipelineError::internal("a paired check lost its baseline"))?;
        Ok((base.stdout_path.clone(), base.run.stdout_sha256.clone()))
    }
}

impl<'a> Run<'a> {
    /// The sides of a step in `trees` (baseline first), a failed baseline build run again in a
    /// fresh tree labelled `alone`.
    fn paired<'r>(
        &'r mut self,
        trees: [(TreeLabel, &'r Tree); 2],
        alone: Option<TreeLabel>,
    ) -> Paired<'r, 'a> {
        Paired {
            run: self,
            trees,
            alone,
        }
    }

    /// Runs `s` in both trees and records both steps: at once, except a build whose candidate
    /// gets private copies of the build caches, which runs after the baseline's build.
    pub(crate) fn run_pair(
        &mut self,
        s: &LaneStep<'_>,
        trees: [(TreeLabel, &Tree); 2],
    ) -> Result<[StepOutput; 2], PipelineError> {
        let runners = &*self.opts.runners;
        let run_dir = &self.run_dir;
        // A candidate's private copy of the caches is taken when its build starts; taken while
        // the baseline's build is still filling a cold cache, it would be as cold, and both
        // builds would compile every dependency side by side (for the trainer's sanitizer
        // build on a fresh machine, two 11-minute compiles on two cores). In turn, the
        // candidate's build starts from what the baseline's left.
        let in_turn = s.step.builds() && self.sandbox.copies_caches();
        let outputs = if in_turn {
            let mut outputs = Vec::with_capacity(2);
            for tree in trees {
                let input = s.input(tree, run_dir, &self.sandbox)?;
                let mut runner = runners.runner();
                outputs.push(steps::run_step(&mut *runner, run_dir, input));
            }
            outputs
        } else {
            self.run_at_once(s, trees)?
        };
        let mut done = Vec::with_capacity(2);
        for o in outputs {
            let o = o.map_err(PipelineError::internal)?;
            self.evidence.steps.push(o.record.clone());
            done.push(o);
        }
        done.try_into()
            .map_err(|_| PipelineError::internal("a step pair lost a result"))
    }

    /// Runs `s` in both trees at the same time, on a thread each.
    fn run_at_once(
        &mut self,
        s: &LaneStep<'_>,
        trees: [(TreeLabel, &Tree); 2],
    ) -> Result<Vec<Result<StepOutput, steps::StepError>>, PipelineError> {
        let runners = &*self.opts.runners;
        let run_dir = &self.run_dir;
        if s.step.builds() {
            for (label, tree) in trees {
                let arm = label.sandbox_arm();
                (self.sandbox.prepare_build(&tree.root, arm)).map_err(|e| {
                    PipelineError::internal_while(
                        format!("cannot prepare the sandbox of {label}"),
                        e,
                    )
                })?;
            }
        }
        let inputs = trees
            .into_iter()
            .map(|tree| s.input(tree, run_dir, &self.sandbox))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs: Vec<Result<StepOutput, steps::StepError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = inputs
                .into_iter()
                .map(|input| {
                    scope.spawn(move || {
                        let mut runner = runners.runner();
                        steps::run_step(&mut *runner, run_dir, input)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(steps::StepError::Runner(
                            crate::measure::runner::RunnerError::Helper {
                                command: s.command.clone(),
                                source: crate::measure::error::HelperError::Panicked,
                            },
                        ))
                    })
                })
                .collect()
        });
        Ok(outputs)
    }

    /// Runs `s` in one tree and records the step.
    pub(crate) fn run_single(
        &mut self,
        s: &LaneStep<'_>,
        tree: (TreeLabel, &Tree),
    ) -> Result<StepOutput, PipelineError> {
        let out = s.run(tree, &self.run_dir, &self.sandbox, &*self.opts.runners)?;
        self.evidence.steps.push(out.record.clone());
        Ok(out)
    }

    /// What every step of this confirmation is held to, with `protected` as the first tree had
    /// them.
    pub(crate) fn rules<'p>(&self, protected: &'p Protected) -> lane::Rules<'p> {
        lane::Rules {
            protected,
            limit_mib: self.plan.campaign.spec.sandbox.limits.tree_mib.get(),
            isolated: self.sandbox.enabled(),
            shown: Shown::GATE,
        }
    }

    /// A stage's value from what the check engine returned, or its stop recorded as the failed
    /// gate (a changed protected file turns the passed `patch safety` gate into a failed one).
    pub(crate) fn settle<T>(
        &mut self,
        lane: Result<Lane<T>, PipelineError>,
    ) -> Result<Step<T>, PipelineError> {
        Ok(match lane? {
            Ok(value) => Step::Go(value),
            Err(stop) if stop.gate == GateName::PatchSafety => self.fail_patch_safety(stop.detail),
            Err(stop) => self.stop(stop),
        })
    }

    /// Builds baseline and candidate, digests the artifacts, then builds the second baseline, the
    /// configuration-only tree and the sanitizer twins: every tree the later stages use.
    pub(crate) fn build_all(&mut self, prepared: Prepared) -> Result<Step<Built>, PipelineError> {
        self.stage("build");
        let Prepared {
            main,
            config_only,
            protected,
        } = prepared;
        let (plan, rules) = (self.plan, self.rules(&protected));
        let step = LaneStep::build(&plan.campaign.workload);
        let mut sides = self.paired(main.labelled(), Some(TreeLabel::BaselineAlone));
        let built = lane::build(&mut sides, rules, &step, (GateName::Build, "the build"));
        let digests = built.and_then(|b| match b {
            Ok(_) => lane::artifacts(&sides, &plan.campaign.workload.build),
            Err(stop) => Ok(Err(stop)),
        });
        let digests = step!(self.settle(digests));
        self.evidence.artifacts.extend(digests);
        self.pass_gate(
            GateName::Build,
            "baseline and candidate built from clean checkouts",
        );
        let baseline_again = step!(self.build_baseline_again(&protected));
        let config_only = step!(self.build_config_tree(config_only, &protected));
        let sanitized = step!(self.build_sanitizer_trees(&protected));
        Ok(Step::Go(Built {
            timed: TimedTrees {
                main,
                baseline_again,
                config_only,
                protected,
            },
            sanitized,
        }))
    }

    /// Builds the baseline a second time, in its own tree at a path as long as the candidate's:
    /// the A/A pairs then compare two builds in two trees, as the comparison does, so a
    /// difference that comes from building or laying out a tree (not from the patch) shows as a
    /// biased A/A check, which stops acceptance. If the second build fails, the A/A pairs fall
    /// back to the baseline against itself (`None`), and the result says so.
    fn build_baseline_again(
        &mut self,
        protected: &Protected,
    ) -> Result<Step<Option<Tree>>, PipelineError> {
        self.stage("second baseline build");
        let t = self.materialize(TreeLabel::BaselineAgain)?;
        let step = LaneStep::build(&self.plan.campaign.workload);
        let out = self.run_single(&step, (TreeLabel::BaselineAgain, &t))?;
        let trees = [(TreeLabel::BaselineAgain, &t)];
        step!(self.protected_unchanged(protected, &trees, "the build"));
        if !out.record.succeeded() {
            return Ok(Step::Go(None));
        }
        // Its artifacts are digested as the first builds' are: an earlier confirmation's A/A
        // pairs are reused only on byte-identical binaries (`earlier_aa`).
        let build = &self.plan.campaign.workload.build;
        for artifact in &build.artifacts {
            if let Ok(sha256) = crate::pipeline::checks::artifact_digest(&t, build, artifact) {
                self.evidence.artifacts.push(ArtifactDigest {
                    tree: TreeLabel::BaselineAgain,
                    path: artifact.clone(),
                    sha256,
                });
            }
        }
        Ok(Step::Go(Some(t)))
    }

    /// The baseline's step failed while the candidate's ran beside it: run it again alone, in
    /// `baseline` (its own tree for a test or a check, which leave it as it was; a fresh one for a
    /// build), before blaming the baseline. Alone it fails too: the baseline itself fails
    /// (`Err`). Alone it passes: the candidate's step disturbed it (killed it, starved it of disk
    /// or memory), and the text says so for the candidate's failed gate — the one text for every
    /// kind of step.
    fn baseline_alone(
        &mut self,
        step: &LaneStep<'_>,
        (base, cand): (&StepOutput, &StepOutput),
        baseline: (TreeLabel, &Tree),
        what: &str,
    ) -> Result<String, PipelineError> {
        self.rerun_baseline_alone(step, baseline, what)?;
        Ok(format!(
            "the baseline's `{}` failed while the candidate's ran beside it, and succeeded \
             alone: the candidate's step disturbed it (killed it, or starved it of disk or \
             memory). Beside it: {}\n{}",
            step.step,
            failure_text(base, step.timeout, Shown::GATE),
            candidate_side(cand, step.timeout)
        ))
    }

    /// Runs the baseline's `step` again, alone, in `tree`; when it fails there too, the
    /// baseline itself fails (`what` says which step).
    fn rerun_baseline_alone(
        &mut self,
        step: &LaneStep<'_>,
        tree: (TreeLabel, &Tree),
        what: &str,
    ) -> Result<(), PipelineError> {
        let out = self.run_single(&step.renamed(step.step.alone()), tree)?;
        if out.record.succeeded() {
            return Ok(());
        }
        let hint = hidden_path_hint(&out.run.stderr_tail).map(|h| format!("\n{h}"));
        Err(PipelineError::Baseline(format!(
            "{what}, beside the candidate and again alone: {}{}",
            failure_text(&out, step.timeout, Shown::GATE),
            hint.unwrap_or_default()
        )))
    }

    /// Builds the sanitized twins of the main trees, when the workload has a `sanitize` section.
    fn build_sanitizer_trees(
        &mut self,
        protected: &Protected,
    ) -> Result<Step<Option<SanitizedTrees>>, PipelineError> {
        let Some(san) = self.plan.campaign.workload.sanitize.clone() else {
            return Ok(Step::Go(None));
        };
        self.stage("sanitizer build");
        let bt = self.materialize(TreeLabel::BaselineSanitize)?;
        let ct = self.materialize(TreeLabel::CandidateSanitize)?;
        tree::apply_patch(&ct, &self.plan.patch).map_err(|e| {
            PipelineError::internal_while("the patch applied once but not twice", e)
        })?;
        // With `flags`, evo's compilers append them to every compile of the build (which is then
        // the candidate's own configuration) and refuse an opt-out (`pipeline::compilers`).
        let mut env = san.env.clone();
        let tools = match &san.flags {
            None => None,
            Some(flags) => {
                // What the baseline tree's files hold, before either build: code that is not
                // the baseline's and compiles differently under the flags is refused, whatever
                // its name (the candidate's files, a copy the build makes of them).
                let known = tree::file_hashes(&bt.root)
                    .map_err(super::io_err("cannot read the baseline tree's files"))?;
                let dir = crate::pipeline::compilers::write(
                    &self.work.join("sanitizer-compilers"),
                    &self.sandbox.search_path(),
                    flags,
                    &known,
                )
                .map_err(super::io_err("cannot write the sanitizer lane's compilers"))?;
                for (var, name) in [("CC", "cc"), ("CXX", "c++")] {
                    if dir.join(name).is_file() {
                        env.insert(var.to_string(), dir.join(name).display().to_string());
                    }
                }
                Some(dir)
            }
        };
        let step = LaneStep {
            step: StepName::new(StepKind::SanitizeBuild),
            command: san.build.clone(),
            cwd: san.cwd.as_deref(),
            env: &env,
            timeout: san.timeout_s.duration(),
            output_of: None,
            tools: tools.as_deref(),
        };
        let rules = self.rules(protected);
        let pair = [
            (TreeLabel::BaselineSanitize, &bt),
            (TreeLabel::CandidateSanitize, &ct),
        ];
        let mut sides = self.paired(pair, Some(TreeLabel::BaselineSanitizeAlone));
        let gate = (GateName::Sanitizers, "the sanitizer build");
        let built = lane::build(&mut sides, rules, &step, gate);
        step!(self.settle(built));
        if let Some(flags) = &san.flags {
            let wanted = crate::pipeline::instrumented::sanitizers(flags);
            step!(self.settle(self.sanitized_artifacts_instrumented(&pair, &wanted)));
        }
        Ok(Step::Go(Some(SanitizedTrees {
            baseline: bt,
            candidate: ct,
        })))
    }

    /// Every artifact of the workload's build, as the sanitized build of each tree made it, must
    /// be compiled with the sanitizers `wanted` throughout (`pipeline::instrumented`): a build
    /// that went around evo's compilers fails the candidate's gate, or the baseline.
    fn sanitized_artifacts_instrumented(
        &self,
        trees: &[(TreeLabel, &Tree)],
        wanted: &[String],
    ) -> Result<Result<(), GateStop>, PipelineError> {
        let build = &self.plan.campaign.workload.build;
        use crate::pipeline::instrumented::{is_program, uninstrumented};
        for artifact in &build.artifacts {
            let mut baseline_is_program = false;
            for (label, t) in trees {
                let path = t
                    .root
                    .join(build.cwd.as_deref().unwrap_or("."))
                    .join(artifact);
                // Only a regular file inside the tree is read (a link to `/dev/zero` or out of
                // the tree is the build's, not evo's to follow); one missing fails its checks.
                let Ok(bytes) = tree::tree_file(&t.root, &path).and_then(std::fs::read) else {
                    continue;
                };
                // A script standing where the baseline has a program says nothing of how the
                // program it starts was compiled.
                let mut found = uninstrumented(&bytes, wanted);
                if label.holds_baseline() {
                    baseline_is_program = is_program(&bytes);
                } else if baseline_is_program && !is_program(&bytes) {
                    found.push(
                        "it is not a program where the baseline's is: what it starts cannot be \
                         checked"
                            .to_string(),
                    );
                }
                if found.is_empty() {
                    continue;
                }
                let detail = format!(
                    "the sanitized build's `{artifact}` holds code compiled without the \
                     sanitizer flags ({}), which evo's compilers append to every compile: the \
                     build went around them\n{}",
                    wanted.join(","),
                    found.join("\n")
                );
                if label.holds_baseline() {
                    return Err(PipelineError::Baseline(detail));
                }
                return Ok(Err(GateStop::failed(GateName::Sanitizers, detail)));
            }
        }
        Ok(Ok(()))
    }

    /// The checks on the built trees: tests, the differential, the sanitizer lane; hands the
    /// measurement the trees it times.
    pub(crate) fn check_all(&mut self, built: Built) -> Result<Step<TimedTrees>, PipelineError> {
        step!(self.run_tests(&built.timed.main, &built.timed.protected));
        step!(self.run_differential(&built.timed.main, &built.timed.protected));
        step!(self.run_sanitizer_checks(built.sanitized, &built.timed.protected));
        Ok(Step::Go(built.timed))
    }

    /// Every test command must exit 0 in both trees.
    fn run_tests(
        &mut self,
        main: &MainTrees,
        protected: &Protected,
    ) -> Result<Step<()>, PipelineError> {
        self.stage("tests");
        let (plan, rules) = (self.plan, self.rules(protected));
        let test = &plan.campaign.workload.test;
        let ran = lane::tests(&mut self.paired(main.labelled(), None), rules, test);
        let commands = step!(self.settle(ran));
        self.pass_gate(
            GateName::Tests,
            format!("{commands} test command(s) passed in both trees"),
        );
        Ok(Step::Go(()))
    }

    /// Training and holdout scenarios, with the workload's own and the sealed ones together.
    pub(crate) fn all_scenarios(&self) -> Vec<Scenario> {
        let mut all = self.plan.campaign.workload.scenarios.clone();
        all.extend(self.holdout_scenarios());
        all
    }

    /// The sealed holdouts, each with its `inputs` drawn for this confirmation from the
    /// holdouts' own seed (the holdout's place in the file picks its draw): no fixed list of
    /// holdout inputs exists to special-case. Before that seed is drawn, as written.
    pub(crate) fn holdout_scenarios(&self) -> Vec<Scenario> {
        self.drawn_holdouts().into_iter().map(|(s, _)| s).collect()
    }

    /// The sealed holdouts as [`holdout_scenarios`](Self::holdout_scenarios) gives them, each
    /// with the record of its drawn inputs when it has some and the seed is drawn.
    fn drawn_holdouts(&self) -> Vec<(Scenario, Option<DrawnInputs>)> {
        let Some(h) = &self.plan.campaign.holdouts else {
            return Vec::new();
        };
        let seed = match &self.evidence.holdout_seed {
            Some(HoldoutSeed::Drawn(seed)) => Some(*seed),
            _ => None,
        };
        (h.holdouts.scenarios.iter().enumerate())
            .map(|(i, s)| match seed {
                Some(seed) if !s.inputs.is_empty() => {
                    let drawn =
                        draw_inputs(&s.name, s.role, &s.inputs, seed, i, [&s.run, &s.check]);
                    let filled = |at: usize| drawn.commands[at].filled.clone();
                    let scenario = Scenario {
                        run: filled(0),
                        check: filled(1),
                        ..s.clone()
                    };
                    (scenario, Some(drawn))
                }
                _ => (s.clone(), None),
            })
            .collect()
    }

    /// Every scenario's check command on both trees, with a fresh seed (the holdouts with a
    /// second one, which the receipt seals); outputs must match.
    fn run_differential(
        &mut self,
        main: &MainTrees,
        protected: &Protected,
    ) -> Result<Step<()>, PipelineError> {
        self.stage("differential");
        self.evidence.seed =
            check::fresh_seed().map_err(super::io_err("cannot read a fresh seed"))?;
        if self.all_scenarios().iter().any(|s| s.role == Role::Holdout) {
            let seed = check::fresh_seed().map_err(super::io_err("cannot read a fresh seed"))?;
            self.evidence.holdout_seed = Some(HoldoutSeed::Drawn(seed));
        }
        let mut checks: Vec<(Scenario, String, bool)> = (self.all_scenarios().into_iter())
            .map(|s| {
                let command = s.check.clone();
                (s, command, true)
            })
            .collect();
        // Each training scenario's timed command too, once per arm: its outputs compared on the
        // inputs that are timed, and the baseline's kept for the replay check (§4.6).
        checks.extend(timed_commands(&self.plan.campaign.workload.scenarios));
        // And each scenario's checks on inputs drawn for this confirmation, from its seed.
        let (drawn, records) =
            drawn_checks(&self.plan.campaign.workload.scenarios, self.evidence.seed);
        checks.extend(drawn);
        // Recorded, so `--recompute` re-derives every drawn input from its seed.
        self.evidence.draws = records;
        let holdout_draws = self.drawn_holdouts().into_iter().filter_map(|(_, d)| d);
        self.evidence.draws.extend(holdout_draws);
        self.check_lane(checks, CheckLane::Differential, main.labelled(), protected)
    }

    /// Scenario `checks` (each with its command) on the two `trees`, every one of them even after
    /// one failed, so the result compares every scenario; the lane's gate fails with the first
    /// failure, or passes.
    fn check_lane(
        &mut self,
        checks: Vec<(Scenario, String, bool)>,
        which: CheckLane,
        trees: [(TreeLabel, &Tree); 2],
        protected: &Protected,
    ) -> Result<Step<()>, PipelineError> {
        let rules = self.rules(protected);
        let mut first_failure = None;
        for (s, command, compared) in checks {
            let step = LaneStep::check(&s, &command, self.evidence.seed_for(s.role));
            let sides = &mut self.paired(trees, None);
            let checked = lane::check(sides, rules, &s, &step, (which, compared))?;
            self.evidence.differential.extend(checked.record);
            self.evidence.sanitizer_findings.extend(checked.finding);
            if let Some(warning) = checked.warning {
                self.warn(warning);
            }
            match checked.stop {
                Some(stop) if stop.gate == GateName::PatchSafety => {
                    return self.settle(Ok(Err(stop)));
                }
                Some(stop) if first_failure.is_none() => first_failure = Some(stop),
                _ => {}
            }
        }
        match first_failure {
            Some(stop) => Ok(self.stop(stop)),
            None => {
                let passed = match which {
                    CheckLane::Differential => {
                        "every check output, and every training scenario's timed output, matches \
                         the baseline's (fresh seed)"
                    }
                    CheckLane::Sanitizer => {
                        "sanitized builds ran every check and every training scenario's timed \
                         command cleanly with matching outputs"
                    }
                };
                self.pass_gate(lane::check_gate(which), passed);
                Ok(Step::Go(()))
            }
        }
    }

    /// The sanitizer lane: checks on the sanitized builds (`None`: the workload has none);
    /// outputs must still match.
    fn run_sanitizer_checks(
        &mut self,
        sanitized: Option<SanitizedTrees>,
        protected: &Protected,
    ) -> Result<Step<()>, PipelineError> {
        let Some(SanitizedTrees {
            baseline: bt,
            candidate: ct,
        }) = sanitized
        else {
            self.evidence.gates.push(gate(
                GateName::Sanitizers,
                GateStatus::Skipped,
                "the workload has no sanitize section: the sanitizer lane did not run",
            ));
            return Ok(Step::Go(()));
        };
        self.stage("sanitizer checks");
        self.evidence.sanitizer_lane_ran = true;
        let check_override =
            (self.plan.campaign.workload.sanitize.as_ref()).and_then(|s| s.check.clone());
        let mut checks: Vec<(Scenario, String, bool)> = (self.all_scenarios().into_iter())
            .map(|s| {
                let command = check_override.clone().unwrap_or_else(|| s.check.clone());
                (s, command, true)
            })
            .collect();
        // What is timed runs sanitized too (docs/design.md §2.2.7): a path only the timed
        // inputs take (another size, another branch) is where undefined behaviour can hide
        // from every check.
        checks.extend(timed_commands(&self.plan.campaign.workload.scenarios));
        let trees = [
            (TreeLabel::BaselineSanitize, &bt),
            (TreeLabel::CandidateSanitize, &ct),
        ];
        self.check_lane(checks, CheckLane::Sanitizer, trees, protected)
    }
}

/// The name under which scenario `name`'s timed command runs as a check (`check-<name>.timed`,
/// its output `outputs/<tree>/<name>.timed.check.out`).
pub(crate) fn timed_check_name(name: &str) -> String {
    format!("{name}.timed")
}

/// Each training scenario's timed command as a step of the differential or the sanitizer lane,
/// on the check's fresh seed: named `<scenario>.timed`, its output compared under the scenario's timed-output rule
/// (identical bytes, or its `compare` rule), or not compared when it declares none (a timed
/// output that prints its own timings); its exit and any sanitizer report count either way.
fn timed_commands(scenarios: &[Scenario]) -> Vec<(Scenario, String, bool)> {
    use crate::spec::workload::{Compare, TimedOutputRule};
    (scenarios.iter())
        .filter(|s| s.role == Role::Training)
        .map(|s| {
            let rule = s.timed_output_rule();
            let timed = Scenario {
                name: timed_check_name(&s.name),
                compare: match rule {
                    Some(TimedOutputRule::Exact) => Compare::Exact,
                    _ => s.compare.clone(),
                },
                ..s.clone()
            };
            (timed, s.run.clone(), rule.is_some())
        })
        .collect()
}

/// Each training scenario's checks on drawn inputs (its `draw`), as steps of the differential
/// named `<scenario>.drawn-<n>`: the values are a function of the confirmation's `seed` and the
/// draw's number (`check::draw::values`), compared under the scenario's `compare` rule. With the
/// record of each draw.
fn drawn_checks(
    scenarios: &[Scenario],
    seed: u64,
) -> (Vec<(Scenario, String, bool)>, Vec<DrawnInputs>) {
    let (mut checks, mut records) = (Vec::new(), Vec::new());
    for s in scenarios.iter().filter(|s| s.role == Role::Training) {
        let Some(draw) = &s.draw else {
            continue;
        };
        for i in 0..draw.count {
            let name = format!("{}.drawn-{}", s.name, i + 1);
            let record = draw_inputs(&name, s.role, &draw.vars, seed, i, [&draw.check]);
            let drawn = Scenario { name, ..s.clone() };
            checks.push((drawn, record.commands[0].filled.clone(), true));
            records.push(record);
        }
    }
    (checks, records)
}

/// Assignment `index` of `ranges` under `seed`, and `commands` filled with it.
fn draw_inputs<const N: usize>(
    scenario: &str,
    role: Role,
    ranges: &std::collections::BTreeMap<String, crate::spec::workload::IntRange>,
    seed: u64,
    index: usize,
    commands: [&String; N],
) -> DrawnInputs {
    let values = check::draw::values(ranges, seed, index);
    let commands = (commands.into_iter())
        .map(|template| FilledCommand {
            template: template.clone(),
            filled: check::draw::fill(template, &values),
        })
        .collect();
    DrawnInputs {
        scenario: scenario.to_string(),
        role,
        index,
        ranges: ranges.clone(),
        values,
        commands,
    }
}
