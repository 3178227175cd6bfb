//! A campaign's plan as it is shown before its first build (docs/design.md §2.3.1): the
//! candidates, the stages each goes through and the minutes the spec allows each, and plainly
//! what has no bound. The campaign builds it from the spec alone (`campaign::outline`); this
//! module holds its shape and its few terminal lines, so the terminal and the `--json` stream say
//! the same thing.

use schemars::JsonSchema;
use serde::Serialize;

/// The whole plan of a campaign run, from the spec alone (no estimate is in it).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Outline {
    /// The candidates the campaign lists as patch files, by name.
    pub patches: Vec<String>,
    /// The agent runs, when the campaign has an agent.
    pub agent: Option<AgentOutline>,
    /// The stages, in the order they run.
    pub stages: Vec<StageOutline>,
    /// What the spec puts no bound in minutes on; with any entry here the campaign as a whole has
    /// no upper bound on its wall time.
    pub unbounded: Vec<String>,
    /// The campaign's `max_minutes`: no confirmation starts that would not end within it, and
    /// a started one's timed pairs are cut to the time left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<f64>,
}

/// The agent runs a campaign may make.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AgentOutline {
    /// `agent.count`.
    pub runs_per_round: usize,
    /// `search.rounds`.
    pub rounds: usize,
    /// The most agent runs: `runs_per_round × rounds`, within `search.max_agent_runs`.
    pub max_runs: usize,
    /// `agent.timeout_s`: each run is stopped there.
    pub timeout_s: f64,
}

/// One stage and the time the spec allows it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StageOutline {
    pub name: String,
    /// What the stage does, for whom.
    pub detail: String,
    /// The most minutes the stage may take, where the spec bounds it; `null`: no bound in
    /// minutes (`limit` says what stops it).
    pub minutes: Option<f64>,
    /// A budget in minutes the stage plans its work in (`confirm.max_minutes`,
    /// `search.max_minutes`), which is not a hard bound: `limit` says what may exceed it.
    pub budget_minutes: Option<f64>,
    /// Where `minutes` comes from, or what stops the stage without one.
    pub limit: String,
}

/// The plan in a few lines for the terminal: the candidates, one line per stage, what has no
/// bound.
pub fn lines(o: &Outline) -> Vec<String> {
    let mut candidates = Vec::new();
    if !o.patches.is_empty() {
        candidates.push(format!(
            "{} listed patch(es) ({})",
            o.patches.len(),
            o.patches.join(", ")
        ));
    }
    if let Some(a) = &o.agent {
        candidates.push(format!(
            "up to {} agent run(s) ({} per round × {} round(s))",
            a.max_runs, a.runs_per_round, a.rounds
        ));
    }
    let mut out = vec![format!("plan: candidates: {}", candidates.join(" + "))];
    for (i, s) in o.stages.iter().enumerate() {
        let time = match (s.minutes, s.budget_minutes) {
            (Some(m), _) => format!("at most {} min ({})", minutes(m), s.limit),
            (None, Some(b)) => format!("a budget of {} min, not a bound ({})", minutes(b), s.limit),
            (None, None) => format!("no bound in minutes ({})", s.limit),
        };
        out.push(format!("plan: {}. {}: {}; {time}", i + 1, s.name, s.detail));
    }
    if let Some(m) = o.max_minutes {
        out.push(format!(
            "plan: the run aims to end within {} min (max_minutes): a confirmation that would \
             not end by then is not started (its candidate is told what deciding it would \
             take), and a started one's timed pairs are cut to the time left; the search is not \
             cut by it",
            minutes(m)
        ));
    }
    if o.unbounded.is_empty() {
        out.push("plan: every stage is bounded in minutes".to_string());
    } else {
        out.push(format!(
            "plan: no upper bound on the total: {}",
            o.unbounded.join("; ")
        ));
    }
    out
}

/// Minutes without a useless fraction.
fn minutes(m: f64) -> String {
    if (m - m.round()).abs() < 0.05 {
        format!("{m:.0}")
    } else {
        format!("{m:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_without_a_bound_says_so_and_the_total_then_has_none() {
        let o = Outline {
            patches: vec!["fast".into()],
            agent: None,
            stages: vec![
                StageOutline {
                    name: "baseline".into(),
                    detail: "build".into(),
                    minutes: None,
                    budget_minutes: None,
                    limit: "each step stops at its timeout_s".into(),
                },
                StageOutline {
                    name: "confirmation".into(),
                    detail: "top 1".into(),
                    minutes: None,
                    budget_minutes: Some(20.0),
                    limit: "confirm.max_minutes".into(),
                },
            ],
            unbounded: vec!["builds".into()],
            max_minutes: None,
        };
        let text = lines(&o).join("\n");
        assert!(text.contains("1 listed patch(es) (fast)"), "{text}");
        assert!(
            text.contains("1. baseline: build; no bound in minutes"),
            "{text}"
        );
        assert!(
            text.contains("a budget of 20 min, not a bound (confirm.max_minutes)"),
            "{text}"
        );
        assert!(
            text.contains("no upper bound on the total: builds"),
            "{text}"
        );
    }
}
