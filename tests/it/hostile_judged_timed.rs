//! What is judged is what is timed (issue #42): a candidate that knows where it is judged gains
//! nothing by behaving otherwise there. One test per class, each with a cheat written for it:
//!
//! - holdouts something readable names (the baseline's tree, the brief) are not sealed: recorded,
//!   warned about, and the tier cannot be `tested`;
//! - undefined behaviour on a path only the timed inputs take is found by the sanitizer lane,
//!   which runs each training scenario's timed command;
//! - a count of a command no timed run executes cannot vouch for a gain, and counted runs that
//!   compute otherwise than the timed ones reject;
//! - a workload declared `single_threaded` rejects a candidate whose timed runs use a second CPU.
//!
//! Each defence, switched off, lets its cheat through: the test says which assertion then fails.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use evo::exit_codes::REJECTED;
use util::cpairs::{HOT_LINE, MEMO_EDITS};
use util::{evo, fixture_repo, git, patch_by_editing, text, write};

/// The cpairs fixture's workload: a training scenario timed at n = 40000 and checked at n = 500,
/// outputs exact, with a sanitizer lane built by the workload's own command.
const WORKLOAD: &str = r#"{
  "name": "cpairs-timed",
  "build": { "command": "make -s", "artifacts": ["prog"], "timeout_s": 60 },
  "test": { "command": "./prog --selftest", "timeout_s": 10 },
  "scenarios": [
    { "name": "sum-40k", "role": "training",
      "run": "./bench/run.sh 40000 {seed}", "check": "./bench/run.sh 500 {seed}",
      "compare": "exact", "deterministic_output": true, "timeout_s": 20 }
  ],
  "sanitize": { "build": "cc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o prog prog.c", "timeout_s": 60 },
  "protected": ["bench/**", "evo/**"]
}"#;

const HOLDOUTS: &str = r#"{ "scenarios": [
  { "name": "sealed-a", "role": "holdout", "run": "./bench/run.sh 17321 {seed}",
    "check": "./bench/run.sh 311 {seed}", "compare": "exact", "deterministic_output": true,
    "timeout_s": 20 }
] }"#;

const CAMPAIGN: &str = r#"{
  "name": "cpairs-timed",
  "repo": "../repo",
  "baseline": "main",
  "workload": "../repo/evo/workload.json",
  "holdouts": "holdouts.json",
  "confirm": { "pairs": 9, "aa_pairs": 11, "max_pairs": 9, "min_effect": 0.01 },
  "output": "receipts"
}"#;

struct Fixture {
    dir: tempfile::TempDir,
    repo: PathBuf,
    camp: PathBuf,
}

impl Fixture {
    /// The cpairs repository with `workload` committed as `evo/workload.json` and `extra` files
    /// (path, text) committed beside it; the campaign (`campaign`) and the holdouts outside it.
    fn new(workload: &str, campaign: &str, extra: &[(&str, &str)]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fixture_repo("cpairs", &repo);
        write(&repo.join("evo/workload.json"), workload);
        for (path, content) in extra {
            write(&repo.join(path), content);
        }
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "workload"]);
        let camp = dir.path().join("camp");
        write(&camp.join("holdouts.json"), HOLDOUTS);
        write(&camp.join("campaign.json"), campaign);
        Fixture { dir, repo, camp }
    }

    fn patch(&self, name: &str, edits: &[(&str, &str, &str)]) -> PathBuf {
        let path = self.camp.join(name);
        write(&path, &patch_by_editing(&self.repo, edits));
        path
    }

    /// `evo confirm` of `patch`: its output and `result.json`.
    fn confirm(&self, patch: &Path) -> (Output, Value) {
        let out = evo()
            .arg("confirm")
            .arg(patch)
            .arg("--campaign")
            .arg(self.camp.join("campaign.json"))
            .arg("--work-dir")
            .arg(self.dir.path().join("work"))
            .output()
            .unwrap();
        let (_, result) = util::first_result(&self.camp)
            .unwrap_or_else(|| panic!("no result.json\n{}", text(&out)));
        (out, result)
    }
}

