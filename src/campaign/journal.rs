//! The campaign journal: one JSON line per finished step, appended and flushed to disk as each
//! step completes, so a campaign interrupted at any point (Ctrl-C, SIGKILL, power) resumes from the
//! last finished step without repeating or losing a measurement.
//!
//! The journal is the source of truth of a run: the summary and the receipts are derived from it.
//! A torn last line (the process died mid-write) is ignored on reading.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::evidence::summary::{Source, Status};
use crate::measure::record::{Pair, WarmupRun};
use crate::report::jobs::JobStage;

/// The stage of a job journaled before screening ran as jobs: every job was a confirmation.
fn confirm_stage() -> JobStage {
    JobStage::Confirm
}

/// The round of a candidate journaled before the search had rounds: the only one.
fn first_round() -> usize {
    1
}

/// The journal's file name inside the run directory.
pub const JOURNAL: &str = "journal.jsonl";

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum Entry {
    Started {
        run_id: String,
        campaign_file: String,
        baseline_sha: String,
        /// The `{seed}` of the search (checks and screening, `search.seed`); confirmation draws
        /// a fresh one.
        search_seed: u64,
        evo_version: String,
    },
    Candidate {
        index: usize,
        name: String,
        source: Source,
        /// Relative to the run directory: `candidate_<index>.patch`.
        patch_file: String,
        explanation: Option<String>,
        /// The search round it was collected in (patch files: 1).
        #[serde(default = "first_round")]
        round: usize,
        /// The candidate whose tree the agent started from (`agent.base: "best"`); its patch is
        /// still the whole change against the baseline.
        #[serde(default)]
        parent: Option<usize>,
        /// Seconds the search had taken, over every session of the run, when it was collected
        /// (what `search.max_minutes` counts).
        #[serde(default)]
        search_s: f64,
        /// What its agent run reported it cost (`EVO_COST.json`, what `search.max_cost`
        /// counts), when it reported a valid one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
    },
    Status {
        index: usize,
        status: Status,
        reason: String,
    },
    /// The baseline tree is built, tested and its check outputs are kept.
    BaselineReady {
        build_s: f64,
    },
    Warmups {
        index: usize,
        runs: Vec<WarmupRun>,
    },
    /// One screening pair of candidate `index` against the baseline.
    ScreeningPair {
        index: usize,
        pair: Pair,
    },
    /// Instruction counts from callgrind, when enabled.
    Instructions {
        index: usize,
        baseline: u64,
        candidate: u64,
    },
    /// A fresh confirmation of candidate `index` began.
    ConfirmationStarted {
        index: usize,
    },
    /// A confirmation cut short by an interruption: its runs are not reused (its trees are gone
    /// and a confirmation is one uninterrupted session), but they are accounted for here, with
    /// the folder that holds their logs.
    ConfirmationDiscarded {
        index: usize,
        run_dirs: Vec<String>,
    },
    Confirmation {
        index: usize,
        run_dir: String,
        verdict: crate::evidence::result::Verdict,
        tier: crate::stats::Tier,
        /// The confirmation's median speedup on the (first) training scenario, when measured.
        #[serde(default)]
        median: Option<f64>,
    },
    /// A fleet job for the screening or confirmation of candidate `index` was submitted
    /// (docs/design.md §2.8), journaled before the coordinator waits on it, so a resumed run
    /// reattaches to it instead of submitting it again. `folder`: the attempt's folder in the
    /// shared folder. `stage`: confirm in journals written before screening ran as jobs.
    JobSubmitted {
        index: usize,
        #[serde(default = "confirm_stage")]
        stage: JobStage,
        job_id: u64,
        attempt: u32,
        folder: String,
    },
    /// That job is over for the campaign: its result was signed, or it left none (`counted`:
    /// it counts against `fleet.max_requeues`; a job the campaign cancelled on a stop does not).
    JobEnded {
        index: usize,
        #[serde(default = "confirm_stage")]
        stage: JobStage,
        job_id: u64,
        counted: bool,
        reason: String,
    },
    /// Candidate `index` was screened by fleet job `job_id` on `node` (attempt `attempt`): its
    /// entries that follow came from that job's checked result, kept in `run_dir` (relative to
    /// the run directory) with the node's machine as it reported it.
    ScreeningJob {
        index: usize,
        job_id: u64,
        node: String,
        attempt: u32,
        machine: Option<crate::environment::Machine>,
        run_dir: String,
    },
    /// The search ended before its last round: `reason` says which limit (`search.stop_after`
    /// or a budget) ended it after round `round`. A resumed run goes on to confirmation.
    SearchEnded {
        round: usize,
        reason: String,
    },
    Finished {
        seconds: f64,
    },
    /// Stopped by Ctrl-C or a stop signal at this time (UTC); a resume goes on from here.
    Interrupted {
        at: String,
    },
}

