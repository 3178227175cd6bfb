//! The helper mode of the `evo` binary. (In progress.)

/// The first argument that puts `evo` into helper mode.
pub const HELPER_ARG: &str = "__exec-helper";

/// Called first thing in `main`: when the arguments ask for helper mode, runs it and returns the
/// exit code; otherwise returns `None` without touching anything.
pub fn maybe_run_helper() -> Option<i32> {
    None
}
