//! The command line, parsed with clap derive; nothing here runs anything.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::exit_codes::FailOn;

#[derive(Debug, Parser)]
#[command(
    name = "evo",
    version,
    about = "Checks, with evidence, whether a patch makes a program faster without changing what it computes",
    after_help = crate::exit_codes::help()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Paired comparison of two commands: A/A noise floor, then alternating pairs, then a verdict.
    #[command(after_help = crate::exit_codes::help())]
    Bench(BenchArgs),
    /// Agents built into evo, for a campaign's `agent.command`.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Campaigns: many candidates screened, the best confirmed.
    #[command(subcommand)]
    Campaign(CampaignCommand),
    /// Fresh confirmation of one candidate patch against the campaign's pinned baseline.
    ///
    /// The receipt is signed with the private key in $EVO_SIGNING_KEY (its PKCS#8 PEM text, as a
    /// CI secret holds it) when that is set, else the campaign's `key`, else the per-user default
    /// key.
    #[command(after_help = crate::exit_codes::help_with_fail_on())]
    Confirm(ConfirmArgs),
    /// Write starting campaign, workload and holdout files for the git repository here.
    #[command(after_help = crate::exit_codes::help_for(&crate::exit_codes::INIT))]
    Init(InitArgs),
    /// Write a new Ed25519 key pair for signing receipts (never overwrites a key).
    Keygen(KeygenArgs),
    /// Check signed validation receipts.
    #[command(subcommand)]
    Receipt(ReceiptCommand),
    /// Pull-request text from a verified receipt.
    #[command(subcommand)]
    Pr(PrCommand),
    /// Print the JSON Schema of an input file (workload, campaign, holdouts) or of what evo
    /// writes (result, summary, bench, events: one line of the `--json` stream, brief: what an
    /// agent reads on stdin).
    Schema {
        #[arg(value_enum)]
        kind: SchemaArg,
    },
    /// Print a shell completion script for evo (for bash:
    /// `evo completions bash > ~/.local/share/bash-completion/completions/evo`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print evo's man page (roff; `evo man | man -l -`), or write one page per subcommand.
    Man(ManArgs),
}

/// Agents built into evo.
#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Proposes one build-configuration change (C flags of a Makefile or build script, or
    /// Cargo's profile) from the brief on stdin, guided by its history, and makes it in the
    /// current folder's tree; needs no model. Use it as `"agent": { "command": "evo agent
    /// build-flags" }`.
    BuildFlags,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `evo.1` and one page per subcommand (`evo-confirm.1`, ...) into this directory
    /// instead of printing `evo.1`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Which arm runs first in the first pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FirstArm {
    Baseline,
    Candidate,
    /// A balanced random order: each block of two pairs holds both orders, a secret coin picks
    /// which comes first (the seed is recorded in the JSON report).
    Random,
}

/// On or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

