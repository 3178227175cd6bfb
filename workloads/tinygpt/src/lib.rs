//! tinygpt: a small character-level GPT trainer on tch, the reference workload evo measures.
//!
//! Stages, one module each: [`cli`] parses the arguments into a plan, [`corpus`] generates the
//! text, [`data`] turns it into batches, [`model`] is the transformer, [`train`] runs the
//! optimizer steps and [`report`] renders what happened.

pub mod cli;
pub mod config;
pub mod corpus;
pub mod data;
pub mod model;
pub mod report;
pub mod train;

use std::io::Write;

use anyhow::{ensure, Context, Result};

use cli::{Command, Plan};

/// Runs a parsed plan, writing its deterministic output to `out`.
pub fn run(plan: &Plan, out: &mut dyn Write) -> Result<()> {
    let config = &plan.config;
    match plan.command {
        // Both print every step's loss in full: a timed run's output then shows everything it
        // computed, so a step skipped or a result replayed from another run shows too.
        Command::Train | Command::Check => {
            writeln!(out, "{}", report::header(plan.command, config))?;
            let mut lines = Vec::new();
            let summary = train::train(config, &mut |step| lines.push(report::step_line(step)))?;
            for line in &lines {
                writeln!(out, "{line}")?;
            }
            writeln!(out, "{}", report::summary(&summary))?;
        }
        Command::Selftest => {
            let summary = train::train(config, &mut |_| {}).context("selftest training run")?;
            ensure!(
                summary.final_loss < summary.first_loss,
                "selftest: the loss did not fall ({:.4} -> {:.4})",
                summary.first_loss,
                summary.final_loss
            );
            writeln!(out, "{}", report::selftest(&summary, config.steps))?;
        }
    }
    out.flush()?;
    Ok(())
}