fn reasons(r: &Value) -> String {
    (r["reasons"].as_array().unwrap().iter())
        .map(|x| x.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn gate<'a>(r: &'a Value, name: &str) -> &'a Value {
    (r["gates"].as_array().unwrap().iter())
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no gate `{name}` in {:#}", r["gates"]))
}

/// A patch that does not compile: the confirmation stops at its build, after the trees were
/// prepared (where the holdouts are looked for).
const BROKEN: [(&str, &str, &str); 1] = [("prog.c", HOT_LINE, "        total += nope(v);")];

/// The review's first cheat needs a holdout it can read: a README of the baseline naming the
/// holdout's arguments. Defence off (no search of the tree): `unsealed_holdouts` is empty and
/// nothing is printed, which the first assertions catch.
#[test]
fn a_holdout_the_baseline_tree_names_is_not_sealed_and_the_run_says_where() {
    let readme = "# cpairs\n\nOther sizes, as the holdouts use:\n\n    ./bench/run.sh 17321 7\n";
    let f = Fixture::new(WORKLOAD, CAMPAIGN, &[("README.md", readme)]);
    let (out, r) = f.confirm(&f.patch("broken.patch", &BROKEN));
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(&out));
    let unsealed = r["unsealed_holdouts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        unsealed,
        [serde_json::json!({"scenario": "sealed-a", "place": "README.md:5", "found": "arguments"})],
        "{}",
        text(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("holdout `sealed-a` is not sealed: README.md:5 names its arguments"),
        "{}",
        text(&out)
    );

    // The same tree without the README: nothing is found, so the search is not what fails.
    let f = Fixture::new(WORKLOAD, CAMPAIGN, &[]);
    let (out, r) = f.confirm(&f.patch("broken.patch", &BROKEN));
    assert!(r.get("unsealed_holdouts").is_none(), "{}", text(&out));
}

/// The brief is read by every agent: a holdout it names is not sealed either.
#[test]
fn a_holdout_the_brief_names_is_not_sealed() {
    let campaign = CAMPAIGN.replace(
        r#""confirm":"#,
        r#""brief": { "objective": "Make ./bench/run.sh faster; it must also stay fast at n=17321." },
  "confirm":"#,
    );
    let f = Fixture::new(WORKLOAD, &campaign, &[]);
    let (out, r) = f.confirm(&f.patch("broken.patch", &BROKEN));
    assert_eq!(
        r["unsealed_holdouts"][0]["place"],
        "the campaign's brief:1",
        "{}",
        text(&out)
    );
}

/// The review's second cheat: undefined behaviour on a path only the timed inputs take (n of
/// 10000 or more), so no check command reaches it. Defence off (the sanitizer lane runs the
/// checks only): the `sanitizers` gate passes, which the first assertion catches.
#[test]
fn undefined_behaviour_only_the_timed_inputs_reach_fails_the_sanitizer_lane() {
    let f = Fixture::new(WORKLOAD, CAMPAIGN, &[]);
    let ub = "    if (n >= 10000) {
        volatile int big = 2147483647;
        int wrapped = big + (int)(n % 7) + 1;
        if (wrapped == 42) total++;
    }
    return total;";
    let patch = f.patch("timed_ub.patch", &[("prog.c", "    return total;", ub)]);
    let (out, r) = f.confirm(&patch);
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(&out));
    let detail = gate(&r, "sanitizers")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(gate(&r, "sanitizers")["status"], "failed", "{}", text(&out));
    assert!(detail.contains("sum-40k.timed"), "{detail}");
    assert!(detail.contains("signed integer overflow"), "{detail}");
    // Every check passed: the differential saw nothing, and neither did the checks sanitized.
    assert_eq!(gate(&r, "differential")["status"], "passed");
    assert!(
        r["scenarios"].as_array().unwrap().is_empty(),
        "nothing is timed"
    );
}

/// The review's third cheat counted a command no timed run executes (`count.run` with other
/// arguments): a candidate can tell it apart by its argv. Such a count cannot vouch for a gain:
/// the tier stops at `measured`, with the reason. Defence off: `unverified` is absent and the
/// tier is `tested`, which the assertions catch.
#[test]
fn a_count_of_a_command_no_timed_run_executes_cannot_vouch_for_the_gain() {
    let workload = WORKLOAD.replace(
        r#""timeout_s": 20 }
  ],"#,
        r#""timeout_s": 20,
      "count": { "run": "./bench/run.sh 20000 {seed}", "timeout_s": 120 } }
  ],"#,
    );
    let campaign = CAMPAIGN.replace(
        r#""max_pairs": 9,"#,
        r#""max_pairs": 9, "counters": ["callgrind"],"#,
    );
    let f = Fixture::new(&workload, &campaign, &[]);
    let (out, r) = f.confirm(&f.patch("memo.patch", &MEMO_EDITS));
    let lane = &r["scenarios"][0]["instructions"];
    let why = lane["unverified"]
        .as_str()
        .unwrap_or_else(|| panic!("{lane:#}\n{}", text(&out)));
    assert!(why.contains("none of the timed commands"), "{why}");
    assert_ne!(r["tier"], "tested", "{}", text(&out));
    if r["verdict"] == "accepted" {
        assert!(
            reasons(&r).contains("is not of what is timed"),
            "{}",
            reasons(&r)
        );
    }
}

