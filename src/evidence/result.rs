//! What a confirmation leaves behind: `result.json` in the run directory.
//!
//! Everything needed to re-derive the verdict is here — raw runs, pairs, figures, gates — and the
//! field names of the measurement core (`pairs`, `median`, `ci95`, `cov`, ...) are reused as-is,
//! because the signed receipt will carry this same document.

use serde::{Deserialize, Serialize};

use super::figures::{ArmCov, Figures};
use crate::environment::Environment;
use crate::measure::record::{ExitStatus, Order, Pair, WarmupRun};
use crate::measure::schedule::PairOrder;
use crate::stats::{self, Ci95, HoldoutVerdict, Ratios, Tier};

pub use super::names::{CheckLane, GateName, TreeLabel, UnknownName};
pub use super::steps::{StepKind, StepName};
pub use crate::spec::workload::Role;

/// The decision, as scripts see it (and as the exit code says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Accepted,
    Rejected,
    Inconclusive,
}

impl Verdict {
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Accepted => crate::exit_codes::ACCEPTED,
            Verdict::Rejected => crate::exit_codes::REJECTED,
            Verdict::Inconclusive => crate::exit_codes::INCONCLUSIVE,
        }
    }

    /// The verdict in words, as the terminal and the PR text show it (the same word as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Rejected => "rejected",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One gate (docs/design.md §3.11), in the order the pipeline meets them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Gate {
    pub name: GateName,
    pub status: GateStatus,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    Passed,
    Failed,
    /// Not reached because an earlier gate failed, or not configured.
    Skipped,
}

/// A build, test or check command that ran in one tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepRecord {
    /// e.g. `build`, `test-1`, `check-pairs-30000`, `sanitize-build`.
    pub step: StepName,
    /// `baseline`, `candidate`, `baseline-sanitize`, `candidate-sanitize`, ...
    pub tree: TreeLabel,
    pub command: String,
    /// Working directory relative to the tree root.
    pub cwd: String,
    pub status: ExitStatus,
    pub timed_out: bool,
    /// Processes of the step were still alive after it exited (evo killed them).
    #[serde(default)]
    pub leftover_processes: bool,
    pub wall_s: f64,
    pub stdout_sha256: String,
    /// Paths relative to the run directory.
    pub stdout_log: String,
    pub stderr_log: String,
}

impl StepRecord {
    pub fn succeeded(&self) -> bool {
        self.status.success() && !self.timed_out
    }
}

impl Evidence {
    /// Where the candidate's runs left processes behind once they exited: its tests, checks and
    /// timed runs (builds may leave a legitimate server, such as a compiler cache, running).
    pub fn candidate_leftovers(&self) -> Vec<String> {
        let steps = self
            .steps
            .iter()
            .filter(|s| s.leftover_processes && !s.tree.holds_baseline() && !s.step.builds());
        let mut places: Vec<String> = steps.map(|s| format!("{} ({})", s.step, s.tree)).collect();
        for scenario in &self.scenarios {
            let warmups = scenario
                .warmups
                .iter()
                .filter(|w| w.arm == crate::measure::record::Arm::Candidate)
                .map(|w| &w.run);
            let pairs = scenario.pairs.iter().map(|p| &p.candidate);
            let count = warmups
                .chain(pairs)
                .filter(|r| r.leftover_processes)
                .count();
            if count > 0 {
                places.push(format!(
                    "{count} timed run(s) of scenario `{}`",
                    scenario.name
                ));
            }
        }
        // The configuration-only tree is the candidate's own configuration: candidate code too.
        let lane = &self.config_lane;
        let config_runs = (lane.warmups.iter())
            .filter(|w| w.arm == crate::measure::record::Arm::Candidate)
            .map(|w| &w.run)
            .chain(lane.pairs.iter().map(|p| &p.candidate));
        let count = config_runs.filter(|r| r.leftover_processes).count();
        if count > 0 {
            places.push(format!(
                "{count} timed run(s) of the configuration-only build"
            ));
        }
        places
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileDigest {
    pub path: String,
    pub sha256: String,
}

/// A `sandbox.read_only` folder every run could read, as it was when the confirmation started:
/// the input that was timed (`tree::digest_folder`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InputDigest {
    /// The folder as the campaign names it (`~/…` or relative to the campaign file), never a
    /// path of the machine that ran it.
    pub path: String,
    /// `sha256:` of the folder's listing: every entry's path, kind, permission bits and content.
    pub sha256: String,
    /// Regular files in it, and their bytes.
    pub files: u64,
    pub bytes: u64,
}

/// A built artifact of one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactDigest {
    pub tree: TreeLabel,
    pub path: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PatchFileChange {
    pub path: String,
    pub status: String,
    pub added: usize,
    pub removed: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PatchInfo {
    /// The original file the user named.
    pub source: String,
    /// The copy in the run directory.
    pub file: String,
    pub sha256: String,
    pub files: Vec<PatchFileChange>,
    pub added: usize,
    pub removed: usize,
    /// `libgit2` or `git-cli`; `None` when it was never applied.
    pub applier: Option<String>,
}

/// The differential evidence for one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DifferentialRecord {
    pub scenario: String,
    pub role: Role,
    /// `baseline` vs `candidate`, or the sanitized trees.
    pub lane: CheckLane,
    pub rule: String,
    pub baseline_sha256: String,
    pub candidate_sha256: String,
    pub same: bool,
    pub summary: Option<String>,
    pub diff: Option<String>,
}

/// A sanitizer report found in a check's stderr.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SanitizerFinding {
    pub tree: TreeLabel,
    pub step: StepName,
    pub kind: String,
    pub excerpt: String,
}