/// An open journal, appending.
pub struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Opens (creating if needed) the journal of `run_dir` for appending.
    /// A last line cut short by a crash (no newline) is cut off first, so the next entry starts
    /// on a line of its own instead of being glued to the torn one.
    pub fn open(run_dir: &Path) -> io::Result<Journal> {
        let path = run_dir.join(JOURNAL);
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)?;
        let bytes = std::fs::read(&path)?;
        if bytes.last().is_some_and(|b| *b != b'\n') {
            let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            file.set_len(keep as u64)?;
            file.sync_data()?;
        }
        Ok(Journal { path, file })
    }

    /// Appends one entry and makes it durable before returning.
    pub fn append(&mut self, entry: &Entry) -> io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Every complete entry of a journal, in order. A last line without its newline (a write cut
/// short) is dropped; a malformed line elsewhere is an error naming its line number.
pub fn read(run_dir: &Path) -> io::Result<Vec<Entry>> {
    let path = run_dir.join(JOURNAL);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut entries = Vec::new();
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        number += 1;
        if !line.ends_with('\n') {
            break;
        }
        let entry = serde_json::from_str(line.trim_end()).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}:{number}: not a journal entry: {e}", path.display()),
            )
        })?;
        entries.push(entry);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_round_trip_and_a_torn_last_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path()).unwrap();
        let a = Entry::Status {
            index: 1,
            status: Status::BuildFailed,
            reason: "exit 2".into(),
        };
        let b = Entry::Finished { seconds: 1.5 };
        j.append(&a).unwrap();
        j.append(&b).unwrap();
        drop(j);
        assert_eq!(read(dir.path()).unwrap(), vec![a.clone(), b.clone()]);
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(JOURNAL))
            .unwrap();
        f.write_all(b"{\"entry\":\"finis").unwrap();
        assert_eq!(read(dir.path()).unwrap(), vec![a, b]);
    }

    #[test]
    fn a_job_journaled_before_screening_ran_as_jobs_reads_as_a_confirmation() {
        let submitted =
            r#"{"entry":"job_submitted","index":1,"job_id":5,"attempt":1,"folder":"f"}"#;
        let ended = r#"{"entry":"job_ended","index":1,"job_id":5,"counted":false,"reason":"r"}"#;
        let submitted: Entry = serde_json::from_str(submitted).unwrap();
        let ended: Entry = serde_json::from_str(ended).unwrap();
        assert!(
            matches!(
                submitted,
                Entry::JobSubmitted {
                    stage: JobStage::Confirm,
                    ..
                }
            ),
            "{submitted:?}"
        );
        assert!(
            matches!(
                ended,
                Entry::JobEnded {
                    stage: JobStage::Confirm,
                    ..
                }
            ),
            "{ended:?}"
        );
        let screening = Entry::JobEnded {
            index: 1,
            stage: JobStage::Screening,
            job_id: 6,
            counted: true,
            reason: "r".into(),
        };
        let line = serde_json::to_string(&screening).unwrap();
        assert!(line.contains(r#""stage":"screening""#), "{line}");
        assert_eq!(serde_json::from_str::<Entry>(&line).unwrap(), screening);
    }

    #[test]
    fn a_corrupt_line_in_the_middle_is_an_error_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(JOURNAL),
            "garbage\n{\"entry\":\"finished\",\"seconds\":1}\n",
        )
        .unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("journal.jsonl:1"), "{err}");
    }

    #[test]
    fn a_torn_last_line_is_cut_off_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::open(dir.path()).unwrap();
        journal.append(&Entry::Finished { seconds: 1.0 }).unwrap();
        drop(journal);
        let path = dir.path().join(JOURNAL);
        let mut torn = std::fs::read(&path).unwrap();
        torn.extend_from_slice(b"{\"entry\":\"screening_pa");
        std::fs::write(&path, &torn).unwrap();
        let mut journal = Journal::open(dir.path()).unwrap();
        journal.append(&Entry::Finished { seconds: 2.0 }).unwrap();
        let entries = read(dir.path()).unwrap();
        assert_eq!(
            entries,
            vec![
                Entry::Finished { seconds: 1.0 },
                Entry::Finished { seconds: 2.0 }
            ]
        );
    }
}