/// A candidate that computes otherwise when counted (here: it notices valgrind's slowdown with
/// a clock, allowed as a probe so the lane-probes gate does not stop it first) is rejected with
/// both digests. Defence off (a mismatch only drops the count): the verdict is inconclusive,
/// which the first assertion catches.
#[test]
fn counted_runs_that_compute_otherwise_than_the_timed_ones_reject() {
    let workload = util::cpairs::allow_probes(
        &WORKLOAD.replace(
            r#""protected": ["bench/**", "evo/**"]"#,
            r#""protected": ["bench/**"]"#,
        ),
        &["clock_gettime"],
    );
    let campaign = CAMPAIGN.replace(
        r#""max_pairs": 9,"#,
        r#""max_pairs": 9, "counters": ["callgrind"],"#,
    );
    let f = Fixture::new(&workload, &campaign, &[]);
    // Natively the loop takes a few milliseconds; under callgrind, 50 times more.
    let counted = "#include <time.h>
static int counted(void) {
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        volatile unsigned long x = 0;
        for (long i = 0; i < 2000000; i++) x += i;
        clock_gettime(CLOCK_MONOTONIC, &b);
        double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
        if (s < best) best = s;
    }
    return best > 0.03;
}

";
    let memo = format!("{counted}{}", util::cpairs::MEMO);
    let print = "work(n, seed));";
    let patch = f.patch(
        "counted_cheat.patch",
        &[
            MEMO_EDITS[0],
            ("prog.c", "static unsigned long work(", &memo),
            (
                "prog.c",
                print,
                "work(n, seed) + (unsigned long)counted());",
            ),
        ],
    );
    let (out, r) = f.confirm(&patch);
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(&out));
    let mismatch = r["scenarios"][0]["instructions"]["mismatch"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", text(&out)))
        .to_string();
    assert!(
        mismatch.contains("computed otherwise when counted"),
        "{mismatch}"
    );
    assert!(reasons(&r).contains(&mismatch), "{}", reasons(&r));
}

