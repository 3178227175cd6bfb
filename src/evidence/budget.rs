//! How a confirmation's time budget (`confirm.max_minutes`) is split among its scenarios
//! (docs/design.md §3.6): each training scenario gets the budget less a reserve for the holdouts
//! (their planned minimum at the baseline warmups' pace), each holdout what the budget has left
//! when the scenarios before it are done. The split is a function of the configured counts and
//! the recorded runs alone, so `evo confirm` makes it and `--recompute` re-derives it the same way.

use serde::{Deserialize, Serialize};

use crate::measure::record::WarmupRun;
use crate::spec::workload::Role;
use crate::stats;

use super::result::{ScenarioResult, warmup_seconds_per_pair};

/// How one scenario's share of the budget was made: the configured figures, what the scenarios
/// before it took, and what was held back for the holdouts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BudgetSplit {
    /// Configured: the confirmation's budget, in seconds of pairs (`confirm.max_minutes` × 60,
    /// or less when the run's deadline cut it before the first scenario's pairs).
    pub total_s: f64,
    /// Configured: the training scenarios the budget is for.
    pub training: usize,
    /// Configured: the holdouts the budget is for.
    pub holdouts: usize,
    /// The seconds of pairs (both runs) the scenarios measured before this one took: training
    /// comparison pairs, then holdout pairs. Warmups and A/A pairs are outside the budget.
    pub spent_s: f64,
    /// Held back for the holdouts: `holdouts × pairs` pairs at this scenario's baseline warmup
    /// pace (a training scenario), or 0 (a holdout).
    pub reserve_s: f64,
}

/// What the split is made from: the configured budget and counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetConfig {
    pub total_s: f64,
    pub training: usize,
    pub holdouts: usize,
    /// `confirm.pairs`: each holdout's planned minimum.
    pub pairs: usize,
}

impl BudgetSplit {
    /// The configuration this split was made under, with `pairs` as the holdouts' minimum.
    pub fn config(&self, pairs: usize) -> BudgetConfig {
        BudgetConfig {
            total_s: self.total_s,
            training: self.training,
            holdouts: self.holdouts,
            pairs,
        }
    }
}

/// A scenario's share and how it was made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    pub split: BudgetSplit,
    /// The scenario's budget in seconds of pairs, which its cap is planned in.
    pub budget_s: f64,
}

/// The seconds of a scenario's measured pairs, both runs of each.
pub fn pair_seconds(s: &ScenarioResult) -> f64 {
    (s.pairs.iter())
        .map(|p| p.baseline.wall_s + p.candidate.wall_s)
        .sum()
}

/// The share of the next scenario of `role`, measured after `done` (in order), whose warmups are
/// `warmups`:
///
/// ```text
/// training:  (total − spent − holdouts × pairs × pace) / (training − training done)
/// holdout:   (total − spent) / (holdouts − holdouts done)
/// ```
///
/// `spent` is the seconds of every pair in `done`, `pace` the baseline warmups' seconds per pair.
pub fn share(
    config: &BudgetConfig,
    done: &[ScenarioResult],
    role: Role,
    warmups: &[WarmupRun],
) -> Share {
    let spent_s: f64 = done.iter().map(pair_seconds).sum();
    let done_of = |r: Role| done.iter().filter(|s| s.role == r).count();
    let (reserve_s, remaining) = match role {
        Role::Training => (
            stats::holdout_reserve_s(
                config.holdouts,
                config.pairs,
                warmup_seconds_per_pair(warmups),
            ),
            config.training.saturating_sub(done_of(Role::Training)),
        ),
        Role::Holdout => (0.0, config.holdouts.saturating_sub(done_of(Role::Holdout))),
    };
    Share {
        split: BudgetSplit {
            total_s: config.total_s,
            training: config.training,
            holdouts: config.holdouts,
            spent_s,
            reserve_s,
        },
        budget_s: stats::budget_share_s(config.total_s, spent_s, reserve_s, remaining),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::record::{Arm, Order, Pair, Purpose, RunRecord};

    fn measured(role: Role, pairs: usize, wall_s: f64) -> ScenarioResult {
        let run = || RunRecord::exited_ok(wall_s);
        ScenarioResult {
            pairs: (0..pairs)
                .map(|i| Pair::new(i, Order::CandidateFirst, run(), run()))
                .collect(),
            ..ScenarioResult::unmeasured("s", role)
        }
    }

    #[test]
    fn a_holdout_gets_what_training_left_and_training_leaves_the_holdouts_reserve() {
        let warmup = |arm, wall_s| WarmupRun {
            arm,
            purpose: Purpose::Warmup,
            run: RunRecord::exited_ok(wall_s),
            seed: None,
        };
        // The candidate's slow warmup does not change the pace: the baseline's is 2 s a pair.
        let warmups = [warmup(Arm::Candidate, 9.0), warmup(Arm::Baseline, 1.0)];
        let config = BudgetConfig {
            total_s: 600.0,
            training: 1,
            holdouts: 2,
            pairs: 9,
        };
        let t = share(&config, &[], Role::Training, &warmups);
        assert_eq!((t.split.reserve_s, t.budget_s), (36.0, 564.0));
        // Training decided after 20 pairs of 2 s: the holdouts share the other 560 s.
        let done = [measured(Role::Training, 20, 1.0)];
        let h = share(&config, &done, Role::Holdout, &warmups);
        assert_eq!(
            (h.split.spent_s, h.split.reserve_s, h.budget_s),
            (40.0, 0.0, 280.0)
        );
        let done = [done[0].clone(), measured(Role::Holdout, 9, 1.0)];
        let last = share(&config, &done, Role::Holdout, &warmups);
        assert_eq!(last.budget_s, 542.0);
    }
}
