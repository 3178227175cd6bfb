//! One story in every text (issue 27, item 5): the terminal summary, the PR text and the
//! reasons word the verdict, the tier, a scenario's verdict, the noise floor, the headline, the
//! baseline and the verify command the same way, and none of them contradicts another.
//!
//! Synthetic results from evo's own statistics, rendered as `evo confirm` and `evo pr render`
//! render them; each test is named after the contradiction it pins.

use crate::util::synthetic;

use std::path::Path;

use ed25519_dalek::SigningKey;

use evo::evidence::figures;
use evo::evidence::result::{
    ConfirmResult, GateName, GateStatus, InputDigest, Role, ScenarioResult, Verdict,
};
use evo::evidence::verdict::{self, gate};
use evo::measure::record::{Order, Pair, RunRecord};
use evo::receipt;
use evo::receipt::binding::Requirement;
use evo::report::{pr_body, pr_context::ReceiptRef, terminal};
use evo::stats::Tier;

fn body(r: &ConfirmResult) -> String {
    let key = SigningKey::from_bytes(&[9u8; 32]);
    let signed = receipt::sign_sealed(r, &key, &receipt::SealKey::from_bytes([3; 32])).unwrap();
    let verified = receipt::verify(&signed.bytes, &key.verifying_key()).unwrap();
    let reference = ReceiptRef {
        file: receipt::RECEIPT_FILE.into(),
        sha256: signed.sha256,
        key_id: signed.key_id,
    };
    pr_body::render_default(&verified.statement.predicate, &reference).unwrap()
}

fn summary(r: &ConfirmResult) -> String {
    terminal::render_confirm(r, Path::new("/run"), true)
}

/// Pairs whose ratios (baseline over candidate) are exactly `ratios`.
fn pairs(ratios: &[f64]) -> Vec<Pair> {
    (ratios.iter().enumerate())
        .map(|(i, r)| {
            let order = [Order::CandidateFirst, Order::BaselineFirst][i % 2];
            Pair::new(
                i,
                order,
                RunRecord::exited_ok(0.5),
                RunRecord::exited_ok(0.5 / r),
            )
        })
        .collect()
}

/// `n` ratios around `center`, spread by `spread` either way.
fn around(center: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| center * (1.0 + spread * (2.0 * i as f64 / (n - 1) as f64 - 1.0)))
        .collect()
}

/// The plain tested result with its training scenario measured on these A/A and comparison
/// ratios, and `failed` gates, decided again.
fn decided_on(aa: &[f64], measured: &[f64], failed: &[GateName]) -> ConfirmResult {
    let mut r = synthetic::hostile_result("memo", false);
    let settings = synthetic::settings(measured.len(), aa.len());
    let s: &mut ScenarioResult = (r.evidence.scenarios.iter_mut())
        .find(|s| s.role == Role::Training)
        .unwrap();
    s.aa_pairs = pairs(aa);
    s.pairs = pairs(measured);
    s.training = Some(figures::figures(&settings, &s.aa_pairs, &s.pairs).unwrap());
    for name in failed {
        let g = r
            .evidence
            .gates
            .iter_mut()
            .find(|g| g.name == *name)
            .unwrap();
        *g = gate(*name, GateStatus::Failed, "it broke");
    }
    let d = verdict::decide(&r.evidence.gates, &r.evidence.scenarios);
    (r.tier, r.verdict, r.reasons) = (d.tier, d.verdict, d.reasons);
    r
}

/// A null on a noisy machine: 9 pairs cannot resolve 1%, and the median is about 1.
fn inconclusive() -> ConfirmResult {
    let r = decided_on(&around(1.0, 0.06, 11), &around(0.991, 0.05, 9), &[]);
    assert_eq!((r.verdict, r.tier), (Verdict::Inconclusive, Tier::None));
    r
}

fn training(r: &ConfirmResult) -> &figures::Figures {
    (r.evidence
        .scenarios
        .iter()
        .find_map(|s| s.training.as_ref()))
    .unwrap()
}

