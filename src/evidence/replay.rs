//! Whether a scenario's timed runs could show a replayed result (docs/design.md §4.6).
//!
//! A candidate can keep what it computed in state that outlives a run (the page cache, file
//! metadata, a file's timestamps, CPU caches) or skip work whose inputs it has seen before. No
//! sandbox closes every such channel, so the verdict does not depend on their absence: every pair
//! computes on a fresh seed, both arms on the same one, and the two runs' outputs must agree. A
//! replayed answer is then the answer to another seed's question, and it shows — but only when the
//! output depends on the seed, says enough, and is compared at all. This module decides, from the
//! recorded runs alone (so `--recompute` re-derives it), whether that holds for a scenario.

use serde::{Deserialize, Serialize};

use crate::measure::record::{Arm, Pair, WarmupRun};

/// The fewest bytes a timed run must print for its output to identify what it computed; a
/// shorter output (a status word, one rounded number) could be guessed or stored for every seed.
pub const MIN_TIMED_OUTPUT_BYTES: u64 = 16;

/// How the two runs of each pair (same seed) had their timed outputs compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimedCompare {
    /// Byte for byte (`deterministic_output`): re-derivable from the recorded sha256s.
    Exact,
    /// Under the scenario's `compare` rule (`compare_timed_output`), as the differential compares
    /// check outputs: a record of evo's, like the differential gate.
    Rule,
}

/// What the timed runs of one scenario say about replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplayCheck {
    /// The timed command takes `{seed}`, so every pair computed on a fresh seed.
    pub fresh_seeds: bool,
    /// How each pair's two outputs were compared; absent when they were not.
    pub compared: Option<TimedCompare>,
    /// The baseline printed different output for two different seeds (its first two runs with
    /// different seeds); absent when no two such runs exist.
    pub seed_dependent: Option<bool>,
    /// The fewest bytes any baseline timed run printed.
    pub output_bytes: u64,
    /// Where the baseline's timed output repeats a block of lines back to back (rules 6): the
    /// same unit of work printed twice, so a pass that skips work whose inputs it has just seen
    /// cannot be told from one that computes. Recorded from the output itself, which the result
    /// does not keep ([`repeated_block`]); absent when nothing repeats or it was not looked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeated: Option<String>,
    /// Every condition holds: a replayed result would differ from the baseline's output.
    pub detectable: bool,
}

impl ReplayCheck {
    /// Re-derives the check from a scenario's recorded runs. `fresh_seeds` as given, or, when
    /// `None`, whether every run recorded a seed (the schedule draws one only for a command that
    /// takes it).
    pub fn of_runs(
        fresh_seeds: Option<bool>,
        compared: Option<TimedCompare>,
        warmups: &[WarmupRun],
        aa_pairs: &[Pair],
        pairs: &[Pair],
    ) -> ReplayCheck {
        let baseline_runs: Vec<(Option<u64>, &str, u64)> = warmups
            .iter()
            .filter(|w| w.arm == Arm::Baseline)
            .map(|w| (w.seed, w.run.stdout_sha256.as_str(), w.run.stdout_bytes))
            .chain(aa_pairs.iter().chain(pairs).map(|p| {
                (
                    p.seed,
                    p.baseline.stdout_sha256.as_str(),
                    p.baseline.stdout_bytes,
                )
            }))
            .collect();
        let seed_dependent = baseline_runs
            .first()
            .and_then(|(first_seed, first_hash, _)| {
                baseline_runs
                    .iter()
                    .find(|(seed, _, _)| seed.is_some() && seed != first_seed)
                    .map(|(_, hash, _)| hash != first_hash)
            });
        let output_bytes = baseline_runs.iter().map(|r| r.2).min().unwrap_or(0);
        let fresh_seeds = fresh_seeds.unwrap_or_else(|| {
            !baseline_runs.is_empty() && baseline_runs.iter().all(|(seed, _, _)| seed.is_some())
        });
        let detectable = fresh_seeds
            && compared.is_some()
            && seed_dependent == Some(true)
            && output_bytes >= MIN_TIMED_OUTPUT_BYTES;
        ReplayCheck {
            fresh_seeds,
            compared,
            seed_dependent,
            output_bytes,
            repeated: None,
            detectable,
        }
    }

