//! The differential verdict on one check command (docs/design.md §4.1–§4.2, §2.2.6):
//! do the baseline's and the candidate's outputs agree under the scenario's rule, and if not,
//! where is the first disagreement and what does it look like.
//!
//! `exact` compares bytes; outputs need not be UTF-8 and are only decoded (lossily) for display.
//! `tolerance` splits both outputs into numbers and text (see `tokens` for the grammar): text must
//! match byte for byte, numbers must agree within the absolute OR the relative tolerance.

use serde::{Deserialize, Serialize};

use super::excerpt::diff_excerpt;
use super::tokens::{Spanned, Token, tokens};
use crate::spec::values::Tolerance;
use crate::spec::workload::Compare;

/// The verdict on one pair of check outputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Comparison {
    Same,
    Differs(Mismatch),
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        matches!(self, Comparison::Same)
    }
}

/// Where and how the outputs first disagree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// One line for people, e.g. `line 3: 0.5012 vs 0.5107 differs by 0.0095 (abs tol 1e-6, rel
    /// tol 1e-4)`.
    pub summary: String,
    /// 1-based line (in the baseline output) of the first disagreement.
    pub line: usize,
    /// A short unified diff (`--- baseline` / `+++ candidate`) starting near that line.
    pub diff: String,
}

/// The first disagreement, before the diff is rendered.
struct Found {
    summary: String,
    line: usize,
}

/// Compares a candidate's check output with the baseline's under `rule`.
pub fn compare_outputs(rule: &Compare, baseline: &[u8], candidate: &[u8]) -> Comparison {
    if baseline == candidate {
        return Comparison::Same;
    }
    let found = match rule {
        Compare::Exact => Some(first_byte_difference(baseline, candidate)),
        Compare::Tolerance(tol) => first_tolerance_difference(tol, baseline, candidate),
    };
    match found {
        None => Comparison::Same,
        Some(Found { summary, line }) => Comparison::Differs(Mismatch {
            summary,
            line,
            diff: diff_excerpt(baseline, candidate, line),
        }),
    }
}

/// 1-based line of byte `offset` (an offset at the end counts as the last line's end).
pub(crate) fn line_at(bytes: &[u8], offset: usize) -> usize {
    let prefix = bytes.get(..offset).unwrap_or(bytes);
    1 + prefix.iter().filter(|b| **b == b'\n').count()
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 4096;
    let whole = a
        .chunks(CHUNK)
        .zip(b.chunks(CHUNK))
        .take_while(|(x, y)| x == y)
        .count()
        * CHUNK;
    let rest_a = a.get(whole..).unwrap_or_default();
    let rest_b = b.get(whole..).unwrap_or_default();
    whole
        + rest_a
            .iter()
            .zip(rest_b)
            .take_while(|(x, y)| x == y)
            .count()
}

/// Called only when the outputs differ.
fn first_byte_difference(baseline: &[u8], candidate: &[u8]) -> Found {
    let at = common_prefix_len(baseline, candidate);
    let line = line_at(baseline, at);
    let summary = if at < baseline.len() && at < candidate.len() {
        let line_start = baseline.get(..at).map_or(0, |p| {
            p.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)
        });
        format!(
            "byte {} (line {line}, column {}) differs",
            at + 1,
            at - line_start + 1
        )
    } else if candidate.len() > baseline.len() {
        format!(
            "candidate output is {} bytes longer (the first {at} bytes are the same)",
            candidate.len() - baseline.len()
        )
    } else {
        format!(
            "candidate output is {} bytes shorter (the first {at} bytes are the same)",
            baseline.len() - candidate.len()
        )
    };
    Found { summary, line }
}

fn first_tolerance_difference(tol: &Tolerance, baseline: &[u8], candidate: &[u8]) -> Option<Found> {
    let mut base = tokens(baseline);
    let mut cand = tokens(candidate);
    loop {
        match (base.next(), cand.next()) {
            (None, None) => return None,
            (Some(b), Some(c)) => {
                if let Some(found) = judge_tokens(tol, baseline, b, c) {
                    return Some(found);
                }
            }
            (Some(b), None) => {
                let line = line_at(baseline, b.start);
                let summary = format!(
                    "line {line}: candidate output ends where baseline has {}",
                    describe(b.token)
                );
                return Some(Found { summary, line });
            }
            (None, Some(c)) => {
                let line = line_at(candidate, c.start);
                let summary = format!(
                    "line {line}: candidate output has {} after the baseline output ends",
                    describe(c.token)
                );
                return Some(Found { summary, line });
            }
        }
    }
}

