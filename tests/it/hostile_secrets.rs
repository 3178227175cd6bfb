//! What a candidate could leak through what evo records: the private signing key (refused before
//! anything is signed) and the sealed holdouts (sealed wherever they are quoted in the receipt,
//! hashed, and in the PR text rendered from it).
//!
//! The results are synthetic, built from fixed raw runs with figures computed by evo's own
//! statistics so the receipts recompute; one test runs the real `evo confirm` on a candidate that
//! prints the key.

use crate::util;
use crate::util::synthetic::{self, Scenario};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

use evo::evidence::result::*;
use evo::receipt::{self, dsse::Envelope, seal};
use evo::report::{pr_body, pr_context::ReceiptRef};

const HOLDOUT: &str = "h-sealed";
const HOLDOUT_RUN: &str = "./bench/run.sh 30000 7 --secret-holdout-run";
const HOLDOUT_CHECK: &str = "./bench/run.sh 300 7 --secret-holdout-check";
/// What the holdout's timed runs print on stderr.
const HOLDOUT_STDERR: &str = "holdout-secret-stderr: 30000 values in 0.2 s";
/// The holdout check's output as the baseline printed it, quoted by the failing comparison.
const HOLDOUT_OUTPUT: &str = "holdout-secret-output total=48213";
const HOLDOUT_SANITIZER: &str = "==12==ERROR: AddressSanitizer: holdout-secret-overflow";
fn key() -> SigningKey {
    SigningKey::from_bytes(&Sha256::digest(b"hostile secrets test key").into())
}

/// The holdout `h-sealed`, its runs in both arms leaving `stderr`.
fn secret_holdout(stderr: &str) -> ScenarioResult {
    Scenario {
        command: HOLDOUT_RUN,
        speedup: 1.07,
        stderr,
        baseline_stderr: stderr,
        noisy: true,
        ..Scenario::holdout(HOLDOUT)
    }
    .result()
}

/// A confirmation that passed every gate, with one training scenario and one holdout (the one
/// synthetic confirmation, `util::synthetic`, with this holdout and its checks' steps).
fn clean_result() -> ConfirmResult {
    let mut steps = Vec::new();
    for tree in ["baseline", "candidate"] {
        steps.push(synthetic::step("build", tree, "make -s"));
        steps.push(synthetic::step(
            "check-sum-100k",
            tree,
            "./bench/run.sh 500 7",
        ));
        let check = format!("check-{HOLDOUT}");
        steps.push(synthetic::step(&check, tree, HOLDOUT_CHECK));
    }
    let training = Scenario {
        command: "./bench/run.sh 100000 7",
        speedup: 1.07,
        noisy: true,
        ..Scenario::training("sum-100k")
    };
    let mut scenarios = vec![training.result(), secret_holdout("")];
    synthetic::plan_holdouts(&mut scenarios);
    let gates = synthetic::passed_gates(|name| format!("{name} passed"));
    synthetic::decided(Evidence {
        steps,
        sanitizer_lane_ran: false,
        ..synthetic::evidence(scenarios, gates)
    })
}

fn payload_of(file: &[u8]) -> String {
    let env: Envelope = serde_json::from_slice(file).unwrap();
    String::from_utf8(STANDARD.decode(env.payload).unwrap()).unwrap()
}

/// The key written as a candidate might print it, one text per encoding and alignment.
fn encodings(key: &SigningKey) -> Vec<(&'static str, String)> {
    let seed = key.to_bytes();
    let mut out = vec![
        ("hex", format!("key={}", hex::encode(seed))),
        ("HEX", hex::encode_upper(key.to_keypair_bytes())),
        ("PEM", key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string()),
        ("latin-1", seed.iter().map(|b| char::from(*b)).collect()),
        (
            "\\u00xx",
            seed.iter().map(|b| format!("\\u{b:04x}")).collect(),
        ),
        (
            "\\xNN",
            seed.iter().map(|b| format!("\\x{b:02X}")).collect(),
        ),
        ("decimal list", format!("{seed:?}")),
        ("hex list", format!("{seed:#04x?}")),
    ];
    for lead in [&b""[..], b"\x01", b"\x01\x02"] {
        let blob = [lead, &seed[..], b"\xff"].concat();
        out.push(("base64", STANDARD.encode(&blob)));
        out.push(("base64 unpadded", STANDARD_NO_PAD.encode(&blob)));
        out.push(("URL-safe base64", URL_SAFE_NO_PAD.encode(&blob)));
        out.push(("lossy UTF-8", String::from_utf8_lossy(&blob).into_owned()));
    }
    out
}

