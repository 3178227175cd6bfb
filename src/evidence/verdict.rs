//! From gates to tier and verdict (docs/design.md §3.11), as pure functions over a finished result.

mod backing;
mod cpus;
mod exact;

pub use backing::{Backing, CYCLES_BACK_SINCE, FRACTION, FRACTION_SHORT_RUN};
pub use cpus::CPU_LIMIT;
pub use exact::{ACCEPTED_ON_EXACT_EVIDENCE, Exact, MAX_VOLUNTARY_SWITCHES, exact_evidence};

use super::result::{Gate, GateName, GateStatus, ScenarioResult, Verdict};
use crate::spec::campaign::Metric;
use crate::stats::{self, HoldoutVerdict, Tier};

/// The version of the rules that turn raw runs into figures, gates, tier and verdict, recorded in
/// every result (`ConfirmResult::rules`) so that `--recompute` never judges a receipt by rules it
/// was not made under. A receipt without the field is rules 0 (before this number existed).
///
/// Bump it in the same commit as any change that can make the same raw runs give another
/// recorded value: a formula or threshold in `src/stats/` (interval, noise, pair plans, MDE,
/// gates), `evidence::figures::figures`, `evidence::result::{holdout_figures, holdout_plan,
/// outputs_consistent, candidate_leftovers}`, `decide_by` and its reasons, or what
/// `receipt::recompute` checks (docs/design.md §5.10).
///
/// 1: holdout pair counts planned from the training A/A noise; warmup counts and leftover flags
/// (configuration-only runs included) checked.
/// 2: the pair plan also sizes for a target effect (found 80% of the time by the same resampling
/// as the minimum detectable effect), and a run resolves only when its pairs are so powered.
/// 3: every warmup round and pair computes on its own fresh seed; timed outputs agree within each
/// pair (not across pairs), and a scenario in which a replayed result could not show caps the tier
/// at `measured`; when the deterministic lane ran, a wall-time gain its instruction counts do not
/// back is rejected (`backing`); gate `lane probes`.
/// 4: the sequential rule: a training comparison looks at its pairs from `confirm.pairs` on and
/// stops at the first look that decides (accepted, slower, or no real gain: the interval of the
/// look's share of a 2.5%-per-side error budget), at the cap (`max_pairs`, lowered by
/// `max_minutes`) at the latest; no noise floor, minimum detectable effect or target effect
/// decides anything any more.
/// 5: the sequential rule for holdouts too: a holdout looks at its pairs from `confirm.pairs` on,
/// over the count planned from the training A/A noise (now planned at the last look's share), and
/// stops at the first look whose interval says "no regression" or "rejected" (training is as in
/// rules 4).
/// 6: what is judged is what is timed: a count whose runs computed otherwise than the timed ones
/// (`InstructionFigures::mismatch`) rejects; a count that cannot vouch (`unverified`: a
/// `count.run` none of the timed runs executes, or no rule to compare its output by) caps the
/// tier at `measured` and cannot decide under the instructions metric; a holdout something
/// readable names (`unsealed_holdouts`) caps the tier at `measured`; a workload declared
/// `single_threaded` rejects a candidate whose timed runs used more than one CPU.
/// 7: the plan's statements (`PlanRecord::needed`, `resolves_gain`) are made at the A/A noise's
/// estimate σ rather than its upper 80% bound, with their ranges over σ's central 80% interval
/// (`needed_range`, `gain_range`, `sigma_range`); an inconclusive verdict has tier `none`
/// (rejected nothing) rather than `rejected`; every verdict is decided as under rules 6.
/// 8: exact evidence (`verdict::exact`): under the metric `wall_time_or_counts`, a training
/// scenario the wall time left undecided passes on a cache-simulated count of its timed command when the estimated
/// cycles fall by the minimum effect, its runs are CPU-bound on one CPU and neither the wall-time
/// nor the CPU-time interval excludes the counted gain; such an acceptance has the tier
/// `counted`, below `measured`.
/// 9: the sequential rule judges the Hodges–Lehmann estimate of the pairs' ratios with the
/// Wilcoxon signed-rank interval (its estimate is what `median` holds from now on), at levels from
/// a Pocock-type spending function with the looks' correlation integrated (computed for 85% of the
/// 2.5% budget; the first look may spend its most extreme interval); holdouts the same way; the
/// plans use the estimate's standard error. The A/A check and the noise figures are unchanged.
/// 10: a wall-time gain the instructions do not back is backed when the estimated cycles of a
/// cache-simulated count fall by the same fraction of it (`backing`, with the reason saying which
/// count backed it or failed to, with both figures); under the wall-time metric the lane counts
/// such a scenario a second time with the cache simulation, and a second count that fails leaves
/// the run inconclusive. A result of rules 9 or before is backed by its instructions alone.
/// Every look the pairs reach is recorded with what it saw (`SequentialRecord::seen`,
/// `HoldoutSequential::seen`: estimate, interval, signed-rank statistic), re-derived by
/// `--recompute`; it decides nothing new.
pub const RULES: u32 = 10;

