//! A short unified diff around the first disagreement, for the log and the PR text.
//!
//! Check outputs can be huge and completely different (a candidate that prints garbage), so the
//! diff is bounded three ways: it starts a few lines before the first disagreement and looks at a
//! window of at most `WINDOW_LINES` lines / `WINDOW_BYTES` bytes from there, the line diff runs
//! under a deadline (similar then settles for a coarser diff), each removed or added block shows
//! its first `BLOCK_LINES` lines (so a huge replacement still shows both sides), and the rendering
//! stops after `MAX_HUNKS` hunks, `MAX_LINES` lines or `MAX_BYTES` bytes with a "… (truncated)"
//! note. The result is for reading, not for `patch`.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use similar::{ChangeTag, DiffOp, TextDiff};

const CONTEXT: usize = 3;
const WINDOW_LINES: usize = 2_000;
const WINDOW_BYTES: usize = 1 << 20;
/// Hunks that start this far into the window are not "the first hunks" any more (and near the end
/// of a cut window they could be artefacts of the cut).
const HUNK_HORIZON: usize = 1_000;
const MAX_HUNKS: usize = 3;
/// Lines shown of each removed or added block before a "… (n more lines)" note.
const BLOCK_LINES: usize = 12;
const MAX_LINES: usize = 40;
const MAX_BYTES: usize = 4 * 1024;
const DIFF_TIMEOUT: Duration = Duration::from_millis(300);
pub(crate) const TRUNCATED: &str = "… (truncated)";

/// A unified diff of `baseline` against `candidate`, starting near 1-based `line`.
///
/// Up to `line` both outputs have the same lines (the comparison stopped at the first
/// disagreement), so both are cut at the same line number.
pub(crate) fn diff_excerpt(baseline: &[u8], candidate: &[u8], line: usize) -> String {
    let skip = line.saturating_sub(1 + CONTEXT);
    let old = window(baseline, skip);
    let new = window(candidate, skip);
    let started = Instant::now();
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let gave_up = started.elapsed() >= DIFF_TIMEOUT;

    let mut out = Capped::default();
    out.push("--- baseline");
    out.push("+++ candidate");
    let mut unified = diff.unified_diff();
    unified.context_radius(CONTEXT);
    let mut hunks = 0;
    for hunk in unified.iter_hunks().take(MAX_HUNKS) {
        let ops = hunk.ops();
        let Some(header) = hunk_header(ops, skip) else {
            continue;
        };
        if ops
            .first()
            .is_some_and(|op| op.old_range().start > HUNK_HORIZON)
        {
            break;
        }
        hunks += 1;
        if !out.push(&header) || !ops.iter().all(|op| render_op(&mut out, &diff, op)) {
            break;
        }
    }
    finish(out, hunks, gave_up, baseline, candidate, line)
}

/// Renders one operation of a hunk, showing at most `BLOCK_LINES` lines of each removed or added
/// block so that the first lines of both sides of a huge replacement stay visible. False once the
/// output is full.
fn render_op(out: &mut Capped, diff: &TextDiff<'_, '_, [u8]>, op: &DiffOp) -> bool {
    let mut shown = [0usize; 2];
    for change in diff.iter_changes(op) {
        let side = match change.tag() {
            ChangeTag::Equal => None,
            ChangeTag::Delete => Some(0),
            ChangeTag::Insert => Some(1),
        };
        if let Some(side) = side {
            shown[side] += 1;
            let total = [op.old_range().len(), op.new_range().len()][side];
            if shown[side] == BLOCK_LINES + 1 {
                let which = ["baseline", "candidate"][side];
                let more = total.saturating_sub(BLOCK_LINES);
                if !out.push(&format!("… ({more} more {which} lines)")) {
                    return false;
                }
            }
            if shown[side] > BLOCK_LINES {
                continue;
            }
        }
        let text = change.to_string_lossy();
        let body = text.strip_suffix('\n').unwrap_or(&text);
        let body = body.strip_suffix('\r').unwrap_or(body);
        if !out.push(&format!("{}{body}", change.tag())) {
            return false;
        }
        if change.missing_newline() && !out.push("\\ No newline at end of file") {
            return false;
        }
    }
    true
}

fn finish(
    mut out: Capped,
    hunks: usize,
    gave_up: bool,
    baseline: &[u8],
    candidate: &[u8],
    line: usize,
) -> String {
    if hunks == 0 {
        return fallback(baseline, candidate, line);
    }
    if out.full {
        out.text.push_str(TRUNCATED);
        out.text.push('\n');
    }
    if gave_up {
        let _ = writeln!(
            out.text,
            "(the line diff stopped after {} ms; hunks may be coarser than needed)",
            DIFF_TIMEOUT.as_millis()
        );
    }
    out.text
}

