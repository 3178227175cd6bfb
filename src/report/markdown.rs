//! Outside text made inert in GitHub-flavoured markdown.
//!
//! The PR text quotes strings evo does not control: file names and the explanation from the
//! candidate, output tails and diffs from its programs. Rendered as they are, such bytes can open
//! an HTML comment that swallows the verdict, start a table or heading that mimics evo's evidence,
//! or hide text behind a carriage return or a bidi override. Every escaper here keeps the text
//! readable and literal: markdown and HTML in it have no effect, control characters are shown as
//! Unicode control pictures, invisible and direction-changing characters as `⟨U+XXXX⟩`, and very
//! long text is cut with a note.
//!
//! [`Markdown`] is what evo itself assembled from escaped parts; the PR template prints it as is
//! and escapes every other string (see `pr_body`).

use std::fmt;

use serde::{Serialize, Serializer};

/// The most characters of one outside string kept on a line ([`inline`], [`code`]).
pub const MAX_INLINE_CHARS: usize = 1000;
/// The most characters of an outside text kept in a block ([`quote`], [`fence`]).
pub const MAX_BLOCK_CHARS: usize = 10_000;

/// Markdown that evo wrote: its own wording, with every outside string in it escaped by this
/// module. The PR template prints it unescaped; everything else it escapes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markdown(String);

impl Markdown {
    /// `text` must be evo's own wording, every outside string in it already escaped here.
    pub fn assembled(text: String) -> Markdown {
        Markdown(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Markdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A plain string to JSON; a string marked safe to minijinja, so the template does not escape
/// evo's own markdown a second time.
impl Serialize for Markdown {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        minijinja::Value::from_safe_string(self.0.clone()).serialize(serializer)
    }
}

/// Characters that change how text reads without showing themselves: bidi controls, zero-width
/// characters, line and paragraph separators, C1 controls, tag characters.
fn is_invisible(c: char) -> bool {
    matches!(
        c as u32,
        0x80..=0x9F
            | 0xAD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFEFF
            | 0xFFA0
            | 0xFFF9..=0xFFFB
            | 0xE0000..=0xE0FFF
    )
}

/// Pushes `c`, or a visible stand-in when it is a control or invisible character: C0 controls
/// and DEL become their Unicode control pictures (`␍`, `␛`, `␡`), the others `⟨U+XXXX⟩`.
fn push_visible(out: &mut String, c: char) {
    match c as u32 {
        code @ 0..=0x1F => out.push(char::from_u32(0x2400 + code).unwrap_or('\u{FFFD}')),
        0x7F => out.push('\u{2421}'),
        _ if is_invisible(c) => out.push_str(&format!("⟨U+{:04X}⟩", c as u32)),
        _ => out.push(c),
    }
}

/// Whether `text` has a character [`push_visible`] would replace.
pub fn has_hidden_characters(text: &str) -> bool {
    text.chars().any(|c| c.is_control() || is_invisible(c))
}

/// `text` with every control character but the tab, and every invisible character, replaced by
/// a visible stand-in: for a terminal, where a carriage return or an escape sequence in a
/// candidate's output could overwrite evo's verdict line.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\t' {
            out.push(c);
        } else {
            push_visible(&mut out, c);
        }
    }
    out
}

/// The first `max` characters of `text` and a note on what was cut, if anything.
fn cut(text: &str, max: usize) -> (&str, Option<String>) {
    match text.char_indices().nth(max) {
        None => (text, None),
        Some((at, _)) => {
            let rest = text[at..].chars().count();
            (&text[..at], Some(format!(" (… {rest} more characters)")))
        }
    }
}

/// ASCII punctuation that starts markdown or HTML wherever it stands.
fn always_escaped(c: char) -> bool {
    matches!(
        c,
        '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '&' | '|' | '~' | '$'
    )
}

/// `text` with control and invisible characters replaced by stand-ins, tabs by spaces.
fn shown_on_one_line(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\t' {
            shown.push(' ');
        } else {
            push_visible(&mut shown, c);
        }
    }
    shown
}

/// Escapes text of one line (no control characters left) so it renders literally; `line_start`
/// when it may begin a line, in a paragraph, a list item or a blockquote. Safe in a table cell.
fn escape_line(chars: &[char], line_start: bool, out: &mut String) {
    let alnum = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(char::is_ascii_alphanumeric)
    };
    let leading_digits = chars.iter().take_while(|c| c.is_ascii_digit()).count();
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        let first = line_start && i == 0;
        let escape = match c {
            c if always_escaped(c) => true,
            // `snake_case` is no emphasis: only an `_` between letters or digits is left alone.
            '_' => !(alnum(i.checked_sub(1)) && alnum(Some(i + 1))),
            // Block starts: heading, list item, thematic break, setext underline.
            '#' | '-' | '+' | '=' if first => true,
            // An ordered list item: `1. ` or `1) `.
            '.' | ')' if line_start && i == leading_digits && i > 0 => {
                matches!(next, None | Some(' '))
            }
            // Autolinks: `https://...` and `www.`.
            ':' => chars.get(i + 1..i + 3) == Some(&['/', '/'][..]),
            '.' => {
                i >= 3
                    && chars[i - 3..i]
                        .iter()
                        .map(char::to_ascii_lowercase)
                        .eq(['w', 'w', 'w'])
            }
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
}

