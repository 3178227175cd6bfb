//! The tiny `make`-built campaign the fake-runner tests share: one training scenario, one holdout,
//! the program's behaviour decided by the fake runner.

/// One training scenario `main`; `bench/**` protected.
pub const WORKLOAD: &str = r#"{
  "name": "tiny",
  "build": { "command": "make prog" },
  "test": { "command": "make test" },
  "scenarios": [
    { "name": "main", "role": "training", "run": "./prog run {seed}",
      "check": "./prog check {seed}", "compare": "exact", "deterministic_output": true }
  ],
  "protected": ["bench/**"]
}"#;

/// One sealed holdout, `other`.
pub const HOLDOUTS: &str = r#"{ "scenarios": [
  { "name": "other", "role": "holdout", "run": "./prog holdout {seed}",
    "check": "./prog check {seed}", "compare": "exact", "deterministic_output": true }
] }"#;

/// A git repository at `repo` with the tiny program (`prog.sh`, printing `slow`, and its
/// `Makefile`), the `extra` files, and one commit, `baseline`.
pub fn repo(repo: &std::path::Path, extra: &[(&str, &str)]) {
    super::write(&repo.join("prog.sh"), "#!/bin/sh\necho slow\n");
    super::write(&repo.join("Makefile"), "prog:\n\tcp prog.sh prog\n");
    for (path, text) in extra {
        super::write(&repo.join(path), text);
    }
    super::git(repo, &["init", "-q"]);
    super::git(repo, &["add", "-A"]);
    super::git(repo, &["commit", "-q", "-m", "baseline"]);
}
