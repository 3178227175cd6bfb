//! What a sandboxed command may see of the machine: an allow-list, not the whole file system.
//!
//! Code under test runs with the host's user id mapped in (root, on this project's machines), so
//! anything it can see it can read, whatever the file's mode says to other users. The view is
//! therefore built up from nothing: the system folders (`/usr`, `/etc`, `/opt` and the `/bin`,
//! `/lib` links), the toolchains on the `PATH` and Cargo's and rustup's homes, read-only; the
//! user's home as an empty private folder; and whatever the run itself binds (its tree, declared
//! caches). Inside what is shown, files the host keeps from other users (`/etc/shadow`, private
//! TLS keys, Cargo's registry token) and evo's own secrets (the signing key, the campaign and
//! holdout files, the repository being judged, evo's work, output and state folders) are covered,
//! so a secret stays hidden even when a declared folder happens to hold it.

use std::path::{Path, PathBuf};

/// One read-only piece of the machine as the sandbox shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// A folder bound read-only at the same path.
    Folder(PathBuf),
    /// A top-level symbolic link recreated as it is (`/bin -> usr/bin` on merged-/usr systems).
    Link { link: PathBuf, target: PathBuf },
}

/// Something inside the view that must not be readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Covered {
    /// Replaced by an empty private folder.
    Folder(PathBuf),
    /// Replaced by an empty file.
    File(PathBuf),
}

impl Covered {
    pub fn path(&self) -> &Path {
        match self {
            Covered::Folder(p) | Covered::File(p) => p,
        }
    }

    fn of(path: &Path) -> Covered {
        Covered::of_at(path, path.to_path_buf())
    }

    /// `secret` covered at `place` (the same file, named as a run's bind names it).
    fn of_at(secret: &Path, place: PathBuf) -> Covered {
        if secret.is_dir() {
            Covered::Folder(place)
        } else {
            Covered::File(place)
        }
    }
}

/// The machine as every sandboxed command sees it (before the run's own binds).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    /// The user's home, shown as an empty private folder (toolchains inside it are bound on top).
    pub home: Option<PathBuf>,
    /// In mount order.
    pub shown: Vec<Shown>,
    /// Covered after everything is shown.
    pub covered: Vec<Covered>,
    /// evo's secrets: covered wherever a run's own binds would show them.
    pub secrets: Vec<PathBuf>,
}

/// Top-level system folders (or links to them) shown read-only when they exist.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Files inside a shown toolchain that hold credentials whatever their mode.
const TOOLCHAIN_SECRETS: &[&str] = &["credentials.toml", "credentials"];

impl View {
    /// The view of this machine. `extra` are further folders to show read-only (the campaign's
    /// `sandbox.read_only`); `secrets` are evo's own paths that no run may see.
    pub fn of_this_machine(extra: &[PathBuf], secrets: &[PathBuf]) -> View {
        let env_path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let home = env_path("HOME").filter(|h| h.parent().is_some());
        let mut toolchains: Vec<PathBuf> = Vec::new();
        if let Some(path) = std::env::var_os("PATH") {
            let entries = std::env::split_paths(&path).filter(|p| p.is_absolute());
            toolchains.extend(entries.map(|p| tool_root(&p, home.as_deref())));
        }
        let cargo_home = env_path("CARGO_HOME").or_else(|| home.as_ref().map(|h| h.join(".cargo")));
        let rustup_home =
            env_path("RUSTUP_HOME").or_else(|| home.as_ref().map(|h| h.join(".rustup")));
        toolchains.extend(cargo_home.clone());
        toolchains.extend(rustup_home);
        toolchains.extend(extra.iter().cloned());
        View::build(home, &toolchains, cargo_home.as_deref(), secrets)
    }

    fn build(
        home: Option<PathBuf>,
        toolchains: &[PathBuf],
        cargo_home: Option<&Path>,
        secrets: &[PathBuf],
    ) -> View {
        let mut shown = Vec::new();
        let mut folders: Vec<PathBuf> = Vec::new();
        for name in SYSTEM {
            let path = Path::new(name);
            match std::fs::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(path) {
                        shown.push(Shown::Link {
                            link: path.to_path_buf(),
                            target,
                        });
                    }
                }
                Ok(meta) if meta.is_dir() => {
                    shown.push(Shown::Folder(path.to_path_buf()));
                    folders.push(path.to_path_buf());
                }
                _ => {}
            }
        }
        for dir in toolchains {
            let Ok(dir) = dir.canonicalize() else {
                continue;
            };
            let already = folders.iter().any(|f| dir.starts_with(f));
            // A folder inside one of evo's secrets (the repository's own `scripts/` on the PATH)
            // is never shown, nor the whole file system; a secret inside a shown toolchain is
            // covered below.
            let in_secret = secrets.iter().any(|s| dir.starts_with(s));
            let whole_home = home.as_deref() == Some(dir.as_path());
            if already || in_secret || whole_home || dir.parent().is_none() || !dir.is_dir() {
                continue;
            }
            folders.push(dir.clone());
            shown.push(Shown::Folder(dir));
        }
        let mut covered = unreadable_to_others(Path::new("/etc"));
        if let Some(cargo) = cargo_home {
            for name in TOOLCHAIN_SECRETS {
                let file = cargo.join(name);
                if file.exists() {
                    covered.push(Covered::File(file));
                }
            }
        }
        for secret in secrets {
            if folders.iter().any(|f| secret.starts_with(f)) && secret.exists() {
                covered.push(Covered::of(secret));
            }
        }
        View {
            home,
            shown,
            covered,
            secrets: secrets.to_vec(),
        }
    }

    /// The secrets that lie inside `dir` (a folder a run binds), to be covered after it, named
    /// under `dir` as written. The secrets are canonical, so they are looked for under `dir`'s
    /// canonical form: a folder declared as `../data` or through a link still has them covered.
    pub fn secrets_inside(&self, dir: &Path) -> Vec<Covered> {
        let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        (self.secrets.iter())
            .filter(|s| s.exists())
            .filter_map(|s| {
                let inside = s.strip_prefix(&real).ok()?;
                Some(Covered::of_at(s, dir.join(inside)))
            })
            .collect()
    }
}