/// The matmul cheat's other half: the same work split over two threads, bit-identical results,
/// where the workload declares one CPU. Whenever the candidate's timed runs used more than one
/// CPU (median above `CPU_LIMIT`), it is rejected saying so; an acceptance is possible only
/// where they did not (the other core busy), and then the second core bought it about nothing.
/// Defence off: on a machine with a free core (share about 1.9) it is accepted, which the
/// assertions catch.
#[test]
fn a_second_core_used_by_a_single_threaded_workload_rejects() {
    let workload = WORKLOAD.replace(
        r#""protected": ["bench/**", "evo/**"]"#,
        r#""protected": ["bench/**", "evo/**"], "single_threaded": true"#,
    );
    let f = Fixture::new(&workload, CAMPAIGN, &[]);
    let threaded = "#include <pthread.h>
struct half { long from, to; unsigned long long seed; unsigned long total; };
static void *half_work(void *p) {
    struct half *h = p;
    unsigned long long s = h->seed * 2654435761ULL + 1;
    for (long i = 0; i < h->from; i++) next_value(&s);
    for (long i = h->from; i < h->to; i++) h->total += slow_hash((unsigned long)(next_value(&s) % 1000));
    return NULL;
}
static unsigned long work_threads(long n, unsigned long long seed) {
    struct half a = {0, n / 2, seed, 0}, b = {n / 2, n, seed, 0};
    pthread_t t;
    pthread_create(&t, NULL, half_work, &b);
    half_work(&a);
    pthread_join(t, NULL);
    return a.total + b.total;
}

int main(";
    let patch = f.patch(
        "threads.patch",
        &[
            ("prog.c", "int main(", threaded),
            ("prog.c", "work(n, seed));", "work_threads(n, seed));"),
        ],
    );
    let (out, r) = f.confirm(&patch);
    let share = |arm: &str| {
        let mut s: Vec<f64> = (r["scenarios"][0]["pairs"].as_array().unwrap().iter())
            .map(|p| {
                let u = &p[arm]["rusage"];
                (u["user_s"].as_f64().unwrap() + u["sys_s"].as_f64().unwrap())
                    / p[arm]["wall_s"].as_f64().unwrap()
            })
            .collect();
        s.sort_by(f64::total_cmp);
        s[s.len() / 2]
    };
    // The gate's own input: where the second core was used, it must reject; where the other
    // core was busy and it was not, the candidate gained about nothing from it.
    let candidate = share("candidate");
    let limit = evo::evidence::verdict::CPU_LIMIT;
    if r["verdict"] == "accepted" {
        assert!(
            candidate <= limit,
            "CPU share {candidate:.3}\n{}",
            text(&out)
        );
    }
    if candidate > limit + 0.02 {
        assert!(
            reasons(&r).contains("used more than one CPU"),
            "CPU share {candidate:.2}\n{}",
            reasons(&r)
        );
        assert_eq!(r["verdict"], "rejected");
    }
}

/// The same rules on a result alone, as `--recompute` applies them: an unsealed holdout caps a
/// `tested` confirmation at `measured`; a second core under `single_threaded` rejects it.
#[test]
fn an_unsealed_holdout_caps_the_tier_and_a_second_core_rejects_on_the_result_alone() {
    use evo::evidence::result::{UnsealedHoldout, Verdict};
    use evo::evidence::verdict::decide_result;
    use evo::stats::Tier;
    let mut e = util::synthetic::plain().evidence;
    let d = decide_result(&e, &e.scenarios);
    assert_eq!(
        (d.verdict, d.tier),
        (Verdict::Accepted, Tier::Tested),
        "{:?}",
        d.reasons
    );
    e.unsealed_holdouts.push(UnsealedHoldout {
        scenario: "held".into(),
        place: "README.md:3".into(),
        found: "arguments".into(),
    });
    let d = decide_result(&e, &e.scenarios);
    assert_eq!(
        (d.verdict, d.tier),
        (Verdict::Accepted, Tier::Measured),
        "{:?}",
        d.reasons
    );
    assert!(
        d.reasons
            .iter()
            .any(|r| r.contains("`held` is not sealed: README.md:3 names its arguments")),
        "{:?}",
        d.reasons
    );
    // Two busy threads in every candidate run of a workload declared single-threaded.
    e.single_threaded = true;
    for p in &mut e.scenarios[0].pairs {
        p.baseline.rusage.user_s = 0.95 * p.baseline.wall_s;
        p.candidate.rusage.user_s = 1.8 * p.candidate.wall_s;
    }
    let d = decide_result(&e, &e.scenarios);
    assert_eq!(
        (d.verdict, d.tier),
        (Verdict::Rejected, Tier::Rejected),
        "{:?}",
        d.reasons
    );
    assert!(
        d.reasons[0].contains("used more than one CPU"),
        "{:?}",
        d.reasons
    );
    // Not declared: the same runs are not judged on their CPUs.
    e.single_threaded = false;
    assert_eq!(decide_result(&e, &e.scenarios).verdict, Verdict::Accepted);
}

/// A signed overflow in the cpairs loop, closing the `#if` a patch opens before it.
const OVERFLOW: &str = "    {
        volatile int big = 2147483647;
        int wrapped = big + (int)(n % 7) + 1;
        if (wrapped == 42) total++;
    }
#endif
    return total;";

/// The workload with its sanitized build made by the project's own `make` through evo's
/// compilers (`sanitize.flags`), the Makefile a configuration file candidates may edit.
fn flags_workload() -> String {
    WORKLOAD.replace(
        r#""sanitize": { "build": "cc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o prog prog.c", "timeout_s": 60 },"#,
        r#""sanitize": { "build": "make -s", "flags": "-g -fsanitize=address,undefined -fno-sanitize-recover=all", "timeout_s": 60 },
  "config_files": ["Makefile"],"#,
    )
}

/// Confirms `patch` and requires it rejected by a failed `sanitizers` gate; returns the gate's
/// detail.
fn sanitizers_fail(f: &Fixture, patch: &Path) -> String {
    let (out, r) = f.confirm(patch);
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(&out));
    let g = gate(&r, "sanitizers");
    assert_eq!(g["status"], "failed", "{}", text(&out));
    g["detail"].as_str().unwrap().to_string()
}

/// Undefined behaviour compiled only under the candidate's own build configuration (a `-D` flag
/// its Makefile adds): a sanitized build of the workload author's own command would not see it.
/// Defence off (the sanitized build is `make` without evo's compilers): no sanitizer runs, the
/// gate passes, which the assertions catch.
#[test]
fn undefined_behaviour_behind_the_candidate_s_own_build_flags_fails_the_sanitizer_lane() {
    let f = Fixture::new(&flags_workload(), CAMPAIGN, &[]);
    let ub = format!("#ifdef FAST\n{OVERFLOW}");
    let patch = f.patch(
        "flag_ub.patch",
        &[
            ("prog.c", "    return total;", ub.as_str()),
            (
                "Makefile",
                "cc -O2 -o prog prog.c",
                "cc -O2 -DFAST -o prog prog.c",
            ),
        ],
    );
    let detail = sanitizers_fail(&f, &patch);
    assert!(detail.contains("signed integer overflow"), "{detail}");
}

