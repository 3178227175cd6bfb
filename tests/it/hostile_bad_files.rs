//! Hostile input, bad files (issue 7): every bad campaign, workload, key or template is refused
//! with a specific message and the usage-error exit code, before anything is decided; the user's
//! repository is untouched and no receipt is written.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

use evo::exit_codes::USAGE_ERROR;
use util::cpairs::{HOLDOUTS, WORKLOAD};
use util::{evo, fixture_repo, patch_by_editing, snapshot, text, write};

/// A valid campaign for both `evo confirm` and `evo campaign run`; the tests break one thing.
const CAMPAIGN: &str = r#"{
  "name": "cpairs",
  "repo": "../repo",
  "baseline": "main",
  "workload": "workload.json",
  "holdouts": "holdouts.json",
  "candidates": [{ "name": "comment", "patch": "comment.patch" }],
  "search": { "pairs": 5 },
  "confirm": { "pairs": 9, "aa_pairs": 11, "top": 1 },
  "output": "receipts"
}"#;

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    camp: PathBuf,
}

impl Fixture {
    /// The repository, a valid workload and holdouts, a harmless patch, and `campaign` as
    /// `campaign.json`.
    fn new(campaign: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo("cpairs", &repo);
        let camp = dir.path().join("camp");
        write(&camp.join("workload.json"), WORKLOAD);
        write(&camp.join("holdouts.json"), HOLDOUTS);
        write(&camp.join("campaign.json"), campaign);
        let diff = patch_by_editing(
            &repo,
            &[(
                "prog.c",
                "static unsigned long work(",
                "/* a comment */\nstatic unsigned long work(",
            )],
        );
        write(&camp.join("comment.patch"), &diff);
        Fixture {
            _dir: dir,
            repo,
            camp,
        }
    }

    /// The fixture with one edit (old, new) of the valid campaign.
    fn with_campaign_edit(old: &str, new: &str) -> Fixture {
        assert!(CAMPAIGN.contains(old), "the campaign has no {old:?}");
        Fixture::new(&CAMPAIGN.replacen(old, new, 1))
    }

    fn with_workload_edit(old: &str, new: &str) -> Fixture {
        let fx = Fixture::new(CAMPAIGN);
        assert!(WORKLOAD.contains(old), "the workload has no {old:?}");
        write(
            &fx.camp.join("workload.json"),
            &WORKLOAD.replacen(old, new, 1),
        );
        fx
    }

    /// Runs evo with `args` (the campaign file appended where `CAMP` stands) and checks the
    /// common promises: usage error, the user's repository untouched, no receipt written.
    /// Returns stderr.
    fn refused(&self, args: &[&str]) -> String {
        let campaign = self.camp.join("campaign.json");
        let before = snapshot(&self.repo);
        let out: Output = evo()
            .current_dir(&self.camp)
            .args(args.iter().map(|a| {
                if *a == "CAMP" {
                    campaign.clone().into_os_string()
                } else {
                    (*a).into()
                }
            }))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(USAGE_ERROR),
            "expected a usage error\n{}",
            text(&out)
        );
        assert_eq!(
            before,
            snapshot(&self.repo),
            "the user's repository changed\n{}",
            text(&out)
        );
        let receipts = receipts_under(&self.camp.join("receipts"));
        assert!(
            receipts.is_empty(),
            "a receipt was written: {receipts:?}\n{}",
            text(&out)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    fn confirm(&self) -> String {
        self.refused(&["confirm", "comment.patch", "--campaign", "CAMP"])
    }

    fn campaign_run(&self) -> String {
        self.refused(&["campaign", "run", "CAMP"])
    }

    /// Both commands refuse the campaign; returns their stderr (confirm, campaign run).
    fn both(&self) -> [String; 2] {
        [self.confirm(), self.campaign_run()]
    }
}

/// Every `validation_receipt.json` under `dir`.
fn receipts_under(dir: &Path) -> Vec<PathBuf> {
    util::files_under(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n == "validation_receipt.json")
        })
        .collect()
}

/// The `error:` line of evo's stderr.
fn error_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in\n{stderr}"))
}

fn assert_says(stderr: &str, parts: &[&str]) {
    let line = error_line(stderr);
    for part in parts {
        assert!(
            line.contains(part),
            "{part:?} missing from {line:?}\n{stderr}"
        );
    }
}

#[test]
fn malformed_json_names_file_line_and_column() {
    // Line 3, a missing comma after `"../repo"`.
    let fx = Fixture::with_campaign_edit(r#""../repo","#, r#""../repo""#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &["campaign.json:4:3: not valid JSON: expected `,` or `}`"],
        );
    }
    // A workload cut off in the middle.
    let fx = Fixture::with_workload_edit(
        r#""protected": ["bench/**"]
}"#,
        r#""protected": ["bench/**""#,
    );
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &["workload.json:", "not valid JSON: EOF while parsing"],
        );
    }
}

