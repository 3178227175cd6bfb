//! Hostile candidate patches against `evo confirm`: paths that leave the tree, symlinks written
//! through, protected files, a gigabyte patch, binary patches, builds that hang or flood their
//! logs, output that is not UTF-8, timed runs that differ from checked runs, known-input cheats,
//! daemons left behind, files a build tool reads by itself, patches that inflate, and code that
//! asks which lane it runs in.
//!
//! Every test checks the exit code, a specific message, that the user's repository (left dirty on
//! purpose) is byte-identical afterwards, and that no receipt says `accepted` unless the candidate
//! deserves it.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use sha2::{Digest, Sha256};

use evo::exit_codes::{ACCEPTED, REJECTED, USAGE_ERROR};
use util::cpairs::{HOT_LINE, MEMO};
use util::{evo, fixture_repo, git, patch_by_editing, snapshot, text, write};

/// The workload, committed in the repository as `evo/workload.json` (the campaign uses that
/// file), with the harness, the tests and the workload itself protected.
const WORKLOAD: &str = r#"{
  "name": "cpairs-hostile",
  "build": { "command": "make -s", "artifacts": ["prog"], "timeout_s": 5 },
  "test": { "command": "sh tests/selftest.sh", "timeout_s": 10 },
  "scenarios": [
    { "name": "sum-40k", "role": "training",
      "run": "./bench/run.sh 40000 {seed}", "check": "./bench/run.sh 500 {seed}",
      "compare": "exact", "deterministic_output": true, "timeout_s": 10 }
  ],
  "protected": ["bench/**", "tests/**", "evo/**"]
}"#;

const HOLDOUTS: &str = r#"{ "scenarios": [
  { "name": "sum-15k-sealed", "role": "holdout", "run": "./bench/run.sh 15000 {seed}",
    "check": "./bench/run.sh 300 {seed}", "compare": "exact", "deterministic_output": true,
    "timeout_s": 10 }
] }"#;

const CAMPAIGN: &str = r#"{
  "name": "cpairs-hostile",
  "repo": "../repo",
  "baseline": "main",
  "workload": "../repo/evo/workload.json",
  "holdouts": "holdouts.json",
  "confirm": { "pairs": 9, "aa_pairs": 11, "min_effect": 0.01 },
  "output": "receipts"
}"#;

const SELFTEST: &str = "#!/bin/sh\n# The project's tests: protected.\nexec ./prog --selftest\n";

/// A binary data file of the repository: every byte value once (NUL included, not UTF-8).
fn table_bin() -> Vec<u8> {
    (0..=255u8).collect()
}

struct Fixture {
    dir: tempfile::TempDir,
    repo: PathBuf,
    camp: PathBuf,
}

/// What one `evo confirm` did.
struct Outcome {
    out: Output,
    /// The run directory and its `result.json`, when a verdict was written.
    run: Option<(PathBuf, Value)>,
}

impl Outcome {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    fn result(&self) -> &Value {
        match &self.run {
            Some((_, r)) => r,
            None => panic!("no result.json\n{}", text(&self.out)),
        }
    }

    fn run_dir(&self) -> &Path {
        match &self.run {
            Some((dir, _)) => dir,
            None => panic!("no run directory\n{}", text(&self.out)),
        }
    }

    fn gate(&self, name: &str) -> &Value {
        let r = self.result();
        r["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("no gate `{name}` in {:#}\n{}", r["gates"], text(&self.out)))
    }

    /// Asserts the gate failed and returns its detail.
    fn failed_gate(&self, name: &str) -> String {
        let g = self.gate(name);
        assert_eq!(g["status"], "failed", "{g:#}\n{}", text(&self.out));
        g["detail"].as_str().unwrap().to_string()
    }

    fn assert_code(&self, code: i32) {
        assert_eq!(self.code(), Some(code), "{}", text(&self.out));
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with(WORKLOAD, CAMPAIGN)
    }

    /// The cpairs repository plus a protected test script, the workload and a binary data file,
    /// committed as the baseline; the campaign and the sealed holdouts outside it.
    fn with(workload: &str, campaign: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo("cpairs", &repo);
        write(&repo.join("tests/selftest.sh"), SELFTEST);
        write(&repo.join("evo/workload.json"), workload);
        std::fs::create_dir_all(repo.join("data")).unwrap();
        std::fs::write(repo.join("data/table.bin"), table_bin()).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "tests, workload and data"]);
        let camp = dir.path().join("camp");
        write(&camp.join("holdouts.json"), HOLDOUTS);
        write(&camp.join("campaign.json"), campaign);
        Fixture { dir, repo, camp }
    }

    fn with_workload_edit(old: &str, new: &str) -> Fixture {
        assert!(WORKLOAD.contains(old), "the workload has no {old:?}");
        Fixture::with(&WORKLOAD.replacen(old, new, 1), CAMPAIGN)
    }

    /// Where `evo confirm` builds its trees (`--work-dir`), kept so the tests can look at them.
    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn write_patch(&self, name: &str, diff: &str) -> PathBuf {
        let path = self.camp.join(name);
        write(&path, diff);
        path
    }

    fn patch(&self, name: &str, edits: &[(&str, &str, &str)]) -> PathBuf {
        let diff = patch_by_editing(&self.repo, edits);
        self.write_patch(name, &diff)
    }

    /// Leaves the user's work tree dirty: a broken prog.c, a staged file and an untracked one.
    fn dirty_the_user_tree(&self) {
        write(&self.repo.join("staged.txt"), "staged\n");
        git(&self.repo, &["add", "staged.txt"]);
        write(&self.repo.join("prog.c"), "this is not C\n");
        write(&self.repo.join("untracked.txt"), "untracked\n");
    }

