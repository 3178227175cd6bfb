//! One confirmation, or one candidate's screening, as a Slurm job: its folder in the shared
//! folder, its batch script and the environment it starts with.
//!
//! The job gets none of the coordinator's environment: `sbatch --export=NONE`, and the script
//! starts evo through `env -i` with an allow-list of variables (the toolchain's, the locale, evo's
//! own state and cache folders, and the campaign's `sandbox.pass_env`). `$EVO_SIGNING_KEY` is never
//! among them, whatever the campaign says: the key stays on the coordinator (§2.8).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::FleetPlan;
use super::scheduler::{Job, JobKind};
use super::slurm::JobSpec;
use crate::measure::sandbox::PASSED_ENV;

/// evo's own variables a job's evo gets from the coordinator, besides the ones it passes on to
/// code under test (`measure::sandbox::PASSED_ENV`) and the campaign's `sandbox.pass_env`.
pub const EVO_ENV: &[&str] = &["XDG_STATE_HOME", "EVO_STATE_DIR", "EVO_QUIET_WAIT_S"];

/// Whether a job's evo may get `name` from the coordinator (besides `sandbox.pass_env`).
pub fn job_env_allows(name: &str) -> bool {
    PASSED_ENV.contains(&name) || EVO_ENV.contains(&name)
}

/// The files of one attempt at one confirmation, in the shared folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFolder {
    /// `<shared>/<run id>/fleet/candidate_<index>/attempt_<n>`.
    pub dir: PathBuf,
}

impl JobFolder {
    pub fn new(dir: PathBuf) -> JobFolder {
        JobFolder { dir }
    }

    /// The request the job runs.
    pub fn request(&self) -> PathBuf {
        self.dir.join("request.json")
    }

    /// The folder the job's confirmation writes its run folder into (the request's output).
    pub fn out(&self) -> PathBuf {
        self.dir.join("out")
    }

    /// The job's stdout and stderr.
    pub fn log(&self) -> PathBuf {
        self.dir.join("job.log")
    }
}

/// The next attempt at a candidate's confirmation: its number (1 for the first) and folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub number: u32,
    pub folder: JobFolder,
}

/// The folder of the next attempt at candidate `index`'s confirmation under `root`
/// (`<shared>/<run id>/fleet`): one no earlier attempt used, also one whose submission was never
/// journaled, so two jobs never write into one folder.
pub fn next_attempt(root: &Path, index: usize) -> std::io::Result<Attempt> {
    let candidate = root.join(format!("candidate_{index}"));
    std::fs::create_dir_all(&candidate)?;
    let mut attempt = 1;
    while candidate.join(format!("attempt_{attempt}")).exists() {
        attempt += 1;
    }
    let folder = JobFolder::new(candidate.join(format!("attempt_{attempt}")));
    std::fs::create_dir_all(folder.out())?;
    Ok(Attempt {
        number: attempt,
        folder,
    })
}

/// The environment the job's evo starts with: `PASSED_ENV`, [`EVO_ENV`] and `pass_env`, read
/// through `var`,
/// never the signing key.
pub fn job_environment(
    pass_env: &[String],
    var: &dyn Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    let names =
        (PASSED_ENV.iter().chain(EVO_ENV).copied()).chain(pass_env.iter().map(String::as_str));
    names
        .filter(|name| !crate::spec::modes::never_passed(name))
        .filter_map(|name| Some((name.to_string(), var(name)?)))
        .collect()
}

