//! The DSSE envelope: a signature over the exact payload bytes, never over a re-serialization.
//!
//! The signature covers the pre-authentication encoding
//! `"DSSEv1" SP len(type) SP type SP len(body) SP body` (lengths as ASCII decimal byte counts), so
//! no JSON canonicalization is needed to check it. The envelope itself is unsigned; evo still
//! writes it in one fixed layout and refuses a file whose bytes differ from that layout, so that a
//! receipt's sha256 (quoted in the PR text) identifies exactly one file.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use super::keys::key_id;

/// The only payload type evo signs and accepts.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    pub keyid: String,
    /// Base64 of the 64-byte Ed25519 signature.
    pub sig: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Base64 of the payload bytes.
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

/// Why an envelope was refused; each names what to look at, and keeps the parser's error as its
/// cause where one refused it.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("not a DSSE envelope: {0}")]
    NotAnEnvelope(#[source] serde_json::Error),
    #[error("unknown payload type `{0}` (evo signs and accepts only `{PAYLOAD_TYPE}`)")]
    PayloadType(String),
    #[error("the payload is not valid base64: {0}")]
    PayloadEncoding(#[source] base64::DecodeError),
    #[error("the envelope carries no signature")]
    Unsigned,
    #[error(
        "the key id was changed: the signature is valid for key {expected}, but the envelope \
         names {found}"
    )]
    KeyIdAltered { found: String, expected: String },
    #[error(
        "wrong key: the receipt is signed by {}, not by the verifying key {expected}",
        .found.join(", ")
    )]
    WrongKey {
        found: Vec<String>,
        expected: String,
    },
    #[error("signature of {keyid} is not valid base64 of 64 bytes: {reason}")]
    SignatureEncoding { keyid: String, reason: String },
    #[error(
        "the signature of {keyid} does not match the payload: the payload or the signature was \
         changed after signing"
    )]
    BadSignature { keyid: String },
    #[error(
        "the file was changed after signing: byte {offset} differs from the layout evo wrote \
         (the signature itself is valid, so the change is outside the signed payload)"
    )]
    Layout { offset: usize },
}

/// The DSSE pre-authentication encoding of `payload`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

impl Envelope {
    /// Signs `payload` as it is, with one Ed25519 signature.
    pub fn sign(payload: &[u8], key: &SigningKey) -> Envelope {
        let sig = key.sign(&pae(PAYLOAD_TYPE, payload));
        Envelope {
            payload_type: PAYLOAD_TYPE.to_string(),
            payload: BASE64.encode(payload),
            signatures: vec![EnvelopeSignature {
                keyid: key_id(&key.verifying_key()),
                sig: BASE64.encode(sig.to_bytes()),
            }],
        }
    }

    /// The file bytes: pretty JSON and a final newline, the one layout evo writes and accepts.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut text = serde_json::to_string_pretty(self)
            .unwrap_or_else(|_| unreachable!("an envelope of strings always serializes"));
        text.push('\n');
        text.into_bytes()
    }
}

fn check_signature(
    s: &EnvelopeSignature,
    signed: &[u8],
    key: &VerifyingKey,
) -> Result<bool, EnvelopeError> {
    let encoding = |reason: String| EnvelopeError::SignatureEncoding {
        keyid: s.keyid.clone(),
        reason,
    };
    let bytes = BASE64.decode(&s.sig).map_err(|e| encoding(e.to_string()))?;
    let bytes: [u8; 64] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| encoding(format!("{} bytes", b.len())))?;
    Ok(key
        .verify_strict(signed, &Signature::from_bytes(&bytes))
        .is_ok())
}

/// The key ids an envelope names, unchecked: only for choosing which trusted key to check it
/// with (a forged id can only pick a key that then fails). Empty when `file` is no envelope.
pub fn named_key_ids(file: &[u8]) -> Vec<String> {
    serde_json::from_slice::<Envelope>(file)
        .map(|e| e.signatures.into_iter().map(|s| s.keyid).collect())
        .unwrap_or_default()
}

/// Checks `file` against `key` and returns the exact signed payload bytes.
///
/// The checks run from the inside out so the reason is the most specific one: payload type,
/// payload encoding, key id and signature, then the layout of the unsigned rest of the file.
pub fn open(file: &[u8], key: &VerifyingKey) -> Result<Vec<u8>, EnvelopeError> {
    let envelope: Envelope = serde_json::from_slice(file).map_err(EnvelopeError::NotAnEnvelope)?;
    if envelope.payload_type != PAYLOAD_TYPE {
        return Err(EnvelopeError::PayloadType(envelope.payload_type));
    }
    let payload = BASE64
        .decode(&envelope.payload)
        .map_err(EnvelopeError::PayloadEncoding)?;
    if envelope.signatures.is_empty() {
        return Err(EnvelopeError::Unsigned);
    }
    let expected = key_id(key);
    let signed = pae(&envelope.payload_type, &payload);
    match envelope.signatures.iter().find(|s| s.keyid == expected) {
        Some(s) => {
            if !check_signature(s, &signed, key)? {
                return Err(EnvelopeError::BadSignature {
                    keyid: s.keyid.clone(),
                });
            }
        }
        None => {
            for s in &envelope.signatures {
                if check_signature(s, &signed, key).unwrap_or(false) {
                    return Err(EnvelopeError::KeyIdAltered {
                        found: s.keyid.clone(),
                        expected,
                    });
                }
            }
            return Err(EnvelopeError::WrongKey {
                found: envelope
                    .signatures
                    .iter()
                    .map(|s| s.keyid.clone())
                    .collect(),
                expected,
            });
        }
    }
    let canonical = envelope.to_file_bytes();
    if canonical != file {
        let offset = canonical
            .iter()
            .zip(file)
            .position(|(a, b)| a != b)
            .unwrap_or(canonical.len().min(file.len()));
        return Err(EnvelopeError::Layout { offset });
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_specification_example() {
        // The example of the DSSE protocol document.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
    }

    #[test]
    fn lengths_are_byte_counts_not_characters() {
        assert_eq!(
            pae("t", "×".as_bytes()),
            "DSSEv1 1 t 2 ×".as_bytes().to_vec()
        );
    }

    #[test]
    fn a_signed_envelope_opens_with_its_key_only() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let other = SigningKey::from_bytes(&[2u8; 32]);
        let file = Envelope::sign(b"{\"a\": 1}", &key).to_file_bytes();
        assert_eq!(open(&file, &key.verifying_key()).unwrap(), b"{\"a\": 1}");
        assert!(matches!(
            open(&file, &other.verifying_key()),
            Err(EnvelopeError::WrongKey { .. })
        ));
    }
}
