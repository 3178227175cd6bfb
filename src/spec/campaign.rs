//! The campaign file: which repository and baseline, which workload, which candidates, and how
//! hard to search and confirm (docs/design.md §2.1). Paths are relative to the campaign file.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::values::{ConfirmPairs, Cost, Count, Fraction, Minutes, Seconds};

/// One optimization campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    /// The JSON Schema this file follows (`evo schema ...`), for editors; evo ignores it.
    // Never serialized, so no digest or record depends on it.
    #[serde(rename = "$schema", default, skip_serializing)]
    pub schema: Option<String>,
    /// Notes for the people who edit this file, a string or a list of lines; evo ignores it.
    #[serde(rename = "$comment", default, skip_serializing)]
    pub comment: Option<super::values::Comment>,
    pub name: String,
    /// Path of the target git repository.
    pub repo: String,
    /// Commit-ish, resolved once to a full SHA and pinned.
    pub baseline: String,
    /// Path of the workload file.
    pub workload: String,
    /// Path of the sealed holdout file.
    #[serde(default)]
    pub holdouts: Option<String>,
    /// What the optimizing agent is told.
    #[serde(default)]
    pub brief: Brief,
    #[serde(default)]
    pub candidates: Vec<CandidatePatch>,
    #[serde(default)]
    pub agent: Option<AgentSpec>,
    #[serde(default)]
    pub search: SearchSettings,
    #[serde(default)]
    pub confirm: ConfirmSettings,
    /// A bound on the whole run in minutes of wall time, counted from its start (over every
    /// session of a resumed run): a confirmation that would not end within it is not started
    /// (its candidate stays undecided, told what deciding it would take), and one that starts
    /// gets no more timed pairs than the time left allows. The search is not cut short: set
    /// `search.max_minutes` for that. Absent: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<Minutes>,
    /// Signing key file; a per-user default key is used when absent.
    #[serde(default)]
    pub key: Option<String>,
    /// Isolation of builds, checks and timed runs (bubblewrap).
    #[serde(default)]
    pub sandbox: SandboxSettings,
    #[serde(default = "default_output")]
    pub output: String,
    /// Where the confirmations run: absent (or `"engine": "local"`), here; `"engine": "slurm"`,
    /// one Slurm job per confirmation, each holding a whole node (docs/design.md §2.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<super::fleet::FleetSettings>,
}

fn default_output() -> String {
    "receipts".to_string()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Brief {
    #[serde(default)]
    pub objective: String,
    #[serde(default)]
    pub bottleneck: String,
    #[serde(default)]
    pub constraints: Vec<String>,
}

/// How builds, tests, checks and timed runs are isolated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// `auto` (default: bubblewrap when this machine has it), `on` (required) or `off`.
    #[serde(default)]
    pub mode: crate::spec::modes::SandboxMode,
    /// Paths builds may write besides their own tree, such as a shared build cache (the baseline
    /// writes the real one, each candidate its own copy; tests, checks and timed runs do not see
    /// them). A leading `~/` means the home folder; relative paths are relative to the campaign
    /// file.
    #[serde(default)]
    pub writable: Vec<String>,
    /// Folders every build, test, check and timed run may read besides the system folders,
    /// toolchains and its own tree (data, an installed runtime). Same path rules as `writable`.
    #[serde(default)]
    pub read_only: Vec<String>,
    /// Names of environment variables passed to code under test besides evo's allow-list
    /// (`PATH`, `HOME`, locale, Cargo's and rustup's homes, `CC`, `CXX`, …); never
    /// `EVO_SIGNING_KEY`.
    #[serde(default, deserialize_with = "super::values::passed_env_names")]
    #[schemars(with = "Vec<String>")]
    pub pass_env: Vec<String>,
    /// What a sandboxed build, test, check or timed run may use at most; code under test cannot
    /// lift these.
    #[serde(default)]
    pub limits: SandboxLimits,
}

