//! A fleet job starts without the coordinator's environment (docs/design.md §2.8): the signing
//! key in `$EVO_SIGNING_KEY`, and any other variable not on the job's allow-list, never reaches
//! the node, through `sbatch` or the job's script. The coordinator's variables are set only in a
//! second copy of the test binary that runs this one test (the other tests share this process's
//! environment on other threads).

use crate::util;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use evo::fleet::FleetPlan;
use evo::fleet::job::{self, JobFolder};
use evo::fleet::slurm::Slurm;

/// Set in the copy of the test binary that plays the coordinator.
const COORDINATOR: &str = "EVO_TEST_COORDINATOR_ONLY";

/// Runs `test` (a test of this module) alone in a new copy of this test binary, with the
/// coordinator's variables in its environment, and fails with its output unless it passed.
fn as_the_coordinator(test: &str) {
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{module}::{test}");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env("EVO_SIGNING_KEY", "-----BEGIN PRIVATE KEY-----secret")
        .env(COORDINATOR, "coordinator")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let log = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)).replace('\n', "\n  ");
    assert!(
        out.status.success(),
        "{name} failed as the coordinator:\n  {log}"
    );
    // A name that matched nothing would pass too.
    assert!(
        stdout.contains(" 1 passed;"),
        "{name} did not run:\n  {log}"
    );
}

#[test]
fn the_signing_key_and_other_variables_of_the_coordinator_never_reach_a_job() {
    if std::env::var_os(COORDINATOR).is_none() {
        return as_the_coordinator(
            "the_signing_key_and_other_variables_of_the_coordinator_never_reach_a_job",
        );
    }
    let Some(conf) = util::slurm::cluster_conf() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // In place of evo, a program that writes down the environment it was started with.
    let fake_evo = dir.path().join("evo");
    let seen = dir.path().join("seen.env");
    util::write(
        &fake_evo,
        &format!("#!/bin/sh\nenv > '{}'\n", seen.display()),
    );
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&fake_evo)
        .status()
        .unwrap();
    let slurm = Slurm::new(Some(&conf));
    let fleet = FleetPlan {
        settings: evo::spec::fleet::FleetSettings::slurm(),
        shared_dir: dir.path().to_path_buf(),
        evo: fake_evo,
        scheduler: std::sync::Arc::new(slurm.clone()),
    };
    let folder = JobFolder::new(dir.path().join("attempt_1"));
    std::fs::create_dir_all(folder.out()).unwrap();
    // What the campaign passes: the allow-list, read from this process, and a pass_env that
    // names the key (a campaign naming it is refused at load; this holds without that too).
    let pass = vec!["EVO_SIGNING_KEY".to_string()];
    let env: BTreeMap<String, String> =
        job::job_environment(&pass, &|name| std::env::var(name).ok());
    let spec = job::confirmation_job(&fleet, "evo-test-env", &folder, &env).batch;
    let id = slurm.submit(&spec).unwrap();
    let started = Instant::now();
    while !slurm.info(id).unwrap().state.is_final() {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "job {id} stuck"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let seen = std::fs::read_to_string(&seen).unwrap_or_else(|e| {
        let log = std::fs::read_to_string(folder.log()).unwrap_or_default();
        panic!("the job did not run the program: {e}\n{log}")
    });
    assert!(
        !seen.contains("EVO_SIGNING_KEY") && !seen.contains("secret"),
        "{seen}"
    );
    assert!(!seen.contains(COORDINATOR), "{seen}");
    let path = std::env::var("PATH").unwrap();
    assert!(seen.lines().any(|l| l == format!("PATH={path}")), "{seen}");
    // Nothing but the allow-list (and what the shell itself sets): no SLURM_* variable of the
    // job either, after `env -i`.
    let shell_made = ["PWD", "OLDPWD", "SHLVL", "_"];
    for line in seen.lines() {
        let name = line.split('=').next().unwrap();
        let allowed = job::job_env_allows(name) || shell_made.contains(&name);
        assert!(allowed, "{name} reached the job: {seen}");
    }
}
