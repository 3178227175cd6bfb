//! `evo receipt verify --recompute`: every figure, gate, tier and verdict of a predicate derived
//! again from its raw runs, with the same functions `evo confirm` used, and compared field by field.
//!
//! A signature proves who wrote a receipt; this proves the conclusions follow from the runs in it.
//! The pipeline gates (build, tests, differential, sanitizers) are records of commands evo ran and
//! are taken as recorded; everything measured is recomputed, and the `timed output` and
//! `leftover processes` gates are checked against the flags of the recorded runs.

mod draws;
mod plans;

use serde::Serialize;
use serde_json::Value;

use crate::evidence::figures;
use crate::evidence::result::{ConfirmResult, GateName, GateStatus, Role, ScenarioResult};
use crate::evidence::verdict;
use crate::measure::record::{Order, Pair};
use crate::measure::schedule::PairOrder;
use crate::stats;

/// Numbers agree when they differ by at most this, relative to the larger (JSON round trips and
/// another platform's `ln`/`exp` may move the last bits).
const RELATIVE_TOLERANCE: f64 = 1e-9;

/// One field whose recorded value does not follow from the raw runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// JSON path inside the predicate, e.g. `scenarios[0].training.median`.
    pub field: String,
    pub recorded: String,
    pub recomputed: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: recorded {}, recomputed {}",
            self.field, self.recorded, self.recomputed
        )
    }
}

fn numbers_agree(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= RELATIVE_TOLERANCE * a.abs().max(b.abs())
}

/// Appends every leaf where `recorded` and `recomputed` differ.
fn diff_values(path: &str, recorded: &Value, recomputed: &Value, out: &mut Vec<Difference>) {
    let mut differ = || {
        out.push(Difference {
            field: path.to_string(),
            recorded: recorded.to_string(),
            recomputed: recomputed.to_string(),
        })
    };
    match (recorded, recomputed) {
        (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) if numbers_agree(x, y) => {}
            _ => differ(),
        },
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (x, y) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                diff_values(&format!("{path}.{k}"), x, y, out);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff_values(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (a, b) if a == b => {}
        _ => differ(),
    }
}

fn diff_serialized<T: Serialize>(path: &str, recorded: &T, recomputed: &T) -> Vec<Difference> {
    let mut out = Vec::new();
    match (
        serde_json::to_value(recorded),
        serde_json::to_value(recomputed),
    ) {
        (Ok(a), Ok(b)) => diff_values(path, &a, &b, &mut out),
        _ => out.push(Difference {
            field: path.to_string(),
            recorded: "(not serializable)".into(),
            recomputed: "(not serializable)".into(),
        }),
    }
    out
}

/// A value as compact JSON, to quote in a difference.
fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn problem(
    field: String,
    recorded: impl Into<String>,
    recomputed: impl Into<String>,
) -> Difference {
    Difference {
        field,
        recorded: recorded.into(),
        recomputed: recomputed.into(),
    }
}

/// Checks index, order, success and ratio of each pair; returns the pairs with recomputed ratios.
fn check_pairs(
    path: &str,
    pairs: &[Pair],
    expected_order: impl Fn(usize) -> Order,
    out: &mut Vec<Difference>,
) -> Vec<Pair> {
    let mut fixed = Vec::with_capacity(pairs.len());
    for (i, p) in pairs.iter().enumerate() {
        let here = format!("{path}[{i}]");
        if p.index != i {
            out.push(problem(
                format!("{here}.index"),
                p.index.to_string(),
                i.to_string(),
            ));
        }
        let order = expected_order(i);
        if p.order != order {
            out.push(problem(
                format!("{here}.order"),
                json(&p.order),
                json(&order),
            ));
        }
        for (arm, run) in [("baseline", &p.baseline), ("candidate", &p.candidate)] {
            if !run.succeeded() {
                out.push(problem(
                    format!("{here}.{arm}.status"),
                    json(&run.status),
                    "a successful run (a failed run cannot be measured)",
                ));
            }
        }
        let mut recomputed = Pair::new(p.index, p.order, p.baseline.clone(), p.candidate.clone());
        recomputed.seed = p.seed;
        out.extend(diff_serialized(
            &format!("{here}.ratio"),
            &p.ratio,
            &recomputed.ratio,
        ));
        fixed.push(recomputed);
    }
    fixed
}

