//! The in-toto Statement v1 inside the envelope: what the receipt is about (subjects) and what
//! evo found (the predicate).
//!
//! The predicate is the run's `ConfirmResult` with the sealed holdouts' commands withheld: it holds
//! every raw run, so the verdict can be recomputed from it, and nothing an agent could use to learn
//! the holdouts beyond their names and the portfolio digest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::confirm::result::ConfirmResult;

/// The in-toto Statement type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// evo's predicate type: a `ConfirmResult` with sealed holdouts (see the README, "Receipts").
///
/// An identifier, not a URL to fetch; `v1` changes only when a field changes meaning.
pub const PREDICATE_TYPE: &str = "https://evo.dev/validation/v1";
/// What replaces a sealed holdout's command, diff or any text quoting them.
pub const SEALED: &str = "sealed holdout";

/// One thing the statement is about, named and identified by digests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub name: String,
    /// Algorithm (`sha256`, `gitCommit`) to hex digest.
    pub digest: BTreeMap<String, String>,
}

fn subject(name: impl Into<String>, algorithm: &str, digest: &str) -> Subject {
    Subject {
        name: name.into(),
        digest: BTreeMap::from([(algorithm.to_string(), digest.to_string())]),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: ConfirmResult,
}

/// The subjects a result attests: the patch, the baseline commit, every built artifact.
pub fn subjects(r: &ConfirmResult) -> Vec<Subject> {
    let mut out = vec![
        subject(&r.patch.file, "sha256", &r.patch.sha256),
        subject("baseline", "gitCommit", &r.baseline_sha),
    ];
    out.extend(
        r.artifacts
            .iter()
            .map(|a| subject(format!("{}/{}", a.tree, a.path), "sha256", &a.sha256)),
    );
    out
}

/// The names of the sealed holdout scenarios that appear in `r`.
fn holdout_names(r: &ConfirmResult) -> Vec<String> {
    let mut names: Vec<String> = r
        .scenarios
        .iter()
        .filter(|s| s.role == "holdout")
        .map(|s| s.name.clone())
        .chain(
            r.differential
                .iter()
                .filter(|d| d.role == "holdout")
                .map(|d| d.scenario.clone()),
        )
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `r` with every holdout command and diff replaced by [`SEALED`], wherever it is quoted.
///
/// Raw runs, pairs and figures stay, so the verdict can still be recomputed.
pub fn seal_holdouts(r: &ConfirmResult) -> ConfirmResult {
    let mut out = r.clone();
    let names = holdout_names(r);
    let is_holdout_step = |step: &str| {
        step.strip_prefix("check-")
            .is_some_and(|n| names.iter().any(|h| h == n))
    };
    let mut secrets: Vec<String> = Vec::new();
    for s in out.scenarios.iter_mut().filter(|s| s.role == "holdout") {
        secrets.push(std::mem::replace(&mut s.baseline_command, SEALED.into()));
        secrets.push(std::mem::replace(&mut s.candidate_command, SEALED.into()));
    }
    for step in out.steps.iter_mut().filter(|s| is_holdout_step(&s.step)) {
        secrets.push(std::mem::replace(&mut step.command, SEALED.into()));
    }
    for d in out.differential.iter_mut().filter(|d| d.role == "holdout") {
        if let Some(diff) = d.diff.replace(format!("{SEALED}: diff withheld")) {
            secrets.push(diff);
        }
    }
    secrets.retain(|s| !s.trim().is_empty());
    // Longest first, so a command that contains another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    let scrub = |text: &mut String| {
        for secret in &secrets {
            if text.contains(secret.as_str()) {
                *text = text.replace(secret.as_str(), SEALED);
            }
        }
    };
    out.gates.iter_mut().for_each(|g| scrub(&mut g.detail));
    out.reasons.iter_mut().for_each(scrub);
    out.sanitizer_findings
        .iter_mut()
        .for_each(|f| scrub(&mut f.excerpt));
    out
}

/// The statement evo signs for a result.
pub fn statement(r: &ConfirmResult) -> Statement {
    Statement {
        statement_type: STATEMENT_TYPE.to_string(),
        subject: subjects(r),
        predicate_type: PREDICATE_TYPE.to_string(),
        predicate: seal_holdouts(r),
    }
}
