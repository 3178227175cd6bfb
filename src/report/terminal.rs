//! The human-readable summaries `evo bench`, `evo confirm` and `evo campaign run` print.
//!
//! The summaries of `evo confirm` and `evo campaign run` quote a candidate's output and names;
//! their control characters are shown (`␍`, `␛`), never sent to the terminal.

use std::fmt::Write;
use std::path::Path;

use super::markdown::visible;
use crate::evidence::figures::{BenchReport, Figures};
use crate::measure::record::Order;
use crate::measure::schedule::PairsPlanned;
use crate::path::{shell_word, shown};
use crate::receipt::keys::{PUBLIC_KEY_FILE, SIGNING_KEY_ENV, VerifyWith};

fn pct(fraction: f64) -> String {
    format!("{:.1}%", 100.0 * fraction)
}

/// Seconds under 90 as seconds, longer spans in minutes (the evidence's own wording).
fn duration(seconds: f64) -> String {
    crate::evidence::figures::span(seconds)
}

/// The announcement of the comparison's pair count, printed before its first run (a training
/// scenario's cap, or a holdout's, planned from the training A/A noise). A training comparison's
/// says what this machine can resolve within its cap.
pub fn pairs_planned_line(p: &PairsPlanned) -> String {
    if let (Some(gain), Some(e)) = (p.resolves_gain, p.min_effect) {
        let per_pair = p.estimated_s / p.planned.max(1) as f64;
        // Each figure at σ, with what the A/A pairs' own uncertainty allows beside it.
        let (sigma_range, gain_range, needed_range) = match &p.ranges {
            Some(r) => (
                format!(
                    ", {:.2}–{:.2}% at 80% confidence from {} A/A pairs",
                    100.0 * r.sigma[0],
                    100.0 * r.sigma[1],
                    r.aa_pairs
                ),
                Some((pct(r.gain[0]), pct(r.gain[1])))
                    .filter(|(lo, hi)| lo != hi)
                    .map(|(lo, hi)| format!(" ({lo}–{hi})"))
                    .unwrap_or_default(),
                Some(r.needed)
                    .filter(|[lo, hi]| lo != hi)
                    .map(|[lo, hi]| format!("; {lo}–{hi} pairs over that range"))
                    .unwrap_or_default(),
            ),
            None => Default::default(),
        };
        let null = if p.needed <= p.planned {
            format!(
                "a null is ruled out at the {} minimum effect after about {} pairs ({}{needed_range})",
                pct(e),
                p.needed,
                duration(p.needed as f64 * per_pair)
            )
        } else {
            format!(
                "a null needs about {} pairs ({}{needed_range}) to be ruled out at the {} \
                 minimum effect, more than the cap",
                p.needed,
                duration(p.needed_s),
                pct(e)
            )
        };
        return format!(
            "comparison: up to {} pairs, stopping at the first look that decides (A/A noise σ \
             {:.2}% per pair{sigma_range}); at that σ this machine resolves a gain of at least \
             {}{gain_range} in {} of runs, 80% of the time; {null}",
            p.planned,
            100.0 * p.sigma,
            pct(gain),
            duration(p.estimated_s)
        );
    }
    let head = format!(
        "holdout: up to {} pairs (about {} of runs), stopping at the first look whose gate \
         decides (training A/A noise σ {:.2}% per pair)",
        p.planned,
        duration(p.estimated_s),
        100.0 * p.sigma
    );
    if p.needed <= p.planned {
        head
    } else {
        format!(
            "{head}; the cap stops short of the {} pairs (about {}) that would resolve it (a \
             holdout's 1% tolerance)",
            p.needed,
            duration(p.needed_s)
        )
    }
}

