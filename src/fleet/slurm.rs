//! The Slurm commands evo uses — `sbatch` to submit, `scontrol show job` to follow, `scancel` to
//! stop, `scontrol requeue` to retry — behind a small client that parses their output into
//! types. Nothing here decides anything about a candidate: a job's state says whether its result
//! files can be expected, and the coordinator checks those files as untrusted input.
//!
//! Without accounting (`sacct`), Slurm forgets a finished job after `MinJobAge` (300 s by
//! default); [`JobState::Gone`] says so, and the caller then goes by the files the job left.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use crate::host::slurm_state_dir as state_dir;

/// A Slurm job id, as `sbatch --parsable` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(pub u64);

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Where a job is, from `JobState` (`scontrol show job`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Running,
    /// Exited 0.
    Completed,
    /// Exited non-zero or was killed by a signal: `ExitCode=code:signal`.
    Failed {
        code: i32,
        signal: i32,
    },
    Cancelled,
    Timeout,
    NodeFail,
    Preempted,
    OutOfMemory,
    /// Requeued, suspended, completing, configuring and the rest: on its way somewhere.
    Other(String),
    /// Slurm no longer knows the job (finished longer ago than `MinJobAge`, or never existed).
    Gone,
}

impl JobState {
    /// The job will not run again unless it is requeued.
    pub fn is_final(&self) -> bool {
        !matches!(
            self,
            JobState::Pending | JobState::Running | JobState::Other(_)
        )
    }

    /// Waiting in the queue: pending, or on its way back there (`REQUEUED`, `REQUEUE_HOLD`,
    /// `REQUEUE_FED`). Not `COMPLETING` and the like, which come after a run.
    pub fn is_queued(&self) -> bool {
        match self {
            JobState::Pending => true,
            JobState::Other(state) => state.starts_with("REQUEUE"),
            _ => false,
        }
    }

    /// Slurm's name of the state, in lower case (`node_fail`); `gone` when Slurm forgot the job.
    pub fn name(&self) -> String {
        let name = match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Completed => "completed",
            JobState::Failed { .. } => "failed",
            JobState::Cancelled => "cancelled",
            JobState::Timeout => "timeout",
            JobState::NodeFail => "node_fail",
            JobState::Preempted => "preempted",
            JobState::OutOfMemory => "out_of_memory",
            JobState::Other(other) => return other.to_lowercase(),
            JobState::Gone => "gone",
        };
        name.to_string()
    }

    /// The name, with what ended a failed job: `failed (exit code 2)`, `failed (signal 9)`.
    pub fn described(&self) -> String {
        match self {
            JobState::Failed { signal, .. } if *signal != 0 => format!("failed (signal {signal})"),
            JobState::Failed { code, .. } => format!("failed (exit code {code})"),
            other => other.name(),
        }
    }
}

/// What `scontrol show job` says of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub id: JobId,
    pub state: JobState,
    /// The node it runs or ran on; empty while pending.
    pub node: String,
    /// `Reason=` (why it is pending, or why it ended).
    pub reason: String,
    /// How many times Slurm restarted it (requeues).
    pub restarts: u32,
}

/// One batch job to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// `--job-name`.
    pub name: String,
    /// The body of the batch script (run by `bash`).
    pub script: String,
    /// `--output`: the job's stdout and stderr.
    pub output: PathBuf,
    /// `--chdir`.
    pub workdir: PathBuf,
    /// `--partition`, when set.
    pub partition: Option<String>,
    /// `--exclusive`: the job holds its node alone.
    pub exclusive: bool,
    /// `--time`, rounded up to whole minutes (Slurm's unit); none means the partition's limit.
    pub time_limit: Option<Duration>,
    /// Added as they are (the campaign's `sbatch_args`).
    pub extra_args: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error("cannot run `{command}` (is Slurm installed and on the PATH?): {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("`{command}` printed something evo cannot read: {output:?}")]
    Unreadable { command: String, output: String },
}

/// The Slurm client: the configuration file clients use (`SLURM_CONF`), when not the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slurm {
    pub conf: Option<PathBuf>,
}

impl Slurm {
    pub fn new(conf: Option<&Path>) -> Slurm {
        Slurm {
            conf: conf.map(Path::to_path_buf),
        }
    }

