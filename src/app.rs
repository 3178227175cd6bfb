//! What each subcommand does, between parsed arguments and an exit code.

mod verify;

use std::io::Write;
use std::time::Duration;

use anyhow::Context;

use crate::bench::{self, BenchPlan};
use crate::cli::{
    AgentCommand, BenchArgs, CampaignCommand, CampaignRunArgs, Cli, Command, ConfirmArgs, FirstArm,
    InitArgs, KeygenArgs, ManArgs, PrCommand, PrRenderArgs, ReceiptCommand, SchemaArg,
    ScreenJobArgs,
};
use crate::evidence::figures::{BenchReport, BenchSettings};
use crate::exit_codes;
use crate::failure::Failure;
use crate::live::Live;
use crate::measure::record::Order;
use crate::measure::runner::RunSpec;
use crate::measure::spawn::ProcessRunner;
use crate::path::shown;
use crate::report::events::{Final, Source};
use crate::report::terminal;
use crate::stats::BenchVerdict;

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> Result<i32, Failure> {
    match cli.command {
        Command::Agent(AgentCommand::BuildFlags) => build_flags_command(),
        Command::Bench(args) => bench_command(args),
        Command::Confirm(args) => confirm_command(args),
        Command::Campaign(CampaignCommand::Run(args)) => campaign_command(args),
        Command::Campaign(CampaignCommand::ScreenJob(args)) => screen_job_command(args),
        Command::Init(args) => init_command(args),
        Command::Keygen(args) => keygen_command(args),
        Command::Receipt(ReceiptCommand::Verify(args)) => verify::verify_command(args),
        Command::Pr(PrCommand::Render(args)) => pr_render_command(args),
        Command::Schema { kind } => {
            use crate::spec::SchemaKind;
            let text = match kind {
                SchemaArg::Workload => crate::spec::schema(SchemaKind::Workload),
                SchemaArg::Campaign => crate::spec::schema(SchemaKind::Campaign),
                SchemaArg::Holdouts => crate::spec::schema(SchemaKind::Holdouts),
                SchemaArg::Result => output_schema(schemars::schema_for!(
                    crate::evidence::result::ConfirmResult
                )),
                SchemaArg::Summary => {
                    output_schema(schemars::schema_for!(crate::evidence::summary::Summary))
                }
                SchemaArg::Bench => output_schema(schemars::schema_for!(BenchReport)),
                SchemaArg::Events => crate::report::events::schema(),
                SchemaArg::Brief => crate::search::brief::schema(),
            };
            print_all(&(text + "\n"))
        }
        Command::Completions { shell } => print_all(&String::from_utf8_lossy(
            &crate::cli_docs::completion_script(shell),
        )),
        Command::Man(args) => man_command(args),
    }
}

/// Writes a whole document to stdout; a reader that stopped early (`| head`) is not an error.
fn print_all(text: &str) -> Result<i32, Failure> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(anyhow::Error::new(e)
            .context("cannot write to stdout")
            .into()),
        _ => Ok(exit_codes::ACCEPTED),
    }
}

/// `evo agent build-flags`: the brief from stdin, the change made here, its reason beside it.
fn build_flags_command() -> Result<i32, Failure> {
    use crate::search::build_flags::{Proposal, propose};
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .context("cannot read the brief from stdin")?;
    let brief: crate::search::Brief = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "stdin is not a brief (`evo schema brief` describes one): {e}"
        ))
    })?;
    let here = std::env::current_dir().context("cannot find the current folder")?;
    match propose(&brief, &here).context("cannot change the build configuration")? {
        Proposal::Changed {
            file,
            step,
            explanation,
        } => {
            std::fs::write(here.join(&brief.explanation_file), &explanation)
                .with_context(|| format!("cannot write {}", brief.explanation_file))?;
            println!("build-flags: {}: added {step}", file.display());
        }
        Proposal::Nothing(why) => println!("build-flags: no change: {why}"),
    }
    Ok(exit_codes::ACCEPTED)
}

fn output_schema(schema: schemars::Schema) -> String {
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}

