//! The search loop's own parts that need no campaign to run: what an agent is told each round
//! (`brief`, with evo's profile of the baseline, `profile`), the limits that end a search
//! (`budget`), when rounds stop gaining (`gain`), where screening pairs go (`racing`), which screened candidates their pairs rule out
//! (`ruling`), and the
//! built-in offline agent `evo agent build-flags` (`build_flags`). The campaign
//! (`campaign::collect`) runs the loop with them (docs/design.md §2.9).

pub mod brief;
pub mod budget;
pub mod build_flags;
pub mod profile;
pub mod racing;
pub mod ruling;

pub use brief::{BRIEF_VERSION, Brief, BriefScenario, HistoryEntry, Parent};
pub use budget::{Budget, BudgetLeft, Spent};

/// How many rounds in a row, ending with the last of `best_by_round`, did not raise the best
/// screening median: `best_by_round[r]` is the best median of every candidate collected in
/// rounds up to and including r (`None` while nothing was screened). A round gains when its best
/// is above 1 and above every earlier round's.
pub fn rounds_without_gain(best_by_round: &[Option<f64>]) -> usize {
    let mut best = 1.0_f64;
    let mut without = 0;
    for m in best_by_round {
        match m {
            Some(m) if *m > best => {
                best = *m;
                without = 0;
            }
            _ => without += 1,
        }
    }
    without
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_gains_only_when_it_raises_the_best_above_one() {
        assert_eq!(rounds_without_gain(&[]), 0);
        assert_eq!(rounds_without_gain(&[Some(1.2)]), 0);
        assert_eq!(rounds_without_gain(&[Some(0.9)]), 1);
        assert_eq!(rounds_without_gain(&[Some(1.2), Some(1.2), Some(1.2)]), 2);
        assert_eq!(rounds_without_gain(&[Some(1.2), Some(1.2), Some(1.3)]), 0);
        assert_eq!(rounds_without_gain(&[None, None, Some(1.01)]), 0);
        assert_eq!(rounds_without_gain(&[Some(1.1), None]), 1);
    }
}
