//! What `evo confirm` and `evo campaign run` share: the way they fail (`error`) and the untimed
//! check engine both run their trees through (`checks`).

pub(crate) mod checks;
pub mod error;

pub use error::PipelineError;
pub(crate) use error::io_err;
