//! The in-toto Statement v1 inside the envelope: what the receipt is about (subjects) and what
//! evo found (the predicate).
//!
//! The predicate is the run's `ConfirmResult` with the holdouts sealed (see `seal`): it holds every
//! raw run, so the verdict can be recomputed from it, and nothing an agent could use to learn the
//! holdouts beyond their names, keyed digests and the portfolio digest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::evidence::result::ConfirmResult;
pub use crate::receipt::seal::{SEALED, SealKey, seal_holdouts};

/// The in-toto Statement type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// evo's predicate type: a `ConfirmResult` with sealed holdouts (docs/security.md, "Receipts").
///
/// An identifier, not a URL to fetch; `v1` changes only when a field changes meaning.
pub const PREDICATE_TYPE: &str = "https://evo.dev/validation/v1";

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
        subject(&r.evidence.patch.file, "sha256", &r.evidence.patch.sha256),
        subject("baseline", "gitCommit", &r.evidence.baseline_sha),
    ];
    out.extend(
        r.evidence
            .artifacts
            .iter()
            .map(|a| subject(format!("{}/{}", a.tree, a.path), "sha256", &a.sha256)),
    );
    out
}

/// The statement evo signs for a result, its holdouts sealed under `seal`.
pub fn statement(r: &ConfirmResult, seal: &SealKey) -> Statement {
    Statement {
        statement_type: STATEMENT_TYPE.to_string(),
        subject: subjects(r),
        predicate_type: PREDICATE_TYPE.to_string(),
        predicate: seal_holdouts(r, seal),
    }
}
