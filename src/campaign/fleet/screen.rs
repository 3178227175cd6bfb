//! A candidate's screening that ran as a fleet job (docs/design.md §2.8), on the coordinator's
//! side: the request it sends, and the check of what comes back before the campaign uses it.
//!
//! A job's run folder is untrusted input. Its journal is accepted only when it is the screening
//! that was asked for (this evo, the pinned baseline, the search seed, the one candidate) and
//! holds only what a screening job writes, in the order it writes it: the check's status, then
//! for a checked candidate the warmups, the pairs and counts, and the screening's status. Every
//! pair is re-derived: its index and order follow the plan, both runs succeeded, and its ratio
//! follows from the two wall times; a `screened` candidate has exactly `search.pairs` of them, and
//! the coordinator writes its median itself. Screening only ranks: the candidates it puts on top
//! are confirmed from scratch by jobs of their own, which measure everything again.

use std::path::{Path, PathBuf};

use super::screen_job::{ScreenRequest, ScreeningOrder};
use super::{Active, JobResult, move_folder};
use crate::campaign::journal::{self, Entry};
use crate::campaign::screen::screened_reason;
use crate::campaign::{CampaignRun, CandidatePatch};
use crate::evidence::summary::Status;
use crate::failure::with_causes;
use crate::fleet::job::JobFolder;
use crate::fleet::slurm::JobInfo;
use crate::measure::record::{Order, Pair};
use crate::measure::schedule::PairOrder;
use crate::pipeline::PipelineError;
use crate::spec::campaign::Counter;
use crate::stats::{self, Ratios, StatsError};

/// Why a screening job's journal is refused: what in it is not the screening asked for.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum Refused {
    #[error("it ran evo {0}")]
    OtherEvo(String),
    #[error(
        "it screened against {sha} with seed {seed}, the campaign pinned {want_sha} with seed \
         {want_seed}"
    )]
    OtherBaseline {
        sha: String,
        seed: u64,
        want_sha: String,
        want_seed: u64,
    },
    #[error("its journal does not begin with the run's start")]
    NoStart,
    #[error("its journal is not of candidate {0}")]
    OtherCandidate(usize),
    /// The entry, as its journal line.
    #[error("it holds an entry no screening job writes: {0}")]
    Foreign(String),
    #[error("it ends before the candidate has a status")]
    NoStatus,
    #[error("the candidate's first entry is not its checks' status")]
    NoChecks,
    #[error("it ends with the status `{0}`")]
    EndsWith(&'static str),
    #[error("it does not end with the screening's status after `checked`")]
    NoScreeningStatus,
    #[error("an entry out of a screening's order: {0}")]
    OutOfOrder(String),
    #[error(
        "it was screened on {warmups} warmup(s), {pairs} pair(s) and {counts} count(s); the \
         campaign asks for 1, {want_pairs} and {want_counts}"
    )]
    Counts {
        warmups: usize,
        pairs: usize,
        counts: usize,
        want_pairs: usize,
        want_counts: usize,
    },
    #[error(transparent)]
    Ratios(#[from] StatsError),
    #[error("its screening ends with the status `{status}` after {pairs} pair(s)")]
    EndsAfter { status: &'static str, pairs: usize },
    #[error("pair {i} is recorded as pair {index} in order {order:?}, the plan says {planned:?}")]
    PairPlace {
        i: usize,
        index: usize,
        order: Order,
        planned: Order,
    },
    #[error("pair {0} holds a failed run")]
    FailedRun(usize),
    #[error("pair {i} says ratio {said}, its wall times {b} s / {c} s give {ratio}")]
    Ratio {
        i: usize,
        said: f64,
        b: f64,
        c: f64,
        ratio: f64,
    },
}

/// Why a job's output folder holds no one run folder to collect.
#[derive(Debug, thiserror::Error)]
pub(super) enum NoRunFolder {
    #[error("cannot list {}: {source}", out.display())]
    List {
        out: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is empty", out.display())]
    Empty { out: PathBuf },
    #[error("{} holds {count} entries where one run folder belongs", out.display())]
    NotOne { out: PathBuf, count: usize },
}

/// What the coordinator expects of a screening job's journal.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Wanted<'a> {
    pub index: usize,
    pub baseline_sha: &'a str,
    pub search_seed: u64,
    /// `search.pairs`.
    pub pairs: usize,
    /// `search.counters` holds callgrind.
    pub counted: bool,
}

/// A screening journal that passed: the candidate's entries to journal here, in order, and the
/// median of its pairs when it was screened.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Checked {
    pub entries: Vec<Entry>,
    pub median: Option<f64>,
}

