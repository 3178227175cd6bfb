//! Rendering runs as text. Every line is deterministic for a given plan (no timings, no paths),
//! so evo can compare or hash the output of a baseline and a candidate.

use crate::cli::Command;
use crate::config::TrainConfig;
use crate::train::{StepReport, Summary};

/// The first line of every run: the full configuration, so two outputs that agree were produced
/// by the same settings.
pub fn header(command: Command, c: &TrainConfig) -> String {
    format!(
        "tinygpt {} preset={} device={} seed={} steps={} batch={} accum={} context={} \
         layers={} heads={} embd={} lr={} schedule={} warmup={} corpus={} threads={}",
        command.name(),
        c.preset,
        c.device.name(),
        c.seed,
        c.steps,
        c.batch,
        c.accum,
        c.context,
        c.model.n_layer,
        c.model.n_head,
        c.model.n_embd,
        c.lr,
        c.lr_schedule.name(),
        c.warmup,
        c.corpus_chars,
        c.threads,
    )
}

/// One line per optimizer step in `check` mode, with enough digits to tell any two f32 losses
/// apart.
pub fn step_line(report: &StepReport) -> String {
    format!("step {} loss {:.9}", report.step, report.loss)
}

/// The closing lines of `check` and `train`.
pub fn summary(summary: &Summary) -> String {
    format!(
        "params {}\nfinal loss {:.4}",
        summary.parameters, summary.final_loss
    )
}

pub fn selftest(summary: &Summary, steps: i64) -> String {
    format!(
        "selftest ok: {steps} steps, loss {:.4} -> {:.4}",
        summary.first_loss, summary.final_loss
    )
}