/// Where the sequential rule stopped, against the cap and what the cap could resolve.
pub(super) fn plan_sentence(f: &Figures) -> Option<String> {
    let p = f.plan.as_ref()?;
    let decided = match f.decision() {
        Some(d) if d != crate::stats::Decision::Undecided => {
            format!("decided at {} pairs: {}", p.reached_pairs, d.as_str())
        }
        _ => format!("undecided at the cap of {} pairs", p.reached_pairs),
    };
    Some(format!(
        "{decided} (first look {}, cap {}); the cap {}",
        p.pairs,
        p.planned,
        p.resolution()
    ))
}

/// The looks of the sequential rule: their pair counts and the one the run stopped at.
pub fn looks_detail(f: &Figures) -> String {
    let Some(seq) = &f.sequential else {
        return "none recorded".to_string();
    };
    let counts: Vec<String> = seq.looks.iter().map(|l| l.pairs.to_string()).collect();
    let stop = match seq.stop {
        Some(s) => format!(
            "stopped at look {} ({} pairs): {}",
            s.look + 1,
            s.pairs,
            s.decision.as_str()
        ),
        None => "no look decided".to_string(),
    };
    format!(
        "at {} pairs (2.5% error per side spent over them); {stop}",
        counts.join(", ")
    )
}

/// The noise-floor sentence in the wording the PR text uses: the A/A figure and where it came
/// from.
pub fn noise_floor_sentence(report: &BenchReport) -> String {
    let f = &report.figures;
    let floor = super::wording::NoiseFloor::of(f);
    format!(
        "±{:.2}% at {} pairs ({})",
        floor.pct,
        floor.pairs,
        super::wording::noise_source(f, false, false)
    )
}

/// The A/A check in one line: its median, its interval and whether that interval contains 1.
pub fn aa_check(f: &crate::evidence::figures::Figures) -> String {
    match f.aa.ci95 {
        Some(ci) => format!(
            "median {:.4}×, {} ({})",
            f.aa.median,
            ci.text(4),
            if f.training_gate.aa_valid {
                "contains 1: valid"
            } else {
                "excludes 1: biased"
            }
        ),
        None => format!("median {:.4}×, too few pairs to check", f.aa.median),
    }
}

/// The summary table plus warnings, as printed to stdout.
pub fn render_bench(report: &BenchReport) -> String {
    let f = &report.figures;
    let s = &report.settings;
    let first = match (s.order_seed, s.first) {
        (Some(_), _) => "balanced random",
        (None, Order::CandidateFirst) => "candidate first",
        (None, Order::BaselineFirst) => "baseline first",
    };
    let mut out = String::new();
    let _ = writeln!(out, "baseline:  {}", report.baseline_command);
    let _ = writeln!(out, "candidate: {}", report.candidate_command);
    let _ = writeln!(out);
    let row = |out: &mut String, k: &str, v: String| {
        let _ = writeln!(out, "  {k:<22}{v}");
    };
    row(
        &mut out,
        "pairs",
        format!("{} ({first}, alternating)", report.pairs.len()),
    );
    row(
        &mut out,
        "speedup",
        format!("{:.4}× (Hodges–Lehmann estimate)", f.median),
    );
    let walsh = report.pairs.len() * (report.pairs.len() + 1) / 2;
    let ci = match f.ci95 {
        Some(ci) => format!(
            "{:.4}–{:.4}× (w({}) to w({}) of {walsh} pairwise means, coverage {:.1}%)",
            ci.lower,
            ci.upper,
            ci.k,
            (walsh + 1).saturating_sub(ci.k),
            100.0 * ci.coverage
        ),
        None => "not available at this look".to_string(),
    };
    row(&mut out, "interval", ci);
    row(
        &mut out,
        "CoV base / cand",
        format!("{} / {}", pct(f.cov.baseline), pct(f.cov.candidate)),
    );
    row(&mut out, "noise floor", noise_floor_sentence(report));
    if let Some(plan) = plan_sentence(f) {
        row(&mut out, "pair count", plan);
    }
    row(&mut out, "A/A check", aa_check(f));
    row(&mut out, "looks", looks_detail(f));
    row(
        &mut out,
        "rule",
        format!(
            "accepted when the interval's lower bound is above 1 and the estimate at least {:.4}×; \
             no real gain when its upper bound is below {:.4}× (min effect {})",
            1.0 + s.min_effect,
            1.0 + s.min_effect,
            pct(s.min_effect)
        ),
    );
    row(&mut out, "verdict", f.verdict.as_str().to_string());
    if !report.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in &report.warnings {
            let _ = writeln!(out, "  - {w}");
        }
    }
    out
}