pub fn gate(name: GateName, status: GateStatus, detail: impl Into<String>) -> Gate {
    Gate {
        name,
        status,
        detail: detail.into(),
    }
}

/// The tier, verdict and reasons implied by the gates and the scenario figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub tier: Tier,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
}

fn failed(gates: &[Gate]) -> impl Iterator<Item = &Gate> {
    gates.iter().filter(|g| g.status == GateStatus::Failed)
}

/// Decides from the gates (any failure rejects) and the measured scenarios.
pub fn decide(gates: &[Gate], scenarios: &[ScenarioResult]) -> Decision {
    decide_by(gates, scenarios, Metric::WallTime, 0.0)
}

/// [`decide`] with the campaign's acceptance metric. With [`Metric::Instructions`] a training
/// scenario passes on its instruction counts (the baseline's at least `1 + min_effect` times the
/// candidate's, from the deterministic lane) instead of its wall-time interval; a scenario
/// without counts cannot pass, and makes the run inconclusive. A wall-time slowdown still rejects.
pub fn decide_by(
    gates: &[Gate],
    scenarios: &[ScenarioResult],
    metric: Metric,
    min_effect: f64,
) -> Decision {
    decide_under(gates, scenarios, (metric, min_effect), RULES)
}

/// [`decide_by`] under the verdict rules `rules` where this evo still knows the older rule (the
/// backing of rules 9 and before, by instructions alone); every other rule is this evo's.
fn decide_under(
    gates: &[Gate],
    scenarios: &[ScenarioResult],
    (metric, min_effect): (Metric, f64),
    rules: u32,
) -> Decision {
    let mut reasons: Vec<String> = failed(gates)
        .map(|g| format!("{} failed: {}", g.name, g.detail))
        .collect();
    // Every gate is a check that must hold ([`GateName`]): any failed one stops acceptance.
    let checks_green = failed(gates).next().is_none();
    let training: Vec<_> = scenarios
        .iter()
        .filter_map(|s| s.training.as_ref().map(|f| (s, f)))
        .collect();
    let measured = !training.is_empty();
    // Where the wall time could not decide, exact evidence may (rules 8, `exact`).
    let exacts: Vec<Exact> = (training.iter())
        .map(|(s, f)| match metric {
            Metric::WallTimeOrCounts => exact_evidence(s, f, min_effect),
            Metric::WallTime | Metric::Instructions => Exact::NotApplicable,
        })
        .collect();
    let passed: Vec<bool> = (training.iter().zip(&exacts))
        .map(|((s, f), e)| match metric {
            Metric::WallTime | Metric::WallTimeOrCounts => {
                f.training_gate.passed || matches!(e, Exact::Accepts(_))
            }
            Metric::Instructions => fewer_instructions(s, min_effect) == Some(true),
        })
        .collect();
    let counted = exacts.iter().any(|e| matches!(e, Exact::Accepts(_)));
    // Significantly slower is a rejection even when the A/A check is off (no bias explains it
    // away), and whatever the metric.
    let regression = training.iter().any(|(_, f)| slower(f));
    // When the deterministic lane ran, wall time and instructions must agree (`backing`).
    let backings: Vec<Backing> = (training.iter().zip(&passed))
        .map(|((s, f), p)| lane_agreement((metric, min_effect), rules, (s, f), *p))
        .collect();
    // Counted runs that computed otherwise than the timed ones reject, whatever the wall time.
    let mismatches: Vec<String> = (training.iter())
        .filter_map(|(s, _)| s.instructions.as_ref()?.mismatch.clone())
        .collect();
    let disagrees =
        backings.iter().any(|b| matches!(b, Backing::Disagrees(_))) || !mismatches.is_empty();
    let no_count = backings.iter().any(|b| matches!(b, Backing::NoCount(_)));
    let training_passed =
        measured && !regression && !disagrees && !no_count && passed.iter().all(|p| *p);
    let (aa_biased, unresolved) = match metric {
        Metric::WallTime | Metric::WallTimeOrCounts => (
            training.iter().any(|(_, f)| !f.training_gate.aa_valid),
            // A run that could not resolve the minimum effect and showed nothing either way says
            // nothing about the candidate: inconclusive, with the pairs that would resolve it.
            no_count
                || (training.iter().zip(&passed))
                    .any(|((_, f), p)| !p && !slower(f) && !f.training_gate.resolved),
        ),
        // Exact counts need no A/A check; a scenario without them cannot be decided.
        Metric::Instructions => (
            false,
            (training.iter()).any(|(s, _)| fewer_instructions(s, min_effect).is_none()),
        ),
    };
    let holdouts: Vec<HoldoutVerdict> = scenarios
        .iter()
        .filter_map(|s| s.holdout.as_ref().map(|h| h.verdict))
        .collect();
    for (((s, f), p), e) in training.iter().zip(&passed).zip(&exacts) {
        match metric {
            Metric::WallTime | Metric::WallTimeOrCounts if !f.training_gate.passed => match e {
                Exact::Accepts(why) => reasons.push(why.clone()),
                Exact::Declines(why) => {
                    reasons.push(training_reason(&s.name, f));
                    reasons.push(why.clone());
                }
                Exact::NotApplicable => reasons.push(training_reason(&s.name, f)),
            },
            Metric::Instructions if slower(f) => reasons.push(training_reason(&s.name, f)),
            Metric::Instructions if !p => {
                reasons.push(instructions_reason(s, min_effect));
            }
            _ => {}
        }
    }
    for b in backings {
        if let Backing::Disagrees(why) | Backing::NoCount(why) | Backing::AgreesOnCycles(why) = b {
            reasons.push(why);
        }
    }
    reasons.extend(mismatches);
    for s in scenarios {
        if let Some(h) = &s.holdout {
            if h.verdict != HoldoutVerdict::NoRegression {
                reasons.push(format!(
                    "holdout `{}` is {} (estimate {:.4}×)",
                    s.name,
                    h.verdict.as_str(),
                    h.median
                ));
            }
        }
    }
    let mut tier = stats::tier(checks_green, training_passed, &holdouts);
    // Passed on exact evidence where the wall time could not decide: below `measured`.
    if counted && tier != Tier::Rejected {
        tier = Tier::Counted;
    }
    // A replayed result could not have shown in a scenario: what it measured may not have been
    // computed, so the run cannot vouch for the candidate beyond `measured`.
    for s in scenarios.iter().filter(|s| s.training.is_some()) {
        if let Some(why) = s.replay.as_ref().and_then(|r| r.why_undetectable()) {
            reasons.push(format!(
                "replay cannot be detected in scenario `{}`: {why}; the tier cannot be tested",
                s.name
            ));
            if tier == Tier::Tested {
                tier = Tier::Measured;
            }
        }
    }
    // A count a candidate could tell from the timed runs cannot vouch for it.
    for (s, _) in &training {
        if let Some(why) = s.instructions.as_ref().and_then(|i| i.unverified.as_ref()) {
            reasons.push(format!(
                "the instruction count of training scenario `{}` is not of what is timed: {why}; \
                 the tier cannot be tested",
                s.name
            ));
            if tier == Tier::Tested {
                tier = Tier::Measured;
            }
        }
    }
    let verdict = if tier != Tier::Rejected {
        Verdict::Accepted
    } else if checks_green
        && (aa_biased || unresolved)
        && !regression
        && !disagrees
        && !holdouts.contains(&HoldoutVerdict::Rejected)
    {
        // The setup, not the candidate, failed: nothing can be concluded from this run.
        Verdict::Inconclusive
    } else {
        Verdict::Rejected
    };
    if tier == Tier::Measured && holdouts.is_empty() {
        reasons.push(
            "no holdout was declared, so generalization beyond the training workload is untested"
                .to_string(),
        );
    }
    // An inconclusive run reached no tier and rejected nothing (rules 7).
    let tier = if verdict == Verdict::Inconclusive {
        Tier::None
    } else {
        tier
    };
    Decision {
        tier,
        verdict,
        reasons,
    }
}

