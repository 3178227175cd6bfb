//! Small value types whose constructors check their invariants, so a bad number in an input file
//! is reported at its own line and column instead of failing somewhere later.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// Why a number in an input file (or a flag checked as one) is not a valid value of its type:
/// the value given, for the message serde places at its line and column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("expected a number of seconds above 0 and at most a week, got {0}")]
    Seconds(f64),
    #[error("{0} pairs cannot give a 95% interval: use at least 6 (9 is the default)")]
    TooFewPairs(i64),
    #[error("expected a number of pairs from 6 to 10000, got {0}")]
    Pairs(i64),
    #[error("expected a count from 1 to 10000, got {0}")]
    Count(i64),
    /// `what` names the quantity ("number of minutes").
    #[error("expected a positive {what}, got {got}")]
    NotPositive { what: &'static str, got: f64 },
    #[error("expected a fraction from 0 up to (not including) 1, got {0}")]
    Fraction(f64),
    #[error("expected a finite number of at least 0, got {0}")]
    Negative(f64),
}

/// A positive, finite number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "f64", into = "f64")]
pub struct Seconds(f64);

impl Seconds {
    pub fn from_secs(s: u32) -> Seconds {
        Seconds(f64::from(s))
    }
    pub fn duration(self) -> Duration {
        Duration::from_secs_f64(self.0)
    }
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Seconds {
    type Error = ValueError;
    fn try_from(v: f64) -> Result<Seconds, ValueError> {
        if v.is_finite() && v > 0.0 && v <= 7.0 * 86_400.0 {
            Ok(Seconds(v))
        } else {
            Err(ValueError::Seconds(v))
        }
    }
}

impl From<Seconds> for f64 {
    fn from(s: Seconds) -> f64 {
        s.0
    }
}

/// A count of pairs that can give a 95% interval: at least 6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "i64", into = "i64")]
pub struct ConfirmPairs(usize);

impl ConfirmPairs {
    pub fn get(self) -> usize {
        self.0
    }
}

impl TryFrom<i64> for ConfirmPairs {
    type Error = ValueError;
    fn try_from(v: i64) -> Result<ConfirmPairs, ValueError> {
        match v {
            6..=10_000 => Ok(ConfirmPairs(v as usize)),
            1..=5 => Err(ValueError::TooFewPairs(v)),
            _ => Err(ValueError::Pairs(v)),
        }
    }
}

impl From<ConfirmPairs> for i64 {
    fn from(p: ConfirmPairs) -> i64 {
        p.0 as i64
    }
}

/// A positive count (pairs in screening, agent runs, top N).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "i64", into = "i64")]
pub struct Count(usize);

impl Count {
    pub fn get(self) -> usize {
        self.0
    }
}

impl TryFrom<i64> for Count {
    type Error = ValueError;
    fn try_from(v: i64) -> Result<Count, ValueError> {
        if (1..=10_000).contains(&v) {
            Ok(Count(v as usize))
        } else {
            Err(ValueError::Count(v))
        }
    }
}

impl From<Count> for i64 {
    fn from(c: Count) -> i64 {
        c.0 as i64
    }
}

/// A newtype over a positive, finite `f64`, read from JSON through `TryFrom<f64>` with `what` in
/// its error ("expected a positive {what}, got …").
macro_rules! positive_f64 {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, JsonSchema)]
        #[serde(try_from = "f64", into = "f64")]
        pub struct $name(f64);

        impl $name {
            pub fn get(self) -> f64 {
                self.0
            }
        }

        impl TryFrom<f64> for $name {
            type Error = ValueError;
            fn try_from(v: f64) -> Result<$name, ValueError> {
                if v.is_finite() && v > 0.0 {
                    Ok($name(v))
                } else {
                    Err(ValueError::NotPositive { what: $what, got: v })
                }
            }
        }

        impl From<$name> for f64 {
            fn from(v: $name) -> f64 {
                v.0
            }
        }
    };
}

