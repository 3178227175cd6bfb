//! `evo agent build-flags`: an agent that needs no model. It proposes build-configuration changes
//! from what the workload's build declares — a Makefile or build script's C flags (optimisation
//! level, `-march=native`, LTO, unrolling, and profile-guided optimisation with GCC; `pgo`) or
//! Cargo's release profile (`opt-level`, `lto`,
//! `codegen-units`, `panic`, `target-cpu`) — one step at a time, guided by the brief's history:
//! it does not propose a configuration already tried, leaves out a step that failed a check or
//! lost time, and builds on the best screened configuration that did not lose. Like any agent it reads the brief on
//! stdin and edits the tree it is run in; evo takes the tree's diff as the candidate.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::brief::{Brief, HistoryEntry};
use crate::evidence::summary::Status;

/// One step of build configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    O3,
    MarchNative,
    Lto,
    UnrollLoops,
    /// Profile-guided optimisation: the compile command run twice around a training run (`pgo`).
    Pgo,
    OptLevel3,
    CargoLto,
    CodegenUnits1,
    TargetCpuNative,
    PanicAbort,
}

/// The steps in the order they are tried: the likeliest gains first.
const C_STEPS: [Step; 5] = [
    Step::O3,
    Step::MarchNative,
    Step::Lto,
    Step::UnrollLoops,
    Step::Pgo,
];
const CARGO_STEPS: [Step; 5] = [
    Step::OptLevel3,
    Step::CodegenUnits1,
    Step::CargoLto,
    Step::TargetCpuNative,
    Step::PanicAbort,
];

impl Step {
    /// How the step reads in a file once made (for Cargo, with the spaces taken out).
    fn marker(self) -> &'static str {
        match self {
            Step::O3 => "-O3",
            Step::MarchNative => "-march=native",
            Step::Lto => "-flto",
            Step::UnrollLoops => "-funroll-loops",
            Step::Pgo => pgo::USE,
            Step::OptLevel3 => "opt-level=3",
            Step::CargoLto => "lto=\"fat\"",
            Step::CodegenUnits1 => "codegen-units=1",
            Step::TargetCpuNative => "target-cpu=native",
            Step::PanicAbort => "panic=\"abort\"",
        }
    }

    /// The Cargo profile key the step sets, and its value.
    fn profile_key(self) -> Option<(&'static str, &'static str)> {
        match self {
            Step::OptLevel3 => Some(("opt-level", "3")),
            Step::CargoLto => Some(("lto", "\"fat\"")),
            Step::CodegenUnits1 => Some(("codegen-units", "1")),
            Step::PanicAbort => Some(("panic", "\"abort\"")),
            _ => None,
        }
    }
}

type Steps = BTreeSet<Step>;

/// Which build file the agent edits.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A Makefile or script with C flags and the index of the line to rewrite: a `CFLAGS`
    /// assignment, or else a compiler command with an `-O` level. `pgo` says how a
    /// profile-guided build would be written, when one can be (`pgo::Plan`).
    CFlags {
        file: PathBuf,
        line: usize,
        pgo: Option<pgo::Plan>,
    },
    /// A Cargo manifest and the profile the build uses.
    Cargo {
        manifest: PathBuf,
        profile: &'static str,
    },
}

impl Target {
    /// The steps this build file can take: profile-guided optimisation only where it can be
    /// written (`pgo::plan`).
    fn steps(&self) -> &'static [Step] {
        match self {
            Target::CFlags { pgo: Some(_), .. } => &C_STEPS,
            Target::CFlags { pgo: None, .. } => &C_STEPS[..C_STEPS.len() - 1],
            Target::Cargo { .. } => &CARGO_STEPS,
        }
    }
}

/// What the agent did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proposal {
    /// It changed `file` to add `step` on top of `on` (what the tree already had, or the best
    /// earlier configuration); `explanation` is its stated reason.
    Changed {
        file: PathBuf,
        step: String,
        explanation: String,
    },
    /// It changed nothing, for this reason.
    Nothing(String),
}

