//! Calibration of evo's measurement on a workload whose speed evo controls.
//!
//! Run with `cargo bench --bench calibration` (settings through `EVO_CALIB_REPS`,
//! `EVO_CALIB_RUN_MS`, `EVO_CALIB_CAP`). The workload is `workloads/spin/spin.c`: N iterations of
//! a serial loop. A "true X% speedup" is a candidate whose iteration count is chosen, from a fitted
//! `time = fixed + per_iteration × N` line, so that whole runs (process start included) take
//! 1/(1+X) of the baseline's time; the true ratio that coverage is judged against is the median of
//! every pair ratio pooled over all repetitions of that configuration. Every repetition is a
//! complete `evo bench` (warmup, 11 A/A pairs, then the sequential rule's looks from 9 pairs up to
//! the cap, stopping at the first look that decides) through the real process runner. It prints,
//! per configuration (one look at 9 pairs, and looks from 9 up to the cap):
//! - how often each verdict came: accepted (for identical commands a false accept; goal ≤ 2.5%),
//!   no real gain, slower, inconclusive,
//! - the empirical coverage of the interval at the stop (of 1 under the null; of the pooled true
//!   ratio otherwise; goal ≥ 95%) and the pairs spent (median and mean),
//! - evo's per-run overhead next to hyperfine timing the same command (when hyperfine is installed).
//!
//! `EVO_CALIB_MODE=simulated` runs no process at all: it draws log-ratios from noise models
//! (`calibration/sim.rs`) and sends them through the full decision (A/A → pair count → verdict)
//! thousands of times (`EVO_CALIB_SIM_REPS`, default 2000 per power cell and 5× that for the null;
//! caps in `EVO_CALIB_MAX_PAIRS`, default `9,60,200`), printing the false-accept and false-regression
//! rates of a null with exact 95% intervals, the power at true 1.5% (the target the pair plan sizes
//! for) and 2/3/5/10% speedups, the pairs chosen
//! and the inconclusive rate, and the holdout gate's pass rate for a null and rejection rate for a
//! true 5% slowdown with planned and with fixed pair counts, as Markdown tables.

#[path = "calibration/real.rs"]
mod real;
#[path = "calibration/rules.rs"]
mod rules;
#[path = "calibration/sim.rs"]
mod sim;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use evo::bench::{BenchPlan, run_bench};
use evo::evidence::figures::{BenchReport, BenchSettings};
use evo::measure::record::Order;
use evo::measure::runner::RunSpec;
use evo::measure::schedule::Inputs;
use evo::measure::spawn::ProcessRunner;
use evo::stats::BenchVerdict;

fn env_number(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn build_spin(out_dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/spin/spin.c");
    let exe = out_dir.join("spin");
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&source)
        .status()
        .expect("cc must be installed to build the spin workload");
    assert!(status.success(), "cc failed on {}", source.display());
    exe
}

fn spin_command(spin: &Path, iterations: u64) -> String {
    format!("{} {iterations}", spin.display())
}

fn runner() -> ProcessRunner {
    ProcessRunner::with_helper(PathBuf::from(env!("CARGO_BIN_EXE_evo")))
}

/// Mean wall time of a few runs of `spin N`, through evo's runner.
fn mean_wall(spin: &Path, iterations: u64, runs: usize) -> f64 {
    use evo::measure::runner::Runner;
    let mut r = runner();
    let spec = RunSpec::new(spin_command(spin, iterations), Duration::from_secs(60));
    let mut walls: Vec<f64> = (0..runs)
        .map(|_| r.run(&spec).expect("spin runs").wall_s)
        .collect();
    walls.sort_by(f64::total_cmp);
    walls[runs / 2]
}

/// `time ≈ fixed + per_iter × N`, fitted through two points.
struct TimeModel {
    fixed_s: f64,
    per_iter_s: f64,
}

