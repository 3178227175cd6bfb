//! The untimed check engine both pipelines run their trees through: one command of a lane
//! (build, test, check) as a [`LaneStep`], the run of a scenario's timed command as a
//! [`RunSpec`], how a failed step is told in a gate's or a candidate's reason, and the checks of
//! a built tree (its protected files, its size, its artifacts), each failure a [`GateStop`].

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::steps::{self, StepInput, StepOutput};
use super::{PipelineError, io_err};
use crate::check::{Comparison, Mismatch};
use crate::evidence::outcome::{Failure, GateStop};
use crate::evidence::result::{CheckLane, GateName, StepKind, StepName, TreeLabel};
use crate::measure::runner::{RunSpec, RunnerFactory};
use crate::measure::sandbox::SandboxPolicy;
use crate::pipeline::rundir::RunDir;
use crate::spec::workload::{Scenario, TestStep, Workload};
use crate::tree::Tree;

/// One untimed command of a lane, to run in one tree or in both trees of a pair.
#[derive(Clone)]
pub(crate) struct LaneStep<'a> {
    pub step: StepName,
    pub command: String,
    pub cwd: Option<&'a str>,
    pub env: &'a BTreeMap<String, String>,
    pub timeout: Duration,
    /// Keep stdout as this scenario's check output (`outputs/<tree>/<scenario>.check.out`).
    pub output_of: Option<&'a str>,
    /// A folder of evo's own tools the step sees read-only, first on its PATH (the sanitizer
    /// lane's compilers, `pipeline::compilers`).
    pub tools: Option<&'a Path>,
}

impl<'a> LaneStep<'a> {
    /// The workload's build command.
    pub(crate) fn build(workload: &'a Workload) -> LaneStep<'a> {
        let b = &workload.build;
        LaneStep {
            step: StepName::new(StepKind::Build),
            command: b.command.clone(),
            cwd: b.cwd.as_deref(),
            env: &b.env,
            timeout: b.timeout_s.duration(),
            output_of: None,
            tools: None,
        }
    }

    /// Test command `index` (from 0) of the workload's `test` section.
    pub(crate) fn test(test: &'a TestStep, index: usize, command: &str) -> LaneStep<'a> {
        LaneStep {
            step: StepName::new(StepKind::Test(index + 1)),
            command: command.to_string(),
            cwd: test.cwd.as_deref(),
            env: &test.env,
            timeout: test.timeout_s.duration(),
            output_of: None,
            tools: None,
        }
    }

    /// Scenario `s`'s check, `command` (its own or an override) with `seed` filled in; its
    /// stdout is kept as the scenario's check output.
    pub(crate) fn check(s: &'a Scenario, command: &str, seed: u64) -> LaneStep<'a> {
        LaneStep {
            step: StepName::check(&s.name),
            command: crate::check::fill_seed(command, seed),
            cwd: s.cwd.as_deref(),
            env: &s.env,
            timeout: s.timeout_s.duration(),
            output_of: Some(&s.name),
            tools: None,
        }
    }

    /// The same command under another step name.
    pub(crate) fn renamed(&self, step: StepName) -> LaneStep<'a> {
        LaneStep {
            step,
            ..self.clone()
        }
    }

    /// What `steps::run_step` needs to run this step in tree `t` (labelled `label`).
    pub(crate) fn input<'s>(
        &'s self,
        (label, t): (TreeLabel, &'s Tree),
        run_dir: &RunDir,
        sandbox: &'s SandboxPolicy,
    ) -> Result<StepInput<'s>, PipelineError> {
        let keep_stdout = match self.output_of {
            Some(name) => Some(
                run_dir
                    .output_path(label, name)
                    .map_err(io_err("cannot create the outputs folder"))?,
            ),
            None => None,
        };
        Ok(StepInput {
            step: self.step.clone(),
            tree_label: label,
            tree_root: &t.root,
            cwd: self.cwd,
            command: self.command.clone(),
            env: self.env,
            timeout: self.timeout,
            keep_stdout,
            sandbox,
            tools: self.tools,
        })
    }
}

impl LaneStep<'_> {
    /// Runs this step in `tree` with a runner from `runners`; a failing command is an output,
    /// not an error.
    pub(crate) fn run(
        &self,
        tree: (TreeLabel, &Tree),
        run_dir: &RunDir,
        sandbox: &SandboxPolicy,
        runners: &dyn RunnerFactory,
    ) -> Result<StepOutput, PipelineError> {
        let input = self.input(tree, run_dir, sandbox)?;
        let mut runner = runners.runner();
        steps::run_step(&mut *runner, run_dir, input).map_err(PipelineError::internal)
    }
}