/// When the line diff shows nothing: the first differing line of each side.
fn fallback(baseline: &[u8], candidate: &[u8], line: usize) -> String {
    let pick = |bytes: &[u8]| {
        let rest = window(bytes, line.saturating_sub(1));
        let end = rest
            .iter()
            .position(|b| *b == b'\n')
            .unwrap_or(rest.len())
            .min(MAX_BYTES / 4);
        String::from_utf8_lossy(rest.get(..end).unwrap_or_default()).into_owned()
    };
    format!(
        "(no line diff available)\n-{}\n+{}\n",
        pick(baseline),
        pick(candidate)
    )
}

/// The part of `bytes` from the start of 0-based line `skip`, at most `WINDOW_LINES` lines and
/// `WINDOW_BYTES` bytes (cut after a newline when there is one).
fn window(bytes: &[u8], skip: usize) -> &[u8] {
    let start = nth_line_start(bytes, skip);
    let rest = bytes.get(start..).unwrap_or_default();
    let by_lines = nth_line_start(rest, WINDOW_LINES);
    let limit = by_lines.min(WINDOW_BYTES).min(rest.len());
    if limit == rest.len() || limit == by_lines {
        return rest.get(..limit).unwrap_or(rest);
    }
    let head = rest.get(..limit).unwrap_or(rest);
    let cut = head
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(limit, |i| i + 1);
    rest.get(..cut).unwrap_or(head)
}

/// Byte offset where 0-based line `n` starts (the end when there are fewer lines).
fn nth_line_start(bytes: &[u8], n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(n - 1)
        .map_or(bytes.len(), |(i, _)| i + 1)
}

/// `@@ -a,b +c,d @@` with line numbers of the whole outputs, not of the window.
fn hunk_header(ops: &[DiffOp], skip: usize) -> Option<String> {
    let (first, last) = (ops.first()?, ops.last()?);
    let old = range(first.old_range().start + skip, last.old_range().end + skip);
    let new = range(first.new_range().start + skip, last.new_range().end + skip);
    Some(format!("@@ -{old} +{new} @@"))
}

/// The unified-diff form of the 0-based half-open line range `start..end`.
fn range(start: usize, end: usize) -> String {
    let len = end.saturating_sub(start);
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// Output that refuses lines beyond `MAX_LINES` / `MAX_BYTES`.
#[derive(Default)]
struct Capped {
    text: String,
    lines: usize,
    full: bool,
}

impl Capped {
    /// Appends one line; false once the cap is reached (a long line is cut to fit first).
    fn push(&mut self, line: &str) -> bool {
        if self.full || self.lines >= MAX_LINES {
            self.full = true;
            return false;
        }
        let room = MAX_BYTES.saturating_sub(self.text.len() + 1);
        if line.len() > room {
            let mut cut = room;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.push_str(line.get(..cut).unwrap_or_default());
            self.text.push('\n');
            self.full = true;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        self.lines += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_starts_near_the_difference_with_real_line_numbers() {
        let base: String = (1..=50).map(|i| format!("row {i}\n")).collect();
        let cand = base.replace("row 30\n", "row thirty\n");
        let diff = diff_excerpt(base.as_bytes(), cand.as_bytes(), 30);
        assert!(
            diff.starts_with("--- baseline\n+++ candidate\n@@ -27,7 +27,7 @@\n row 27\n"),
            "{diff}"
        );
        assert!(diff.contains("\n-row 30\n+row thirty\n"), "{diff}");
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let diff = diff_excerpt(b"a\nb", b"a\nc", 2);
        assert!(
            diff.contains("-b\n\\ No newline at end of file\n+c\n"),
            "{diff}"
        );
    }

    #[test]
    fn window_cuts_at_a_line_boundary() {
        let text = "x".repeat(WINDOW_BYTES - 3) + "\nabcdef\n";
        assert_eq!(window(text.as_bytes(), 0).len(), WINDOW_BYTES - 2);
        let lines = "l\n".repeat(WINDOW_LINES + 10);
        assert_eq!(window(lines.as_bytes(), 5).len(), 2 * WINDOW_LINES);
    }

    #[test]
    fn range_forms() {
        assert_eq!(range(0, 0), "0,0");
        assert_eq!(range(4, 5), "5");
        assert_eq!(range(4, 7), "5,3");
    }

    #[test]
    fn one_enormous_line_is_cut_on_a_char_boundary() {
        let base = "é".repeat(10_000);
        let cand = "è".repeat(10_000);
        let diff = diff_excerpt(base.as_bytes(), cand.as_bytes(), 1);
        assert!(diff.len() <= MAX_BYTES + 200, "{}", diff.len());
        assert!(diff.ends_with(&format!("{TRUNCATED}\n")), "{diff}");
    }
}
