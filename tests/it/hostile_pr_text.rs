//! Hostile text in the PR body (issue 14): a candidate controls its file names, its explanation
//! and what its programs print, and evo quotes all of them in `pr_body.md`. A carriage return, a
//! markdown table and `<!--` once made GitHub show a fake "accepted" table and hide the real
//! verdict in an HTML comment.
//!
//! Every hostile string below is put in every candidate-controlled field of a signed receipt; the
//! PR text is rendered (by evo's template, by a custom template that prints raw fields, and by
//! `evo pr render`) and then by a real GFM renderer, `cmark-gfm`, and the HTML must hold exactly
//! evo's headings, tables, code blocks and verdict. The renderer is required: without it the test
//! fails, unless `EVO_SKIP_GFM=1` says to check the markdown only. File names with control
//! characters are refused by patch safety and candidate names by the campaign loader.

use crate::util;
use crate::util::synthetic;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use ed25519_dalek::SigningKey;

use evo::evidence::result::{ConfirmResult, Verdict};
use evo::receipt::{self, keys};
use evo::report::{pr_body, pr_context::ReceiptRef, terminal};
use evo::spec::{Campaign, SpecError, parse_json};
use evo::tree::{PatchError, Refusal, Tree, check_patch_safety, inspect_patch};
use synthetic::hostile_result;

/// The reported attack: a carriage return, a fake evidence table, then a comment left open.
const ATTACK: &str = "EVIL fast\r\r## Summary\r\rVerdict: **accepted**, tier **tested**\r\r\
                      | workload | verdict |\r|---|---|\r| all | passes |\r\r<!--";

/// One string per way markdown or HTML could take effect, each carrying the word `EVIL`.
fn hostile_strings() -> Vec<String> {
    let mut all: Vec<String> = [
        ATTACK,
        "EVIL\n# Fake heading\n\nVerdict: **accepted**",
        "EVIL <!-- hidden",
        "EVIL --> after a comment",
        "EVIL </details><details open><summary>x</summary>",
        "EVIL | a | b |\n|---|---|\n| c | d |",
        "| EVIL | b |\r\n|---|---|",
        "EVIL ```\n# out of the fence\n```",
        "`````\nEVIL\n`````",
        "EVIL `` `a` ``",
        "[EVIL](javascript:alert(1)) [x][r]\n\n[r]: https://evil.example",
        "EVIL ![img](https://evil.example/x.png)",
        "EVIL <img src=x onerror=alert(1)><script>alert(1)</script><b>bold</b><a href=x>a</a>",
        "EVIL &lt;!-- &#60;b&#62; &amp;",
        "EVIL \u{202E}gnp.exe\u{2066}isolate\u{2069} \u{200F}",
        "EVIL zero\u{200B}width\u{FEFF}no\u{200D}joiner\u{2028}line",
        "EVIL > quote\n- list\n1. ordered\n    indented code\n===\n---\n***\n+ plus",
        "EVIL \u{1b}[31mred\u{1b}[0m \u{0}nul \u{7f}del \u{8}bs\ttab\u{85}nel",
        "EVIL trailing backslash \\",
        "EVIL see https://evil.example and www.evil.example",
        "    EVIL indented\n\tEVIL tabbed",
        "EVIL _emph_ *strong* ~~strike~~ $x$ :tada:",
        "- [x] EVIL task",
        "EVIL [^1]\n\n[^1]: a footnote",
    ]
    .map(String::from)
    .to_vec();
    all.push(format!("EVIL {}", "x".repeat(30_000)));
    all.push(format!("EVIL {}", "|\n".repeat(5_000)));
    all
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

/// Signs `r`, verifies the receipt and renders `template` from the verified predicate, as
/// `evo pr render` does.
fn render(r: &ConfirmResult, template: &str) -> String {
    let signed = receipt::sign_sealed(r, &key(), &receipt::SealKey::from_bytes([3; 32])).unwrap();
    let verified = receipt::verify(&signed.bytes, &key().verifying_key()).unwrap();
    let reference = ReceiptRef {
        file: receipt::RECEIPT_FILE.into(),
        sha256: signed.sha256.clone(),
        key_id: signed.key_id.clone(),
    };
    pr_body::render(&verified.statement.predicate, &reference, template, "t.md").unwrap()
}

/// What the HTML of a PR text must hold, whatever the candidate wrote.
struct Expected {
    /// Every heading, in order; `None` to leave them to the caller.
    headings: Option<Vec<String>>,
    /// Each table's `<tr>` rows (header row included) and columns.
    tables: Vec<(usize, usize)>,
    /// `<details>` blocks, each with one `<summary>`.
    details: usize,
    /// Links, every one to evo's own `pairs.svg`.
    plot_links: usize,
    code_blocks: usize,
    blockquotes: usize,
    /// Exact HTML that must appear once, such as the verdict line.
    lines: Vec<String>,
}

/// The tags evo's markdown produces; anything else came from a candidate's bytes. Of these,
/// `details`, `summary` and `a` are also counted exactly (see [`Expected`]).
const EVO_TAGS: [&str; 18] = [
    "details",
    "summary",
    "a",
    "p",
    "h2",
    "h3",
    "ul",
    "li",
    "strong",
    "code",
    "pre",
    "blockquote",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
];

/// Checks on the markdown itself: no control or invisible character left, under GitHub's limit.
fn assert_plain_markdown(md: &str, case: &str) {
    let bad = md.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
    });
    assert_eq!(bad, None, "{case}: a hidden character survived");
    let chars = md.chars().count();
    assert!(
        chars < 65_536,
        "{case}: {chars} characters, over GitHub's limit for a PR body"
    );
}

