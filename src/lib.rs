//! evo: decides, with evidence anyone can check, whether a candidate patch makes a program faster
//! without changing what it computes.
//!
//! The modules follow the stages of the work: `measure` runs commands and pairs them, `stats`
//! turns runs into figures and gates, `bench` drives one paired comparison, `report` renders it,
//! `app` wires the command line (`cli`) to all of it.

pub mod app;
pub mod bench;
pub mod campaign;
pub mod check;
pub mod cli;
pub mod cli_docs;
pub mod confirm;
pub mod environment;
pub mod exit_codes;
pub mod failure;
pub mod fleet;
pub mod host;
pub mod interrupt;
pub mod live;
pub mod measure;
pub mod pipeline;
pub mod plan;
pub mod receipt;
pub mod report;
pub mod scaffold;
pub mod spec;
pub mod stats;
pub mod tree;