impl TimeModel {
    fn fit(spin: &Path, run_ms: f64) -> TimeModel {
        let small = 200_000u64;
        let guess = (run_ms / 1000.0 / 2e-9) as u64;
        let (t_small, t_big) = (mean_wall(spin, small, 21), mean_wall(spin, guess, 21));
        let per_iter_s = (t_big - t_small) / (guess - small) as f64;
        TimeModel {
            fixed_s: t_small - per_iter_s * small as f64,
            per_iter_s,
        }
    }
    fn iterations_for(&self, seconds: f64) -> u64 {
        ((seconds - self.fixed_s) / self.per_iter_s).max(1.0) as u64
    }
}

fn bench_once(base: &str, cand: &str, looks: Looks, seed: u64) -> BenchReport {
    let spec = |c: &str| RunSpec::new(c, Duration::from_secs(60));
    let plan = BenchPlan {
        earlier_aa: None,
        baseline: spec(base),
        candidate: spec(cand),
        baseline_again: None,
        quiet: None,
        env_pad: false,
        settings: BenchSettings {
            pairs: looks.first,
            max_pairs: looks.cap,
            budget_s: None,
            aa_pairs: 11,
            warmup: 1,
            min_effect: 0.01,
            target_effect: 0.015,
            first: Order::CandidateFirst,
            order_seed: None,
            mde_seed: seed,
            timeout_s: 60.0,
        },
    };
    run_bench(&plan, &mut runner(), &mut Inputs::none(), &mut |_| {})
        .expect("calibration bench runs")
}

/// The sequential rule's first look and cap (`cap == first`: one look).
#[derive(Clone, Copy)]
struct Looks {
    first: usize,
    cap: usize,
}

struct Tally {
    label: String,
    reps: usize,
    accepted: usize,
    no_real_gain: usize,
    slower: usize,
    inconclusive: usize,
    covered: usize,
    /// The ratio coverage is judged against.
    truth: f64,
    /// Pairs each repetition spent before it stopped.
    pairs: Vec<usize>,
    runs: usize,
    seconds: f64,
}

impl Tally {
    fn median_pairs(&self) -> usize {
        let mut p = self.pairs.clone();
        p.sort_unstable();
        p.get(p.len() / 2).copied().unwrap_or(0)
    }
    fn mean_pairs(&self) -> f64 {
        self.pairs.iter().sum::<usize>() as f64 / self.pairs.len().max(1) as f64
    }
}

/// `truth`: the known ratio (1 for identical commands), or `None` to use the pooled median.
fn run_config(
    label: &str,
    base: &str,
    cand: &str,
    truth: Option<f64>,
    looks: Looks,
    reps: usize,
) -> Tally {
    let started = Instant::now();
    let mut t = Tally {
        label: label.to_string(),
        reps,
        accepted: 0,
        no_real_gain: 0,
        slower: 0,
        inconclusive: 0,
        covered: 0,
        truth: 0.0,
        pairs: Vec::with_capacity(reps),
        runs: 0,
        seconds: 0.0,
    };
    let mut intervals = Vec::with_capacity(reps);
    let mut pooled = Vec::with_capacity(reps * looks.first);
    for rep in 0..reps {
        let r = bench_once(base, cand, looks, rep as u64);
        match r.figures.verdict {
            BenchVerdict::Accepted => t.accepted += 1,
            BenchVerdict::NoRealGain => t.no_real_gain += 1,
            BenchVerdict::Regression => t.slower += 1,
            BenchVerdict::Inconclusive => t.inconclusive += 1,
        }
        intervals.extend(r.figures.ci95);
        pooled.extend(r.pairs.iter().map(|p| p.ratio));
        t.pairs.push(r.pairs.len());
        t.runs += r.warmups.len() + 2 * (r.aa_pairs.len() + r.pairs.len());
    }
    t.truth = truth.unwrap_or_else(|| {
        pooled.sort_by(f64::total_cmp);
        pooled[pooled.len() / 2]
    });
    t.covered = intervals
        .iter()
        .filter(|ci| ci.lower <= t.truth && t.truth <= ci.upper)
        .count();
    t.seconds = started.elapsed().as_secs_f64();
    eprintln!("  done: {label} ({:.0} s)", t.seconds);
    t
}