/// Figures of a holdout scenario: paired runs, no A/A, the holdout gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HoldoutFigures {
    pub median: f64,
    pub ci95: Option<Ci95>,
    pub cov: ArmCov,
    pub verdict: HoldoutVerdict,
    /// How many pairs ran and why (absent in results from before holdout plans, and in the
    /// configuration lane, which reuses these figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<HoldoutPlan>,
    /// The looks over the planned pairs and the one the holdout stopped at (rules 5; absent
    /// without a plan). `ci95` and `verdict` are the stop's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<HoldoutSequential>,
}

/// A holdout's looks (`stats::holdout_looks` of its plan's `pairs` and `planned`, fixed before
/// its first pair) and the first that decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HoldoutSequential {
    pub looks: Vec<stats::Look>,
    /// `None` when the pairs end before any look decides (a holdout cut short).
    pub stop: Option<stats::HoldoutStop>,
    /// What every look the pairs reached saw (`stats::sequential::seen`). Empty in results of
    /// rules 9 and before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<stats::sequential::Seen>,
}

/// A holdout's cap, chosen before its first pair from the training scenarios' A/A noise
/// (docs/design.md §3.10): enough pairs that, at that noise, a candidate exactly as fast as the
/// baseline shows "no regression" by the last look 95% of the time, between the configured pairs
/// and the cap. Its looks run from `pairs` to `planned`; it stops at the first that decides.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HoldoutPlan {
    /// Configured: the fewest pairs (`confirm.pairs`).
    pub pairs: usize,
    /// Configured: the cap (`confirm.max_pairs`, resolved to at least `pairs` by
    /// `spec::campaign::pair_cap`; older results may hold less, 0 included, meaning `pairs`).
    pub max_pairs: usize,
    /// Configured: warmup runs per arm.
    pub warmups: usize,
    /// The per-pair noise planned from: the largest A/A σ of the training scenarios.
    pub sigma: f64,
    /// Pairs at which a candidate as fast as the baseline passes the holdout gate 95% of the time
    /// (at `sigma`; `stats::holdout_pairs_to_resolve`).
    pub needed: usize,
    /// The most pairs to run (the last look): `needed` within `[pairs, max(pairs, max_pairs)]`,
    /// lowered to what `budget_s` holds at the holdout's warmup pace (never below `pairs`).
    pub planned: usize,
    /// The holdout's share of `confirm.max_minutes`, in seconds of pairs: what the budget had
    /// left when the scenarios before it were done (`budget_split`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
    /// How the confirmation's budget was split to give `budget_s` (docs/design.md §3.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_split: Option<super::budget::BudgetSplit>,
}

/// What bounds a holdout's pairs besides the noise: the configured counts and its time budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HoldoutCounts {
    pub pairs: usize,
    pub max_pairs: usize,
    pub warmups: usize,
    /// The holdout's share of the time budget, in seconds of pairs.
    pub budget_s: Option<f64>,
    /// How that share was made.
    pub budget_split: Option<super::budget::BudgetSplit>,
}

