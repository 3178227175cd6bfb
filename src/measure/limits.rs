//! Memory and process limits for every sandboxed command, through cgroups.
//!
//! A candidate's build or run could take all the machine's memory or fork without end, which
//! costs the other arm, evo and everything else on the machine. Each sandboxed command therefore
//! runs in a cgroup of its own with a memory limit (`sandbox.limits.memory_mib`) and a process
//! limit (`pids`): the helper (`helper.rs`) makes the group under the cgroup it is in, moves
//! itself into it before it starts the command (so every process of the command is in it and
//! none can leave: moving needs rights outside the sandbox), and after the command reads whether
//! a limit was reached ("memory limit (N MiB) reached": the kernel's OOM killer ran in the
//! group; "process limit (N) reached": a fork was refused), which it says as the command's last
//! line of stderr. Then it moves back and removes the group.
//!
//! The layout is found once at start-up ([`detect`]): the v1 `memory` and `pids` hierarchies
//! (`memory.limit_in_bytes`, `pids.max`), as on a hybrid layout whose v2 hierarchy offers
//! neither, or the v2 hierarchy (`memory.max`, `pids.max`). Where no group can be made (no
//! rights, no controller), the record says the limit did not hold.

use std::path::{Path, PathBuf};

/// The variable that tells the helper the limits (`MEMORY_MIB,PIDS`); removed from the command's
/// environment.
pub const LIMITS_ENV: &str = "EVO_RUN_LIMITS";

/// Where one controller's groups go: the group this process is in, and the file names there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Controller {
    pub dir: PathBuf,
    /// `cgroup v1 memory`, `cgroup v2`, for the record.
    pub layout: &'static str,
    limit_file: &'static str,
    events_file: &'static str,
    /// The line of `events_file` that counts hits (`oom_kill`, `max`).
    event: &'static str,
}

/// The controllers this machine gives evo.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Controllers {
    pub memory: Option<Controller>,
    pub pids: Option<Controller>,
}

/// Finds the memory and pids controllers, each one where a trial group can be made.
pub fn detect() -> Controllers {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let find =
        |v1: Controller, v2: Controller| [v1, v2].into_iter().find(|c| c.dir.is_dir() && trial(c));
    let memory = find(
        v1_controller(
            &own,
            "memory",
            "memory.limit_in_bytes",
            "memory.oom_control",
            "oom_kill",
        ),
        v2_controller(&own, "memory.max", "memory.events", "oom_kill"),
    );
    let pids = find(
        v1_controller(&own, "pids", "pids.max", "pids.events", "max"),
        v2_controller(&own, "pids.max", "pids.events", "max"),
    );
    Controllers { memory, pids }
}

/// The v1 hierarchy of `name`, at the group this process is in.
fn v1_controller(
    own: &str,
    name: &str,
    limit_file: &'static str,
    events_file: &'static str,
    event: &'static str,
) -> Controller {
    let path = own
        .lines()
        .filter_map(|l| l.split_once(':').and_then(|(_, rest)| rest.split_once(':')))
        .find(|(names, _)| names.split(',').any(|n| n == name))
        .map_or("/", |(_, path)| path);
    let layout = if name == "memory" {
        "cgroup v1 memory"
    } else {
        "cgroup v1 pids"
    };
    Controller {
        dir: Path::new("/sys/fs/cgroup")
            .join(name)
            .join(path.trim_start_matches('/')),
        layout,
        limit_file,
        events_file,
        event,
    }
}

/// The v2 hierarchy (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid layout).
fn v2_controller(
    own: &str,
    limit_file: &'static str,
    events_file: &'static str,
    event: &'static str,
) -> Controller {
    let path = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or("/");
    let root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .find(|r| Path::new(r).join("cgroup.controllers").is_file())
        .unwrap_or("/sys/fs/cgroup");
    Controller {
        dir: Path::new(root).join(path.trim_start_matches('/')),
        layout: "cgroup v2",
        limit_file,
        events_file,
        event,
    }
}

