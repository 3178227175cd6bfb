//! Shell completions and man pages, generated from the clap definitions in [`crate::cli`] so they
//! cannot drift from what the parser accepts.
//!
//! evo's internal helper modes (`__exec-helper`, `__sandbox-init`) are read from the raw
//! arguments before clap runs, so they are no clap subcommands and appear in neither.

use std::io;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::cli::Cli;

/// The name completions are registered for and man pages are titled with.
const BIN: &str = "evo";

/// The completion script for `shell`, as `evo completions SHELL` prints it.
pub fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, BIN, &mut out);
    out
}

/// The roff source of `evo(1)`, as `evo man` prints it.
pub fn man_page() -> io::Result<Vec<u8>> {
    let mut root = command();
    root.build();
    render(&root)
}

/// One man page written by [`write_man_pages`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManPage {
    /// `evo`, `evo bench`, `evo campaign run`, ...
    pub command: String,
    pub file: PathBuf,
}

/// Writes `evo.1` and one page per visible subcommand (`evo-campaign-run.1`, ...) into `dir`,
/// which is created if missing; existing pages of the same names are replaced.
pub fn write_man_pages(dir: &Path) -> io::Result<Vec<ManPage>> {
    std::fs::create_dir_all(dir)?;
    let mut root = command();
    // Building names every subcommand as its page and synopsis need: `evo-campaign-run` and
    // `evo campaign run`.
    root.build();
    let mut pages = Vec::new();
    write_tree(&root, dir, &mut pages)?;
    Ok(pages)
}

/// evo's command line without the `help` subcommand, which `--help` covers and which would
/// otherwise get a page of its own.
fn command() -> clap::Command {
    Cli::command().disable_help_subcommand(true)
}

fn write_tree(cmd: &clap::Command, dir: &Path, pages: &mut Vec<ManPage>) -> io::Result<()> {
    let name = cmd.get_display_name().unwrap_or(BIN);
    let file = dir.join(format!("{name}.1"));
    std::fs::write(&file, render(cmd)?)?;
    pages.push(ManPage {
        command: cmd.get_bin_name().unwrap_or(BIN).to_string(),
        file,
    });
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_tree(sub, dir, pages)?;
    }
    Ok(())
}

/// The page of a built command. An exit-code list in its `after_help` becomes an EXIT STATUS
/// section with one entry per code: as clap_mangen's EXTRA section, its lines would be filled
/// into one paragraph.
fn render(cmd: &clap::Command) -> io::Result<Vec<u8>> {
    let lists_exit_codes = cmd
        .get_after_help()
        .is_some_and(|h| h.to_string() == crate::exit_codes::help());
    let page_cmd = if lists_exit_codes {
        cmd.clone().after_help(None::<&str>)
    } else {
        cmd.clone()
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(page_cmd)
        .source(concat!("evo ", env!("CARGO_PKG_VERSION")))
        .render(&mut page)?;
    if !lists_exit_codes {
        return Ok(page);
    }
    let page = String::from_utf8_lossy(&page).into_owned();
    let section = exit_status_section();
    // Before VERSION, where man pages usually keep it; at the end if there is none.
    let page = match page.find("\n.SH VERSION") {
        Some(at) => format!("{}\n{section}{}", &page[..at], &page[at + 1..]),
        None => format!("{page}{section}"),
    };
    Ok(page.into_bytes())
}

/// `.SH EXIT STATUS` with each code of [`crate::exit_codes::ALL`] and its meaning.
fn exit_status_section() -> String {
    use clap_mangen::roff::{Roff, bold, roman};
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for d in crate::exit_codes::ALL {
        roff.control("TP", []);
        roff.text([bold(d.code.to_string())]);
        roff.text([roman(d.meaning)]);
    }
    roff.to_roff()
}