/// The measurement of one scenario (training: with A/A and the training gate; holdout: pairs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScenarioResult {
    pub name: String,
    pub role: Role,
    pub baseline_command: String,
    pub candidate_command: String,
    /// Working directory of the timed runs, relative to the tree root.
    #[serde(default = "dot")]
    pub cwd: String,
    pub warmups: Vec<WarmupRun>,
    pub aa_pairs: Vec<Pair>,
    pub pairs: Vec<Pair>,
    /// Present for training scenarios.
    pub training: Option<Figures>,
    /// Present for holdout scenarios.
    pub holdout: Option<HoldoutFigures>,
    /// Whether the two runs of every warmup round and pair, given the same seed, printed output
    /// that agrees (when the scenario compares its timed output, `replay.compared`).
    pub timed_output_consistent: Option<bool>,
    /// Whether a replayed result would show in these runs (docs/design.md §4.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<super::replay::ReplayCheck>,
    /// The deterministic lane (`confirm.counters: ["callgrind"]`): instructions of one run of
    /// each arm, training scenarios only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<InstructionFigures>,
    /// The A/A pairs ran the baseline against a second build of it in its own tree (not
    /// against itself).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aa_second_build: bool,
    /// The A/A pairs are the ones this campaign's earlier confirmation with this run id measured,
    /// on baseline binaries byte for byte these (`artifacts`: the baseline's and the second
    /// build's), reused rather than measured again (`confirm::earlier_aa`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aa_from: Option<String>,
    /// The comparison pairs ran in the balanced random order drawn from this seed
    /// (`PairOrder::Shuffled`, drawn when the pairs started and recorded after); absent: they
    /// alternated, candidate first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// What the timed command does, on what data, as the workload declares it (`description`;
    /// training scenarios only: a holdout's would name it). The PR text shows it beside the speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl ScenarioResult {
    /// A scenario's record before anything is measured: no runs, figures or checks yet (the
    /// pipeline and test builders fill in what they have).
    pub fn unmeasured(name: &str, role: crate::spec::workload::Role) -> ScenarioResult {
        ScenarioResult {
            name: name.to_string(),
            role,
            baseline_command: String::new(),
            candidate_command: String::new(),
            cwd: ".".to_string(),
            warmups: Vec::new(),
            aa_pairs: Vec::new(),
            pairs: Vec::new(),
            training: None,
            holdout: None,
            timed_output_consistent: None,
            replay: None,
            instructions: None,
            aa_second_build: false,
            aa_from: None,
            order_seed: None,
            description: None,
        }
    }

    /// The order its comparison pairs ran in, re-derivable from the record alone.
    pub fn comparison_order(&self) -> PairOrder {
        match self.order_seed {
            Some(seed) => PairOrder::Shuffled { seed },
            None => PairOrder::Alternating(Order::CandidateFirst),
        }
    }
}

/// Instructions executed by one run of each arm under callgrind, with the confirmation's seed.
/// Exact for a deterministic program, whatever the machine's noise; not time.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InstructionFigures {
    pub baseline: Option<u64>,
    pub candidate: Option<u64>,
    /// (candidate / baseline − 1) × 100: negative means fewer instructions.
    pub change_pct: Option<f64>,
    /// Why there is no figure, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The command counted, seed filled in, when the scenario's `count.run` stood in for the
    /// timed command (a shorter run of the same code); absent: the timed command was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Why this count cannot vouch for a gain, when it cannot (rules 6): the counted command is
    /// none of the timed ones (a candidate can tell it apart by its arguments), or its output
    /// could not be compared with what the timed runs print. Such a count can still stop a
    /// gain it does not back; it caps the tier at `measured`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<String>,
    /// The counted runs computed something else than the timed ones (rules 6): the candidate's
    /// output under callgrind differs from its own native run on the same seed, or from the
    /// baseline's counted output, with both digests. It rejects the candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatch: Option<String>,
    /// The baseline's and the candidate's events under the cache simulation, when both counts
    /// had them: the estimated cycles exact evidence rests on (rules 8, §3.12.4) and that can
    /// back a wall-time gain the instructions do not (rules 10, §3.12.1). Under
    /// `wall_time_or_counts` they come from the count itself; under `wall_time` from a second
    /// count, on a fresh seed of its own, made only when the instructions did not back a
    /// wall-time gain (their own `instructions` are that count's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<ArmCache>,
    /// Why that second, cache-simulated count gave no events, when it was made and failed
    /// (rules 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_note: Option<String>,
}

