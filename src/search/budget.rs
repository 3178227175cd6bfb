//! The search's budgets (`search.max_candidates`, `max_agent_runs`, `max_minutes`): checked before
//! each new agent run starts, and what is left of them shown in the progress line and the
//! `--json` stream. A run already going is never cut short by a budget.

use serde::Serialize;

use crate::spec::campaign::SearchSettings;

/// The limits, as the campaign sets them (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Budget {
    pub max_candidates: Option<usize>,
    pub max_agent_runs: Option<usize>,
    pub max_minutes: Option<usize>,
}

/// What the search has used so far.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spent {
    pub candidates: usize,
    pub agent_runs: usize,
    /// Wall seconds over every session of the run.
    pub seconds: f64,
}

/// What is left before the next agent run (`None`: no limit), with the round it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetLeft {
    pub round: usize,
    pub rounds: usize,
    pub candidates: Option<usize>,
    pub agent_runs: Option<usize>,
    pub minutes: Option<f64>,
}

impl Budget {
    pub fn of(search: &SearchSettings) -> Budget {
        Budget {
            max_candidates: search.max_candidates.map(|c| c.get()),
            max_agent_runs: search.max_agent_runs.map(|c| c.get()),
            max_minutes: search.max_minutes.map(|c| c.get()),
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
        Ok(())
    }
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
        };
        let spent = |candidates, agent_runs, seconds| Spent {
            candidates,
            agent_runs,
            seconds,
        };
        assert_eq!(budget.exhausted(spent(3, 2, 119.0)), None);
        let why = |s| budget.exhausted(s).unwrap();
        assert!(why(spent(4, 0, 0.0)).starts_with("search.max_candidates"));
        assert!(why(spent(0, 3, 0.0)).starts_with("search.max_agent_runs"));
        assert!(why(spent(0, 0, 120.0)).starts_with("search.max_minutes"));
        let left = budget.left(spent(1, 1, 30.0), 2, 3);
        assert_eq!(
            left.to_string(),
            "round 2/3, 3 candidate(s) left, 2 agent run(s) left, 1.5 min left"
        );
        assert_eq!(Budget::default().exhausted(spent(100, 100, 1e9)), None);
    }
}
