//! The drawn inputs of a result (docs/design.md §2.2.6), re-derived from their seeds: each
//! record's values from its ranges, its filled commands from its templates, and the commands the
//! steps and scenarios ran from those. A drawn check step without a record is a difference too,
//! so a result cannot hide a draw by leaving it out. A holdout's draw is sealed in the receipt
//! and is re-derived only from `result.json` (`evo receipt verify --unseal`).

use super::{Difference, problem};
use crate::check::draw;
use crate::check::fill_seed;
use crate::evidence::result::{ConfirmResult, DrawnInputs, HoldoutSeed, Role, StepKind};
use crate::receipt::seal::is_sealed;

/// The seed a record was drawn from; `None` when the receipt seals it.
fn seed_of(r: &ConfirmResult, d: &DrawnInputs) -> Option<u64> {
    match (d.role, &r.evidence.holdout_seed) {
        (Role::Holdout, Some(HoldoutSeed::Drawn(seed))) => Some(*seed),
        (Role::Holdout, _) => None,
        (Role::Training, _) => Some(r.evidence.seed),
    }
}

/// The commands the result says a scenario's check ran with: every check step of that name.
fn check_commands<'a>(r: &'a ConfirmResult, scenario: &str) -> Vec<&'a str> {
    (r.evidence.steps.iter())
        .filter(|s| matches!(&s.step.kind, StepKind::Check(n) if n == scenario))
        .map(|s| s.command.as_str())
        .collect()
}

/// Appends a difference for each drawn input that does not follow from its seed.
pub(super) fn check_draws(r: &ConfirmResult, out: &mut Vec<Difference>) {
    for (i, d) in r.evidence.draws.iter().enumerate() {
        let at = format!("draws[{i}]");
        let sealed = d.commands.iter().any(|c| is_sealed(&c.template));
        let Some(seed) = seed_of(r, d).filter(|_| !sealed) else {
            continue;
        };
        let values = draw::values(&d.ranges, seed, d.index);
        if values != d.values {
            out.push(problem(
                format!("{at}.values"),
                format!("{:?}", d.values),
                format!("{values:?} (drawn from the seed)"),
            ));
        }
        for (j, c) in d.commands.iter().enumerate() {
            let filled = draw::fill(&c.template, &values);
            if filled != c.filled {
                out.push(problem(
                    format!("{at}.commands[{j}].filled"),
                    c.filled.clone(),
                    filled,
                ));
            }
        }
        let Some(check) = d.commands.last() else {
            continue;
        };
        let expected = fill_seed(&draw::fill(&check.template, &values), seed);
        for ran in check_commands(r, &d.scenario) {
            if ran != expected {
                out.push(problem(
                    format!("steps[check-{}].command", d.scenario),
                    ran.to_string(),
                    format!("{expected} (the drawn check)"),
                ));
            }
        }
        // A holdout's timed command: its first command, `{seed}` left for each run.
        if d.role == Role::Holdout && d.commands.len() == 2 {
            let run = draw::fill(&d.commands[0].template, &values);
            let scenarios = r.evidence.scenarios.iter().filter(|s| s.name == d.scenario);
            for s in scenarios {
                for (side, ran) in [
                    ("baseline", &s.baseline_command),
                    ("candidate", &s.candidate_command),
                ] {
                    if *ran != run {
                        out.push(problem(
                            format!("scenarios[{}].{side}_command", s.name),
                            ran.clone(),
                            format!("{run} (the drawn holdout)"),
                        ));
                    }
                }
            }
        }
    }
    check_unrecorded(r, out);
}

/// A differential step of a training scenario's drawn check (`<scenario>.drawn-<n>`) that no
/// record accounts for.
fn check_unrecorded(r: &ConfirmResult, out: &mut Vec<Difference>) {
    let training = (r.evidence.scenarios.iter()).filter(|s| s.role == Role::Training);
    let names: Vec<&str> = training.map(|s| s.name.as_str()).collect();
    let drawn = |step: &str| {
        step.rsplit_once(".drawn-").is_some_and(|(scenario, n)| {
            names.contains(&scenario) && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        })
    };
    let mut seen = Vec::new();
    for s in &r.evidence.steps {
        let StepKind::Check(name) = &s.step.kind else {
            continue;
        };
        let recorded = r.evidence.draws.iter().any(|d| &d.scenario == name);
        if drawn(name) && !recorded && !seen.contains(name) {
            seen.push(name.clone());
            out.push(problem(
                format!("draws[{name}]"),
                "absent",
                format!("the record of the inputs drawn for check-{name}"),
            ));
        }
    }
}
