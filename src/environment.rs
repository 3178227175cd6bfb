//! Facts about the machine a measurement ran on, read from `/proc`.
//!
//! A verdict is only as good as the machine was quiet: the receipt records the CPU, cores, memory,
//! kernel, virtualization and the 1-minute load before and after, and warns when load competes.

use serde::{Deserialize, Serialize};

/// The machine, as far as `/proc` tells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub logical_cores: usize,
    pub mem_total_kib: u64,
    pub kernel: String,
    /// `bare metal`, `vm`, `container` or `unknown`.
    pub virtualization: String,
}

/// The machine plus the load around a measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    #[serde(flatten)]
    pub machine: Machine,
    pub load_1m_before: Option<f64>,
    pub load_1m_after: Option<f64>,
}

impl Environment {
    /// A warning when the 1-minute load exceeds half the cores before or after.
    pub fn load_warning(&self) -> Option<String> {
        let half = self.machine.logical_cores as f64 / 2.0;
        let worst = [self.load_1m_before, self.load_1m_after]
            .into_iter()
            .flatten()
            .fold(None, |acc: Option<f64>, l| {
                Some(acc.map_or(l, |a| a.max(l)))
            })?;
        (worst > half).then(|| {
            format!(
                "other work competes: 1-minute load {worst:.2} exceeds half of the {} logical cores",
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
        }
    }

    #[test]
    fn warns_when_load_exceeds_half_the_cores() {
        assert!(env(2, Some(0.5), Some(0.9)).load_warning().is_none());
        let w = env(2, Some(0.5), Some(1.4)).load_warning().unwrap();
        assert!(w.contains("1.40") && w.contains("2 logical cores"), "{w}");
        assert!(env(2, None, None).load_warning().is_none());
    }
}
