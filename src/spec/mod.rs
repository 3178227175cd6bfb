//! Input files: the workload, the campaign and the sealed holdouts.
//!
//! Parsing only: files become typed values (unknown keys refused, every error at file:line:column
//! with the field), and `schema` publishes their JSON Schema. Turning them into a plan with
//! resolved paths and a pinned baseline is the next stage's job.

pub mod campaign;
pub mod fleet;
pub mod load;
pub mod modes;
pub mod values;
pub mod workload;

pub use campaign::Campaign;
pub use load::{SpecError, load_json, parse_json};
pub use workload::{Holdouts, Workload};

/// Which input file a schema is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaKind {
    Workload,
    Campaign,
    Holdouts,
}

/// The JSON Schema of one input file, pretty-printed.
pub fn schema(kind: SchemaKind) -> String {
    let schema = match kind {
        SchemaKind::Workload => schemars::schema_for!(Workload),
        SchemaKind::Campaign => schemars::schema_for!(Campaign),
        SchemaKind::Holdouts => schemars::schema_for!(Holdouts),
    };
    serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
