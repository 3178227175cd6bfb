//! Judging what check commands print (docs/design.md §4): the differential comparison of a
//! candidate's output with the baseline's, sanitizer reports on stderr, and the `{seed}` that
//! makes the inputs unknown to the candidate.
//!
//! Pure functions: running the commands is the runner's job, and the only I/O here is reading
//! `/dev/urandom` for a fresh seed.

pub mod compare;
pub mod draw;
mod excerpt;
pub mod sanitizer;
pub mod seed;
mod tokens;
pub mod words;

pub use compare::{Comparison, Mismatch, compare_outputs};
pub use sanitizer::{SanitizerKind, SanitizerReport, find_sanitizer_report};
pub use seed::{SEED_PLACEHOLDER, fill_seed, fresh_seed, has_seed};
