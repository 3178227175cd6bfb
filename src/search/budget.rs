//! The search's budgets (`search.max_candidates`, `max_agent_runs`, `max_minutes`, `max_cost`):
//! checked before each new agent run starts, and what is left of them shown in the progress line
//! and the `--json` stream. A run already going is never cut short by a budget.
//!
//! `max_cost` counts what the agent runs say they cost (`EVO_COST.json`, in the user's units):
//! evo cannot measure an agent's spend, so the budget is only as true as the reports.

use schemars::JsonSchema;
use serde::Serialize;

use crate::spec::campaign::SearchSettings;

/// The limits, as the campaign sets them (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    pub max_candidates: Option<usize>,
    pub max_agent_runs: Option<usize>,
    pub max_minutes: Option<usize>,
    pub max_cost: Option<f64>,
}

/// What the search has used so far.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spent {
    pub candidates: usize,
    pub agent_runs: usize,
    /// Wall seconds over every session of the run.
    pub seconds: f64,
    /// The sum of the costs the agent runs reported.
    pub cost: f64,
}

/// What is left before the next agent run (`None`: no limit), with the round it belongs to.
/// It is the `budget` line's body in the `--json` stream as it is (`report::events::Body`),
/// under the names that line gives it; a doc comment on a field describes it in that line's
/// schema.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct BudgetLeft {
    pub round: usize,
    pub rounds: usize,
    #[serde(rename = "candidates_left")]
    pub candidates: Option<usize>,
    #[serde(rename = "agent_runs_left")]
    pub agent_runs: Option<usize>,
    #[serde(rename = "minutes_left")]
    pub minutes: Option<f64>,
    /// What is left of `search.max_cost`, in the units the agent runs report.
    #[serde(rename = "cost_left")]
    pub cost: Option<f64>,
}

impl Budget {
    pub fn of(search: &SearchSettings) -> Budget {
        Budget {
            max_candidates: search.max_candidates.map(|c| c.get()),
            max_agent_runs: search.max_agent_runs.map(|c| c.get()),
            max_minutes: search.max_minutes.map(|c| c.get()),
            max_cost: search.max_cost.map(|c| c.get()),
        }
    }

    pub fn is_limited(&self) -> bool {
        *self != Budget::default()
    }

    pub fn left(&self, spent: Spent, round: usize, rounds: usize) -> BudgetLeft {
        BudgetLeft {
            round,
            rounds,
            candidates: self
                .max_candidates
                .map(|m| m.saturating_sub(spent.candidates)),
            agent_runs: self
                .max_agent_runs
                .map(|m| m.saturating_sub(spent.agent_runs)),
            minutes: self
                .max_minutes
                .map(|m| (m as f64 - spent.seconds / 60.0).max(0.0)),
            cost: self.max_cost.map(|m| (m - spent.cost).max(0.0)),
        }
    }

    /// Why no new agent run may start, if one may not.
    pub fn exhausted(&self, spent: Spent) -> Option<String> {
        if let Some(m) = self.max_candidates.filter(|m| spent.candidates >= *m) {
            return Some(format!("search.max_candidates: {m} candidates collected"));
        }
        if let Some(m) = self.max_agent_runs.filter(|m| spent.agent_runs >= *m) {
            return Some(format!("search.max_agent_runs: {m} agent runs made"));
        }
        if let Some(m) = self
            .max_minutes
            .filter(|m| spent.seconds >= *m as f64 * 60.0)
        {
            return Some(format!(
                "search.max_minutes: {:.1} of {m} minutes used",
                spent.seconds / 60.0
            ));
        }
        if let Some(m) = self.max_cost.filter(|m| spent.cost >= *m) {
            return Some(format!(
                "search.max_cost: the agent runs reported a cost of {} of {}",
                amount(spent.cost),
                amount(m)
            ));
        }
        None
    }
}

impl std::fmt::Display for BudgetLeft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "round {}/{}", self.round, self.rounds)?;
        if let Some(c) = self.candidates {
            write!(f, ", {c} candidate(s) left")?;
        }
        if let Some(a) = self.agent_runs {
            write!(f, ", {a} agent run(s) left")?;
        }
        if let Some(m) = self.minutes {
            write!(f, ", {m:.1} min left")?;
        }
        if let Some(c) = self.cost {
            write!(f, ", {} cost left", amount(c))?;
        }
        Ok(())
    }
}

/// A cost as people read it: at most four decimals, none when whole (`0.25`, `120000`).
pub fn amount(cost: f64) -> String {
    let rounded = (cost * 1e4).round() / 1e4;
    format!("{rounded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_ends_the_search_when_reached_and_not_before() {
        let budget = Budget {
            max_candidates: Some(4),
            max_agent_runs: Some(3),
            max_minutes: Some(2),
            max_cost: Some(1.5),
        };
        let spent = |candidates, agent_runs, seconds, cost| Spent {
            candidates,
            agent_runs,
            seconds,
            cost,
        };
        assert_eq!(budget.exhausted(spent(3, 2, 119.0, 1.49)), None);
        let why = |s| budget.exhausted(s).unwrap();
        assert!(why(spent(4, 0, 0.0, 0.0)).starts_with("search.max_candidates"));
        assert!(why(spent(0, 3, 0.0, 0.0)).starts_with("search.max_agent_runs"));
        assert!(why(spent(0, 0, 120.0, 0.0)).starts_with("search.max_minutes"));
        assert_eq!(
            why(spent(0, 0, 0.0, 1.5)),
            "search.max_cost: the agent runs reported a cost of 1.5 of 1.5"
        );
        let left = budget.left(spent(1, 1, 30.0, 0.25), 2, 3);
        assert_eq!(
            left.to_string(),
            "round 2/3, 3 candidate(s) left, 2 agent run(s) left, 1.5 min left, 1.25 cost left"
        );
        assert_eq!(budget.left(spent(0, 0, 0.0, 9.0), 1, 3).cost, Some(0.0));
        assert_eq!(Budget::default().exhausted(spent(100, 100, 1e9, 1e9)), None);
        assert_eq!(amount(120000.0), "120000");
        assert_eq!(amount(0.123456), "0.1235");
    }
}
