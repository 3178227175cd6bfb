//! evo's profile of the baseline in the brief (docs/design.md §2.9), for real: the small C
//! repository built with debug info, its training scenario's `count` run under callgrind, and a
//! scripted agent that prints the brief it read. The agent is told the hot function and lines by
//! file name relative to the repository, and nothing of the holdout or of evo's folders.

use crate::util;

use std::path::{Path, PathBuf};

use serde_json::Value;
use util::{copy_fixture, evo, git, text, write};

/// The holdout, with a count run of its own that must never be profiled or named.
const HOLDOUTS: &str = r#"{ "scenarios": [
  { "name": "sum-30k-sealed", "role": "holdout", "run": "./bench/run.sh 30000 {seed}",
    "check": "./bench/run.sh 300 {seed}", "compare": "exact", "deterministic_output": true,
    "count": { "run": "./bench/run.sh 31337 {seed}" } }
] }"#;

struct Fixture {
    dir: tempfile::TempDir,
    camp: PathBuf,
}

impl Fixture {
    /// The cpairs repository built with `-g -fno-inline`, so its hot function keeps its name and
    /// its lines; `count` is the training scenario's count run (or none).
    fn new(count: Option<&str>) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        copy_fixture("cpairs", &repo);
        write(
            &repo.join("Makefile"),
            "prog: prog.c\n\tcc -O2 -g -fno-inline -o prog prog.c\n",
        );
        git(&repo, &["init", "-q"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "baseline"]);
        let camp = dir.path().join("camp");
        let count = count.map_or(String::new(), |c| {
            format!(r#", "count": {{ "run": "{c}" }}"#)
        });
        let workload = util::cpairs::WORKLOAD.replacen(
            r#""timeout_s": 20 }"#,
            &format!(r#""timeout_s": 20 {count} }}"#),
            1,
        );
        assert!(
            count.is_empty() || workload.contains(r#""count""#),
            "{workload}"
        );
        write(&camp.join("workload.json"), &workload);
        write(&camp.join("holdouts.json"), HOLDOUTS);
        // The agent prints what it read (evo logs its stderr) and changes nothing.
        write(&camp.join("agent/agent.sh"), "#!/bin/sh\ncat >&2\n");
        let campaign = format!(
            r#"{{ "name": "cpairs", "repo": "../repo", "baseline": "main",
  "workload": "workload.json", "holdouts": "holdouts.json",
  "agent": {{ "command": "sh '{}'", "count": 1, "timeout_s": 60 }},
  "sandbox": {{ "read_only": ["{}"] }},
  "search": {{ "pairs": 3 }}, "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1 }} }}"#,
            camp.join("agent/agent.sh").display(),
            camp.join("agent").display()
        );
        write(&camp.join("campaign.json"), &campaign);
        Fixture { dir, camp }
    }

    /// Runs the campaign; returns the run directory and the brief the agent printed.
    fn run(&self) -> (PathBuf, String, Value) {
        let out = evo()
            .args(["campaign", "run"])
            .arg(self.camp.join("campaign.json"))
            .output()
            .unwrap();
        let receipts = self.camp.join("receipts");
        let run_dir = std::fs::read_dir(&receipts)
            .unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.is_dir())
            .unwrap_or_else(|| panic!("no run directory: {}", text(&out)));
        let read = std::fs::read_to_string(run_dir.join("logs/agent-1.stderr.log"));
        let read = read.unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        let brief = serde_json::from_str(&read).unwrap_or_else(|e| panic!("{e}: {read}"));
        (run_dir, read, brief)
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }
}

fn valgrind_missing() -> bool {
    let missing = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err();
    if missing {
        eprintln!("skipped: valgrind is not installed");
    }
    missing
}

#[test]
fn the_agent_is_told_the_baselines_hot_function_and_lines_by_repository_path() {
    if valgrind_missing() {
        return;
    }
    let fx = Fixture::new(Some("./bench/run.sh 3000 {seed}"));
    let (run_dir, read, brief) = fx.run();
    assert_eq!(brief["brief_version"], 4, "{brief:#}");
    let p = &brief["profile"];
    assert!(p.is_object(), "{brief:#}");
    assert_eq!(p["scenario"], "sum-100k");
    let command = p["command"].as_str().unwrap();
    assert!(command.starts_with("./bench/run.sh 3000 "), "{command}");
    assert!(p["instructions"].as_u64().unwrap() > 1_000_000, "{p:#}");
    // 3000 values through 200 rounds of the hash: nearly all of the run.
    let hot = &p["functions"][0];
    assert_eq!(hot["function"], "slow_hash", "{p:#}");
    assert_eq!(hot["file"], "prog.c", "{p:#}");
    assert_eq!(hot["object"], "prog", "{p:#}");
    assert!(hot["percent"].as_f64().unwrap() > 50.0, "{p:#}");
    let functions = p["functions"].as_array().unwrap();
    assert!(functions.len() <= 10 && functions.len() > 2, "{p:#}");
    // The hottest line is in slow_hash's loop (prog.c lines 14–19).
    let line = &p["lines"][0];
    assert_eq!(line["file"], "prog.c", "{p:#}");
    assert!((14..=19).contains(&line["line"].as_u64().unwrap()), "{p:#}");
    for l in p["lines"].as_array().unwrap() {
        assert_eq!(l["file"], "prog.c", "only the repository's files: {p:#}");
    }
    // Nothing of evo's folders, nothing absolute, nothing of the holdout.
    for leak in [
        fx.root().display().to_string(),
        run_dir.display().to_string(),
        "sealed".to_string(),
        "31337".to_string(),
    ] {
        assert!(!read.contains(&leak), "the brief names {leak}: {read}");
    }
    for f in functions {
        for key in ["file", "object"] {
            let v = f[key].as_str().unwrap_or("");
            assert!(!v.starts_with('/'), "{f:#}");
        }
    }
}

#[test]
fn without_a_counted_run_the_brief_says_why_there_is_no_profile_and_the_search_goes_on() {
    let fx = Fixture::new(None);
    let (run_dir, _, brief) = fx.run();
    assert!(brief["profile"].is_null(), "{brief:#}");
    let why = brief["profile_unavailable"].as_str().unwrap();
    assert!(why.contains("`count`") && why.contains("sum-100k"), "{why}");
    let summary = std::fs::read_to_string(run_dir.join("summary.json")).unwrap();
    assert!(summary.contains("no_change"), "{summary}");
}
