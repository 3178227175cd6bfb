//! The local Slurm cluster of `scripts/slurm-cluster`, for the fleet's tests.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a cluster that is not up yet (a node briefly not responding while the machine is
/// loaded, as `slurm-cluster start` itself allows for) may take before the tests fail.
const COME_UP: Duration = Duration::from_secs(60);

/// The cluster's client configuration (`SLURM_CONF`), or `None` with `EVO_SKIP_SLURM=1`; a cluster
/// that is not running fails the test. The cluster is checked once per test process: the tests
/// that run on it put it through cancelled and requeued jobs, and a node that shows this for a
/// moment is no missing cluster.
pub fn cluster_conf() -> Option<PathBuf> {
    if std::env::var("EVO_SKIP_SLURM").is_ok_and(|v| v == "1") {
        eprintln!("note: EVO_SKIP_SLURM=1: nothing is tried on a Slurm cluster");
        return None;
    }
    static UP: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(why) = UP.get_or_init(wait_for_cluster) {
        panic!(
            "no local Slurm cluster ({why}): start it with scripts/slurm-cluster start \
             (scripts/test does), or set EVO_SKIP_SLURM=1"
        );
    }
    let dir = evo::fleet::slurm::state_dir().expect("a home or cache folder");
    Some(dir.join("slurm.conf"))
}

/// `scripts/slurm-cluster status` until it passes, for at most [`COME_UP`]; else what it said.
fn wait_for_cluster() -> Result<(), String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let start = Instant::now();
    loop {
        let out = std::process::Command::new(format!("{root}/scripts/slurm-cluster"))
            .arg("status")
            .output()
            .expect("scripts/slurm-cluster runs");
        if out.status.success() {
            return Ok(());
        }
        if start.elapsed() >= COME_UP {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
