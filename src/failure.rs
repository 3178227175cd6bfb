//! How a command fails: one type carrying the exit code, the error with its chain of causes and
//! what to try next, printed once, by `main`, as `error: …` with a `caused by:` line per cause.
//!
//! Every command in `app` returns `Result<_, Failure>`; nothing below `main` prints an error.
//! A failure keeps the error it was made from whole (a message is an error too), so the causes
//! below it reach `main`.

use crate::exit_codes;

/// What a failure can be made from: any error, with its causes, or a message (`String`, `&str`).
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error with what evo was doing in front of it: `cannot X: <the error>`, the error kept
/// whole as its cause.
#[derive(Debug, thiserror::Error)]
#[error("{context}: {source}")]
pub struct Doing {
    pub context: String,
    #[source]
    pub source: Cause,
}

impl Doing {
    /// `error`, with `context` (what evo was doing) in front.
    pub fn new(context: impl Into<String>, error: impl Into<Cause>) -> Doing {
        Doing {
            context: context.into(),
            source: error.into(),
        }
    }
}

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

    /// The command line or an input file is wrong, as `error` says (with its causes).
    pub fn usage(error: impl Into<Cause>) -> Failure {
        Failure::new(
            exit_codes::USAGE_ERROR,
            anyhow::Error::from_boxed(error.into()),
        )
    }

    /// A receipt that is not authentic or whose figures do not follow from its runs.
    pub fn verification(error: impl Into<Cause>) -> Failure {
        Failure::new(
            exit_codes::VERIFICATION_FAILED,
            anyhow::Error::from_boxed(error.into()),
        )
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hints.push(hint.into());
        self
    }

    /// The error's message, then each cause that the message before it does not already say.
    fn said(&self) -> Vec<String> {
        unsaid(self.error.chain().map(ToString::to_string))
    }

    /// The error with its causes, one a line (`caused by: …`), without the hints: what a
    /// machine reader gets (the `final` event's `error`).
    pub fn message(&self) -> String {
        self.said().join("\ncaused by: ")
    }

    /// The error, each cause that its message does not already say, and the hints.
    pub fn render(&self) -> String {
        let said = self.said();
        let mut text = format!("error: {}\n", said[0]);
        for cause in &said[1..] {
            text.push_str(&format!("  caused by: {cause}\n"));
        }
        for hint in &self.hints {
            text.push_str(&format!("  {hint}\n"));
        }
        text
    }
}

/// The messages of a chain of errors, leaving out each that the one kept before it already says
/// (most of evo's messages name their cause inline: "cannot create X: permission denied").
fn unsaid(chain: impl Iterator<Item = String>) -> Vec<String> {
    let mut said: Vec<String> = Vec::new();
    for message in chain {
        if said.last().is_some_and(|last| last.contains(&message)) {
            continue;
        }
        said.push(message);
    }
    said
}

/// `error` on one line with each of its causes that it does not already say, as `: cause`: what
/// a record (a gate's detail, a status's reason) keeps of an error.
pub fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let chain = std::iter::successors(Some(error), |e| e.source());
    unsaid(chain.map(ToString::to_string)).join(": ")
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
    fn a_usage_error_keeps_the_causes_of_what_it_was_made_from() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let f = Failure::usage(Outer(io));
        assert_eq!(
            f.render(),
            "error: cannot write result.json\n  caused by: no such file\n"
        );
        assert_eq!(f.code, exit_codes::USAGE_ERROR);
        assert_eq!(
            f.message(),
            "cannot write result.json\ncaused by: no such file"
        );
        let context = anyhow::Error::new(Outer(std::io::Error::other("disk full")));
        let f = Failure::verification(context.context("the receipt does not verify"));
        assert_eq!(f.render().lines().count(), 3, "{}", f.render());
        assert_eq!(f.code, exit_codes::VERIFICATION_FAILED);
    }

    #[test]
    fn a_record_keeps_the_causes_its_error_does_not_say_on_one_line() {
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full");
        assert_eq!(
            with_causes(&Outer(io)),
            "cannot write result.json: disk full"
        );
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full");
        assert_eq!(with_causes(&io), "disk full");
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
