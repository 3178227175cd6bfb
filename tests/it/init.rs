//! `evo init` in small repositories of each kind: the three files it writes follow `evo schema`,
//! load as a plan, and (for a Make project) carry a real speedup through `evo confirm` as they
//! are; a second `evo init` refuses; `$comment` changes no digest.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use util::{evo, git, text, write};

/// A committed repository at `dir/name` holding `files` (path, content).
pub(crate) fn repo_with(dir: &Path, name: &str, files: &[(&str, &str)]) -> (PathBuf, String) {
    let repo = dir.join(name);
    for (path, content) in files {
        write(&repo.join(path), content);
    }
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "baseline"]);
    let sha = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    (repo, sha)
}

pub(crate) fn init_in(dir: &Path, args: &[&str]) -> Output {
    evo()
        .arg("init")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `evo confirm PATCH` run in `repo`, finding the campaign `evo init` wrote there.
pub(crate) fn confirm_in(repo: &Path, patch: &Path) -> Output {
    evo()
        .arg("confirm")
        .arg(patch)
        .current_dir(repo)
        .output()
        .unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The three files exist, each follows its `evo schema`, and the campaign loads as a plan.
pub(crate) fn assert_valid_files(repo: &Path) -> evo::plan::CampaignPlan {
    use evo::spec::SchemaKind;
    for (file, kind) in [
        ("evo.json", SchemaKind::Campaign),
        ("evo/workload.json", SchemaKind::Workload),
        ("evo/holdouts.json", SchemaKind::Holdouts),
    ] {
        let schema: Value = serde_json::from_str(&evo::spec::schema(kind)).unwrap();
        let value = read_json(&repo.join(file));
        assert!(value["$comment"].is_array(), "{file} has no $comment");
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{file} does not follow `evo schema {kind:?}`: {errors:#?}"
        );
    }
    evo::plan::campaign_plan(&repo.join("evo.json"))
        .unwrap_or_else(|e| panic!("the campaign does not load: {e}"))
}

#[test]
fn a_cargo_project_gets_its_release_binary_timed_and_a_plan_that_loads() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, sha) = repo_with(
        dir.path(),
        "tiny",
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"tiny-sum\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            ),
            (
                "src/main.rs",
                "fn main() {\n    println!(\"{}\", (1..1000u64).sum::<u64>());\n}\n",
            ),
        ],
    );
    // From a folder inside the repository: the files still go to its root.
    let out = init_in(&repo.join("src"), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = assert_valid_files(&repo);
    assert_eq!(plan.spec.baseline, sha);
    assert_eq!(
        plan.repo.canonicalize().unwrap(),
        repo.canonicalize().unwrap()
    );
    assert!(plan.output_dir.ends_with(".evo/receipts"));
    let w = &plan.workload;
    assert_eq!(w.build.command, "cargo build --release");
    assert_eq!(w.build.artifacts, ["target/release/tiny-sum"]);
    assert!(w.test.command.as_slice()[0].contains("cargo test --release"));
    assert_eq!(w.scenarios[0].run, "./target/release/tiny-sum");
    assert_eq!(w.scenarios[0].check, w.scenarios[0].run);
    assert!(w.scenarios[0].deterministic_output);
    assert_eq!(w.protected, ["evo.json", "evo/**"]);
    assert!(
        plan.holdouts
            .as_ref()
            .unwrap()
            .holdouts
            .scenarios
            .is_empty()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("a Cargo project"), "{stdout}");
    assert!(stdout.contains(&sha), "{stdout}");
    assert!(stdout.contains("add `.evo/` to .gitignore"), "{stdout}");
    assert_eq!(util::next_commands(&stdout), ["evo confirm <patch>"]);
}

#[test]
fn a_make_project_confirms_a_real_speedup_with_the_files_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("cpairs");
    let sha = util::fixture_repo("cpairs", &repo);
    // An ignored output folder gets no hint.
    write(&repo.join(".git/info/exclude"), ".evo/\n");
    let out = init_in(&repo, &["--run", "./prog 50000 {seed}"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(".gitignore"), "{stdout}");
    let plan = assert_valid_files(&repo);
    assert_eq!(plan.spec.baseline, sha);
    assert_eq!(plan.workload.build.command, "make");
    // The fixture's Makefile has no `test:` rule.
    assert_eq!(plan.workload.test.command.as_slice(), ["true"]);
    let patch = dir.path().join("memo.patch");
    write(
        &patch,
        &util::patch_by_editing(&repo, &util::cpairs::MEMO_EDITS),
    );
    let out = confirm_in(&repo, &patch);
    let runs = repo.join(".evo/receipts");
    let (_, r) = util::first_result(&repo.join(".evo"))
        .unwrap_or_else(|| panic!("no result.json under {}\n{}", runs.display(), text(&out)));
    util::real_verdict(&r, &out, &["accepted", "inconclusive"]);
    assert_eq!(r["baseline_sha"], sha.as_str());
    for gate in r["gates"].as_array().unwrap() {
        assert_ne!(gate["status"], "failed", "{gate:#}");
    }
}

