//! The baseline's profile for the briefs (docs/design.md §2.9): before the first agent run, one
//! run of the first training scenario's counted command in the built baseline under callgrind,
//! kept in the run directory so every brief of the run, resumed or not, carries the same one.
//! Without it (no counted command, no valgrind, a fleet, a failed run) the briefs say why and
//! the search goes on.

use serde::{Deserialize, Serialize};

use super::CampaignRun;
use crate::fleet::FleetPlan;
use crate::measure::callgrind;
use crate::pipeline::PipelineError;
use crate::pipeline::checks::count_spec;
use crate::search::profile::{Profile, Profiled};
use crate::spec::campaign::Counter;
use crate::tree::Tree;

/// The file in the run directory that keeps the profile (or why there is none).
pub const PROFILE_FILE: &str = "baseline_profile.json";

/// What the briefs get: a profile, or the reason there is none.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct BriefProfile {
    pub profile: Option<Profile>,
    pub unavailable: Option<String>,
}

impl BriefProfile {
    fn unavailable(reason: String) -> BriefProfile {
        BriefProfile {
            profile: None,
            unavailable: Some(reason),
        }
    }
}

impl CampaignRun<'_> {
    /// Profiles the baseline once per run, before an agent reads a brief; builds the baseline
    /// (kept in `baseline` for the checks that follow) when it is profiled.
    pub(super) fn profile_baseline(
        &mut self,
        fleet: Option<&FleetPlan>,
        baseline: &mut Option<Tree>,
    ) -> Result<(), PipelineError> {
        if self.plan.spec.agent.is_none() || self.run_dir.path.join(PROFILE_FILE).is_file() {
            return Ok(());
        }
        let found = match self.why_not_profiled(fleet.is_some()) {
            Some(reason) => BriefProfile::unavailable(reason),
            None => self.run_profile(baseline)?,
        };
        if self.opts.stop.requested() {
            return Err(PipelineError::interrupted());
        }
        let text = serde_json::to_vec_pretty(&found).map_err(PipelineError::internal)?;
        self.run_dir
            .write(PROFILE_FILE, &text)
            .map_err(|e| PipelineError::io("cannot write the baseline's profile", e))?;
        Ok(())
    }

    /// The profile every brief of this run carries.
    pub(super) fn brief_profile(&self) -> BriefProfile {
        let text = std::fs::read(self.run_dir.path.join(PROFILE_FILE));
        match text.ok().and_then(|t| serde_json::from_slice(&t).ok()) {
            Some(found) => found,
            None => BriefProfile::unavailable("the baseline was not profiled".to_string()),
        }
    }

    /// Why the baseline is not run under callgrind at all.
    fn why_not_profiled(&self, on_fleet: bool) -> Option<String> {
        let Some(s) = self.training().into_iter().next() else {
            return Some("the workload has no training scenario".to_string());
        };
        let counts = |c: &[Counter]| c.contains(&Counter::Callgrind);
        let counted =
            counts(&self.plan.spec.search.counters) || counts(&self.plan.spec.confirm.counters);
        if s.count.is_none() && !counted {
            return Some(format!(
                "the training scenario `{}` declares no `count` run and no lane counts \
                 instructions, so its run is not run under callgrind; a `count` run gives a \
                 profile",
                s.name
            ));
        }
        if on_fleet {
            return Some(
                "the search screens on a fleet, and evo profiles only a baseline it builds \
                 itself"
                    .to_string(),
            );
        }
        if !on_path("valgrind") {
            return Some("valgrind is not installed (not on PATH)".to_string());
        }
        None
    }

    /// Builds the baseline if need be and profiles its counted run.
    fn run_profile(&mut self, baseline: &mut Option<Tree>) -> Result<BriefProfile, PipelineError> {
        let Some(s) = self.training().into_iter().next() else {
            return Ok(BriefProfile::default());
        };
        let tree = match baseline {
            Some(t) => t.clone(),
            None => baseline.insert(self.prepare_baseline()?).clone(),
        };
        self.stage("profile the baseline under callgrind");
        let spec = count_spec(&tree, &s, self.search_seed, &self.sandbox);
        let out = self.work.join("callgrind-profile");
        let mut runner = self.opts.runners.runner();
        let counted = callgrind::profile(&mut *runner, &spec, &out);
        let _ = std::fs::remove_dir_all(&out);
        Ok(match counted {
            Ok(counts) => BriefProfile {
                profile: Some(Profile::of(
                    &counts,
                    Profiled {
                        scenario: &s.name,
                        command: &spec.command,
                        cwd: s.cwd.as_deref().unwrap_or(""),
                        tree_root: &tree.root,
                        build_cwd: self.plan.workload.build.cwd.as_deref().unwrap_or(""),
                    },
                )),
                unavailable: None,
            },
            // Said without evo's work folders.
            Err(e) => BriefProfile::unavailable(format!(
                "the baseline's run of `{}` under callgrind gave no profile: {}",
                s.name,
                e.to_string().replace(&self.work.display().to_string(), "…")
            )),
        })
    }
}

/// Whether `program` is an executable file in a folder of `PATH`.
fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}
