//! Racing the screening (docs/design.md §2.3.4): once every candidate has its first
//! `search.pairs`, more pairs go only where the ranking is still in doubt, one pair per contested
//! candidate per round, up to `search.max_pairs` each. Screening only ranks; racing decides which
//! candidates the confirmations go to, never a verdict.
//!
//! Each candidate's place is an interval on its median log-ratio, `m ± z·1.2533·σ/√n` (the
//! median's standard error for normal noise, as the confirmation's noise floor has it), with one
//! per-pair noise `σ` for every candidate: 1.4826 × the median absolute deviation of all
//! screening log-ratios from their own candidate's median (`stats::noise::noise_sigma` applied to
//! the pooled deviations; the screening pairs of one baseline on one machine share their noise,
//! as a confirmation's A/A pairs do). A candidate is *out* when its interval lies below 0 (not
//! faster) or below the lower ends of `places` others (it cannot reach the top `places`); *in*
//! when it lies above 0 and fewer than `places` others could still rank above it. Every other
//! candidate is contested and gets a pair, while it has fewer than `max_pairs`.

use crate::stats::{self, Ratios};

/// One screened candidate: its index and the ratios of its screening pairs so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Entrant {
    pub index: usize,
    pub ratios: Vec<f64>,
}

/// Where a candidate stands in the race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Certain to rank among the top `places`, and faster than the baseline.
    In,
    /// Certain not to: slower than or as fast as the baseline, or below `places` others.
    Out,
    /// Neither yet: one more pair, while it has fewer than the cap.
    Contested,
}

/// The race at one moment: each entrant's interval on its median log-ratio, and the per-pair
/// noise they were computed with.
#[derive(Debug, Clone, PartialEq)]
pub struct Race {
    pub sigma: f64,
    /// `(index, low, high)`, in the order of the entrants.
    pub intervals: Vec<(usize, f64, f64)>,
}

/// The per-pair noise of the screening: 1.4826 × MAD of every log-ratio from its own
/// candidate's median. `None` with fewer than three deviations to pool, or when they are all 0.
pub fn pooled_sigma(entrants: &[Entrant]) -> Option<f64> {
    let mut deviations = Vec::new();
    for e in entrants.iter().filter(|e| e.ratios.len() >= 2) {
        let logs: Vec<f64> = e.ratios.iter().map(|r| r.ln()).collect();
        let centre = stats::plain_median(&logs);
        deviations.extend(logs.iter().map(|x| x - centre));
    }
    if deviations.len() < 3 {
        return None;
    }
    // Centred already; `noise_sigma` takes ratios, so hand it their exponentials.
    let ratios = Ratios::new(deviations.iter().map(|d| d.exp()).collect()).ok()?;
    let sigma = stats::noise_sigma(&ratios);
    (sigma > 0.0 && sigma.is_finite()).then_some(sigma)
}

impl Race {
    /// Each entrant's interval under the pooled noise (an unbounded one while the noise is
    /// unknown).
    pub fn of(entrants: &[Entrant]) -> Race {
        let sigma = pooled_sigma(entrants).unwrap_or(f64::INFINITY);
        let intervals = (entrants.iter())
            .map(|e| {
                let logs: Vec<f64> = e.ratios.iter().map(|r| r.ln()).collect();
                if logs.is_empty() {
                    return (e.index, f64::NEG_INFINITY, f64::INFINITY);
                }
                let centre = stats::plain_median(&logs);
                // The noise floor of n pairs is `exp(1.96 · 1.2533 · σ / √n) − 1`: its log is
                // the interval's half-width.
                let half = stats::noise_floor(sigma, logs.len()).ln_1p();
                (e.index, centre - half, centre + half)
            })
            .collect();
        Race { sigma, intervals }
    }