/// An opt-out of instrumentation that no patch text shows (an attribute built by token pasting)
/// is found in the preprocessed source, and the sanitized build refuses it. Defence off (no
/// search of the preprocessed text): the function is not instrumented, its overflow is never
/// reported, and the gate passes, which the assertions catch.
#[test]
fn an_opt_out_of_instrumentation_built_by_a_macro_fails_the_sanitized_build() {
    let f = Fixture::new(&flags_workload(), CAMPAIGN, &[]);
    let quiet = "#define PASTE(a, b) a##b
#define QUIET __attribute__((PASTE(no_, sanitize)(\"undefined\")))
QUIET static unsigned long bump(unsigned long total, long n) {
    volatile int big = 2147483647;
    int wrapped = big + (int)(n % 7) + 1;
    return wrapped == 42 ? total + 1 : total;
}

static unsigned long work(";
    let patch = f.patch(
        "quiet.patch",
        &[
            ("prog.c", "static unsigned long work(", quiet),
            ("prog.c", "    return total;", "    return bump(total, n);"),
        ],
    );
    let detail = sanitizers_fail(&f, &patch);
    assert!(detail.contains("turns instrumentation off"), "{detail}");
    assert!(detail.contains("no_sanitize"), "{detail}");
}

/// Code that takes another path where a sanitizer is compiled in: the undefined behaviour is
/// compiled only where `__SANITIZE_ADDRESS__` is not defined (its name split by a line
/// continuation, so no line of the patch shows it to the lane-probes gate). The sanitized build
/// compares each compile's preprocessed text with and without the flags and refuses a file of
/// the patch's that differs. Defence off (no comparison): the sanitized binary never runs the
/// overflow, the gate passes, which the assertions catch.
#[test]
fn code_that_compiles_otherwise_under_the_sanitizer_fails_the_sanitized_build() {
    let f = Fixture::new(&flags_workload(), CAMPAIGN, &[]);
    let ub = format!("#if !defined(__SANI\\\nTIZE_ADDRESS__)\n{OVERFLOW}");
    let patch = f.patch(
        "unsanitized_path.patch",
        &[("prog.c", "    return total;", ub.as_str())],
    );
    let (out, r) = f.confirm(&patch);
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(&out));
    assert_eq!(
        gate(&r, "lane probes")["status"],
        "passed",
        "{}",
        text(&out)
    );
    let g = gate(&r, "sanitizers");
    assert_eq!(g["status"], "failed", "{}", text(&out));
    let detail = g["detail"].as_str().unwrap();
    assert!(
        detail.contains("compiles to other code under the sanitizer"),
        "{detail}"
    );
}

/// The same code compiled under another name: the Makefile compiles a copy of `prog.c` that it
/// writes itself (`fast.c`, in no patch), so a comparison that looked only at the patch's files
/// would not see it. The scripts tell code by its content: `fast.c` holds what no file of the
/// baseline holds. Defence off (files told apart by the patch's names): the copy compiles, the
/// sanitized binary never runs the overflow, the gate passes, which the assertions catch.
#[test]
fn a_copy_of_the_candidate_s_code_under_another_name_fails_the_sanitized_build() {
    let f = Fixture::new(&flags_workload(), CAMPAIGN, &[]);
    let ub = format!("#if !defined(__SANI\\\nTIZE_ADDRESS__)\n{OVERFLOW}");
    let patch = f.patch(
        "copied_path.patch",
        &[
            ("prog.c", "    return total;", ub.as_str()),
            (
                "Makefile",
                "cc -O2 -o prog prog.c",
                "cp prog.c fast.c && cc -O2 -o prog fast.c",
            ),
        ],
    );
    let detail = sanitizers_fail(&f, &patch);
    assert!(
        detail.contains("compiles to other code under the sanitizer") && detail.contains("fast.c"),
        "{detail}"
    );
}

