//! evo's profile of the baseline in the brief: where the instructions of the first training
//! scenario's counted run go, by function and by source line (docs/design.md §2.9). Only the
//! baseline's training run is profiled, so nothing sealed can be in it, and every file is named
//! relative to the repository: a file outside it (a system library, a toolchain's header) is
//! not named at all, and no path of evo's work folders reaches an agent.

use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::measure::callgrind_profile::CallgrindProfile;

/// How many functions and lines a profile lists.
pub const PROFILE_TOP: usize = 10;
/// The most characters of a function's name a profile quotes (C++ and Rust names run long).
const NAME_CAP: usize = 300;

/// The baseline's profile: one run of a training scenario's counted command under callgrind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Profile {
    /// The training scenario whose command was profiled.
    pub scenario: String,
    /// The command as it ran (its `count.run`, or its timed `run`), `{seed}` filled with the
    /// search seed, in the scenario's folder.
    pub command: String,
    /// The scenario's folder relative to the tree root (empty: the root).
    pub cwd: String,
    /// Instructions executed (callgrind's `Ir`), over every process the command started.
    pub instructions: u64,
    /// The functions with the most instructions of their own (callees not included).
    pub functions: Vec<HotFunction>,
    /// The source lines of the repository's files with the most instructions.
    pub lines: Vec<HotLine>,
}

/// One function and its own instructions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HotFunction {
    pub function: String,
    /// Its source file relative to the repository; `None` outside it or without debug info.
    pub file: Option<String>,
    /// The program or library it is in: relative to the repository when inside it, else its
    /// file name (`libc.so.6`).
    pub object: Option<String>,
    pub instructions: u64,
    /// Its share of `instructions`, in percent.
    pub percent: f64,
}

/// One source line of the repository and the instructions executed on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HotLine {
    /// Relative to the repository.
    pub file: String,
    pub line: u64,
    pub instructions: u64,
    pub percent: f64,
}

/// What was profiled, beside the counts.
pub struct Profiled<'a> {
    pub scenario: &'a str,
    pub command: &'a str,
    pub cwd: &'a str,
    /// The tree the run was built and ran in, and the build's folder in it (where a compiler
    /// resolved relative source names).
    pub tree_root: &'a Path,
    pub build_cwd: &'a str,
}

impl Profile {
    /// The brief's profile of `counts`: the top [`PROFILE_TOP`] functions and repository lines.
    pub fn of(counts: &CallgrindProfile, what: Profiled<'_>) -> Profile {
        let total = counts.instructions.max(1);
        let percent = |n: u64| (10_000.0 * n as f64 / total as f64).round() / 100.0;
        let functions = (counts.functions.iter().take(PROFILE_TOP))
            .map(|f| HotFunction {
                function: f.name.chars().take(NAME_CAP).collect(),
                file: in_repository(&f.file, &what),
                object: (in_repository(&f.object, &what)).or_else(|| file_name(&f.object)),
                instructions: f.instructions,
                percent: percent(f.instructions),
            })
            .collect();
        let lines = (counts.lines.iter())
            .filter(|l| l.line > 0)
            .filter_map(|l| {
                Some(HotLine {
                    file: in_repository(&l.file, &what)?,
                    line: l.line,
                    instructions: l.instructions,
                    percent: percent(l.instructions),
                })
            })
            .take(PROFILE_TOP)
            .collect();
        Profile {
            scenario: what.scenario.to_string(),
            command: what.command.to_string(),
            cwd: what.cwd.to_string(),
            instructions: counts.instructions,
            functions,
            lines,
        }
    }
}

/// `name` (as debug info gives it) relative to the tree root, when it is a file of the tree: an
/// absolute path under the root, or a relative one found from the build's folder or the root.
fn in_repository(name: &str, what: &Profiled<'_>) -> Option<String> {
    let path = Path::new(name);
    if name.is_empty() || name == "???" {
        return None;
    }
    let roots = [
        what.tree_root.to_path_buf(),
        what.tree_root
            .canonicalize()
            .unwrap_or_else(|_| what.tree_root.to_path_buf()),
    ];
    if path.is_absolute() {
        let rel = roots.iter().find_map(|r| path.strip_prefix(r).ok())?;
        return plain(rel).filter(|rel| what.tree_root.join(rel).is_file());
    }
    let rel = plain(path)?;
    [Path::new(what.build_cwd), Path::new("")]
        .into_iter()
        .filter_map(|dir| plain(&dir.join(&rel)))
        .find(|candidate| what.tree_root.join(candidate).is_file())
}

/// `path` without `.` components, as a `/`-separated string; `None` with a `..` or a root.
fn plain(path: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?.to_string()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

fn file_name(object: &str) -> Option<String> {
    let name = PathBuf::from(object).file_name()?.to_str()?.to_string();
    (!name.is_empty() && name != "???").then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::callgrind_profile::{FunctionCost, LineCost};

    #[test]
    fn files_are_named_from_the_repository_and_nothing_outside_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/hot.c"), "").unwrap();
        std::fs::write(root.join("src/prog"), "").unwrap();
        let root_s = root.display().to_string();
        let f = |object: &str, file: &str, name: &str, n| FunctionCost {
            object: object.into(),
            file: file.into(),
            name: name.into(),
            instructions: n,
        };
        let l = |file: &str, line, n| LineCost {
            file: file.into(),
            line,
            instructions: n,
        };
        let counts = CallgrindProfile {
            instructions: 1000,
            functions: vec![
                f(
                    &format!("{root_s}/src/prog"),
                    &format!("{root_s}/src/hot.c"),
                    "hot",
                    700,
                ),
                f("/usr/lib/libc.so.6", "./string/memcpy.S", "memcpy", 200),
                f("/usr/bin/dash", "???", "main", 50),
            ],
            lines: vec![
                l(&format!("{root_s}/src/hot.c"), 12, 600),
                l("/usr/include/stdlib.h", 369, 150),
                l("hot.c", 13, 100),
                l("../outside.c", 1, 90),
                l("hot.c", 0, 10),
            ],
        };
        let p = Profile::of(
            &counts,
            Profiled {
                scenario: "main",
                command: "./prog 1",
                cwd: "",
                tree_root: root,
                build_cwd: "src",
            },
        );
        let files: Vec<Option<&str>> = p.functions.iter().map(|f| f.file.as_deref()).collect();
        assert_eq!(files, [Some("src/hot.c"), None, None]);
        let objects: Vec<Option<&str>> = p.functions.iter().map(|f| f.object.as_deref()).collect();
        assert_eq!(objects, [Some("src/prog"), Some("libc.so.6"), Some("dash")]);
        assert_eq!(p.functions[0].percent, 70.0);
        let lines: Vec<(&str, u64)> = p.lines.iter().map(|l| (l.file.as_str(), l.line)).collect();
        assert_eq!(lines, [("src/hot.c", 12), ("src/hot.c", 13)]);
        let text = serde_json::to_string(&p).unwrap();
        assert!(!text.contains(&root_s), "{text}");
    }
}