    /// The check with what the baseline's timed output repeats, if anything ([`repeated_block`]):
    /// a repeat makes replay within a run undetectable.
    pub fn with_repeated(mut self, repeated: Option<String>) -> ReplayCheck {
        self.detectable &= repeated.is_none();
        self.repeated = repeated;
        self
    }

    /// Why a replayed result would not show, in the user's terms; `None` when it would.
    pub fn why_undetectable(&self) -> Option<String> {
        if self.detectable {
            return None;
        }
        let why = if let Some(block) = &self.repeated {
            format!(
                "its timed output does not show that each pass did its own work ({block}), so a \
                 pass that skips what an earlier one computed cannot be told from one that \
                 computes (give each pass its own inputs: docs/workloads.md)"
            )
        } else if !self.fresh_seeds {
            "its timed command takes no `{seed}`, so every run computes the same thing".to_string()
        } else if self.compared.is_none() {
            "its timed outputs are not compared (declare `deterministic_output` or \
             `compare_timed_output`)"
                .to_string()
        } else if self.seed_dependent == Some(false) {
            "its timed output is the same for different seeds".to_string()
        } else if self.seed_dependent.is_none() {
            "no two of its baseline runs had different seeds to show the output depends on them"
                .to_string()
        } else {
            format!(
                "its timed output is only {} bytes (at least {MIN_TIMED_OUTPUT_BYTES} identify \
                 what a run computed)",
                self.output_bytes
            )
        };
        Some(why)
    }
}

/// The fewest bytes a repeated block must hold to count: blank lines, separators and short
/// status words repeat in honest output.
pub const MIN_REPEATED_BYTES: usize = MIN_TIMED_OUTPUT_BYTES as usize;

/// The longest block [`repeated_block`] looks for, in lines: a pass of a benchmark prints a
/// few dozen (the C kernels' 27); the bound keeps the search linear in the output's length.
pub const MAX_REPEATED_LINES: usize = 256;

/// Where `output` (a timed run's) prints the same block of lines twice in a row — the same unit
/// of work repeated, as a benchmark that runs identical passes prints it — as `lines A–B and
/// C–D`; `None` when no block of at most [`MAX_REPEATED_LINES`] lines and at least
/// [`MIN_REPEATED_BYTES`] bytes (blank lines aside) repeats back to back. For each block length
/// one pass counts how many lines in a row equal the line that many lines later.
pub fn repeated_block(output: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(output);
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    for len in 1..=(n / 2).min(MAX_REPEATED_LINES) {
        let mut run = 0;
        for i in 0..n - len {
            run = if lines[i] == lines[i + len] {
                run + 1
            } else {
                0
            };
            if run < len {
                continue;
            }
            let start = i + 1 - len;
            let bytes: usize = lines[start..=i].iter().map(|l| l.trim().len()).sum();
            if bytes >= MIN_REPEATED_BYTES {
                return Some(format!(
                    "lines {}–{} and {}–{} are the same, back to back",
                    start + 1,
                    start + len,
                    start + len + 1,
                    start + 2 * len
                ));
            }
        }
    }
    None
}

/// The longest `iteration_digest` prefix a workload may declare.
pub const MAX_DIGEST_PREFIX_BYTES: usize = 64;

/// What is wrong with a declared `iteration_digest` line prefix, if anything: it must name the
/// start of a line (non-empty, one line, printable) so that it cannot match every line.
pub fn digest_prefix_problem(prefix: &str) -> Option<&'static str> {
    if prefix.trim().is_empty() {
        Some("the line prefix is empty: every line would count as an iteration's digest")
    } else if prefix.len() > MAX_DIGEST_PREFIX_BYTES {
        Some("the line prefix is longer than 64 bytes")
    } else if prefix.chars().any(char::is_control) {
        Some("the line prefix holds a line break or another control character")
    } else {
        None
    }
}

