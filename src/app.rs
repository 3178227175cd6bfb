//! What each subcommand does, between parsed arguments and an exit code: [`run`] hands each one
//! to the module named for it, which reads its arguments, runs the library and reports.

mod agent;
mod bench;
mod campaign;
mod confirm;
mod docs;
mod init;
mod keys;
mod pr;
mod verify;

use anyhow::Context;

use crate::cli::{AgentCommand, CampaignCommand, Cli, Command, PrCommand, ReceiptCommand};
use crate::exit_codes;
use crate::failure::Failure;

pub use bench::bench_plan;

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> Result<i32, Failure> {
    match cli.command {
        Command::Agent(AgentCommand::BuildFlags) => agent::build_flags_command(),
        Command::Bench(args) => bench::bench_command(args),
        Command::Confirm(args) => confirm::confirm_command(args),
        Command::Campaign(CampaignCommand::Run(args)) => campaign::campaign_command(args),
        Command::Campaign(CampaignCommand::ScreenJob(args)) => campaign::screen_job_command(args),
        Command::Init(args) => init::init_command(args),
        Command::Keygen(args) => keys::keygen_command(args),
        Command::Receipt(ReceiptCommand::Verify(args)) => verify::verify_command(args),
        Command::Pr(PrCommand::Render(args)) => pr::pr_render_command(args),
        Command::Schema { kind } => docs::schema_command(kind),
        Command::Completions { shell } => docs::completions_command(shell),
        Command::Man(args) => docs::man_command(args),
    }
}

/// This machine's runners, with this `evo` binary as their helper and the timed runs' CPU split
/// (what `evo confirm`, `evo campaign run` and a screening job measure with).
fn local_runners(
    affinity: crate::spec::modes::Affinity,
) -> anyhow::Result<std::sync::Arc<dyn crate::measure::runner::RunnerFactory>> {
    Ok(std::sync::Arc::new(crate::measure::local::LocalRunners {
        helper: std::env::current_exe().context("cannot locate the evo executable")?,
        affinity,
    }))
}

/// The exit code under `--fail-on`; says so when a verdict's code is not kept, so a CI log shows
/// why a rejection passed.
fn fail_on(code: i32, verdict: &str, kept: &[exit_codes::FailOn]) -> i32 {
    let exit = exit_codes::under_fail_on(code, kept);
    if exit != code {
        eprintln!("evo: exit code {exit} for a verdict of {verdict}: --fail-on does not list it");
    }
    exit
}