/// Records the protected files of `tree`, fresh from make and overlay, as the reference for every
/// tree of a run (they all start alike: no patch may touch them), and keeps them read-only to
/// every sandboxed build from now on (docs/design.md §2.2.3). Both pipelines record through here.
pub(crate) fn record_protected(
    tree: &Tree,
    globs: &[String],
    sandbox: &mut SandboxPolicy,
) -> Result<crate::tree::Protected, PipelineError> {
    let recorded = crate::tree::record_protected(&tree.root, globs)
        .map_err(|e| PipelineError::internal_while("cannot record the protected files", e))?;
    sandbox.protect(recorded.read_only());
    Ok(recorded)
}

/// The timed run of scenario `s` in `tree`, with `seed` filled in, isolated by `sandbox`.
pub(crate) fn scenario_spec(
    tree: &Tree,
    s: &Scenario,
    seed: u64,
    sandbox: &SandboxPolicy,
) -> RunSpec {
    let template = scenario_template(tree, s, sandbox);
    RunSpec {
        command: crate::check::fill_seed(&template.command, seed),
        ..template
    }
}

/// The timed run of scenario `s` in `tree` with its `{seed}` left in place, for the schedule to
/// fill with each pair's fresh seed (`measure::schedule::Inputs`).
pub(crate) fn scenario_template(tree: &Tree, s: &Scenario, sandbox: &SandboxPolicy) -> RunSpec {
    let cwd = tree.root.join(s.cwd.as_deref().unwrap_or("."));
    RunSpec {
        sandbox: sandbox.for_run(&tree.root, Some(&cwd)),
        cwd: Some(cwd),
        env: s.env.clone(),
        base_env: Some(sandbox.environment().clone()),
        ..RunSpec::new(s.run.clone(), s.timeout_s.duration())
    }
}

/// How the two runs of one pair of scenario `s` must agree, as `Inputs::agree` asks: identical
/// bytes (`deterministic_output`), or agreeing under `compare` (`compare_timed_output`, which
/// reads what each run printed from its spec's `stdout_file`). `None`: not compared.
pub(crate) fn timed_agreement(
    s: &Scenario,
) -> Option<impl Fn(crate::measure::schedule::RunOutputs<'_>) -> Option<String> + '_> {
    use crate::spec::workload::TimedOutputRule;
    let rule = s.timed_output_rule()?;
    Some(move |o: crate::measure::schedule::RunOutputs<'_>| {
        let (b, c) = (o.baseline.1, o.candidate.1);
        if b.stdout_sha256 == c.stdout_sha256 {
            return None;
        }
        if rule == TimedOutputRule::Exact {
            return Some(format!(
                "the baseline printed {} bytes (sha256 {}), the candidate {} bytes (sha256 {})",
                b.stdout_bytes,
                short(&b.stdout_sha256),
                c.stdout_bytes,
                short(&c.stdout_sha256)
            ));
        }
        let read = |spec: &RunSpec| spec.stdout_file.as_ref().map(std::fs::read);
        match (read(o.baseline.0), read(o.candidate.0)) {
            (Some(Ok(b)), Some(Ok(c))) => match crate::check::compare_outputs(&s.compare, &b, &c) {
                Comparison::Same => None,
                Comparison::Differs(m) => Some(format!("{}\n{}", m.summary, m.diff)),
            },
            _ => Some("the timed outputs could not be read back to compare".to_string()),
        }
    })
}

/// A timed run's inputs: a fresh seed from `draw` for each pair, and the two runs' outputs
/// compared under `agree` (a scenario's [`timed_agreement`]).
pub(crate) fn fresh_inputs<'a>(
    draw: &'a mut dyn FnMut() -> u64,
    agree: Option<&'a (impl Fn(crate::measure::schedule::RunOutputs<'_>) -> Option<String> + 'a)>,
) -> crate::measure::schedule::Inputs<'a> {
    crate::measure::schedule::Inputs {
        seeds: Some(draw),
        agree: agree.map(|f| f as _),
    }
}

fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

/// The run the deterministic lane counts for scenario `s` in `tree`: its `count.run` with its
/// own limit when it has one, else the timed run itself.
pub(crate) fn count_spec(tree: &Tree, s: &Scenario, seed: u64, sandbox: &SandboxPolicy) -> RunSpec {
    let timed = scenario_spec(tree, s, seed, sandbox);
    match &s.count {
        None => timed,
        Some(count) => RunSpec {
            command: crate::check::fill_seed(&count.run, seed),
            timeout: count.timeout_s.duration(),
            ..timed
        },
    }
}

