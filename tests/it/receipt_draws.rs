//! Drawn inputs in the receipt (docs/design.md §2.2.6, §5.7): `--recompute` re-derives each
//! training draw from the public seed and finds values, commands or steps that do not follow from
//! it, and a drawn check left without its record; a holdout's draw is sealed in the receipt and
//! re-derived by the key holder with `evo receipt verify --recompute --unseal RUN_DIR`.

use std::collections::BTreeMap;

use ed25519_dalek::SigningKey;

use crate::util::{evo, synthetic};
use evo::check::{draw, fill_seed};
use evo::evidence::result::*;
use evo::receipt::{self, SealKey, recompute::recompute};
use evo::spec::workload::IntRange;

const CHECK: &str = "./k check --seed {seed} --B {B} --T {T}";
const HOLDOUT_RUN: &str = "./k bench --seed {seed} --B {B} --T {T} --iters 5";
const HOLDOUT_CHECK: &str = "./k check --seed {seed} --B {B} --T {T}";

fn ranges() -> BTreeMap<String, IntRange> {
    let r = |min, max| IntRange { min, max, step: 1 };
    BTreeMap::from([("B".to_string(), r(1, 4)), ("T".to_string(), r(8, 64))])
}

fn record(scenario: &str, role: Role, seed: u64, index: usize, templates: &[&str]) -> DrawnInputs {
    let values = draw::values(&ranges(), seed, index);
    let commands = (templates.iter())
        .map(|t| FilledCommand {
            template: t.to_string(),
            filled: draw::fill(t, &values),
        })
        .collect();
    DrawnInputs {
        scenario: scenario.into(),
        role,
        index,
        ranges: ranges(),
        values,
        commands,
    }
}

/// [`synthetic::plain`] as `evo confirm` records it with a drawn check of `plain` (its second
/// draw) and the holdout `held` drawn from the holdouts' own seed.
fn with_draws() -> ConfirmResult {
    let mut r = synthetic::plain();
    let e = &mut r.evidence;
    e.seed = 42;
    e.holdout_seed = Some(HoldoutSeed::Drawn(4242));
    let check = record("plain.drawn-2", Role::Training, 42, 1, &[CHECK]);
    let held = record(
        "held",
        Role::Holdout,
        4242,
        1,
        &[HOLDOUT_RUN, HOLDOUT_CHECK],
    );
    for tree in ["baseline", "candidate"] {
        let ran = fill_seed(&check.commands[0].filled, 42);
        e.steps
            .push(synthetic::step("check-plain.drawn-2", tree, &ran));
        let ran = fill_seed(&held.commands[1].filled, 4242);
        e.steps.push(synthetic::step("check-held", tree, &ran));
    }
    let s = e.scenarios.iter_mut().find(|s| s.name == "held").unwrap();
    s.baseline_command = held.commands[0].filled.clone();
    s.candidate_command = held.commands[0].filled.clone();
    e.draws = vec![check, held];
    r
}

fn fields(r: &ConfirmResult) -> Vec<String> {
    recompute(r).into_iter().map(|d| d.field).collect()
}

#[test]
fn draws_as_recorded_follow_from_their_seeds() {
    assert_eq!(fields(&with_draws()), Vec::<String>::new());
}

#[test]
fn inputs_chosen_rather_than_drawn_are_found() {
    // Values chosen by hand, with the commands and the steps made to match them: only the seed
    // says they were not drawn.
    let mut r = with_draws();
    let chosen = BTreeMap::from([("B".to_string(), 4), ("T".to_string(), 64)]);
    let filled = draw::fill(CHECK, &chosen);
    r.evidence.draws[0].values = chosen;
    r.evidence.draws[0].commands[0].filled = filled.clone();
    for s in r.evidence.steps.iter_mut() {
        if s.step.to_string() == "check-plain.drawn-2" {
            s.command = fill_seed(&filled, 42);
        }
    }
    let found = fields(&r);
    for field in [
        "draws[0].values",
        "draws[0].commands[0].filled",
        "steps[check-plain.drawn-2].command",
    ] {
        assert!(found.contains(&field.to_string()), "{field}: {found:?}");
    }
    // A step that ran another command than its record says.
    let mut r = with_draws();
    let step = (r.evidence.steps.iter_mut())
        .find(|s| s.step.to_string() == "check-plain.drawn-2")
        .unwrap();
    step.command = "./k check --seed 42 --B 4 --T 64".into();
    assert_eq!(fields(&r), vec!["steps[check-plain.drawn-2].command"]);
    // Another seed than the one recorded.
    let mut r = with_draws();
    r.evidence.seed = 43;
    assert!(fields(&r).contains(&"draws[0].values".to_string()));
}

#[test]
fn a_drawn_check_without_its_record_is_found() {
    let mut r = with_draws();
    r.evidence.draws.remove(0);
    assert_eq!(fields(&r), vec!["draws[plain.drawn-2]"]);
}

