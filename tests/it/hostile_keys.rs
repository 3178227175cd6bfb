//! Hostile keys and receipts of the wrong thing (issue #26): a pull request that commits its own
//! key pair into the checkout, a genuine receipt of another patch or baseline, and a CI step
//! that treats a valid signature on a rejected receipt as a pass. Each attack is run against the
//! real `evo` binary; each must fail, and its honest twin must pass.

use crate::util;
use crate::util::synthetic;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ed25519_dalek::SigningKey;
use sha2::{Digest, Sha256};

use evo::evidence::result::{ConfirmResult, Verdict};
use evo::exit_codes::{ACCEPTED, REQUIREMENT_NOT_MET, USAGE_ERROR, VERIFICATION_FAILED};
use evo::receipt::{self, keys};
use evo::stats::Tier;
use util::{git, text, write};

/// A checkout of a pull request: `base` and `head` commits, the change between them as a patch,
/// a trusted key kept outside it, and an attacker's key pair committed into it.
struct Checkout {
    dir: tempfile::TempDir,
    repo: PathBuf,
    base: String,
    head: String,
    /// `git diff base head`.
    pr_patch: Vec<u8>,
    trusted: SigningKey,
    trusted_public: PathBuf,
    attacker: SigningKey,
    attacker_dir: PathBuf,
}

impl Checkout {
    fn new() -> Checkout {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        write(&repo.join("prog.c"), "int main(void) { return 0; }\n");
        write(&repo.join(".gitignore"), ".evo/\n");
        git(&repo, &["init", "-q"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "base"]);
        let base = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
        write(&repo.join("prog.c"), "int main(void) { return 1; }\n");
        // The attacker's key pair, force-added past `.gitignore`.
        let attacker_dir = repo.join(".evo").join("keys");
        let (attacker, _) = keys::write_new_pair(&attacker_dir).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["add", "-f", ".evo/keys"]);
        git(&repo, &["commit", "-q", "-m", "faster"]);
        let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
        let pr_patch = git(&repo, &["diff", &base, &head]).into_bytes();
        let (trusted, files) = keys::write_new_pair(&dir.path().join("reviewer-keys")).unwrap();
        Checkout {
            repo,
            base,
            head,
            pr_patch,
            trusted,
            trusted_public: files.public,
            attacker,
            attacker_dir,
            dir,
        }
    }

    /// A run directory holding a receipt signed by `key` for `patch` on `baseline`, with the
    /// verdict and tier given, and its `candidate.patch`.
    fn receipt(&self, name: &str, key: &SigningKey, r: Receipt) -> PathBuf {
        let mut result: ConfirmResult = synthetic::hostile_result("plain", false);
        result.evidence.baseline_sha = r.baseline.to_string();
        result.evidence.patch.sha256 = hex::encode(Sha256::digest(r.patch));
        result.verdict = r.verdict;
        result.tier = r.tier;
        let run = self.dir.path().join(name);
        write(&run.join("candidate.patch"), "");
        std::fs::write(run.join("candidate.patch"), r.patch).unwrap();
        let file = run.join(receipt::RECEIPT_FILE);
        std::fs::write(&file, receipt::sign(&result, key).unwrap().bytes).unwrap();
        file
    }

    fn accepted(&self, name: &str, patch: &[u8]) -> PathBuf {
        let r = Receipt {
            baseline: &self.base,
            patch,
            verdict: Verdict::Accepted,
            tier: Tier::Tested,
        };
        self.receipt(name, &self.trusted, r)
    }

    /// `evo` with an empty home and no key settings of its own.
    fn evo(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_evo"));
        let home = self.dir.path().join("home");
        cmd.env_remove(keys::KEY_DIR_ENV)
            .env_remove(keys::SIGNING_KEY_ENV)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("EVO_QUIET_WAIT_S", "0");
        cmd
    }

    fn verify(&self, receipt: &Path, args: &[&str]) -> Output {
        let mut cmd = self.evo();
        cmd.args(["receipt", "verify"]).arg(receipt).args(args);
        cmd.current_dir(&self.repo).output().unwrap()
    }

    fn verify_with_trusted(&self, receipt: &Path, args: &[&str]) -> Output {
        let key = self.trusted_public.to_str().unwrap().to_string();
        let mut all = vec!["--key", key.as_str()];
        all.extend_from_slice(args);
        self.verify(receipt, &all)
    }
}

