//! Measurement: running commands and arranging runs into pairs.
//!
//! `runner` is the seam to processes (`spawn` for real ones through the `helper` mode, handed out
//! by `local`; `fake` for tests); `schedule` decides the order of runs (`multi_arm` the rounds that share one baseline run); `record` holds what they
//! leave behind; `sandbox` isolates every command (`readonly` keeps a build's protected paths read-only), and `caches` finds the build caches a fleet's
//! nodes of one machine kind share. `error` holds why a measurement could not be made (the
//! sandbox, evo's process 1, the helper, callgrind), each error with its cause.

pub mod caches;
pub mod callgrind;
pub mod callgrind_profile;
pub mod cpus;
pub mod error;
pub mod fake;
pub mod helper;
pub mod init;
pub mod limits;
pub mod local;
pub mod multi_arm;
pub mod overlay;
pub mod readonly;
pub mod record;
pub mod runner;
pub mod sandbox;
pub mod schedule;
pub mod seeds;
pub mod spawn;
pub mod view;