use crate::evidence::replay::{ReplayCheck, TimedCompare};
pub use crate::evidence::result::{holdout_figures, outputs_consistent};

fn unusable(path: String, e: stats::StatsError) -> Difference {
    problem(path, "figures", format!("none: {e}"))
}

/// The pair count must be where the sequential rule stops: the first look that decides, or the
/// cap the A/A runs choose. A run cut short, or one that went on past a decision, does not
/// follow from its own rule.
fn check_pair_count(path: &str, fresh: &ScenarioResult, out: &mut Vec<Difference>) {
    let Some(f) = fresh.training.as_ref() else {
        return;
    };
    let Some(plan) = f.plan else {
        return;
    };
    let stop = f.sequential.as_ref().and_then(|q| q.stop);
    let expected = match stop {
        Some(s) if s.pairs == fresh.pairs.len() => None,
        Some(s) => Some(format!(
            "{} pairs: the sequential rule stops at look {} ({})",
            s.pairs,
            s.look + 1,
            s.decision.as_str()
        )),
        None => Some(format!(
            "pairs up to a look that decides, or the cap of {} pairs (the pairs end before any \
             look decided)",
            plan.planned
        )),
    };
    if let Some(expected) = expected {
        out.push(problem(
            format!("{path}.pairs"),
            format!("{} pairs", fresh.pairs.len()),
            expected,
        ));
    }
    if plan.aa_pairs != fresh.aa_pairs.len() {
        out.push(problem(
            format!("{path}.aa_pairs"),
            format!("{} A/A pairs", fresh.aa_pairs.len()),
            format!("{} A/A pairs, as configured", plan.aa_pairs),
        ));
    }
    check_warmup_count(path, fresh, plan.warmups, out);
}

/// Warmups are not in the statistics, but a run with fewer than configured would have been
/// measured on a colder machine than it says.
fn check_warmup_count(path: &str, s: &ScenarioResult, per_arm: usize, out: &mut Vec<Difference>) {
    if s.warmups.len() != 2 * per_arm {
        out.push(problem(
            format!("{path}.warmups"),
            format!("{} warmup runs", s.warmups.len()),
            format!(
                "{} warmup runs ({per_arm} per arm, as configured)",
                2 * per_arm
            ),
        ));
    }
}

/// A scenario recorded without figures: the pipeline stops a scenario as soon as the two runs of a
/// warmup round or pair disagree for the same seed (docs/design.md §2.2.9, §4.6), and records
/// the runs made so far. Any other scenario without figures was cut short. Returns whether
/// `fresh` is such a scenario (its figures and consistency then set).
fn stopped_at_warmups(path: &str, fresh: &mut ScenarioResult, out: &mut Vec<Difference>) -> bool {
    if fresh.training.is_some() || fresh.holdout.is_some() {
        return false;
    }
    // Under an exact rule the disagreement follows from the recorded digests; under the
    // scenario's own rule it is a record of evo's comparison, like the differential.
    let exact = fresh.replay.as_ref().and_then(|r| r.compared) == Some(TimedCompare::Exact);
    let agreed = exact && outputs_consistent(&fresh.warmups, &fresh.aa_pairs, &fresh.pairs);
    if fresh.timed_output_consistent != Some(false) || agreed {
        out.push(problem(
            format!("{path}.pairs"),
            "no figures",
            "figures (only runs that disagreed for the same seed stop a scenario before them)",
        ));
    }
    true
}

/// Re-derives whether a replayed result could show in the scenario's runs; the comparison rule
/// is taken as recorded, whether the command takes a seed follows from its runs' seeds.
fn check_replay(path: &str, s: &ScenarioResult, fresh: &mut ScenarioResult) -> Vec<Difference> {
    // A holdout's seeds and byte counts are sealed in a receipt: its check is taken as recorded
    // (it caps nothing: only training scenarios decide the tier).
    let Some(recorded) = s.replay.as_ref().filter(|_| s.role == Role::Training) else {
        return Vec::new();
    };
    let again = ReplayCheck::of_runs(
        None,
        recorded.compared,
        &fresh.warmups,
        &fresh.aa_pairs,
        &fresh.pairs,
    )
    .with_repeated(recorded.repeated.clone());
    fresh.replay = Some(again);
    diff_serialized(&format!("{path}.replay"), &s.replay, &fresh.replay)
}