struct Receipt<'a> {
    baseline: &'a str,
    patch: &'a [u8],
    verdict: Verdict,
    tier: Tier,
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Row 1: the checkout's own key is refused however evo is pointed at it.
#[test]
fn a_public_key_committed_into_the_checkout_is_never_trusted() {
    let c = Checkout::new();
    let forged = Receipt {
        baseline: &c.base,
        patch: &c.pr_patch,
        verdict: Verdict::Accepted,
        tier: Tier::Tested,
    };
    let receipt = c.receipt("forged", &c.attacker, forged);
    let public = c.attacker_dir.join(keys::PUBLIC_KEY_FILE);
    let repo = c.repo.canonicalize().unwrap().display().to_string();
    // $EVO_KEY_DIR at the checkout's .evo/keys, the old scripts' convention.
    let mut cmd = c.evo();
    cmd.env(keys::KEY_DIR_ENV, &c.attacker_dir);
    let out = cmd
        .args(["receipt", "verify", "--recompute"])
        .arg(&receipt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", text(&out));
    assert!(!stdout(&out).contains("signature valid"), "{}", text(&out));
    for said in ["$EVO_KEY_DIR", "inside the git work tree", repo.as_str()] {
        assert!(stderr(&out).contains(said), "{said}: {}", text(&out));
    }
    // Named with --key, through a link from outside, or as the config folder of a home that
    // is the checkout: refused, or skipped and then nothing matches.
    let link = c.dir.path().join("copied-key.pem");
    std::os::unix::fs::symlink(&public, &link).unwrap();
    for key in [&public, &link] {
        let out = c.verify(&receipt, &["--key", key.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", text(&out));
        assert!(stderr(&out).contains("outside any"), "{}", text(&out));
    }
    let mut cmd = c.evo();
    cmd.env("XDG_CONFIG_HOME", &c.repo).env("HOME", &c.repo);
    std::fs::create_dir_all(c.repo.join("evo")).unwrap();
    std::fs::copy(&public, c.repo.join("evo").join(keys::PUBLIC_KEY_FILE)).unwrap();
    let out = cmd
        .args(["receipt", "verify"])
        .arg(&receipt)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", text(&out));
    assert!(stderr(&out).contains("not trusting keys"), "{}", text(&out));
    // The reviewer's own key, outside the checkout: the forgery fails as a wrong key, and an
    // honest receipt verifies, naming the entry that matched.
    let out = c.verify_with_trusted(&receipt, &[]);
    assert_eq!(
        out.status.code(),
        Some(VERIFICATION_FAILED),
        "{}",
        text(&out)
    );
    let honest = c.accepted("honest", &c.pr_patch);
    let out = c.verify_with_trusted(&honest, &[]);
    assert_eq!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
    let entry = format!("(trusted: {})", c.trusted_public.display());
    assert!(stdout(&out).contains(&entry), "{}", text(&out));
}

/// Row 1, in CI: the public half of the job's own secret is a trusted entry, and is named.
#[test]
fn the_public_half_of_the_signing_secret_is_trusted_and_named() {
    let c = Checkout::new();
    let honest = c.accepted("honest", &c.pr_patch);
    let pem = std::fs::read_to_string(
        c.dir
            .path()
            .join("reviewer-keys")
            .join(keys::PRIVATE_KEY_FILE),
    )
    .unwrap();
    let mut cmd = c.evo();
    cmd.env(keys::SIGNING_KEY_ENV, pem);
    let out = cmd
        .args(["receipt", "verify"])
        .arg(&honest)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
    assert!(
        stdout(&out).contains("(trusted: the public half of $EVO_SIGNING_KEY)"),
        "{}",
        text(&out)
    );
}

/// The pull request's own campaign, in the checkout, naming the key it committed.
const PR_CAMPAIGN: &str = r#"{
  "name": "pr",
  "repo": ".",
  "baseline": "main",
  "workload": "evo/workload.json",
  "key": ".evo/keys/signing.key",
  "output": "../evo-out"
}"#;

/// Row 2: `evo confirm` in that checkout stops before running anything and names the key.
#[test]
fn confirm_never_signs_with_a_key_found_in_the_repository() {
    let c = Checkout::new();
    write(&c.repo.join("evo.json"), PR_CAMPAIGN);
    write(&c.repo.join("evo/workload.json"), util::cpairs::WORKLOAD);
    git(&c.repo, &["add", "-A"]);
    git(&c.repo, &["commit", "-q", "-m", "campaign"]);
    let patch = c.dir.path().join("pr.patch");
    std::fs::write(&patch, &c.pr_patch).unwrap();
    let private = c.attacker_dir.join(keys::PRIVATE_KEY_FILE);
    let key_path = private.canonicalize().unwrap().display().to_string();
    let confirm = |cmd: &mut Command| {
        cmd.arg("confirm")
            .arg(&patch)
            .arg("--campaign")
            .arg(c.repo.join("evo.json"))
            .current_dir(&c.repo)
            .output()
            .unwrap()
    };
    // The campaign's `key`, then (no key in the campaign) $EVO_KEY_DIR at the checkout's keys.
    let out = confirm(&mut c.evo());
    assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", text(&out));
    for said in [
        "the campaign's `key`",
        key_path.as_str(),
        "inside the git work tree",
    ] {
        assert!(stderr(&out).contains(said), "{said}: {}", text(&out));
    }
    write(
        &c.repo.join("evo.json"),
        &PR_CAMPAIGN.replace("  \"key\": \".evo/keys/signing.key\",\n", ""),
    );
    let mut cmd = c.evo();
    cmd.env(keys::KEY_DIR_ENV, &c.attacker_dir);
    let out = confirm(&mut cmd);
    assert_eq!(out.status.code(), Some(USAGE_ERROR), "{}", text(&out));
    assert!(stderr(&out).contains("$EVO_KEY_DIR"), "{}", text(&out));
    assert!(stderr(&out).contains(&key_path), "{}", text(&out));
    let signed = walk(&c.dir.path().join("evo-out"))
        .into_iter()
        .any(|p| p.ends_with(receipt::RECEIPT_FILE));
    assert!(!signed, "a receipt was written");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        match path.is_dir() {
            true => out.extend(walk(&path)),
            false => out.push(path),
        }
    }
    out
}

/// Row 3: a genuine accepted receipt of another patch, or of the right patch on another
/// baseline, does not pass for the pull request; its own receipt does.
#[test]
fn a_genuine_receipt_of_another_patch_or_baseline_fails_for_the_pull_request() {
    let c = Checkout::new();
    let other_patch = String::from_utf8(c.pr_patch.clone())
        .unwrap()
        .replace("return 1;", "return 2;")
        .into_bytes();
    let other = c.accepted("other", &other_patch);
    let range = format!("{}..{}", c.base, c.head);
    let pr_file = c.dir.path().join("pr.patch");
    std::fs::write(&pr_file, &c.pr_patch).unwrap();
    let pr = pr_file.to_str().unwrap();
    // Without a binding it verifies: the signature is genuine.
    let out = c.verify_with_trusted(&other, &["--require", "accepted"]);
    assert_eq!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
    for args in [
        &["--patch", pr][..],
        &["--diff", &range],
        &["--diff", &range, "--patch", pr],
    ] {
        let out = c.verify_with_trusted(&other, args);
        assert_eq!(
            out.status.code(),
            Some(REQUIREMENT_NOT_MET),
            "{args:?}: {}",
            text(&out)
        );
        assert!(
            stderr(&out).contains("another patch") || stderr(&out).contains("change"),
            "{}",
            text(&out)
        );
    }
    // The patch beside the receipt swapped for the pull request's: the digest gives it away.
    std::fs::write(other.with_file_name("candidate.patch"), &c.pr_patch).unwrap();
    let out = c.verify_with_trusted(&other, &["--diff", &range]);
    assert_eq!(
        out.status.code(),
        Some(REQUIREMENT_NOT_MET),
        "{}",
        text(&out)
    );
    assert!(stderr(&out).contains("another patch"), "{}", text(&out));
    // The right patch, recorded on another baseline.
    let wrong_base = Receipt {
        baseline: &c.head,
        patch: &c.pr_patch,
        verdict: Verdict::Accepted,
        tier: Tier::Tested,
    };
    let moved = c.receipt("moved", &c.trusted, wrong_base);
    let out = c.verify_with_trusted(&moved, &["--diff", &range]);
    assert_eq!(
        out.status.code(),
        Some(REQUIREMENT_NOT_MET),
        "{}",
        text(&out)
    );
    assert!(stderr(&out).contains("baseline"), "{}", text(&out));
    // The pull request's own receipt: bound by bytes, by the range, and by a three-dot range.
    let own = c.accepted("own", &c.pr_patch);
    let three = format!("{}...{}", c.base, c.head);
    for args in [
        &["--patch", pr][..],
        &["--diff", &range],
        &["--diff", &three],
    ] {
        let out = c.verify_with_trusted(&own, args);
        assert_eq!(
            out.status.code(),
            Some(ACCEPTED),
            "{args:?}: {}",
            text(&out)
        );
    }
    assert!(stdout(&c.verify_with_trusted(&own, &["--diff", &range])).contains("makes exactly"));
}

/// Row 3, by effect: a patch in another textual form (full object ids) that makes the same
/// change binds to the range; one that makes a different change to the same file does not.
#[test]
fn the_range_is_compared_by_the_change_the_patch_makes_not_its_bytes() {
    let c = Checkout::new();
    let terse = git(&c.repo, &["diff", "--full-index", &c.base, &c.head]).into_bytes();
    assert!(terse != c.pr_patch, "the same bytes");
    let own = c.accepted("terse", &terse);
    let range = format!("{}..{}", c.base, c.head);
    let out = c.verify_with_trusted(&own, &["--diff", &range]);
    assert_eq!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
    // Everything but the committed keys: the tree differs, and the message names a path.
    let partial = git(&c.repo, &["diff", &c.base, &c.head, "--", "prog.c"]).into_bytes();
    let part = c.accepted("partial", &partial);
    let out = c.verify_with_trusted(&part, &["--diff", &range]);
    assert_eq!(
        out.status.code(),
        Some(REQUIREMENT_NOT_MET),
        "{}",
        text(&out)
    );
    assert!(
        stderr(&out).contains("differs: .evo/keys"),
        "{}",
        text(&out)
    );
}

/// Row 4: a valid signature on a rejected receipt is not a pass once a verdict is required, and
/// without one the output says plainly what the verdict was.
#[test]
fn a_signed_rejected_receipt_fails_a_required_verdict_and_says_so_without_one() {
    let c = Checkout::new();
    let rejected = Receipt {
        baseline: &c.base,
        patch: &c.pr_patch,
        verdict: Verdict::Rejected,
        tier: Tier::Rejected,
    };
    let receipt = c.receipt("rejected", &c.trusted, rejected);
    let out = c.verify_with_trusted(&receipt, &[]);
    assert_eq!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
    assert!(
        stdout(&out).contains("valid signature, verdict rejected"),
        "{}",
        text(&out)
    );
    assert!(
        stderr(&out).contains("--require accepted"),
        "{}",
        text(&out)
    );
    for req in [
        &["--require", "accepted"][..],
        &["--require", "tier=measured"],
    ] {
        let out = c.verify_with_trusted(&receipt, req);
        assert_eq!(
            out.status.code(),
            Some(REQUIREMENT_NOT_MET),
            "{req:?}: {}",
            text(&out)
        );
        assert!(stderr(&out).contains("verdict rejected"), "{}", text(&out));
    }
    // Accepted but only measured: the tier is required apart from the verdict.
    let measured = Receipt {
        baseline: &c.base,
        patch: &c.pr_patch,
        verdict: Verdict::Accepted,
        tier: Tier::Measured,
    };
    let measured = c.receipt("measured", &c.trusted, measured);
    let out = c.verify_with_trusted(&measured, &["--require", "accepted,tier=tested"]);
    assert_eq!(
        out.status.code(),
        Some(REQUIREMENT_NOT_MET),
        "{}",
        text(&out)
    );
    let out = c.verify_with_trusted(
        &measured,
        &["--require", "accepted", "--require", "tier=measured"],
    );
    assert_eq!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
    // An invalid receipt keeps its own code, whatever is required.
    let mut bytes = std::fs::read(&measured).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&measured, bytes).unwrap();
    let out = c.verify_with_trusted(&measured, &["--require", "accepted"]);
    assert_eq!(
        out.status.code(),
        Some(VERIFICATION_FAILED),
        "{}",
        text(&out)
    );
}
