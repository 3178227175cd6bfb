//! Entry point: parse, run, report the error chain, pick the exit code.

use std::process::ExitCode;

use tinygpt::cli::{self, Parsed};

/// Exit codes: 0 success, 1 the run failed, 2 the command line was wrong.
const EXIT_FAILURE: u8 = 1;
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let plan = match cli::parse(&args) {
        Ok(Parsed::Run(plan)) => plan,
        Ok(Parsed::Help) => {
            print!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("tinygpt: {e:#}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match tinygpt::run(&plan, &mut std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tinygpt: {e:#}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
