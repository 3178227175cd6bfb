//! One vocabulary for how a candidate's checks end, in a confirmation and in a campaign's
//! screening: the gate that stopped it ([`GateName`], what `result.json` records) and how its step
//! failed. A campaign's [`Status`] for it is computed here, in one place, from that gate, so a
//! check is never told twice in two words that can drift apart.

use super::names::GateName;
use super::summary::Status;

/// How the step behind a failed gate failed, where a campaign's status says more than the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// It ran and failed, or what it made differs from the baseline's.
    Failed,
    /// It ran out of its time.
    TimedOut,
    /// The patch was refused outright: applying it found something unsafe, not a hunk that does
    /// not fit.
    Refused,
}

/// The gate that stopped a candidate, how, and why (the gate's detail, the candidate's reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateStop {
    pub gate: GateName,
    pub failure: Failure,
    pub detail: String,
}

impl GateStop {
    /// `gate` failed: its step ran and failed, as `detail` says.
    pub fn failed(gate: GateName, detail: impl Into<String>) -> GateStop {
        GateStop {
            gate,
            failure: Failure::Failed,
            detail: detail.into(),
        }
    }

    /// The campaign's status of a candidate stopped here.
    pub fn status(&self) -> Status {
        match (self.failure, self.gate) {
            (Failure::TimedOut, _) => Status::TimedOut,
            (Failure::Refused, _) | (_, GateName::PatchSafety | GateName::LaneProbes) => {
                Status::Refused
            }
            (Failure::Failed, GateName::Apply) => Status::DidNotApply,
            (Failure::Failed, GateName::Build) => Status::BuildFailed,
            (Failure::Failed, GateName::Tests) => Status::TestsFailed,
            (Failure::Failed, GateName::Differential) => Status::DifferentialMismatch,
            (Failure::Failed, GateName::Sanitizers) => Status::SanitizerFailure,
            // Gates of the timed runs: screening rejects a candidate whose timed run fails or
            // disagrees with the baseline's, or leaves processes behind.
            (Failure::Failed, GateName::TimedOutput | GateName::LeftoverProcesses) => {
                Status::Rejected
            }
        }
    }
}

/// How a candidate's checks ended: every gate passed, the timed programs are the baseline's
/// (`pipeline::unchanged`: nothing to time), or a gate stopped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckOutcome {
    Passed,
    Unchanged,
    Stopped(GateStop),
}

impl CheckOutcome {
    /// The campaign's status of a candidate whose checks ended so.
    pub fn status(&self) -> Status {
        match self {
            CheckOutcome::Passed => Status::Checked,
            CheckOutcome::Unchanged => Status::NoChange,
            CheckOutcome::Stopped(stop) => stop.status(),
        }
    }
}

impl From<GateStop> for CheckOutcome {
    fn from(stop: GateStop) -> CheckOutcome {
        CheckOutcome::Stopped(stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_gate_has_the_status_screening_always_gave_it() {
        let status = |gate, failure| {
            GateStop {
                gate,
                failure,
                detail: String::new(),
            }
            .status()
            .as_str()
        };
        let failed = [
            (GateName::PatchSafety, "refused"),
            (GateName::LaneProbes, "refused"),
            (GateName::Apply, "did not apply"),
            (GateName::Build, "build failed"),
            (GateName::Tests, "tests failed"),
            (GateName::Differential, "differential mismatch"),
            (GateName::Sanitizers, "sanitizer failure"),
            (GateName::TimedOutput, "rejected"),
            (GateName::LeftoverProcesses, "rejected"),
        ];
        assert_eq!(failed.len(), GateName::ALL.len());
        for (gate, want) in failed {
            assert_eq!(status(gate, Failure::Failed), want, "{gate}");
            assert_eq!(status(gate, Failure::TimedOut), "timed out", "{gate}");
            assert_eq!(status(gate, Failure::Refused), "refused", "{gate}");
        }
        assert_eq!(CheckOutcome::Passed.status(), Status::Checked);
        assert_eq!(CheckOutcome::Unchanged.status(), Status::NoChange);
    }

    #[test]
    fn every_way_the_search_checks_stop_a_candidate_is_an_end_a_screening_journal_may_show() {
        // The gates of `campaign::checks`, however their step ended: a node's journal that ends
        // a candidate so must be accepted (`Status::ends_search_checks`), and passing must not.
        let search_gates = [
            GateName::PatchSafety,
            GateName::LaneProbes,
            GateName::Apply,
            GateName::Build,
            GateName::Tests,
            GateName::Differential,
        ];
        for gate in search_gates {
            for failure in [Failure::Failed, Failure::TimedOut, Failure::Refused] {
                let stop = GateStop {
                    gate,
                    failure,
                    detail: String::new(),
                };
                assert!(stop.status().ends_search_checks(), "{gate} {failure:?}");
            }
        }
        assert!(CheckOutcome::Unchanged.status().ends_search_checks());
        assert!(!CheckOutcome::Passed.status().ends_search_checks());
        // Gates only a confirmation has are no end of a screening job's checks.
        let sanitizers = GateStop::failed(GateName::Sanitizers, "");
        assert!(!sanitizers.status().ends_search_checks());
    }
}
