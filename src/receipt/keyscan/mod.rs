//! Finding the private signing key in text evo is about to sign or publish.
//!
//! Candidates are untrusted code, and evo records some of what they print (stderr tails, check
//! diffs, sanitizer reports). A candidate that reads the private key could print it and have evo
//! sign it into a receipt that is then published. Keeping the key out of the candidate's reach is
//! the sandbox's job; this is the second line: before signing, every string that would be signed or
//! written beside the receipt is searched for the key's 32-byte seed in the encodings a program
//! would plausibly use, and evo refuses to sign when it is found.
//!
//! What is searched, for the seed (the 64-byte keypair and the PKCS#8 document contain the seed
//! whole, so their encodings contain the seed's):
//! - hex, any case, with any separators between the digits (`de:ad…`, wrapped lines);
//! - base64, standard and URL-safe, at each of the three byte alignments the seed can have inside a
//!   longer encoded blob (only the characters that the seed's bytes alone decide, so padding and
//!   the neighbours do not matter), with any line breaks or other non-alphabet characters in
//!   between, so a PEM body wrapped at 64 columns is found;
//! - the raw bytes after lossy UTF-8 decoding (the span between the seed's first and last ASCII
//!   byte, which decodes the same whatever surrounds it) and after Latin-1 decoding;
//! - per-byte escapes: JSON `\u00xx` (all bytes, or only the unprintable ones) and `\xNN` (all
//!   bytes, or Python's `bytes` repr);
//! - byte lists in decimal or hex (`[222, 173, …]`, `{0xde, 0xad, …}`).
//!
//! A transformed key (reversed, XORed, encrypted) is not found: this catches the obvious leaks, the
//! sandbox has to prevent the rest.

use std::fmt;

use base64::Engine as _;
use base64::engine::GeneralPurpose;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use ed25519_dalek::SigningKey;
use serde_json::Value;

/// The raw-bytes needle must keep at least this many ASCII characters, so that it cannot match
/// ordinary text by chance (a seed with fewer is searched in the other encodings only).
const MIN_ASCII_IN_RAW: usize = 8;

/// How the key was written where it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Hex,
    Base64,
    Base64Url,
    LossyUtf8,
    Latin1,
    JsonEscapes,
    ByteEscapes,
    DecimalList,
    HexList,
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Encoding::Hex => "hex",
            Encoding::Base64 => "base64",
            Encoding::Base64Url => "URL-safe base64",
            Encoding::LossyUtf8 => "raw bytes (lossy UTF-8)",
            Encoding::Latin1 => "raw bytes (Latin-1)",
            Encoding::JsonEscapes => "JSON \\u00xx escapes",
            Encoding::ByteEscapes => "\\xNN escapes",
            Encoding::DecimalList => "a decimal byte list",
            Encoding::HexList => "a hex byte list",
        })
    }
}

/// One encoded form of the seed and the encoding it stands for.
#[derive(Debug, Clone)]
struct Needle {
    text: String,
    encoding: Encoding,
}

/// The seed's encodings, built once per key, searched in many texts.
#[derive(Clone)]
pub struct KeyScanner {
    seed: [u8; 32],
    /// Lowercase hex of the seed.
    hex: String,
    /// Inner base64 parts, standard then URL-safe, three alignments each.
    base64: Vec<Needle>,
    /// Searched in the text as it is.
    raw: Vec<Needle>,
    /// Lowercase; searched in the lowercased text.
    escapes: Vec<Needle>,
}

impl fmt::Debug for KeyScanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the key.
        f.write_str("KeyScanner { .. }")
    }
}

impl KeyScanner {
    pub fn new(key: &SigningKey) -> KeyScanner {
        KeyScanner::for_seed(key.to_bytes())
    }

