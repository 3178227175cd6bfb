//! Renderers: they turn results into text and never decide or measure anything.

pub mod events;
pub mod jobs;
pub mod markdown;
pub mod outline;
pub mod pairs_svg;
pub mod pr_body;
pub mod pr_checks;
pub mod pr_context;
mod pr_sections;
pub mod pr_summary;
pub mod progress;
pub mod runs_csv;
pub mod scenario_summary;
pub mod terminal;
pub mod wording;