fn hyperfine_mean(command: &str, runs: usize) -> Option<(f64, f64)> {
    let out = std::env::temp_dir().join(format!("evo-calib-hf-{}.json", std::process::id()));
    let started = Instant::now();
    let status = Command::new("hyperfine")
        .args(["-N", "--style", "none", "--warmup", "1", "--runs"])
        .arg(runs.to_string())
        .arg("--export-json")
        .arg(&out)
        .arg(command)
        .stdout(std::process::Stdio::null())
        .status()
        .ok()?;
    let elapsed = started.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&out).ok()?;
    let _ = std::fs::remove_file(&out);
    if !status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mean = v["results"][0]["mean"].as_f64()?;
    Some((mean, elapsed / (runs + 1) as f64))
}

fn pct_with_interval(x: usize, n: usize) -> String {
    let (lo, hi) = sim::clopper_pearson(x, n);
    format!(
        "{:.2}% ({:.2}–{:.2}%)",
        100.0 * x as f64 / n.max(1) as f64,
        100.0 * lo,
        100.0 * hi
    )
}

fn share(x: usize, n: usize) -> String {
    format!("{:.1}%", 100.0 * x as f64 / n.max(1) as f64)
}

/// The simulated calibration: noise models through the real decision, no processes.
fn simulated_main() {
    let reps = env_number("EVO_CALIB_SIM_REPS", 2000.0).max(1.0) as usize;
    // `EVO_CALIB_TABLES=plans`: only the plans against the runs.
    if std::env::var("EVO_CALIB_TABLES").is_ok_and(|t| t == "plans") {
        plans_against_runs(reps);
        return;
    }
    // `EVO_CALIB_TABLES=boundaries`: how often a true null crosses each side's boundary.
    if std::env::var("EVO_CALIB_TABLES").is_ok_and(|t| t == "boundaries") {
        boundaries_under_the_null(reps);
        return;
    }
    // `EVO_CALIB_TABLES=real`: the rules on the real noise of validation/noise/.
    if std::env::var("EVO_CALIB_TABLES").is_ok_and(|t| t == "real") {
        real_noise(reps);
        return;
    }
    // `EVO_CALIB_TABLES=rules`: rules side by side on the same pairs.
    if std::env::var("EVO_CALIB_TABLES").is_ok_and(|t| t == "rules") {
        rules_side_by_side(reps);
        return;
    }
    let caps: Vec<usize> = std::env::var("EVO_CALIB_MAX_PAIRS")
        .unwrap_or_else(|_| "9,60,200".to_string())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let settings = |max_pairs| sim::SimSettings {
        pairs: 9,
        max_pairs,
        aa_pairs: 11,
        min_effect: 0.01,
    };
    let started = Instant::now();
    eprintln!(
        "simulated calibration: first look 9 pairs, A/A pairs 11, min effect 1%, caps {caps:?}; \
         {} null and {reps} power repetitions per cell",
        5 * reps
    );
    println!(
        "\nNull (candidate identical to the baseline), {} repetitions per row:\n",
        5 * reps
    );
    println!(
        "| noise model | max pairs | false accepts (95% CI) | false regressions (95% CI) | \
         no real gain | inconclusive | pairs: median (mean) | fixed n at the cap: false accepts |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (m, model) in sim::MODELS.iter().enumerate() {
        for &cap in &caps {
            let t = sim::run(model.noise, 0.0, &settings(cap), 5 * reps, 1000 + m as u64);
            println!(
                "| {} | {cap} | {} | {} | {} | {} | {} ({:.1}) | {} |",
                model.name,
                pct_with_interval(t.accepted, t.reps),
                pct_with_interval(t.regression, t.reps),
                share(t.no_real_gain, t.reps),
                share(t.inconclusive, t.reps),
                t.median_pairs(),
                t.mean_pairs(),
                pct_with_interval(t.fixed_n_accepted, t.reps)
            );
        }
    }
    println!("\nPower (candidate truly faster), {reps} repetitions per row:\n");
    println!(
        "| noise model | max pairs | true speedup | accepted (95% CI) | inconclusive | \
         no real gain | pairs: median (mean) | fixed n at the cap: accepted |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (m, model) in sim::MODELS.iter().enumerate() {
        for &cap in &caps {
            for (e, effect) in [0.005, 0.015, 0.02, 0.03, 0.05, 0.10]
                .into_iter()
                .enumerate()
            {
                let seed = 2000 + 100 * m as u64 + 10 * e as u64;
                let t = sim::run(model.noise, effect, &settings(cap), reps, seed);
                println!(
                    "| {} | {cap} | {:.1}% | {} | {} | {} | {} ({:.1}) | {} |",
                    model.name,
                    100.0 * effect,
                    pct_with_interval(t.accepted, t.reps),
                    share(t.inconclusive, t.reps),
                    share(t.no_real_gain, t.reps),
                    t.median_pairs(),
                    t.mean_pairs(),
                    share(t.fixed_n_accepted, t.reps)
                );
            }
        }
    }
    println!(
        "\nHoldouts (σ from the training A/A pairs; gate: lower bound ≥ 0.99 at a look; Planned: \
         looks up to the planned cap, Fixed: one look at the configured pairs), {reps} \
         repetitions per row:\n"
    );
    println!(
        "| noise model | max pairs | pairs | null: no regression | null: rejected | 5% slower: \
         rejected | 5% slower: no regression | mean pairs (of mean cap) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (m, model) in sim::MODELS.iter().enumerate() {
        for &cap in &caps {
            for (p, pairs) in [sim::HoldoutPairs::Planned, sim::HoldoutPairs::Fixed]
                .into_iter()
                .enumerate()
            {
                let seed = 3000 + 100 * m as u64 + 10 * p as u64;
                let run = |ratio, seed| {
                    sim::run_holdout(model.noise, ratio, &settings(cap), pairs, reps, seed)
                };
                let (null, slower) = (run(1.0, seed), run(1.0 / 1.05, seed + 1));
                println!(
                    "| {} | {cap} | {pairs:?} | {} | {} | {} | {} | {:.1} (of {:.1}) |",
                    model.name,
                    pct_with_interval(null.no_regression, null.reps),
                    share(null.rejected, null.reps),
                    pct_with_interval(slower.rejected, slower.reps),
                    share(slower.no_regression, slower.reps),
                    null.mean_pairs(),
                    null.mean_cap()
                );
            }
        }
    }
    plans_against_runs(reps);
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
}