/// The limits of every sandboxed step (docs/design.md §1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxLimits {
    /// The size of the private `/tmp` each sandboxed command gets, in MiB (default 4096); a
    /// command that fills it fails, and its record says this limit was reached.
    #[serde(default = "default_tmp_mib")]
    pub tmp_mib: NonZeroU32,
    /// The largest file any process of a command may write, in MiB (default 16384,
    /// `RLIMIT_FSIZE`); a write past it kills the writer with `SIGXFSZ`.
    #[serde(default = "default_file_mib")]
    pub file_mib: NonZeroU32,
    /// The CPU time any one process of a command may use, in seconds (default 7200,
    /// `RLIMIT_CPU`); past it the process is killed with `SIGXCPU`.
    #[serde(default = "default_cpu_s")]
    pub cpu_s: NonZeroU32,
    /// The memory all processes of a command may use together, in MiB (default 8192; a memory
    /// cgroup, where the machine gives evo one): past it the kernel kills one of them.
    #[serde(default = "default_memory_mib")]
    pub memory_mib: NonZeroU32,
    /// How many processes and threads a command may have at once (default 4096; a pids cgroup):
    /// a fork past it fails.
    #[serde(default = "default_pids")]
    pub pids: NonZeroU32,
    /// How much disk a tree may take after its build, in MiB (default 32768): a build that
    /// leaves more fails. Checked with the sandbox off too.
    #[serde(default = "default_tree_mib")]
    pub tree_mib: NonZeroU32,
}

fn default_tree_mib() -> NonZeroU32 {
    nonzero(32768)
}

fn default_memory_mib() -> NonZeroU32 {
    nonzero(8192)
}

fn default_pids() -> NonZeroU32 {
    nonzero(4096)
}

use std::num::NonZeroU32;

fn nonzero(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

fn default_tmp_mib() -> NonZeroU32 {
    nonzero(4096)
}

fn default_file_mib() -> NonZeroU32 {
    nonzero(16384)
}

fn default_cpu_s() -> NonZeroU32 {
    nonzero(7200)
}

impl Default for SandboxLimits {
    fn default() -> SandboxLimits {
        SandboxLimits {
            tmp_mib: default_tmp_mib(),
            file_mib: default_file_mib(),
            cpu_s: default_cpu_s(),
            memory_mib: default_memory_mib(),
            pids: default_pids(),
            tree_mib: default_tree_mib(),
        }
    }
}

/// A candidate given as a patch file (`git diff` format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CandidatePatch {
    /// Shown in summaries and messages: plain text, no control characters.
    #[serde(deserialize_with = "super::values::plain_name")]
    #[schemars(with = "String")]
    pub name: String,
    pub patch: String,
    /// The author's stated reason why it is faster (not independently verified).
    #[serde(default)]
    pub explanation: Option<String>,
}

/// An agent command run `count` times in fresh trees, the brief on stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub command: String,
    #[serde(default = "one")]
    pub count: Count,
    #[serde(default = "agent_timeout")]
    pub timeout_s: Seconds,
    /// Names of environment variables the agent gets besides evo's allow-list (its API token,
    /// say). Only the agent gets them, never the builds and runs of what it writes. Never
    /// `EVO_SIGNING_KEY`.
    #[serde(default, deserialize_with = "super::values::passed_env_names")]
    #[schemars(with = "Vec<String>")]
    pub pass_env: Vec<String>,
    /// The tree each run starts from: `baseline` (default), or `best`, the baseline with the
    /// best screened candidate so far applied. Whatever it starts from, the candidate is its
    /// whole change against the pinned baseline.
    #[serde(default)]
    pub base: AgentBase,
}

/// What an agent run's tree holds when the agent starts (`agent.base`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentBase {
    /// The pinned baseline.
    #[default]
    Baseline,
    /// The pinned baseline with the best screened candidate so far (median above 1) applied,
    /// or the baseline while there is none.
    Best,
}

fn one() -> Count {
    Count::try_from(1).unwrap_or_else(|_| unreachable!("1 is a valid count"))
}

fn agent_timeout() -> Seconds {
    Seconds::from_secs(1800)
}

