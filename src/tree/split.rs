//! Splitting a patch into its build-configuration part and its code part, file by file, for the
//! build-configuration lane: how much of a gain comes from flags alone. Build configuration is
//! what the workload's `config_files` list and every file a build tool reads by itself
//! (`build_files.rs`: a `GNUmakefile`, a `.cargo/config.toml`, a `CMakeLists.txt`, …).

use super::globs::glob_set;
use super::{PatchError, inspect_patch};

/// A patch cut in two along the workload's `config_files` globs and the implicit build files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchSplit {
    /// The sections of configuration files (a valid patch on its own; empty when none).
    pub config: Vec<u8>,
    /// The other sections.
    pub code: Vec<u8>,
    /// Paths of the configuration files the patch touches.
    pub config_files: Vec<String>,
}

/// Byte ranges of each `diff --git` section, in order (text before the first one is dropped).
fn sections(bytes: &[u8]) -> Vec<&[u8]> {
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if line.starts_with(b"diff --git ") {
            starts.push(at);
        }
        at += line.len();
    }
    starts
        .iter()
        .enumerate()
        .map(|(i, s)| &bytes[*s..starts.get(i + 1).copied().unwrap_or(bytes.len())])
        .collect()
}

/// Splits `bytes` by whether each file (old or new path) matches one of `globs` or is a file a
/// build tool reads by itself.
pub fn split_patch(bytes: &[u8], globs: &[String]) -> Result<PatchSplit, PatchError> {
    let summary = inspect_patch(bytes)?;
    let set = glob_set(globs)?;
    let implicit = super::build_files::ImplicitBuildFiles::new()?;
    let parts = sections(bytes);
    if parts.len() != summary.files.len() {
        return Err(PatchError::Unparsable {
            detail: format!(
                "{} `diff --git` sections for {} files: cannot split it by file",
                parts.len(),
                summary.files.len()
            ),
        });
    }
    let mut split = PatchSplit {
        config: Vec::new(),
        code: Vec::new(),
        config_files: Vec::new(),
    };
    for (file, part) in summary.files.iter().zip(parts) {
        let config = |p: &&str| set.is_match(p) || implicit.tool(p).is_some();
        if file.paths().iter().any(config) {
            split.config.extend_from_slice(part);
            split.config_files.push(file.display_path().to_string());
        } else {
            split.code.extend_from_slice(part);
        }
    }
    Ok(split)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/Makefile b/Makefile
index 1111111..2222222 100644
--- a/Makefile
+++ b/Makefile
@@ -1,2 +1,2 @@
 prog: prog.c
-\tcc -O2 -o prog prog.c
+\tcc -O3 -o prog prog.c
diff --git a/prog.c b/prog.c
index 3333333..4444444 100644
--- a/prog.c
+++ b/prog.c
@@ -1,3 +1,3 @@
 int main(void) {
-    return 1;
+    return 0;
 }
";

    #[test]
    fn configuration_and_code_sections_are_separated() {
        let split = split_patch(PATCH.as_bytes(), &["Makefile".to_string()]).unwrap();
        assert_eq!(split.config_files, ["Makefile"]);
        let config = String::from_utf8(split.config).unwrap();
        let code = String::from_utf8(split.code).unwrap();
        assert!(config.starts_with("diff --git a/Makefile") && config.contains("-O3"));
        assert!(!config.contains("prog.c b/prog.c"));
        assert!(code.starts_with("diff --git a/prog.c") && code.contains("return 0"));
        assert_eq!(config.len() + code.len(), PATCH.len());
    }

    #[test]
    fn a_code_only_patch_has_no_configuration_part() {
        let code = &PATCH[PATCH.find("diff --git a/prog.c").unwrap()..];
        let split = split_patch(code.as_bytes(), &["*.toml".to_string()]).unwrap();
        assert!(split.config.is_empty() && split.config_files.is_empty());
        assert_eq!(split.code, code.as_bytes());
    }

    /// A file make reads by itself is build configuration though the workload lists none.
    #[test]
    fn an_implicit_build_file_is_configuration_without_being_listed() {
        let patch = PATCH.replace("Makefile", "GNUmakefile");
        let split = split_patch(patch.as_bytes(), &[]).unwrap();
        assert_eq!(split.config_files, ["GNUmakefile"]);
        assert!(String::from_utf8(split.code).unwrap().contains("prog.c"));
    }
}
