//! The name of a build, test or check step as results and receipts record it (`build`,
//! `test-2`, `check-<scenario>-alone`, ...), as a type: what a step did is matched, never read
//! from its string. Written and read like the other identities (`names`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::names::{UnknownName, text_schema};

text_schema!(
    StepName,
    "the step: `build`, `sanitize-build`, `screen-build`, `test-<n>`, `check-<scenario>`, each \
     possibly followed by `-alone`"
);

/// What a build, test or check step does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StepKind {
    Build,
    /// The build of a sanitized tree.
    SanitizeBuild,
    /// A campaign's candidate rebuilt for screening.
    ScreenBuild,
    /// The workload's test command `n` (1-based).
    Test(usize),
    /// The check of the named scenario.
    Check(String),
}

/// A step's name in results: its kind, and whether it is the baseline's run of it again alone
/// (after it failed beside the candidate's). Written as `build`, `sanitize-build`,
/// `screen-build`, `test-<n>`, `check-<scenario>`, each maybe followed by `-alone`.
///
/// Two names are equal when they are written alike: the written form is all a receipt holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct StepName {
    pub kind: StepKind,
    pub alone: bool,
}

/// Appended to a step's name when the baseline's is run again alone.
const ALONE: &str = "-alone";

impl StepName {
    pub fn new(kind: StepKind) -> StepName {
        StepName { kind, alone: false }
    }

    pub fn check(scenario: &str) -> StepName {
        StepName::new(StepKind::Check(scenario.to_string()))
    }

    /// The same step, run again alone.
    pub fn alone(&self) -> StepName {
        StepName {
            kind: self.kind.clone(),
            alone: true,
        }
    }

    /// Whether the step builds: only a build may write its tree (tests and checks see it
    /// read-only), and only a build may leave a server running.
    pub fn builds(&self) -> bool {
        match self.kind {
            StepKind::Build | StepKind::SanitizeBuild | StepKind::ScreenBuild => true,
            StepKind::Test(_) | StepKind::Check(_) => false,
        }
    }

    /// Whether the step is the check of `scenario`, alone or not. The written form cannot tell
    /// the check of scenario `x`, alone, from the check of scenario `x-alone`, so both readings
    /// of the written name count.
    pub fn checks(&self, scenario: &str) -> bool {
        let StepKind::Check(name) = &self.kind else {
            return false;
        };
        let written = match self.alone {
            true => format!("{name}{ALONE}"),
            false => name.clone(),
        };
        written == scenario || written.strip_suffix(ALONE) == Some(scenario)
    }
}

impl PartialEq for StepName {
    fn eq(&self, other: &StepName) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for StepName {}

impl std::hash::Hash for StepName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.to_string().hash(state);
    }
}

impl fmt::Display for StepName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            StepKind::Build => "build".to_string(),
            StepKind::SanitizeBuild => "sanitize-build".to_string(),
            StepKind::ScreenBuild => "screen-build".to_string(),
            StepKind::Test(n) => format!("test-{n}"),
            StepKind::Check(scenario) => format!("check-{scenario}"),
        };
        f.pad(&format!("{kind}{}", if self.alone { ALONE } else { "" }))
    }
}

impl FromStr for StepKind {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, UnknownName> {
        let test = s
            .strip_prefix("test-")
            .and_then(|n| n.parse::<usize>().ok());
        match (s, test) {
            ("build", _) => Ok(StepKind::Build),
            ("sanitize-build", _) => Ok(StepKind::SanitizeBuild),
            ("screen-build", _) => Ok(StepKind::ScreenBuild),
            (_, Some(n)) if n > 0 && s == format!("test-{n}") => Ok(StepKind::Test(n)),
            _ => match s.strip_prefix("check-") {
                Some(scenario) if !scenario.is_empty() => Ok(StepKind::Check(scenario.to_string())),
                _ => Err(UnknownName {
                    what: "step",
                    name: s.to_string(),
                    known: "`build`, `sanitize-build`, `screen-build`, `test-<n>`, \
                            `check-<scenario>`, each maybe followed by `-alone`"
                        .to_string(),
                }),
            },
        }
    }
}

impl FromStr for StepName {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, UnknownName> {
        if let Some(kind) = s.strip_suffix(ALONE).and_then(|k| k.parse().ok()) {
            return Ok(StepName { kind, alone: true });
        }
        s.parse().map(StepName::new).map_err(|mut e: UnknownName| {
            e.name = s.to_string();
            e
        })
    }
}

impl From<StepName> for String {
    fn from(s: StepName) -> String {
        s.to_string()
    }
}

impl TryFrom<String> for StepName {
    type Error = UnknownName;

    fn try_from(s: String) -> Result<Self, UnknownName> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_build_steps_build() {
        for step in ["build", "sanitize-build", "screen-build", "build-alone"] {
            assert!(step.parse::<StepName>().unwrap().builds(), "{step}");
        }
        for step in [
            "test-1",
            "check-build",
            "check-screen-build",
            "test-1-alone",
            "check-build-alone",
        ] {
            assert!(!step.parse::<StepName>().unwrap().builds(), "{step}");
        }
    }

    #[test]
    fn a_check_step_read_back_matches_its_scenario_in_either_reading() {
        let step: StepName = "check-h1-alone".parse().unwrap();
        assert!(step.checks("h1"));
        assert!(step.checks("h1-alone"));
        assert!(!step.checks("h10"));
        assert!(StepName::check("h1").checks("h1"));
        assert!(!StepName::check("h1").checks("h1-alone"));
        // Built, not read back: the check of scenario `h1-alone` is written as the re-run of `h1`.
        assert!(StepName::check("h1-alone").checks("h1"));
        assert_eq!(StepName::check("h1-alone"), step);
        assert!(!"test-1".parse::<StepName>().unwrap().checks("1"));
    }
}
