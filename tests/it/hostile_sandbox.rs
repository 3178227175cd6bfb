//! The sandbox (bubblewrap) end to end: a candidate whose build and timed runs look for the
//! other arm's tree, the network, and a folder outside its tree to write to.
//!
//! With bubblewrap working (the CI installs it), the candidate sees none of them and is measured
//! like any other; with the sandbox off it is stopped by its own probe, which proves the probe
//! works. On a machine without bubblewrap, `auto` must say in the result that the runs were not
//! sandboxed.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use util::cpairs::{HOLDOUTS, HOT_LINE, MEMO, MEMO_EDITS, WORKLOAD, allow_probes};
use util::{evo, fixture_repo, patch_by_editing, snapshot, text, write};

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    camp: PathBuf,
    /// Outside every tree: a sandboxed run must not be able to create files here.
    outside: PathBuf,
}

impl Fixture {
    fn new(mode: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo("cpairs", &repo);
        let camp = dir.path().join("camp");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        // The patches here probe their surroundings on purpose, to test the sandbox: the lane
        // probes gate would stop them before they run.
        write(
            &camp.join("workload.json"),
            &lists_gnumakefile(&allow_probes(WORKLOAD, &["/proc/"])),
        );
        write(&camp.join("holdouts.json"), HOLDOUTS);
        let campaign = format!(
            r#"{{ "name": "sandbox", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json",
  "confirm": {{ "pairs": 9, "aa_pairs": 11 }}, "sandbox": {{ "mode": "{mode}" }},
  "output": "receipts" }}"#
        );
        write(&camp.join("campaign.json"), &campaign);
        Fixture {
            _dir: dir,
            repo,
            camp,
            outside,
        }
    }

    /// The memo speedup, plus probes in the build and in the program that fail when they see
    /// the other arm's tree or a network interface besides loopback, and a write outside.
    fn prying_patch(&self) -> PathBuf {
        let marker = self.outside.join("written-by-candidate");
        let build = format!(
            "prog: prog.c\n\
             \t@touch '{}' 2>/dev/null || true\n\
             \t@if [ -e ../baseline/prog.c ]; then echo 'saw the other arm' >&2; exit 1; fi\n\
             \t@if [ $$(grep -c : /proc/net/dev) -gt 1 ]; then echo 'saw a network' >&2; exit 1; fi\n\
             \tcc -O2 -o prog prog.c\n",
            marker.display()
        );
        let main_probe = "int main(int argc, char **argv) {\n    \
             if (access(\"../baseline/prog.c\", F_OK) == 0) {\n        \
             fprintf(stderr, \"saw the other arm at run time\\n\");\n        \
             return 9;\n    }\n";
        let diff = patch_by_editing(
            &self.repo,
            &[
                ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
                ("prog.c", "static unsigned long work(", MEMO),
                (
                    "prog.c",
                    "#include <string.h>\n",
                    "#include <string.h>\n#include <unistd.h>\n",
                ),
                ("prog.c", "int main(int argc, char **argv) {\n", main_probe),
                (
                    "Makefile",
                    "prog: prog.c\n\tcc -O2 -o prog prog.c\n",
                    &build,
                ),
            ],
        );
        let path = self.camp.join("prying.patch");
        write(&path, &diff);
        path
    }

    fn confirm(&self, patch: &Path) -> (Output, Value) {
        let before = snapshot(&self.repo);
        let out = evo()
            .arg("confirm")
            .arg(patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .output()
            .unwrap();
        assert_eq!(
            before,
            snapshot(&self.repo),
            "the repository changed\n{}",
            text(&out)
        );
        let (_, result) = util::first_result(&self.camp).unwrap_or_else(|| {
            panic!("no result.json\n{}", text(&out));
        });
        (out, result)
    }

    fn wrote_outside(&self) -> bool {
        self.outside.join("written-by-candidate").exists()
    }
}

fn gate<'a>(result: &'a Value, name: &str) -> Option<&'a Value> {
    result["gates"]
        .as_array()?
        .iter()
        .find(|g| g["name"] == name)
}

fn bubblewrap_works() -> bool {
    evo::measure::sandbox::probe().is_ok()
}