/// `cmake` is on the PATH; `false` only with `EVO_SKIP_CMAKE=1` (any other absence fails the
/// test: `.ci/run` installs it).
pub(crate) fn cmake_present() -> bool {
    if std::env::var("EVO_SKIP_CMAKE").is_ok_and(|v| v == "1") {
        eprintln!("note: EVO_SKIP_CMAKE=1: the CMake project is not built");
        return false;
    }
    let found = Command::new("cmake").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "cmake cannot run: install it (apt-get install cmake), or set EVO_SKIP_CMAKE=1"
    );
    true
}

/// 16 steps of a 64-bit linear congruential generator per input; the patch takes them as one
/// step with the composed multiplier and increment (the same numbers mod 2^64).
const LCG_MAIN: &str = r#"#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    unsigned long seed = argc > 2 ? strtoul(argv[2], 0, 10) : 1;
    unsigned long acc = 0;
    for (long i = 0; i < n; i++) {
        unsigned long x = (unsigned long)i * 2654435761ul ^ seed;
        for (int r = 0; r < 16; r++) x = x * 6364136223846793005ul + 1442695040888963407ul;
        acc += x >> 60;
    }
    printf("%lu\n", acc);
    return 0;
}
"#;

#[test]
fn a_cmake_project_confirms_a_real_speedup_with_the_files_as_written() {
    if !cmake_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cmake = "cmake_minimum_required(VERSION 3.13)\nproject(lcg C)\nadd_executable(prog main.c)\n\
                 enable_testing()\nadd_test(NAME smoke COMMAND prog 1000 1)\n";
    let (repo, sha) = repo_with(
        dir.path(),
        "lcg",
        &[("CMakeLists.txt", cmake), ("main.c", LCG_MAIN)],
    );
    let out = init_in(&repo, &["--run", "./build/prog 3000000 {seed}"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("a CMake project"), "{stdout}");
    let plan = assert_valid_files(&repo);
    assert_eq!(plan.spec.baseline, sha);
    assert!(
        plan.workload
            .build
            .command
            .starts_with("cmake -S . -B build")
    );
    assert!(plan.workload.test.command.as_slice()[0].contains("ctest --test-dir"));
    let patch = dir.path().join("compose.patch");
    write(
        &patch,
        &util::patch_by_editing(
            &repo,
            &[(
                "main.c",
                "for (int r = 0; r < 16; r++) x = x * 6364136223846793005ul + 1442695040888963407ul;",
                "x = x * 10186629832379121217ul + 3646985772805368400ul;",
            )],
        ),
    );
    let out = confirm_in(&repo, &patch);
    let (_, r) = util::first_result(&repo.join(".evo"))
        .unwrap_or_else(|| panic!("no result.json\n{}", text(&out)));
    for gate in r["gates"].as_array().unwrap() {
        assert_ne!(gate["status"], "failed", "{gate:#}\n{}", text(&out));
    }
    util::real_verdict(&r, &out, &["accepted", "inconclusive"]);
    let median = r["scenarios"][0]["training"]["median"].as_f64().unwrap();
    assert!(median > 2.0, "16 steps became 1: median {median}");
}

#[test]
fn a_plain_repository_gets_a_placeholder_that_says_what_to_edit() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _) = repo_with(dir.path(), "scripts", &[("run.py", "print(42)\n")]);
    let out = init_in(&repo, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("to do:"), "{stdout}");
    let plan = assert_valid_files(&repo);
    let run = &plan.workload.scenarios[0].run;
    assert_eq!(&plan.workload.scenarios[0].check, run);
    let placeholder = std::process::Command::new("sh")
        .args(["-c", run])
        .output()
        .unwrap();
    assert_eq!(placeholder.status.code(), Some(1));
    let said = String::from_utf8_lossy(&placeholder.stderr);
    assert!(
        said.contains("edit scenarios[0].run") && said.contains("evo/workload.json"),
        "{said}"
    );
    // --check alone keeps the placeholder run; --run with --check sets both.
    let out = init_in(
        &repo,
        &[
            "--force",
            "--run",
            "python3 run.py",
            "--check",
            "python3 run.py --small",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = assert_valid_files(&repo);
    let s = &plan.workload.scenarios[0];
    assert_eq!(
        (s.run.as_str(), s.check.as_str()),
        ("python3 run.py", "python3 run.py --small")
    );
    assert!(!s.deterministic_output);
}

#[test]
fn a_second_init_refuses_and_names_the_file_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, _) = repo_with(dir.path(), "r", &[("Makefile", "all:\n\ttrue\n")]);
    assert_eq!(init_in(&repo, &[]).status.code(), Some(0));
    std::fs::write(repo.join("evo/workload.json"), "{ \"edited\": true }\n").unwrap();
    let before = util::snapshot(&repo);
    let out = init_in(&repo, &["--run", "./other"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("evo.json already exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        before,
        util::snapshot(&repo),
        "a refused init changed files"
    );
    // One missing file is not written either while another exists.
    std::fs::remove_file(repo.join("evo/holdouts.json")).unwrap();
    assert_eq!(init_in(&repo, &[]).status.code(), Some(2));
    assert!(!repo.join("evo/holdouts.json").exists());
    let out = init_in(&repo, &["--force", "--run", "./other"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = assert_valid_files(&repo);
    assert_eq!(plan.workload.scenarios[0].run, "./other");
}

#[test]
fn outside_a_repository_or_before_the_first_commit_init_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let out = init_in(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not inside a git repository"));
    git(dir.path(), &["init", "-q"]);
    let out = init_in(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no commit yet"));
    assert!(!dir.path().join("evo.json").exists());
}

#[test]
fn a_comment_round_trips_without_changing_any_digest() {
    use evo::spec::{Campaign, Holdouts, Workload, parse_json};
    let dir = tempfile::tempdir().unwrap();
    let (repo, _) = repo_with(
        dir.path(),
        "r",
        &[
            ("CMakeLists.txt", "project(r C)\n"),
            ("r.c", "int main(void){return 0;}\n"),
        ],
    );
    assert_eq!(
        init_in(&repo, &["--run", "./build/r"]).status.code(),
        Some(0)
    );
    /// The file as written, and the same file without its `$comment` and with it as one string.
    fn variants(path: &Path) -> [String; 3] {
        let written = std::fs::read_to_string(path).unwrap();
        let mut value: Value = serde_json::from_str(&written).unwrap();
        let object = value.as_object_mut().unwrap();
        object.remove("$comment");
        let without = serde_json::to_string_pretty(&value).unwrap();
        value
            .as_object_mut()
            .unwrap()
            .insert("$comment".into(), "one line".into());
        [written, without, serde_json::to_string(&value).unwrap()]
    }
    let p = Path::new("f.json");
    fn same_digest(texts: [String; 3], digest: impl Fn(&str) -> String) {
        let [a, b, c] = texts.map(|t| digest(&t));
        assert_eq!(a, b);
        assert_eq!(a, c);
    }
    same_digest(variants(&repo.join("evo.json")), |t: &str| {
        evo::plan::canonical_digest(&parse_json::<Campaign>(p, t).unwrap())
    });
    same_digest(variants(&repo.join("evo/workload.json")), |t: &str| {
        evo::plan::canonical_digest(&parse_json::<Workload>(p, t).unwrap())
    });
    // The portfolio digest the receipt publishes.
    same_digest(variants(&repo.join("evo/holdouts.json")), |t: &str| {
        evo::plan::canonical_digest(&parse_json::<Holdouts>(p, t).unwrap())
    });
    let plan = evo::plan::campaign_plan(&repo.join("evo.json")).unwrap();
    let empty: Holdouts = parse_json(p, r#"{ "scenarios": [] }"#).unwrap();
    assert_eq!(
        plan.holdouts.unwrap().portfolio_digest,
        evo::plan::canonical_digest(&empty)
    );
    // Still a string or a list of strings; other `$` keys are still refused.
    let err = parse_json::<Holdouts>(p, r#"{ "$comment": 3, "scenarios": [] }"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("$comment") && err.contains("expected a string or a list of strings"),
        "{err}"
    );
    let err = parse_json::<Holdouts>(p, r#"{ "$comments": "x", "scenarios": [] }"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field"), "{err}");
}
