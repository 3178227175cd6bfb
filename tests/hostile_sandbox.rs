//! The sandbox (bubblewrap) end to end: a candidate whose build and timed runs look for the
//! other arm's tree, the network, and a folder outside its tree to write to.
//!
//! With bubblewrap working (the CI installs it), the candidate sees none of them and is measured
//! like any other; with the sandbox off it is stopped by its own probe, which proves the probe
//! works. On a machine without bubblewrap, `auto` must say in the result that the runs were not
//! sandboxed.

mod util;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use util::cpairs::{HOLDOUTS, HOT_LINE, MEMO, WORKLOAD, allow_probes};
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
            &allow_probes(WORKLOAD, &["/proc/"]),
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
