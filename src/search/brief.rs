//! The brief an agent reads on stdin, versioned and with a JSON Schema (`evo schema brief`): the
//! campaign's objective, the workload's build, tests and training scenarios, and from the second
//! round on the history of every earlier candidate, and evo's profile of the baseline
//! (`search::profile`). Nothing sealed is in it: no holdout's name, command or output, and no
//! confirmation's findings (confirmations run after the search).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::profile::Profile;
use crate::evidence::summary::{Source, Status};

/// The version of the brief's layout; a change of its fields raises it (2: `profile`; 3:
/// `cost_file`; 4: a scenario's `cwd`).
pub const BRIEF_VERSION: u32 = 4;

/// The most bytes of one earlier candidate's patch a brief quotes.
pub const HISTORY_PATCH_CAP: usize = 64 * 1024;

/// What one agent run is told (JSON on its stdin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Brief {
    /// [`BRIEF_VERSION`].
    pub brief_version: u32,
    pub objective: String,
    pub bottleneck: String,
    pub constraints: Vec<String>,
    pub workload: String,
    /// The build command, run in `build_cwd`.
    pub build: String,
    /// The build's folder relative to the tree root (empty: the root).
    pub build_cwd: String,
    pub test: Vec<String>,
    /// Training scenarios only: holdouts are sealed.
    pub scenarios: Vec<BriefScenario>,
    /// Globs of files no candidate may change.
    pub protected: Vec<String>,
    /// Globs of the build's configuration files, which a candidate may change.
    pub config_files: Vec<String>,
    /// The value `{seed}` takes in the search's checks and timed runs.
    pub search_seed: u64,
    /// The file at the tree root whose text evo takes as the agent's stated reason.
    pub explanation_file: String,
    /// The file at the tree root where the agent may say what its run cost:
    /// `{"cost": <number ≥ 0>}`, in the campaign's own units (what `search.max_cost` counts).
    #[serde(default)]
    pub cost_file: String,
    /// This run's round, from 1, of `rounds`.
    pub round: usize,
    pub rounds: usize,
    /// This run's number within its round, from 1, of `runs_per_round`.
    pub run: usize,
    pub runs_per_round: usize,
    /// The candidate already applied to the tree the agent starts in (`agent.base: "best"`).
    /// The candidate evo collects is the tree's whole change against the baseline.
    pub parent: Option<Parent>,
    /// Every candidate collected before this round, in order.
    pub history: Vec<HistoryEntry>,
    /// Where the baseline's instructions go: its hottest functions and lines, from one run of
    /// the first training scenario's counted command under callgrind. `None` when there is
    /// none, `profile_unavailable` saying why.
    #[serde(default)]
    pub profile: Option<Profile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_unavailable: Option<String>,
}

/// A training scenario as the agent sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BriefScenario {
    pub name: String,
    pub run: String,
    pub check: String,
    /// The folder its commands run in, relative to the tree root (empty: the root).
    #[serde(default)]
    pub cwd: String,
}

/// The candidate an agent's tree starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Parent {
    pub index: usize,
    pub name: String,
    pub screening_median: Option<f64>,
}

/// One earlier candidate and what the search made of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryEntry {
    pub index: usize,
    pub name: String,
    pub source: Source,
    pub round: usize,
    pub parent: Option<usize>,
    /// Where the search left it: `screened`, or the check it failed (`build_failed`, …).
    pub status: Status,
    pub reason: String,
    /// The median of its screening ratios (baseline time / candidate time; above 1 is faster).
    pub screening_median: Option<f64>,
    pub screening_pairs: usize,
    /// Its stated reason, as it gave it.
    pub explanation: Option<String>,
    /// Its whole change against the baseline (`git diff` text), cut at 64 KiB.
    pub patch: String,
    pub patch_truncated: bool,
}

impl HistoryEntry {
    /// The patch text a brief quotes: lossy UTF-8, at most [`HISTORY_PATCH_CAP`] bytes.
    pub fn quote_patch(bytes: &[u8]) -> (String, bool) {
        let cut = bytes.len() > HISTORY_PATCH_CAP;
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(HISTORY_PATCH_CAP)]);
        (text.into_owned(), cut)
    }

    /// The status a brief may tell: a confirmation's finding is never told (it would say how the
    /// sealed holdouts went), so a confirmed, rejected or inconclusive candidate reads as
    /// screened, with no reason.
    pub fn search_status(status: Status, reason: &str) -> (Status, String) {
        match status {
            Status::Confirmed | Status::Rejected | Status::Inconclusive => {
                (Status::Screened, String::new())
            }
            other => (other, reason.to_string()),
        }
    }
}

/// The brief's JSON Schema (`evo schema brief`).
pub fn schema() -> String {
    serde_json::to_string_pretty(&schemars::schema_for!(Brief)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confirmation_finding_never_reaches_a_brief() {
        for s in [Status::Confirmed, Status::Rejected, Status::Inconclusive] {
            let (status, reason) = HistoryEntry::search_status(s, "holdout `sealed-x` failed");
            assert_eq!((status, reason.as_str()), (Status::Screened, ""));
        }
        let (status, reason) = HistoryEntry::search_status(Status::BuildFailed, "exit 2");
        assert_eq!((status, reason.as_str()), (Status::BuildFailed, "exit 2"));
    }

    #[test]
    fn a_long_patch_is_cut_and_says_so() {
        let (text, cut) = HistoryEntry::quote_patch(&vec![b'a'; HISTORY_PATCH_CAP + 1]);
        assert!(cut && text.len() == HISTORY_PATCH_CAP);
        let (text, cut) = HistoryEntry::quote_patch(b"+x\n");
        assert!(!cut && text == "+x\n");
    }

    #[test]
    fn the_schema_names_the_round_and_the_history() {
        let s = schema();
        for field in [
            "brief_version",
            "round",
            "history",
            "screening_median",
            "parent",
            "profile",
            "profile_unavailable",
            "cost_file",
            "functions",
            "percent",
        ] {
            assert!(s.contains(&format!("\"{field}\"")), "{field}: {s}");
        }
    }
}