#[test]
fn a_sandboxed_candidate_sees_neither_the_other_arm_nor_the_network_and_writes_nothing_outside() {
    let f = Fixture::new("auto");
    let (out, result) = f.confirm(&f.prying_patch());
    let sandbox = &result["sandbox"];
    if !bubblewrap_works() {
        // Honesty instead of isolation: the record says so, and the probe did see the other arm.
        assert_eq!(sandbox["enabled"], false, "{sandbox}");
        assert!(
            sandbox["detail"].as_str().unwrap().starts_with("off"),
            "{sandbox}"
        );
        let pr = std::fs::read_to_string(util::first_result(&f.camp).unwrap().0.join("pr_body.md"))
            .unwrap();
        assert!(pr.contains("were not sandboxed"), "{pr}");
        return;
    }
    assert_eq!(sandbox["enabled"], true, "{sandbox}\n{}", text(&out));
    assert!(
        sandbox["tool"].as_str().unwrap().starts_with("bubblewrap"),
        "{sandbox}"
    );
    let build = gate(&result, "build").expect("a build gate");
    assert_eq!(build["status"], "passed", "{build}\n{}", text(&out));
    let timed = gate(&result, "timed output").expect("measured");
    assert_eq!(timed["status"], "passed", "{timed}");
    assert!(
        !f.wrote_outside(),
        "the candidate's build wrote outside its tree"
    );
    // The memo is a real 5x speedup: isolated, the candidate is measured like any other.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let pr =
        std::fs::read_to_string(util::first_result(&f.camp).unwrap().0.join("pr_body.md")).unwrap();
    assert!(pr.contains("Sandbox: on (bubblewrap"), "{pr}");
}

#[test]
fn without_the_sandbox_the_same_candidate_is_caught_by_its_own_probe() {
    let f = Fixture::new("off");
    let (out, result) = f.confirm(&f.prying_patch());
    assert_eq!(result["sandbox"]["enabled"], false);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let build = gate(&result, "build").expect("a build gate");
    assert_eq!(build["status"], "failed", "{build}");
    let detail = build["detail"].as_str().unwrap();
    assert!(
        detail.contains("saw the other arm") || detail.contains("saw a network"),
        "{detail}"
    );
    // Unsandboxed, the write outside the tree went through: exactly what the sandbox prevents.
    assert!(f.wrote_outside());
}

#[test]
fn a_campaign_that_requires_the_sandbox_stops_before_anything_runs_without_it() {
    let f = Fixture::new("on");
    // A PATH without bubblewrap (nor anything else): the check comes before any build.
    let empty = tempfile::tempdir().unwrap();
    let patch = f.prying_patch();
    let before = snapshot(&f.repo);
    let out = evo()
        .arg("confirm")
        .arg(patch)
        .arg("--campaign")
        .arg(f.camp.join("campaign.json"))
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(before, snapshot(&f.repo));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the sandbox is required"), "{stderr}");
    assert!(stderr.contains("not installed"), "{stderr}");
    assert!(util::first_result(&f.camp).is_none(), "something ran");
    assert!(!f.wrote_outside());
}

#[test]
fn a_candidate_hunting_the_other_arms_processes_finds_none() {
    // Tests run in both trees at once. This candidate's test looks for every process working in
    // the baseline's tree and kills it; each sandboxed run has its own PID namespace, so it finds
    // none, and the baseline's test passes beside it. (Unsandboxed, a baseline step that fails
    // beside the candidate's is run again alone before the baseline is blamed.)
    let f = Fixture::new("auto");
    if !bubblewrap_works() {
        return;
    }
    let slow_test = allow_probes(WORKLOAD, &["/proc/"]).replace(
        r#""command": "./prog --selftest""#,
        r#""command": "./prog --selftest && sleep 2""#,
    );
    assert_ne!(slow_test, WORKLOAD, "the workload's test command moved");
    write(&f.camp.join("workload.json"), &slow_test);
    let killer = "    if (argc == 2 && strcmp(argv[1], \"--selftest\") == 0) {\n        \
         system(\"sleep 0.5; for d in /proc/[0-9]*; do case \\\"$(readlink $d/cwd)\\\" in \
         */baseline) echo found ${d#/proc/} >&2; kill -9 ${d#/proc/} ;; esac; done\");\n";
    let diff = patch_by_editing(
        &f.repo,
        &[(
            "prog.c",
            "    if (argc == 2 && strcmp(argv[1], \"--selftest\") == 0) {\n",
            killer,
        )],
    );
    let patch = f.camp.join("killer.patch");
    write(&patch, &diff);
    let (out, result) = f.confirm(&patch);
    let tests = gate(&result, "tests").expect("a tests gate");
    assert_eq!(tests["status"], "passed", "{tests}\n{}", text(&out));
    let steps = result["steps"].as_array().unwrap();
    assert!(
        !steps.iter().any(|s| s["step"] == "test-1-alone"),
        "the baseline's test failed beside the candidate's: {steps:#?}"
    );
}

