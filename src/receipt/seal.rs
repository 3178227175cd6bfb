//! Sealing the holdouts in the signed predicate.
//!
//! Holdouts are scenarios no agent may learn; the receipt is published, while `result.json` stays
//! in the local run folder. So everything a holdout is run by or produced is replaced in the
//! receipt: its commands (by [`SEALED`]), and its working directory, the stderr tails of its timed
//! runs, the summary and diff of its differential check and a sanitizer report on its check (by
//! [`seal_text`]: the marker and the sha256 of the original, which the holder of `result.json` can
//! recompute to check that both documents agree). A gate detail that quotes any of that, or names a
//! holdout, is sealed whole, and the reason repeating it follows. Names, raw numbers and figures
//! stay, so the verdict can still be recomputed from the receipt alone.

use sha2::{Digest, Sha256};

use crate::evidence::result::{
    ConfirmResult, Gate, GateName, GateStatus, Role, ScenarioResult, StepName,
};

/// What replaces a holdout's command; sealed text starts with it.
pub const SEALED: &str = "sealed holdout";

/// Lines of holdout output shorter than this are not looked for in other texts: too common to
/// prove a quote (the fields holding them are sealed anyway).
const MIN_QUOTED_LINE: usize = 8;

/// `text` as the receipt shows it: `sealed holdout (sha256:<hex of the original's UTF-8 bytes>)`.
/// Empty text stays empty: there is nothing to withhold.
pub fn seal_text(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!(
        "{SEALED} (sha256:{})",
        hex::encode(Sha256::digest(text.as_bytes()))
    )
}

