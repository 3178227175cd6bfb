//! What a reviewer reads in the PR text (issue 12): per scenario both arms' times, CPU time and
//! memory, the change and the verdict first; the statistics folded below; the pairs plot linked;
//! the lanes of the differential check in one table; commands a reviewer can run from the
//! repository; and for a patch that was not accepted, why not.
//!
//! Rendered from a signed and verified receipt of a synthetic result, as `evo pr render` does.
//! The markdown's structure as GitHub renders it is checked in `hostile_pr_text`.

use crate::util::synthetic;

use ed25519_dalek::SigningKey;

use evo::evidence::result::{ConfirmResult, DifferentialRecord, Verdict};
use evo::receipt;
use evo::report::{pr_body, pr_context::ReceiptRef};
use synthetic::hostile_result;

/// A plain result: every candidate-controlled field says `memo`; tier tested, accepted.
fn plain() -> ConfirmResult {
    let r = hostile_result("memo", false);
    assert_eq!(r.verdict, Verdict::Accepted);
    r
}

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

/// The text of section `heading` (a `## ` or `### ` line), up to the next heading.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text
        .find(&format!("{heading}\n"))
        .unwrap_or_else(|| panic!("no {heading:?} in\n{text}"));
    let rest = &text[start + heading.len()..];
    let end = rest.find("\n## ").or_else(|| rest.find("\n### "));
    &rest[..end.unwrap_or(rest.len())]
}

#[test]
fn the_summary_shows_both_arms_the_change_and_the_verdict_before_any_statistics() {
    let text = body(&plain());
    let summary = section(&text, "## Summary");
    for needle in [
        "| scenario | role | baseline | candidate | change | user CPU | peak memory | scenario verdict |",
        // 0.5 s against 0.5 s / 1.05; 1000 KiB in both arms.
        "| `memo` | training | 500.5 ± 0.5 ms | 476.7 ± 0.5 ms | -4.8% | 500.5 ms → 476.7 ms \
         | 1.0 MiB → 1.0 MiB | accepted |",
        "| `held` | holdout |",
        "no regression |",
        "**tested** is the highest of evo's tiers:",
    ] {
        assert!(summary.contains(needle), "missing {needle:?} in\n{summary}");
    }
    for statistic in [
        "Noise floor",
        "A/A",
        "minimum detectable",
        "w(6) to w(40)",
        "CoV",
    ] {
        assert!(
            !summary.contains(statistic),
            "{statistic:?} belongs in the folded statistics:\n{summary}"
        );
    }
}

#[test]
fn the_statistics_are_folded_in_a_details_block() {
    let text = body(&plain());
    let evidence = section(&text, "## Evidence");
    let open = evidence.find("\n<details>\n<summary>").expect(evidence);
    let close = evidence.find("\n</details>\n").expect(evidence);
    let folded = &evidence[open..close];
    for needle in [
        "| scenario | role | pairs | estimate | interval | interval bounds | CoV base/cand | gate |",
        "w(6) to w(40) of the 45 sorted pairwise means of the 9 log-ratios, coverage 96.1%",
        "Noise floor ±",
        // One noise figure, the A/A pairs', named with its pair count.
        " at 11 pairs (from the A/A noise, σ ",
        "baseline against itself, 11 pairs). ",
        "The A/A interval ",
        "Pair count: decided at 9 pairs: accepted (first look 9, cap 9)",
    ] {
        assert!(folded.contains(needle), "missing {needle:?} in\n{folded}");
    }
    // GitHub renders markdown inside `<details>` only after a blank line, and needs one before
    // the closing tag.
    assert!(folded.contains("</summary>\n\n|"), "{folded}");
    assert!(evidence[..close + 1].ends_with("\n\n"), "{evidence}");
}

#[test]
fn a_speedup_bought_with_more_cpu_time_says_so() {
    let quiet = body(&plain());
    assert!(!quiet.contains("CPU time (user + sys)"), "{quiet}");
    let mut r = plain();
    // Threads: the candidate's CPU time is twice the baseline's wall time.
    for p in &mut r.evidence.scenarios[0].pairs {
        p.candidate.rusage.user_s = 2.0 * p.baseline.wall_s;
    }
    let text = body(&r);
    let summary = section(&text, "## Summary");
    assert!(
        summary.contains(
            "- ⚠️ `memo`: faster in wall time but uses 2.0× the CPU time (user + sys): more \
             threads?"
        ),
        "{summary}"
    );
    assert!(summary.contains("| 500.5 ms → 1.001 s |"), "{summary}");
}

#[test]
fn the_pairs_plot_is_linked_beside_the_receipt() {
    let text = body(&plain());
    let summary = section(&text, "## Summary");
    assert!(
        summary.contains("[pairs.svg](pairs.svg), beside this file and `validation_receipt.json`"),
        "{summary}"
    );
    let mut r = plain();
    for s in &mut r.evidence.scenarios {
        (s.training, s.holdout) = (None, None);
    }
    let unmeasured = body(&r);
    assert!(!unmeasured.contains("pairs.svg"), "{unmeasured}");
}

