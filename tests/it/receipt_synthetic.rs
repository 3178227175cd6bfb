//! Receipts and PR text from a synthetic confirmation: signing, tampering, wrong keys, recomputing,
//! sealing the holdouts, the rendered PR body (snapshots), and verification with OpenSSL alone.
//!
//! The result is built from fixed raw runs and its figures are computed by evo's own statistics,
//! so it is self-consistent, and a fixed key makes the signature (Ed25519 is deterministic) and
//! with it the receipt digest in the PR text reproducible.

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::SigningKey;

use crate::util::synthetic::{self, Scenario};
use evo::environment::{Environment, Machine};
use evo::evidence::result::*;
use evo::evidence::verdict::{self, gate};
use evo::receipt::{self, EnvelopeError, VerifyError, dsse::Envelope, keys};
use evo::report::{pr_body, pr_context::ReceiptRef};
use evo::stats::Tier;

const TRAINING_CMD: &str = "./bench/run.sh 100000 7";
const HOLDOUT_CMD: &str = "./bench/run.sh 30000 7 --secret-holdout-input";
const HOLDOUT_CHECK: &str = "./bench/run.sh 300 7 --secret-holdout-check";
fn key() -> SigningKey {
    SigningKey::from_bytes(&[42u8; 32])
}

/// A confirmation that passed every gate: tested tier with one holdout, a harness overlay and
/// the author's explanation (the one synthetic confirmation, `util::synthetic`, with this
/// campaign's scenarios, steps and records).
fn tested_result() -> ConfirmResult {
    let mut steps = Vec::new();
    for tree in ["baseline", "candidate"] {
        steps.push(synthetic::step("build", tree, "make -s"));
        steps.push(synthetic::step("test-1", tree, "./prog --selftest"));
        steps.push(synthetic::step(
            "check-sum-100k",
            tree,
            "./bench/run.sh 500 7",
        ));
        steps.push(synthetic::step("check-sum-30k", tree, HOLDOUT_CHECK));
    }
    let training = Scenario {
        command: TRAINING_CMD,
        speedup: 1.072,
        noisy: true,
        ..Scenario::training("sum-100k")
    };
    let holdout = Scenario {
        command: HOLDOUT_CMD,
        speedup: 1.02,
        noisy: true,
        ..Scenario::holdout("sum-30k")
    };
    let mut scenarios = vec![training.result(), holdout.result()];
    synthetic::plan_holdouts(&mut scenarios);
    let gates = synthetic::passed_gates(|name| format!("{name} passed"));
    let plain = synthetic::evidence(scenarios, gates);
    synthetic::decided(Evidence {
        run_id: "20261201T120000Z-memo-0123456".into(),
        campaign_file: "/home/alice/camp/campaign.json".into(),
        campaign_name: "cpairs-speedups".into(),
        repo: "/home/alice/repo".into(),
        workload_name: "cpairs".into(),
        patch: PatchInfo {
            source: "/home/alice/camp/memo.patch".into(),
            files: vec![PatchFileChange {
                added: 11,
                ..plain.patch.files[0].clone()
            }],
            added: 11,
            ..plain.patch.clone()
        },
        environment: Environment {
            machine: Machine {
                cpu_model: "Example CPU @ 2.0GHz".into(),
                logical_cores: 4,
                mem_total_kib: 16 * 1024 * 1024,
                kernel: "6.1.0".into(),
                virtualization: "container".into(),
            },
            load_1m_before: Some(0.5),
            load_1m_after: Some(0.75),
            ..plain.environment.clone()
        },
        steps,
        artifacts: vec![
            ArtifactDigest {
                tree: TreeLabel::Baseline,
                path: "prog".into(),
                sha256: "8".repeat(64),
            },
            ArtifactDigest {
                tree: TreeLabel::Candidate,
                path: "prog".into(),
                sha256: "9".repeat(64),
            },
        ],
        explanation: Some("Memoizes slow_hash: the loop sees only 1000 distinct inputs.".into()),
        sandbox: evo::measure::sandbox::SandboxRecord {
            enabled: true,
            tool: Some("bubblewrap 0.8.0".into()),
            detail: "no network, read-only outside the tree".into(),
            ..Default::default()
        },
        ..plain
    })
}

