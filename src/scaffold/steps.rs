//! The build, test and sanitizer steps `evo init` proposes for each kind of project, with the
//! artifacts and build-configuration globs that go with them, and what to say about each.
//!
//! Every test step here runs where it may write: evo makes a tree read-only once it is built
//! (docs/design.md §1.4), so no test, check or timed run can leave a file for the next one, and
//! a test that writes anything (a test program it compiles, data, a log) fails in the tree. So
//! each test runs on a writable copy, in a temporary folder of its own that is removed after.

use std::collections::BTreeMap;

use super::detect::{Artifacts, ProjectKind};
use super::files::{SanitizeFile, StepFile};

/// The sanitizer flags of a C or C++ build: evo's compiler wrappers append them to every
/// compile and link of the workload's own build.
pub const C_SANITIZE_FLAGS: &str = "-g -fsanitize=address,undefined -fno-sanitize-recover=all";

/// The build and test steps of one kind of project, and what to say about them.
pub(super) struct Steps {
    pub build: StepFile,
    pub test: StepFile,
    pub sanitize: Option<SanitizeFile>,
    /// The timed command when the project names one (a Cargo project's only binary).
    pub run: Option<String>,
    pub config_files: Vec<&'static str>,
    /// Lines for the workload's `$comment`.
    pub notes: Vec<String>,
    /// Left for the user, said on the terminal too.
    pub todo: Vec<String>,
}

/// Cargo's output folder, pinned: a `build.target-dir` in the user's Cargo configuration would
/// otherwise move the binary away from where the timed command looks for it.
const CARGO_ENV: [(&str, &str); 1] = [("CARGO_TARGET_DIR", "target")];

/// `cargo test` writes its target folder, and a test sees its tree read only: it builds in a
/// temporary folder of its own (private to the run under the sandbox, unique without it).
const CARGO_TEST: &str = "t=$(mktemp -d) && CARGO_TARGET_DIR=\"$t\" cargo test --release; \
                          s=$?; rm -rf \"$t\"; exit $s";

/// `make <target>` on a writable copy of the built tree. A project's test target may compile
/// test programs, write data or logs anywhere in the tree; no reading of the Makefiles can tell
/// what, so building "the test programs" in the build step would miss the rest. `cp -p` keeps
/// the build's timestamps, so make takes what the build made as up to date and tests it, and
/// compiles only what the tests add; nothing written returns to the tree.
fn make_test(target: &str) -> String {
    format!(
        "d=$(mktemp -d) && cp -Rp . \"$d/tree\" && chmod -R u+w \"$d/tree\" && make -C \
         \"$d/tree\" {target}; s=$?; rm -rf \"$d\"; exit $s"
    )
}

const CMAKE_BUILD: &str = "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build";

/// ctest writes its logs into the build folder (`Testing/`): it runs on a copy of `build/`
/// (the test programs it runs are those of the tree, by their absolute paths).
const CMAKE_TEST: &str = "d=$(mktemp -d) && cp -R build \"$d/build\" && chmod -R u+w \
                          \"$d/build\" && ctest --test-dir \"$d/build\" --output-on-failure; \
                          s=$?; rm -rf \"$d\"; exit $s";

fn step(command: &str, timeout_s: u32) -> StepFile {
    StepFile {
        command: command.to_string(),
        env: BTreeMap::new(),
        artifacts: None,
        timeout_s,
    }
}

/// The C and C++ sanitizer lane: the project's own build through evo's compilers.
fn c_sanitize(build: &str, timeout_s: u32) -> SanitizeFile {
    SanitizeFile {
        build: build.to_string(),
        flags: Some(C_SANITIZE_FLAGS.to_string()),
        env: BTreeMap::new(),
        timeout_s,
    }
}