/// Whether a group with this controller's limit file can be made here.
fn trial(c: &Controller) -> bool {
    let dir = c.dir.join(format!("evo-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&dir).is_ok();
    let works = made && dir.join(c.limit_file).is_file();
    if made {
        let _ = std::fs::remove_dir(&dir);
    }
    works
}

/// A command's own groups, made and entered by the helper before it starts the command.
pub struct RunGroup {
    groups: Vec<(Controller, PathBuf, String)>,
}

impl RunGroup {
    /// Makes and enters the groups `LIMITS_ENV` asks for, as far as this machine allows.
    pub fn enter_from_env() -> RunGroup {
        let mut groups = Vec::new();
        let Some((memory_mib, pids)) = std::env::var(LIMITS_ENV).ok().and_then(|v| parse(&v))
        else {
            return RunGroup { groups };
        };
        let found = detect();
        let me = std::process::id();
        let wanted = [
            (
                found.memory,
                (memory_mib << 20).to_string(),
                format!("memory limit ({memory_mib} MiB, sandbox.limits.memory_mib)"),
            ),
            (
                found.pids,
                pids.to_string(),
                format!("process limit ({pids}, sandbox.limits.pids)"),
            ),
        ];
        for (controller, value, name) in wanted {
            let Some(c) = controller else { continue };
            let dir = c.dir.join(format!("evo-run-{me}"));
            let entered = std::fs::create_dir(&dir).is_ok()
                && std::fs::write(dir.join(c.limit_file), &value).is_ok()
                && std::fs::write(dir.join("cgroup.procs"), me.to_string()).is_ok();
            if entered {
                groups.push((c, dir, name));
            } else {
                let _ = std::fs::remove_dir(&dir);
            }
        }
        RunGroup { groups }
    }

    /// Says which limits the command reached (as lines for its stderr), then leaves and removes
    /// the groups.
    pub fn finish(self) -> Vec<String> {
        let me = std::process::id().to_string();
        let mut reached = Vec::new();
        for (c, dir, name) in self.groups {
            let events = std::fs::read_to_string(dir.join(c.events_file)).unwrap_or_default();
            if count(&events, c.event) > 0 {
                reached.push(format!("evo: the {name} was reached"));
            }
            let _ = std::fs::write(c.dir.join("cgroup.procs"), &me);
            let _ = std::fs::remove_dir(&dir);
        }
        reached
    }
}

/// `MEMORY_MIB,PIDS`.
fn parse(value: &str) -> Option<(u64, u64)> {
    let (memory, pids) = value.split_once(',')?;
    Some((memory.parse().ok()?, pids.parse().ok()?))
}

/// The number after `name` on its line of an events file (`oom_kill 3`).
fn count(events: &str, name: &str) -> u64 {
    events
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(key, _)| *key == name)
        .and_then(|(_, n)| n.trim().parse().ok())
        .unwrap_or(0)
}

/// What the record says of these limits.
pub fn held(found: &Controllers, memory_mib: u32, pids: u32) -> String {
    let memory = match &found.memory {
        Some(c) => format!("memory was limited to {memory_mib} MiB ({})", c.layout),
        None => "memory was not limited (no memory cgroup evo can make groups in)".to_string(),
    };
    let pids = match &found.pids {
        Some(c) => format!("processes to {pids} ({})", c.layout),
        None => "processes were not limited (no pids cgroup evo can make groups in)".to_string(),
    };
    format!("{memory}; {pids}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hybrid_layout_finds_its_v1_groups_and_the_events_are_read() {
        let own = "9:name=systemd:/\n8:pids:/\n4:memory:/api/abc\n0::/\n";
        let memory = v1_controller(own, "memory", "memory.limit_in_bytes", "x", "oom_kill");
        assert_eq!(memory.dir, Path::new("/sys/fs/cgroup/memory/api/abc"));
        let pids = v1_controller(own, "pids", "pids.max", "pids.events", "max");
        assert_eq!(pids.dir, Path::new("/sys/fs/cgroup/pids"));
        assert_eq!(
            count("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"),
            2
        );
        assert_eq!(count("max 0\n", "max"), 0);
        assert_eq!(parse("8192,4096"), Some((8192, 4096)));
        assert_eq!(parse("8192"), None);
    }
}
