//! The one glob compiler for path patterns in workload files (`protected`, `config_files`):
//! whole paths from the tree root, `*` within one folder, `**` across folders.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::PatchError;

/// Globs match whole paths from the tree root and `*` stays within one folder, as for
/// `protected`.
pub(super) fn glob_set(globs: &[String]) -> Result<GlobSet, PatchError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in globs {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|source| PatchError::BadProtectedGlob {
                pattern: pattern.clone(),
                source,
            })?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|source| PatchError::BadProtectedGlob {
            pattern: globs.join(", "),
            source,
        })
}
