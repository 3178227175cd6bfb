//! Input files: the example files of docs/design.md §2.1 parse, and every kind of mistake is
//! reported at its file, line, column and field.

use std::path::Path;

use evo::spec::workload::{Compare, Role};
use evo::spec::{Campaign, SpecError, Workload, parse_json};

const WORKLOAD: &str = r#"{
  "name": "pairs",
  "build":    { "command": "cc -O2 -o pairs pairs.c", "artifacts": ["pairs"], "timeout_s": 600 },
  "test":     { "command": "./pairs --selftest", "timeout_s": 600 },
  "scenarios": [
    { "name": "pairs-30000", "role": "training",
      "run": "./bench/run.sh 30000 {seed}", "check": "./bench/run.sh 700 {seed}",
      "compare": "exact", "deterministic_output": true, "timeout_s": 120 },
    { "name": "loose", "role": "training", "run": "./a", "check": "./b",
      "compare": { "tolerance": { "abs": 1e-9, "rel": 1e-6 } } }
  ],
  "sanitize": { "build": "cc -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o pairs pairs.c" },
  "overlay":  ["../harness/bench_main.c"],
  "protected": ["bench/**", "tests/**"],
  "config_files": ["Makefile"]
}"#;

const CAMPAIGN: &str = r#"{
  "name": "pairs-speedups",
  "repo": "../target-repo",
  "baseline": "f1e2ace65149",
  "workload": "workload.json",
  "holdouts": "holdouts.json",
  "brief": { "objective": "faster", "bottleneck": "inner loop", "constraints": ["do not change the harness"] },
  "candidates": [ { "name": "tiled", "patch": "tiled.patch" } ],
  "agent": { "command": "my-agent --non-interactive", "count": 3, "timeout_s": 1800 },
  "search":  { "pairs": 5, "counters": ["rusage"] },
  "confirm": { "pairs": 9, "aa_pairs": 11, "top": 1, "min_effect": 0.01 },
  "key": "~/.config/evo/signing.key",
  "output": "receipts"
}"#;

fn invalid<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    text: &str,
) -> (usize, usize, String, String) {
    match parse_json::<T>(Path::new("f.json"), text).unwrap_err() {
        SpecError::Invalid {
            line,
            column,
            field,
            message,
            ..
        } => (line, column, field, message),
        other => panic!("expected an invalid-file error, got {other}"),
    }
}

#[test]
fn the_design_sketches_parse() {
    let w: Workload = parse_json(Path::new("w.json"), WORKLOAD).unwrap();
    assert_eq!(w.scenarios[0].role, Role::Training);
    assert_eq!(w.scenarios[0].compare, Compare::Exact);
    assert!(matches!(w.scenarios[1].compare, Compare::Tolerance(t) if t.rel.get() == 1e-6));
    assert_eq!(w.scenarios[1].timeout_s.get(), 120.0);
    assert_eq!(w.test.command.as_slice(), ["./pairs --selftest"]);
    let c: Campaign = parse_json(Path::new("c.json"), CAMPAIGN).unwrap();
    assert_eq!(c.confirm.pairs.get(), 9);
    assert_eq!(c.agent.unwrap().count.get(), 3);
}

#[test]
fn an_unknown_key_is_named_with_its_position() {
    let text = CAMPAIGN.replace("\"top\": 1", "\"topp\": 1");
    let (line, column, field, message) = invalid::<Campaign>(&text);
    assert_eq!(line, 11);
    assert!(column > 20, "column {column}");
    assert_eq!(field, "confirm.topp");
    assert!(message.contains("unknown field `topp`"), "{message}");
}

#[test]
fn too_few_confirmation_pairs_are_refused_at_the_field() {
    let text = CAMPAIGN.replace("\"pairs\": 9", "\"pairs\": 5");
    let (line, _, field, message) = invalid::<Campaign>(&text);
    assert_eq!((line, field.as_str()), (11, "confirm.pairs"));
    assert!(message.contains("cannot give a 95% interval"), "{message}");
    let zero = CAMPAIGN.replace("\"pairs\": 5", "\"pairs\": 0");
    let (_, _, field, message) = invalid::<Campaign>(&zero);
    assert_eq!(field, "search.pairs");
    assert!(message.contains("from 1 to 10000, got 0"), "{message}");
}

#[test]
fn a_wrong_type_and_a_missing_field_name_the_field() {
    let text = WORKLOAD.replace("\"timeout_s\": 120", "\"timeout_s\": \"long\"");
    let (_, _, field, message) = invalid::<Workload>(&text);
    assert_eq!(field, "scenarios[0].timeout_s");
    assert!(message.contains("invalid type"), "{message}");
    let text = WORKLOAD.replace("\"role\": \"training\",\n", "");
    let (_, _, field, message) = invalid::<Workload>(&text);
    assert_eq!(field, "scenarios[0]");
    assert!(message.contains("missing field `role`"), "{message}");
}

#[test]
fn malformed_json_points_at_the_character() {
    let err = parse_json::<Campaign>(Path::new("dir/c.json"), "{\n  \"name\": \"x\",,\n}")
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("dir/c.json:2:15: "), "{err}");
    let trailing = format!("{CAMPAIGN} extra");
    let (line, _, field, _) = invalid::<Campaign>(&trailing);
    assert_eq!((line, field.as_str()), (14, "."));
}