pub(super) fn steps(kind: &ProjectKind) -> Steps {
    match kind {
        ProjectKind::Cargo(project) => cargo(&project.binaries, &project.unsure),
        ProjectKind::Make(project) => make(project),
        ProjectKind::CMake(project) => cmake(&project.artifacts),
        ProjectKind::Plain => Steps {
            build: step("true", 600),
            test: step("true", 600),
            sanitize: None,
            run: None,
            config_files: Vec::new(),
            notes: vec![
                "build and test do nothing (`true`): put your build command and your test \
                 command there if the program has them."
                    .to_string(),
            ],
            todo: Vec::new(),
        },
    }
}

/// The artifacts' note for the comment, and a TODO when the list is not certain.
fn artifact_notes(artifacts: &Artifacts, read_from: &str) -> (String, Vec<String>) {
    let listed = if artifacts.paths.is_empty() {
        "none".to_string()
    } else {
        artifacts.paths.join(", ")
    };
    let note = format!(
        "build.artifacts: the programs and libraries the build makes, read from {read_from} \
         ({listed}); their sha256 go in the receipt. Keep those the timed runs use."
    );
    let why = artifacts.unsure.join("; ");
    let todo = match (artifacts.paths.is_empty(), artifacts.unsure.is_empty()) {
        (_, true) => Vec::new(),
        (true, false) => vec![format!(
            "set build.artifacts in {}: the programs and libraries the timed runs use (evo \
             init could not read them from {read_from}: {why})",
            super::WORKLOAD_FILE
        )],
        (false, false) => vec![format!(
            "check build.artifacts in {} ({listed}): evo init read them from {read_from}, but \
             {why}",
            super::WORKLOAD_FILE
        )],
    };
    (note, todo)
}

fn make(project: &super::make::MakeProject) -> Steps {
    let (test_target, artifacts) = (project.test_target.as_deref(), &project.artifacts);
    let (artifact_note, mut todo) = artifact_notes(artifacts, "the Makefiles");
    // evo's sanitizer compilers stand first on the PATH: a compiler called by its absolute path
    // goes around them, and the baseline's sanitized build would fail the first confirmation.
    let (sanitize, sanitizer_note) = match &project.absolute_compiler {
        None => (Some(c_sanitize("make", 600)), sanitizer_note("make")),
        Some(compiler) => {
            let why = format!(
                "the Makefiles call the compiler by its absolute path ({compiler}), which goes \
                 around evo's sanitizer compilers"
            );
            todo.push(format!(
                "add a sanitizer lane: {why}; call it as cc, gcc or $(CC), then add \
                 \"sanitize\": {{\"build\": \"make\", \"flags\": \"{C_SANITIZE_FLAGS}\"}} to {} \
                 (docs/workloads.md)",
                super::WORKLOAD_FILE
            ));
            (None, format!("sanitize: none, because {why}."))
        }
    };
    let (test, test_note) = match test_target {
        Some(target) => (
            make_test(target),
            format!(
                "test: `make {target}` on a writable copy of the built tree in a temporary \
                 folder, removed afterwards: evo makes the tree read-only once built, and a test \
                 target that compiles test programs or writes data would fail there. The copy \
                 keeps the build's timestamps, so make tests what the build made. It must pass \
                 on both trees."
            ),
        ),
        None => (
            "true".to_string(),
            "test: the Makefile has no `test:` or `check:` rule, so the test step does nothing \
             (`true`); put the command that runs your tests here (on a copy of the tree if it \
             writes files: the tree is read-only once built)."
                .to_string(),
        ),
    };
    Steps {
        build: StepFile {
            artifacts: Some(artifacts.paths.clone()),
            ..step("make", 600)
        },
        test: step(&test, 600),
        sanitize,
        run: None,
        config_files: vec![
            "**/Makefile",
            "**/makefile",
            "**/GNUmakefile",
            "**/Makefile.inc",
            "**/*.mk",
            "**/*.mak",
        ],
        notes: vec![
            "build: `make`, the default goal.".to_string(),
            artifact_note,
            test_note,
            sanitizer_note,
        ],
        todo,
    }
}

