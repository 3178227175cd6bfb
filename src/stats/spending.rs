//! Group-sequential boundaries (rules 9): how much of the error budget each look may spend, with
//! the looks' correlation taken into account rather than bounded by a union.
//!
//! The spending function is the Pocock type of Lan and DeMets, `α(t) = α · ln(1 + (e − 1)·t)`
//! with `t = n / cap`: it spends early (a run that decides at its first looks is the common case)
//! and still leaves the last look a usable share. The standardized statistic of a look at `n`
//! pairs behaves as `Z_n = S_n / √n` for a sum `S` with independent increments, so
//! `corr(Z_i, Z_j) = √(t_i / t_j)`. Each look's nominal one-sided level is the one at which the
//! chance of crossing the upper boundary at some look up to it, under the null, equals `α(t)`.
//! That chance is computed by recursive numerical integration over the density of the runs that
//! have not crossed yet (Armitage, McPherson and Rowe, 1969): Simpson's rule on a grid of
//! step [`STEP`] over `[−LOW, boundary]`. A look that cannot spend its whole level (a discrete
//! statistic's tail is below it) passes the rest on: the integration continues from the boundary
//! the look really used.

use statrs::distribution::{ContinuousCDF, Normal};

/// The lower end of the grid in standard units; below it the density is negligible.
const LOW: f64 = 8.0;
/// The upper end when a look has no boundary.
const HIGH: f64 = 8.0;
/// How far, in its own standard deviations, the kernel between two looks is summed.
const KERNEL_REACH: f64 = 9.0;
/// The grid's step in standard units.
pub const STEP: f64 = 0.05;

/// `α(t) = α · ln(1 + (e − 1) t)`, the cumulative budget spent by information fraction `t`.
pub fn spent_by(alpha: f64, t: f64) -> f64 {
    alpha * (1.0 + (std::f64::consts::E - 1.0) * t.clamp(0.0, 1.0)).ln()
}

/// The integration between looks: the sub-density of the statistic among runs that have not
/// crossed the upper boundary at any look so far.
#[derive(Debug, Clone)]
pub struct Boundaries {
    /// Information fraction of the last committed look (`None` before the first).
    t: Option<f64>,
    grid: Vec<f64>,
    weights: Vec<f64>,
    density: Vec<f64>,
    /// Crossing probability of the boundaries committed so far.
    crossed: f64,
}

impl Default for Boundaries {
    fn default() -> Self {
        Boundaries::new()
    }
}

fn normal() -> Normal {
    Normal::new(0.0, 1.0).expect("the standard normal exists")
}

/// The standard normal density.
fn pdf(x: f64) -> f64 {
    const INV_SQRT_TAU: f64 = 0.398_942_280_401_432_7;
    INV_SQRT_TAU * (-0.5 * x * x).exp()
}

/// The upper tail `1 − Φ(x)`.
fn upper(x: f64) -> f64 {
    normal().cdf(-x)
}

impl Boundaries {
    pub fn new() -> Boundaries {
        Boundaries {
            t: None,
            grid: Vec::new(),
            weights: Vec::new(),
            density: Vec::new(),
            crossed: 0.0,
        }
    }

    /// The chance that a run crosses a boundary `c` at a look at fraction `t` without having
    /// crossed before.
    fn crossing(&self, t: f64, c: f64) -> f64 {
        self.crossing_and_slope(t, c).0
    }

    /// The nominal one-sided level of a look at fraction `t` whose boundary brings the crossing
    /// chance up to `target` (cumulative); 0 when the looks before already spent it.
    pub fn nominal(&self, t: f64, target: f64) -> f64 {
        let want = target - self.crossed;
        if want <= 0.0 {
            return 0.0;
        }
        if self.t.is_none() {
            return want.min(0.5);
        }
        // The crossing chance falls as the boundary rises. Without the looks before, the boundary
        // of `want` alone would be `c₀ = Φ⁻¹(1 − want)`; they only lower the chance, so the
        // boundary is at most `c₀`. Newton's method inside a bracket that bisection keeps.
        let c0 = normal().inverse_cdf(1.0 - want.min(0.5));
        let (mut lo, mut hi) = (c0 - 4.0, c0);
        if self.crossing(t, lo) < want {
            return upper(lo);
        }
        let mut c = c0;
        for _ in 0..60 {
            let (value, slope) = self.crossing_and_slope(t, c);
            if value > want {
                lo = c;
            } else {
                hi = c;
            }
            if (value - want).abs() <= 1e-13 || hi - lo < 1e-12 {
                break;
            }
            let newton = c - (value - want) / slope;
            c = if slope < 0.0 && newton > lo && newton < hi {
                newton
            } else {
                0.5 * (lo + hi)
            };
        }
        upper(c)
    }

