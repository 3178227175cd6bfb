//! The minimum detectable effect: how large a speedup this machine's noise lets a confirmation see.
//!
//! A confirmation with too few pairs accepts only lucky draws, so whatever it accepts is likely
//! inflated. Resampling the A/A log-ratios (pure noise, once centred) with an effect added, and
//! running each draw through the real speedup test (interval, minimum effect and the comparison's
//! noise floor, all as the training gate applies them), gives the power at that effect without
//! assuming a noise distribution. Every effect reuses the same draws, so power can only grow with
//! the effect and the bisection is well defined; the seed makes the answer reproducible.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{
    Ci95, Ratios, Thresholds, noise_floor, noise_sigma, order_rank, plain_median, speedup_shown,
};

/// Search starts with this effect and doubles it until the power is reached.
const FIRST_BRACKET: f64 = 0.01;
/// Effects beyond a 101× speedup are not worth reporting as "detectable".
const MAX_EFFECT: f64 = 100.0;
/// Bisection stops when the bracket is this small relative to its upper end…
const RELATIVE_PRECISION: f64 = 1e-4;
/// …or this small in absolute terms (only reachable when the answer is close to 0).
const ABSOLUTE_PRECISION: f64 = 1e-12;
const MAX_BISECTIONS: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MdeSettings {
    /// Pairs of the confirmation whose power is simulated.
    pub pairs: usize,
    /// The campaign's practical threshold, as in the training gate (0.01 for 1%).
    pub min_effect: f64,
    pub seed: u64,
    /// Simulated confirmations per effect.
    pub resamples: usize,
    /// Required probability of acceptance (0.8).
    pub power: f64,
}