/// What the plan says before the first comparison pair, against what the runs then did: the
/// pairs by which a null is ruled out 80% of the time (a cap high enough not to cut it short),
/// and the gain the cap accepts 80% of the time (simulated at that gain).
fn plans_against_runs(reps: usize) {
    let reps = reps.min(500);
    println!(
        "\nPlans against runs (first look 9 pairs, 11 A/A pairs, minimum effect 1%), {reps} \
         repetitions per row. A null's plan: the pairs by which it is ruled out 80% of the time, \
         median (10th–90th percentile) over the runs' own A/A pairs, stated at σ (rules 7) and at \
         σ's upper 80% bound (the σ rules 6 planned at); realised: the share of runs ruled out by their own plan's \
         pairs, and the 80th percentile of the pairs run (a run the cap stops counts as the \
         cap). A gain's plan: the gain the cap accepts 80% of the time (median over runs), and \
         the share accepted when the true gain is the plan's at σ:\n"
    );
    println!(
        "| noise model | cap | null: planned at σ | planned at σ upper | ruled out by the plan \
         at σ | realised 80th percentile | gain at cap 60: planned at σ (at σ upper) | accepted \
         at that gain (95% CI) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let settings = |max_pairs| sim::SimSettings {
        pairs: 9,
        max_pairs,
        aa_pairs: 11,
        min_effect: 0.01,
    };
    for (m, model) in sim::MODELS.iter().enumerate() {
        let cap = 2000;
        let null = sim::run(model.noise, 0.0, &settings(cap), reps, 4000 + m as u64);
        let (lo, _) = null.planned_null_quantile(0.1);
        let (mid, mid_upper) = null.planned_null_quantile(0.5);
        let (hi, _) = null.planned_null_quantile(0.9);
        let sixty = sim::run(model.noise, 0.0, &settings(60), reps, 4100 + m as u64);
        let (gain, gain_upper) = sixty.planned_gain_median();
        let power = sim::run(model.noise, gain, &settings(60), reps, 4200 + m as u64);
        println!(
            "| {} | {cap} | {mid} ({lo}–{hi}) | {mid_upper} | {} | {} | {:.1}% ({:.1}%) | {} |",
            model.name,
            share(null.null_by_planned, null.reps),
            null.pairs_quantile(0.8),
            100.0 * gain,
            100.0 * gain_upper,
            pct_with_interval(power.accepted, power.reps)
        );
    }
}