/// Checks a screening job's journal `entries` against what was asked for.
pub(super) fn check_screening(entries: &[Entry], want: &Wanted) -> Result<Checked, Refused> {
    let mut rest = entries.iter();
    match rest.next() {
        Some(Entry::Started {
            baseline_sha,
            search_seed,
            evo_version,
            ..
        }) => {
            if evo_version != env!("CARGO_PKG_VERSION") {
                return Err(Refused::OtherEvo(evo_version.clone()));
            }
            if baseline_sha != want.baseline_sha || *search_seed != want.search_seed {
                return Err(Refused::OtherBaseline {
                    sha: baseline_sha.clone(),
                    seed: *search_seed,
                    want_sha: want.baseline_sha.to_string(),
                    want_seed: want.search_seed,
                });
            }
        }
        _ => return Err(Refused::NoStart),
    }
    match rest.next() {
        Some(Entry::Candidate { index, .. }) if *index == want.index => {}
        _ => return Err(Refused::OtherCandidate(want.index)),
    }
    let mut kept = Vec::new();
    for entry in rest {
        match entry {
            Entry::BaselineReady { .. } => {}
            Entry::Status { index, .. }
            | Entry::Warmups { index, .. }
            | Entry::ScreeningPair { index, .. }
            | Entry::Instructions { index, .. }
                if *index == want.index =>
            {
                kept.push(entry.clone());
            }
            other => {
                let line = serde_json::to_string(other).unwrap_or_default();
                return Err(Refused::Foreign(line));
            }
        }
    }
    let median = check_sequence(&kept, want)?;
    Ok(Checked {
        entries: kept,
        median,
    })
}

/// The candidate's entries follow a screening job's steps; the median of the pairs of a screened
/// candidate.
fn check_sequence(kept: &[Entry], want: &Wanted) -> Result<Option<f64>, Refused> {
    let status = |e: &Entry| match e {
        Entry::Status { status, .. } => Some(*status),
        _ => None,
    };
    let (first, last) = match (kept.first(), kept.last()) {
        (Some(f), Some(l)) => (status(f), status(l)),
        _ => return Err(Refused::NoStatus),
    };
    let Some(first) = first else {
        return Err(Refused::NoChecks);
    };
    if kept.len() == 1 {
        return match first.ends_search_checks() {
            true => Ok(None),
            false => Err(Refused::EndsWith(first.as_str())),
        };
    }
    let Some(last) = last.filter(|_| first == Status::Checked) else {
        return Err(Refused::NoScreeningStatus);
    };
    let middle = &kept[1..kept.len() - 1];
    let mut pairs = Vec::new();
    let (mut warmups, mut instructions) = (0, 0);
    for entry in middle {
        match entry {
            Entry::Warmups { .. } if pairs.is_empty() && warmups == 0 => warmups += 1,
            Entry::ScreeningPair { pair, .. } if instructions == 0 => {
                check_pair(pair, pairs.len())?;
                pairs.push(pair.ratio);
            }
            Entry::Instructions { .. } if want.counted && instructions == 0 => instructions += 1,
            other => {
                let line = serde_json::to_string(other).unwrap_or_default();
                return Err(Refused::OutOfOrder(line));
            }
        }
    }
    match last {
        Status::Screened => {
            if warmups != 1
                || pairs.len() != want.pairs
                || instructions != usize::from(want.counted)
            {
                return Err(Refused::Counts {
                    warmups,
                    pairs: pairs.len(),
                    counts: instructions,
                    want_pairs: want.pairs,
                    want_counts: usize::from(want.counted),
                });
            }
            let ratios = Ratios::new(pairs)?;
            Ok(Some(stats::median(&ratios)))
        }
        Status::Rejected | Status::TimedOut if instructions == 0 && pairs.len() <= want.pairs => {
            Ok(None)
        }
        other => Err(Refused::EndsAfter {
            status: other.as_str(),
            pairs: pairs.len(),
        }),
    }
}

