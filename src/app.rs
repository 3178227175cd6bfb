//! What each subcommand does, between parsed arguments and an exit code.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::bench::{self, BenchPlan, BenchSettings};
use crate::cli::{
    BenchArgs, CampaignCommand, CampaignRunArgs, Cli, Command, ConfirmArgs, FirstArm, InitArgs,
    KeygenArgs, ManArgs, PrCommand, PrRenderArgs, ReceiptCommand, VerifyArgs,
};
use crate::exit_codes;
use crate::measure::record::Order;
use crate::measure::runner::RunSpec;
use crate::measure::schedule::{Phase, RunEvent};
use crate::measure::spawn::ProcessRunner;
use crate::report::path::shown;
use crate::report::terminal;
use crate::stats::BenchVerdict;

/// Runs the parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Bench(args) => bench_command(args),
        Command::Confirm(args) => confirm_command(args),
        Command::Campaign(CampaignCommand::Run(args)) => campaign_command(args),
        Command::Init(args) => init_command(args),
        Command::Keygen(args) => keygen_command(args),
        Command::Receipt(ReceiptCommand::Verify(args)) => verify_command(args),
        Command::Pr(PrCommand::Render(args)) => pr_render_command(args),
        Command::Schema { kind } => {
            println!("{}", crate::spec::schema(kind));
            Ok(exit_codes::ACCEPTED)
        }
        Command::Completions { shell } => {
            std::io::stdout()
                .write_all(&crate::cli_docs::completion_script(shell))
                .context("cannot write the completion script")?;
            Ok(exit_codes::ACCEPTED)
        }
        Command::Man(args) => man_command(args),
    }
}

fn man_command(args: ManArgs) -> anyhow::Result<i32> {
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
        settings: BenchSettings {
            pairs: args.pairs as usize,
            max_pairs: args.max_pairs.map_or(0, |m| m as usize),
            aa_pairs: args.aa_pairs as usize,
            warmup: args.warmup as usize,
            min_effect: args.min_effect,
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

fn progress_bar() -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(0), target);
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} runs, {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

fn show_progress(bar: &ProgressBar, event: RunEvent) {
    if let Some(plan) = event.plan {
        let line = terminal::pairs_planned_line(&plan);
        if bar.is_hidden() {
            eprintln!("evo: {line}");
        } else {
            bar.println(line);
        }
        return;
    }
    let phase = match event.phase {
        Phase::Warmup => "warmup",
        Phase::AaPairs => "A/A pairs",
        Phase::Pairs => "pairs",
    };
    if event.done == 0 {
        bar.set_message(phase);
        bar.set_length(event.total as u64);
        bar.set_position(0);
    }
    bar.set_position(event.done as u64 + 1);
}

fn bench_command(args: BenchArgs) -> anyhow::Result<i32> {
    let plan = bench_plan(&args);
    let mut runner = ProcessRunner::new()
        .context("cannot locate the evo executable")?
        .with_affinity(args.affinity);
    let bar = progress_bar();
    let result = bench::run_bench(&plan, &mut runner, &mut |e| show_progress(&bar, e));
    bar.finish_and_clear();
    let report = result?;
    print!("{}", terminal::render_bench(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the JSON report to {}", path.display()))?;
    }
    Ok(match report.figures.verdict {
        BenchVerdict::Accepted => exit_codes::ACCEPTED,
        BenchVerdict::Regression => exit_codes::REJECTED,
        BenchVerdict::NotSignificant | BenchVerdict::Inconclusive => exit_codes::INCONCLUSIVE,
    })
}

/// This machine's runners, with this `evo` binary as their helper and the timed runs' CPU split.
fn local_runners(
    affinity: crate::measure::cpus::Affinity,
) -> anyhow::Result<std::sync::Arc<dyn crate::measure::runner::RunnerFactory>> {
    Ok(std::sync::Arc::new(crate::measure::local::LocalRunners {
        helper: std::env::current_exe().context("cannot locate the evo executable")?,
        affinity,
    }))
}

/// The repository's lock for this evo (`what` is shown to a second one); `None` after saying
/// who holds it.
fn repo_lock(repo: &std::path::Path, what: &str) -> Option<crate::campaign::lock::RepoLock> {
    match crate::campaign::lock::RepoLock::acquire(repo, what) {
        Ok(lock) => Some(lock),
        Err(e) => {
            eprintln!("error: {e}");
            None
        }
    }
}

fn confirm_command(args: ConfirmArgs) -> anyhow::Result<i32> {
    use crate::confirm::{self, ConfirmEvent, ConfirmOptions};
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut plan = match crate::plan::confirm_plan(&args.patch, args.campaign.as_deref(), &cwd) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit_codes::USAGE_ERROR);
        }
    };
    if let Some(affinity) = args.run.affinity {
        plan.campaign.confirm.affinity = affinity;
    }
    if let Some(baseline) = &args.baseline {
        plan.campaign.baseline = baseline.clone();
    }
    if let Some(dir) = &args.out_dir {
        plan.output_dir = std::path::absolute(dir)
            .with_context(|| format!("cannot resolve --out-dir {}", dir.display()))?;
    }
    let what = format!("evo confirm {}", args.patch.display());
    let Some(_repo_lock) = repo_lock(&plan.repo, &what) else {
        return Ok(exit_codes::USAGE_ERROR);
    };
    let opts = ConfirmOptions {
        runners: local_runners(plan.campaign.confirm.affinity)?,
        work_dir: args.work_dir.clone(),
        search: None,
        sandbox: args.run.sandbox,
    };
    let bar = progress_bar();
    let mut on_event = |e: ConfirmEvent| match e {
        ConfirmEvent::Stage(name) => {
            bar.set_message(name.clone());
            if bar.is_hidden() {
                eprintln!("evo: {name}");
            }
        }
        ConfirmEvent::Run(run) => show_progress(&bar, run),
    };
    let outcome = confirm::run_confirm(&plan, &opts, &mut on_event);
    bar.finish_and_clear();
    match outcome {
        Ok(done) => {
            print!(
                "{}",
                terminal::render_confirm(&done.result, &done.run_dir, args.verbose)
            );
            print_receipt(&done.receipt);
            let r = &done.receipt;
            let key = r.key_source.verify_with(&r.key_id);
            print!("{}", terminal::next_commands(&r.path, &key));
            Ok(fail_on(
                done.result.verdict.exit_code(),
                done.result.verdict.as_str(),
                &args.run.fail_on,
            ))
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(e.exit_code())
        }
    }
}

