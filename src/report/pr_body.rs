//! `pr_body.md`: the pull-request description, rendered from a user-editable minijinja template.
//!
//! Undefined variables are errors (with the template's line), so an edited template that names a
//! field evo does not provide fails loudly instead of printing an empty claim.
//!
//! Every value a template prints is escaped for markdown unless evo marked it as its own
//! assembled markdown (see `markdown`): a candidate's file name, explanation or program output
//! shows literally and cannot add a table, a heading, a link or an HTML comment, in evo's template
//! or in an edited one. Templates get these filters for outside text:
//!
//! - `md_inline`: literal text on one line (what `{{ value }}` does by default);
//! - `md_code`: inline code, fenced by a backtick run longer than any inside;
//! - `md_quote`: a blockquote, one `> ` line per line of the text;
//! - `md_fence(info)`: a fenced code block; a list is written one item per line.
//!
//! Only `|safe` and `{% autoescape false %}` print a string raw; evo's template uses neither.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Serde, Value, ValueKind};
use minijinja::{AutoEscape, Environment, Error, Output, State, UndefinedBehavior};

use super::markdown;
use super::pr_context::{self, ReceiptRef};
use crate::evidence::result::ConfirmResult;

/// The template shipped with evo (`templates/pr_body.md`).
pub const DEFAULT_TEMPLATE: &str = include_str!("../../templates/pr_body.md");
/// The name errors use for the shipped template.
pub const DEFAULT_TEMPLATE_NAME: &str = "templates/pr_body.md";
/// The auto-escape mode of every PR template.
const MARKDOWN: &str = "markdown";

/// A template that does not parse or render; the message names the template and line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(String);

fn template_error(e: &Error) -> TemplateError {
    let mut text = e.to_string();
    if let (Some(name), Some(line)) = (e.name(), e.line()) {
        if !text.contains(&format!("{name}:{line}")) {
            text = format!("{name}:{line}: {text}");
        }
    }
    TemplateError(text)
}

/// Prints a value: evo's own markdown and numbers as they are, any other string escaped.
fn format_value(out: &mut Output, state: &mut State, value: &Value) -> Result<(), Error> {
    let raw = value.is_safe()
        || matches!(state.auto_escape(), AutoEscape::None)
        || matches!(value.kind(), ValueKind::Number | ValueKind::Bool);
    let text = value.to_string();
    if raw {
        out.write_str(&text)?;
    } else {
        out.write_str(&markdown::inline(&text))?;
    }
    Ok(())
}

fn md_inline(value: &Value) -> Value {
    if value.is_safe() {
        return value.clone();
    }
    Value::from_safe_string(markdown::inline(&value.to_string()))
}

fn md_code(value: &Value) -> Value {
    Value::from_safe_string(markdown::code(&value.to_string()))
}

fn md_quote(value: &Value) -> Value {
    Value::from_safe_string(markdown::quote(&value.to_string()))
}

/// A string, or a list of lines.
fn md_fence(value: &Value, info: Option<&str>) -> Result<Value, Error> {
    let text = match value.kind() {
        ValueKind::Seq | ValueKind::Iterable => {
            let lines: Vec<String> = value.try_iter()?.map(|v| v.to_string()).collect();
            lines.join("\n")
        }
        _ => value.to_string(),
    };
    Ok(Value::from_safe_string(markdown::fence(
        &text,
        info.unwrap_or(""),
    )))
}

/// The environment every PR template renders in: strict undefined, markdown auto-escaping.
fn environment() -> Result<Environment<'static>, TemplateError> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let syntax = SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .build()
        .map_err(|e| template_error(&e))?;
    env.set_syntax(syntax);
    env.set_auto_escape_callback(|_| AutoEscape::Custom(MARKDOWN.into()));
    env.set_formatter(format_value);
    // JSON is marked safe by minijinja but is not inert markdown (`["x](y)"]` is a link).
    env.remove_filter("tojson");
    env.add_filter("md_inline", md_inline);
    env.add_filter("md_code", md_code);
    env.add_filter("md_quote", md_quote);
    env.add_filter("md_fence", md_fence);
    Ok(env)
}

/// Renders `template` (named `name` in errors) for a sealed predicate and its receipt.
pub fn render(
    r: &ConfirmResult,
    receipt: &ReceiptRef,
    template: &str,
    name: &str,
) -> Result<String, TemplateError> {
    let mut env = environment()?;
    env.add_template(name, template)
        .map_err(|e| template_error(&e))?;
    let ctx = Value::from(Serde(pr_context::context(r, receipt)));
    env.get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|e| template_error(&e))
}

/// Renders the shipped template.
pub fn render_default(r: &ConfirmResult, receipt: &ReceiptRef) -> Result<String, TemplateError> {
    render(r, receipt, DEFAULT_TEMPLATE, DEFAULT_TEMPLATE_NAME)
}