/// How much of a failed step its reason shows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shown {
    /// Name the tree the step ran in.
    pub tree: bool,
    /// The last this many lines of its stderr.
    pub tail_lines: usize,
}

impl Shown {
    /// A confirmation's gate reason, beside the other tree's step.
    pub(crate) const GATE: Shown = Shown {
        tree: true,
        tail_lines: 12,
    };
    /// A campaign candidate's reason: one tree, shown in the summary.
    pub(crate) const CANDIDATE: Shown = Shown {
        tree: false,
        tail_lines: 8,
    };
}

/// "`make` in the candidate tree: exit code 2\n  | last stderr lines" (the tree only when
/// `shown.tree`).
pub(crate) fn failure_text(out: &StepOutput, timeout: Duration, shown: Shown) -> String {
    let lines: Vec<&str> = out.run.stderr_tail.lines().collect();
    let start = lines.len().saturating_sub(shown.tail_lines);
    let tail: Vec<String> = lines[start..].iter().map(|l| format!("  | {l}")).collect();
    let place = match shown.tree {
        true => format!(" in the {} tree", out.record.tree),
        false => String::new(),
    };
    format!(
        "`{}`{place}: {}\n{}",
        out.record.command,
        steps::describe_failure(&out.record, timeout),
        tail.join("\n")
    )
}

/// The sha256 of nothing: what a check whose pipeline failed silently leaves as its output.
pub(crate) const EMPTY_SHA256: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// A failure that reads a missing absolute path, in the user's terms: the sandbox shows only
/// the system folders, toolchains, the run's own tree and the declared folders. `None` when
/// `stderr` names no missing absolute path.
pub(crate) fn hidden_path_hint(stderr: &str) -> Option<String> {
    let line = stderr
        .lines()
        .find(|l| l.contains("No such file or directory"))?;
    let path = line
        .split(|c: char| c.is_whitespace() || "'\"`:,;()".contains(c))
        .find(|w| w.starts_with('/') && w.len() > 1)?;
    Some(format!(
        "`{path}` is missing: if it exists on this machine, the path is outside what the \
         sandbox shows; add its folder to `sandbox.read_only` in the campaign (or copy it \
         into the repository)"
    ))
}

/// Why a check that both trees passed alike may have checked nothing: both outputs empty (a
/// pipeline whose first command failed prints nothing and exits 0), or stderr written.
pub(crate) fn silent_check_warning(
    scenario: &str,
    base: &StepOutput,
    cand: &StepOutput,
) -> Option<String> {
    let empty = [base, cand]
        .iter()
        .all(|o| o.run.stdout_sha256 == EMPTY_SHA256);
    let stderr = [base, cand]
        .iter()
        .any(|o| !o.run.stderr_tail.trim().is_empty());
    let why = match (empty, stderr) {
        (false, false) => return None,
        (true, _) => {
            "printed nothing in both trees (its output is the sha256 of nothing, \
                      e3b0c442…), which a pipeline whose first command failed also does"
        }
        (false, true) => "wrote to stderr",
    };
    Some(format!(
        "the check of scenario `{scenario}` {why}: it may have failed silently; see \
         logs/<tree>/check-{scenario}.stderr.log"
    ))
}

/// A holdout whose name or working directory repeats arguments of its commands gives them
/// away: names and `cwd`s are the user's, and a receipt shows the names. Every argument repeated
/// is named, each once.
pub(crate) fn revealing_holdout_name(s: &Scenario) -> Option<String> {
    let mut args: Vec<&str> = [s.run.as_str(), s.check.as_str()]
        .iter()
        .flat_map(|c| c.split_whitespace().skip(1))
        .map(|a| a.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|a| a.len() >= 2 && !a.starts_with('{'))
        .collect();
    args.sort_unstable();
    args.dedup();
    let places = [
        ("name", s.name.as_str()),
        ("cwd", s.cwd.as_deref().unwrap_or("")),
    ];
    let found: Vec<String> = places
        .iter()
        .filter_map(|(place, text)| {
            let repeated: Vec<String> = (args.iter())
                .filter(|a| text.contains(**a))
                .map(|a| format!("`{a}`"))
                .collect();
            (!repeated.is_empty()).then(|| {
                let (one, many) = ("an argument", "arguments");
                let what = if repeated.len() == 1 { one } else { many };
                format!(
                    "its {place} repeats {} ({what} of its commands)",
                    repeated.join(", ")
                )
            })
        })
        .collect();
    if found.is_empty() {
        return None;
    }
    Some(format!(
        "holdout `{}`: {}, and the receipt shows holdout names: choose a name and a cwd that say \
         nothing of the commands",
        s.name,
        found.join("; ")
    ))
}