/// Screening: a few pairs per candidate, which rank and never accept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchSettings {
    #[serde(default = "five")]
    pub pairs: Count,
    /// Racing (docs/design.md §2.3.4): after every candidate has its `pairs`, one more pair at a
    /// time goes to each candidate whose place among the top `confirm.top` is still in doubt,
    /// up to this many pairs each. Absent (or not above `pairs`): no racing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pairs: Option<Count>,
    /// `rusage` (always recorded) and optionally `callgrind`.
    #[serde(default)]
    pub counters: Vec<Counter>,
    /// The `{seed}` of the search (checks and screening). It is known to the agent, in its brief;
    /// confirmation draws a fresh one no candidate could have seen, so a patch tuned to this seed
    /// passes the search and fails confirmation.
    #[serde(default = "default_search_seed")]
    pub seed: u64,
    /// Rounds of agent runs (default 1): each round runs the agent `agent.count` times with the
    /// history of every earlier candidate in its brief, and screens them before the next.
    #[serde(default = "one")]
    pub rounds: Count,
    /// Ends the search after this many rounds in a row that did not raise the best screening
    /// median. Absent: every round runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_after: Option<Count>,
    /// No new agent run starts once the campaign holds this many candidates (patch files
    /// included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_candidates: Option<Count>,
    /// No new agent run starts once this many have run, over all rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_agent_runs: Option<Count>,
    /// No new agent run starts once the search has taken this many minutes of wall time (over
    /// every session of the run, counted at each collected candidate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<Count>,
    /// No new agent run starts once the costs the agent runs reported (`EVO_COST.json`, in the
    /// user's own units: dollars, tokens) add up to this much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<Cost>,
}

/// The search seed when the campaign does not set one.
pub const DEFAULT_SEARCH_SEED: u64 = 1;

fn default_search_seed() -> u64 {
    DEFAULT_SEARCH_SEED
}

fn five() -> Count {
    Count::try_from(5).unwrap_or_else(|_| unreachable!("5 is a valid count"))
}