fn judge_tokens(tol: &Tolerance, baseline: &[u8], b: Spanned, c: Spanned) -> Option<Found> {
    match (b.token, c.token) {
        (Token::Text(x), Token::Text(y)) if x == y => None,
        (Token::Text(x), Token::Text(y)) => {
            let at = common_prefix_len(x, y);
            let line = line_at(baseline, b.start + at);
            let summary = format!(
                "line {line}: text differs: baseline {} vs candidate {}",
                snippet(x, at),
                snippet(y, at)
            );
            Some(Found { summary, line })
        }
        (Token::Number { text: xt, value: x }, Token::Number { text: yt, value: y }) => {
            if numbers_match(tol, x, y) {
                return None;
            }
            let line = line_at(baseline, b.start);
            let summary = format!(
                "line {line}: {} vs {} {} (abs tol {}, rel tol {})",
                clip(xt),
                clip(yt),
                how_far(x, y),
                short_number(tol.abs.get()),
                short_number(tol.rel.get()),
            );
            Some(Found { summary, line })
        }
        (bt, ct) => {
            let line = line_at(baseline, b.start);
            let summary = format!(
                "line {line}: baseline has {} where candidate has {}",
                describe(bt),
                describe(ct)
            );
            Some(Found { summary, line })
        }
    }
}

/// Equal (including inf == inf), both NaN, or within `abs` or within `rel` of the larger magnitude.
/// An infinity only matches the same infinity, and a difference too large for f64 never matches.
pub(crate) fn numbers_match(tol: &Tolerance, a: f64, b: f64) -> bool {
    if a == b || (a.is_nan() && b.is_nan()) {
        return true;
    }
    let diff = (a - b).abs();
    if !diff.is_finite() {
        return false;
    }
    diff <= tol.abs.get() || diff <= tol.rel.get() * a.abs().max(b.abs())
}

fn how_far(a: f64, b: f64) -> String {
    if a.is_nan() || b.is_nan() {
        "differs (only one is NaN)".to_string()
    } else {
        format!("differs by {}", short_number((a - b).abs()))
    }
}

/// A number rounded to 3 significant digits, in plain notation when that stays short.
pub(crate) fn short_number(x: f64) -> String {
    let rounded = format!("{x:.2e}").parse::<f64>().unwrap_or(x);
    if rounded == 0.0 || !rounded.is_finite() || (1e-3..1e6).contains(&rounded.abs()) {
        format!("{rounded}")
    } else {
        format!("{rounded:e}")
    }
}

fn describe(token: Token) -> String {
    match token {
        Token::Text(t) => format!("text {}", snippet(t, 0)),
        Token::Number { text, .. } => format!("number {}", clip(text)),
    }
}

/// A number's text as printed, clipped so a 10,000-digit number keeps the summary on one line.
fn clip(text: &[u8]) -> String {
    const MAX: usize = 40;
    let shown = String::from_utf8_lossy(text.get(..MAX).unwrap_or(text)).into_owned();
    if text.len() > MAX {
        shown + "…"
    } else {
        shown
    }
}

