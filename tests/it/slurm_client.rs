//! The Slurm client against a real cluster: the two-node single-host cluster of
//! `scripts/slurm-cluster` (which `scripts/test` starts). Submit, follow, fail, cancel, requeue,
//! and two exclusive jobs on two nodes at once.

use std::path::Path;
use std::time::{Duration, Instant};

use evo::fleet::slurm::{JobId, JobInfo, JobSpec, JobState, Slurm};

use crate::util;

/// The local cluster, or `None` with `EVO_SKIP_SLURM=1`; any other absence fails the test.
fn cluster() -> Option<Slurm> {
    util::slurm::cluster_conf().map(|conf| Slurm::new(Some(&conf)))
}

fn job(dir: &tempfile::TempDir, name: &str, script: &str) -> JobSpec {
    JobSpec {
        name: format!("evo-test-{name}"),
        script: script.to_string(),
        output: dir.path().join(format!("{name}.out")),
        workdir: dir.path().to_path_buf(),
        partition: None,
        exclusive: true,
        time_limit: Some(Duration::from_secs(120)),
        extra_args: Vec::new(),
    }
}

/// Polls the job until `done` says so about it (at most 90 s).
fn wait(slurm: &Slurm, id: JobId, done: impl Fn(&JobInfo) -> bool) -> JobInfo {
    let started = Instant::now();
    loop {
        let info = slurm.info(id).unwrap();
        if done(&info) {
            return info;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "job {id} stuck: {info:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn finished(slurm: &Slurm, id: JobId) -> JobInfo {
    wait(slurm, id, |i| i.state.is_final())
}

#[test]
fn a_job_runs_on_a_node_of_the_cluster_and_is_followed_to_completion() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spec = job(&dir, "node", "echo \"node=$SLURMD_NODENAME\"");
    let id = slurm.submit(&spec).unwrap();
    let info = finished(&slurm, id);
    assert_eq!(info.state, JobState::Completed, "{info:?}");
    assert!(
        ["evo-n1", "evo-n2"].contains(&info.node.as_str()),
        "{info:?}"
    );
    let out = std::fs::read_to_string(&spec.output).unwrap();
    assert_eq!(out.trim(), format!("node={}", info.node));
}

#[test]
fn exclusive_jobs_hold_a_node_each_and_a_third_waits() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Three jobs, two nodes of two CPUs: shared, all three would run at once; exclusive, at most
    // two do, each on its own node, and the third waits for one of them.
    let ids: Vec<JobId> = ["a", "b", "c"]
        .iter()
        .map(|n| slurm.submit(&job(&dir, n, "sleep 5")).unwrap())
        .collect();
    let started = Instant::now();
    let mut most_at_once = 0;
    loop {
        let infos: Vec<JobInfo> = ids.iter().map(|id| slurm.info(*id).unwrap()).collect();
        let running: Vec<&JobInfo> = infos
            .iter()
            .filter(|i| i.state == JobState::Running)
            .collect();
        most_at_once = most_at_once.max(running.len());
        assert!(
            running.len() <= 2,
            "three at once on two nodes: {running:?}"
        );
        if let [x, y] = running.as_slice() {
            assert_ne!(x.node, y.node, "two jobs on one node: {running:?}");
        }
        if infos.iter().all(|i| i.state.is_final()) {
            assert!(
                infos.iter().all(|i| i.state == JobState::Completed),
                "{infos:?}"
            );
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{infos:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Other tests' jobs may hold a node meanwhile, but not for the whole 15 s.
    assert_eq!(
        most_at_once, 2,
        "the two nodes never ran two of these jobs together"
    );
}

#[test]
fn a_failing_job_reports_its_exit_code() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let id = slurm.submit(&job(&dir, "fail", "exit 3")).unwrap();
    let info = finished(&slurm, id);
    assert_eq!(
        info.state,
        JobState::Failed { code: 3, signal: 0 },
        "{info:?}"
    );
}

#[test]
fn a_cancelled_job_ends_cancelled_and_an_unknown_one_is_gone() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let id = slurm.submit(&job(&dir, "long", "sleep 300")).unwrap();
    wait(&slurm, id, |i| i.state == JobState::Running);
    slurm.cancel(&[id]).unwrap();
    assert_eq!(finished(&slurm, id).state, JobState::Cancelled);
    assert_eq!(
        slurm.info(JobId(999_999_999)).unwrap().state,
        JobState::Gone
    );
}

/// Failed once in five whole-suite runs before the fix: the requeued job was relaunched on the
/// same node within the second its credential was revoked, and slurmd refused it ("Killing
/// non-startable batch JobId=126: Job credential revoked" in slurmctld's log, WEXITSTATUS 1).
/// `Slurm::requeue` now lifts the hold in a later second. Three requeues in a row, each a chance
/// for the same-second relaunch.
#[test]
fn a_job_requeued_and_relaunched_on_its_node_at_once_is_not_refused_as_revoked() {
    let Some(slurm) = cluster() else { return };
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let script = format!("echo start >> '{}'; sleep 3", starts.display());
    let id = slurm.submit(&job(&dir, "requeue", &script)).unwrap();
    let lines = || {
        std::fs::read_to_string(&starts)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    for run in 1..=3 {
        wait(&slurm, id, |i| {
            i.state == JobState::Running || i.state.is_final()
        });
        // Give this start time to write its line.
        let started = Instant::now();
        while lines() < run && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let info = slurm.info(id).unwrap();
        assert_eq!(info.state, JobState::Running, "run {run}: {info:?}");
        slurm.requeue(id).unwrap();
    }
    let info = finished(&slurm, id);
    assert_eq!(info.state, JobState::Completed, "{info:?}");
    assert_eq!(info.restarts, 3, "{info:?}");
    assert_eq!(lines(), 4, "the job ran {} times", lines());
}

/// `evo confirm` of an empty patch with a campaign whose `extra` JSON members (after the
/// workload's) are given, in `dir`, with `cache` as the user's cache folder: its exit code and
/// stderr. The repository is `dir/repo`, the campaign folder `dir/camp`.
fn confirm_with(dir: &Path, cache: &Path, extra: &str) -> (Option<i32>, String) {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let camp = dir.join("camp");
    std::fs::create_dir_all(&camp).unwrap();
    std::fs::write(
        camp.join("workload.json"),
        r#"{ "name": "w", "build": { "command": "true" }, "test": { "command": "true" },
             "scenarios": [{ "name": "s", "role": "training", "run": "true", "check": "true", "compare": "exact" }] }"#,
    )
    .unwrap();
    let campaign = format!(
        r#"{{ "name": "c", "repo": "../repo", "baseline": "HEAD", "workload": "workload.json",
             {extra} }}"#
    );
    std::fs::write(camp.join("campaign.json"), campaign).unwrap();
    for args in [
        &["init", "-q"][..],
        &["commit", "-q", "--allow-empty", "-m", "b"],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap();
        assert!(ok.success());
    }
    std::fs::write(camp.join("x.patch"), "").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_evo"))
        .arg("confirm")
        .arg(camp.join("x.patch"))
        .arg("--campaign")
        .arg(camp.join("campaign.json"))
        .env("XDG_CACHE_HOME", cache)
        .env_remove("EVO_SLURM_DIR")
        .env("EVO_KEY_DIR", dir.join("keys"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr)
}

