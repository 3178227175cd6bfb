//! The JSON Schemas `evo schema KIND` publishes, as validators of real outputs: the `--json`
//! event stream and the files machines read.

use std::process::Output;

use serde_json::Value;

use super::{evo, text};

/// A validator for `evo schema KIND`, checked to refuse a document that is plainly wrong.
pub fn validator(kind: &str) -> jsonschema::Validator {
    let out = evo().args(["schema", kind]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    let validator = jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("the {kind} schema does not compile: {e}"));
    let wrong = serde_json::json!({ "schema": "evo-events/1", "event": "run", "run_id": 7 });
    assert!(
        !validator.is_valid(&wrong),
        "the {kind} schema accepts anything"
    );
    validator
}

/// Panics with every error when `doc` does not match.
pub fn check(validator: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match its schema: {errors:#?}"
    );
}

/// The stdout lines of `out`, each parsed and checked against the events schema.
pub fn events(out: &Output) -> Vec<Value> {
    let validator = validator("events");
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(!stdout.is_empty(), "no event at all\n{}", text(out));
    stdout
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout holds a line that is not JSON ({e}): {line}"));
            check(&validator, &v, line);
            assert_eq!(v["schema"], "evo-events/1", "{line}");
            v
        })
        .collect()
}