/// A holdout whose name repeats its commands' arguments is warned of where it is timed, naming
/// every argument it repeats, and not on a run that stops before any holdout runs (a warning on
/// every run teaches users to skip it). Off (the warning back in the differential): both runs
/// warn, the timed one twice, which the assertions catch.
#[test]
fn a_revealing_holdout_name_is_warned_of_only_where_the_holdout_is_timed() {
    let f = Fixture::new(WORKLOAD, CAMPAIGN, &[]);
    write(
        &f.camp.join("holdouts.json"),
        &HOLDOUTS.replace(r#""name": "sealed-a""#, r#""name": "sealed-17321-311""#),
    );
    let warnings = |r: &Value| -> Vec<String> {
        (r["warnings"].as_array().cloned().unwrap_or_default())
            .iter()
            .filter_map(|w| w.as_str().map(str::to_string))
            .filter(|w| w.contains("holdout `sealed-17321-311`"))
            .collect()
    };
    let (out, timed) = f.confirm(&f.patch("memo.patch", &MEMO_EDITS));
    let held = warnings(&timed);
    assert_eq!(held.len(), 1, "{}", text(&out));
    assert!(
        held[0].contains("its name repeats `17321`, `311` (arguments of its commands)"),
        "{held:?}"
    );
    std::fs::remove_dir_all(f.camp.join("receipts")).unwrap();
    let wrong = f.patch(
        "wrong.patch",
        &[("prog.c", "    return total;", "    return total ^ 1;")],
    );
    let (out, stopped) = f.confirm(&wrong);
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(&out));
    assert_eq!(gate(&stopped, "differential")["status"], "failed");
    assert_eq!(warnings(&stopped), Vec::<String>::new(), "{}", text(&out));
}

/// The real `cc` by its absolute path, as a build that goes around evo's compilers calls it.
fn real_cc() -> PathBuf {
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v cc"])
        .output()
        .unwrap()
        .stdout;
    std::fs::canonicalize(String::from_utf8(found).unwrap().trim()).unwrap()
}

/// A build that goes around evo's compilers: the Makefile calls the compiler by its absolute
/// path, so nothing is appended, and the sanitized binary is built without instrumentation while
/// its overflow runs on every input. The artifact's debug information says how each function was
/// compiled, and none of its own was. Defence off (no reading of the artifact): no sanitizer runs, the
/// gate passes, which the assertions catch.
#[test]
fn a_build_that_calls_the_compiler_by_its_absolute_path_fails_the_sanitizer_lane() {
    let f = Fixture::new(&flags_workload(), CAMPAIGN, &[]);
    let real = real_cc();
    let ub = format!("#if 1\n{OVERFLOW}");
    let around = format!("{} -O2 -o prog prog.c", real.display());
    let patch = f.patch(
        "around.patch",
        &[
            ("prog.c", "    return total;", ub.as_str()),
            ("Makefile", "cc -O2 -o prog prog.c", around.as_str()),
        ],
    );
    let detail = sanitizers_fail(&f, &patch);
    assert!(detail.contains("went around them"), "{detail}");
    assert!(detail.contains("`main`"), "{detail}");
}

/// The same build around evo's compilers, with the artifact a script that starts the program
/// compiled by absolute path: the script has no debug information to read. Where the baseline's
/// artifact is a program and the candidate's is not, the gate fails. Defence off (a file that is
/// not a program says nothing): the gate passes, which the assertions catch.
#[test]
fn an_artifact_that_is_a_script_starting_an_unchecked_program_fails_the_sanitizer_lane() {
    let f = Fixture::new(&flags_workload(), CAMPAIGN, &[]);
    let real = real_cc();
    let ub = format!("#if 1\n{OVERFLOW}");
    let wrapped = format!(
        "{} -O2 -o prog.real prog.c && printf '#!/bin/sh\\nexec \"$$(dirname \"$$0\")/prog.real\" \"$$@\"\\n' > prog && chmod +x prog",
        real.display()
    );
    let patch = f.patch(
        "wrapped.patch",
        &[
            ("prog.c", "    return total;", ub.as_str()),
            ("Makefile", "cc -O2 -o prog prog.c", wrapped.as_str()),
        ],
    );
    let detail = sanitizers_fail(&f, &patch);
    assert!(
        detail.contains("not a program where the baseline's is"),
        "{detail}"
    );
}

/// What a scenario whose replay cannot show must get: `detectable` false, a tier below
/// `tested`, and, when accepted, the reason saying why.
fn replay_undetectable_caps_the_tier(r: &Value, out: &Output) {
    assert_eq!(r["scenarios"][0]["replay"]["detectable"], false);
    assert_ne!(r["tier"], "tested", "{}", text(out));
    if r["verdict"] == "accepted" {
        assert!(
            reasons(r).contains("does not show that each pass did its own work"),
            "{}",
            reasons(r)
        );
    }
}

