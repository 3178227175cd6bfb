//! Ruling candidates out in screening (docs/design.md §2.3.4): a screened candidate the
//! confirmations did not take is judged on its screening pairs by the confirmation's own sequential
//! rule ([`crate::stats::sequential`]), so it can end "slower" or "no real gain"; a look that would
//! have accepted it only stops its pairs (screening has no A/A check, no holdouts and no
//! sanitizers, and never accepts). The looks are those of a comparison from `search.pairs` to the screening
//! cap (`search.max_pairs`, else `search.pairs`), fixed before the first pair, so stopping a
//! candidate's pairs early (the race, the deadline) only gives it fewer looks: the chance that a
//! real gain of the minimum effect is ruled out stays within the rule's 2.5%.

use crate::stats::sequential::{self, Decision, Stop};

/// What screening's looks say of one candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ruling {
    /// A look ruled it out: `Slower` or `NoRealGain`.
    Out(Stop),
    /// A look found it faster by at least the minimum effect, as would have accepted it in a
    /// confirmation with a valid A/A check: only a confirmation may, so its pairs stop here.
    Faster(Stop),
    /// No look has decided yet.
    Open,
}

/// The first look over `ratios` (in pair order) that decides, with the looks of a comparison
/// from `first` to `cap` pairs; the cap's own "undecided" is `Open`.
pub fn rule(ratios: &[f64], first: usize, cap: usize, min_effect: f64) -> Ruling {
    let looks = sequential::looks(first, cap);
    // As a confirmation with a valid A/A check would judge them; an acceptance is only `Faster`.
    match sequential::first_stop(ratios, &looks, min_effect, true) {
        Some(stop) if stop.decision == Decision::Accepted => Ruling::Faster(stop),
        Some(stop) if matches!(stop.decision, Decision::Slower | Decision::NoRealGain) => {
            Ruling::Out(stop)
        }
        _ => Ruling::Open,
    }
}

/// The reason a ruled-out candidate ends with: the look, its estimate and interval, and why
/// screening may say it.
pub fn reason(stop: &Stop, min_effect: f64) -> String {
    let interval = stop.interval.map_or_else(String::new, |c| {
        format!(
            " ({:.1}% interval {:.4}–{:.4}×)",
            100.0 * c.coverage,
            c.lower,
            c.upper
        )
    });
    let what = match stop.decision {
        Decision::Slower => format!(
            "slower than the baseline by more than the {:.1}% minimum effect",
            100.0 * min_effect
        ),
        _ => format!(
            "any gain is below the {:.1}% minimum effect",
            100.0 * min_effect
        ),
    };
    // The status says "slower" or "no real gain"; the reason says why, not the status again.
    format!(
        "{what}, at screening's look of {} pairs: estimate {:.4}×{interval} (the confirmation's \
         sequential rule on the screening pairs, which can rule a candidate out and never \
         accepts one)",
        stop.pairs, stop.median
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` ratios around `centre` with a log spread of about `spread`, a fixed symmetric pattern.
    fn ratios(centre: f64, n: usize, spread: f64) -> Vec<f64> {
        let pattern = [
            0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 0.25, -0.25, 0.75, -0.75,
        ];
        (0..n)
            .map(|i| centre * (spread * pattern[i % pattern.len()]).exp())
            .collect()
    }

    #[test]
    fn a_clear_slowdown_is_ruled_slower_at_the_first_look() {
        let Ruling::Out(stop) = rule(&ratios(0.87, 9, 0.03), 5, 24, 0.02) else {
            panic!("not ruled out");
        };
        assert_eq!((stop.decision, stop.pairs), (Decision::Slower, 9));
        assert!(
            reason(&stop, 0.02).starts_with("slower than the baseline by more than the 2.0%"),
            "{}",
            reason(&stop, 0.02)
        );
    }

    #[test]
    fn a_null_is_ruled_no_real_gain_once_its_interval_clears_the_minimum_effect() {
        // Too few pairs for the interval to fall below 1.02: nothing yet.
        assert_eq!(rule(&ratios(1.0, 9, 0.03), 5, 24, 0.02), Ruling::Open);
        let Ruling::Out(stop) = rule(&ratios(1.0, 24, 0.03), 5, 24, 0.02) else {
            panic!("not ruled out");
        };
        assert_eq!(stop.decision, Decision::NoRealGain);
        let upper = stop.interval.expect("interval").upper;
        assert!(upper < 1.02, "{upper}");
        assert!(stop.pairs < 24, "decided before the cap: {stop:?}");
    }

    #[test]
    fn a_real_gain_is_never_ruled_out_and_its_pairs_stop_where_a_confirmation_would_accept() {
        // Faster by 10%: the first look would accept it; screening only stops its pairs there.
        let Ruling::Faster(stop) = rule(&ratios(1.10, 24, 0.03), 5, 24, 0.02) else {
            panic!("not found faster");
        };
        assert_eq!((stop.decision, stop.pairs), (Decision::Accepted, 9));
        // A gain just below the minimum effect, which the cap's pairs cannot tell from it, is
        // left open: neither ruled out nor found faster.
        assert_eq!(rule(&ratios(1.015, 24, 0.03), 5, 24, 0.02), Ruling::Open);
    }

    #[test]
    fn only_looks_the_pairs_reach_are_judged_and_each_on_its_first_pairs() {
        // The first nine pairs show a clear slowdown; whatever comes after, the first look ruled.
        let mut r = ratios(0.87, 9, 0.01);
        r.extend(ratios(1.3, 15, 0.01));
        let Ruling::Out(stop) = rule(&r, 5, 24, 0.02) else {
            panic!("not ruled out");
        };
        assert_eq!((stop.decision, stop.pairs), (Decision::Slower, 9));
        // Eight such pairs reach no look at all.
        assert_eq!(rule(&r[..8], 5, 24, 0.02), Ruling::Open);
    }
}
