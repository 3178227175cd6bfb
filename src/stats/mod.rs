//! Pure statistics of paired measurements, exactly as DESIGN §3 defines them.
//!
//! Nothing here spawns, prints or reads a clock: every function maps numbers to numbers, so the
//! receipt verifier can recompute a verdict from raw runs and tests can compare against brute force.
//! (API fixed here; implementation in progress.)

use serde::{Deserialize, Serialize};

/// Per-pair speedup ratios `t_baseline / t_candidate`: at least one, all finite and > 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratios(Vec<f64>);

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("no ratios given")]
    Empty,
    #[error("ratio #{index} is {value}: every ratio must be finite and positive")]
    NotPositive { index: usize, value: f64 },
}

impl Ratios {
    pub fn new(values: Vec<f64>) -> Result<Ratios, StatsError> {
        todo!("{values:?}")
    }
    pub fn values(&self) -> &[f64] {
        &self.0
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn log_ratios(&self) -> Vec<f64> {
        self.0.iter().map(|r| r.ln()).collect()
    }
}

/// Order-statistic confidence interval for the median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ci95 {
    pub lower: f64,
    pub upper: f64,
    /// Achieved coverage, e.g. 0.9609 for n = 9.
    pub coverage: f64,
    /// 1-based rank: the interval is `[r_(k), r_(n+1-k)]`.
    pub k: usize,
}

/// The rank k and its coverage for n pairs; `None` when n < 6 (95% is unreachable).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OrderRank {
    pub k: usize,
    pub coverage: f64,
}

pub fn order_rank(n: usize) -> Option<OrderRank> {
    todo!("{n}")
}

/// Median of the ratios (geometric midpoint of the two middle values when n is even).
pub fn median(ratios: &Ratios) -> f64 {
    todo!("{ratios:?}")
}

pub fn ci95(ratios: &Ratios) -> Option<Ci95> {
    todo!("{ratios:?}")
}

/// sd / mean of one arm's times (sample sd, n - 1); 0 for fewer than two values.
pub fn cov(times: &[f64]) -> f64 {
    todo!("{times:?}")
}

/// Per-pair noise: 1.4826 × MAD of the A/A log-ratios.
pub fn noise_sigma(aa: &Ratios) -> f64 {
    todo!("{aa:?}")
}

/// Noise floor as a fraction (0.0262 for ±2.62%): `exp(1.96 × 1.2533 × σ / √n_aa) − 1`.
pub fn noise_floor(sigma: f64, n_aa: usize) -> f64 {
    todo!("{sigma} {n_aa}")
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum AaValidity {
    /// The A/A CI95 contains 1.
    Valid,
    /// The A/A CI95 excludes 1: drift, an order effect or thermal state biases the setup.
    Biased { ci95: Ci95 },
    /// Fewer than 6 A/A pairs: validity cannot be shown.
    TooFewPairs { n: usize },
}

pub fn aa_validity(aa: &Ratios) -> AaValidity {
    todo!("{aa:?}")
}