#[test]
fn an_inconclusive_verdict_is_not_printed_beside_the_tier_rejected() {
    let r = inconclusive();
    let text = summary(&r);
    assert!(
        text.contains("\nverdict: inconclusive (no tier reached)\n"),
        "{text}"
    );
    assert!(!text.contains("tier rejected"), "{text}");
    let pr = body(&r);
    assert!(
        pr.contains("Verdict: **inconclusive** (no tier reached), against baseline"),
        "{pr}"
    );
    assert!(!pr.contains("tier **rejected**"), "{pr}");
    assert!(!pr.contains("**rejected** is the lowest"), "{pr}");
    assert!(pr.contains("records tier `none`"), "{pr}");
    // Intervals are named by their coverage, never "CI95" (the look's interval is not one).
    assert!(
        !pr.contains("CI95") && !text.contains("CI95"),
        "{pr}\n{text}"
    );
    // A receipt of rules 6 or before recorded the tier `rejected` beside `inconclusive`.
    let mut older = r.clone();
    older.tier = Tier::Rejected;
    let pr = body(&older);
    assert!(pr.contains("which names no rejection"), "{pr}");
    let accepted = decided_on(&around(1.0, 0.001, 11), &around(1.3, 0.001, 9), &[]);
    assert_eq!(accepted.verdict, Verdict::Accepted);
    assert!(
        summary(&accepted).contains("\nverdict: accepted (tier tested)\n"),
        "{}",
        summary(&accepted)
    );
}

#[test]
fn a_scenario_inconclusive_under_a_rejected_candidate_says_why_the_two_differ() {
    let r = decided_on(
        &around(1.0, 0.06, 11),
        &around(0.991, 0.05, 9),
        &[GateName::Tests],
    );
    assert_eq!(r.verdict, Verdict::Rejected);
    assert_eq!(training(&r).verdict.as_str(), "inconclusive");
    let said = "inconclusive on its own; the candidate is rejected (see the reasons)";
    let text = summary(&r);
    assert!(text.contains(&format!("verdict    {said}\n")), "{text}");
    let pr = body(&r);
    assert!(pr.contains(&format!("| {said} |")), "{pr}");
}

#[test]
fn the_noise_floor_is_one_named_figure_in_the_statistics_the_terminal_and_the_reasons() {
    // Rules 4 decides from the comparison's own interval: the one noise figure a text names is
    // the A/A pairs' floor at their count, and no reason quotes a second one.
    let r = decided_on(&around(1.0, 0.02, 11), &around(1.012, 0.003, 9), &[]);
    let f = training(&r);
    let at_aa = format!("±{:.2}%", f.noise_floor_pct);
    let at_pairs = format!("±{:.2}%", 100.0 * evo::stats::noise_floor(f.aa.sigma, 9));
    assert_ne!(at_pairs, at_aa, "the two floors must differ for this test");
    assert!(
        r.reasons.iter().all(|x| !x.contains("noise floor")),
        "{:?}",
        r.reasons
    );
    let pr = body(&r);
    assert!(
        pr.contains(&format!(
            "Noise floor {at_aa} at 11 pairs (from the A/A noise"
        )),
        "{pr}"
    );
    let text = summary(&r);
    assert!(
        text.contains(&format!(
            "noise floor      {at_aa} at 11 pairs (from the A/A"
        )),
        "{text}"
    );
    for (what, t) in [("PR text", &pr), ("terminal", &text)] {
        assert!(
            !t.contains(&at_pairs),
            "{what} names a second floor {at_pairs}:\n{t}"
        );
    }
}

#[test]
fn an_acceptance_is_never_offered_the_pairs_that_would_resolve_it() {
    // A gain far beyond the noise: accepted at its one look, and decided.
    let r = decided_on(&around(1.0, 0.05, 11), &around(1.4, 0.002, 9), &[]);
    assert_eq!(r.verdict, Verdict::Accepted, "{:?}", r.reasons);
    assert!(training(&r).training_gate.resolved);
    for (what, t) in [("terminal", summary(&r)), ("PR text", body(&r))] {
        assert!(!t.contains("would decide it"), "{what}:\n{t}");
        assert!(!t.contains("undecided"), "{what}:\n{t}");
    }
    // Not decided: the pairs that would decide it are still offered.
    let open = summary(&inconclusive());
    assert!(open.contains("undecided at the cap"), "{open}");
    assert!(
        open.contains("would decide it") || open.contains("no practical number"),
        "{open}"
    );
}

#[test]
fn a_null_whose_interval_spans_1_is_no_measurable_change_not_slower() {
    let r = inconclusive();
    let f = training(&r);
    let ci = f.ci95.unwrap();
    assert!(f.median < 1.0 && ci.lower < 1.0 && ci.upper > 1.0, "{f:?}");
    let pr = body(&r);
    assert!(
        pr.contains("This patch shows no measurable change in speed (estimate 0."),
        "{pr}"
    );
    assert!(!pr.contains("i.e. slower"), "{pr}");
}

