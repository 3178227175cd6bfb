//! `evo pr render`: the PR text of a receipt, once the receipt verifies (docs/design.md §5.11).

use anyhow::Context;

use crate::cli::PrRenderArgs;
use crate::exit_codes;
use crate::failure::Failure;

pub(super) fn pr_render_command(args: PrRenderArgs) -> Result<i32, Failure> {
    use crate::report::{pr_body, pr_context::ReceiptRef};
    let verified = super::verify::open_receipt(&args.receipt, &args.key)?.verified;
    let (template, name) = match &args.template {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => (text, path.display().to_string()),
            Err(e) => {
                let reading = format!("cannot read the template {}", path.display());
                return Err(Failure::usage(crate::failure::Doing::new(reading, e)));
            }
        },
        None => (
            pr_body::DEFAULT_TEMPLATE.to_string(),
            pr_body::DEFAULT_TEMPLATE_NAME.to_string(),
        ),
    };
    let reference = ReceiptRef {
        file: args.receipt.file_name().map_or_else(
            || crate::receipt::RECEIPT_FILE.to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        sha256: verified.sha256.clone(),
        key_id: verified.key_id.clone(),
    };
    let text = pr_body::render(&verified.statement.predicate, &reference, &template, &name)
        .map_err(Failure::usage)?;
    match &args.out {
        Some(path) => std::fs::write(path, &text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(exit_codes::ACCEPTED)
}