    /// Runs `evo confirm` on `patch` and checks that the user's repository did not change and
    /// that no receipt says `accepted` unless `may_accept`.
    fn confirm(&self, patch: &Path, may_accept: bool) -> Outcome {
        self.dirty_the_user_tree();
        let before = snapshot(&self.repo);
        let out = evo()
            .arg("confirm")
            .arg(patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .arg("--work-dir")
            .arg(self.work())
            .output()
            .unwrap();
        assert_eq!(
            before,
            snapshot(&self.repo),
            "the user's repository changed\n{}",
            text(&out)
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "evo panicked\n{}",
            text(&out)
        );
        if !may_accept {
            assert_ne!(out.status.code(), Some(ACCEPTED), "{}", text(&out));
            assert_no_accepted_receipt(&self.camp.join("receipts"), &out);
        }
        Outcome {
            run: util::first_result(&self.camp),
            out,
        }
    }

    /// Runs `evo confirm` on a patch that must be refused before anything runs; returns the
    /// refusal.
    fn refused(&self, patch: &Path) -> String {
        let o = self.confirm(patch, false);
        o.assert_code(REJECTED);
        let detail = o.failed_gate("patch safety");
        let r = o.result();
        assert!(
            r["steps"].as_array().unwrap().is_empty(),
            "something ran: {:#}",
            r["steps"]
        );
        assert!(r["scenarios"].as_array().unwrap().is_empty());
        assert!(
            !self.work().join(evo::tree::dir_name("candidate")).exists(),
            "a candidate tree was made for a refused patch"
        );
        assert!(o.stdout().contains(&detail), "{}", text(&o.out));
        detail
    }
}

/// Every `validation_receipt.json` under `dir`, and every `result.json`, must say anything but
/// `accepted` (the receipt's signed predicate is read, not only the unsigned result).
fn assert_no_accepted_receipt(dir: &Path, out: &Output) {
    for path in util::files_under(dir) {
        let name = path.file_name().unwrap_or_default();
        if name == "validation_receipt.json" {
            let envelope: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let payload = BASE64
                .decode(envelope["payload"].as_str().unwrap())
                .unwrap();
            let statement: Value = serde_json::from_slice(&payload).unwrap();
            assert_ne!(
                statement["predicate"]["verdict"],
                "accepted",
                "{} is an accepted receipt\n{}",
                path.display(),
                text(out)
            );
        } else if name == "result.json" {
            let r: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert_ne!(r["verdict"], "accepted", "{}", text(out));
        }
    }
}

/// A digit string no other process on the machine has in its command line.
fn unique_marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{}{:09}", std::process::id(), nanos)
}

