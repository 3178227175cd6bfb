//! A fleet job starts without the coordinator's environment (docs/design.md §2.8): the signing
//! key in `$EVO_SIGNING_KEY`, and any other variable not on the job's allow-list, never reaches
//! the node, through `sbatch` or the job's script. Alone in its test binary: it sets variables
//! of its own process.

mod util;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use evo::fleet::FleetPlan;
use evo::fleet::job::{self, JobFolder};
use evo::fleet::slurm::Slurm;

#[test]
fn the_signing_key_and_other_variables_of_the_coordinator_never_reach_a_job() {
    let Some(conf) = util::slurm::cluster_conf() else {
        return;
    };
    // SAFETY: the only test of this binary, so no other thread reads the environment meanwhile.
    unsafe {
        std::env::set_var("EVO_SIGNING_KEY", "-----BEGIN PRIVATE KEY-----secret");
        std::env::set_var("EVO_TEST_COORDINATOR_ONLY", "coordinator");
    }
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
    let fleet = FleetPlan {
        settings: evo::spec::fleet::FleetSettings::slurm(),
        shared_dir: dir.path().to_path_buf(),
        evo: fake_evo,
        slurm: Slurm::new(Some(&conf)),
    };
    let folder = JobFolder::new(dir.path().join("attempt_1"));
    std::fs::create_dir_all(folder.out()).unwrap();
    // What the campaign passes: the allow-list, read from this process, and a pass_env that
    // names the key (a campaign naming it is refused at load; this holds without that too).
    let pass = vec!["EVO_SIGNING_KEY".to_string()];
    let env: BTreeMap<String, String> =
        job::job_environment(&pass, &|name| std::env::var(name).ok());
    let spec = job::confirmation_job(&fleet, "evo-test-env", &folder, &env);
    let id = fleet.slurm.submit(&spec).unwrap();
    let started = Instant::now();
    while !fleet.slurm.info(id).unwrap().state.is_final() {
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
    assert!(!seen.contains("EVO_TEST_COORDINATOR_ONLY"), "{seen}");
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
