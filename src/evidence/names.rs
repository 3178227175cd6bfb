//! The identities a confirmation records — gates, trees, check lanes (and, in `steps`, steps) —
//! as types, so that
//! what decides a verdict or a seal is a `match`, never a comparison of strings.
//!
//! Each is written in `result.json` and the receipt as the same string as always; reading a
//! string this evo does not know is an error that names it, so a verifier never passes over a
//! gate (or a tree, or a step) it cannot interpret.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A name read from a result or receipt that this evo does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{name}` (this evo knows {known})")]
pub struct UnknownName {
    pub what: &'static str,
    pub name: String,
    pub known: String,
}

/// An enum whose every variant is one fixed string: `as_str`, `Display`, `FromStr` (an unknown
/// string is an [`UnknownName`]) and serde through that string.
macro_rules! fixed_names {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(into = "&'static str", try_from = "String")]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every one, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The string written in results and receipts (and shown to people).
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, UnknownName> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err(UnknownName {
                        what: $what,
                        name: s.to_string(),
                        known: [$(concat!("`", $text, "`")),+].join(", "),
                    }),
                }
            }
        }

        impl From<$name> for &'static str {
            fn from(n: $name) -> &'static str {
                n.as_str()
            }
        }

        impl TryFrom<String> for $name {
            type Error = UnknownName;

            fn try_from(s: String) -> Result<Self, UnknownName> {
                s.parse()
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "enum": [$($text),+] })
            }
        }
    };
}

/// A name written as free-form text (`candidate-3`, `check-sum-100k-alone`), for the schemas.
macro_rules! text_schema {
    ($name:ident, $description:literal) => {
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "description": $description })
            }
        }
    };
}
pub(super) use text_schema;

text_schema!(
    TreeLabel,
    "the tree a step ran in: `baseline`, `candidate`, `<arm>-sanitize`, `baseline-again`, \
     `config-only`, `candidate-<n>`, `agent-<n>`, … (a name this evo does not know is refused)"
);

fixed_names! {
    /// One gate of docs/design.md §3.11, in the order the pipeline meets them. Every gate is a
    /// check that must hold: a failed one stops acceptance, whichever it is.
    pub enum GateName ("gate") {
        PatchSafety = "patch safety",
        /// Added code that can tell which lane it runs in (docs/design.md §2.2.3).
        LaneProbes = "lane probes",
        Apply = "apply",
        Build = "build",
        Tests = "tests",
        Differential = "differential",
        Sanitizers = "sanitizers",
        TimedOutput = "timed output",
        LeftoverProcesses = "leftover processes",
    }
}

fixed_names! {
    /// Where a check's outputs were compared: the plain builds, or the sanitized ones.
    pub enum CheckLane ("check lane") {
        Differential = "differential",
        Sanitizer = "sanitizer",
    }
}

/// The tree a step ran in: each arm's own tree, its sanitized twin, the trees a failure is
/// re-run in alone, the A/A check's second baseline, the configuration-only lane, and a
/// campaign's numbered candidates and agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum TreeLabel {
    Baseline,
    Candidate,
    BaselineSanitize,
    CandidateSanitize,
    /// The baseline rebuilt alone, after its build failed beside the candidate's.
    BaselineAlone,
    /// The sanitized baseline rebuilt alone.
    BaselineSanitizeAlone,
    /// A second build of the baseline, the other arm of the A/A check.
    BaselineAgain,
    /// The baseline plus only the configuration part of the patch.
    ConfigOnly,
    /// A campaign's candidate `n` (1-based), checked or screened.
    Numbered(usize),
    /// A campaign's agent run `n` (1-based), where the agent writes its candidate.
    Agent(usize),
}

impl TreeLabel {
    const FIXED: [TreeLabel; 8] = [
        TreeLabel::Baseline,
        TreeLabel::Candidate,
        TreeLabel::BaselineSanitize,
        TreeLabel::CandidateSanitize,
        TreeLabel::BaselineAlone,
        TreeLabel::BaselineSanitizeAlone,
        TreeLabel::BaselineAgain,
        TreeLabel::ConfigOnly,
    ];