/// Proposes one change for `brief` in the tree at `root` and makes it.
pub fn propose(brief: &Brief, root: &Path) -> std::io::Result<Proposal> {
    let Some(target) = find_target(brief, root)? else {
        return Ok(Proposal::Nothing(format!(
            "no Makefile, build.sh or Cargo.toml with build flags in `{}`",
            if brief.build_cwd.is_empty() {
                "."
            } else {
                &brief.build_cwd
            }
        )));
    };
    let present = present_steps(&target, root)?;
    let seen: Vec<(Steps, &HistoryEntry)> = (brief.history.iter())
        .map(|h| (steps_in_patch(&h.patch, target.steps()), h))
        .collect();
    // Build on what gained: with nothing applied yet, start from the best screened configuration
    // that did not lose. Flags interact (`-march=native` may pay only with `-O3`'s vectorizer),
    // so a neutral one is built on too.
    let best = (seen.iter())
        .filter(|(s, h)| h.status == Status::Screened && !s.is_empty())
        .filter(|(_, h)| h.screening_median.is_some_and(|m| m >= NEUTRAL))
        .max_by(|a, b| {
            let m = |e: &HistoryEntry| e.screening_median.unwrap_or(0.0);
            m(a.1).total_cmp(&m(b.1))
        });
    let mut start = present.clone();
    if brief.parent.is_none() {
        if let Some((s, _)) = best {
            start.extend(s.iter().copied());
        }
    }
    let open: Vec<Step> = (target.steps().iter().copied())
        .filter(|s| !start.contains(s))
        .filter(|s| !failed_or_lost(*s, &seen))
        .filter(|s| {
            let mut next = start.clone();
            next.insert(*s);
            !seen.iter().any(|(tried, _)| *tried == next)
        })
        .collect();
    // Runs of one round share a history: each takes the next open step.
    let Some(step) = open.get(brief.run.saturating_sub(1)).copied() else {
        return Ok(Proposal::Nothing(format!(
            "nothing left to try on top of {} ({} open step(s), this is run {})",
            describe(&start),
            open.len(),
            brief.run
        )));
    };
    let mut wanted = start.clone();
    wanted.insert(step);
    let file = write_steps(&target, root, &wanted)?;
    let gained = best.map_or_else(String::new, |(s, h)| {
        format!(
            " The best configuration so far ({}, candidate {}) screened at {:.3}×.",
            describe(s),
            h.name,
            h.screening_median.unwrap_or(1.0)
        )
    });
    let how = if step == Step::Pgo {
        " (profile-guided optimisation: the build compiles instrumented, runs the first training \
         scenario on a seed other than the search's, and compiles again with that profile)"
    } else {
        ""
    };
    let explanation = format!(
        "Build configuration: adds `{}`{how} on top of {} in {} (round {}).{gained} The source \
         is unchanged; the compiler generates faster code for the same computation.\n",
        step.marker(),
        describe(&start),
        file.display(),
        brief.round
    );
    Ok(Proposal::Changed {
        file,
        step: step.marker().to_string(),
        explanation,
    })
}

fn describe(steps: &Steps) -> String {
    if steps.is_empty() {
        return "the declared configuration".to_string();
    }
    let names: Vec<String> = steps.iter().map(|s| format!("`{}`", s.marker())).collect();
    names.join(" ")
}

/// A screening median this far below another's is a loss, not noise (screening has few pairs).
const NEUTRAL: f64 = 0.97;

/// Whether `step` failed a check or lost time (below [`NEUTRAL`]) each time it was added to a configuration that
/// was screened before.
fn failed_or_lost(step: Step, seen: &[(Steps, &HistoryEntry)]) -> bool {
    let median_of = |set: &Steps| -> Option<f64> {
        if set.is_empty() {
            return Some(1.0);
        }
        (seen.iter())
            .filter(|(s, h)| s == set && h.status == Status::Screened)
            .filter_map(|(_, h)| h.screening_median)
            .max_by(f64::total_cmp)
    };
    let with: Vec<&(Steps, &HistoryEntry)> =
        seen.iter().filter(|(s, _)| s.contains(&step)).collect();
    let bad = |(set, h): &&(Steps, &HistoryEntry)| match h.status {
        Status::Screened => {
            let mut without = set.clone();
            without.remove(&step);
            matches!((h.screening_median, median_of(&without)), (Some(m), Some(b)) if m < NEUTRAL * b)
        }
        Status::Collected | Status::Checked | Status::NoChange => false,
        _ => true,
    };
    !with.is_empty() && with.iter().all(bad)
}