/// What `evo schema` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaArg {
    Workload,
    Campaign,
    Holdouts,
    /// `result.json` of a confirmation (also the receipt's predicate).
    Result,
    /// `summary.json` of a campaign run.
    Summary,
    /// The file `evo bench --export-json` writes.
    Bench,
    /// One line of the `--json` event stream.
    Events,
    /// The brief a campaign's agent reads on stdin.
    Brief,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Baseline command line (run with `sh -c`).
    #[arg(long)]
    pub baseline: String,
    /// Candidate command line (run with `sh -c`).
    #[arg(long)]
    pub candidate: String,
    /// Pairs at the first look of the sequential rule (the fewest that run; see --max-pairs).
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(1..))]
    pub pairs: u32,
    /// Run up to this many pairs, stopping at the first look that decides (default: exactly
    /// --pairs).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_pairs: Option<u32>,
    /// A time budget for the comparison pairs, in minutes: the cap is lowered to the pairs that
    /// fit at the A/A pairs' pace (never below --pairs).
    #[arg(long, value_parser = parse_positive_minutes)]
    pub max_minutes: Option<f64>,
    /// Number of A/A pairs (baseline against itself) for the noise floor.
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u32).range(1..))]
    pub aa_pairs: u32,
    /// Warmup runs per arm, discarded.
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Smallest speedup worth accepting, as `1%` or `0.01`.
    #[arg(long, default_value = "1%", value_parser = parse_fraction)]
    pub min_effect: f64,
    /// Recorded only (rules 2 and 3 sized the pair count for it; the sequential rule stops when
    /// decided), as `1.5%` or `0.015`; above --min-effect (default: 1.5 × --min-effect).
    #[arg(long, value_parser = parse_fraction)]
    pub target_effect: Option<f64>,
    /// Which arm runs first in the first pair (later pairs alternate), or a balanced random order.
    #[arg(long, value_enum, default_value_t = FirstArm::Candidate)]
    pub first: FirstArm,
    /// Timeout of one run, in seconds.
    #[arg(long, default_value_t = 600.0, value_parser = parse_positive_seconds)]
    pub timeout: f64,
    /// `split` keeps evo on one CPU and both commands on the others (with two or more CPUs);
    /// `off` pins nothing, nor does `auto` (a command can widen its own CPU mask, so `split` is
    /// for trusted commands).
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    pub affinity: crate::spec::modes::Affinity,
    /// Before the first run, wait up to this many seconds for other work to leave the CPUs
    /// nearly idle (under 10% busy and stolen), as `evo confirm` does; what was found is in the
    /// JSON report (`environment.quiet`). 0 (the default) does not wait.
    #[arg(long, default_value_t = 0, value_name = "SECONDS")]
    pub quiet_wait: u32,
    /// `on` gives every run a variable of random length (`EVO_ENV_PAD`, 0–4095 bytes), as
    /// `evo confirm` does: the environment's size moves the stack, and a random size averages
    /// that out instead of favouring one command; `off` runs both in evo's environment as is.
    #[arg(long, value_enum, default_value = "on", value_name = "MODE")]
    pub env_pad: Switch,
    /// Seed for the minimum-detectable-effect resampling (default: random, and recorded).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Working directory for both commands.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Write every figure and raw run to this JSON file.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Stream progress as JSON events, one per line, on stdout, ending with a `final` event
    /// (verdict, exit code); the report table goes to stderr. See `evo schema events`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    /// Run (or resume) a campaign: collect, check, screen, confirm.
    ///
    /// Confirmations are signed with the private key in $EVO_SIGNING_KEY (its PKCS#8 PEM text)
    /// when that is set, else the campaign's `key`, else the per-user default key.
    #[command(after_help = crate::exit_codes::help_with_fail_on())]
    Run(CampaignRunArgs),
    /// What a fleet job runs on its node: one candidate's checks and screening pairs, from a
    /// screening request the coordinator wrote (docs/design.md §2.8). Signs nothing; exits 0
    /// once the candidate has a status, whatever it is.
    #[command(hide = true)]
    ScreenJob(ScreenJobArgs),
}

#[derive(Debug, Args)]
pub struct ScreenJobArgs {
    /// The screening request.
    #[arg(long, value_name = "FILE")]
    pub request: PathBuf,
    /// Something outside evo keeps other runs off this machine (a Slurm job's exclusive node),
    /// said in WHAT; evo then takes no repository lock.
    #[arg(long, value_name = "WHAT")]
    pub held_by: Option<String>,
    /// Stream progress as JSON events, one per line, on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CampaignRunArgs {
    /// The campaign file.
    pub campaign: PathBuf,
    /// Continue an interrupted run: its id under the output folder, or `latest`.
    #[arg(long, value_name = "RUN_ID")]
    pub resume: Option<String>,
    /// Overrides the campaign's `fleet.engine`: `slurm` runs each candidate's screening and
    /// each confirmation as a Slurm job holding a whole node (with the campaign's `fleet`
    /// settings, else the defaults), `local` runs everything here.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub fleet: Option<crate::spec::fleet::Engine>,
    #[command(flatten)]
    pub run: RunOptions,
}