/// The summary `evo confirm` prints: gates, what each arm of each scenario took, the verdict,
/// where the evidence is; `verbose` adds the statistics behind each scenario's verdict.
pub fn render_confirm(
    r: &crate::evidence::result::ConfirmResult,
    run_dir: &std::path::Path,
    verbose: bool,
) -> String {
    use crate::evidence::result::GateStatus;
    let mut out = String::new();
    let _ = writeln!(out, "baseline:  {}", super::wording::baseline_line(r));
    let _ = writeln!(out, "candidate: {}", visible(&r.evidence.patch.source));
    let sandbox = match (&r.evidence.sandbox.tool, r.evidence.sandbox.enabled) {
        (Some(tool), true) => format!(
            "on ({tool}: unprivileged, no network, own PID namespace, only the system, \
             toolchains and its tree visible)"
        ),
        _ => r.evidence.sandbox.detail.clone(),
    };
    let _ = writeln!(out, "sandbox:   {sandbox}");
    let _ = writeln!(out);
    for g in &r.evidence.gates {
        let mark = match g.status {
            GateStatus::Passed => "ok  ",
            GateStatus::Failed => "FAIL",
            GateStatus::Skipped => "skip",
        };
        let mut lines = g.detail.lines();
        let _ = writeln!(
            out,
            "  [{mark}] {:<19}{}",
            g.name,
            visible(lines.next().unwrap_or_default())
        );
        if g.status == GateStatus::Failed {
            for l in lines.take(40) {
                let _ = writeln!(out, "         {:<19}{}", "", visible(l));
            }
        }
    }
    for s in &r.evidence.scenarios {
        out.push_str(&super::scenario_summary::render_scenario(
            s, r.verdict, verbose,
        ));
    }
    let _ = writeln!(
        out,
        "\nverdict: {}",
        super::wording::standing(r.verdict, r.tier)
    );
    if !r.evidence.metric.is_wall_time() {
        let _ = writeln!(
            out,
            "  decided on instructions (confirm.metric): instructions are not time; a change in \
             memory traffic or parallelism may not show in them"
        );
    }
    for reason in &r.reasons {
        // The first lines carry the gist (a sanitizer names itself on one line, its report on the
        // next); the full text is in result.json and the gate above.
        let mut lines = reason.lines().filter(|l| !l.trim().is_empty());
        let _ = writeln!(out, "  - {}", visible(lines.next().unwrap_or_default()));
        for l in lines.take(2) {
            let _ = writeln!(out, "    {}", visible(l));
        }
    }
    if !r.evidence.sandbox.enabled {
        let _ = writeln!(
            out,
            "warning: the runs were NOT sandboxed; this verdict does not hold against a hostile \
             candidate"
        );
    }
    if let Some(warning) = r.evidence.environment.load_warning() {
        let _ = writeln!(out, "warning: {warning}");
    }
    // The same warnings `evo bench` prints (biased A/A, too few pairs, underpowered), derived
    // from each training scenario's figures as the PR text does.
    for s in &r.evidence.scenarios {
        if let Some(f) = &s.training {
            for warning in crate::evidence::figures::figure_warnings(f, s.pairs.len()) {
                let _ = writeln!(out, "warning ({}): {warning}", visible(&s.name));
            }
        }
    }
    let _ = writeln!(out, "evidence: {}", shown(run_dir));
    out
}