    /// A scanner for a raw 32-byte secret.
    pub fn for_seed(seed: [u8; 32]) -> KeyScanner {
        let mut base64 = Vec::new();
        for (engine, encoding) in [
            (&STANDARD_NO_PAD, Encoding::Base64),
            (&URL_SAFE_NO_PAD, Encoding::Base64Url),
        ] {
            for lead in 0..3 {
                base64.push(Needle {
                    text: inner_base64(engine, &seed, lead),
                    encoding,
                });
            }
        }
        let mut raw = vec![Needle {
            text: seed.iter().map(|b| char::from(*b)).collect(),
            encoding: Encoding::Latin1,
        }];
        if let Some(text) = lossy_needle(&seed) {
            raw.push(Needle {
                text,
                encoding: Encoding::LossyUtf8,
            });
        }
        KeyScanner {
            seed,
            hex: hex::encode(seed),
            base64,
            raw,
            escapes: escape_needles(&seed),
        }
    }

    /// How the key is written in `text`, if it is.
    pub fn find(&self, text: &str) -> Option<Encoding> {
        self.found(text).first().copied()
    }

    /// Every encoding of the key in `text` (one text can match several: `\xNN` escapes are hex
    /// with separators too).
    fn found(&self, text: &str) -> Vec<Encoding> {
        let mut found = Vec::new();
        let hex_digits: String = text
            .chars()
            .filter(char::is_ascii_hexdigit)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if hex_digits.contains(&self.hex) {
            found.push(Encoding::Hex);
        }
        let standard = keep(text, |c| c.is_ascii_alphanumeric() || c == '+' || c == '/');
        let url_safe = keep(text, |c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        for needle in &self.base64 {
            let hay = match needle.encoding {
                Encoding::Base64Url => &url_safe,
                _ => &standard,
            };
            if hay.contains(&needle.text) {
                found.push(needle.encoding);
            }
        }
        found.extend(
            (self.raw.iter())
                .filter(|n| text.contains(&n.text))
                .map(|n| n.encoding),
        );
        let lower = text.to_ascii_lowercase();
        found.extend(
            (self.escapes.iter())
                .filter(|n| lower.contains(&n.text))
                .map(|n| n.encoding),
        );
        if holds_run(&numbers(text, 10), &self.seed) {
            found.push(Encoding::DecimalList);
        }
        if holds_run(&numbers(text, 16), &self.seed) {
            found.push(Encoding::HexList);
        }
        found
    }
}

/// The signing key found where evo would sign or publish it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refusing to sign: the candidate tried to exfiltrate the private signing key: `{field}` holds \
     it ({encoding}). Nothing was signed; treat the key as compromised and make a new one \
     (`evo keygen`)"
)]
pub struct KeyLeak {
    /// Where it was found, e.g. `scenarios[0].pairs[3].candidate.stderr_tail`.
    pub field: String,
    pub encoding: Encoding,
}

impl KeyScanner {
    /// The key in `text`, named `field` in the error.
    pub fn check_text(&self, text: &str, field: &str) -> Result<(), KeyLeak> {
        match self.find(text) {
            Some(encoding) => Err(KeyLeak {
                field: field.to_string(),
                encoding,
            }),
            None => Ok(()),
        }
    }

    /// The key in any string of `value` (object keys included, and arrays of small numbers read
    /// as byte lists), named by its JSON path below `root`.
    pub fn check_json(&self, value: &Value, root: &str) -> Result<(), KeyLeak> {
        match value {
            Value::String(s) => self.check_text(s, root),
            Value::Array(items) => {
                let bytes: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_u64().filter(|n| *n <= 255).map(|n| n.to_string()))
                    .collect();
                if let Some(bytes) = bytes.filter(|b| !b.is_empty()) {
                    self.check_text(&bytes.join(","), root)?;
                }
                items
                    .iter()
                    .enumerate()
                    .try_for_each(|(i, v)| self.check_json(v, &format!("{root}[{i}]")))
            }
            Value::Object(map) => map.iter().try_for_each(|(k, v)| {
                let path = if root.is_empty() {
                    k.clone()
                } else {
                    format!("{root}.{k}")
                };
                self.check_text(k, &path)?;
                self.check_json(v, &path)
            }),
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }
}

fn keep(text: &str, wanted: impl Fn(char) -> bool) -> String {
    text.chars().filter(|c| wanted(*c)).collect()
}

