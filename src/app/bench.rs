//! `evo bench`: one paired comparison of two commands, its table and its exit code
//! (docs/design.md §2.5).

use std::time::Duration;

use anyhow::Context;

use crate::bench::{self, BenchPlan};
use crate::cli::{BenchArgs, FirstArm};
use crate::evidence::figures::BenchSettings;
use crate::exit_codes;
use crate::failure::Failure;
use crate::live::Live;
use crate::measure::record::Order;
use crate::measure::runner::RunSpec;
use crate::measure::spawn::ProcessRunner;
use crate::path::shown;
use crate::report::events::{Final, Source};
use crate::report::terminal;
use crate::stats::BenchVerdict;

/// Turns `evo bench` arguments into a plan the measurement trusts; its random order and default
/// seed come from `seeds`.
pub fn bench_plan(args: &BenchArgs, seeds: &mut crate::measure::seeds::Seeds) -> BenchPlan {
    let timeout = Duration::from_secs_f64(args.timeout);
    let spec = |command: &str| RunSpec {
        cwd: args.cwd.clone(),
        ..RunSpec::new(command, timeout)
    };
    BenchPlan {
        earlier_aa: None,
        baseline: spec(&args.baseline),
        candidate: spec(&args.candidate),
        baseline_again: None,
        quiet: None,
        env_pad: args.env_pad == crate::cli::Switch::On,
        settings: BenchSettings {
            pairs: args.pairs as usize,
            max_pairs: crate::spec::campaign::pair_cap(
                args.pairs as usize,
                args.max_pairs.map(|m| m as usize),
            ),
            budget_s: args.max_minutes.map(|m| 60.0 * m),
            aa_pairs: args.aa_pairs as usize,
            warmup: args.warmup as usize,
            min_effect: args.min_effect,
            target_effect: args
                .target_effect
                .unwrap_or_else(|| crate::stats::default_target_effect(args.min_effect)),
            first: match args.first {
                FirstArm::Candidate | FirstArm::Random => Order::CandidateFirst,
                FirstArm::Baseline => Order::BaselineFirst,
            },
            order_seed: (args.first == FirstArm::Random).then(|| seeds.next_seed()),
            mde_seed: args.seed.unwrap_or_else(|| seeds.next_seed()),
            timeout_s: args.timeout,
        },
    }
}

pub(super) fn bench_command(args: BenchArgs) -> Result<i32, Failure> {
    if let Some(target) = args.target_effect {
        if target <= args.min_effect {
            return Err(Failure::usage(format!(
                "--target-effect ({target}) must be above --min-effect ({}): a true speedup \
                 exactly at the minimum effect clears it only half the time, whatever the pairs",
                args.min_effect
            )));
        }
    }
    let mut live = Live::new(args.json, Source::Bench);
    // A bench has no run directory or commit: its id is the time it started.
    let id = crate::pipeline::rundir::run_id(std::time::SystemTime::now(), "bench", "");
    live.set_run_id(id.trim_end_matches('-'));
    live.reported(|live| bench_with(&args, live))
}

fn bench_with(args: &BenchArgs, live: &mut Live) -> Result<Final, Failure> {
    let mut seeds = crate::measure::seeds::Seeds::fresh().context("cannot read a fresh seed")?;
    let mut plan = bench_plan(args, &mut seeds);
    let mut runner = ProcessRunner::new()
        .context("cannot locate the evo executable")?
        .with_affinity(args.affinity)
        .with_env_pad(plan.env_pad);
    let quiet = (args.quiet_wait > 0).then(|| {
        live.stage("wait for a quiet machine");
        let limit = Duration::from_secs(u64::from(args.quiet_wait));
        crate::environment::wait_for_quiet(limit, crate::environment::QUIET_SAMPLE, &|| false)
    });
    plan.quiet = quiet.flatten();
    live.stage("measure");
    live.expect_runs(2 * (plan.settings.warmup + plan.settings.aa_pairs + plan.settings.pairs));
    // A command that takes `{seed}` computes on a fresh one in every pair (both arms the same).
    let mut draw = || seeds.next_seed();
    let mut inputs = crate::measure::schedule::Inputs {
        seeds: Some(&mut draw),
        agree: None,
    };
    let result = bench::run_bench(&plan, &mut runner, &mut inputs, &mut |e| live.run(e));
    live.finish_progress();
    let report = result.map_err(|e| Failure::from(anyhow::Error::new(e)))?;
    if let Some(path) = &args.export_json {
        let text = serde_json::to_string_pretty(&report).context("cannot serialize the report")?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the JSON report to {}", path.display()))?;
    }
    let code = match report.figures.verdict {
        BenchVerdict::Accepted => exit_codes::ACCEPTED,
        BenchVerdict::Regression => exit_codes::REJECTED,
        BenchVerdict::NoRealGain | BenchVerdict::Inconclusive => exit_codes::INCONCLUSIVE,
    };
    live.say(&terminal::render_bench(&report));
    Ok(Final {
        verdict: Some(report.figures.verdict.as_str().to_string()),
        exit_code: code,
        result: args.export_json.as_deref().map(shown),
        ..Final::default()
    })
}
