//! Holdouts that stay sealed: what a published receipt says about a holdout must not let a
//! reader check a guess of its command, working directory or output (issue #26). The attack each
//! test stops: hash guessed holdout shapes, run on the public baseline with the public seed, and
//! look the hashes, byte counts or seed up in the receipt.

use crate::util::synthetic;

use ed25519_dalek::SigningKey;
use evo::evidence::result::{ConfirmResult, HoldoutSeed, Role};
use evo::receipt::{self, SealKey, seal};
use sha2::{Digest, Sha256};

fn key() -> SigningKey {
    SigningKey::from_bytes(&[11u8; 32])
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What the holdout printed, as a guess run on the public baseline would print it too.
const OUTPUT: &[u8] = b"pairs 30000: 1234\n";

/// A measured result whose holdout ran `./run 30000` from `c`, with its own seed.
fn result() -> ConfirmResult {
    let mut r = synthetic::hostile_result("plain", false);
    r.evidence.holdout_seed = Some(HoldoutSeed::Drawn(424242));
    let h = (r.evidence.scenarios.iter_mut())
        .find(|s| s.role == Role::Holdout)
        .unwrap();
    h.baseline_command = "./run 30000".into();
    h.candidate_command = "./run 30000".into();
    h.cwd = "c".into();
    for run in h
        .pairs
        .iter_mut()
        .flat_map(|p| [&mut p.baseline, &mut p.candidate])
    {
        run.stdout_sha256 = sha256(OUTPUT);
        run.stdout_bytes = OUTPUT.len() as u64;
    }
    let d = (r.evidence.differential.iter_mut())
        .find(|d| d.role == Role::Holdout)
        .unwrap();
    d.baseline_sha256 = sha256(OUTPUT);
    d.candidate_sha256 = sha256(b"pairs 30000: 1235\n");
    r
}

fn predicate(r: &ConfirmResult, seal_key: &SealKey) -> ConfirmResult {
    let signed = receipt::sign_sealed(r, &key(), seal_key).unwrap();
    receipt::verify(&signed.bytes, &key().verifying_key())
        .unwrap()
        .statement
        .predicate
}

#[test]
fn a_guessed_holdout_cannot_be_checked_against_the_receipt() {
    let r = result();
    let p = predicate(&r, &SealKey::from_bytes([1; 32]));
    let json = serde_json::to_string(&p).unwrap();
    for guess in [
        sha256(OUTPUT),
        sha256(b"pairs 30000: 1235\n"),
        sha256(b"c"),
        sha256(b"./run 30000"),
    ] {
        assert!(
            !json.contains(&guess),
            "the plain sha256 {guess} is in the receipt"
        );
    }
    assert!(
        !json.contains("424242"),
        "the holdouts' seed is in the receipt"
    );
    let h = (p.evidence.scenarios.iter())
        .find(|s| s.role == Role::Holdout)
        .unwrap();
    for run in h.pairs.iter().flat_map(|p| [&p.baseline, &p.candidate]) {
        assert_eq!(
            run.stdout_bytes, 0,
            "a holdout run's byte count is published"
        );
        assert!(seal::is_sealed(&run.stdout_sha256), "{}", run.stdout_sha256);
    }
    assert!(seal::is_sealed(&h.cwd), "{}", h.cwd);
    // Recomputing reads the wall times alone: the sealed receipt recomputes as the result does.
    assert_eq!(
        receipt::recompute::recompute(&p),
        receipt::recompute::recompute(&r)
    );
}

#[test]
fn the_seal_is_keyed_per_run_and_re_derivable_by_the_key_holder() {
    let r = result();
    let (one, two) = (SealKey::from_bytes([1; 32]), SealKey::from_bytes([2; 32]));
    let p = predicate(&r, &one);
    assert_eq!(
        p,
        seal::seal_holdouts(&r, &one),
        "the key holder re-derives the predicate"
    );
    let other = seal::seal_holdouts(&r, &two);
    let cwd = |x: &ConfirmResult| {
        x.evidence
            .scenarios
            .iter()
            .find(|s| s.role == Role::Holdout)
            .unwrap()
            .cwd
            .clone()
    };
    assert_ne!(
        cwd(&p),
        cwd(&other),
        "another run's key gives other digests"
    );
    assert_eq!(
        p.evidence.holdout_seed,
        Some(HoldoutSeed::Sealed(seal::seal_text("424242", &one)))
    );
    // The public seed stays: the training scenarios' checks and runs are reproducible.
    assert_eq!(
        (p.evidence.seed, r.evidence.seed_for(Role::Training)),
        (r.evidence.seed, r.evidence.seed)
    );
    assert_eq!(r.evidence.seed_for(Role::Holdout), 424242);
}

#[test]
fn a_warning_about_a_holdout_is_sealed_whole() {
    let mut r = result();
    r.evidence.warnings = vec![
        "holdout `held`: its name repeats `30000`, an argument of its command".into(),
        "the check of scenario `plain` wrote to stderr".into(),
    ];
    let p = predicate(&r, &SealKey::from_bytes([1; 32]));
    assert!(
        seal::is_sealed(&p.evidence.warnings[0]),
        "{}",
        p.evidence.warnings[0]
    );
    assert_eq!(
        p.evidence.warnings[1], r.evidence.warnings[1],
        "a training warning stays readable"
    );
}

#[test]
fn the_pr_text_says_the_holdouts_seed_is_sealed_and_shows_none_of_it() {
    let r = result();
    let seal_key = SealKey::from_bytes([1; 32]);
    let signed = receipt::sign_sealed(&r, &key(), &seal_key).unwrap();
    let reference = evo::report::pr_context::ReceiptRef {
        file: receipt::RECEIPT_FILE.into(),
        sha256: signed.sha256.clone(),
        key_id: signed.key_id.clone(),
    };
    let p = predicate(&r, &seal_key);
    let body = evo::report::pr_body::render_default(&p, &reference).unwrap();
    assert!(
        body.contains("the holdouts ran with a seed of their own, sealed"),
        "{body}"
    );
    for secret in ["424242", "./run 30000", &sha256(OUTPUT)] {
        assert!(!body.contains(secret), "{secret} is in the PR text");
    }
}
