//! The campaign's `fleet` section: where its screenings and confirmations run (docs/design.md
//! §2.8). Without it, or with `"engine": "local"`, everything runs in the process that runs the
//! campaign.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::values::Count;

/// Which machines run a campaign's screenings and confirmations.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// This machine, in this process (what a campaign without a `fleet` section does).
    #[default]
    Local,
    /// One Slurm job per candidate's screening and per confirmation, each holding a whole node
    /// (`--exclusive`).
    Slurm,
}

/// How a campaign fans its screenings and confirmations out over a cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, try_from = "FleetFile")]
pub struct FleetSettings {
    /// `slurm` (one exclusive job per screening and per confirmation) or `local` (as without
    /// this section).
    pub engine: Engine,
    /// The Slurm partition the jobs go to; the cluster's default partition when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// How many jobs the campaign has queued or running at once.
    #[serde(default = "four")]
    pub max_jobs: Count,
    /// Further `sbatch` options, passed as written (`--constraint=avx2`, `--time=60`). evo sets
    /// the job's name, output, folder, node exclusivity and environment itself, so those options
    /// are refused here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sbatch_args: Vec<String>,
    /// A folder every node mounts at the same path, where evo writes the jobs' requests and the
    /// nodes write their unsigned results; default: the campaign's `output` folder. The
    /// repository, the campaign's files and evo itself must be at the same paths on the nodes.
    /// Relative to the campaign file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_dir: Option<String>,
    /// How many times a job that ends without a result (failed, cancelled, timed out, lost its
    /// node) is submitted again before its candidate ends `inconclusive`.
    #[serde(default = "two")]
    pub max_requeues: u32,
    /// Whether the jobs' sandboxed builds share the campaign's `sandbox.writable` caches through
    /// `<shared_dir>/caches/<machine kind>/` (default) or each node keeps its own.
    #[serde(default = "yes")]
    pub share_caches: bool,
}

impl FleetSettings {
    /// The section `--fleet slurm` stands for when the campaign has none.
    pub fn slurm() -> FleetSettings {
        FleetSettings {
            engine: Engine::Slurm,
            partition: None,
            max_jobs: four(),
            sbatch_args: Vec::new(),
            shared_dir: None,
            max_requeues: 2,
            share_caches: true,
        }
    }
}

fn yes() -> bool {
    true
}

fn four() -> Count {
    Count::try_from(4).unwrap_or_else(|_| unreachable!("4 is a valid count"))
}

fn two() -> u32 {
    2
}

/// `sbatch` options evo sets itself: a campaign giving one of them would change what evo relies
/// on (where the result goes, that the node is the job's alone, that no variable of the
/// coordinator reaches the job).
const OWN_SBATCH_OPTIONS: &[&str] = &[
    "--export",
    "--export-file",
    "--get-user-env",
    "--output",
    "-o",
    "--error",
    "-e",
    "--chdir",
    "-D",
    "--job-name",
    "-J",
    "--parsable",
    "--wrap",
    "--exclusive",
    "--oversubscribe",
    "-s",
    "--share",
    "--wait",
    "-W",
    "--array",
    "-a",
    "--partition",
    "-p",
];

/// `FleetSettings` as written, before its checks; the JSON Schema (`evo schema campaign`) is
/// this one's, so its fields carry the user's documentation.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FleetFile {
    /// `slurm`: each candidate's checks and screening pairs, and each confirmation, run as one
    /// Slurm job holding a whole node (`--exclusive`), against a baseline built and measured on
    /// that node; this machine checks what comes back, ranks, and signs the confirmations;
    /// `local`: as without this section.
    engine: Engine,
    /// The Slurm partition of the jobs; the cluster's default partition when absent.
    #[serde(default)]
    partition: Option<String>,
    /// How many jobs the campaign has queued or running at once (default 4).
    #[serde(default = "four")]
    max_jobs: Count,
    /// Further `sbatch` options, each written `--name=value` (`--constraint=avx2`, `--time=90`).
    /// Options evo sets itself (output, folder, job name, partition, exclusivity, environment)
    /// are refused.
    #[serde(default)]
    sbatch_args: Vec<String>,
    /// A folder every node mounts at the same path: the jobs' requests and unsigned results go
    /// there (default: the campaign's `output` folder). The repository, the campaign's files
    /// and evo itself must be at the same paths on the nodes too. Relative to the campaign file.
    #[serde(default)]
    shared_dir: Option<String>,
    /// How many times a job that ends without a usable result (failed, cancelled, timed out,
    /// lost its node, refused) is submitted again before its candidate ends `inconclusive`
    /// (default 2).
    #[serde(default = "two")]
    max_requeues: u32,
    /// Whether the jobs' builds share the campaign's `sandbox.writable` caches (a Cargo target
    /// folder, ccache) among the nodes of one machine kind (the same architecture, CPU model and
    /// instruction set, and operating system release), through `<shared_dir>/caches/<kind>/`,
    /// so that a dependency is compiled once per kind rather than once per node (default true).
    /// Only baseline builds write a shared cache, one at a time; every other build gets a
    /// private copy. Needs the sandbox: unsandboxed, each node keeps its own caches.
    #[serde(default = "yes")]
    share_caches: bool,
}