#[test]
fn unknown_keys_are_named_with_their_field_path() {
    let fx = Fixture::with_campaign_edit(r#""search""#, r#""serch""#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &["campaign.json:8:", "serch: unknown field `serch`"],
        );
    }
    let fx = Fixture::with_campaign_edit(r#""top": 1"#, r#""top": 1, "bogus": 2"#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &["campaign.json:9:", "confirm.bogus: unknown field `bogus`"],
        );
    }
    let fx = Fixture::with_workload_edit(r#""compare""#, r#""comparison""#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &[
                "workload.json:",
                "scenarios[0].comparison: unknown field `comparison`",
            ],
        );
    }
}

#[test]
fn missing_fields_are_named() {
    let fx = Fixture::with_campaign_edit("  \"baseline\": \"main\",\n", "");
    for stderr in fx.both() {
        assert_says(&stderr, &["campaign.json:", "missing field `baseline`"]);
    }
    let fx = Fixture::with_workload_edit(r#""run": "./bench/run.sh 100000 {seed}", "#, "");
    for stderr in fx.both() {
        assert_says(&stderr, &["workload.json:", "missing field `run`"]);
    }
}

#[test]
fn wrong_types_are_named_with_their_field_path() {
    let fx = Fixture::with_campaign_edit(r#""pairs": 9"#, r#""pairs": "nine""#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &[
                "campaign.json:9:",
                "confirm.pairs: invalid type: string \"nine\"",
            ],
        );
    }
    let fx = Fixture::with_workload_edit(r#""timeout_s": 10"#, r#""timeout_s": "ten""#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &[
                "workload.json:4:",
                "test.timeout_s: invalid type: string \"ten\"",
            ],
        );
    }
}

#[test]
fn a_baseline_that_does_not_resolve_is_named() {
    let fx = Fixture::with_campaign_edit(r#""main""#, r#""no-such-branch""#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &["baseline `no-such-branch` does not resolve to a commit in"],
        );
    }
}

