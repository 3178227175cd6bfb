//! What a candidate could leak through what evo records: the private signing key (refused before
//! anything is signed) and the sealed holdouts (sealed wherever they are quoted in the receipt,
//! hashed, and in the PR text rendered from it).
//!
//! The results are synthetic, built from fixed raw runs with figures computed by evo's own
//! statistics so the receipts recompute; one test runs the real `evo confirm` on a candidate that
//! prints the key.

use crate::util;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

use evo::environment::{Environment, Machine};
use evo::evidence::figures::{self, BenchSettings};
use evo::evidence::result::*;
use evo::evidence::verdict::{self, gate};
use evo::measure::record::{Arm, ExitStatus, Order, Pair, Purpose, RunRecord, WarmupRun};
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
const JITTER: [f64; 11] = [
    0.004, -0.003, 0.001, 0.006, -0.005, 0.002, -0.001, 0.003, -0.004, 0.005, 0.0,
];

fn key() -> SigningKey {
    SigningKey::from_bytes(&Sha256::digest(b"hostile secrets test key").into())
}

fn run(wall_s: f64, stderr: &str) -> RunRecord {
    RunRecord {
        stdout_sha256: "5".repeat(64),
        stdout_bytes: 24,
        stderr_tail: stderr.to_string(),
        ..RunRecord::exited_ok(wall_s)
    }
}

fn pairs(n: usize, speedup: f64, alternate: bool, stderr: &str) -> Vec<Pair> {
    (0..n)
        .map(|i| {
            let j = JITTER[i % JITTER.len()];
            let order = if !alternate || i % 2 == 1 {
                Order::BaselineFirst
            } else {
                Order::CandidateFirst
            };
            let b = 0.5 * (1.0 + j);
            let c = b / (speedup * (1.0 + j / 2.0));
            Pair::new(i, order, run(b, stderr), run(c, stderr))
        })
        .collect()
}

fn scenario(name: &str, role: Role, command: &str, stderr: &str) -> ScenarioResult {
    let measured = pairs(9, 1.07, true, stderr);
    let warmups = [Arm::Candidate, Arm::Baseline]
        .into_iter()
        .map(|arm| WarmupRun {
            arm,
            purpose: Purpose::Warmup,
            run: run(0.5, stderr),
            seed: None,
        })
        .collect();
    let mut s = ScenarioResult {
        name: name.into(),
        role,
        baseline_command: command.into(),
        candidate_command: command.into(),
        cwd: ".".into(),
        warmups,
        aa_pairs: Vec::new(),
        pairs: Vec::new(),
        training: None,
        holdout: None,
        timed_output_consistent: Some(true),
        replay: None,
        instructions: None,
        aa_second_build: false,
        order_seed: None,
    };
    if role == Role::Training {
        let aa = pairs(11, 1.0, false, stderr);
        let settings = BenchSettings {
            pairs: 9,
            max_pairs: 9,
            budget_s: None,
            aa_pairs: 11,
            warmup: 1,
            min_effect: 0.01,
            target_effect: 0.015,
            first: Order::CandidateFirst,
            order_seed: None,
            mde_seed: 7,
            timeout_s: 20.0,
        };
        s.training = Some(figures::figures(&settings, &aa, &measured).unwrap());
        s.aa_pairs = aa;
    } else {
        s.holdout = Some(holdout_figures(&measured, None).unwrap());
    }
    s.pairs = measured;
    s
}

fn step(step: &str, tree: &str, command: &str) -> StepRecord {
    StepRecord {
        step: step.parse().unwrap(),
        tree: tree.parse().unwrap(),
        command: command.into(),
        cwd: ".".into(),
        status: ExitStatus::Exited { code: 0 },
        timed_out: false,
        leftover_processes: false,
        wall_s: 0.25,
        stdout_sha256: "6".repeat(64),
        stdout_log: format!("logs/{tree}/{step}.stdout.log"),
        stderr_log: format!("logs/{tree}/{step}.stderr.log"),
    }
}