/// `text` as inert inline markdown on one line: markdown and HTML show literally, line breaks and
/// other control characters as control pictures, leading and trailing spaces dropped. Safe in a
/// paragraph, a list item, a table cell and a blockquote line.
pub fn inline(text: &str) -> String {
    let (kept, note) = cut(text, MAX_INLINE_CHARS);
    let shown = shown_on_one_line(kept);
    let chars: Vec<char> = shown.trim_matches(' ').chars().collect();
    let mut out = String::with_capacity(shown.len() + 8);
    escape_line(&chars, true, &mut out);
    out.extend(note);
    out
}

/// Like [`inline`], but a pair of equal backtick runs stays a code span (its content re-fenced
/// by [`code`]), so a message that names a file or scenario in backticks reads as evo wrote it;
/// an unpaired backtick shows literally.
pub fn prose(text: &str) -> String {
    let (kept, note) = cut(text, MAX_INLINE_CHARS);
    let shown = shown_on_one_line(kept);
    let chars: Vec<char> = shown.trim_matches(' ').chars().collect();
    let mut out = String::with_capacity(shown.len() + 8);
    let run_at = |i: usize| chars[i..].iter().take_while(|c| **c == '`').count();
    let (mut i, mut plain_from) = (0, 0);
    while i < chars.len() {
        let n = run_at(i);
        if n == 0 {
            i += 1;
            continue;
        }
        // The closing run: the next run of exactly `n` backticks.
        let mut j = i + n;
        let close = loop {
            match (j..chars.len()).find(|&k| chars[k] == '`') {
                None => break None,
                Some(k) if run_at(k) == n && (k == 0 || chars[k - 1] != '`') => break Some(k),
                Some(k) => j = k + run_at(k),
            }
        };
        match close {
            Some(k) => {
                escape_line(&chars[plain_from..i], plain_from == 0, &mut out);
                let content: String = chars[i + n..k].iter().collect();
                code_pieces(&content, &mut out);
                i = k + n;
                plain_from = i;
            }
            None => i += n,
        }
    }
    escape_line(&chars[plain_from..], plain_from == 0, &mut out);
    out.extend(note);
    out
}

/// One code span around `text` (which has no `|` and no control characters).
fn code_span(text: &str, out: &mut String) {
    let longest = longest_backtick_run(text);
    let ticks = "`".repeat(longest + 1);
    // A span strips one space from each end when both are spaces, and one at each end is needed
    // to keep a backtick at an end apart from the delimiters.
    let pad = text.starts_with('`')
        || text.ends_with('`')
        || (text.starts_with(' ') && text.ends_with(' ') && !text.trim_matches(' ').is_empty());
    let space = if pad { " " } else { "" };
    out.push_str(&format!("{ticks}{space}{text}{space}{ticks}"));
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// Code spans for `shown` (no control characters), split at each `|`, which is written between
/// them as `\|`: a table cell ends at a bare `|` even inside code.
fn code_pieces(shown: &str, out: &mut String) {
    if shown.is_empty() {
        out.push_str("` `");
    }
    for (i, piece) in shown.split('|').enumerate() {
        if i > 0 {
            out.push_str("\\|");
        }
        if !piece.is_empty() {
            code_span(piece, out);
        }
    }
}

/// `text` as inline code on one line, delimited by a backtick run longer than any inside it.
/// Safe in a table cell too (see [`code_pieces`]).
pub fn code(text: &str) -> String {
    let (kept, note) = cut(text, MAX_INLINE_CHARS);
    let shown = shown_on_one_line(kept);
    let mut out = String::with_capacity(shown.len() + 4);
    code_pieces(&shown, &mut out);
    out.extend(note);
    out
}

/// Splits outside text into lines: CRLF and LF end a line; a lone CR is kept, to be shown.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// `text` as a blockquote (`> ` on every line), each line escaped as by [`inline`]; leading
/// spaces are kept as no-break spaces so indentation shows without starting a code block.
pub fn quote(text: &str) -> String {
    let (kept, note) = cut(text.trim_end(), MAX_BLOCK_CHARS);
    let mut out = String::with_capacity(kept.len() + 16);
    for (n, line) in lines(kept).enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let line = line.trim_end();
        if line.is_empty() {
            out.push('>');
            continue;
        }
        out.push_str("> ");
        let body = line.trim_start_matches([' ', '\t']);
        for c in line[..line.len() - body.len()].chars() {
            let width = if c == '\t' { 4 } else { 1 };
            out.extend(std::iter::repeat_n('\u{A0}', width));
        }
        let chars: Vec<char> = shown_on_one_line(body).chars().collect();
        escape_line(&chars, true, &mut out);
    }
    if let Some(note) = note {
        out.push_str(&format!("\n>\n> {}", note.trim_start()));
    }
    out
}

