//! The later sections of the PR text: search against confirmation, the build-configuration lane,
//! how to reproduce, limitations and the sandbox. Split from `pr_context`, which assembles them.

use std::path::Path;

use super::markdown::{Markdown, code, inline, prose, visible};
use super::pr_context::{NoiseInfo, ReceiptRef, Reproduce, ci_text, first_line, training};
use crate::evidence::result::{ConfirmResult, Role, TreeLabel, Verdict};
use crate::path::{relative_to, shell_word};

/// The search's figures beside the confirmation's; `None` without a search (the section would
/// only say there was none).
pub(super) fn search(r: &ConfirmResult) -> Option<Markdown> {
    let s = r.evidence.search.as_ref()?;
    let confirmation = training(r)
        .next()
        .map(|(s, f)| {
            format!(
                "estimate {:.3}× over {} pairs ({})",
                f.median,
                s.pairs.len(),
                ci_text(f.ci95)
            )
        })
        .unwrap_or_else(|| "not measured".to_string());
    Some(Markdown::assembled(format!(
        "Search (screening, {}): median {:.3}× over {} pairs ({}). Confirmation: \
             {confirmation}. Screening only ranks candidates; the fresh confirmation decides.",
        code(&s.scenario),
        s.median,
        s.pairs,
        ci_text(s.ci95)
    )))
}

/// What the configuration lane found; `None` when the patch changes no build configuration (the
/// section would only say the lane had nothing to do).
pub(super) fn config_lane(r: &ConfirmResult) -> Option<Markdown> {
    let lane = &r.evidence.config_lane;
    if !lane.ran && lane.files.is_empty() {
        return None;
    }
    if !lane.ran {
        let why = if lane.reason.is_empty() {
            "no reason was recorded".to_string()
        } else {
            prose(&lane.reason)
        };
        return Some(Markdown::assembled(format!(
            "The build-configuration lane did not run ({why}), so the gain is not split into a \
             configuration part and a code part."
        )));
    }
    let ci = lane
        .ci95
        .map_or_else(|| "no interval".to_string(), |c| c.text(3));
    let share = lane.configuration_share.map_or_else(String::new, |s| {
        format!(
            " The configuration alone gives about {:.0}% of the whole patch's gain (on a log \
             scale); the code change gives the rest.",
            100.0 * s
        )
    });
    Some(Markdown::assembled(format!(
        "The patch changes build configuration ({}). Baseline + configuration only, measured \
         against the baseline on {}: {:.3}× (estimate over {} pairs; {ci}).{share}",
        inline(&lane.files.join(", ")),
        code(lane.scenario.as_deref().unwrap_or("?")),
        lane.median.unwrap_or(f64::NAN),
        lane.pairs.len()
    )))
}

