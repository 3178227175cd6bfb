//! Renderers: they turn results into text and never decide or measure anything.

pub mod terminal;
