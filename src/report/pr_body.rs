//! `pr_body.md`: the pull-request description, rendered from a user-editable minijinja template.
//!
//! Undefined variables are errors (with the template's line), so an edited template that names a
//! field evo does not provide fails loudly instead of printing an empty claim.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{Environment, UndefinedBehavior};

use super::pr_context::{self, ReceiptRef};
use crate::confirm::result::ConfirmResult;

/// The template shipped with evo (`templates/pr_body.md`).
pub const DEFAULT_TEMPLATE: &str = include_str!("../../templates/pr_body.md");
/// The name errors use for the shipped template.
pub const DEFAULT_TEMPLATE_NAME: &str = "templates/pr_body.md";

/// A template that does not parse or render; the message names the template and line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(String);

fn template_error(e: &minijinja::Error) -> TemplateError {
    let mut text = e.to_string();
    if let (Some(name), Some(line)) = (e.name(), e.line()) {
        if !text.contains(&format!("{name}:{line}")) {
            text = format!("{name}:{line}: {text}");
        }
    }
    TemplateError(text)
}

/// Renders `template` (named `name` in errors) for a sealed predicate and its receipt.
pub fn render(
    r: &ConfirmResult,
    receipt: &ReceiptRef,
    template: &str,
    name: &str,
) -> Result<String, TemplateError> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let syntax = SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .build()
        .map_err(|e| template_error(&e))?;
    env.set_syntax(syntax);
    env.add_template(name, template)
        .map_err(|e| template_error(&e))?;
    let ctx = minijinja::Value::from(Serde(pr_context::context(r, receipt)));
    env.get_template(name)
        .and_then(|t| t.render(ctx))
        .map_err(|e| template_error(&e))
}

/// Renders the shipped template.
pub fn render_default(r: &ConfirmResult, receipt: &ReceiptRef) -> Result<String, TemplateError> {
    render(r, receipt, DEFAULT_TEMPLATE, DEFAULT_TEMPLATE_NAME)
}
