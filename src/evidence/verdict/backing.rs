//! Wall time and instruction counts of the same scenario must tell the same story (docs/design.md
//! §3.12.1). A candidate that can tell which lane it runs in (valgrind's client requests, its
//! slowdown, a preload library) can do the work under callgrind and skip it in the timed runs:
//! "instructions +0.00%" beside a 4× wall-time gain. When the deterministic lane ran, that
//! disagreement is evidence, and it blocks acceptance instead of being printed side by side.
//!
//! The bound, in log terms, with `L` the CI95 lower bound of the wall-time speedup and `I` the
//! instruction speedup (baseline count / candidate count):
//!
//! - a wall-time gain is *backed* when `ln I ≥ k · ln L`: the instructions fell by at least a
//!   fraction `k` of what the wall time says for certain (`L`, not the median);
//! - under the instructions metric, an instruction gain is *contradicted* when the wall-time
//!   interval's upper bound `U` excludes that fraction of it, `ln U < k · ln I`, and that
//!   fraction is itself beyond the minimum effect (`k · ln I > ln(1 + min_effect)`).
//!
//! `k` is [`FRACTION`] (a quarter) when the timed command itself was counted, and
//! [`FRACTION_SHORT_RUN`] (a sixteenth) when the scenario's `count.run` stood in: start-up, the
//! same in both arms, weighs more in a shorter run (three quarters of the bundled trainer's
//! count) and dilutes its change. The bundled real speedup, the tiled matmul (about 1.55× in
//! wall time, about 40% fewer instructions: `ln I ≈ 0.51` against `k · ln L ≈ 0.10`), passes by
//! five times; gains from memory traffic or parallelism alone can show too few instructions and
//! are blocked under the lane, with the reason saying so.

use super::super::figures::Figures;
use super::super::result::ScenarioResult;

/// The fraction of the wall-time gain (in log terms) the instructions must show when the timed
/// command was counted.
pub const FRACTION: f64 = 0.25;

/// The fraction when a shorter run (`count.run`) was counted instead of the timed command.
pub const FRACTION_SHORT_RUN: f64 = 0.0625;

/// What the deterministic lane says of one scenario's wall-time figures.
#[derive(Debug, Clone, PartialEq)]
pub enum Backing {
    /// Nothing to judge: the lane did not run on this scenario, or there is no gain to back.
    NotJudged,
    /// The counts agree with the wall time.
    Agrees,
    /// The counts disagree beyond the bound: the reason.
    Disagrees(String),
    /// The lane ran but gave no count, so the gain cannot be checked: the reason.
    NoCount(String),
}

/// The fraction of the gain the counts of `s` must show (shorter run or the timed command).
fn fraction(s: &ScenarioResult) -> f64 {
    match s.instructions.as_ref().and_then(|i| i.command.as_ref()) {
        Some(_) => FRACTION_SHORT_RUN,
        None => FRACTION,
    }
}

/// Baseline / candidate instructions, when both counts exist and are positive.
fn instruction_speedup(s: &ScenarioResult) -> Option<f64> {
    let i = s.instructions.as_ref()?;
    let (b, c) = (i.baseline?, i.candidate?);
    (b > 0 && c > 0).then(|| b as f64 / c as f64)
}

fn counted_what(s: &ScenarioResult) -> &'static str {
    match s.instructions.as_ref().and_then(|i| i.command.as_ref()) {
        Some(_) => "a sixteenth (the count is of the scenario's shorter `count.run`)",
        None => "a quarter",
    }
}

/// A wall-time gain that passed its gate (`f.training_gate.passed`), judged against the counts.
pub fn wall_gain_backed(s: &ScenarioResult, f: &Figures) -> Backing {
    let Some(lane) = s.instructions.as_ref() else {
        return Backing::NotJudged;
    };
    let Some(lower) = f.ci95.map(|c| c.lower).filter(|l| *l > 1.0) else {
        return Backing::NotJudged;
    };
    let Some(speedup) = instruction_speedup(s) else {
        return Backing::NoCount(format!(
            "training scenario `{}`: the deterministic lane ran but gave no instruction count \
             ({}), so its wall-time gain (interval's lower bound {lower:.4}×) cannot be checked against \
             the counts: not accepted",
            s.name,
            lane.note.as_deref().unwrap_or("no reason recorded")
        ));
    };
    let k = fraction(s);
    if speedup.ln() >= k * lower.ln() {
        return Backing::Agrees;
    }
    let needed = 100.0 * (1.0 - (-k * lower.ln()).exp());
    Backing::Disagrees(format!(
        "training scenario `{}`: the wall-time gain is not backed by the instruction counts: the \
         interval's lower bound {lower:.4}× asks for at least {needed:.2}% fewer instructions ({} of the \
         gain, in log terms), the candidate executed {:+.2}%. A candidate that does the work only \
         where it is counted looks like this; a gain from memory traffic or parallelism alone \
         can too (docs/design.md §3.12.1)",
        s.name,
        counted_what(s),
        100.0 * (1.0 / speedup - 1.0)
    ))
}

/// An instruction gain that passed the instructions metric, judged against the wall time: only
/// when the share of it the wall time must show is itself beyond `min_effect` (a few percent
/// fewer instructions with flat wall time is what that metric is for).
pub fn instruction_gain_contradicted(
    s: &ScenarioResult,
    f: &Figures,
    min_effect: f64,
) -> Option<String> {
    let speedup = instruction_speedup(s).filter(|i| *i > 1.0)?;
    let upper = f.ci95.map(|c| c.upper)?;
    let k = FRACTION;
    let shown = k * speedup.ln();
    if shown <= min_effect.ln_1p() || (upper > 0.0 && upper.ln() >= shown) {
        return None;
    }
    Some(format!(
        "training scenario `{}`: the instruction counts are contradicted by the wall time: \
         {:+.2}% instructions would make the candidate at least {:.4}× faster ({} of the gain, in \
         log terms), and the wall-time interval's upper bound is {upper:.4}×. A candidate that does \
         less work only where it is counted looks like this (docs/design.md §3.12.1)",
        s.name,
        100.0 * (1.0 / speedup - 1.0),
        speedup.powf(k),
        "a quarter"
    ))
}