#[test]
fn schemas_describe_every_file() {
    for (kind, key) in [
        (evo::spec::SchemaKind::Workload, "scenarios"),
        (evo::spec::SchemaKind::Campaign, "baseline"),
        (evo::spec::SchemaKind::Holdouts, "scenarios"),
    ] {
        let schema: serde_json::Value = serde_json::from_str(&evo::spec::schema(kind)).unwrap();
        assert!(
            schema["properties"].get(key).is_some(),
            "{kind:?}: {schema}"
        );
        assert_eq!(schema["additionalProperties"], false, "{kind:?}");
    }
}

#[test]
fn the_sandbox_setting_defaults_to_auto_and_names_a_bad_mode() {
    use evo::spec::modes::SandboxMode;
    let c: Campaign = parse_json(Path::new("c.json"), CAMPAIGN).unwrap();
    assert_eq!(c.sandbox.mode, SandboxMode::Auto);
    assert!(c.sandbox.writable.is_empty());
    let on = CAMPAIGN.replace(
        "\"output\": \"receipts\"",
        "\"sandbox\": { \"mode\": \"on\", \"writable\": [\"~/.cache/x\"] },\n  \"output\": \"receipts\"",
    );
    let c: Campaign = parse_json(Path::new("c.json"), &on).unwrap();
    assert_eq!(c.sandbox.mode, SandboxMode::On);
    assert_eq!(c.sandbox.writable, ["~/.cache/x"]);
    let bad = on.replace("\"mode\": \"on\"", "\"mode\": \"sometimes\"");
    let (_, _, field, message) = invalid::<Campaign>(&bad);
    assert_eq!(field, "sandbox.mode");
    assert!(message.contains("unknown variant `sometimes`"), "{message}");
}

#[test]
fn an_editor_schema_key_is_accepted_and_changes_nothing() {
    let with = |text: &str| text.replacen('{', "{ \"$schema\": \"./campaign.schema.json\",", 1);
    let w: Workload = parse_json(Path::new("w.json"), &with(WORKLOAD)).unwrap();
    let plain: Workload = parse_json(Path::new("w.json"), WORKLOAD).unwrap();
    assert_eq!(
        serde_json::to_value(&w).unwrap(),
        serde_json::to_value(&plain).unwrap()
    );
    let c: Campaign = parse_json(Path::new("c.json"), &with(CAMPAIGN)).unwrap();
    let plain: Campaign = parse_json(Path::new("c.json"), CAMPAIGN).unwrap();
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        serde_json::to_value(&plain).unwrap()
    );
    let holdouts = r#"{ "scenarios": [] }"#;
    let h: evo::spec::Holdouts = parse_json(Path::new("h.json"), &with(holdouts)).unwrap();
    let plain: evo::spec::Holdouts = parse_json(Path::new("h.json"), holdouts).unwrap();
    assert_eq!(
        evo::plan::canonical_digest(&h),
        evo::plan::canonical_digest(&plain)
    );
    // It is still a string, and other unknown keys are still refused.
    let (_, _, field, _) = invalid::<Campaign>(&CAMPAIGN.replacen('{', "{ \"$schema\": 3,", 1));
    assert_eq!(field, "$schema");
    let (_, _, _, message) =
        invalid::<Campaign>(&CAMPAIGN.replacen('{', "{ \"$schemas\": \"x\",", 1));
    assert!(message.contains("unknown field"), "{message}");
}

#[test]
fn a_fleet_section_is_parsed_checked_at_its_line_and_documented_in_the_schema() {
    use evo::spec::fleet::Engine;
    let c: Campaign = parse_json(Path::new("c.json"), CAMPAIGN).unwrap();
    assert_eq!(c.fleet, None, "no section: everything runs here");
    let with = |fleet: &str| CAMPAIGN.replacen("\"output\"", &format!("{fleet},\n  \"output\""), 1);
    let text = with(r#""fleet": { "engine": "slurm", "partition": "cpu", "max_jobs": 8 }"#);
    let c: Campaign = parse_json(Path::new("c.json"), &text).unwrap();
    let fleet = c.fleet.unwrap();
    assert_eq!((fleet.engine, fleet.max_jobs.get()), (Engine::Slurm, 8));
    assert_eq!(fleet.max_requeues, 2);
    let text = with(r#""fleet": { "engine": "slurm", "sbatch_args": ["--export=ALL"] }"#);
    let (line, _, field, message) = invalid::<Campaign>(&text);
    assert_eq!((line, field.as_str()), (13, "fleet"), "{message}");
    assert!(message.contains("evo sets --export itself"), "{message}");
    let text = with(r#""fleet": { "engine": "slurm", "nodes": 4 }"#);
    let (_, _, _, message) = invalid::<Campaign>(&text);
    assert!(message.contains("nodes"), "{message}");

    let schema: serde_json::Value =
        serde_json::from_str(&evo::spec::schema(evo::spec::SchemaKind::Campaign)).unwrap();
    let text = schema.to_string();
    for word in [
        "fleet",
        "max_jobs",
        "sbatch_args",
        "shared_dir",
        "max_requeues",
        "slurm",
    ] {
        assert!(text.contains(word), "{word} in {schema:#}");
    }
}
