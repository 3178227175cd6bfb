//! One measured scenario in `evo confirm`'s summary, as a reviewer first reads it: what each arm
//! took (wall time, CPU time, peak memory), the change, the scenario's verdict; the statistics
//! behind the verdict only when asked for (`--verbose`).
//!
//! The arm figures here are for reading only: the verdict is decided on the per-pair ratios, and
//! nothing in this module is written to `result.json` or the receipt.

use std::fmt::Write;

use super::markdown::visible;
use crate::evidence::result::{ScenarioResult, Verdict};
use crate::measure::record::{Pair, RunRecord};
use crate::stats::{self, Ci95};

/// A candidate that uses this much more CPU time than the baseline is flagged (when the extra CPU
/// time also exceeds the wall time it saves), so that rusage jitter on a program whose CPU and
/// wall times are about equal does not raise the note.
const CPU_NOTE_MIN_RATIO: f64 = 1.1;

/// A median with its spread: half the interquartile range (Q3 − Q1) / 2, the quartiles
/// interpolated linearly between order statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub half_iqr: f64,
}

impl Spread {
    /// `None` for no values or a value that is not finite.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let sorted = stats::sorted(values);
        Some(Spread {
            median: stats::quantile(&sorted, 0.5),
            half_iqr: (stats::quantile(&sorted, 0.75) - stats::quantile(&sorted, 0.25)) / 2.0,
        })
    }
}

/// What one arm's measured runs took, as medians over the comparison pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmFigures {
    /// Wall time in seconds.
    pub wall: Spread,
    /// `rusage.user_s`.
    pub user_s: f64,
    /// `rusage.user_s + rusage.sys_s`.
    pub cpu_s: f64,
    /// `rusage.max_rss_kib`.
    pub max_rss_kib: f64,
}

impl ArmFigures {
    fn of<'a>(runs: impl Iterator<Item = &'a RunRecord> + Clone) -> Option<ArmFigures> {
        let median = |f: fn(&RunRecord) -> f64| {
            Spread::of(&runs.clone().map(f).collect::<Vec<_>>()).map(|s| s.median)
        };
        Some(ArmFigures {
            wall: Spread::of(&runs.clone().map(|r| r.wall_s).collect::<Vec<_>>())?,
            user_s: median(|r| r.rusage.user_s)?,
            cpu_s: median(|r| r.rusage.user_s + r.rusage.sys_s)?,
            max_rss_kib: median(|r| r.rusage.max_rss_kib as f64)?,
        })
    }
}

/// Both arms of a scenario's comparison pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmComparison {
    pub baseline: ArmFigures,
    pub candidate: ArmFigures,
}

impl ArmComparison {
    /// `None` without pairs.
    pub fn of(pairs: &[Pair]) -> Option<ArmComparison> {
        Some(ArmComparison {
            baseline: ArmFigures::of(pairs.iter().map(|p| &p.baseline))?,
            candidate: ArmFigures::of(pairs.iter().map(|p| &p.candidate))?,
        })
    }

    /// Candidate CPU time (user + sys) over the baseline's, when the candidate is faster in wall
    /// time and its extra CPU time exceeds the wall time it saves (by at least
    /// [`CPU_NOTE_MIN_RATIO`]): a speedup bought with more cores rather than less work.
    pub fn cpu_bought_speedup(&self) -> Option<f64> {
        let (b, c) = (&self.baseline, &self.candidate);
        let wall_saved = b.wall.median - c.wall.median;
        let cpu_added = c.cpu_s - b.cpu_s;
        let ratio = c.cpu_s / b.cpu_s;
        (wall_saved > 0.0 && cpu_added > wall_saved && b.cpu_s > 0.0 && ratio >= CPU_NOTE_MIN_RATIO)
            .then_some(ratio)
    }
}

/// The note for a speedup bought with CPU time, e.g. "faster in wall time but uses 1.8× the CPU
/// time: more threads?".
pub fn cpu_note(ratio: f64) -> String {
    format!("faster in wall time but uses {ratio:.1}× the CPU time (user + sys): more threads?")
}

/// What decided a measured scenario: the median of its per-pair ratios (baseline time over
/// candidate time), the interval around it, and the scenario's verdict in words.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decided {
    pub median: f64,
    pub ci95: Option<Ci95>,
    pub verdict: &'static str,
}