    /// The fixed name, or the numbered kind and its number.
    fn fixed_str(self) -> Result<&'static str, (&'static str, usize)> {
        Ok(match self {
            TreeLabel::Baseline => "baseline",
            TreeLabel::Candidate => "candidate",
            TreeLabel::BaselineSanitize => "baseline-sanitize",
            TreeLabel::CandidateSanitize => "candidate-sanitize",
            TreeLabel::BaselineAlone => "baseline-alone",
            TreeLabel::BaselineSanitizeAlone => "baseline-sanitize-alone",
            TreeLabel::BaselineAgain => "baseline-again",
            TreeLabel::ConfigOnly => "config-only",
            TreeLabel::Numbered(n) => return Err(("candidate", n)),
            TreeLabel::Agent(n) => return Err(("agent", n)),
        })
    }

    /// Built with the sanitizer flags: only these trees' stderr is searched for reports.
    pub fn is_sanitized(self) -> bool {
        matches!(
            self,
            TreeLabel::BaselineSanitize
                | TreeLabel::CandidateSanitize
                | TreeLabel::BaselineSanitizeAlone
        )
    }

    /// Holds the baseline's code (whatever its role in the run): what the candidate did not
    /// write.
    pub fn holds_baseline(self) -> bool {
        matches!(
            self,
            TreeLabel::Baseline
                | TreeLabel::BaselineSanitize
                | TreeLabel::BaselineAlone
                | TreeLabel::BaselineSanitizeAlone
                | TreeLabel::BaselineAgain
        )
    }

    /// Whose caches a build in this tree may share: only the baseline's own two trees are the
    /// baseline; any other (a candidate, its sanitized twin, the configuration-only lane, a
    /// re-run, a campaign's candidate) builds on private copies.
    pub fn sandbox_arm(self) -> crate::measure::sandbox::Arm {
        use crate::measure::sandbox::Arm;
        match self {
            TreeLabel::Baseline | TreeLabel::BaselineSanitize => Arm::Baseline,
            TreeLabel::Candidate
            | TreeLabel::CandidateSanitize
            | TreeLabel::BaselineAlone
            | TreeLabel::BaselineSanitizeAlone
            | TreeLabel::BaselineAgain
            | TreeLabel::ConfigOnly
            | TreeLabel::Numbered(_)
            | TreeLabel::Agent(_) => Arm::Candidate,
        }
    }
}

impl fmt::Display for TreeLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fixed_str() {
            Ok(text) => f.pad(text),
            Err((kind, n)) => f.pad(&format!("{kind}-{n}")),
        }
    }
}

