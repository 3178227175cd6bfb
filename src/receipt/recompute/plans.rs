//! The planning inputs of a result re-derived: a training scenario's settings and its share of
//! the time budget, each holdout's plan, and the budget's split (docs/design.md §3.6, §3.10).
//! What is configured (the counts, the budget) is taken as recorded but must be the same in every
//! scenario; what follows from it and the recorded runs (the shares, the reserve, the caps) is
//! computed again, so a receipt whose training cap or holdout plan does not follow is refused.

use crate::evidence::budget::{self, BudgetSplit};
use crate::evidence::figures::BenchSettings;
use crate::evidence::result::{ConfirmResult, HoldoutCounts, Role, ScenarioResult, holdout_plan};
use crate::measure::record::Order;
use crate::stats;

use super::{Difference, check_warmup_count, diff_serialized, json, problem};

/// The settings training scenario `i` was measured with: the configured counts its plan records
/// (inputs, like the seed), or, for a result from before pair planning, the counts it holds; and
/// its share of the budget, re-derived from the recorded split's configuration and the scenarios
/// before it (a result from before the split keeps the share it records).
pub(super) fn training_settings(
    i: usize,
    s: &ScenarioResult,
    r: &ConfirmResult,
) -> (BenchSettings, Option<BudgetSplit>) {
    let plan = s.training.as_ref().and_then(|f| f.plan);
    let pairs = plan.map_or(s.pairs.len(), |p| p.pairs);
    let share = (plan.and_then(|p| p.budget_split)).map(|split| {
        let done = &r.evidence.scenarios[..i.min(r.evidence.scenarios.len())];
        budget::share(&split.config(pairs), done, Role::Training, &s.warmups)
    });
    let settings = BenchSettings {
        pairs,
        max_pairs: plan.map_or(pairs, |p| p.max_pairs),
        budget_s: match share {
            Some(share) => Some(share.budget_s),
            None => plan.and_then(|p| p.budget_s),
        },
        aa_pairs: plan.map_or(s.aa_pairs.len(), |p| p.aa_pairs),
        warmup: plan.map_or(s.warmups.len() / 2, |p| p.warmups),
        min_effect: r.evidence.min_effect,
        target_effect: plan.map_or(0.0, |p| p.target_effect),
        first: Order::CandidateFirst,
        order_seed: s.order_seed,
        mde_seed: r.evidence.seed,
        timeout_s: 0.0,
    };
    (settings, share.map(|s| s.split))
}

/// The recorded budget splits, with where each is.
fn splits(scenarios: &[ScenarioResult]) -> Vec<(String, BudgetSplit)> {
    let mut out = Vec::new();
    for (i, s) in scenarios.iter().enumerate() {
        let training = s.training.as_ref().and_then(|f| f.plan);
        if let Some(split) = training.and_then(|p| p.budget_split) {
            out.push((format!("scenarios[{i}].training.plan.budget_split"), split));
        }
        let holdout = s.holdout.as_ref().and_then(|h| h.plan);
        if let Some(split) = holdout.and_then(|p| p.budget_split) {
            out.push((format!("scenarios[{i}].holdout.plan.budget_split"), split));
        }
    }
    out
}

/// One budget, split among one set of scenarios: every split records the same configured budget
/// and counts, the counts cover the scenarios measured, and either every measured scenario has a
/// split or none does (a share cannot be made without one).
pub(super) fn check_budget_splits(scenarios: &[ScenarioResult], out: &mut Vec<Difference>) {
    let found = splits(scenarios);
    let Some((_, first)) = found.first() else {
        return;
    };
    let configured = |s: &BudgetSplit| {
        format!(
            "total {:.3} s, {} training scenario(s), {} holdout(s)",
            s.total_s, s.training, s.holdouts
        )
    };
    for (path, split) in &found[1..] {
        if configured(split) != configured(first) {
            out.push(problem(
                path.clone(),
                configured(split),
                format!("{}, as the first split records", configured(first)),
            ));
        }
    }
    let measured = |role: Role| scenarios.iter().filter(|s| s.role == role).count();
    let counts = [
        (Role::Training, first.training),
        (Role::Holdout, first.holdouts),
    ];
    for (role, configured_count) in counts {
        if measured(role) > configured_count {
            out.push(problem(
                found[0].0.clone(),
                format!("{configured_count} {} scenario(s)", role.as_str()),
                format!("at least the {} measured", measured(role)),
            ));
        }
    }
    let planned = scenarios
        .iter()
        .filter(|s| s.training.as_ref().and_then(|f| f.plan).is_some() || s.holdout.is_some())
        .count();
    if found.len() != planned {
        out.push(problem(
            "scenarios".into(),
            format!("{} budget split(s)", found.len()),
            format!("one for each of the {planned} planned scenario(s)"),
        ));
    }
}