/// What `evo confirm` and `evo campaign run` both take: overrides of the campaign's sandbox and
/// CPU settings, and which verdicts fail the command.
#[derive(Debug, Args)]
pub struct RunOptions {
    /// Overrides the campaign's `sandbox.mode`: `on` refuses to start without a working sandbox.
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<crate::spec::modes::SandboxMode>,
    /// Overrides the campaign's `confirm.affinity`: `split` keeps evo on one CPU and the timed
    /// commands on the others (trusted candidates only: a command can widen its own CPU mask),
    /// `off` and `auto` pin nothing.
    #[arg(long, value_enum, value_name = "MODE")]
    pub affinity: Option<crate::spec::modes::Affinity>,
    /// Verdicts that exit with their own code (3 rejected, 4 inconclusive), comma-separated; a
    /// verdict not listed exits 0. Errors (1, 2, 130) always keep theirs.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "VERDICTS",
        default_values_t = [FailOn::Rejected, FailOn::Inconclusive]
    )]
    pub fail_on: Vec<FailOn>,
    /// Stream progress as JSON events, one per line, on stdout, ending with a `final` event
    /// (verdict, tier, exit code, receipt and PR text paths); the human summary goes to stderr.
    /// See `evo schema events`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The candidate patch (`git diff` format).
    pub patch: PathBuf,
    /// `evo confirm --request FILE`: PATCH is a confirmation request (docs/design.md §2.7), which
    /// holds the campaign, the patch and the output folder; the seam a job scheduler uses. Hidden
    /// until something writes requests for users.
    #[arg(long, hide = true, conflicts_with_all = ["campaign", "baseline", "out_dir"])]
    pub request: bool,
    /// With --request: write the run folder and `result.json` but sign nothing and look up no
    /// key; the fleet coordinator that sent the request checks the result and signs it
    /// (docs/design.md §2.8). Exits 0 once the result is written, whatever the verdict.
    #[arg(long, hide = true, requires = "request")]
    pub unsigned: bool,
    /// With --request: something outside evo keeps other runs off this machine (a Slurm job's
    /// exclusive node), said in WHAT; evo then takes no repository lock.
    #[arg(long, hide = true, requires = "request", value_name = "WHAT")]
    pub held_by: Option<String>,
    /// The campaign file; default: the run manifest beside the patch, else ./evo.json.
    #[arg(long)]
    pub campaign: Option<PathBuf>,
    /// Build the trees here instead of a temporary directory (kept afterwards).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunOptions,
    /// Also show the statistics under each scenario: CI95 and its ranks, noise floor, A/A
    /// check, the looks of the sequential rule, pair count and CoV.
    #[arg(long)]
    pub verbose: bool,
    /// Overrides the campaign's `baseline` commit-ish (in CI, the pull request's base:
    /// `origin/main`).
    #[arg(long, value_name = "COMMIT")]
    pub baseline: Option<String>,
    /// Write the run directory under DIR instead of the campaign's `output` folder.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Overrides the campaign's `confirm.max_pairs`: the most comparison pairs a training
    /// scenario or holdout runs (the sequential rule stops earlier once decided).
    #[arg(long, value_parser = clap::value_parser!(u32).range(6..=10_000))]
    pub max_pairs: Option<u32>,
    /// Overrides the campaign's `confirm.max_minutes`: the budget of the timed pairs, in minutes,
    /// shared among the scenarios.
    #[arg(long, value_parser = parse_positive_minutes)]
    pub max_minutes: Option<f64>,
    /// The candidate's stated reason why it is faster, quoted (not verified) in the PR text:
    /// the text itself, or @FILE to read it from a file. Default: the campaign's `explanation`
    /// for this patch, else the commit message of a `git format-patch` patch.
    #[arg(long, value_name = "TEXT|@FILE", conflicts_with = "request")]
    pub explanation: Option<String>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The command to time, run with `sh -c` from the repository root (default: the release
    /// binary of a Cargo package, else a placeholder that fails and says what to edit).
    #[arg(long, value_name = "CMD")]
    pub run: Option<String>,
    /// The command whose output must match between baseline and candidate (default: the timed
    /// command itself).
    #[arg(long, value_name = "CMD")]
    pub check: Option<String>,
    /// Replace evo.json, evo/workload.json and evo/holdouts.json if they exist.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Directory for `signing.key` (mode 0600) and `signing.pub.pem`; default: the per-user key
    /// directory ($EVO_KEY_DIR, else $XDG_CONFIG_HOME/evo, else ~/.config/evo). Never inside a
    /// git work tree.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ReceiptCommand {
    /// Check a receipt's signature, key id and layout; with --recompute also its figures; with
    /// --require, --patch and --diff that it is the verdict and the change under review.
    #[command(after_help = crate::exit_codes::help())]
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The `validation_receipt.json` file.
    pub file: PathBuf,
    /// A trusted public key (SPKI PEM, or the private key file); repeat for several. Default:
    /// the key with the receipt's key id in $EVO_KEY_DIR, else in $XDG_CONFIG_HOME/evo or
    /// ~/.config/evo, or the public half of $EVO_SIGNING_KEY. A key inside a git work tree is
    /// refused: keep trusted keys outside any repository.
    #[arg(long, value_name = "FILE")]
    pub key: Vec<PathBuf>,
    /// Recompute every statistic, gate, tier and verdict from the raw runs in the receipt.
    #[arg(long)]
    pub recompute: bool,
    /// With --recompute, for the key holder: the receipt's run folder (its result.json and
    /// holdout_seal.key). Its result, sealed with its key, must be the signed receipt; then what
    /// the receipt seals is recomputed too (the holdouts' drawn inputs and the commands they
    /// filled).
    #[arg(long, value_name = "RUN_DIR", requires = "recompute")]
    pub unseal: Option<PathBuf>,
    /// Fail (exit 6) unless the receipt says this: a verdict (accepted, rejected, inconclusive)
    /// or tier=tested / tier=measured (that tier or higher). Repeat, or separate with commas.
    #[arg(long, value_name = "WHAT", value_delimiter = ',')]
    pub require: Vec<crate::receipt::binding::Requirement>,
    /// Fail (exit 6) unless the receipt is about this patch file, byte for byte.
    #[arg(long, value_name = "FILE")]
    pub patch: Option<PathBuf>,
    /// Fail (exit 6) unless the receipt's baseline is BASE and its patch turns the range's start
    /// into exactly its end (BASE..HEAD, or BASE...HEAD from their merge base, as git diff reads
    /// them). The patch is --patch, else candidate.patch beside the receipt.
    #[arg(long, value_name = "BASE..HEAD")]
    pub diff: Option<String>,
    /// The repository --diff reads (default: the current directory).
    #[arg(long, value_name = "DIR", requires = "diff")]
    pub repo: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum PrCommand {
    /// Render the PR description from a receipt, after verifying it.
    #[command(after_help = crate::exit_codes::help())]
    Render(PrRenderArgs),
}

#[derive(Debug, Args)]
pub struct PrRenderArgs {
    /// The `validation_receipt.json` file.
    pub receipt: PathBuf,
    /// A minijinja template to use instead of evo's `templates/pr_body.md`.
    #[arg(long)]
    pub template: Option<PathBuf>,
    /// A trusted public key (SPKI PEM, or the private key file); repeat for several. Default:
    /// as for `evo receipt verify`. A key inside a git work tree is refused.
    #[arg(long, value_name = "FILE")]
    pub key: Vec<PathBuf>,
    /// Write the text here instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Parses `1%`, `1.5 %` or `0.01` into a fraction in [0, 1).
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    let v: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a number or a percentage like 1%"))?;
    let f = v / scale;
    if !(0.0..1.0).contains(&f) {
        return Err(format!("`{text}` must be at least 0% and below 100%"));
    }
    Ok(f)
}

fn parse_positive_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

fn parse_positive_minutes(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{text}` is not a positive number of minutes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirm_takes_a_stated_reason_but_not_beside_a_request() {
        let parsed = Cli::try_parse_from(["evo", "confirm", "p.patch", "--explanation", "@why.md"]);
        match parsed.map(|c| c.command) {
            Ok(Command::Confirm(args)) => {
                assert_eq!(args.explanation.as_deref(), Some("@why.md"))
            }
            other => panic!("{other:?}"),
        }
        let both = [
            "evo",
            "confirm",
            "r.json",
            "--request",
            "--explanation",
            "x",
        ];
        assert!(Cli::try_parse_from(both).is_err());
    }

    #[test]
    fn fractions_parse_as_percent_or_plain() {
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction(" 2.5 % "), Ok(0.025));
        assert_eq!(parse_fraction("0.03"), Ok(0.03));
        assert!(parse_fraction("-1%").is_err());
        assert!(parse_fraction("100%").is_err());
        assert!(parse_fraction("abc").is_err());
    }

    #[test]
    fn the_help_of_evo_and_of_each_deciding_subcommand_lists_every_exit_code() {
        use clap::CommandFactory;
        let path: [&[&str]; 6] = [
            &[],
            &["bench"],
            &["confirm"],
            &["campaign", "run"],
            &["receipt", "verify"],
            &["pr", "render"],
        ];
        for names in path {
            let mut cmd = Cli::command();
            for name in names {
                cmd = cmd.find_subcommand(name).unwrap().clone();
            }
            let help = cmd.render_long_help().to_string();
            let takes_fail_on = matches!(names, ["confirm"] | ["campaign", "run"]);
            assert_eq!(
                help.contains("--fail-on <VERDICTS>") && help.contains("With --fail-on, a verdict"),
                takes_fail_on,
                "evo {names:?} --help:\n{help}"
            );
            for d in crate::exit_codes::ALL {
                let line = format!("  {:>3}  {}", d.code, d.meaning);
                assert!(
                    help.contains(&line),
                    "evo {names:?} --help lacks {line}:\n{help}"
                );
            }
        }
    }

    #[test]
    fn fail_on_takes_a_comma_separated_list_and_defaults_to_both_verdicts() {
        let parse = |args: &[&str]| match Cli::try_parse_from(args) {
            Ok(Cli {
                command: Command::Confirm(a),
            }) => Ok(a.run.fail_on),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e.to_string()),
        };
        use FailOn::*;
        assert_eq!(
            parse(&["evo", "confirm", "p.patch"]),
            Ok(vec![Rejected, Inconclusive])
        );
        assert_eq!(
            parse(&["evo", "confirm", "p.patch", "--fail-on", "rejected"]),
            Ok(vec![Rejected])
        );
        assert_eq!(
            parse(&[
                "evo",
                "confirm",
                "p.patch",
                "--fail-on=inconclusive,rejected"
            ]),
            Ok(vec![Inconclusive, Rejected])
        );
        let err = parse(&["evo", "confirm", "p.patch", "--fail-on", "accepted"]).unwrap_err();
        assert!(
            err.contains("rejected") && err.contains("inconclusive"),
            "{err}"
        );
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