/// The boundaries alone: a true null with no minimum effect (every look's interval above 1 is an
/// acceptance, below 1 a "slower"), looked at after every look up to the cap, for caps from one
/// look to many. Under noise symmetric about 0 the signed-rank statistic's null process is the
/// same whatever the noise's shape, so these rates, drawn with normal noise, hold for every such
/// noise.
fn boundaries_under_the_null(reps: usize) {
    println!(
        "\n| noise | cap | looks | crossed above (false accepts, 95% CI) | crossed below (95% CI) |"
    );
    println!("|---|---|---|---|---|");
    let cells = [&rules::CELLS[0]];
    for (c, cell) in cells.iter().enumerate() {
        let caps: Vec<usize> = std::env::var("EVO_CALIB_MAX_PAIRS")
            .unwrap_or_else(|_| "9,15,20,30,45,60,100,200".to_string())
            .split(',')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        for (i, cap) in caps.into_iter().enumerate() {
            let t = rules::compare_rules(cell, 0.0, 9, cap, 0.0, reps, 9000 + (10 * c + i) as u64);
            println!(
                "| {} | {cap} | {} | {} | {} |",
                cell.name,
                evo::stats::looks(9, cap).len(),
                pct_with_interval(t[0].accepted, reps),
                pct_with_interval(t[0].slower, reps),
            );
        }
    }
}

/// Every rule of `calibration/rules.rs` on the same pairs: pairs per decided verdict, decided
/// share and wrong decisions, per noise cell, cap and true effect; then evo's pairs against the
/// best alternative whose null in that cell and cap errs no more than the budget allows.
/// Wrong decisions at a true effect: accepted when not faster, slower when not slower, "no real
/// gain" when the gain is at least the minimum effect.
fn wrong_decisions(x: &rules::RuleTally, effect: f64, min_effect: f64) -> usize {
    let mut w = 0;
    if effect <= 0.0 {
        w += x.accepted;
    }
    if effect >= 0.0 {
        w += x.slower;
    }
    if effect >= min_effect {
        w += x.no_real_gain;
    }
    w
}