/// Each measured holdout's plan, re-derived from the training scenarios' recomputed A/A pairs and
/// the configured counts (which must be the training plan's), and its pair and warmup counts
/// against it: a holdout cut short or extended after a look at its pairs does not follow.
pub(super) fn check_holdout_plans(scenarios: &[ScenarioResult], out: &mut Vec<Difference>) {
    let training_plan = scenarios
        .iter()
        .find_map(|s| s.training.as_ref().and_then(|f| f.plan));
    for (i, s) in scenarios.iter().enumerate() {
        let Some(h) = &s.holdout else { continue };
        let path = format!("scenarios[{i}]");
        let Some(recorded) = h.plan else {
            out.push(problem(
                format!("{path}.holdout.plan"),
                "none",
                "a pair count planned from the training scenarios' A/A runs",
            ));
            continue;
        };
        if let Some(t) = training_plan {
            // A split budget gives each scenario its own share, re-derived below; without one
            // (a result from before the split) every scenario had the same.
            let legacy = recorded.budget_split.is_none() && t.budget_split.is_none();
            let configured = |p: usize, m: usize, w: usize, b: Option<f64>| {
                let budget = match b {
                    _ if !legacy => "split".to_string(),
                    Some(b) => format!("{b:.3} s"),
                    None => "none".to_string(),
                };
                format!("pairs {p}, max_pairs {m}, warmups {w}, budget {budget}")
            };
            let (mine, theirs) = (
                configured(
                    recorded.pairs,
                    recorded.max_pairs,
                    recorded.warmups,
                    recorded.budget_s,
                ),
                configured(t.pairs, t.max_pairs, t.warmups, t.budget_s),
            );
            if mine != theirs {
                out.push(problem(
                    format!("{path}.holdout.plan"),
                    format!("configured {mine}"),
                    format!("configured {theirs}, as the training plan records"),
                ));
            }
        }
        let share = (recorded.budget_split).map(|split| {
            let config = split.config(recorded.pairs);
            budget::share(&config, &scenarios[..i], Role::Holdout, &s.warmups)
        });
        let counts = HoldoutCounts {
            pairs: recorded.pairs,
            max_pairs: recorded.max_pairs,
            warmups: recorded.warmups,
            budget_s: match share {
                Some(share) => Some(share.budget_s),
                None => recorded.budget_s,
            },
            budget_split: share.map(|s| s.split),
        };
        let Some(fresh) = holdout_plan(scenarios, counts, &s.warmups) else {
            out.push(problem(
                format!("{path}.holdout.plan"),
                json(&recorded),
                "none: no training scenario has A/A runs to plan from",
            ));
            continue;
        };
        out.extend(diff_serialized(
            &format!("{path}.holdout.plan"),
            &recorded,
            &fresh,
        ));
        // The holdout stops at the first look that decides, at the plan's last look at the
        // latest: a holdout cut short, or run on past its stop, does not follow.
        let looks = stats::holdout_looks(fresh.pairs, fresh.planned);
        let ratios: Vec<f64> = s.pairs.iter().map(|p| p.ratio).collect();
        let stop = stats::first_holdout_stop(&ratios, &looks);
        if stop.map(|s| s.pairs) != Some(s.pairs.len()) {
            let expected = match stop {
                Some(stop) => format!(
                    "{} pairs: its look {} of {} decided ({}); planned at most {} from the \
                     training A/A noise ({} needed, configured {} to {})",
                    stop.pairs,
                    stop.look + 1,
                    looks.len(),
                    stop.verdict.as_str(),
                    fresh.planned,
                    fresh.needed,
                    fresh.pairs,
                    fresh.max_pairs.max(fresh.pairs)
                ),
                None => format!(
                    "pairs up to a look that decides (looks at {}), at most {}",
                    looks
                        .iter()
                        .map(|l| l.pairs.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    fresh.planned
                ),
            };
            out.push(problem(
                format!("{path}.pairs"),
                format!("{} pairs", s.pairs.len()),
                expected,
            ));
        }
        check_warmup_count(&path, s, recorded.warmups, out);
    }
}
