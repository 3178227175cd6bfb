//! Splits a check output into numbers and the text between them, so a tolerance rule can compare
//! number by number and everything else byte for byte.
//!
//! The grammar is deliberately small and decided by the byte *before* a candidate number, so the
//! same bytes always split the same way on both arms:
//!
//! - A number is `[+-]? (digits ('.' digits)? | '.' digits) ([eE] [+-]? digits)?`, or `[+-]?` and
//!   a whole word `inf`, `infinity` or `nan` (any case). `5.` is the number `5` followed by the
//!   text `.`, so a sentence-ending period stays text.
//! - A number only starts at a word boundary: at the start of the output or after a byte that is
//!   not an ASCII letter, digit or `_`. Digits glued to a word (`x86`, `sha256`, `layer3`, a hex
//!   digest) are text and must match exactly; `3rd` is the number `3` then the text `rd`.
//! - Hence a `+` or `-` right after a letter or digit is text, not a sign: `x-1` is the text `x-`
//!   and the number `1`; `2-3` is `2`, `-`, `3`; `2024-01-05` is `2024`, `-`, `01`, `-`, `05`.
//!   Inside an exponent the sign belongs to the number: `1e-3` is one number.
//!
//! Numbers are compared by value, so `1`, `1.0` and `01` are the same number under a tolerance rule
//! (the `exact` rule is there for outputs whose formatting matters).

/// One piece of an output.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Token<'a> {
    Text(&'a [u8]),
    Number { text: &'a [u8], value: f64 },
}

/// A token and the byte offset where it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spanned<'a> {
    pub start: usize,
    pub token: Token<'a>,
}

/// Iterator over the tokens of an output, without allocating.
pub(crate) struct Tokens<'a> {
    input: &'a [u8],
    pos: usize,
}

pub(crate) fn tokens(input: &[u8]) -> Tokens<'_> {
    Tokens { input, pos: 0 }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Spanned<'a>;

    fn next(&mut self) -> Option<Spanned<'a>> {
        let input = self.input;
        let start = self.pos;
        if start >= input.len() {
            return None;
        }
        if let Some((end, value)) = number_at(input, start) {
            self.pos = end;
            let text = input.get(start..end).unwrap_or_default();
            return Some(Spanned {
                start,
                token: Token::Number { text, value },
            });
        }
        let mut end = skip_text_unit(input, start);
        while end < input.len() && number_at(input, end).is_none() {
            end = skip_text_unit(input, end);
        }
        self.pos = end;
        let text = input.get(start..end).unwrap_or_default();
        Some(Spanned {
            start,
            token: Token::Text(text),
        })
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn at_boundary(input: &[u8], i: usize) -> bool {
    i == 0 || input.get(i - 1).is_none_or(|b| !is_word(*b))
}

/// Where the text unit at `i` ends: a whole word, or one byte of anything else.
fn skip_text_unit(input: &[u8], i: usize) -> usize {
    if input.get(i).is_some_and(|b| is_word(*b)) {
        run_end(input, i, is_word)
    } else {
        i + 1
    }
}

fn run_end(input: &[u8], from: usize, pred: impl Fn(u8) -> bool) -> usize {
    let len = input
        .get(from..)
        .map_or(0, |rest| rest.iter().take_while(|b| pred(**b)).count());
    from + len
}

/// The end and value of the number starting at `i`, if one starts there.
fn number_at(input: &[u8], i: usize) -> Option<(usize, f64)> {
    if !at_boundary(input, i) {
        return None;
    }
    let body = match input.get(i) {
        Some(b'+' | b'-') => i + 1,
        _ => i,
    };
    let end = special_end(input, body).or_else(|| decimal_end(input, body))?;
    let text = std::str::from_utf8(input.get(i..end)?).ok()?;
    let value = text.parse::<f64>().ok()?;
    Some((end, value))
}

/// The end of `inf`, `infinity` or `nan` when the whole word at `i` is one of them.
fn special_end(input: &[u8], i: usize) -> Option<usize> {
    let end = run_end(input, i, is_word);
    let word = input.get(i..end)?;
    let special = ["inf", "infinity", "nan"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w.as_bytes()));
    special.then_some(end)
}