/// Both arms' cache-simulation events of one count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArmCache {
    pub baseline: crate::measure::callgrind::CacheEvents,
    pub candidate: crate::measure::callgrind::CacheEvents,
}

impl ArmCache {
    /// Baseline / candidate estimated cycles (`CacheEvents::estimated_cycles`), when both are
    /// positive.
    pub fn cycles_speedup(&self) -> Option<f64> {
        let (b, c) = (
            self.baseline.estimated_cycles(),
            self.candidate.estimated_cycles(),
        );
        (b > 0 && c > 0).then(|| b as f64 / c as f64)
    }
}

impl InstructionFigures {
    /// The figures from two counts.
    pub fn of(baseline: u64, candidate: u64) -> InstructionFigures {
        InstructionFigures {
            baseline: Some(baseline),
            candidate: Some(candidate),
            change_pct: Some((candidate as f64 / baseline as f64 - 1.0) * 100.0),
            note: None,
            command: None,
            unverified: None,
            mismatch: None,
            cache: None,
            cache_note: None,
        }
    }

    /// No figure, and why.
    pub fn missing(note: String) -> InstructionFigures {
        InstructionFigures {
            note: Some(note),
            ..InstructionFigures::default()
        }
    }
}

/// The build-configuration lane (docs/design.md §2.2.11): when a patch touches `config_files`, the
/// baseline plus the configuration part alone is measured too, so the gain can be attributed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConfigLane {
    pub ran: bool,
    /// Why it ran or did not.
    pub reason: String,
    /// Configuration files the patch touches.
    pub files: Vec<String>,
    /// The configuration-only patch in the run directory.
    pub patch_file: Option<String>,
    pub scenario: Option<String>,
    /// Warmup runs of both arms, before the pairs (absent in results from before they were
    /// kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warmups: Vec<WarmupRun>,
    /// Baseline against baseline + configuration only, candidate-first.
    pub pairs: Vec<Pair>,
    pub median: Option<f64>,
    pub ci95: Option<Ci95>,
    /// ln(configuration-only median) / ln(whole-patch median): the share of the gain that the
    /// configuration alone gives (1 = all of it, 0 = none).
    pub configuration_share: Option<f64>,
}

/// Seconds spent building versus measuring, so cost is visible.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timings {
    pub prepare_s: f64,
    pub build_s: f64,
    pub checks_s: f64,
    pub measure_s: f64,
    pub total_s: f64,
}

/// Figures of the chosen candidate from the search that picked it (screening pairs), to set
/// beside the fresh confirmation's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchFigures {
    pub scenario: String,
    pub pairs: usize,
    pub median: f64,
    pub ci95: Option<Ci95>,
    /// Where the search found it: its round and the candidates it was built on, and how long
    /// the search was. Absent in results from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage: Option<Lineage>,
}

/// The chosen candidate's place in a campaign's search (docs/design.md §2.9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Lineage {
    /// Its name in the campaign (`agent-7`, or a patch file's name).
    pub name: String,
    /// The round it was collected in, from 1.
    pub round: usize,
    /// The rounds the search ran, and its agent runs over all of them.
    pub rounds: usize,
    pub agent_runs: usize,
    /// The candidates its tree was built on (`agent.base: "best"`), its parent first.
    pub ancestors: Vec<Ancestor>,
}

/// A candidate the chosen one was built on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ancestor {
    pub name: String,
    pub round: usize,
}

fn one() -> usize {
    1
}

fn dot() -> String {
    ".".to_string()
}

/// The whole confirmation, `result.json`: what it found ([`Evidence`]), and the verdict decided
/// from that once every stage has ended (`evidence::verdict::decide_result`). The two are one
/// flat JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConfirmResult {
    #[serde(flatten)]
    pub evidence: Evidence,
    pub tier: Tier,
    pub verdict: Verdict,
    /// One sentence per failed gate or caveat, most important first.
    pub reasons: Vec<String>,
}