impl Default for SearchSettings {
    fn default() -> SearchSettings {
        SearchSettings {
            pairs: five(),
            max_pairs: None,
            counters: Vec::new(),
            seed: DEFAULT_SEARCH_SEED,
            rounds: one(),
            stop_after: None,
            max_candidates: None,
            max_agent_runs: None,
            max_minutes: None,
            max_cost: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Counter {
    Rusage,
    Callgrind,
}

/// What decides a training scenario (`confirm.metric`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The paired wall-time comparison against its noise floor.
    #[default]
    WallTime,
    /// The deterministic lane's instruction counts (needs `counters: ["callgrind"]`). Exact and
    /// immune to the machine's noise, but instructions are not time (a change in memory traffic,
    /// cache behaviour or parallelism may not show in them), and valgrind writes them inside the
    /// candidate's sandbox, where a hostile candidate could forge its own: for trusted
    /// candidates only.
    Instructions,
    /// The wall time decides; where it leaves a training scenario undecided, exact evidence may
    /// (docs/design.md §3.12.4): the estimated cycles of a cache-simulated count of the timed
    /// command, which neither the wall time nor the CPU time may contradict, with the tier
    /// `counted`. Needs `counters: ["callgrind"]`. A candidate can fool a count (a callgrind
    /// client request that stops collection around its work, a dump of its own), so, like
    /// `instructions`, for trusted candidates only.
    WallTimeOrCounts,
}

impl Metric {
    pub fn is_wall_time(&self) -> bool {
        *self == Metric::WallTime
    }

    /// Whether the wall time decides (`wall_time`, or `wall_time_or_counts` before the counts).
    pub fn by_wall_time(&self) -> bool {
        matches!(self, Metric::WallTime | Metric::WallTimeOrCounts)
    }
}

/// Confirmation: fresh trees and enough pairs for a 95% interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, try_from = "ConfirmSettingsFile")]
pub struct ConfirmSettings {
    /// Comparison pairs per training scenario: the fewest that run, and the holdouts' pairs.
    #[serde(default = "nine")]
    pub pairs: ConfirmPairs,
    /// The cap on comparison pairs. The sequential rule looks at the pairs from `pairs` on and
    /// stops at the first look that decides (accepted, slower, or no real gain), at `max_pairs`
    /// at the latest, where a run still undecided is inconclusive and says how many more pairs
    /// would decide it. Absent: exactly `pairs`, no extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pairs: Option<ConfirmPairs>,
    /// A budget for the timed pairs of one confirmation, in minutes: the training scenarios get
    /// it less a reserve for the holdouts (their `pairs` at the baseline warmups' pace), the
    /// holdouts what training left (docs/design.md §3.6); each lowers its cap to the pairs its
    /// share holds (never below `pairs`). Absent: no budget, only `max_pairs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<Minutes>,
    #[serde(default = "eleven")]
    pub aa_pairs: ConfirmPairs,
    #[serde(default = "one")]
    pub top: Count,
    #[serde(default = "one_percent")]
    pub min_effect: Fraction,
    /// Rules 2 and 3 sized the pair count for this true gain; the sequential rule (rules 4)
    /// stops when decided and only records it. Must exceed `min_effect`; absent: 1.5 ×
    /// `min_effect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_effect: Option<Fraction>,
    #[serde(default = "one")]
    pub warmup: Count,
    /// `["callgrind"]` adds the deterministic lane: the instructions of one run of each arm on
    /// every training scenario, reported beside the wall-time verdict (instructions are not time:
    /// a change in memory traffic or parallelism may not show in them).
    #[serde(default)]
    pub counters: Vec<Counter>,
    /// Before measuring, wait up to this many seconds for other work to leave the CPUs nearly
    /// idle (`EVO_QUIET_WAIT_S` overrides it); what was found is in the result. 0 does not wait.
    #[serde(default = "thirty")]
    pub quiet_wait_s: u32,
    /// What decides a training scenario: `wall_time` (default) or `instructions` (the
    /// deterministic lane; needs `counters: ["callgrind"]`; instructions are not time).
    #[serde(default)]
    pub metric: Metric,
    /// `split`: while measuring, evo's own threads stay on the first CPU it may use and the
    /// timed commands run on the others (with two or more); `off`: everything on every CPU;
    /// `auto` (default): `off` (a candidate could widen its own CPU mask, so `split` is for
    /// trusted candidates). The split gives a multi-threaded
    /// command one CPU fewer.
    #[serde(default)]
    pub affinity: crate::spec::modes::Affinity,
    /// The most bytes a candidate patch may write into the tree once applied (binary literals at
    /// their declared size, a copy at the copied file's): a patch over it is refused before
    /// anything is applied or built, in screening and confirmation alike. Default 64 MiB.
    #[serde(default = "max_applied_bytes")]
    pub max_applied_bytes: u64,
}

fn thirty() -> u32 {
    30
}

/// 64 MiB, the cap on a patch's own bytes (`tree::DEFAULT_MAX_APPLIED_BYTES`).
fn max_applied_bytes() -> u64 {
    64 * 1024 * 1024
}

/// The one spelling of a cap on comparison pairs: the configured `max_pairs`, never below `pairs`;
/// absent, exactly `pairs` (no extension). Every cap evo records and plans with comes from here
/// (`confirm.max_pairs`, `--max-pairs` of `evo confirm` and `evo bench`), so none is 0 or below
/// `pairs`; `stats::training_cap` still reads one below `pairs` (0 in reports from before this)
/// as `pairs`.
pub fn pair_cap(pairs: usize, max_pairs: Option<usize>) -> usize {
    max_pairs.map_or(pairs, |most| most.max(pairs))
}

impl ConfirmSettings {
    /// The cap on comparison pairs: `max_pairs`, or `pairs` when absent ([`pair_cap`]).
    pub fn max_pairs(&self) -> usize {
        pair_cap(self.pairs.get(), self.max_pairs.map(ConfirmPairs::get))
    }

    /// The timed pairs' budget in seconds, if any.
    pub fn budget_s(&self) -> Option<f64> {
        self.max_minutes.map(|m| 60.0 * m.get())
    }

    /// The target effect of rules 2 and 3 (recorded, decides nothing): `target_effect`, or 1.5 ×
    /// `min_effect` when absent.
    pub fn target_effect(&self) -> f64 {
        self.target_effect.map_or_else(
            || crate::stats::default_target_effect(self.min_effect.get()),
            Fraction::get,
        )
    }
}

/// `ConfirmSettings` as written, before the check that relates two of its fields.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConfirmSettingsFile {
    #[serde(default = "nine")]
    pairs: ConfirmPairs,
    #[serde(default)]
    max_pairs: Option<ConfirmPairs>,
    /// A budget for the timed pairs of one confirmation, in minutes.
    #[serde(default)]
    max_minutes: Option<Minutes>,
    #[serde(default = "eleven")]
    aa_pairs: ConfirmPairs,
    #[serde(default = "one")]
    top: Count,
    #[serde(default = "one_percent")]
    min_effect: Fraction,
    /// The gain the pair plan sizes for (above `min_effect`; default 1.5 × `min_effect`).
    #[serde(default)]
    target_effect: Option<Fraction>,
    #[serde(default = "one")]
    warmup: Count,
    /// `["callgrind"]` adds the deterministic lane (instruction counts of both arms).
    #[serde(default)]
    counters: Vec<Counter>,
    /// Seconds to wait, at most, for a quiet machine before measuring (0: do not wait).
    #[serde(default = "thirty")]
    quiet_wait_s: u32,
    /// What decides a training scenario: `wall_time` (default) or `instructions` (needs
    /// `counters: ["callgrind"]`; instructions are not time).
    #[serde(default)]
    metric: Metric,
    /// `split`: evo on one CPU, the timed commands on the others; `off`: no pinning; `auto`
    /// (default): `off`; `split` is for trusted candidates.
    #[serde(default)]
    affinity: crate::spec::modes::Affinity,
    /// The most bytes a candidate patch may write into the tree (default 64 MiB).
    #[serde(default = "max_applied_bytes")]
    max_applied_bytes: u64,
}

/// Why a campaign's `confirm` section is refused (at its line and column).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfirmSettingsError {
    #[error(
        "metric \"instructions\" or \"wall_time_or_counts\" needs the deterministic lane: add \
         \"counters\": [\"callgrind\"]"
    )]
    InstructionsUncounted,
    #[error(
        "max_pairs ({max}) is below pairs ({pairs}): the cap must allow at least the configured \
         pairs (omit max_pairs for no extension)"
    )]
    CapBelowPairs { max: usize, pairs: usize },
    #[error(
        "target_effect ({target}) must be above min_effect ({min}): a true gain exactly at the \
         minimum effect clears it only half the time, whatever the pairs"
    )]
    TargetNotAboveMin { target: f64, min: f64 },
    #[error("max_applied_bytes must be at least 1 (the default is 64 MiB)")]
    NoAppliedBytes,
}