/// Replay within a run: a timed command that repeats the same unit of work, each pass printing
/// the same line (the harness runs the benchmark twice on one seed), lets a candidate skip the
/// second pass whose inputs equal the first's. evo sees the repeat in the baseline's timed
/// output, says replay cannot be detected, and the tier cannot be `tested`. Defence off (no
/// search for repeats): `replay.repeated` is absent, which the first assertion catches.
#[test]
fn a_timed_output_that_prints_the_same_work_twice_caps_the_tier() {
    let workload = WORKLOAD.replace(
        r#""run": "./bench/run.sh 40000 {seed}""#,
        r#""run": "./bench/run.sh 40000 {seed} && ./bench/run.sh 40000 {seed}""#,
    );
    let f = Fixture::new(&workload, CAMPAIGN, &[]);
    let (out, r) = f.confirm(&f.patch("memo.patch", &MEMO_EDITS));
    let replay = &r["scenarios"][0]["replay"];
    assert_eq!(
        replay["repeated"],
        "lines 1–1 and 2–2 are the same, back to back",
        "{replay:#}\n{}",
        text(&out)
    );
    replay_undetectable_caps_the_tier(&r, &out);
}

/// Replay within a run that nothing prints back to back: a harness that runs the same pass
/// twice and prints, per pass, a digest line and a line that differs ("pass 1 of 2 complete").
/// The workload declares its digest line (`iteration_digest`), so evo sees two passes that
/// computed the same thing, says replay cannot be detected and caps the tier. Defence off (the
/// declared digests not read): `replay.repeated` is absent, which the first assertion catches.
#[test]
fn a_declared_iteration_digest_that_repeats_caps_the_tier() {
    let workload = WORKLOAD.replace(
        r#""run": "./bench/run.sh 40000 {seed}", "check""#,
        r#""run": "for i in 1 2; do echo \"digest $(./bench/run.sh 40000 {seed})\"; echo \"pass $i of 2 complete\"; done",
      "iteration_digest": "digest ", "check""#,
    );
    let f = Fixture::new(&workload, CAMPAIGN, &[]);
    let (out, r) = f.confirm(&f.patch("memo.patch", &MEMO_EDITS));
    let replay = &r["scenarios"][0]["replay"];
    let repeated = replay["repeated"].as_str().unwrap_or_default();
    assert!(
        repeated.starts_with("lines 1 and 3 carry the same iteration digest `digest "),
        "{replay:#}\n{}",
        text(&out)
    );
    replay_undetectable_caps_the_tier(&r, &out);
}

/// A declared `iteration_digest` that is empty would make every line a digest: the workload is
/// refused before anything runs, naming the field.
#[test]
fn an_empty_iteration_digest_is_refused_naming_the_field() {
    let workload = WORKLOAD.replace(
        r#""deterministic_output": true, "timeout_s": 20 }"#,
        r#""deterministic_output": true, "timeout_s": 20, "iteration_digest": " " }"#,
    );
    let f = Fixture::new(&workload, CAMPAIGN, &[]);
    let out = evo()
        .arg("confirm")
        .arg(f.patch("memo.patch", &MEMO_EDITS))
        .arg("--campaign")
        .arg(f.camp.join("campaign.json"))
        .arg("--work-dir")
        .arg(f.dir.path().join("work"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("scenarios[0].iteration_digest"),
        "{}",
        text(&out)
    );
}

/// A candidate right only where the fixed checks and the timed runs look (n = 500 and n =
/// 40000) and wrong everywhere else is caught by the checks on inputs drawn for the
/// confirmation (`draw`). Defence off (no drawn checks): the differential passes, which the
/// assertions catch.
#[test]
fn a_candidate_right_only_where_the_fixed_checks_look_is_caught_on_drawn_inputs() {
    let workload = WORKLOAD.replace(
        r#""compare": "exact", "deterministic_output": true, "timeout_s": 20 }"#,
        r#""compare": "exact", "deterministic_output": true, "timeout_s": 20,
      "draw": { "check": "./bench/run.sh {n} {seed}", "count": 3,
                "vars": { "n": { "min": 600, "max": 30000, "step": 7 } } } }"#,
    );
    let f = Fixture::new(&workload, CAMPAIGN, &[]);
    let patch = f.patch(
        "looked_at.patch",
        &[(
            "prog.c",
            "    return total;",
            "    if (n != 500 && n != 40000 && n != 17321 && n != 311) total ^= 1;\n    return total;",
        )],
    );
    let (out, r) = f.confirm(&patch);
    assert_eq!(out.status.code(), Some(REJECTED), "{}", text(&out));
    let g = gate(&r, "differential");
    assert_eq!(g["status"], "failed", "{}", text(&out));
    assert!(
        g["detail"]
            .as_str()
            .unwrap()
            .contains("scenario `sum-40k.drawn-1`"),
        "{g:#}"
    );
    // The drawn commands follow from the recorded seed: anyone can run them again.
    let seed = r["seed"].as_u64().unwrap();
    let drawn: Vec<&str> = (r["steps"].as_array().unwrap().iter())
        .filter(|s| s["tree"] == "baseline" && s["step"].as_str().unwrap().contains(".drawn-"))
        .map(|s| s["command"].as_str().unwrap())
        .collect();
    assert_eq!(drawn.len(), 3, "{drawn:?}");
    assert!(
        drawn.iter().all(|c| c.ends_with(&format!(" {seed}"))),
        "{drawn:?}"
    );
}