/// The steps a patch's added lines make.
fn steps_in_patch(patch: &str, steps: &[Step]) -> Steps {
    let added = patch
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"));
    let mut found = Steps::new();
    for line in added {
        found.extend(steps_in_line(line, steps));
    }
    found
}

fn steps_in_line(line: &str, steps: &[Step]) -> Steps {
    let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    let tokens: Vec<&str> = line.split_whitespace().collect();
    (steps.iter().copied())
        .filter(|s| match s {
            Step::O3 | Step::MarchNative | Step::Lto | Step::UnrollLoops | Step::Pgo => {
                tokens.iter().any(|t| t.trim_matches('+') == s.marker())
            }
            _ => squeezed.contains(s.marker()),
        })
        .collect()
}

/// The build file to edit, looked for in the build's folder (and for Cargo up to the root).
fn find_target(brief: &Brief, root: &Path) -> std::io::Result<Option<Target>> {
    let dir = root.join(&brief.build_cwd);
    for name in ["GNUmakefile", "Makefile", "makefile", "build.sh"] {
        let file = dir.join(name);
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if let Some(line) = flags_line(&text) {
            let pgo = pgo::plan(brief, &text, name == "build.sh", &pgo::compiler_is_gcc);
            return Ok(Some(Target::CFlags { file, line, pgo }));
        }
    }
    // The outermost manifest between the root and the build's folder holds the profiles.
    let mut manifest = None;
    let mut at = Some(dir.as_path());
    while let Some(d) = at {
        if d.join("Cargo.toml").is_file() {
            manifest = Some(d.join("Cargo.toml"));
        }
        if d == root {
            break;
        }
        at = d.parent();
    }
    let profile = if brief.build.contains("--release") || brief.build.contains(" -r") {
        "release"
    } else {
        "dev"
    };
    Ok(manifest.map(|manifest| Target::Cargo { manifest, profile }))
}

/// The line that sets the C flags: a `CFLAGS` assignment, else the first compiler command with an
/// `-O` level.
fn flags_line(text: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let assignment = lines.iter().position(|l| is_cflags_assignment(l));
    assignment.or_else(|| (lines.iter()).position(|l| l.split_whitespace().any(is_opt_level)))
}

fn is_cflags_assignment(line: &str) -> bool {
    let t = line.trim_start();
    let rest = t.strip_prefix("CFLAGS").map(str::trim_start);
    rest.is_some_and(|r| ["?=", ":=", "="].iter().any(|op| r.starts_with(op)))
}

fn is_opt_level(token: &str) -> bool {
    token.len() <= 4 && token.starts_with("-O")
}

fn present_steps(target: &Target, root: &Path) -> std::io::Result<Steps> {
    match target {
        Target::CFlags { file, line, .. } => {
            let text = std::fs::read_to_string(file)?;
            let l = text.lines().nth(*line).unwrap_or_default();
            let mut found = steps_in_line(l, &C_STEPS);
            if pgo::written(&text) {
                found.insert(Step::Pgo);
            }
            Ok(found)
        }
        Target::Cargo { manifest, profile } => {
            let text = std::fs::read_to_string(manifest)?;
            let mut found = Steps::new();
            for line in section(&text, &format!("[profile.{profile}]")) {
                found.extend(steps_in_line(line, &CARGO_STEPS));
            }
            let config = root.join(".cargo/config.toml");
            if std::fs::read_to_string(config).is_ok_and(|t| t.contains("target-cpu=native")) {
                found.insert(Step::TargetCpuNative);
            }
            Ok(found)
        }
    }
}

/// The lines of a TOML section, header excluded.
fn section<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == header;
        } else if inside {
            out.push(line);
        }
    }
    out
}