#[test]
fn the_key_in_a_stderr_tail_is_refused_signing_in_every_encoding() {
    let key = key();
    for (name, text) in encodings(&key) {
        let mut r = clean_result();
        r.evidence.scenarios[0].pairs[2].candidate.stderr_tail =
            format!("starting\n{text}\ndone\n");
        let leak = receipt::sign(&r, &key).expect_err(name);
        assert_eq!(
            leak.field, "scenarios[0].pairs[2].candidate.stderr_tail",
            "{name}"
        );
        let message = leak.to_string();
        assert!(
            message.contains("tried to exfiltrate the private signing key")
                && message.contains("scenarios[0].pairs[2].candidate.stderr_tail"),
            "{name}: {message}"
        );
        assert!(!message.contains(&hex::encode(key.to_bytes())), "{message}");
    }
}

#[test]
fn the_key_anywhere_in_the_result_is_refused_even_where_the_receipt_seals_it() {
    let key = key();
    let hex = hex::encode(key.to_bytes());
    type Plant = fn(&mut ConfirmResult, &str);
    let places: [(&str, Plant); 5] = [
        ("explanation", |r, k| {
            r.evidence.explanation = Some(k.into())
        }),
        ("scenarios[1].warmups[0].run.stderr_tail", |r, k| {
            r.evidence.scenarios[1].warmups[0].run.stderr_tail = k.into()
        }),
        ("differential[0].diff", |r, k| {
            r.evidence.differential[0].diff = Some(k.into())
        }),
        ("gates[3].detail", |r, k| {
            r.evidence.gates[3].detail = k.into()
        }),
        ("steps[0].command", |r, k| {
            r.evidence.steps[0].command = k.into()
        }),
    ];
    for (field, plant) in places {
        let mut r = clean_result();
        plant(&mut r, &format!("-- {hex} --"));
        assert_eq!(receipt::sign(&r, &key).unwrap_err().field, field);
    }
    assert!(receipt::sign(&clean_result(), &key).is_ok());
}

/// A result in which the holdout's output is quoted everywhere evo can quote it: its timed runs'
/// stderr, a failing differential check (summary and diff), a sanitizer report on its check, the
/// gates that repeat them, and a baseline re-run alone.
fn result_quoting_the_holdout() -> ConfirmResult {
    let mut r = clean_result();
    let plan = r.evidence.scenarios[1].holdout.as_ref().unwrap().plan;
    r.evidence.scenarios[1] = secret_holdout(HOLDOUT_STDERR);
    r.evidence.scenarios[1].holdout =
        Some(holdout_figures(&r.evidence.scenarios[1].pairs, plan.as_ref()).unwrap());
    let summary = format!("line 1: text differs: baseline \"{HOLDOUT_OUTPUT}\" vs candidate \"x\"");
    let diff = format!("--- baseline\n+++ candidate\n@@ -1 +1 @@\n-{HOLDOUT_OUTPUT}\n+x\n");
    r.evidence.differential[1].same = false;
    r.evidence.differential[1].summary = Some(summary.clone());
    r.evidence.differential[1].diff = Some(diff.clone());
    r.evidence.differential.push(DifferentialRecord {
        lane: CheckLane::Sanitizer,
        ..r.evidence.differential[1].clone()
    });
    r.evidence.sanitizer_lane_ran = true;
    r.evidence.sanitizer_findings.push(SanitizerFinding {
        tree: TreeLabel::CandidateSanitize,
        step: StepName::check(HOLDOUT),
        kind: "AddressSanitizer".into(),
        excerpt: format!("{HOLDOUT_SANITIZER}\n    #0 0x1 in main prog.c:3\n"),
    });
    r.evidence.steps.push(synthetic::step(
        &format!("check-{HOLDOUT}-alone"),
        "baseline-alone",
        HOLDOUT_CHECK,
    ));
    let set = |r: &mut ConfirmResult, name: GateName, detail: String| {
        let g = r
            .evidence
            .gates
            .iter_mut()
            .find(|g| g.name == name)
            .unwrap();
        (g.status, g.detail) = (GateStatus::Failed, detail);
    };
    set(
        &mut r,
        GateName::Differential,
        format!("scenario `{HOLDOUT}` (differential): {summary}\n{diff}"),
    );
    set(
        &mut r,
        GateName::Sanitizers,
        format!("AddressSanitizer in `{HOLDOUT}`:\n{HOLDOUT_SANITIZER}\n"),
    );
    set(
        &mut r,
        GateName::Tests,
        format!("`{HOLDOUT_CHECK}` in the candidate tree: exit code 1\n  | {HOLDOUT_STDERR}"),
    );
    synthetic::decide_again(&mut r);
    r
}