impl Decided {
    /// `None` for a scenario that was not measured.
    pub fn of(s: &ScenarioResult) -> Option<Decided> {
        match (&s.training, &s.holdout) {
            (Some(f), _) => Some(Decided {
                median: f.median,
                ci95: f.ci95,
                verdict: f.verdict.as_str(),
            }),
            (None, Some(h)) => Some(Decided {
                median: h.median,
                ci95: h.ci95,
                verdict: h.verdict.as_str(),
            }),
            (None, None) => None,
        }
    }

    /// The change in wall time, in percent: negative when the candidate is faster.
    pub fn change_pct(&self) -> f64 {
        100.0 * (1.0 / self.median - 1.0)
    }
}

/// Which of the `M = n(n+1)/2` sorted Walsh averages of `n` pairs bound the interval (rules 9,
/// docs/design.md §3.7), and its coverage.
pub fn interval_ranks(ci: Option<Ci95>, n: usize) -> String {
    let walsh = n * (n + 1) / 2;
    match ci {
        Some(c) => format!(
            "w({}) to w({}) of the {walsh} sorted pairwise means of the {n} log-ratios, coverage \
             {:.1}%",
            c.k,
            (walsh + 1).saturating_sub(c.k),
            100.0 * c.coverage
        ),
        None => "not available: fewer than 6 pairs cannot reach 95%".to_string(),
    }
}

/// Seconds in ms below 1 s, in s from 1 s, with about four significant digits; `spread` in the
/// same unit.
pub fn time(seconds: f64, spread: Option<f64>) -> String {
    let (scale, unit) = if seconds < 1.0 {
        (1000.0, "ms")
    } else {
        (1.0, "s")
    };
    let value = seconds * scale;
    let decimals = match value {
        v if v >= 100.0 => 1,
        v if v >= 10.0 => 2,
        _ => 3,
    };
    match spread {
        Some(s) => format!("{value:.decimals$} ± {:.decimals$} {unit}", s * scale),
        None => format!("{value:.decimals$} {unit}"),
    }
}

pub fn mib(kib: f64) -> String {
    format!("{:.1} MiB", kib / 1024.0)
}

/// The scenario's lines in `evo confirm`'s summary, its verdict beside the candidate's
/// `overall` one where they differ; empty when it was not measured.
pub fn render_scenario(s: &ScenarioResult, overall: Verdict, verbose: bool) -> String {
    let Some(decided) = Decided::of(s) else {
        return String::new();
    };
    let Decided {
        median,
        ci95: ci,
        verdict,
    } = decided;
    let mut out = String::new();
    // A blank line sets each scenario apart from the gates above and the scenario before.
    let _ = writeln!(
        out,
        "\n  {} ({}, {} pairs):",
        visible(&s.name),
        s.role,
        s.pairs.len()
    );
    let arms = ArmComparison::of(&s.pairs);
    if let Some(arms) = arms {
        let _ = writeln!(
            out,
            "    {:<11}{:<26}{:>12}{:>14}",
            "", "wall time (median ± ½IQR)", "user CPU", "peak memory"
        );
        for (name, a) in [("baseline", arms.baseline), ("candidate", arms.candidate)] {
            let _ = writeln!(
                out,
                "    {name:<11}{:<26}{:>12}{:>14}",
                time(a.wall.median, Some(a.wall.half_iqr)),
                time(a.user_s, None),
                mib(a.max_rss_kib)
            );
        }
    }
    let ci = ci.map_or_else(|| "no interval".to_string(), |c| c.text(4));
    let _ = writeln!(
        out,
        "    {:<11}{:+.1}% wall time (estimate of the per-pair ratios {median:.4}×, {ci})",
        "change",
        decided.change_pct()
    );
    if let Some(ratio) = arms.and_then(|a| a.cpu_bought_speedup()) {
        let _ = writeln!(out, "    note: {}", cpu_note(ratio));
    }
    if let Some(line) = super::terminal::instructions_sentence(s) {
        let _ = writeln!(out, "    {line}");
    }
    let verdict = super::wording::scenario_verdict(verdict, overall);
    let _ = writeln!(out, "    {:<11}{verdict}", "verdict");
    if verbose {
        out.push_str(&statistics(s));
    }
    out
}