/// Rewrites the target so it has exactly the steps `wanted` among those this agent manages;
/// returns the file it changed, relative to the tree root.
fn write_steps(target: &Target, root: &Path, wanted: &Steps) -> std::io::Result<PathBuf> {
    match target {
        Target::CFlags {
            file,
            line,
            pgo: pgo_plan,
        } => {
            let text = std::fs::read_to_string(file)?;
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            // A script's compile command, once profile-guided, is written three times: each
            // copy takes the same flags, or the profile would not match the code it is used on.
            let assignment = lines.get(*line).is_some_and(|l| is_cflags_assignment(l));
            for (i, l) in lines.iter_mut().enumerate() {
                if i == *line || (!assignment && pgo::is_copy(l)) {
                    *l = rewrite_c_line(l, wanted);
                }
            }
            let has_pgo = pgo::written(&text);
            if let (true, false, Some(plan)) = (wanted.contains(&Step::Pgo), has_pgo, pgo_plan) {
                lines = plan.write(lines);
            }
            let mut out = lines.join("\n");
            if text.ends_with('\n') {
                out.push('\n');
            }
            std::fs::write(file, out)?;
            Ok(relative(file, root))
        }
        Target::Cargo { manifest, profile } => {
            let text = std::fs::read_to_string(manifest)?;
            let mut out = text.clone();
            for step in wanted.iter().copied() {
                if let Some((key, value)) = step.profile_key() {
                    out = set_profile_key(&out, profile, key, value);
                }
            }
            std::fs::write(manifest, out)?;
            if wanted.contains(&Step::TargetCpuNative) {
                let config = root.join(".cargo/config.toml");
                let old = std::fs::read_to_string(&config).unwrap_or_default();
                if !old.contains("target-cpu=native") {
                    std::fs::create_dir_all(root.join(".cargo"))?;
                    let sep = if old.is_empty() || old.ends_with('\n') {
                        ""
                    } else {
                        "\n"
                    };
                    std::fs::write(
                        &config,
                        format!("{old}{sep}[build]\nrustflags = [\"-C\", \"target-cpu=native\"]\n"),
                    )?;
                }
            }
            Ok(relative(manifest, root))
        }
    }
}

fn relative(file: &Path, root: &Path) -> PathBuf {
    file.strip_prefix(root).unwrap_or(file).to_path_buf()
}

/// `line` with the managed C flags replaced by those of `wanted`; its indentation, the other
/// flags and the optimisation level (unless `-O3` is wanted) are kept.
fn rewrite_c_line(line: &str, wanted: &Steps) -> String {
    let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
    let managed = |t: &str| C_STEPS.iter().any(|s| *s != Step::Pgo && t == s.marker());
    let mut tokens: Vec<String> = (line.split_whitespace())
        .filter(|t| !managed(t))
        .map(str::to_string)
        .collect();
    let extra: Vec<String> = (C_STEPS.iter())
        .filter(|s| !matches!(s, Step::O3 | Step::Pgo) && wanted.contains(s))
        .map(|s| s.marker().to_string())
        .collect();
    let level = tokens.iter().position(|t| is_opt_level(t));
    let at = match level {
        Some(i) => {
            if wanted.contains(&Step::O3) {
                tokens[i] = "-O3".to_string();
            }
            i + 1
        }
        None => {
            let at = if is_cflags_assignment(line) {
                tokens.len()
            } else {
                1.min(tokens.len())
            };
            if wanted.contains(&Step::O3) {
                tokens.insert(at, "-O3".to_string());
                at + 1
            } else {
                at
            }
        }
    };
    for (k, flag) in extra.into_iter().enumerate() {
        tokens.insert(at + k, flag);
    }
    format!("{indent}{}", tokens.join(" "))
}

/// `text` with `key = value` in `[profile.<profile>]`, the section added at the end if absent.
fn set_profile_key(text: &str, profile: &str, key: &str, value: &str) -> String {
    let header = format!("[profile.{profile}]");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let Some(start) = lines.iter().position(|l| l.trim() == header) else {
        let sep = if text.is_empty() || text.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        return format!("{text}{sep}\n{header}\n{key} = {value}\n");
    };
    let end = (lines.iter().skip(start + 1))
        .position(|l| l.trim_start().starts_with('['))
        .map_or(lines.len(), |i| start + 1 + i);
    let is_key = |l: &str| {
        let t = l.trim_start();
        t.strip_prefix(key)
            .is_some_and(|r| r.trim_start().starts_with('='))
    };
    match (start + 1..end).find(|i| is_key(&lines[*i])) {
        Some(i) => lines[i] = format!("{key} = {value}"),
        None => lines.insert(start + 1, format!("{key} = {value}")),
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[path = "build_flags_pgo.rs"]
mod pgo;

#[cfg(test)]
#[path = "build_flags_tests.rs"]
mod tests;
