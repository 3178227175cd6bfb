//! The binaries a Cargo project's release build makes, read from its manifests: the root
//! package's and every workspace member's `[[bin]]` tables, `src/main.rs` and `src/bin/`.
//!
//! evo has no TOML parser of its own, and a manifest is read line by line: the tables and keys
//! `cargo new` and hand-written workspaces use. A member path built otherwise (a glob other
//! than `dir/*`) is named in `unsure` rather than guessed.

use std::path::Path;

/// What `cargo build --release` makes, as far as the manifests say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CargoProject {
    /// The binaries, by name (each lands at `target/release/<name>`), in the order found.
    pub binaries: Vec<String>,
    /// Why the list may be incomplete, each a clause for the TODO list.
    pub unsure: Vec<String>,
}

/// The parts of one manifest that say which binaries it builds.
#[derive(Debug, Default)]
struct Manifest {
    package: Option<String>,
    has_package: bool,
    autobins: bool,
    /// `[[bin]]` tables: name and path.
    bins: Vec<(Option<String>, Option<String>)>,
    /// `[workspace] members` and `exclude`, when the manifest has a `[workspace]` table.
    members: Option<Vec<String>>,
    exclude: Vec<String>,
}

impl CargoProject {
    /// `None` when the root has no `Cargo.toml`.
    pub fn read(root: &Path) -> Option<CargoProject> {
        let text = std::fs::read_to_string(root.join("Cargo.toml")).ok()?;
        let manifest = parse(&text);
        let mut project = CargoProject {
            binaries: Vec::new(),
            unsure: Vec::new(),
        };
        if manifest.has_package {
            project.add_package(root, "Cargo.toml", &manifest);
        }
        for member in manifest.members.iter().flatten() {
            for dir in project.member_dirs(root, member, &manifest.exclude) {
                let path = format!("{dir}/Cargo.toml");
                match std::fs::read_to_string(root.join(&path)) {
                    Ok(text) => project.add_package(&root.join(&dir), &path, &parse(&text)),
                    Err(_) => {
                        project.doubt(format!("the workspace member `{dir}` has no Cargo.toml"))
                    }
                }
            }
        }
        Some(project)
    }

    fn doubt(&mut self, why: String) {
        if !self.unsure.contains(&why) {
            self.unsure.push(why);
        }
    }

    /// The folders a `members` entry names: a path, or `dir/*` (every folder of `dir` holding a
    /// Cargo.toml, sorted).
    fn member_dirs(&mut self, root: &Path, member: &str, exclude: &[String]) -> Vec<String> {
        let member = member.trim_end_matches('/');
        let dirs = match member.strip_suffix("/*") {
            Some(parent) if !parent.contains(['*', '?', '[']) => {
                let mut found: Vec<String> = std::fs::read_dir(root.join(parent))
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .filter(|e| e.path().join("Cargo.toml").is_file())
                    .map(|e| format!("{parent}/{}", e.file_name().to_string_lossy()))
                    .collect();
                found.sort();
                found
            }
            _ if member.contains(['*', '?', '[']) => {
                self.doubt(format!(
                    "the workspace member pattern `{member}` was not expanded"
                ));
                Vec::new()
            }
            _ => vec![member.to_string()],
        };
        dirs.into_iter()
            .filter(|d| !exclude.iter().any(|e| e.trim_end_matches('/') == d))
            .collect()
    }

