//! The workload file: how to build, test, check and time a target (docs/design.md §2.1).
//!
//! These types mirror the JSON one to one; unknown keys are refused. Paths stay as written here;
//! resolving them against the file's directory happens when a plan is built from them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::values::{Seconds, Tolerance};

fn default_step_timeout() -> Seconds {
    Seconds::from_secs(600)
}

fn default_run_timeout() -> Seconds {
    Seconds::from_secs(120)
}

/// How to build, test, check and time one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// The JSON Schema this file follows (`evo schema ...`), for editors; evo ignores it.
    // Never serialized, so no digest or record depends on it.
    #[serde(rename = "$schema", default, skip_serializing)]
    pub schema: Option<String>,
    /// Notes for the people who edit this file, a string or a list of lines; evo ignores it.
    #[serde(rename = "$comment", default, skip_serializing)]
    pub comment: Option<super::values::Comment>,
    pub name: String,
    pub build: BuildStep,
    pub test: TestStep,
    /// Named entry points; holdout scenarios live in the campaign's separate holdout file.
    pub scenarios: Vec<Scenario>,
    #[serde(default)]
    pub sanitize: Option<SanitizeStep>,
    /// Harness files outside the repository, copied into every tree (paths relative to this file).
    #[serde(default)]
    pub overlay: Vec<String>,
    /// Globs no candidate may touch.
    #[serde(default)]
    pub protected: Vec<String>,
    /// Globs of build configuration, for the build-configuration lane. Files a build tool reads
    /// by itself (a `GNUmakefile`, a `.cargo/config.toml`, …) count as configuration anyway; a
    /// new one near where the workload runs is refused unless listed here.
    #[serde(default)]
    pub config_files: Vec<String>,
    /// Lane probes a candidate may add, by name (`fadvise`, `clock_gettime`, …: code that can
    /// tell which lane it runs in, listed in docs/design.md §2.2.3); any other fails the
    /// `lane probes` gate, whose detail records what was allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_probes: Vec<String>,
    /// Every timed command uses one CPU: a candidate whose timed runs use more (user + sys CPU
    /// time above wall time, [`crate::evidence::verdict::CPU_LIMIT`]) is rejected, since its gain
    /// would come from a second core the workload promised not to use.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub single_threaded: bool,
}

impl Workload {
    /// The working directory of every command the workload runs in a tree (`None`: the root).
    pub fn command_cwds(&self) -> Vec<Option<String>> {
        let mut cwds = vec![self.build.cwd.clone(), self.test.cwd.clone()];
        cwds.extend(self.scenarios.iter().map(|s| s.cwd.clone()));
        cwds.extend(self.sanitize.iter().map(|s| s.cwd.clone()));
        cwds
    }
}

/// A shell command with its environment and working directory inside the tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildStep {
    pub command: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory relative to the tree's root.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Files the timed runs use, relative to the build's working directory (`cwd`); their sha256
    /// go in the receipt.
    #[serde(default)]
    pub artifacts: Vec<String>,
    #[serde(default = "default_step_timeout")]
    pub timeout_s: Seconds,
}

/// One command or several, each of which must exit 0 on every tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Commands {
    One(String),
    Many(Vec<String>),
}

impl Commands {
    pub fn as_slice(&self) -> &[String] {
        match self {
            Commands::One(c) => std::slice::from_ref(c),
            Commands::Many(cs) => cs,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestStep {
    pub command: Commands,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default = "default_step_timeout")]
    pub timeout_s: Seconds,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Training,
    Holdout,
}

impl Role {
    /// The role in words, the same word as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Training => "training",
            Role::Holdout => "holdout",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// How check outputs of baseline and candidate are compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    /// Byte for byte.
    Exact,
    /// Number by number within a tolerance; text between numbers compared exactly.
    Tolerance(Tolerance),
}

/// A named entry point: a timed `run` and an untimed `check` whose output is the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub role: Role,
    /// What the timed command does, on what data, in a sentence ("50 decompressions of a 1 MiB
    /// corpus, after generating it"): the PR text shows it beside the speed figure, so a reader
    /// knows what got faster. Training scenarios only (a holdout's would name it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Timed command; may contain `{seed}`.
    pub run: String,
    /// Untimed command whose output is compared; may contain `{seed}`.
    pub check: String,
    pub compare: Compare,
    /// Given the same seed, the timed run prints the same bytes in every tree: the two runs of
    /// each pair must then print identical output.
    #[serde(default)]
    pub deterministic_output: bool,
    /// The two runs of each pair (same seed) must print output that agrees under `compare`,
    /// as check outputs do; for a timed output that moves in its last digits with summation order.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compare_timed_output: bool,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default = "default_run_timeout")]
    pub timeout_s: Seconds,
    /// What the deterministic lane (`confirm.counters: ["callgrind"]`) counts instead of `run`,
    /// when `run` is too slow under callgrind (20–100×, more for a large library): a shorter run
    /// of the same code, such as fewer training steps. Absent: `run` itself is counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<CountRun>,
    /// Checks on inputs drawn afresh for each confirmation from declared ranges, beside the
    /// fixed `check`: a candidate right only where the fixed checks look is caught elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw: Option<Draw>,
    /// A sealed holdout's inputs, drawn once per confirmation from the holdouts' own seed: each
    /// `{name}` of its `run` and `check` is filled from its range, so no fixed list of holdout
    /// inputs exists for a candidate to special-case (holdouts only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, IntRange>,
    /// For a timed command that repeats a unit of work (passes, steps) but prints little else:
    /// the start of the line its output prints once per unit, followed by a digest of what that
    /// unit computed. evo requires two or more such lines, all different, in the baseline's timed
    /// output; otherwise a unit that skips work an earlier one did cannot be told from one that
    /// computes, and the tier is capped (docs/workloads.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_digest: Option<String>,
}