/// No holdout, no harness overlay, no explanation, found by a search over three candidates in
/// three rounds, each built on the one before.
fn measured_result() -> ConfirmResult {
    let mut r = tested_result();
    r.evidence.scenarios.truncate(1);
    r.evidence.holdout_portfolio_digest = None;
    r.evidence.holdout_names.clear();
    r.evidence.differential.truncate(1);
    r.evidence
        .steps
        .retain(|s| s.step != StepName::check("sum-30k"));
    r.evidence.overlay.clear();
    r.evidence.explanation = None;
    r.evidence.sandbox = evo::measure::sandbox::SandboxRecord {
        enabled: false,
        tool: None,
        detail: "off: bubblewrap (`bwrap`) is not installed (sandbox.mode \"auto\")".into(),
        ..Default::default()
    };
    r.evidence.candidates_tried = 3;
    r.evidence.search = Some(SearchFigures {
        scenario: "sum-100k".into(),
        pairs: 5,
        median: 1.081,
        ci95: None,
        lineage: Some(Lineage {
            name: "agent-3".into(),
            round: 3,
            rounds: 3,
            agent_runs: 3,
            ancestors: vec![
                Ancestor {
                    name: "agent-2".into(),
                    round: 2,
                },
                Ancestor {
                    name: "agent-1".into(),
                    round: 1,
                },
            ],
        }),
    });
    synthetic::decide_again(&mut r);
    r
}

fn receipt_ref(r: &receipt::Receipt) -> ReceiptRef {
    ReceiptRef {
        file: receipt::RECEIPT_FILE.into(),
        sha256: r.sha256.clone(),
        key_id: r.key_id.clone(),
    }
}

/// A fixed holdout seal key, so two signings of one result give one receipt.
fn seal_key() -> receipt::SealKey {
    receipt::SealKey::from_bytes([9; 32])
}

fn body(r: &ConfirmResult) -> String {
    let signed = receipt::sign_sealed(r, &key(), &seal_key()).unwrap();
    let verified = receipt::verify(&signed.bytes, &key().verifying_key()).unwrap();
    pr_body::render_default(&verified.statement.predicate, &receipt_ref(&signed)).unwrap()
}

fn payload_of(file: &[u8]) -> Vec<u8> {
    let env: Envelope = serde_json::from_slice(file).unwrap();
    BASE64.decode(env.payload).unwrap()
}

/// Replaces the first occurrence of `from` (in the file's text) by `to`.
fn edit(file: &[u8], from: &str, to: &str) -> Vec<u8> {
    let text = String::from_utf8(file.to_vec()).unwrap();
    assert!(text.contains(from), "{from:?} not in the receipt");
    text.replacen(from, to, 1).into_bytes()
}

fn flip_char(s: &str, at: usize) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

#[test]
fn the_synthetic_result_is_tested_and_measured_without_holdout() {
    assert_eq!(tested_result().tier, Tier::Tested);
    assert_eq!(measured_result().tier, Tier::Measured);
    assert_eq!(tested_result().verdict, Verdict::Accepted);
}

/// Every result the tests build (`util::synthetic`) is one evo could have written: its figures,
/// orders and verdict follow from its runs, so a test on it tests what a real receipt holds.
#[test]
fn every_synthetic_result_recomputes_to_itself() {
    let results = [
        ("plain", synthetic::plain()),
        ("hostile", synthetic::hostile_result("<b>x</b>", false)),
        ("hostile, rejected", synthetic::hostile_result("x", true)),
        ("tested", tested_result()),
        ("measured", measured_result()),
    ];
    for (name, r) in results {
        assert_eq!(receipt::recompute::recompute(&r), vec![], "{name}");
    }
}

