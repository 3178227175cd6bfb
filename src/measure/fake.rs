//! A scripted [`Runner`] for tests: no processes, deterministic timings.
//!
//! Each command string maps to a behaviour (fixed times, noisy times around a mean, or failure);
//! every call is logged so tests can check the order evo ran things in.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::record::{ExitStatus, RunRecord, Rusage};
use super::runner::{RunSpec, Runner, RunnerError};

/// How a fake command behaves.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeBehavior {
    /// Takes these wall times in turn, cycling when they run out.
    Times(Vec<f64>),
    /// Takes `mean_s × exp(N(0, rel_sd))` seconds: log-normal noise of about `rel_sd` relative.
    Noisy { mean_s: f64, rel_sd: f64 },
    /// Exits with this code after a short time, writing this to stderr.
    Fails { code: i32, stderr: String },
}

/// A runner that answers from a script instead of spawning.
pub struct FakeRunner {
    behaviors: HashMap<String, FakeBehavior>,
    turns: HashMap<String, usize>,
    rng: ChaCha8Rng,
    /// Every command run so far, in order.
    pub calls: Vec<String>,
}

impl FakeRunner {
    pub fn new(seed: u64) -> FakeRunner {
        FakeRunner {
            behaviors: HashMap::new(),
            turns: HashMap::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            calls: Vec::new(),
        }
    }

    /// Scripts `command` (builder style).
    pub fn with(mut self, command: &str, behavior: FakeBehavior) -> FakeRunner {
        self.behaviors.insert(command.to_string(), behavior);
        self
    }

    fn standard_normal(&mut self) -> f64 {
        // Box–Muller; 1 - u keeps the logarithm finite.
        let u: f64 = 1.0 - self.rng.random::<f64>();
        let v: f64 = self.rng.random::<f64>();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

fn record(wall_s: f64, status: ExitStatus, stdout: &[u8], stderr: &str) -> RunRecord {
    use sha2::{Digest, Sha256};
    RunRecord {
        wall_s,
        rusage: Rusage {
            user_s: wall_s,
            max_rss_kib: 1024,
            ..Rusage::default()
        },
        status,
        timed_out: false,
        leftover_processes: false,
        stdout_sha256: hex::encode(Sha256::digest(stdout)),
        stdout_bytes: stdout.len() as u64,
        stderr_tail: stderr.to_string(),
        steal_s: None,
    }
}

impl Runner for FakeRunner {
    fn run(&mut self, spec: &RunSpec) -> Result<RunRecord, RunnerError> {
        self.calls.push(spec.command.clone());
        let behavior =
            self.behaviors
                .get(&spec.command)
                .cloned()
                .ok_or_else(|| RunnerError::Helper {
                    command: spec.command.clone(),
                    detail: "the fake runner has no script for this command".to_string(),
                })?;
        let turn = self.turns.entry(spec.command.clone()).or_insert(0);
        let this_turn = *turn;
        *turn += 1;
        let ok = ExitStatus::Exited { code: 0 };
        Ok(match behavior {
            FakeBehavior::Times(times) => {
                let wall = times[this_turn % times.len()];
                record(wall, ok, spec.command.as_bytes(), "")
            }
            FakeBehavior::Noisy { mean_s, rel_sd } => {
                let wall = mean_s * (rel_sd * self.standard_normal()).exp();
                record(wall, ok, spec.command.as_bytes(), "")
            }
            FakeBehavior::Fails { code, stderr } => {
                record(0.001, ExitStatus::Exited { code }, b"", &stderr)
            }
        })
    }
}
