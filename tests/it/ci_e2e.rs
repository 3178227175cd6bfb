//! evo as a CI job runs it (examples/github/evo.yml): the signing key from `$EVO_SIGNING_KEY`,
//! never written anywhere nor seen by the code under test, and `--fail-on` choosing which
//! verdicts fail the job.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use util::cpairs::HOT_LINE;
use util::{evo, fixture_repo, patch_by_editing, text, write};

/// The cpairs fixture without the sanitizer lane or holdouts, to keep these runs short. `@RUN@`
/// is the training scenario's timed command. The probing candidate looks for `EVO_SIGNING_KEY`
/// on purpose, so the lane-probes gate lets `EVO_` through.
const WORKLOAD: &str = r#"{
  "name": "cpairs",
  "build": { "command": "make -s", "artifacts": ["prog"], "timeout_s": 60 },
  "test": { "command": "./prog --selftest", "timeout_s": 10 },
  "scenarios": [
    { "name": "sum-100k", "role": "training",
      "run": "@RUN@", "check": "./bench/run.sh 500 {seed}",
      "compare": "exact", "deterministic_output": true, "timeout_s": 20 }
  ],
  "protected": ["bench/**"],
  "allow_probes": ["EVO_"]
}"#;

const RUN: &str = "./bench/run.sh 100000 {seed}";

/// A timed command that is slower in the second baseline build's tree: the A/A check is then
/// biased whatever the machine does, and the verdict inconclusive (never rejected: the
/// candidate is not slower than the baseline).
const RUN_BIASED_AA: &str =
    "case $(pwd) in *baseline-again*) sleep 0.05;; esac; exec ./bench/run.sh 100000 {seed}";

/// Printed by every build and run of the probing candidate, so a test can tell it ran.
const PROBE: &str = "ENV-PROBE";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    camp: PathBuf,
    /// evo's default key folder (`EVO_KEY_DIR`): must stay empty when the variable signs.
    key_dir: PathBuf,
}

impl Fixture {
    /// `campaign_extra` is added to the campaign's object (`, "key": …`).
    fn new(run: &str, campaign_extra: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let repo = root.join("repo");
        fixture_repo("cpairs", &repo);
        let camp = root.join("camp");
        write(&camp.join("workload.json"), &WORKLOAD.replace("@RUN@", run));
        let campaign = format!(
            r#"{{ "name": "ci", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "confirm": {{ "pairs": 6, "aa_pairs": 6 }},
  "search": {{ "pairs": 2 }}, "output": "receipts"{campaign_extra} }}"#
        );
        write(&camp.join("campaign.json"), &campaign);
        Fixture {
            key_dir: root.join("default-keys"),
            _dir: dir,
            root,
            repo,
            camp,
        }
    }

    fn patch(&self, name: &str, edits: &[(&str, &str, &str)]) -> PathBuf {
        let path = self.camp.join(name);
        write(&path, &patch_by_editing(&self.repo, edits));
        path
    }

    fn memo_patch(&self) -> PathBuf {
        self.patch("memo.patch", &util::cpairs::MEMO_EDITS)
    }

    /// The memo speedup, whose build prints its whole environment and whose program prints
    /// what it finds in `$EVO_SIGNING_KEY` on stderr (timed runs' stderr goes into the result
    /// and the receipt).
    fn probing_patch(&self) -> PathBuf {
        let print = format!(
            "int main(int argc, char **argv) {{\n    {{ const char *k = getenv(\"EVO_SIGNING_KEY\"); \
             fprintf(stderr, \"{PROBE} EVO_SIGNING_KEY=%s\\n\", k ? k : \"(unset)\"); }}\n"
        );
        self.patch(
            "probing.patch",
            &[
                util::cpairs::MEMO_EDITS[0],
                util::cpairs::MEMO_EDITS[1],
                ("prog.c", "int main(int argc, char **argv) {\n", &print),
                (
                    "Makefile",
                    "\tcc -O2 -o prog prog.c\n",
                    &format!("\t@echo {PROBE} >&2; env >&2\n\tcc -O2 -o prog prog.c\n"),
                ),
            ],
        )
    }

    /// A candidate whose build fails: rejected by the build gate, in seconds.
    fn broken_patch(&self) -> PathBuf {
        self.patch(
            "broken.patch",
            &[(
                "prog.c",
                HOT_LINE,
                "        total += slow_hash(v) this is not C;",
            )],
        )
    }

    fn evo(&self) -> std::process::Command {
        let mut cmd = evo();
        cmd.env("EVO_KEY_DIR", &self.key_dir);
        cmd
    }

    fn confirm(&self, patch: &Path, extra: &[&str]) -> std::process::Command {
        let mut cmd = self.evo();
        cmd.arg("confirm")
            .arg(patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .args(extra);
        cmd
    }
}

