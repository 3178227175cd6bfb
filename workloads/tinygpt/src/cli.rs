//! Command-line parsing: raw arguments in, a validated [`Plan`] out, no side effects.
//!
//! Parsed by hand to keep the workload's dependencies to tch and anyhow (it is rebuilt in every
//! tree evo materializes).

use anyhow::{bail, Context, Result};

use crate::config::{self, DeviceChoice, LrSchedule, TrainConfig};

pub const USAGE: &str = "\
usage: tinygpt [train|check|selftest] [options]

commands:
  train      train and print a one-line summary (the timed scenario; default, preset small)
  check      train and print every step's loss (the differential lane; default preset tiny)
  selftest   a few quick steps; exits 0 if the loss is finite and falls
  (--check and --selftest are accepted as aliases)

options (each overrides the preset):
  --preset tiny|small|medium
  --device cpu|cuda|mps      default cpu
  --steps N  --batch N  --context N  --accum N  --warmup N
  --lr X  --lr-schedule const|cosine  --corpus-chars N
  --seed N                   default 1337; changes the text, the initial weights and the batches
  --threads N                libtorch intra-op threads, default 1
";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Train,
    Check,
    Selftest,
}

impl Command {
    pub fn name(self) -> &'static str {
        match self {
            Self::Train => "train",
            Self::Check => "check",
            Self::Selftest => "selftest",
        }
    }
}

/// What to do, fully validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub command: Command,
    pub config: TrainConfig,
}

/// Result of parsing: either a plan or a request for the usage text.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Run(Plan),
    Help,
}

/// One `--name value` override, kept as text until the preset is known.
struct Override {
    name: String,
    value: String,
}

pub fn parse(args: &[String]) -> Result<Parsed> {
    let mut command = None;
    let mut preset_name = None;
    let mut overrides = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let set_command = |command: &mut Option<Command>, c: Command| {
            if command.replace(c).is_some_and(|old| old != c) {
                bail!("more than one command given ('{}' after another)", c.name());
            }
            Ok(())
        };
        match arg.as_str() {
            "-h" | "--help" | "help" => return Ok(Parsed::Help),
            "train" => set_command(&mut command, Command::Train)?,
            "check" | "--check" => set_command(&mut command, Command::Check)?,
            "selftest" | "--selftest" => set_command(&mut command, Command::Selftest)?,
            flag if flag.starts_with("--") => {
                let (name, value) = match flag[2..].split_once('=') {
                    Some((name, value)) => (name.to_owned(), value.to_owned()),
                    None => {
                        let value = rest
                            .next()
                            .with_context(|| format!("{flag} needs a value"))?;
                        (flag[2..].to_owned(), value.clone())
                    }
                };
                if name == "preset" {
                    preset_name = Some(value);
                } else {
                    overrides.push(Override { name, value });
                }
            }
            other => bail!("unexpected argument '{other}' (see --help)"),
        }
    }

    let command = command.unwrap_or(Command::Train);
    let default_preset = if command == Command::Train {
        "small"
    } else {
        "tiny"
    };
    let mut config = config::preset(preset_name.as_deref().unwrap_or(default_preset))?;
    for o in &overrides {
        apply(&mut config, o).with_context(|| format!("invalid --{} '{}'", o.name, o.value))?;
    }
    config.validate()?;
    Ok(Parsed::Run(Plan { command, config }))
}

fn apply(config: &mut TrainConfig, o: &Override) -> Result<()> {
    let v = o.value.as_str();
    match o.name.as_str() {
        "device" => config.device = DeviceChoice::parse(v)?,
        "steps" => config.steps = v.parse()?,
        "batch" => config.batch = v.parse()?,
        "context" => config.context = v.parse()?,
        "accum" => config.accum = v.parse()?,
        "warmup" => config.warmup = v.parse()?,
        "lr" => config.lr = v.parse()?,
        "lr-schedule" => config.lr_schedule = LrSchedule::parse(v)?,
        "corpus-chars" => config.corpus_chars = v.parse()?,
        "seed" => config.seed = v.parse()?,
        "threads" => config.threads = v.parse()?,
        other => bail!("unknown option --{other} (see --help)"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Result<Plan> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args)? {
            Parsed::Run(plan) => Ok(plan),
            Parsed::Help => bail!("help"),
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let p = plan(&[]).unwrap();
        assert_eq!((p.command, p.config.preset), (Command::Train, "small"));
        let p = plan(&[
            "--check",
            "--seed=9",
            "--steps",
            "3",
            "--lr-schedule",
            "const",
        ])
        .unwrap();
        assert_eq!((p.command, p.config.preset), (Command::Check, "tiny"));
        assert_eq!((p.config.seed, p.config.steps), (9, 3));
        assert_eq!(p.config.lr_schedule, LrSchedule::Const);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(plan(&["--steps", "zero"]).is_err());
        assert!(plan(&["--steps", "0"]).is_err());
        assert!(plan(&["--bogus", "1"]).is_err());
        assert!(plan(&["--seed"]).is_err());
        assert!(plan(&["--preset", "tiny", "--context", "1000"]).is_err());
        assert!(plan(&["check", "selftest"]).is_err());
    }
}
