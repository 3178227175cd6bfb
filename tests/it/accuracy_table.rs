//! The accuracy table (issue 45, docs/accuracy.md): the corpus is measured by hand, since it
//! needs its projects' sources; CI checks that the manifest (validation/cases.json), the rows
//! (validation/accuracy.json) and the document agree, through `scripts/render-accuracy --check`.

use std::path::Path;
use std::process::Command;

use crate::util::write;

fn check(root: Option<&Path>) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/render-accuracy");
    let mut command = Command::new("python3");
    command.arg(script).arg("--check");
    if let Some(root) = root {
        command.env("EVO_ACCURACY_ROOT", root);
    }
    command.output().unwrap()
}

#[test]
fn the_committed_manifest_rows_and_document_agree() {
    let out = check(None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The check can fail, and says why: a row of a case the manifest lacks, an undecided verdict
/// without a written cause, a document that is not what the rows render to.
#[test]
fn the_check_names_a_stray_row_a_missing_cause_and_a_stale_document() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(&root.join("c.json"), "{}");
    write(&root.join("p.patch"), "");
    let case = r#"{"project": "p", "language": "C", "source_url": "u", "mirror_env": null,
        "kind": "speedup", "name": "fast", "campaign": "c.json", "baseline": "b",
        "patch": "p.patch", "commit": null, "claim": null}"#;
    write(
        &root.join("validation/cases.json"),
        &format!(r#"{{"cases": [{case}]}}"#),
    );
    let row = |case: &str| {
        format!(
            r#"{{"project": "p", "case": "{case}", "kind": "speedup", "commit": null, "baseline": "b",
            "truth": {{"wall": {{"ratio_of_means": 1.1, "ci95": [1.05, 1.15], "call": "faster"}}}},
            "evo": {{"verdict": "inconclusive", "tier": "none", "median": 1.08,
                     "interval": [0.99, 1.2], "pairs": 60, "minutes": 3.0, "budget": "default",
                     "measured_at": "2026-12-05T08:00:00Z", "loadavg_start": [0.1, 0.1, 0.1],
                     "machine": {{"cpus": 2}}}}}}"#
        )
    };
    write(
        &root.join("validation/accuracy.json"),
        &format!(r#"{{"rows": [{}, {}]}}"#, row("fast"), row("other")),
    );
    let out = check(Some(root));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("row p/other: no such case"), "{said}");
    assert!(
        said.contains("row p/fast (undecided): no written cause"),
        "{said}"
    );
    assert!(said.contains("is not what the rows render to"), "{said}");
}
