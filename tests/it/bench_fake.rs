//! `evo bench` end to end on the fake runner: verdicts, warnings, JSON fields, recomputation.

use std::time::Duration;

use evo::bench::{BenchPlan, run_bench};
use evo::evidence::figures::{BenchReport, BenchSettings, figures};
use evo::measure::fake::{FakeBehavior, FakeRunner};
use evo::measure::record::{Order, Purpose};
use evo::measure::runner::RunSpec;
use evo::measure::schedule::{Inputs, Phase};
use evo::stats::BenchVerdict;

fn plan(pairs: usize, aa_pairs: usize) -> BenchPlan {
    BenchPlan {
        earlier_aa: None,
        baseline: RunSpec::new("base", Duration::from_secs(5)),
        candidate: RunSpec::new("cand", Duration::from_secs(5)),
        baseline_again: None,
        quiet: None,
        env_pad: false,
        settings: BenchSettings {
            mde_seed: 42,
            timeout_s: 5.0,
            ..crate::util::synthetic::settings(pairs, aa_pairs)
        },
    }
}

fn bench(base: FakeBehavior, cand: FakeBehavior, pairs: usize, aa: usize) -> BenchReport {
    let mut runner = FakeRunner::new(7).with("base", base).with("cand", cand);
    run_bench(
        &plan(pairs, aa),
        &mut runner,
        &mut Inputs::none(),
        &mut |_| {},
    )
    .expect("fake bench runs")
}

fn noisy(mean_s: f64) -> FakeBehavior {
    FakeBehavior::Noisy {
        mean_s,
        rel_sd: 0.01,
    }
}

#[test]
fn a_clear_speedup_is_accepted() {
    let r = bench(noisy(1.0), noisy(0.9), 9, 11);
    assert_eq!(r.figures.verdict, BenchVerdict::Accepted, "{r:#?}");
    assert!(
        (r.figures.median - 1.0 / 0.9).abs() < 0.02,
        "{}",
        r.figures.median
    );
    let ci = r.figures.ci95.expect("9 pairs give an interval");
    // One look at 9 pairs spends the design's whole 2.125%: P(W ≤ 5) = 10/512 = 1.95% fits,
    // P(W ≤ 6) = 14/512 = 2.73% does not, so the interval is w(6) to w(40) of 45 Walsh averages.
    assert_eq!(ci.k, 6);
    assert!(ci.lower > 1.0 && ci.lower <= r.figures.median && r.figures.median <= ci.upper);
    assert!(r.warnings.iter().all(|w| !w.contains("underpowered")));
}

#[test]
fn identical_commands_are_not_accepted() {
    let r = bench(noisy(1.0), noisy(1.0), 9, 11);
    assert_ne!(r.figures.verdict, BenchVerdict::Accepted, "{r:#?}");
}

#[test]
fn a_slowdown_is_a_regression() {
    let r = bench(noisy(1.0), noisy(1.2), 9, 11);
    assert_eq!(r.figures.verdict, BenchVerdict::Regression);
    assert!(r.figures.median < 0.9);
}

#[test]
fn a_speedup_below_the_practical_threshold_is_not_accepted() {
    // 0.5% faster with almost no noise: significant, but below the 1% minimum effect.
    let r = bench(
        FakeBehavior::Times(vec![1.0]),
        FakeBehavior::Times(vec![1.0 / 1.005]),
        9,
        11,
    );
    assert!(r.figures.ci95.unwrap().lower > 1.0);
    assert!(!r.figures.training_gate.median_meets_min_effect);
    // Its interval's upper bound is below 1.01 too: the gain is ruled out at the minimum effect.
    assert_eq!(r.figures.verdict, BenchVerdict::NoRealGain);
}

