//! `evo confirm`: the fresh confirmation of one candidate patch against a pinned baseline
//! (docs/design.md §2.2).
//!
//! The stages run in order and stop at the first failed gate, so a rejected candidate costs no
//! more than it must: pin → trees and patch → builds (in parallel; nothing is measured while
//! anything builds) → tests → differential → sanitizer lane → measurement → decision. Each stage
//! lives in its own file; this one sequences them and writes the run directory.

mod config_lane;
mod deadline;
pub mod earlier_aa;
mod finish;
mod instructions;
mod lanes;
mod measure;
pub mod outcome;
mod prepare;
mod protect;
pub mod request;
mod scratch;
mod setup_error;
mod stages;
mod unchanged;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::environment::{self, Environment};
use crate::evidence::outcome::GateStop;
use crate::evidence::result::{ConfirmResult, Evidence, GateName, GateStatus, PatchInfo, Timings};
use crate::evidence::{result, verdict};
use crate::host::{Hold, SignWith, Stop};
use crate::measure::runner::RunnerFactory;
pub use crate::pipeline::PipelineError;
use crate::pipeline::event::Event;
pub(crate) use crate::pipeline::io_err;
use crate::pipeline::rundir::{self, RunDir};
use crate::plan::ConfirmPlan;
use crate::plan::settle::Key;
use crate::receipt::keys::Signer;
use crate::tree::{self, Pinned};
pub use deadline::COUNT_PAIRS;
pub use finish::{write_evidence, write_result};
pub use outcome::{Outcome, OutcomeError, load_outcome};
pub use request::{ConfirmRequest, RequestError, read_request, write_request};
use scratch::Scratch;
use stages::{Step, step};
use verdict::gate;

/// What the machine that runs a confirmation gives it (what to run is the [`ConfirmRequest`]):
/// how processes run, where trees go, when to stop, who keeps other runs off the repository,
/// which key signs.
#[derive(Clone)]
pub struct ConfirmOptions {
    /// Where every build, check and timed run gets its runner (the real ones, or a test's fake).
    pub runners: Arc<dyn RunnerFactory>,
    /// Where the trees are built; a fresh temporary directory when `None`.
    pub work_dir: Option<PathBuf>,
    /// When to stop: no run starts after it, a run it cuts short is discarded, and the
    /// confirmation ends `Interrupted` with no verdict or receipt.
    pub stop: Stop,
    /// Who keeps a second evo off the repository; held for as long as these options live.
    pub hold: Hold,
    /// The key that signs the receipt, or where to look it up.
    pub sign_with: SignWith,
    /// Further files or folders no sandboxed run may see (the folder of the request file this
    /// confirmation came from: it holds the holdouts).
    pub hidden: Vec<PathBuf>,
    /// When the whole run must end (a campaign's `max_minutes`): the timed pairs get no more
    /// than the time left then allows, less what must follow them (docs/design.md §3.6).
    pub deadline: Option<Instant>,
}

impl ConfirmOptions {
    /// Options that stop on this process's Ctrl-C, sign with the campaign's key, and hide nothing
    /// beyond the usual; `hold` says who keeps other runs off the repository.
    pub fn new(runners: Arc<dyn RunnerFactory>, hold: Hold) -> ConfirmOptions {
        ConfirmOptions {
            runners,
            work_dir: None,
            stop: Stop::ctrl_c(),
            hold,
            sign_with: SignWith::CampaignKey,
            hidden: Vec::new(),
            deadline: None,
        }
    }
}

/// What a campaign's search knew about the candidate it sends to confirmation.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchContext {
    pub candidates_tried: usize,
    pub figures: result::SearchFigures,
    /// The candidate's stated reason (an agent's `EVO_EXPLANATION.md`, or the campaign's text).
    pub explanation: Option<String>,
    /// An agent command produced the candidate (false in requests from before it was sent).
    #[serde(default)]
    pub from_agent: bool,
}

