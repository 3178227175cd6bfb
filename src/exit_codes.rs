//! evo's exit codes, in one place, so scripts can branch on a verdict.
//!
//! The README documents the same table.

/// The candidate is accepted: it is faster, beyond noise, by at least the practical threshold.
pub const ACCEPTED: i32 = 0;
/// evo itself failed (I/O, a command that could not be run, a bug); nothing was decided.
pub const INTERNAL_ERROR: i32 = 1;
/// The command line or an input file is wrong; nothing was run.
pub const USAGE_ERROR: i32 = 2;
/// The candidate is rejected: a gate failed or it is significantly slower.
pub const REJECTED: i32 = 3;
/// The evidence does not decide: not significant, too few pairs, or a biased A/A check.
pub const INCONCLUSIVE: i32 = 4;
/// `evo receipt verify` / `evo pr render`: the receipt is not authentic (signature, key id,
/// payload type or layout) or its figures do not follow from its raw runs (`--recompute`).
pub const VERIFICATION_FAILED: i32 = 5;
/// Stopped by Ctrl-C or a stop signal (128 + SIGINT, as shells report it); nothing was decided,
/// everything finished before the stop is kept.
pub const INTERRUPTED: i32 = 130;