#[test]
fn fewer_than_six_pairs_give_no_interval_and_say_so() {
    let r = bench(noisy(1.0), noisy(0.5), 5, 11);
    assert!(r.figures.ci95.is_none());
    assert_eq!(r.figures.verdict, BenchVerdict::Inconclusive);
    assert!(
        r.warnings.iter().any(|w| w.contains("fewer than 6 pairs")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn a_drifting_baseline_fails_the_aa_check() {
    // The baseline gets slower every run: its A/A pairs are biased by the drift.
    let drifting: Vec<f64> = (0..200).map(|i| 1.0 + 0.05 * f64::from(i)).collect();
    let mut runner = FakeRunner::new(1)
        .with("base", FakeBehavior::Times(drifting))
        .with("cand", FakeBehavior::Times(vec![0.5]));
    let mut p = plan(9, 11);
    p.settings.first = Order::BaselineFirst;
    let r = run_bench(&p, &mut runner, &mut Inputs::none(), &mut |_| {}).unwrap();
    assert!(!r.figures.training_gate.aa_valid);
    assert_eq!(r.figures.verdict, BenchVerdict::Inconclusive);
    assert!(
        r.warnings.iter().any(|w| w.contains("A/A check failed")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn warmups_are_recorded_but_not_paired() {
    let mut runner = FakeRunner::new(3)
        .with("base", noisy(1.0))
        .with("cand", noisy(0.9));
    let r = run_bench(&plan(7, 6), &mut runner, &mut Inputs::none(), &mut |_| {}).unwrap();
    assert_eq!(r.warmups.len(), 2);
    assert!(r.warmups.iter().all(|w| w.purpose == Purpose::Warmup));
    assert_eq!(r.aa_pairs.len(), 6);
    assert_eq!(r.pairs.len(), 7);
    assert_eq!(runner.calls().len(), 2 + 2 * 6 + 2 * 7);
    // A/A pairs run the baseline command in both arms.
    assert!(runner.calls()[2..14].iter().all(|c| c == "base"));
}

#[test]
fn a_failing_candidate_stops_the_bench_with_its_stderr() {
    let mut runner = FakeRunner::new(3).with("base", noisy(1.0)).with(
        "cand",
        FakeBehavior::Fails {
            code: 2,
            stderr: "segfault at line 3\n".into(),
        },
    );
    let err = run_bench(&plan(9, 11), &mut runner, &mut Inputs::none(), &mut |_| {}).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`cand`") && text.contains("segfault at line 3"),
        "{text}"
    );
}

#[test]
fn json_uses_the_receipt_field_names_and_recomputes_identically() {
    let r = bench(noisy(1.0), noisy(0.95), 9, 11);
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "pairs",
        "median",
        "ci95",
        "cov",
        "noise_floor_pct",
        "sequential",
        "verdict",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    let pair = &json["pairs"][0];
    for key in ["baseline", "candidate", "order", "ratio"] {
        assert!(pair.get(key).is_some(), "pair is missing {key}");
    }
    assert_eq!(pair["order"], "candidate_first");
    for key in ["lower", "upper", "coverage", "k"] {
        assert!(json["ci95"].get(key).is_some(), "ci95 is missing {key}");
    }
    assert!(json["cov"]["baseline"].is_number() && json["cov"]["candidate"].is_number());
    assert!(json["pairs"][0]["baseline"]["rusage"]["max_rss_kib"].is_number());

    let back: BenchReport = serde_json::from_value(json).unwrap();
    let again = figures(&back.settings, &back.aa_pairs, &back.pairs).unwrap();
    assert_eq!(again, r.figures);
}

fn bench_capped(
    base: FakeBehavior,
    cand: FakeBehavior,
    pairs: usize,
    max_pairs: usize,
) -> BenchReport {
    let mut runner = FakeRunner::new(7).with("base", base).with("cand", cand);
    let mut p = plan(pairs, 11);
    p.settings.max_pairs = max_pairs;
    run_bench(&p, &mut runner, &mut Inputs::none(), &mut |_| {}).expect("fake bench runs")
}

fn very_noisy(mean_s: f64) -> FakeBehavior {
    FakeBehavior::Noisy {
        mean_s,
        rel_sd: 0.05,
    }
}

#[test]
fn the_cap_is_announced_first_and_the_run_stops_at_the_first_look_that_decides() {
    let mut runner = FakeRunner::new(7)
        .with("base", noisy(1.0))
        .with("cand", noisy(0.9));
    let mut p = plan(9, 11);
    p.settings.max_pairs = 200;
    let mut events = Vec::new();
    let r = run_bench(&p, &mut runner, &mut Inputs::none(), &mut |e| {
        events.push(e)
    })
    .unwrap();
    let plan = r.figures.plan.expect("a plan is recorded");
    assert_eq!((plan.pairs, plan.max_pairs, plan.aa_pairs), (9, 200, 11));
    assert_eq!((plan.planned, plan.reached_pairs), (200, r.pairs.len()));
    assert_eq!(r.figures.verdict, BenchVerdict::Accepted);
    assert!(r.figures.training_gate.resolved);
    // A clear 11% gain on a quiet machine: decided far before the cap, at a look.
    let seq = r.figures.sequential.as_ref().expect("looks are recorded");
    let stop = seq.stop.expect("a stop");
    assert_eq!(stop.pairs, r.pairs.len());
    assert!(r.pairs.len() <= 20, "{}", r.pairs.len());
    assert!(seq.looks.iter().any(|l| l.pairs == stop.pairs));
    // The announcement comes after the A/A pairs and before the first comparison run, with what
    // the cap can resolve.
    let at = events
        .iter()
        .position(|e| e.plan.is_some())
        .expect("announced");
    assert!(events[..at].iter().all(|e| e.phase != Phase::Pairs));
    assert_eq!(events[at + 1].phase, Phase::Pairs);
    let announced = events[at].plan.unwrap();
    assert_eq!(announced.planned, 200);
    assert!(
        announced.resolves_gain.is_some_and(|g| g > 0.0 && g < 0.05),
        "{announced:?}"
    );
    assert!((announced.estimated_s / plan.planned as f64 - 2.0).abs() < 0.2);
}

#[test]
fn a_cap_that_leaves_the_run_undecided_ends_inconclusive_with_the_pairs_that_would_decide() {
    let r = bench_capped(very_noisy(1.0), very_noisy(1.0), 9, 12);
    assert_eq!(r.pairs.len(), 12);
    assert!(!r.figures.training_gate.resolved);
    assert_eq!(r.figures.verdict, BenchVerdict::Inconclusive);
    let w = r
        .warnings
        .iter()
        .find(|w| w.contains("undecided at the cap of 12 pairs"))
        .expect("says it is undecided");
    assert!(
        w.contains("would decide it") || w.contains("no practical number"),
        "{w}"
    );
}

#[test]
fn a_large_effect_is_accepted_at_the_first_look_and_its_mirror_is_a_regression() {
    let r = bench_capped(very_noisy(1.0), very_noisy(0.6), 9, 60);
    // The first look whose share of the error allows an interval at all (15 pairs of a cap of
    // 60): every ratio is far above 1, so that look decides.
    let seq = r.figures.sequential.as_ref().unwrap();
    let first = seq.looks.iter().find(|l| l.k.is_some()).unwrap().pairs;
    assert_eq!(r.pairs.len(), first, "{:#?}", r.figures);
    assert!(first < 20, "{first}");
    assert_eq!(r.figures.verdict, BenchVerdict::Accepted);
    let swapped = bench_capped(very_noisy(0.6), very_noisy(1.0), 9, 60);
    assert_eq!(swapped.figures.verdict, BenchVerdict::Regression);
    assert_eq!(swapped.pairs.len(), first);
}

#[test]
fn an_identical_candidate_on_a_quiet_machine_is_no_real_gain_before_the_cap() {
    let mut runner = FakeRunner::new(7)
        .with("base", noisy(1.0))
        .with("cand", noisy(1.0));
    let mut p = plan(9, 11);
    p.settings.max_pairs = 1000;
    let r = run_bench(&p, &mut runner, &mut Inputs::none(), &mut |_| {}).expect("fake bench runs");
    assert_eq!(r.figures.verdict, BenchVerdict::NoRealGain, "{r:#?}");
    assert!(r.figures.training_gate.resolved && r.figures.training_gate.no_real_gain);
    assert!(r.pairs.len() < 200, "{}", r.pairs.len());
    let ci = r.figures.ci95.expect("an interval");
    assert!(ci.upper < 1.01, "{ci:?}");
}