/// A patch adding `path` with `content` to `repo` (the repository is left as it was).
fn patch_adding(repo: &Path, path: &str, content: &str) -> String {
    write(&repo.join(path), content);
    util::git(repo, &["add", "-A"]);
    let diff = util::git(repo, &["diff", "--cached", "--binary"]);
    util::git(repo, &["reset", "-q"]);
    std::fs::remove_file(repo.join(path)).unwrap();
    diff
}

/// `workload` with `GNUmakefile` declared in `config_files`: patch safety refuses a new implicit
/// build file that is not declared, so the runtime defences are tested here behind a declared one
/// (the undeclared one is `hostile_patches`' test).
fn lists_gnumakefile(workload: &str) -> String {
    let at = workload.rfind('}').expect("a workload object");
    format!(
        r#"{}, "config_files": ["GNUmakefile"] }}"#,
        workload[..at].trim_end()
    )
}

/// A harness that times almost nothing: what a candidate would put in place of `bench/run.sh`.
const FAKE_HARNESS: &str = "#!/bin/sh\nexec ./prog 1 \"$2\"\n";

impl Fixture {
    /// Protects only these globs (the fixture's workload protects `bench/**`).
    fn protect(&self, globs: &str) {
        let workload = WORKLOAD.replace(r#""protected": ["bench/**"]"#, globs);
        assert_ne!(workload, WORKLOAD, "the workload's protected list moved");
        write(
            &self.camp.join("workload.json"),
            &lists_gnumakefile(&workload),
        );
    }

    /// The reported attack (issue #25.3): a patch that only adds `GNUmakefile`, which make reads
    /// before `Makefile`, whose recipe runs `edit` (make's `$` doubled) and then builds.
    fn implicit_makefile_patch(&self, edit: &str) -> PathBuf {
        let recipe = format!("prog: prog.c\n\t{edit}\n\tcc -O2 -o prog prog.c\n");
        let path = self.camp.join("gnumakefile.patch");
        write(&path, &patch_adding(&self.repo, "GNUmakefile", &recipe));
        path
    }

    fn confirm_quickly(&self, patch: &Path) -> (Output, Value) {
        let out = evo()
            .arg("confirm")
            .arg(patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .env("EVO_QUIET_WAIT_S", "0")
            .output()
            .unwrap();
        let (_, result) = util::first_result(&self.camp).unwrap_or_else(|| {
            panic!("no result.json\n{}", text(&out));
        });
        (out, result)
    }
}

/// The shell line that swaps the harness for the fake one, as a make recipe.
fn overwrite_harness() -> String {
    format!(
        "printf '{}' > bench/run.sh",
        FAKE_HARNESS.replace('\n', "\\n").replace('$', "$$")
    )
}

#[test]
fn a_recipe_in_an_implicit_makefile_cannot_write_the_protected_harness() {
    let f = Fixture::new("auto");
    if !bubblewrap_works() {
        return;
    }
    let (out, result) = f.confirm_quickly(&f.implicit_makefile_patch(&overwrite_harness()));
    let safety = gate(&result, "patch safety").expect("a patch safety gate");
    assert_eq!(safety["status"], "passed", "{safety}\n{}", text(&out));
    let build = gate(&result, "build").expect("a build gate");
    assert_eq!(build["status"], "failed", "{build}\n{}", text(&out));
    let detail = build["detail"].as_str().unwrap();
    assert!(detail.contains("Read-only file system"), "{detail}");
}

#[test]
fn the_folder_of_a_protected_file_cannot_be_renamed_away_and_replaced() {
    // Binds go by path: with only the file bound read-only, renaming its folder and making a new
    // one would swap it. Every folder on the way to it is a mount point, which cannot be renamed.
    let f = Fixture::new("auto");
    if !bubblewrap_works() {
        return;
    }
    f.protect(r#""protected": ["bench/run.sh"]"#);
    let swap = format!(
        "mv bench bench.old && mkdir bench && {}",
        overwrite_harness()
    );
    let (out, result) = f.confirm_quickly(&f.implicit_makefile_patch(&swap));
    let build = gate(&result, "build").expect("a build gate");
    assert_eq!(build["status"], "failed", "{build}\n{}", text(&out));
    let detail = build["detail"].as_str().unwrap();
    assert!(detail.contains("Device or resource busy"), "{detail}");
    // Nor can the file itself be removed and made again.
    let recreate = format!("rm -f bench/run.sh; {}", overwrite_harness());
    let _ = std::fs::remove_dir_all(f.camp.join("receipts"));
    let (out, result) = f.confirm_quickly(&f.implicit_makefile_patch(&recreate));
    let build = gate(&result, "build").expect("a build gate");
    assert_eq!(build["status"], "failed", "{build}\n{}", text(&out));
}

#[test]
fn unsandboxed_a_build_that_edits_the_protected_harness_fails_patch_safety() {
    let f = Fixture::new("off");
    let (out, result) = f.confirm_quickly(&f.implicit_makefile_patch(&overwrite_harness()));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let safety = gate(&result, "patch safety").expect("a patch safety gate");
    assert_eq!(safety["status"], "failed", "{safety}\n{}", text(&out));
    assert_eq!(
        safety["detail"],
        "the build changed protected file bench/run.sh in the candidate tree"
    );
    assert!(gate(&result, "tests").is_none(), "ran on after the change");
}

#[test]
fn unsandboxed_a_timed_run_that_edits_the_protected_harness_fails_the_result() {
    // The checks leave the harness alone; the timed runs (the large input) append to it from
    // the third run of that input on: the differential's and the sanitizer lane's runs of the
    // timed command (the first two, whose protected files are checked after each) see nothing.
    // The memo makes the candidate really faster, so only the check after measuring stops it.
    let f = Fixture::new("off");
    let counter = f.camp.join("large-runs");
    let tamper = format!(
        "int main(int argc, char **argv) {{\n    \
         if (argc > 1 && strcmp(argv[1], \"100000\") == 0) {{\n        \
         FILE *c = fopen(\"{}\", \"a+\");\n        \
         long runs = c ? (fputs(\"x\", c), ftell(c)) : 0;\n        \
         if (c) fclose(c);\n        \
         FILE *h = runs >= 3 ? fopen(\"bench/run.sh\", \"a\") : NULL;\n        \
         if (h) {{ fputs(\"# timed\\n\", h); fclose(h); }}\n    }}\n",
        counter.display()
    );
    let mut edits = MEMO_EDITS.to_vec();
    edits.push(("prog.c", "int main(int argc, char **argv) {\n", &tamper));
    let patch = f.camp.join("tamper.patch");
    write(&patch, &patch_by_editing(&f.repo, &edits));
    let (out, result) = f.confirm_quickly(&patch);
    let safety = gate(&result, "patch safety").expect("a patch safety gate");
    assert_eq!(safety["status"], "failed", "{safety}\n{}", text(&out));
    assert_eq!(
        safety["detail"],
        "a timed run changed protected file bench/run.sh in the candidate tree"
    );
    assert_ne!(result["verdict"], "accepted");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
}

#[test]
fn unsandboxed_a_campaign_refuses_a_candidate_whose_build_edits_the_protected_harness() {
    // The search's check lane is a second copy of the confirmation's: it checks the same way.
    let f = Fixture::new("off");
    let patch = f.implicit_makefile_patch(&overwrite_harness());
    let campaign = std::fs::read_to_string(f.camp.join("campaign.json"))
        .unwrap()
        .replacen(
            r#""output": "receipts""#,
            &format!(
                r#""candidates": [{{ "name": "gnumake", "patch": "{}" }}], "output": "receipts""#,
                patch.file_name().unwrap().to_str().unwrap()
            ),
            1,
        );
    write(&f.camp.join("campaign.json"), &campaign);
    let out = evo()
        .args(["campaign", "run"])
        .arg(f.camp.join("campaign.json"))
        .env("EVO_QUIET_WAIT_S", "0")
        .output()
        .unwrap();
    let summary = util::files_under(&f.camp.join("receipts"))
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "summary.json"))
        .unwrap_or_else(|| panic!("no summary.json\n{}", text(&out)));
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
    let row = &summary["rows"][0];
    assert_eq!(row["status"], "refused", "{row}\n{}", text(&out));
    assert_eq!(
        row["reason"],
        "the build changed protected file bench/run.sh"
    );
}

#[test]
fn a_build_that_fills_tmp_stops_at_its_limit_and_says_so() {
    // Issue #26: every sandboxed step has a /tmp of bounded size (sandbox.limits.tmp_mib).
    let f = Fixture::new("auto");
    if !bubblewrap_works() {
        return;
    }
    let campaign = std::fs::read_to_string(f.camp.join("campaign.json"))
        .unwrap()
        .replacen(
            r#""sandbox": { "mode": "auto" }"#,
            r#""sandbox": { "mode": "auto", "limits": { "tmp_mib": 8 } }"#,
            1,
        );
    write(&f.camp.join("campaign.json"), &campaign);
    let fill = "dd if=/dev/zero of=/tmp/fill bs=1M count=16 2>/dev/null";
    let (out, result) = f.confirm_quickly(&f.implicit_makefile_patch(fill));
    let build = gate(&result, "build").expect("a build gate");
    assert_eq!(build["status"], "failed", "{build}\n{}", text(&out));
    let detail = build["detail"].as_str().unwrap();
    assert!(
        detail.contains("the /tmp limit (8 MiB, sandbox.limits.tmp_mib) was reached"),
        "{detail}"
    );
    let record = result["sandbox"]["detail"].as_str().unwrap();
    assert!(record.contains("8 MiB tmpfs"), "{record}");
}

impl Fixture {
    /// Sets the campaign's `sandbox.limits` to `limits` (a JSON object's inside).
    fn limit(&self, limits: &str) {
        let campaign = std::fs::read_to_string(self.camp.join("campaign.json"))
            .unwrap()
            .replacen(
                r#""sandbox": { "mode": "auto" }"#,
                &format!(r#""sandbox": {{ "mode": "auto", "limits": {{ {limits} }} }}"#),
                1,
            );
        write(&self.camp.join("campaign.json"), &campaign);
    }
}

#[test]
fn a_build_that_writes_a_huge_file_stops_at_the_file_size_limit_and_says_so() {
    let f = Fixture::new("auto");
    if !bubblewrap_works() {
        return;
    }
    f.limit(r#""file_mib": 4"#);
    let huge = "dd if=/dev/zero of=huge bs=1M count=16 2>/dev/null";
    let (out, result) = f.confirm_quickly(&f.implicit_makefile_patch(huge));
    let build = gate(&result, "build").expect("a build gate");
    assert_eq!(build["status"], "failed", "{build}\n{}", text(&out));
    let detail = build["detail"].as_str().unwrap();
    assert!(
        detail.contains("the file size limit (4 MiB, sandbox.limits.file_mib) was reached"),
        "{detail}"
    );
}

#[test]
fn a_test_that_spins_stops_at_the_cpu_time_limit_and_says_so() {
    let f = Fixture::new("auto");
    if !bubblewrap_works() {
        return;
    }
    f.limit(r#""cpu_s": 1"#);
    let spin = "    if (argc == 2 && strcmp(argv[1], \"--selftest\") == 0) {\n        \
         for (volatile unsigned long i = 0;; i++) {}\n";
    let diff = patch_by_editing(
        &f.repo,
        &[(
            "prog.c",
            "    if (argc == 2 && strcmp(argv[1], \"--selftest\") == 0) {\n",
            spin,
        )],
    );
    let patch = f.camp.join("spin.patch");
    write(&patch, &diff);
    let (out, result) = f.confirm_quickly(&patch);
    let tests = gate(&result, "tests").expect("a tests gate");
    assert_eq!(tests["status"], "failed", "{tests}\n{}", text(&out));
    let detail = tests["detail"].as_str().unwrap();
    assert!(
        detail.contains("the CPU time limit (1 s per process, sandbox.limits.cpu_s) was reached"),
        "{detail}"
    );
}

/// The candidate's self-test runs `body` first (C statements in `main`).
fn selftest_patch(f: &Fixture, name: &str, body: &str) -> PathBuf {
    let line = "    if (argc == 2 && strcmp(argv[1], \"--selftest\") == 0) {\n";
    let diff = patch_by_editing(&f.repo, &[("prog.c", line, &format!("{line}{body}"))]);
    let patch = f.camp.join(name);
    write(&patch, &diff);
    patch
}

/// Whether this machine gives evo a cgroup for `controller` (the record says so).
fn limited(result: &Value, what: &str) -> bool {
    let record = result["sandbox"]["detail"].as_str().unwrap();
    !record.contains(&format!("{what} were not limited"))
        && !record.contains(&format!("{what} was not limited"))
}

#[test]
fn a_test_that_allocates_past_the_memory_limit_is_stopped_and_says_so() {
    let f = Fixture::new("auto");
    if !bubblewrap_works() {
        return;
    }
    f.limit(r#""memory_mib": 64"#);
    let hog = "        size_t n = 512u << 20; volatile char *p = malloc(n);\n        \
         for (size_t i = 0; p && i < n; i += 4096) p[i] = 1;\n";
    let (out, result) = f.confirm_quickly(&selftest_patch(&f, "hog.patch", hog));
    if !limited(&result, "memory") {
        return;
    }
    let tests = gate(&result, "tests").expect("a tests gate");
    assert_eq!(tests["status"], "failed", "{tests}\n{}", text(&out));
    let detail = tests["detail"].as_str().unwrap();
    assert!(
        detail.contains("the memory limit (64 MiB, sandbox.limits.memory_mib) was reached"),
        "{detail}"
    );
}

#[test]
fn a_test_that_forks_past_the_process_limit_is_stopped_and_says_so() {
    let f = Fixture::new("auto");
    if !bubblewrap_works() {
        return;
    }
    f.limit(r#""pids": 32"#);
    let bomb = "        if (system(\"for i in $(seq 100); do sleep 5 & done; wait\")) return 1;\n";
    let (out, result) = f.confirm_quickly(&selftest_patch(&f, "forks.patch", bomb));
    if !limited(&result, "processes") {
        return;
    }
    let tests = gate(&result, "tests").expect("a tests gate");
    assert_eq!(tests["status"], "failed", "{tests}\n{}", text(&out));
    let detail = tests["detail"].as_str().unwrap();
    assert!(
        detail.contains("the process limit (32, sandbox.limits.pids) was reached"),
        "{detail}"
    );
}

#[test]
fn a_build_that_fills_its_tree_past_the_tree_limit_fails_with_the_size_named() {
    // Holds sandboxed or not: the tree is measured after the build.
    let f = Fixture::new("auto");
    f.limit(r#""tree_mib": 32"#);
    let fill = "dd if=/dev/zero of=filler bs=1M count=64 2>/dev/null";
    let (out, result) = f.confirm_quickly(&f.implicit_makefile_patch(fill));
    let build = gate(&result, "build").expect("a build gate");
    assert_eq!(build["status"], "failed", "{build}\n{}", text(&out));
    let detail = build["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("the candidate tree: the build left 6"),
        "{detail}"
    );
    assert!(
        detail.ends_with("over the tree disk limit (32 MiB, sandbox.limits.tree_mib)"),
        "{detail}"
    );
}