/// Recomputes one scenario; returns it with recomputed figures, appending differences.
fn recompute_scenario(
    i: usize,
    s: &ScenarioResult,
    r: &ConfirmResult,
    out: &mut Vec<Difference>,
) -> ScenarioResult {
    let path = format!("scenarios[{i}]");
    // The deterministic lane's change follows from its two counts (which decide under the
    // instructions metric).
    if let Some(lane) = &s.instructions {
        if let (Some(b), Some(c)) = (lane.baseline, lane.candidate) {
            let fresh = crate::evidence::result::InstructionFigures::of(b, c);
            out.extend(diff_serialized(
                &format!("{path}.instructions.change_pct"),
                &lane.change_pct,
                &fresh.change_pct,
            ));
        }
    }
    let aa = check_pairs(
        &format!("{path}.aa_pairs"),
        &s.aa_pairs,
        |_| Order::BaselineFirst,
        out,
    );
    let order = s.comparison_order();
    let pairs = check_pairs(
        &format!("{path}.pairs"),
        &s.pairs,
        |i| order.order_of(i),
        out,
    );
    for (j, w) in s.warmups.iter().enumerate() {
        if !w.run.succeeded() {
            out.push(problem(
                format!("{path}.warmups[{j}].run.status"),
                json(&w.run.status),
                "a successful run",
            ));
        }
    }
    let mut fresh = s.clone();
    fresh.aa_pairs = aa;
    fresh.pairs = pairs;
    out.extend(check_replay(&path, s, &mut fresh));
    if stopped_at_warmups(&path, &mut fresh, out) {
        return fresh;
    }
    match s.role {
        Role::Training => {
            let (settings, split) = plans::training_settings(i, s, r);
            fresh.training = match figures::figures(&settings, &fresh.aa_pairs, &fresh.pairs) {
                Ok(mut f) => {
                    if let Some(plan) = f.plan.as_mut() {
                        plan.budget_split = split;
                    }
                    Some(f)
                }
                Err(e) => {
                    out.push(unusable(format!("{path}.training"), e));
                    None
                }
            };
            check_pair_count(&path, &fresh, out);
        }
        Role::Holdout => {
            // The plan is re-derived once every training scenario is (`check_holdout_plans`);
            // the looks and the stop follow from the recorded plan and the pairs.
            let plan = s.holdout.as_ref().and_then(|h| h.plan);
            fresh.holdout = match holdout_figures(&fresh.pairs, plan.as_ref()) {
                Ok(h) => Some(h),
                Err(e) => {
                    out.push(unusable(format!("{path}.holdout"), e));
                    None
                }
            };
        }
    }
    let exact = s.replay.as_ref().and_then(|r| r.compared) == Some(TimedCompare::Exact);
    if s.timed_output_consistent.is_some() && exact {
        fresh.timed_output_consistent = Some(outputs_consistent(
            &s.warmups,
            &fresh.aa_pairs,
            &fresh.pairs,
        ));
    }
    out.extend(diff_serialized(
        &format!("{path}.training"),
        &s.training,
        &fresh.training,
    ));
    out.extend(diff_serialized(
        &format!("{path}.holdout"),
        &s.holdout,
        &fresh.holdout,
    ));
    out.extend(diff_serialized(
        &format!("{path}.timed_output_consistent"),
        &s.timed_output_consistent,
        &fresh.timed_output_consistent,
    ));
    fresh
}

