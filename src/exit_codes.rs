//! evo's exit codes, in one place, so scripts can branch on a verdict.
//!
//! The README documents the same table; `--help` prints it from [`ALL`].

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

/// One exit code as `--help` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Described {
    pub code: i32,
    pub meaning: &'static str,
}

/// Every exit code with a one-line meaning, in the order `--help` lists them.
pub const ALL: [Described; 7] = [
    Described {
        code: ACCEPTED,
        meaning: "accepted (or the command succeeded)",
    },
    Described {
        code: INTERNAL_ERROR,
        meaning: "evo failed; nothing was decided",
    },
    Described {
        code: USAGE_ERROR,
        meaning: "wrong command line or input file; nothing was run",
    },
    Described {
        code: REJECTED,
        meaning: "rejected: a gate failed or the candidate is slower",
    },
    Described {
        code: INCONCLUSIVE,
        meaning: "inconclusive: the evidence does not decide",
    },
    Described {
        code: VERIFICATION_FAILED,
        meaning: "the receipt does not verify (signature, key, layout or --recompute)",
    },
    Described {
        code: INTERRUPTED,
        meaning: "interrupted; what finished before the stop is kept",
    },
];

/// The codes `evo init` can end with: it decides nothing.
pub const INIT: [i32; 3] = [ACCEPTED, INTERNAL_ERROR, USAGE_ERROR];

/// The exit codes section of `--help`.
pub fn help() -> String {
    help_for(&ALL.map(|d| d.code))
}

/// The exit codes section of `--help` for a command that ends with `codes` only.
pub fn help_for(codes: &[i32]) -> String {
    let mut text = String::from("Exit codes:\n");
    for d in ALL.iter().filter(|d| codes.contains(&d.code)) {
        text.push_str(&format!("  {:>3}  {}\n", d.code, d.meaning));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `pub const NAME: i32 = N;` of this file, read from its source, so a new code cannot
    /// be left out of the help.
    fn declared() -> Vec<(String, i32)> {
        include_str!("exit_codes.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("pub const ")?.split_once(": i32 = "))
            .map(|(name, value)| {
                let value = value.trim_end_matches(';').parse().unwrap();
                (name.to_string(), value)
            })
            .collect()
    }

    #[test]
    fn every_exit_code_is_in_the_help_once() {
        let declared = declared();
        assert_eq!(declared.len(), ALL.len(), "{declared:?}");
        let help = help();
        for (name, code) in declared {
            let line = format!("\n  {code:>3}  ");
            assert_eq!(help.matches(&line).count(), 1, "{name} = {code}:\n{help}");
        }
    }
}