/// `EVO_CALIB_TABLES=real`: the rules replayed on the real noise of validation/noise/ (nulls by
/// resampling a recording's A/A pairs, effects by shifting them), beside evo's rule on normal
/// noise of the same σ.
fn real_noise(reps: usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation/noise");
    let recordings = real::load(&dir).unwrap_or_else(|e| panic!("the noise corpus: {e}"));
    let first = 9;
    let block = env_number("EVO_CALIB_BLOCK", 5.0).max(1.0) as usize;
    let null = match std::env::var("EVO_CALIB_NULL").as_deref() {
        Ok("centre") => real::Null::Centre,
        _ => real::Null::Flip,
    };
    let cap = env_number("EVO_CALIB_CAP", 60.0).max(9.0) as usize;
    let effects: [f64; 7] = [-0.05, 0.0, 0.01, 0.02, 0.03, 0.05, 0.10];
    eprintln!(
        "real noise: {} recordings, first look {first}, cap {cap}, blocks of {block} pairs, \
         null {null:?}, {reps} repetitions per row",
        recordings.len()
    );
    println!(
        "| recording | workload, load | started (UTC) | pairs | median wall | σ wall: sd / MAD | \
         σ user+sys: sd / MAD | voluntary / involuntary switches (median) | 1-min load |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &recordings {
        let walls: Vec<f64> = r.runs.iter().map(|x| x.wall_s).collect();
        let sigmas = |m| {
            let logs = r.pair_logs(m);
            format!(
                "{:.2}% / {:.2}%",
                100.0 * real::sd(&logs),
                100.0 * real::mad_sigma(&logs)
            )
        };
        println!(
            "| {} | {}, {} | {} | {} | {:.3} s | {} | {} | {} / {} | {:.2}–{:.2} |",
            r.file,
            r.workload,
            r.load,
            r.started,
            r.pair_logs(real::Metric::Wall).len(),
            real::median(&walls),
            sigmas(real::Metric::Wall),
            sigmas(real::Metric::Cpu),
            r.median_count(|x| x.voluntary_cs),
            r.median_count(|x| x.involuntary_cs),
            r.load_before,
            r.load_after
        );
    }
    print!("\n| recording | time | min effect | true effect |");
    for rule in rules::RULES {
        print!(" {}: pairs per decision (decided; wrong) |", rule.name());
    }
    println!(" rules 9 on normal noise of the MAD's σ |");
    println!("|---|---|---|---|{}---|", "---|".repeat(rules::RULES.len()));
    let mut seed = 9000;
    let mut nulls = Vec::new();
    for r in &recordings {
        for metric in [real::Metric::Wall, real::Metric::Cpu] {
            let logs = r.pair_logs(metric);
            // σ about the median: the recording's own offset (chance, for an A/A) is not noise.
            let centre = real::median(&logs);
            let centred: Vec<f64> = logs.iter().map(|x| x - centre).collect();
            let (sd, mad) = (real::sd(&centred), real::mad_sigma(&centred));
            let pool: Vec<f64> = match null {
                real::Null::Flip => logs.clone(),
                real::Null::Centre => {
                    let ratios: Vec<f64> = logs.iter().map(|x| x.exp()).collect();
                    let hl = evo::stats::signed_rank::estimate(&ratios, None).0.ln();
                    logs.iter().map(|x| x - hl).collect()
                }
            };
            for &effect in &effects {
                seed += 2;
                let draw = |rng: &mut rand_chacha::ChaCha8Rng| {
                    real::block_draw(&pool, cap, block, null, effect.ln_1p(), rng)
                };
                let t = rules::compare_rules_on(draw, sd, first, cap, r.min_effect, reps, seed);
                let normal = rules::Cell {
                    name: "normal",
                    shape: rules::Shape::Normal,
                    sigma: mad,
                };
                let sim =
                    rules::compare_rules(&normal, effect, first, cap, r.min_effect, reps, seed + 1);
                print!(
                    "| {} | {} | {:.0}% | {:+.0}% |",
                    r.file,
                    metric.name(),
                    100.0 * r.min_effect,
                    100.0 * effect
                );
                let cell = |x: &rules::RuleTally| {
                    format!(
                        "{:.1} ({}; {})",
                        x.pairs_per_decision(0),
                        share(x.decided(), reps),
                        share(wrong_decisions(x, effect, r.min_effect), reps)
                    )
                };
                for x in &t {
                    print!(" {} |", cell(x));
                }
                println!(" {} |", cell(&sim[0]));
                if effect == 0.0 {
                    nulls.push((r.file.clone(), metric, t[0].clone()));
                }
            }
        }
    }
    println!("\nrules 9 (evo) on each recording's null, {reps} repetitions each:\n");
    println!(
        "| recording | time | false accepts (95% CI) | called slower (95% CI) | no real gain |"
    );
    println!("|---|---|---|---|---|");
    for (file, metric, t) in &nulls {
        println!(
            "| {file} | {} | {} | {} | {} |",
            metric.name(),
            pct_with_interval(t.accepted, reps),
            pct_with_interval(t.slower, reps),
            share(t.no_real_gain, reps)
        );
    }
}

