//! Files a build tool reads by name without being told (docs/design.md §2.2.3): make prefers a
//! `GNUmakefile` to the `Makefile` the workload declares, Cargo reads `.cargo/config.toml` in
//! every folder above the one it runs in, CMake runs any `CMakeLists.txt` it is pointed near, and
//! valgrind reads `./.valgrindrc`. A patch that only adds such a file touches no protected path,
//! yet its recipe runs in the build and can rewrite the harness.
//!
//! So such a file is build configuration, as if the workload listed it in `config_files`: it goes
//! to the build-configuration lane (`split.rs`). And a NEW one (the baseline has no file at that
//! path) is refused by patch safety when its folder is, or is above or below, a folder where the
//! workload builds, tests, checks or runs, or is, or is above, a protected path's folder —
//! unless the workload's `config_files` lists it. A file the baseline already has is the project's own configuration:
//! editing it is judged by the lanes (and by `protected`, when the workload protects it).

use globset::GlobSet;

use super::{ChangeKind, PatchError, PatchSummary, Refusal, Tree};

/// The names build tools read by themselves, as globs on the path from the tree root (`**/`
/// is added in front), each with the tool that reads it.
pub const IMPLICIT_BUILD_FILES: &[(&str, &str)] = &[
    ("GNUmakefile", "make"),
    ("makefile", "make"),
    ("Makefile", "make"),
    ("*.mk", "make (include)"),
    ("*.mak", "make (include)"),
    ("Makefile.am", "automake"),
    ("Makefile.in", "configure"),
    ("configure", "configure"),
    ("configure.ac", "autoconf"),
    ("configure.in", "autoconf"),
    ("*.m4", "autoconf"),
    (".cargo/config", "Cargo"),
    (".cargo/config.toml", "Cargo"),
    ("Cargo.toml", "Cargo"),
    ("Cargo.lock", "Cargo"),
    ("build.rs", "Cargo (build script)"),
    ("rust-toolchain", "rustup"),
    ("rust-toolchain.toml", "rustup"),
    ("CMakeLists.txt", "CMake"),
    ("*.cmake", "CMake"),
    ("CMakePresets.json", "CMake"),
    ("CMakeUserPresets.json", "CMake"),
    ("CMakeCache.txt", "CMake"),
    (".bazelrc", "Bazel"),
    (".bazelversion", "Bazel"),
    ("BUILD", "Bazel"),
    ("BUILD.bazel", "Bazel"),
    ("WORKSPACE", "Bazel"),
    ("WORKSPACE.bazel", "Bazel"),
    ("MODULE.bazel", "Bazel"),
    ("*.bzl", "Bazel"),
    ("meson.build", "Meson"),
    ("meson_options.txt", "Meson"),
    ("meson.options", "Meson"),
    ("build.ninja", "Ninja"),
    ("SConstruct", "SCons"),
    ("SConscript", "SCons"),
    ("*.pc", "pkg-config"),
    ("*.rsp", "a compiler (response file)"),
    (".clang*", "clang tools"),
    ("compile_flags.txt", "clang tools"),
    ("*.ld", "the linker (script)"),
    ("*.lds", "the linker (script)"),
    ("setup.py", "Python packaging"),
    ("setup.cfg", "Python packaging"),
    ("pyproject.toml", "Python packaging"),
    ("conftest.py", "pytest"),
    ("pytest.ini", "pytest"),
    ("tox.ini", "tox and pytest"),
    ("sitecustomize.py", "Python (at start-up)"),
    ("usercustomize.py", "Python (at start-up)"),
    ("*.pth", "Python (at start-up)"),
    ("package.json", "npm"),
    (".npmrc", "npm"),
    (".yarnrc", "Yarn"),
    (".yarnrc.yml", "Yarn"),
    ("go.mod", "Go"),
    ("go.work", "Go"),
    ("build.gradle", "Gradle"),
    ("build.gradle.kts", "Gradle"),
    ("settings.gradle", "Gradle"),
    ("settings.gradle.kts", "Gradle"),
    ("gradle.properties", "Gradle"),
    ("pom.xml", "Maven"),
    ("justfile", "just"),
    ("Justfile", "just"),
    ("Rakefile", "rake"),
    (".gdbinit", "gdb"),
    (".lldbinit", "lldb"),
    (".valgrindrc", "valgrind"),
    (".envrc", "direnv"),
    (".env", "dotenv loaders"),
    (".tool-versions", "asdf"),
];

/// The compiled list, in [`IMPLICIT_BUILD_FILES`] order.
pub(crate) struct ImplicitBuildFiles {
    set: GlobSet,
}

impl ImplicitBuildFiles {
    pub(crate) fn new() -> Result<ImplicitBuildFiles, PatchError> {
        let globs: Vec<String> = IMPLICIT_BUILD_FILES
            .iter()
            .map(|(glob, _)| format!("**/{glob}"))
            .collect();
        Ok(ImplicitBuildFiles {
            set: super::globs::glob_set(&globs)?,
        })
    }

    /// The tool that reads `path` by itself, if any.
    pub(crate) fn tool(&self, path: &str) -> Option<&'static str> {
        let index = *self.set.matches(path).first()?;
        IMPLICIT_BUILD_FILES.get(index).map(|(_, tool)| *tool)
    }
}

/// Where the workload's commands run and what it protects, for [`check_build_files`].
#[derive(Debug, Clone, Copy)]
pub struct BuildPlaces<'a> {
    /// The `cwd` of every build, test, check, timed and sanitizer command (`None`: the root).
    pub cwds: &'a [Option<String>],
    pub protected: &'a [String],
    pub config_files: &'a [String],
}

