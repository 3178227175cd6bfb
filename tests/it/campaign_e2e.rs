//! `evo campaign run` end to end on the small C repository: good, bad and hostile candidates and
//! a scripted agent; every candidate gets a status; the best is confirmed; resume after SIGKILL
//! repeats nothing and loses nothing; a second evo on the same run is refused.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use util::cpairs::{HOLDOUTS, HOT_LINE, MEMO, WORKLOAD};
use util::{evo, fixture_repo, patch_by_editing, snapshot, text, write};

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    camp: PathBuf,
}

/// The campaign file; `agent` is the scripted agent's path (it runs inside evo's tree, confined:
/// its own folder is declared read-only so the sandbox shows it).
fn campaign(candidates: &str, agent: Option<&Path>, pairs: usize) -> String {
    let agent = agent.map_or(String::new(), |script| {
        format!(
            r#""agent": {{ "command": "sh '{}'", "count": 1, "timeout_s": 60 }},
  "sandbox": {{ "read_only": ["{}"] }},"#,
            script.display(),
            script.parent().unwrap().display()
        )
    });
    format!(
        r#"{{ "name": "cpairs", "repo": "../repo", "baseline": "main", "workload": "workload.json",
  "holdouts": "holdouts.json",
  "brief": {{ "objective": "make sum-100k faster", "bottleneck": "slow_hash", "constraints": ["keep output"] }},
  "candidates": [{candidates}], {agent}
  "search": {{ "pairs": {pairs} }}, "confirm": {{ "pairs": 9, "aa_pairs": 11, "top": 1 }} }}"#
    )
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo("cpairs", &repo);
        let camp = dir.path().join("camp");
        write(&camp.join("workload.json"), WORKLOAD);
        write(&camp.join("holdouts.json"), HOLDOUTS);
        Fixture {
            _dir: dir,
            repo,
            camp,
        }
    }

    fn patch(&self, name: &str, edits: &[(&str, &str, &str)]) -> String {
        write(&self.camp.join(name), &patch_by_editing(&self.repo, edits));
        format!(
            r#"{{ "name": "{}", "patch": "{name}" }}"#,
            name.trim_end_matches(".patch")
        )
    }

    /// A scripted agent that saves its brief, applies the memo change for real, and explains it.
    fn agent(&self) {
        let memo_src = std::fs::read_to_string(self.repo.join("prog.c"))
            .unwrap()
            .replacen(HOT_LINE, "        total += cached_hash(v);", 1)
            .replacen("static unsigned long work(", MEMO, 1);
        write(&self.camp.join("agent/agent_prog.c"), &memo_src);
        // The brief goes to stderr, which evo logs: the agent cannot write outside its tree.
        let script = format!(
            "#!/bin/sh\ncat >&2\ncp '{src}' prog.c\necho 'memoize slow_hash over its 1000 inputs' > EVO_EXPLANATION.md\n",
            src = self.camp.join("agent/agent_prog.c").display()
        );
        write(&self.camp.join("agent/agent.sh"), &script);
    }

    fn run(&self, extra: &[&str]) -> Output {
        evo()
            .args(["campaign", "run"])
            .arg(self.camp.join("campaign.json"))
            .args(extra)
            .output()
            .unwrap()
    }

    /// Starts `evo campaign run` and SIGKILLs it as soon as `ready` says so about its journal;
    /// returns what `ready` returned.
    fn kill_when<T>(&self, what: &str, ready: impl Fn(&str) -> Option<T>) -> T {
        let mut child = Reaped(
            evo()
                .args(["campaign", "run"])
                .arg(self.camp.join("campaign.json"))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
        let started = Instant::now();
        loop {
            assert!(started.elapsed() < Duration::from_secs(120), "{what}");
            std::thread::sleep(Duration::from_millis(50));
            let journal = std::fs::read_dir(self.camp.join("receipts"))
                .ok()
                .and_then(|mut d| d.next())
                .and_then(|e| e.ok())
                .and_then(|e| std::fs::read_to_string(e.path().join("journal.jsonl")).ok())
                .unwrap_or_default();
            if let Some(value) = ready(&journal) {
                child.kill_now();
                return value;
            }
        }
    }

    fn run_dir(&self) -> PathBuf {
        std::fs::read_dir(self.camp.join("receipts"))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.is_dir())
            .expect("a run directory")
    }

    fn summary(&self) -> Value {
        let text = std::fs::read_to_string(self.run_dir().join("summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

/// A child process that is killed (SIGKILL) and reaped at the latest when dropped.
struct Reaped(std::process::Child);

impl Reaped {
    fn kill_now(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        self.kill_now();
    }
}

fn row<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {summary:#}"))
}

fn journal(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The statuses of patch candidates (refused, build failed, differential mismatch, screened,
/// confirmed) are decided on scripted runs in `campaign_fake.rs`; this is the real path: a real
/// agent in a real tree, real builds and timing, and the printed commands pasted.
#[test]
fn an_agent_candidate_is_collected_screened_and_confirmed() {
    let fx = Fixture::new();
    fx.agent();
    write(
        &fx.camp.join("campaign.json"),
        &campaign("", Some(&fx.camp.join("agent/agent.sh")), 5),
    );
    let before = snapshot(&fx.repo);
    let out = fx.run(&[]);
    assert_eq!(before, snapshot(&fx.repo), "the user's repository changed");
    let s = fx.summary();
    assert_eq!(s["candidates_tried"], 1, "{s:#}");
    let agent = row(&s, "agent-1");
    assert_eq!(agent["screening_pairs"], 5, "{agent:#}");
    let brief = std::fs::read_to_string(fx.run_dir().join("logs/agent-1.stderr.log")).unwrap();
    assert!(brief.contains("make sum-100k faster") && brief.contains("sum-100k"));
    assert!(
        !brief.contains("sealed"),
        "the agent saw a holdout: {brief}"
    );
    // A real speedup is never rejected; a loaded machine can leave its confirmation
    // inconclusive, and then nothing is accepted.
    if agent["status"] == "inconclusive" {
        assert!(s["accepted"].is_null(), "{s:#}");
        return;
    }
    assert_eq!(agent["status"], "confirmed", "{}\n{s:#}", text(&out));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(s["accepted"], agent["index"]);
    let run_dir = fx.run_dir();
    // The command printed last verifies the accepted receipt when pasted.
    let receipt = run_dir
        .join(agent["confirmation_run_dir"].as_str().unwrap())
        .join(evo::receipt::RECEIPT_FILE);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let commands = util::next_commands(&stdout);
    let verify = commands.first().expect("a verify command");
    let expected = format!("evo receipt verify {} --key ", receipt.display());
    assert!(verify.starts_with(&expected), "{stdout}");
    assert!(verify.ends_with(" --recompute"), "{stdout}");
    let pasted = util::shell(&fx.camp, verify);
    assert_eq!(pasted.status.code(), Some(0), "{}", text(&pasted));
    let patch = run_dir.join(agent["patch_file"].as_str().unwrap());
    let patch_text = std::fs::read_to_string(&patch).unwrap();
    assert!(patch_text.contains("cached_hash") && !patch_text.contains("EVO_EXPLANATION"));
    let entries = journal(&run_dir);
    let explanation = entries
        .iter()
        .find(|e| e["entry"] == "candidate" && e["name"] == "agent-1")
        .unwrap();
    assert!(
        explanation["explanation"]
            .as_str()
            .unwrap()
            .contains("memoize")
    );
    assert!(run_dir.join("run_manifest.json").is_file());
    assert!(!run_dir.join("work").exists(), "trees were left behind");
    // The emitted patch confirms again from anywhere, without --campaign.
    let again = evo()
        .arg("confirm")
        .arg(&patch)
        .current_dir("/")
        .output()
        .unwrap();
    assert!(
        matches!(again.status.code(), Some(0) | Some(4)),
        "{}",
        text(&again)
    );
}

#[test]
fn a_campaign_killed_in_screening_resumes_without_repeating_or_losing_runs() {
    let fx = Fixture::new();
    let candidates = [
        fx.patch("memo.patch", &[("prog.c", HOT_LINE, "        total += cached_hash(v);"), ("prog.c", "static unsigned long work(", MEMO)]),
        fx.patch("slow.patch", &[("prog.c", HOT_LINE, "        volatile unsigned long sink = slow_hash(v + 1);\n        (void)sink;\n        total += slow_hash(v);")]),
    ]
    .join(",");
    write(
        &fx.camp.join("campaign.json"),
        &campaign(&candidates, None, 12),
    );
    // Kill evo without warning once some screening pairs are journaled.
    let killed_after = fx.kill_when("screening never started", |journal| {
        let pairs = journal
            .lines()
            .filter(|l| l.contains("\"screening_pair\""))
            .count();
        (pairs >= 3).then_some(pairs)
    });
    let run_dir = fx.run_dir();
    let before: Vec<Value> = journal(&run_dir);
    assert!(before.iter().all(|e| e["entry"] != "finished"));
    let out = fx.run(&["--resume", "latest"]);
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "{}",
        text(&out)
    );
    let after = journal(&run_dir);
    // Nothing journaled before the kill was lost or rewritten.
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the journal was rewritten"
    );
    let count = |entry: &str| after.iter().filter(|e| e["entry"] == entry).count();
    assert_eq!(count("started"), 1);
    assert_eq!(count("baseline_ready"), 1, "the baseline was rebuilt");
    assert_eq!(count("candidate"), 2);
    // Exactly the requested pairs per candidate: none repeated, none missing.
    for index in [1, 2] {
        let pairs: Vec<u64> = after
            .iter()
            .filter(|e| e["entry"] == "screening_pair" && e["index"] == index)
            .map(|e| e["pair"]["index"].as_u64().unwrap())
            .collect();
        assert_eq!(
            pairs,
            (0..12).collect::<Vec<u64>>(),
            "candidate {index} (killed after {killed_after} pairs)"
        );
    }
    let s = fx.summary();
    assert_eq!(row(&s, "memo")["screening_pairs"], 12);
    assert_eq!(count("finished"), 1);
}

#[test]
fn a_second_evo_on_the_same_run_is_refused() {
    let fx = Fixture::new();
    let c = fx.patch(
        "numerics.patch",
        &[("prog.c", "h ^= h >> 29;", "h ^= h >> 28;")],
    );
    write(&fx.camp.join("campaign.json"), &campaign(&c, None, 5));
    let first = fx.run(&[]);
    assert_eq!(first.status.code(), Some(3), "{}", text(&first));
    let _held = evo::host::lock::RunLock::acquire(&fx.run_dir()).unwrap();
    let second = fx.run(&["--resume", "latest"]);
    assert_eq!(second.status.code(), Some(2), "{}", text(&second));
    assert!(String::from_utf8_lossy(&second.stderr).contains("in use by another evo process"));
}

#[test]
fn a_campaign_without_candidates_is_a_usage_error() {
    let fx = Fixture::new();
    write(&fx.camp.join("campaign.json"), &campaign("", None, 5));
    let out = fx.run(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no candidates"));
}

#[test]
fn a_gigabyte_candidate_is_refused_from_its_size_and_the_others_go_on() {
    let fx = Fixture::new();
    // Sparse: a gigabyte that takes no disk; evo must neither read nor copy it.
    std::fs::File::create(fx.camp.join("huge.patch"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let huge = r#"{ "name": "huge", "patch": "huge.patch" }"#;
    let numerics = fx.patch(
        "numerics.patch",
        &[("prog.c", "h ^= h >> 29;", "h ^= h >> 28;")],
    );
    write(
        &fx.camp.join("campaign.json"),
        &campaign(&format!("{huge}, {numerics}"), None, 5),
    );
    let out = fx.run(&[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let s = fx.summary();
    let r = row(&s, "huge");
    assert_eq!(r["status"], "refused", "{r:#}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("1073741824 bytes, over evo's 64 MiB cap"),
        "{r:#}"
    );
    let copy = fx.run_dir().join(r["patch_file"].as_str().unwrap());
    assert_eq!(
        std::fs::metadata(&copy).unwrap().len(),
        0,
        "the patch was copied"
    );
    assert_eq!(row(&s, "numerics")["status"], "differential_mismatch");
}

/// Says so when valgrind is not installed (this project's machines have it: the `c_kernels`
/// campaign in `.ci/run` counts instructions with it too).
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
fn screening_counts_instructions_with_callgrind_when_enabled() {
    if valgrind_missing() {
        return;
    }
    let fx = Fixture::new();
    let memo = fx.patch(
        "memo.patch",
        &[
            ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
            ("prog.c", "static unsigned long work(", MEMO),
        ],
    );
    let file = campaign(&memo, None, 5).replace(
        r#""search": { "pairs": 5 }"#,
        r#""search": { "pairs": 5, "counters": ["rusage", "callgrind"] }"#,
    );
    write(&fx.camp.join("campaign.json"), &file);
    let out = fx.run(&[]);
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "{}",
        text(&out)
    );
    let s = fx.summary();
    let counts = &row(&s, "memo")["instructions"];
    let (base, cand) = (
        counts["baseline"].as_u64().unwrap(),
        counts["candidate"].as_u64().unwrap(),
    );
    // The memoized loop computes each of 1000 hashes once instead of 100000 times.
    assert!(
        base > 5 * cand && cand > 0,
        "baseline {base}, candidate {cand}"
    );
    assert!(row(&s, "memo")["screening_max_rss_kib"].as_f64().unwrap() > 0.0);
}

/// A candidate that fails only under valgrind (it looks for valgrind's preload library) is
/// rejected for it; the campaign goes on and screens the other candidate.
#[test]
fn a_candidate_failing_only_under_callgrind_is_rejected_and_the_campaign_goes_on() {
    if valgrind_missing() {
        return;
    }
    let fx = Fixture::new();
    // The lane probes gate would refuse it first; allowed, the count's own check must catch it.
    write(
        &fx.camp.join("workload.json"),
        &WORKLOAD.replace(
            r#""protected": ["bench/**"]"#,
            r#""protected": ["bench/**"], "allow_probes": ["LD_PRELOAD", "vgpreload"]"#,
        ),
    );
    let dodge = fx.patch(
        "dodge.patch",
        &[(
            "prog.c",
            "    long n = atol(argv[1]);",
            "    const char *pre = getenv(\"LD_PRELOAD\");\n    if (pre && strstr(pre, \"vgpreload\")) return 1;\n    long n = atol(argv[1]);",
        )],
    );
    let memo = fx.patch("memo.patch", &util::cpairs::MEMO_EDITS);
    let file = campaign(&format!("{dodge}, {memo}"), None, 5).replace(
        r#""search": { "pairs": 5 }"#,
        r#""search": { "pairs": 5, "counters": ["rusage", "callgrind"] }"#,
    );
    write(&fx.camp.join("campaign.json"), &file);
    let out = fx.run(&[]);
    assert!(
        matches!(out.status.code(), Some(0) | Some(3) | Some(4)),
        "{}",
        text(&out)
    );
    let s = fx.summary();
    let dodge = row(&s, "dodge");
    assert_eq!(dodge["status"], "rejected", "{}", text(&out));
    assert!(
        dodge["reason"]
            .as_str()
            .unwrap()
            .contains("under callgrind"),
        "{dodge:#}"
    );
    assert!(
        row(&s, "memo")["instructions"]["candidate"]
            .as_u64()
            .is_some(),
        "{s:#}"
    );
}

#[test]
fn a_candidate_tuned_to_the_search_seed_no_longer_wins_the_search() {
    // Answers the benchmark's known input (search seed 1, which every agent's brief shows) from a
    // table. Screening times every pair on a fresh seed, as confirmation does, so the table is
    // never consulted: the candidate screens as the baseline and never looks like the best.
    // (With the search seed in the timed runs it screened at more than 3×.)
    let fx = Fixture::new();
    let memo = fx.patch(
        "seed-memo.patch",
        &[(
            "prog.c",
            "    unsigned long long seed = strtoull(argv[2], NULL, 10);\n",
            "    unsigned long long seed = strtoull(argv[2], NULL, 10);\n    if (n == 100000 && seed == 1) {\n        puts(\"n=100000 seed=1 total=3271134779\");\n        return 0;\n    }\n",
        )],
    );
    write(&fx.camp.join("campaign.json"), &campaign(&memo, None, 5));
    let out = fx.run(&[]);
    let s = fx.summary();
    let r = row(&s, "seed-memo");
    assert!(
        r["screening_median"].as_f64().unwrap() < 1.5,
        "{r:#}\n{}",
        text(&out)
    );
    assert_ne!(r["confirmation_verdict"], "accepted", "{r:#}");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_confirmation_cut_short_is_accounted_for_and_redone_on_resume() {
    let fx = Fixture::new();
    let memo = fx.patch(
        "memo.patch",
        &[
            ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
            ("prog.c", "static unsigned long work(", MEMO),
        ],
    );
    write(&fx.camp.join("campaign.json"), &campaign(&memo, None, 5));
    fx.kill_when("confirmation never started", |journal| {
        // Let it get into its builds and runs, then cut it short.
        journal.contains("\"confirmation_started\"").then(|| {
            std::thread::sleep(Duration::from_millis(1500));
        })
    });
    let out = fx.run(&["--resume", "latest"]);
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "{}",
        text(&out)
    );
    let entries = journal(&fx.run_dir());
    let discarded: Vec<&Value> = entries
        .iter()
        .filter(|e| e["entry"] == "confirmation_discarded")
        .collect();
    assert_eq!(discarded.len(), 1, "{entries:#?}");
    let dirs = discarded[0]["run_dirs"].as_array().unwrap();
    assert_eq!(dirs.len(), 1, "{discarded:#?}");
    let finished = entries
        .iter()
        .filter(|e| e["entry"] == "confirmation")
        .count();
    assert_eq!(finished, 1);
    let pairs = entries
        .iter()
        .filter(|e| e["entry"] == "screening_pair")
        .count();
    assert_eq!(pairs, 5, "screening was repeated");
    let s = fx.summary();
    assert_eq!(
        row(&s, "memo")["discarded_confirmations"],
        serde_json::json!(dirs)
    );
}
