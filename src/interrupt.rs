//! Ctrl-C (SIGINT), SIGTERM and SIGHUP as a clean stop.
//!
//! The first signal only sets a flag. The running command is stopped by its helper (which turns
//! the same signal into TERM, grace, KILL of the command's group, see `measure::helper`); the
//! runner then reports [`RunnerError::Interrupted`](crate::measure::runner::RunnerError) instead
//! of a record, so a run cut short is never mistaken for a result: no failed build, no slow pair.
//! The pipelines turn that into an interrupted stop that keeps everything finished so far. A
//! second signal ends evo at once (exit 130); the journal and written files survive that too.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_signal: libc::c_int) {
    if REQUESTED.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(crate::exit_codes::INTERRUPTED) };
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP. Call once, early, from `main`.
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only touches an atomic and calls _exit, both async-signal-safe;
        // the sigaction struct is fully initialized before use.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Whether the user asked evo to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// What evo tells the user when it stops on request.
pub const MESSAGE: &str = "interrupted (Ctrl-C or a stop signal): the command that was running \
                           was stopped and no result was drawn from it";