    fn run(
        &self,
        program: &str,
        args: &[String],
        stdin: Option<&str>,
    ) -> Result<String, SlurmError> {
        use std::io::Write;
        let command = format!("{program} {}", args.join(" "));
        let mut cmd = Command::new(program);
        cmd.args(args);
        if let Some(conf) = &self.conf {
            cmd.env("SLURM_CONF", conf);
        }
        cmd.stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        });
        cmd.stdout(std::process::Stdio::piped());
        cmd.stderr(std::process::Stdio::piped());
        let spawn = |source| SlurmError::Spawn {
            command: command.clone(),
            source,
        };
        let mut child = cmd.spawn().map_err(spawn)?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes()).map_err(spawn)?;
        }
        let out = child.wait_with_output().map_err(spawn)?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(SlurmError::Failed {
                command,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(stdout)
    }

    /// Submits `spec` with `sbatch --parsable`; the script goes on stdin, so no file of it is left.
    pub fn submit(&self, spec: &JobSpec) -> Result<JobId, SlurmError> {
        let args = sbatch_args(spec);
        let script = format!("#!/bin/bash\n{}\n", spec.script);
        let out = self.run("sbatch", &args, Some(&script))?;
        parse_job_id(&out).ok_or_else(|| SlurmError::Unreadable {
            command: "sbatch --parsable".into(),
            output: out,
        })
    }

    /// The job's state, node and reason; [`JobState::Gone`] when Slurm no longer knows it.
    pub fn info(&self, id: JobId) -> Result<JobInfo, SlurmError> {
        let args = vec!["show".into(), "job".into(), "-o".into(), id.to_string()];
        match self.run("scontrol", &args, None) {
            Ok(out) => parse_job_info(id, &out).ok_or_else(|| SlurmError::Unreadable {
                command: format!("scontrol show job -o {id}"),
                output: out,
            }),
            Err(SlurmError::Failed { stderr, .. }) if stderr.contains("Invalid job id") => {
                Ok(JobInfo {
                    id,
                    state: JobState::Gone,
                    node: String::new(),
                    reason: String::new(),
                    restarts: 0,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Cancels the jobs (`scancel`); jobs already finished are no error.
    pub fn cancel(&self, ids: &[JobId]) -> Result<(), SlurmError> {
        if ids.is_empty() {
            return Ok(());
        }
        let args: Vec<String> = ids.iter().map(JobId::to_string).collect();
        self.run("scancel", &args, None).map(|_| ())
    }

    /// Puts a job back in the queue (`scontrol requeue`), as after a lost node, eligible soon:
    /// Slurm holds a requeued job for two minutes (`Reason=BeginTime`) once it is pending again,
    /// so evo waits for that (the job first goes through `COMPLETING`) and lifts the hold.
    ///
    /// Not at once, though: the requeue revokes the job's credential on its node, and slurmd
    /// refuses a launch whose credential was made in the same second as the revocation (times in
    /// whole seconds). A relaunch on the same node within that second ends `FAILED`, exit code 1
    /// ("Killing non-startable batch JobId=N: Job credential revoked" in slurmctld's log). The
    /// revocation happened before the job was pending again, so lifting the hold in a later
    /// second than that makes every new credential newer than it.
    pub fn requeue(&self, id: JobId) -> Result<(), SlurmError> {
        self.run("scontrol", &["requeue".into(), id.to_string()], None)?;
        let asked = std::time::Instant::now();
        while self.info(id)?.state != JobState::Pending {
            if asked.elapsed() > Duration::from_secs(30) {
                return Err(SlurmError::Failed {
                    command: format!("scontrol requeue {id}"),
                    stderr: "the job did not return to the queue within 30 s".into(),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(until_next_second(std::time::SystemTime::now()));
        let args = vec![
            "update".into(),
            format!("jobid={id}"),
            "StartTime=now".into(),
        ];
        self.run("scontrol", &args, None).map(|_| ())
    }
}

/// How long from `now` until the wall clock shows the next whole second, and a little more.
fn until_next_second(now: std::time::SystemTime) -> Duration {
    let into = (now.duration_since(std::time::UNIX_EPOCH)).map_or(0, |d| d.subsec_nanos());
    Duration::from_nanos(u64::from(1_000_000_000 - into)) + Duration::from_millis(50)
}

/// `sbatch`'s arguments for `spec` (the script itself goes on stdin). No job gets the
/// environment of the process that submits it (`--export=NONE`): the script sets what it needs.
pub fn sbatch_args(spec: &JobSpec) -> Vec<String> {
    let mut args = vec![
        "--parsable".to_string(),
        format!("--job-name={}", spec.name),
        format!("--output={}", spec.output.display()),
        format!("--chdir={}", spec.workdir.display()),
        // A job that is requeued must start again from nothing the coordinator has not checked.
        "--requeue".to_string(),
        "--export=NONE".to_string(),
    ];
    if let Some(p) = &spec.partition {
        args.push(format!("--partition={p}"));
    }
    if spec.exclusive {
        args.push("--exclusive".to_string());
    }
    if let Some(limit) = spec.time_limit {
        args.push(format!("--time={}", limit.as_secs().div_ceil(60).max(1)));
    }
    args.extend(spec.extra_args.iter().cloned());
    args
}

/// `123` or `123;cluster` (what `--parsable` prints).
pub fn parse_job_id(out: &str) -> Option<JobId> {
    let first = out.trim().split(';').next()?;
    first.parse().ok().map(JobId)
}

/// `scontrol show job -o`: one line of `Key=Value` words.
pub fn parse_job_info(id: JobId, out: &str) -> Option<JobInfo> {
    let fields: BTreeMap<&str, &str> = out
        .split_whitespace()
        .filter_map(|word| word.split_once('='))
        .collect();
    let state = match *fields.get("JobState")? {
        "PENDING" => JobState::Pending,
        "RUNNING" => JobState::Running,
        "COMPLETED" => JobState::Completed,
        "FAILED" => {
            let (code, signal) = fields
                .get("ExitCode")
                .and_then(|e| e.split_once(':'))
                .and_then(|(c, s)| Some((c.parse().ok()?, s.parse().ok()?)))
                .unwrap_or((-1, 0));
            JobState::Failed { code, signal }
        }
        "CANCELLED" => JobState::Cancelled,
        "TIMEOUT" => JobState::Timeout,
        "NODE_FAIL" => JobState::NodeFail,
        "PREEMPTED" => JobState::Preempted,
        "OUT_OF_MEMORY" => JobState::OutOfMemory,
        other => JobState::Other(other.to_string()),
    };
    let node = match fields.get("NodeList") {
        Some(n) if *n != "(null)" => n.to_string(),
        _ => String::new(),
    };
    Some(JobInfo {
        id,
        state,
        node,
        reason: fields
            .get("Reason")
            .map_or_else(String::new, |r| r.to_string()),
        restarts: fields
            .get("Restarts")
            .and_then(|r| r.parse().ok())
            .unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_id_is_read_with_or_without_a_cluster_name() {
        assert_eq!(parse_job_id("42\n"), Some(JobId(42)));
        assert_eq!(parse_job_id("42;evo\n"), Some(JobId(42)));
        assert_eq!(parse_job_id("Submitted batch job 42"), None);
    }

    #[test]
    fn a_failed_job_gives_its_exit_code_node_and_reason() {
        let out = "JobId=3 JobName=evo-probe JobState=FAILED Reason=NonZeroExitCode \
                   Requeue=1 Restarts=2 ExitCode=3:0 NodeList=evo-n1 BatchHost=evo-n1";
        let info = parse_job_info(JobId(3), out).unwrap();
        assert_eq!(info.state, JobState::Failed { code: 3, signal: 0 });
        assert_eq!(info.node, "evo-n1");
        assert_eq!(info.reason, "NonZeroExitCode");
        assert_eq!(info.restarts, 2);
        assert!(info.state.is_final());
        assert_eq!(info.state.name(), "failed");
    }

    #[test]
    fn a_pending_job_has_no_node_and_is_not_final() {
        let out = "JobId=4 JobState=PENDING Reason=Resources NodeList=(null) Restarts=0";
        let info = parse_job_info(JobId(4), out).unwrap();
        assert_eq!(info.state, JobState::Pending);
        assert_eq!(info.node, "");
        assert!(!info.state.is_final());
        assert!(info.state.is_queued());
        let out = "JobId=4 JobState=REQUEUED Reason=BeginTime";
        assert_eq!(
            parse_job_info(JobId(4), out).unwrap().state,
            JobState::Other("REQUEUED".into())
        );
        assert_eq!(JobState::Other("REQUEUED".into()).name(), "requeued");
        assert!(JobState::Other("REQUEUED".into()).is_queued());
        assert_eq!(JobState::NodeFail.name(), "node_fail");
        assert_eq!(parse_job_info(JobId(4), "nothing here"), None);
    }

    #[test]
    fn a_job_winding_down_after_its_run_is_not_queued_again() {
        let out = "JobId=5 JobState=COMPLETING Reason=None NodeList=evo-n2 Restarts=0";
        let info = parse_job_info(JobId(5), out).unwrap();
        assert!(!info.state.is_queued());
        assert!(!info.state.is_final());
        assert!(!JobState::Running.is_queued());
    }

    #[test]
    fn a_failed_job_is_described_by_its_exit_code_or_signal() {
        let exited = JobState::Failed { code: 2, signal: 0 };
        assert_eq!(exited.described(), "failed (exit code 2)");
        let killed = JobState::Failed { code: 0, signal: 9 };
        assert_eq!(killed.described(), "failed (signal 9)");
        assert_eq!(JobState::NodeFail.described(), "node_fail");
    }

    #[test]
    fn a_requeued_job_is_released_in_a_later_second_than_its_credential_was_revoked() {
        let at = |ms: u64| std::time::UNIX_EPOCH + Duration::from_millis(ms);
        assert_eq!(until_next_second(at(41_490)), Duration::from_millis(560));
        assert_eq!(until_next_second(at(41_000)), Duration::from_millis(1050));
        let released = at(41_999) + until_next_second(at(41_999));
        assert!(released >= at(42_000));
    }

    #[test]
    fn sbatch_gets_the_spec_and_a_time_limit_in_whole_minutes() {
        let spec = JobSpec {
            name: "evo-confirm-3".into(),
            script: "true".into(),
            output: "/shared/out/3.log".into(),
            workdir: "/shared/out".into(),
            partition: Some("cpu".into()),
            exclusive: true,
            time_limit: Some(Duration::from_secs(61)),
            extra_args: vec!["--constraint=avx2".into()],
        };
        let args = sbatch_args(&spec);
        for expected in [
            "--parsable",
            "--export=NONE",
            "--job-name=evo-confirm-3",
            "--output=/shared/out/3.log",
            "--chdir=/shared/out",
            "--partition=cpu",
            "--exclusive",
            "--time=2",
            "--constraint=avx2",
        ] {
            assert!(args.iter().any(|a| a == expected), "{expected} in {args:?}");
        }
    }
}
