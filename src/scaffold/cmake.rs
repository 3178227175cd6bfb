//! The programs and libraries a CMake project's build makes, read from its `CMakeLists.txt`
//! files without running cmake: `add_executable` and `add_library` with a literal name, in the
//! folders `add_subdirectory` reaches, each landing at `build/<folder>/<name>` (CMake's default
//! for a single-configuration generator).
//!
//! What would make such a path wrong is not guessed around: a name built from a variable, a
//! folder reached through one, or any setting that moves or renames outputs (an output
//! directory, `OUTPUT_NAME`, a prefix or suffix) is named in `unsure`, and then no path is
//! proposed. Programs that are only the command of an `add_test` are left out: the timed runs do
//! not use them.

use std::path::Path;

use super::detect::Artifacts;

/// The build folder the starting workload configures.
pub const BUILD_DIR: &str = "build";

/// Words that move or rename what a target builds: the default paths are then wrong.
const RELOCATING: &[&str] = &[
    "CMAKE_RUNTIME_OUTPUT_DIRECTORY",
    "CMAKE_ARCHIVE_OUTPUT_DIRECTORY",
    "CMAKE_LIBRARY_OUTPUT_DIRECTORY",
    "RUNTIME_OUTPUT_DIRECTORY",
    "ARCHIVE_OUTPUT_DIRECTORY",
    "LIBRARY_OUTPUT_DIRECTORY",
    "EXECUTABLE_OUTPUT_PATH",
    "LIBRARY_OUTPUT_PATH",
    "OUTPUT_NAME",
    "CMAKE_EXECUTABLE_SUFFIX",
    "CMAKE_STATIC_LIBRARY_PREFIX",
    "CMAKE_STATIC_LIBRARY_SUFFIX",
    "CMAKE_SHARED_LIBRARY_PREFIX",
    "CMAKE_SHARED_LIBRARY_SUFFIX",
    "CMAKE_DEBUG_POSTFIX",
];

/// How many `CMakeLists.txt` one reading follows at most.
const FILES: usize = 500;

/// What `evo init` read of a CMake project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CMakeProject {
    pub artifacts: Artifacts,
}

/// One target found, before the tests are known.
struct Target {
    name: String,
    path: String,
    program: bool,
}

impl CMakeProject {
    pub fn read(root: &Path) -> CMakeProject {
        let mut artifacts = Artifacts::default();
        let mut targets = Vec::new();
        let mut test_commands = Vec::new();
        let mut folders = vec![String::new()];
        let mut read = 0;
        while let Some(dir) = folders.pop() {
            read += 1;
            if read > FILES {
                break;
            }
            let file = join(&dir, "CMakeLists.txt");
            let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
                artifacts.doubt(format!("{file} cannot be read"));
                continue;
            };
            let mut subdirs = Vec::new();
            for (command, args) in commands(&text) {
                if let Some(word) = RELOCATING.iter().find(|w| args.iter().any(|a| a == *w)) {
                    artifacts.doubt(format!(
                        "{file} sets {word}, which moves or renames outputs"
                    ));
                }
                match command.as_str() {
                    "add_subdirectory" => match args.first() {
                        Some(sub) if !sub.contains('$') => subdirs.push(join(&dir, sub)),
                        _ => artifacts.doubt(format!(
                            "{file} adds a folder evo could not read ({})",
                            args.join(" ")
                        )),
                    },
                    "add_executable" | "add_library" => {
                        if let Some(t) = target(&command, &args, &dir, &file, &mut artifacts) {
                            targets.push(t);
                        }
                    }
                    "add_test" => test_commands.extend(test_command(&args)),
                    _ => {}
                }
            }
            // Depth first, in the order the file adds them.
            folders.extend(subdirs.into_iter().rev());
        }
        if !artifacts.unsure.is_empty() {
            return CMakeProject { artifacts };
        }
        for t in targets {
            if !(t.program && test_commands.contains(&t.name)) {
                artifacts.add(t.path);
            }
        }
        if artifacts.paths.is_empty() {
            artifacts.doubt("no CMakeLists.txt adds a program or a library".to_string());
        }
        CMakeProject { artifacts }
    }
}

