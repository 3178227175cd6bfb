//! A setup error is not a verdict. When the candidate's timed run fails, the baseline's same run
//! is tried alone in the same conditions before the candidate is blamed: a command that reads an
//! input the sandbox hides fails in both trees, and that is the workload's fault (exit 2, no
//! receipt), not a rejection of the patch.

use super::Run;
use crate::measure::runner::{RunSpec, Runner};
use crate::pipeline::PipelineError;
use crate::pipeline::checks::hidden_path_hint;

impl Run<'_> {
    /// Runs `baseline` (the baseline arm's spec of the timed run the candidate failed) once,
    /// alone. `Ok(())`: the baseline succeeds, so the candidate's failure is its own. `Err`: the
    /// baseline fails the same way, a `PipelineError::Baseline` saying why in the user's terms
    /// (`what` names the step, e.g. "a timed run of scenario `x`").
    ///
    /// To wire into `timed_failure`: on `MeasureError::RunFailed { arm: Arm::Candidate, .. }`,
    /// call `self.baseline_fails_too(runner, &b, &what)?` before failing the gate.
    pub(crate) fn baseline_fails_too(
        &mut self,
        runner: &mut dyn Runner,
        baseline: &RunSpec,
        what: &str,
    ) -> Result<(), PipelineError> {
        self.stage(&format!("{what}: the baseline's run alone"));
        let run = runner.run(baseline).map_err(PipelineError::internal)?;
        if run.succeeded() {
            return Ok(());
        }
        let status = match (run.timed_out, &run.status) {
            (true, _) => "timed out".to_string(),
            (false, crate::measure::record::ExitStatus::Exited { code }) => {
                format!("exit code {code}")
            }
            (false, crate::measure::record::ExitStatus::Signaled { signal }) => {
                format!("killed by signal {signal}")
            }
        };
        let mut message = format!(
            "{what} failed in the candidate's tree, and the baseline's same run fails too \
             ({status}): `{}`; this is the setup, not the patch",
            baseline.command
        );
        if !run.stderr_tail.trim().is_empty() {
            message.push_str(&format!("\nlast lines of its stderr:\n{}", run.stderr_tail));
        }
        if let Some(hint) = hidden_path_hint(&run.stderr_tail) {
            message.push_str(&format!("\n{hint}"));
        }
        Err(PipelineError::Baseline(message))
    }
}
