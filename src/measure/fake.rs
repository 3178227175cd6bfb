//! A scripted [`Runner`] for tests: no processes, deterministic timings.
//!
//! A command maps to a behaviour (fixed times, noisy times around a mean, failure, a printed
//! output, leftover processes), either by its exact text or by a rule: a predicate over the whole
//! [`RunSpec`], so a test can tell a baseline's run from a candidate's by its working directory
//! when the command line is the same. Every call is logged so tests can check the order evo ran
//! things in. Clones share one script, so the fake is also a [`RunnerFactory`] whose runners may
//! work on several threads at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::cpus::CpuSplit;
use super::record::{ExitStatus, RunRecord, Rusage};
use super::runner::{RunSpec, Runner, RunnerError, RunnerFactory};

/// How a fake command behaves.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeBehavior {
    /// Takes these wall times in turn, cycling when they run out.
    Times(Vec<f64>),
    /// Takes `mean_s × exp(N(0, rel_sd))` seconds: log-normal noise of about `rel_sd` relative.
    Noisy { mean_s: f64, rel_sd: f64 },
    /// Exits with this code after a short time, writing this to stderr.
    Fails { code: i32, stderr: String },
    /// Succeeds after a short time, printing this on stdout (a check's output).
    Prints(String),
    /// Succeeds after a short time, but left processes running that evo had to kill.
    LeavesProcesses,
}

/// Whether a rule answers a run.
type Predicate = Box<dyn Fn(&RunSpec) -> bool + Send + Sync>;

/// A behaviour for every run its predicate accepts, with its own turn count and random stream.
struct Rule {
    matches: Predicate,
    behavior: FakeBehavior,
    turn: usize,
    rng: ChaCha8Rng,
}

/// What every clone of one fake runner shares.
struct Script {
    seed: u64,
    exact: HashMap<String, FakeBehavior>,
    turns: HashMap<String, usize>,
    /// The stream of exact-command scripts, drawn in call order.
    rng: ChaCha8Rng,
    rules: Vec<Rule>,
    calls: Vec<String>,
}

/// A runner that answers from a script instead of spawning.
///
/// Exact-command scripts draw their noise from one stream in call order. Each rule draws from a
/// stream of its own, so the n-th run a rule answers takes the same time whatever ran between:
/// a confirmation shuffles its pairs with a seed from the operating system, and its figures must
/// still be the same for the same fake seed.
#[derive(Clone)]
pub struct FakeRunner {
    script: Arc<Mutex<Script>>,
    /// The CPU split this runner and its timed runners report (none splits anything).
    split: Option<CpuSplit>,
}

impl FakeRunner {
    pub fn new(seed: u64) -> FakeRunner {
        FakeRunner {
            script: Arc::new(Mutex::new(Script {
                seed,
                exact: HashMap::new(),
                turns: HashMap::new(),
                rng: ChaCha8Rng::seed_from_u64(seed),
                rules: Vec::new(),
                calls: Vec::new(),
            })),
            split: None,
        }
    }

    /// Reports `split` as the CPU split of its timed runs, as the real runner does when it pins
    /// (builder style); nothing is pinned.
    pub fn with_cpu_split(mut self, split: CpuSplit) -> FakeRunner {
        self.split = Some(split);
        self
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Scripts the exact command line `command` (builder style); it wins over every rule.
    pub fn with(self, command: &str, behavior: FakeBehavior) -> FakeRunner {
        self.script().exact.insert(command.to_string(), behavior);
        self
    }

    /// Scripts every run `matches` accepts (builder style); the first rule added that accepts a
    /// run answers it.
    pub fn when(
        self,
        matches: impl Fn(&RunSpec) -> bool + Send + Sync + 'static,
        behavior: FakeBehavior,
    ) -> FakeRunner {
        let mut script = self.script();
        let mut rng = ChaCha8Rng::seed_from_u64(script.seed);
        rng.set_stream(script.rules.len() as u64 + 1);
        script.rules.push(Rule {
            matches: Box::new(matches),
            behavior,
            turn: 0,
            rng,
        });
        drop(script);
        self
    }

    /// Every command run so far, by any clone, in order.
    pub fn calls(&self) -> Vec<String> {
        self.script().calls.clone()
    }
}

fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    // Box–Muller; 1 - u keeps the logarithm finite.
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// What one run did, before it becomes a record and log files.
struct Outcome {
    wall_s: f64,
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
    leftover: bool,
}

impl Outcome {
    fn of(behavior: &FakeBehavior, turn: usize, rng: &mut ChaCha8Rng, spec: &RunSpec) -> Outcome {
        let quick = |code, stdout: &[u8], stderr: &str, leftover| Outcome {
            wall_s: 0.001,
            code,
            stdout: stdout.to_vec(),
            stderr: stderr.to_string(),
            leftover,
        };
        let timed = |wall_s| Outcome {
            wall_s,
            ..quick(0, spec.command.as_bytes(), "", false)
        };
        match behavior {
            FakeBehavior::Times(times) => timed(times[turn % times.len()]),
            FakeBehavior::Noisy { mean_s, rel_sd } => {
                timed(mean_s * (rel_sd * standard_normal(rng)).exp())
            }
            FakeBehavior::Fails { code, stderr } => quick(*code, b"", stderr, false),
            FakeBehavior::Prints(text) => quick(0, text.as_bytes(), "", false),
            FakeBehavior::LeavesProcesses => quick(0, b"", "", true),
        }
    }

