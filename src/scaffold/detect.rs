//! What kind of project a repository root holds, read from the files there (no command runs).

use std::path::Path;

/// The build system `evo init` found at the repository root, with what it learnt about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectKind {
    /// `Cargo.toml`; `package` is the `[package] name` (the binary's name), when there is one.
    Cargo { package: Option<String> },
    /// `Makefile`; `test_target` when it has a `test:` rule.
    Make { test_target: bool },
    /// `CMakeLists.txt`.
    CMake,
    /// None of the above: the commands are the user's to write.
    Plain,
}

impl ProjectKind {
    /// Looks at the repository root; the first match wins, in the order of the variants.
    pub fn detect(root: &Path) -> ProjectKind {
        if let Ok(manifest) = std::fs::read_to_string(root.join("Cargo.toml")) {
            return ProjectKind::Cargo {
                package: package_name(&manifest),
            };
        }
        for makefile in ["GNUmakefile", "makefile", "Makefile"] {
            if let Ok(text) = std::fs::read_to_string(root.join(makefile)) {
                return ProjectKind::Make {
                    test_target: has_test_target(&text),
                };
            }
        }
        if root.join("CMakeLists.txt").is_file() {
            return ProjectKind::CMake;
        }
        ProjectKind::Plain
    }

    /// The kind in words, for the terminal and the files' comments.
    pub fn describe(&self) -> &'static str {
        match self {
            ProjectKind::Cargo { .. } => "a Cargo project (Cargo.toml)",
            ProjectKind::Make { .. } => "a Make project (Makefile)",
            ProjectKind::CMake => "a CMake project (CMakeLists.txt)",
            ProjectKind::Plain => {
                "no build system evo knows (no Cargo.toml, Makefile or CMakeLists.txt)"
            }
        }
    }
}

/// The `name` of the `[package]` table of a Cargo manifest. A line-based reading, enough for the
/// `name = "x"` that `cargo new` writes; anything fancier gives `None` and a placeholder.
pub fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "name" {
            continue;
        }
        let value = value.trim();
        let quoted = value
            .strip_prefix('"')
            .and_then(|v| v.split_once('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.split_once('\'')));
        return quoted
            .map(|(name, _)| name.to_string())
            .filter(|name| is_plain_package_name(name));
    }
    None
}

/// Cargo's package names: letters, digits, `-` and `_`, so the name is safe in a shell command.
fn is_plain_package_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Whether a makefile has a rule for `test` (`test:` or `test::`, not a `test := value`).
pub fn has_test_target(makefile: &str) -> bool {
    makefile.lines().any(|line| {
        // Rules start at the left margin; a recipe line starts with a tab.
        let Some(rest) = line.strip_prefix("test") else {
            return false;
        };
        let rest = rest.trim_start_matches([' ', '\t']);
        rest.starts_with(':') && !rest.starts_with(":=")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_name_is_read_from_the_package_table_only() {
        let manifest = "[workspace]\nname = \"no\"\n\n[package]\nversion = \"0.1.0\"\nname = \"rsum\" # the binary\n\n[dependencies]\nname = \"no\"\n";
        assert_eq!(package_name(manifest).as_deref(), Some("rsum"));
        assert_eq!(
            package_name("[package]\nname='my-tool'\n").as_deref(),
            Some("my-tool")
        );
        assert_eq!(package_name("[workspace]\nmembers = [\"a\"]\n"), None);
        assert_eq!(package_name("[package]\nname.workspace = true\n"), None);
        assert_eq!(package_name("[package]\nname = \"a b; rm\"\n"), None);
    }

    #[test]
    fn a_test_rule_is_found_and_a_test_variable_is_not() {
        assert!(has_test_target(
            "all: prog\n\ntest: prog\n\t./prog --selftest\n"
        ));
        assert!(has_test_target(".PHONY: test\ntest :: all\n"));
        assert!(!has_test_target("test := 1\nprog: prog.c\n"));
        assert!(!has_test_target("tests: prog\n\ttest: x\nmytest: y\n"));
    }
}
