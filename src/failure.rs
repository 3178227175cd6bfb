//! How a command fails: one type carrying the exit code, the error with its chain of causes and
//! what to try next, printed once, by `main`, as `error: …` with a `caused by:` line per cause.
//!
//! Every command in `app` returns `Result<_, Failure>`; nothing below `main` prints an error.

use crate::exit_codes;

/// A command that stopped without its result.
#[derive(Debug)]
pub struct Failure {
    /// The process's exit code (`exit_codes`).
    pub code: i32,
    pub error: anyhow::Error,
    /// Lines after the error: what to try.
    pub hints: Vec<String>,
}

impl Failure {
    pub fn new(code: i32, error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code,
            error: error.into(),
            hints: Vec::new(),
        }
    }

    /// The command line or an input file is wrong.
    pub fn usage(message: impl std::fmt::Display) -> Failure {
        Failure::new(exit_codes::USAGE_ERROR, anyhow::anyhow!("{message}"))
    }

    /// A receipt that is not authentic or whose figures do not follow from its runs.
    pub fn verification(message: impl std::fmt::Display) -> Failure {
        Failure::new(
            exit_codes::VERIFICATION_FAILED,
            anyhow::anyhow!("{message}"),
        )
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hints.push(hint.into());
        self
    }

    /// The error, each cause that its message does not already say, and the hints.
    pub fn render(&self) -> String {
        let mut text = format!("error: {}\n", self.error);
        let mut said = self.error.to_string();
        for cause in self.error.chain().skip(1) {
            let cause = cause.to_string();
            if said.contains(&cause) {
                continue;
            }
            text.push_str(&format!("  caused by: {cause}\n"));
            said = cause;
        }
        for hint in &self.hints {
            text.push_str(&format!("  {hint}\n"));
        }
        text
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.render().trim_end())
    }
}

/// Anything else that goes wrong is evo's own failure.
impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Failure {
        Failure::new(exit_codes::INTERNAL_ERROR, error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot write result.json")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn each_cause_is_printed_once_below_the_error() {
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full");
        let f = Failure::from(anyhow::Error::new(Outer(io)).context("the run stopped"));
        assert_eq!(
            f.render(),
            "error: the run stopped\n  caused by: cannot write result.json\n  caused by: disk full\n"
        );
        assert_eq!(f.code, exit_codes::INTERNAL_ERROR);
    }

    #[test]
    fn a_cause_the_message_already_says_is_not_repeated() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot read the journal: {0}")]
        struct Says(#[source] std::io::Error);
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let f = Failure::usage("x");
        assert_eq!(f.render(), "error: x\n");
        let f = Failure::new(2, Says(io)).hint("pass --resume latest");
        assert_eq!(
            f.render(),
            "error: cannot read the journal: no such file\n  pass --resume latest\n"
        );
    }
}