const SECRETS: [&str; 6] = [
    HOLDOUT_RUN,
    HOLDOUT_CHECK,
    HOLDOUT_STDERR,
    HOLDOUT_OUTPUT,
    HOLDOUT_SANITIZER,
    "secret",
];

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The run's holdout seal key, known here so the test can re-derive the seal as its holder can.
fn seal_key() -> receipt::SealKey {
    receipt::SealKey::from_bytes([5; 32])
}

#[test]
fn holdout_output_is_sealed_everywhere_in_the_signed_payload_and_keyed() {
    let r = result_quoting_the_holdout();
    let signed = receipt::sign_sealed(&r, &key(), &seal_key()).unwrap();
    let payload = payload_of(&signed.bytes);
    for secret in SECRETS {
        assert!(!payload.contains(secret), "{secret:?} is in the receipt");
    }
    let holdout = &r.evidence.scenarios[1];
    let originals = [
        holdout.pairs[0].candidate.stderr_tail.clone(),
        r.evidence.differential[1].summary.clone().unwrap(),
        r.evidence.differential[1].diff.clone().unwrap(),
        r.evidence.sanitizer_findings[0].excerpt.clone(),
        r.evidence
            .gates
            .iter()
            .find(|g| g.name == GateName::Differential)
            .unwrap()
            .detail
            .clone(),
    ];
    for original in originals {
        assert!(
            payload.contains(&seal::seal_text(&original, &seal_key())),
            "the keyed digest of {original:?} is not in the receipt"
        );
        assert!(
            !payload.contains(&sha256(&original)),
            "the plain sha256 of {original:?} is in the receipt"
        );
    }
    // Training output stays readable, and the holder of result.json can check every sealed field.
    assert!(payload.contains("./bench/run.sh 100000 7"));
    let v = receipt::verify(&signed.bytes, &key().verifying_key()).unwrap();
    let p = &v.statement.predicate;
    let sealed = |text: &str| seal::seal_text(text, &seal_key());
    assert_eq!(
        p.evidence.scenarios[1].warmups[0].run.stderr_tail,
        sealed(HOLDOUT_STDERR)
    );
    assert_eq!(p.evidence.scenarios[1].pairs, {
        let mut pairs = r.evidence.scenarios[1].pairs.clone();
        for run in pairs
            .iter_mut()
            .flat_map(|p| [&mut p.baseline, &mut p.candidate])
        {
            run.stderr_tail = sealed(HOLDOUT_STDERR);
            run.stdout_sha256 = sealed(&run.stdout_sha256);
            run.stdout_bytes = 0;
        }
        pairs
    });
    for (sealed_gate, original) in p.evidence.gates.iter().zip(&r.evidence.gates) {
        let sealed = (sealed_gate.detail == original.detail)
            .then_some(sealed_gate)
            .map_or_else(|| sealed(&original.detail), |g| g.detail.clone());
        assert!(
            sealed_gate.detail == sealed,
            "{}: {:?}",
            sealed_gate.name,
            sealed_gate.detail
        );
    }
    assert_eq!(p.evidence.steps.last().unwrap().command, receipt::SEALED);
    assert_eq!(receipt::recompute::recompute(p), vec![]);
}

