//! `evo agent build-flags`: the built-in agent of a search (docs/design.md §2.9), run as a
//! command.

use anyhow::Context;

use crate::exit_codes;
use crate::failure::Failure;

/// The brief from stdin, the change made here, its reason beside it.
pub(super) fn build_flags_command() -> Result<i32, Failure> {
    use crate::search::build_flags::{Proposal, propose};
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .context("cannot read the brief from stdin")?;
    let brief: crate::search::Brief = serde_json::from_str(&text).map_err(|e| {
        let reading = "stdin is not a brief (`evo schema brief` describes one)";
        Failure::usage(crate::failure::Doing::new(reading, e))
    })?;
    let here = std::env::current_dir().context("cannot find the current folder")?;
    match propose(&brief, &here).context("cannot change the build configuration")? {
        Proposal::Changed {
            file,
            step,
            explanation,
        } => {
            std::fs::write(here.join(&brief.explanation_file), &explanation)
                .with_context(|| format!("cannot write {}", brief.explanation_file))?;
            println!("build-flags: {}: added {step}", file.display());
        }
        Proposal::Nothing(why) => println!("build-flags: no change: {why}"),
    }
    Ok(exit_codes::ACCEPTED)
}