/// Whether `text` is a sealed command or sealed text.
pub fn is_sealed(text: &str) -> bool {
    text == SEALED
        || text
            .strip_prefix(SEALED)
            .and_then(|rest| rest.strip_prefix(" (sha256:"))
            .and_then(|rest| rest.strip_suffix(')'))
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The holdouts of one result, by name, from every record that can name one.
struct Holdouts {
    names: Vec<String>,
}

impl Holdouts {
    fn of(r: &ConfirmResult) -> Holdouts {
        let scenarios = r.scenarios.iter().filter(|s| s.role == Role::Holdout);
        let checks = r.differential.iter().filter(|d| d.role == Role::Holdout);
        let mut names: Vec<String> = (r.holdout_names.iter().cloned())
            .chain(scenarios.map(|s| s.name.clone()))
            .chain(checks.map(|d| d.scenario.clone()))
            .collect();
        names.sort();
        names.dedup();
        Holdouts { names }
    }

    fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// `check-<holdout>`, or the baseline's re-run of it alone.
    fn own_step(&self, step: &StepName) -> bool {
        self.names.iter().any(|n| step.checks(n))
    }

    /// Whether `text` names a holdout the way evo's messages do: `` `name` `` or `` `check-name ``.
    fn named_in(&self, text: &str) -> bool {
        self.names
            .iter()
            .any(|n| text.contains(&format!("`{n}`")) || text.contains(&format!("`check-{n}")))
    }
}

/// What holdouts are run by and produced; a text containing any of it quotes a holdout.
#[derive(Default)]
struct Quotes {
    commands: Vec<String>,
    outputs: Vec<String>,
}

impl Quotes {
    fn command(&mut self, command: &str) {
        if !command.trim().is_empty() && !is_sealed(command) {
            self.commands.push(command.to_string());
        }
    }

    /// Output is quoted whole or line by line (evo re-indents quoted stderr).
    fn output(&mut self, text: &str) {
        let whole = std::iter::once(text.trim());
        for piece in whole.chain(text.lines().map(str::trim)) {
            if piece.len() >= MIN_QUOTED_LINE {
                self.outputs.push(piece.to_string());
            }
        }
    }

    fn in_text(&self, text: &str) -> bool {
        (self.commands.iter())
            .chain(&self.outputs)
            .any(|q| text.contains(q.as_str()))
    }

    /// Replaces every holdout command in `text` by [`SEALED`], longest first so a command that
    /// contains another is replaced whole.
    fn scrub_commands(&self, text: &mut String) {
        let mut commands: Vec<&String> = self.commands.iter().collect();
        commands.sort_by_key(|c| std::cmp::Reverse(c.len()));
        for command in commands {
            if text.contains(command.as_str()) {
                *text = text.replace(command.as_str(), SEALED);
            }
        }
    }
}

fn seal_in_place(text: &mut String) {
    *text = seal_text(text);
}

/// A working directory other than the tree root says something about the holdout.
fn seal_cwd(cwd: &mut String) {
    if cwd != "." {
        seal_in_place(cwd);
    }
}

fn seal_scenario(s: &mut ScenarioResult, quotes: &mut Quotes) {
    for command in [&mut s.baseline_command, &mut s.candidate_command] {
        quotes.command(command);
        *command = SEALED.to_string();
    }
    seal_cwd(&mut s.cwd);
    let pairs = s.aa_pairs.iter_mut().chain(s.pairs.iter_mut());
    let runs = (s.warmups.iter_mut().map(|w| &mut w.run))
        .chain(pairs.flat_map(|p| [&mut p.baseline, &mut p.candidate]));
    for run in runs {
        quotes.output(&run.stderr_tail);
        seal_in_place(&mut run.stderr_tail);
    }
}

/// Whether the holdouts' timed runs may have started: they run only once every training
/// scenario has passed its gate. A failed timed run is then reported without the scenario's name
/// (only its command and stderr), so it must be taken for a holdout's.
fn holdouts_may_have_run(r: &ConfirmResult, holdouts: &Holdouts) -> bool {
    let passed = |name: &str| {
        r.scenarios.iter().any(|s| {
            s.name == name && (s.training.as_ref()).is_some_and(|f| f.training_gate.passed)
        })
    };
    !holdouts.names.is_empty()
        && (r.differential.iter())
            .filter(|d| d.role == Role::Training)
            .all(|d| passed(&d.scenario))
}

/// A failed timed-output gate that names no training scenario (see [`holdouts_may_have_run`]).
fn unattributed_timed_failure(g: &Gate, r: &ConfirmResult) -> bool {
    let training = r.scenarios.iter().filter(|s| s.role == Role::Training);
    g.name == GateName::TimedOutput
        && g.status == GateStatus::Failed
        && !training
            .map(|s| format!("`{}`", s.name))
            .any(|n| g.detail.contains(&n))
}

/// A reason that repeats a gate detail, before and after sealing.
struct Resealed {
    original: String,
    sealed: String,
}

/// `r` with everything a holdout is run by or produced sealed, wherever it is quoted.
///
/// Raw runs' numbers, pairs and figures stay, so the verdict can still be recomputed.
pub fn seal_holdouts(r: &ConfirmResult) -> ConfirmResult {
    let holdouts = Holdouts::of(r);
    let mut out = r.clone();
    let mut quotes = Quotes::default();
    let scenarios = out.scenarios.iter_mut();
    for s in scenarios.filter(|s| s.role == Role::Holdout || holdouts.contains(&s.name)) {
        seal_scenario(s, &mut quotes);
    }
    for step in out.steps.iter_mut().filter(|s| holdouts.own_step(&s.step)) {
        quotes.command(&step.command);
        step.command = SEALED.to_string();
        seal_cwd(&mut step.cwd);
    }
    let checks = out.differential.iter_mut();
    for d in checks.filter(|d| d.role == Role::Holdout || holdouts.contains(&d.scenario)) {
        for text in [&mut d.summary, &mut d.diff].into_iter().flatten() {
            quotes.output(text);
            seal_in_place(text);
        }
    }
    for f in &mut out.sanitizer_findings {
        if holdouts.own_step(&f.step) {
            quotes.output(&f.excerpt);
            seal_in_place(&mut f.excerpt);
        }
    }
    for f in &mut out.sanitizer_findings {
        if !is_sealed(&f.excerpt) && quotes.in_text(&f.excerpt) {
            seal_in_place(&mut f.excerpt);
        }
    }
    let timed_runs_may_be_holdouts = holdouts_may_have_run(r, &holdouts);
    let mut resealed = Vec::new();
    for g in &mut out.gates {
        let quotes_holdout = quotes.in_text(&g.detail)
            || holdouts.named_in(&g.detail)
            || (timed_runs_may_be_holdouts && unattributed_timed_failure(g, r));
        if !quotes_holdout {
            continue;
        }
        let sealed = seal_text(&g.detail);
        if g.status == GateStatus::Failed {
            // `verdict::decide` words a failed gate's reason so; recomputing must find it again.
            resealed.push(Resealed {
                original: format!("{} failed: {}", g.name, g.detail),
                sealed: format!("{} failed: {sealed}", g.name),
            });
        }
        g.detail = sealed;
    }
    for reason in &mut out.reasons {
        match resealed.iter().find(|x| x.original == *reason) {
            Some(x) => reason.clone_from(&x.sealed),
            None => quotes.scrub_commands(reason),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::result::StepKind;

    #[test]
    fn sealed_text_carries_the_sha256_of_the_original() {
        let sealed = seal_text("abc");
        assert_eq!(
            sealed,
            "sealed holdout (sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad)"
        );
        assert!(is_sealed(&sealed) && is_sealed(SEALED));
        assert!(!is_sealed("sealed holdout (sha256:abc)"));
        assert!(!is_sealed("abc"));
        assert_eq!(seal_text(""), "");
    }

    #[test]
    fn a_holdout_step_is_its_check_or_the_check_rerun_alone() {
        let h = Holdouts {
            names: vec!["h1".into()],
        };
        assert!(h.own_step(&StepName::check("h1")));
        assert!(h.own_step(&StepName::check("h1").alone()));
        assert!(h.own_step(&"check-h1-alone".parse().unwrap()));
        assert!(!h.own_step(&StepName::check("h10")));
        assert!(!h.own_step(&StepName::new(StepKind::Test(1))));
        assert!(h.named_in("check of scenario `h1` failed"));
        assert!(h.named_in("the baseline's `check-h1` failed"));
        assert!(!h.named_in("scenario `h10`"));
    }

    #[test]
    fn quotes_are_found_whole_or_line_by_line() {
        let mut q = Quotes::default();
        q.output("first line of output\nok\n");
        q.command("./run-holdout 7");
        assert!(q.in_text("  | first line of output"));
        assert!(!q.in_text("ok"), "short lines prove nothing");
        assert!(q.in_text("`./run-holdout 7` failed"));
        let mut text = "`./run-holdout 7` failed".to_string();
        q.scrub_commands(&mut text);
        assert_eq!(text, "`sealed holdout` failed");
    }
}
