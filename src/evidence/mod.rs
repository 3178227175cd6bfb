//! The evidence model: what the stages produce and the verifier and renderers read. It sits below
//! all of them, so data flows one way: `confirm`, `campaign` and `bench` fill these records,
//! `receipt` signs and re-derives them, `report` renders them (docs/design.md §1.2, §5).
//!
//! `figures` holds the statistics of one paired comparison, computed from raw pairs alone;
//! `result` what a confirmation leaves in `result.json` (and the receipt's predicate); `names`
//! the identities a result records (gates, trees, check lanes) as types, and `steps` the names of
//! its steps; `outcome` how a candidate's checks end (the gate that stopped it, and the campaign
//! status computed from it); `verdict` the pure rules from gates to tier and verdict; `summary`
//! the end of a campaign in one table.

pub mod budget;
pub mod figures;
pub mod names;
pub mod outcome;
pub mod replay;
pub mod result;
pub mod steps;
pub mod summary;
pub mod verdict;
