//! Facts about the machine a measurement ran on, read from `/proc`.
//!
//! A verdict is only as good as the machine was quiet: the receipt records the CPU, cores, memory,
//! kernel, virtualization and the 1-minute load before and after, and warns when load competes.

use serde::{Deserialize, Serialize};

/// The machine, as far as `/proc` tells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Machine {
    pub cpu_model: String,
    pub logical_cores: usize,
    pub mem_total_kib: u64,
    pub kernel: String,
    /// `bare metal`, `vm`, `container` or `unknown`.
    pub virtualization: String,
}

/// The machine plus the load around a measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    #[serde(flatten)]
    pub machine: Machine,
    pub load_1m_before: Option<f64>,
    pub load_1m_after: Option<f64>,
    /// What waiting for a quiet machine before measuring found (`evo confirm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet: Option<QuietWait>,
    /// The CPUs of evo and of the timed commands while measuring, when they were split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<crate::measure::cpus::CpuSplit>,
    /// The fleet job the confirmation ran in (docs/design.md §2.8), as the coordinator that
    /// checked and signed its result saw it; absent for a run on the signing machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<FleetJob>,
}

/// A Slurm job that ran a confirmation on a node of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FleetJob {
    /// The scheduler: `slurm`.
    pub engine: String,
    pub job_id: u64,
    /// The node Slurm ran it on (`NodeList`); empty when Slurm had forgotten the job before the
    /// coordinator saw it run.
    pub node: String,
    /// 1 for the first submission, 2 for the first resubmission after a job without a result.
    pub attempt: u32,
}

/// The machine's CPU use just before measuring, from `/proc/stat`: evo waits (up to a limit)
/// until other work leaves the CPUs nearly idle, and records what it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuietWait {
    /// Seconds spent waiting.
    pub waited_s: f64,
    /// CPU time used by everything (evo itself sleeps meanwhile) over the last sample, in % of
    /// all CPUs.
    pub busy_pct: f64,
    /// CPU time the hypervisor took over the last sample (steal), in % of all CPUs.
    pub steal_pct: f64,
    /// Whether the machine was quiet when measuring began (or the limit ran out first).
    pub quiet: bool,
}

/// Other work may use at most this share of all CPUs for the machine to count as quiet.
pub const QUIET_BUSY_PCT: f64 = 10.0;

/// How often the wait for a quiet machine samples `/proc/stat`.
pub const QUIET_SAMPLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Cumulative CPU time of the whole machine, from the first line of `/proc/stat`, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq.
    pub busy: u64,
    pub steal: u64,
    /// Everything, idle and iowait included.
    pub total: u64,
}

/// The `cpu` line of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    let total = (0..8).map(at).sum();
    Some(CpuTimes {
        busy,
        steal: at(7),
        total,
    })
}

/// Samples the machine's CPU use every `sample` until other work stays under
/// [`QUIET_BUSY_PCT`] of all CPUs, or `limit` has passed, or `stop` is requested; says what it
/// found. `None` when `/proc/stat` cannot be read. `stop` is the run's stop condition
/// (`host::Stop::requested`), asked once a sample.
pub fn wait_for_quiet(
    limit: std::time::Duration,
    sample: std::time::Duration,
    stop: &dyn Fn() -> bool,
) -> Option<QuietWait> {
    let started = std::time::Instant::now();
    let mut last = parse_proc_stat(&read("/proc/stat"))?;
    loop {
        std::thread::sleep(sample);
        let now = parse_proc_stat(&read("/proc/stat"))?;
        let total = now.total.saturating_sub(last.total).max(1) as f64;
        let busy_pct = now.busy.saturating_sub(last.busy) as f64 / total * 100.0;
        let steal_pct = now.steal.saturating_sub(last.steal) as f64 / total * 100.0;
        let quiet = busy_pct + steal_pct < QUIET_BUSY_PCT;
        let waited = started.elapsed();
        if quiet || waited >= limit || stop() {
            return Some(QuietWait {
                waited_s: waited.as_secs_f64(),
                busy_pct,
                steal_pct,
                quiet,
            });
        }
        last = now;
    }
}

impl Environment {
    /// A warning when other work competed: from the quiet wait when there was one, else when
    /// the 1-minute load before the first run exceeds half the cores. The load after is recorded
    /// but not judged: it averages in evo's own timed runs (the other arm is not other work).
    pub fn load_warning(&self) -> Option<String> {
        let half = self.machine.logical_cores as f64 / 2.0;
        // A measured quiet machine says more than the 1-minute load, which still carries evo's
        // own builds before and its own timed runs after.
        if let Some(q) = &self.quiet {
            return (!q.quiet).then(|| {
                format!(
                    "the machine was not quiet when measuring began: other work used {:.0}% of \
                     the CPUs (steal {:.0}%) after {:.0} s of waiting",
                    q.busy_pct, q.steal_pct, q.waited_s
                )
            });
        }
        let before = self.load_1m_before?;
        (before > half).then(|| {
            format!(
                "other work competes: 1-minute load {before:.2} before the first run exceeds half \
                 of the {} logical cores",
                self.machine.logical_cores
            )
        })
    }
}