/// The folder to show for a `PATH` entry: inside the home, the whole tool folder it belongs to
/// (`~/.pyenv` for `~/.pyenv/shims`: a shim runs the tool's own scripts and its interpreters, and
/// a virtualenv's `python` links into it); elsewhere the entry itself.
fn tool_root(entry: &Path, home: Option<&Path>) -> PathBuf {
    let Some(home) = home else {
        return entry.to_path_buf();
    };
    match entry
        .strip_prefix(home)
        .ok()
        .and_then(|rest| rest.components().next())
    {
        // `~/.local` also holds other programs' data (and evo's state): only the entry.
        Some(first) if first.as_os_str() != ".local" => home.join(first),
        _ => entry.to_path_buf(),
    }
}

/// Files and folders under `root` that other users of the host may not read (what a process
/// without the owner's rights could not see): covered in the sandbox, where the command runs as
/// the owner. Does not follow links; does not descend into what it covers.
fn unreadable_to_others(root: &Path) -> Vec<Covered> {
    let mut covered = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
            let path = entry.path();
            if meta.is_dir() {
                if mode & 0o005 != 0o005 {
                    covered.push(Covered::Folder(path));
                } else {
                    pending.push(path);
                }
            } else if meta.is_file() && mode & 0o004 == 0 {
                covered.push(Covered::File(path));
            }
        }
    }
    covered.sort_by(|a, b| a.path().cmp(b.path()));
    covered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toolchain_folder_holding_a_secret_is_not_shown() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let scripts = repo.join("scripts");
        std::fs::create_dir_all(&scripts).unwrap();
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        let view = View::build(
            None,
            &[scripts, tools.clone()],
            None,
            std::slice::from_ref(&repo),
        );
        let folders: Vec<&PathBuf> = view
            .shown
            .iter()
            .filter_map(|s| match s {
                Shown::Folder(p) => Some(p),
                Shown::Link { .. } => None,
            })
            .collect();
        assert!(
            folders.contains(&&tools.canonicalize().unwrap()),
            "{folders:?}"
        );
        assert!(!folders.iter().any(|f| f.starts_with(&repo)), "{folders:?}");
    }

    #[test]
    fn secrets_inside_a_shown_folder_and_cargo_credentials_are_covered() {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(tools.join("keys")).unwrap();
        std::fs::write(tools.join("credentials.toml"), "token").unwrap();
        let tools = tools.canonicalize().unwrap();
        let key_dir = tools.join("keys");
        let view = View::build(
            None,
            std::slice::from_ref(&tools),
            Some(&tools),
            std::slice::from_ref(&key_dir),
        );
        assert!(view.covered.contains(&Covered::Folder(key_dir.clone())));
        assert!(
            view.covered
                .contains(&Covered::File(tools.join("credentials.toml")))
        );
        assert_eq!(view.secrets_inside(&tools), vec![Covered::Folder(key_dir)]);
    }

    #[test]
    fn a_secret_inside_a_read_only_folder_declared_with_dot_dot_is_covered() {
        // `sandbox.read_only: ["../data"]` is bound as `<campaign dir>/../data`; the secrets are
        // canonical. Compared as written, a holdout file or request inside was left visible.
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("camp")).unwrap();
        std::fs::create_dir_all(top.join("data/jobs")).unwrap();
        std::fs::write(top.join("data/holdouts.json"), "{}").unwrap();
        let secrets = [top.join("data/jobs"), top.join("data/holdouts.json")];
        let view = View::build(None, &[], None, &secrets);
        let declared = top.join("camp/../data");
        assert_eq!(
            view.secrets_inside(&declared),
            vec![
                Covered::Folder(declared.join("jobs")),
                Covered::File(declared.join("holdouts.json"))
            ]
        );
    }

    #[test]
    fn a_path_entry_in_the_home_shows_its_whole_tool_folder() {
        let home = Path::new("/home/u");
        assert_eq!(
            tool_root(Path::new("/home/u/.pyenv/shims"), Some(home)),
            Path::new("/home/u/.pyenv")
        );
        assert_eq!(
            tool_root(Path::new("/usr/local/bin"), Some(home)),
            Path::new("/usr/local/bin")
        );
        assert_eq!(
            tool_root(Path::new("/home/u/.local/bin"), Some(home)),
            Path::new("/home/u/.local/bin")
        );
    }

    #[test]
    fn files_other_users_cannot_read_are_found() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        let private = dir.path().join("private.key");
        let closed = dir.path().join("closed");
        std::fs::write(&open, "x").unwrap();
        std::fs::write(&private, "x").unwrap();
        std::fs::create_dir(&closed).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        let covered = unreadable_to_others(dir.path());
        assert_eq!(
            covered,
            vec![Covered::Folder(closed), Covered::File(private)]
        );
    }
}