impl MdeSettings {
    pub fn new(pairs: usize, min_effect: f64, seed: u64) -> MdeSettings {
        MdeSettings {
            pairs,
            min_effect,
            seed,
            resamples: 2000,
            power: 0.8,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Mde {
    /// Smallest true speedup, as a fraction (0.0557 = 5.57%), accepted with the required power.
    pub effect: f64,
    /// Power achieved at `effect`.
    pub power: f64,
    pub pairs: usize,
    pub seed: u64,
    pub resamples: usize,
}

/// The order statistics one simulated confirmation needs, in log space and before the effect is
/// added: adding a constant keeps the order, so they are sorted once and shifted per effect.
#[derive(Debug, Clone, Copy)]
struct Draw {
    lower: f64,
    middle_low: f64,
    middle_high: f64,
}

/// Simulated confirmations drawn once from the centred A/A log-ratios; `power` replays them at any
/// effect.
#[derive(Debug, Clone)]
pub struct PowerSimulation {
    draws: Vec<Draw>,
    k: usize,
    even_pairs: bool,
    thresholds: Thresholds,
}

impl PowerSimulation {
    /// `None` when `pairs < 6` (no interval, so the gate can never pass) or `resamples == 0`.
    pub fn new(aa: &Ratios, s: &MdeSettings) -> Option<PowerSimulation> {
        let k = order_rank(s.pairs)?.k;
        if s.resamples == 0 {
            return None;
        }
        let noise = centred_logs(aa);
        let mut resampler = Resampler::new(&noise, s);
        let n = s.pairs;
        let draws = (0..s.resamples)
            .map(|_| {
                resampler.next_sample();
                Draw {
                    lower: resampler.order_statistic(k - 1),
                    middle_low: resampler.order_statistic((n - 1) / 2),
                    middle_high: resampler.order_statistic(n / 2),
                }
            })
            .collect();
        Some(PowerSimulation {
            draws,
            k,
            even_pairs: s.pairs.is_multiple_of(2),
            // Only the bars are read (`speedup_shown`); whether the run is powered is what this
            // simulation is asked, not an input to it.
            thresholds: Thresholds {
                min_effect: s.min_effect,
                noise_floor: noise_floor(noise_sigma(aa), s.pairs),
                powered: false,
            },
        })
    }

    /// Share of the simulated confirmations that the training gate accepts when the true speedup
    /// is `1 + effect`.
    pub fn power(&self, effect: f64) -> f64 {
        let shift = effect.ln_1p();
        let accepted = self.draws.iter().filter(|d| self.accepts(d, shift)).count();
        accepted as f64 / self.draws.len() as f64
    }

    fn accepts(&self, d: &Draw, shift: f64) -> bool {
        // Rebuild the figures as ratios, exactly as `median` and `ci95` would compute them, so the
        // simulated confirmation meets the same gate with the same rounding.
        let (low, high) = ((d.middle_low + shift).exp(), (d.middle_high + shift).exp());
        let median = if self.even_pairs {
            low.sqrt() * high.sqrt()
        } else {
            low
        };
        let ci = Ci95 {
            lower: (d.lower + shift).exp(),
            upper: f64::INFINITY, // a speedup test reads only the lower bound
            coverage: 0.0,
            k: self.k,
        };
        speedup_shown(median, Some(&ci), &self.thresholds)
    }
}

/// The A/A log-ratios moved so their median is 0: what is left is noise without any bias.
fn centred_logs(aa: &Ratios) -> Vec<f64> {
    let logs = aa.log_ratios();
    let centre = plain_median(&logs);
    logs.iter().map(|x| x - centre).collect()
}

/// Draws `pairs` noise values with replacement per simulated confirmation, from one seeded stream.
///
/// A sample is kept as how many times each A/A value was drawn, not as the values: its order
/// statistics are then a walk over the (few) sorted A/A values instead of a sort of the sample,
/// which is what makes planning pairs by simulation cheap. The draws, and so every figure, are
/// those of drawing the values and sorting them.
struct Resampler<'a> {
    noise: &'a [f64],
    rng: ChaCha8Rng,
    pairs: usize,
    /// The A/A values in ascending order, and each original index's place in it.
    sorted: Vec<f64>,
    rank: Vec<usize>,
    /// Draws of the current sample per place in `sorted`.
    counts: Vec<usize>,
}

impl<'a> Resampler<'a> {
    /// `noise` is non-empty because `Ratios` is.
    fn new(noise: &'a [f64], s: &MdeSettings) -> Resampler<'a> {
        let mut order: Vec<usize> = (0..noise.len()).collect();
        order.sort_by(|&a, &b| noise[a].total_cmp(&noise[b]));
        let mut rank = vec![0; noise.len()];
        for (place, &i) in order.iter().enumerate() {
            rank[i] = place;
        }
        Resampler {
            noise,
            rng: ChaCha8Rng::seed_from_u64(s.seed),
            pairs: s.pairs,
            sorted: order.iter().map(|&i| noise[i]).collect(),
            rank,
            counts: vec![0; noise.len()],
        }
    }

    fn next_sample(&mut self) {
        self.counts.fill(0);
        for _ in 0..self.pairs {
            let i = self.rng.random_range(0..self.noise.len());
            self.counts[self.rank[i]] += 1;
        }
    }

    /// The value at 0-based position `p` of the current sample sorted ascending (`p < pairs`).
    fn order_statistic(&self, p: usize) -> f64 {
        let mut seen = 0;
        for (place, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > p {
                return self.sorted[place];
            }
        }
        self.sorted[self.sorted.len() - 1]
    }

    /// The current sample, sorted (for tests that rebuild a simulated comparison in full).
    #[cfg(test)]
    fn sorted_sample(&self) -> Vec<f64> {
        (0..self.pairs).map(|p| self.order_statistic(p)).collect()
    }
}

/// The smallest effect (searched in [0, 100]) whose power reaches `s.power`, to a relative
/// precision of 1e-4, reporting the end of the bracket that is known to pass.
///
/// `None` when `pairs < 6`, `resamples == 0`, `s.power` is not in (0, 1], or even a 101× speedup
/// is not detected that often.
pub fn minimum_detectable_effect(aa: &Ratios, s: &MdeSettings) -> Option<Mde> {
    minimum_detectable_effect_of(&PowerSimulation::new(aa, s)?, s)
}

/// [`minimum_detectable_effect`] from a simulation already drawn with the settings `s`, for a
/// caller that asks it other questions too (`compare`: is the run powered for its target).
pub fn minimum_detectable_effect_of(sim: &PowerSimulation, s: &MdeSettings) -> Option<Mde> {
    if !(s.power > 0.0 && s.power <= 1.0) {
        return None;
    }
    let passes = |e: f64| sim.power(e) >= s.power;
    let mde = |effect: f64| Mde {
        effect,
        power: sim.power(effect),
        pairs: s.pairs,
        seed: s.seed,
        resamples: s.resamples,
    };
    if passes(0.0) {
        return Some(mde(0.0));
    }
    let (mut lo, mut hi) = (0.0, FIRST_BRACKET);
    while !passes(hi) {
        if hi >= MAX_EFFECT {
            return None;
        }
        lo = hi;
        hi = (hi * 2.0).min(MAX_EFFECT);
    }
    for _ in 0..MAX_BISECTIONS {
        let width = hi - lo;
        if width <= RELATIVE_PRECISION * hi || width <= ABSOLUTE_PRECISION {
            break;
        }
        let mid = lo + width / 2.0;
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(mde(hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noisy A/A ratios: log-ratios spread over ±3% in a fixed scrambled order.
    fn noisy_aa() -> Ratios {
        let logs = [
            0.012, -0.021, 0.004, 0.028, -0.009, -0.030, 0.017, 0.001, -0.014, 0.023, -0.003,
        ];
        Ratios::new(logs.iter().map(|x: &f64| x.exp()).collect()).unwrap()
    }

    #[test]
    fn counted_samples_give_the_order_statistics_of_drawn_and_sorted_ones() {
        // The reference: draw the values with the same stream and sort them.
        let noise = centred_logs(&noisy_aa());
        for pairs in [6, 9, 60, 61] {
            let s = MdeSettings::new(pairs, 0.01, 5);
            let mut counted = Resampler::new(&noise, &s);
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            for _ in 0..50 {
                let mut drawn: Vec<f64> = (0..pairs)
                    .map(|_| noise[rng.random_range(0..noise.len())])
                    .collect();
                drawn.sort_by(f64::total_cmp);
                counted.next_sample();
                assert_eq!(counted.sorted_sample(), drawn, "{pairs}");
            }
        }
    }

    #[test]
    fn mde_is_reproducible_for_equal_seeds() {
        let s = MdeSettings::new(9, 0.01, 42);
        let a = minimum_detectable_effect(&noisy_aa(), &s).expect("mde");
        let b = minimum_detectable_effect(&noisy_aa(), &s).expect("mde");
        assert_eq!(a, b);
        assert_eq!((a.pairs, a.seed, a.resamples), (9, 42, 2000));
        assert!(a.power >= 0.8, "{a:?}");
    }

    #[test]
    fn mde_is_the_edge_where_power_reaches_the_target() {
        let s = MdeSettings::new(9, 0.01, 5);
        let m = minimum_detectable_effect(&noisy_aa(), &s).unwrap();
        let sim = PowerSimulation::new(&noisy_aa(), &s).unwrap();
        assert_eq!(sim.power(m.effect), m.power);
        assert!(sim.power(m.effect) >= 0.8);
        assert!(sim.power(m.effect * (1.0 - 2e-4)) < 0.8, "{m:?}");
    }

    #[test]
    fn mde_without_noise_is_the_min_effect() {
        for (pairs, min_effect) in [(7, 0.01), (8, 0.05), (20, 0.2)] {
            let aa = Ratios::new(vec![1.02; 11]).unwrap();
            let s = MdeSettings::new(pairs, min_effect, 3);
            let m = minimum_detectable_effect(&aa, &s).unwrap();
            assert!(
                (m.effect / min_effect - 1.0).abs() <= 2e-4,
                "{min_effect}: {m:?}"
            );
            assert_eq!(m.power, 1.0);
        }
    }

    #[test]
    fn mde_without_noise_or_min_effect_is_nearly_zero() {
        let aa = Ratios::new(vec![1.0; 11]).unwrap();
        let m = minimum_detectable_effect(&aa, &MdeSettings::new(7, 0.0, 3)).unwrap();
        assert!(m.effect > 0.0 && m.effect < 1e-9, "{m:?}");
    }

    #[test]
    fn mde_shrinks_as_pairs_grow() {
        let effects: Vec<f64> = [7, 15, 31, 63]
            .iter()
            .map(|&pairs| {
                let s = MdeSettings::new(pairs, 0.0, 7);
                minimum_detectable_effect(&noisy_aa(), &s).unwrap().effect
            })
            .collect();
        assert!(effects.windows(2).all(|w| w[1] < w[0]), "{effects:?}");
    }

    #[test]
    fn mde_needs_six_pairs_and_a_reachable_power() {
        assert_eq!(
            minimum_detectable_effect(&noisy_aa(), &MdeSettings::new(5, 0.01, 1)),
            None
        );
        let mut s = MdeSettings::new(9, 0.01, 1);
        s.resamples = 0;
        assert_eq!(minimum_detectable_effect(&noisy_aa(), &s), None);
        s = MdeSettings::new(9, 0.01, 1);
        s.power = 1.5;
        assert_eq!(minimum_detectable_effect(&noisy_aa(), &s), None);
    }

    #[test]
    fn shortcut_gate_agrees_with_the_full_gate_on_every_draw() {
        use crate::stats::{AaValidity, ci95, median, training_gate};
        for pairs in [6, 9, 12] {
            let s = MdeSettings {
                resamples: 200,
                ..MdeSettings::new(pairs, 0.01, 11)
            };
            let sim = PowerSimulation::new(&noisy_aa(), &s).unwrap();
            let noise = centred_logs(&noisy_aa());
            let mut resampler = Resampler::new(&noise, &s);
            let mut accepted = [0usize; 3];
            for draw in &sim.draws {
                resampler.next_sample();
                let sample = resampler.sorted_sample();
                for (i, effect) in [0.01, 0.02, 0.04].into_iter().enumerate() {
                    let shift = f64::ln_1p(effect);
                    let r =
                        Ratios::new(sample.iter().map(|x| (x + shift).exp()).collect()).unwrap();
                    let ci = ci95(&r);
                    let t = Thresholds {
                        min_effect: 0.01,
                        noise_floor: noise_floor(noise_sigma(&noisy_aa()), pairs),
                        powered: true,
                    };
                    // A resolved gate: the MDE's own condition plays no part in the simulation.
                    let t = Thresholds {
                        min_effect: t.effect_bar(),
                        ..t
                    };
                    let full = training_gate(&AaValidity::Valid, median(&r), ci.as_ref(), &t, None);
                    assert_eq!(sim.accepts(draw, shift), full.passed, "{pairs} {effect}");
                    accepted[i] += usize::from(full.passed);
                }
            }
            // The comparison must see both outcomes to mean anything.
            assert!(
                accepted.iter().any(|&a| a > 0 && a < 200),
                "{pairs}: {accepted:?}"
            );
        }
    }
}