fn man_command(args: ManArgs) -> Result<i32, Failure> {
    match &args.out {
        None => {
            let page = crate::cli_docs::man_page().context("cannot render the man page")?;
            std::io::stdout()
                .write_all(&page)
                .context("cannot write the man page")?;
        }
        Some(dir) => {
            let pages = crate::cli_docs::write_man_pages(dir)
                .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
            for page in pages {
                println!("{}: {}", page.command, shown(&page.file));
            }
        }
    }
    Ok(exit_codes::ACCEPTED)
}

fn default_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// Turns `evo bench` arguments into a plan the measurement trusts.
pub fn bench_plan(args: &BenchArgs) -> BenchPlan {
    let timeout = Duration::from_secs_f64(args.timeout);
    let spec = |command: &str| RunSpec {
        cwd: args.cwd.clone(),
        ..RunSpec::new(command, timeout)
    };
    BenchPlan {
        baseline: spec(&args.baseline),
        candidate: spec(&args.candidate),
        baseline_again: None,
        quiet: None,
        env_pad: args.env_pad == crate::cli::Switch::On,
        settings: BenchSettings {
            pairs: args.pairs as usize,
            max_pairs: crate::spec::campaign::pair_cap(
                args.pairs as usize,
                args.max_pairs.map(|m| m as usize),
            ),
            budget_s: args.max_minutes.map(|m| 60.0 * m),
            aa_pairs: args.aa_pairs as usize,
            warmup: args.warmup as usize,
            min_effect: args.min_effect,
            target_effect: args
                .target_effect
                .unwrap_or_else(|| crate::stats::default_target_effect(args.min_effect)),
            first: match args.first {
                FirstArm::Candidate | FirstArm::Random => Order::CandidateFirst,
                FirstArm::Baseline => Order::BaselineFirst,
            },
            order_seed: (args.first == FirstArm::Random)
                .then(crate::measure::schedule::fresh_order_seed),
            mde_seed: args.seed.unwrap_or_else(default_seed),
            timeout_s: args.timeout,
        },
    }
}

fn bench_command(args: BenchArgs) -> Result<i32, Failure> {
    if let Some(target) = args.target_effect {
        if target <= args.min_effect {
            return Err(Failure::usage(format!(
                "--target-effect ({target}) must be above --min-effect ({}): a true speedup \
                 exactly at the minimum effect clears it only half the time, whatever the pairs",
                args.min_effect
            )));
        }
    }
    let mut plan = bench_plan(&args);
    let mut runner = ProcessRunner::new()
        .context("cannot locate the evo executable")?
        .with_affinity(args.affinity)
        .with_env_pad(plan.env_pad);
    let mut live = Live::new(args.json, Source::Bench);
    if let Live::Json(stream) = &mut live {
        // A bench has no run directory or commit: its id is the time it started.
        let id = crate::pipeline::rundir::run_id(std::time::SystemTime::now(), "bench", "");
        stream.run_id = Some(id.trim_end_matches('-').to_string());
    }
    let quiet = (args.quiet_wait > 0).then(|| {
        live.stage("wait for a quiet machine", None);
        let limit = Duration::from_secs(u64::from(args.quiet_wait));
        crate::environment::wait_for_quiet(limit, crate::environment::QUIET_SAMPLE, &|| false)
    });
    plan.quiet = quiet.flatten();
    live.stage("measure", None);
    live.expect_runs(2 * (plan.settings.warmup + plan.settings.aa_pairs + plan.settings.pairs));
    // A command that takes `{seed}` computes on a fresh one in every pair (both arms the same).
    let mut draw = crate::measure::schedule::fresh_order_seed;
    let mut inputs = crate::measure::schedule::Inputs {
        seeds: Some(&mut draw),
        agree: None,
    };
    let result = bench::run_bench(&plan, &mut runner, &mut inputs, &mut |e| live.run(e));
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            let failure = Failure::from(anyhow::Error::new(e));
            live.finish(Final {
                exit_code: failure.code,
                error: Some(failure.message()),
                ..Final::default()
            });
            return Err(failure);
        }
    };
    let table = terminal::render_bench(&report);
    if let Some(path) = &args.export_json {
        let text = serde_json::to_string_pretty(&report).context("cannot serialize the report")?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the JSON report to {}", path.display()))?;
    }
    let code = match report.figures.verdict {
        BenchVerdict::Accepted => exit_codes::ACCEPTED,
        BenchVerdict::Regression => exit_codes::REJECTED,
        BenchVerdict::NoRealGain | BenchVerdict::Inconclusive => exit_codes::INCONCLUSIVE,
    };
    live.finish(Final {
        verdict: Some(report.figures.verdict.as_str().to_string()),
        exit_code: code,
        result: args.export_json.as_deref().map(shown),
        ..Final::default()
    });
    if live.is_json() {
        eprint!("{table}");
    } else {
        print!("{table}");
    }
    Ok(code)
}