/// A holdout whose inputs are drawn for each confirmation (`inputs`) has no fixed shape a
/// candidate could special-case: its commands are filled from the holdouts' own seed, which the
/// result records (and the receipt seals), so the key holder can re-derive them. Defence off
/// (the holdout run as written): the check's command keeps its `{m}`, which the assertions catch.
#[test]
fn a_holdout_s_inputs_are_drawn_per_confirmation_from_its_own_seed() {
    let holdouts = r#"{ "scenarios": [
  { "name": "sealed-a", "role": "holdout", "run": "./bench/run.sh {n} {seed}",
    "check": "./bench/run.sh {m} {seed}", "compare": "exact", "deterministic_output": true,
    "inputs": { "n": { "min": 12000, "max": 20000 }, "m": { "min": 200, "max": 400, "step": 2 } },
    "timeout_s": 20 }
] }"#;
    let f = Fixture::new(WORKLOAD, CAMPAIGN, &[]);
    write(&f.camp.join("holdouts.json"), holdouts);
    let (out, r) = f.confirm(&f.patch("memo.patch", &MEMO_EDITS));
    let seed = r["holdout_seed"]
        .as_u64()
        .unwrap_or_else(|| panic!("{}", text(&out)));
    assert_ne!(seed, r["seed"].as_u64().unwrap());
    let spec: evo::spec::workload::Holdouts = serde_json::from_str(holdouts).unwrap();
    let values = evo::check::draw::values(&spec.scenarios[0].inputs, seed, 0);
    assert!(
        (12000..=20000).contains(&values["n"]) && values["m"] % 2 == 0,
        "{values:?}"
    );
    let checked: Vec<&str> = (r["steps"].as_array().unwrap().iter())
        .filter(|s| s["step"] == "check-sealed-a")
        .map(|s| s["command"].as_str().unwrap())
        .collect();
    // Both trees of the differential and of the sanitizer lane.
    assert_eq!(checked.len(), 4, "{checked:?}\n{}", text(&out));
    let expected = format!("./bench/run.sh {} {seed}", values["m"]);
    assert!(
        checked.iter().all(|c| *c == expected),
        "{checked:?} vs {expected}"
    );
    // Where the holdout was timed, it ran the drawn `n`.
    if let Some(h) = (r["scenarios"].as_array().unwrap().iter()).find(|s| s["role"] == "holdout") {
        let run = format!("./bench/run.sh {} {{seed}}", values["n"]);
        assert_eq!(h["baseline_command"], run.as_str());
    }
}

/// A holdout file whose commands name a placeholder its `inputs` do not fill is refused before
/// anything runs, and so is `inputs` on a training scenario.
#[test]
fn inputs_that_cannot_fill_the_commands_are_refused_at_plan_time() {
    let bad = r#"{ "scenarios": [
  { "name": "sealed-a", "role": "holdout", "run": "./bench/run.sh {n} {seed}",
    "check": "./bench/run.sh {k} {seed}", "compare": "exact",
    "inputs": { "n": { "min": 12000, "max": 20000 } } }
] }"#;
    let f = Fixture::new(WORKLOAD, CAMPAIGN, &[]);
    write(&f.camp.join("holdouts.json"), bad);
    let out = evo()
        .arg("confirm")
        .arg(f.patch("memo.patch", &MEMO_EDITS))
        .arg("--campaign")
        .arg(f.camp.join("campaign.json"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(evo::exit_codes::USAGE_ERROR),
        "{}",
        text(&out)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scenarios[0].inputs") && err.contains("`{k}`"),
        "{err}"
    );
}
