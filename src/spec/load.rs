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
        message: plain_words(&strip_position(&err.to_string())),
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

/// serde names Rust types (`expected u32`, `expected a map`); a file's author reads JSON, so the
/// expected and found kinds are said in JSON's words.
fn plain_words(message: &str) -> String {
    let Some((found, expected)) = message.rsplit_once(", expected ") else {
        return message.to_string();
    };
    let expected = match expected {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "an integer, 0 or more",
        "f32" | "f64" => "a number",
        "a sequence" => "a list",
        "a map" => "an object",
        "a borrowed string" => "a string",
        e if e.starts_with("struct ") => "an object",
        e => e,
    };
    let found = found
        .replacen("invalid type: floating point ", "invalid type: number ", 1)
        .replacen("invalid type: sequence", "invalid type: a list", 1)
        .replacen("invalid type: map", "invalid type: an object", 1);
    format!("{found}, expected {expected}")
}

/// Reads and parses a JSON file.
pub fn load_json<T: DeserializeOwned>(path: &Path) -> Result<T, SpecError> {
    let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_json(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_errors_say_what_json_wants_in_plain_words() {
        let cases = [
            (
                "invalid type: string \"nine\", expected i64",
                "invalid type: string \"nine\", expected an integer",
            ),
            (
                "invalid value: integer `-1`, expected u32",
                "invalid value: integer `-1`, expected an integer, 0 or more",
            ),
            (
                "invalid type: string \"ten\", expected f64",
                "invalid type: string \"ten\", expected a number",
            ),
            (
                "invalid type: floating point `1.5`, expected a string",
                "invalid type: number `1.5`, expected a string",
            ),
            (
                "invalid type: map, expected a sequence",
                "invalid type: an object, expected a list",
            ),
            (
                "invalid type: sequence, expected struct Workload",
                "invalid type: a list, expected an object",
            ),
            (
                "unknown field `x`, expected one of `a`, `b`",
                "unknown field `x`, expected one of `a`, `b`",
            ),
        ];
        for (serde, plain) in cases {
            assert_eq!(plain_words(serde), plain);
        }
    }

    #[test]
    fn a_word_for_a_number_reaches_the_error_in_plain_words() {
        let text = r#"{ "name": "x", "repo": "r", "baseline": "main", "workload": "w.json",
            "holdouts": "h.json", "confirm": { "pairs": "nine" }, "output": "o" }"#;
        let err = parse_json::<crate::spec::Campaign>(Path::new("c.json"), text).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.ends_with("confirm.pairs: invalid type: string \"nine\", expected an integer"),
            "{shown}"
        );
    }
}