#[test]
fn a_failed_holdout_timed_run_is_sealed_though_its_message_names_no_scenario() {
    let mut r = clean_result();
    r.evidence.scenarios.truncate(1);
    let g = r
        .evidence
        .gates
        .iter_mut()
        .find(|g| g.name == GateName::TimedOutput)
        .unwrap();
    g.status = GateStatus::Failed;
    g.detail = format!(
        "a timed run of the candidate failed: the candidate command failed (exit code 1): \
         `{HOLDOUT_RUN}`\nlast lines of its stderr:\n  | {HOLDOUT_STDERR}"
    );
    synthetic::decide_again(&mut r);
    let signed = receipt::sign(&r, &key()).unwrap();
    let payload = payload_of(&signed.bytes);
    for secret in [HOLDOUT_RUN, HOLDOUT_STDERR] {
        assert!(!payload.contains(secret), "{secret:?} is in the receipt");
    }
    let p = receipt::verify(&signed.bytes, &key().verifying_key())
        .unwrap()
        .statement
        .predicate;
    assert_eq!(receipt::recompute::recompute(&p), vec![]);
}

#[test]
fn a_failed_training_check_stays_readable() {
    let mut r = clean_result();
    r.evidence.differential[0].same = false;
    r.evidence.differential[0].summary = Some("line 1: public training difference".into());
    let g = r
        .evidence
        .gates
        .iter_mut()
        .find(|g| g.name == GateName::Differential)
        .unwrap();
    g.status = GateStatus::Failed;
    g.detail = "scenario `sum-100k` (differential): line 1: public training difference".into();
    synthetic::decide_again(&mut r);
    let payload = payload_of(&receipt::sign(&r, &key()).unwrap().bytes);
    assert!(payload.contains("differential failed: scenario `sum-100k` (differential)"));
    assert!(payload.contains("\"line 1: public training difference\""));
}

#[test]
fn the_pr_text_shows_the_sealed_forms_only() {
    let r = result_quoting_the_holdout();
    let signed = receipt::sign_sealed(&r, &key(), &seal_key()).unwrap();
    let verified = receipt::verify(&signed.bytes, &key().verifying_key()).unwrap();
    let reference = ReceiptRef {
        file: receipt::RECEIPT_FILE.into(),
        sha256: signed.sha256.clone(),
        key_id: signed.key_id.clone(),
    };
    let body = pr_body::render_default(&verified.statement.predicate, &reference).unwrap();
    for secret in SECRETS {
        assert!(!body.contains(secret), "{secret:?} is in the PR text");
    }
    assert!(body.contains("sealed holdout (hmac-sha256:"), "{body}");
    // `evo confirm` renders the same text from its own sealing of the result.
    let sealed = seal::seal_holdouts(&r, &seal_key());
    assert_eq!(
        pr_body::render_default(&sealed, &reference).unwrap(),
        body,
        "the PR text evo confirm writes must equal the one rendered from the receipt"
    );
}

const CAMPAIGN: &str = r#"{
  "name": "cpairs-leak",
  "repo": "../repo",
  "baseline": "main",
  "workload": "workload.json",
  "key": "keys/signing.key",
  "candidates": [ { "name": "leak", "patch": "leak.patch" } ],
  "confirm": { "pairs": 6, "aa_pairs": 6 },
  "output": "receipts"
}"#;