impl ConfirmResult {
    /// The result of `evidence`, with the verdict `decision` decided from it.
    pub fn decided(evidence: Evidence, decision: crate::evidence::verdict::Decision) -> Self {
        ConfirmResult {
            evidence,
            tier: decision.tier,
            verdict: decision.verdict,
            reasons: decision.reasons,
        }
    }
}

/// What a confirmation found, stage by stage: what ran, on what, with which outputs and figures,
/// and each gate. A confirmation gathers it while its stages run; it holds no verdict (that is
/// decided from it at the end, [`ConfirmResult`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Evidence {
    pub evo_version: String,
    /// The verdict rules this result was decided under (`verdict::RULES`); 0 in results from
    /// before the number was recorded. `--recompute` re-derives only results of its own rules.
    #[serde(default)]
    pub rules: u32,
    pub run_id: String,
    pub campaign_file: String,
    pub campaign_name: String,
    pub repo: String,
    pub baseline_commitish: String,
    pub baseline_sha: String,
    pub workload_name: String,
    pub workload_digest: String,
    /// sha256 of the sealed holdouts' canonical JSON; `None` when none were declared.
    pub holdout_portfolio_digest: Option<String>,
    /// Names of the sealed holdout scenarios this confirmation was given, so the receipt can seal
    /// everything they produced even when a check failed before any record names their role.
    #[serde(default)]
    pub holdout_names: Vec<String>,
    pub patch: PatchInfo,
    pub overlay: Vec<FileDigest>,
    /// The fresh `{seed}` of the training scenarios' checks and timed runs (and of the holdouts'
    /// in results without a `holdout_seed`).
    pub seed: u64,
    /// The holdouts' own fresh `{seed}`, drawn apart from `seed` so the public one does not let
    /// a guessed holdout command be run to the outputs it printed; sealed in the receipt.
    /// Absent when no holdout was declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout_seed: Option<HoldoutSeed>,
    pub min_effect: f64,
    /// What decided the training scenarios (`confirm.metric`); wall time unless said.
    #[serde(
        default,
        skip_serializing_if = "crate::spec::campaign::Metric::is_wall_time"
    )]
    pub metric: crate::spec::campaign::Metric,
    pub environment: Environment,
    pub steps: Vec<StepRecord>,
    pub artifacts: Vec<ArtifactDigest>,
    pub differential: Vec<DifferentialRecord>,
    pub sanitizer_lane_ran: bool,
    pub sanitizer_findings: Vec<SanitizerFinding>,
    pub scenarios: Vec<ScenarioResult>,
    pub gates: Vec<Gate>,
    /// What the user should look at that decides nothing: a check that may have failed
    /// silently, a holdout whose name repeats its command's arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub timings: Timings,
    /// How many candidates were tried before this one was chosen (1 for a lone `evo confirm`):
    /// the intervals do not correct for choosing one of them.
    #[serde(default = "one")]
    pub candidates_tried: usize,
    /// The search-time figures of this candidate; `None` when there was no search.
    #[serde(default)]
    pub search: Option<SearchFigures>,
    /// The candidate author's stated reason why it is faster (not independently verified).
    #[serde(default)]
    pub explanation: Option<String>,
    /// An agent command (`agent.command`) produced the candidate; false for a patch file given
    /// to the campaign or to `evo confirm`, and in results from before it was recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_agent: bool,
    /// The `sandbox.read_only` folders the runs could read, digested; empty when none was
    /// declared (and in results from before they were recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only_inputs: Vec<InputDigest>,
    #[serde(default)]
    pub config_lane: ConfigLane,
    /// Whether builds, checks and timed runs ran in the sandbox.
    #[serde(default)]
    pub sandbox: crate::measure::sandbox::SandboxRecord,
    /// Every artifact the timed commands run was byte for byte the baseline's (and the patch
    /// touched no configuration and no file a timed command names), so nothing was timed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_programs_unchanged: bool,
    /// The workload declares that its timed commands use one CPU (`single_threaded`), so a
    /// candidate whose timed runs used more is rejected (rules 6).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub single_threaded: bool,
    /// Holdouts that something a candidate or an agent can read names (rules 6): the baseline's
    /// tree, the overlay or the brief. Such a holdout is not sealed, and the tier cannot be
    /// `tested`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsealed_holdouts: Vec<UnsealedHoldout>,
    /// The inputs drawn for this confirmation (rules 6): each training scenario's drawn checks
    /// (from `seed`) and each holdout's `inputs` (from `holdout_seed`, sealed in the receipt).
    /// `--recompute` re-derives every one from its seed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub draws: Vec<DrawnInputs>,
}