#[test]
fn a_repository_path_that_is_not_a_repository_is_named() {
    let fx = Fixture::with_campaign_edit(r#""../repo""#, r#""not-a-repo""#);
    std::fs::create_dir_all(fx.camp.join("not-a-repo")).unwrap();
    for stderr in fx.both() {
        assert_says(&stderr, &["not-a-repo is not a git repository"]);
    }
    // A path that does not exist at all.
    let fx = Fixture::with_campaign_edit(r#""../repo""#, r#""../nowhere""#);
    for stderr in fx.both() {
        assert_says(&stderr, &["nowhere is not a git repository"]);
    }
}

/// The error keeps its cause (issue 29, item 5): under the message evo's own words give, the
/// line git's error gives, which a flattened message used to drop.
#[test]
fn a_repository_that_is_not_one_says_what_git_said() {
    let fx = Fixture::with_campaign_edit(r#""../repo""#, r#""not-a-repo""#);
    std::fs::create_dir_all(fx.camp.join("not-a-repo")).unwrap();
    for stderr in fx.both() {
        assert_says(&stderr, &["not-a-repo is not a git repository"]);
        let cause = stderr.lines().find(|l| l.starts_with("  caused by: "));
        assert!(
            cause.is_some_and(|l| l.contains("could not find repository")),
            "no cause from git in\n{stderr}"
        );
    }
    // The machine reader's last event says the cause too.
    let out = evo()
        .current_dir(&fx.camp)
        .args([
            "confirm",
            "comment.patch",
            "--campaign",
            "campaign.json",
            "--json",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let event: serde_json::Value = serde_json::from_str(last).unwrap();
    let error = event["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("not-a-repo is not a git repository\ncaused by: could not find repository"),
        "{last}"
    );
}

/// A workload whose build command does not exist: the baseline itself fails to build, which
/// is the user's mistake (nothing about the candidate was decided), so a usage error naming
/// the command and the shell's "not found".
#[test]
fn a_workload_command_that_does_not_exist_is_a_usage_error_naming_it() {
    let fx = Fixture::with_workload_edit(r#""make -s""#, r#""no-such-build-tool -s""#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &[
                "the baseline itself fails",
                "`no-such-build-tool -s`",
                "exit code 127 (command not found)",
            ],
        );
        assert!(stderr.contains("no-such-build-tool: not found"), "{stderr}");
    }
    let fx = Fixture::with_workload_edit(r#""./prog --selftest""#, r#""no-such-tester""#);
    for stderr in fx.both() {
        assert_says(
            &stderr,
            &[
                "the baseline itself fails",
                "`no-such-tester`",
                "exit code 127 (command not found)",
            ],
        );
    }
}

#[test]
fn a_campaign_without_candidates_is_refused() {
    let fx =
        Fixture::with_campaign_edit(r#"[{ "name": "comment", "patch": "comment.patch" }]"#, "[]");
    assert_says(
        &fx.campaign_run(),
        &["the campaign has no candidates: give `candidates` (patch files) or `agent`"],
    );
    let fx = Fixture::with_campaign_edit(
        "  \"candidates\": [{ \"name\": \"comment\", \"patch\": \"comment.patch\" }],\n",
        "",
    );
    assert_says(&fx.campaign_run(), &["the campaign has no candidates"]);
}

#[test]
fn zero_or_negative_pairs_are_refused() {
    for n in ["0", "-3"] {
        let fx = Fixture::with_campaign_edit(r#""pairs": 5"#, &format!(r#""pairs": {n}"#));
        assert_says(
            &fx.campaign_run(),
            &[
                "campaign.json:8:",
                &format!("search.pairs: expected a count from 1 to 10000, got {n}"),
            ],
        );
        let fx = Fixture::with_campaign_edit(r#""pairs": 9"#, &format!(r#""pairs": {n}"#));
        for stderr in fx.both() {
            assert_says(
                &stderr,
                &[
                    "campaign.json:9:",
                    &format!("confirm.pairs: expected a number of pairs from 6 to 10000, got {n}"),
                ],
            );
        }
    }
}

#[test]
fn fewer_than_six_confirmation_pairs_cannot_give_a_95_percent_interval() {
    for n in [1, 5] {
        let fx = Fixture::with_campaign_edit(r#""pairs": 9"#, &format!(r#""pairs": {n}"#));
        for stderr in fx.both() {
            assert_says(
                &stderr,
                &[
                    "campaign.json:9:",
                    &format!("confirm.pairs: {n} pairs cannot give a 95% interval: use at least 6"),
                ],
            );
        }
    }
}

#[test]
fn a_missing_signing_key_is_refused_before_anything_runs() {
    for key in ["no-keys/signing.key", "no-key-dir/"] {
        let fx =
            Fixture::with_campaign_edit(r#""output""#, &format!(r#""key": "{key}", "output""#));
        for stderr in fx.both() {
            assert_says(
                &stderr,
                &["cannot use the signing key: cannot read the key", key],
            );
        }
        // Refused before any run directory, and so before any search, build or measurement.
        assert!(
            !fx.camp.join("receipts").exists(),
            "a run directory was created"
        );
        assert!(!fx.camp.join(key).exists(), "evo created {key}");
    }
}

/// `evo pr render` with a template that uses an undefined variable: a usage error naming the
/// variable and the template line (the receipt itself verifies).
#[test]
fn a_template_with_an_undefined_variable_names_it_and_its_line() {
    // A patch to a protected file is refused at once, which still writes a signed receipt.
    let fx = Fixture::new(CAMPAIGN);
    let diff = patch_by_editing(&fx.repo, &[("bench/run.sh", "#", "# edited\n#")]);
    write(&fx.camp.join("protected.patch"), &diff);
    let out = evo()
        .current_dir(&fx.camp)
        .args(["confirm", "protected.patch", "--campaign", "campaign.json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(evo::exit_codes::REJECTED),
        "{}",
        text(&out)
    );
    let receipts = receipts_under(&fx.camp.join("receipts"));
    let [receipt] = receipts.as_slice() else {
        panic!("expected one receipt: {receipts:?}\n{}", text(&out));
    };
    let cases = [
        (
            "line one\n{{ result.verdict }}\nthird {{ no_such_var.field }}\n",
            "undefined value: `no_such_var` is undefined (in bad.md:3)",
        ),
        (
            "a\n{{ result.nope_field }}\n",
            "undefined value: `result.nope_field` is undefined (in bad.md:2)",
        ),
        ("a\n{% if x %}\n", "syntax error: unexpected end of input"),
    ];
    for (template, message) in cases {
        write(&fx.camp.join("bad.md"), template);
        let before = snapshot(&fx.repo);
        let out = evo()
            .current_dir(&fx.camp)
            .args(["pr", "render"])
            .arg(receipt)
            .args(["--template", "bad.md", "--out", "pr.md"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", text(&out));
        assert_says(&String::from_utf8_lossy(&out.stderr), &[message]);
        assert_eq!(before, snapshot(&fx.repo));
        assert!(!fx.camp.join("pr.md").exists(), "a PR text was written");
    }
}
