//! The untimed lanes of a confirmation: builds, tests, the differential check and the sanitizer
//! lane. Baseline and candidate steps run side by side (two threads): nothing is being measured
//! yet, and the two trees share nothing.

use crate::failure::with_causes;
use std::path::Path;
use std::time::Duration;

use super::stages::{Built, MainTrees, Prepared, SanitizedTrees, Step, TimedTrees, step};
use super::{Run, io_err};
use crate::check::{self, Comparison};
use crate::evidence::result::{
    ArtifactDigest, CheckLane, DifferentialRecord, GateName, GateStatus, HoldoutSeed, Role,
    SanitizerFinding, StepKind, StepName, TreeLabel,
};
use crate::evidence::verdict::gate;
use crate::pipeline::PipelineError;
use crate::pipeline::checks::{
    LaneStep, Shown, artifact_digest, compare_check_outputs, failure_text, hidden_path_hint,
    mismatch_text, revealing_holdout_name, silent_check_warning, step_stop,
};
use crate::pipeline::steps::{self, StepOutput};
use crate::spec::workload::{Compare, Scenario};
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

fn rule_name(rule: &Compare) -> String {
    match rule {
        Compare::Exact => "exact".to_string(),
        Compare::Tolerance(t) => format!("tolerance abs {} rel {}", t.abs.get(), t.rel.get()),
    }
}

