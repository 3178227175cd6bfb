//! The training loop: batches in, AdamW steps out, one [`StepReport`] per optimizer step.
//!
//! Gradient accumulation is done the way trainers that keep accumulated gradients off the device
//! do it: after each micro-batch's backward pass every parameter's gradient is copied to host
//! memory and added into a host-side accumulator (allocated afresh each step), the device
//! gradients are cleared, and after the last micro-batch the sums are copied back before the
//! optimizer step. It costs a device→host copy, a host add and, at the end, a host→device copy
//! per parameter per micro-batch; letting autograd accumulate in place does the same additions in
//! the same order and gives bit-identical results.
//!
//! Nothing here prints: reports go to the caller's callback.

use anyhow::{bail, ensure, Context, Result};
use tch::{nn, nn::OptimizerConfig, Device, Tensor};

use crate::config::{DeviceChoice, LrSchedule, TrainConfig};
use crate::corpus::{self, Rng};
use crate::data::{Loader, Vocab};
use crate::model::Gpt;

/// What one optimizer step did.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    /// 1-based.
    pub step: i64,
    /// Mean of the micro-batch losses of this step.
    pub loss: f64,
    pub lr: f64,
}

/// What the whole run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub parameters: i64,
    pub first_loss: f64,
    pub final_loss: f64,
}

/// Maps the requested device to a libtorch device, failing if it is not there.
pub fn resolve_device(choice: DeviceChoice) -> Result<Device> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Cuda if tch::Cuda::is_available() => Ok(Device::Cuda(0)),
        DeviceChoice::Cuda => bail!("--device cuda: libtorch sees no CUDA device on this machine"),
        DeviceChoice::Mps if tch::utils::has_mps() => Ok(Device::Mps),
        DeviceChoice::Mps => bail!("--device mps: this libtorch build has no MPS support here"),
    }
}

/// The learning rate for 0-based `step`: linear warmup, then constant or cosine decay to 10%.
pub fn learning_rate(config: &TrainConfig, step: i64) -> f64 {
    let base = config.lr;
    if step < config.warmup {
        return base * (step + 1) as f64 / config.warmup as f64;
    }
    match config.lr_schedule {
        LrSchedule::Const => base,
        LrSchedule::Cosine => {
            let floor = 0.1 * base;
            let decay_steps = (config.steps - config.warmup).max(1) as f64;
            let progress = ((step - config.warmup) as f64 / decay_steps).min(1.0);
            floor + 0.5 * (base - floor) * (1.0 + (std::f64::consts::PI * progress).cos())
        }
    }
}

/// Trains from scratch as `config` says and calls `on_step` after every optimizer step.
///
/// The seed decides the text, the initial weights and the batch order, so a fresh seed is a
/// genuinely different run.
pub fn train(config: &TrainConfig, on_step: &mut dyn FnMut(&StepReport)) -> Result<Summary> {
    tch::set_num_threads(config.threads);
    let device = resolve_device(config.device)?;
    let mut rng = Rng::new(config.seed);
    tch::manual_seed(rng.next_u64() as i64);
    if let Device::Cuda(_) = device {
        tch::Cuda::manual_seed_all(rng.next_u64());
    }

    let text = corpus::generate(rng.next_u64(), config.corpus_chars);
    let vocab = Vocab::ascii();
    let vs = nn::VarStore::new(device);
    let model = Gpt::new(&vs.root(), &config.model, vocab.size());
    let mut loader = Loader::new(
        text,
        vocab,
        rng.fork(1),
        config.batch,
        config.context,
        device,
    );
    let adamw = nn::AdamW {
        beta1: 0.9,
        beta2: 0.95,
        wd: config.weight_decay,
        eps: 1e-8,
        amsgrad: false,
    };
    let mut optimizer = adamw
        .build(&vs, config.lr)
        .context("building the AdamW optimizer")?;
    let params = vs.trainable_variables();
    let parameters = params.iter().map(Tensor::numel).sum::<usize>() as i64;

    let mut first_loss = None;
    let mut final_loss = f64::NAN;
    for step in 0..config.steps {
        let lr = learning_rate(config, step);
        optimizer.set_lr(lr);
        let mut host_grads: Vec<Vec<f32>> = params.iter().map(|p| vec![0.0; p.numel()]).collect();
        let mut loss_sum = 0.0;
        for _ in 0..config.accum {
            let batch = loader.next_batch()?;
            let loss = model.loss(&batch.inputs, &batch.targets);
            loss_sum += f64::try_from(&loss).context("reading the loss")?;
            optimizer.zero_grad();
            (loss / config.accum as f64).backward();
            add_grads_to_host(&params, &mut host_grads)?;
        }
        copy_grads_to_device(&params, &host_grads);
        optimizer.step();

        let loss = loss_sum / config.accum as f64;
        ensure!(
            loss.is_finite(),
            "the loss became {loss} at step {}",
            step + 1
        );
        first_loss.get_or_insert(loss);
        final_loss = loss;
        on_step(&StepReport {
            step: step + 1,
            loss,
            lr,
        });
    }
    Ok(Summary {
        parameters,
        first_loss: first_loss.unwrap_or(f64::NAN),
        final_loss,
    })
}

/// Adds every parameter's current gradient into its host-side accumulator.
fn add_grads_to_host(params: &[Tensor], host_grads: &mut [Vec<f32>]) -> Result<()> {
    for (param, sum) in params.iter().zip(host_grads.iter_mut()) {
        let grad = param.grad().to_device(Device::Cpu).flatten(0, -1);
        let grad = Vec::<f32>::try_from(&grad).context("copying a gradient to the host")?;
        for (s, g) in sum.iter_mut().zip(&grad) {
            *s += g;
        }
    }
    Ok(())
}

/// Overwrites every parameter's gradient with its accumulated host-side sum.
fn copy_grads_to_device(params: &[Tensor], host_grads: &[Vec<f32>]) {
    tch::no_grad(|| {
        for (param, sum) in params.iter().zip(host_grads) {
            let summed = Tensor::from_slice(sum)
                .view(param.size().as_slice())
                .to_device(param.device());
            param.grad().copy_(&summed);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::preset;

    #[test]
    fn warmup_then_cosine_ends_at_a_tenth() {
        let mut config = preset("tiny").unwrap();
        config.steps = 11;
        config.warmup = 1;
        assert!((learning_rate(&config, 0) - config.lr).abs() < 1e-12);
        assert!((learning_rate(&config, 11) - 0.1 * config.lr).abs() < 1e-12);
        config.lr_schedule = LrSchedule::Const;
        assert_eq!(learning_rate(&config, 7), config.lr);
    }
}
