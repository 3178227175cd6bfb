//! Sealing the holdouts in the signed predicate.
//!
//! Holdouts are scenarios no agent may learn; the receipt is published, while `result.json` stays
//! in the local run folder. So everything a holdout is run by or produced is replaced in the
//! receipt: its commands (by [`SEALED`]); its working directory, the stdout digests and stderr
//! tails of its runs and check steps, the digests, summary and diff of its differential check, a
//! sanitizer report on its check, its drawn inputs' commands and the holdouts' own seed (by
//! [`seal_text`]: the marker and `HMAC-SHA256` of the original under the run's [`SealKey`],
//! which only the run folder holds, so a guess cannot be checked against the receipt, while the
//! key holder can re-derive every sealed field from `result.json`). Its runs' byte counts become
//! 0, and its drawn ranges and values are left out. A gate detail that quotes any of that, or
//! names a holdout, is sealed whole, and the reason repeating it follows. Names, wall times,
//! pairs and figures stay, so the verdict can still be recomputed from the receipt alone.

pub use super::seal_key::SealKey;
use crate::evidence::result::{
    ConfirmResult, Gate, GateName, GateStatus, HoldoutSeed, Role, ScenarioResult, StepName,
};
use crate::measure::record::RunRecord;

/// What replaces a holdout's command; sealed text starts with it.
pub const SEALED: &str = "sealed holdout";

/// Lines of holdout output shorter than this are not looked for in other texts: too common to
/// prove a quote (the fields holding them are sealed anyway).
const MIN_QUOTED_LINE: usize = 8;

/// How sealed text names its digest.
const DIGEST: &str = "hmac-sha256";

/// `text` as the receipt shows it: `sealed holdout (hmac-sha256:<hex HMAC-SHA256 under key of
/// the original's UTF-8 bytes>)`. Empty text stays empty: there is nothing to withhold.
pub fn seal_text(text: &str, key: &SealKey) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!("{SEALED} ({DIGEST}:{})", key.digest(text.as_bytes()))
}

/// Whether `text` is a sealed command or sealed text.
pub fn is_sealed(text: &str) -> bool {
    text == SEALED
        || text
            .strip_prefix(SEALED)
            .and_then(|rest| rest.strip_prefix(" ("))
            .and_then(|rest| rest.strip_prefix(DIGEST))
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|rest| rest.strip_suffix(')'))
            .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The holdouts of one result, by name, from every record that can name one.
struct Holdouts {
    names: Vec<String>,
}

impl Holdouts {
    fn of(r: &ConfirmResult) -> Holdouts {
        let scenarios = r
            .evidence
            .scenarios
            .iter()
            .filter(|s| s.role == Role::Holdout);
        let checks = r
            .evidence
            .differential
            .iter()
            .filter(|d| d.role == Role::Holdout);
        let mut names: Vec<String> = (r.evidence.holdout_names.iter().cloned())
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

/// Seals with one run's key.
struct Sealer<'k> {
    key: &'k SealKey,
}

impl Sealer<'_> {
    fn text(&self, text: &mut String) {
        *text = seal_text(text, self.key);
    }

    /// A working directory other than the tree root says something about the holdout.
    fn cwd(&self, cwd: &mut String) {
        if cwd != "." {
            self.text(cwd);
        }
    }

    /// An output digest, quoted where it is repeated, then keyed.
    fn digest(&self, sha256: &mut String, quotes: &mut Quotes) {
        quotes.output(sha256);
        self.text(sha256);
    }

    /// What a holdout's run printed: its digest keyed, its size withheld, its stderr sealed.
    fn run(&self, run: &mut RunRecord, quotes: &mut Quotes) {
        self.digest(&mut run.stdout_sha256, quotes);
        run.stdout_bytes = 0;
        quotes.output(&run.stderr_tail);
        self.text(&mut run.stderr_tail);
    }

    fn scenario(&self, s: &mut ScenarioResult, quotes: &mut Quotes) {
        for command in [&mut s.baseline_command, &mut s.candidate_command] {
            quotes.command(command);
            *command = SEALED.to_string();
        }
        self.cwd(&mut s.cwd);
        // A seed and the guessed command would reproduce the outputs: each run's seed goes, and
        // the replay check keeps its verdict but not the byte count.
        for w in &mut s.warmups {
            w.seed = None;
        }
        for p in s.aa_pairs.iter_mut().chain(s.pairs.iter_mut()) {
            p.seed = None;
        }
        if let Some(replay) = &mut s.replay {
            replay.output_bytes = 0;
        }
        let pairs = s.aa_pairs.iter_mut().chain(s.pairs.iter_mut());
        let runs = (s.warmups.iter_mut().map(|w| &mut w.run))
            .chain(pairs.flat_map(|p| [&mut p.baseline, &mut p.candidate]));
        for run in runs {
            self.run(run, quotes);
        }
    }
}

/// Whether the holdouts' timed runs may have started: they run only once every training
/// scenario has passed its gate. A failed timed run is then reported without the scenario's name
/// (only its command and stderr), so it must be taken for a holdout's.
fn holdouts_may_have_run(r: &ConfirmResult, holdouts: &Holdouts) -> bool {
    let passed = |name: &str| {
        r.evidence.scenarios.iter().any(|s| {
            s.name == name && (s.training.as_ref()).is_some_and(|f| f.training_gate.passed)
        })
    };
    !holdouts.names.is_empty()
        && (r.evidence.differential.iter())
            .filter(|d| d.role == Role::Training)
            .all(|d| passed(&d.scenario))
}

