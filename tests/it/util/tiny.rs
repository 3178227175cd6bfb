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