impl FromStr for TreeLabel {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, UnknownName> {
        if let Some(t) = TreeLabel::FIXED
            .into_iter()
            .find(|t| t.fixed_str() == Ok(s))
        {
            return Ok(t);
        }
        let numbered = |kind: &str| {
            let n = s
                .strip_prefix(kind)?
                .strip_prefix('-')?
                .parse::<usize>()
                .ok()?;
            (n > 0).then_some(n)
        };
        let label = match (numbered("candidate"), numbered("agent")) {
            (Some(n), _) => Some(TreeLabel::Numbered(n)),
            (_, Some(n)) => Some(TreeLabel::Agent(n)),
            _ => None,
        };
        match label {
            // One way to write each number (no `+1` or `01`).
            Some(t) if t.to_string() == s => Ok(t),
            _ => Err(UnknownName {
                what: "tree",
                name: s.to_string(),
                known: TreeLabel::FIXED
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .chain(["`candidate-<n>`".to_string(), "`agent-<n>`".to_string()])
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

impl From<TreeLabel> for String {
    fn from(t: TreeLabel) -> String {
        t.to_string()
    }
}

impl TryFrom<String> for TreeLabel {
    type Error = UnknownName;

    fn try_from(s: String) -> Result<Self, UnknownName> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::steps::{StepKind, StepName};

    fn round_trip<T>(value: &T) -> T
    where
        T: Serialize + for<'de> Deserialize<'de>,
    {
        serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
    }

    #[test]
    fn every_name_is_written_as_before_and_read_back() {
        let gates: Vec<&str> = GateName::ALL.iter().map(|g| g.as_str()).collect();
        assert_eq!(
            gates,
            [
                "patch safety",
                "lane probes",
                "apply",
                "build",
                "tests",
                "differential",
                "sanitizers",
                "timed output",
                "leftover processes"
            ]
        );
        for g in GateName::ALL {
            assert_eq!(serde_json::to_string(g).unwrap(), format!("\"{g}\""));
            assert_eq!(round_trip(g), *g);
        }
        let trees = [
            "baseline",
            "candidate",
            "baseline-sanitize",
            "candidate-sanitize",
            "baseline-alone",
            "baseline-sanitize-alone",
            "baseline-again",
            "config-only",
            "candidate-12",
            "agent-3",
        ];
        for text in trees {
            let t: TreeLabel = text.parse().unwrap();
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{text}\""));
            assert_eq!(round_trip(&t), t);
        }
        let steps = [
            "build",
            "sanitize-build",
            "screen-build",
            "build-alone",
            "test-3",
            "test-3-alone",
            "check-sum-100k",
            "check-sum-100k-alone",
            "check-build",
        ];
        for text in steps {
            let s: StepName = text.parse().unwrap();
            assert_eq!(s.to_string(), text);
            assert_eq!(round_trip(&s), s);
        }
        for lane in CheckLane::ALL {
            assert_eq!(round_trip(lane), *lane);
        }
    }

    /// Names are laid out in the terminal's columns like the strings they were.
    #[test]
    fn a_name_takes_the_width_and_alignment_it_is_given() {
        assert_eq!(
            format!("[{:<14}]", GateName::TimedOutput),
            "[timed output  ]"
        );
        assert_eq!(
            format!("[{:>12}]", TreeLabel::Numbered(3)),
            "[ candidate-3]"
        );
        assert_eq!(
            format!("[{:^9}]", StepName::new(StepKind::Test(2))),
            "[ test-2  ]"
        );
        assert_eq!(
            format!("[{:<10}]", crate::spec::workload::Role::Holdout),
            "[holdout   ]"
        );
    }

    #[test]
    fn an_unknown_name_in_a_result_is_an_error_that_names_it() {
        let e = serde_json::from_str::<GateName>("\"sanitiser\"").unwrap_err();
        assert!(e.to_string().contains("unknown gate `sanitiser`"), "{e}");
        assert!(e.to_string().contains("`timed output`"), "{e}");
        for (text, what) in [
            ("\"candidate-0\"", "tree"),
            ("\"candidate-x\"", "tree"),
            ("\"candidate-+1\"", "tree"),
            ("\"agent-0\"", "tree"),
            ("\"Baseline\"", "tree"),
            ("\"test-01\"", "step"),
            ("\"check-\"", "step"),
            ("\"lint\"", "step"),
            ("\"lint-alone\"", "step"),
            ("\"sanitizers\"", "check lane"),
        ] {
            let e = match what {
                "tree" => serde_json::from_str::<TreeLabel>(text).unwrap_err(),
                "step" => serde_json::from_str::<StepName>(text).unwrap_err(),
                _ => serde_json::from_str::<CheckLane>(text).unwrap_err(),
            };
            let unquoted = text.trim_matches('"');
            assert!(
                e.to_string()
                    .contains(&format!("unknown {what} `{unquoted}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn only_sanitized_trees_are_searched_and_only_the_baselines_share_caches() {
        use crate::measure::sandbox::Arm;
        let sanitized: Vec<TreeLabel> = TreeLabel::FIXED
            .into_iter()
            .filter(|t| t.is_sanitized())
            .collect();
        assert_eq!(
            sanitized,
            [
                TreeLabel::BaselineSanitize,
                TreeLabel::CandidateSanitize,
                TreeLabel::BaselineSanitizeAlone
            ]
        );
        let numbered = [TreeLabel::Numbered(1), TreeLabel::Agent(1)];
        for t in TreeLabel::FIXED.into_iter().chain(numbered) {
            let shared = matches!(t, TreeLabel::Baseline | TreeLabel::BaselineSanitize);
            assert_eq!(t.sandbox_arm() == Arm::Baseline, shared, "{t}");
            assert_eq!(
                t.holds_baseline(),
                t.to_string().starts_with("baseline"),
                "{t}"
            );
        }
    }
}
