//! Collecting candidates: the campaign's patch files, and the patches an agent command makes when
//! it is run in fresh trees with the brief on stdin.
//!
//! Agent protocol: evo checks out the pinned baseline without harness, holdouts or evo's files,
//! writes the brief as JSON to a file outside the tree, runs the agent command in the tree with
//! that file on stdin and a time limit, then takes `git diff` of the tree (new files included) as
//! the candidate patch. An `EVO_EXPLANATION.md` left at the tree root is taken as the agent's
//! stated reason and kept out of the patch; so is an `EVO_COST.json`, `{"cost": <number>}`, what
//! the run says it cost in the user's own units (what `search.max_cost` counts; a malformed one
//! fails the run with the reason). From the second round on, the brief carries the
//! history of the rounds before (`search::brief`), and with `agent.base: "best"` the tree starts
//! from the best candidate so far; the patch is still the whole change against the baseline.

use std::path::Path;

use super::CampaignRun;
use super::journal::Entry;
use crate::evidence::result::TreeLabel;
use crate::evidence::summary::{Source, Status};
use crate::failure::with_causes;
use crate::measure::runner::RunSpec;
use crate::pipeline::PipelineError;
use crate::pipeline::event::Event;
use crate::search::{Brief, BriefScenario, HistoryEntry, Parent};
use crate::spec::campaign::{AgentBase, AgentSpec};
use crate::spec::workload::Role;
use crate::tree::Tree;

/// The file an agent may leave at the tree root to say why its change is faster.
pub const EXPLANATION_FILE: &str = "EVO_EXPLANATION.md";
const EXPLANATION_CAP: usize = 16 * 1024;
/// The file an agent may leave at the tree root to say what its run cost: `{"cost": <number>}`,
/// a non-negative number in the user's own units (dollars, tokens), summed against
/// `search.max_cost`.
pub const COST_FILE: &str = "EVO_COST.json";
const COST_CAP: u64 = 4 * 1024;
/// The variable that tells an agent run where evo's own binary is, for the built-in agents.
pub const EVO_BIN: &str = "EVO_BIN";

/// Where one agent run stands in the search.
#[derive(Debug, Clone, Copy)]
pub(super) struct AgentRun {
    pub round: usize,
    /// Within its round, from 1.
    pub run: usize,
}

