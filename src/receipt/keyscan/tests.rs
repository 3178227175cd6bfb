//! Each encoding at each alignment, with the neighbours and reformatting evo's own records add,
//! and texts that must not be taken for the key.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use sha2::{Digest, Sha256};

use super::*;

/// Deterministic seeds that cover many byte patterns.
fn seeds() -> Vec<[u8; 32]> {
    (0u8..24)
        .map(|i| Sha256::digest([b'k', i]).into())
        .chain([[0u8; 32], [0xffu8; 32], [b'A'; 32]])
        .collect()
}

/// Bytes placed before the key: every alignment, and lead bytes that swallow continuation bytes.
const LEADS: [&[u8]; 6] = [
    b"",
    b"x",
    b"xy",
    &[0xe2],
    &[0xf0, 0x9f],
    &[b'a', 0xc3, 0xff],
];
/// Bytes placed after the key.
const TAILS: [&[u8]; 4] = [b"", b"z", &[0x80, 0xbf], &[0xe2, b'\n', b'q']];

fn embedded(lead: &[u8], key: &[u8], tail: &[u8]) -> Vec<u8> {
    [lead, key, tail].concat()
}

/// The scanner finds the key in `text` in one of `encodings` (perhaps in others too).
fn expect(scanner: &KeyScanner, text: &str, encodings: &[Encoding]) {
    let found = scanner.found(text);
    assert!(
        found.iter().any(|e| encodings.contains(e)),
        "{encodings:?} expected, {found:?} found in {text:?}"
    );
}

const HEX: &[Encoding] = &[Encoding::Hex];
const BASE64: &[Encoding] = &[Encoding::Base64, Encoding::Base64Url];
const RAW: &[Encoding] = &[Encoding::LossyUtf8, Encoding::Latin1];
const ESCAPES: &[Encoding] = &[Encoding::JsonEscapes, Encoding::ByteEscapes];

#[test]
fn hex_in_any_case_with_separators_and_line_breaks() {
    for seed in seeds() {
        let s = KeyScanner::for_seed(seed);
        let key = SigningKey::from_bytes(&seed);
        let lower = hex::encode(seed);
        let upper = lower.to_uppercase();
        assert_eq!(s.find(&format!("key={lower}\n")), Some(Encoding::Hex));
        expect(&s, &format!("KEY: {upper}"), HEX);
        expect(&s, &hex::encode(key.to_keypair_bytes()), HEX);
        expect(&s, &hex::encode_upper(key.to_keypair_bytes()), HEX);
        let colons: Vec<String> = seed.iter().map(|b| format!("{b:02X}")).collect();
        expect(&s, &colons.join(":"), HEX);
        let wrapped = format!("  | {}\n  | {}", &lower[..20], &lower[20..]);
        expect(&s, &wrapped, HEX);
    }
}

#[test]
fn base64_at_every_alignment_padded_or_not_in_both_alphabets() {
    for seed in seeds() {
        let s = KeyScanner::for_seed(seed);
        let key = SigningKey::from_bytes(&seed);
        for lead in [
            &b""[..],
            b"\x01",
            b"\x01\x02",
            b"\x01\x02\x03",
            b"\x09\x08\x07\x06",
        ] {
            for tail in [&b""[..], b"\xff", b"\xff\xfe"] {
                for data in [
                    embedded(lead, &seed, tail),
                    embedded(lead, &key.to_keypair_bytes(), tail),
                ] {
                    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                        let text = format!("leaked {} done", engine.encode(&data));
                        expect(&s, &text, BASE64);
                    }
                }
            }
        }
    }
}

#[test]
fn the_pkcs8_pem_body_is_found_whole_rewrapped_or_quoted_line_by_line() {
    for seed in seeds() {
        let s = KeyScanner::for_seed(seed);
        let key = SigningKey::from_bytes(&seed);
        let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string();
        expect(&s, &pem, BASE64);
        let der = key.to_pkcs8_der().unwrap();
        let body = STANDARD.encode(der.as_bytes());
        for width in [16, 64, 76] {
            let lines: Vec<String> = body
                .as_bytes()
                .chunks(width)
                .map(|c| format!("  | {}", String::from_utf8_lossy(c)))
                .collect();
            expect(&s, &lines.join("\n"), BASE64);
        }
    }
}

#[test]
fn raw_bytes_after_lossy_utf8_decoding_whatever_surrounds_them() {
    let mut with_needle = 0;
    for seed in seeds() {
        let s = KeyScanner::for_seed(seed);
        if lossy_needle(&seed).is_none() {
            continue;
        }
        with_needle += 1;
        for lead in LEADS {
            for tail in TAILS {
                let bytes = embedded(lead, &seed, tail);
                let text = String::from_utf8_lossy(&bytes);
                expect(&s, &text, RAW);
                // evo quotes a stderr tail line by line, indented.
                let quoted: Vec<String> = text.lines().map(|l| format!("  | {l}")).collect();
                if seed.iter().all(|b| *b != b'\n' && *b != b'\r') {
                    expect(&s, &quoted.join("\n"), RAW);
                }
            }
        }
    }
    assert!(
        with_needle >= 20,
        "only {with_needle} seeds had a raw needle"
    );
}