/// The statistics behind the scenario's verdict, for `--verbose`.
fn statistics(s: &ScenarioResult) -> String {
    let mut out = String::new();
    let (ci, cov) = match (&s.training, &s.holdout) {
        (Some(f), _) => (f.ci95, f.cov),
        (None, Some(h)) => (h.ci95, h.cov),
        _ => return out,
    };
    let n = s.pairs.len();
    let ci = interval_ranks(ci, n);
    let row = |out: &mut String, k: &str, v: String| {
        let _ = writeln!(out, "    {k:<17}{v}");
    };
    row(&mut out, "interval", ci);
    row(
        &mut out,
        "CoV base / cand",
        format!(
            "{:.1}% / {:.1}%",
            100.0 * cov.baseline,
            100.0 * cov.candidate
        ),
    );
    let Some(f) = &s.training else {
        return out;
    };
    // One figure per scenario, the A/A pairs' (the sequential rule needs none to decide).
    let floor = super::wording::NoiseFloor::of(f);
    row(
        &mut out,
        "noise floor",
        format!(
            "±{:.2}% at {} pairs ({})",
            floor.pct,
            floor.pairs,
            super::wording::noise_source(f, s.aa_second_build, s.aa_from.is_some())
        ),
    );
    row(&mut out, "A/A check", super::terminal::aa_check(f));
    row(&mut out, "looks", super::terminal::looks_detail(f));
    if let Some(plan) = super::terminal::plan_sentence(f) {
        row(&mut out, "pair count", plan);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_half_the_interquartile_range() {
        let s = Spread::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.median, 3.0);
        // Q1 = 2, Q3 = 4.
        assert_eq!(s.half_iqr, 1.0);
        let s = Spread::of(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(s.median, 2.5);
        // Q1 = 1.75, Q3 = 3.25.
        assert_eq!(s.half_iqr, 0.75);
        assert_eq!(Spread::of(&[7.0]).unwrap().half_iqr, 0.0);
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn times_are_in_ms_below_a_second_and_in_s_from_one() {
        assert_eq!(time(0.5003, Some(0.0015)), "500.3 ± 1.5 ms");
        assert_eq!(time(0.0123, Some(0.0001)), "12.30 ± 0.10 ms");
        assert_eq!(time(0.0012, None), "1.200 ms");
        assert_eq!(time(1.0, Some(0.01)), "1.000 ± 0.010 s");
        assert_eq!(time(123.45, None), "123.5 s");
        assert_eq!(mib(1536.0), "1.5 MiB");
    }

    fn arms(base: (f64, f64), cand: (f64, f64)) -> ArmComparison {
        let arm = |(wall, cpu): (f64, f64)| ArmFigures {
            wall: Spread {
                median: wall,
                half_iqr: 0.0,
            },
            user_s: cpu,
            cpu_s: cpu,
            max_rss_kib: 1024.0,
        };
        ArmComparison {
            baseline: arm(base),
            candidate: arm(cand),
        }
    }

    #[test]
    fn only_a_speedup_paid_for_with_more_cpu_time_than_it_saves_is_flagged() {
        // Threads: 40% less wall time for 80% more CPU time.
        assert_eq!(arms((1.0, 1.0), (0.6, 1.8)).cpu_bought_speedup(), Some(1.8));
        // Threads that pay for themselves: half the wall time for 20% more CPU time.
        assert_eq!(arms((1.0, 1.0), (0.5, 1.2)).cpu_bought_speedup(), None);
        // Less work: faster and less CPU time.
        assert_eq!(arms((1.0, 1.0), (0.8, 0.8)).cpu_bought_speedup(), None);
        // Slower with more CPU time: a regression, no speedup to explain.
        assert_eq!(arms((1.0, 1.0), (1.1, 1.5)).cpu_bought_speedup(), None);
        // More CPU time, but less than the wall time saved (an I/O wait removed).
        assert_eq!(arms((1.0, 0.5), (0.5, 0.9)).cpu_bought_speedup(), None);
        // More CPU time than saved, but within rusage jitter of a single-threaded program.
        assert_eq!(arms((1.0, 1.0), (0.99, 1.05)).cpu_bought_speedup(), None);
        // No CPU time measured for the baseline (too short for the clock tick).
        assert_eq!(arms((0.01, 0.0), (0.005, 0.01)).cpu_bought_speedup(), None);
    }
}