fn print_receipt(r: &crate::confirm::SignedReceipt) {
    println!("receipt: {} (sha256 {})", shown(&r.path), r.sha256);
    println!("signed with key {} ({})", r.key_id, r.key_source.describe());
    if let (true, crate::receipt::keys::KeySource::File(private)) = (r.key_created, &r.key_source) {
        println!(
            "evo created this default signing key on first use: keep {} private; give {} to \
             whoever verifies receipts",
            shown(private),
            shown(&private.with_file_name(crate::receipt::keys::PUBLIC_KEY_FILE))
        );
    }
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

fn init_command(args: InitArgs) -> anyhow::Result<i32> {
    use crate::scaffold::{self, InitOptions};
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let options = InitOptions {
        run: args.run,
        check: args.check,
        force: args.force,
    };
    let done = match scaffold::init(&cwd, &options) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(e.exit_code());
        }
    };
    print!("{}", terminal::render_init(&done));
    Ok(exit_codes::ACCEPTED)
}

fn keygen_command(args: KeygenArgs) -> anyhow::Result<i32> {
    use crate::receipt::keys;
    let dir = match args.out {
        Some(dir) => dir,
        None => match keys::default_dir() {
            Ok(dir) => dir,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(exit_codes::USAGE_ERROR);
            }
        },
    };
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
        Err(e @ keys::KeyError::Exists(_)) => {
            eprintln!("error: {e}");
            Ok(exit_codes::USAGE_ERROR)
        }
        Err(e) => Err(e.into()),
    }
}

