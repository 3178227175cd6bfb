//! Signed validation receipts (docs/design.md §5.5–§5.10): an in-toto Statement v1 about the
//! patch, the baseline and the built artifacts, whose predicate is the confirmation's result, in a
//! DSSE envelope signed with Ed25519.
//!
//! Building and checking are pure (bytes in, bytes out); the callers read and write the files.
//! `keys` stores and loads keys, `trust` refuses keys kept in a work tree, `trusted` lists the
//! keys verification trusts, `signer` picks the key that signs, `dsse` signs and opens envelopes,
//! `statement` builds the statement, `seal` seals the holdouts in it, `keyscan` refuses to sign
//! anything holding the private key, `recompute` re-derives the verdict from the raw runs, and
//! `binding` ties a receipt to the patch under review and to what a reviewer requires.

pub mod binding;
pub mod dsse;
pub mod keys;
pub mod keyscan;
pub mod recompute;
pub mod seal;
mod seal_key;
pub mod signer;
pub mod statement;
pub mod trust;
pub mod trusted;

use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::evidence::result::ConfirmResult;
pub use dsse::{EnvelopeError, PAYLOAD_TYPE};
pub use keyscan::{KeyLeak, KeyScanner};
pub use seal::{SEALED, SealKey};
pub use statement::{PREDICATE_TYPE, STATEMENT_TYPE, Statement};

/// The file name of a receipt in its run directory.
pub const RECEIPT_FILE: &str = "validation_receipt.json";

/// A signed receipt, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    /// The exact bytes of `validation_receipt.json`.
    pub bytes: Vec<u8>,
    /// Hex sha256 of `bytes`: the digest the PR text quotes.
    pub sha256: String,
    pub key_id: String,
}

/// Hex sha256 of a receipt file's bytes.
pub fn file_digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// [`sign_sealed`] with the holdouts sealed under a key drawn for this call and discarded: the
/// receipt withholds them as well, but nobody can re-derive its seal.
pub fn sign(result: &ConfirmResult, key: &SigningKey) -> Result<Receipt, KeyLeak> {
    let seal = SealKey::fresh().unwrap_or_else(|_| {
        // No random source: a key as secret as the signing key, and as unknown to readers.
        let bytes = Sha256::new()
            .chain_update(key.to_bytes())
            .chain_update(b"evo holdout seal")
            .finalize();
        SealKey::from_bytes(bytes.into())
    });
    sign_sealed(result, key, &seal)
}

/// Checks that neither `result` (written beside the receipt) nor the statement signed about it
/// holds the private key, then signs the statement (holdouts sealed under `seal`) with `key`.
pub fn sign_sealed(
    result: &ConfirmResult,
    key: &SigningKey,
    seal: &SealKey,
) -> Result<Receipt, KeyLeak> {
    let scanner = KeyScanner::new(key);
    check_result(result, &scanner)?;
    let statement = statement::statement(result, seal);
    let value = serde_json::to_value(&statement)
        .unwrap_or_else(|_| unreachable!("a result of plain data always serializes"));
    scanner.check_json(&value, "")?;
    let payload = serde_json::to_vec_pretty(&statement)
        .unwrap_or_else(|_| unreachable!("a result of plain data always serializes"));
    scanner.check_text(&String::from_utf8_lossy(&payload), "the signed payload")?;
    let bytes = dsse::Envelope::sign(&payload, key).to_file_bytes();
    Ok(Receipt {
        sha256: file_digest(&bytes),
        key_id: keys::key_id(&key.verifying_key()),
        bytes,
    })
}

/// Refuses a result whose fields hold the private key (named by their path in `result.json`).
pub fn check_result(result: &ConfirmResult, scanner: &KeyScanner) -> Result<(), KeyLeak> {
    let value = serde_json::to_value(result)
        .unwrap_or_else(|_| unreachable!("a result of plain data always serializes"));
    scanner.check_json(&value, "")
}

/// Why a receipt was refused.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    #[error("the signed payload is not an evo statement: {0}")]
    Statement(#[source] StatementError),
    #[error(
        "the subjects do not match the predicate: the statement names {recorded}, the predicate \
         implies {implied}"
    )]
    Subjects { recorded: String, implied: String },
}

/// Why a signed payload is not an evo statement.
#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("no string field `{0}`")]
    NoField(&'static str),
    #[error("`_type` is `{0}`, expected `{STATEMENT_TYPE}`")]
    Type(String),
    #[error("unknown predicate type `{0}` (evo reads `{PREDICATE_TYPE}`)")]
    PredicateType(String),
    #[error("the predicate does not parse: {0}")]
    Predicate(#[source] serde_json::Error),
}

/// A receipt whose signature, key id, layout and statement all check out.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    pub statement: Statement,
    pub key_id: String,
    /// Hex sha256 of the receipt file.
    pub sha256: String,
}

fn field<'a>(v: &'a serde_json::Value, name: &'static str) -> Result<&'a str, VerifyError> {
    v.get(name)
        .and_then(|x| x.as_str())
        .ok_or(VerifyError::Statement(StatementError::NoField(name)))
}

/// Checks a receipt file against `key` and parses its statement.
pub fn verify(file: &[u8], key: &VerifyingKey) -> Result<Verified, VerifyError> {
    let payload = dsse::open(file, key)?;
    let value: serde_json::Value = serde_json::from_slice(&payload)
        .map_err(|e| VerifyError::Statement(StatementError::NotJson(e)))?;
    let statement_type = field(&value, "_type")?;
    if statement_type != STATEMENT_TYPE {
        return Err(VerifyError::Statement(StatementError::Type(
            statement_type.to_string(),
        )));
    }
    let predicate_type = field(&value, "predicateType")?;
    if predicate_type != PREDICATE_TYPE {
        return Err(VerifyError::Statement(StatementError::PredicateType(
            predicate_type.to_string(),
        )));
    }
    let statement: Statement = serde_json::from_value(value)
        .map_err(|e| VerifyError::Statement(StatementError::Predicate(e)))?;
    let implied = statement::subjects(&statement.predicate);
    if implied != statement.subject {
        let names = |s: &[statement::Subject]| serde_json::to_string(s).unwrap_or_default();
        return Err(VerifyError::Subjects {
            recorded: names(&statement.subject),
            implied: names(&implied),
        });
    }
    Ok(Verified {
        statement,
        key_id: keys::key_id(key),
        sha256: file_digest(file),
    })
}
