//! The local Slurm cluster of `scripts/slurm-cluster`, for the fleet's tests.

use std::path::PathBuf;

/// The cluster's client configuration (`SLURM_CONF`), or `None` with `EVO_SKIP_SLURM=1`; a cluster
/// that is not running fails the test.
pub fn cluster_conf() -> Option<PathBuf> {
    if std::env::var("EVO_SKIP_SLURM").is_ok_and(|v| v == "1") {
        eprintln!("note: EVO_SKIP_SLURM=1: nothing is tried on a Slurm cluster");
        return None;
    }
    let root = env!("CARGO_MANIFEST_DIR");
    let status = std::process::Command::new(format!("{root}/scripts/slurm-cluster"))
        .arg("status")
        .status()
        .expect("scripts/slurm-cluster runs");
    assert!(
        status.success(),
        "no local Slurm cluster: start it with scripts/slurm-cluster start (scripts/test does), \
         or set EVO_SKIP_SLURM=1"
    );
    let dir = evo::fleet::slurm::state_dir().expect("a home or cache folder");
    Some(dir.join("slurm.conf"))
}