    /// Where entrant `index` stands with `places` confirmations to give.
    pub fn standing(&self, index: usize, places: usize) -> Standing {
        let Some(&(_, low, high)) = self.intervals.iter().find(|(i, _, _)| *i == index) else {
            return Standing::Out;
        };
        let others = self.intervals.iter().filter(|(i, _, _)| *i != index);
        let surely_above = others.clone().filter(|(_, l, _)| *l > high).count();
        let maybe_above = others.filter(|(_, _, h)| *h > low).count();
        if high <= 0.0 || surely_above >= places {
            Standing::Out
        } else if low > 0.0 && maybe_above < places {
            Standing::In
        } else {
            Standing::Contested
        }
    }
}

/// The entrants that get one more screening pair: contested ones with fewer than `max_pairs`.
pub fn next_pairs(entrants: &[Entrant], places: usize, max_pairs: usize) -> Vec<usize> {
    let race = Race::of(entrants);
    (entrants.iter())
        .filter(|e| e.ratios.len() < max_pairs)
        .filter(|e| race.standing(e.index, places) == Standing::Contested)
        .map(|e| e.index)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ratios around `centre` with a spread of about `spread` (log), the same pattern for every
    /// entrant so the pooled noise is the pattern's.
    fn entrant(index: usize, centre: f64, n: usize, spread: f64) -> Entrant {
        let pattern = [
            0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 0.25, -0.25, 2.0, -2.0, 0.75,
        ];
        let ratios = (0..n)
            .map(|i| centre * (spread * pattern[i % pattern.len()]).exp())
            .collect();
        Entrant { index, ratios }
    }

    #[test]
    fn clear_winners_and_clear_losers_get_no_more_pairs() {
        // Two real gains far above the noise, two slower: nothing in doubt for two places.
        let field = vec![
            entrant(0, 1.20, 5, 0.02),
            entrant(1, 1.18, 5, 0.02),
            entrant(2, 0.90, 5, 0.02),
            entrant(3, 0.80, 5, 0.02),
        ];
        let race = Race::of(&field);
        assert_eq!(race.standing(0, 2), Standing::In, "{race:?}");
        assert_eq!(race.standing(1, 2), Standing::In, "{race:?}");
        assert_eq!(race.standing(2, 2), Standing::Out);
        assert_eq!(race.standing(3, 2), Standing::Out);
        assert_eq!(next_pairs(&field, 2, 15), Vec::<usize>::new());
    }

    #[test]
    fn pairs_go_where_ranks_are_close_and_stop_at_the_cap() {
        // A clear leader, two close ones competing for the second place, one clearly slower.
        let field = vec![
            entrant(0, 1.25, 5, 0.02),
            entrant(1, 1.03, 5, 0.05),
            entrant(2, 1.02, 5, 0.05),
            entrant(3, 0.85, 5, 0.02),
        ];
        assert_eq!(next_pairs(&field, 2, 15), vec![1, 2]);
        // With one place only, the leader takes it and nothing else can reach it.
        assert_eq!(next_pairs(&field, 1, 15), Vec::<usize>::new());
        // At the cap, no more pairs, however close.
        let capped = vec![entrant(1, 1.03, 15, 0.05), entrant(2, 1.02, 15, 0.05)];
        assert_eq!(next_pairs(&capped, 1, 15), Vec::<usize>::new());
    }

    #[test]
    fn a_gain_within_the_noise_is_contested_until_its_pairs_settle_it() {
        // 4% at a noise of about 8% per pair: not settled by 5 pairs, settled by many more.
        let few = vec![entrant(0, 1.04, 5, 0.08), entrant(1, 0.99, 5, 0.08)];
        assert_eq!(next_pairs(&few, 2, 60), vec![0, 1]);
        let many = vec![entrant(0, 1.04, 60, 0.08), entrant(1, 0.99, 60, 0.08)];
        let race = Race::of(&many);
        assert_eq!(race.standing(0, 2), Standing::In, "{race:?}");
        assert_eq!(race.standing(1, 2), Standing::Contested, "{race:?}");
    }

    #[test]
    fn without_a_noise_estimate_every_candidate_is_in_doubt() {
        let lone = vec![entrant(0, 1.5, 1, 0.0), entrant(1, 0.5, 1, 0.0)];
        assert_eq!(pooled_sigma(&lone), None);
        assert_eq!(next_pairs(&lone, 1, 5), vec![0, 1]);
    }
}
