//! Paths as evo prints them: `campaigns/../receipts/x` is shown as `receipts/x`, so a path a user
//! copies from the terminal is the plain one.
//!
//! The tidying is lexical: it never asks the file system, so it works for paths not written yet
//! and does not resolve symbolic links. It is for display only; evo opens the path as given.

use std::path::{Component, Path, PathBuf};

/// `path` without `.` components and with each `name/..` pair removed; `.` when nothing is left.
pub fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(".."),
            },
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// [`normalized`], ready to print.
pub fn shown(path: &Path) -> String {
    normalized(path).display().to_string()
}

/// [`shown`] as one shell word: quoted when it holds anything but plain path characters, so a
/// printed command can be pasted as it is.
pub fn shell_word(path: &Path) -> String {
    let text = shown(path);
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `path` relative to the folder `root` (both tidied by [`normalized`] first); `None` when it is
/// not inside `root`.
pub fn relative_to(path: &Path, root: &Path) -> Option<PathBuf> {
    let inside = normalized(path)
        .strip_prefix(normalized(root))
        .ok()?
        .to_path_buf();
    Some(if inside.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        inside
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_inside_the_repository_is_named_from_its_top_folder() {
        let rel = |p: &str, root: &str| relative_to(Path::new(p), Path::new(root));
        assert_eq!(
            rel("/w/repo/campaigns/c.json", "/w/repo/campaigns/.."),
            Some(PathBuf::from("campaigns/c.json"))
        );
        assert_eq!(rel("/w/repo", "/w/repo/"), Some(PathBuf::from(".")));
        assert_eq!(rel("/w/camp/c.json", "/w/repo"), None);
        // A sibling whose name starts the same is not inside.
        assert_eq!(rel("/w/repo2/c.json", "/w/repo"), None);
    }

    #[test]
    fn a_path_with_spaces_or_quotes_is_one_shell_word() {
        assert_eq!(shell_word(Path::new("/w/./r1/x.json")), "/w/r1/x.json");
        assert_eq!(shell_word(Path::new("/my runs/x")), "'/my runs/x'");
        assert_eq!(shell_word(Path::new("/it's/$x")), r"'/it'\''s/$x'");
    }

    fn n(text: &str) -> String {
        shown(Path::new(text))
    }

    #[test]
    fn a_campaign_output_beside_its_folder_is_shown_without_the_detour() {
        assert_eq!(n("/w/campaigns/../receipts/r1"), "/w/receipts/r1");
        assert_eq!(n("campaigns/c/../../receipts"), "receipts");
        assert_eq!(n("./receipts/./r1/"), "receipts/r1");
    }

    #[test]
    fn what_cannot_be_removed_lexically_is_kept() {
        assert_eq!(n("../receipts"), "../receipts");
        assert_eq!(n("a/../../b"), "../b");
        assert_eq!(n("/.."), "/");
        assert_eq!(n("."), ".");
        assert_eq!(n("a/.."), ".");
    }
}