fn keygen(out: &Path) -> (String, PathBuf) {
    let o = evo().args(["keygen", "--out"]).arg(out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let pem = std::fs::read_to_string(out.join("signing.key")).unwrap();
    (pem, out.join("signing.pub.pem"))
}

fn key_id_of(public: &Path) -> String {
    let key = evo::receipt::keys::load_verifying_key(public).unwrap();
    evo::receipt::keys::key_id(&key)
}

/// The single run directory under `out`.
fn run_dir(out: &Path, o: &Output) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", out.display(), text(o)))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}\n{}", text(o));
    dirs[0].clone()
}

fn verdict(dir: &Path) -> String {
    let json = std::fs::read_to_string(dir.join("result.json")).unwrap();
    let result: Value = serde_json::from_str(&json).unwrap();
    result["verdict"].as_str().unwrap().to_string()
}

/// Every file under `dir` as text, with its path.
fn all_text(dir: &Path) -> Vec<(PathBuf, String)> {
    util::files_under(dir)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap();
            (f, String::from_utf8_lossy(&bytes).into_owned())
        })
        .collect()
}

/// The lines of a PEM's body: what a leak of the key would carry.
fn body_lines(pem: &str) -> Vec<&str> {
    pem.lines().filter(|l| !l.starts_with("-----")).collect()
}

#[test]
fn the_key_from_the_environment_signs_is_written_nowhere_and_no_candidate_sees_it() {
    // The campaign names a key of its own: the variable takes precedence over it.
    let fx = Fixture::new(RUN, r#", "key": "keys/signing.key""#);
    let (_, campaign_public) = keygen(&fx.camp.join("keys"));
    let (pem, public) = keygen(&fx.root.join("ci-secret"));
    // Only the variable holds the key from now on: evo never had a file to read it from.
    std::fs::remove_file(fx.root.join("ci-secret/signing.key")).unwrap();
    let out_dir = fx.root.join("evo-out");
    let out = fx
        .confirm(&fx.probing_patch(), &["--out-dir"])
        .arg(&out_dir)
        .env("EVO_SIGNING_KEY", &pem)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 3 | 4)),
        "no verdict\n{}",
        text(&out)
    );
    let dir = run_dir(&out_dir, &out);
    let receipt = dir.join("validation_receipt.json");
    // The paths the example workflow uses: <out-dir>/<run>/pr_body.md beside the receipt.
    assert!(
        receipt.is_file() && dir.join("pr_body.md").is_file(),
        "{}",
        text(&out)
    );
    let id = key_id_of(&public);
    assert!(
        stdout.contains(&format!(
            "signed with key {id} (the key from $EVO_SIGNING_KEY"
        )) && stdout.contains("takes precedence over the campaign's key"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("--key signing.pub.pem --require ")
            && stdout.contains(" --recompute\n")
            && stdout.contains(&format!("the public key of {id}")),
        "{}",
        text(&out)
    );
    let verify = evo()
        .args(["receipt", "verify"])
        .arg(&receipt)
        .arg("--key")
        .arg(&public)
        .arg("--recompute")
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", text(&verify));
    let other = evo()
        .args(["receipt", "verify"])
        .arg(&receipt)
        .arg("--key")
        .arg(&campaign_public)
        .output()
        .unwrap();
    assert_eq!(other.status.code(), Some(5), "{}", text(&other));

    // evo wrote no key: its default key folder was never created.
    assert!(!fx.key_dir.exists(), "evo created a default key");
    // The candidate ran and looked, and found nothing: not in its build's environment, not in
    // its timed runs'.
    let written = all_text(&fx.root);
    let build_log = written
        .iter()
        .find(|(f, t)| f.ends_with("logs/candidate/build.stderr.log") && t.contains(PROBE))
        .unwrap_or_else(|| panic!("the build's probe did not run\n{}", text(&out)));
    assert!(build_log.1.contains("PATH="), "{}", build_log.1);
    let result = std::fs::read_to_string(dir.join("result.json")).unwrap();
    assert!(
        result.contains(&format!("{PROBE} EVO_SIGNING_KEY=(unset)")),
        "the timed runs' probe did not run\n{}",
        text(&out)
    );
    let recorded: Value = serde_json::from_str(&result).unwrap();
    let env = recorded["sandbox"]["environment"].as_object().unwrap();
    assert!(
        env.contains_key("PATH") && !env.contains_key("EVO_SIGNING_KEY"),
        "{env:?}"
    );
    for (file, content) in &written {
        if file.starts_with(fx.root.join("ci-secret")) {
            continue;
        }
        assert!(
            !content.contains("EVO_SIGNING_KEY=-----"),
            "{} holds the variable",
            file.display()
        );
        for line in body_lines(&pem) {
            assert!(!content.contains(line), "{} holds the key", file.display());
        }
    }
    for line in body_lines(&pem) {
        assert!(!text(&out).contains(line), "evo printed the key");
    }
}