/// [`decide_by`] for a whole result: a confirmation that timed nothing because its timed
/// programs were the baseline's is no real gain, and says so first.
pub fn decide_result(r: &super::result::Evidence, scenarios: &[ScenarioResult]) -> Decision {
    let mut d = decide_under(&r.gates, scenarios, (r.metric, r.min_effect), r.rules);
    if r.timed_programs_unchanged {
        d.reasons.insert(0, UNCHANGED_REASON.to_string());
    }
    if r.single_threaded {
        for s in scenarios {
            match cpus::more_than_one_cpu(s) {
                None => {}
                Some(cpus::Excess::Candidate(why)) => {
                    d.reasons.insert(0, why);
                    d.tier = Tier::Rejected;
                    d.verdict = Verdict::Rejected;
                }
                Some(cpus::Excess::Baseline(why)) => {
                    d.reasons.insert(0, why);
                    if d.verdict == Verdict::Accepted {
                        d.tier = Tier::None;
                        d.verdict = Verdict::Inconclusive;
                    }
                }
            }
        }
    }
    for u in &r.unsealed_holdouts {
        d.reasons.push(format!(
            "holdout `{}` is not sealed: {} names its {}, and a candidate or an agent can read \
             it; the tier cannot be tested",
            u.scenario, u.place, u.found
        ));
        if d.tier == Tier::Tested {
            d.tier = Tier::Measured;
        }
    }
    d
}

