//! The phrases every text of a confirmation shares (terminal, PR text, campaign table), so that
//! no two of them can word one fact two ways: the verdict with its tier, a scenario's verdict
//! under the candidate's, the baseline, the noise floor, the headline figure.
//!
//! The tier named `rejected` is the lowest of three, recorded whenever a patch is not accepted;
//! printed beside the verdict `inconclusive` it read as a contradiction ("inconclusive (tier
//! rejected)"), so the tier is named only for an accepted patch, and otherwise said to be none.

use crate::evidence::figures::Figures;
use crate::evidence::result::{ConfirmResult, ScenarioResult, Verdict};
use crate::stats::{Ci95, Tier};

/// The verdict with its tier, as the terminal prints it: `accepted (tier measured)`,
/// `rejected`, `inconclusive (no tier reached)`.
pub fn standing(verdict: Verdict, tier: Tier) -> String {
    match verdict {
        Verdict::Accepted => format!("accepted (tier {})", tier.as_str()),
        Verdict::Rejected => "rejected".to_string(),
        Verdict::Inconclusive => "inconclusive (no tier reached)".to_string(),
    }
}

/// A 1-minute load average in words against the machine's logical cores: a load is a count of
/// runnable tasks, so what it means depends on how many CPUs share it.
pub fn load_in_words(load: f64, cores: usize) -> String {
    let per_core = load / cores.max(1) as f64;
    let words = if per_core < 0.25 {
        "quiet"
    } else if per_core < 0.75 {
        "some other work"
    } else if per_core <= 1.0 {
        "busy: about one runnable task per core"
    } else {
        "overloaded: more runnable tasks than cores, so runs waited for a CPU"
    };
    format!("{per_core:.2} per core of {cores}: {words}")
}

/// The tier as a campaign's table shows it beside a confirmed median: only an accepted
/// confirmation reached one.
pub fn tier_reached(verdict: Option<Verdict>, tier: Option<Tier>) -> Option<&'static str> {
    match (verdict, tier) {
        (Some(Verdict::Accepted), Some(t))
        | (None, Some(t @ (Tier::Counted | Tier::Measured | Tier::Tested))) => Some(t.as_str()),
        _ => None,
    }
}

/// A scenario's own verdict, with the candidate's beside it where the two words differ: a
/// scenario `inconclusive` in a run `rejected` for another reason reads "inconclusive on its
/// own; the candidate is rejected (see the reasons)".
pub fn scenario_verdict(own: &str, overall: Verdict) -> String {
    let words = ["accepted", "rejected", "inconclusive"];
    if !words.contains(&own) || own == overall.as_str() {
        return own.to_string();
    }
    format!(
        "{own} on its own; the candidate is {} (see the reasons)",
        overall.as_str()
    )
}

/// The baseline as `main (0123…)`, or the commit alone when the commit-ish already is it (`evo
/// init` pins the full SHA, which was then printed twice).
pub fn baseline_named<'a>(commitish: &'a str, sha: &str) -> Option<&'a str> {
    let same = commitish.eq_ignore_ascii_case(sha)
        || (commitish.len() >= 7
            && commitish.chars().all(|c| c.is_ascii_hexdigit())
            && sha.starts_with(&commitish.to_ascii_lowercase()));
    (!same).then_some(commitish)
}

/// The baseline line of the terminal summary.
pub fn baseline_line(r: &ConfirmResult) -> String {
    match baseline_named(&r.evidence.baseline_commitish, &r.evidence.baseline_sha) {
        Some(name) => format!("{name} ({})", r.evidence.baseline_sha),
        None => r.evidence.baseline_sha.clone(),
    }
}

/// A scenario's noise floor: how far from 1 the median of its A/A pairs strays by chance, at the
/// A/A pair count. It is the one noise figure a text names; the sequential rule (rules 4)
/// decides from the comparison's own interval and needs no floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseFloor {
    pub pct: f64,
    pub pairs: usize,
}

impl NoiseFloor {
    pub fn of(f: &Figures) -> NoiseFloor {
        NoiseFloor {
            pct: f.noise_floor_pct,
            pairs: f.aa.pairs,
        }
    }

    /// "noise floor ±0.16% at 11 pairs", the name every text uses.
    pub fn named(&self) -> String {
        format!("noise floor ±{:.2}% at {} pairs", self.pct, self.pairs)
    }
}

