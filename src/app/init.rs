//! `evo init`: the starting input files for the repository here (docs/design.md §2.6).

use anyhow::Context;

use crate::cli::InitArgs;
use crate::exit_codes;
use crate::failure::Failure;
use crate::report::terminal;

pub(super) fn init_command(args: InitArgs) -> Result<i32, Failure> {
    use crate::scaffold::{self, InitOptions};
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let options = InitOptions {
        run: args.run,
        check: args.check,
        force: args.force,
    };
    let done = scaffold::init(&cwd, &options)?;
    print!("{}", terminal::render_init(&done));
    Ok(exit_codes::ACCEPTED)
}