/// `text` as one word for `bash`, whatever it holds.
pub fn shell_word(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The job that runs the confirmation request in `folder` on a node of its own.
pub fn confirmation_job(
    fleet: &FleetPlan,
    name: &str,
    folder: &JobFolder,
    env: &BTreeMap<String, String>,
) -> Job {
    Job {
        kind: JobKind::Confirm,
        folder: folder.clone(),
        batch: request_job(fleet, name, folder, env, &["confirm"], &["--unsigned"]),
    }
}

/// The job that runs the screening request in `folder` (a candidate's checks and screening pairs
/// against a baseline it builds there) on a node of its own.
pub fn screening_job(
    fleet: &FleetPlan,
    name: &str,
    folder: &JobFolder,
    env: &BTreeMap<String, String>,
) -> Job {
    Job {
        kind: JobKind::Screening,
        folder: folder.clone(),
        batch: request_job(fleet, name, folder, env, &["campaign", "screen-job"], &[]),
    }
}

/// The job that runs `evo <command> --request <folder's request> <flags>` on a node of its own,
/// with the node's exclusive allocation as what keeps other runs off it. It first empties the
/// folder's `out`: Slurm may restart a job by itself (a lost node, preemption, `scontrol
/// requeue`), and the restarted run must not find what the killed one began to write there (the
/// coordinator accepts one run folder and nothing else).
fn request_job(
    fleet: &FleetPlan,
    name: &str,
    folder: &JobFolder,
    env: &BTreeMap<String, String>,
    command: &[&str],
    flags: &[&str],
) -> JobSpec {
    let out = shell_word(&folder.out().display().to_string());
    let mut script = format!("rm -rf -- {out} && mkdir -- {out} && exec /usr/bin/env -i");
    for (key, value) in env {
        script += &format!(" {}", shell_word(&format!("{key}={value}")));
    }
    script += &format!(
        " {} {} --request {}",
        shell_word(&fleet.evo.display().to_string()),
        command.join(" "),
        shell_word(&folder.request().display().to_string()),
    );
    for flag in flags {
        script += &format!(" {flag}");
    }
    script += " --held-by \"Slurm job $SLURM_JOB_ID, exclusive on node $SLURMD_NODENAME\"";
    JobSpec {
        name: name.to_string(),
        script,
        output: folder.log(),
        workdir: folder.dir.clone(),
        partition: fleet.settings.partition.clone(),
        exclusive: true,
        time_limit: None,
        extra_args: fleet.settings.sbatch_args.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet() -> FleetPlan {
        FleetPlan {
            settings: crate::spec::fleet::FleetSettings::slurm(),
            shared_dir: "/shared".into(),
            evo: "/opt/evo it's/evo".into(),
            scheduler: std::sync::Arc::new(super::super::slurm::Slurm::default()),
        }
    }

    #[test]
    fn the_signing_key_is_never_in_a_jobs_environment_whatever_pass_env_says() {
        let var = |name: &str| Some(format!("value of {name}"));
        let pass = vec!["EVO_SIGNING_KEY".to_string(), "OMP_NUM_THREADS".to_string()];
        let env = job_environment(&pass, &var);
        assert!(!env.contains_key("EVO_SIGNING_KEY"), "{env:?}");
        assert!(env.contains_key("PATH") && env.contains_key("OMP_NUM_THREADS"));
        assert!(!env.contains_key("EVO_KEY_DIR"), "{env:?}");
        let folder = JobFolder::new("/shared/run/fleet/candidate_1/attempt_1".into());
        let job = confirmation_job(&fleet(), "evo-c1", &folder, &env);
        assert_eq!((job.kind, &job.folder), (JobKind::Confirm, &folder));
        let job = job.batch;
        assert!(!job.script.contains("EVO_SIGNING_KEY"), "{}", job.script);
        assert!(
            job.script.starts_with(
                "rm -rf -- '/shared/run/fleet/candidate_1/attempt_1/out' && mkdir -- \
                 '/shared/run/fleet/candidate_1/attempt_1/out' && exec /usr/bin/env -i \
                 'CARGO_HOME=value of CARGO_HOME'"
            ),
            "{}",
            job.script
        );
        assert!(
            job.script.contains(
                "'/opt/evo it'\\''s/evo' confirm --request \
                 '/shared/run/fleet/candidate_1/attempt_1/request.json' --unsigned"
            ),
            "{}",
            job.script
        );
        assert!(job.exclusive);
        assert_eq!(job.output, folder.log());
        let screening = screening_job(&fleet(), "evo-s1", &folder, &env);
        assert_eq!(screening.kind, JobKind::Screening);
        let screening = screening.batch;
        assert!(
            screening.script.contains(
                "'/opt/evo it'\\''s/evo' campaign screen-job --request \
                 '/shared/run/fleet/candidate_1/attempt_1/request.json' --held-by"
            ),
            "{}",
            screening.script
        );
        assert!(screening.exclusive && !screening.script.contains("EVO_SIGNING_KEY"));
    }

    #[test]
    fn each_attempt_gets_a_folder_no_earlier_attempt_used() {
        let dir = tempfile::tempdir().unwrap();
        let first = next_attempt(dir.path(), 3).unwrap();
        let second = next_attempt(dir.path(), 3).unwrap();
        assert_eq!((first.number, second.number), (1, 2));
        assert_ne!(first.folder, second.folder);
        assert!(second.folder.out().is_dir());
    }
}
