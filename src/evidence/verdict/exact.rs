//! Exact evidence where time cannot decide (docs/design.md §3.12.4, rules 8). Below a few
//! percent, the wall time of a noisy 2-core machine cannot decide a gain in any budget people
//! accept; a cache-simulated instruction count of the timed command can, for a program whose time
//! is its own CPU work. It is a model of time, not time, so it decides only when:
//!
//! - the wall time left the scenario undecided (not passed, not slower, no real gain not shown)
//!   and its A/A check was valid;
//! - the count is of what is timed (rules 6: not `unverified`, no `mismatch`) and carries the
//!   cache simulation's events for both arms;
//! - the estimated cycles fall by at least the minimum effect, `E = cycles_b / cycles_c ≥ 1 + m`;
//! - the timed runs are CPU-bound and single-threaded: each arm's median number of voluntary
//!   context switches per run is at most [`MAX_VOLUNTARY_SWITCHES`], the candidate's at most two
//!   above the baseline's, and each arm's median CPU share `(user + sys) / wall` at most
//!   `CPU_LIMIT`. A program that waits of its own accord (I/O, a pipe, a lock, a timer) switches
//!   out voluntarily each time, and a program spread over cores spends time its instructions do
//!   not show; one preempted by other work switches involuntarily, which a busy machine adds
//!   without changing what the program does (the CPU share alone would not tell the two apart);
//! - neither the wall time nor the CPU time (user + sys, where work moved into the kernel shows)
//!   excludes `E`: each paired interval's upper bound, at the order statistics of the look the
//!   wall time stopped at, is at least `E`. A patch that lowers the counted work but not the time
//!   (slower instructions, work handed to the kernel) is excluded by them once they are tight
//!   enough to tell; within the noise, the model decides.
//!
//! Such an acceptance carries the tier `counted`, below `measured`.

use super::super::figures::Figures;
use super::super::result::ScenarioResult;
use super::cpus::CPU_LIMIT;
use crate::measure::record::RunRecord;
use crate::stats;

/// The most voluntary context switches (median per run, the sandbox's own processes included)
/// of each arm's timed runs for its time to be its own CPU work. Measured: 4 per run for the C
/// kernels' bench under evo's sandbox on a quiet machine (2026-12-05), and 1 for the cexact
/// fixture outside it under a CPU hog and two builds; a wait of the program's own
/// adds one each time.
pub const MAX_VOLUNTARY_SWITCHES: u64 = 16;

/// The words every acceptance on exact evidence says (its reason), which the PR text picks out.
pub const ACCEPTED_ON_EXACT_EVIDENCE: &str = "is accepted on exact evidence";

/// What exact evidence says of one training scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Exact {
    /// Nothing: the wall time decided, or no count was made.
    NotApplicable,
    /// It decides the gain the wall time could not: the sentence saying so.
    Accepts(String),
    /// It cannot: why, in the user's terms.
    Declines(String),
}

fn cpu_s(run: &RunRecord) -> f64 {
    run.rusage.user_s + run.rusage.sys_s
}

/// One arm's timed runs: median CPU share and median voluntary context switches per run.
#[derive(Debug, Clone, Copy)]
struct ArmRuns {
    share: f64,
    voluntary: f64,
}

/// Both arms' [`ArmRuns`] over the comparison pairs, `(baseline, candidate)`.
fn arm_runs(s: &ScenarioResult) -> Option<(ArmRuns, ArmRuns)> {
    let of = |f: fn(&crate::measure::record::Pair) -> &RunRecord| -> Option<ArmRuns> {
        let runs: Vec<&RunRecord> = (s.pairs.iter().map(f)).filter(|r| r.wall_s > 0.0).collect();
        if runs.is_empty() {
            return None;
        }
        let median = |v: Vec<f64>| crate::stats::plain_median(&v);
        Some(ArmRuns {
            share: median(runs.iter().map(|r| cpu_s(r) / r.wall_s).collect()),
            voluntary: median(runs.iter().map(|r| r.rusage.voluntary_cs as f64).collect()),
        })
    };
    Some((of(|p| &p.baseline)?, of(|p| &p.candidate)?))
}

/// Why the runs' time is not their own CPU work on one CPU, if it is not.
fn not_cpu_bound(b: ArmRuns, c: ArmRuns) -> Option<String> {
    let limit = MAX_VOLUNTARY_SWITCHES as f64;
    if b.voluntary > limit || c.voluntary > limit || c.voluntary > b.voluntary + 2.0 {
        return Some(format!(
            "its timed runs wait of their own accord (median voluntary context switches per run: \
             baseline {:.0}, candidate {:.0}; at most {MAX_VOLUNTARY_SWITCHES}, the candidate's \
             at most 2 above the baseline's), so its time is not what its instructions show",
            b.voluntary, c.voluntary
        ));
    }
    if b.share > CPU_LIMIT || c.share > CPU_LIMIT {
        return Some(format!(
            "its timed runs use more than one CPU (median CPU seconds per second of wall time: \
             baseline {:.2}, candidate {:.2}; at most {CPU_LIMIT}), so its time is not what its \
             instructions show",
            b.share, c.share
        ));
    }
    None
}