/// The first figure of `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// CPU model and whether the `hypervisor` flag is set, from `/proc/cpuinfo`.
pub fn parse_cpuinfo(text: &str) -> (String, bool) {
    let mut model = None;
    let mut hypervisor = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "model name" if model.is_none() => model = Some(value.trim().to_string()),
            "flags" => hypervisor |= value.split_whitespace().any(|f| f == "hypervisor"),
            _ => {}
        }
    }
    (model.unwrap_or_else(|| "unknown".to_string()), hypervisor)
}

/// `MemTotal` in KiB from `/proc/meminfo`.
pub fn parse_meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn in_container() -> bool {
    std::path::Path::new("/.dockerenv").exists()
        || std::path::Path::new("/run/.containerenv").exists()
        || read("/proc/1/cgroup")
            .lines()
            .any(|l| l.contains("docker") || l.contains("containerd") || l.contains("lxc"))
}

/// The current 1-minute load average, if `/proc/loadavg` is readable.
pub fn load_1m() -> Option<f64> {
    parse_loadavg(&read("/proc/loadavg"))
}

/// Reads the machine's facts; fields that cannot be read say `unknown` or 0.
pub fn machine() -> Machine {
    let (cpu_model, hypervisor) = parse_cpuinfo(&read("/proc/cpuinfo"));
    let virtualization = if in_container() {
        "container"
    } else if hypervisor {
        "vm"
    } else if cpu_model == "unknown" {
        "unknown"
    } else {
        "bare metal"
    };
    Machine {
        cpu_model,
        logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        mem_total_kib: parse_meminfo_total(&read("/proc/meminfo")).unwrap_or(0),
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        virtualization: virtualization.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        assert_eq!(parse_loadavg("0.52 0.40 0.33 1/234 5678\n"), Some(0.52));
        assert_eq!(parse_loadavg(""), None);
        let cpuinfo = "processor\t: 0\nmodel name\t: Example CPU @ 2.0GHz\nflags\t\t: fpu sse hypervisor avx\n\nprocessor\t: 1\nmodel name\t: Example CPU @ 2.0GHz\n";
        assert_eq!(
            parse_cpuinfo(cpuinfo),
            ("Example CPU @ 2.0GHz".to_string(), true)
        );
        assert!(!parse_cpuinfo("flags : fpu\n").1);
        assert_eq!(
            parse_meminfo_total("MemTotal:       24589732 kB\nMemFree: 1 kB\n"),
            Some(24589732)
        );
    }

    fn env(cores: usize, before: Option<f64>, after: Option<f64>) -> Environment {
        Environment {
            machine: Machine {
                cpu_model: "x".into(),
                logical_cores: cores,
                mem_total_kib: 0,
                kernel: "k".into(),
                virtualization: "vm".into(),
            },
            load_1m_before: before,
            load_1m_after: after,
            quiet: None,
            cpus: None,
            job: None,
        }
    }

    #[test]
    fn proc_stat_counts_busy_steal_and_total_ticks() {
        let t = parse_proc_stat("cpu  10 1 5 100 4 2 3 7 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n").unwrap();
        assert_eq!(t.busy, 10 + 1 + 5 + 2 + 3);
        assert_eq!(t.steal, 7);
        assert_eq!(t.total, 10 + 1 + 5 + 100 + 4 + 2 + 3 + 7);
        assert_eq!(parse_proc_stat("intr 1 2\n"), None);
    }

    #[test]
    fn warns_when_load_exceeds_half_the_cores() {
        assert!(env(2, Some(0.5), Some(0.9)).load_warning().is_none());
        let w = env(2, Some(1.4), Some(0.5)).load_warning().unwrap();
        assert!(w.contains("1.40") && w.contains("2 logical cores"), "{w}");
        // The load after the runs is evo's own timed runs: not other work.
        assert!(env(2, Some(0.5), Some(1.9)).load_warning().is_none());
        assert!(env(2, None, None).load_warning().is_none());
        let mut quiet = env(2, Some(1.9), Some(1.2));
        quiet.quiet = Some(QuietWait {
            waited_s: 0.5,
            busy_pct: 2.0,
            steal_pct: 0.5,
            quiet: true,
        });
        assert!(
            quiet.load_warning().is_none(),
            "evo's own load is not other work"
        );
        quiet.quiet.as_mut().unwrap().quiet = false;
        assert!(quiet.load_warning().unwrap().contains("not quiet"));
    }
}
