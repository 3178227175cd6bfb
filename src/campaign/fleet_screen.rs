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

use super::fleet::{Active, JobResult, move_folder};
use super::journal::{self, Entry};
use super::screen::screened_reason;
use super::{CampaignRun, CandidatePatch};
use crate::confirm::ConfirmRequest;
use crate::confirm::request::ScreeningOrder;
use crate::evidence::summary::Status;
use crate::fleet::job::JobFolder;
use crate::fleet::slurm::JobInfo;
use crate::measure::record::{Order, Pair};
use crate::measure::schedule::PairOrder;
use crate::pipeline::PipelineError;
use crate::spec::campaign::Counter;
use crate::stats::{self, Ratios};

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

/// The statuses a candidate's checks end with when it is not screened (a failed check, or
/// timed programs identical to the baseline's).
const CHECK_FAILURES: &[Status] = &[
    Status::Refused,
    Status::DidNotApply,
    Status::BuildFailed,
    Status::TestsFailed,
    Status::DifferentialMismatch,
    Status::TimedOut,
    // The timed programs are the baseline's: nothing to screen (`pipeline::unchanged`).
    Status::NoChange,
];

/// Checks a screening job's journal `entries` against what was asked for.
pub(super) fn check_screening(entries: &[Entry], want: &Wanted) -> Result<Checked, String> {
    let mut rest = entries.iter();
    match rest.next() {
        Some(Entry::Started {
            baseline_sha,
            search_seed,
            evo_version,
            ..
        }) => {
            if evo_version != env!("CARGO_PKG_VERSION") {
                return Err(format!("it ran evo {evo_version}"));
            }
            if baseline_sha != want.baseline_sha || *search_seed != want.search_seed {
                return Err(format!(
                    "it screened against {baseline_sha} with seed {search_seed}, the campaign \
                     pinned {} with seed {}",
                    want.baseline_sha, want.search_seed
                ));
            }
        }
        _ => return Err("its journal does not begin with the run's start".into()),
    }
    match rest.next() {
        Some(Entry::Candidate { index, .. }) if *index == want.index => {}
        _ => return Err(format!("its journal is not of candidate {}", want.index)),
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
                return Err(format!("it holds an entry no screening job writes: {line}"));
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
fn check_sequence(kept: &[Entry], want: &Wanted) -> Result<Option<f64>, String> {
    let status = |e: &Entry| match e {
        Entry::Status { status, .. } => Some(*status),
        _ => None,
    };
    let (first, last) = match (kept.first(), kept.last()) {
        (Some(f), Some(l)) => (status(f), status(l)),
        _ => return Err("it ends before the candidate has a status".into()),
    };
    let Some(first) = first else {
        return Err("the candidate's first entry is not its checks' status".into());
    };
    if kept.len() == 1 {
        return match CHECK_FAILURES.contains(&first) {
            true => Ok(None),
            false => Err(format!("it ends with the status `{}`", first.as_str())),
        };
    }
    let Some(last) = last.filter(|_| first == Status::Checked) else {
        return Err("it does not end with the screening's status after `checked`".into());
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
                return Err(format!("an entry out of a screening's order: {line}"));
            }
        }
    }
    match last {
        Status::Screened => {
            if warmups != 1
                || pairs.len() != want.pairs
                || instructions != usize::from(want.counted)
            {
                return Err(format!(
                    "it was screened on {} warmup(s), {} pair(s) and {instructions} count(s); \
                     the campaign asks for 1, {} and {}",
                    warmups,
                    pairs.len(),
                    want.pairs,
                    usize::from(want.counted)
                ));
            }
            let ratios = Ratios::new(pairs).map_err(|e| e.to_string())?;
            Ok(Some(stats::median(&ratios)))
        }
        Status::Rejected | Status::TimedOut if instructions == 0 && pairs.len() <= want.pairs => {
            Ok(None)
        }
        other => Err(format!(
            "its screening ends with the status `{}` after {} pair(s)",
            other.as_str(),
            pairs.len()
        )),
    }
}

