//! Edits of the `cpairs` fixture (tests/fixtures/cpairs) shared by the end-to-end tests.

/// The hot line of `prog.c`: every value goes through the slow hash.
pub const HOT_LINE: &str = "        total += slow_hash(v);";

/// A real speedup: memoize the hash of the 1000 possible inputs (insert before `work`).
pub const MEMO: &str = "static unsigned long cached_hash(unsigned long v) {
    static unsigned long cache[1000];
    static int filled[1000];
    if (!filled[v]) {
        cache[v] = slow_hash(v);
        filled[v] = 1;
    }
    return cache[v];
}

static unsigned long work(";

/// The same memo with an off-by-one heap write that only the sanitizer lane sees.
/// The memo speedup as `patch_by_editing` edits of `prog.c`.
pub const MEMO_EDITS: [(&str, &str, &str); 2] = [
    ("prog.c", HOT_LINE, "        total += cached_hash(v);"),
    ("prog.c", "static unsigned long work(", MEMO),
];

pub const MEMO_OOB: &str = "static unsigned long *cache;

static unsigned long cached_hash(unsigned long v) {
    if (!cache) {
        cache = malloc(1000 * sizeof *cache);
        for (int i = 0; i <= 1000; i++) cache[i] = ~0UL;
    }
    if (cache[v] == ~0UL) cache[v] = slow_hash(v);
    return cache[v];
}

static unsigned long work(";

/// A workload for the fixture with a sanitizer lane; the tests that need another shape keep
/// their own.
pub const WORKLOAD: &str = r#"{
  "name": "cpairs",
  "build": { "command": "make -s", "artifacts": ["prog"], "timeout_s": 60 },
  "test": { "command": "./prog --selftest", "timeout_s": 10 },
  "scenarios": [
    { "name": "sum-100k", "role": "training",
      "run": "./bench/run.sh 100000 {seed}", "check": "./bench/run.sh 500 {seed}",
      "compare": "exact", "deterministic_output": true, "timeout_s": 20 }
  ],
  "sanitize": { "build": "cc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o prog prog.c", "timeout_s": 60 },
  "protected": ["bench/**"]
}"#;

/// `workload` (the cpairs one, or a variant) with `allow_probes` set to `names`: for tests whose
/// candidates probe their surroundings on purpose.
#[allow(dead_code)]
pub fn allow_probes(workload: &str, names: &[&str]) -> String {
    let list: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    let old = r#""protected": ["bench/**"]"#;
    assert!(
        workload.contains(old),
        "the workload's protected list moved"
    );
    workload.replacen(
        old,
        &format!(r#"{old}, "allow_probes": [{}]"#, list.join(", ")),
        1,
    )
}

/// One sealed holdout (its name says so, so a test can look for leaks).
pub const HOLDOUTS: &str = r#"{ "scenarios": [
  { "name": "sum-30k-sealed", "role": "holdout", "run": "./bench/run.sh 30000 {seed}",
    "check": "./bench/run.sh 300 {seed}", "compare": "exact", "deterministic_output": true }
] }"#;

/// The cpairs repository (`repo`) and a campaign folder `camp` beside it, its `workload.json`
/// [`WORKLOAD`] and its `campaign.json` named `name` with the `extra` fields, in a new temporary
/// folder.
pub fn campaign(name: &str, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    super::fixture_repo("cpairs", &dir.path().join("repo"));
    let camp = dir.path().join("camp");
    super::write(&camp.join("workload.json"), WORKLOAD);
    super::write(
        &camp.join("campaign.json"),
        &format!(
            r#"{{ "name": "{name}", "repo": "../repo", "baseline": "main",
                 "workload": "workload.json", "output": "receipts"{extra} }}"#
        ),
    );
    dir
}