#[test]
fn no_agent_is_named_where_no_agent_wrote_the_candidate() {
    let mut r = synthetic::hostile_result("memo", false);
    for sandboxed in [false, true] {
        r.evidence.sandbox.enabled = sandboxed;
        r.evidence.sandbox.tool = sandboxed.then(|| "bwrap".to_string());
        r.evidence.from_agent = false;
        let holdouts = body(&r);
        let holdouts = holdouts.split("### Holdouts").nth(1).unwrap();
        let holdouts = holdouts.split("###").next().unwrap();
        assert!(!holdouts.contains("agent"), "{holdouts}");
        r.evidence.from_agent = true;
        let agent = body(&r);
        assert!(
            agent.contains("the agent that wrote the candidate"),
            "{agent}"
        );
    }
}

#[test]
fn a_baseline_given_by_its_commit_is_printed_once() {
    let mut r = synthetic::hostile_result("memo", false);
    r.evidence.baseline_commitish = r.evidence.baseline_sha.clone();
    let sha = r.evidence.baseline_sha.clone();
    let text = summary(&r);
    assert!(text.starts_with(&format!("baseline:  {sha}\n")), "{text}");
    let pr = body(&r);
    let line = pr.lines().find(|l| l.contains("against baseline")).unwrap();
    assert_eq!(line.matches(&sha).count(), 1, "{line}");
    // A name is still shown with its commit.
    let named = body(&synthetic::hostile_result("memo", false));
    assert!(
        named.contains(&format!("against baseline `main` (`{sha}`)")),
        "{named}"
    );
}

#[test]
fn the_read_only_inputs_are_named_with_their_digests_and_the_receipt_still_recomputes() {
    let mut r = synthetic::hostile_result("memo", false);
    let digest = format!("sha256:{}", "a".repeat(64));
    r.evidence.read_only_inputs = vec![InputDigest {
        path: "~/.cache/evo/torch".into(),
        sha256: digest.clone(),
        files: 3,
        bytes: 1234,
    }];
    let pr = body(&r);
    let reproduce = pr.split("## How to reproduce").nth(1).unwrap();
    assert!(
        reproduce.contains(&format!(
            "~/.cache/evo/torch  {digest} (3 files, 1234 bytes)"
        )),
        "{reproduce}"
    );
    // The digests are records, not figures: they change nothing `--recompute` re-derives.
    let without = synthetic::hostile_result("memo", false);
    assert_eq!(
        receipt::recompute::recompute(&r),
        receipt::recompute::recompute(&without)
    );
    // The field travels in the signed predicate.
    let key = SigningKey::from_bytes(&[9u8; 32]);
    let signed = receipt::sign_sealed(&r, &key, &receipt::SealKey::from_bytes([3; 32])).unwrap();
    let verified = receipt::verify(&signed.bytes, &key.verifying_key()).unwrap();
    assert_eq!(
        verified.statement.predicate.evidence.read_only_inputs,
        r.evidence.read_only_inputs
    );
    // A result from before the field existed still reads, without it.
    let mut old = serde_json::to_value(synthetic::hostile_result("memo", false)).unwrap();
    assert!(old.get("read_only_inputs").is_none() && old.get("from_agent").is_none());
    old.as_object_mut().unwrap().remove("read_only_inputs");
    let back: ConfirmResult = serde_json::from_value(old).unwrap();
    assert!(back.evidence.read_only_inputs.is_empty() && !back.evidence.from_agent);
}

#[test]
fn the_verify_command_requires_the_verdict_and_names_the_patch() {
    let tested = body(&synthetic::hostile_result("memo", false));
    let wanted = "evo receipt verify \"$RUN/validation_receipt.json\" --require accepted \
                  --require tier=tested --patch \"$RUN/candidate.patch\" --recompute";
    assert!(tested.contains(wanted), "{tested}");
    let pr = body(&inconclusive());
    assert!(
        pr.contains("\" --require inconclusive --patch \"$RUN/candidate.patch\" --recompute"),
        "{pr}"
    );
    // Every flag the texts print is one `evo receipt verify` takes.
    for flag in [
        "accepted",
        "tier=tested",
        "tier=measured",
        "inconclusive",
        "rejected",
    ] {
        assert!(flag.parse::<Requirement>().is_ok(), "{flag}");
    }
    let claim = terminal::Claim {
        verdict: Verdict::Accepted,
        tier: Tier::Measured,
        patch: "/w/receipts/r1/candidate.patch".into(),
    };
    let next = terminal::next_commands(
        Path::new("/w/receipts/r1/validation_receipt.json"),
        &evo::receipt::keys::VerifyWith::Found,
        Some(&claim),
    );
    assert!(
        next.contains(
            "  evo receipt verify /w/receipts/r1/validation_receipt.json --require accepted \
             --require tier=measured --patch /w/receipts/r1/candidate.patch --recompute\n"
        ),
        "{next}"
    );
}
