//! Turning the generated text into batches of token ids.
//!
//! The loader is deliberately the simple synchronous kind many training scripts start with: every
//! micro-batch samples its windows, walks the text to each window, tokenizes it through a map and
//! copies the ids into freshly allocated buffers and fresh tensors, all on the training thread
//! while the model waits. That is evo's reference baseline; moving this work off the critical path
//! (a prefetch thread, reused buffers, pre-tokenized text) is what candidate patches try.
//! Whatever they do, the sequence of batches for a seed must stay exactly the same.

use std::collections::HashMap;

use anyhow::{anyhow, Result};
use tch::{Device, Tensor};

use crate::corpus::{self, Rng};

/// Character ↔ id mapping over the fixed alphabet (printable ASCII and newline).
#[derive(Debug, Clone)]
pub struct Vocab {
    chars: Vec<char>,
    ids: HashMap<char, i64>,
}

impl Vocab {
    pub fn ascii() -> Self {
        let chars = corpus::alphabet();
        let ids = chars
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, i as i64))
            .collect();
        Self { chars, ids }
    }

    pub fn size(&self) -> i64 {
        self.chars.len() as i64
    }

    pub fn id(&self, c: char) -> Result<i64> {
        self.ids
            .get(&c)
            .copied()
            .ok_or_else(|| anyhow!("character {c:?} is not in the vocabulary"))
    }
}

/// Inputs and next-character targets, both `[batch, context]` int64 on the training device.
pub struct Batch {
    pub inputs: Tensor,
    pub targets: Tensor,
}

/// Samples random windows of the corpus, one micro-batch at a time.
pub struct Loader {
    text: String,
    /// Length of `text` in characters (not bytes): window offsets are character offsets.
    n_chars: usize,
    vocab: Vocab,
    rng: Rng,
    batch: usize,
    context: usize,
    device: Device,
}

impl Loader {
    pub fn new(
        text: String,
        vocab: Vocab,
        rng: Rng,
        batch: i64,
        context: i64,
        device: Device,
    ) -> Self {
        let n_chars = text.chars().count();
        Self {
            text,
            n_chars,
            vocab,
            rng,
            batch: batch as usize,
            context: context as usize,
            device,
        }
    }

    /// Builds the next micro-batch. The order of random draws defines the data stream: one offset
    /// per sequence, in sequence order.
    pub fn next_batch(&mut self) -> Result<Batch> {
        let mut inputs = Vec::new();
        let mut targets = Vec::new();
        for _ in 0..self.batch {
            let start = self.rng.below(self.n_chars - self.context - 1);
            // Character-indexed, so the loader stays correct for any UTF-8 corpus.
            let window: Vec<i64> = self
                .text
                .chars()
                .skip(start)
                .take(self.context + 1)
                .map(|c| self.vocab.id(c))
                .collect::<Result<_>>()?;
            inputs.extend_from_slice(&window[..self.context]);
            targets.extend_from_slice(&window[1..]);
        }
        let shape = [self.batch as i64, self.context as i64];
        Ok(Batch {
            inputs: Tensor::from_slice(&inputs)
                .view(shape)
                .to_device(self.device),
            targets: Tensor::from_slice(&targets)
                .view(shape)
                .to_device(self.device),
        })
    }
}