/// The reason of a confirmation whose timed programs did not change.
pub const UNCHANGED_REASON: &str = "no real gain: the timed programs are identical to the \
                                    baseline's (every artifact the timed commands run is byte \
                                    for byte the baseline's, and the patch touches no build \
                                    configuration and no file a timed command names), so \
                                    nothing was timed";

/// What the deterministic lane says of a training scenario that `passed` under `metric` and
/// verdict rules `rules`.
fn lane_agreement(
    (metric, min_effect): (Metric, f64),
    rules: u32,
    (s, f): (&ScenarioResult, &super::figures::Figures),
    passed: bool,
) -> Backing {
    match metric {
        _ if !passed => Backing::NotJudged,
        Metric::WallTime | Metric::WallTimeOrCounts => backing::wall_gain_backed(s, f, rules),
        Metric::Instructions => match backing::instruction_gain_contradicted(s, f, min_effect) {
            Some(why) => Backing::Disagrees(why),
            None => Backing::Agrees,
        },
    }
}

/// Whether the deterministic lane should count training scenario `s` a second time, with the
/// cache simulation, for estimated cycles that could back the wall-time gain its instructions do
/// not (rules 10): under the wall-time metric only (`wall_time_or_counts` simulates the caches
/// in its one count, and under `instructions` no wall-time gain is backed).
pub fn wants_cycles(metric: Metric, s: &ScenarioResult) -> bool {
    metric == Metric::WallTime && backing::cycles_could_back(s)
}

/// Whether the holdouts can still change the verdict once the training scenarios are measured:
/// under wall time, only when every training scenario passed its gate; under instructions (whose
/// counts come after the timed runs), whenever none is a significant wall-time slowdown, so a
/// candidate that passes on instructions is never accepted with its holdouts unmeasured.
pub fn holdouts_can_matter(metric: Metric, scenarios: &[ScenarioResult]) -> bool {
    let training: Vec<&super::figures::Figures> = scenarios
        .iter()
        .filter_map(|s| s.training.as_ref())
        .collect();
    if training.is_empty() {
        return false;
    }
    match metric {
        Metric::WallTime | Metric::WallTimeOrCounts => {
            training.iter().all(|f| f.training_gate.passed)
        }
        Metric::Instructions => !training.iter().any(|f| slower(f)),
    }
}

/// Why no instruction count could change the verdict once the timed runs are in, if none can: a
/// training scenario significantly slower in wall time rejects the candidate under either metric;
/// under wall time, every training scenario decided without the minimum gain ("no real gain")
/// rejects it too, since counts only back a wall-time gain there. `None`: a count may still
/// decide (under instructions), back a gain, or say what changed where the wall time could not
/// decide.
pub fn counts_cannot_matter(metric: Metric, scenarios: &[ScenarioResult]) -> Option<String> {
    let training: Vec<(&ScenarioResult, &super::figures::Figures)> = (scenarios.iter())
        .filter_map(|s| s.training.as_ref().map(|f| (s, f)))
        .collect();
    if let Some((s, _)) = training.iter().find(|(_, f)| slower(f)) {
        return Some(format!(
            "the candidate is significantly slower in wall time on training scenario `{}`, which \
             rejects it whatever it executes",
            s.name
        ));
    }
    let no_gain =
        |(_, f): &(&ScenarioResult, &super::figures::Figures)| f.training_gate.no_real_gain;
    if !metric.by_wall_time() || training.is_empty() || !training.iter().all(no_gain) {
        return None;
    }
    let names: Vec<String> = training
        .iter()
        .map(|(s, _)| format!("`{}`", s.name))
        .collect();
    Some(format!(
        "the wall time decided no real gain on training scenario(s) {}, which no count can change \
         (under the wall-time metric counts only back a gain)",
        names.join(", ")
    ))
}