/// The differential of both pipelines: a scenario's check outputs, the baseline's and the
/// candidate's (files under `outputs/`), compared under the scenario's rule (docs/design.md §4.1,
/// §4.2).
pub(crate) fn compare_check_outputs(
    s: &Scenario,
    baseline: &Path,
    candidate: &Path,
) -> Result<Comparison, PipelineError> {
    let read = |p: &Path| std::fs::read(p).map_err(io_err(format!("cannot read {}", p.display())));
    Ok(crate::check::compare_outputs(
        &s.compare,
        &read(baseline)?,
        &read(candidate)?,
    ))
}

/// How a differing check output is told, in a gate's detail or a candidate's reason.
pub(crate) fn mismatch_text(s: &Scenario, lane: CheckLane, m: &Mismatch) -> String {
    format!("scenario `{}` ({lane}): {}\n{}", s.name, m.summary, m.diff)
}

/// The failed `gate` of a step that failed (build, tests): its reason is [`failure_text`], and a
/// step that ran out of its time says so (a campaign's `timed out`).
pub(crate) fn step_stop(
    gate: GateName,
    out: &StepOutput,
    timeout: Duration,
    shown: Shown,
) -> GateStop {
    GateStop {
        gate,
        failure: match out.record.timed_out {
            true => Failure::TimedOut,
            false => Failure::Failed,
        },
        detail: failure_text(out, timeout, shown),
    }
}

/// Whether tree `t` (labelled `label`) still holds the protected files as `recorded` after `who`
/// ran in it ("the build"): `None`, or the failed `patch safety` gate naming the file (and, with
/// `shown.tree`, the tree). A tree without the patch that changed them is the workload's own
/// failure (`Err`) when no candidate could have reached it (`isolated`: under the sandbox, or
/// built alone), docs/design.md §2.2.3.
pub(crate) fn protected_stop(
    recorded: &crate::tree::Protected,
    (label, t): (TreeLabel, &Tree),
    who: &str,
    isolated: bool,
    shown: Shown,
) -> Result<Option<GateStop>, PipelineError> {
    let change = (recorded.changed_in(&t.root))
        .map_err(|e| PipelineError::internal_while("cannot check the protected files", e))?;
    let Some(change) = change else {
        return Ok(None);
    };
    let mut what = change.describe(who);
    if shown.tree {
        what = format!("{what} in the {label} tree");
    }
    if isolated && label.holds_baseline() {
        return Err(PipelineError::Baseline(format!(
            "{what}: the workload's own steps must leave its protected files as they are"
        )));
    }
    Ok(Some(GateStop::failed(GateName::PatchSafety, what)))
}

/// "the build left 40960 MiB in it, over the tree disk limit (32768 MiB, sandbox.limits.tree_mib)"
/// when `t` takes more than `limit_mib`.
pub(crate) fn over_limit(t: &Tree, limit_mib: u32) -> Option<String> {
    let used_mib = crate::tree::disk_usage(&t.root) >> 20;
    (used_mib > u64::from(limit_mib)).then(|| {
        format!(
            "the build left {used_mib} MiB in it, over the tree disk limit ({limit_mib} MiB, \
             sandbox.limits.tree_mib)"
        )
    })
}

