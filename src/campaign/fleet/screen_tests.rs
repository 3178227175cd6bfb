//! Tests of the coordinator's check of a screening job's journal: an honest one passes, and
//! each way a node could lie about it is refused.

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
    let err = check_screening(&lying, &want()).unwrap_err().to_string();
    assert!(err.contains("pair 1 says ratio 1.6"), "{err}");
}

#[test]
fn a_screening_with_a_failed_run_or_a_reordered_pair_is_refused() {
    let mut failed = journal();
    if let Entry::ScreeningPair { pair, .. } = &mut failed[5] {
        pair.candidate.status = ExitStatus::Exited { code: 1 };
    }
    let err = check_screening(&failed, &want()).unwrap_err().to_string();
    assert!(err.contains("pair 0 holds a failed run"), "{err}");
    let mut reordered = journal();
    reordered.swap(5, 6);
    let err = check_screening(&reordered, &want())
        .unwrap_err()
        .to_string();
    assert!(err.contains("pair 0 is recorded as pair 1"), "{err}");
}

#[test]
fn a_screening_on_fewer_pairs_or_another_seed_or_baseline_is_refused() {
    let mut short = journal();
    short.remove(7);
    let err = check_screening(&short, &want()).unwrap_err().to_string();
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
    let err = check_screening(&confirmed, &want())
        .unwrap_err()
        .to_string();
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