impl CampaignRun<'_> {
    fn next_index(&self) -> usize {
        self.state.candidates.len() + 1
    }

    /// Copies the campaign's patch files into the run directory (once; resumable).
    pub(super) fn collect_patches(&mut self) -> Result<(), PipelineError> {
        let patch_count = self
            .state
            .candidates
            .iter()
            .filter(|c| c.source == Source::Patch)
            .count();
        for p in self
            .plan
            .patches
            .iter()
            .skip(patch_count)
            .cloned()
            .collect::<Vec<_>>()
        {
            let index = self.next_index();
            let read = crate::tree::read_patch(&p.file).map_err(|e| {
                PipelineError::usage_while(format!("cannot read the patch {}", p.file.display()), e)
            })?;
            // A patch over the cap is journaled with an empty copy: accounted for, not read.
            let (bytes, refused) = match read {
                crate::tree::PatchFile::Bytes(bytes) => (bytes, None),
                crate::tree::PatchFile::TooLarge(size) => (
                    Vec::new(),
                    Some(crate::tree::too_large_message(&p.file, size)),
                ),
            };
            let new = NewCandidate {
                name: &p.name,
                source: Source::Patch,
                explanation: p.explanation.clone(),
                round: 1,
                parent: None,
                cost: None,
            };
            self.add_candidate(index, new, &bytes)?;
            if let Some(reason) = refused {
                self.set_status(index, Status::Refused, reason)?;
            }
        }
        Ok(())
    }

    /// Journals candidate `index` with its patch `bytes`, kept as `candidate_<index>.patch`.
    pub(super) fn add_candidate(
        &mut self,
        index: usize,
        new: NewCandidate<'_>,
        bytes: &[u8],
    ) -> Result<(), PipelineError> {
        let patch_file = format!("candidate_{index}.patch");
        self.run_dir
            .write(&patch_file, bytes)
            .map_err(|e| PipelineError::io("cannot write a candidate patch", e))?;
        let search_s = self.search_seconds();
        self.record(Entry::Candidate {
            index,
            name: new.name.to_string(),
            source: new.source,
            patch_file,
            explanation: new.explanation,
            round: new.round,
            parent: new.parent,
            search_s,
            cost: new.cost,
        })
    }

    /// The brief of one agent run: the campaign's, the workload's training side, every
    /// candidate of the rounds before and the baseline's profile (docs/design.md §2.9).
    fn brief(&self, at: AgentRun, parent: Option<Parent>) -> Result<Brief, PipelineError> {
        let c = &self.plan.spec;
        let w = &self.plan.workload;
        let mut history = Vec::new();
        let found = self.brief_profile();
        for cand in self.state.candidates.iter().filter(|x| x.round < at.round) {
            let bytes = self.candidate_patch(cand.index)?.bytes;
            let (patch, patch_truncated) = HistoryEntry::quote_patch(&bytes);
            let (status, reason) = HistoryEntry::search_status(cand.status, &cand.reason);
            let screened = super::summary::screening_median(cand);
            history.push(HistoryEntry {
                index: cand.index,
                name: cand.name.clone(),
                source: cand.source.clone(),
                round: cand.round,
                parent: cand.parent,
                status,
                reason,
                screening_median: screened,
                screening_pairs: cand.pairs.len(),
                explanation: cand.explanation.clone(),
                patch,
                patch_truncated,
            });
        }
        Ok(Brief {
            brief_version: crate::search::BRIEF_VERSION,
            objective: c.brief.objective.clone(),
            bottleneck: c.brief.bottleneck.clone(),
            constraints: c.brief.constraints.clone(),
            workload: w.name.clone(),
            build: w.build.command.clone(),
            build_cwd: w.build.cwd.clone().unwrap_or_default(),
            test: w.test.command.as_slice().to_vec(),
            scenarios: (w.scenarios.iter())
                .filter(|s| s.role == Role::Training)
                .map(|s| BriefScenario {
                    name: s.name.clone(),
                    run: s.run.clone(),
                    check: s.check.clone(),
                    cwd: s.cwd.clone().unwrap_or_default(),
                })
                .collect(),
            protected: w.protected.clone(),
            config_files: w.config_files.clone(),
            search_seed: self.search_seed,
            explanation_file: EXPLANATION_FILE.to_string(),
            cost_file: COST_FILE.to_string(),
            round: at.round,
            rounds: self.rounds(),
            run: at.run,
            runs_per_round: c.agent.as_ref().map_or(1, |a| a.count.get()),
            parent,
            history,
            profile: found.profile,
            profile_unavailable: found.unavailable,
        })
    }

    /// Runs the agent once in a fresh tree (the baseline, or the best candidate so far with
    /// `agent.base: "best"`) and journals what it made.
    pub(super) fn agent_run(
        &mut self,
        agent: &AgentSpec,
        at: AgentRun,
    ) -> Result<(), PipelineError> {
        let number = self.state.agent_runs_done + 1;
        let index = self.next_index();
        let name = format!("agent-{number}");
        // The agent's tree: baseline files only, no overlay (the harness stays outside).
        let tree = self.fresh_tree(TreeLabel::Agent(number), false)?;
        let parent = match agent.base {
            AgentBase::Best => self.start_from_best(&tree)?,
            AgentBase::Baseline => None,
        };
        // What the tree holds before the agent runs: its parent's change, or nothing.
        let before = match parent {
            Some(_) => crate::tree::diff_worktree(&tree).map_err(PipelineError::internal)?,
            None => Vec::new(),
        };
        let brief = self.brief(at, parent.clone())?;
        let text = serde_json::to_vec_pretty(&brief).map_err(PipelineError::internal)?;
        // Kept beside the agent's logs: what it was told is part of the record.
        let brief_file = format!("logs/{name}.brief.json");
        let brief_path = self.run_dir.path.join(&brief_file);
        std::fs::create_dir_all(self.run_dir.path.join("logs"))
            .and_then(|()| std::fs::write(&brief_path, &text))
            .map_err(|e| PipelineError::io("cannot write the agent's brief", e))?;
        // Confined like a build (its tree writable, nothing of evo's visible) but with the
        // network; its own variables on top of the allow-list.
        let mut env = self.sandbox.environment().clone();
        let passed = agent.pass_env.iter();
        for var in passed.filter(|n| !crate::spec::modes::never_passed(n)) {
            if let Some(value) = std::env::var_os(var).and_then(|v| v.into_string().ok()) {
                env.insert(var.clone(), value);
            }
        }
        let sandbox = self.sandbox.for_agent(&tree.root, Some(&tree.root));
        // evo itself, where the agent can run it (`"$EVO_BIN" agent build-flags`): the sandbox
        // shows evo's binary at its process 1's path.
        let evo_bin = match &sandbox {
            Some(_) => Some(crate::measure::init::INIT_PATH.to_string()),
            None => std::env::current_exe()
                .ok()
                .and_then(|p| p.into_os_string().into_string().ok()),
        };
        if let Some(bin) = evo_bin {
            env.insert(EVO_BIN.to_string(), bin);
        }
        let spec = RunSpec {
            sandbox,
            base_env: Some(env),
            cwd: Some(tree.root.clone()),
            stdin_file: Some(brief_path),
            stdout_file: Some(self.run_dir.path.join(format!("logs/{name}.stdout.log"))),
            stderr_file: Some(self.run_dir.path.join(format!("logs/{name}.stderr.log"))),
            ..RunSpec::new(agent.command.clone(), agent.timeout_s.duration())
        };
        let mut runner = self.opts.runners.runner();
        let outcome = runner.run(&spec).map_err(PipelineError::internal)?;
        let explanation = take_explanation(&tree.root);
        let cost = take_cost(&tree.root);
        let bytes = crate::tree::diff_worktree(&tree).map_err(PipelineError::internal)?;
        let new = NewCandidate {
            name: &name,
            source: Source::Agent,
            explanation,
            round: at.round,
            parent: parent.as_ref().map(|p| p.index),
            cost: cost.as_ref().ok().copied().flatten(),
        };
        self.add_candidate(index, new, &bytes)?;
        let verdict = if outcome.timed_out {
            Some((
                Status::TimedOut,
                format!(
                    "the agent did not finish within {} s",
                    agent.timeout_s.get()
                ),
            ))
        } else if !outcome.status.success() {
            // The sandbox's own message, where it is what failed (a folder it could not enter,
            // a bind it could not make): otherwise only the agent's log would say why.
            let sandbox = (outcome.stderr_tail.lines())
                .rev()
                .find(|l| l.starts_with("bwrap: "))
                .map(|l| format!("; the sandbox could not start it: {}", l.trim()))
                .unwrap_or_default();
            Some((
                Status::AgentFailed,
                format!(
                    "the agent exited with code {}{sandbox}",
                    outcome.status.shell_code()
                ),
            ))
        } else if bytes.is_empty() {
            Some((Status::NoChange, "the agent changed nothing".to_string()))
        } else if bytes == before {
            Some((
                Status::NoChange,
                "the agent changed nothing over its parent".to_string(),
            ))
        } else {
            None
        };
        // A cost that cannot be read fails the run, whatever else it did: the budget would not
        // be true otherwise.
        let verdict = match (&cost, verdict) {
            (Err(why), None | Some((Status::NoChange, _))) => {
                Some((Status::AgentFailed, with_causes(why)))
            }
            (Err(why), Some((status, reason))) => {
                Some((status, format!("{reason}; {}", with_causes(why))))
            }
            (Ok(_), verdict) => verdict,
        };
        if matches!(cost, Ok(None)) && self.plan.spec.search.max_cost.is_some() {
            (self.on_event)(Event::Warning(format!(
                "{name} reported no cost ({COST_FILE}): search.max_cost counts it as 0"
            )));
        }
        if let Some((status, reason)) = verdict {
            self.set_status(index, status, reason)?;
        }
        let _ = std::fs::remove_dir_all(&tree.root);
        Ok(())
    }

    /// Applies the best screened candidate so far to the agent's `tree`: the parent the brief
    /// names. `None` (the tree stays the baseline) while none gained, or when its patch does not
    /// apply without the harness (said in a warning).
    fn start_from_best(&mut self, tree: &Tree) -> Result<Option<Parent>, PipelineError> {
        let Some((index, median)) = self.best_screened() else {
            return Ok(None);
        };
        let bytes = self.candidate_patch(index)?.bytes;
        if let Err(e) = crate::tree::apply_patch(tree, &bytes) {
            (self.on_event)(Event::Warning(format!(
                "the agent run starts from the baseline: the best candidate ({index}) does \
                     not apply to a tree without the harness: {}",
                with_causes(&e)
            )));
            return Ok(None);
        }
        let name = self
            .candidate_name(index)
            .map_or_else(String::new, |c| c.name);
        Ok(Some(Parent {
            index,
            name,
            screening_median: Some(median),
        }))
    }
}