/// Checks of a scenario on inputs drawn per confirmation (docs/design.md §2.2.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Draw {
    /// The check command, with a `{name}` placeholder for each drawn value (and `{seed}`).
    pub check: String,
    /// How many drawn checks each confirmation runs (1 to 20).
    #[serde(default = "default_draws")]
    pub count: usize,
    /// Each placeholder's range of integers.
    pub vars: BTreeMap<String, IntRange>,
}

fn default_draws() -> usize {
    3
}

/// The integers from `min` to `max` (both included) in steps of `step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntRange {
    pub min: i64,
    pub max: i64,
    #[serde(default = "default_step")]
    pub step: i64,
}

fn default_step() -> i64 {
    1
}

impl Scenario {
    /// Whether the two runs of each pair have their timed outputs compared, and how: byte for
    /// byte (`deterministic_output`, which wins), under `compare` (`compare_timed_output`), or
    /// not at all.
    pub fn timed_output_rule(&self) -> Option<TimedOutputRule> {
        if self.deterministic_output {
            Some(TimedOutputRule::Exact)
        } else if self.compare_timed_output {
            Some(TimedOutputRule::Compare)
        } else {
            None
        }
    }
}

/// How the timed outputs of a pair's two runs must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimedOutputRule {
    /// Identical bytes.
    Exact,
    /// Agreeing under the scenario's `compare` rule.
    Compare,
}

/// The run the deterministic lane counts in place of a scenario's timed `run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountRun {
    /// The counted command; may contain `{seed}` (the same seed as the timed runs). It runs in
    /// the scenario's `cwd` with its `env`. Under `deterministic_output`, its output under
    /// callgrind must equal its output run natively, or the count is not used.
    pub run: String,
    /// Limit for one run under callgrind.
    #[serde(default = "default_count_timeout")]
    pub timeout_s: Seconds,
}

fn default_count_timeout() -> Seconds {
    Seconds::from_secs(1800)
}

/// The sanitizer lane: a separate, untimed build whose check outputs must still match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SanitizeStep {
    /// The sanitized build's command. With `flags`, it should be the workload's own build (the
    /// candidate's build configuration, Makefile edits and `-D` flags included): evo runs it
    /// with compilers of its own first on the PATH (and as `CC`/`CXX`), which append `flags` to
    /// every compile and refuse a source whose preprocessed text turns instrumentation off.
    pub build: String,
    /// Compiler flags the sanitized build's every compile and link gets last, so no flag of the
    /// build's own can undo them (`-g -fsanitize=address,undefined -fno-sanitize-recover=all`).
    /// Absent: `build` is run as written, and must add the sanitizer flags itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// Check command for the sanitized build, when it differs from each scenario's `check`.
    #[serde(default)]
    pub check: Option<String>,
    #[serde(default = "default_step_timeout")]
    pub timeout_s: Seconds,
}

/// The sealed holdout file: scenarios an agent never sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Holdouts {
    /// The JSON Schema this file follows (`evo schema ...`), for editors; evo ignores it.
    // Never serialized, so no digest or record depends on it.
    #[serde(rename = "$schema", default, skip_serializing)]
    pub schema: Option<String>,
    /// Notes for the people who edit this file, a string or a list of lines; evo ignores it.
    #[serde(rename = "$comment", default, skip_serializing)]
    pub comment: Option<super::values::Comment>,
    pub scenarios: Vec<Scenario>,
}