fn differential(scenario: &str, role: Role) -> DifferentialRecord {
    DifferentialRecord {
        scenario: scenario.into(),
        role,
        lane: CheckLane::Differential,
        rule: "exact".into(),
        baseline_sha256: "7".repeat(64),
        candidate_sha256: "7".repeat(64),
        same: true,
        summary: None,
        diff: None,
    }
}

/// A confirmation that passed every gate, with one training scenario and one holdout.
fn clean_result() -> ConfirmResult {
    let mut steps = Vec::new();
    for tree in ["baseline", "candidate"] {
        steps.push(step("build", tree, "make -s"));
        steps.push(step("check-sum-100k", tree, "./bench/run.sh 500 7"));
        steps.push(step(&format!("check-{HOLDOUT}"), tree, HOLDOUT_CHECK));
    }
    let gates: Vec<Gate> = GateName::ALL
        .iter()
        .map(|name| gate(*name, GateStatus::Passed, format!("{name} passed")))
        .collect();
    let mut scenarios = vec![
        scenario("sum-100k", Role::Training, "./bench/run.sh 100000 7", ""),
        scenario(HOLDOUT, Role::Holdout, HOLDOUT_RUN, ""),
    ];
    let plan = holdout_plan(
        &scenarios,
        evo::evidence::result::HoldoutCounts {
            pairs: 9,
            max_pairs: 9,
            warmups: 1,
            budget_s: None,
            budget_split: None,
        },
        &[],
    );
    scenarios[1].holdout = Some(holdout_figures(&scenarios[1].pairs, plan.as_ref()).unwrap());
    let evidence = Evidence {
        evo_version: "0.0.0-test".into(),
        rules: evo::evidence::verdict::RULES,
        run_id: "20261201T120000Z-memo-0123456".into(),
        campaign_file: "/home/alice/camp/campaign.json".into(),
        campaign_name: "cpairs".into(),
        repo: "/home/alice/repo".into(),
        baseline_commitish: "main".into(),
        baseline_sha: "0123456789abcdef0123456789abcdef01234567".into(),
        workload_name: "cpairs".into(),
        workload_digest: "1".repeat(64),
        holdout_portfolio_digest: Some("2".repeat(64)),
        holdout_names: vec![HOLDOUT.into()],
        patch: PatchInfo {
            source: "/home/alice/camp/memo.patch".into(),
            file: "candidate.patch".into(),
            sha256: "3".repeat(64),
            files: Vec::new(),
            added: 1,
            removed: 1,
            applier: Some("libgit2".into()),
        },
        overlay: Vec::new(),
        seed: 7,
        holdout_seed: None,
        warnings: Vec::new(),
        min_effect: 0.01,
        metric: Default::default(),
        environment: Environment {
            machine: Machine {
                cpu_model: "Example CPU".into(),
                logical_cores: 4,
                mem_total_kib: 1 << 24,
                kernel: "6.1.0".into(),
                virtualization: "container".into(),
            },
            load_1m_before: Some(0.5),
            load_1m_after: Some(0.5),
            quiet: None,
            cpus: None,
            job: None,
        },
        steps,
        artifacts: Vec::new(),
        differential: vec![
            differential("sum-100k", Role::Training),
            differential(HOLDOUT, Role::Holdout),
        ],
        sanitizer_lane_ran: false,
        sanitizer_findings: Vec::new(),
        scenarios,
        gates,
        timings: Timings::default(),
        candidates_tried: 1,
        search: None,
        explanation: None,
        config_lane: ConfigLane::default(),
        sandbox: Default::default(),
        timed_programs_unchanged: false,
        from_agent: false,
        read_only_inputs: Vec::new(),
    };
    let d = verdict::decide(&evidence.gates, &evidence.scenarios);
    ConfirmResult::decided(evidence, d)
}

fn decide(r: &mut ConfirmResult) {
    let d = verdict::decide(&r.evidence.gates, &r.evidence.scenarios);
    (r.tier, r.verdict, r.reasons) = (d.tier, d.verdict, d.reasons);
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
    r.evidence.scenarios[1] = scenario(HOLDOUT, Role::Holdout, HOLDOUT_RUN, HOLDOUT_STDERR);
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
    r.evidence.steps.push(step(
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
    decide(&mut r);
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
    decide(&mut r);
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
    decide(&mut r);
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