/// Where artifact `artifact` of the workload's `build` is in tree `t`, and its sha256.
pub(crate) fn artifact_digest(
    t: &Tree,
    build: &crate::spec::workload::BuildStep,
    artifact: &str,
) -> Result<String, std::io::Error> {
    let path = t
        .root
        .join(build.cwd.as_deref().unwrap_or("."))
        .join(artifact);
    crate::tree::digest_tree_file(&t.root, &path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::result::StepRecord;
    use crate::measure::record::{ExitStatus, RunRecord};

    fn failed(stderr_lines: usize) -> StepOutput {
        let status = ExitStatus::Exited { code: 2 };
        let stderr_tail: Vec<String> = (1..=stderr_lines).map(|i| format!("e{i}")).collect();
        StepOutput {
            record: StepRecord {
                step: StepName::new(StepKind::Build),
                tree: TreeLabel::Candidate,
                command: "make".into(),
                cwd: ".".into(),
                status,
                timed_out: false,
                leftover_processes: false,
                wall_s: 1.0,
                stdout_sha256: String::new(),
                stdout_log: "logs/o".into(),
                stderr_log: "logs/e".into(),
            },
            run: RunRecord {
                wall_s: 1.0,
                rusage: Default::default(),
                status,
                timed_out: false,
                leftover_processes: false,
                stdout_sha256: String::new(),
                stdout_bytes: 0,
                stderr_tail: stderr_tail.join("\n"),
                steal_s: None,
            },
            stdout_path: "o".into(),
            stderr_path: "e".into(),
        }
    }

    #[test]
    fn a_gate_reason_names_the_tree_and_the_last_twelve_stderr_lines() {
        let text = failure_text(&failed(14), Duration::from_secs(9), Shown::GATE);
        let tail: Vec<String> = (3..=14).map(|i| format!("  | e{i}")).collect();
        let head = "`make` in the candidate tree: exit code 2\n";
        assert_eq!(text, format!("{head}{}", tail.join("\n")));
    }

    #[test]
    fn a_candidate_reason_shows_the_last_eight_stderr_lines_and_no_tree() {
        let text = failure_text(&failed(14), Duration::from_secs(9), Shown::CANDIDATE);
        let tail: Vec<String> = (7..=14).map(|i| format!("  | e{i}")).collect();
        assert_eq!(text, format!("`make`: exit code 2\n{}", tail.join("\n")));
        let short = failure_text(&failed(0), Duration::from_secs(9), Shown::CANDIDATE);
        assert_eq!(short, "`make`: exit code 2\n");
    }

    fn holdout(name: &str, cwd: Option<&str>) -> Scenario {
        let cwd = cwd.map_or(String::new(), |c| format!(r#", "cwd": "{c}""#));
        let json = format!(
            r#"{{ "name": "{name}", "role": "holdout", "run": "./run 30000 {{seed}}",
                "check": "./run 300 {{seed}}", "compare": "exact"{cwd} }}"#
        );
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn a_holdout_name_or_cwd_repeating_its_arguments_is_warned_of() {
        let named = revealing_holdout_name(&holdout("pairs-30000", None)).unwrap();
        // `300` (the check's size) is in the name too.
        assert!(
            named.contains("its name repeats `300`, `30000` (arguments of its commands)"),
            "{named}"
        );
        let placed = revealing_holdout_name(&holdout("h1", Some("data/300"))).unwrap();
        assert!(placed.contains("its cwd repeats `300`"), "{placed}");
        // Every argument repeated is named, in each place.
        let both = revealing_holdout_name(&holdout("x-30000", Some("d300"))).unwrap();
        assert!(
            both.contains(
                "its name repeats `300`, `30000` (arguments of its commands); its cwd \
                 repeats `300` (an argument of its commands)"
            ),
            "{both}"
        );
        assert_eq!(
            revealing_holdout_name(&holdout("large", Some("data"))),
            None
        );
    }

    #[test]
    fn a_missing_absolute_path_is_explained_in_the_users_terms() {
        let stderr = "cat: /tmp/input.bin: No such file or directory\n";
        let hint = hidden_path_hint(stderr).unwrap();
        assert!(
            hint.contains("`/tmp/input.bin`") && hint.contains("sandbox.read_only"),
            "{hint}"
        );
        assert_eq!(hidden_path_hint("./x: No such file or directory"), None);
        assert_eq!(hidden_path_hint("segmentation fault"), None);
    }

    #[test]
    fn a_check_that_printed_nothing_in_both_trees_or_wrote_stderr_is_warned_of() {
        let ok = |sha: &str, stderr: &str| {
            let mut out = failed(0);
            out.run.stdout_sha256 = sha.to_string();
            out.run.stderr_tail = stderr.to_string();
            out
        };
        let (empty, full) = (ok(EMPTY_SHA256, ""), ok(&"a".repeat(64), ""));
        let nothing = silent_check_warning("s", &empty, &empty).unwrap();
        assert!(
            nothing.contains("printed nothing in both trees"),
            "{nothing}"
        );
        assert_eq!(silent_check_warning("s", &empty, &full), None);
        assert_eq!(silent_check_warning("s", &full, &full), None);
        let noisy = ok(&"a".repeat(64), "grep: input: No such file");
        assert!(
            silent_check_warning("s", &full, &noisy)
                .unwrap()
                .contains("stderr")
        );
    }
}
