//! What the PR template sees: the predicate as is (`result`) plus every sentence and table row of
//! the PR text (docs/design.md §5.11) already worded, so the default template is mostly layout and
//! an edited template can still reach any raw figure.
//!
//! Built from the *sealed* predicate, never from the unsealed result, so `evo pr render` on a
//! receipt gives byte for byte the `pr_body.md` that `evo confirm` wrote.
//!
//! Much of the predicate comes from the candidate: its file names, its explanation, its programs'
//! output in gate details and differential summaries. A field typed [`Markdown`] is a sentence evo
//! assembled with every such string escaped; a `String` field is printed escaped by the template
//! (see `pr_body`), so neither can add markup to the PR text.

use serde::Serialize;

use super::markdown::{Markdown, code, inline, prose};
use super::pr_checks::{Checks, checks};
use super::pr_sections::{config_lane, limitations, reproduce, sandbox_text, search};
use super::pr_summary::{Overview, Why, overview, tier_sentence, why};
use super::scenario_summary::interval_ranks;
use crate::evidence::figures::{self, ArmCov, Figures};
use crate::evidence::result::{ConfirmResult, GateStatus, Role, ScenarioResult, Verdict};
use crate::stats::Ci95;

/// The receipt the PR text points to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReceiptRef {
    /// The receipt's file name, as a reader would pass it to `evo receipt verify`.
    pub file: String,
    pub sha256: String,
    pub key_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileRow {
    pub path: String,
    pub status: String,
    pub added: usize,
    pub removed: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub files: Vec<FileRow>,
    pub files_changed: usize,
    pub added: usize,
    pub removed: usize,
    pub patch_sha256: String,
    pub baseline: String,
    pub baseline_sha: String,
    pub verdict: String,
    pub tier: String,
    /// The verdict with the tier only where one was reached: "**accepted**, tier **measured**",
    /// "**inconclusive** (no tier reached)".
    pub standing: Markdown,
    /// The baseline's name when it is not its commit (`main`); `None` when the campaign named
    /// the commit itself, so it is printed once.
    pub baseline_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainingScenario {
    pub name: String,
    /// The timed command as run (seed filled in).
    pub command: String,
    /// The differential rule (`exact`, tolerance ...), when its check ran.
    pub rule: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadInfo {
    pub name: String,
    pub digest: String,
    pub training: Vec<TrainingScenario>,
    pub seed: u64,
    /// The holdouts ran with a seed of their own, which the receipt seals.
    pub holdout_seed_sealed: bool,
    pub min_effect_pct: String,
}

/// One row of the statistics table, every cell already formatted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceRow {
    pub scenario: String,
    pub role: String,
    pub pairs: usize,
    /// The median of the per-pair ratios (baseline time over candidate time).
    pub median: String,
    pub ci95: String,
    /// Which order statistics bound the interval (k) and its coverage.
    pub interval: String,
    pub cov: String,
    pub verdict: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HoldoutInfo {
    pub declared: bool,
    pub portfolio_digest: Option<String>,
    /// One sentence: what the holdouts show, or that none was declared.
    pub statement: String,
    /// `name: verdict (median)` per measured holdout.
    pub lines: Vec<Markdown>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseInfo {
    /// "Noise floor ±2.62% (A/A: baseline against itself, 11 pairs; ...)" per training scenario.
    pub sentences: Vec<Markdown>,
    pub environment: String,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reproduce {
    /// Shell lines, in order, to redo the confirmation by hand.
    pub manual: Vec<String>,
    pub evo: Vec<String>,
    /// Set when harness files come from outside the repository.
    pub harness_warning: Option<Markdown>,
}

/// Everything the template may use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrContext {
    pub result: ConfirmResult,
    pub receipt: ReceiptRef,
    pub summary: Summary,
    pub workload: WorkloadInfo,
    /// "runs 1.072× faster (estimate over 9 paired runs; 96.1% CI 1.066–1.087×)", when measured.
    pub headline: Option<String>,
    /// What the headline's figure is of: the scenario's declared description, its name and its
    /// timed command, when measured.
    pub timed: Option<Markdown>,
    /// The tier in one sentence.
    pub tier_sentence: Markdown,
    /// Per measured scenario: both arms' times, CPU time and memory, the change, the verdict.
    pub overview: Overview,
    /// The heading of the section on the author's reason and, unless accepted, the reasons.
    pub why: Why,
    /// Why nothing was measured, when nothing was.
    pub not_measured: Option<Markdown>,
    /// The author's explanation as given (raw: print it with `md_quote` or `md_fence`).
    pub reason: Option<String>,
    pub evidence: Vec<EvidenceRow>,
    pub holdouts: HoldoutInfo,
    pub checks: Checks,
    pub noise: NoiseInfo,
    /// `None` without a search.
    pub search: Option<Markdown>,
    /// `None` when the patch changes no build configuration.
    pub config_lane: Option<Markdown>,
    pub reproduce: Reproduce,
    pub limitations: Vec<Markdown>,
    /// Whether the runs were sandboxed and what that means.
    pub sandbox: Markdown,
}

pub(super) fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_string()
}

/// The interval named by its coverage ("96.1% CI 1.066–1.087×", `Ci95::text`).
pub(super) fn ci_text(ci: Option<Ci95>) -> String {
    match ci {
        Some(c) => c.text(3),
        None => "no interval: fewer than 6 pairs".to_string(),
    }
}

fn cov_text(cov: ArmCov) -> String {
    format!(
        "{:.1}% / {:.1}%",
        100.0 * cov.baseline,
        100.0 * cov.candidate
    )
}

pub(super) fn training(r: &ConfirmResult) -> impl Iterator<Item = (&ScenarioResult, &Figures)> {
    r.evidence
        .scenarios
        .iter()
        .filter_map(|s| s.training.as_ref().map(|f| (s, f)))
}

/// What the headline's figure is of, in a sentence: the whole timed command of scenario `s`,
/// with the description the workload declares, or, without one, a word that set-up is in it.
pub fn what_was_timed(s: &ScenarioResult) -> Markdown {
    let (name, command) = (code(&s.name), code(&s.candidate_command));
    Markdown::assembled(match s.description.as_deref().map(str::trim) {
        Some(d) if !d.is_empty() => format!(
            "What was timed: {} (scenario {name}, the whole command {command}).",
            inline(d)
        ),
        _ => format!(
            "What was timed: the whole command {command} of scenario {name}, set-up included \
             (the workload gives no `description` of it)."
        ),
    })
}

/// The headline of an acceptance on exact evidence (tier `counted`): the counted change, with
/// the wall time that could not decide beside it.
pub fn counted_headline(s: &ScenarioResult, f: &Figures) -> String {
    let cycles = (s.instructions.as_ref())
        .and_then(|i| i.cache.as_ref())
        .and_then(|c| c.cycles_speedup());
    let wall = format!(
        "the wall time, estimate {:.3}× over {} paired runs ({}), could not decide",
        f.median,
        s.pairs.len(),
        ci_text(f.ci95)
    );
    match cycles {
        Some(e) => format!(
            "executes {:.2}% fewer estimated cycles in a cache-simulated count of the timed \
             command ({wall})",
            100.0 * (1.0 - 1.0 / e)
        ),
        None => headline(s, f),
    }
}

/// The headline of the PR text (docs/design.md §5.11) for the first training scenario.
pub fn headline(s: &ScenarioResult, f: &Figures) -> String {
    super::wording::headline(s, f)
}

fn summary(r: &ConfirmResult) -> Summary {
    Summary {
        files: r
            .evidence
            .patch
            .files
            .iter()
            .map(|f| FileRow {
                path: f.path.clone(),
                status: f.status.clone(),
                added: f.added,
                removed: f.removed,
            })
            .collect(),
        files_changed: r.evidence.patch.files.len(),
        added: r.evidence.patch.added,
        removed: r.evidence.patch.removed,
        patch_sha256: r.evidence.patch.sha256.clone(),
        baseline: r.evidence.baseline_commitish.clone(),
        baseline_sha: r.evidence.baseline_sha.clone(),
        verdict: r.verdict.as_str().to_string(),
        tier: r.tier.as_str().to_string(),
        standing: Markdown::assembled(match r.verdict {
            Verdict::Accepted => format!("**accepted**, tier **{}**", r.tier.as_str()),
            Verdict::Rejected => "**rejected**".to_string(),
            Verdict::Inconclusive => "**inconclusive** (no tier reached)".to_string(),
        }),
        baseline_name: super::wording::baseline_named(
            &r.evidence.baseline_commitish,
            &r.evidence.baseline_sha,
        )
        .map(str::to_string),
    }
}

fn workload(r: &ConfirmResult) -> WorkloadInfo {
    WorkloadInfo {
        name: r.evidence.workload_name.clone(),
        digest: r.evidence.workload_digest.clone(),
        training: r
            .evidence
            .scenarios
            .iter()
            .filter(|s| s.role == Role::Training)
            .map(|s| TrainingScenario {
                name: s.name.clone(),
                command: s.candidate_command.clone(),
                rule: r
                    .evidence
                    .differential
                    .iter()
                    .find(|d| d.scenario == s.name)
                    .map(|d| d.rule.clone()),
            })
            .collect(),
        seed: r.evidence.seed,
        holdout_seed_sealed: r.evidence.holdout_seed.is_some(),
        min_effect_pct: format!("{}%", 100.0 * r.evidence.min_effect),
    }
}

fn evidence(r: &ConfirmResult) -> Vec<EvidenceRow> {
    r.evidence
        .scenarios
        .iter()
        .map(|s| {
            let (median, ci, interval, cov, verdict) = match (&s.training, &s.holdout) {
                (Some(f), _) => (
                    format!("{:.3}×", f.median),
                    ci_text(f.ci95),
                    interval_ranks(f.ci95, s.pairs.len()),
                    cov_text(f.cov),
                    if f.training_gate.passed {
                        "passes".to_string()
                    } else {
                        "does not pass".to_string()
                    },
                ),
                (None, Some(h)) => (
                    format!("{:.3}×", h.median),
                    ci_text(h.ci95),
                    interval_ranks(h.ci95, s.pairs.len()),
                    cov_text(h.cov),
                    h.verdict.as_str().to_string(),
                ),
                (None, None) => {
                    let none = || "–".to_string();
                    (none(), none(), none(), none(), "not measured".into())
                }
            };
            EvidenceRow {
                scenario: s.name.clone(),
                role: s.role.to_string(),
                pairs: s.pairs.len(),
                median,
                ci95: ci,
                interval,
                cov,
                verdict,
            }
        })
        .collect()
}

/// Who could have seen the holdouts: the candidate's code, and the agent only when an agent
/// command produced the candidate.
fn who(r: &ConfirmResult, joined: &str) -> String {
    match r.evidence.from_agent {
        true => format!("the agent that wrote the candidate {joined} the candidate's code"),
        false => "the candidate's code".to_string(),
    }
}

fn holdouts(r: &ConfirmResult) -> HoldoutInfo {
    let measured: Vec<&ScenarioResult> = r
        .evidence
        .scenarios
        .iter()
        .filter(|s| s.holdout.is_some())
        .collect();
    let lines: Vec<Markdown> = measured
        .iter()
        .filter_map(|s| {
            s.holdout.as_ref().map(|h| {
                let pairs = match h.plan {
                    Some(p) if p.planned > s.pairs.len() => {
                        format!(
                            "{} pairs, decided before the {} planned",
                            s.pairs.len(),
                            p.planned
                        )
                    }
                    _ => format!("{} pairs", s.pairs.len()),
                };
                Markdown::assembled(format!(
                    "{}: {} (estimate {:.3}×, {}, {pairs})",
                    code(&s.name),
                    h.verdict.as_str(),
                    h.median,
                    ci_text(h.ci95),
                ))
            })
        })
        .collect();
    let statement = match &r.evidence.holdout_portfolio_digest {
        None => "No holdout was declared, so generalization beyond the training workload is \
                 untested."
            .to_string(),
        Some(_) if measured.is_empty() => "Sealed holdouts were declared but not measured, \
             because the candidate failed an earlier gate; generalization is untested."
            .to_string(),
        Some(_) => {
            use crate::stats::HoldoutVerdict::*;
            let verdicts: Vec<_> = measured
                .iter()
                .filter_map(|s| s.holdout.as_ref().map(|h| h.verdict))
                .collect();
            let n = verdicts.len();
            if verdicts.contains(&Rejected) {
                format!(
                    "{n} sealed holdout(s) measured: at least one is significantly slower, which \
                     rejects the candidate."
                )
            } else if verdicts.iter().all(|v| *v == NoRegression)
                && !r.evidence.unsealed_holdouts.is_empty()
            {
                let places: Vec<String> = (r.evidence.unsealed_holdouts.iter())
                    .map(|u| format!("{} in {}", code(&u.scenario), code(&u.place)))
                    .collect();
                format!(
                    "{n} holdout(s) measured: no regression on any of them, but not all were \
                     sealed: something {} could read names them ({}), so the tier is capped at \
                     measured.",
                    who(r, "or"),
                    places.join(", ")
                )
            } else if verdicts.iter().all(|v| *v == NoRegression) && r.evidence.sandbox.enabled {
                format!(
                    "{n} sealed holdout(s) measured, none of which {} could see (sandboxed): no \
                     regression on any of them.",
                    who(r, "or")
                )
            } else if verdicts.iter().all(|v| *v == NoRegression) {
                format!(
                    "{n} sealed holdout(s) measured: no regression on any of them. The runs \
                     were not sandboxed, so {} could have read the holdout file.",
                    who(r, "and")
                )
            } else {
                format!(
                    "{n} sealed holdout(s) measured: at least one is inconclusive, which caps \
                     the tier at measured."
                )
            }
        }
    };
    HoldoutInfo {
        declared: r.evidence.holdout_portfolio_digest.is_some(),
        portfolio_digest: r.evidence.holdout_portfolio_digest.clone(),
        statement,
        lines,
    }
}

fn noise_sentence(s: &ScenarioResult, f: &Figures) -> Markdown {
    let aa = match (f.aa.ci95, f.training_gate.aa_valid) {
        (Some(c), true) => format!(
            "The A/A interval {:.3}–{:.3}× contains 1: the setup is unbiased.",
            c.lower, c.upper
        ),
        (Some(c), false) => format!(
            "The A/A interval {:.3}–{:.3}× excludes 1: the setup is biased, nothing is accepted \
             from this run.",
            c.lower, c.upper
        ),
        (None, _) => "Too few A/A pairs to check the setup for bias.".to_string(),
    };
    // The instruction counts are in the summary, beside the times.
    let plan = super::terminal::plan_sentence(f)
        .map_or_else(String::new, |p| format!(" Pair count: {}.", inline(&p)));
    // One figure per scenario, the A/A pairs' (the sequential rule needs none to decide).
    let floor = super::wording::NoiseFloor::of(f);
    Markdown::assembled(format!(
        "{}: Noise floor ±{:.2}% at {} pairs ({}). {aa}{plan}",
        code(&s.name),
        floor.pct,
        floor.pairs,
        super::wording::noise_source(f, s.aa_second_build, s.aa_from.is_some())
    ))
}

fn noise(r: &ConfirmResult) -> NoiseInfo {
    let m = &r.evidence.environment.machine;
    let cores = m.logical_cores;
    let load = |l: Option<f64>| {
        l.map_or_else(
            || "unknown".to_string(),
            |v| format!("{v:.2} ({})", super::wording::load_in_words(v, cores)),
        )
    };
    let environment = format!(
        "{}, {} logical cores, {:.1} GiB memory, kernel {}, {}; 1-minute load {} before and {} \
         after.",
        m.cpu_model,
        m.logical_cores,
        m.mem_total_kib as f64 / (1024.0 * 1024.0),
        m.kernel,
        m.virtualization,
        load(r.evidence.environment.load_1m_before),
        load(r.evidence.environment.load_1m_after)
    );
    let mut warnings: Vec<String> = r.evidence.environment.load_warning().into_iter().collect();
    for (s, f) in training(r) {
        warnings.extend(figures::figure_warnings(f, s.pairs.len()));
    }
    NoiseInfo {
        sentences: training(r).map(|(s, f)| noise_sentence(s, f)).collect(),
        environment,
        warnings,
    }
}

/// Builds the template context from a (sealed) predicate and its receipt.
pub fn context(r: &ConfirmResult, receipt: &ReceiptRef) -> PrContext {
    let first = training(r).next();
    let noise = noise(r);
    let not_measured = first.is_none().then(|| {
        r.evidence
            .gates
            .iter()
            .find(|g| g.status == GateStatus::Failed)
            .map_or_else(
                || "nothing was measured".to_string(),
                |g| {
                    format!(
                        "nothing was measured: the {} gate failed ({})",
                        g.name,
                        first_line(&g.detail)
                    )
                },
            )
    });
    let not_measured = not_measured.map(|text| Markdown::assembled(prose(&text)));
    PrContext {
        summary: summary(r),
        workload: workload(r),
        headline: first.map(|(s, f)| match r.tier {
            crate::stats::Tier::Counted => counted_headline(s, f),
            _ => headline(s, f),
        }),
        timed: first.map(|(s, _)| what_was_timed(s)),
        tier_sentence: tier_sentence(r),
        overview: overview(r, receipt),
        why: why(r),
        not_measured,
        reason: r
            .evidence
            .explanation
            .as_ref()
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty()),
        evidence: evidence(r),
        holdouts: holdouts(r),
        checks: checks(r),
        search: search(r),
        config_lane: config_lane(r),
        reproduce: reproduce(r, receipt),
        limitations: limitations(r, &noise),
        sandbox: sandbox_text(&r.evidence.sandbox),
        noise,
        receipt: receipt.clone(),
        result: r.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acceptance_on_exact_evidence_heads_with_the_counted_change_and_the_undecided_time() {
        use crate::evidence::figures::{BenchSettings, figures};
        use crate::evidence::result::{ArmCache, InstructionFigures};
        use crate::measure::callgrind::CacheEvents;
        use crate::measure::record::{Order, Pair, RunRecord};
        let pairs = |n: usize| -> Vec<Pair> {
            (0..n)
                .map(|i| {
                    let r = 0.9 + 0.015 * ((i * 7) % 15) as f64;
                    let (b, c) = (RunRecord::exited_ok(r), RunRecord::exited_ok(1.0));
                    Pair::new(i, Order::CandidateFirst, b, c)
                })
                .collect()
        };
        let settings = BenchSettings {
            pairs: 15,
            max_pairs: 15,
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
        let f = figures(&settings, &pairs(11), &pairs(15)).unwrap();
        let mut s = ScenarioResult::unmeasured("mix", Role::Training);
        s.pairs = pairs(15);
        let events = |instructions| CacheEvents {
            instructions,
            l1_misses: 0,
            ll_misses: 0,
        };
        let mut count = InstructionFigures::of(1000, 970);
        count.cache = Some(ArmCache {
            baseline: events(1000),
            candidate: events(970),
        });
        s.instructions = Some(count);
        let text = counted_headline(&s, &f);
        assert!(
            text.starts_with("executes 3.00% fewer estimated cycles in a cache-simulated count")
                && text.contains("could not decide"),
            "{text}"
        );
        s.instructions = None;
        assert_eq!(counted_headline(&s, &f), headline(&s, &f));
    }

    #[test]
    fn what_was_timed_gives_the_declared_description_or_says_set_up_is_in_the_figure() {
        let mut s = ScenarioResult::unmeasured("decompress", Role::Training);
        s.candidate_command = "./bench run --seed 7".into();
        let bare = what_was_timed(&s);
        assert_eq!(
            bare.as_str(),
            "What was timed: the whole command `./bench run --seed 7` of scenario `decompress`, \
             set-up included (the workload gives no `description` of it)."
        );
        s.description = Some("50 decompressions of a *1 MiB* corpus".into());
        assert_eq!(
            what_was_timed(&s).as_str(),
            "What was timed: 50 decompressions of a \\*1 MiB\\* corpus (scenario `decompress`, \
             the whole command `./bench run --seed 7`)."
        );
    }
}