/// Refuses a patch that adds a file a build tool reads by itself (not in the baseline, not in
/// `config_files`) in, above or below a folder where the workload runs a command, or in or above
/// one where it protects something.
pub fn check_build_files(
    summary: &PatchSummary,
    tree: &Tree,
    places: BuildPlaces<'_>,
) -> Result<(), PatchError> {
    let implicit = ImplicitBuildFiles::new()?;
    let declared = super::globs::glob_set(places.config_files)?;
    let folders = watched_folders(places);
    for file in &summary.files {
        let Some(path) = file.new_path.as_deref() else {
            continue;
        };
        if file.kind == ChangeKind::Deleted || declared.is_match(path) {
            continue;
        }
        let Some(tool) = implicit.tool(path) else {
            continue;
        };
        if !is_new(tree, path)? {
            continue;
        }
        let folder = read_from(path);
        let near = |(f, kind): &&(String, Watched)| match kind {
            Watched::Commands => related(folder, f),
            Watched::Protected => inside(f, folder),
        };
        if let Some((place, kind)) = folders.iter().find(near) {
            return Err(PatchError::Refused {
                path: super::safety::shown_path(path),
                reason: Refusal::ImplicitBuildFile {
                    tool: tool.to_string(),
                    place: shown_folder(place),
                    what: kind.what().to_string(),
                },
            });
        }
    }
    Ok(())
}

/// What a watched folder is.
#[derive(Debug, Clone, Copy)]
enum Watched {
    /// A command runs there: a build file in, above or below it can be read.
    Commands,
    /// Protected files are there: a build file in or above it can change how they are used
    /// (a `conftest.py` above protected tests, say).
    Protected,
}

impl Watched {
    fn what(self) -> &'static str {
        match self {
            Watched::Commands => "commands run",
            Watched::Protected => "protected files are",
        }
    }
}

/// The folders the workload works in (its commands' `cwd`) and protects (each protected glob's
/// folder up to its first wildcard).
fn watched_folders(places: BuildPlaces<'_>) -> Vec<(String, Watched)> {
    let mut folders: Vec<(String, Watched)> = Vec::new();
    for cwd in places.cwds {
        let folder = normalized(cwd.as_deref().unwrap_or(""));
        folders.push((folder, Watched::Commands));
    }
    for glob in places.protected {
        folders.push((glob_folder(glob), Watched::Protected));
    }
    folders
}

fn normalized(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// The literal folder a glob starts with: `a/b/**` is `a/b`, `a/*.c` is `a`, `**/x` the root.
fn glob_folder(glob: &str) -> String {
    let literal = match glob.find(['*', '?', '[', '{']) {
        Some(at) => &glob[..at],
        None => glob,
    };
    let folder = match glob.find(['*', '?', '[', '{']) {
        Some(_) => literal.rsplit_once('/').map_or("", |(dir, _)| dir),
        None => parent(literal),
    };
    normalized(folder)
}

/// The folder whose commands read `path`: its own, or for `x/.cargo/config.toml` the folder `x`.
fn read_from(path: &str) -> &str {
    let folder = parent(path);
    match folder.rsplit_once('/') {
        Some((above, ".cargo")) => above,
        None if folder == ".cargo" => "",
        _ => folder,
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `inner` is the folder `outer` or inside it.
fn inside(inner: &str, outer: &str) -> bool {
    outer.is_empty()
        || inner == outer
        || inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// `a` and `b` are the same folder, or one is inside the other.
fn related(a: &str, b: &str) -> bool {
    inside(a, b) || inside(b, a)
}

fn shown_folder(folder: &str) -> String {
    if folder.is_empty() {
        "the tree root".to_string()
    } else {
        format!("`{}`", super::safety::shown_path(folder))
    }
}

/// The baseline tree has nothing at `path` (not even a symlink).
fn is_new(tree: &Tree, path: &str) -> Result<bool, PatchError> {
    let full = tree.root.join(path);
    match std::fs::symlink_metadata(&full) {
        Ok(_) => Ok(false),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(true)
        }
        Err(source) => Err(PatchError::Io {
            action: "inspect",
            path: full,
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_names_what_each_tool_reads() {
        let implicit = ImplicitBuildFiles::new().unwrap();
        assert_eq!(implicit.tool("GNUmakefile"), Some("make"));
        assert_eq!(implicit.tool("a/b/GNUmakefile"), Some("make"));
        assert_eq!(implicit.tool("w/.cargo/config.toml"), Some("Cargo"));
        assert_eq!(implicit.tool("sub/CMakeLists.txt"), Some("CMake"));
        assert_eq!(implicit.tool("rules.mk"), Some("make (include)"));
        assert_eq!(implicit.tool("kernels.c"), None);
        assert_eq!(implicit.tool("docs/Makefile.txt"), None);
    }

    #[test]
    fn folders_are_related_when_one_holds_the_other() {
        assert!(related("", "w/ck"));
        assert!(related("w", "w/ck"));
        assert!(related("w/ck/sub", "w/ck"));
        assert!(related("w/ck", "w/ck"));
        assert!(!related("w/ckx", "w/ck"));
        assert!(!related("other", "w/ck"));
        assert_eq!(glob_folder("w/ck/bench/**"), "w/ck/bench");
        assert_eq!(glob_folder("w/ck/workload.json"), "w/ck");
        assert_eq!(glob_folder("**/tests/**"), "");
        assert_eq!(glob_folder("w/*.c"), "w");
    }
}