/// The base64 characters of `data` placed after `lead` other bytes that depend on `data` alone:
/// the same in every encoding of a blob holding `data` at that alignment, padded or not.
fn inner_base64(engine: &GeneralPurpose, data: &[u8], lead: usize) -> String {
    let mut blob = vec![0u8; lead];
    blob.extend_from_slice(data);
    let encoded = engine.encode(&blob);
    let first = (8 * lead).div_ceil(6);
    let end = 8 * (lead + data.len()) / 6;
    encoded.get(first..end).unwrap_or_default().to_string()
}

/// The seed as it reads after lossy UTF-8 decoding inside any stream of bytes.
///
/// An ASCII byte always decodes as itself and ends any broken sequence before it, so the span from
/// the seed's first to its last ASCII byte decodes the same whatever bytes surround the seed. evo
/// re-indents quoted stderr line by line, so the longest line of that span is used.
fn lossy_needle(seed: &[u8]) -> Option<String> {
    let first = seed.iter().position(u8::is_ascii)?;
    let last = seed.iter().rposition(u8::is_ascii)?;
    let span = String::from_utf8_lossy(seed.get(first..=last)?).into_owned();
    let ascii = |piece: &&str| piece.chars().filter(char::is_ascii).count();
    span.split(['\n', '\r'])
        .max_by_key(ascii)
        .filter(|piece| ascii(piece) >= MIN_ASCII_IN_RAW)
        .map(str::to_string)
}

/// Per-byte escaped forms of the seed, lowercase.
fn escape_needles(seed: &[u8]) -> Vec<Needle> {
    let json = |b: u8| match b {
        b'"' => "\\\"".to_string(),
        b'\\' => "\\\\".to_string(),
        0x08 => "\\b".to_string(),
        0x0c => "\\f".to_string(),
        b'\n' => "\\n".to_string(),
        b'\r' => "\\r".to_string(),
        b'\t' => "\\t".to_string(),
        0x20..=0x7e => char::from(b).to_string(),
        _ => format!("\\u{b:04x}"),
    };
    let python_bytes = |b: u8| match b {
        b'\'' => "\\'".to_string(),
        b'\\' => "\\\\".to_string(),
        b'\n' => "\\n".to_string(),
        b'\r' => "\\r".to_string(),
        b'\t' => "\\t".to_string(),
        0x20..=0x7e => char::from(b).to_string(),
        _ => format!("\\x{b:02x}"),
    };
    let all = |f: &dyn Fn(u8) -> String, encoding| Needle {
        text: seed
            .iter()
            .map(|b| f(*b))
            .collect::<String>()
            .to_ascii_lowercase(),
        encoding,
    };
    vec![
        all(&|b| format!("\\u{b:04x}"), Encoding::JsonEscapes),
        all(&json, Encoding::JsonEscapes),
        all(&|b| format!("\\x{b:02x}"), Encoding::ByteEscapes),
        all(&python_bytes, Encoding::ByteEscapes),
    ]
}

/// The numbers written in `text` in `radix` (10 or 16), in order; a `0x` prefix is skipped and a
/// number too long to be a byte reads as `u16::MAX`.
fn numbers(text: &str, radix: u32) -> Vec<u16> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_digit(radix) {
            i += 1;
            continue;
        }
        let prefixed = radix == 16
            && chars[i] == '0'
            && matches!(chars.get(i + 1), Some('x' | 'X'))
            && chars.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit());
        if prefixed {
            i += 2;
        }
        let start = i;
        while chars.get(i).is_some_and(|c| c.is_digit(radix)) {
            i += 1;
        }
        let digits: String = chars.get(start..i).unwrap_or_default().iter().collect();
        let value = u8::from_str_radix(&digits, radix).map_or(u16::MAX, u16::from);
        out.push(value);
    }
    out
}

/// Whether `values` holds the bytes of `seed` one after another.
fn holds_run(values: &[u16], seed: &[u8]) -> bool {
    values
        .windows(seed.len())
        .any(|w| w.iter().zip(seed).all(|(v, b)| *v == u16::from(*b)))
}

#[cfg(test)]
mod tests;
