//! What kind of project a repository root holds, read from the files there (no command runs),
//! with what its build files say about the programs and libraries the build makes.

use std::path::Path;

/// The build system `evo init` found at the repository root, with what it learnt about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectKind {
    /// `Cargo.toml`: a package, a workspace, or both.
    Cargo(super::cargo::CargoProject),
    /// `GNUmakefile`, `makefile` or `Makefile`.
    Make(super::make::MakeProject),
    /// `CMakeLists.txt`.
    CMake(super::cmake::CMakeProject),
    /// None of the above: the commands are the user's to write.
    Plain,
}

/// The files a build makes, as far as its build files say so reliably.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Artifacts {
    /// Paths relative to the tree root, in the order found, without repeats.
    pub paths: Vec<String>,
    /// Why the list may be incomplete or wrong (a name built from a variable evo cannot read, an
    /// output folder moved, …), each a clause for the TODO list; empty when every path was read.
    pub unsure: Vec<String>,
}

impl Artifacts {
    pub(crate) fn add(&mut self, path: String) {
        if !self.paths.contains(&path) {
            self.paths.push(path);
        }
    }

    pub(crate) fn doubt(&mut self, why: String) {
        if !self.unsure.contains(&why) {
            self.unsure.push(why);
        }
    }
}

impl ProjectKind {
    /// Looks at the repository root; the first match wins, in the order of the variants.
    pub fn detect(root: &Path) -> ProjectKind {
        if let Some(project) = super::cargo::CargoProject::read(root) {
            return ProjectKind::Cargo(project);
        }
        for makefile in ["GNUmakefile", "makefile", "Makefile"] {
            if root.join(makefile).is_file() {
                return ProjectKind::Make(super::make::MakeProject::read(root, makefile));
            }
        }
        if root.join("CMakeLists.txt").is_file() {
            return ProjectKind::CMake(super::cmake::CMakeProject::read(root));
        }
        ProjectKind::Plain
    }

    /// The kind in words, for the terminal and the files' comments.
    pub fn describe(&self) -> &'static str {
        match self {
            ProjectKind::Cargo(_) => "a Cargo project (Cargo.toml)",
            ProjectKind::Make(_) => "a Make project (Makefile)",
            ProjectKind::CMake(_) => "a CMake project (CMakeLists.txt)",
            ProjectKind::Plain => {
                "no build system evo knows (no Cargo.toml, Makefile or CMakeLists.txt)"
            }
        }
    }
}