/// Why a campaign's `fleet` section is refused (at its line and column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetSettingsError {
    #[error(
        "sbatch_args: evo sets {own} itself (the job's output, folder, exclusive node and \
         environment); remove \"{arg}\""
    )]
    OwnOption { own: &'static str, arg: String },
    #[error("sbatch_args: \"{0}\" is not an option; write each as --name=value")]
    NotAnOption(String),
    #[error("partition \"{0}\" is not one partition name (no spaces or commas)")]
    Partition(String),
    #[error("max_requeues {0} is more than 100; a job failing that often will not succeed")]
    Requeues(u32),
}

impl TryFrom<FleetFile> for FleetSettings {
    type Error = FleetSettingsError;
    fn try_from(f: FleetFile) -> Result<FleetSettings, FleetSettingsError> {
        for arg in &f.sbatch_args {
            let name = arg.split('=').next().unwrap_or(arg);
            // `-oFILE` is `-o FILE`: a short option is refused with anything glued to it.
            let short = OWN_SBATCH_OPTIONS
                .iter()
                .find(|o| o.len() == 2 && arg.starts_with(*o) && !arg.starts_with("--"));
            if let Some(own) = OWN_SBATCH_OPTIONS.iter().find(|o| **o == name).or(short) {
                return Err(FleetSettingsError::OwnOption {
                    own,
                    arg: arg.clone(),
                });
            }
            if !arg.starts_with('-') {
                return Err(FleetSettingsError::NotAnOption(arg.clone()));
            }
        }
        if let Some(p) = &f.partition {
            if p.is_empty() || p.contains(|c: char| c.is_whitespace() || c == ',') {
                return Err(FleetSettingsError::Partition(p.clone()));
            }
        }
        if f.max_requeues > 100 {
            return Err(FleetSettingsError::Requeues(f.max_requeues));
        }
        Ok(FleetSettings {
            engine: f.engine,
            partition: f.partition,
            max_jobs: f.max_jobs,
            sbatch_args: f.sbatch_args,
            shared_dir: f.shared_dir,
            max_requeues: f.max_requeues,
            share_caches: f.share_caches,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(json: &str) -> Result<FleetSettings, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn a_slurm_section_takes_its_defaults() {
        let f = fleet(r#"{ "engine": "slurm" }"#).unwrap();
        assert_eq!(f, FleetSettings::slurm());
        let f = fleet(
            r#"{ "engine": "slurm", "partition": "cpu", "max_jobs": 16,
                 "sbatch_args": ["--constraint=avx2", "--time=90"], "shared_dir": "/shared/evo",
                 "max_requeues": 0, "share_caches": false }"#,
        )
        .unwrap();
        assert_eq!(
            (f.partition.as_deref(), f.max_jobs.get(), f.max_requeues),
            (Some("cpu"), 16, 0)
        );
        assert!(!f.share_caches && FleetSettings::slurm().share_caches);
    }

    #[test]
    fn options_evo_sets_itself_are_refused_by_name() {
        for arg in [
            "--export=ALL",
            "--output=/tmp/x",
            "-o/tmp/x",
            "--exclusive",
            "-pcpu",
        ] {
            let json = format!(r#"{{ "engine": "slurm", "sbatch_args": ["{arg}"] }}"#);
            let err = fleet(&json).unwrap_err();
            assert!(
                err.contains("evo sets") && err.contains(arg),
                "{arg}: {err}"
            );
        }
        let err = fleet(r#"{ "engine": "slurm", "sbatch_args": ["avx2"] }"#).unwrap_err();
        assert!(err.contains("not an option"), "{err}");
    }

    #[test]
    fn unknown_keys_engines_and_bad_counts_are_refused() {
        assert!(fleet(r#"{ "engine": "slurm", "nodes": 3 }"#).is_err());
        assert!(fleet(r#"{ "engine": "kubernetes" }"#).is_err());
        assert!(fleet(r#"{ "engine": "slurm", "max_jobs": 0 }"#).is_err());
        assert!(fleet(r#"{ "engine": "slurm", "partition": "a,b" }"#).is_err());
        assert!(fleet(r#"{ "partition": "a" }"#).is_err());
    }
}