/// The real pipeline: a candidate whose program prints the private key (which it got somehow:
/// here the patch carries it) on stderr. Its timed runs' stderr tails would carry the key into the
/// receipt; evo refuses to sign and writes nothing but `error.txt`.
/// A campaign folder whose one candidate prints the campaign's private key on stderr; returns
/// the folder and the key in hex.
fn leak_campaign(dir: &Path) -> (PathBuf, String) {
    let repo = dir.join("repo");
    util::fixture_repo("cpairs", &repo);
    let camp = dir.join("camp");
    let keys = camp.join("keys");
    let keygen = util::evo()
        .args(["keygen", "--out"])
        .arg(&keys)
        .output()
        .unwrap();
    assert!(keygen.status.success(), "{}", util::text(&keygen));
    let key = receipt::keys::load_signing_key(&keys.join("signing.key")).unwrap();
    let hex = hex::encode(key.to_bytes());
    util::write(&camp.join("workload.json"), util::cpairs::WORKLOAD);
    util::write(&camp.join("campaign.json"), CAMPAIGN);
    let print_key = format!(
        "    fprintf(stderr, \"cache warm, token %s\\n\", \"{hex}\");\n    long n = atol(argv[1]);"
    );
    // Also much faster (memoized), so a campaign screens it well and confirms it.
    let diff = util::patch_by_editing(
        &repo,
        &[
            ("prog.c", "    long n = atol(argv[1]);", &print_key),
            util::cpairs::MEMO_EDITS[0],
            util::cpairs::MEMO_EDITS[1],
        ],
    );
    util::write(&camp.join("leak.patch"), &diff);
    (camp, hex)
}

#[test]
fn a_candidate_printing_the_key_gets_no_receipt_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let (camp, hex) = leak_campaign(dir.path());
    let out = util::evo()
        .arg("confirm")
        .arg(camp.join("leak.patch"))
        .arg("--campaign")
        .arg(camp.join("campaign.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", util::text(&out));
    assert!(
        stderr.contains("tried to exfiltrate the private signing key")
            && stderr.contains(".candidate.stderr_tail")
            && stderr.contains("(hex)"),
        "{}",
        util::text(&out)
    );
    assert!(!stderr.contains(&hex) && !String::from_utf8_lossy(&out.stdout).contains(&hex));
    let files = util::files_under(&camp.join("receipts"));
    let named = |name: &str| {
        files
            .iter()
            .any(|f| f.file_name().is_some_and(|n| n == name))
    };
    for written in [receipt::RECEIPT_FILE, "result.json", "pr_body.md"] {
        assert!(!named(written), "{written} was written: {files:?}");
    }
    let error = files
        .iter()
        .find(|f| f.ends_with("error.txt"))
        .expect("error.txt");
    let error = std::fs::read_to_string(error).unwrap();
    assert!(
        error.contains("exfiltrate") && !error.contains(&hex),
        "{error}"
    );
}

/// In a campaign the same candidate is `rejected` (not merely inconclusive), and the campaign
/// stops: a key a candidate holds can sign nothing that proves anything.
#[test]
fn a_campaign_rejects_a_candidate_printing_the_key_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (camp, hex) = leak_campaign(dir.path());
    let out = util::evo()
        .args(["campaign", "run"])
        .arg(camp.join("campaign.json"))
        .output()
        .unwrap();
    let text = util::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("compromised"), "{text}");
    assert!(!text.contains(&hex), "the key is never printed");
    let files = util::files_under(&camp.join("receipts"));
    let journal = files
        .iter()
        .find(|f| f.ends_with("journal.jsonl"))
        .expect("journal.jsonl");
    let journal = std::fs::read_to_string(journal).unwrap();
    let last_status = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .rfind(|e| e["entry"] == "status" && e["index"] == 1)
        .expect("a status for the candidate");
    assert_eq!(last_status["status"], "rejected", "{journal}");
    assert!(
        !files
            .iter()
            .any(|f| f.ends_with(receipt::RECEIPT_FILE) || f.ends_with("pr_body.md")),
        "{files:?}"
    );
}
