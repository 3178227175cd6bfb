//! Ctrl-C (SIGINT), SIGTERM and SIGHUP as a clean stop.
//!
//! The first signal only sets a flag. The running command is stopped by its helper (which turns
//! the same signal into TERM, grace, KILL of the command's group, see `measure::helper`); the
//! runner then reports [`RunnerError::Interrupted`](crate::measure::runner::RunnerError) instead
//! of a record, so a run cut short is never mistaken for a result: no failed build, no slow pair.
//! The pipelines turn that into an interrupted stop that keeps everything finished so far. A
//! second signal ends evo at once (exit 130); the journal and written files survive that too.

use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::flag;

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP. Call once, early, from `main`.
///
/// Per signal, two actions run in the order they were registered: the first exits at once
/// (`_exit`, no at-exit hooks) when the flag is already set, the second sets it. So the first
/// signal only sets the flag and the second ends evo with [`INTERRUPTED`]. evo cannot run without
/// its stop signals, so a refused registration (only for signals that cannot be caught) panics.
///
/// [`INTERRUPTED`]: crate::exit_codes::INTERRUPTED
pub fn install() {
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        flag::register_conditional_shutdown(signal, crate::exit_codes::INTERRUPTED, &REQUESTED)
            .and_then(|_| flag::register(signal, &REQUESTED))
            .expect("SIGINT, SIGTERM and SIGHUP can be caught");
    }
}

/// Whether the user asked evo to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// What evo tells the user when it stops on request.
pub const MESSAGE: &str = "interrupted (Ctrl-C or a stop signal): the command that was running \
                           was stopped and no result was drawn from it";

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use rustix::process::{Signal, getpid, kill_process};

    use super::*;

    /// Set in the copy of this test binary that installs the handlers and signals itself.
    const CHILD: &str = "EVO_INTERRUPT_TEST_CHILD";
    const FLAG_SET: &str = "first signal: flag set, still running";

    /// In the child: waits (a bounded time) until the handler has set the flag.
    fn flag_within(limit: Duration) -> bool {
        let start = Instant::now();
        while !requested() && start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(5));
        }
        requested()
    }

    #[test]
    fn the_first_signal_only_sets_the_flag_and_the_second_exits_with_130() {
        if std::env::var_os(CHILD).is_some() {
            install();
            assert!(!requested());
            kill_process(getpid(), Signal::INT).unwrap();
            assert!(flag_within(Duration::from_secs(5)), "no flag after SIGINT");
            println!("{FLAG_SET}");
            kill_process(getpid(), Signal::TERM).unwrap();
            std::thread::sleep(Duration::from_secs(10));
            // Still alive: the second signal did not end the process.
            std::process::exit(3);
        }
        let name =
            "interrupt::tests::the_first_signal_only_sets_the_flag_and_the_second_exits_with_130";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(FLAG_SET),
            "{}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(crate::exit_codes::INTERRUPTED));
    }
}