pub(super) fn step_lines(r: &ConfirmResult) -> Vec<String> {
    let mut lines = Vec::new();
    let public = |s: &&crate::evidence::result::StepRecord| {
        s.tree == TreeLabel::Candidate && s.command != crate::receipt::SEALED
    };
    for step in r.evidence.steps.iter().filter(public) {
        let line = if step.cwd == "." || step.cwd.is_empty() {
            format!("{}   # {}", step.command, step.step)
        } else {
            format!("(cd {} && {})   # {}", step.cwd, step.command, step.step)
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// How the commands of "How to reproduce" name the run directory.
const RUN: &str = "\"$RUN/";

/// The campaign file as a reviewer can name it: from the repository's top folder when it is
/// inside the repository, else by its file name with a note (never a path of the author's
/// machine).
fn campaign_arg(r: &ConfirmResult) -> String {
    let file = Path::new(&r.evidence.campaign_file);
    match relative_to(file, Path::new(&r.evidence.repo)) {
        Some(inside) => shell_word(&inside),
        None => {
            let name = file.file_name().map_or_else(
                || "campaign.json".to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            let word = shell_word(Path::new(&name));
            format!("{word}   # {word} is not in the repository: ask for the author's copy")
        }
    }
}

pub(super) fn reproduce(r: &ConfirmResult, receipt: &ReceiptRef) -> Reproduce {
    let patch = format!("{RUN}{}\"", r.evidence.patch.file);
    let mut manual = vec![
        "# from the top folder of a clean clone of the repository".to_string(),
        format!("git checkout --detach {}", r.evidence.baseline_sha),
        format!("git apply {patch}   # sha256 {}", r.evidence.patch.sha256),
    ];
    manual.extend(step_lines(r));
    for s in r
        .evidence
        .scenarios
        .iter()
        .filter(|s| s.role == Role::Training)
    {
        // A runnable command: `{seed}` filled with the seed of the scenario's first pair (each
        // pair had its own), not left for the reader to fill.
        let seed = s.pairs.first().and_then(|p| p.seed);
        let (command, seeded) = match seed {
            Some(seed) if crate::check::has_seed(&s.candidate_command) => (
                crate::check::fill_seed(&s.candidate_command, seed),
                " on its first pair's seed (each pair had its own)",
            ),
            _ => (s.candidate_command.clone(), ""),
        };
        let line = if s.cwd == "." || s.cwd.is_empty() {
            command
        } else {
            format!("(cd {} && {command})", s.cwd)
        };
        manual.push(format!("{line}   # timed run of `{}`{seeded}", s.name));
    }
    let harness_warning = (!r.evidence.overlay.is_empty()).then(|| {
        let files: Vec<String> = r
            .evidence
            .overlay
            .iter()
            .map(|o| format!("{} (sha256 {})", code(&o.path), inline(&o.sha256)))
            .collect();
        Markdown::assembled(format!(
            "The harness is not in the repository: evo copied {} into every tree from outside it, \
             so a reviewer needs these files to reproduce the figures.",
            files.join(", ")
        ))
    });
    let mut evo = vec![
        format!(
            "RUN=path/to/{}   # the run directory: this file, {}, {}",
            r.evidence.run_id, receipt.file, r.evidence.patch.file
        ),
        "# --patch: the patch under review; the receipt must be about exactly these bytes"
            .to_string(),
        format!(
            "evo receipt verify {RUN}{}\" {} --patch {patch} --recompute",
            receipt.file,
            super::wording::require_flags(r.verdict, r.tier)
        ),
        "# from the top folder of the repository".to_string(),
        format!("evo confirm {patch} --campaign {}", campaign_arg(r)),
    ];
    evo.extend(input_lines(r));
    Reproduce {
        manual,
        evo,
        harness_warning,
    }
}

/// The `sandbox.read_only` inputs the runs read, each with its digest, so a reviewer can tell
/// whether theirs is the one that was timed.
fn input_lines(r: &ConfirmResult) -> Vec<String> {
    if r.evidence.read_only_inputs.is_empty() {
        return Vec::new();
    }
    let mut lines =
        vec!["# the runs read these sandbox.read_only folders; yours must digest the same:".into()];
    for i in &r.evidence.read_only_inputs {
        lines.push(format!(
            "#   {}  {} ({} files, {} bytes)",
            visible(&i.path),
            i.sha256,
            i.files,
            i.bytes
        ));
    }
    lines
}

pub(super) fn limitations(r: &ConfirmResult, noise: &NoiseInfo) -> Vec<Markdown> {
    let n = r.evidence.candidates_tried;
    let lineage = (r.evidence.search.as_ref())
        .and_then(|s| s.lineage.as_ref())
        .filter(|l| l.agent_runs > 0 || l.rounds > 1);
    let over = lineage.map_or_else(String::new, |l| {
        format!(
            " over {} ({})",
            plural(l.rounds, "round"),
            plural(l.agent_runs, "agent run")
        )
    });
    // Choosing one of several is a limitation; a lone patch was not chosen from anything.
    let mut out: Vec<String> = (n > 1)
        .then(|| {
            format!(
                "{n} candidates were tried{over}; the intervals above do not correct for choosing \
                 one of them. The fresh confirmation (new checkouts, clean builds, a fresh seed, \
                 new pairs) is the guard."
            )
        })
        .into_iter()
        .collect();
    // A patch that was not accepted has its reasons in "Why it was rejected" (pr_summary).
    if r.verdict == Verdict::Accepted {
        out.extend(r.reasons.iter().map(|reason| first_line(reason)));
    }
    out.extend(noise.warnings.iter().cloned());
    if !r.evidence.sandbox.enabled {
        out.push(
            "The runs were not sandboxed: nothing kept a candidate off the network or away from \
             the other arm's tree and outputs, or from the signing key and the holdouts."
                .to_string(),
        );
    }
    if !r.evidence.metric.is_wall_time() {
        out.push(
            "The campaign decides on instructions (the deterministic lane), not wall time: \
             instructions are not time, and a change in memory traffic, cache behaviour or \
             parallelism may not show in them. The counts are written inside the candidate's \
             sandbox, so a hostile candidate could forge its own; they guard against honest \
             mistakes, not an attacker. The wall-time figures above are reported, and a \
             wall-time slowdown still rejects."
                .to_string(),
        );
    }
    out.push(
        "All figures come from one machine (see Environment); other hardware may differ."
            .to_string(),
    );
    // Reasons quote gate details, which quote the candidate's output.
    let mut lines: Vec<Markdown> = out.iter().map(|l| Markdown::assembled(prose(l))).collect();
    if let Some(l) = lineage {
        lines.insert(1, origin(l));
    }
    lines
}

/// "This candidate, `agent-7`, came from round 3 and was built on `agent-4` (round 2), which
/// was built on `agent-1` (round 1)." Names are quoted as code: a patch's name is the user's.
fn origin(l: &crate::evidence::result::Lineage) -> Markdown {
    let built_on = match l.ancestors.as_slice() {
        [] => "was built on no earlier candidate".to_string(),
        chain => {
            let each: Vec<String> = (chain.iter())
                .map(|a| format!("{} (round {})", name(&a.name), a.round))
                .collect();
            format!("was built on {}", each.join(", which was built on "))
        }
    };
    Markdown::assembled(format!(
        "This candidate, {}, came from round {} and {built_on}.",
        name(&l.name),
        l.round
    ))
}

/// A candidate's name as code, cut at 100 characters: names are short, and a long one would
/// crowd the sentence out.
fn name(n: &str) -> String {
    const CAP: usize = 100;
    let short: String = n.chars().take(CAP).collect();
    let cut = if n.chars().count() > CAP { "…" } else { "" };
    format!("{}{cut}", code(&short))
}

/// "1 round", "3 rounds".
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

pub(super) fn sandbox_text(s: &crate::measure::sandbox::SandboxRecord) -> Markdown {
    Markdown::assembled(match (&s.tool, s.enabled) {
        (Some(tool), true) => format!("on ({}): {}.", inline(tool), prose(&s.detail)),
        _ => format!("off: {}.", prose(s.detail.trim_start_matches("off: "))),
    })
}
