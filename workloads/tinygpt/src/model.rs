//! The transformer: token and position embeddings, pre-layernorm blocks of causal self-attention
//! and an MLP, a final layernorm and a linear head over the vocabulary.
//!
//! Attention is written out with matmuls and an explicit causal mask rather than a fused kernel,
//! so the arithmetic is the same on every libtorch build and device.

use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use crate::config::ModelConfig;

/// GPT-2 style initialization: small normal weights, zero biases.
fn linear(path: nn::Path, inputs: i64, outputs: i64) -> nn::Linear {
    let config = nn::LinearConfig {
        ws_init: nn::Init::Randn {
            mean: 0.0,
            stdev: 0.02,
        },
        bs_init: Some(nn::Init::Const(0.0)),
        bias: true,
    };
    nn::linear(path, inputs, outputs, config)
}

fn embedding(path: nn::Path, entries: i64, dim: i64) -> nn::Embedding {
    let config = nn::EmbeddingConfig {
        ws_init: nn::Init::Randn {
            mean: 0.0,
            stdev: 0.02,
        },
        ..Default::default()
    };
    nn::embedding(path, entries, dim, config)
}

fn layer_norm(path: nn::Path, dim: i64) -> nn::LayerNorm {
    nn::layer_norm(path, vec![dim], Default::default())
}

#[derive(Debug)]
struct SelfAttention {
    qkv: nn::Linear,
    proj: nn::Linear,
    n_head: i64,
    /// `true` above the diagonal: positions a token may not look at.
    future: Tensor,
}

impl SelfAttention {
    fn new(path: nn::Path, config: &ModelConfig) -> Self {
        let c = config.n_embd;
        let t = config.max_context;
        let future = Tensor::ones([t, t], (Kind::Bool, path.device())).triu(1);
        Self {
            qkv: linear(&path / "qkv", c, 3 * c),
            proj: linear(&path / "proj", c, c),
            n_head: config.n_head,
            future,
        }
    }
}

impl Module for SelfAttention {
    fn forward(&self, x: &Tensor) -> Tensor {
        let (b, t, c) = x
            .size3()
            .expect("attention input is [batch, time, channels]");
        let head = c / self.n_head;
        let split_heads = |y: &Tensor| y.view([b, t, self.n_head, head]).transpose(1, 2);
        let qkv = x.apply(&self.qkv).split(c, 2);
        let (q, k, v) = (
            split_heads(&qkv[0]),
            split_heads(&qkv[1]),
            split_heads(&qkv[2]),
        );
        let mask = self.future.narrow(0, 0, t).narrow(1, 0, t);
        let scores = q.matmul(&k.transpose(-2, -1)) * (1.0 / (head as f64).sqrt());
        let weights = scores
            .masked_fill(&mask, f64::NEG_INFINITY)
            .softmax(-1, Kind::Float);
        weights
            .matmul(&v)
            .transpose(1, 2)
            .contiguous()
            .view([b, t, c])
            .apply(&self.proj)
    }
}

#[derive(Debug)]
struct Block {
    ln_attn: nn::LayerNorm,
    attn: SelfAttention,
    ln_mlp: nn::LayerNorm,
    fc: nn::Linear,
    fc_out: nn::Linear,
}

impl Block {
    fn new(path: nn::Path, config: &ModelConfig) -> Self {
        let c = config.n_embd;
        Self {
            ln_attn: layer_norm(&path / "ln_attn", c),
            attn: SelfAttention::new(&path / "attn", config),
            ln_mlp: layer_norm(&path / "ln_mlp", c),
            fc: linear(&path / "fc", c, 4 * c),
            fc_out: linear(&path / "fc_out", 4 * c, c),
        }
    }
}

impl Module for Block {
    fn forward(&self, x: &Tensor) -> Tensor {
        let x = x + x.apply(&self.ln_attn).apply(&self.attn);
        let mlp = x
            .apply(&self.ln_mlp)
            .apply(&self.fc)
            .gelu("none")
            .apply(&self.fc_out);
        x + mlp
    }
}

/// The whole model. Parameters live in the `VarStore` the caller passed to [`Gpt::new`].
#[derive(Debug)]
pub struct Gpt {
    tokens: nn::Embedding,
    positions: nn::Embedding,
    blocks: Vec<Block>,
    ln_final: nn::LayerNorm,
    head: nn::Linear,
    vocab: i64,
}

impl Gpt {
    pub fn new(path: &nn::Path, config: &ModelConfig, vocab: i64) -> Self {
        Self {
            tokens: embedding(path / "tokens", vocab, config.n_embd),
            positions: embedding(path / "positions", config.max_context, config.n_embd),
            blocks: (0..config.n_layer)
                .map(|i| Block::new(path / "blocks" / i, config))
                .collect(),
            ln_final: layer_norm(path / "ln_final", config.n_embd),
            head: linear(path / "head", config.n_embd, vocab),
            vocab,
        }
    }

    /// Logits `[batch, time, vocab]` for token ids `[batch, time]`.
    pub fn logits(&self, ids: &Tensor) -> Tensor {
        let t = ids.size()[1];
        let positions = Tensor::arange(t, (Kind::Int64, ids.device()));
        let mut x = ids.apply(&self.tokens) + positions.apply(&self.positions);
        for block in &self.blocks {
            x = x.apply(block);
        }
        x.apply(&self.ln_final).apply(&self.head)
    }

    /// Mean cross-entropy of predicting `targets` from `ids`.
    pub fn loss(&self, ids: &Tensor, targets: &Tensor) -> Tensor {
        self.logits(ids)
            .view([-1, self.vocab])
            .cross_entropy_for_logits(&targets.view([-1]))
    }
}