/// The upper bound of the paired CPU-time speedup (baseline / candidate user + sys) over the
/// first `n` pairs (those of the wall time's last look), the same interval as the wall time's of
/// the same pairs: the `(M+1−k)`-th of their `M` Walsh averages (rules 9).
fn cpu_upper(s: &ScenarioResult, n: usize, k: usize) -> Option<f64> {
    let pairs = s.pairs.get(..n)?;
    let ratios: Vec<f64> = (pairs.iter())
        .filter(|p| cpu_s(&p.candidate) > 0.0 && cpu_s(&p.baseline) > 0.0)
        .map(|p| cpu_s(&p.baseline) / cpu_s(&p.candidate))
        .collect();
    if k == 0 || ratios.len() != n {
        return None;
    }
    stats::signed_rank::estimate(&ratios, Some(k))
        .1
        .map(|(_, upper)| upper)
}

fn pct(speedup: f64) -> f64 {
    100.0 * (1.0 / speedup - 1.0)
}

/// What exact evidence says of training scenario `s` with wall-time figures `f`.
pub fn exact_evidence(s: &ScenarioResult, f: &Figures, min_effect: f64) -> Exact {
    let g = &f.training_gate;
    if g.passed || g.regression || g.no_real_gain || g.resolved {
        return Exact::NotApplicable;
    }
    let Some(count) = s.instructions.as_ref() else {
        return Exact::NotApplicable;
    };
    let name = &s.name;
    let declines = |why: String| {
        Exact::Declines(format!(
            "training scenario `{name}`: exact evidence cannot decide what the wall time did \
             not: {why}"
        ))
    };
    if let Some(why) = count.unverified.as_ref().or(count.mismatch.as_ref()) {
        return declines(format!("its count is not of what is timed ({why})"));
    }
    let Some(cycles) = count.cache.as_ref().and_then(|c| c.cycles_speedup()) else {
        return declines(match &count.note {
            Some(note) => format!("it has no count ({note})"),
            None => "its count has no cache simulation (a count from before rules 8)".to_string(),
        });
    };
    let instructions = count.change_pct.unwrap_or(f64::NAN);
    if cycles < 1.0 + min_effect {
        return declines(format!(
            "the counts show no gain of the {:.1}% minimum effect either (estimated cycles \
             {:+.2}%, instructions {instructions:+.2}%)",
            100.0 * min_effect,
            pct(cycles)
        ));
    }
    if !g.aa_valid {
        return declines("the A/A check found the setup biased".to_string());
    }
    let Some(ci) = f.ci95 else {
        return declines("its wall time has no interval to hold the counts against".to_string());
    };
    let Some((base_runs, cand_runs)) = arm_runs(s) else {
        return declines("it has no timed runs to judge".to_string());
    };
    if let Some(why) = not_cpu_bound(base_runs, cand_runs) {
        return declines(why);
    }
    if ci.upper < cycles {
        return declines(format!(
            "the wall time excludes the counted gain (estimated cycles {:+.2}%, {cycles:.4}×; the \
             {} ends at {:.4}×): a patch that lowers the counted work but not the time, with \
             slower instructions or work handed to the kernel, looks like this",
            pct(cycles),
            ci.name(),
            ci.upper
        ));
    }
    let looked = (f.sequential.as_ref())
        .and_then(|q| q.stop.as_ref())
        .map_or(s.pairs.len(), |stop| stop.pairs);
    let Some(cpu_upper) = cpu_upper(s, looked, ci.k) else {
        return declines("its CPU times cannot be paired".to_string());
    };
    if cpu_upper < cycles {
        return declines(format!(
            "the CPU time (user + sys) excludes the counted gain (estimated cycles {:+.2}%, \
             {cycles:.4}×; its interval at the same order statistics ends at {cpu_upper:.4}×): \
             work moved into the kernel or to another process looks like this",
            pct(cycles)
        ));
    }
    Exact::Accepts(format!(
        "training scenario `{name}` {ACCEPTED_ON_EXACT_EVIDENCE}: the wall time could not decide \
         at {} pairs ({} {:.4}–{:.4}×), and the cache-simulated count of the timed command shows \
         estimated cycles {:+.2}% ({cycles:.4}×; instructions {instructions:+.2}%), which neither \
         the wall-time nor the CPU-time interval excludes (CPU time up to {cpu_upper:.4}×; the \
         runs CPU-bound, {:.0} and {:.0} voluntary context switches each); tier `counted`: \
         estimated cycles are a model of time, and no holdout was timed",
        looked,
        ci.name(),
        ci.lower,
        ci.upper,
        pct(cycles),
        base_runs.voluntary,
        cand_runs.voluntary
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{Decision, decide_by, gate};
    use super::*;
    use crate::evidence::figures::{BenchSettings, figures};
    use crate::evidence::result::{ArmCache, GateName, GateStatus, InstructionFigures, Verdict};
    use crate::measure::callgrind::CacheEvents;
    use crate::measure::record::{Order, Pair};
    use crate::spec::campaign::Metric;
    use crate::stats::Tier;

    /// A run of `wall_s` seconds that spent `share` of it on its own CPU (`sys` of that in the
    /// kernel), switching out voluntarily 4 times (as the sandbox's processes do).
    fn run(wall_s: f64, share: f64, sys: f64) -> RunRecord {
        let mut r = RunRecord::exited_ok(wall_s);
        r.rusage.user_s = wall_s * share * (1.0 - sys);
        r.rusage.sys_s = wall_s * share * sys;
        r.rusage.voluntary_cs = 4;
        r
    }

    /// Noisy pairs (ratios 0.90–1.11 around 1.0) that leave a 1% minimum effect undecided at
    /// the cap of 15 pairs; the candidate's runs spend `share` of their wall time on the CPU,
    /// `sys` of it in the kernel, the baseline's 0.99 with none in the kernel.
    fn undecided(share: f64, sys: f64) -> ScenarioResult {
        let ratios = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| 1.0 + 0.015 * ((i * 7) % 15) as f64 - 0.1)
                .collect()
        };
        let pairs = |n: usize, share: f64, sys: f64| -> Vec<Pair> {
            (ratios(n).into_iter().enumerate())
                .map(|(i, r)| {
                    Pair::new(
                        i,
                        Order::CandidateFirst,
                        run(2.0 * r, 0.99, 0.0),
                        run(2.0, share, sys),
                    )
                })
                .collect()
        };
        let settings = BenchSettings {
            pairs: 15,
            max_pairs: 15,
            budget_s: None,
            aa_pairs: 11,
            warmup: 0,
            min_effect: 0.01,
            target_effect: 0.015,
            first: Order::CandidateFirst,
            order_seed: None,
            mde_seed: 1,
            timeout_s: 1.0,
        };
        let measured = pairs(15, share, sys);
        let f = figures(&settings, &pairs(11, 0.99, 0.0), &measured).unwrap();
        ScenarioResult {
            training: Some(f),
            pairs: measured,
            ..ScenarioResult::unmeasured("t", crate::spec::workload::Role::Training)
        }
    }

    /// `s` with a cache-simulated count whose estimated cycles fall by the factor `cycles`.
    fn counted(mut s: ScenarioResult, cycles: f64) -> ScenarioResult {
        let events = |instructions: u64| CacheEvents {
            instructions,
            l1_misses: 0,
            ll_misses: 0,
        };
        let candidate = (1_000_000.0 / cycles) as u64;
        let mut figures = InstructionFigures::of(1_000_000, candidate);
        figures.cache = Some(ArmCache {
            baseline: events(1_000_000),
            candidate: events(candidate),
        });
        s.instructions = Some(figures);
        s
    }

    fn decide(s: ScenarioResult) -> Decision {
        let green: Vec<_> = (GateName::ALL.iter())
            .map(|n| gate(*n, GateStatus::Passed, ""))
            .collect();
        decide_by(&green, &[s], Metric::WallTimeOrCounts, 0.01)
    }

    fn reasons(d: &Decision) -> String {
        d.reasons.join("\n")
    }

    #[test]
    fn the_fixture_leaves_the_wall_time_undecided_with_an_interval_spanning_the_gain() {
        let s = undecided(0.99, 0.0);
        let f = s.training.as_ref().unwrap();
        assert!(
            !f.training_gate.resolved && !f.training_gate.passed,
            "{f:?}"
        );
        let ci = f.ci95.unwrap();
        assert!(ci.lower < 1.0 && ci.upper > 1.04, "{ci:?}");
        let d = decide(s);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{}", reasons(&d));
    }

    #[test]
    fn a_counted_gain_the_time_does_not_exclude_is_accepted_with_the_tier_counted() {
        let d = decide(counted(undecided(0.99, 0.0), 1.03));
        assert_eq!(
            (d.verdict, d.tier),
            (Verdict::Accepted, Tier::Counted),
            "{}",
            reasons(&d)
        );
        assert!(
            reasons(&d).contains(ACCEPTED_ON_EXACT_EVIDENCE),
            "{}",
            reasons(&d)
        );
    }

    /// The attack on the model: fewer estimated cycles than the time shows (slower
    /// instructions). Off (no wall-time bound): accepted, which the assertion catches.
    #[test]
    fn a_counted_gain_the_wall_time_excludes_is_not_accepted() {
        let d = decide(counted(undecided(0.99, 0.0), 1.6));
        assert_eq!(d.verdict, Verdict::Inconclusive, "{}", reasons(&d));
        assert!(
            reasons(&d).contains("the wall time excludes the counted gain"),
            "{}",
            reasons(&d)
        );
    }

    /// Work moved into the kernel: the candidate's wall time is the baseline's, but a third of
    /// its CPU time is in the kernel, where callgrind counts nothing. Its user + sys time is the
    /// same as the baseline's, so the CPU time's interval bounds the gain well below the 4%
    /// counted; the wall-time bound alone would let it through (its interval reaches 1.048×).
    /// Off (no CPU-time bound): accepted, which the assertion catches.
    #[test]
    fn a_counted_gain_the_cpu_time_excludes_is_not_accepted() {
        let mut s = counted(undecided(0.99, 0.0), 1.04);
        // The same CPU time as the baseline's in every pair, a third of it in the kernel.
        for p in &mut s.pairs {
            let cpu = p.baseline.rusage.user_s + p.baseline.rusage.sys_s;
            p.candidate.rusage.user_s = cpu * 0.66;
            p.candidate.rusage.sys_s = cpu * 0.34;
        }
        let d = decide(s);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{}", reasons(&d));
        assert!(
            reasons(&d).contains("the CPU time (user + sys) excludes the counted gain"),
            "{}",
            reasons(&d)
        );
    }

    /// A count can be fooled by the candidate (a callgrind client request that stops collection
    /// around its work), so exact evidence decides only where the campaign trusts its candidates
    /// with it (`metric: "wall_time_or_counts"`). Off (exact evidence under the default metric):
    /// accepted, which the assertion catches.
    #[test]
    fn under_the_default_metric_the_counts_never_accept() {
        let green: Vec<_> = (GateName::ALL.iter())
            .map(|n| gate(*n, GateStatus::Passed, ""))
            .collect();
        let s = counted(undecided(0.99, 0.0), 1.03);
        let d = decide_by(&green, &[s], Metric::WallTime, 0.01);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{}", reasons(&d));
        assert!(!reasons(&d).contains("exact evidence"), "{}", reasons(&d));
    }

    #[test]
    fn exact_evidence_declines_what_it_cannot_vouch_for() {
        let waits = |voluntary: u64| {
            let mut s = counted(undecided(0.5, 0.0), 1.03);
            for p in &mut s.pairs {
                p.candidate.rusage.voluntary_cs = voluntary;
            }
            s
        };
        // Preempted half of the time by other work (involuntarily): still its own CPU work.
        assert!(matches!(decide(waits(4)).tier, Tier::Counted));
        let cases: [(ScenarioResult, &str); 6] = [
            // A program that waits of its own accord, and one that waits more than the baseline.
            (waits(40), "wait of their own accord"),
            (waits(8), "wait of their own accord"),
            // Two CPUs' worth of work per second.
            (counted(undecided(2.0, 0.0), 1.03), "more than one CPU"),
            // No gain of the minimum effect in the counts either.
            (
                counted(undecided(0.99, 0.0), 1.004),
                "no gain of the 1.0% minimum effect",
            ),
            (
                {
                    let mut s = counted(undecided(0.99, 0.0), 1.03);
                    s.instructions.as_mut().unwrap().unverified = Some("argv".into());
                    s
                },
                "not of what is timed",
            ),
            (
                {
                    let mut s = counted(undecided(0.99, 0.0), 1.03);
                    s.instructions.as_mut().unwrap().cache = None;
                    s
                },
                "no cache simulation",
            ),
        ];
        for (s, why) in cases {
            let d = decide(s);
            assert_eq!(d.verdict, Verdict::Inconclusive, "{}", reasons(&d));
            assert!(reasons(&d).contains(why), "{why}: {}", reasons(&d));
        }
        // A wall time that decided is left to itself, whatever the counts say.
        let s = counted(undecided(0.99, 0.0), 1.03);
        let mut f = s.training.clone().unwrap();
        assert!(matches!(exact_evidence(&s, &f, 0.01), Exact::Accepts(_)));
        for decided in [
            |g: &mut crate::stats::TrainingGate| g.regression = true,
            |g: &mut crate::stats::TrainingGate| g.no_real_gain = true,
            |g: &mut crate::stats::TrainingGate| g.resolved = true,
        ] {
            let mut g = f.training_gate;
            decided(&mut g);
            f.training_gate = g;
            assert_eq!(exact_evidence(&s, &f, 0.01), Exact::NotApplicable);
            f = s.training.clone().unwrap();
        }
    }
}