/// Pair `i` of a screening: planned order, two successful runs, and its ratio from their times.
fn check_pair(pair: &Pair, i: usize) -> Result<(), String> {
    let order = PairOrder::Alternating(Order::CandidateFirst).order_of(i);
    if pair.index != i || pair.order != order {
        return Err(format!(
            "pair {i} is recorded as pair {} in order {:?}, the plan says {order:?}",
            pair.index, pair.order
        ));
    }
    if !pair.baseline.succeeded() || !pair.candidate.succeeded() {
        return Err(format!("pair {i} holds a failed run"));
    }
    let (b, c) = (pair.baseline.wall_s, pair.candidate.wall_s);
    let valid = |t: f64| t.is_finite() && t > 0.0;
    let ratio = b / c;
    if !valid(b) || !valid(c) || (pair.ratio - ratio).abs() > 1e-9 * ratio {
        return Err(format!(
            "pair {i} says ratio {}, its wall times {b} s / {c} s give {ratio}",
            pair.ratio
        ));
    }
    Ok(())
}

/// The one run folder in a job's output folder `out`.
fn one_run_folder(out: &Path) -> Result<PathBuf, String> {
    let entries: Vec<PathBuf> = std::fs::read_dir(out)
        .map_err(|e| format!("cannot list {}: {e}", out.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    match entries.as_slice() {
        [] => Err(format!("{} is empty", out.display())),
        [one] if one.is_dir() => Ok(one.clone()),
        _ => Err(format!(
            "{} holds {} entries where one run folder belongs",
            out.display(),
            entries.len()
        )),
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
    ) -> Result<ConfirmRequest, PipelineError> {
        let CandidatePatch { file, bytes } = self.candidate_patch(index)?;
        let mut plan = self.plan.confirm_plan(file, bytes);
        plan.campaign.output_dir = folder.out();
        let name = (self.candidate_ref(index)).map_or_else(String::new, |c| c.name);
        let mut request = ConfirmRequest::new(plan, None, self.opts.sandbox);
        request.screening = Some(ScreeningOrder {
            index,
            name,
            search_seed: self.search_seed,
            baseline_sha: self.pinned.sha.clone(),
        });
        Ok(request)
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
            Err(why) => return missing(format!("the job left no result: {why}")),
        };
        let entries = match journal::read(&folder) {
            Ok(entries) => entries,
            Err(e) => return missing(format!("its journal is refused: {e}")),
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
                    None => missing(format!("its result is refused: {why}")),
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
                return Err(PipelineError::Internal(format!(
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
mod tests {
    use super::*;
    use crate::evidence::summary::Source;
    use crate::measure::record::{Arm, ExitStatus, Purpose, RunRecord, WarmupRun};

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn run(wall_s: f64) -> RunRecord {
        RunRecord::exited_ok(wall_s)
    }

    fn want() -> Wanted<'static> {
        Wanted {
            index: 2,
            baseline_sha: SHA,
            search_seed: 7,
            pairs: 3,
            counted: false,
        }
    }

    fn status(status: Status) -> Entry {
        Entry::Status {
            index: 2,
            status,
            reason: "the node's words".into(),
        }
    }

    /// The journal a screening job writes for candidate 2, screened on three pairs with
    /// candidate times 0.8, 0.5 and 0.9 s against a 1 s baseline.
    fn journal() -> Vec<Entry> {
        let order = PairOrder::Alternating(Order::CandidateFirst);
        let pairs = [0.8, 0.5, 0.9]
            .iter()
            .enumerate()
            .map(|(i, c)| Entry::ScreeningPair {
                index: 2,
                pair: Pair::new(i, order.order_of(i), run(1.0), run(*c)),
            });
        let warmup = |arm| WarmupRun {
            arm,
            purpose: Purpose::Warmup,
            run: run(1.0),
            seed: None,
        };
        let head = vec![
            Entry::Started {
                run_id: "r".into(),
                campaign_file: "c.json".into(),
                baseline_sha: SHA.into(),
                search_seed: 7,
                evo_version: env!("CARGO_PKG_VERSION").into(),
            },
            Entry::Candidate {
                index: 2,
                name: "memo".into(),
                source: Source::Patch,
                patch_file: "candidate_2.patch".into(),
                explanation: None,
                round: 1,
                parent: None,
                search_s: 0.0,
                cost: None,
            },
            Entry::BaselineReady { build_s: 1.0 },
            status(Status::Checked),
            Entry::Warmups {
                index: 2,
                runs: vec![warmup(Arm::Candidate), warmup(Arm::Baseline)],
            },
        ];
        head.into_iter()
            .chain(pairs)
            .chain([status(Status::Screened)])
            .collect()
    }

    #[test]
    fn an_honest_screening_passes_with_the_median_recomputed_from_its_pairs() {
        let checked = check_screening(&journal(), &want()).unwrap();
        // Ratios 1.25, 2, 1.111…: the median is 1.25.
        assert_eq!(checked.median, Some(1.25));
        // Everything of the candidate but the start, the candidate and the baseline's readiness.
        assert_eq!(checked.entries, journal()[3..].to_vec());
    }

    #[test]
    fn a_screening_that_lies_about_a_pairs_ratio_is_refused() {
        let mut lying = journal();
        if let Entry::ScreeningPair { pair, .. } = &mut lying[6] {
            pair.ratio = 1.6;
        }
        let err = check_screening(&lying, &want()).unwrap_err();
        assert!(err.contains("pair 1 says ratio 1.6"), "{err}");
    }

    #[test]
    fn a_screening_with_a_failed_run_or_a_reordered_pair_is_refused() {
        let mut failed = journal();
        if let Entry::ScreeningPair { pair, .. } = &mut failed[5] {
            pair.candidate.status = ExitStatus::Exited { code: 1 };
        }
        let err = check_screening(&failed, &want()).unwrap_err();
        assert!(err.contains("pair 0 holds a failed run"), "{err}");
        let mut reordered = journal();
        reordered.swap(5, 6);
        let err = check_screening(&reordered, &want()).unwrap_err();
        assert!(err.contains("pair 0 is recorded as pair 1"), "{err}");
    }

    #[test]
    fn a_screening_on_fewer_pairs_or_another_seed_or_baseline_is_refused() {
        let mut short = journal();
        short.remove(7);
        let err = check_screening(&short, &want()).unwrap_err();
        assert!(err.contains("2 pair(s)"), "{err}");
        let other_seed = Wanted {
            search_seed: 8,
            ..want()
        };
        assert!(check_screening(&journal(), &other_seed).is_err());
        let other_base = Wanted {
            baseline_sha: "feed",
            ..want()
        };
        assert!(check_screening(&journal(), &other_base).is_err());
        let counted = Wanted {
            counted: true,
            ..want()
        };
        assert!(check_screening(&journal(), &counted).is_err());
    }

    #[test]
    fn entries_a_screening_job_never_writes_are_refused() {
        let mut other = journal();
        other.insert(
            5,
            Entry::ScreeningPair {
                index: 3,
                pair: Pair::new(0, Order::CandidateFirst, run(1.0), run(0.5)),
            },
        );
        assert!(check_screening(&other, &want()).is_err());
        let mut confirmed = journal();
        confirmed.push(Entry::Confirmation {
            index: 2,
            run_dir: "x".into(),
            verdict: crate::evidence::result::Verdict::Accepted,
            tier: crate::stats::Tier::Tested,
            median: Some(2.0),
        });
        let err = check_screening(&confirmed, &want()).unwrap_err();
        assert!(err.contains("no screening job writes"), "{err}");
        let mut confirmed_status = journal();
        *confirmed_status.last_mut().unwrap() = status(Status::Confirmed);
        assert!(check_screening(&confirmed_status, &want()).is_err());
    }

    #[test]
    fn a_failed_check_passes_alone_and_an_unfinished_screening_does_not() {
        let mut failed = journal()[..3].to_vec();
        failed.push(status(Status::BuildFailed));
        let checked = check_screening(&failed, &want()).unwrap();
        assert_eq!((checked.entries.len(), checked.median), (1, None));
        // A candidate whose timed programs are the baseline's ends its checks unscreened too.
        let mut unchanged = journal()[..3].to_vec();
        unchanged.push(status(Status::NoChange));
        let checked = check_screening(&unchanged, &want()).unwrap();
        assert_eq!((checked.entries.len(), checked.median), (1, None));
        let mut failed_with_pairs = journal();
        failed_with_pairs[3] = status(Status::BuildFailed);
        assert!(check_screening(&failed_with_pairs, &want()).is_err());
        let unfinished = journal()[..8].to_vec();
        assert!(check_screening(&unfinished, &want()).is_err());
        let only_checked = journal()[..4].to_vec();
        assert!(check_screening(&only_checked, &want()).is_err());
    }
}