/// The end of `digits ('.' digits)? | '.' digits`, then an optional exponent.
fn decimal_end(input: &[u8], i: usize) -> Option<usize> {
    let int_end = run_end(input, i, |b| b.is_ascii_digit());
    let mut end = int_end;
    if input.get(end) == Some(&b'.') {
        let frac_end = run_end(input, end + 1, |b| b.is_ascii_digit());
        if frac_end > end + 1 {
            end = frac_end;
        }
    }
    if end == i {
        return None;
    }
    Some(exponent_end(input, end).unwrap_or(end))
}

fn exponent_end(input: &[u8], i: usize) -> Option<usize> {
    if !matches!(input.get(i), Some(b'e' | b'E')) {
        return None;
    }
    let digits = match input.get(i + 1) {
        Some(b'+' | b'-') => i + 2,
        _ => i + 1,
    };
    let end = run_end(input, digits, |b| b.is_ascii_digit());
    (end > digits).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A readable rendering: numbers as `<value>`, text as itself.
    fn split(s: &str) -> Vec<String> {
        tokens(s.as_bytes())
            .map(|t| match t.token {
                Token::Text(b) => String::from_utf8_lossy(b).into_owned(),
                Token::Number { value, .. } => format!("<{value}>"),
            })
            .collect()
    }

    #[test]
    fn numbers_and_text_alternate() {
        assert_eq!(
            split("loss = 0.25, acc 97%"),
            ["loss = ", "<0.25>", ", acc ", "<97>", "%"]
        );
    }

    #[test]
    fn signs_and_exponents() {
        assert_eq!(
            split("-3 +4 1e-3 2.5E+2 .5"),
            [
                "<-3>", " ", "<4>", " ", "<0.001>", " ", "<250>", " ", "<0.5>"
            ]
        );
    }

    #[test]
    fn sign_after_letter_or_digit_is_text() {
        assert_eq!(split("x-1"), ["x-", "<1>"]);
        assert_eq!(split("2-3"), ["<2>", "-", "<3>"]);
        assert_eq!(split("2024-01-05"), ["<2024>", "-", "<1>", "-", "<5>"]);
        assert_eq!(split("1e-3-2"), ["<0.001>", "-", "<2>"]);
        assert_eq!(split("(-3)"), ["(", "<-3>", ")"]);
    }

    #[test]
    fn digits_glued_to_words_are_text() {
        assert_eq!(split("x86_64 sha256 layer3"), ["x86_64 sha256 layer3"]);
        assert_eq!(split("3rd 0x1F"), ["<3>", "rd ", "<0>", "x1F"]);
    }

    #[test]
    fn special_values_are_whole_words() {
        assert_eq!(
            split("inf -INF NaN -nan Infinity"),
            [
                "<inf>", " ", "<-inf>", " ", "<NaN>", " ", "<NaN>", " ", "<inf>"
            ]
        );
        assert_eq!(split("info nano"), ["info nano"]);
    }

    #[test]
    fn trailing_period_is_text() {
        assert_eq!(
            split("took 5. then 1.2.3"),
            ["took ", "<5>", ". then ", "<1.2>", ".", "<3>"]
        );
    }

    #[test]
    fn lone_signs_dots_and_exponent_letters_are_text() {
        assert_eq!(split("- + . e5 1e"), ["- + . e5 ", "<1>", "e"]);
    }

    #[test]
    fn tokens_cover_the_input_exactly() {
        let input = "a=1,b=-2.5e3\n\u{e9}7 nan\u{ff}".as_bytes();
        let mut rebuilt = Vec::new();
        for t in tokens(input) {
            assert_eq!(t.start, rebuilt.len());
            match t.token {
                Token::Text(b) | Token::Number { text: b, .. } => rebuilt.extend_from_slice(b),
            }
        }
        assert_eq!(rebuilt, input);
    }
}
