//! The end of a campaign in one table: every candidate's status and reason, its screening figures
//! and its confirmation — the same in `summary.json` and on the terminal. `campaign::summary`
//! builds it from the campaign's state.

use serde::{Deserialize, Serialize};

use super::result::Verdict;
use crate::stats;

/// Where a candidate came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Patch,
    Agent,
}

/// What became of a candidate; the last status journaled is its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Collected, not yet checked.
    Collected,
    /// Refused before anything ran: a protected or unsafe path, or an unreadable patch.
    Refused,
    DidNotApply,
    BuildFailed,
    TestsFailed,
    DifferentialMismatch,
    SanitizerFailure,
    TimedOut,
    /// The agent command failed (non-zero exit); its patch is kept but not checked.
    AgentFailed,
    /// The agent produced no change.
    NoChange,
    /// Every check passed; waiting for screening.
    Checked,
    /// Screening pairs measured.
    Screened,
    /// Sent to a fresh confirmation, which accepted it.
    Confirmed,
    /// Sent to a fresh confirmation, which did not accept it.
    Rejected,
    /// Sent to a fresh confirmation, which could not decide.
    Inconclusive,
    /// Not confirmed, and its screening pairs rule any gain below the minimum effect
    /// (`search::ruling`: the confirmation's sequential rule, which screening never lets accept).
    NoRealGain,
    /// Not confirmed, and its screening pairs rule it slower than the baseline by more than the
    /// minimum effect (`search::ruling`).
    Slower,
}

impl Status {
    /// Whether a candidate's search checks (`campaign::checks`: patch safety and lane probes,
    /// apply, build, tests, differential) can end with this status and leave it unscreened: a gate
    /// stopped it, or its timed programs are the baseline's (`NoChange`). A screening job's
    /// journal that ends a candidate otherwise is refused (`campaign::fleet::screen`). Every
    /// status is named here, so a new one must be placed.
    pub fn ends_search_checks(self) -> bool {
        match self {
            Status::Refused
            | Status::DidNotApply
            | Status::BuildFailed
            | Status::TestsFailed
            | Status::DifferentialMismatch
            | Status::TimedOut
            | Status::NoChange => true,
            // Sanitizers run in a confirmation only; the rest are not the end of a check.
            Status::SanitizerFailure
            | Status::Collected
            | Status::AgentFailed
            | Status::Checked
            | Status::Screened
            | Status::Confirmed
            | Status::Rejected
            | Status::Inconclusive
            | Status::NoRealGain
            | Status::Slower => false,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Collected => "collected",
            Status::Refused => "refused",
            Status::DidNotApply => "did not apply",
            Status::BuildFailed => "build failed",
            Status::TestsFailed => "tests failed",
            Status::DifferentialMismatch => "differential mismatch",
            Status::SanitizerFailure => "sanitizer failure",
            Status::TimedOut => "timed out",
            Status::AgentFailed => "agent failed",
            Status::NoChange => "no change",
            Status::Checked => "checked",
            Status::Screened => "screened",
            Status::Confirmed => "confirmed",
            Status::Rejected => "rejected",
            Status::Inconclusive => "inconclusive",
            Status::NoRealGain => "no real gain",
            Status::Slower => "slower",
        }
    }
}

/// One row of the summary.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Row {
    pub index: usize,
    pub name: String,
    pub source: Source,
    pub patch_file: String,
    /// The search round it was collected in (patch files: 1).
    pub round: usize,
    /// The candidate its agent run started from (`agent.base: "best"`): its patch is still the
    /// whole change against the baseline.
    pub parent: Option<usize>,
    /// What its agent run reported it cost (`EVO_COST.json`, in the user's units); absent when
    /// it reported none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    pub status: Status,
    pub reason: String,
    pub screening_pairs: usize,
    pub screening_median: Option<f64>,
    /// Mean max RSS of the candidate's screening runs, KiB.
    pub screening_max_rss_kib: Option<f64>,
    /// Screening's instruction counts (`search.counters: ["callgrind"]`), one run per arm.
    pub instructions: Option<InstructionCounts>,
    pub confirmation_run_dir: Option<String>,
    pub confirmation_verdict: Option<Verdict>,
    pub confirmation_tier: Option<stats::Tier>,
    /// The confirmation's median speedup on the training scenario, when it measured one.
    pub confirmation_median: Option<f64>,
    /// Confirmations of this candidate that an interruption cut short (their logs stay there).
    pub discarded_confirmations: Vec<String>,
}

#[cfg(test)]
impl Row {
    /// A screened patch candidate `c<index>` (5 pairs, median 1.1×, not confirmed), for a test
    /// to change what it is about.
    pub(crate) fn screened_for_test(index: usize) -> Row {
        Row {
            index,
            name: format!("c{index}"),
            source: Source::Patch,
            patch_file: format!("candidate_{index}.patch"),
            round: 1,
            parent: None,
            cost: None,
            status: Status::Screened,
            reason: String::new(),
            screening_pairs: 5,
            screening_median: Some(1.1),
            screening_max_rss_kib: None,
            instructions: None,
            confirmation_run_dir: None,
            confirmation_verdict: None,
            confirmation_tier: None,
            confirmation_median: None,
            discarded_confirmations: Vec::new(),
        }
    }
}

/// Instructions of one run of each arm under callgrind, as screening counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct InstructionCounts {
    pub baseline: u64,
    pub candidate: u64,
}

/// The whole campaign, for `summary.json` and the terminal.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub run_id: String,
    pub candidates_tried: usize,
    pub rows: Vec<Row>,
    /// Seconds spent building trees in the search by this process (confirmations report their
    /// own in their results, and fleet jobs build on their nodes: see `screened_in_jobs`).
    pub build_s: f64,
    /// Candidates whose checks and screening ran as fleet jobs: their builds are not in
    /// `build_s`.
    pub screened_in_jobs: usize,
    /// Seconds of timed runs in screening (both arms, warmups included), from the journal.
    pub screening_run_s: f64,
    pub total_s: f64,
    /// Why the search ended before its last round (`search.stop_after` or a budget), if it did.
    pub search_ended: Option<String>,
    /// The sum of the costs the agent runs reported (what `search.max_cost` counts); absent
    /// when none reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_total: Option<f64>,
    /// The best confirmed candidate, if any was accepted.
    pub accepted: Option<usize>,
}

impl Summary {
    /// Accepted if a candidate was confirmed; inconclusive if the best one could not be decided;
    /// rejected otherwise.
    /// The campaign's verdict: accepted when a candidate was, inconclusive when none was but
    /// one ended inconclusive, else rejected.
    pub fn verdict(&self) -> Verdict {
        if self.accepted.is_some() {
            Verdict::Accepted
        } else if self.rows.iter().any(|r| r.status == Status::Inconclusive) {
            Verdict::Inconclusive
        } else {
            Verdict::Rejected
        }
    }
}
