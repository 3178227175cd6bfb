//! Applying patches: libgit2 first, `git apply` for hunks whose line numbers are off, every kind
//! of change giving the expected files, and failures that name the file and hunk and leave the
//! tree untouched.

use crate::util::tree_common;

use std::fs;

use evo::tree::{Applier, PatchError, apply_patch};
use tree_common::{edited, fixture, git, is_executable, read, set_mode, snapshot, symlink, write};

fn numbered(from: usize, to: usize) -> String {
    (from..=to).map(|n| format!("line {n}\n")).collect()
}

#[test]
fn a_plain_patch_applies_with_libgit2() {
    let base = numbered(1, 10);
    let (_, patch) = edited(&[("src/a.c", &base)], |dir| {
        write(dir, "src/a.c", base.replace("line 5\n", "line five\n"))
    });
    let fx = fixture(&[("src/a.c", &base)]);
    let applied = apply_patch(&fx.tree, &patch).expect("applies");
    assert_eq!(applied.applier, Applier::Libgit2);
    assert_eq!(applied.note, None);
    assert_eq!(
        read(&fx.tree.root, "src/a.c"),
        base.replace("line 5\n", "line five\n")
    );
    assert_eq!(git(&fx.tree.root, &["status", "--porcelain"]), "M src/a.c");
}

#[test]
fn hunks_shifted_by_inserted_lines_apply_with_git_apply() {
    let preimage = numbered(1, 20);
    let (_, patch) = edited(&[("src/a.c", &preimage)], |dir| {
        write(
            dir,
            "src/a.c",
            preimage.replace("line 12\n", "line twelve\n"),
        )
    });
    let baseline = format!("new 1\nnew 2\nnew 3\n{preimage}");
    let fx = fixture(&[("src/a.c", &baseline)]);
    let applied = apply_patch(&fx.tree, &patch).expect("applies with an offset");
    assert_eq!(applied.applier, Applier::GitCli);
    let note = applied.note.expect("a note");
    assert!(note.contains("offset 3 lines"), "{note}");
    assert_eq!(
        read(&fx.tree.root, "src/a.c"),
        baseline.replace("line 12\n", "line twelve\n")
    );
}

#[test]
fn binary_rename_new_deleted_mode_and_symlink_changes_give_the_expected_files() {
    let base: &[(&str, &str)] = &[
        ("img.bin", "\u{0}\u{1}\u{2}binary\u{0}"),
        (
            "old/name.txt",
            "stays the same\nacross the rename\nthree\nfour\n",
        ),
        ("gone.txt", "to delete\n"),
        ("run.sh", "#!/bin/sh\necho hi\n"),
    ];
    let (after, patch) = edited(base, |dir| {
        write(dir, "img.bin", [0u8, 255, 254, 0, 7, 7, 7]);
        write(dir, "new.bin", [0u8, 1, 0, 1]);
        fs::create_dir_all(dir.join("new")).expect("mkdir");
        fs::rename(dir.join("old/name.txt"), dir.join("new/name.txt")).expect("mv");
        fs::remove_dir(dir.join("old")).expect("rmdir, as git does for an emptied directory");
        fs::remove_file(dir.join("gone.txt")).expect("rm");
        write(dir, "fresh.txt", "brand new\n");
        set_mode(dir, "run.sh", 0o755);
        symlink(dir, "ln", "fresh.txt");
    });
    let text = String::from_utf8_lossy(&patch);
    assert!(
        text.contains("GIT binary patch") && text.contains("rename from"),
        "{text}"
    );
    let fx = fixture(base);
    let applied = apply_patch(&fx.tree, &patch).expect("applies");
    assert_eq!(applied.applier, Applier::Libgit2);
    assert_eq!(
        snapshot(&fx.tree.root, false),
        snapshot(after.path(), false)
    );
    assert!(is_executable(&fx.tree.root, "run.sh"));
    assert_eq!(
        fs::read_link(fx.tree.root.join("ln")).expect("link"),
        fs::read_link(after.path().join("ln")).expect("link")
    );
}