#[test]
fn a_rejected_patch_says_why_instead_of_why_it_is_faster() {
    let r = hostile_result("the self-test printed 41", true);
    assert_eq!(r.verdict, Verdict::Rejected);
    let text = body(&r);
    assert!(!text.contains("Why it is faster"), "{text}");
    let why = section(&text, "## Why it was rejected");
    assert!(
        why.starts_with(
            "\n\nThe verdict's reasons:\n\n- tests failed: the self-test printed 41\n\n"
        ),
        "{why}"
    );
    // The author's reason is still quoted, as the author's.
    assert!(why.contains("not independently verified"), "{why}");
    let limitations = section(&text, "## Limitations");
    assert!(!limitations.contains("tests failed"), "{limitations}");
    assert!(text.contains("No tier was reached: evo's tiers,"), "{text}");
}

#[test]
fn an_inconclusive_patch_says_why_it_is_inconclusive() {
    let mut r = plain();
    r.verdict = Verdict::Inconclusive;
    r.reasons = vec!["the A/A interval excludes 1: the setup is biased".into()];
    let text = body(&r);
    assert!(!text.contains("Why it is faster"), "{text}");
    let why = section(&text, "## Why it is inconclusive");
    assert!(
        why.contains("- the A/A interval excludes 1: the setup is biased"),
        "{why}"
    );
}

#[test]
fn an_accepted_patch_keeps_its_caveats_among_the_limitations() {
    let mut r = plain();
    r.reasons = vec!["no holdout was declared".into()];
    let text = body(&r);
    assert!(section(&text, "## Why it is faster").contains("not independently verified"));
    assert!(section(&text, "## Limitations").contains("- no holdout was declared"));
}

#[test]
fn how_to_reproduce_names_no_path_of_the_authors_machine() {
    let mut r = plain();
    let home = "/tmp/.tmpXYZ123";
    r.evidence.repo = format!("{home}/campaigns/../repo");
    r.evidence.campaign_file = format!("{home}/repo/campaigns/c.json");
    r.evidence.patch.source = format!("{home}/camp/memo.patch");
    let text = body(&r);
    assert!(!text.contains(home), "a path of this machine:\n{text}");
    let how = section(&text, "## How to reproduce");
    for needle in [
        "RUN=path/to/20261201T120000Z-x-0123456   # the run directory",
        "evo receipt verify \"$RUN/validation_receipt.json\" --require accepted --require \
         tier=tested --patch \"$RUN/candidate.patch\" --recompute\n",
        "evo confirm \"$RUN/candidate.patch\" --campaign campaigns/c.json\n",
        "git checkout --detach 0123456789abcdef0123456789abcdef01234567",
        "git apply \"$RUN/candidate.patch\"   # sha256 ",
    ] {
        assert!(how.contains(needle), "missing {needle:?} in\n{how}");
    }
    // A campaign file outside the repository is named by its file name, with a note.
    r.evidence.campaign_file = format!("{home}/camp/my campaign.json");
    let how = body(&r);
    let how = section(&how, "## How to reproduce");
    assert!(!how.contains(home), "{how}");
    assert!(
        how.contains(
            "--campaign 'my campaign.json'   # 'my campaign.json' is not in the repository"
        ),
        "{how}"
    );
}

/// The hand reproduction is runnable: a timed command's `{seed}` is filled with the seed its
/// first pair computed on, and the line says so. Left as written, it would not run.
#[test]
fn the_hand_reproduction_fills_the_seed_of_the_first_pair() {
    let mut r = plain();
    let s = &mut r.evidence.scenarios[0];
    s.candidate_command = "./bench/run.sh 100000 {seed}".into();
    s.pairs[0].seed = Some(4242);
    let name = s.name.clone();
    let text = body(&r);
    let how = section(&text, "## How to reproduce");
    assert!(!how.contains("{seed}"), "{how}");
    let line = format!(
        "./bench/run.sh 100000 4242   # timed run of `{name}` on its first pair's seed (each pair \
         had its own)"
    );
    assert!(how.contains(&line), "missing {line:?} in\n{how}");
}

fn lane(scenario: &str, role: &str, lane: &str, same: bool) -> DifferentialRecord {
    DifferentialRecord {
        scenario: scenario.into(),
        role: serde_json::from_value(serde_json::json!(role)).unwrap(),
        lane: lane.parse().unwrap(),
        rule: "exact".into(),
        baseline_sha256: "7".repeat(64),
        candidate_sha256: "7".repeat(64),
        same,
        summary: (!same).then(|| "line 2 differs".into()),
        diff: None,
    }
}

#[test]
fn the_differential_lanes_of_a_scenario_are_one_table_row() {
    let mut r = plain();
    r.evidence.differential = vec![
        lane("memo", "training", "differential", true),
        lane("held", "holdout", "differential", true),
        lane("memo", "training", "sanitizer", false),
        lane("held", "holdout", "sanitizer", true),
    ];
    let text = body(&r);
    let checks = section(&text, "### Tests, differential, sanitizers");
    let rows: Vec<&str> = checks.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(
        rows,
        [
            "| `memo` | training | exact | identical to the baseline's | differs: line 2 differs |",
            "| `held` | holdout | exact | identical to the baseline's | identical to the \
             baseline's |",
        ],
        "{checks}"
    );
    // No line per lane as well.
    assert!(!checks.contains("- differential `"), "{checks}");
}