/// Pair `i` of a screening: planned order, two successful runs, and its ratio from their times.
fn check_pair(pair: &Pair, i: usize) -> Result<(), Refused> {
    let order = PairOrder::Alternating(Order::CandidateFirst).order_of(i);
    if pair.index != i || pair.order != order {
        return Err(Refused::PairPlace {
            i,
            index: pair.index,
            order: pair.order,
            planned: order,
        });
    }
    if !pair.baseline.succeeded() || !pair.candidate.succeeded() {
        return Err(Refused::FailedRun(i));
    }
    let (b, c) = (pair.baseline.wall_s, pair.candidate.wall_s);
    let valid = |t: f64| t.is_finite() && t > 0.0;
    let ratio = b / c;
    if !valid(b) || !valid(c) || (pair.ratio - ratio).abs() > 1e-9 * ratio {
        return Err(Refused::Ratio {
            i,
            said: pair.ratio,
            b,
            c,
            ratio,
        });
    }
    Ok(())
}

/// The one run folder in a job's output folder `out`.
fn one_run_folder(out: &Path) -> Result<PathBuf, NoRunFolder> {
    let entries: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|source| NoRunFolder::List {
            out: out.to_path_buf(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    match entries.as_slice() {
        [] => Err(NoRunFolder::Empty {
            out: out.to_path_buf(),
        }),
        [one] if one.is_dir() => Ok(one.clone()),
        _ => Err(NoRunFolder::NotOne {
            out: out.to_path_buf(),
            count: entries.len(),
        }),
    }
}

impl CampaignRun<'_> {
    /// What candidate `index`'s screening job in `folder` runs: the campaign's plan and the
    /// candidate's patch, writing into the folder's `out`, with the pinned baseline and the
    /// search's seed. Rebuilt from the journal whenever needed, never read back from the shared
    /// folder.
    pub(super) fn screening_request(
        &self,
        index: usize,
        folder: &JobFolder,
    ) -> Result<ScreenRequest, PipelineError> {
        let CandidatePatch { file, bytes } = self.candidate_patch(index)?;
        let mut plan = self.plan.confirm_plan(file, bytes);
        plan.campaign.output_dir = folder.out();
        let name = (self.candidate_name(index)).map_or_else(String::new, |c| c.name);
        let order = ScreeningOrder {
            index,
            name,
            search_seed: self.search_seed,
            baseline_sha: self.pinned.sha.clone(),
        };
        Ok(ScreenRequest::new(plan, self.opts.sandbox, order))
    }

    /// Collects a screening job that ended: checks its journal and journals its entries here.
    /// The run folder stays in the shared folder until they are journaled, so a coordinator
    /// killed meanwhile collects it again on resume (skipping what it already journaled).
    pub(super) fn collect_screening(
        &mut self,
        a: &Active,
        info: &JobInfo,
    ) -> Result<JobResult, PipelineError> {
        let (job, state) = (a.named(), info.state.described());
        let missing = |why: String| Ok(JobResult::Missing(format!("{job} ended {state}: {why}")));
        let folder = match one_run_folder(&a.folder.out()) {
            Ok(folder) => folder,
            Err(why) => return missing(format!("the job left no result: {}", with_causes(&why))),
        };
        let entries = match journal::read(&folder) {
            Ok(entries) => entries,
            Err(e) => return missing(format!("its journal is refused: {}", with_causes(&e))),
        };
        let search = &self.plan.spec.search;
        let want = Wanted {
            index: a.index,
            baseline_sha: &self.pinned.sha,
            search_seed: self.search_seed,
            pairs: search.pairs.get(),
            counted: search.counters.contains(&Counter::Callgrind),
        };
        let checked = match check_screening(&entries, &want) {
            Ok(checked) => checked,
            Err(why) => {
                let error = std::fs::read_to_string(folder.join("error.txt")).unwrap_or_default();
                return match error.lines().next() {
                    Some(line) => missing(format!("its screening stopped: {line}")),
                    None => missing(format!("its result is refused: {}", with_causes(&why))),
                };
            }
        };
        let sent = self.candidate_patch(a.index)?.bytes;
        let patch = std::fs::read(folder.join(format!("candidate_{}.patch", a.index)));
        if patch.ok().as_ref() != Some(&sent) {
            return missing(
                "its result is refused: it screened another patch than the one sent".into(),
            );
        }
        let machine = std::fs::read(folder.join(super::screen_job::MACHINE_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        // Named by the coordinator, never by the node: two jobs that started in the same second
        // name their run folders alike, and a node's names are untrusted input.
        let dest = (self.run_dir.path.join("screenings"))
            .join(format!("candidate_{}-attempt_{}", a.index, a.attempt));
        // Journaled once per job: a second collection of the same job (the coordinator was
        // killed while journaling its entries) goes on after what the first one journaled.
        let entries = journal::read(&self.run_dir.path)
            .map_err(|e| PipelineError::io("cannot read the journal", e))?;
        let again = (entries.iter())
            .any(|e| matches!(e, Entry::ScreeningJob { job_id, .. } if *job_id == a.job.0));
        if !again {
            self.record(Entry::ScreeningJob {
                index: a.index,
                job_id: a.job.0,
                node: a.node.clone(),
                attempt: a.attempt,
                machine,
                run_dir: self.run_dir.relative(&dest),
            })?;
        }
        self.take_screening(a, checked)?;
        let moved = std::fs::create_dir_all(self.run_dir.path.join("screenings"))
            .and_then(|()| move_folder(&folder, &dest));
        moved.map_err(|e| PipelineError::io("cannot move the screening job's run folder", e))?;
        let reason = format!("screening checked ({})", self.run_dir.relative(&dest));
        Ok(JobResult::Kept(reason))
    }

    /// Journals the checked entries of job `a` here, after its `screening_job` entry (which drops
    /// whatever was measured before), skipping those an earlier collection of the same job
    /// journaled before the coordinator was killed; a `screened` status gets the coordinator's
    /// own reason, from its recomputed median.
    fn take_screening(&mut self, a: &Active, checked: Checked) -> Result<(), PipelineError> {
        let index = a.index;
        for entry in checked.entries {
            let Some(c) = self.state.candidate_mut(index) else {
                return Err(PipelineError::internal(format!(
                    "candidate {index} is unknown"
                )));
            };
            let known = match &entry {
                Entry::Status { status, .. } => *status == Status::Checked && c.status == *status,
                Entry::Warmups { .. } => !c.warmups.is_empty(),
                Entry::ScreeningPair { pair, .. } => pair.index < c.pairs.len(),
                Entry::Instructions { .. } => c.instructions.is_some(),
                _ => false,
            };
            match entry {
                _ if known => {}
                Entry::Status { status, reason, .. } => {
                    let reason = match (status, checked.median) {
                        (Status::Screened, Some(median)) => format!(
                            "{} ({})",
                            screened_reason(median, self.plan.spec.search.pairs.get()),
                            a.named()
                        ),
                        _ => reason,
                    };
                    self.set_status(index, status, reason)?;
                }
                other => self.record(other)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "screen_tests.rs"]
mod tests;