/// The end-of-campaign table: every candidate with its status, reason and figures.
pub fn render_campaign(s: &crate::evidence::summary::Summary, run_dir: &std::path::Path) -> String {
    let mut out = String::new();
    // A search of several rounds says each candidate's round and the one it was built on.
    let rounds = s.rows.iter().any(|r| r.round > 1 || r.parent.is_some());
    let names: Vec<String> = (s.rows.iter())
        .map(|r| match (rounds, r.parent) {
            (false, _) => r.name.clone(),
            (true, None) => format!("{} (round {})", r.name, r.round),
            (true, Some(p)) => format!("{} (round {}, on #{p})", r.name, r.round),
        })
        .collect();
    // Columns as wide as their longest entry, so long names keep the table straight.
    let name_w = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(9);
    let status_w = s
        .rows
        .iter()
        .map(|r| r.status.as_str().len())
        .max()
        .unwrap_or(0)
        .max(6);
    let _ = writeln!(
        out,
        "{:>3}  {:<name_w$}  {:<status_w$}  {:>9}  {:>16}  reason",
        "#", "candidate", "status", "screening", "confirmed"
    );
    for (r, name) in s.rows.iter().zip(&names) {
        let screening = r
            .screening_median
            .map_or_else(|| "–".to_string(), |m| format!("{m:.3}×"));
        // The confirmed figure beside its tier: the screening column alone could be read as
        // confirmed.
        // Only an accepted confirmation reached a tier: "0.998× rejected" beside the status
        // `inconclusive` read as a contradiction.
        let tier = super::wording::tier_reached(r.confirmation_verdict, r.confirmation_tier);
        let confirmed = match (tier, r.confirmation_median) {
            (Some(tier), Some(m)) => format!("{m:.3}× {tier}"),
            (Some(tier), None) => tier.to_string(),
            (None, Some(m)) if r.confirmation_tier.is_some() => format!("{m:.3}×"),
            (None, _) => "–".to_string(),
        };
        let reason = r.reason.lines().next().unwrap_or_default();
        let reason = visible(&reason.chars().take(100).collect::<String>());
        let _ = writeln!(
            out,
            "{:>3}  {:<name_w$}  {:<status_w$}  {:>9}  {:>16}  {reason}",
            r.index,
            name,
            r.status.as_str(),
            screening,
            confirmed
        );
    }
    for r in s
        .rows
        .iter()
        .filter(|r| !r.discarded_confirmations.is_empty())
    {
        let _ = writeln!(
            out,
            "candidate {}: {} interrupted confirmation(s) discarded and redone (logs in {})",
            r.index,
            r.discarded_confirmations.len(),
            r.discarded_confirmations.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "\n{} candidate(s) tried; {:.0} s building {}and {:.0} s of timed runs in the search, {:.0} \
         s in all.",
        s.candidates_tried,
        s.build_s,
        match s.screened_in_jobs {
            0 => String::new(),
            n => format!("here ({n} screened in Slurm jobs, built on their nodes) "),
        },
        s.screening_run_s,
        s.total_s
    );
    if let Some(cost) = s.cost_total {
        let _ = writeln!(
            out,
            "the agent runs reported a cost of {} in all.",
            crate::search::budget::amount(cost)
        );
    }
    if let Some(why) = &s.search_ended {
        let _ = writeln!(out, "the search ended early: {}", visible(why));
    }
    match s
        .accepted
        .and_then(|i| s.rows.iter().find(|r| r.index == i))
    {
        Some(r) => {
            let _ = writeln!(
                out,
                "accepted: candidate {} ({}), tier {}; evidence in {}",
                r.index,
                r.name,
                r.confirmation_tier.map_or("?", |t| t.as_str()),
                shown(&run_dir.join(r.confirmation_run_dir.as_deref().unwrap_or("")))
            );
        }
        None => {
            let _ = writeln!(
                out,
                "no candidate was accepted; run directory {}",
                shown(run_dir)
            );
        }
    }
    out
}

/// What the receipt claims, for the verify command to require: its verdict and tier, and the
/// patch file it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub verdict: crate::evidence::result::Verdict,
    pub tier: crate::stats::Tier,
    pub patch: std::path::PathBuf,
}