/// The target an `add_executable` or `add_library` declares, with the file it builds.
fn target(
    command: &str,
    args: &[String],
    dir: &str,
    file: &str,
    artifacts: &mut Artifacts,
) -> Option<Target> {
    let name = args.first()?;
    let kind = args.get(1).map(String::as_str).unwrap_or("");
    if matches!(kind, "IMPORTED" | "ALIAS" | "OBJECT" | "INTERFACE") {
        return None;
    }
    if name.contains('$') {
        artifacts.doubt(format!("{file} names a target through a variable ({name})"));
        return None;
    }
    let (program, file_name) = match (command, kind) {
        ("add_executable", _) => (true, name.clone()),
        (_, "SHARED") => (false, format!("lib{name}.so")),
        (_, "MODULE") => (false, format!("{name}.so")),
        (_, "STATIC") => (false, format!("lib{name}.a")),
        // Static unless BUILD_SHARED_LIBS says otherwise; the starting build does not set it.
        _ => (false, format!("lib{name}.a")),
    };
    Some(Target {
        name: name.clone(),
        path: join(&join(BUILD_DIR, dir), &file_name),
        program,
    })
}

/// The program an `add_test` runs: `add_test(NAME n COMMAND prog ...)` or `add_test(n prog)`.
fn test_command(args: &[String]) -> Option<String> {
    match args.iter().position(|a| a == "COMMAND") {
        Some(at) => args.get(at + 1).cloned(),
        None => args.get(1).cloned(),
    }
}

/// The commands of a CMake file, lower-cased, each with its arguments (quotes removed, comments
/// and bracket arguments skipped).
fn commands(text: &str) -> Vec<(String, Vec<String>)> {
    let text: String = text
        .lines()
        .map(strip_comment)
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(open) = rest.find('(') {
        let name = rest[..open]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let mut depth = 0usize;
        let mut end = None;
        for (i, c) in rest[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let args = arguments(&rest[open + 1..end]);
        if !name.is_empty() {
            out.push((name, args));
        }
        rest = &rest[end + 1..];
    }
    out
}

fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

fn arguments(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    args.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        args.push(current);
    }
    args
}

fn join(dir: &str, name: &str) -> String {
    let name = name.trim_start_matches("./").trim_end_matches('/');
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(files: &[(&str, &str)]) -> Artifacts {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        CMakeProject::read(dir.path()).artifacts
    }

    #[test]
    fn libraries_and_programs_of_every_added_folder_are_found_and_test_programs_are_not() {
        let a = read(&[
            (
                "CMakeLists.txt",
                "project(x C)\n# add_executable(commented out)\nadd_subdirectory(lib)\n\
                 ADD_SUBDIRECTORY(programs)\nenable_testing()\nadd_subdirectory(tests)\n",
            ),
            (
                "lib/CMakeLists.txt",
                "add_library(core STATIC a.c)\nadd_library(core_obj OBJECT b.c)\n",
            ),
            (
                "programs/CMakeLists.txt",
                "add_executable(\n  x-bench\n  bench.c\n)\n",
            ),
            (
                "tests/CMakeLists.txt",
                "add_executable(t1 t1.c)\nadd_test(NAME one COMMAND t1)\nadd_library(sh SHARED s.c)\n",
            ),
        ]);
        assert_eq!(
            a.paths,
            [
                "build/lib/libcore.a",
                "build/programs/x-bench",
                "build/tests/libsh.so"
            ]
        );
        assert!(a.unsure.is_empty(), "{:?}", a.unsure);
    }

    #[test]
    fn moved_outputs_or_variable_names_give_no_path_and_say_why() {
        let a = read(&[(
            "CMakeLists.txt",
            "set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\nadd_executable(app m.c)\n",
        )]);
        assert!(a.paths.is_empty());
        assert!(
            a.unsure[0].contains("CMAKE_RUNTIME_OUTPUT_DIRECTORY"),
            "{:?}",
            a.unsure
        );
        let a = read(&[("CMakeLists.txt", "add_executable(${PROJECT_NAME} m.c)\n")]);
        assert!(a.paths.is_empty());
        assert!(a.unsure[0].contains("${PROJECT_NAME}"), "{:?}", a.unsure);
    }
}
