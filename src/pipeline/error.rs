//! The one error of the confirm and campaign pipelines: something that stops them without a
//! verdict on the candidate. Each variant picks its exit code; `failure::Failure` prints it with
//! its chain of causes.
//!
//! An error of a stage below (a tree that cannot be pinned, a sandbox that cannot be had, a key
//! found in the records) goes in whole ([`PipelineError::usage`], [`PipelineError::internal`],
//! `KeyLeak`), so what caused it is still there to print; a message of evo's own goes in the
//! same way. Only the baseline's failure is a text alone: what its steps printed.

use std::path::Path;

pub use crate::failure::{Cause, Doing};
use crate::path::shown;

/// Something that stops a confirmation or a campaign without a verdict on the candidate.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The inputs are wrong (baseline does not resolve, repository missing, ...), as `source`
    /// says with its own causes (or a message alone); `note` follows its message.
    #[error("{source}{note}")]
    Usage {
        #[source]
        source: Cause,
        note: String,
    },
    /// The baseline itself fails a step: the workload or baseline must be fixed first.
    #[error("the baseline itself fails: {0}")]
    Baseline(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// evo's own failure, as `source` says with its own causes (or a message alone); `note`
    /// follows its message.
    #[error("{source}{note}")]
    Internal {
        #[source]
        source: Cause,
        note: String,
    },
    /// Stopped by Ctrl-C or a stop signal: no verdict, no receipt; a campaign's journal keeps
    /// everything finished before.
    /// `note` follows the one message ([`crate::interrupt::MESSAGE`]): what was kept, how to go on.
    #[error("{}{note}", crate::interrupt::MESSAGE)]
    Interrupted { note: String },
    /// The private signing key is in what evo would sign or write (`leak` says where): nothing
    /// was signed; `note` follows its message.
    #[error("{leak}{note}")]
    KeyLeak {
        #[source]
        leak: crate::receipt::KeyLeak,
        note: String,
    },
    /// A candidate of a campaign got the private signing key into its records (the confirmation's
    /// `KeyLeak`): it is rejected, and the campaign stops, since anything signed with a key a
    /// candidate holds proves nothing.
    #[error(
        "{0}\nthe campaign stopped: treat the signing key as compromised, make a new one (evo \
         keygen) and confirm again"
    )]
    CampaignKeyLeak(#[source] Box<PipelineError>),
}

impl PipelineError {
    /// The inputs are wrong, as `error` says: kept whole, its causes with it.
    pub(crate) fn usage(error: impl Into<Cause>) -> PipelineError {
        PipelineError::Usage {
            source: error.into(),
            note: String::new(),
        }
    }

    /// evo's own failure, as `error` says: kept whole, its causes with it.
    pub(crate) fn internal(error: impl Into<Cause>) -> PipelineError {
        PipelineError::Internal {
            source: error.into(),
            note: String::new(),
        }
    }

    /// The inputs are wrong: evo could not do `context` ("cannot copy the overlay"), as `error`
    /// says.
    pub(crate) fn usage_while(
        context: impl Into<String>,
        error: impl Into<Cause>,
    ) -> PipelineError {
        PipelineError::usage(Doing {
            context: context.into(),
            source: error.into(),
        })
    }

    /// evo's own failure while `context` ("cannot check out the tree"), as `error` says.
    pub(crate) fn internal_while(
        context: impl Into<String>,
        error: impl Into<Cause>,
    ) -> PipelineError {
        PipelineError::internal(Doing {
            context: context.into(),
            source: error.into(),
        })
    }