    fn record(self) -> RunRecord {
        use sha2::{Digest, Sha256};
        RunRecord {
            wall_s: self.wall_s,
            rusage: Rusage {
                user_s: self.wall_s,
                max_rss_kib: 1024,
                ..Rusage::default()
            },
            status: ExitStatus::Exited { code: self.code },
            timed_out: false,
            leftover_processes: self.leftover,
            stdout_sha256: hex::encode(Sha256::digest(&self.stdout)),
            stdout_bytes: self.stdout.len() as u64,
            stderr_tail: self.stderr,
            steal_s: None,
        }
    }
}

impl Script {
    fn answer(&mut self, spec: &RunSpec) -> Option<Outcome> {
        if let Some(behavior) = self.exact.get(&spec.command) {
            let turn = self.turns.entry(spec.command.clone()).or_insert(0);
            let outcome = Outcome::of(behavior, *turn, &mut self.rng, spec);
            *turn += 1;
            return Some(outcome);
        }
        let rule = self.rules.iter_mut().find(|r| (r.matches)(spec))?;
        let outcome = Outcome::of(&rule.behavior, rule.turn, &mut rule.rng, spec);
        rule.turn += 1;
        Some(outcome)
    }
}

impl Runner for FakeRunner {
    fn run(&mut self, spec: &RunSpec) -> Result<RunRecord, RunnerError> {
        let outcome = {
            let mut script = self.script();
            script.calls.push(spec.command.clone());
            script.answer(spec)
        };
        let outcome = outcome.ok_or_else(|| RunnerError::Helper {
            command: spec.command.clone(),
            source: super::error::HelperError::Unscripted,
        })?;
        // The real runner always writes the logs it was given; readers of them expect the files.
        let logs = [
            (&spec.stdout_file, outcome.stdout.as_slice()),
            (&spec.stderr_file, outcome.stderr.as_bytes()),
        ];
        for (path, bytes) in logs {
            if let Some(path) = path {
                std::fs::write(path, bytes).map_err(|source| RunnerError::Io {
                    command: spec.command.clone(),
                    source,
                })?;
            }
        }
        Ok(outcome.record())
    }

    fn cpu_split(&self) -> Option<&CpuSplit> {
        self.split.as_ref()
    }
}

impl RunnerFactory for FakeRunner {
    /// Untimed runners never split the CPUs.
    fn runner(&self) -> Box<dyn Runner + Send> {
        Box::new(FakeRunner {
            split: None,
            ..self.clone()
        })
    }

    fn timed_runner(&self) -> Box<dyn Runner + Send> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec(command: &str, cwd: &str) -> RunSpec {
        RunSpec {
            cwd: Some(cwd.into()),
            ..RunSpec::new(command, Duration::from_secs(1))
        }
    }

    fn in_dir(dir: &'static str) -> impl Fn(&RunSpec) -> bool + Send + Sync {
        move |s: &RunSpec| s.cwd.as_deref() == Some(std::path::Path::new(dir))
    }

    #[test]
    fn a_rule_answers_by_its_predicate_and_the_exact_command_wins() {
        let mut fake = FakeRunner::new(1)
            .when(in_dir("/b"), FakeBehavior::Times(vec![2.0]))
            .when(|_| true, FakeBehavior::Prints("out\n".into()))
            .with("exact", FakeBehavior::LeavesProcesses);
        assert_eq!(fake.run(&spec("run", "/b")).unwrap().wall_s, 2.0);
        let printed = fake.run(&spec("run", "/c")).unwrap();
        assert_eq!(printed.stdout_bytes, 4);
        assert!(fake.run(&spec("exact", "/b")).unwrap().leftover_processes);
        assert_eq!(fake.calls(), ["run", "run", "exact"]);
    }

    #[test]
    fn a_rule_draws_the_same_times_whatever_runs_between() {
        let noisy = FakeBehavior::Noisy {
            mean_s: 1.0,
            rel_sd: 0.1,
        };
        let script = || {
            FakeRunner::new(5)
                .when(in_dir("/b"), noisy.clone())
                .when(in_dir("/c"), noisy.clone())
        };
        let (mut alone, mut mixed) = (script(), script());
        let b_alone: Vec<f64> = (0..4)
            .map(|_| alone.run(&spec("x", "/b")).unwrap().wall_s)
            .collect();
        let b_mixed: Vec<f64> = (0..4)
            .map(|_| {
                mixed.run(&spec("x", "/c")).unwrap();
                mixed.run(&spec("x", "/b")).unwrap().wall_s
            })
            .collect();
        assert_eq!(b_alone, b_mixed);
        let c: Vec<f64> = (0..4)
            .map(|_| alone.run(&spec("x", "/c")).unwrap().wall_s)
            .collect();
        assert_ne!(b_alone, c, "two rules share a stream");
    }

    #[test]
    fn the_logs_it_is_given_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut fake = FakeRunner::new(1).with(
            "fail",
            FakeBehavior::Fails {
                code: 2,
                stderr: "boom\n".into(),
            },
        );
        let run = RunSpec {
            stdout_file: Some(dir.path().join("out")),
            stderr_file: Some(dir.path().join("err")),
            ..spec("fail", "/")
        };
        let record = fake.run(&run).unwrap();
        assert_eq!(record.status, ExitStatus::Exited { code: 2 });
        assert_eq!(std::fs::read(dir.path().join("out")).unwrap(), b"");
        assert_eq!(std::fs::read(dir.path().join("err")).unwrap(), b"boom\n");
    }

    #[test]
    fn an_unscripted_command_is_an_error() {
        let err = FakeRunner::new(1).run(&spec("nope", "/")).unwrap_err();
        assert!(err.to_string().contains("no script"), "{err}");
    }
}