    fn add_package(&mut self, dir: &Path, manifest_path: &str, manifest: &Manifest) {
        let add = |name: String, binaries: &mut Vec<String>| {
            if !binaries.contains(&name) {
                binaries.push(name);
            }
        };
        let mut main_rs_declared = false;
        for (name, path) in &manifest.bins {
            let path = path.as_deref().map(|p| p.trim_start_matches("./"));
            main_rs_declared |= match path {
                Some(path) => path == "src/main.rs",
                None => name.is_some() && *name == manifest.package,
            };
            match name.as_deref().filter(|n| is_plain_name(n)) {
                Some(name) => add(name.to_string(), &mut self.binaries),
                None => self.doubt(format!(
                    "a [[bin]] of {manifest_path} has no name evo could read"
                )),
            }
        }
        if dir.join("src/main.rs").is_file() && !main_rs_declared {
            match &manifest.package {
                Some(name) => add(name.clone(), &mut self.binaries),
                None => self.doubt(format!(
                    "{manifest_path} has no `[package] name` evo could read"
                )),
            }
        }
        if !manifest.autobins {
            return;
        }
        let mut found: Vec<String> = std::fs::read_dir(dir.join("src/bin"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|e| {
                let path = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if path.is_dir() && path.join("main.rs").is_file() {
                    Some(name)
                } else {
                    name.strip_suffix(".rs").map(str::to_string)
                }
            })
            .filter(|n| is_plain_name(n))
            .collect();
        found.sort();
        for name in found {
            add(name, &mut self.binaries);
        }
    }
}

/// The manifest's `[package]`, `[[bin]]` and `[workspace]` keys evo reads.
fn parse(text: &str) -> Manifest {
    let mut m = Manifest {
        autobins: true,
        ..Manifest::default()
    };
    let mut table = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            table = line.split('#').next().unwrap_or("").trim().to_string();
            match table.as_str() {
                "[package]" => m.has_package = true,
                "[[bin]]" => m.bins.push((None, None)),
                "[workspace]" => m.members = m.members.take().or_else(|| Some(Vec::new())),
                _ => {}
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, mut value) = (key.trim(), value.trim().to_string());
        // An array may go on over several lines, up to its closing bracket.
        if value.starts_with('[') {
            while !value.contains(']') {
                let Some(next) = lines.next() else { break };
                value.push(' ');
                value.push_str(next.split('#').next().unwrap_or(""));
            }
        }
        match (table.as_str(), key) {
            ("[package]", "name") => m.package = first_string(&value).filter(|n| is_plain_name(n)),
            ("[package]", "autobins") => m.autobins = value != "false",
            ("[[bin]]", "name") => {
                if let Some(bin) = m.bins.last_mut() {
                    bin.0 = first_string(&value);
                }
            }
            ("[[bin]]", "path") => {
                if let Some(bin) = m.bins.last_mut() {
                    bin.1 = first_string(&value);
                }
            }
            ("[workspace]", "members") => m.members = Some(strings(&value)),
            ("[workspace]", "exclude") => m.exclude = strings(&value),
            _ => {}
        }
    }
    m
}

/// The quoted strings of a TOML value, in order (basic and literal strings, no escapes).
fn strings(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find(['"', '\'']) {
        let quote = &rest[start..=start];
        let after = &rest[start + 1..];
        let Some(end) = after.find(quote) else { break };
        out.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

/// The value when it starts with a quoted string; `None` for `name.workspace = true` and the like.
fn first_string(value: &str) -> Option<String> {
    if !value.starts_with(['"', '\'']) {
        return None;
    }
    strings(value).into_iter().next()
}

/// The name of a package `cargo new` accepts (the binary's file name): letters, digits, `-`
/// and `_`, so it is safe in a shell command.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> CargoProject {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        CargoProject::read(dir.path()).unwrap()
    }

    #[test]
    fn the_package_name_is_read_from_the_package_table_only() {
        let manifest = "[workspace]\nname = \"no\"\n\n[package]\nversion = \"0.1.0\"\nname = \"rsum\" # the binary\n\n[dependencies]\nname = \"no\"\n";
        assert_eq!(parse(manifest).package.as_deref(), Some("rsum"));
        assert_eq!(
            parse("[package]\nname='my-tool'\n").package.as_deref(),
            Some("my-tool")
        );
        assert_eq!(parse("[package]\nname.workspace = true\n").package, None);
        assert_eq!(parse("[package]\nname = \"a b; rm\"\n").package, None);
    }

    #[test]
    fn a_library_crate_has_no_binary_to_time() {
        // The old reading took the package name for a binary whatever the crate was.
        let p = project(&[
            ("Cargo.toml", "[package]\nname = \"onlylib\"\n"),
            ("src/lib.rs", ""),
        ]);
        assert!(p.binaries.is_empty(), "{p:?}");
        assert!(p.unsure.is_empty());
    }

    #[test]
    fn a_workspace_lists_its_members_binaries() {
        let p = project(&[
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\n  \"crates/*\", # all\n  \"tools/gen\",\n]\nexclude = [\"crates/old\"]\n",
            ),
            ("crates/core/Cargo.toml", "[package]\nname = \"core\"\n"),
            ("crates/core/src/lib.rs", ""),
            (
                "crates/bench/Cargo.toml",
                "[package]\nname = \"bench-crate\"\n\n[[bin]]\nname = \"xbench\"\npath = \"src/main.rs\"\n",
            ),
            ("crates/bench/src/main.rs", ""),
            ("crates/bench/src/bin/extra.rs", ""),
            ("crates/old/Cargo.toml", "[package]\nname = \"old\"\n"),
            ("crates/old/src/main.rs", ""),
            ("tools/gen/Cargo.toml", "[package]\nname = \"gen\"\n"),
            ("tools/gen/src/main.rs", ""),
        ]);
        assert_eq!(p.binaries, ["xbench", "extra", "gen"]);
        assert!(p.unsure.is_empty(), "{:?}", p.unsure);
    }

    #[test]
    fn a_member_pattern_evo_cannot_expand_is_said() {
        let p = project(&[("Cargo.toml", "[workspace]\nmembers = [\"crates/x-*\"]\n")]);
        assert!(p.binaries.is_empty());
        assert!(p.unsure[0].contains("crates/x-*"), "{:?}", p.unsure);
    }
}
