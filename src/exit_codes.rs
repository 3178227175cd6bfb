//! evo's exit codes, in one place, so scripts can branch on a verdict.
//!
//! docs/reference.md ("Exit codes") documents the same table; `--help` prints it from [`ALL`].

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
/// `evo receipt verify`: the receipt is authentic, but not what was required of it: another
/// verdict or tier than `--require` names, or about another patch or baseline than `--patch` /
/// `--diff` name.
pub const REQUIREMENT_NOT_MET: i32 = 6;
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
pub const ALL: [Described; 8] = [
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
        code: REQUIREMENT_NOT_MET,
        meaning: "the receipt verifies but is not what --require, --patch or --diff ask for",
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
    // A command that decides nothing (no rejection, no inconclusive verdict) accepts nothing
    // either: its 0 only says it succeeded.
    let decides = codes.contains(&REJECTED) || codes.contains(&INCONCLUSIVE);
    let mut text = String::from("Exit codes:\n");
    for d in ALL.iter().filter(|d| codes.contains(&d.code)) {
        let meaning = if d.code == ACCEPTED && !decides {
            "succeeded"
        } else {
            d.meaning
        };
        text.push_str(&format!("  {:>3}  {}\n", d.code, meaning));
    }
    text
}

/// The exit codes section of the commands that take `--fail-on`.
pub fn help_with_fail_on() -> String {
    help()
        + "\nWith --fail-on, a verdict it does not list exits 0 (say `--fail-on rejected` in CI, so \
           that only a rejection fails the check); 1, 2 and 130 are always kept.\n"
}

/// A verdict `--fail-on` can name: its exit code is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Rejected,
    Inconclusive,
}

impl FailOn {
    pub fn code(self) -> i32 {
        match self {
            FailOn::Rejected => REJECTED,
            FailOn::Inconclusive => INCONCLUSIVE,
        }
    }
}

/// The exit code of a command that ended with `code`, under `--fail-on`: a verdict's code
/// (rejected, inconclusive) that `fail_on` does not list becomes 0; every other code is kept.
pub fn under_fail_on(code: i32, fail_on: &[FailOn]) -> i32 {
    let verdict = code == REJECTED || code == INCONCLUSIVE;
    if verdict && !fail_on.iter().any(|f| f.code() == code) {
        ACCEPTED
    } else {
        code
    }
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
    fn fail_on_keeps_the_listed_verdicts_and_every_error() {
        use FailOn::*;
        let both = [Rejected, Inconclusive];
        for code in [
            ACCEPTED,
            INTERNAL_ERROR,
            USAGE_ERROR,
            REJECTED,
            INCONCLUSIVE,
            INTERRUPTED,
        ] {
            assert_eq!(under_fail_on(code, &both), code);
        }
        assert_eq!(under_fail_on(REJECTED, &[Rejected]), REJECTED);
        assert_eq!(under_fail_on(INCONCLUSIVE, &[Rejected]), ACCEPTED);
        assert_eq!(under_fail_on(REJECTED, &[Inconclusive]), ACCEPTED);
        assert_eq!(under_fail_on(INCONCLUSIVE, &[Inconclusive]), INCONCLUSIVE);
        for code in [
            INTERNAL_ERROR,
            USAGE_ERROR,
            INTERRUPTED,
            VERIFICATION_FAILED,
            REQUIREMENT_NOT_MET,
        ] {
            assert_eq!(under_fail_on(code, &[]), code);
        }
    }

    #[test]
    fn a_command_that_decides_nothing_does_not_list_0_as_accepted() {
        let init = help_for(&INIT);
        assert!(init.contains("  0  succeeded\n"), "{init}");
        assert!(!init.contains("accepted"), "{init}");
        assert!(help().contains("  0  accepted (or the command succeeded)\n"));
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
