//! evo: decides, with evidence anyone can check, whether a candidate patch makes a program faster
//! without changing what it computes.
//!
//! The modules follow the stages of the work: `measure` runs commands and pairs them, `stats`
//! turns runs into figures and gates, `bench`, `confirm` and `campaign` drive the comparisons and
//! fill the evidence model (`evidence`), which `receipt` signs and re-derives and `report`
//! renders; `app` wires the command line (`cli`) to all of it. The layers and the one direction
//! data flows between them are in docs/design.md §1.2 (checked by `tests/it/layering.rs`).

pub mod app;
pub mod bench;
pub mod campaign;
pub mod check;
pub mod cli;
pub mod cli_docs;
pub mod confirm;
pub mod environment;
pub mod evidence;
pub mod exit_codes;
pub mod failure;
pub mod fleet;
pub mod host;
pub mod interrupt;
pub mod live;
pub mod measure;
pub mod path;
pub mod pipeline;
pub mod plan;
pub mod receipt;
pub mod report;
pub mod scaffold;
pub mod search;
pub mod spec;
pub mod stats;
pub mod tree;