/// Pids of processes whose command line matches `pattern`, after letting killed ones go away.
fn survivors(pattern: &str) -> Vec<String> {
    let mut found = Vec::new();
    for _ in 0..20 {
        let out = Command::new("pgrep")
            .args(["-f", "--", pattern])
            .output()
            .expect("pgrep runs");
        found = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if found.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    found
}

/// Kills the processes the test itself caused (by pid), so a failing test leaves nothing behind.
fn kill_pids(pids: &[String]) {
    for pid in pids {
        let _ = Command::new("kill").args(["-9", pid]).status();
    }
}

/// `git diff --binary` of writing `files` (path, bytes) into `repo`; the repository is restored.
fn patch_by_writing(repo: &Path, files: &[(&str, &[u8])]) -> String {
    for (file, bytes) in files {
        let path = repo.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    git(repo, &["add", "-A"]);
    let diff = git(repo, &["diff", "--cached", "--binary"]);
    git(repo, &["reset", "-q", "--hard"]);
    diff
}

// 1. Paths that leave the tree.

#[test]
fn a_patch_path_with_dot_dot_is_refused_and_nothing_is_written_outside() {
    let fx = Fixture::new();
    let patch = fx.write_patch(
        "dotdot.patch",
        "diff --git a/../outside.txt b/../outside.txt\n\
         new file mode 100644\n\
         index 0000000..1b2c3d4\n\
         --- /dev/null\n\
         +++ b/../outside.txt\n\
         @@ -0,0 +1 @@\n\
         +written outside the tree\n",
    );
    let detail = fx.refused(&patch);
    assert!(
        detail.contains("`../outside.txt` has a `..` component and could leave the tree"),
        "{detail}"
    );
    // `..` from a tree in the work directory is the work directory itself; from the repository,
    // its parent.
    for place in [fx.work(), fx.dir.path().to_path_buf()] {
        assert!(
            !place.join("outside.txt").exists(),
            "outside.txt was written in {}",
            place.display()
        );
    }
}

#[test]
fn a_patch_to_an_absolute_path_is_refused_and_nothing_is_written_there() {
    let fx = Fixture::new();
    let target = fx.dir.path().join("absolute-target.txt");
    let target = target.to_str().unwrap();
    // Both ways a `git diff` header can carry an absolute path.
    for (name, diff) in [
        (
            "absolute.patch",
            format!(
                "diff --git {target} {target}\nnew file mode 100644\n--- /dev/null\n+++ {target}\n\
                 @@ -0,0 +1 @@\n+written outside the tree\n"
            ),
        ),
        (
            "absolute-b.patch",
            format!(
                "diff --git a/{target} b/{target}\nnew file mode 100644\n--- /dev/null\n\
                 +++ b/{target}\n@@ -0,0 +1 @@\n+written outside the tree\n"
            ),
        ),
    ] {
        let patch = fx.write_patch(name, &diff);
        let detail = fx.refused(&patch);
        assert!(
            detail.contains(&format!("`{target}` is an absolute path")),
            "{name}: {detail}"
        );
        assert!(!Path::new(target).exists(), "{name} wrote {target}");
        std::fs::remove_dir_all(fx.camp.join("receipts")).unwrap();
        let _ = std::fs::remove_dir_all(fx.work());
    }
}

// 3. Symlinks created and written through in the same patch.

/// A patch that creates the symlink `link` to `target` and a file `link/evil.txt`, in the given
/// order of the two file sections.
fn symlink_patch(link: &str, target: &str, file_first: bool) -> String {
    let link_part = format!(
        "diff --git a/{link} b/{link}\nnew file mode 120000\nindex 0000000..1111111\n\
         --- /dev/null\n+++ b/{link}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    );
    let file_part = format!(
        "diff --git a/{link}/evil.txt b/{link}/evil.txt\nnew file mode 100644\n\
         index 0000000..2222222\n--- /dev/null\n+++ b/{link}/evil.txt\n@@ -0,0 +1 @@\n\
         +written through the symlink\n"
    );
    if file_first {
        file_part + &link_part
    } else {
        link_part + &file_part
    }
}

#[test]
fn a_symlink_created_and_written_through_in_the_same_patch_is_refused() {
    let fx = Fixture::new();
    // The place a relative `../../outside` from a tree root reaches: <tmp>/work/candidate/../..
    let outside = fx.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let outside_abs = outside.to_str().unwrap().to_string();
    let cases = [
        (
            symlink_patch("link", "../../outside", false),
            "`link` is a symlink to `../../outside`, which leaves the tree".to_string(),
        ),
        (
            symlink_patch("link", "../../outside", true),
            "`link/evil.txt` would write through the symlink `link` that this same patch creates"
                .to_string(),
        ),
        (
            symlink_patch("link", &outside_abs, false),
            format!("`link` is a symlink to the absolute path `{outside_abs}`"),
        ),
        // A link that stays inside the tree but leads into a protected folder.
        (
            symlink_patch("alias", "bench", false),
            "`alias/evil.txt` would write through the symlink `alias` that this same patch creates"
                .to_string(),
        ),
    ];
    for (i, (diff, message)) in cases.iter().enumerate() {
        let patch = fx.write_patch(&format!("symlink-{i}.patch"), diff);
        let detail = fx.refused(&patch);
        assert!(detail.contains(message.as_str()), "case {i}: {detail}");
        let written: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(written.is_empty(), "case {i} wrote outside: {written:?}");
        assert!(!fx.work().join("evil.txt").exists());
        std::fs::remove_dir_all(fx.camp.join("receipts")).unwrap();
        let _ = std::fs::remove_dir_all(fx.work());
    }
}

// 4. Protected files.

#[test]
fn edits_to_the_harness_the_tests_and_the_workload_file_are_each_refused() {
    let fx = Fixture::new();
    let rename = {
        git(&fx.repo, &["mv", "tests/selftest.sh", "selftest.sh"]);
        let diff = git(&fx.repo, &["diff", "--cached", "-M"]);
        git(&fx.repo, &["reset", "-q", "--hard"]);
        diff
    };
    let cases = [
        (
            patch_by_editing(
                &fx.repo,
                &[("bench/run.sh", "exec ./prog", "exec nice ./prog")],
            ),
            "`bench/run.sh` matches the protected pattern `bench/**`",
        ),
        (
            patch_by_editing(
                &fx.repo,
                &[("tests/selftest.sh", "exec ./prog --selftest", "exit 0")],
            ),
            "`tests/selftest.sh` matches the protected pattern `tests/**`",
        ),
        (
            patch_by_editing(
                &fx.repo,
                &[("evo/workload.json", r#""exact""#, r#"{ "abs": 1e9 }"#)],
            ),
            "`evo/workload.json` matches the protected pattern `evo/**`",
        ),
        // Moving the tests out of the protected folder is an edit of the protected file too.
        (
            rename,
            "`tests/selftest.sh` matches the protected pattern `tests/**`",
        ),
    ];
    for (i, (diff, message)) in cases.iter().enumerate() {
        let patch = fx.write_patch(&format!("protected-{i}.patch"), diff);
        let detail = fx.refused(&patch);
        assert!(detail.contains(message), "case {i}: {detail}");
        std::fs::remove_dir_all(fx.camp.join("receipts")).unwrap();
        let _ = std::fs::remove_dir_all(fx.work());
    }
}

// 5. A patch too large to read.

#[test]
fn a_gigabyte_patch_is_refused_by_its_size_without_being_read_or_copied() {
    let fx = Fixture::new();
    let patch = fx.camp.join("gigabyte.patch");
    let file = std::fs::File::create(&patch).unwrap();
    // Sparse: a gigabyte long, no disk used.
    file.set_len(1 << 30).unwrap();
    drop(file);
    let o = fx.confirm(&patch, false);
    o.assert_code(USAGE_ERROR);
    let stderr = String::from_utf8_lossy(&o.out.stderr);
    assert!(
        stderr.contains(&format!(
            "error: the patch {} is 1073741824 bytes, over evo's 64 MiB cap for a patch: refused \
             without reading it",
            patch.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        evo::tree::MAX_PATCH_BYTES,
        64 << 20,
        "the message names the cap"
    );
    // Nothing was decided, so nothing was written: no run directory, no copy of the patch.
    assert!(o.run.is_none(), "{}", text(&o.out));
    assert!(
        !fx.camp.join("receipts").exists()
            || std::fs::read_dir(fx.camp.join("receipts"))
                .unwrap()
                .next()
                .is_none(),
        "a run directory was written for an unread patch"
    );
    assert!(!fx.work().exists(), "trees were made for an unread patch");
}

// 6. Binary patches.

#[test]
fn a_binary_patch_is_applied_byte_for_byte_and_judged_by_the_differential() {
    // The check also prints the digest of every data file, so what the candidate tree holds is
    // visible in its check output.
    let fx = Fixture::with_workload_edit(
        r#""check": "./bench/run.sh 500 {seed}""#,
        r#""check": "./bench/run.sh 500 {seed} && sha256sum data/*.bin""#,
    );
    let mut table = table_bin();
    table[100] = 0xAB;
    let extra: Vec<u8> = vec![0, 0xff, 0x80, 0xfe, 0, 1, 2, 3];
    let diff = patch_by_writing(
        &fx.repo,
        &[("data/table.bin", &table), ("data/extra.bin", &extra)],
    );
    assert!(
        diff.contains("GIT binary patch"),
        "not a binary patch: {diff}"
    );
    let patch = fx.write_patch("binary.patch", &diff);
    let o = fx.confirm(&patch, false);
    o.assert_code(REJECTED);
    let r = o.result();
    assert_eq!(o.gate("apply")["status"], "passed");
    let files: Vec<(&str, &str)> = r["patch"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        files,
        vec![("data/extra.bin", "added"), ("data/table.bin", "modified")]
    );
    let detail = o.failed_gate("differential");
    assert!(
        detail.contains("scenario `sum-40k` (differential)"),
        "{detail}"
    );
    let digest = |b: &[u8]| hex::encode(Sha256::digest(b));
    let out =
        std::fs::read_to_string(o.run_dir().join("outputs/candidate/sum-40k.check.out")).unwrap();
    for line in [
        format!("{}  data/extra.bin", digest(&extra)),
        format!("{}  data/table.bin", digest(&table)),
    ] {
        assert!(
            out.contains(&line),
            "{line:?} not in the candidate's output:\n{out}"
        );
        assert!(detail.contains(&format!("+{line}")), "{detail}");
    }
    let base =
        std::fs::read_to_string(o.run_dir().join("outputs/baseline/sum-40k.check.out")).unwrap();
    assert!(base.contains(&format!("{}  data/table.bin", digest(&table_bin()))));
    // The candidate tree is the baseline plus exactly the patch.
    let tree = fx.work().join(evo::tree::dir_name("candidate"));
    assert_eq!(std::fs::read(tree.join("data/table.bin")).unwrap(), table);
    assert_eq!(std::fs::read(tree.join("data/extra.bin")).unwrap(), extra);
}

// 7, 8. Builds that hang or flood.

#[test]
fn a_build_that_never_ends_is_killed_at_its_timeout_with_nothing_left_running() {
    let fx = Fixture::new();
    let marker = format!("1000.{}", unique_marker());
    let patch = fx.patch(
        "hang.patch",
        &[("Makefile", "\tcc -O2", &format!("\tsleep {marker}; cc -O2"))],
    );
    let o = fx.confirm(&patch, false);
    let left = survivors(&format!("sleep {marker}"));
    kill_pids(&left);
    o.assert_code(REJECTED);
    let detail = o.failed_gate("build");
    assert!(
        detail.contains("`make -s` in the candidate tree: timed out after 5 s and was killed"),
        "{detail}"
    );
    let build = o.result()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "build" && s["tree"] == "candidate")
        .cloned()
        .unwrap();
    assert_eq!(build["timed_out"], true, "{build:#}");
    assert!(
        o.result()["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("build failed:"),
        "{:#}",
        o.result()["reasons"]
    );
    assert!(left.is_empty(), "the build's sleep survived: pids {left:?}");
}

#[test]
fn a_build_that_floods_its_output_has_its_log_capped_and_still_gets_a_verdict() {
    let fx = Fixture::new();
    // 80 MB of output from the build, and a slower program so the verdict is certain.
    let patch = fx.patch(
        "flood.patch",
        &[
            (
                "Makefile",
                "\tcc -O2",
                "\thead -c 80000000 /dev/zero | tr '\\0' x\n\tcc -O2",
            ),
            (
                "prog.c",
                HOT_LINE,
                "        volatile unsigned long sink = slow_hash(v + 1);\n        (void)sink;\n        total += slow_hash(v);",
            ),
        ],
    );
    let o = fx.confirm(&patch, false);
    let r = o.result();
    // Slower is never accepted; a loaded machine can leave it inconclusive.
    util::real_verdict(r, &o.out, &["rejected", "inconclusive"]);
    assert_eq!(o.gate("build")["status"], "passed", "{:#}", r["gates"]);
    let reasons = r["reasons"].to_string();
    assert!(
        reasons.contains("training scenario `sum-40k` did not pass"),
        "{reasons}"
    );
    let cap = evo::measure::runner::LOG_CAP_BYTES;
    let log = o.run_dir().join("logs/candidate/build.stdout.log");
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(size <= cap + 4096, "{} is {size} bytes", log.display());
    assert!(
        size >= cap - 4096,
        "{} is only {size} bytes: the log was not kept up to the cap",
        log.display()
    );
    let head = std::fs::read(&log).unwrap();
    assert!(head[..1000].iter().all(|b| *b == b'x'));
}

// 9. Output that is not UTF-8.

#[test]
fn a_check_output_that_is_not_utf8_and_differs_is_rejected_with_a_readable_diff() {
    let fx = Fixture::new();
    let patch = fx.patch(
        "bytes.patch",
        &[(
            "prog.c",
            "    printf(\"n=%ld",
            "    fputs(\"\\xff\\xfe\", stdout);\n    printf(\"n=%ld",
        )],
    );
    let o = fx.confirm(&patch, false);
    o.assert_code(REJECTED);
    let detail = o.failed_gate("differential");
    assert!(
        detail.contains("scenario `sum-40k` (differential): byte 1 (line 1, column 1) differs"),
        "{detail}"
    );
    // The diff shows both lines, the invalid bytes replaced, not dropped or crashed on.
    assert!(detail.contains("-n=500 seed="), "{detail}");
    assert!(detail.contains("+\u{FFFD}\u{FFFD}n=500 seed="), "{detail}");
    let out = std::fs::read(o.run_dir().join("outputs/candidate/sum-40k.check.out")).unwrap();
    assert_eq!(
        &out[..4],
        b"\xff\xfen=",
        "the raw output is kept as printed"
    );
    assert!(o.stdout().contains("differential"), "{}", text(&o.out));
}

#[test]
fn identical_output_that_is_not_utf8_is_no_failure() {
    // Both arms print the same invalid bytes in their checked and their timed calls.
    let fx = Fixture::with(
        &WORKLOAD
            .replace(
                r#""./bench/run.sh 40000 {seed}""#,
                r#""./bench/run.sh 40000 {seed} && printf '\\377\\376\\n'""#,
            )
            .replace(
                r#""./bench/run.sh 500 {seed}""#,
                r#""./bench/run.sh 500 {seed} && printf '\\377\\376\\n'""#,
            ),
        CAMPAIGN,
    );
    let patch = fx.patch(
        "memo.patch",
        &[
            ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
            ("prog.c", "static unsigned long work(", MEMO),
        ],
    );
    let o = fx.confirm(&patch, true);
    let out = std::fs::read(o.run_dir().join("outputs/baseline/sum-40k.check.out")).unwrap();
    assert!(out.ends_with(b"\xff\xfe\n"), "{out:?}");
    for name in ["differential", "timed output"] {
        assert_eq!(o.gate(name)["status"], "passed", "{:#}", o.gate(name));
    }
    assert_eq!(o.result()["scenarios"][0]["timed_output_consistent"], true);
    util::real_verdict(o.result(), &o.out, &["accepted", "inconclusive"]);
}

// 10. A timed call that prints something else than the checked call.

/// A cheat that computes its first timed answer and replays it in every later timed call, with
/// the arguments it is given echoed back, through `channel`: C statements that `save(total)` and
/// `load(&total)` (returns 1 when something was stored) may use.
fn replaying_cheat(channel: &str) -> String {
    format!(
        "{channel}\n\nint main(int argc, char **argv) {{\n    if (argc == 3 && atol(argv[1]) == 40000) {{\n        long n = atol(argv[1]);\n        unsigned long long seed = strtoull(argv[2], NULL, 10);\n        unsigned long total;\n        if (load(&total)) {{\n            printf(\"n=%ld seed=%llu total=%lu\\n\", n, seed, total);\n            return 0;\n        }}\n        total = work(n, seed);\n        save(total);\n        printf(\"n=%ld seed=%llu total=%lu\\n\", n, seed, total);\n        return 0;\n    }}\n"
    )
}

#[test]
fn a_result_stored_by_one_timed_run_and_replayed_by_the_next_is_caught_whatever_the_channel() {
    // Replay across runs: the first timed run of the candidate computes and stores its total;
    // every later one prints the stored total at once, beside the n and seed it was given. The
    // channel here is a file outside the tree (unsandboxed, so it survives the run); the page
    // cache, a file's timestamps or any other state that outlives a run would carry it as well.
    // Every pair computes on a fresh seed, so the stored total answers another seed and the
    // pair's two outputs disagree. (With one seed for every run it is accepted at many times
    // the baseline's speed: its output is then the baseline's byte for byte.)
    let store = std::env::temp_dir().join(format!("evo-replay-{}", unique_marker()));
    let channel = format!(
        "#define STORE \"{}\"\nstatic void save(unsigned long total) {{\n    FILE *f = fopen(STORE, \"w\");\n    if (f) {{ fprintf(f, \"%lu\", total); fclose(f); }}\n}}\nstatic int load(unsigned long *total) {{\n    FILE *f = fopen(STORE, \"r\");\n    int ok = f && fscanf(f, \"%lu\", total) == 1;\n    if (f) fclose(f);\n    return ok;\n}}",
        store.display()
    );
    let fx = Fixture::with(WORKLOAD, &CAMPAIGN.replace(r#""output""#, UNSANDBOXED));
    let patch = fx.patch(
        "replay.patch",
        &[(
            "prog.c",
            "\nint main(int argc, char **argv) {\n",
            &replaying_cheat(&channel),
        )],
    );
    let o = fx.confirm(&patch, false);
    let _ = std::fs::remove_file(&store);
    o.assert_code(REJECTED);
    assert_eq!(o.gate("differential")["status"], "passed");
    let detail = o.failed_gate("timed output");
    assert!(
        detail
            .contains("the candidate's timed output differs from the baseline's for the same seed"),
        "{detail}"
    );
    let s = &o.result()["scenarios"][0];
    assert_eq!(s["timed_output_consistent"], false);
    assert!(
        s["training"].is_null(),
        "no figures from runs that disagree: {s:#}"
    );
    // Stopped at its first disagreeing round: the differential's run of the timed command
    // computed (and stored) on the confirmation's seed, the first timed round replayed on a
    // fresh one. Every recorded round carries its own seed, none the differential's.
    let pairs = s["pairs"].as_array().unwrap();
    assert!(pairs.len() <= 1, "{s:#}");
    let seeds: Vec<u64> = (s["warmups"].as_array().unwrap().iter())
        .filter_map(|w| w["seed"].as_u64())
        .chain(pairs.iter().filter_map(|p| p["seed"].as_u64()))
        .collect();
    assert!(!seeds.is_empty(), "{s:#}");
    let checked = o.result()["seed"].as_u64().unwrap();
    assert!(
        !seeds.contains(&checked),
        "a timed run reused the checks' seed: {s:#}"
    );
}

/// The replaying cheat's channel in shared kernel state that outlives every run and that no
/// sandbox closes: the page-cache residency of the pages of a read-only file in the candidate's
/// own tree (`store.bin`), set by reading pages and evicting them with `posix_fadvise`, read back
/// with `mincore`.
const PAGE_CACHE_CHANNEL: &str = r#"#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#define STORE "store.bin"
#define PAGE 4096
static void save(unsigned long total) {
    int fd = open(STORE, O_RDONLY);
    if (fd < 0) return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    char c;
    if (pread(fd, &c, 1, 0) != 1) { close(fd); return; }
    for (int i = 0; i < 32; i++) {
        if ((total >> i & 1) && pread(fd, &c, 1, (off_t)(2 + i) * PAGE) != 1) break;
    }
    close(fd);
}
static int load(unsigned long *total) {
    int fd = open(STORE, O_RDONLY);
    if (fd < 0) return 0;
    void *p = mmap(NULL, 34 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return 0;
    unsigned char vec[34];
    int ok = mincore(p, 34 * PAGE, vec) == 0 && (vec[0] & 1) && !(vec[1] & 1);
    unsigned long t = 0;
    for (int i = 0; ok && i < 32; i++) t |= (unsigned long)(vec[2 + i] & 1) << i;
    munmap(p, 34 * PAGE);
    *total = t;
    return ok;
}"#;

/// The fixture's `prog.c` with the replaying cheat over the page-cache channel.
fn page_cache_cheat() -> String {
    let prog = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cpairs/prog.c"),
    )
    .unwrap();
    let cheat = replaying_cheat(PAGE_CACHE_CHANNEL);
    let prog = prog.replacen(
        "\nint main(int argc, char **argv) {\n",
        &format!("\n{cheat}"),
        1,
    );
    format!("#define _DEFAULT_SOURCE\n{prog}")
}

/// Whether the page-cache channel carries a result from one run to the next on this machine:
/// the cheat built and run natively until it replays (a fresh file's dirty pages may not evict
/// the first time).
fn page_cache_channel_works() -> bool {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prog.c"), page_cache_cheat()).unwrap();
    std::fs::write(dir.path().join("store.bin"), vec![b'a'; 34 * 4096]).unwrap();
    let cc = Command::new("cc")
        .args(["-O1", "-o", "prog", "prog.c"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", text(&cc));
    let run = |seed: &str| {
        let out = Command::new("./prog")
            .args(["40000", seed])
            .current_dir(dir.path())
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let honest = run("3");
    (0..3).any(|_| run("4").replace("seed=4", "seed=3") == honest)
}

#[test]
fn sandboxed_a_result_replayed_through_the_page_cache_is_caught_by_the_fresh_seeds() {
    // The review's attack: under the sandbox (tree read-only, private /tmp, own namespaces) the
    // candidate still shares the kernel's page cache with its own earlier runs. Fresh seeds make
    // the replayed total the answer to another seed, whatever carried it.
    if evo::measure::sandbox::probe().is_err() {
        return;
    }
    let carries = page_cache_channel_works();
    // The lane-probes gate would stop it first (it calls `mincore` and `posix_fadvise`); the
    // workload allows both, as one with a legitimate use would, so the seeds alone must catch it.
    let fx = Fixture::with(
        &WORKLOAD.replacen(
            r#""protected""#,
            r#""allow_probes": ["mincore", "fadvise"], "protected""#,
            1,
        ),
        CAMPAIGN,
    );
    let store = "a".repeat(34 * 4096);
    let diff = patch_by_writing(
        &fx.repo,
        &[
            ("prog.c", page_cache_cheat().as_bytes()),
            ("store.bin", store.as_bytes()),
        ],
    );
    let patch = fx.write_patch("page-cache.patch", &diff);
    let o = fx.confirm(&patch, false);
    assert_eq!(o.result()["sandbox"]["enabled"], true);
    assert_ne!(o.code(), Some(ACCEPTED), "{}", o.stdout());
    if carries {
        // The channel works here: the replay happened and was caught as such.
        let detail = o.failed_gate("timed output");
        assert!(
            detail.contains("differs from the baseline's for the same seed"),
            "{detail}"
        );
    }
}

#[test]
fn a_pass_skipped_because_its_inputs_repeat_the_last_one_wins_nothing() {
    // Replay within a run: the C kernels' bench repeats forward and backward passes. Every
    // iteration now computes on inputs of its own (derived from the seed and the iteration), so a
    // patch that skips a pass whose inputs equal the previous call's never skips anything.
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/ckernels");
    let exe = dir.path().join("ckernels");
    let build = Command::new("cc")
        .args(["-O1", "-std=c11", "-o"])
        .arg(&exe)
        .args([
            "kernels.c",
            "block.c",
            "bench/main.c",
            "bench/data.c",
            "tests/selftest.c",
            "-lm",
        ])
        .current_dir(&src)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build));
    let bench = |seed: &str| {
        let args = [
            "bench", "--seed", seed, "--B", "2", "--T", "8", "--C", "16", "--NH", "2",
        ];
        let out = Command::new(&exe)
            .args(args)
            .args(["--iters", "4"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let one = bench("11");
    let iterations: Vec<&str> = one.split("iter ").skip(1).collect();
    assert_eq!(iterations.len(), 4, "{one}");
    for (i, a) in iterations.iter().enumerate() {
        // Each block after its "N dropout kept=..." line: the output and every gradient.
        let body = |t: &str| {
            t.split_once('\n')
                .map(|(_, rest)| rest.to_string())
                .unwrap()
        };
        assert!(body(a).lines().count() >= 14, "{a}");
        for b in &iterations[i + 1..] {
            assert_ne!(
                body(a),
                body(b),
                "two iterations printed the same results:\n{one}"
            );
        }
    }
    assert_ne!(one, bench("12"), "the bench output must depend on the seed");
    assert_eq!(one, bench("11"), "the same seed must print the same");
}

#[test]
fn a_timed_output_that_ignores_the_seed_says_replay_cannot_be_detected_and_is_not_tested() {
    // A workload whose timed run takes no seed: every run computes the same thing, so a result
    // kept from one run would pass for the next. A real speedup is still measured, but the run
    // says so and the tier stays below `tested` (with the replay check switched off, this
    // candidate is accepted at tier tested).
    let fx = Fixture::with_workload_edit(
        r#""run": "./bench/run.sh 40000 {seed}""#,
        r#""run": "./bench/run.sh 40000 7""#,
    );
    let patch = fx.patch("memo.patch", &util::cpairs::MEMO_EDITS);
    let o = fx.confirm(&patch, true);
    let r = o.result();
    let replay = &r["scenarios"][0]["replay"];
    assert_eq!(replay["fresh_seeds"], false, "{replay:#}");
    assert_eq!(replay["detectable"], false, "{replay:#}");
    assert_ne!(r["tier"], "tested", "{:#}", r["reasons"]);
    let reasons = r["reasons"].to_string();
    assert!(
        reasons.contains(
            "replay cannot be detected in scenario `sum-40k`: its timed command takes no `{seed}`"
        ),
        "{reasons}"
    );
    let pr = std::fs::read_to_string(o.run_dir().join("pr_body.md")).unwrap();
    assert!(pr.contains("replay cannot be detected"), "{pr}");
}

/// Campaign text that turns the sandbox off (placed before `"output"`).
const UNSANDBOXED: &str = r#""sandbox": { "mode": "off" }, "output""#;

#[test]
fn sandboxed_a_candidate_cannot_keep_answers_from_one_run_for_the_next() {
    // The same trick under the sandbox: a tested, checked or timed tree is read-only, so the
    // marker file cannot be written and the trick breaks at its first call.
    if evo::measure::sandbox::probe().is_err() {
        // Without bubblewrap the unsandboxed test above is the whole story.
        return;
    }
    let fx = Fixture::new();
    let patch = fx.patch(
        "repeat.patch",
        &[
            (
                "prog.c",
                "    unsigned long long seed = strtoull(argv[2], NULL, 10);\n",
                "    unsigned long long seed = strtoull(argv[2], NULL, 10);\n    char mark[64];\n    snprintf(mark, sizeof mark, \".seen-%ld-%llu\", n, seed);\n    FILE *f = fopen(mark, \"w\");\n    if (!f) {\n        perror(mark);\n        return 7;\n    }\n    fclose(f);\n",
            ),
        ],
    );
    let o = fx.confirm(&patch, false);
    o.assert_code(REJECTED);
    assert_eq!(o.result()["sandbox"]["enabled"], true);
    let failed = o.result()["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["status"] == "failed")
        .cloned()
        .unwrap();
    let detail = failed["detail"].as_str().unwrap();
    assert!(detail.contains("Read-only file system"), "{failed:#}");
}

// 11. A candidate that is fast only on the inputs it has seen.

/// The baseline program's output for `n` and `seed`, built from the fixture in a scratch copy.
fn baseline_lines(args: &[(u64, u64)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    util::copy_fixture("cpairs", dir.path());
    let make = Command::new("make")
        .arg("-s")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(make.status.success(), "{}", text(&make));
    args.iter()
        .map(|(n, seed)| {
            let out = Command::new("./prog")
                .args([n.to_string(), seed.to_string()])
                .current_dir(dir.path())
                .output()
                .unwrap();
            String::from_utf8(out.stdout)
                .unwrap()
                .trim_end()
                .to_string()
        })
        .collect()
}

#[test]
fn a_candidate_that_hard_codes_the_known_seed_is_not_accepted() {
    // The search seed (1 by default) is in every agent's brief. This candidate answers the
    // training scenario's checked and timed calls for that seed from a table, correctly and at
    // once, and computes everything else as the baseline does.
    let known = baseline_lines(&[(500, 1), (40000, 1)]);
    let cheat = format!(
        "    unsigned long long seed = strtoull(argv[2], NULL, 10);\n    if (seed == 1 && n == 500) {{\n        puts(\"{}\");\n        return 0;\n    }}\n    if (seed == 1 && n == 40000) {{\n        puts(\"{}\");\n        return 0;\n    }}\n",
        known[0], known[1]
    );
    // A practical threshold well above noise, so an honest no-change never passes by chance.
    let fx = Fixture::with(
        WORKLOAD,
        &CAMPAIGN.replace(r#""min_effect": 0.01"#, r#""min_effect": 0.1"#),
    );
    let patch = fx.patch(
        "known-seed.patch",
        &[(
            "prog.c",
            "    unsigned long long seed = strtoull(argv[2], NULL, 10);\n",
            &cheat,
        )],
    );
    let o = fx.confirm(&patch, false);
    let r = o.result();
    let seed = r["seed"].as_u64().unwrap();
    assert_ne!(seed, 1, "confirmation used the known seed");
    // The timed command takes each pair's own fresh seed, none of them the known one.
    assert_eq!(
        r["scenarios"][0]["candidate_command"],
        "./bench/run.sh 40000 {seed}"
    );
    let pairs = r["scenarios"][0]["pairs"].as_array().unwrap();
    assert!(
        pairs
            .iter()
            .all(|p| p["seed"].as_u64().is_some_and(|s| s != 1)),
        "{pairs:#?}"
    );
    // The cheat is output-correct on the known input: it would pass a differential there.
    let tree = fx.work().join(evo::tree::dir_name("candidate"));
    for (args, line) in [(["500", "1"], &known[0]), (["40000", "1"], &known[1])] {
        let out = Command::new(tree.join("prog")).args(args).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), line);
    }
    assert_eq!(o.gate("differential")["status"], "passed");
    assert_eq!(o.gate("timed output")["status"], "passed");
    util::real_verdict(r, &o.out, &["rejected", "inconclusive"]);
    let training = &r["scenarios"][0]["training"];
    assert_eq!(training["training_gate"]["passed"], false, "{training:#}");
    assert!(
        r["reasons"]
            .to_string()
            .contains("training scenario `sum-40k` did not pass"),
        "{:#}",
        r["reasons"]
    );
}

// 12. A daemon left behind by the timed run.

#[test]
fn a_candidate_whose_timed_run_leaves_a_daemon_is_rejected_and_the_daemon_killed() {
    // A real speedup, plus a background process started by every call with the training
    // scenario's timed size, and left running: without the leftover-process gate this candidate
    // would be accepted (the sealed holdout, a different size, runs clean and fast).
    // Long enough timed runs that the speedup stands far above noise even on a loaded machine.
    let fx = Fixture::with(
        &WORKLOAD.replace("sum-40k", "sum-200k").replace(
            "./bench/run.sh 40000 {seed}",
            "./bench/run.sh 200000 {seed}",
        ),
        CAMPAIGN,
    );
    let marker = format!("30.{}", unique_marker());
    let patch = fx.patch(
        "daemon.patch",
        &[
            ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
            ("prog.c", "static unsigned long work(", MEMO),
            (
                "prog.c",
                "    unsigned long long seed = strtoull(argv[2], NULL, 10);\n",
                &format!(
                    "    unsigned long long seed = strtoull(argv[2], NULL, 10);\n    if (n == 200000 && system(\"(sleep {marker} &)\") != 0) return 3;\n"
                ),
            ),
        ],
    );
    // Checked below, after the gate, so a failure names the missing gate first.
    let o = fx.confirm(&patch, true);
    let left = survivors(&format!("sleep {marker}"));
    kill_pids(&left);
    assert!(left.is_empty(), "the daemon survived evo: pids {left:?}");
    let r = o.result();
    let timed_leftover = r["scenarios"][0]["pairs"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|p| p["candidate"]["leftover_processes"] == true);
    let warmup_leftover = r["scenarios"][0]["warmups"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|w| w["arm"] == "candidate" && w["run"]["leftover_processes"] == true);
    // The differential runs the timed command once per tree before anything is timed: the
    // daemon shows there first.
    let step_leftover = (r["steps"].as_array().unwrap().iter())
        .any(|s| s["tree"] == "candidate" && s["leftover_processes"] == true);
    assert!(
        timed_leftover || warmup_leftover || step_leftover,
        "no run of the timed command recorded its leftover processes: {:#}\n{:#}",
        r["steps"],
        r["scenarios"]
    );
    let detail = o.failed_gate("leftover processes");
    assert!(detail.contains("left processes"), "{detail}");
    o.assert_code(REJECTED);
    assert_eq!(r["verdict"], "rejected");
    assert_no_accepted_receipt(&fx.camp.join("receipts"), &o.out);
}

// 9. Files a build tool reads by itself, patches that inflate, and lane probes (review #25,
//    #26): each refused before anything is applied or built.

impl Fixture {
    /// Runs `evo confirm` on a patch the `lane probes` gate must stop before anything runs;
    /// returns the gate's detail.
    fn probed(&self, patch: &Path) -> String {
        let o = self.confirm(patch, false);
        o.assert_code(REJECTED);
        assert_eq!(
            o.gate("patch safety")["status"],
            "passed",
            "{}",
            text(&o.out)
        );
        let detail = o.failed_gate("lane probes");
        let r = o.result();
        assert!(
            r["steps"].as_array().unwrap().is_empty(),
            "{:#}",
            r["steps"]
        );
        assert!(
            !self.work().join(evo::tree::dir_name("candidate")).exists(),
            "a candidate tree was made for a probing patch"
        );
        assert!(o.stdout().contains("lane probes"), "{}", text(&o.out));
        detail
    }
}

/// The review's cheat: the patch adds only a `GNUmakefile`, which make reads before the declared
/// `Makefile`; its recipe rewrites the protected harness inside the build tree, then builds as
/// before. No protected path is in the patch, and it used to be accepted 5.3×.
#[test]
fn a_gnumakefile_that_rewrites_the_harness_is_refused_though_it_touches_no_protected_path() {
    let fx = Fixture::new();
    let recipe = "prog: prog.c\n\tsed -i 's/40000/400/' bench/run.sh\n\tcc -O2 -o prog prog.c\n";
    let diff = patch_by_writing(&fx.repo, &[("GNUmakefile", recipe.as_bytes())]);
    let detail = fx.refused(&fx.write_patch("gnumakefile.patch", &diff));
    assert!(
        detail.contains("`GNUmakefile` is a new file that make reads by itself"),
        "{detail}"
    );
    assert!(detail.contains("config_files"), "{detail}");
}

/// Other members of the class: a Cargo configuration (read from every folder above the build)
/// and a CMake list, each written for it.
#[test]
fn a_new_cargo_config_or_cmake_list_is_refused_with_its_tool_named() {
    let fx = Fixture::new();
    let cases: [(&str, &[u8], &str); 2] = [
        (
            ".cargo/config.toml",
            b"[build]\nrustflags = [\"-C\", \"link-arg=-Wl,--wrap=main\"]\n",
            "Cargo",
        ),
        (
            "CMakeLists.txt",
            b"execute_process(COMMAND sed -i s/40000/400/ bench/run.sh)\n",
            "CMake",
        ),
    ];
    for (i, (file, bytes, tool)) in cases.into_iter().enumerate() {
        let diff = patch_by_writing(&fx.repo, &[(file, bytes)]);
        let detail = fx.refused(&fx.write_patch(&format!("build-file-{i}.patch"), &diff));
        assert!(
            detail.contains(&format!(
                "`{file}` is a new file that {tool} reads by itself"
            )),
            "{detail}"
        );
        std::fs::remove_dir_all(fx.camp.join("receipts")).unwrap();
        let _ = std::fs::remove_dir_all(fx.work());
    }
}

/// "A 2.6 MB patch that inflates to a 2 GiB file: the whole pipeline ran." A binary literal
/// declares its inflated size; evo reads that instead of inflating it.
#[test]
fn a_binary_patch_that_declares_two_gibibytes_is_refused_before_anything_is_written() {
    let fx = Fixture::new();
    let diff = patch_by_writing(&fx.repo, &[("data/zeros.bin", &[0u8; 8192])]);
    assert!(diff.contains("literal 8192"), "{diff}");
    let diff = diff.replace("literal 8192", "literal 2147483648");
    let detail = fx.refused(&fx.write_patch("inflating.patch", &diff));
    assert!(
        detail.contains("would write 2147483648 bytes into the tree"),
        "{detail}"
    );
    assert!(detail.contains("`data/zeros.bin`"), "{detail}");
    assert!(detail.contains("confirm.max_applied_bytes"), "{detail}");
}

/// The review's sanitizer cheat: undefined behaviour compiled only where no sanitizer looks.
#[test]
fn code_compiled_only_without_a_sanitizer_fails_the_lane_probes_gate() {
    let fx = Fixture::new();
    let patch = fx.patch(
        "no-asan.patch",
        &[(
            "prog.c",
            "    return h & 0xffff;",
            "#ifndef __SANITIZE_ADDRESS__\n    { int a[1]; a[h & 1] = 0; }\n#endif\n    return h & \
             0xffff;",
        )],
    );
    let detail = fx.probed(&patch);
    assert!(detail.contains("prog.c:"), "{detail}");
    assert!(
        detail.contains("`__SANITIZE_` (can tell a sanitizer build)"),
        "{detail}"
    );
    assert!(detail.contains("#ifndef __SANITIZE_ADDRESS__"), "{detail}");
}

/// The review's counter cheat: the work done only under valgrind, so the instruction counts
/// match while the timed runs skip it.
#[test]
fn code_that_asks_whether_it_runs_under_valgrind_fails_the_lane_probes_gate() {
    let fx = Fixture::new();
    let patch = fx.patch(
        "valgrind.patch",
        &[(
            "prog.c",
            "#include <string.h>",
            "#include <string.h>\n#include <valgrind/valgrind.h>\n#define SKIP (!RUNNING_ON_VALGRIND)",
        )],
    );
    let detail = fx.probed(&patch);
    assert!(detail.contains("`valgrind`"), "{detail}");
    assert!(detail.contains("RUNNING_ON_VALGRIND"), "{detail}");
}

/// Page-cache probes: `mincore` tells a warm run from a cold one (the first pair from the rest).
#[test]
fn code_that_probes_the_page_cache_fails_the_lane_probes_gate() {
    let fx = Fixture::new();
    let patch = fx.patch(
        "mincore.patch",
        &[(
            "prog.c",
            "#include <string.h>",
            "#include <string.h>\n#include <sys/mman.h>\nstatic int warm(void *p) { unsigned char \
             v; return mincore(p, 4096, &v) == 0 && v; }",
        )],
    );
    let detail = fx.probed(&patch);
    assert!(
        detail.contains("`mincore` (can tell or changes the page cache"),
        "{detail}"
    );
}