/// The state of one confirmation while its stages run.
pub(crate) struct Run<'a> {
    plan: &'a ConfirmPlan,
    opts: &'a ConfirmOptions,
    run_dir: RunDir,
    work: PathBuf,
    pinned: Pinned,
    /// What the stages found so far; the verdict is decided from it once they have ended.
    evidence: Evidence,
    on_event: &'a mut dyn FnMut(Event),
    /// Isolation of every build, check and timed run of this confirmation.
    sandbox: crate::measure::sandbox::SandboxPolicy,
    /// The budget of timed pairs in seconds (`None` inside: no budget), once the first
    /// scenario's warmups fixed it (`deadline`); `None` before.
    pairs_budget: Option<Option<f64>>,
    /// An earlier confirmation's A/A pairs this one may reuse (`earlier_aa`).
    earlier_aa: Option<earlier_aa::EarlierAa>,
}

/// A confirmation that reached a verdict: the result and where it was written.
#[derive(Debug)]
pub struct Confirmed {
    pub result: ConfirmResult,
    pub run_dir: PathBuf,
    pub receipt: SignedReceipt,
}

/// Where the signed receipt went and which key signed it.
#[derive(Debug, Clone)]
pub struct SignedReceipt {
    pub path: PathBuf,
    pub sha256: String,
    pub key_id: String,
    pub key_source: crate::receipt::keys::KeySource,
    /// The per-user default key was created for this run.
    pub key_created: bool,
    /// The public half of the key that signed: what the outcome is checked against.
    pub verifying_key: ed25519_dalek::VerifyingKey,
}

/// The evidence of a confirmation before its first stage: what it is of, and nothing found yet.
fn skeleton(plan: &ConfirmPlan, pinned: &Pinned, run_id: &str) -> Evidence {
    Evidence {
        evo_version: env!("CARGO_PKG_VERSION").to_string(),
        rules: verdict::RULES,
        run_id: run_id.to_string(),
        campaign_file: plan.campaign.campaign_file.display().to_string(),
        campaign_name: plan.campaign.spec.name.clone(),
        repo: plan.campaign.repo.display().to_string(),
        baseline_commitish: plan.campaign.spec.baseline.clone(),
        baseline_sha: pinned.sha.clone(),
        workload_name: plan.campaign.workload.name.clone(),
        workload_digest: plan.campaign.workload_digest.clone(),
        holdout_portfolio_digest: plan
            .campaign
            .holdouts
            .as_ref()
            .map(|h| h.portfolio_digest.clone()),
        holdout_names: (plan.campaign.holdouts.iter())
            .flat_map(|h| h.holdouts.scenarios.iter().map(|s| s.name.clone()))
            .collect(),
        patch: PatchInfo {
            source: plan.patch_file.display().to_string(),
            file: "candidate.patch".to_string(),
            sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&plan.patch)),
            files: Vec::new(),
            added: 0,
            removed: 0,
            applier: None,
        },
        overlay: Vec::new(),
        seed: 0,
        holdout_seed: None,
        warnings: Vec::new(),
        min_effect: plan.settings().min_effect.get(),
        metric: plan.settings().metric,
        environment: Environment {
            machine: environment::machine(),
            load_1m_before: environment::load_1m(),
            load_1m_after: None,
            quiet: None,
            cpus: None,
            job: None,
        },
        steps: Vec::new(),
        artifacts: Vec::new(),
        differential: Vec::new(),
        sanitizer_lane_ran: false,
        sanitizer_findings: Vec::new(),
        scenarios: Vec::new(),
        gates: Vec::new(),
        timings: Timings::default(),
        candidates_tried: 1,
        search: None,
        explanation: stated_reason(plan),
        from_agent: false,
        read_only_inputs: Vec::new(),
        config_lane: result::ConfigLane::default(),
        sandbox: Default::default(),
        timed_programs_unchanged: false,
        single_threaded: plan.campaign.workload.single_threaded,
        unsealed_holdouts: Vec::new(),
        draws: Vec::new(),
    }
}

/// The `sandbox.read_only` folders, digested as they are before anything runs (the plan has
/// already refused one that is not a folder).
fn read_only_inputs(plan: &ConfirmPlan) -> Result<Vec<result::InputDigest>, PipelineError> {
    let campaign = &plan.campaign;
    (campaign.spec.sandbox.read_only.iter())
        .map(|raw| {
            let folder = crate::plan::resolve_in(&campaign.campaign_file, raw);
            let d = tree::digest_folder(&folder).map_err(|e| {
                PipelineError::usage_while(
                    format!(
                        "sandbox.read_only `{raw}`: cannot digest {}",
                        folder.display()
                    ),
                    e,
                )
            })?;
            Ok(result::InputDigest {
                path: raw.clone(),
                sha256: d.sha256,
                files: d.files,
                bytes: d.bytes,
            })
        })
        .collect()
}

