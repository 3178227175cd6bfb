//! Profile-guided optimisation for `evo agent build-flags`: the build's one compile-and-link
//! command written three times over — instrumented (`-fprofile-generate`), a training run of the
//! workload's first training scenario, then optimised with what it recorded (`-fprofile-use`).
//!
//! Only where it can be written safely: GCC (its `.gcda` files need no merge step, unlike
//! clang's), a single command that compiles and links (a build of separate objects would need
//! every object instrumented), and a training scenario that runs in the build's folder, where the
//! binary is. The training run takes a seed other than the search's, so the profile is not
//! recorded on the very input screening times; the confirmation's fresh seeds and its sealed
//! holdouts judge whether the gain holds on inputs the profile never saw.

use super::Brief;

/// The flag that marks a profile-guided build (the step's marker).
pub(super) const USE: &str = "-fprofile-use";
const GENERATE: &str = "-fprofile-generate";
/// Tolerates counters a racy or partial training run left inconsistent.
const CORRECTION: &str = "-fprofile-correction";

/// How a profile-guided build is written into one build file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    /// The index of the compile-and-link line to write three times.
    line: usize,
    /// The training run as the file's shell runs it (in a Makefile, `$` doubled).
    training: String,
}

/// The plan for `text` (a Makefile, or a build script when `script`), or `None` where a
/// profile-guided build cannot be written: no training scenario in the build's folder, no single
/// compile-and-link command, or a compiler that is not GCC (`is_gcc` is asked about the
/// command's compiler, `cc` for `$(CC)`).
pub(super) fn plan(
    brief: &Brief,
    text: &str,
    script: bool,
    is_gcc: &dyn Fn(&str) -> bool,
) -> Option<Plan> {
    let scenario = brief.scenarios.first()?;
    if scenario.cwd != brief.build_cwd {
        return None;
    }
    // A build of separate objects would need every object instrumented: left alone.
    let objects = (text.lines()).any(|l| l.split_whitespace().any(|t| t == "-c"));
    if objects {
        return None;
    }
    let line = text.lines().position(|l| is_compile_line(l, script))?;
    let compiler = text.lines().nth(line)?.split_whitespace().next()?;
    let compiler = if compiler.starts_with('$') {
        "cc"
    } else {
        compiler
    };
    if !is_gcc(compiler) {
        return None;
    }
    let seed = brief.search_seed.wrapping_add(1).to_string();
    let run = scenario.run.replace("{seed}", &seed);
    let run = if script { run } else { run.replace('$', "$$") };
    Some(Plan {
        line,
        training: format!("{run} > /dev/null"),
    })
}

impl Plan {
    /// `lines` with the compile command replaced by: remove old counters, build instrumented,
    /// run the training scenario, build with the profile.
    pub(super) fn write(&self, mut lines: Vec<String>) -> Vec<String> {
        let Some(original) = lines.get(self.line).cloned() else {
            return lines;
        };
        let indent: String = original.chars().take_while(|c| c.is_whitespace()).collect();
        let written = [
            format!("{indent}rm -f *.gcda"),
            with_flags(&original, &[GENERATE]),
            format!("{indent}{}", self.training),
            with_flags(&original, &[USE, CORRECTION]),
        ];
        lines.splice(self.line..=self.line, written);
        lines
    }
}

/// Whether `text` already builds with a profile (a command with [`USE`]).
pub(super) fn written(text: &str) -> bool {
    text.lines().any(|l| l.split_whitespace().any(|t| t == USE))
}

/// Whether `line` is one of the compile commands a profile-guided build wrote.
pub(super) fn is_copy(line: &str) -> bool {
    (line.split_whitespace()).any(|t| t == GENERATE || t == USE)
}

/// Whether `line` compiles and links in one command: a compiler first (in a Makefile, on a
/// recipe line), an output named with `-o`, and the C flags or an `-O` level.
fn is_compile_line(line: &str, script: bool) -> bool {
    if !script && !line.starts_with('\t') {
        return false;
    }
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let Some(first) = tokens.first() else {
        return false;
    };
    let compiler =
        matches!(*first, "$(CC)" | "${CC}" | "$CC" | "\"$CC\"" | "cc") || first.starts_with("gcc");
    let flags = (tokens.iter()).any(|t| t.contains("CFLAGS") || super::is_opt_level(t));
    compiler && flags && tokens.contains(&"-o")
}

/// `line` with `flags` after its C flags (or its `-O` level), indentation kept.
fn with_flags(line: &str, flags: &[&str]) -> String {
    let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
    let mut tokens: Vec<&str> = line.split_whitespace().collect();
    let at = (tokens.iter())
        .rposition(|t| t.contains("CFLAGS") || super::is_opt_level(t))
        .map_or(tokens.len().min(1), |i| i + 1);
    for (k, flag) in flags.iter().enumerate() {
        tokens.insert(at + k, flag);
    }
    format!("{indent}{}", tokens.join(" "))
}

/// Whether `compiler --version` says it is GCC (`cc` is GCC on Debian, clang elsewhere).
pub(super) fn compiler_is_gcc(compiler: &str) -> bool {
    let out = std::process::Command::new(compiler)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    out.is_ok_and(|o| {
        let text = String::from_utf8_lossy(&o.stdout);
        o.status.success() && text.contains("Free Software Foundation") && !text.contains("clang")
    })
}
