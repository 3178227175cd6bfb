//! What each stage of a confirmation hands the next: the prepared trees, the built ones, the
//! checked ones the measurement times, and [`Step`], a stage's value or the gate that stopped the
//! confirmation. A stage takes what the one before it returned, so none can run on trees that
//! were never made or built: the order is checked by the compiler, not at run time.

use crate::evidence::result::{GateName, TreeLabel};
use crate::tree::{Protected, Tree};

/// A stage's value, or the gate that stopped the confirmation there (already recorded as failed
/// in the result: what follows it does not run).
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step<T> {
    Go(T),
    Stopped(GateName),
}

/// The value of a `Result<Step<T>, _>`, or, when the stage stopped or failed, a return with that
/// from the function it is used in.
macro_rules! step {
    ($stage:expr) => {
        match $stage? {
            $crate::confirm::stages::Step::Go(value) => value,
            $crate::confirm::stages::Step::Stopped(gate) => {
                return Ok($crate::confirm::stages::Step::Stopped(gate));
            }
        }
    };
}
pub(crate) use step;

/// The two trees every stage after preparation works on, which `prepare_trees` returns once the
/// patch has met its gates and applied: clean checkouts of the pinned baseline, the candidate's
/// with the patch.
#[derive(Debug, Clone)]
pub(crate) struct MainTrees {
    pub(crate) baseline: Tree,
    pub(crate) candidate: Tree,
}

impl MainTrees {
    /// Both trees with their labels, baseline first.
    pub(crate) fn labelled(&self) -> [(TreeLabel, &Tree); 2] {
        [
            (TreeLabel::Baseline, &self.baseline),
            (TreeLabel::Candidate, &self.candidate),
        ]
    }
}

/// What the first stage makes: the main trees, the configuration-only tree when that lane runs,
/// and the protected files as the baseline's fresh tree had them, against which every later
/// tree is checked (`protect`).
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) main: MainTrees,
    /// The baseline plus only the configuration part of the patch, built with the others.
    pub(crate) config_only: Option<Tree>,
    pub(crate) protected: Protected,
}

/// The sanitized twins of the main trees, built with the workload's `sanitize` section.
#[derive(Debug)]
pub(crate) struct SanitizedTrees {
    pub(crate) baseline: Tree,
    pub(crate) candidate: Tree,
}

/// What the build stage hands the checks: every tree whose build succeeded.
#[derive(Debug)]
pub(crate) struct Built {
    pub(crate) timed: TimedTrees,
    /// Present when the workload has a `sanitize` section; the sanitizer lane checks them.
    pub(crate) sanitized: Option<SanitizedTrees>,
}

/// The trees the timed runs use, which the checks hand the measurement (the sanitized ones stay
/// behind): the main trees, and the optional lanes' trees that built.
#[derive(Debug)]
pub(crate) struct TimedTrees {
    pub(crate) main: MainTrees,
    /// The baseline built a second time, the other arm of the A/A pairs; `None` when its build
    /// failed (the A/A pairs then compare the baseline with itself, and the result says so).
    pub(crate) baseline_again: Option<Tree>,
    /// The configuration-only tree, when its lane runs and its build succeeded.
    pub(crate) config_only: Option<Tree>,
    pub(crate) protected: Protected,
}

impl TimedTrees {
    /// Every tree a timed run uses, labelled: the baseline, the candidate, the second baseline
    /// and the configuration-only tree.
    pub(crate) fn labelled(&self) -> Vec<(TreeLabel, &Tree)> {
        let lanes = [
            (TreeLabel::BaselineAgain, self.baseline_again.as_ref()),
            (TreeLabel::ConfigOnly, self.config_only.as_ref()),
        ];
        (self.main.labelled().into_iter())
            .chain(lanes.into_iter().filter_map(|(l, t)| t.map(|t| (l, t))))
            .collect()
    }
}

/// What the measuring stage hands the instruction counts: the main trees, once their timed runs
/// are over (or a gate ended them). `measure_all` makes it and `count_instructions` takes it, so
/// the counts cannot be called without the timed runs' value in hand: a count never comes before
/// a run whose result it could replay. (Within `confirm` the struct can be built by hand; no code
/// does, and none should.)
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured<'t> {
    pub(crate) main: &'t MainTrees,
}