positive_f64!(
    /// A positive, finite number of minutes (a time budget).
    Minutes,
    "number of minutes"
);

positive_f64!(
    /// A positive, finite amount in the user's own units (dollars, tokens): `search.max_cost`.
    Cost,
    "cost (in the units the agents report)"
);

/// A fraction in [0, 1), such as the minimum effect 0.01.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "f64", into = "f64")]
pub struct Fraction(f64);

impl Fraction {
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Fraction {
    type Error = ValueError;
    fn try_from(v: f64) -> Result<Fraction, ValueError> {
        if v.is_finite() && (0.0..1.0).contains(&v) {
            Ok(Fraction(v))
        } else {
            Err(ValueError::Fraction(v))
        }
    }
}

impl From<Fraction> for f64 {
    fn from(f: Fraction) -> f64 {
        f.0
    }
}

/// Numeric tolerance: a number passes when within `abs` OR within `rel` of the reference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    #[serde(default)]
    pub abs: NonNegative,
    #[serde(default)]
    pub rel: NonNegative,
}

/// A finite number ≥ 0.
#[derive(
    Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize, JsonSchema,
)]
#[serde(try_from = "f64", into = "f64")]
pub struct NonNegative(f64);

impl NonNegative {
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for NonNegative {
    type Error = ValueError;
    fn try_from(v: f64) -> Result<NonNegative, ValueError> {
        if v.is_finite() && v >= 0.0 {
            Ok(NonNegative(v))
        } else {
            Err(ValueError::Negative(v))
        }
    }
}

impl From<NonNegative> for f64 {
    fn from(n: NonNegative) -> f64 {
        n.0
    }
}

/// A character no name may hold: a control character (C0, DEL, C1: a carriage return or an
/// escape sequence rewrites what a terminal, a log or the PR text shows) or a bidi control (it
/// reorders what a reader sees of the rest).
pub fn is_control_or_bidi(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with control and bidi characters escaped as in Rust (`\r`, `\u{202e}`), for messages.
pub fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_control_or_bidi(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A top-level `$comment`: notes for the people who edit the file (JSON has no comments), one
/// string or a list of lines. evo ignores it, like `$schema`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Comment {
    One(String),
    Lines(Vec<String>),
}

impl<'de> Deserialize<'de> for Comment {
    // By hand rather than derived: an untagged enum's error ("did not match any variant") would
    // not say what the field wants.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Comment, D::Error> {
        struct Lines;
        impl<'de> serde::de::Visitor<'de> for Lines {
            type Value = Comment;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Comment, E> {
                Ok(Comment::One(s.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Comment, A::Error> {
                let mut lines = Vec::new();
                while let Some(line) = seq.next_element::<String>()? {
                    lines.push(line);
                }
                Ok(Comment::Lines(lines))
            }
        }
        deserializer.deserialize_any(Lines)
    }
}

/// Deserializes a name that evo shows to people (a candidate's): any text without control or
/// bidi characters, refused at its own line and column.
pub fn plain_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let name = String::deserialize(deserializer)?;
    match name.chars().find(|&c| is_control_or_bidi(c)) {
        Some(c) => Err(serde::de::Error::custom(format!(
            "the name \"{}\" has the control character {}; names are shown in summaries, \
             receipts and the PR text, so they must be plain text",
            escape_controls(&name),
            c.escape_default()
        ))),
        None => Ok(name),
    }
}

/// Deserializes the names of variables passed from evo's environment (`pass_env`): evo's signing
/// key, `$EVO_SIGNING_KEY`, is never passed to code under test or an agent, and naming it is an
/// error at its own line and column.
pub fn passed_env_names<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    let names = Vec::<String>::deserialize(deserializer)?;
    match names.iter().find(|n| crate::spec::modes::never_passed(n)) {
        Some(name) => Err(serde::de::Error::custom(format!(
            "{name} holds evo's signing key, which is never passed to the programs evo runs"
        ))),
        None => Ok(names),
    }
}