#[test]
fn a_receipt_is_a_dsse_envelope_around_an_in_toto_statement() {
    let r = tested_result();
    let signed = receipt::sign(&r, &key()).unwrap();
    let env: serde_json::Value = serde_json::from_slice(&signed.bytes).unwrap();
    assert_eq!(env["payloadType"], "application/vnd.in-toto+json");
    assert_eq!(env["signatures"].as_array().unwrap().len(), 1);
    let key_id = env["signatures"][0]["keyid"].as_str().unwrap();
    assert_eq!(key_id, keys::key_id(&key().verifying_key()));
    assert!(key_id.starts_with("sha256:") && key_id.len() == 7 + 64);
    let st: serde_json::Value = serde_json::from_slice(&payload_of(&signed.bytes)).unwrap();
    assert_eq!(st["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(st["predicateType"], "https://evo.dev/validation/v1");
    let subjects: Vec<(String, String)> = st["subject"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let (alg, digest) = s["digest"].as_object().unwrap().iter().next().unwrap();
            (
                s["name"].as_str().unwrap().to_string(),
                format!("{alg}:{}", digest.as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(
        subjects,
        vec![
            (
                "candidate.patch".into(),
                format!("sha256:{}", "3".repeat(64))
            ),
            (
                "baseline".into(),
                format!("gitCommit:{}", r.evidence.baseline_sha)
            ),
            ("baseline/prog".into(), format!("sha256:{}", "8".repeat(64))),
            (
                "candidate/prog".into(),
                format!("sha256:{}", "9".repeat(64))
            ),
        ]
    );
    let p = &st["predicate"];
    for field in [
        "scenarios",
        "gates",
        "tier",
        "environment",
        "steps",
        "workload_digest",
        "overlay",
        "holdout_portfolio_digest",
        "candidates_tried",
        "evo_version",
    ] {
        assert!(!p[field].is_null(), "predicate lacks {field}");
    }
    assert_eq!(p["scenarios"][0]["pairs"][0]["order"], "candidate_first");
    assert_eq!(signed.sha256, receipt::file_digest(&signed.bytes));
}

#[test]
fn the_predicate_seals_holdout_commands_and_still_recomputes() {
    let mut r = tested_result();
    // A failing holdout check quotes its command in a gate detail and a reason.
    r.evidence.gates.push(gate(
        GateName::Differential,
        GateStatus::Passed,
        format!("`{HOLDOUT_CHECK}` in the candidate tree: fine"),
    ));
    let signed = receipt::sign(&r, &key()).unwrap();
    let payload = String::from_utf8(payload_of(&signed.bytes)).unwrap();
    for secret in ["--secret-holdout-input", "--secret-holdout-check"] {
        assert!(
            !payload.contains(secret),
            "{secret} leaked into the receipt"
        );
    }
    assert!(
        payload.contains(TRAINING_CMD),
        "training commands are public"
    );
    let v = receipt::verify(&signed.bytes, &key().verifying_key()).unwrap();
    let p = &v.statement.predicate;
    assert_eq!(p.evidence.scenarios[1].baseline_command, receipt::SEALED);
    // A detail quoting a holdout may quote its output too: it is sealed whole, hashed.
    assert!(receipt::seal::is_sealed(
        &p.evidence.gates.last().unwrap().detail
    ));
    // Its runs keep their wall times; what they printed is keyed, its size withheld.
    for (sealed, original) in p.evidence.scenarios[1]
        .pairs
        .iter()
        .zip(&r.evidence.scenarios[1].pairs)
    {
        assert_eq!(
            (sealed.ratio, sealed.baseline.wall_s),
            (original.ratio, original.baseline.wall_s)
        );
        for run in [&sealed.baseline, &sealed.candidate] {
            assert!(receipt::seal::is_sealed(&run.stdout_sha256), "{run:?}");
            assert_eq!(run.stdout_bytes, 0);
        }
    }
    assert_eq!(receipt::recompute::recompute(p), vec![]);
}

#[test]
fn a_changed_byte_in_the_payload_is_refused() {
    let signed = receipt::sign(&tested_result(), &key()).unwrap();
    let env: Envelope = serde_json::from_slice(&signed.bytes).unwrap();
    let tampered = edit(&signed.bytes, &env.payload, &flip_char(&env.payload, 200));
    let err = receipt::verify(&tampered, &key().verifying_key()).unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Envelope(EnvelopeError::BadSignature { .. })
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("payload or the signature was changed")
    );
}

#[test]
fn a_changed_byte_in_the_signature_is_refused() {
    let signed = receipt::sign(&tested_result(), &key()).unwrap();
    let env: Envelope = serde_json::from_slice(&signed.bytes).unwrap();
    let sig = &env.signatures[0].sig;
    let tampered = edit(&signed.bytes, sig, &flip_char(sig, 10));
    let err = receipt::verify(&tampered, &key().verifying_key()).unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Envelope(EnvelopeError::BadSignature { .. })
        ),
        "{err}"
    );
}

#[test]
fn a_changed_key_id_is_named_as_such() {
    let signed = receipt::sign(&tested_result(), &key()).unwrap();
    let tampered = edit(
        &signed.bytes,
        "\"keyid\": \"sha256:",
        "\"keyid\": \"sha256:0",
    );
    let err = receipt::verify(&tampered, &key().verifying_key()).unwrap_err();
    assert!(
        matches!(
            err,
            VerifyError::Envelope(EnvelopeError::KeyIdAltered { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("key id was changed"), "{err}");
}

#[test]
fn changed_whitespace_outside_the_payload_is_refused() {
    let signed = receipt::sign(&tested_result(), &key()).unwrap();
    // Same JSON value, different bytes: the digest in the PR text would no longer match.
    let tab = edit(&signed.bytes, "\n  \"payload\"", "\n\t\"payload\"");
    let err = receipt::verify(&tab, &key().verifying_key()).unwrap_err();
    assert!(
        matches!(err, VerifyError::Envelope(EnvelopeError::Layout { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("changed after signing"), "{err}");
    let mut extra = signed.bytes.clone();
    extra.push(b'\n');
    assert!(matches!(
        receipt::verify(&extra, &key().verifying_key()),
        Err(VerifyError::Envelope(EnvelopeError::Layout { .. }))
    ));
    // A whitespace byte turned into something else breaks the JSON itself.
    let broken = edit(&signed.bytes, "{\n  ", "{\n !");
    assert!(matches!(
        receipt::verify(&broken, &key().verifying_key()),
        Err(VerifyError::Envelope(EnvelopeError::NotAnEnvelope(_)))
    ));
}

#[test]
fn every_single_byte_change_is_refused() {
    let signed = receipt::sign(&measured_result(), &key()).unwrap();
    let vk = key().verifying_key();
    // Every 97th byte, each changed to a byte that keeps the file valid UTF-8 where possible.
    for at in (0..signed.bytes.len()).step_by(97) {
        let mut file = signed.bytes.clone();
        file[at] = if file[at] == b' ' {
            b'\t'
        } else {
            file[at] ^ 0x01
        };
        assert!(
            receipt::verify(&file, &vk).is_err(),
            "byte {at} changed and the receipt still verifies"
        );
    }
}

#[test]
fn an_unknown_payload_type_is_refused() {
    let signed = receipt::sign(&tested_result(), &key()).unwrap();
    let tampered = edit(
        &signed.bytes,
        "application/vnd.in-toto+json",
        "application/json",
    );
    let err = receipt::verify(&tampered, &key().verifying_key()).unwrap_err();
    assert!(
        matches!(err, VerifyError::Envelope(EnvelopeError::PayloadType(_))),
        "{err}"
    );
    assert!(err.to_string().contains("unknown payload type"));
}

#[test]
fn a_receipt_checked_with_another_key_is_refused() {
    let signed = receipt::sign(&tested_result(), &key()).unwrap();
    let other = SigningKey::from_bytes(&[43u8; 32]);
    let err = receipt::verify(&signed.bytes, &other.verifying_key()).unwrap_err();
    assert!(
        matches!(err, VerifyError::Envelope(EnvelopeError::WrongKey { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("wrong key"), "{err}");
}

/// The receipt with one raw wall time changed, then signed again with the same key.
fn resigned_with_a_changed_wall_time() -> Vec<u8> {
    let signed = receipt::sign(&tested_result(), &key()).unwrap();
    let mut st: serde_json::Value = serde_json::from_slice(&payload_of(&signed.bytes)).unwrap();
    let wall = &mut st["predicate"]["scenarios"][0]["pairs"][3]["baseline"]["wall_s"];
    *wall = serde_json::json!(wall.as_f64().unwrap() * 1.5);
    let payload = serde_json::to_vec_pretty(&st).unwrap();
    Envelope::sign(&payload, &key()).to_file_bytes()
}

/// A verifier must not pass over a gate it cannot interpret: a receipt whose failed gate has a
/// name evo does not know (here misspelled) is refused, where it used to verify and its verdict
/// to recompute as accepted (only listed gate names stopped acceptance).
#[test]
fn a_receipt_naming_a_gate_evo_does_not_know_is_refused() {
    let signed = receipt::sign(&tested_result(), &key()).unwrap();
    let mut st: serde_json::Value = serde_json::from_slice(&payload_of(&signed.bytes)).unwrap();
    let gate = &mut st["predicate"]["gates"][7];
    assert_eq!(gate["name"], "timed output");
    gate["name"] = serde_json::json!("timed outputs");
    gate["status"] = serde_json::json!("failed");
    let payload = serde_json::to_vec_pretty(&st).unwrap();
    let file = Envelope::sign(&payload, &key()).to_file_bytes();
    let err = receipt::verify(&file, &key().verifying_key()).unwrap_err();
    assert!(matches!(err, VerifyError::Statement(_)), "{err}");
    assert!(
        err.to_string().contains("unknown gate `timed outputs`"),
        "{err}"
    );
}

#[test]
fn recompute_names_the_figures_a_changed_wall_time_contradicts() {
    let file = resigned_with_a_changed_wall_time();
    let v = receipt::verify(&file, &key().verifying_key()).expect("the signature is valid");
    let fields: Vec<String> = receipt::recompute::recompute(&v.statement.predicate)
        .into_iter()
        .map(|d| d.field)
        .collect();
    assert!(
        fields.contains(&"scenarios[0].pairs[3].ratio".to_string()),
        "{fields:?}"
    );
    assert!(
        fields.contains(&"scenarios[0].training.cov.baseline".to_string()),
        "{fields:?}"
    );
}

/// Every look the pairs reached is recorded with what it saw (estimate, interval, signed-rank
/// statistic), training's and each holdout's, and `--recompute` re-derives each: a look's
/// statistic changed in the record is named, though the stop and the verdict are untouched.
#[test]
fn recompute_rederives_what_every_look_saw() {
    let r = tested_result();
    let training = r.evidence.scenarios[0].training.as_ref().unwrap();
    let seq = training.sequential.as_ref().unwrap();
    let stop = seq.stop.expect("the run stopped at a look");
    assert_eq!(seq.seen.len(), stop.look + 1, "{seq:?}");
    assert_eq!(seq.seen[stop.look].estimate, stop.median);
    let holdout = (r.evidence.scenarios.iter())
        .find_map(|s| s.holdout.as_ref()?.sequential.as_ref())
        .expect("a holdout with looks");
    assert!(!holdout.seen.is_empty());
    assert!(receipt::recompute::recompute(&r).is_empty());
    let mut changed = r.clone();
    let seq = (changed.evidence.scenarios[0].training.as_mut())
        .and_then(|t| t.sequential.as_mut())
        .unwrap();
    seq.seen[0].w_plus += 1.0;
    let fields: Vec<String> = receipt::recompute::recompute(&changed)
        .into_iter()
        .map(|d| d.field)
        .collect();
    assert!(
        fields
            .iter()
            .any(|f| f.starts_with("scenarios[0].training")),
        "{fields:?}"
    );
}

/// A receipt recorded as accepted with the lane's counts equal (+0.00%) beside its wall-time
/// gain: the disagreement rule (docs/design.md §3.12.1) is re-derived, so the verdict it
/// records is named as contradicted.
#[test]
fn recompute_rederives_the_disagreement_of_counts_and_wall_time() {
    let mut r = tested_result();
    assert_eq!(r.verdict, Verdict::Accepted);
    let counts = evo::evidence::result::InstructionFigures::of(1_000_000, 1_000_000);
    r.evidence.scenarios[0].instructions = Some(counts);
    let fields: Vec<String> = receipt::recompute::recompute(&r)
        .into_iter()
        .map(|d| d.field)
        .collect();
    assert!(fields.contains(&"verdict".to_string()), "{fields:?}");
    assert!(fields.contains(&"reasons".to_string()), "{fields:?}");
}

/// Results from before every cap was resolved to at least `pairs` recorded "no extension" as
/// `max_pairs: 0`: they still recompute, as the same cap.
#[test]
fn a_result_that_recorded_no_cap_as_max_pairs_0_still_recomputes() {
    let mut r = tested_result();
    for s in &mut r.evidence.scenarios {
        if let Some(plan) = s.training.as_mut().and_then(|f| f.plan.as_mut()) {
            assert_eq!(plan.max_pairs, plan.pairs);
            plan.max_pairs = 0;
        }
        if let Some(plan) = s.holdout.as_mut().and_then(|h| h.plan.as_mut()) {
            assert_eq!(plan.max_pairs, plan.pairs);
            plan.max_pairs = 0;
        }
    }
    assert_eq!(receipt::recompute::recompute(&r), vec![]);
}

#[test]
fn recompute_checks_the_balanced_random_order_against_its_recorded_seed() {
    let mut r = tested_result();
    for s in &mut r.evidence.scenarios {
        s.order_seed = Some(0x5eed);
        let scheme = s.comparison_order();
        for (i, p) in s.pairs.iter_mut().enumerate() {
            p.order = scheme.order_of(i);
        }
    }
    assert_eq!(
        receipt::recompute::recompute(&r),
        vec![],
        "a faithful record recomputes"
    );
    // A record whose seed does not give its orders (edited, or not the seed that ran) is named.
    let s = &mut r.evidence.scenarios[0];
    s.order_seed = Some(0x5eed + 1);
    let differs: Vec<usize> = (0..s.pairs.len())
        .filter(|&i| s.comparison_order().order_of(i) != s.pairs[i].order)
        .collect();
    assert!(!differs.is_empty(), "another seed gives another order");
    let fields: Vec<String> = receipt::recompute::recompute(&r)
        .into_iter()
        .map(|d| d.field)
        .collect();
    for i in differs {
        let field = format!("scenarios[0].pairs[{i}].order");
        assert!(fields.contains(&field), "{field} not in {fields:?}");
    }
}

/// The body with the receipt's digest redacted: it changes with any field added to the predicate.
fn redacted_body(r: &ConfirmResult) -> String {
    let digest = receipt::sign_sealed(r, &key(), &seal_key()).unwrap().sha256;
    body(r).replace(&digest, "[receipt sha256]")
}

#[test]
fn the_pr_body_of_a_tested_candidate() {
    insta::assert_snapshot!("pr_body_tested", redacted_body(&tested_result()));
}

#[test]
fn the_pr_body_of_a_measured_candidate_from_a_search() {
    insta::assert_snapshot!("pr_body_measured", redacted_body(&measured_result()));
}

#[test]
fn the_pr_body_says_what_the_design_requires() {
    let tested = body(&tested_result());
    for needle in [
        "runs 1.072× faster (estimate over 9 paired runs; 96.1% CI ",
        "not independently verified",
        "| sum-100k | training | 9 |",
        "Noise floor ±",
        // One noise figure, the A/A pairs', named with its pair count.
        "Noise floor ±0.16% at 11 pairs (from the A/A noise, σ ",
        "baseline against itself, 11 pairs). ",
        "The harness is not in the repository",
        "Ed25519 key id `sha256:",
    ] {
        assert!(tested.contains(needle), "missing {needle:?} in\n{tested}");
    }
    assert!(!tested.contains("secret-holdout"), "{tested}");
    // Sections only where they apply: no search, no build configuration changed.
    assert!(
        !tested.contains("### Search-time vs confirmation"),
        "{tested}"
    );
    assert!(!tested.contains("### Build-configuration lane"), "{tested}");
    assert!(!tested.contains("1 candidate was tried"), "{tested}");
    let measured = body(&measured_result());
    assert!(
        measured.contains("### Search-time vs confirmation"),
        "{measured}"
    );
    for needle in [
        "No holdout was declared, so generalization beyond the training workload is untested",
        "No reason was given",
        "3 candidates were tried",
        "Search (screening, `sum-100k`): median 1.081× over 5 pairs",
    ] {
        assert!(
            measured.contains(needle),
            "missing {needle:?} in\n{measured}"
        );
    }
    assert!(!measured.contains("harness is not in the repository"));
}

#[test]
fn a_candidate_rejected_before_measurement_says_so() {
    let mut r = measured_result();
    r.evidence.scenarios.clear();
    r.evidence.gates[5] = gate(
        GateName::Differential,
        GateStatus::Failed,
        "scenario `sum-100k` (differential): line 1 differs",
    );
    r.evidence.gates.truncate(6);
    let d = verdict::decide(&r.evidence.gates, &r.evidence.scenarios);
    (r.tier, r.verdict, r.reasons) = (d.tier, d.verdict, d.reasons);
    let text = body(&r);
    assert!(
        text.contains("No speed figure: nothing was measured: the differential gate failed"),
        "{text}"
    );
    assert!(
        text.contains("Verdict: **rejected**, against") && text.contains("No tier was reached"),
        "{text}"
    );
    assert_eq!(
        receipt::recompute::recompute(&r),
        vec![],
        "a result without measurements recomputes too"
    );
}

#[test]
fn an_undefined_template_variable_is_an_error_with_its_line() {
    let r = tested_result();
    let signed = receipt::sign(&r, &key()).unwrap();
    let err = pr_body::render(
        &r,
        &receipt_ref(&signed),
        "## Title\n{{ headline }}\n{{ no_such_field }}\n",
        "mine.md",
    )
    .unwrap_err();
    assert!(err.to_string().contains("mine.md:3"), "{err}");
}

#[test]
fn runs_csv_has_one_row_per_run_in_run_order() {
    let r = tested_result();
    let csv = evo::report::runs_csv::render(&r);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "scenario,role,phase,pair_index,arm,order,wall_s,user_s,sys_s,max_rss_kib,voluntary_cs,\
         involuntary_cs,exit_status,stdout_sha256"
    );
    // Training: 2 warmups + 2×11 A/A + 2×9 pairs; holdout: 2 warmups + 2×9 pairs.
    assert_eq!(lines.len(), 1 + (2 + 22 + 18) + (2 + 18));
    let first_pair = lines.iter().find(|l| l.contains(",pair,0,")).unwrap();
    assert!(
        first_pair.starts_with("sum-100k,training,pair,0,candidate,candidate_first,"),
        "{first_pair}"
    );
    assert!(lines.iter().all(|l| l.split(',').count() == 14));
}

#[test]
fn pairs_svg_draws_a_panel_per_measured_scenario() {
    let r = tested_result();
    let svg = evo::report::pairs_svg::render(&r);
    // The band is the A/A noise floor, named as such with its pair count.
    let floor = r.evidence.scenarios[0]
        .training
        .as_ref()
        .unwrap()
        .noise_floor_pct;
    let band = format!("A/A noise floor ±{floor:.2}% (11 A/A pairs)");
    assert!(svg.contains(&band), "missing {band:?}");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg.matches("<title>pair ").count(),
        18,
        "one point per pair"
    );
    for needle in [
        "sum-100k (training)",
        "sum-30k (holdout)",
        "estimate 1.0",
        "% CI ",
        "noise floor ±",
        "pair (in run order)",
        "speedup t_baseline / t_candidate",
    ] {
        assert!(svg.contains(needle), "missing {needle:?}");
    }
}

fn evo_cmd(keys: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_evo"));
    cmd.env("EVO_KEY_DIR", keys);
    cmd
}

fn output_text(out: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A key pair written by `evo keygen`, and a receipt signed with it.
struct Signed {
    dir: tempfile::TempDir,
    receipt: std::path::PathBuf,
    public: std::path::PathBuf,
}

fn signed_with_keygen() -> Signed {
    let dir = tempfile::tempdir().unwrap();
    let keys_dir = dir.path().join("keys");
    let out = evo_cmd(&dir.path().join("default"))
        .args(["keygen", "--out"])
        .arg(&keys_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let key = keys::load_signing_key(&keys_dir.join(keys::PRIVATE_KEY_FILE)).unwrap();
    let receipt = dir.path().join(receipt::RECEIPT_FILE);
    std::fs::write(
        &receipt,
        receipt::sign(&tested_result(), &key).unwrap().bytes,
    )
    .unwrap();
    Signed {
        public: keys_dir.join(keys::PUBLIC_KEY_FILE),
        receipt,
        dir,
    }
}

#[test]
fn keygen_refuses_to_overwrite_and_protects_the_private_key() {
    use std::os::unix::fs::PermissionsExt;
    let s = signed_with_keygen();
    let keys_dir = s.dir.path().join("keys");
    let private = keys_dir.join(keys::PRIVATE_KEY_FILE);
    let mode = std::fs::metadata(&private).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let before = std::fs::read(&private).unwrap();
    let out = evo_cmd(s.dir.path())
        .args(["keygen", "--out"])
        .arg(&keys_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never overwrites"));
    assert_eq!(std::fs::read(&private).unwrap(), before);
}

#[test]
fn verify_and_recompute_from_the_command_line() {
    let s = signed_with_keygen();
    let out = evo_cmd(s.dir.path())
        .args(["receipt", "verify"])
        .arg(&s.receipt)
        .arg("--key")
        .arg(&s.public)
        .arg("--recompute")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("signature valid"), "{stdout}");
    assert!(stdout.contains("recomputed: every figure"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(&s.public.display().to_string()));
}

#[test]
fn verify_fails_with_exit_code_5_and_the_reason() {
    let s = signed_with_keygen();
    let other = s.dir.path().join("other");
    evo_cmd(s.dir.path())
        .args(["keygen", "--out"])
        .arg(&other)
        .output()
        .unwrap();
    let out = evo_cmd(s.dir.path())
        .args(["receipt", "verify"])
        .arg(&s.receipt)
        .arg("--key")
        .arg(other.join(keys::PUBLIC_KEY_FILE))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", output_text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrong key"));

    let key =
        keys::load_signing_key(&s.dir.path().join("keys").join(keys::PRIVATE_KEY_FILE)).unwrap();
    let mut st: serde_json::Value =
        serde_json::from_slice(&payload_of(&std::fs::read(&s.receipt).unwrap())).unwrap();
    let wall = &mut st["predicate"]["scenarios"][0]["pairs"][3]["baseline"]["wall_s"];
    *wall = serde_json::json!(wall.as_f64().unwrap() * 1.5);
    let payload = serde_json::to_vec_pretty(&st).unwrap();
    std::fs::write(&s.receipt, Envelope::sign(&payload, &key).to_file_bytes()).unwrap();
    let out = evo_cmd(s.dir.path())
        .args(["receipt", "verify", "--recompute", "--key"])
        .arg(&s.public)
        .arg(&s.receipt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", output_text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("scenarios[0].pairs[3].ratio: recorded"),
        "{stderr}"
    );
}

/// `evo receipt verify --recompute` on the receipt re-signed after `edit` changed its statement.
fn recompute_resigned(
    s: &Signed,
    edit: impl FnOnce(&mut serde_json::Value),
) -> std::process::Output {
    let key =
        keys::load_signing_key(&s.dir.path().join("keys").join(keys::PRIVATE_KEY_FILE)).unwrap();
    let mut st: serde_json::Value =
        serde_json::from_slice(&payload_of(&std::fs::read(&s.receipt).unwrap())).unwrap();
    edit(&mut st);
    let payload = serde_json::to_vec_pretty(&st).unwrap();
    std::fs::write(&s.receipt, Envelope::sign(&payload, &key).to_file_bytes()).unwrap();
    evo_cmd(s.dir.path())
        .args(["receipt", "verify", "--recompute", "--key"])
        .arg(&s.public)
        .arg(&s.receipt)
        .output()
        .unwrap()
}

#[test]
fn recompute_refuses_a_receipt_recorded_under_other_rules() {
    let s = signed_with_keygen();
    let now = verdict::RULES;
    // Older than the rules number (no field: rules 0), the rules just before this evo's (rules
    // 9 under rules 10, whose backing differs), and from a newer evo.
    for (edit, recorded) in [
        (None, 0),
        (Some(now - 1), now - 1),
        (Some(now + 1), now + 1),
    ] {
        let out = recompute_resigned(&s, |st| {
            let p = st["predicate"].as_object_mut().unwrap();
            match edit {
                None => p.remove("rules"),
                Some(n) => p.insert("rules".into(), n.into()),
            };
        });
        assert_eq!(out.status.code(), Some(5), "{}", output_text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let expected = format!(
            "recorded under rules {recorded}; this evo applies rules {now}: the figures cannot \
             be re-derived by this version"
        );
        assert!(stderr.contains(&expected), "{stderr}");
        // Refused, not compared: no figure is named as a difference.
        assert!(!stderr.contains("do not follow"), "{stderr}");
        // Without --recompute the signature still verifies.
        let plain = evo_cmd(s.dir.path())
            .args(["receipt", "verify", "--key"])
            .arg(&s.public)
            .arg(&s.receipt)
            .output()
            .unwrap();
        assert_eq!(plain.status.code(), Some(0), "{}", output_text(&plain));
    }
    let mut older = tested_result();
    older.evidence.rules = 0;
    let found = receipt::recompute::recompute(&older);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].field, "rules");
}

#[test]
fn without_key_the_default_public_key_is_used_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("default-keys");
    let signer = keys::Signer::default_in(&default).unwrap();
    let file = dir.path().join(receipt::RECEIPT_FILE);
    std::fs::write(
        &file,
        receipt::sign(&tested_result(), &signer.key).unwrap().bytes,
    )
    .unwrap();
    let out = evo_cmd(&default)
        .args(["receipt", "verify"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&default.join(keys::PUBLIC_KEY_FILE).display().to_string()),
        "{stderr}"
    );
    let nowhere = evo_cmd(&dir.path().join("empty"))
        .args(["receipt", "verify"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(nowhere.status.code(), Some(2), "{}", output_text(&nowhere));
    assert!(String::from_utf8_lossy(&nowhere.stderr).contains("--key"));
}

#[test]
fn pr_render_reproduces_the_body_from_a_verified_receipt_only() {
    let s = signed_with_keygen();
    let out = evo_cmd(s.dir.path())
        .args(["pr", "render", "--key"])
        .arg(&s.public)
        .arg(&s.receipt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let bytes = std::fs::read(&s.receipt).unwrap();
    let v = receipt::verify(&bytes, &keys::load_verifying_key(&s.public).unwrap()).unwrap();
    let expected = pr_body::render_default(
        &v.statement.predicate,
        &ReceiptRef {
            file: receipt::RECEIPT_FILE.into(),
            sha256: receipt::file_digest(&bytes),
            key_id: v.key_id.clone(),
        },
    )
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);

    let template = s.dir.path().join("short.md");
    std::fs::write(&template, "{{ headline }} — {{ receipt.sha256 }}\n").unwrap();
    let out = evo_cmd(s.dir.path())
        .args(["pr", "render", "--key"])
        .arg(&s.public)
        .arg("--template")
        .arg(&template)
        .arg(&s.receipt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("runs 1.072× faster"));

    let mut tampered = bytes.clone();
    let at = tampered.len() - 3;
    tampered[at] ^= 1;
    std::fs::write(&s.receipt, tampered).unwrap();
    let out = evo_cmd(s.dir.path())
        .args(["pr", "render", "--key"])
        .arg(&s.public)
        .arg(&s.receipt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", output_text(&out));
    assert!(out.stdout.is_empty(), "rendered from an unverified receipt");
}

/// The README's generic verification, run for real: jq, base64, printf and OpenSSL, no evo.
#[test]
fn openssl_verifies_a_receipt_without_evo() {
    let missing: Vec<&str> = ["openssl", "jq", "base64", "sha256sum"]
        .into_iter()
        .filter(|tool| {
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .map_or(true, |o| !o.status.success())
        })
        .collect();
    if !missing.is_empty() {
        eprintln!("note: skipped, {} not installed", missing.join(", "));
        return;
    }
    let s = signed_with_keygen();
    let script = r#"
set -eu
R=validation_receipt.json
jq -r .payload "$R" | base64 -d > payload.json
jq -r '.signatures[0].sig' "$R" | base64 -d > sig.bin
TYPE=$(jq -r .payloadType "$R")
printf 'DSSEv1 %d %s %d ' "${#TYPE}" "$TYPE" "$(wc -c < payload.json)" > pae.bin
cat payload.json >> pae.bin
openssl pkeyutl -verify -pubin -inkey signing.pub.pem -rawin -in pae.bin -sigfile sig.bin
echo "sha256:$(openssl pkey -pubin -in signing.pub.pem -outform DER | tail -c 32 | sha256sum | cut -d' ' -f1)"
jq -r '.signatures[0].keyid' "$R"
"#;
    std::fs::copy(&s.public, s.dir.path().join("signing.pub.pem")).unwrap();
    let run = |dir: &Path| {
        Command::new("sh")
            .args(["-c", script])
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let out = run(s.dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        stdout.contains("Signature Verified Successfully"),
        "{stdout}"
    );
    let ids: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("sha256:"))
        .collect();
    assert_eq!(ids.len(), 2, "{stdout}");
    assert_eq!(
        ids[0], ids[1],
        "the key id is the sha256 of the raw public key"
    );

    // The same commands reject a receipt whose payload was changed.
    let bytes = std::fs::read(&s.receipt).unwrap();
    let env: Envelope = serde_json::from_slice(&bytes).unwrap();
    std::fs::write(
        &s.receipt,
        edit(&bytes, &env.payload, &flip_char(&env.payload, 300)),
    )
    .unwrap();
    let out = run(s.dir.path());
    assert!(!out.status.success(), "{}", output_text(&out));
}
