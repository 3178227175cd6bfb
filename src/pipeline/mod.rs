//! What `evo confirm` and `evo campaign run` share: the way they fail (`error`) and the untimed
//! check engine both run a candidate through (`lane`: fresh tree, the patch's gates and apply,
//! build, artifacts, tests, checks), built on the build, test and check commands of a lane and
//! how a failed one is told (`checks`), running one of them in one tree (`steps`), the gates a
//! patch meets before it is applied (`patch_gates`), and whether the timed programs changed at
//! all (`unchanged`); and the one event type both emit while they work (`event`).

pub(crate) mod checks;
pub mod compilers;
pub mod error;
pub mod event;
pub mod instrumented;
pub(crate) mod lane;
pub(crate) mod patch_gates;
pub mod rundir;
pub mod steps;
pub mod unchanged;

pub use error::PipelineError;
pub(crate) use error::io_err;