    /// [`Self::crossing`] and its derivative in the boundary.
    fn crossing_and_slope(&self, t: f64, c: f64) -> (f64, f64) {
        let Some(t0) = self.t else {
            return (upper(c), -pdf(c));
        };
        let root = (t - t0).max(1e-12).sqrt();
        let (a, b) = (t.sqrt(), t0.sqrt());
        (self.grid.iter().zip(&self.weights).zip(&self.density)).fold(
            (0.0, 0.0),
            |(value, slope), ((z, w), g)| {
                let u = (c * a - z * b) / root;
                (value + w * g * upper(u), slope - w * g * pdf(u) * a / root)
            },
        )
    }

    /// Records that the look at fraction `t` used the one-sided level `level` (0: no boundary),
    /// and moves the density past it.
    pub fn commit(&mut self, t: f64, level: f64) {
        let c = if level > 0.0 {
            normal().inverse_cdf(1.0 - level)
        } else {
            f64::INFINITY
        };
        self.crossed += if c.is_finite() {
            self.crossing(t, c)
        } else {
            0.0
        };
        let top = c.min(HIGH);
        let intervals = (2.0 * ((top + LOW) / (2.0 * STEP)).ceil()).max(2.0) as usize;
        let h = (top + LOW) / intervals as f64;
        let grid: Vec<f64> = (0..=intervals).map(|i| -LOW + h * i as f64).collect();
        let weights: Vec<f64> = (0..=intervals)
            .map(|i| {
                let simpson = if i == 0 || i == intervals {
                    1.0
                } else if i % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                simpson * h / 3.0
            })
            .collect();
        let density = match self.t {
            None => grid.iter().map(|y| pdf(*y)).collect(),
            Some(t0) => self.advanced(t0, t, &grid),
        };
        self.t = Some(t);
        self.grid = grid;
        self.weights = weights;
        self.density = density;
    }

    /// The sub-density at fraction `t` on `grid`, from the one at `t0`:
    /// `g(y) = ∫ g₀(z) φ((y√t − z√t₀)/√(t − t₀)) √t/√(t − t₀) dz`, summed only where the kernel is
    /// above `φ(KERNEL_REACH)` (its grid is uniform, so that is one index range per `y`).
    fn advanced(&self, t0: f64, t: f64, grid: &[f64]) -> Vec<f64> {
        let root = (t - t0).max(1e-12).sqrt();
        let (a, b) = (t.sqrt(), t0.sqrt());
        let scale = a / root;
        let (start, step) = match self.grid.as_slice() {
            [first, second, ..] => (*first, second - first),
            _ => return vec![0.0; grid.len()],
        };
        let last = self.grid.len() - 1;
        let index = |z: f64| ((z - start) / step).clamp(0.0, last as f64);
        grid.iter()
            .map(|y| {
                let from = index((y * a - KERNEL_REACH * root) / b).floor() as usize;
                let to = index((y * a + KERNEL_REACH * root) / b).ceil() as usize;
                (from..=to)
                    .map(|i| {
                        let z = self.grid[i];
                        self.weights[i] * self.density[i] * pdf((y * a - z * b) / root)
                    })
                    .sum::<f64>()
                    * scale
            })
            .collect()
    }

    /// The crossing chance of every boundary committed so far.
    pub fn crossed(&self) -> f64 {
        self.crossed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spending_function_spends_all_by_the_end_and_early() {
        assert_eq!(spent_by(0.025, 0.0), 0.0);
        assert!((spent_by(0.025, 1.0) - 0.025).abs() < 1e-15);
        // Pocock type: 45% of the budget by a third of the way (ρ = 3 spent 3.7% of it).
        assert!(spent_by(0.025, 1.0 / 3.0) > 0.45 * 0.025);
    }

    /// Pocock's constant for two equally spaced looks at 2.5% one-sided is 2.178 (Jennison and
    /// Turnbull, table 2.1 gives 2.178 for two-sided 5%): with that boundary at both looks the
    /// total crossing chance is 2.5%.
    #[test]
    fn two_looks_at_pocock_s_constant_cross_two_and_a_half_percent() {
        let level = upper(2.178);
        let mut b = Boundaries::new();
        b.commit(0.5, level);
        b.commit(1.0, level);
        assert!((b.crossed() - 0.025).abs() < 2e-4, "{}", b.crossed());
    }

    /// Looks the correlation lets spend more than their increments: the nominal level at the
    /// second look is above the increment, and committing the nominal levels spends the target.
    #[test]
    fn nominal_levels_spend_exactly_the_targets() {
        let fractions = [0.2, 0.4, 0.6, 0.8, 1.0];
        let mut b = Boundaries::new();
        let mut before = 0.0;
        for t in fractions {
            let target = spent_by(0.025, t);
            let level = b.nominal(t, target);
            assert!(level >= target - before - 1e-9, "t {t}: {level}");
            b.commit(t, level);
            assert!(
                (b.crossed() - target).abs() < 1e-5,
                "t {t}: {}",
                b.crossed()
            );
            before = target;
        }
    }

    /// A look that spends less than its level (or nothing) leaves the rest to the next one.
    #[test]
    fn an_unspent_level_carries_to_the_next_look() {
        let mut b = Boundaries::new();
        b.commit(0.5, 0.0);
        let level = b.nominal(1.0, 0.025);
        assert!((level - 0.025).abs() < 1e-6, "{level}");
    }
}