fn cmake(artifacts: &Artifacts) -> Steps {
    let (artifact_note, todo) = artifact_notes(artifacts, "the CMakeLists.txt files");
    Steps {
        build: StepFile {
            artifacts: Some(artifacts.paths.clone()),
            ..step(CMAKE_BUILD, 1800)
        },
        test: step(CMAKE_TEST, 600),
        sanitize: Some(c_sanitize(CMAKE_BUILD, 1800)),
        run: None,
        config_files: vec![
            "**/CMakeLists.txt",
            "**/*.cmake",
            "**/*.cmake.in",
            "cmake/**",
            "CMakePresets.json",
        ],
        notes: vec![
            "build: configures a Release build into build/ and builds it.".to_string(),
            artifact_note,
            "test: ctest on a copy of build/ in a temporary folder (evo makes the tree \
             read-only once built, and ctest writes its logs into the build folder); it must \
             pass on both trees."
                .to_string(),
            sanitizer_note("the same CMake build (CMake's compiler detection finds evo's CC)"),
        ],
        todo,
    }
}

fn sanitizer_note(build: &str) -> String {
    format!(
        "sanitize: the sanitizer lane builds {build} through evo's compilers, which append \
         `flags` to every compile and link, then runs every check and the training scenario's \
         timed command on it. A build that calls its compiler by an absolute path goes around \
         them and fails the lane: use cc, $(CC) or CMake's detection (docs/workloads.md)."
    )
}

fn cargo(binaries: &[String], unsure: &[String]) -> Steps {
    let artifacts: Vec<String> = binaries
        .iter()
        .map(|b| format!("target/release/{b}"))
        .collect();
    let mut todo = Vec::new();
    let run = match binaries {
        [only] => Some(format!("./target/release/{only}")),
        _ => None,
    };
    let listed = if binaries.is_empty() {
        "none".to_string()
    } else {
        binaries.join(", ")
    };
    if !unsure.is_empty() || binaries.is_empty() {
        let why = if unsure.is_empty() {
            "no manifest declares a binary (a library crate? time it through a binary, such \
             as a bench program in src/bin/)"
                .to_string()
        } else {
            unsure.join("; ")
        };
        todo.push(format!(
            "check build.artifacts in {} (binaries found: {listed}): {why}",
            super::WORKLOAD_FILE
        ));
    }
    let mut notes = vec![
        "build: `cargo build --release` with CARGO_TARGET_DIR=target, so the binaries are where \
         the timed command runs them whatever your Cargo configuration says; artifacts: the \
         release binaries of the package and every workspace member, whose sha256 go in the \
         receipt."
            .to_string(),
        "test: `cargo test --release` must pass on both trees. Tests see their tree read only \
         (no run may leave files for the next), so it compiles into a temporary target folder, \
         removed afterwards. Sandboxed builds and tests have no network: run `cargo fetch` once \
         before `evo confirm` if the project has dependencies."
            .to_string(),
    ];
    let sanitize = (!binaries.is_empty()).then(|| {
        notes.push(
            "sanitize: AddressSanitizer and overflow checks on the host target (Rust's sanitizers \
             need `-Zsanitizer`, so RUSTC_BOOTSTRAP=1 on a stable toolchain, and an explicit \
             --target so build scripts stay uninstrumented); the flags are added to \
             build.rustflags with --config, after those of your .cargo/config.toml. A RUSTFLAGS \
             variable or a target.<triple>.rustflags key would replace them: move such flags to \
             build.rustflags. The binaries are copied to target/release/, where the checks and \
             the timed command run them."
                .to_string(),
        );
        SanitizeFile {
            build: cargo_sanitize(binaries),
            flags: None,
            env: CARGO_ENV.into_iter().collect(),
            timeout_s: 1800,
        }
    });
    if run.is_none() && binaries.len() > 1 {
        todo.push(format!(
            "choose the binary to time: scenarios[0].run in {} (the build makes {listed})",
            super::WORKLOAD_FILE
        ));
    }
    Steps {
        build: StepFile {
            env: CARGO_ENV.into_iter().collect(),
            artifacts: Some(artifacts),
            ..step("cargo build --release", 1800)
        },
        test: step(CARGO_TEST, 1800),
        sanitize,
        run,
        config_files: vec![
            "**/Cargo.toml",
            "**/Cargo.lock",
            "**/.cargo/config.toml",
            "**/.cargo/config",
            "**/build.rs",
            "rust-toolchain.toml",
            "rust-toolchain",
        ],
        notes,
        todo,
    }
}