/// A failed timed-output gate that names no training scenario (see [`holdouts_may_have_run`]).
fn unattributed_timed_failure(g: &Gate, r: &ConfirmResult) -> bool {
    let training = r
        .evidence
        .scenarios
        .iter()
        .filter(|s| s.role == Role::Training);
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

/// `r` with everything a holdout is run by or produced sealed under `key`, wherever it is quoted.
///
/// Deterministic given `key`: the key holder re-derives the receipt's predicate from
/// `result.json` with it. Wall times, pairs and figures stay, so the verdict can still be
/// recomputed from the receipt alone.
pub fn seal_holdouts(r: &ConfirmResult, key: &SealKey) -> ConfirmResult {
    let holdouts = Holdouts::of(r);
    let seal = Sealer { key };
    let mut out = r.clone();
    let mut quotes = Quotes::default();
    if let Some(HoldoutSeed::Drawn(seed)) = out.evidence.holdout_seed {
        out.evidence.holdout_seed = Some(HoldoutSeed::Sealed(seal_text(&seed.to_string(), key)));
    }
    let scenarios = out.evidence.scenarios.iter_mut();
    for s in scenarios.filter(|s| s.role == Role::Holdout || holdouts.contains(&s.name)) {
        seal.scenario(s, &mut quotes);
    }
    for step in out
        .evidence
        .steps
        .iter_mut()
        .filter(|s| holdouts.own_step(&s.step))
    {
        quotes.command(&step.command);
        step.command = SEALED.to_string();
        seal.cwd(&mut step.cwd);
        seal.digest(&mut step.stdout_sha256, &mut quotes);
    }
    // A holdout's drawn inputs: ranges and values withheld, commands keyed (so the key holder
    // matches them; the values follow from the filled commands and the seed).
    let draws = out.evidence.draws.iter_mut();
    for d in draws.filter(|d| d.role == Role::Holdout || holdouts.contains(&d.scenario)) {
        d.ranges.clear();
        d.values.clear();
        for c in &mut d.commands {
            quotes.command(&c.template);
            quotes.command(&c.filled);
            seal.text(&mut c.template);
            seal.text(&mut c.filled);
        }
    }
    let checks = out.evidence.differential.iter_mut();
    for d in checks.filter(|d| d.role == Role::Holdout || holdouts.contains(&d.scenario)) {
        seal.digest(&mut d.baseline_sha256, &mut quotes);
        seal.digest(&mut d.candidate_sha256, &mut quotes);
        for text in [&mut d.summary, &mut d.diff].into_iter().flatten() {
            quotes.output(text);
            seal.text(text);
        }
    }
    for f in &mut out.evidence.sanitizer_findings {
        if holdouts.own_step(&f.step) {
            quotes.output(&f.excerpt);
            seal.text(&mut f.excerpt);
        }
    }
    for f in &mut out.evidence.sanitizer_findings {
        if !is_sealed(&f.excerpt) && quotes.in_text(&f.excerpt) {
            seal.text(&mut f.excerpt);
        }
    }
    seal_quoting_texts(r, &mut out, &holdouts, &quotes, key);
    out
}

/// Seals every gate detail that quotes or names a holdout (or may report one's timed run), and
/// the reasons repeating them; other reasons lose the holdout commands they quote.
fn seal_quoting_texts(
    r: &ConfirmResult,
    out: &mut ConfirmResult,
    holdouts: &Holdouts,
    quotes: &Quotes,
    key: &SealKey,
) {
    let timed_runs_may_be_holdouts = holdouts_may_have_run(r, holdouts);
    let mut resealed = Vec::new();
    for g in &mut out.evidence.gates {
        let quotes_holdout = quotes.in_text(&g.detail)
            || holdouts.named_in(&g.detail)
            || (timed_runs_may_be_holdouts && unattributed_timed_failure(g, r));
        if !quotes_holdout {
            continue;
        }
        let sealed = seal_text(&g.detail, key);
        if g.status == GateStatus::Failed {
            // `verdict::decide` words a failed gate's reason so; recomputing must find it again.
            resealed.push(Resealed {
                original: format!("{} failed: {}", g.name, g.detail),
                sealed: format!("{} failed: {sealed}", g.name),
            });
        }
        g.detail = sealed;
    }
    for w in &mut out.evidence.warnings {
        if holdouts.named_in(w) || quotes.in_text(w) {
            *w = seal_text(w, key);
        }
    }
    for reason in &mut out.reasons {
        match resealed.iter().find(|x| x.original == *reason) {
            Some(x) => reason.clone_from(&x.sealed),
            None => quotes.scrub_commands(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::result::StepKind;

    #[test]
    fn sealed_text_carries_a_keyed_digest_of_the_original_never_its_plain_hash() {
        let key = SealKey::from_bytes([7; 32]);
        let sealed = seal_text("abc", &key);
        let hmac = hex::encode(super::super::seal_key::hmac_sha256(&[7; 32], b"abc"));
        assert_eq!(sealed, format!("sealed holdout (hmac-sha256:{hmac})"));
        let plain = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert!(!sealed.contains(plain), "the plain sha256 of the original");
        assert_ne!(sealed, seal_text("abc", &SealKey::from_bytes([8; 32])));
        assert!(is_sealed(&sealed) && is_sealed(SEALED));
        assert!(!is_sealed("sealed holdout (hmac-sha256:abc)"));
        assert!(!is_sealed(&format!("sealed holdout (sha256:{plain})")));
        assert!(!is_sealed("abc"));
        assert_eq!(seal_text("", &key), "");
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