/// The commands that check and render the receipt evo just wrote, ready to paste, with the key
/// `--key` must name when verification would not find the signing key by itself; with a
/// `claim`, the verification requires its verdict and tier and that the receipt is about its
/// patch.
pub fn next_commands(receipt: &Path, key: &VerifyWith, claim: Option<&Claim>) -> String {
    let receipt = shell_word(receipt);
    let flag = match key {
        VerifyWith::Found => String::new(),
        VerifyWith::File(file) => format!(" --key {}", shell_word(file)),
        VerifyWith::PublicKeyOf(_) => format!(" --key {PUBLIC_KEY_FILE}"),
    };
    let bound = claim.map_or_else(String::new, |c| {
        format!(
            " {} --patch {}",
            super::wording::require_flags(c.verdict, c.tier),
            shell_word(&c.patch)
        )
    });
    let mut out = format!(
        "next:\n  evo receipt verify {receipt}{flag}{bound} --recompute\n  evo pr render {receipt}{flag} > pr.md\n"
    );
    if let VerifyWith::PublicKeyOf(id) = key {
        let _ = writeln!(
            out,
            "  ({PUBLIC_KEY_FILE}: the public key of {id}, the pair of the private key in \
             ${SIGNING_KEY_ENV})"
        );
    }
    out
}

