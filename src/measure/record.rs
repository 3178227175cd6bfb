//! The records one timed run and one pair leave behind.
//!
//! These structs are serialized as-is into `--json` output and, later, into the receipt, so their
//! field names are part of evo's public format: rename nothing without a reason.

use serde::{Deserialize, Serialize};

/// Which side of a comparison a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    Baseline,
    Candidate,
}

/// Which arm ran first within a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    BaselineFirst,
    CandidateFirst,
}

impl Order {
    /// The order of the next pair: evo alternates pair by pair.
    pub fn flipped(self) -> Order {
        match self {
            Order::BaselineFirst => Order::CandidateFirst,
            Order::CandidateFirst => Order::BaselineFirst,
        }
    }

    /// The two arms in the order they run.
    pub fn arms(self) -> [Arm; 2] {
        match self {
            Order::BaselineFirst => [Arm::Baseline, Arm::Candidate],
            Order::CandidateFirst => [Arm::Candidate, Arm::Baseline],
        }
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ExitStatus {
    /// Exited on its own with this code.
    Exited { code: i32 },
    /// Killed by this signal; shells report it as 128 + `signal`.
    Signaled { signal: i32 },
}

impl ExitStatus {
    pub fn success(self) -> bool {
        matches!(self, ExitStatus::Exited { code: 0 })
    }

    /// The conventional shell exit code: the code itself, or 128 + signal number.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Exited { code } => code,
            ExitStatus::Signaled { signal } => 128 + signal,
        }
    }
}

/// Resource usage of the one child that ran the command, from `wait4`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Rusage {
    pub user_s: f64,
    pub sys_s: f64,
    /// Peak resident set size in KiB (Linux `ru_maxrss` unit).
    pub max_rss_kib: u64,
    pub voluntary_cs: u64,
    pub involuntary_cs: u64,
}

/// Everything observed about one run of a command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    /// Monotonic wall time from spawn to exit, in seconds.
    pub wall_s: f64,
    pub rusage: Rusage,
    pub status: ExitStatus,
    /// The run was stopped by evo because it exceeded its timeout.
    pub timed_out: bool,
    /// Processes of the child's process group were still alive after it exited (and were killed).
    pub leftover_processes: bool,
    /// Hex sha256 of everything the command wrote to stdout.
    pub stdout_sha256: String,
    pub stdout_bytes: u64,
    /// The last lines of stderr (capped), kept so a failure can be explained.
    pub stderr_tail: String,
    /// Seconds the hypervisor gave to other guests during the run, on the CPUs the command could
    /// use (`/proc/stat` steal): wall time that was no work of either arm. Absent where the kernel
    /// does not report it (and in records from before evo read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_s: Option<f64>,
}

impl RunRecord {
    /// A run that exited 0 after `wall_s` seconds and observed nothing else: what tests build
    /// records from.
    pub fn exited_ok(wall_s: f64) -> RunRecord {
        RunRecord {
            wall_s,
            rusage: Rusage::default(),
            status: ExitStatus::Exited { code: 0 },
            timed_out: false,
            leftover_processes: false,
            stdout_sha256: String::new(),
            stdout_bytes: 0,
            stderr_tail: String::new(),
            steal_s: None,
        }
    }
}

impl RunRecord {
    pub fn succeeded(&self) -> bool {
        self.status.success() && !self.timed_out
    }
}

/// What a run was for: warmups are discarded from the statistics but kept in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    Warmup,
    Measured,
}

/// A warmup run, kept so the record shows every run evo made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WarmupRun {
    pub arm: Arm,
    pub purpose: Purpose,
    pub run: RunRecord,
    /// The seed this warmup round's runs (one of each arm) computed on; absent when the command
    /// takes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// One baseline run and one candidate run, back to back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pair {
    pub index: usize,
    pub order: Order,
    pub baseline: RunRecord,
    pub candidate: RunRecord,
    /// `baseline.wall_s / candidate.wall_s`: above 1 means the candidate was faster.
    pub ratio: f64,
    /// The fresh seed both runs computed on (docs/design.md §4.5); absent when the command takes
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Pair {
    pub fn new(index: usize, order: Order, baseline: RunRecord, candidate: RunRecord) -> Pair {
        let ratio = baseline.wall_s / candidate.wall_s;
        Pair {
            index,
            order,
            baseline,
            candidate,
            ratio,
            seed: None,
        }
    }
}
