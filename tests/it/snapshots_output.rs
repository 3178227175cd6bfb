//! What a person and a machine see, as snapshots (`tests/it/snapshots/`): the terminal summary of
//! a confirmation, and the whole of a real `evo confirm` run — its progress lines, its terminal
//! text and its `--json` stream — with what changes from run to run redacted (times, durations,
//! run ids, digests, temporary paths) and what depends on the machine left out (the sandbox's
//! version, the load warning). A change to any of them shows as a snapshot diff to
//! review, where a `contains` check would let it through.

use crate::util;
use crate::util::synthetic::hostile_result;

use std::path::Path;

use serde_json::Value;
use util::{evo, patch_by_editing, write};

/// `text` with `dir` named `[dir]`, and each run of 12 or more hexadecimal characters holding a
/// digit (commits, digests, key ids) named `[hex]`.
fn redact_text(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "[dir]");
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 12 && run.chars().any(|c| c.is_ascii_digit()) {
            out.push_str("[hex]");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() && !c.is_ascii_uppercase() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    redact_durations(&redact_run_ids(&out))
}

/// `text` with each duration (a number followed by ` s`, ` ms` or ` min` and then a space or a
/// punctuation mark) named `[dur]`: how long builds and runs took is not what is checked.
fn redact_durations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let starts_number = c.is_ascii_digit()
            && !out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '.' || p == '-');
        if starts_number {
            let after = &rest[number_len..];
            let unit = [" s", " ms", " min"]
                .into_iter()
                .find(|u| after.starts_with(u))
                .filter(|u| {
                    let next = after[u.len()..].chars().next();
                    next.is_none_or(|n| n.is_whitespace() || ",.;:)".contains(n))
                });
            if let Some(u) = unit {
                out.push_str("[dur]");
                rest = &after[u.len()..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `text` with each run id (`20261203T170241Z-…` up to the next space, quote or slash) named
/// `[run]`.
fn redact_run_ids(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let stamp = bytes.len() >= i + 16
            && bytes[i..i + 8].iter().all(u8::is_ascii_digit)
            && bytes[i + 8] == b'T'
            && bytes[i + 9..i + 15].iter().all(u8::is_ascii_digit)
            && bytes[i + 15] == b'Z';
        if stamp {
            let end = (i..bytes.len())
                .find(|&j| matches!(bytes[j], b' ' | b'"' | b'/' | b'\n' | b')'))
                .unwrap_or(bytes.len());
            out.push_str("[run]");
            i = end;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// An event with its clock and durations redacted and its strings as [`redact_text`] leaves them.
fn redact_event(v: &Value, dir: &Path) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let timed = k == "time" || k.ends_with("_s") || k == "seconds";
                    let v = if timed && !v.is_null() {
                        Value::String(format!("[{k}]"))
                    } else {
                        redact_event(v, dir)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_event(v, dir)).collect()),
        Value::String(s) => Value::String(redact_text(s, dir)),
        other => other.clone(),
    }
}

#[test]
fn the_terminal_summary_of_a_confirmation_plain_and_verbose() {
    let r = hostile_result("plain", false);
    let run = Path::new("/run");
    insta::assert_snapshot!(
        "confirm_summary",
        evo::report::terminal::render_confirm(&r, run, false)
    );
    insta::assert_snapshot!(
        "confirm_summary_verbose",
        evo::report::terminal::render_confirm(&r, run, true)
    );
}

/// `evo ARGS` in `dir`, with its own key folder there and no colour.
fn evo_in(dir: &Path, args: &[&std::ffi::OsStr]) -> std::process::Command {
    let mut c = evo();
    c.current_dir(dir)
        .env("EVO_KEY_DIR", dir.join("keys"))
        .env("NO_COLOR", "1")
        .args(args);
    c
}

/// What a terminal shows of `out`, redacted; what depends on the machine, not on evo (the
/// sandbox's version, the load other work puts on it), is left out.
fn terminal(out: &std::process::Output, dir: &Path) -> String {
    let lines = |b: &[u8]| -> String {
        (String::from_utf8_lossy(b).lines())
            .filter(|l| !l.starts_with("warning: other work competes"))
            .map(|l| match l.strip_prefix("sandbox:") {
                Some(_) => "sandbox:   [sandbox]\n".to_string(),
                None => format!("{l}\n"),
            })
            .collect()
    };
    let text = format!(
        "--- stdout\n{}--- stderr\n{}",
        lines(&out.stdout),
        lines(&out.stderr)
    );
    redact_text(&text, dir)
}

/// The `--json` stream of `out`, one redacted event a line.
fn json_stream(out: &std::process::Output, dir: &Path) -> String {
    let events: Vec<String> = (util::schema::events(out).iter())
        .map(|e| redact_event(e, dir).to_string())
        .collect();
    events.join("\n")
}

/// A confirmation decided before anything runs (a protected file changed), so the same every
/// time: what it prints on the terminal, and its `--json` stream.
#[test]
fn a_confirmation_stopped_by_patch_safety_on_the_terminal_and_as_json() {
    let dir = util::cpairs::campaign("snap", "");
    let repo = dir.path().join("repo");
    let diff = patch_by_editing(
        &repo,
        &[("bench/run.sh", "exec ./prog", "exec nice ./prog")],
    );
    let patch = dir.path().join("camp/harness.patch");
    write(&patch, &diff);
    let campaign = dir.path().join("camp/campaign.json");
    let args = [
        "confirm".as_ref(),
        patch.as_os_str(),
        "--campaign".as_ref(),
        campaign.as_os_str(),
    ];
    let out = evo_in(dir.path(), &args).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", util::text(&out));
    insta::assert_snapshot!("confirm_patch_safety_terminal", terminal(&out, dir.path()));
    let out = evo_in(dir.path(), &args).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", util::text(&out));
    insta::assert_snapshot!("confirm_patch_safety_json", json_stream(&out, dir.path()));
}

/// A campaign whose candidates all end before any timing — one changes a protected file, one
/// only a comment — so its plan, progress, table and stream are the same every time.
#[test]
fn a_campaign_that_times_nothing_on_the_terminal_and_as_json() {
    let dir = util::cpairs::campaign(
        "snap",
        r#", "candidates": [{ "name": "harness", "patch": "harness.patch" },
                             { "name": "comment", "patch": "comment.patch" }]"#,
    );
    let repo = dir.path().join("repo");
    let harness = patch_by_editing(
        &repo,
        &[("bench/run.sh", "exec ./prog", "exec nice ./prog")],
    );
    write(&dir.path().join("camp/harness.patch"), &harness);
    let comment = patch_by_editing(
        &repo,
        &[(
            "prog.c",
            "static unsigned long work(",
            "/* the hot loop */\nstatic unsigned long work(",
        )],
    );
    write(&dir.path().join("camp/comment.patch"), &comment);
    let campaign = dir.path().join("camp/campaign.json");
    let args = ["campaign".as_ref(), "run".as_ref(), campaign.as_os_str()];
    let out = evo_in(dir.path(), &args).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", util::text(&out));
    insta::assert_snapshot!(
        "campaign_nothing_timed_terminal",
        terminal(&out, dir.path())
    );
    let out = evo_in(dir.path(), &args).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", util::text(&out));
    insta::assert_snapshot!("campaign_nothing_timed_json", json_stream(&out, dir.path()));
}
