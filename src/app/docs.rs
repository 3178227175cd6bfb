//! `evo schema`, `evo completions` and `evo man`: the documents evo prints about itself.

use std::io::Write;

use anyhow::Context;

use crate::cli::{ManArgs, SchemaArg};
use crate::exit_codes;
use crate::failure::Failure;
use crate::path::shown;

/// `evo schema KIND`: the JSON Schema of an input file, of what evo writes, or of the brief.
pub(super) fn schema_command(kind: SchemaArg) -> Result<i32, Failure> {
    use crate::spec::SchemaKind;
    let text = match kind {
        SchemaArg::Workload => crate::spec::schema(SchemaKind::Workload),
        SchemaArg::Campaign => crate::spec::schema(SchemaKind::Campaign),
        SchemaArg::Holdouts => crate::spec::schema(SchemaKind::Holdouts),
        SchemaArg::Result => output_schema(schemars::schema_for!(
            crate::evidence::result::ConfirmResult
        )),
        SchemaArg::Summary => {
            output_schema(schemars::schema_for!(crate::evidence::summary::Summary))
        }
        SchemaArg::Bench => {
            output_schema(schemars::schema_for!(crate::evidence::figures::BenchReport))
        }
        SchemaArg::Events => crate::report::events::schema(),
        SchemaArg::Brief => crate::search::brief::schema(),
    };
    print_all(&(text + "\n"))
}

/// `evo completions SHELL`: the shell's completion script.
pub(super) fn completions_command(shell: clap_complete::Shell) -> Result<i32, Failure> {
    print_all(&String::from_utf8_lossy(
        &crate::cli_docs::completion_script(shell),
    ))
}

/// Writes a whole document to stdout; a reader that stopped early (`| head`) is not an error.
fn print_all(text: &str) -> Result<i32, Failure> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(anyhow::Error::new(e)
            .context("cannot write to stdout")
            .into()),
        _ => Ok(exit_codes::ACCEPTED),
    }
}

fn output_schema(schema: schemars::Schema) -> String {
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}

/// `evo man [--out DIR]`: the man page on stdout, or one page a command into `DIR`.
pub(super) fn man_command(args: ManArgs) -> Result<i32, Failure> {
    match &args.out {
        None => {
            let page = crate::cli_docs::man_page().context("cannot render the man page")?;
            std::io::stdout()
                .write_all(&page)
                .context("cannot write the man page")?;
        }
        Some(dir) => {
            let pages = crate::cli_docs::write_man_pages(dir)
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
            for page in pages {
                println!("{}: {}", page.command, shown(&page.file));
            }
        }
    }
    Ok(exit_codes::ACCEPTED)
}
