//! The summary `evo confirm` prints, from a synthetic confirmation: what each arm took comes
//! first, the statistics only with `--verbose`, and a speedup bought with CPU time says so.

use crate::util::synthetic;

use std::path::Path;

use evo::evidence::result::ConfirmResult;
use evo::report::terminal;

/// A confirmation that passed every gate: a training scenario `plain` at 1.05× and a holdout
/// `held`, both over 9 pairs of about 0.5 s per baseline run.
fn result() -> ConfirmResult {
    synthetic::plain()
}

fn summary(r: &ConfirmResult, verbose: bool) -> String {
    terminal::render_confirm(r, Path::new("/run"), verbose)
}

/// The lines of the block of scenario `name`, from its heading to the next scenario or verdict.
fn block<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!("  {name} (")));
    let head = lines
        .next()
        .unwrap_or_else(|| panic!("no scenario {name}:\n{text}"));
    std::iter::once(head)
        .chain(lines.take_while(|l| l.starts_with("    ")))
        .collect()
}

#[test]
fn each_scenario_shows_both_arms_then_the_change_then_its_verdict() {
    let text = summary(&result(), false);
    let training = block(&text, "plain");
    let expected = [
        "  plain (training, 9 pairs):",
        "               wall time (median ± ½IQR)     user CPU   peak memory",
        "    baseline   500.5 ± 0.5 ms                500.5 ms       1.0 MiB",
        "    candidate  476.7 ± 0.5 ms                476.7 ms       1.0 MiB",
    ];
    assert_eq!(training[..4], expected, "{text}");
    assert!(
        training[4].starts_with("    change     -4.8% wall time (estimate of the per-pair ratios 1.0500×, 96.1% CI 1.0500–1.0500×)"),
        "{text}"
    );
    assert_eq!(training[5], "    verdict    accepted", "{text}");
    assert_eq!(training.len(), 6, "{text}");
    let holdout = block(&text, "held");
    assert_eq!(holdout[0], "  held (holdout, 9 pairs):", "{text}");
    assert_eq!(
        holdout.last(),
        Some(&"    verdict    no regression"),
        "{text}"
    );
    assert!(
        text.contains("\nverdict: accepted (tier "),
        "the overall verdict stays: {text}"
    );
}

#[test]
fn the_statistics_behind_a_verdict_show_only_with_verbose() {
    let r = result();
    let short = summary(&r, false);
    let long = summary(&r, true);
    for detail in [
        "noise floor",
        "A/A check",
        "looks",
        "CoV base / cand",
        "w(6) to w(40) of the 45 sorted pairwise means",
    ] {
        assert!(
            !short.contains(detail),
            "{detail} without --verbose:\n{short}"
        );
        assert!(
            long.contains(detail),
            "{detail} lacks with --verbose:\n{long}"
        );
    }
    // Below the scenario's verdict, inside its block.
    let training = block(&long, "plain");
    let verdict = training
        .iter()
        .position(|l| l.starts_with("    verdict "))
        .unwrap();
    let noise = training
        .iter()
        .position(|l| l.contains("noise floor"))
        .unwrap();
    assert!(verdict < noise, "{long}");
    // A holdout has no A/A pairs: its CI95 ranks and CoV, nothing more.
    let holdout = block(&long, "held");
    assert!(
        holdout.iter().any(|l| l.contains("CoV base / cand")),
        "{long}"
    );
    assert!(!holdout.iter().any(|l| l.contains("A/A")), "{long}");
    // Only lines were added.
    let long_lines: Vec<&str> = long.lines().collect();
    assert!(
        short.lines().all(|l| long_lines.contains(&l)),
        "{short}\n{long}"
    );
}

#[test]
fn a_wall_time_speedup_that_uses_more_cpu_time_says_so() {
    let mut r = result();
    assert!(!summary(&r, false).contains("CPU time"));
    // Four threads where there was one: 1.05× faster in wall time, 1.8× the CPU time.
    for p in &mut r.evidence.scenarios[0].pairs {
        p.candidate.rusage.user_s = 1.8 * p.baseline.rusage.user_s;
        p.candidate.rusage.sys_s = 1.8 * p.baseline.rusage.sys_s;
    }
    let text = summary(&r, false);
    let training = block(&text, "plain");
    assert_eq!(
        training[5],
        "    note: faster in wall time but uses 1.8× the CPU time (user + sys): more threads?",
        "{text}"
    );
    assert_eq!(training[6], "    verdict    accepted", "{text}");
    assert_eq!(text.matches("more threads?").count(), 1, "{text}");
}

#[test]
fn a_slower_candidate_with_more_cpu_time_gets_no_threads_note() {
    let mut r = result();
    for p in &mut r.evidence.scenarios[0].pairs {
        p.candidate.wall_s = 1.2 * p.baseline.wall_s;
        p.candidate.rusage.user_s = 2.0 * p.baseline.rusage.user_s;
    }
    let text = summary(&r, false);
    assert!(!text.contains("more threads?"), "{text}");
}

#[test]
fn seconds_from_one_second_and_memory_in_mib() {
    let mut r = result();
    for p in &mut r.evidence.scenarios[0].pairs {
        for run in [&mut p.baseline, &mut p.candidate] {
            run.wall_s *= 4.0;
            run.rusage.user_s *= 4.0;
            run.rusage.max_rss_kib = 300 * 1024;
        }
    }
    let text = summary(&r, false);
    let training = block(&text, "plain");
    assert_eq!(
        training[2], "    baseline   2.002 ± 0.002 s                2.002 s     300.0 MiB",
        "{text}"
    );
}