#[test]
fn a_malformed_variable_stops_both_commands_before_anything_runs_and_is_never_quoted() {
    let fx = Fixture::new(
        RUN,
        r#", "candidates": [ { "name": "memo", "patch": "memo.patch" } ]"#,
    );
    let marker = "c2VjcmV0LW5vdC1hLWtleS1hdC1hbGwtMTIzNDU2Nzg5MA";
    let value = format!("-----BEGIN PRIVATE KEY-----\n{marker}\n-----END PRIVATE KEY-----\n");
    let patch = fx.memo_patch();
    let confirm = fx
        .confirm(&patch, &[])
        .env("EVO_SIGNING_KEY", &value)
        .output()
        .unwrap();
    let campaign = fx
        .evo()
        .args(["campaign", "run"])
        .arg(fx.camp.join("campaign.json"))
        .env("EVO_SIGNING_KEY", &value)
        .output()
        .unwrap();
    for out in [&confirm, &campaign] {
        assert_eq!(out.status.code(), Some(2), "{}", text(out));
        let all = text(out);
        assert!(
            all.contains("$EVO_SIGNING_KEY does not hold a usable Ed25519 private key"),
            "{all}"
        );
        assert!(!all.contains(marker), "the value was quoted:\n{all}");
    }
    assert!(
        util::files_under(&fx.camp.join("receipts")).is_empty(),
        "something ran"
    );
    assert!(!fx.key_dir.exists(), "evo created a default key");
}

#[test]
fn a_campaign_that_passes_the_signing_key_variable_on_is_refused_where_it_says_so() {
    for (field, json) in [
        (
            "sandbox.pass_env",
            r#", "sandbox": { "pass_env": ["EVO_SIGNING_KEY"] }"#,
        ),
        (
            "agent.pass_env",
            r#", "agent": { "command": "true", "pass_env": ["TOKEN", "EVO_SIGNING_KEY"] }"#,
        ),
    ] {
        let fx = Fixture::new(RUN, json);
        let out = fx.confirm(&fx.memo_patch(), &[]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            stderr.contains("campaign.json:") && stderr.contains(field),
            "{field}: {}",
            text(&out)
        );
        assert!(
            stderr.contains("EVO_SIGNING_KEY holds evo's signing key"),
            "{}",
            text(&out)
        );
    }
}

#[test]
fn fail_on_rejected_lets_an_inconclusive_confirmation_pass_and_keeps_3_for_a_rejection() {
    let fx = Fixture::new(RUN_BIASED_AA, "");
    let out_dir = fx.root.join("evo-out");
    let out = fx
        .confirm(&fx.memo_patch(), &["--fail-on", "rejected", "--out-dir"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let dir = run_dir(&out_dir, &out);
    assert_eq!(verdict(&dir), "inconclusive", "{}", text(&out));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("exit code 0 for a verdict of inconclusive: --fail-on does not list it"),
        "{}",
        text(&out)
    );

    let broken = fx.broken_patch();
    let rejected = |fail_on: Option<&str>| {
        let out_dir = tempfile::tempdir_in(&fx.root).unwrap();
        let mut cmd = fx.confirm(&broken, &["--out-dir"]);
        cmd.arg(out_dir.path());
        if let Some(list) = fail_on {
            cmd.args(["--fail-on", list]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            verdict(&run_dir(out_dir.path(), &out)),
            "rejected",
            "{}",
            text(&out)
        );
        out
    };
    for list in [None, Some("rejected"), Some("inconclusive,rejected")] {
        let out = rejected(list);
        assert_eq!(out.status.code(), Some(3), "{list:?}\n{}", text(&out));
    }
    let out = rejected(Some("inconclusive"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn fail_on_applies_to_a_campaign_and_never_hides_an_error() {
    let fx = Fixture::new(
        RUN,
        r#", "candidates": [ { "name": "broken", "patch": "broken.patch" } ]"#,
    );
    fx.broken_patch();
    let campaign = |fail_on: &str| {
        fx.evo()
            .args(["campaign", "run"])
            .arg(fx.camp.join("campaign.json"))
            .args(["--fail-on", fail_on])
            .output()
            .unwrap()
    };
    let out = campaign("rejected");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let out = campaign("inconclusive");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // An error keeps its code whatever --fail-on lists: here, a campaign file that is not there.
    let out = fx
        .evo()
        .args([
            "campaign",
            "run",
            "no-such-campaign.json",
            "--fail-on",
            "inconclusive",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn the_baseline_and_the_output_folder_can_be_given_on_the_command_line() {
    let fx = Fixture::new(RUN, "");
    let campaign = fx.camp.join("campaign.json");
    let text_of = std::fs::read_to_string(&campaign).unwrap();
    write(
        &campaign,
        &text_of.replace(r#""baseline": "main""#, r#""baseline": "no-such-branch""#),
    );
    let out_dir = fx.root.join("elsewhere");
    let out = fx
        .confirm(&fx.broken_patch(), &["--baseline", "main", "--out-dir"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let dir = run_dir(&out_dir, &out);
    assert_eq!(verdict(&dir), "rejected");
    let json = std::fs::read_to_string(dir.join("result.json")).unwrap();
    let result: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(result["baseline_commitish"], "main");
    assert!(
        !fx.camp.join("receipts").exists(),
        "wrote to the campaign's output folder"
    );
}