impl Run<'_> {
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
            self.result.steps.push(o.record.clone());
            done.push(o);
        }
        done.try_into()
            .map_err(|_| PipelineError::Internal("a step pair lost a result".to_string()))
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
        self.result.steps.push(out.record.clone());
        Ok(out)
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
        let [(bl, bt), (cl, ct)] = main.labelled();
        let step = LaneStep::build(&self.plan.campaign.workload);
        let [base, cand] = self.run_pair(&step, [(bl, bt), (cl, ct)])?;
        if !base.record.succeeded() {
            return self.baseline_build_failed_beside_candidate(
                &step,
                (&base, &cand),
                ct,
                (TreeLabel::BaselineAlone, GateName::Build),
            );
        }
        if !cand.record.succeeded() {
            return Ok(self.stop(step_stop(GateName::Build, &cand, step.timeout, Shown::GATE)));
        }
        step!(self.protected_unchanged(&protected, &[(bl, bt), (cl, ct)], "the build"));
        step!(self.trees_within_limit(&[(bl, bt), (cl, ct)], GateName::Build));
        step!(self.digest_artifacts(bt, ct));
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
        Ok(Step::Go(out.record.succeeded().then_some(t)))
    }

    /// The baseline's build failed while the candidate's ran beside it. A candidate's build can
    /// starve its neighbour (fill the disk, exhaust memory), so before blaming the baseline evo
    /// removes the candidate's tree and builds the baseline again, alone, in a fresh tree
    /// (`label`). If that succeeds, the candidate's `gate` fails; if not, the baseline itself
    /// fails.
    fn baseline_build_failed_beside_candidate<T>(
        &mut self,
        step: &LaneStep<'_>,
        (base, cand): (&StepOutput, &StepOutput),
        ct: &Tree,
        (label, gate): (TreeLabel, GateName),
    ) -> Result<Step<T>, PipelineError> {
        let _ = std::fs::remove_dir_all(&ct.root);
        self.stage(&format!("{} alone", step.step));
        let alone = self.materialize(label)?;
        let what = format!("{} failed", step.step);
        let disturbed = self.baseline_alone(step, (base, cand), (label, &alone), &what)?;
        Ok(self.fail_gate(gate, disturbed))
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

    fn digest_artifacts(&mut self, bt: &Tree, ct: &Tree) -> Result<Step<()>, PipelineError> {
        let build = &self.plan.campaign.workload.build;
        for artifact in &build.artifacts {
            for (label, t) in [(TreeLabel::Baseline, bt), (TreeLabel::Candidate, ct)] {
                match artifact_digest(t, build, artifact) {
                    Ok(sha256) => self.result.artifacts.push(ArtifactDigest {
                        tree: label,
                        path: artifact.clone(),
                        sha256,
                    }),
                    Err(e) if label == TreeLabel::Baseline => {
                        return Err(PipelineError::Baseline(format!(
                            "the build did not produce the artifact `{artifact}`: {}",
                            with_causes(&e)
                        )));
                    }
                    Err(e) => {
                        return Ok(self.fail_gate(
                            GateName::Build,
                            format!(
                                "the candidate's build did not produce `{artifact}`: {}",
                                with_causes(&e)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(Step::Go(()))
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
        let step = LaneStep {
            step: StepName::new(StepKind::SanitizeBuild),
            command: san.build.clone(),
            cwd: san.cwd.as_deref(),
            env: &san.env,
            timeout: san.timeout_s.duration(),
            output_of: None,
        };
        let [base, cand] = self.run_pair(
            &step,
            [
                (TreeLabel::BaselineSanitize, &bt),
                (TreeLabel::CandidateSanitize, &ct),
            ],
        )?;
        if !base.record.succeeded() {
            return self.baseline_build_failed_beside_candidate(
                &step,
                (&base, &cand),
                &ct,
                (TreeLabel::BaselineSanitizeAlone, GateName::Sanitizers),
            );
        }
        let pair = [
            (TreeLabel::BaselineSanitize, &bt),
            (TreeLabel::CandidateSanitize, &ct),
        ];
        step!(self.protected_unchanged(protected, &pair, "the sanitizer build"));
        step!(self.trees_within_limit(&pair, GateName::Sanitizers));
        if !cand.record.succeeded() {
            return Ok(self.fail_gate(
                GateName::Sanitizers,
                format!(
                    "sanitizer build failed: {}",
                    failure_text(&cand, step.timeout, Shown::GATE)
                ),
            ));
        }
        Ok(Step::Go(Some(SanitizedTrees {
            baseline: bt,
            candidate: ct,
        })))
    }

    /// The checks on the built trees: tests, the differential, the sanitizer lane; hands the
    /// measurement the trees it times.
    pub(crate) fn check_all(&mut self, built: Built) -> Result<Step<TimedTrees>, PipelineError> {
        step!(self.run_tests(&built.timed.main));
        step!(self.run_differential(&built.timed.main));
        step!(self.run_sanitizer_checks(built.sanitized));
        Ok(Step::Go(built.timed))
    }

    /// Every test command must exit 0 in both trees.
    fn run_tests(&mut self, main: &MainTrees) -> Result<Step<()>, PipelineError> {
        self.stage("tests");
        let [(bl, bt), (cl, ct)] = main.labelled();
        let t = self.plan.campaign.workload.test.clone();
        for (i, command) in t.command.as_slice().iter().enumerate() {
            let step = LaneStep::test(&t, i, command);
            let [base, cand] = self.run_pair(&step, [(bl, bt), (cl, ct)])?;
            if !base.record.succeeded() {
                let disturbed =
                    self.baseline_alone(&step, (&base, &cand), (bl, bt), "tests failed")?;
                return Ok(self.fail_gate(GateName::Tests, disturbed));
            }
            if !cand.record.succeeded() {
                return Ok(self.stop(step_stop(GateName::Tests, &cand, step.timeout, Shown::GATE)));
            }
        }
        self.pass_gate(
            GateName::Tests,
            format!(
                "{} test command(s) passed in both trees",
                t.command.as_slice().len()
            ),
        );
        Ok(Step::Go(()))
    }

    /// Training and holdout scenarios, with the workload's own and the sealed ones together.
    pub(crate) fn all_scenarios(&self) -> Vec<Scenario> {
        let mut all = self.plan.campaign.workload.scenarios.clone();
        if let Some(h) = &self.plan.campaign.holdouts {
            all.extend(h.holdouts.scenarios.iter().cloned());
        }
        all
    }

    /// Every scenario's check command on both trees, with a fresh seed (the holdouts with a
    /// second one, which the receipt seals); outputs must match.
    fn run_differential(&mut self, main: &MainTrees) -> Result<Step<()>, PipelineError> {
        self.stage("differential");
        self.result.seed = check::fresh_seed().map_err(io_err("cannot read a fresh seed"))?;
        let holdouts = self
            .all_scenarios()
            .into_iter()
            .filter(|s| s.role == Role::Holdout);
        for warning in holdouts
            .filter_map(|s| revealing_holdout_name(&s))
            .collect::<Vec<_>>()
        {
            self.warn(warning);
        }
        if self.all_scenarios().iter().any(|s| s.role == Role::Holdout) {
            let seed = check::fresh_seed().map_err(io_err("cannot read a fresh seed"))?;
            self.result.holdout_seed = Some(HoldoutSeed::Drawn(seed));
        }
        let [(bl, bt), (cl, ct)] = main.labelled();
        let mut first_failure = None;
        for s in self.all_scenarios() {
            let trees = [(bl, bt), (cl, ct)];
            let failure =
                self.check_scenario(&s, s.check.clone(), CheckLane::Differential, trees)?;
            if first_failure.is_none() {
                first_failure = failure;
            }
        }
        match first_failure {
            Some(detail) => Ok(self.fail_gate(GateName::Differential, detail)),
            None => {
                self.pass_gate(
                    GateName::Differential,
                    "every check output matches the baseline's (fresh seed)",
                );
                Ok(Step::Go(()))
            }
        }
    }

    /// Runs one check on two trees and compares; returns the failure text, if any.
    fn check_scenario(
        &mut self,
        s: &Scenario,
        command: String,
        lane: CheckLane,
        trees: [(TreeLabel, &Tree); 2],
    ) -> Result<Option<String>, PipelineError> {
        let step = LaneStep::check(s, &command, self.result.seed_for(s.role));
        let [base, cand] = self.run_pair(&step, trees)?;
        if !base.record.succeeded() {
            let what = format!("check of scenario `{}` failed", s.name);
            return self
                .baseline_alone(&step, (&base, &cand), trees[0], &what)
                .map(Some);
        }
        if let Some(f) = self.sanitizer_finding(&base)? {
            return Err(PipelineError::Baseline(format!(
                "{} reported in the {} tree:\n{}",
                f.kind, f.tree, f.excerpt
            )));
        }
        if let Some(f) = self.sanitizer_finding(&cand)? {
            let text = format!("{} in `{}`:\n{}", f.kind, s.name, f.excerpt);
            self.result.sanitizer_findings.push(f);
            return Ok(Some(text));
        }
        if !cand.record.succeeded() {
            return Ok(Some(format!(
                "check of scenario `{}` failed: {}",
                s.name,
                failure_text(&cand, step.timeout, Shown::GATE)
            )));
        }
        if let Some(warning) = silent_check_warning(&s.name, &base, &cand) {
            self.warn(warning);
        }
        // Equal digests are the same output: no need to read them again.
        let comparison = if base.run.stdout_sha256 == cand.run.stdout_sha256 {
            Comparison::Same
        } else {
            compare_check_outputs(s, &base.stdout_path, &cand.stdout_path)?
        };
        let failure = match &comparison {
            Comparison::Same => None,
            Comparison::Differs(m) => Some(mismatch_text(s, lane, m)),
        };
        let (same, summary, diff) = match comparison {
            Comparison::Same => (true, None, None),
            Comparison::Differs(m) => (false, Some(m.summary), Some(m.diff)),
        };
        self.result.differential.push(DifferentialRecord {
            scenario: s.name.clone(),
            role: s.role,
            lane,
            rule: rule_name(&s.compare),
            baseline_sha256: base.run.stdout_sha256.clone(),
            candidate_sha256: cand.run.stdout_sha256.clone(),
            same,
            summary,
            diff,
        });
        Ok(failure)
    }

    /// Looks for a sanitizer report in a step's whole stderr log (only in sanitizer trees).
    fn sanitizer_finding(
        &self,
        out: &StepOutput,
    ) -> Result<Option<SanitizerFinding>, PipelineError> {
        if !out.record.tree.is_sanitized() {
            return Ok(None);
        }
        let stderr = read_capped(&out.stderr_path)?;
        Ok(
            check::find_sanitizer_report(&stderr).map(|r| SanitizerFinding {
                tree: out.record.tree,
                step: out.record.step.clone(),
                kind: r.kind.to_string(),
                excerpt: r.excerpt,
            }),
        )
    }

    /// The sanitizer lane: checks on the sanitized builds (`None`: the workload has none);
    /// outputs must still match.
    fn run_sanitizer_checks(
        &mut self,
        sanitized: Option<SanitizedTrees>,
    ) -> Result<Step<()>, PipelineError> {
        let Some(SanitizedTrees {
            baseline: bt,
            candidate: ct,
        }) = sanitized
        else {
            self.result.gates.push(gate(
                GateName::Sanitizers,
                GateStatus::Skipped,
                "the workload has no sanitize section: the sanitizer lane did not run",
            ));
            return Ok(Step::Go(()));
        };
        self.stage("sanitizer checks");
        self.result.sanitizer_lane_ran = true;
        let check_override = self
            .plan
            .campaign
            .workload
            .sanitize
            .as_ref()
            .and_then(|s| s.check.clone());
        let mut first_failure = None;
        for s in self.all_scenarios() {
            let command = check_override.clone().unwrap_or_else(|| s.check.clone());
            let trees = [
                (TreeLabel::BaselineSanitize, &bt),
                (TreeLabel::CandidateSanitize, &ct),
            ];
            let failure = self.check_scenario(&s, command, CheckLane::Sanitizer, trees)?;
            if first_failure.is_none() {
                first_failure = failure;
            }
        }
        match first_failure {
            Some(detail) => Ok(self.fail_gate(GateName::Sanitizers, detail)),
            None => {
                self.pass_gate(
                    GateName::Sanitizers,
                    "sanitized builds ran every check cleanly with matching outputs",
                );
                Ok(Step::Go(()))
            }
        }
    }
}

/// At most the log cap ([`crate::measure::runner::LOG_CAP_BYTES`]) of a file, lossily decoded
/// (logs may hold any bytes). The runner writes no more than the cap; the read keeps to it too,
/// whatever wrote the file.
fn read_capped(path: &Path) -> Result<String, PipelineError> {
    use std::io::Read;
    let cannot = || io_err(format!("cannot read {}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot())?;
    let mut bytes = Vec::new();
    (file.take(crate::measure::runner::LOG_CAP_BYTES))
        .read_to_end(&mut bytes)
        .map_err(cannot())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