/// Where it came from: the A/A pairs' per-pair noise (`second_build`: against a second build of
/// the baseline in its own tree, else against itself).
pub fn noise_source(f: &Figures, second_build: bool, reused: bool) -> String {
    let against = if second_build {
        "a second build of the baseline in its own tree"
    } else {
        "itself"
    };
    let when = match reused {
        true => {
            ", measured by the campaign's earlier confirmation on the same baseline binaries \
             (`aa_from`)"
        }
        false => "",
    };
    format!(
        "from the A/A noise, σ {:.2}% per pair: baseline against {against}, {} pairs{when}",
        100.0 * f.aa.sigma,
        f.aa.pairs
    )
}

/// The `--require` flags that bind a verification to what the texts claim: the recorded verdict,
/// and for an accepted patch its tier (at least), e.g. `--require accepted --require
/// tier=measured`.
pub fn require_flags(verdict: Verdict, tier: Tier) -> String {
    match verdict {
        Verdict::Accepted => format!("--require accepted --require tier={}", tier.as_str()),
        other => format!("--require {}", other.as_str()),
    }
}

/// Whether the interval contains 1: the comparison found no measurable change.
pub fn spans_one(ci: Option<Ci95>) -> bool {
    ci.is_some_and(|c| c.lower <= 1.0 && c.upper >= 1.0)
}

/// The headline of the PR text (docs/design.md §5.11) for the first training scenario: faster,
/// slower, or, when the interval spans 1, no measurable change.
pub fn headline(s: &ScenarioResult, f: &Figures) -> String {
    let n = s.pairs.len();
    let ci = match f.ci95 {
        Some(c) => format!("; {}", c.text(3)),
        None => "; fewer than 6 pairs cannot give a 95% interval".to_string(),
    };
    if spans_one(f.ci95) {
        format!(
            "shows no measurable change in speed (estimate {:.3}× over {n} paired runs{ci}, which \
             contains 1)",
            f.median
        )
    } else if f.median >= 1.0 {
        format!(
            "runs {:.3}× faster (estimate over {n} paired runs{ci})",
            f.median
        )
    } else {
        format!(
            "runs at {:.3}× the baseline's speed, i.e. slower (estimate over {n} paired runs{ci})",
            f.median
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_is_put_in_words_against_the_cores() {
        assert_eq!(load_in_words(0.1, 2), "0.05 per core of 2: quiet");
        assert!(load_in_words(2.36, 2).starts_with("1.18 per core of 2: overloaded"));
        assert!(load_in_words(2.36, 8).ends_with("some other work"));
        assert!(load_in_words(1.9, 2).contains("busy"));
    }

    #[test]
    fn the_tier_is_named_only_beside_an_acceptance() {
        assert_eq!(
            standing(Verdict::Accepted, Tier::Measured),
            "accepted (tier measured)"
        );
        assert_eq!(standing(Verdict::Rejected, Tier::Rejected), "rejected");
        assert_eq!(
            standing(Verdict::Inconclusive, Tier::Rejected),
            "inconclusive (no tier reached)"
        );
        assert_eq!(
            tier_reached(Some(Verdict::Inconclusive), Some(Tier::Rejected)),
            None
        );
        assert_eq!(
            tier_reached(Some(Verdict::Accepted), Some(Tier::Tested)),
            Some("tested")
        );
    }

    #[test]
    fn a_scenario_verdict_that_differs_from_the_candidates_says_so() {
        assert_eq!(
            scenario_verdict("inconclusive", Verdict::Rejected),
            "inconclusive on its own; the candidate is rejected (see the reasons)"
        );
        assert_eq!(
            scenario_verdict("inconclusive", Verdict::Inconclusive),
            "inconclusive"
        );
        assert_eq!(
            scenario_verdict("not significant", Verdict::Rejected),
            "not significant"
        );
    }

    #[test]
    fn a_baseline_given_as_its_commit_is_named_once() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(baseline_named(sha, sha), None);
        assert_eq!(baseline_named("0123456789AB", sha), None);
        assert_eq!(baseline_named("main", sha), Some("main"));
        // A branch whose name is hex but not the commit's prefix is still a name.
        assert_eq!(baseline_named("deadbeef", sha), Some("deadbeef"));
    }
}