#[test]
fn raw_bytes_decoded_as_latin1() {
    for seed in seeds() {
        let s = KeyScanner::for_seed(seed);
        let latin1: String = embedded(b"\xfe!", &seed, b"\x00")
            .iter()
            .map(|b| char::from(*b))
            .collect();
        expect(&s, &latin1, RAW);
    }
}

#[test]
fn json_and_byte_escapes_all_bytes_or_only_the_unprintable_ones() {
    for seed in seeds() {
        let s = KeyScanner::for_seed(seed);
        let bytes = embedded(b"\x05\"", &seed, b"\x7f");
        let each = |f: &dyn Fn(u8) -> String| bytes.iter().map(|b| f(*b)).collect::<String>();
        let texts = [
            each(&|b| format!("\\u{b:04x}")),
            each(&|b| format!("\\u{b:04X}")),
            each(&|b| format!("\\x{b:02x}")),
            each(&|b| format!("\\x{b:02X}")),
            // What `json.dumps` makes of the bytes read as Latin-1.
            serde_json::to_string(&bytes.iter().map(|b| char::from(*b)).collect::<String>())
                .map(|j| ascii_escaped(&j))
                .unwrap(),
            // Python's repr of the bytes.
            each(&|b| match b {
                b'\'' => "\\'".into(),
                b'\\' => "\\\\".into(),
                b'\n' => "\\n".into(),
                b'\r' => "\\r".into(),
                b'\t' => "\\t".into(),
                0x20..=0x7e => char::from(b).to_string(),
                _ => format!("\\x{b:02x}"),
            }),
        ];
        for text in texts {
            expect(&s, &format!("b'{text}'"), ESCAPES);
        }
    }
}

/// serde_json keeps non-ASCII characters; `json.dumps` escapes them as `\u00xx`.
fn ascii_escaped(json: &str) -> String {
    json.chars()
        .map(|c| match u32::from(c) {
            0x7f..=0xff => format!("\\u{:04x}", u32::from(c)),
            _ => c.to_string(),
        })
        .collect()
}

#[test]
fn byte_lists_in_decimal_and_hex() {
    for seed in seeds() {
        let s = KeyScanner::for_seed(seed);
        let dec: Vec<String> = seed.iter().map(|b| b.to_string()).collect();
        assert_eq!(
            s.find(&format!("[7, 300, {}, 9]", dec.join(", "))),
            Some(Encoding::DecimalList)
        );
        expect(&s, &dec.join(" "), &[Encoding::DecimalList]);
        let hex: Vec<String> = seed.iter().map(|b| format!("0x{b:X}")).collect();
        expect(
            &s,
            &format!("{{ {} }}", hex.join(", ")),
            &[Encoding::HexList],
        );
    }
}

#[test]
fn json_fields_are_named_by_their_path() {
    let seed = seeds()[3];
    let s = KeyScanner::for_seed(seed);
    let doc = serde_json::json!({
        "scenarios": [ { "pairs": [ { "candidate": { "stderr_tail": "fine" } },
                                    { "candidate": { "stderr_tail": hex::encode(seed) } } ] } ]
    });
    let leak = s.check_json(&doc, "").unwrap_err();
    assert_eq!(leak.field, "scenarios[0].pairs[1].candidate.stderr_tail");
    assert_eq!(leak.encoding, Encoding::Hex);
    assert!(leak.to_string().contains("exfiltrate"), "{leak}");
    let numbers = serde_json::json!({ "raw": seed.to_vec() });
    assert_eq!(s.check_json(&numbers, "p").unwrap_err().field, "p.raw");
    assert_eq!(
        s.check_json(&serde_json::json!({"a": [1, "b"]}), ""),
        Ok(())
    );
}

#[test]
fn public_material_and_other_keys_are_not_taken_for_the_key() {
    for seed in seeds() {
        let s = KeyScanner::for_seed(seed);
        let key = SigningKey::from_bytes(&seed);
        let public = key.verifying_key();
        let other = SigningKey::from_bytes(&Sha256::digest(seed).into());
        let texts = [
            hex::encode(public.as_bytes()),
            STANDARD.encode(public.as_bytes()),
            crate::receipt::keys::public_pem(&public),
            crate::receipt::keys::key_id(&public),
            hex::encode(other.to_bytes()),
            STANDARD.encode(other.to_keypair_bytes()),
            String::from_utf8_lossy(&other.to_bytes()).into_owned(),
            "thread 'main' panicked at src/main.rs:3:5:\nattempt to add with overflow".into(),
            (0..=255)
                .map(|b: u8| b.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ];
        for text in texts {
            assert_eq!(s.find(&text), None, "{text:?} taken for the key");
        }
    }
}

#[test]
fn the_scanner_never_prints_the_key() {
    let seed = seeds()[0];
    let shown = format!("{:?}", KeyScanner::for_seed(seed));
    assert!(!shown.contains(&hex::encode(seed)[..8]), "{shown}");
}
