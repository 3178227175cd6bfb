//! A workload that declares its timed commands single-threaded (`single_threaded`) holds every
//! timed run to one CPU (docs/design.md §3.12.3). A candidate that spreads its work over a second
//! core can be faster in wall time with every instruction still executed, where the campaign
//! promised one CPU (and the instruction counts, which add up every thread, would say nothing):
//! the receipt already records each run's user and system CPU time, so the gate needs no new
//! measurement.
//!
//! A run's CPU share is `(user + sys) / wall`. One thread can never exceed 1 (the process waits
//! while it is preempted, which only lowers the share); two busy threads approach 2. The median
//! over a scenario's timed runs (pairs and A/A pairs) must not exceed [`CPU_LIMIT`].

use super::super::result::ScenarioResult;
use crate::measure::record::RunRecord;

/// The most CPU time per second of wall time a single-threaded candidate's median may show (and
/// at most this much above the baseline's): one CPU, with 1% for rounding and the sandbox's own
/// processes. A wall-time gain from a second core is about the share above 1 (a run twice as
/// busy takes half the time), so a gain of the default 1% minimum effect from parallelism shows
/// as a share above this. Measured: the C kernels' runs 0.999 in both arms (2026-12-04).
pub const CPU_LIMIT: f64 = 1.01;

/// Above this median share, the baseline itself uses more than one CPU: the workload's
/// `single_threaded` declaration is wrong.
pub const BASELINE_LIMIT: f64 = 1.05;

/// Which arm used more than one CPU, and the reason in words.
#[derive(Debug, Clone, PartialEq)]
pub enum Excess {
    /// The candidate's runs did (the baseline's did not): it is rejected.
    Candidate(String),
    /// The baseline's runs did too: the workload's declaration is wrong, and nothing can be
    /// concluded about the candidate from it.
    Baseline(String),
}

fn share(run: &RunRecord) -> Option<f64> {
    (run.wall_s > 0.0).then(|| (run.rusage.user_s + run.rusage.sys_s) / run.wall_s)
}

/// The median of `values`, `None` when there are none.
fn median(values: Vec<f64>) -> Option<f64> {
    (!values.is_empty()).then(|| crate::stats::plain_median(&values))
}

/// Whether the timed runs of `s` used more than one CPU, judged on the median CPU share of each
/// arm's runs (the candidate's from its pairs, the baseline's from its pairs and A/A pairs).
pub fn more_than_one_cpu(s: &ScenarioResult) -> Option<Excess> {
    let candidate = median(s.pairs.iter().filter_map(|p| share(&p.candidate)).collect())?;
    let baseline = median(
        (s.pairs.iter().chain(&s.aa_pairs))
            .filter_map(|p| share(&p.baseline))
            .collect(),
    );
    if baseline.is_some_and(|b| b > BASELINE_LIMIT) {
        return Some(Excess::Baseline(format!(
            "scenario `{}`: the workload declares its timed commands single-threaded, but the \
             baseline's runs used {:.2} CPU seconds per second of wall time (median; at most \
             {BASELINE_LIMIT} for one CPU): the declaration is wrong, so nothing is concluded \
             from it",
            s.name,
            baseline.unwrap_or_default()
        )));
    }
    let over_baseline = baseline.is_none_or(|b| candidate > b + (CPU_LIMIT - 1.0));
    (candidate > CPU_LIMIT && over_baseline).then(|| {
        Excess::Candidate(format!(
            "scenario `{}` used more than one CPU: the candidate's timed runs used {candidate:.2} \
             CPU seconds per second of wall time (median; the baseline's {}), where the workload \
             declares its timed commands single-threaded (at most {CPU_LIMIT}): a gain from a \
             second core is not one the workload measures",
            s.name,
            baseline.map_or("unknown".to_string(), |b| format!("{b:.2}"))
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::{Order, Pair};

    fn run(wall: f64, cpu: f64) -> RunRecord {
        let mut r = RunRecord::exited_ok(wall);
        r.rusage.user_s = cpu * 0.9;
        r.rusage.sys_s = cpu * 0.1;
        r
    }

    fn scenario(base_cpu: f64, cand_cpu: f64) -> ScenarioResult {
        let mut s = ScenarioResult::unmeasured("t", crate::spec::workload::Role::Training);
        s.pairs = (0..9)
            .map(|index| Pair {
                index,
                order: Order::CandidateFirst,
                baseline: run(1.0, base_cpu),
                candidate: run(0.6, cand_cpu * 0.6),
                ratio: 1.0 / 0.6,
                seed: None,
            })
            .collect();
        s
    }

    #[test]
    fn one_thread_passes_and_a_second_core_is_caught() {
        assert_eq!(more_than_one_cpu(&scenario(0.98, 0.99)), None);
        assert!(matches!(
            more_than_one_cpu(&scenario(0.98, 1.7)),
            Some(Excess::Candidate(why)) if why.contains("1.70 CPU seconds")
        ));
        // A few percent of the work on a second thread already shows.
        assert!(matches!(
            more_than_one_cpu(&scenario(0.98, 1.03)),
            Some(Excess::Candidate(_))
        ));
        // A baseline that is itself a little above one CPU (a helper process) leaves the
        // candidate its margin.
        assert_eq!(more_than_one_cpu(&scenario(1.02, 1.025)), None);
    }

    #[test]
    fn a_baseline_that_uses_two_cpus_makes_the_declaration_wrong_not_the_candidate() {
        assert!(matches!(
            more_than_one_cpu(&scenario(1.6, 1.6)),
            Some(Excess::Baseline(why)) if why.contains("declaration is wrong")
        ));
    }

    #[test]
    fn nothing_measured_says_nothing() {
        let s = ScenarioResult::unmeasured("t", crate::spec::workload::Role::Training);
        assert_eq!(more_than_one_cpu(&s), None);
    }
}