#[test]
fn a_hunk_whose_context_does_not_match_is_named_and_nothing_changes() {
    let base = numbered(1, 40);
    let (_, patch) = edited(&[("src/a.c", &base)], |dir| {
        let edited = base
            .replace("line 3\n", "line three\n")
            .replace("line 30\n", "line thirty\n");
        write(dir, "src/a.c", edited)
    });
    let drifted = base
        .replace("line 29\n", "line 29 changed\n")
        .replace("line 31\n", "x\n");
    let fx = fixture(&[("src/a.c", &drifted)]);
    let before = snapshot(&fx.tree.root, true);
    let err = apply_patch(&fx.tree, &patch).expect_err("context differs");
    match &err {
        PatchError::DoesNotApply { file, hunk, detail } => {
            assert_eq!(file, "src/a.c");
            assert_eq!(
                hunk.as_deref().map(|h| h.split(" @@").next()),
                Some(Some("@@ -27,7 +27,7"))
            );
            assert!(detail.contains("patch failed: src/a.c:27"), "{detail}");
        }
        other => panic!("expected DoesNotApply, got {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("`src/a.c` at hunk `@@ -27,7 +27,7 @@"),
        "{err}"
    );
    assert_eq!(
        snapshot(&fx.tree.root, true),
        before,
        "the first hunk must not be left applied"
    );
}

#[test]
fn a_new_file_that_already_exists_is_named() {
    let (_, patch) = edited(&[("a.txt", "a\n")], |dir| write(dir, "b.txt", "b\n"));
    let fx = fixture(&[("a.txt", "a\n"), ("b.txt", "other\n")]);
    let err = apply_patch(&fx.tree, &patch).expect_err("exists");
    assert!(
        matches!(&err, PatchError::DoesNotApply { file, .. } if file == "b.txt"),
        "{err:?}"
    );
    assert_eq!(read(&fx.tree.root, "b.txt"), "other\n");
}

#[test]
fn binary_files_differ_without_data_cannot_apply() {
    let (_, with_data) = edited(&[("x.bin", "\u{0}old")], |dir| {
        write(dir, "x.bin", [0u8, 9, 9])
    });
    let text = String::from_utf8_lossy(&with_data);
    let header_end = text.find("GIT binary patch").expect("binary patch");
    let no_data = format!(
        "{}Binary files a/x.bin and b/x.bin differ\n",
        &text[..header_end]
    );
    let fx = fixture(&[("x.bin", "\u{0}old")]);
    let err = apply_patch(&fx.tree, no_data.as_bytes()).expect_err("no data");
    assert!(
        matches!(&err, PatchError::BinaryWithoutData { file } if file == "x.bin"),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("\"Binary files differ\"") && message.contains("--binary"),
        "{message}"
    );
    assert_eq!(read(&fx.tree.root, "x.bin"), "\u{0}old");
}

#[test]
fn a_plain_diff_smuggled_after_the_git_sections_is_refused() {
    let preimage = numbered(1, 20);
    let (_, patch) = edited(&[("a.txt", &preimage)], |dir| {
        write(dir, "a.txt", preimage.replace("line 12\n", "line twelve\n"))
    });
    // Shifted, so libgit2 fails and the fallback runs; then a plain unified diff for another file.
    let smuggled = format!(
        "{}--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+smuggled\n",
        String::from_utf8_lossy(&patch)
    );
    let fx = fixture(&[("a.txt", &format!("new\n{preimage}")), ("b.txt", "b\n")]);
    let before = snapshot(&fx.tree.root, false);
    let result = apply_patch(&fx.tree, smuggled.as_bytes());
    assert_eq!(read(&fx.tree.root, "b.txt"), "b\n", "{result:?}");
    // libgit2 refuses to read it; were it to skip the tail, the `git apply --numstat` cross-check
    // would refuse it naming `b.txt`.
    let err = result.expect_err("ambiguous");
    assert!(matches!(err, PatchError::Unparsable { .. }), "{err:?}");
    assert_eq!(snapshot(&fx.tree.root, false), before);
}
