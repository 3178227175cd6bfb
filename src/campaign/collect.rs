//! Collecting candidates: the campaign's patch files, and the patches an agent command makes when
//! it is run in fresh trees with the brief on stdin.
//!
//! Agent protocol: evo checks out the pinned baseline without harness, holdouts or evo's files,
//! writes the brief as JSON to a file outside the tree, runs the agent command in the tree with
//! that file on stdin and a time limit, then takes `git diff` of the tree (new files included) as
//! the candidate patch. An `EVO_EXPLANATION.md` left at the tree root is taken as the agent's
//! stated reason and kept out of the patch.

use std::path::Path;

use serde::Serialize;

use super::CampaignRun;
use super::journal::Entry;
use crate::evidence::result::TreeLabel;
use crate::evidence::summary::{Source, Status};
use crate::measure::runner::RunSpec;
use crate::pipeline::PipelineError;
use crate::spec::workload::Role;

/// The file an agent may leave at the tree root to say why its change is faster.
pub const EXPLANATION_FILE: &str = "EVO_EXPLANATION.md";
const EXPLANATION_CAP: usize = 16 * 1024;

/// What the agent reads on stdin.
#[derive(Debug, Serialize)]
struct AgentBrief<'a> {
    objective: &'a str,
    bottleneck: &'a str,
    constraints: &'a [String],
    workload: &'a str,
    build: &'a str,
    test: &'a [String],
    /// Training scenarios only: holdouts are sealed.
    scenarios: Vec<BriefScenario<'a>>,
    protected: &'a [String],
    /// The value `{seed}` takes in the search's checks and timed runs.
    search_seed: u64,
    explanation_file: &'static str,
}

#[derive(Debug, Serialize)]
struct BriefScenario<'a> {
    name: &'a str,
    run: &'a str,
    check: &'a str,
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
                PipelineError::Usage(format!("cannot read the patch {}: {e}", p.file.display()))
            })?;
            // A patch over the cap is journaled with an empty copy: accounted for, not read.
            let (bytes, refused) = match read {
                crate::tree::PatchFile::Bytes(bytes) => (bytes, None),
                crate::tree::PatchFile::TooLarge(size) => (
                    Vec::new(),
                    Some(crate::tree::too_large_message(&p.file, size)),
                ),
            };
            self.add_candidate(index, &p.name, Source::Patch, &bytes, p.explanation.clone())?;
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
        name: &str,
        source: Source,
        bytes: &[u8],
        explanation: Option<String>,
    ) -> Result<(), PipelineError> {
        let patch_file = format!("candidate_{index}.patch");
        self.run_dir
            .write(&patch_file, bytes)
            .map_err(|e| PipelineError::io("cannot write a candidate patch", e))?;
        self.record(Entry::Candidate {
            index,
            name: name.to_string(),
            source,
            patch_file,
            explanation,
        })
    }

    fn brief_json(&self) -> Result<Vec<u8>, PipelineError> {
        let c = &self.plan.spec;
        let w = &self.plan.workload;
        let brief = AgentBrief {
            objective: &c.brief.objective,
            bottleneck: &c.brief.bottleneck,
            constraints: &c.brief.constraints,
            workload: &w.name,
            build: &w.build.command,
            test: w.test.command.as_slice(),
            scenarios: w
                .scenarios
                .iter()
                .filter(|s| s.role == Role::Training)
                .map(|s| BriefScenario {
                    name: &s.name,
                    run: &s.run,
                    check: &s.check,
                })
                .collect(),
            protected: &w.protected,
            search_seed: self.search_seed,
            explanation_file: EXPLANATION_FILE,
        };
        serde_json::to_vec_pretty(&brief).map_err(|e| PipelineError::Internal(e.to_string()))
    }

    /// Runs the agent command `count` times (resumable: finished runs are not repeated).
    pub(super) fn collect_agent_runs(&mut self) -> Result<(), PipelineError> {
        let Some(agent) = self.plan.spec.agent.clone() else {
            return Ok(());
        };
        let brief_path = self.work.join("brief.json");
        std::fs::write(&brief_path, self.brief_json()?)
            .map_err(|e| PipelineError::io("cannot write the agent's brief", e))?;
        for run in self.state.agent_runs_done..agent.count.get() {
            self.stage(&format!("agent run {}/{}", run + 1, agent.count.get()));
            let index = self.next_index();
            let name = format!("agent-{}", run + 1);
            // The agent's tree: baseline files only, no overlay (the harness stays outside).
            let tree = self.fresh_tree(TreeLabel::Agent(run + 1), false)?;
            // Confined like a build (its tree writable, nothing of evo's visible) but with the
            // network; its own variables on top of the allow-list.
            let mut env = self.sandbox.environment().clone();
            let passed = agent.pass_env.iter();
            for name in passed.filter(|n| !crate::spec::modes::never_passed(n)) {
                if let Some(value) = std::env::var_os(name).and_then(|v| v.into_string().ok()) {
                    env.insert(name.clone(), value);
                }
            }
            let spec = RunSpec {
                sandbox: self.sandbox.for_agent(&tree.root, Some(&tree.root)),
                base_env: Some(env),
                cwd: Some(tree.root.clone()),
                stdin_file: Some(brief_path.clone()),
                stdout_file: Some(self.run_dir.path.join(format!("logs/{name}.stdout.log"))),
                stderr_file: Some(self.run_dir.path.join(format!("logs/{name}.stderr.log"))),
                ..RunSpec::new(agent.command.clone(), agent.timeout_s.duration())
            };
            let mut runner = self.opts.runners.runner();
            let outcome = runner
                .run(&spec)
                .map_err(|e| PipelineError::Internal(e.to_string()))?;
            let explanation = take_explanation(&tree.root);
            let bytes = crate::tree::diff_worktree(&tree)
                .map_err(|e| PipelineError::Internal(e.to_string()))?;
            self.add_candidate(index, &name, Source::Agent, &bytes, explanation)?;
            let verdict = if outcome.timed_out {
                Some((
                    Status::TimedOut,
                    format!(
                        "the agent did not finish within {} s",
                        agent.timeout_s.get()
                    ),
                ))
            } else if !outcome.status.success() {
                Some((
                    Status::AgentFailed,
                    format!("the agent exited with code {}", outcome.status.shell_code()),
                ))
            } else if bytes.is_empty() {
                Some((Status::NoChange, "the agent changed nothing".to_string()))
            } else {
                None
            };
            if let Some((status, reason)) = verdict {
                self.set_status(index, status, reason)?;
            }
            let _ = std::fs::remove_dir_all(&tree.root);
        }
        Ok(())
    }
}

/// Reads and removes the agent's explanation file, so it is not part of the patch.
fn take_explanation(root: &Path) -> Option<String> {
    let path = root.join(EXPLANATION_FILE);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let text = if meta.is_file() {
        std::fs::read(&path).ok().map(|b| {
            let cut = &b[..b.len().min(EXPLANATION_CAP)];
            String::from_utf8_lossy(cut).into_owned()
        })
    } else {
        None
    };
    let _ = std::fs::remove_file(&path);
    text
}