/// Reads a receipt and checks it against the given key, else the known key with the id the
/// receipt names; `Err` is the exit code.
fn open_receipt(
    file: &std::path::Path,
    key: Option<&std::path::Path>,
) -> Result<crate::receipt::Verified, i32> {
    use crate::receipt::keys;
    // The receipt first: a wrong path is the likelier mistake, and says nothing about keys.
    let bytes = std::fs::read(file).map_err(|e| {
        // The path as the user typed it: tidying a path evo did not write could name another file.
        eprintln!("error: cannot read the receipt {}: {e}", file.display());
        exit_codes::USAGE_ERROR
    })?;
    let no_key = |e: &dyn std::fmt::Display| {
        eprintln!("error: {e}");
        eprintln!("  pass the signer's public key with --key FILE");
        exit_codes::USAGE_ERROR
    };
    let found = match key {
        Some(path) => keys::FoundKey {
            key: keys::load_verifying_key(path).map_err(|e| no_key(&e))?,
            path: path.to_path_buf(),
        },
        None => pick_key(&crate::receipt::dsse::named_key_ids(&bytes)).map_err(|e| no_key(&e))?,
    };
    eprintln!(
        "evo: checking with key {} ({})",
        keys::key_id(&found.key),
        shown(&found.path)
    );
    crate::receipt::verify(&bytes, &found.key).map_err(|e| {
        eprintln!("error: {} does not verify: {e}", file.display());
        if key.is_none() {
            eprintln!("  if another key signed it, pass its public key with --key FILE");
        }
        exit_codes::VERIFICATION_FAILED
    })
}

/// The known key with an id in `wanted`; else, after saying where evo looked, the first key
/// found, so that the check explains the difference (another key, or an altered key id).
fn pick_key(wanted: &[String]) -> Result<crate::receipt::keys::FoundKey, String> {
    use crate::receipt::keys::{self, KeyLookup};
    let (looked, fallback) = match keys::find_verifying_key(wanted).map_err(|e| e.to_string())? {
        KeyLookup::Matched(found) => return Ok(found),
        KeyLookup::Unmatched { looked, fallback } => (looked, fallback),
    };
    let places: Vec<String> = looked.iter().map(|d| shown(d)).collect();
    let wanted = match wanted {
        [] => "no key id (it is not a signed receipt)".to_string(),
        ids => format!("key id {}", ids.join(", ")),
    };
    let sentence = format!(
        "no key evo knows matches: the receipt names {wanted}; evo looked for {} (else {}) in {}",
        keys::PUBLIC_KEY_FILE,
        keys::PRIVATE_KEY_FILE,
        places.join(", ")
    );
    match fallback {
        Some(found) => {
            eprintln!("evo: {sentence}");
            Ok(found)
        }
        None => Err(sentence),
    }
}

fn verify_command(args: VerifyArgs) -> anyhow::Result<i32> {
    let verified = match open_receipt(&args.file, args.key.as_deref()) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    let p = &verified.statement.predicate;
    println!(
        "{}: signature valid, key {}, sha256 {}",
        args.file.display(),
        verified.key_id,
        verified.sha256
    );
    for s in &verified.statement.subject {
        let digests: Vec<String> = s.digest.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        println!("  subject {} {}", s.name, digests.join(" "));
    }
    println!(
        "  run {}: verdict {}, tier {}",
        p.run_id,
        p.verdict.as_str(),
        p.tier.as_str()
    );
    if !args.recompute {
        return Ok(exit_codes::ACCEPTED);
    }
    let differences = crate::receipt::recompute::recompute(p);
    if differences.is_empty() {
        let runs: usize = p
            .scenarios
            .iter()
            .map(|s| s.warmups.len() + 2 * (s.aa_pairs.len() + s.pairs.len()))
            .sum();
        println!(
            "recomputed: every figure, gate, tier and the verdict follow from the {runs} raw runs"
        );
        return Ok(exit_codes::ACCEPTED);
    }
    eprintln!(
        "error: {} figure(s) do not follow from the raw runs in the receipt:",
        differences.len()
    );
    for d in &differences {
        eprintln!("  {d}");
    }
    Ok(exit_codes::VERIFICATION_FAILED)
}