/// A quoted, escaped piece of text around byte `at`, short enough for a one-line summary.
fn snippet(text: &[u8], at: usize) -> String {
    const BEFORE: usize = 12;
    const LEN: usize = 40;
    let from = at.saturating_sub(BEFORE);
    let to = (from + LEN).min(text.len());
    let piece = String::from_utf8_lossy(text.get(from..to).unwrap_or_default()).into_owned();
    let lead = if from > 0 { "…" } else { "" };
    let tail = if to < text.len() { "…" } else { "" };
    format!("{lead}{piece:?}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tol(abs: f64, rel: f64) -> Tolerance {
        serde_json::from_value(serde_json::json!({ "abs": abs, "rel": rel }))
            .expect("valid tolerance")
    }

    fn differs(rule: &Compare, a: &str, b: &str) -> Mismatch {
        match compare_outputs(rule, a.as_bytes(), b.as_bytes()) {
            Comparison::Differs(m) => m,
            Comparison::Same => panic!("expected {a:?} and {b:?} to differ"),
        }
    }

    #[test]
    fn exact_names_byte_line_and_column() {
        let m = differs(&Compare::Exact, "a\nbc\nxyz\n", "a\nbc\nxYz\n");
        assert_eq!(m.line, 3);
        assert_eq!(m.summary, "byte 7 (line 3, column 2) differs");
    }

    #[test]
    fn exact_reports_length_difference() {
        let m = differs(&Compare::Exact, "abc\n", "abc\ndef\n");
        assert_eq!(
            m.summary,
            "candidate output is 4 bytes longer (the first 4 bytes are the same)"
        );
        assert_eq!(m.line, 2);
        let m = differs(&Compare::Exact, "abc\ndef", "abc");
        assert_eq!(
            m.summary,
            "candidate output is 4 bytes shorter (the first 3 bytes are the same)"
        );
        assert_eq!(m.line, 1);
    }

    #[test]
    fn common_prefix_across_chunks() {
        let a = vec![7u8; 10_000];
        let mut b = a.clone();
        b[9_000] = 8;
        assert_eq!(common_prefix_len(&a, &b), 9_000);
        assert_eq!(common_prefix_len(&a, &a[..5_000]), 5_000);
    }

    #[test]
    fn numbers_match_rules() {
        let t = tol(1e-6, 1e-4);
        assert!(numbers_match(&t, f64::INFINITY, f64::INFINITY));
        assert!(numbers_match(&t, f64::NAN, -f64::NAN));
        assert!(!numbers_match(&t, f64::INFINITY, f64::MAX));
        assert!(!numbers_match(&t, f64::INFINITY, f64::NEG_INFINITY));
        assert!(!numbers_match(&t, f64::NAN, 0.0));
        assert!(numbers_match(&t, 1e-7, 0.0), "abs tolerance");
        assert!(numbers_match(&t, 1000.0, 1000.09), "rel tolerance");
        assert!(!numbers_match(&t, 1000.0, 1000.2));
        assert!(
            !numbers_match(&tol(0.0, 10.0), f64::MAX, -f64::MAX),
            "overflowing difference"
        );
    }

    #[test]
    fn number_summary_names_difference_and_tolerances() {
        let rule = Compare::Tolerance(tol(1e-6, 1e-4));
        let m = differs(&rule, "a\nb\nloss 0.5012\n", "a\nb\nloss 0.5107\n");
        assert_eq!(
            m.summary,
            "line 3: 0.5012 vs 0.5107 differs by 0.0095 (abs tol 1e-6, rel tol 1e-4)"
        );
        assert_eq!(m.line, 3);
    }

    #[test]
    fn text_and_kind_summaries() {
        let rule = Compare::Tolerance(tol(0.0, 0.0));
        let m = differs(&rule, "x\nloss = 1\n", "x\nloss: 1\n");
        assert_eq!(
            m.summary,
            "line 2: text differs: baseline \"x\\nloss = \" vs candidate \"x\\nloss: \""
        );
        let m = differs(&rule, "2 v", "v 2");
        assert_eq!(
            m.summary,
            "line 1: baseline has number 2 where candidate has text \"v \""
        );
        let m = differs(&rule, "v 1 2", "v 1 ");
        assert_eq!(
            m.summary,
            "line 1: candidate output ends where baseline has number 2"
        );
        let m = differs(&rule, "1\n", "1\n2");
        assert_eq!(
            m.summary,
            "line 2: candidate output has number 2 after the baseline output ends"
        );
    }

    #[test]
    fn nan_against_number_is_explained() {
        let m = differs(&Compare::Tolerance(tol(1.0, 1.0)), "nan", "0");
        assert_eq!(
            m.summary,
            "line 1: nan vs 0 differs (only one is NaN) (abs tol 1, rel tol 1)"
        );
    }

    #[test]
    fn short_number_forms() {
        assert_eq!(short_number(0.009500000000000008), "0.0095");
        assert_eq!(short_number(1e-6), "1e-6");
        assert_eq!(short_number(0.0), "0");
        assert_eq!(short_number(123456789.0), "1.23e8");
        assert_eq!(short_number(f64::INFINITY), "inf");
    }

    #[test]
    fn serializes_in_snake_case() {
        let json = serde_json::to_string(&Comparison::Same).expect("serializes");
        assert_eq!(json, "\"same\"");
    }
}