/// The candidate's stated reason: `--explanation`, else the campaign's text for this patch if it
/// lists it as a candidate, else the commit message of a `git format-patch` patch.
fn stated_reason(plan: &ConfirmPlan) -> Option<String> {
    (plan.explanation.clone())
        .or_else(|| campaign_reason(plan))
        .or_else(|| tree::format_patch_message(&plan.patch))
}

/// The explanation the campaign gives for this patch, if it lists it as a candidate.
fn campaign_reason(plan: &ConfirmPlan) -> Option<String> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    plan.campaign
        .spec
        .candidates
        .iter()
        .find(|c| {
            same(
                &crate::plan::resolve_in(&plan.campaign.campaign_file, &c.patch),
                &plan.patch_file,
            )
        })
        .and_then(|c| c.explanation.clone())
}

/// Runs the whole confirmation `request` asks for and writes `result.json`, the signed receipt,
/// `pr_body.md`, `runs.csv`, `pairs.svg` and the patch copy.
pub fn run_confirm(
    request: &ConfirmRequest,
    opts: &ConfirmOptions,
    on_event: &mut dyn FnMut(Event),
) -> Result<Confirmed, PipelineError> {
    let decided = pipeline(request, opts, on_event, SignedBy(&opts.sign_with))?;
    on_event(Event::stage("sign receipt"));
    let receipt = write_evidence(&decided.run_dir, &decided.result, &decided.signer)?;
    Ok(Confirmed {
        result: decided.result,
        run_dir: decided.run_dir.path,
        receipt,
    })
}

/// A confirmation that reached a verdict and wrote `result.json` and nothing signed: what a
/// fleet job returns for the coordinator, which holds the key, to check and sign (§2.8).
#[derive(Debug)]
pub struct Unsigned {
    pub result: ConfirmResult,
    pub run_dir: PathBuf,
}

/// Runs the confirmation as [`run_confirm`] does, with no key: writes `result.json`, the patch
/// copy and the logs, and no receipt, PR text or rendering of them.
pub fn run_confirm_unsigned(
    request: &ConfirmRequest,
    opts: &ConfirmOptions,
    on_event: &mut dyn FnMut(Event),
) -> Result<Unsigned, PipelineError> {
    let decided = pipeline(request, opts, on_event, NoKey)?;
    Ok(Unsigned {
        result: decided.result,
        run_dir: decided.run_dir.path,
    })
}

/// A run whose verdict is decided and whose `result.json` is written, with the signer its
/// [`Keying`] holds (none for an unsigned run).
struct Decided<S> {
    result: ConfirmResult,
    run_dir: RunDir,
    signer: S,
}

/// What a run does with a key: a signed run settles its signer before anything runs (so a bad
/// key costs no measurement) and holds it to the end; an unsigned one (a fleet job, whose
/// coordinator signs) holds none.
trait Keying {
    /// What the run holds once its key is settled.
    type Held;
    /// What to ask `plan::settle` for.
    fn ask(&self) -> Key<'_>;
    /// What the run holds, from what `plan::settle` made of [`Keying::ask`].
    fn hold(signer: Option<Signer>) -> Result<Self::Held, PipelineError>;
    /// The key whose private half nothing written may hold, if there is one.
    fn signer(held: &Self::Held) -> Option<&Signer>;
}

/// A run that signs with this key.
struct SignedBy<'a>(&'a SignWith);

impl Keying for SignedBy<'_> {
    type Held = Signer;

    fn ask(&self) -> Key<'_> {
        Key::Sign(self.0)
    }

    fn hold(signer: Option<Signer>) -> Result<Signer, PipelineError> {
        signer.ok_or_else(|| PipelineError::internal("the key was settled, not its signer"))
    }

    fn signer(held: &Signer) -> Option<&Signer> {
        Some(held)
    }
}

/// A run that signs nothing.
struct NoKey;

impl Keying for NoKey {
    type Held = ();

