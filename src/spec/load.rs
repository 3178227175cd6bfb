//! Reading a JSON input file into its typed form, with errors that point at the problem.
//!
//! Every error names the file, the line and column, and the field path (for example
//! `campaign.json:12:17: confirm.pairs: ...`), so a hand-written file can be fixed without guessing.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// A file that could not be read or does not describe a valid input.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {field}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        /// Dotted path of the offending field (`.` for the whole document).
        field: String,
        message: String,
    },
}

/// Parses `text` (the contents of `path`) as `T`, refusing unknown keys where `T` does.
pub fn parse_json<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, SpecError> {
    let invalid = |field: String, err: serde_json::Error| SpecError::Invalid {
        path: path.to_path_buf(),
        line: err.line(),
        column: err.column(),
        field,
        message: strip_position(&err.to_string()),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        // A syntax error has no field to name (the path would read `?`): say what it is.
        let field = match err.inner().classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                "not valid JSON".to_string()
            }
            _ => err.path().to_string(),
        };
        invalid(field, err.into_inner())
    })?;
    // Anything after the document is an error too.
    de.end().map_err(|err| invalid(".".to_string(), err))?;
    Ok(value)
}

/// serde_json appends " at line L column C"; evo puts the position in front instead.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// Reads and parses a JSON file.
pub fn load_json<T: DeserializeOwned>(path: &Path) -> Result<T, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_json(path, &text)
}
