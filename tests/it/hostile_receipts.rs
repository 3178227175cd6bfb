//! Hostile receipts: real receipts written by `evo confirm` with one bit flipped at every byte
//! position must all fail to verify, and a receipt signed by another key must fail against the
//! configured key with a message saying so.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ed25519_dalek::VerifyingKey;

use evo::exit_codes::{ACCEPTED, VERIFICATION_FAILED};
use evo::receipt::{self, keys};
use util::cpairs::{HOT_LINE, WORKLOAD};
use util::{fixture_repo, patch_by_editing, snapshot, text, write};

const CAMPAIGN: &str = r#"{
  "name": "cpairs-receipts",
  "repo": "../repo",
  "baseline": "main",
  "workload": "workload.json",
  "confirm": { "pairs": 6, "aa_pairs": 6 },
  "key": "signer/signing.key",
  "output": "receipts"
}"#;

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    camp: PathBuf,
    /// The per-user default key folder of every evo this fixture runs.
    default_keys: PathBuf,
}

impl Fixture {
    /// The cpairs repository and a campaign that signs with `camp/signer/signing.key`.
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo("cpairs", &repo);
        let camp = dir.path().join("camp");
        // Short timed runs and no sanitizer lane: the receipts need raw runs, not precise ones,
        // and a smaller receipt is checked faster.
        let sanitize = WORKLOAD
            .lines()
            .find(|l| l.contains("\"sanitize\""))
            .unwrap();
        let workload = WORKLOAD
            .replace("./bench/run.sh 100000", "./bench/run.sh 20000")
            .replace(&format!("{sanitize}\n"), "");
        write(&camp.join("workload.json"), &workload);
        write(&camp.join("campaign.json"), CAMPAIGN);
        let fx = Fixture {
            default_keys: dir.path().join("default-keys"),
            _dir: dir,
            repo,
            camp,
        };
        fx.keygen(Some(&fx.camp.join("signer")));
        fx
    }

    fn evo(&self) -> Command {
        let mut cmd = util::evo();
        cmd.env(keys::KEY_DIR_ENV, &self.default_keys);
        cmd
    }

    /// `evo keygen` into `dir`, or into the default key folder.
    fn keygen(&self, dir: Option<&Path>) {
        let mut cmd = self.evo();
        cmd.arg("keygen");
        if let Some(dir) = dir {
            cmd.arg("--out").arg(dir);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
    }

    fn signer_public(&self) -> PathBuf {
        self.camp.join("signer").join(keys::PUBLIC_KEY_FILE)
    }

    /// Confirms the patch made by `edits`; returns the receipt file's path. The user's repository
    /// must not change, and the verdict must not be `accepted`.
    fn receipt_of(&self, name: &str, edits: &[(&str, &str, &str)]) -> PathBuf {
        let diff = patch_by_editing(&self.repo, edits);
        let patch = self.camp.join(name);
        write(&patch, &diff);
        let before = snapshot(&self.repo);
        let out = self
            .evo()
            .arg("confirm")
            .arg(&patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .output()
            .unwrap();
        assert_eq!(before, snapshot(&self.repo), "{}", text(&out));
        let (dir, result) = util::first_result(&self.camp)
            .unwrap_or_else(|| panic!("no result.json\n{}", text(&out)));
        // A machine too loaded to resolve the minimum effect makes the run inconclusive; the
        // receipt is as good a target either way.
        util::real_verdict(&result, &out, &["rejected", "inconclusive"]);
        std::fs::rename(&dir, self.camp.join(name.replace(".patch", ""))).unwrap();
        self.camp
            .join(name.replace(".patch", ""))
            .join(receipt::RECEIPT_FILE)
    }

    fn verify_cli(&self, receipt: &Path, key: Option<&Path>) -> Output {
        let mut cmd = self.evo();
        cmd.args(["receipt", "verify"]).arg(receipt);
        if let Some(key) = key {
            cmd.arg("--key").arg(key);
        }
        cmd.output().unwrap()
    }
}

/// A patch to the protected harness: refused at once, with a small receipt.
const PROTECTED_EDIT: (&str, &str, &str) = ("bench/run.sh", "exec ./prog", "exec nice ./prog");

/// A slower candidate: measured, so its receipt carries raw runs, steps and figures.
const SLOWER_EDIT: (&str, &str, &str) = (
    "prog.c",
    HOT_LINE,
    "        volatile unsigned long sink = slow_hash(v + 1);\n        (void)sink;\n        total += slow_hash(v);",
);

/// The regions of a receipt file: the payload's base64 text, and everything else (the envelope
/// around it: payload type, key id, signature, JSON punctuation and layout).
fn payload_span(file: &[u8]) -> std::ops::Range<usize> {
    let marker = b"\"payload\": \"";
    let start = file
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("a payload field")
        + marker.len();
    let len = file[start..]
        .iter()
        .position(|b| *b == b'"')
        .expect("the payload's closing quote");
    start..start + len
}

/// Flips bit `bit` of byte `at` and asserts the receipt no longer verifies; returns the
/// offsets and bytes that still verified.
fn flipped_verifies(file: &[u8], key: &VerifyingKey, at: usize, bit: u8) -> Option<String> {
    let mut changed = file.to_vec();
    changed[at] ^= 1 << bit;
    receipt::verify(&changed, key).ok().map(|_| {
        format!(
            "offset {at}: byte {:#04x} ({:?}) -> {:#04x} ({:?})",
            file[at], file[at] as char, changed[at], changed[at] as char
        )
    })
}

/// Every byte outside the payload, and `samples` payload bytes spread evenly (every payload
/// byte when there are fewer): the positions to change.
fn positions(file: &[u8], samples: usize) -> Vec<usize> {
    let payload = payload_span(file);
    let step = (payload.len() / samples).max(1);
    (0..file.len())
        .filter(|at| !payload.contains(at) || (at - payload.start).is_multiple_of(step))
        .collect()
}

/// Applies each single-bit change (offset, bit) to `file`; returns those that still verified.
/// Each check of a signature costs milliseconds in a debug build, so the work is spread over the
/// cores.
fn surviving_flips(file: &[u8], key: &VerifyingKey, flips: &[(usize, u8)]) -> Vec<String> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        // Dealt out in turn: the costly flips (those that reach the signature) are not spread
        // evenly over the file.
        let handles: Vec<_> = (0..threads)
            .map(|first| {
                scope.spawn(move || {
                    flips
                        .iter()
                        .skip(first)
                        .step_by(threads)
                        .filter_map(|&(at, bit)| flipped_verifies(file, key, at, bit))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

#[test]
fn every_bit_of_a_small_real_receipts_envelope_flipped_is_refused() {
    // The receipt of a refused patch: small, but written and signed by `evo confirm` itself.
    let fx = Fixture::new();
    let path = fx.receipt_of("protected.patch", &[PROTECTED_EDIT]);
    let file = std::fs::read(&path).unwrap();
    let key = keys::load_verifying_key(&fx.signer_public()).unwrap();
    receipt::verify(&file, &key).expect("the receipt as written verifies");
    // Each of the eight bits of every byte of the envelope (payload type, key id, signature,
    // punctuation and layout), and one bit of 500 payload bytes spread over it.
    let payload = payload_span(&file);
    let flips: Vec<(usize, u8)> = positions(&file, 500)
        .into_iter()
        .flat_map(|at| {
            let bits: Vec<u8> = if payload.contains(&at) {
                vec![(at % 8) as u8]
            } else {
                (0..8).collect()
            };
            bits.into_iter().map(move |bit| (at, bit))
        })
        .collect();
    assert!(flips.len() >= 8 * (file.len() - payload.len()));
    let survivors = surviving_flips(&file, &key, &flips);
    assert!(
        survivors.is_empty(),
        "{} of {} single-bit changes still verify:\n{}",
        survivors.len(),
        flips.len(),
        survivors.join("\n")
    );
}

#[test]
fn every_byte_of_a_measured_receipt_changed_by_one_bit_is_refused() {
    let fx = Fixture::new();
    let path = fx.receipt_of("slower.patch", &[SLOWER_EDIT]);
    let file = std::fs::read(&path).unwrap();
    let key = keys::load_verifying_key(&fx.signer_public()).unwrap();
    let verified = receipt::verify(&file, &key).expect("the receipt as written verifies");
    assert!(
        !verified.statement.predicate.evidence.scenarios[0]
            .pairs
            .is_empty(),
        "the receipt holds no paired runs"
    );
    // Every byte of the file, payload included, one bit each (the bit cycles through all eight
    // positions). Cheap enough with the signature crates optimized in test builds (Cargo.toml).
    let flips: Vec<(usize, u8)> = positions(&file, usize::MAX)
        .into_iter()
        .map(|at| (at, (at % 8) as u8))
        .collect();
    let payload = payload_span(&file);
    let in_payload = flips.iter().filter(|(at, _)| payload.contains(at)).count();
    assert_eq!(
        in_payload,
        payload.len(),
        "not every payload byte was changed"
    );
    let survivors = surviving_flips(&file, &key, &flips);
    assert!(
        survivors.is_empty(),
        "{} of {} single-bit changes still verify:\n{}",
        survivors.len(),
        flips.len(),
        survivors.join("\n")
    );
    // The command line says why, with the verification-failed exit code, for a change in each
    // part of the file.
    let sig_at = find(&file, b"\"sig\": \"") + 20;
    let keyid_at = find(&file, b"\"keyid\": \"sha256:") + 20;
    let type_at = find(&file, b"in-toto");
    let cases = [
        (
            payload.start + payload.len() / 2,
            "the payload or the signature was changed",
        ),
        (sig_at, "the payload or the signature was changed"),
        (keyid_at, "the key id was changed"),
        (type_at, "unknown payload type"),
    ];
    for (at, reason) in cases {
        let mut changed = file.clone();
        changed[at] = alphanumeric_flip(file[at]);
        let tampered = path.with_file_name(format!("tampered-{at}.json"));
        std::fs::write(&tampered, &changed).unwrap();
        let out = fx.verify_cli(&tampered, Some(&fx.signer_public()));
        assert_eq!(
            out.status.code(),
            Some(VERIFICATION_FAILED),
            "offset {at}\n{}",
            text(&out)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("does not verify") && stderr.contains(reason),
            "offset {at}: {reason:?} missing\n{stderr}"
        );
    }
}

/// The byte with one bit flipped, chosen so it stays a letter or digit (so base64 stays base64).
fn alphanumeric_flip(byte: u8) -> u8 {
    (0..7)
        .map(|bit| byte ^ (1 << bit))
        .find(u8::is_ascii_alphanumeric)
        .unwrap_or(byte ^ 1)
}

fn find(file: &[u8], what: &[u8]) -> usize {
    file.windows(what.len())
        .position(|w| w == what)
        .unwrap_or_else(|| panic!("{:?} not in the receipt", String::from_utf8_lossy(what)))
}

#[test]
fn a_receipt_signed_by_another_key_fails_against_the_configured_key() {
    let fx = Fixture::new();
    // The configured key: the per-user default; the campaign signs with its own key instead.
    fx.keygen(None);
    let path = fx.receipt_of("protected.patch", &[PROTECTED_EDIT]);
    let default_id = keys::key_id(
        &keys::load_verifying_key(&fx.default_keys.join(keys::PUBLIC_KEY_FILE)).unwrap(),
    );
    let signer_id = keys::key_id(&keys::load_verifying_key(&fx.signer_public()).unwrap());
    assert_ne!(default_id, signer_id);
    let out = fx.verify_cli(&path, None);
    assert_eq!(
        out.status.code(),
        Some(VERIFICATION_FAILED),
        "{}",
        text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "wrong key: the receipt is signed by {signer_id}, not by the verifying key {default_id}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&fx.default_keys.display().to_string()),
        "the key used is not named\n{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out));
    // The same file verifies with the key that signed it: only the key was wrong.
    let out = fx.verify_cli(&path, Some(&fx.signer_public()));
    assert_eq!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("signature valid"));
}