/// The cluster's folder holds its munge key and socket (a credential to submit jobs as root): it
/// is one of the secrets the sandbox covers inside any declared folder, and declaring a folder
/// inside it is refused before anything runs. No cluster is needed for this.
#[test]
fn a_campaign_that_would_show_the_clusters_credentials_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(cache.join("evo/slurm/munge-key")).unwrap();
    let extra = format!(
        r#""sandbox": {{ "read_only": ["{}"] }}"#,
        cache.join("evo/slurm/munge-key").display()
    );
    let (code, stderr) = confirm_with(dir.path(), &cache, &extra);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("must never see") && stderr.contains("evo/slurm"),
        "{stderr}"
    );
}

/// A fleet's shared folder holds every job's request (with the holdouts) and every node's
/// unsigned result before the coordinator checks it: code under test must neither read nor
/// write it, so a declared folder inside it is refused, as for any secret. No cluster is needed.
#[test]
fn a_campaign_that_would_show_the_fleets_shared_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(shared.join("datasets")).unwrap();
    let extra = format!(
        r#""fleet": {{ "engine": "slurm", "shared_dir": "{shared}" }},
           "sandbox": {{ "writable": ["{inside}"] }}"#,
        shared = shared.display(),
        inside = shared.join("datasets").display()
    );
    let (code, stderr) = confirm_with(dir.path(), &cache, &extra);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("must never see") && stderr.contains("shared"),
        "{stderr}"
    );
}
