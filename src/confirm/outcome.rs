//! A finished confirmation, loaded back from its run directory: what a campaign records about
//! it, taken from files and trusted only as far as the signed receipt vouches for them
//! (docs/design.md §2.7). A campaign reads every confirmation this way, whether it ran in this
//! process or as a job elsewhere.
//!
//! The receipt is what counts: `result.json` is not signed, so it is used only when, with its
//! holdouts sealed, it is exactly the predicate the receipt signed.

use std::path::{Path, PathBuf};

use ed25519_dalek::VerifyingKey;
use serde_json::Value;

use crate::evidence::result::{ConfirmResult, Verdict};
use crate::pipeline::rundir::read_seal_key;
use crate::receipt::{self, RECEIPT_FILE, SealKey, VerifyError};
use crate::stats::Tier;

/// What a campaign needs of a confirmation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub run_dir: PathBuf,
    pub verdict: Verdict,
    pub tier: Tier,
    /// The estimate (rules 9: Hodges–Lehmann) of the first training scenario with figures.
    pub median: Option<f64>,
    /// Why the verdict is what it is, as in `result.json` (holdouts not sealed).
    pub reasons: Vec<String>,
    /// Hex sha256 of the patch the run confirmed: a caller checks it is the one it sent.
    pub patch_sha256: String,
    /// Hex sha256 of the receipt file, and the id of the key that signed it.
    pub receipt_sha256: String,
    pub key_id: String,
}

/// Why a run directory's outcome is refused.
#[derive(Debug, thiserror::Error)]
pub enum OutcomeError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a confirmation result: {source}", path.display())]
    Result {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} does not verify with the expected key: {source}", path.display())]
    Receipt {
        path: PathBuf,
        #[source]
        source: VerifyError,
    },
    #[error(
        "{}: result.json is not what the receipt signed (first difference at `{at}`); the \
         receipt is what counts",
        run_dir.display()
    )]
    Differs { run_dir: PathBuf, at: String },
    #[error(
        "{}: the receipt is of run `{run_id}`, not of the run in this folder",
        run_dir.display()
    )]
    OtherRun { run_dir: PathBuf, run_id: String },
}

/// The key the run in `run_dir` sealed its holdouts with. A folder without one will do only for a
/// result that sealing leaves as it is (no holdout ran), whatever the key.
fn seal_key_of(run_dir: &Path, result: &ConfirmResult) -> Result<SealKey, OutcomeError> {
    let path = run_dir.join(SealKey::FILE);
    let read = |source| OutcomeError::Read {
        path: path.clone(),
        source,
    };
    if let Some(key) = read_seal_key(run_dir).map_err(read)? {
        return Ok(key);
    }
    let any = SealKey::from_bytes([0; 32]);
    if receipt::statement::seal_holdouts(result, &any) == *result {
        return Ok(any);
    }
    Err(read(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        "the run's holdout seal key is missing, so its sealed receipt cannot be matched",
    )))
}

/// Loads the outcome of the confirmation in `run_dir`: checks `validation_receipt.json` with
/// `key` (the key the caller expects, never one the folder names), then that `result.json`
/// with its holdouts sealed is the signed predicate and belongs to this folder.
pub fn load_outcome(run_dir: &Path, key: &VerifyingKey) -> Result<Outcome, OutcomeError> {
    let read = |name: &str| {
        let path = run_dir.join(name);
        std::fs::read(&path).map_err(|source| OutcomeError::Read { path, source })
    };
    let receipt_bytes = read(RECEIPT_FILE)?;
    let verified =
        receipt::verify(&receipt_bytes, key).map_err(|source| OutcomeError::Receipt {
            path: run_dir.join(RECEIPT_FILE),
            source,
        })?;
    let result = matching_result(run_dir, &verified.statement.predicate)?;
    if run_dir.file_name() != Some(std::ffi::OsStr::new(&result.evidence.run_id)) {
        return Err(OutcomeError::OtherRun {
            run_dir: run_dir.to_path_buf(),
            run_id: result.evidence.run_id,
        });
    }
    Ok(Outcome {
        run_dir: run_dir.to_path_buf(),
        verdict: result.verdict,
        tier: result.tier,
        median: (result.evidence.scenarios.iter())
            .find_map(|s| s.training.as_ref().map(|f| f.median)),
        reasons: result.reasons,
        patch_sha256: result.evidence.patch.sha256,
        receipt_sha256: verified.sha256,
        key_id: verified.key_id,
    })
}

/// The `result.json` of `run_dir`, once it is shown to be what `signed` (a receipt's predicate)
/// says: with its holdouts sealed under the folder's own key it is exactly `signed`. What the
/// receipt seals (holdout commands, drawn inputs, the holdouts' seed) can then be re-derived from
/// it (`evo receipt verify --unseal`).
pub fn matching_result(
    run_dir: &Path,
    signed: &ConfirmResult,
) -> Result<ConfirmResult, OutcomeError> {
    let path = run_dir.join("result.json");
    let bytes = std::fs::read(&path).map_err(|source| OutcomeError::Read {
        path: path.clone(),
        source,
    })?;
    let result: ConfirmResult =
        serde_json::from_slice(&bytes).map_err(|source| OutcomeError::Result { path, source })?;
    let seal = seal_key_of(run_dir, &result)?;
    let sealed = plain(&receipt::statement::seal_holdouts(&result, &seal));
    if let Some(at) = first_difference(&plain(signed), &sealed, String::new()) {
        return Err(OutcomeError::Differs {
            run_dir: run_dir.to_path_buf(),
            at: if at.is_empty() { "/".to_string() } else { at },
        });
    }
    Ok(result)
}

/// A result as plain JSON, for a comparison that can say where two differ.
fn plain(result: &ConfirmResult) -> Value {
    serde_json::to_value(result)
        .unwrap_or_else(|_| unreachable!("a result of plain data always serializes"))
}

/// The JSON pointer of the first place where `a` and `b` differ, `None` when they are equal.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(v), Some(w)) => first_difference(v, w, format!("{at}/{k}")),
                _ => Some(format!("{at}/{k}")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => (x.iter().zip(y))
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, format!("{at}/{i}"))),
        _ => (a != b).then_some(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_difference_is_named_by_its_pointer() {
        let a =
            json!({"verdict": "rejected", "gates": [{"status": "passed"}, {"status": "failed"}]});
        let b =
            json!({"verdict": "rejected", "gates": [{"status": "passed"}, {"status": "passed"}]});
        assert_eq!(first_difference(&a, &a, String::new()), None);
        assert_eq!(
            first_difference(&a, &b, String::new()).as_deref(),
            Some("/gates/1/status")
        );
        let c = json!({"verdict": "rejected"});
        assert_eq!(
            first_difference(&a, &c, String::new()).as_deref(),
            Some("/gates")
        );
        assert_eq!(
            first_difference(&json!(1.0), &json!(1.5), "/x".into()).as_deref(),
            Some("/x")
        );
    }
}