/// One assignment of drawn inputs and the commands it filled (docs/design.md §2.2.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DrawnInputs {
    /// The scenario the commands belong to: `<scenario>.drawn-<n>` for a drawn check, the
    /// holdout's name for a holdout's inputs.
    pub scenario: String,
    pub role: Role,
    /// Which assignment of the seed (`check::draw::values`): the draw's number from 0 for a
    /// check, the holdout's place in its file for a holdout.
    pub index: usize,
    /// The declared ranges, by placeholder (empty in the receipt for a holdout).
    pub ranges: std::collections::BTreeMap<String, crate::spec::workload::IntRange>,
    /// The values drawn, by placeholder (empty in the receipt for a holdout).
    pub values: std::collections::BTreeMap<String, i64>,
    /// Each command as declared and as filled (`{seed}` left for the step); a holdout's are
    /// sealed in the receipt.
    pub commands: Vec<FilledCommand>,
}

/// A command before and after its drawn placeholders were filled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FilledCommand {
    pub template: String,
    pub filled: String,
}

/// A holdout named where a candidate or an agent can read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UnsealedHoldout {
    pub scenario: String,
    /// Where: a file of the baseline's tree and the line (`workloads/k/README.md:12`), an
    /// overlay file, or `the campaign's brief`.
    pub place: String,
    /// What is named there: `arguments` (enough of the command's distinguishing arguments to
    /// tell it apart), or `input` (a file the command reads, present in the tree).
    pub found: String,
}

/// The holdouts' seed: the number in `result.json`, a keyed digest of it in the receipt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum HoldoutSeed {
    Drawn(u64),
    /// `sealed holdout (hmac-sha256:…)` of the seed's decimal digits.
    Sealed(String),
}

impl Evidence {
    /// The `{seed}` the checks and timed runs of a scenario in `role` get.
    pub fn seed_for(&self, role: Role) -> u64 {
        match (role, &self.holdout_seed) {
            (Role::Holdout, Some(HoldoutSeed::Drawn(seed))) => *seed,
            _ => self.seed,
        }
    }
}

/// The figures of a holdout scenario, exactly as `evo confirm` computes them: with its plan, the
/// stop of its looks decides (rules 5); without one (the configuration lane), the signed-rank 95%
/// interval of all its pairs (rules 9).
pub fn holdout_figures(
    pairs: &[Pair],
    plan: Option<&HoldoutPlan>,
) -> Result<HoldoutFigures, stats::StatsError> {
    let ratios = Ratios::new(pairs.iter().map(|p| p.ratio).collect())?;
    let times = |f: fn(&Pair) -> f64| pairs.iter().map(f).collect::<Vec<f64>>();
    let (median, ci95, verdict, sequential) = match plan {
        Some(plan) => {
            let looks = stats::holdout_looks(plan.pairs, plan.planned);
            let stop = stats::first_holdout_stop(ratios.values(), &looks);
            let verdict = stop.map_or(HoldoutVerdict::Inconclusive, |s| s.verdict);
            let ci95 = stop.and_then(|s| s.interval);
            // The estimate of all the pairs (rules 9: Hodges–Lehmann), as for training: the stop's
            // own when the holdout ran exactly to its stop, as evo runs it.
            let median = stats::signed_rank::estimate(ratios.values(), None).0;
            (
                median,
                ci95,
                verdict,
                Some(HoldoutSequential {
                    seen: stats::sequential::seen(ratios.values(), &looks),
                    looks,
                    stop,
                }),
            )
        }
        None => {
            let (median, ci95) = stats::signed_rank::ci95(ratios.values());
            let verdict = stats::holdout_gate(median, ci95.as_ref());
            (median, ci95, verdict, None)
        }
    };
    Ok(HoldoutFigures {
        median,
        ci95,
        cov: ArmCov {
            baseline: stats::cov(&times(|p| p.baseline.wall_s)),
            candidate: stats::cov(&times(|p| p.candidate.wall_s)),
        },
        verdict,
        plan: plan.copied(),
        sequential,
    })
}

