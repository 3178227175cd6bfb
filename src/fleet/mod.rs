//! Running a campaign's work on other machines (issue 13): for now the Slurm client the fleet
//! coordinator will use, tested against a real single-host cluster (`scripts/slurm-cluster`).
//! Nothing in a campaign goes through it yet.

pub mod slurm;
