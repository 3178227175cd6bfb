//! The per-run secret the holdouts are sealed with, and HMAC-SHA256 under it.
//!
//! A plain sha256 of a holdout's command, working directory or output proves nothing once the
//! text is short: whoever holds the receipt can hash guesses until one matches. So what the
//! receipt publishes about a holdout is keyed: `HMAC-SHA256(K, text)`, with `K` 32 random bytes
//! drawn for the run and kept only in the run folder (`holdout_seal.key`, mode 0600). Without
//! `K` a guess cannot be checked; with it (the user may hand it over) every sealed field can be
//! re-derived from `result.json` and compared (docs/design.md §5.7).

use std::fmt;
use std::io::Read;

use sha2::{Digest, Sha256};

/// SHA-256's block size, in bytes: the width of HMAC's padded key.
const BLOCK: usize = 64;

/// A run's holdout seal key. Its `Debug` never shows the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct SealKey([u8; 32]);

/// A seal key file that does not hold a key.
#[derive(Debug, thiserror::Error)]
#[error("a holdout seal key is 64 hex digits, not {found} characters of text")]
pub struct BadSealKey {
    found: usize,
}

impl SealKey {
    /// The key file's name in the run folder.
    pub const FILE: &'static str = "holdout_seal.key";

    /// 32 bytes from the system's random source.
    pub fn fresh() -> std::io::Result<SealKey> {
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(SealKey(bytes))
    }

    /// A key from known bytes (tests, and a holder re-deriving a seal).
    pub fn from_bytes(bytes: [u8; 32]) -> SealKey {
        SealKey(bytes)
    }

    /// The key as its file holds it: 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Reads the key file's text (surrounding white space ignored).
    pub fn from_hex(text: &str) -> Result<SealKey, BadSealKey> {
        let text = text.trim();
        let bad = || BadSealKey { found: text.len() };
        let bytes = hex::decode(text).map_err(|_| bad())?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| bad())?;
        Ok(SealKey(bytes))
    }

    /// Hex `HMAC-SHA256(key, message)`.
    pub fn digest(&self, message: &[u8]) -> String {
        hex::encode(hmac_sha256(&self.0, message))
    }
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(withheld)")
    }
}

/// HMAC-SHA256 (RFC 2104): `H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m))`, a key longer than a block
/// first hashed.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut padded = [0u8; BLOCK];
    if key.len() > BLOCK {
        padded[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        padded[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| padded.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231, test cases 1, 2 and 6 (a key longer than a block).
    #[test]
    fn hmac_matches_the_rfc_4231_vectors() {
        let hex = |k: &[u8], m: &[u8]| hex::encode(hmac_sha256(k, m));
        assert_eq!(
            hex(&[0x0b; 20], b"Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_key_round_trips_through_its_file_text_and_is_never_shown() {
        let key = SealKey::fresh().expect("reads /dev/urandom");
        assert_eq!(
            SealKey::from_hex(&format!("{}\n", key.to_hex())).unwrap(),
            key
        );
        assert!(!format!("{key:?}").contains(&key.to_hex()));
        assert!(SealKey::from_hex("abc").is_err());
        assert_ne!(key, SealKey::fresh().unwrap());
    }
}