/// Whether the candidate executes at least `min_effect` fewer instructions (baseline /
/// candidate ≥ 1 + min_effect); `None` without both counts.
fn fewer_instructions(s: &ScenarioResult, min_effect: f64) -> Option<bool> {
    let i = s.instructions.as_ref().filter(|i| i.unverified.is_none())?;
    let (b, c) = (i.baseline?, i.candidate?);
    (c > 0).then(|| b as f64 / c as f64 >= 1.0 + min_effect)
}

fn instructions_reason(s: &ScenarioResult, min_effect: f64) -> String {
    let i = s.instructions.as_ref();
    match i.and_then(|i| i.change_pct) {
        Some(_) if i.is_some_and(|i| i.unverified.is_some()) => format!(
            "training scenario `{}` cannot pass on instructions (the campaign's metric): its \
             count is not of what is timed",
            s.name
        ),
        Some(pct) => format!(
            "training scenario `{}` did not pass on instructions (the campaign's metric): \
             {pct:+.2}%, where at least {:.2}% fewer were needed (instructions are not time)",
            s.name,
            100.0 * (1.0 - 1.0 / (1.0 + min_effect))
        ),
        None => format!(
            "training scenario `{}` has no instruction count, so the campaign's metric \
             (instructions) cannot decide it: {}",
            s.name,
            i.and_then(|i| i.note.as_deref())
                .unwrap_or("the deterministic lane did not run (confirm.counters)")
        ),
    }
}

/// Shown slower: the sequential rule's slower decision (`TrainingGate::regression`). A
/// rejection needs no valid A/A check: no bias explains a slowdown away.
fn slower(f: &super::figures::Figures) -> bool {
    f.training_gate.regression
}