/// A candidate run flagged as leaving processes (a test, check, timed run, warmup, or a run of the
/// configuration-only build) must have failed the `leftover processes` gate, unless the pipeline
/// stopped at an earlier check gate before deciding it (then the verdict is rejected anyway).
fn check_leftover_gate(r: &ConfirmResult, out: &mut Vec<Difference>) {
    const GATE: GateName = GateName::LeftoverProcesses;
    let places = r.evidence.candidate_leftovers();
    if places.is_empty() {
        return;
    }
    // The check gates the pipeline decides before it looks at leftovers (pipeline order).
    let before_leftovers = GateName::ALL
        .iter()
        .take_while(|name| **name != GateName::TimedOutput);
    let stopped_earlier = before_leftovers.into_iter().any(|name| {
        (r.evidence.gates.iter()).any(|g| g.name == *name && g.status == GateStatus::Failed)
    });
    let status = r
        .evidence
        .gates
        .iter()
        .find(|g| g.name == GATE)
        .map(|g| g.status);
    let follows = match status {
        Some(GateStatus::Failed) => true,
        Some(_) => false,
        None => stopped_earlier,
    };
    if !follows {
        out.push(problem(
            format!("gates[{GATE}].status"),
            status.map_or("absent".to_string(), |s| json(&s)),
            format!(
                "\"failed\" (candidate runs left processes behind: {})",
                places.join(", ")
            ),
        ));
    }
}

/// The build-configuration lane's median and interval, from its own pairs.
fn recompute_config_lane(r: &ConfirmResult, out: &mut Vec<Difference>) {
    let lane = &r.evidence.config_lane;
    if !lane.ran {
        return;
    }
    // The build-configuration lane alternates, candidate first (docs/design.md §3.1).
    let order = PairOrder::Alternating(Order::CandidateFirst);
    let pairs = check_pairs("config_lane.pairs", &lane.pairs, |i| order.order_of(i), out);
    match holdout_figures(&pairs, None) {
        Ok(f) => {
            out.extend(diff_serialized(
                "config_lane.median",
                &lane.median,
                &Some(f.median),
            ));
            out.extend(diff_serialized("config_lane.ci95", &lane.ci95, &f.ci95));
        }
        Err(e) => out.push(problem(
            "config_lane.pairs".into(),
            "unusable ratios",
            format!("usable ratios ({e})"),
        )),
    }
}

/// A result decided under other verdict rules than this evo applies: its figures cannot be
/// re-derived here, and comparing them would report rule changes as tampering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "recorded under rules {recorded}; this evo applies rules {applied}: the figures cannot be \
     re-derived by this version"
)]
pub struct RulesMismatch {
    pub recorded: u32,
    pub applied: u32,
}

/// `Err` unless `r` was decided under the rules this evo applies (`verdict::RULES`).
pub fn same_rules(r: &ConfirmResult) -> Result<(), RulesMismatch> {
    if r.evidence.rules == verdict::RULES {
        Ok(())
    } else {
        Err(RulesMismatch {
            recorded: r.evidence.rules,
            applied: verdict::RULES,
        })
    }
}

/// Every field of `r` that its raw runs contradict; empty when the verdict follows from them.
/// A result of other rules ([`same_rules`]) gives the one difference `rules` and nothing else.
pub fn recompute(r: &ConfirmResult) -> Vec<Difference> {
    if let Err(e) = same_rules(r) {
        return vec![problem(
            "rules".into(),
            e.recorded.to_string(),
            format!("{} ({e})", e.applied),
        )];
    }
    let mut out = Vec::new();
    let scenarios: Vec<ScenarioResult> = r
        .evidence
        .scenarios
        .iter()
        .enumerate()
        .map(|(i, s)| recompute_scenario(i, s, r, &mut out))
        .collect();
    plans::check_holdout_plans(&scenarios, &mut out);
    plans::check_budget_splits(&scenarios, &mut out);
    let inconsistent_output = scenarios
        .iter()
        .any(|s| s.timed_output_consistent == Some(false));
    let timed_gate_failed = r
        .evidence
        .gates
        .iter()
        .any(|g| g.name == GateName::TimedOutput && g.status == GateStatus::Failed);
    if inconsistent_output && !timed_gate_failed {
        out.push(problem(
            "gates[timed output].status".into(),
            "not failed",
            "\"failed\" (the timed runs printed different bytes)",
        ));
    }
    check_leftover_gate(r, &mut out);
    recompute_config_lane(r, &mut out);
    draws::check_draws(r, &mut out);
    let d = verdict::decide_result(&r.evidence, &scenarios);
    out.extend(diff_serialized("tier", &r.tier, &d.tier));
    out.extend(diff_serialized("verdict", &r.verdict, &d.verdict));
    out.extend(diff_serialized("reasons", &r.reasons, &d.reasons));
    out
}