fn pr_render_command(args: PrRenderArgs) -> anyhow::Result<i32> {
    use crate::report::{pr_body, pr_context::ReceiptRef};
    let verified = match open_receipt(&args.receipt, args.key.as_deref()) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    let (template, name) = match &args.template {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => (text, path.display().to_string()),
            Err(e) => {
                eprintln!("error: cannot read the template {}: {e}", path.display());
                return Ok(exit_codes::USAGE_ERROR);
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
    let text = match pr_body::render(&verified.statement.predicate, &reference, &template, &name) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit_codes::USAGE_ERROR);
        }
    };
    match &args.out {
        Some(path) => std::fs::write(path, &text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(exit_codes::ACCEPTED)
}

fn campaign_command(args: CampaignRunArgs) -> anyhow::Result<i32> {
    use crate::campaign::{self, CampaignEvent, CampaignOptions};
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let file = if args.campaign.is_absolute() {
        args.campaign.clone()
    } else {
        cwd.join(&args.campaign)
    };
    let mut plan = match crate::plan::campaign_plan(&file) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(exit_codes::USAGE_ERROR);
        }
    };
    if let Some(affinity) = args.run.affinity {
        plan.campaign.confirm.affinity = affinity;
    }
    let what = format!("evo campaign run {}", args.campaign.display());
    let Some(_repo_lock) = repo_lock(&plan.repo, &what) else {
        return Ok(exit_codes::USAGE_ERROR);
    };
    let opts = CampaignOptions {
        runners: local_runners(plan.campaign.confirm.affinity)?,
        resume: args.resume.clone(),
        sandbox: args.run.sandbox,
    };
    let bar = progress_bar();
    let json = args.json;
    let mut on_event = |e: CampaignEvent| {
        if json {
            if let Ok(line) = serde_json::to_string(&e) {
                println!("{line}");
            }
            return;
        }
        match e {
            CampaignEvent::Stage { name } => {
                bar.set_message(name.clone());
                if bar.is_hidden() {
                    eprintln!("evo: {name}");
                }
            }
            CampaignEvent::Candidate {
                index,
                name,
                status,
                reason,
            } => {
                let line = format!("candidate {index} ({name}): {status} — {reason}");
                if bar.is_hidden() {
                    eprintln!("{line}");
                } else {
                    bar.println(line);
                }
            }
            CampaignEvent::Run(run) => show_progress(&bar, run),
            CampaignEvent::Warning { message } => {
                let line = format!("warning: {message}");
                if bar.is_hidden() {
                    eprintln!("{line}");
                } else {
                    bar.println(line);
                }
            }
        }
    };
    let outcome = campaign::run_campaign(&plan, &opts, &mut on_event);
    bar.finish_and_clear();
    match outcome {
        Ok(done) => {
            let mut table = terminal::render_campaign(&done.summary, &done.run_dir);
            if let Some(receipt) = campaign_receipt(&done.summary, &done.run_dir) {
                let key = campaign_key(&plan, &receipt);
                table.push_str(&terminal::next_commands(&receipt, &key));
            }
            if json {
                eprint!("{table}");
            } else {
                print!("{table}");
            }
            let verdict = done.summary.verdict();
            Ok(fail_on(
                verdict.exit_code(),
                verdict.as_str(),
                &args.run.fail_on,
            ))
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(e.exit_code())
        }
    }
}

/// The receipt a campaign run leaves for review: the accepted candidate's, else the last
/// confirmation's; `None` when nothing was confirmed.
fn campaign_receipt(
    summary: &crate::campaign::summary::Summary,
    run_dir: &std::path::Path,
) -> Option<std::path::PathBuf> {
    let confirmed = |r: &&crate::campaign::summary::Row| r.confirmation_run_dir.is_some();
    let row = match summary.accepted {
        Some(i) => summary.rows.iter().find(|r| r.index == i),
        None => summary.rows.iter().rev().find(confirmed),
    }?;
    let receipt = run_dir
        .join(row.confirmation_run_dir.as_deref()?)
        .join(crate::receipt::RECEIPT_FILE);
    receipt.is_file().then_some(receipt)
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
    let key_file = crate::plan::key_file(&plan.campaign_file, &plan.campaign);
    let Ok(source) = KeySource::for_campaign(key_file.as_deref()) else {
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