    /// Stopped by Ctrl-C or a stop signal, with nothing more to say.
    pub(crate) fn interrupted() -> PipelineError {
        PipelineError::Interrupted {
            note: String::new(),
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> PipelineError {
        PipelineError::Io {
            context: context.into(),
            source,
        }
    }

    /// The same error, pointing at the run directory that holds the logs.
    pub(crate) fn with_logs(self, dir: &Path, unsaved: Option<std::io::Error>) -> PipelineError {
        let note = match unsaved {
            None => format!("\n(logs and error.txt are in {})", shown(dir)),
            Some(e) => format!(
                "\n(logs are in {}; error.txt could not be written: {e})",
                shown(dir)
            ),
        };
        match self {
            PipelineError::Baseline(m) => PipelineError::Baseline(m + &note),
            PipelineError::Interrupted { note: n } => {
                PipelineError::Interrupted { note: n + &note }
            }
            PipelineError::KeyLeak { leak, note: n } => PipelineError::KeyLeak {
                leak,
                note: n + &note,
            },
            PipelineError::Usage { source, note: n } => PipelineError::Usage {
                source,
                note: n + &note,
            },
            PipelineError::Internal { source, note: n } => PipelineError::Internal {
                source,
                note: n + &note,
            },
            // Already says where it stands; a campaign's error has no run directory of its own.
            same @ (PipelineError::Io { .. } | PipelineError::CampaignKeyLeak(_)) => same,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            PipelineError::Usage { .. } | PipelineError::Baseline(_) => {
                crate::exit_codes::USAGE_ERROR
            }
            PipelineError::Interrupted { .. } => crate::exit_codes::INTERRUPTED,
            // A key found in the records is no verdict on the candidate's speed: nothing was
            // decided or signed, as for any failure of evo's own.
            PipelineError::Io { .. }
            | PipelineError::Internal { .. }
            | PipelineError::KeyLeak { .. }
            | PipelineError::CampaignKeyLeak(_) => crate::exit_codes::INTERNAL_ERROR,
        }
    }
}

impl From<PipelineError> for crate::failure::Failure {
    fn from(error: PipelineError) -> crate::failure::Failure {
        crate::failure::Failure::new(error.exit_code(), error)
    }
}

/// `map_err` for an I/O error: `context` says what evo was doing.
pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> PipelineError {
    let context = context.into();
    move |source| PipelineError::Io { context, source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::Failure;

    #[test]
    fn a_campaign_key_leak_says_the_leak_once_and_what_to_do() {
        let found = crate::receipt::KeyLeak {
            field: "logs/x.stderr".into(),
            encoding: crate::receipt::keyscan::Encoding::Hex,
        };
        let said = found.to_string();
        let leak = PipelineError::KeyLeak {
            leak: found,
            note: "\n(logs are in /r)".into(),
        };
        let f = Failure::from(PipelineError::CampaignKeyLeak(Box::new(leak)));
        assert_eq!(
            f.render(),
            format!(
                "error: {said}\n(logs are in /r)\nthe campaign stopped: treat the signing key as \
                 compromised, make a new one (evo keygen) and confirm again\n"
            )
        );
        assert_eq!(f.code, crate::exit_codes::INTERNAL_ERROR);
    }

    #[test]
    fn an_error_kept_whole_prints_its_causes_and_the_logs_after_its_message() {
        #[derive(Debug, thiserror::Error)]
        #[error("repo is not a git repository")]
        struct NotARepo(#[source] std::io::Error);
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "could not find repository");
        let e = PipelineError::usage(NotARepo(io)).with_logs(Path::new("/r"), None);
        assert_eq!(e.exit_code(), crate::exit_codes::USAGE_ERROR);
        assert_eq!(
            Failure::from(e).render(),
            "error: repo is not a git repository\n(logs and error.txt are in /r)\n  caused by: \
             could not find repository\n"
        );
        let e = PipelineError::internal("a message alone");
        assert_eq!(e.exit_code(), crate::exit_codes::INTERNAL_ERROR);
        assert_eq!(Failure::from(e).render(), "error: a message alone\n");
    }

    #[test]
    fn an_io_error_names_its_cause_in_the_chain() {
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full");
        let e = io_err("cannot write result.json")(io);
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("disk full"));
        assert_eq!(e.exit_code(), crate::exit_codes::INTERNAL_ERROR);
        assert_eq!(
            PipelineError::Baseline("x".into()).exit_code(),
            crate::exit_codes::USAGE_ERROR
        );
    }
}