    fn ask(&self) -> Key<'_> {
        Key::Unsigned
    }

    fn hold(_: Option<Signer>) -> Result<(), PipelineError> {
        Ok(())
    }

    fn signer(_: &()) -> Option<&Signer> {
        None
    }
}

/// Every stage up to `result.json`; the key is settled as `keying` says before anything runs.
fn pipeline<K: Keying>(
    request: &ConfirmRequest,
    opts: &ConfirmOptions,
    on_event: &mut dyn FnMut(Event),
    keying: K,
) -> Result<Decided<K::Held>, PipelineError> {
    let started = Instant::now();
    let plan = &request.plan;
    // Every runner honours the run's stop, whatever stop condition its maker knows.
    let opts = &ConfirmOptions {
        runners: crate::host::stoppable(Arc::clone(&opts.runners), opts.stop.clone()),
        ..opts.clone()
    };
    on_event(Event::stage("pin baseline"));
    let pinned = tree::pin(&plan.campaign.repo, &plan.campaign.spec.baseline)
        .map_err(PipelineError::usage)?;
    let scratch = Scratch::new(opts.work_dir.as_deref())
        .map_err(io_err("cannot create a work directory for the trees"))?;
    // The key is settled before anything runs, so a bad key costs no measurement. Within a
    // campaign the output folder is the run's `confirmations/`; the campaign's own output
    // folder (its search trees and logs) is hidden too (`CampaignPlan::hidden_from_runs`), and
    // so are the trees' folder and no key may be kept in either.
    let settled = crate::plan::settle::settle(
        &plan.campaign,
        crate::plan::settle::Ask {
            key: keying.ask(),
            work: Some(scratch.path()),
            hidden: &opts.hidden.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
            copies: scratch.path().join("cache-copies"),
            mode: request.sandbox,
            shared_caches: request.shared_caches.as_deref(),
        },
    )
    .map_err(PipelineError::usage)?;
    // A campaign said these before its search; a confirmation on its own says them here.
    if request.search.is_none() {
        for warning in settled.warnings {
            on_event(Event::Warning(warning));
        }
    }
    let (sandbox, signer) = (settled.sandbox, K::hold(settled.signer)?);
    let inputs = read_only_inputs(plan)?;
    let label = plan
        .patch_file
        .file_stem()
        .map_or_else(|| "patch".into(), |s| s.to_string_lossy().into_owned());
    let id = rundir::run_id(SystemTime::now(), &label, &pinned.sha);
    let run_dir = RunDir::create(&plan.campaign.output_dir, &id).map_err(io_err(format!(
        "cannot create the run directory in {}",
        plan.campaign.output_dir.display()
    )))?;
    run_dir
        .write("candidate.patch", &plan.patch)
        .map_err(io_err("cannot copy the patch into the run directory"))?;
    on_event(Event::Started {
        run_id: run_dir.id.clone(),
        run_dir: run_dir.path.clone(),
    });
    let mut evidence = skeleton(plan, &pinned, &run_dir.id);
    evidence.sandbox = sandbox.record.clone();
    if let Some(search) = &request.search {
        evidence.candidates_tried = search.candidates_tried;
        evidence.search = Some(search.figures.clone());
        if search.explanation.is_some() {
            evidence.explanation = search.explanation.clone();
        }
        evidence.from_agent = search.from_agent;
    }
    evidence.read_only_inputs = inputs;
    let mut run = Run {
        plan,
        opts,
        run_dir,
        work: scratch.path().to_path_buf(),
        pinned,
        evidence,
        on_event,
        sandbox,
        pairs_budget: None,
        earlier_aa: request.earlier_aa.clone(),
    };
    let staged = run.stages(started);
    // A stop request makes whatever the stages returned meaningless: a build or run cut short
    // must not become a failed gate, nor a receipt.
    let staged = match staged {
        _ if opts.stop.requested() => Err(PipelineError::interrupted()),
        Err(PipelineError::Baseline(m)) => Err(PipelineError::Baseline(run.sandbox.explain(m))),
        other => other,
    };
    if let Err(e) = staged {
        // Keep what is known: the logs are already in the run directory; say why it stopped.
        let saved = run.run_dir.write("error.txt", format!("{e}\n").as_bytes());
        return Err(e.with_logs(&run.run_dir.path, saved.err()));
    }
    run.finish::<K>(started, signer)
}