/// This machine's runners, with this `evo` binary as their helper and the timed runs' CPU split.
fn local_runners(
    affinity: crate::spec::modes::Affinity,
) -> anyhow::Result<std::sync::Arc<dyn crate::measure::runner::RunnerFactory>> {
    Ok(std::sync::Arc::new(crate::measure::local::LocalRunners {
        helper: std::env::current_exe().context("cannot locate the evo executable")?,
        affinity,
    }))
}

/// Human output: stdout, or stderr when stdout carries the `--json` stream.
fn say(live: &Live, text: &str) {
    if live.is_json() {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
}

/// Runs `inner`, then closes the reporter with its outcome (the `final` line of `--json`), also
/// when `inner` fails with an error of evo's own.
fn reported(
    mut live: Live,
    inner: impl FnOnce(&mut Live) -> Result<Final, Failure>,
) -> Result<i32, Failure> {
    match inner(&mut live) {
        Ok(outcome) => {
            let code = outcome.exit_code;
            live.finish(outcome);
            Ok(code)
        }
        Err(failure) => {
            live.finish(Final {
                exit_code: failure.code,
                error: Some(failure.message()),
                ..Final::default()
            });
            Err(failure)
        }
    }
}

/// The name a confirmation's events and run id carry: the patch file's stem.
fn patch_label(patch: &std::path::Path) -> String {
    patch
        .file_stem()
        .map_or_else(|| "patch".into(), |s| s.to_string_lossy().into_owned())
}

fn confirm_command(args: ConfirmArgs) -> Result<i32, Failure> {
    let mut live = Live::new(args.run.json, Source::Confirm);
    if !args.request {
        live.set_candidate(&patch_label(&args.patch));
    }
    reported(live, |live| confirm_with(&args, live))
}

/// The confirmation `evo confirm` was asked for: a patch under a campaign, or a request file
/// (whose folder no sandboxed run may then see), with the command line's overrides.
fn confirm_request(
    args: &ConfirmArgs,
    live: &mut Live,
) -> Result<(crate::confirm::ConfirmRequest, Option<std::path::PathBuf>), Failure> {
    use crate::confirm::ConfirmRequest;
    let mut request = if args.request {
        let request = crate::confirm::read_request(&args.patch).map_err(Failure::usage)?;
        if request.screening.is_some() {
            return Err(Failure::usage(anyhow::anyhow!(
                "{} is a screening request: a fleet job runs it with `evo campaign screen-job`",
                args.patch.display()
            )));
        }
        live.set_candidate(&patch_label(&request.plan.patch_file));
        request
    } else {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let plan = crate::plan::confirm_plan(&args.patch, args.campaign.as_deref(), &cwd)
            .map_err(Failure::usage)?;
        ConfirmRequest::new(plan, None, None)
    };
    let plan = &mut request.plan;
    if let Some(affinity) = args.run.affinity {
        plan.campaign.spec.confirm.affinity = affinity;
    }
    if let Some(baseline) = &args.baseline {
        plan.campaign.spec.baseline = baseline.clone();
    }
    override_budgets(&mut plan.campaign.spec.confirm, args).map_err(Failure::usage)?;
    if let Some(dir) = &args.out_dir {
        plan.campaign.output_dir = std::path::absolute(dir)
            .with_context(|| format!("cannot resolve --out-dir {}", dir.display()))?;
    }
    if let Some(given) = &args.explanation {
        plan.explanation = Some(explanation_text(given)?);
    }
    request.sandbox = args.run.sandbox.or(request.sandbox);
    let hidden = match args.request {
        true => Some(crate::confirm::request::hidden_folder(&args.patch).map_err(Failure::usage)?),
        false => None,
    };
    Ok((request, hidden))
}

/// `--max-pairs` and `--max-minutes` over the campaign's `confirm` settings, checked as the
/// campaign file's values are.
fn override_budgets(
    set: &mut crate::spec::campaign::ConfirmSettings,
    args: &ConfirmArgs,
) -> anyhow::Result<()> {
    use crate::spec::values::{ConfirmPairs, Minutes};
    if let Some(max) = args.max_pairs {
        let max = ConfirmPairs::try_from(i64::from(max))
            .map_err(|e| anyhow::anyhow!("--max-pairs: {e}"))?;
        if max.get() < set.pairs.get() {
            anyhow::bail!(
                "--max-pairs {} is below the campaign's confirm.pairs ({}): the cap must allow at \
                 least the first look",
                max.get(),
                set.pairs.get()
            );
        }
        set.max_pairs = Some(max);
    }
    if let Some(minutes) = args.max_minutes {
        set.max_minutes =
            Some(Minutes::try_from(minutes).map_err(|e| anyhow::anyhow!("--max-minutes: {e}"))?);
    }
    Ok(())
}

/// `--explanation TEXT|@FILE`: the text, or the file's (at most 16 KiB, like an agent's).
fn explanation_text(given: &str) -> Result<String, Failure> {
    const MAX: u64 = 16 * 1024;
    let Some(file) = given.strip_prefix('@') else {
        return Ok(given.to_string());
    };
    let read = || -> std::io::Result<String> {
        let size = std::fs::metadata(file)?.len();
        if size > MAX {
            return Err(std::io::Error::other(format!(
                "{size} bytes, over the {MAX} a stated reason may have"
            )));
        }
        Ok(String::from_utf8_lossy(&std::fs::read(file)?).into_owned())
    };
    read().map_err(|e| Failure::usage(format!("--explanation: cannot read {file}: {e}")))
}

fn confirm_with(args: &ConfirmArgs, live: &mut Live) -> Result<Final, Failure> {
    use crate::confirm::{self, ConfirmOptions};
    let (request, hidden) = confirm_request(args, live)?;
    let request_flag = if args.request { "--request " } else { "" };
    let what = format!("evo confirm {request_flag}{}", args.patch.display());
    let plan = &request.plan;
    let hold = match &args.held_by {
        Some(held) => crate::host::Hold::External(held.clone()),
        None => crate::host::Hold::lock_repo(&plan.campaign.repo, &what).map_err(Failure::usage)?,
    };
    let opts = ConfirmOptions {
        work_dir: args.work_dir.clone(),
        hidden: hidden.into_iter().collect(),
        ..ConfirmOptions::new(local_runners(plan.campaign.spec.confirm.affinity)?, hold)
    };
    if args.unsigned {
        let outcome =
            confirm::run_confirm_unsigned(&request, &opts, &mut |e| live.confirm(e, false));
        live.finish_progress();
        let done = outcome?;
        say(
            live,
            &format!(
                "unsigned result: {}\n",
                shown(&done.run_dir.join("result.json"))
            ),
        );
        return Ok(Final {
            verdict: Some(done.result.verdict.as_str().to_string()),
            tier: Some(done.result.tier.as_str().to_string()),
            exit_code: exit_codes::ACCEPTED,
            error: None,
            run_dir: Some(shown(&done.run_dir)),
            receipt: None,
            pr_body: None,
            result: Some(shown(&done.run_dir.join("result.json"))),
        });
    }
    let outcome = confirm::run_confirm(&request, &opts, &mut |e| live.confirm(e, false));
    live.finish_progress();
    let done = outcome?;
    say(
        live,
        &terminal::render_confirm(&done.result, &done.run_dir, args.verbose),
    );
    say(live, &receipt_lines(&done.receipt));
    let r = &done.receipt;
    let key = r.key_source.verify_with(&r.key_id);
    let claim = terminal::Claim {
        verdict: done.result.verdict,
        tier: done.result.tier,
        patch: done.run_dir.join(&done.result.patch.file),
    };
    say(live, &terminal::next_commands(&r.path, &key, Some(&claim)));
    let verdict = done.result.verdict.as_str();
    let beside = |name: &str| Some(shown(&done.run_dir.join(name)));
    Ok(Final {
        verdict: Some(verdict.to_string()),
        tier: Some(done.result.tier.as_str().to_string()),
        exit_code: fail_on(done.result.verdict.exit_code(), verdict, &args.run.fail_on),
        error: None,
        run_dir: Some(shown(&done.run_dir)),
        receipt: Some(shown(&r.path)),
        pr_body: beside("pr_body.md"),
        result: beside("result.json"),
    })
}

/// Where the receipt went and which key signed it (and, the first time, where that key is).
fn receipt_lines(r: &crate::confirm::SignedReceipt) -> String {
    let mut text = format!("receipt: {} (sha256 {})\n", shown(&r.path), r.sha256);
    text += &format!(
        "signed with key {} ({})\n",
        r.key_id,
        r.key_source.describe()
    );
    if let (true, crate::receipt::keys::KeySource::File(private)) = (r.key_created, &r.key_source) {
        text += &format!(
            "evo created this default signing key on first use: keep {} private; give {} to \
             whoever verifies receipts\n",
            shown(private),
            shown(&private.with_file_name(crate::receipt::keys::PUBLIC_KEY_FILE))
        );
    }
    text
}

/// The exit code under `--fail-on`; says so when a verdict's code is not kept, so a CI log shows
/// why a rejection passed.
fn fail_on(code: i32, verdict: &str, kept: &[exit_codes::FailOn]) -> i32 {
    let exit = exit_codes::under_fail_on(code, kept);
    if exit != code {
        eprintln!("evo: exit code {exit} for a verdict of {verdict}: --fail-on does not list it");
    }
    exit
}

fn init_command(args: InitArgs) -> Result<i32, Failure> {
    use crate::scaffold::{self, InitOptions};
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let options = InitOptions {
        run: args.run,
        check: args.check,
        force: args.force,
    };
    let done = scaffold::init(&cwd, &options)?;
    print!("{}", terminal::render_init(&done));
    Ok(exit_codes::ACCEPTED)
}

fn keygen_command(args: KeygenArgs) -> Result<i32, Failure> {
    use crate::receipt::keys;
    let (dir, origin) = match args.out {
        Some(dir) => (dir, "--out"),
        None => (
            keys::default_dir().map_err(Failure::usage)?,
            keys::default_dir_origin(),
        ),
    };
    // A key made in a clone could be committed, and evo would refuse it later anyway.
    keys::check_place(&dir, origin, &[]).map_err(Failure::usage)?;
    match keys::write_new_pair(&dir) {
        Ok((key, files)) => {
            println!(
                "private key: {} (mode 0600; keep it secret)",
                shown(&files.private)
            );
            println!(
                "public key:  {} (SPKI PEM; give it to whoever verifies receipts)",
                shown(&files.public)
            );
            println!("key id:      {}", keys::key_id(&key.verifying_key()));
            Ok(exit_codes::ACCEPTED)
        }
        Err(e @ keys::KeyError::Exists(_)) => Err(Failure::usage(e)),
        Err(e) => Err(anyhow::Error::new(e).into()),
    }
}

fn pr_render_command(args: PrRenderArgs) -> Result<i32, Failure> {
    use crate::report::{pr_body, pr_context::ReceiptRef};
    let verified = verify::open_receipt(&args.receipt, &args.key)?.verified;
    let (template, name) = match &args.template {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => (text, path.display().to_string()),
            Err(e) => {
                return Err(Failure::usage(format!(
                    "cannot read the template {}: {e}",
                    path.display()
                )));
            }
        },
        None => (
            pr_body::DEFAULT_TEMPLATE.to_string(),
            pr_body::DEFAULT_TEMPLATE_NAME.to_string(),
        ),
    };
    let reference = ReceiptRef {
        file: args.receipt.file_name().map_or_else(
            || crate::receipt::RECEIPT_FILE.to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        sha256: verified.sha256.clone(),
        key_id: verified.key_id.clone(),
    };
    let text = pr_body::render(&verified.statement.predicate, &reference, &template, &name)
        .map_err(Failure::usage)?;
    match &args.out {
        Some(path) => std::fs::write(path, &text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(exit_codes::ACCEPTED)
}

fn campaign_command(args: CampaignRunArgs) -> Result<i32, Failure> {
    let live = Live::new(args.run.json, Source::Campaign);
    reported(live, |live| campaign_with(&args, live))
}

fn campaign_with(args: &CampaignRunArgs, live: &mut Live) -> Result<Final, Failure> {
    use crate::campaign::{self, CampaignOptions};
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let file = if args.campaign.is_absolute() {
        args.campaign.clone()
    } else {
        cwd.join(&args.campaign)
    };
    let mut plan = match crate::plan::campaign_plan(&file) {
        Ok(plan) => plan,
        Err(e) => return Err(Failure::usage(e)),
    };
    if let Some(affinity) = args.run.affinity {
        plan.spec.confirm.affinity = affinity;
    }
    if let Some(engine) = args.fleet {
        crate::fleet::choose_engine(&mut plan.spec, engine);
    }
    let what = format!("evo campaign run {}", args.campaign.display());
    let hold = crate::host::Hold::lock_repo(&plan.repo, &what).map_err(Failure::usage)?;
    let opts = CampaignOptions {
        resume: args.resume.clone(),
        sandbox: args.run.sandbox,
        ..CampaignOptions::new(local_runners(plan.spec.confirm.affinity)?, hold)
    };
    let outcome = campaign::run_campaign(&plan, &opts, &mut |e| live.campaign(e));
    live.finish_progress();
    let done = outcome?;
    let mut table = terminal::render_campaign(&done.summary, &done.run_dir);
    let receipt = campaign_receipt(&done.summary, &done.run_dir);
    if let Some(receipt) = &receipt {
        let key = campaign_key(&plan, receipt);
        let claim = campaign_claim(&done.summary, receipt);
        table.push_str(&terminal::next_commands(receipt, &key, claim.as_ref()));
    }
    say(live, &table);
    let verdict = done.summary.verdict();
    let tier = (done.summary.accepted)
        .and_then(|i| done.summary.rows.iter().find(|r| r.index == i))
        .and_then(|r| r.confirmation_tier.map(|t| t.as_str().to_string()));
    Ok(Final {
        verdict: Some(verdict.as_str().to_string()),
        tier,
        exit_code: fail_on(verdict.exit_code(), verdict.as_str(), &args.run.fail_on),
        error: None,
        run_dir: Some(shown(&done.run_dir)),
        pr_body: (receipt.as_ref())
            .map(|r| r.with_file_name("pr_body.md"))
            .filter(|p| p.is_file())
            .map(|p| shown(&p)),
        receipt: receipt.as_deref().map(shown),
        result: Some(shown(&done.run_dir.join("summary.json"))),
    })
}

fn screen_job_command(args: ScreenJobArgs) -> Result<i32, Failure> {
    let live = Live::new(args.json, Source::Campaign);
    reported(live, |live| screen_job_with(&args, live))
}

/// One candidate's checks and screening as a fleet job on its node (docs/design.md §2.8).
fn screen_job_with(args: &ScreenJobArgs, live: &mut Live) -> Result<Final, Failure> {
    use crate::campaign::{self, CampaignOptions};
    let request = crate::confirm::read_request(&args.request).map_err(Failure::usage)?;
    let hidden = crate::confirm::request::hidden_folder(&args.request).map_err(Failure::usage)?;
    let plan = &request.plan.campaign;
    let what = format!(
        "evo campaign screen-job --request {}",
        args.request.display()
    );
    let hold = match &args.held_by {
        Some(held) => crate::host::Hold::External(held.clone()),
        None => crate::host::Hold::lock_repo(&plan.repo, &what).map_err(Failure::usage)?,
    };
    let opts = CampaignOptions::new(local_runners(plan.spec.confirm.affinity)?, hold);
    let outcome =
        campaign::run_screening_job(&request, &opts, &[hidden], &mut |e| live.campaign(e));
    live.finish_progress();
    let run_dir = outcome?;
    say(
        live,
        &format!(
            "screening journal: {}\n",
            shown(&run_dir.join("journal.jsonl"))
        ),
    );
    Ok(Final {
        exit_code: exit_codes::ACCEPTED,
        run_dir: Some(shown(&run_dir)),
        ..Final::default()
    })
}

/// The receipt a campaign run leaves for review: the accepted candidate's, else the last
/// confirmation's; `None` when nothing was confirmed.
fn campaign_receipt(
    summary: &crate::evidence::summary::Summary,
    run_dir: &std::path::Path,
) -> Option<std::path::PathBuf> {
    let confirmed = |r: &&crate::evidence::summary::Row| r.confirmation_run_dir.is_some();
    let row = match summary.accepted {
        Some(i) => summary.rows.iter().find(|r| r.index == i),
        None => summary.rows.iter().rev().find(confirmed),
    }?;
    let receipt = run_dir
        .join(row.confirmation_run_dir.as_deref()?)
        .join(crate::receipt::RECEIPT_FILE);
    receipt.is_file().then_some(receipt)
}

/// What the campaign's `receipt` claims: the verdict and tier of its confirmation, and the
/// patch copy beside it.
fn campaign_claim(
    summary: &crate::evidence::summary::Summary,
    receipt: &std::path::Path,
) -> Option<terminal::Claim> {
    let dir = receipt.parent()?;
    let row = summary.rows.iter().find(|r| {
        r.confirmation_run_dir
            .as_deref()
            .is_some_and(|d| dir.ends_with(d))
    })?;
    Some(terminal::Claim {
        verdict: row.confirmation_verdict?,
        tier: row.confirmation_tier?,
        patch: dir.join("candidate.patch"),
    })
}

/// What `--key` must name to verify the campaign's `receipt`, from the same decision that chose
/// the key its confirmations signed with ([`KeySource::for_campaign`]).
///
/// [`KeySource::for_campaign`]: crate::receipt::keys::KeySource::for_campaign
fn campaign_key(
    plan: &crate::plan::CampaignPlan,
    receipt: &std::path::Path,
) -> crate::receipt::keys::VerifyWith {
    use crate::receipt::keys::{KeySource, VerifyWith};
    let key_file = plan.key_file();
    let untrusted = plan.key_untrusted(None);
    let Ok(source) = KeySource::for_campaign(key_file.as_deref(), &untrusted) else {
        return VerifyWith::Found;
    };
    let id = std::fs::read(receipt)
        .ok()
        .and_then(|bytes| {
            crate::receipt::dsse::named_key_ids(&bytes)
                .into_iter()
                .next()
        })
        .unwrap_or_else(|| "the signing key".to_string());
    source.verify_with(&id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explanation_is_the_text_given_or_the_file_after_an_at_sign() {
        assert_eq!(explanation_text("Sum once").unwrap(), "Sum once");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("why.md");
        std::fs::write(&file, "Sum once\n\nNot twice.\n").unwrap();
        let given = format!("@{}", file.display());
        assert_eq!(
            explanation_text(&given).unwrap(),
            "Sum once\n\nNot twice.\n"
        );
        std::fs::write(&file, vec![b'x'; 16 * 1024 + 1]).unwrap();
        let e = explanation_text(&given).unwrap_err();
        assert!(
            format!("{:?}", e.error).contains("over the 16384"),
            "{:?}",
            e.error
        );
        let missing = format!("@{}", dir.path().join("none").display());
        assert!(explanation_text(&missing).is_err());
    }
}
