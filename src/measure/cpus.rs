//! Which CPUs evo and the timed command run on, and what the hypervisor took from them.
//!
//! With the CPUs split, evo's own threads (its main thread, the pipe readers, progress output)
//! stay on one CPU and the timed command (the helper, the sandbox and everything they start) on
//! the others, so evo's bookkeeping between and during runs never takes the command's CPU.
//! Steal time (`/proc/stat`) is what a hypervisor gave other guests while this one wanted to run;
//! it is read per run for the command's CPUs, since it inflates wall time without any work.

use std::io;

use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
use serde::{Deserialize, Serialize};

/// The CPUs of each side when the split is in force; recorded with the environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuSplit {
    pub evo: Vec<usize>,
    pub command: Vec<usize>,
}

impl CpuSplit {
    /// Every CPU of the split: what evo may use again once it ends.
    pub fn all(&self) -> Vec<usize> {
        let mut all = [self.evo.as_slice(), self.command.as_slice()].concat();
        all.sort_unstable();
        all
    }

    /// The split of `allowed` (ascending CPU numbers): evo takes the first, the command the rest;
    /// `None` with fewer than two, where there is nothing to split.
    pub fn of(allowed: &[usize]) -> Option<CpuSplit> {
        match allowed {
            [first, rest @ ..] if !rest.is_empty() => Some(CpuSplit {
                evo: vec![*first],
                command: rest.to_vec(),
            }),
            _ => None,
        }
    }
}

/// The CPUs the calling thread may run on, ascending.
pub fn allowed() -> io::Result<Vec<usize>> {
    let set = sched_getaffinity(None)?;
    Ok((0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
}

fn set_of(cpus: &[usize]) -> CpuSet {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    set
}

/// Restricts the calling thread (and what it later starts) to `cpus`. Only a system call, so it
/// may also run between `fork` and `exec`.
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    sched_setaffinity(None, &set_of(cpus)).map_err(io::Error::from)
}

/// Steal ticks so far: summed over `cpus`, or the all-CPU line when `None`. `None` when the
/// kernel does not report steal (the field is absent) or the file cannot be read.
pub fn steal_ticks(cpus: Option<&[usize]>) -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    steal_in(&stat, cpus)
}

/// Seconds in `ticks` of `/proc/stat` (the kernel's `USER_HZ`).
pub fn ticks_to_seconds(ticks: u64) -> f64 {
    ticks as f64 / rustix::param::clock_ticks_per_second() as f64
}

/// The steal column (the 8th number) of the `cpu` line, or the sum over the `cpuN` lines of
/// `cpus`; `None` when a line or the column is missing.
fn steal_in(stat: &str, cpus: Option<&[usize]>) -> Option<u64> {
    let steal_of = |name: &str| -> Option<u64> {
        let line = stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))?;
        line.split_whitespace().nth(8)?.parse().ok()
    };
    match cpus {
        None => steal_of("cpu"),
        Some(cpus) => cpus.iter().map(|c| steal_of(&format!("cpu{c}"))).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 0 50 1000 3 0 2 17 0 0\n\
                        cpu0 60 0 30 500 1 0 1 5 0 0\n\
                        cpu1 40 0 20 500 2 0 1 12 0 0\n\
                        intr 12345\n";

    #[test]
    fn steal_is_the_eighth_number_of_the_named_lines() {
        assert_eq!(steal_in(STAT, None), Some(17));
        assert_eq!(steal_in(STAT, Some(&[1])), Some(12));
        assert_eq!(steal_in(STAT, Some(&[0, 1])), Some(17));
        // A CPU the file does not list, or a kernel without the column: no figure, never 0.
        assert_eq!(steal_in(STAT, Some(&[2])), None);
        assert_eq!(steal_in("cpu  1 2 3 4 5 6 7\n", None), None);
    }

    #[test]
    fn the_split_leaves_the_first_cpu_to_evo_and_needs_two() {
        assert_eq!(CpuSplit::of(&[]), None);
        assert_eq!(CpuSplit::of(&[3]), None);
        assert_eq!(
            CpuSplit::of(&[0, 1]),
            Some(CpuSplit {
                evo: vec![0],
                command: vec![1]
            })
        );
        assert_eq!(
            CpuSplit::of(&[2, 5, 7]),
            Some(CpuSplit {
                evo: vec![2],
                command: vec![5, 7]
            })
        );
        assert_eq!(CpuSplit::of(&[2, 5, 7]).unwrap().all(), [2, 5, 7]);
    }

    #[test]
    fn a_thread_can_be_pinned_and_set_free_again() {
        let all = allowed().expect("sched_getaffinity");
        assert!(!all.is_empty());
        let handle = std::thread::spawn(move || {
            pin_current_thread(&all[..1]).expect("pin");
            let pinned = allowed().expect("read back");
            pin_current_thread(&all).expect("unpin");
            (pinned, allowed().expect("read back"), all)
        });
        let (pinned, freed, all) = handle.join().unwrap();
        assert_eq!(pinned, all[..1]);
        assert_eq!(freed, all);
    }
}