/// Where `output` (a timed run's) fails to show that each unit of work did its own: two lines
/// starting with the declared `prefix` that carry the same digest (anywhere, not only back to
/// back), or fewer than two such lines (the declaration describes no output, so it shows
/// nothing). `None` when two or more such lines are all different.
pub fn repeated_digest(output: &[u8], prefix: &str) -> Option<String> {
    let text = String::from_utf8_lossy(output);
    let mut first_seen: std::collections::HashMap<&str, usize> = Default::default();
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        let Some(digest) = line.strip_prefix(prefix) else {
            continue;
        };
        count += 1;
        if let Some(first) = first_seen.insert(digest.trim(), i + 1) {
            return Some(format!(
                "lines {first} and {} carry the same iteration digest `{}`",
                i + 1,
                crate::spec::values::escape_controls(
                    line.chars().take(80).collect::<String>().as_str()
                )
            ));
        }
    }
    (count < 2).then(|| {
        format!(
            "`iteration_digest` declares lines starting `{}`, and the baseline's timed output \
             printed {count}",
            crate::spec::values::escape_controls(prefix)
        )
    })
}

/// Whether the two runs of every warmup round and pair printed the same bytes: what
/// `deterministic_output` requires of runs that computed on the same seed. Warmups run in rounds
/// of one run per arm, recorded one round after the other.
pub fn pairs_agree_exactly(warmups: &[WarmupRun], aa: &[Pair], pairs: &[Pair]) -> bool {
    let rounds_agree = warmups.chunks(2).all(|round| {
        round
            .iter()
            .all(|w| w.run.stdout_sha256 == round[0].run.stdout_sha256)
    });
    rounds_agree
        && aa
            .iter()
            .chain(pairs)
            .all(|p| p.baseline.stdout_sha256 == p.candidate.stdout_sha256)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::{Order, Purpose, RunRecord};

    fn run(hash: &str, bytes: u64) -> RunRecord {
        RunRecord {
            stdout_sha256: hash.to_string(),
            stdout_bytes: bytes,
            ..RunRecord::exited_ok(1.0)
        }
    }

    fn pair(seed: u64, baseline: &str, candidate: &str) -> Pair {
        let mut p = Pair::new(
            0,
            Order::BaselineFirst,
            run(baseline, 64),
            run(candidate, 64),
        );
        p.seed = Some(seed);
        p
    }

    fn warmup(arm: Arm, seed: u64, hash: &str) -> WarmupRun {
        WarmupRun {
            arm,
            purpose: Purpose::Warmup,
            run: run(hash, 64),
            seed: Some(seed),
        }
    }

    #[test]
    fn a_seed_dependent_compared_output_can_show_a_replay() {
        let w = [
            warmup(Arm::Candidate, 1, "a"),
            warmup(Arm::Baseline, 1, "a"),
        ];
        let aa = [pair(2, "b", "b")];
        let check = ReplayCheck::of_runs(Some(true), Some(TimedCompare::Exact), &w, &aa, &[]);
        assert_eq!(check.seed_dependent, Some(true));
        assert!(check.detectable, "{check:?}");
        assert_eq!(check.why_undetectable(), None);
    }

    #[test]
    fn an_output_that_ignores_the_seed_cannot_show_a_replay() {
        let w = [warmup(Arm::Baseline, 1, "same")];
        let aa = [pair(2, "same", "same")];
        let check = ReplayCheck::of_runs(Some(true), Some(TimedCompare::Exact), &w, &aa, &[]);
        assert_eq!(check.seed_dependent, Some(false));
        assert!(!check.detectable);
        let why = check.why_undetectable().unwrap();
        assert!(why.contains("same for different seeds"), "{why}");
    }

    #[test]
    fn no_seed_no_comparison_or_a_tiny_output_cannot_show_a_replay() {
        let aa = [pair(1, "a", "a"), pair(2, "b", "b")];
        let unseeded = ReplayCheck::of_runs(Some(false), Some(TimedCompare::Exact), &[], &aa, &[]);
        assert!(unseeded.why_undetectable().unwrap().contains("no `{seed}`"));
        let uncompared = ReplayCheck::of_runs(Some(true), None, &[], &aa, &[]);
        assert!(
            uncompared
                .why_undetectable()
                .unwrap()
                .contains("not compared")
        );
        let mut tiny = aa.clone();
        tiny[1].baseline.stdout_bytes = 3;
        let small = ReplayCheck::of_runs(Some(true), Some(TimedCompare::Rule), &[], &tiny, &[]);
        assert_eq!(small.output_bytes, 3);
        assert!(small.why_undetectable().unwrap().contains("only 3 bytes"));
    }

    #[test]
    fn exact_agreement_is_within_each_pair_not_across_seeds() {
        let w = [
            warmup(Arm::Candidate, 1, "a"),
            warmup(Arm::Baseline, 1, "a"),
        ];
        let agreeing = [pair(2, "b", "b"), pair(3, "c", "c")];
        assert!(pairs_agree_exactly(&w, &agreeing, &agreeing));
        let replayed = [pair(2, "b", "b"), pair(3, "c", "b")];
        assert!(!pairs_agree_exactly(&w, &agreeing, &replayed));
        let gamed_warmup = [
            warmup(Arm::Candidate, 1, "x"),
            warmup(Arm::Baseline, 1, "a"),
        ];
        assert!(!pairs_agree_exactly(&gamed_warmup, &[], &[]));
    }

    #[test]
    fn identical_passes_printed_back_to_back_are_found_and_distinct_ones_are_not() {
        let same =
            b"pass 1\nloss=0.123456 grad=4.56789\nok\npass 2\nloss=0.123456 grad=4.56789\nok\n";
        assert_eq!(repeated_block(same), None, "the pass numbers differ");
        let twice = b"start\nloss=0.123456 grad=4.56789\nrms=1.0000 max=2.5\nloss=0.123456 grad=4.56789\nrms=1.0000 max=2.5\nend\n";
        assert_eq!(
            repeated_block(twice).as_deref(),
            Some("lines 2–3 and 4–5 are the same, back to back")
        );
        let one_line = b"checksum 9f86d081884c7d65\nchecksum 9f86d081884c7d65\n";
        assert_eq!(
            repeated_block(one_line).as_deref(),
            Some("lines 1–1 and 2–2 are the same, back to back")
        );
        // Short repeats (blank lines, separators, status words) are honest output.
        assert_eq!(
            repeated_block(b"a=1.5\n\n\n----\n----\nok\nok\nb=2.5\n"),
            None
        );
        assert_eq!(repeated_block(b""), None);
        let check = ReplayCheck::of_runs(Some(true), Some(TimedCompare::Exact), &[], &[], &[])
            .with_repeated(repeated_block(twice));
        assert!(!check.detectable);
        assert!(
            check
                .why_undetectable()
                .unwrap()
                .contains("lines 2–3 and 4–5")
        );
    }

    #[test]
    fn a_declared_iteration_digest_shows_a_repeated_pass_wherever_it_is() {
        // A summary-only harness: nothing repeats back to back, but passes 1 and 3 computed
        // the same thing.
        let output = b"pass a41f09\npass 77c2e1\npass a41f09\ntotal 3 passes, checksum 5e1d\n";
        assert_eq!(repeated_block(output), None);
        assert_eq!(
            repeated_digest(output, "pass ").as_deref(),
            Some("lines 1 and 3 carry the same iteration digest `pass a41f09`")
        );
        let distinct = b"pass a41f09\npass 77c2e1\npass 0b33d8\ntotal 3 passes\n";
        assert_eq!(repeated_digest(distinct, "pass "), None);
        // A declaration that matches fewer than two lines shows nothing, and says so.
        let why = repeated_digest(distinct, "iteration ").unwrap();
        assert!(why.contains("printed 0"), "{why}");
        assert!(
            repeated_digest(b"pass a41f09\n", "pass ")
                .unwrap()
                .contains("printed 1")
        );
        let check = ReplayCheck::of_runs(Some(true), Some(TimedCompare::Exact), &[], &[], &[])
            .with_repeated(repeated_digest(output, "pass "));
        assert!(check.why_undetectable().unwrap().contains("lines 1 and 3"));
    }

    #[test]
    fn a_digest_prefix_must_name_the_start_of_a_line() {
        assert!(digest_prefix_problem("pass ").is_none());
        assert!(digest_prefix_problem("").is_some());
        assert!(digest_prefix_problem("  ").is_some());
        assert!(digest_prefix_problem("a\nb").is_some());
        assert!(digest_prefix_problem(&"x".repeat(65)).is_some());
    }
}