/// The noise a holdout's pairs are planned from: the largest per-pair σ of the training
/// scenarios' A/A pairs (a holdout has none of its own; the noisiest scenario is the cautious
/// guess). `None` when no training scenario has usable A/A pairs.
pub fn holdout_sigma(scenarios: &[ScenarioResult]) -> Option<f64> {
    scenarios
        .iter()
        .filter(|s| s.role == crate::spec::workload::Role::Training)
        .filter_map(|s| Ratios::new(s.aa_pairs.iter().map(|p| p.ratio).collect()).ok())
        .map(|aa| stats::noise_sigma(&aa))
        .max_by(f64::total_cmp)
}

/// A holdout's plan from the measured training scenarios and the configured counts, exactly as
/// `evo confirm` makes it and `--recompute` re-derives it.
///
/// `holdout_warmups` are the holdout's own warmup runs (both arms), whose pace turns the budget
/// into pairs.
pub fn holdout_plan(
    scenarios: &[ScenarioResult],
    counts: HoldoutCounts,
    holdout_warmups: &[WarmupRun],
) -> Option<HoldoutPlan> {
    let HoldoutCounts {
        pairs,
        max_pairs,
        warmups,
        budget_s,
        budget_split,
    } = counts;
    let sigma = holdout_sigma(scenarios)?;
    let plan = stats::plan_holdout_pairs(sigma, stats::HOLDOUT_TOLERANCE, pairs, max_pairs);
    let cap = stats::training_cap(
        &stats::CapSettings {
            min_pairs: pairs,
            max_pairs: plan.planned,
            budget_s,
        },
        warmup_seconds_per_pair(holdout_warmups),
        true,
    );
    Some(HoldoutPlan {
        pairs,
        max_pairs,
        warmups,
        sigma,
        needed: plan.needed,
        planned: plan.planned.min(cap),
        budget_s,
        budget_split,
    })
}

/// The wall time of one pair at the pace of the baseline's warmup runs (two runs make a pair).
/// Only the baseline's: a candidate that ran its warmups slowly would otherwise shrink its own
/// holdout's budgeted pairs, and with them the holdout's chance to show it slower.
pub fn warmup_seconds_per_pair(warmups: &[WarmupRun]) -> f64 {
    let baseline: Vec<f64> = (warmups.iter())
        .filter(|w| w.arm == crate::measure::record::Arm::Baseline)
        .map(|w| w.run.wall_s)
        .collect();
    2.0 * baseline.iter().sum::<f64>() / baseline.len().max(1) as f64
}

/// Whether the two runs of every warmup round and pair (same seed) printed the same bytes.
pub fn outputs_consistent(warmups: &[WarmupRun], aa: &[Pair], pairs: &[Pair]) -> bool {
    super::replay::pairs_agree_exactly(warmups, aa, pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A candidate cannot buy its holdout fewer pairs by running its warmups slowly: the pace
    /// that turns the budget into pairs is the baseline's.
    #[test]
    fn a_slow_candidate_warmup_does_not_shrink_the_holdouts_budgeted_pairs() {
        use crate::measure::record::{Arm, Purpose, RunRecord};
        let warmup = |arm, wall_s| WarmupRun {
            arm,
            purpose: Purpose::Warmup,
            run: RunRecord::exited_ok(wall_s),
            seed: None,
        };
        let honest = [warmup(Arm::Candidate, 1.0), warmup(Arm::Baseline, 1.0)];
        let stalling = [warmup(Arm::Candidate, 100.0), warmup(Arm::Baseline, 1.0)];
        assert_eq!(warmup_seconds_per_pair(&honest), 2.0);
        assert_eq!(warmup_seconds_per_pair(&stalling), 2.0);
    }

    #[test]
    fn a_verdict_in_words_is_the_word_scripts_read_in_json() {
        for v in [Verdict::Accepted, Verdict::Rejected, Verdict::Inconclusive] {
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
            assert_eq!(v.as_str(), v.as_str().to_lowercase());
        }
        for r in [Role::Training, Role::Holdout] {
            assert_eq!(
                serde_json::to_string(&r).unwrap(),
                format!("\"{}\"", r.as_str())
            );
        }
    }
}