fn rules_side_by_side(reps: usize) {
    let (first, min_effect) = (9, 0.02);
    let caps: Vec<usize> = std::env::var("EVO_CALIB_MAX_PAIRS")
        .unwrap_or_else(|_| "60,200".to_string())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let effects = [-0.05, 0.0, 0.01, 0.02, 0.03, 0.05, 0.10];
    eprintln!(
        "rules side by side: first look {first}, minimum effect 2%, caps {caps:?}, {reps} \
         repetitions per row, every rule on the same pairs"
    );
    print!("| noise | cap | true effect |");
    for r in rules::RULES {
        print!(" {}: pairs per decision (decided; wrong) |", r.name());
    }
    println!(" evo ÷ best real alternative within the budget | evo ÷ oracle |");
    println!("|---|---|---|{}---|---|", "---|".repeat(rules::RULES.len()));
    let wrong = |x: &rules::RuleTally, effect: f64| wrong_decisions(x, effect, min_effect);
    let mut ratios: Vec<(f64, String)> = Vec::new();
    let mut seed = 7000;
    for cell in &rules::CELLS {
        for &cap in &caps {
            let rows: Vec<Vec<rules::RuleTally>> = effects
                .iter()
                .map(|&effect| {
                    seed += 1;
                    rules::compare_rules(cell, effect, first, cap, min_effect, reps, seed)
                })
                .collect();
            // A rule is within the budget in this cell and cap when its null accepts and calls
            // slower at most 2.5% of the time each (with 1.96 binomial standard errors of slack).
            let null = &rows[effects.iter().position(|&e| e == 0.0).unwrap_or(0)];
            let slack = 1.96 * (0.025 * 0.975 / reps as f64).sqrt();
            let within: Vec<bool> = null
                .iter()
                .map(|x| {
                    let rate = |k: usize| k as f64 / reps as f64;
                    rate(x.accepted) <= 0.025 + slack && rate(x.slower) <= 0.025 + slack
                })
                .collect();
            for (t, &effect) in rows.iter().zip(&effects) {
                print!("| {} | {cap} | {:+.0}% |", cell.name, 100.0 * effect);
                for (x, ok) in t.iter().zip(&within) {
                    print!(
                        " {:.1}{} ({}; {}) |",
                        x.pairs_per_decision(0),
                        if *ok { "" } else { "†" },
                        share(x.decided(), reps),
                        share(wrong(x, effect), reps)
                    );
                }
                let evo = t[0].pairs_per_decision(0);
                // The real alternatives: rules 8 and the t rule (the oracle knows σ).
                let best = (t.iter().zip(&within).skip(1).take(2))
                    .filter(|(_, ok)| **ok)
                    .map(|(x, _)| x.pairs_per_decision(0))
                    .fold(f64::INFINITY, f64::min);
                let oracle = t[3].pairs_per_decision(0);
                println!(" {:.2} | {:.2} |", evo / best, evo / oracle);
                if (evo / best).is_finite() && t[0].decided() * 10 >= reps {
                    let at = format!("{} cap {cap} effect {:+.0}%", cell.name, 100.0 * effect);
                    ratios.push((evo / best, at));
                }
            }
        }
    }
    ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median = ratios.get(ratios.len() / 2).map_or(f64::NAN, |r| r.0);
    match ratios.last() {
        Some((worst, at)) => println!(
            "\nevo ÷ the best real alternative within the budget, where evo decides at least \
             10%: median {median:.2}, worst {worst:.2} ({at}); † marks a rule whose null errs \
             beyond the budget in that noise and cap"
        ),
        None => println!("\nno cell decided"),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; this harness takes no arguments of its own.
    if std::env::var("EVO_CALIB_MODE").is_ok_and(|m| m == "simulated") {
        simulated_main();
        return;
    }
    let reps = env_number("EVO_CALIB_REPS", 100.0).max(1.0) as usize;
    let run_ms = env_number("EVO_CALIB_RUN_MS", 10.0);
    let dir = tempfile::tempdir().expect("temp dir");
    let spin = build_spin(dir.path());
    let model = TimeModel::fit(&spin, run_ms);
    let base_s = run_ms / 1000.0;
    let base_iters = model.iterations_for(base_s);
    let base = spin_command(&spin, base_iters);
    let faster = |speedup: f64| spin_command(&spin, model.iterations_for(base_s / speedup));
    let (c5, c2) = (faster(1.05), faster(1.02));
    eprintln!(
        "calibration: {reps} repetitions, baseline run {run_ms} ms ({base_iters} iterations; fixed cost {:.2} ms); minimum effect 1%",
        model.fixed_s * 1e3
    );
    let cap = env_number("EVO_CALIB_CAP", 60.0).max(9.0) as usize;
    let one = Looks { first: 9, cap: 9 };
    let seq = Looks { first: 9, cap };
    let tallies = [
        run_config(
            "A/A (identical), one look at 9",
            &base,
            &base,
            Some(1.0),
            one,
            reps * 2,
        ),
        run_config(
            &format!("A/A (identical), looks 9 to {cap}"),
            &base,
            &base,
            Some(1.0),
            seq,
            reps * 2,
        ),
        run_config("true 5%, one look at 9", &base, &c5, None, one, reps),
        run_config(
            &format!("true 5%, looks 9 to {cap}"),
            &base,
            &c5,
            None,
            seq,
            reps,
        ),
        run_config(
            &format!("true 2%, looks 9 to {cap}"),
            &base,
            &c2,
            None,
            seq,
            reps,
        ),
    ];
    println!(
        "\n| configuration | repetitions | accepted (95% CI) | no real gain | slower | inconclusive \
         | true ratio | interval coverage | pairs: median (mean) | evo s/run |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for t in &tallies {
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.4} | {} | {} ({:.1}) | {:.4} |",
            t.label,
            t.reps,
            pct_with_interval(t.accepted, t.reps),
            share(t.no_real_gain, t.reps),
            share(t.slower, t.reps),
            share(t.inconclusive, t.reps),
            t.truth,
            share(t.covered, t.reps),
            t.median_pairs(),
            t.mean_pairs(),
            t.seconds / t.runs as f64
        );
    }
    let evo_wall = mean_wall(&spin, base_iters, 31);
    let evo_cost = {
        let started = Instant::now();
        let _ = mean_wall(&spin, base_iters, 31);
        started.elapsed().as_secs_f64() / 31.0
    };
    println!("\noverhead, baseline command `spin {base_iters}`:");
    println!(
        "  evo:       measured {:.3} ms (median), {:.3} ms of wall clock per run (sh -c, helper, hashing)",
        evo_wall * 1e3,
        evo_cost * 1e3
    );
    match hyperfine_mean(&base, 31) {
        Some((mean, per_run)) => println!(
            "  hyperfine: measured {:.3} ms (mean, -N: no shell), {:.3} ms of wall clock per run",
            mean * 1e3,
            per_run * 1e3
        ),
        None => println!("  hyperfine: not available (apt-get install hyperfine to compare)"),
    }
}