/// What `evo init` wrote and what comes next.
pub fn render_init(done: &crate::scaffold::Initialized) -> String {
    use crate::scaffold::{CAMPAIGN_FILE, HOLDOUTS_FILE, OUTPUT_DIR, WORKLOAD_FILE};
    let mut out = String::new();
    let _ = writeln!(
        out,
        "evo init: {} at {}",
        done.kind.describe(),
        shown(&done.root)
    );
    let _ = writeln!(
        out,
        "baseline: {} (the commit checked out, pinned){}",
        done.baseline,
        if done.dirty {
            "; your uncommitted changes are not part of it"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "wrote:");
    for (file, what) in [
        (
            CAMPAIGN_FILE,
            "the campaign; evo confirm reads it from the repository root",
        ),
        (
            WORKLOAD_FILE,
            "how to build, test, check and time the program",
        ),
        (HOLDOUTS_FILE, "sealed holdout scenarios, empty for now"),
    ] {
        let _ = writeln!(out, "  {file:<18} {what}");
    }
    let _ = writeln!(
        out,
        "each file's \"$comment\" says what its fields mean and what to edit"
    );
    if !done.todo.is_empty() {
        let _ = writeln!(out, "to do:");
        for item in &done.todo {
            let _ = writeln!(out, "  - {item}");
        }
    }
    if done.output_not_ignored {
        let _ = writeln!(
            out,
            "hint: receipts go to {OUTPUT_DIR}: add `.evo/` to .gitignore"
        );
    }
    let _ = writeln!(
        out,
        "a candidate is a patch against the baseline (`git diff > my.patch`); run evo confirm \
         at the repository root"
    );
    let _ = writeln!(out, "next:\n  evo confirm <patch>");
    out
}

/// The deterministic lane's figure for scenario `s` in one line, with its caveat, what was
/// counted when it was not the timed command, and the wall time's resolution when the
/// wall-time comparison could not resolve the minimum effect; `None` without the lane.
pub fn instructions_sentence(s: &crate::evidence::result::ScenarioResult) -> Option<String> {
    let i = s.instructions.as_ref()?;
    let runs = match &i.command {
        Some(command) => format!(
            "one run per arm of the shorter `{}`, not the timed command",
            visible(command)
        ),
        None => "one run per arm".to_string(),
    };
    let mut line = match (i.baseline, i.candidate, i.change_pct) {
        (Some(b), Some(c), Some(pct)) => format!(
            "instructions {pct:+.2}% (callgrind, {runs}: {b} → {c}; exact, but instructions \
             are not time)"
        ),
        _ => format!(
            "instructions not counted: {}",
            visible(i.note.as_deref().unwrap_or("no count"))
        ),
    };
    if s.training
        .as_ref()
        .is_some_and(|f| !f.training_gate.resolved)
    {
        line.push_str(&format!(
            "; wall time undecided at the cap of {} pairs",
            s.pairs.len()
        ));
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_campaign_table_shows_the_run_directory_without_dot_dot() {
        let summary = crate::evidence::summary::Summary {
            run_id: "r1".into(),
            candidates_tried: 0,
            rows: Vec::new(),
            build_s: 0.0,
            screened_in_jobs: 0,
            screening_run_s: 0.0,
            total_s: 0.0,
            search_ended: None,
            cost_total: None,
            accepted: None,
        };
        let text = render_campaign(
            &summary,
            std::path::Path::new("/w/campaigns/../receipts/r1"),
        );
        assert!(text.contains("run directory /w/receipts/r1\n"), "{text}");
        assert!(
            text.contains("0 s building and 0 s of timed runs"),
            "{text}"
        );
        let fleet = crate::evidence::summary::Summary {
            screened_in_jobs: 3,
            ..summary
        };
        let text = render_campaign(&fleet, std::path::Path::new("/w/receipts/r1"));
        assert!(
            text.contains("0 s building here (3 screened in Slurm jobs, built on their nodes) and"),
            "{text}"
        );
    }

    #[test]
    fn an_inconclusive_confirmation_is_not_shown_beside_the_tier_rejected() {
        use crate::evidence::result::Verdict;
        use crate::evidence::summary::{Row, Status, Summary};
        use crate::stats::Tier;
        let row = |index, status, verdict, tier| Row {
            status,
            confirmation_run_dir: Some(format!("confirmations/{index}")),
            confirmation_verdict: Some(verdict),
            confirmation_tier: Some(tier),
            confirmation_median: Some(0.998),
            ..Row::screened_for_test(index)
        };
        let summary = Summary {
            run_id: "r1".into(),
            candidates_tried: 2,
            rows: vec![
                row(
                    1,
                    Status::Inconclusive,
                    Verdict::Inconclusive,
                    Tier::Rejected,
                ),
                row(2, Status::Confirmed, Verdict::Accepted, Tier::Measured),
            ],
            build_s: 0.0,
            screened_in_jobs: 0,
            screening_run_s: 0.0,
            total_s: 0.0,
            search_ended: None,
            cost_total: None,
            accepted: Some(2),
        };
        let text = render_campaign(&summary, Path::new("/w/receipts/r1"));
        assert!(!text.contains("0.998× rejected"), "{text}");
        assert!(text.contains("0.998× measured"), "{text}");
    }

    #[test]
    fn the_next_commands_name_the_receipt_and_only_a_key_verification_would_not_find() {
        let receipt = Path::new("/w/c/../receipts/r 1/validation_receipt.json");
        let text = next_commands(receipt, &VerifyWith::Found, None);
        assert!(
            text.contains(
                "\n  evo receipt verify '/w/receipts/r 1/validation_receipt.json' --recompute\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("\n  evo pr render '/w/receipts/r 1/validation_receipt.json' > pr.md\n"),
            "{text}"
        );
        let text = next_commands(receipt, &VerifyWith::File("/k/team.key".into()), None);
        assert!(text.contains("' --key /k/team.key --recompute\n"), "{text}");
        assert!(text.contains("' --key /k/team.key > pr.md\n"), "{text}");
    }

    #[test]
    fn a_key_from_the_environment_is_verified_with_its_public_key_named_by_id() {
        let receipt = Path::new("/w/receipts/r1/validation_receipt.json");
        let text = next_commands(
            receipt,
            &VerifyWith::PublicKeyOf("sha256:ab12".into()),
            None,
        );
        assert!(
            text.contains(" --key signing.pub.pem --recompute\n")
                && text.contains("the public key of sha256:ab12")
                && text.contains("$EVO_SIGNING_KEY"),
            "{text}"
        );
    }
}
