//! The `evo` binary: parse arguments, run, print the error chain, pick the exit code.

use clap::Parser;

fn main() {
    // Helper mode must run before anything else allocates: see `measure::helper`.
    if let Some(code) = evo::measure::helper::maybe_run_helper() {
        std::process::exit(code);
    }
    if let Some(code) = evo::measure::init::maybe_run_init() {
        std::process::exit(code);
    }
    let cli = evo::cli::Cli::parse();
    evo::interrupt::install();
    let code = match evo::app::run(cli) {
        Ok(code) => code,
        Err(failure) => {
            eprint!("{}", failure.render());
            failure.code
        }
    };
    std::process::exit(code);
}
