//! Shared helpers of the end-to-end tests: the real `evo` binary, small git repositories built in
//! temp dirs, patches made by editing them, and a snapshot that proves a repository untouched.

pub mod confirmed;
pub mod cpairs;
pub mod faults;
pub mod schema;
pub mod slurm;
pub mod synthetic;
pub mod tiny;
pub mod tree_common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

/// The `evo` binary under test, with its default signing key kept in a temp dir, never in the
/// real home, and no `$EVO_SIGNING_KEY`.
pub fn evo() -> Command {
    let keys = std::env::temp_dir().join(format!("evo-test-keys-{}", std::process::id()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_evo"));
    cmd.env("EVO_KEY_DIR", keys);
    // A key exported in the shell that runs the tests would sign in place of the test's own.
    cmd.env_remove("EVO_SIGNING_KEY");
    // Tests run beside each other: the machine is never quiet, and waiting for it only slows them.
    cmd.env("EVO_QUIET_WAIT_S", "0");
    cmd
}

/// The commands evo printed under `next:` at the end of its output.
pub fn next_commands(stdout: &str) -> Vec<String> {
    stdout
        .split("\nnext:\n")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .map_while(|l| l.strip_prefix("  "))
        .map(str::to_string)
        .collect()
}

/// Runs `command` in `sh` in `dir` as a user pastes it, with the `evo` under test first on the
/// PATH, in a shell without `EVO_KEY_DIR` and with an empty home.
pub fn shell(dir: &Path, command: &str) -> Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_evo")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    // A fresh shell of someone who never set `EVO_KEY_DIR` (as after `scripts/run-campaign`,
    // which sets it for evo alone) and has no key of their own: the pasted commands must carry
    // everything they need.
    let home = tempfile::tempdir().unwrap();
    Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("EVO_KEY_DIR")
        .env_remove("EVO_SIGNING_KEY")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .output()
        .unwrap()
}

/// Runs git in `dir` with a fixed identity; panics with git's stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=evo-test",
            "-c",
            "user.email=test@evo.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Copies a fixture folder from `tests/fixtures/<name>` into `dest`, keeping modes.
pub fn copy_fixture(name: &str, dest: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    copy_dir(&src, dest);
}

fn copy_dir(src: &Path, dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dest.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// A git repository holding a fixture, committed once on `main`.
pub fn fixture_repo(name: &str, dest: &Path) -> String {
    copy_fixture(name, dest);
    git(dest, &["init", "-q"]);
    git(dest, &["add", "-A"]);
    git(dest, &["commit", "-q", "-m", "baseline"]);
    git(dest, &["rev-parse", "HEAD"]).trim().to_string()
}

/// Edits files of `repo` (path, old text, new text), takes `git diff`, and restores the tree.
pub fn patch_by_editing(repo: &Path, edits: &[(&str, &str, &str)]) -> String {
    for (file, old, new) in edits {
        let path = repo.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(old), "{file} does not contain {old:?}");
        std::fs::write(&path, text.replacen(old, new, 1)).unwrap();
    }
    let diff = git(repo, &["diff", "--binary"]);
    git(repo, &["checkout", "-q", "--", "."]);
    diff
}

/// Every file under `dir` (including `.git`) with its mode and content hash.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, String)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            let rel = entry.path().strip_prefix(dir).unwrap().to_path_buf();
            if meta.is_dir() {
                stack.push(entry.path());
                out.insert(rel, (meta.permissions().mode(), String::new()));
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(entry.path()).unwrap();
                out.insert(
                    rel,
                    (meta.permissions().mode(), target.display().to_string()),
                );
            } else {
                let bytes = std::fs::read(entry.path()).unwrap();
                out.insert(
                    rel,
                    (
                        meta.permissions().mode(),
                        hex::encode(Sha256::digest(&bytes)),
                    ),
                );
            }
        }
    }
    out
}

pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Adds `field` (such as `"max_minutes": 13`) at the top level of the campaign file `file`,
/// whose `name` is `tiny`.
pub fn add_campaign_field(file: &Path, field: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let added = text.replacen(
        r#""name": "tiny","#,
        &format!(r#""name": "tiny", {field},"#),
        1,
    );
    assert_ne!(
        added,
        text,
        "no `\"name\": \"tiny\",` in {}",
        file.display()
    );
    write(file, &added);
}

pub fn write(path: &Path, content: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
}

/// The first run directory under `<camp>/receipts` and its parsed `result.json`.
pub fn first_result(camp: &Path) -> Option<(PathBuf, serde_json::Value)> {
    let runs = std::fs::read_dir(camp.join("receipts")).ok()?;
    let dir = runs
        .filter_map(Result::ok)
        .find(|e| e.path().is_dir())?
        .path();
    let json = std::fs::read_to_string(dir.join("result.json")).ok()?;
    Some((dir, serde_json::from_str(&json).ok()?))
}

/// The verdict of a confirmation of real programs, which the machine's load may move among
/// `allowed` and never outside it: a patch that makes the work several times faster is never
/// rejected, one that makes it slower is never accepted, but a loaded machine can bias the A/A
/// check or leave the minimum effect unresolved, and then the run is inconclusive. A test on
/// real programs asserts what load cannot change (this, and everything but the timing); the
/// verdict logic under noise is tested through the fake runner's scripted timings. Panics, with
/// the run's output, on a verdict outside `allowed` or an exit code that does not match it.
pub fn real_verdict<'a>(result: &'a serde_json::Value, out: &Output, allowed: &[&str]) -> &'a str {
    use evo::exit_codes::{ACCEPTED, INCONCLUSIVE, REJECTED};
    let verdict = (result["verdict"].as_str())
        .unwrap_or_else(|| panic!("no verdict in the result\n{}", text(out)));
    assert!(
        allowed.contains(&verdict),
        "verdict `{verdict}`, where load could only make it one of {allowed:?}\n{}",
        text(out)
    );
    let code = match verdict {
        "accepted" => ACCEPTED,
        "rejected" => REJECTED,
        _ => INCONCLUSIVE,
    };
    assert_eq!(out.status.code(), Some(code), "{}", text(out));
    verdict
}

/// Every file (not folder) under `dir`, recursively; empty when `dir` does not exist.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}
