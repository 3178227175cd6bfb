//! The campaign's plan before its first build (docs/design.md §2.3.1): which candidates, which
//! stages, and the minutes the spec allows each. Built from the validated spec alone, so every
//! number in it is one the campaign file (or workload) sets or a product of them; nothing is
//! guessed from this machine.

use crate::plan::CampaignPlan;
use crate::report::outline::{AgentOutline, Outline, StageOutline};
use crate::spec::workload::Role;

/// The plan of `plan`'s campaign run.
pub fn outline(plan: &CampaignPlan) -> Outline {
    let spec = &plan.spec;
    let w = &plan.workload;
    let training: Vec<&str> = (w.scenarios.iter())
        .filter(|s| s.role == Role::Training)
        .map(|s| s.name.as_str())
        .collect();
    let holdouts = (plan.holdouts.as_ref()).map_or(0, |h| h.holdouts.scenarios.len());
    let fleet = if spec.fleet.is_some() {
        " (as Slurm jobs)"
    } else {
        ""
    };
    let agent = spec.agent.as_ref().map(|a| {
        let planned = a.count.get() * spec.search.rounds.get();
        AgentOutline {
            runs_per_round: a.count.get(),
            rounds: spec.search.rounds.get(),
            max_runs: (spec.search.max_agent_runs).map_or(planned, |m| m.get().min(planned)),
            timeout_s: a.timeout_s.get(),
        }
    });
    let steps = format!(
        "each step stops at its timeout_s: build {} s, tests {} s",
        w.build.timeout_s.get(),
        w.test.timeout_s.get()
    );
    let mut stages = Vec::new();
    if let Some(a) = &agent {
        let mut stage = agent_stage(a, spec.search.max_minutes.map(|m| m.get()));
        if let Some(cost) = spec.search.max_cost {
            stage.limit.push_str(&format!(
                "; no run starts once the runs' reported cost reaches search.max_cost {}",
                cost.get()
            ));
        }
        stages.push(stage);
    }
    stages.push(StageOutline {
        name: "baseline".into(),
        detail: format!(
            "build, tests and checks of {} training scenario(s)",
            training.len()
        ),
        minutes: None,
        budget_minutes: None,
        limit: steps.clone(),
    });
    stages.push(StageOutline {
        name: "candidate checks".into(),
        detail: format!("patch safety, apply, build, tests, differential{fleet}"),
        minutes: None,
        budget_minutes: None,
        limit: steps,
    });
    let first = w.scenarios.iter().find(|s| s.role == Role::Training);
    let (pairs, most) = (
        spec.search.pairs.get(),
        spec.search.max_pairs.map(|m| m.get()),
    );
    let more = match most {
        Some(most) if most > pairs && fleet.is_empty() => format!(
            "; up to {most} pairs where the ranking is in doubt, and, after the confirmations, for \
             the candidates left until screening's looks rule them out (slower or no real gain; \
             screening never accepts)"
        ),
        _ => String::new(),
    };
    stages.push(StageOutline {
        name: "screening".into(),
        detail: format!(
            "a warmup round and {pairs} round(s) on `{}`, each one baseline run shared by the \
             candidates and one run of each{fleet}{more}",
            first.map_or("", |s| s.name.as_str())
        ),
        minutes: None,
        budget_minutes: None,
        limit: format!(
            "each run stops at the scenario's timeout_s, {} s",
            first.map_or(0.0, |s| s.timeout_s.get())
        ),
    });
    stages.push(confirm_stage(plan, training.len(), holdouts, fleet));
    let mut unbounded = vec![
        "tree checkouts, builds, tests and checks have no budget in minutes (each step stops at \
         its timeout_s)"
            .to_string(),
    ];
    if spec.confirm.max_minutes.is_none() {
        unbounded.push(format!(
            "a confirmation's timed pairs have no budget in minutes (confirm.max_minutes absent; \
             confirm.max_pairs {} caps them)",
            spec.confirm.max_pairs()
        ));
    }
    Outline {
        patches: plan.patches.iter().map(|p| p.name.clone()).collect(),
        agent,
        stages,
        unbounded,
        max_minutes: spec.max_minutes.map(|m| m.get()),
    }
}

/// The agent runs: each stops at `agent.timeout_s`, and none starts once the search has taken
/// `search.max_minutes`, so their time is at most the smaller of the two products.
fn agent_stage(a: &AgentOutline, max_minutes: Option<usize>) -> StageOutline {
    let all_runs = a.max_runs as f64 * a.timeout_s / 60.0;
    let after_budget = max_minutes.map(|m| m as f64 + a.timeout_s / 60.0);
    let (minutes, limit) = match after_budget {
        Some(b) if b < all_runs => (
            b,
            format!(
                "no run starts after search.max_minutes {}, the last stops at agent.timeout_s {} s",
                max_minutes.unwrap_or_default(),
                a.timeout_s
            ),
        ),
        _ => (
            all_runs,
            format!("{} run(s) × agent.timeout_s {} s", a.max_runs, a.timeout_s),
        ),
    };
    StageOutline {
        name: "agent runs".into(),
        detail: format!(
            "{} per round in fresh trees, each round screened before the next",
            a.runs_per_round
        ),
        minutes: Some(minutes),
        budget_minutes: max_minutes.map(|m| m as f64),
        limit,
    }
}

/// The confirmation of the top candidates: its pairs per scenario and its time budget.
fn confirm_stage(
    plan: &CampaignPlan,
    training: usize,
    holdouts: usize,
    fleet: &str,
) -> StageOutline {
    let c = &plan.spec.confirm;
    let (pairs, most) = (c.pairs.get(), c.max_pairs());
    let range = if most > pairs {
        format!("{pairs}–{most}")
    } else {
        pairs.to_string()
    };
    let holdout_text = match holdouts {
        0 => "no holdouts".to_string(),
        n => format!("{n} sealed holdout(s) of {range} pairs"),
    };
    let detail = format!(
        "top {}{fleet}: fresh builds and checks, then per training scenario ({training}) {} A/A + \
         {range} pairs, stopping when decided; {holdout_text}",
        c.top.get(),
        c.aa_pairs.get(),
    );
    let (budget_minutes, limit) = match c.max_minutes {
        Some(m) => (
            Some(m.get() * c.top.get() as f64),
            format!(
                "confirm.max_minutes {} each, for timed pairs only; never fewer than {pairs} pairs \
                 a scenario",
                m.get()
            ),
        ),
        None => (
            None,
            format!("confirm.max_pairs {most} caps the pairs; each run stops at its timeout_s"),
        ),
    };
    StageOutline {
        name: "confirmation".into(),
        detail,
        minutes: None,
        budget_minutes,
        limit,
    }
}
