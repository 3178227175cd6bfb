//! The shape of one run: model size, training hyper-parameters and the named presets.
//!
//! Presets exist so that evo's scenarios can name a workload size (`--preset small`) instead of
//! repeating a dozen numbers; every field can still be overridden from the command line.

use anyhow::{bail, Result};

/// Sizes of the transformer.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub n_layer: i64,
    pub n_head: i64,
    pub n_embd: i64,
    /// Longest sequence the position embedding covers; the training context may not exceed it.
    pub max_context: i64,
}

/// How the learning rate moves over the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LrSchedule {
    Const,
    /// Linear warmup, then a cosine decay to a tenth of the base rate at the last step.
    Cosine,
}

impl LrSchedule {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "const" => Ok(Self::Const),
            "cosine" => Ok(Self::Cosine),
            _ => bail!("unknown learning-rate schedule '{s}' (expected const or cosine)"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Const => "const",
            Self::Cosine => "cosine",
        }
    }
}

/// Where the tensors live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    Cpu,
    Cuda,
    Mps,
}

impl DeviceChoice {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda),
            "mps" => Ok(Self::Mps),
            _ => bail!("unknown device '{s}' (expected cpu, cuda or mps)"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
            Self::Mps => "mps",
        }
    }
}

/// Everything a training run needs, already validated (see [`TrainConfig::validate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    pub preset: &'static str,
    pub model: ModelConfig,
    pub steps: i64,
    /// Sequences per micro-batch.
    pub batch: i64,
    /// Micro-batches whose gradients are summed before one optimizer step.
    pub accum: i64,
    pub context: i64,
    pub lr: f64,
    pub lr_schedule: LrSchedule,
    pub warmup: i64,
    pub weight_decay: f64,
    /// Characters of generated text to train on.
    pub corpus_chars: usize,
    pub seed: u64,
    /// Intra-op threads for libtorch; fixed so that results do not depend on the machine.
    pub threads: i32,
    pub device: DeviceChoice,
}

/// The default seed; evo substitutes its own `{seed}` in confirmation runs.
pub const DEFAULT_SEED: u64 = 1337;
/// One intra-op thread: bit-for-bit reproducible losses, and the second core of a 2-core machine
/// stays free for the rest of the process (a loader thread, the OS).
pub const DEFAULT_THREADS: i32 = 1;

pub const PRESET_NAMES: &[&str] = &["tiny", "small", "medium"];

/// The named sizes. `tiny` is for checks and the self-test (well under a second of training);
/// `small` is the timed training scenario (about 2 s on one core of the reference machine),
/// shaped like the seed's bundle measured it: a wide model (5.4M parameters) on short
/// micro-batches, so the host-side gradient accumulation is about a fifth of a step and building
/// a batch (a walk through a 16 MiB corpus) a few percent;
/// `medium` is a heavier, differently shaped scenario for holdouts (about 3 s).
pub fn preset(name: &str) -> Result<TrainConfig> {
    let base = TrainConfig {
        preset: "tiny",
        model: ModelConfig {
            n_layer: 2,
            n_head: 2,
            n_embd: 32,
            max_context: 64,
        },
        steps: 20,
        batch: 4,
        accum: 2,
        context: 32,
        lr: 3e-3,
        lr_schedule: LrSchedule::Cosine,
        warmup: 4,
        weight_decay: 0.01,
        corpus_chars: 64 * 1024,
        seed: DEFAULT_SEED,
        threads: DEFAULT_THREADS,
        device: DeviceChoice::Cpu,
    };
    let config = match name {
        "tiny" => base,
        "small" => TrainConfig {
            preset: "small",
            model: ModelConfig {
                n_layer: 3,
                n_head: 6,
                n_embd: 384,
                max_context: 64,
            },
            steps: 20,
            batch: 1,
            accum: 4,
            context: 16,
            lr: 1e-3,
            warmup: 4,
            corpus_chars: 16 * 1024 * 1024,
            ..base
        },
        "medium" => TrainConfig {
            preset: "medium",
            model: ModelConfig {
                n_layer: 4,
                n_head: 4,
                n_embd: 128,
                max_context: 256,
            },
            steps: 20,
            batch: 4,
            accum: 4,
            context: 96,
            lr: 1e-3,
            warmup: 4,
            corpus_chars: 1024 * 1024,
            ..base
        },
        _ => bail!(
            "unknown preset '{name}' (expected one of {})",
            PRESET_NAMES.join(", ")
        ),
    };
    Ok(config)
}

impl TrainConfig {
    /// Checks the invariants the rest of the program relies on, so later code can trust them.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("steps", self.steps),
            ("batch", self.batch),
            ("accum", self.accum),
            ("context", self.context),
            ("threads", i64::from(self.threads)),
        ];
        for (name, value) in positive {
            if value < 1 {
                bail!("--{name} must be at least 1, got {value}");
            }
        }
        if self.warmup < 0 {
            bail!("--warmup must not be negative, got {}", self.warmup);
        }
        if self.context > self.model.max_context {
            bail!(
                "--context {} exceeds the {} preset's maximum of {}",
                self.context,
                self.preset,
                self.model.max_context
            );
        }
        if self.model.n_embd % self.model.n_head != 0 {
            bail!(
                "n_embd {} is not a multiple of n_head {}",
                self.model.n_embd,
                self.model.n_head
            );
        }
        if self.corpus_chars < 4 * self.context as usize + 2 {
            bail!(
                "a corpus of {} characters is too short for context {}",
                self.corpus_chars,
                self.context
            );
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            bail!(
                "the learning rate must be a positive number, got {}",
                self.lr
            );
        }
        Ok(())
    }
}