impl TryFrom<ConfirmSettingsFile> for ConfirmSettings {
    type Error = ConfirmSettingsError;
    fn try_from(f: ConfirmSettingsFile) -> Result<ConfirmSettings, ConfirmSettingsError> {
        if f.metric != Metric::WallTime && !f.counters.contains(&Counter::Callgrind) {
            return Err(ConfirmSettingsError::InstructionsUncounted);
        }
        if let Some(max) = f.max_pairs {
            if max.get() < f.pairs.get() {
                return Err(ConfirmSettingsError::CapBelowPairs {
                    max: max.get(),
                    pairs: f.pairs.get(),
                });
            }
        }
        if let Some(target) = f.target_effect {
            if target.get() <= f.min_effect.get() {
                return Err(ConfirmSettingsError::TargetNotAboveMin {
                    target: target.get(),
                    min: f.min_effect.get(),
                });
            }
        }
        if f.max_applied_bytes == 0 {
            return Err(ConfirmSettingsError::NoAppliedBytes);
        }
        Ok(ConfirmSettings {
            pairs: f.pairs,
            max_pairs: f.max_pairs,
            max_minutes: f.max_minutes,
            aa_pairs: f.aa_pairs,
            top: f.top,
            min_effect: f.min_effect,
            target_effect: f.target_effect,
            warmup: f.warmup,
            counters: f.counters,
            quiet_wait_s: f.quiet_wait_s,
            metric: f.metric,
            affinity: f.affinity,
            max_applied_bytes: f.max_applied_bytes,
        })
    }
}

fn nine() -> ConfirmPairs {
    ConfirmPairs::try_from(9).unwrap_or_else(|_| unreachable!("9 pairs are valid"))
}

fn eleven() -> ConfirmPairs {
    ConfirmPairs::try_from(11).unwrap_or_else(|_| unreachable!("11 pairs are valid"))
}

fn one_percent() -> Fraction {
    Fraction::try_from(0.01).unwrap_or_else(|_| unreachable!("0.01 is a valid fraction"))
}

impl Default for ConfirmSettings {
    fn default() -> ConfirmSettings {
        ConfirmSettings {
            pairs: nine(),
            max_pairs: None,
            max_minutes: None,
            aa_pairs: eleven(),
            top: one(),
            min_effect: one_percent(),
            target_effect: None,
            warmup: one(),
            counters: Vec::new(),
            quiet_wait_s: thirty(),
            metric: Default::default(),
            affinity: Default::default(),
            max_applied_bytes: max_applied_bytes(),
        }
    }
}

#[cfg(test)]
#[path = "campaign_tests.rs"]
mod tests;
