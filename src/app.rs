//! What each subcommand does, between parsed arguments and an exit code.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::bench::{self, BenchPlan, BenchSettings};
use crate::cli::{BenchArgs, Cli, Command, ConfirmArgs, FirstArm};
use crate::exit_codes;
use crate::measure::record::Order;
use crate::measure::runner::RunSpec;
use crate::measure::schedule::{Phase, RunEvent};
use crate::measure::spawn::ProcessRunner;
use crate::report::terminal;
use crate::stats::BenchVerdict;

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Bench(args) => bench_command(args),
        Command::Confirm(args) => confirm_command(args),
        Command::Schema { kind } => {
            println!("{}", crate::spec::schema(kind));
            Ok(exit_codes::ACCEPTED)
        }
    }
}

fn default_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// Turns `evo bench` arguments into a plan the measurement trusts.
pub fn bench_plan(args: &BenchArgs) -> BenchPlan {
    let timeout = Duration::from_secs_f64(args.timeout);
    let spec = |command: &str| RunSpec {
        cwd: args.cwd.clone(),
        ..RunSpec::new(command, timeout)
    };
    BenchPlan {
        baseline: spec(&args.baseline),
        candidate: spec(&args.candidate),
        settings: BenchSettings {
            pairs: args.pairs as usize,
            aa_pairs: args.aa_pairs as usize,
            warmup: args.warmup as usize,
            min_effect: args.min_effect,
            first: match args.first {
                FirstArm::Candidate => Order::CandidateFirst,
                FirstArm::Baseline => Order::BaselineFirst,
            },
            mde_seed: args.seed.unwrap_or_else(default_seed),
            timeout_s: args.timeout,
        },
    }
}

fn progress_bar() -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(0), target);
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} runs, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

fn show_progress(bar: &ProgressBar, event: RunEvent) {
    let phase = match event.phase {
        Phase::Warmup => "warmup",
        Phase::AaPairs => "A/A pairs",
        Phase::Pairs => "pairs",
    };
    if event.done == 0 {
        bar.set_message(phase);
        bar.set_length(event.total as u64);
        bar.set_position(0);
    }
    bar.set_position(event.done as u64 + 1);
}

fn bench_command(args: BenchArgs) -> anyhow::Result<i32> {
    let plan = bench_plan(&args);
    let mut runner = ProcessRunner::new().context("cannot locate the evo executable")?;
    let bar = progress_bar();
    let result = bench::run_bench(&plan, &mut runner, &mut |e| show_progress(&bar, e));
    bar.finish_and_clear();
    let report = result?;
    print!("{}", terminal::render_bench(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the JSON report to {}", path.display()))?;
    }
    Ok(match report.figures.verdict {
        BenchVerdict::Accepted => exit_codes::ACCEPTED,
        BenchVerdict::Regression => exit_codes::REJECTED,
        BenchVerdict::NotSignificant | BenchVerdict::Inconclusive => exit_codes::INCONCLUSIVE,
    })
}

fn confirm_command(args: ConfirmArgs) -> anyhow::Result<i32> {
    use crate::confirm::{self, ConfirmEvent, ConfirmOptions};
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let plan = match crate::plan::confirm_plan(&args.patch, args.campaign.as_deref(), &cwd) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit_codes::USAGE_ERROR);
        }
    };
    let opts = ConfirmOptions {
        helper: std::env::current_exe().context("cannot locate the evo executable")?,
        work_dir: args.work_dir.clone(),
    };
    let bar = progress_bar();
    let mut on_event = |e: ConfirmEvent| match e {
        ConfirmEvent::Stage(name) => {
            bar.set_message(name.clone());
            if bar.is_hidden() {
                eprintln!("evo: {name}");
            }
        }
        ConfirmEvent::Run(run) => show_progress(&bar, run),
    };
    let outcome = confirm::run_confirm(&plan, &opts, &mut on_event);
    bar.finish_and_clear();
    match outcome {
        Ok(done) => {
            print!("{}", terminal::render_confirm(&done.result, &done.run_dir));
            Ok(done.result.verdict.exit_code())
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(e.exit_code())
        }
    }
}