/// A candidate about to be journaled.
pub(super) struct NewCandidate<'a> {
    pub name: &'a str,
    pub source: Source,
    pub explanation: Option<String>,
    pub round: usize,
    pub parent: Option<usize>,
    /// What its agent run reported it cost.
    pub cost: Option<f64>,
}

/// Why a file an agent left at the tree root does not say what it must.
#[derive(Debug, thiserror::Error)]
pub(super) enum RootFileError {
    #[error(transparent)]
    Read(#[from] std::io::Error),
    #[error("it is not a regular file")]
    NotAFile,
    #[error("it is larger than {0} bytes")]
    TooLarge(u64),
    #[error(transparent)]
    NotJson(#[from] serde_json::Error),
    #[error("the cost {0} is negative")]
    Negative(f64),
}

/// An agent's cost file that is not `{"cost": <number ≥ 0>}`: the reason its run fails.
#[derive(Debug, thiserror::Error)]
#[error("the agent's {COST_FILE} is not {{\"cost\": <a number, 0 or more>}}: {0}")]
pub(super) struct BadCostFile(#[source] RootFileError);

/// Reads and removes a file an agent left at the tree root, so it is not part of the patch:
/// `None` when there is none, `Err` when it is not a regular file, else at most `cap + 1` of its
/// bytes (never the whole of a huge file), so a caller can tell one over the cap.
fn take_root_file(root: &Path, name: &str, cap: u64) -> Option<Result<Vec<u8>, RootFileError>> {
    use std::io::Read;
    let path = root.join(name);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let read = if meta.is_file() {
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(cap + 1).read_to_end(&mut bytes))
            .map(|_| bytes)
            .map_err(RootFileError::Read)
    } else {
        Err(RootFileError::NotAFile)
    };
    let _ = std::fs::remove_file(&path);
    Some(read)
}

/// Reads and removes the agent's explanation file, cut to [`EXPLANATION_CAP`] bytes.
fn take_explanation(root: &Path) -> Option<String> {
    let mut bytes = take_root_file(root, EXPLANATION_FILE, EXPLANATION_CAP as u64)?.ok()?;
    bytes.truncate(EXPLANATION_CAP);
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// What the cost file says: the run's reported cost, the file's form.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CostReport {
    cost: f64,
}

/// Reads and removes the agent's cost file, so it is not part of the patch: `Ok(None)` when
/// there is none, `Err` (the reason the run fails) when it is not `{"cost": <number ≥ 0>}`.
fn take_cost(root: &Path) -> Result<Option<f64>, BadCostFile> {
    let Some(read) = take_root_file(root, COST_FILE, COST_CAP) else {
        return Ok(None);
    };
    let parsed = read.and_then(|bytes| {
        if bytes.len() as u64 > COST_CAP {
            return Err(RootFileError::TooLarge(COST_CAP));
        }
        let report: CostReport = serde_json::from_slice(&bytes)?;
        if report.cost.is_finite() && report.cost >= 0.0 {
            Ok(report.cost)
        } else {
            Err(RootFileError::Negative(report.cost))
        }
    });
    parsed.map(Some).map_err(BadCostFile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost_of(text: &str) -> Result<Option<f64>, BadCostFile> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(COST_FILE), text).unwrap();
        let cost = take_cost(dir.path());
        assert!(!dir.path().join(COST_FILE).exists(), "the file is taken");
        cost
    }

    #[test]
    fn a_cost_file_is_a_non_negative_number_or_the_reason_it_is_not() {
        assert_eq!(
            take_cost(tempfile::tempdir().unwrap().path()).unwrap(),
            None
        );
        assert_eq!(cost_of(r#"{"cost": 0.25}"#).unwrap(), Some(0.25));
        assert_eq!(cost_of(r#"{"cost": 0}"#).unwrap(), Some(0.0));
        for bad in [
            r#"{"cost": -1}"#,
            r#"{"cost": "3"}"#,
            r#"{"cost": 1e999}"#,
            r#"{"cost": 1, "unit": "usd"}"#,
            "0.5",
            "",
            &format!(r#"{{"cost": 1{}}}"#, " ".repeat(5000)),
        ] {
            let err = cost_of(bad).unwrap_err().to_string();
            assert!(err.contains("EVO_COST.json is not"), "{bad}: {err}");
        }
    }
}
