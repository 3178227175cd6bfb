//! Tests of the protected-file record: every way a step could change a protected path is seen.

use std::path::Path;

use super::*;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for folder in ["w/bench", "w/src", ".git"] {
        fs::create_dir_all(root.join(folder)).unwrap();
    }
    fs::write(root.join("w/bench/main.c"), "int main;").unwrap();
    fs::write(root.join("w/run.sh"), "#!/bin/sh").unwrap();
    fs::write(root.join("w/src/lib.c"), "int f;").unwrap();
    fs::write(root.join(".git/HEAD"), "ref").unwrap();
    dir
}

fn globs() -> Vec<String> {
    ["w/bench/**", "w/run.sh", "**/*.lock"]
        .iter()
        .map(|g| g.to_string())
        .collect()
}

/// An edit of a tree a step could make.
type Edit = Box<dyn FnOnce(&Path)>;

fn change_after(edit: impl FnOnce(&Path)) -> Option<ProtectedChange> {
    let dir = tree();
    let before = record_protected(dir.path(), &globs()).unwrap();
    edit(dir.path());
    before.changed_in(dir.path()).unwrap()
}

#[test]
fn an_untouched_tree_and_unprotected_edits_are_no_change() {
    assert_eq!(change_after(|_| {}), None);
    let edit = |root: &Path| {
        fs::write(root.join("w/src/lib.c"), "changed").unwrap();
        fs::write(root.join("w/new.o"), "built").unwrap();
        fs::write(root.join(".git/HEAD"), "moved").unwrap();
    };
    assert_eq!(change_after(edit), None);
}

#[test]
fn every_way_of_changing_a_protected_path_is_named() {
    let main = || PathBuf::from("w/bench/main.c");
    let cases: Vec<(Edit, ProtectedChange)> = vec![
        (
            Box::new(|r| fs::write(r.join("w/bench/main.c"), "int main = 1;").unwrap()),
            ProtectedChange::Changed(main()),
        ),
        (
            Box::new(|r| {
                let file = r.join("w/run.sh");
                fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
            }),
            ProtectedChange::Changed("w/run.sh".into()),
        ),
        (
            Box::new(|r| fs::remove_file(r.join("w/bench/main.c")).unwrap()),
            ProtectedChange::Deleted(main()),
        ),
        (
            Box::new(|r| fs::write(r.join("w/bench/extra.h"), "").unwrap()),
            ProtectedChange::Added("w/bench/extra.h".into()),
        ),
        (
            Box::new(|r| fs::write(r.join("w/src/Cargo.lock"), "").unwrap()),
            ProtectedChange::Added("w/src/Cargo.lock".into()),
        ),
        (
            // The folder renamed away and a look-alike made in its place, through a link.
            Box::new(|r| {
                fs::rename(r.join("w/bench"), r.join("w/old")).unwrap();
                fs::create_dir(r.join("w/copy")).unwrap();
                fs::write(r.join("w/copy/main.c"), "int main = 2;").unwrap();
                std::os::unix::fs::symlink("copy", r.join("w/bench")).unwrap();
            }),
            ProtectedChange::Deleted(main()),
        ),
        (
            Box::new(|r| {
                fs::remove_file(r.join("w/run.sh")).unwrap();
                std::os::unix::fs::symlink("src/lib.c", r.join("w/run.sh")).unwrap();
            }),
            ProtectedChange::Changed("w/run.sh".into()),
        ),
    ];
    for (edit, want) in cases {
        assert_eq!(change_after(edit), Some(want.clone()), "{want:?}");
    }
}

#[test]
fn the_change_reads_as_a_sentence() {
    let c = ProtectedChange::Changed("workload/bench/main.c".into());
    assert_eq!(
        c.describe("the build"),
        "the build changed protected file workload/bench/main.c"
    );
}

#[test]
fn the_read_only_paths_are_whole_folders_and_files_outside_them() {
    let dir = tree();
    let globs: Vec<String> = ["w/bench/**", "w/bench/main.c", "w/run.sh", "gone/**"]
        .iter()
        .map(|g| g.to_string())
        .collect();
    let p = record_protected(dir.path(), &globs).unwrap();
    let ro = p.read_only();
    assert_eq!(ro.folders, vec![PathBuf::from("w/bench")]);
    assert_eq!(ro.files, vec![PathBuf::from("w/run.sh")]);
    assert_eq!(p.files(), 2);
}

#[test]
fn walk_roots_are_the_literal_folders_of_the_patterns() {
    let globs: Vec<String> = ["a/b/**", "a/b/c/*.h", "x/y.txt", "**/*.lock"]
        .iter()
        .map(|g| g.to_string())
        .collect();
    assert_eq!(walk_roots(&globs), vec![PathBuf::new()]);
    let globs: Vec<String> = ["a/b/**", "a/b/c/*.h", "d/*"]
        .iter()
        .map(|g| g.to_string())
        .collect();
    assert_eq!(
        walk_roots(&globs),
        vec![PathBuf::from("a/b"), PathBuf::from("d")]
    );
    assert_eq!(whole_folder("a/b/**"), Some(PathBuf::from("a/b")));
    assert_eq!(whole_folder("a/*/**"), None);
    assert_eq!(whole_folder("**"), None);
}