/// `text` as a fenced code block (`info` is its language, letters and digits only), fenced by a
/// backtick run longer than any inside, so no line of the text can close it. Tabs stay; other
/// control and invisible characters are shown as stand-ins.
pub fn fence(text: &str, info: &str) -> String {
    let (kept, note) = cut(text, MAX_BLOCK_CHARS);
    let mut body = String::with_capacity(kept.len() + 16);
    for (n, line) in lines(kept.strip_suffix('\n').unwrap_or(kept)).enumerate() {
        if n > 0 {
            body.push('\n');
        }
        for c in line.chars() {
            if c == '\t' {
                body.push(c);
            } else {
                push_visible(&mut body, c);
            }
        }
    }
    if let Some(note) = note {
        body.push_str(&format!("\n{}", note.trim_start()));
    }
    let ticks = "`".repeat((longest_backtick_run(&body) + 1).max(3));
    let info: String = info
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+'))
        .collect();
    format!("{ticks}{info}\n{body}\n{ticks}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benign_text_is_unchanged() {
        for text in [
            "Memoizes slow_hash: the loop sees only 1000 distinct inputs.",
            "runs 1.072× faster (estimate over 9 paired runs; 96.1% CI 1.066–1.087×)",
            "patch safety passed",
            "0.4% / 0.2%",
        ] {
            assert_eq!(inline(text), text);
        }
        assert_eq!(code("prog.c"), "`prog.c`");
        assert_eq!(fence("make -s\n", "sh"), "```sh\nmake -s\n```");
    }

    #[test]
    fn markup_is_escaped() {
        assert_eq!(inline("<!-- x -->"), "\\<!-- x --\\>");
        assert_eq!(inline("# h"), "\\# h");
        assert_eq!(inline("1. x"), "1\\. x");
        assert_eq!(inline("a|b"), "a\\|b");
        assert_eq!(inline("[x](javascript:y)"), "\\[x\\](javascript:y)");
        assert_eq!(inline("see https://x.y"), "see https\\://x.y");
        assert_eq!(inline("_a_ b_c"), "\\_a\\_ b_c");
    }

    #[test]
    fn control_and_invisible_characters_are_shown() {
        assert_eq!(inline("a\rb\nc\u{1b}d"), "a␍b␊c␛d");
        assert_eq!(inline("x\u{202E}y\u{200B}"), "x⟨U+202E⟩y⟨U+200B⟩");
        assert_eq!(visible("a\tb\u{7f}\r\u{1b}[2J"), "a\tb␡␍␛[2J");
        assert!(has_hidden_characters("a\u{2066}"));
        assert!(!has_hidden_characters("plain ü"));
    }

    #[test]
    fn prose_keeps_paired_code_spans_only() {
        let text = "scenario `sum-100k` (differential): line 1 differs";
        assert_eq!(prose(text), text);
        assert_eq!(prose("a ``x`y`` b"), "a ``x`y`` b");
        assert_eq!(
            prose("`<!--` and ` alone <b>"),
            "`<!--` and \\` alone \\<b\\>"
        );
        assert_eq!(prose("# `a|b`"), "\\# `a`\\|`b`");
    }

    #[test]
    fn code_spans_outrun_inner_backticks_and_split_at_pipes() {
        assert_eq!(code("a``b"), "```a``b```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a|b"), "`a`\\|`b`");
        assert_eq!(code(""), "` `");
    }

    #[test]
    fn quotes_and_fences_keep_their_lines() {
        assert_eq!(quote("a\r\n\n# b\n  c"), "> a\n>\n> \\# b\n> \u{A0}\u{A0}c");
        assert_eq!(fence("x\n````\ny", ""), "`````\nx\n````\ny\n`````");
        assert_eq!(fence("a\rb", "s h"), "```sh\na␍b\n```");
    }

    #[test]
    fn long_text_is_cut_with_a_note() {
        let long = "x".repeat(MAX_INLINE_CHARS + 5);
        assert!(inline(&long).ends_with("x (… 5 more characters)"));
        let long = "y".repeat(MAX_BLOCK_CHARS + 1);
        assert!(fence(&long, "").contains("\n(… 1 more characters)\n```"));
    }
}