/// `cmark-gfm`, or `None` when `EVO_SKIP_GFM=1`; any other absence fails the test.
fn gfm(md: &str) -> Option<String> {
    if std::env::var("EVO_SKIP_GFM").is_ok_and(|v| v == "1") {
        eprintln!("note: EVO_SKIP_GFM=1: the PR text is not rendered by cmark-gfm");
        return None;
    }
    let child = Command::new("cmark-gfm")
        .args([
            "--unsafe",
            "-e",
            "table",
            "-e",
            "strikethrough",
            "-e",
            "autolink",
        ])
        .args(["-e", "tasklist", "-e", "footnotes"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut child = child.unwrap_or_else(|e| {
        panic!(
            "cmark-gfm cannot run ({e}): this test renders the PR text with GitHub's markdown \
             engine. Install it (Debian: apt-get install cmark-gfm) or set EVO_SKIP_GFM=1 to \
             check the markdown only"
        )
    });
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(md.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "cmark-gfm failed");
    Some(String::from_utf8(out.stdout).unwrap())
}

/// Tag names of every opening tag in `html`.
fn tags(html: &str) -> Vec<String> {
    html.match_indices('<')
        .filter_map(|(at, _)| {
            let name: String = html[at + 1..]
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// Text of every `<hN>` element, in order.
fn headings(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in html.match_indices("<h") {
        let rest = &html[at..];
        if let (Some(open), Some(close)) = (rest.find('>'), rest.find("</h")) {
            if rest[2..open].chars().all(|c| c.is_ascii_digit()) && open < close {
                out.push(rest[open + 1..close].to_string());
            }
        }
    }
    out
}

/// Checks `md` and its HTML against `expected`; returns the HTML (`None` when not rendered).
fn assert_inert(md: &str, expected: &Expected, case: &str) -> Option<String> {
    assert_plain_markdown(md, case);
    let html = gfm(md)?;
    let context = || format!("{case}\n--- markdown:\n{md}\n--- html:\n{html}");
    assert!(!html.contains("<!--"), "an HTML comment: {}", context());
    let tags = tags(&html);
    let foreign: Vec<&String> = tags
        .iter()
        .filter(|t| !EVO_TAGS.contains(&t.as_str()))
        .collect();
    assert!(
        foreign.is_empty(),
        "foreign tags {foreign:?}: {}",
        context()
    );
    let count = |tag: &str| tags.iter().filter(|t| *t == tag).count();
    if let Some(want) = &expected.headings {
        assert_eq!(&headings(&html), want, "headings: {}", context());
    }
    assert_eq!(
        count("table"),
        expected.tables.len(),
        "tables: {}",
        context()
    );
    let rows: usize = expected.tables.iter().map(|(rows, _)| rows).sum();
    assert_eq!(count("tr"), rows, "rows: {}", context());
    let cells = count("td") + count("th");
    let want_cells: usize = expected.tables.iter().map(|(r, c)| r * c).sum();
    assert_eq!(cells, want_cells, "cells: {}", context());
    assert_eq!(count("details"), expected.details, "details: {}", context());
    assert_eq!(
        count("summary"),
        expected.details,
        "summaries: {}",
        context()
    );
    assert_eq!(count("a"), expected.plot_links, "links: {}", context());
    let plot = "<a href=\"pairs.svg\">pairs.svg</a>";
    let plots = html.matches(plot).count();
    assert_eq!(plots, expected.plot_links, "plot links: {}", context());
    assert_eq!(
        count("pre"),
        expected.code_blocks,
        "code blocks: {}",
        context()
    );
    let quotes = count("blockquote");
    assert_eq!(quotes, expected.blockquotes, "blockquotes: {}", context());
    for line in &expected.lines {
        let n = html.matches(line.as_str()).count();
        assert_eq!(n, 1, "{line:?} once: {}", context());
    }
    assert!(
        html.contains("EVIL"),
        "the hostile text is dropped: {}",
        context()
    );
    Some(html)
}

const DEFAULT_HEADINGS: [&str; 12] = [
    "Summary",
    "Workload",
    "Why it is faster",
    "Evidence",
    "Holdouts",
    "Tests, differential, sanitizers",
    "Environment",
    "Search-time vs confirmation",
    "Build-configuration lane",
    "How to reproduce",
    "Limitations",
    "Receipt",
];

fn default_expected(r: &ConfirmResult) -> Expected {
    // The tier is named only beside an acceptance (a patch not accepted reached none).
    let standing = match r.verdict {
        Verdict::Accepted => format!(
            "<strong>accepted</strong>, tier <strong>{}</strong>",
            r.tier.as_str()
        ),
        other => format!("<strong>{}</strong>", format!("{other:?}").to_lowercase()),
    };
    let headline = "<p>This patch runs 1.050× faster (estimate over 9 paired runs; 96.1% CI \
         1.050–1.050×).\nWhat was timed: "
        .to_string();
    let verdict = format!(").\nVerdict: {standing}, against baseline <code>main</code>");
    let mut headings = DEFAULT_HEADINGS.map(String::from).to_vec();
    if r.verdict == Verdict::Rejected {
        headings[2] = "Why it was rejected".into();
    }
    let measured = 1 + r.evidence.scenarios.len();
    Expected {
        headings: Some(headings),
        // The summary, the statistics and the differential tables.
        tables: vec![
            (measured, 8),
            (measured, 8),
            (1 + r.evidence.differential.len(), 5),
        ],
        // The statistics.
        details: 1,
        plot_links: 1,
        code_blocks: 2,
        // The explanation and the harness warning.
        blockquotes: 2,
        lines: vec![
            headline,
            verdict,
            "<h2>Receipt</h2>\n<p>Signed receipt <code>validation_receipt.json</code>".into(),
            "The fresh confirmation (new checkouts, clean builds, a fresh seed, new pairs) is \
             the guard.</li>"
                .into(),
            // The search's shape, whatever the candidates' names.
            "<li>2 candidates were tried over 2 rounds (1 agent run);".into(),
            ", came from round 2 and was built on ".into(),
        ],
    }
}

#[test]
fn every_hostile_string_in_every_candidate_field_leaves_the_default_pr_text_intact() {
    for h in hostile_strings() {
        for rejected in [true, false] {
            let r = hostile_result(&h, rejected);
            assert_eq!(r.verdict == Verdict::Rejected, rejected);
            let md = render(&r, pr_body::DEFAULT_TEMPLATE);
            let case = format!(
                "{:?} (rejected: {rejected})",
                h.chars().take(80).collect::<String>()
            );
            let html = assert_inert(&md, &default_expected(&r), &case);
            if let Some(html) = html.filter(|_| rejected) {
                assert!(
                    !html.contains("<strong>accepted</strong>"),
                    "{case}: {html}"
                );
            }
        }
    }
}

/// A custom template that prints raw predicate fields everywhere markdown could be hijacked: a
/// paragraph, a list item, a blockquote line, a heading, table cells, between backticks, and
/// through every filter evo offers.
const RAW_TEMPLATE: &str = "## Raw {{ result.patch.files[0].path }}

{{ result.explanation }}
{{ reason }}

- {{ result.patch.files[0].path }} and `{{ result.explanation }}`
- {{ result.reasons }} {{ result.gates }}

> {{ result.differential[0].summary }}

| a | b |
|---|---|
| {{ result.gates[3].detail }} | {{ result.patch.source | md_code }} |

## Filters

{{ result.explanation | md_inline }} {{ result.explanation | md_code }} {{ result.explanation | e }}
{{ result.explanation | replace(\"\\n\", \"\\n> \") }} {{ result.explanation ~ reason }}

{{ result.scenarios[0].pairs[0].candidate.stderr_tail | md_fence(\"text\") }}

{{ result.explanation | md_quote }}

## End

Verdict {{ summary.verdict }}.
";

#[test]
fn a_custom_template_printing_raw_fields_is_inert_too() {
    for h in hostile_strings() {
        let r = hostile_result(&h, true);
        let md = render(&r, RAW_TEMPLATE);
        let expected = Expected {
            headings: None,
            tables: vec![(2, 2)],
            details: 0,
            plot_links: 0,
            code_blocks: 1,
            blockquotes: 2,
            lines: vec!["<p>Verdict rejected.</p>".into()],
        };
        let case = format!("{:?}", h.chars().take(80).collect::<String>());
        let Some(html) = assert_inert(&md, &expected, &case) else {
            continue;
        };
        // The first heading holds the hostile path, escaped.
        let found = headings(&html);
        assert_eq!(found.len(), 3, "{case}: {found:?}\n{md}");
        assert!(found[0].starts_with("Raw "), "{case}: {found:?}");
        assert_eq!(found[1..], ["Filters", "End"], "{case}");
    }
}

#[test]
fn evo_pr_render_of_a_hostile_receipt_is_inert_and_matches_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let r = hostile_result(ATTACK, true);
    let receipt_path = dir.path().join(receipt::RECEIPT_FILE);
    std::fs::write(
        &receipt_path,
        receipt::sign_sealed(&r, &key(), &receipt::SealKey::from_bytes([3; 32]))
            .unwrap()
            .bytes,
    )
    .unwrap();
    let public = dir.path().join(keys::PUBLIC_KEY_FILE);
    std::fs::write(&public, keys::public_pem(&key().verifying_key())).unwrap();
    let out = util::evo()
        .args(["pr", "render", "--key"])
        .arg(&public)
        .arg(&receipt_path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let md = String::from_utf8(out.stdout).unwrap();
    assert_eq!(md, render(&r, pr_body::DEFAULT_TEMPLATE));
    assert_inert(&md, &default_expected(&r), "evo pr render");
}

#[test]
fn the_terminal_summary_shows_control_characters_instead_of_obeying_them() {
    for h in hostile_strings() {
        let text = terminal::render_confirm(&hostile_result(&h, true), Path::new("/run"), true);
        let bad = text
            .chars()
            .find(|&c| c.is_control() && c != '\n' && c != '\t');
        assert_eq!(bad, None, "{h:?}:\n{text}");
        assert!(text.contains("\nverdict: rejected\n"), "{text}");
    }
}

/// A patch adding `path`, written as git writes it: quoted with C escapes when `quoted`.
fn new_file_patch(path: &str, quoted: bool) -> String {
    let (a, b) = if quoted {
        (format!("\"a/{path}\""), format!("\"b/{path}\""))
    } else {
        (format!("a/{path}"), format!("b/{path}"))
    };
    format!(
        "diff --git {a} {b}\nnew file mode 100644\nindex 0000000..257cc56\n--- /dev/null\n\
         +++ {b}\n@@ -0,0 +1 @@\n+foo\n"
    )
}

fn safety_error(patch: &[u8]) -> PatchError {
    let root = tempfile::tempdir().unwrap();
    let tree = Tree {
        root: root.path().to_path_buf(),
        base_sha: String::new(),
        commit: String::new(),
    };
    match inspect_patch(patch) {
        Err(e) => e,
        Ok(summary) => {
            check_patch_safety(&summary, &tree, &[]).expect_err(&String::from_utf8_lossy(patch))
        }
    }
}

#[test]
fn a_patch_file_name_with_a_control_character_is_refused_with_the_name_escaped() {
    // (how the patch writes the name, quoted by git or raw, the escaped name in the message)
    let cases = [
        (r"src/a\rb.c", true, r"src/a\rb.c"),
        ("src/a\rb.c", false, r"src/a\rb.c"),
        (r"src/a\nb.c", true, r"src/a\nb.c"),
        (r"src/a\tb.c", true, r"src/a\tb.c"),
        (r"src/a\033[31mb.c", true, r"src/a\u{1b}[31mb.c"),
        ("src/a\u{1b}[31mb.c", false, r"src/a\u{1b}[31mb.c"),
        (r"src/a\177b.c", true, r"src/a\u{7f}b.c"),
        (r"src/a\001b.c", true, r"src/a\u{1}b.c"),
        ("src/a\u{202E}b.c", false, r"src/a\u{202e}b.c"),
        ("src/a\u{2066}b.c", false, r"src/a\u{2066}b.c"),
        ("src/a\u{85}b.c", false, r"src/a\u{85}b.c"),
    ];
    for (path, quoted, shown) in cases {
        let patch = new_file_patch(path, quoted);
        let err = safety_error(patch.as_bytes());
        let message = err.to_string();
        assert!(
            matches!(
                &err,
                PatchError::Refused { path, reason: Refusal::ControlCharacter { .. } } if path == shown
            ),
            "{patch:?}: {err:?}"
        );
        assert!(message.contains(&format!("`{shown}`")), "{message}");
        assert!(message.contains("control character"), "{message}");
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }
}

#[test]
fn a_patch_file_name_that_is_not_utf8_is_refused_with_its_bytes_shown() {
    let quoted = new_file_patch(r"src/\377\r.c", true).into_bytes();
    let mut raw = new_file_patch("src/X\r.c", false).into_bytes();
    for b in raw.iter_mut().filter(|b| **b == b'X') {
        *b = 0xff;
    }
    for patch in [quoted, raw] {
        let err = safety_error(&patch);
        let message = err.to_string();
        assert!(matches!(err, PatchError::Unparsable { .. }), "{err:?}");
        assert!(message.contains(r"src/\xff\r.c"), "{message}");
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }
    // U+FFFD is what a lossy reading makes of such bytes: refused too.
    let err = safety_error(new_file_patch("src/\u{FFFD}.c", false).as_bytes());
    assert!(
        matches!(
            err,
            PatchError::Refused {
                reason: Refusal::NotUtf8,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_plain_unicode_file_name_still_passes() {
    let root = tempfile::tempdir().unwrap();
    let tree = Tree {
        root: root.path().to_path_buf(),
        base_sha: String::new(),
        commit: String::new(),
    };
    let summary = inspect_patch(new_file_patch("src/grüße ü.c", false).as_bytes()).unwrap();
    check_patch_safety(&summary, &tree, &[]).unwrap();
}

fn campaign_with_candidate(name_json: &str) -> String {
    format!(
        "{{\n  \"name\": \"c\",\n  \"repo\": \".\",\n  \"baseline\": \"main\",\n  \
         \"workload\": \"w.json\",\n  \"candidates\": [\n    {{ \"name\": {name_json}, \
         \"patch\": \"p.patch\" }}\n  ]\n}}\n"
    )
}

#[test]
fn a_campaign_candidate_name_with_a_control_character_is_refused_at_its_position() {
    for (json, shown) in [
        (r#""fast\r| accepted |""#, r"\r"),
        (r#""fast\n## Summary""#, r"\n"),
        (r#""a\u001b[2Jb""#, r"\u{1b}"),
        (r#""a\u202eb""#, r"\u{202e}"),
        (r#""a\tb""#, r"\t"),
        (r#""a\u007fb""#, r"\u{7f}"),
    ] {
        let text = campaign_with_candidate(json);
        let err = parse_json::<Campaign>(Path::new("dir/campaign.json"), &text).unwrap_err();
        let SpecError::Invalid { line, field, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!((*line, field.as_str()), (7, "candidates[0].name"), "{err}");
        let message = err.to_string();
        assert!(message.starts_with("dir/campaign.json:7:"), "{message}");
        assert!(
            message.contains(&format!("control character {shown}")),
            "{message}"
        );
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }
    let fine = campaign_with_candidate(r#""tiled loops, ü""#);
    parse_json::<Campaign>(Path::new("dir/campaign.json"), &fine).unwrap();
}