fn training_reason(name: &str, f: &super::figures::Figures) -> String {
    let g = &f.training_gate;
    let interval = |c: &stats::Ci95| format!("{:.4}–{:.4}×", c.lower, c.upper);
    let bar = f.plan.map_or(0.0, |p| p.min_effect);
    let at = f.plan.map_or(0, |p| p.reached_pairs);
    let why = if !g.aa_valid {
        "the A/A check found the setup biased, so nothing can be accepted".to_string()
    } else if slower(f) {
        format!(
            "it is slower: estimate {:.4}×, interval {} at {at} pairs",
            f.median,
            f.ci95.as_ref().map_or_else(String::new, interval)
        )
    } else if g.no_real_gain {
        format!(
            "no real gain: the interval {} at {at} pairs rules out a gain of the {:.1}% minimum \
             effect (estimate {:.4}×)",
            f.ci95.as_ref().map_or_else(String::new, interval),
            100.0 * bar,
            f.median
        )
    } else if let (Some(p), Some(seq)) = (&f.plan, &f.sequential) {
        format!(
            "undecided at the cap of {at} pairs: {}",
            super::figures::undecided_detail(p, seq)
        )
    } else {
        "its pairs reached no decision".to_string()
    };
    format!("training scenario `{name}` did not pass: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::figures::{BenchSettings, figures};
    use crate::measure::record::{Order, Pair, RunRecord};

    fn run(wall_s: f64) -> RunRecord {
        RunRecord::exited_ok(wall_s)
    }

    /// Pairs whose ratios are `ratio × (1 + small wobble)`.
    fn pairs(ratio: f64, n: usize) -> Vec<Pair> {
        (0..n)
            .map(|i| {
                let wobble = 1.0 + 0.002 * (i as f64 - n as f64 / 2.0);
                Pair::new(i, Order::CandidateFirst, run(ratio * wobble), run(1.0))
            })
            .collect()
    }

    pub(super) fn training(aa_ratio: f64, ratio: f64) -> ScenarioResult {
        let settings = BenchSettings {
            pairs: 9,
            max_pairs: 9,
            budget_s: None,
            aa_pairs: 11,
            warmup: 0,
            min_effect: 0.01,
            target_effect: 0.015,
            first: Order::CandidateFirst,
            order_seed: None,
            mde_seed: 1,
            timeout_s: 1.0,
        };
        let f = figures(&settings, &pairs(aa_ratio, 11), &pairs(ratio, 9)).unwrap();
        ScenarioResult {
            training: Some(f),
            ..ScenarioResult::unmeasured("t", crate::spec::workload::Role::Training)
        }
    }

    pub(super) fn green() -> Vec<Gate> {
        GateName::ALL
            .iter()
            .map(|n| gate(*n, GateStatus::Passed, ""))
            .collect()
    }

    #[test]
    fn counts_are_spared_only_where_the_wall_time_decided_a_rejection_they_cannot_change() {
        let (wall, counts) = (Metric::WallTime, Metric::Instructions);
        // No real gain: the interval rules out the 1% minimum effect.
        let null = [training(1.0, 1.0)];
        assert!(
            null[0]
                .training
                .as_ref()
                .unwrap()
                .training_gate
                .no_real_gain
        );
        let why = counts_cannot_matter(wall, &null).unwrap();
        assert!(
            why.contains("no real gain on training scenario(s) `t`"),
            "{why}"
        );
        // Under the instructions metric the counts decide: they are made.
        assert_eq!(counts_cannot_matter(counts, &null), None);
        // Slower rejects under either metric.
        for metric in [wall, counts] {
            let why = counts_cannot_matter(metric, &[training(1.0, 0.8)]).unwrap();
            assert!(why.contains("significantly slower"), "{why}");
        }
        // A gain is backed by its counts.
        assert_eq!(counts_cannot_matter(wall, &[training(1.0, 1.2)]), None);
        // One scenario without the gain and one with it: the counts still back the other.
        assert_eq!(
            counts_cannot_matter(wall, &[training(1.0, 1.0), training(1.0, 1.2)]),
            None
        );
    }

    #[test]
    fn a_clear_speedup_without_holdouts_is_measured_and_accepted() {
        let d = decide(&green(), &[training(1.0, 1.2)]);
        assert_eq!((d.tier, d.verdict), (Tier::Measured, Verdict::Accepted));
        assert!(d.reasons[0].contains("no holdout was declared"));
    }

    #[test]
    fn any_failed_check_rejects_even_a_fast_candidate() {
        let mut gates = green();
        gates[4] = gate(GateName::Differential, GateStatus::Failed, "outputs differ");
        let d = decide(&gates, &[training(1.0, 1.5)]);
        assert_eq!((d.tier, d.verdict), (Tier::Rejected, Verdict::Rejected));
        assert_eq!(d.reasons[0], "differential failed: outputs differ");
        for name in GateName::ALL {
            let mut gates = green();
            gates.push(gate(*name, GateStatus::Failed, "no"));
            let d = decide(&gates, &[training(1.0, 1.5)]);
            assert_eq!(d.verdict, Verdict::Rejected, "{name}");
            assert_eq!(d.reasons[0], format!("{name} failed: no"));
        }
    }

    /// Acceptance used to stop only for failed gates named in a list (`CHECK_GATES`): a failed
    /// gate under any other name, say a misspelled one in a result read back, was shown in the
    /// reasons and the candidate was still accepted. Now a gate is a `GateName`, every one stops
    /// acceptance, and a result naming a gate evo does not know cannot be read.
    #[test]
    fn a_failed_gate_not_in_the_old_check_list_still_rejects() {
        let misspelled = r#"{"name": "timed outputs", "status": "failed", "detail": "differ"}"#;
        let verdict = serde_json::from_str::<Gate>(misspelled).map(|failed| {
            let mut gates = green();
            gates.push(failed);
            decide(&gates, &[training(1.0, 1.5)]).verdict
        });
        match verdict {
            Err(e) => assert!(
                e.to_string().contains("unknown gate `timed outputs`"),
                "{e}"
            ),
            Ok(v) => assert_eq!(v, Verdict::Rejected),
        }
    }

    #[test]
    fn a_biased_aa_check_is_inconclusive_unless_the_candidate_is_slower() {
        let d = decide(&green(), &[training(1.2, 1.3)]);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{d:?}");
        // No tier reached, and nothing rejected (rules 7; `rejected` before).
        assert_eq!(d.tier, Tier::None, "{d:?}");
        let d = decide(&green(), &[training(1.2, 0.7)]);
        assert_eq!(d.verdict, Verdict::Rejected, "{d:?}");
        assert_eq!(d.tier, Tier::Rejected, "{d:?}");
    }

    #[test]
    fn no_measurement_is_never_accepted() {
        let d = decide(&green(), &[]);
        assert_eq!(d.verdict, Verdict::Rejected);
    }

    #[test]
    fn holdouts_are_measured_whenever_the_metric_could_still_accept() {
        // Flat in wall time (not passed, not slower): only the instructions metric can accept it.
        let flat = training(1.0, 1.0);
        assert!(!flat.training.as_ref().unwrap().training_gate.passed);
        assert!(!holdouts_can_matter(
            Metric::WallTime,
            std::slice::from_ref(&flat)
        ));
        assert!(holdouts_can_matter(Metric::Instructions, &[flat]));
        let fast = training(1.0, 1.3);
        assert!(holdouts_can_matter(
            Metric::WallTime,
            std::slice::from_ref(&fast)
        ));
        assert!(holdouts_can_matter(Metric::Instructions, &[fast]));
        // A significant slowdown rejects under either metric: holdouts cannot help.
        let slow = training(1.0, 0.7);
        assert!(!holdouts_can_matter(
            Metric::WallTime,
            std::slice::from_ref(&slow)
        ));
        assert!(!holdouts_can_matter(Metric::Instructions, &[slow]));
        assert!(!holdouts_can_matter(Metric::Instructions, &[]));
    }

    pub(super) fn counted(mut s: ScenarioResult, baseline: u64, candidate: u64) -> ScenarioResult {
        s.instructions = Some(crate::evidence::result::InstructionFigures::of(
            baseline, candidate,
        ));
        s
    }

    #[test]
    fn with_the_instructions_metric_the_counts_decide_and_a_slowdown_still_rejects() {
        let metric = Metric::Instructions;
        // Wall time shows nothing (ratio 1.0); 3% fewer instructions clear a 1% minimum effect.
        let flat = counted(training(1.0, 1.0), 1_000_000, 970_000);
        let d = decide_by(&green(), &[flat], metric, 0.01);
        assert_eq!(d.verdict, Verdict::Accepted, "{:?}", d.reasons);
        // 0.5% fewer do not.
        let small = counted(training(1.0, 1.0), 1_000_000, 995_000);
        let d = decide_by(&green(), &[small], metric, 0.01);
        assert_eq!(d.verdict, Verdict::Rejected);
        assert!(d.reasons[0].contains("on instructions"), "{:?}", d.reasons);
        // Without counts the metric cannot decide: inconclusive, never accepted.
        let d = decide_by(&green(), &[training(1.0, 1.0)], metric, 0.01);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        // Fewer instructions but clearly slower in wall time: rejected.
        let slower = counted(training(1.0, 0.7), 1_000_000, 900_000);
        let d = decide_by(&green(), &[slower], metric, 0.01);
        assert_eq!(d.verdict, Verdict::Rejected, "{:?}", d.reasons);
        assert!(d.reasons[0].contains("slower"), "{:?}", d.reasons);
        // The wall-time metric ignores the counts.
        let flat = counted(training(1.0, 1.0), 1_000_000, 970_000);
        let d = decide_by(&green(), &[flat], Metric::WallTime, 0.01);
        assert_ne!(d.verdict, Verdict::Accepted);
    }

    /// The review's lane-detection cheat: the work done only under valgrind, so the counts are
    /// equal (+0.00%) beside a 4× wall-time gain. Printed side by side, it was accepted.
    #[test]
    fn a_wall_time_gain_the_instruction_counts_do_not_show_is_rejected() {
        let cheat = counted(training(1.0, 4.0), 1_000_000_000, 1_000_000_000);
        let d = decide(&green(), &[cheat]);
        assert_eq!((d.tier, d.verdict), (Tier::Rejected, Verdict::Rejected));
        assert!(
            (d.reasons.iter()).any(|r| r.contains("not backed by the instruction counts")
                && r.contains("+0.00%")),
            "{:?}",
            d.reasons
        );
        // A few percent fewer instructions do not back a 4× gain either.
        let d = decide(&green(), &[counted(training(1.0, 4.0), 1_000_000, 970_000)]);
        assert_eq!(d.verdict, Verdict::Rejected, "{:?}", d.reasons);
        // Without the lane there is nothing to disagree with.
        let d = decide(&green(), &[training(1.0, 4.0)]);
        assert_eq!(d.verdict, Verdict::Accepted, "{:?}", d.reasons);
    }

    /// The bundled real speedups keep their acceptance: the tiled matmul (about 1.55× in wall
    /// time, 1.209 → 0.727 billion instructions in one iteration of the C campaign's bench) and
    /// the unrolled dot product (about 1.27×, 1.209 → 1.012 billion: a latency gain).
    #[test]
    fn the_bundled_speedups_are_backed_by_their_counts() {
        for (ratio, candidate) in [(1.55, 726_872_416), (1.27, 1_012_339_444)] {
            let s = counted(training(1.0, ratio), 1_208_946_416, candidate);
            let d = decide(&green(), &[s]);
            assert_eq!(d.verdict, Verdict::Accepted, "{ratio}: {:?}", d.reasons);
        }
        // A shorter run counted instead (start-up weighs more there): a sixteenth is enough.
        let mut s = counted(training(1.0, 1.5), 1_630_000_000, 1_560_000_000);
        s.instructions.as_mut().unwrap().command = Some("./train --steps 1".into());
        let d = decide(&green(), &[s.clone()]);
        assert_eq!(d.verdict, Verdict::Accepted, "{:?}", d.reasons);
        s.instructions.as_mut().unwrap().command = None;
        assert_eq!(decide(&green(), &[s]).verdict, Verdict::Rejected);
    }

    /// A candidate that makes its counted run fail (different output under valgrind) leaves no
    /// count to disagree with: its wall-time gain is not accepted either.
    #[test]
    fn a_gain_the_lane_could_not_count_is_inconclusive() {
        let mut s = training(1.0, 2.0);
        s.instructions = Some(crate::evidence::result::InstructionFigures::missing(
            "a run under callgrind printed other output".into(),
        ));
        let d = decide(&green(), &[s]);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        assert!(
            d.reasons
                .iter()
                .any(|r| r.contains("gave no instruction count"))
        );
    }

    /// The reverse: under the instructions metric, 40% fewer instructions while the wall time
    /// shows none of it is the same cheat the other way round (less work only where counted).
    #[test]
    fn an_instruction_gain_the_wall_time_excludes_is_rejected() {
        let metric = Metric::Instructions;
        let flat = counted(training(1.0, 1.0), 1_000_000, 600_000);
        let d = decide_by(&green(), &[flat], metric, 0.01);
        assert_eq!(d.verdict, Verdict::Rejected, "{:?}", d.reasons);
        assert!(
            d.reasons
                .iter()
                .any(|r| r.contains("contradicted by the wall time"))
        );
        // Backed by a matching wall-time gain, it stands.
        let fast = counted(training(1.0, 1.6), 1_000_000, 600_000);
        let d = decide_by(&green(), &[fast], metric, 0.01);
        assert_eq!(d.verdict, Verdict::Accepted, "{:?}", d.reasons);
    }

    /// A holdout that passed, so the tier would be `tested` but for what rules 6 adds.
    fn held_out() -> ScenarioResult {
        let mut h = ScenarioResult::unmeasured("h", crate::spec::workload::Role::Holdout);
        h.holdout = Some(crate::evidence::result::HoldoutFigures {
            median: 1.3,
            ci95: None,
            cov: crate::evidence::figures::ArmCov {
                baseline: 0.01,
                candidate: 0.01,
            },
            verdict: HoldoutVerdict::NoRegression,
            plan: None,
            sequential: None,
        });
        h
    }

    #[test]
    fn a_count_that_cannot_vouch_caps_the_tier_and_one_that_computed_otherwise_rejects() {
        let backed = || counted(training(1.0, 1.6), 1_000_000, 600_000);
        let d = decide_by(&green(), &[backed(), held_out()], Metric::WallTime, 0.01);
        assert_eq!(
            (d.verdict, d.tier),
            (Verdict::Accepted, Tier::Tested),
            "{:?}",
            d.reasons
        );
        let mut unverified = backed();
        unverified.instructions.as_mut().unwrap().unverified = Some("argv".into());
        let d = decide_by(
            &green(),
            &[unverified.clone(), held_out()],
            Metric::WallTime,
            0.01,
        );
        assert_eq!(
            (d.verdict, d.tier),
            (Verdict::Accepted, Tier::Measured),
            "{:?}",
            d.reasons
        );
        assert!(
            d.reasons
                .iter()
                .any(|r| r.contains("is not of what is timed: argv"))
        );
        // Under the instructions metric such a count decides nothing.
        let d = decide_by(&green(), &[unverified], Metric::Instructions, 0.01);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
        // A mismatch rejects, whether the wall time passed or was left undecided.
        for s in [backed(), counted(training(1.0, 1.0), 1_000_000, 1_000_000)] {
            let mut s = s;
            s.instructions.as_mut().unwrap().mismatch = Some("computed otherwise".into());
            let d = decide_by(&green(), &[s, held_out()], Metric::WallTime, 0.01);
            assert_eq!(d.verdict, Verdict::Rejected, "{:?}", d.reasons);
            assert!(
                d.reasons.iter().any(|r| r == "computed otherwise"),
                "{:?}",
                d.reasons
            );
        }
    }
}
