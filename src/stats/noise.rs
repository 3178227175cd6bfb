//! How noisy the machine is, measured before anything is claimed about a candidate.
//!
//! The A/A pairs (baseline against itself) carry no effect, so their spread is pure noise and their
//! interval must contain 1; the per-arm CoV shows which side was unstable.

use serde::{Deserialize, Serialize};

use super::{Ci95, Ratios, ci95, plain_median};

/// Scales a MAD to the standard deviation of a normal distribution (1 / Φ⁻¹(3/4)).
const MAD_TO_SD: f64 = 1.4826;
/// Two-sided 95% normal quantile.
pub(super) const Z_95: f64 = 1.96;
/// √(π/2): the standard error of a median relative to that of a mean, for normal noise.
pub(super) const MEDIAN_EFFICIENCY: f64 = 1.2533;

/// sd / mean of one arm's times (sample sd, n - 1); 0 for fewer than two values.
///
/// Also 0 when the mean is 0, where the ratio is undefined and there is nothing to be noisy about.
pub fn cov(times: &[f64]) -> f64 {
    let n = times.len();
    if n < 2 {
        return 0.0;
    }
    let mean = times.iter().sum::<f64>() / n as f64;
    if mean == 0.0 {
        return 0.0;
    }
    let squares: f64 = times.iter().map(|t| (t - mean).powi(2)).sum();
    (squares / (n - 1) as f64).sqrt() / mean
}

/// Per-pair noise: 1.4826 × MAD of the A/A log-ratios.
///
/// The MAD rather than the sd because one A/A pair disturbed by a cron job should not inflate the
/// noise estimate for the whole run.
pub fn noise_sigma(aa: &Ratios) -> f64 {
    let logs = aa.log_ratios();
    let centre = plain_median(&logs);
    let deviations: Vec<f64> = logs.iter().map(|x| (x - centre).abs()).collect();
    MAD_TO_SD * plain_median(&deviations)
}

/// Noise floor as a fraction (0.0262 for ±2.62%): `exp(1.96 × 1.2533 × σ / √n) − 1`, how far
/// from 1 the median of `n` pairs of pure noise lands by chance (95%, two-sided).
///
/// With `n` = the A/A pairs it is the A/A noise floor that `evo bench` prints; with `n` = the
/// comparison's pairs it is the floor the verdict must clear (see `gates`), which shrinks as pairs
/// are added. Infinite when `n` is 0: without pairs nothing bounds the noise.
pub fn noise_floor(sigma: f64, n: usize) -> f64 {
    if n == 0 {
        return f64::INFINITY;
    }
    (Z_95 * MEDIAN_EFFICIENCY * sigma / (n as f64).sqrt()).exp_m1()
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum AaValidity {
    /// The A/A CI95 contains 1.
    Valid,
    /// The A/A CI95 excludes 1: drift, an order effect or thermal state biases the setup.
    Biased { ci95: Ci95 },
    /// Fewer than 6 A/A pairs: validity cannot be shown.
    TooFewPairs { n: usize },
}

impl AaValidity {
    pub fn is_valid(&self) -> bool {
        matches!(self, AaValidity::Valid)
    }
}

pub fn aa_validity(aa: &Ratios) -> AaValidity {
    match ci95(aa) {
        None => AaValidity::TooFewPairs { n: aa.len() },
        Some(ci) if ci.lower > 1.0 || ci.upper < 1.0 => AaValidity::Biased { ci95: ci },
        Some(_) => AaValidity::Valid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(v: &[f64]) -> Ratios {
        Ratios::new(v.to_vec()).expect("valid ratios")
    }

    #[test]
    fn cov_uses_the_sample_sd() {
        // mean 5, squared deviations 9 + 1 + 1 + 9 = 20, sd = √(20/3).
        let got = cov(&[2.0, 4.0, 6.0, 8.0]);
        assert!((got - (20.0f64 / 3.0).sqrt() / 5.0).abs() < 1e-15, "{got}");
        assert_eq!(cov(&[3.0]), 0.0);
        assert_eq!(cov(&[]), 0.0);
        assert_eq!(cov(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn noise_sigma_is_scaled_mad_of_logs() {
        let e = std::f64::consts::E;
        // logs -2, -1, 0, 1, 3: median 0, deviations 2, 1, 0, 1, 3 → MAD 1.
        let aa = r(&[e.powi(-2), e.recip(), 1.0, e, e.powi(3)]);
        assert!((noise_sigma(&aa) - 1.4826).abs() < 1e-12);
        // Even count: logs 0, 1, 2, 4 → median 1.5; deviations 1.5, .5, .5, 2.5 → MAD 1.
        let aa = r(&[1.0, e, e * e, e.powi(4)]);
        assert!((noise_sigma(&aa) - 1.4826).abs() < 1e-12);
        assert_eq!(noise_sigma(&r(&[1.3; 7])), 0.0);
    }

    #[test]
    fn noise_floor_of_a_known_sigma() {
        // exp(1.96 · 1.2533 · 0.035 / √11) − 1, computed by hand: 0.0262617…
        let got = noise_floor(0.035, 11);
        assert!((got - 0.026_261_7).abs() < 1e-6, "{got}");
        assert_eq!(noise_floor(0.0, 11), 0.0);
        assert_eq!(noise_floor(0.035, 0), f64::INFINITY);
    }

    #[test]
    fn aa_validity_flags_intervals_that_exclude_one() {
        let centred = r(&[0.97, 0.98, 0.99, 1.0, 1.01, 1.02, 1.03, 1.0, 1.0]);
        assert_eq!(aa_validity(&centred), AaValidity::Valid);
        let drifting = r(&[1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09]);
        match aa_validity(&drifting) {
            AaValidity::Biased { ci95 } => assert_eq!((ci95.lower, ci95.upper), (1.02, 1.08)),
            other => panic!("{other:?}"),
        }
        let slower = r(&[0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97]);
        assert!(matches!(aa_validity(&slower), AaValidity::Biased { .. }));
        assert_eq!(aa_validity(&r(&[1.0; 5])), AaValidity::TooFewPairs { n: 5 });
    }

    #[test]
    fn aa_interval_touching_one_is_valid() {
        let touching = r(&[1.0, 1.0, 1.01, 1.02, 1.03, 1.04, 1.05]);
        assert_eq!(aa_validity(&touching), AaValidity::Valid);
    }
}