#[test]
fn a_holdout_s_draw_is_sealed_in_the_receipt_and_checked_in_the_result() {
    let r = with_draws();
    let key = SealKey::from_bytes([5; 32]);
    let sealed = receipt::statement::seal_holdouts(&r, &key);
    let held = &sealed.evidence.draws[1];
    assert!(held.ranges.is_empty() && held.values.is_empty(), "{held:?}");
    for c in &held.commands {
        assert!(receipt::seal::is_sealed(&c.template), "{c:?}");
        assert!(receipt::seal::is_sealed(&c.filled), "{c:?}");
    }
    let json = serde_json::to_string(&sealed).unwrap();
    assert!(
        !json.contains("--iters 5"),
        "a holdout command is in the receipt"
    );
    // The training draw stays public and is still checked; the sealed one is left alone.
    assert_eq!(sealed.evidence.draws[0], r.evidence.draws[0]);
    assert_eq!(fields(&sealed), Vec::<String>::new());
    // In result.json, a holdout run with other inputs than its seed draws is found.
    let mut tampered = with_draws();
    let s = (tampered.evidence.scenarios.iter_mut())
        .find(|s| s.name == "held")
        .unwrap();
    s.candidate_command = "./k bench --seed {seed} --B 4 --T 64 --iters 5".into();
    assert_eq!(fields(&tampered), vec!["scenarios[held].candidate_command"]);
}

fn signing_key() -> SigningKey {
    SigningKey::from_bytes(&[42u8; 32])
}

/// A run folder as `evo confirm` leaves it: `result.json`, the seal key and the signed receipt,
/// with the signer's public key beside it.
fn run_folder(r: &ConfirmResult, key: &SealKey) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join(&r.evidence.run_id);
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("result.json"),
        serde_json::to_vec_pretty(r).unwrap(),
    )
    .unwrap();
    std::fs::write(run.join(SealKey::FILE), key.to_hex()).unwrap();
    let signed = receipt::sign_sealed(r, &signing_key(), key).unwrap();
    std::fs::write(run.join(receipt::RECEIPT_FILE), &signed.bytes).unwrap();
    let pem = receipt::keys::public_pem(&signing_key().verifying_key());
    std::fs::write(dir.path().join("signer.pub.pem"), pem).unwrap();
    (dir, run)
}

fn verify(dir: &std::path::Path, run: &std::path::Path, unseal: bool) -> std::process::Output {
    let mut cmd = evo();
    cmd.args(["receipt", "verify"])
        .arg(run.join(receipt::RECEIPT_FILE))
        .arg("--key")
        .arg(dir.join("signer.pub.pem"))
        .arg("--recompute");
    if unseal {
        cmd.arg("--unseal").arg(run);
    }
    cmd.output().unwrap()
}

/// `edited` written over the run folder's `result.json`: `--unseal` fails (exit 5) naming `field`.
fn refused_after_edit(
    dir: &std::path::Path,
    run: &std::path::Path,
    edited: &ConfirmResult,
    field: &str,
) {
    let json = serde_json::to_vec_pretty(edited).unwrap();
    std::fs::write(run.join("result.json"), json).unwrap();
    let out = verify(dir, run, true);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(field), "{field}: {stderr}");
}

#[test]
fn the_key_holder_re_derives_the_sealed_draw_from_the_run_folder() {
    let key = SealKey::from_bytes([5; 32]);
    let (dir, run) = run_folder(&with_draws(), &key);
    let out = verify(dir.path(), &run, false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("1 of sealed holdouts"), "{stdout}");
    let out = verify(dir.path(), &run, true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("the 2 drawn input(s) from their seeds"),
        "{stdout}"
    );

    // A result.json altered after signing: values the seed does not draw (ranges and values are
    // left out of the receipt, so only the recomputation can tell).
    let mut other = with_draws();
    let b = other.evidence.draws[1].values["B"];
    other.evidence.draws[1].values.insert("B".into(), b % 4 + 1);
    refused_after_edit(dir.path(), &run, &other, "draws[1].values");
    // A holdout command altered after signing: the receipt's keyed digest of it differs.
    let mut other = with_draws();
    other.evidence.draws[1].commands[0].template = "./k bench --seed {seed}".into();
    refused_after_edit(dir.path(), &run, &other, "/draws/1/commands/0/template");

    // A run whose signed result itself holds a holdout draw the seed does not give: the receipt
    // alone cannot tell, the run folder can.
    let mut signed_wrong = with_draws();
    let held = &mut signed_wrong.evidence.draws[1];
    held.values = BTreeMap::from([("B".to_string(), 4), ("T".to_string(), 64)]);
    let (dir, run) = run_folder(&signed_wrong, &key);
    assert!(verify(dir.path(), &run, false).status.success());
    let out = verify(dir.path(), &run, true);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("draws[1].values"), "{stderr}");
}