impl Run<'_> {
    fn stage(&mut self, name: &str) {
        (self.on_event)(Event::stage(name));
    }

    /// Warns on the terminal and in the result.
    fn warn(&mut self, message: String) {
        (self.on_event)(Event::Warning(message.clone()));
        self.evidence.warnings.push(message);
    }

    /// Records gate `name` as failed: the confirmation stops there.
    fn fail_gate<T>(&mut self, name: GateName, detail: impl Into<String>) -> Step<T> {
        self.evidence
            .gates
            .push(gate(name, GateStatus::Failed, detail));
        Step::Stopped(name)
    }

    /// [`Run::fail_gate`] for the check engine's outcome: its gate fails with its detail.
    fn stop<T>(&mut self, stop: GateStop) -> Step<T> {
        self.fail_gate(stop.gate, stop.detail)
    }

    fn pass_gate(&mut self, name: GateName, detail: impl Into<String>) {
        self.evidence
            .gates
            .push(gate(name, GateStatus::Passed, detail));
    }

    /// The stages in order, each on what the one before returned, up to the gate that stops
    /// the confirmation, if one does.
    fn stages(&mut self, started: Instant) -> Result<Step<()>, PipelineError> {
        let prepared = step!(self.prepare_trees());
        self.evidence.timings.prepare_s = started.elapsed().as_secs_f64();
        let build_started = Instant::now();
        let built = self.build_all(prepared);
        self.evidence.timings.build_s = build_started.elapsed().as_secs_f64();
        let checks_started = Instant::now();
        let checked = self.check_all(step!(built));
        self.evidence.timings.checks_s = checks_started.elapsed().as_secs_f64();
        let timed = step!(checked);
        step!(Ok::<_, PipelineError>(self.leftover_gate(false)));
        if self.timed_programs_unchanged() {
            self.evidence.timed_programs_unchanged = true;
            return Ok(Step::Go(()));
        }
        self.wait_for_quiet();
        // Before the first timed run and after the last: a change while timing fails the result.
        step!(self.measured_trees_unchanged(&timed, "a test or check"));
        let measure_started = Instant::now();
        let measured = self.measure_all(&timed)?;
        self.count_instructions(measured)?;
        self.evidence.timings.measure_s = measure_started.elapsed().as_secs_f64();
        step!(self.measured_trees_unchanged(&timed, "a timed run"));
        Ok(self.leftover_gate(true))
    }

    /// Waits (up to `confirm.quiet_wait_s`, or `EVO_QUIET_WAIT_S`) until other work leaves the
    /// CPUs nearly idle, and records what it found; evo's own builds have finished by now, so
    /// what is measured is everything else.
    fn wait_for_quiet(&mut self) {
        let limit = std::env::var("EVO_QUIET_WAIT_S")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(self.plan.campaign.spec.confirm.quiet_wait_s);
        if limit == 0 {
            return;
        }
        self.stage("wait for a quiet machine");
        let limit = std::time::Duration::from_secs(u64::from(limit));
        self.evidence.environment.quiet =
            crate::environment::wait_for_quiet(limit, crate::environment::QUIET_SAMPLE, &|| {
                self.opts.stop.requested()
            });
    }

    /// Fails when a run of the candidate left processes behind: a background process can work
    /// outside the timed window or between runs. Checked before measuring (tests and checks) and,
    /// with `last`, after it (timed runs), where a clean candidate passes the gate.
    fn leftover_gate(&mut self, last: bool) -> Step<()> {
        const GATE: GateName = GateName::LeftoverProcesses;
        if self.evidence.gates.iter().any(|g| g.name == GATE) {
            return Step::Go(());
        }
        let places = self.evidence.candidate_leftovers();
        if !places.is_empty() {
            return self.fail_gate(
                GATE,
                format!(
                    "the candidate left processes running after it exited (evo killed them) in: \
                     {}; work done in the background escapes the measurement",
                    places.join(", ")
                ),
            );
        }
        if last {
            self.pass_gate(
                GATE,
                "no test, check or timed run of the candidate left processes behind",
            );
        }
        Step::Go(())
    }
}