/// The sanitized Cargo build (as the bundled trainer's `build.sh --sanitize` does it, without
/// its cache): the host triple from rustc, the flags appended to `build.rustflags`, and the
/// binaries copied to where the release build puts them.
fn cargo_sanitize(binaries: &[String]) -> String {
    let copies: Vec<String> = binaries
        .iter()
        .map(|b| format!("cp \"target/$h/release/{b}\" target/release/"))
        .collect();
    format!(
        "h=$(rustc -vV | sed -n 's/^host: //p') && RUSTC_BOOTSTRAP=1 cargo build --release \
         --target \"$h\" --config 'build.rustflags=[\"-Zsanitizer=address\", \
         \"-Coverflow-checks=on\"]' && mkdir -p target/release && {}",
        copies.join(" && ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaffold::cargo::CargoProject;
    use crate::scaffold::make::MakeProject;

    fn make_project(artifacts: Artifacts, absolute_compiler: Option<&str>) -> ProjectKind {
        ProjectKind::Make(MakeProject {
            test_target: Some("check".into()),
            artifacts,
            absolute_compiler: absolute_compiler.map(str::to_string),
        })
    }

    #[test]
    fn what_init_could_not_read_is_a_todo_and_not_a_guess() {
        let unread = Artifacts {
            paths: Vec::new(),
            unsure: vec!["`$(BIN)` holds a variable".into()],
        };
        let s = steps(&make_project(unread, None));
        assert_eq!(s.build.artifacts, Some(Vec::new()));
        assert!(
            s.todo[0].starts_with("set build.artifacts") && s.todo[0].contains("`$(BIN)`"),
            "{:?}",
            s.todo
        );
        assert!(
            s.test.command.contains("make -C \"$d/tree\" check"),
            "{}",
            s.test.command
        );
        let read = Artifacts {
            paths: vec!["prog".into()],
            unsure: Vec::new(),
        };
        let s = steps(&make_project(read.clone(), None));
        assert!(s.todo.is_empty(), "{:?}", s.todo);
        assert_eq!(s.sanitize.unwrap().flags.as_deref(), Some(C_SANITIZE_FLAGS));
        // A compiler by its absolute path would fail the baseline's sanitized build.
        let s = steps(&make_project(read, Some("/usr/bin/gcc")));
        assert!(s.sanitize.is_none());
        assert!(s.todo[0].contains("/usr/bin/gcc"), "{:?}", s.todo);
    }

    #[test]
    fn a_cargo_project_times_only_a_lone_binary_and_sanitizes_only_known_ones() {
        let cargo = |binaries: &[&str]| {
            steps(&ProjectKind::Cargo(CargoProject {
                binaries: binaries.iter().map(|b| b.to_string()).collect(),
                unsure: Vec::new(),
            }))
        };
        let s = cargo(&["a", "b"]);
        assert_eq!(s.run, None);
        assert!(
            s.todo.iter().any(|t| t.contains("choose the binary")),
            "{:?}",
            s.todo
        );
        let build = s.sanitize.unwrap().build;
        assert!(
            build.contains("release/a\" target/release/ && cp"),
            "{build}"
        );
        let s = cargo(&[]);
        assert!(s.sanitize.is_none() && s.run.is_none());
        assert!(
            s.todo[0].contains("no manifest declares a binary"),
            "{:?}",
            s.todo
        );
    }
}
