//! How the run's deadline bounds a confirmation's timed pairs (a campaign's `max_minutes`,
//! passed as `ConfirmOptions::deadline`; docs/design.md §3.6). Once the first scenario's
//! warmups have run, the budget of timed pairs is `confirm.max_minutes` (none: no bound) cut to
//! the time left, less what must still run after the pairs are planned, at the warmups' pace:
//! every training scenario's A/A pairs, every holdout's warmups, and the instruction counts.
//! It is fixed then, so every scenario's share is split from the same total (which the
//! verifier requires), and the cut is said as a warning. The pairs never go below
//! `confirm.pairs`: a deadline that left nothing still gets the first look.

use std::time::Instant;

use super::Run;
use crate::evidence::result::warmup_seconds_per_pair;
use crate::measure::record::WarmupRun;
use crate::spec::campaign::Counter;
use crate::spec::workload::Role;

/// An instruction count of both arms (one under callgrind each, side by side, then one native
/// run each) takes about this many of the scenario's pairs. Seen on the bundled trainer
/// (2026-12-03, quiet 2-core machine): one pair 5.7 s, the two counts one after the other 213 s,
/// so side by side about 105 s, 18 pairs (its counted command is one training step of the
/// thirty the timed run makes, most of it libtorch's start-up, which valgrind slows the most).
pub const COUNT_PAIRS: f64 = 20.0;

impl Run<'_> {
    /// Fixes the budget of timed pairs, once, from the first scenario's `warmups` (see the
    /// module's text); later calls keep it.
    pub(crate) fn settle_budget(&mut self, warmups: &[WarmupRun]) {
        if self.pairs_budget.is_some() {
            return;
        }
        let configured = self.plan.settings().budget_s();
        let Some(deadline) = self.opts.deadline else {
            self.pairs_budget = Some(configured);
            return;
        };
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64();
        let after = self.after_pairs_s(warmup_seconds_per_pair(warmups));
        let cap = (left - after).max(0.0);
        let settled = configured.map_or(cap, |c| c.min(cap));
        if configured.is_none_or(|c| settled < c) {
            let configured = match configured {
                Some(c) => format!("confirm.max_minutes gives {c:.0} s"),
                None => "confirm.max_minutes sets none".to_string(),
            };
            self.warn(format!(
                "the run's deadline (the campaign's max_minutes) leaves {settled:.0} s of timed \
                 pairs ({configured}): {left:.0} s were left, about {after:.0} s of them for the \
                 A/A pairs, holdout warmups and instruction counts that follow; the first look's \
                 {} pairs run whatever is left",
                self.plan.settings().pairs.get()
            ));
        }
        self.pairs_budget = Some(Some(settled));
    }

    /// The seconds, at `pace` per pair, of what runs after the budget is fixed and outside it.
    fn after_pairs_s(&self, pace: f64) -> f64 {
        let set = self.plan.settings();
        let scenarios = &self.plan.campaign.workload.scenarios;
        let training = scenarios
            .iter()
            .filter(|s| s.role == Role::Training)
            .count() as f64;
        let holdouts =
            (self.plan.campaign.holdouts.as_ref()).map_or(0, |h| h.holdouts.scenarios.len()) as f64;
        let counts = if set.counters.contains(&Counter::Callgrind) {
            training * COUNT_PAIRS
        } else {
            0.0
        };
        pace * (training * set.aa_pairs.get() as f64 + holdouts * set.warmup.get() as f64 + counts)
    }
}
