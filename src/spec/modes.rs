//! How the campaign file and the command line ask evo to run what it measures: the sandbox mode,
//! the CPU affinity, and evo's own variables that no program it runs ever gets. They are named
//! here, with the input files, and `measure` carries them out.

use serde::{Deserialize, Serialize};

/// What the campaign asked for.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Use bubblewrap when it works on this machine; otherwise run unsandboxed and say so.
    #[default]
    Auto,
    /// Require bubblewrap; stop before anything runs when it does not work.
    On,
    /// Never sandbox.
    Off,
}

/// Whether evo keeps its own work off the timed command's CPUs.
///
/// `auto` does not split. The split is not enforced on the command: any process may widen its own
/// CPU mask (`sched_setaffinity` needs no privilege), so a hostile candidate could take evo's CPU
/// back and run on one CPU more than the baseline, which keeps to the split. Until the sandbox
/// enforces the mask, the split is for trusted candidates only (`split`), and it bought nothing
/// measurable anyway: on the 2-core machine kind this project measured (`scripts/noise-measures`,
/// docs/calibration.md, "What each noise measure buys") it did not lower the trainer's per-pair
/// noise, quiet or loaded.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Affinity {
    /// `off`, until the sandbox can hold a command to its CPUs (see above).
    #[default]
    Auto,
    /// Everything may run on every CPU evo may use.
    Off,
    /// evo on the first CPU it may use, the timed command on all the others (needs two or more).
    Split,
}

impl Affinity {
    /// Whether to split `allowed` CPUs.
    pub fn splits(self, allowed: usize) -> bool {
        match self {
            Affinity::Off | Affinity::Auto => false,
            Affinity::Split => allowed >= 2,
        }
    }
}

/// Holds the signing key's PKCS#8 PEM text (a CI secret, read by `receipt::keys`); when set, it
/// signs, whatever the campaign's `key` says.
pub const SIGNING_KEY_ENV: &str = "EVO_SIGNING_KEY";

/// Variables of evo's that no program evo runs ever gets, whatever a campaign's `pass_env` says
/// (the campaign loader refuses to name them; this holds for plans built another way too).
const NEVER_PASSED: &[&str] = &[SIGNING_KEY_ENV];

/// Whether `name` is one of evo's variables that no program evo runs may get.
pub fn never_passed(name: &str) -> bool {
    NEVER_PASSED.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_never_splits_since_a_candidate_could_undo_it() {
        assert!(!Affinity::Auto.splits(2));
        assert!(!Affinity::Auto.splits(64));
        assert!(Affinity::Split.splits(2));
        assert!(!Affinity::Split.splits(1));
        assert!(!Affinity::Off.splits(64));
    }
}
