//! The `{seed}` placeholder of check and run commands (docs/design.md §4.5): in confirmation evo
//! fills it with a fresh random seed, the same for both arms, so a patch that memoizes the
//! benchmark's known inputs fails the differential.
//!
//! Every `{seed}` is replaced; there is no escaping, and other braces (`${HOME}`, `{}`,
//! `{ seed }`) are left alone.

pub const SEED_PLACEHOLDER: &str = "{seed}";

/// `command` with every `{seed}` replaced by the decimal `seed`.
pub fn fill_seed(command: &str, seed: u64) -> String {
    command.replace(SEED_PLACEHOLDER, &seed.to_string())
}

/// Whether `command` takes a seed at all.
pub fn has_seed(command: &str) -> bool {
    command.contains(SEED_PLACEHOLDER)
}

/// One seed from a fresh [`Seeds`](crate::measure::seeds::Seeds).
pub fn fresh_seed() -> std::io::Result<u64> {
    crate::measure::seeds::Seeds::fresh().map(|mut s| s.next_seed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_every_placeholder() {
        assert_eq!(
            fill_seed("./run.sh 700 {seed} --check={seed}", 42),
            "./run.sh 700 42 --check=42"
        );
        assert_eq!(
            fill_seed("{seed}{seed}", u64::MAX),
            format!("{0}{0}", u64::MAX)
        );
    }

    #[test]
    fn leaves_other_braces_alone() {
        let cmd = "echo ${HOME} {} { seed } {SEED} {seed";
        assert_eq!(fill_seed(cmd, 7), cmd);
        assert!(!has_seed(cmd));
        assert_eq!(fill_seed("{{seed}}", 7), "{7}");
    }

    #[test]
    fn fresh_seeds_differ() {
        let a = fresh_seed().expect("reads /dev/urandom");
        let b = fresh_seed().expect("reads /dev/urandom");
        assert_ne!(a, b, "two 64-bit random seeds collided");
    }
}
