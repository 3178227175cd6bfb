//! Reading a patch into a summary: kinds, modes, binary content, line counts and symlink
//! targets, plus the refusals of patches that cannot be read at all.

use crate::util::tree_common;

use evo::tree::{ChangeKind, Content, FileMode, MAX_PATCH_BYTES, PatchError, inspect_patch};
use tree_common::{patch_of, set_mode, symlink, write};

const BASE: &[(&str, &str)] = &[
    ("src/a.c", "one\ntwo\nthree\n"),
    ("old_name.txt", "keep me\nas I am\nplease\n"),
    ("gone.txt", "bye\n"),
    ("run.sh", "#!/bin/sh\n"),
];

#[test]
fn a_mixed_patch_is_summarized_file_by_file() {
    let patch = patch_of(BASE, |dir| {
        write(dir, "src/a.c", "one\n2\n2.5\nthree\n");
        std::fs::rename(dir.join("old_name.txt"), dir.join("new_name.txt")).expect("mv");
        std::fs::remove_file(dir.join("gone.txt")).expect("rm");
        write(dir, "data.bin", [0u8, 159, 146, 150, 0, 1, 2]);
        write(dir, "new.txt", "fresh\nlines\n");
        set_mode(dir, "run.sh", 0o755);
        symlink(dir, "ln", "src/a.c");
    });
    let summary = inspect_patch(&patch).expect("inspect");
    let file = |path: &str| {
        summary
            .files
            .iter()
            .find(|f| f.display_path() == path)
            .unwrap_or_else(|| panic!("{path} missing from {summary:#?}"))
    };

    let a = file("src/a.c");
    assert_eq!(
        (a.kind, a.added_lines, a.removed_lines),
        (ChangeKind::Modified, 2, 1)
    );
    assert_eq!(a.content, Content::Text);
    assert_eq!(a.hunks.len(), 1);
    assert!(
        a.hunks[0].header.starts_with("@@ -1,3 +1,4 @@"),
        "{:?}",
        a.hunks
    );

    let renamed = file("new_name.txt");
    assert_eq!(renamed.kind, ChangeKind::Renamed);
    assert_eq!(renamed.old_path.as_deref(), Some("old_name.txt"));
    assert_eq!((renamed.added_lines, renamed.removed_lines), (0, 0));

    let gone = file("gone.txt");
    assert_eq!(
        (gone.kind, gone.new_path.as_deref()),
        (ChangeKind::Deleted, None)
    );
    assert_eq!((gone.removed_lines, gone.new_mode), (1, FileMode::Absent));

    let bin = file("data.bin");
    assert_eq!(
        (bin.kind, bin.content),
        (ChangeKind::Added, Content::Binary)
    );
    assert_eq!(bin.old_path, None);

    let new = file("new.txt");
    assert_eq!(
        (new.kind, new.added_lines, new.new_mode),
        (ChangeKind::Added, 2, FileMode::Regular)
    );

    let run = file("run.sh");
    assert_eq!(run.kind, ChangeKind::ModeChange);
    assert_eq!(
        (run.old_mode, run.new_mode),
        (FileMode::Regular, FileMode::Executable)
    );

    let ln = file("ln");
    assert_eq!(
        (ln.kind, ln.new_mode),
        (ChangeKind::Added, FileMode::Symlink)
    );
    assert_eq!(ln.symlink_target.as_deref(), Some("src/a.c"));

    assert_eq!(summary.files.len(), 7);
    assert_eq!(summary.added_lines, 2 + 2 + 1);
    assert_eq!(summary.removed_lines, 1 + 1);
}

#[test]
fn binary_files_differ_without_data_is_recognized() {
    let patch = b"diff --git a/x.bin b/x.bin\n\
index 1111111..2222222 100644\n\
Binary files a/x.bin and b/x.bin differ\n";
    let summary = inspect_patch(patch).expect("inspect");
    assert_eq!(summary.files[0].content, Content::BinaryWithoutData);
    assert_eq!(summary.files[0].display_path(), "x.bin");
}

#[test]
fn empty_oversized_and_unreadable_patches_are_refused() {
    assert!(matches!(inspect_patch(b""), Err(PatchError::Empty)));
    assert!(matches!(inspect_patch(b"\n  \n"), Err(PatchError::Empty)));
    assert_eq!(
        inspect_patch(b"").expect_err("empty").to_string(),
        "the patch is empty"
    );

    let mut huge = b"diff --git a/a b/a\n".to_vec();
    huge.resize(MAX_PATCH_BYTES + 1, b'x');
    let err = inspect_patch(&huge).expect_err("too large");
    assert!(matches!(err, PatchError::TooLarge { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&MAX_PATCH_BYTES.to_string()),
        "{err}"
    );

    let err = inspect_patch(b"just some words\n").expect_err("not a diff");
    assert!(
        matches!(err, PatchError::NoFiles | PatchError::Unparsable { .. }),
        "{err:?}"
    );
}

#[test]
fn a_file_mode_git_does_not_use_is_refused_not_a_panic() {
    let patch = b"diff --git a/x b/x\nold mode 100644\nnew mode 100600\n";
    let err = inspect_patch(patch).expect_err("odd mode");
    assert_eq!(
        err.to_string(),
        "the patch sets the unsupported file mode 100600 on line 3"
    );
}

// The applied size (review #26).

/// A binary literal declaring `size` bytes with a few bytes of data: what a 2.6 MB patch that
/// inflates to 2 GiB says in its header (the data is a real patch's, its declared size raised).
fn declaring(size: u64) -> Vec<u8> {
    let bytes = patch_of(&[("keep.txt", "x\n")], |dir| {
        write(dir, "blob.bin", [0u8; 4096]);
    });
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains("literal 4096"), "{text}");
    text.replace("literal 4096", &format!("literal {size}"))
        .into_bytes()
}

#[test]
fn a_binary_patch_declaring_two_gibibytes_is_refused_by_its_declared_size() {
    let fx = tree_common::fixture_from(tree_common::repo_with(&[("keep.txt", "x\n")]));
    let patch = declaring(2 << 30);
    assert!(patch.len() < 4096, "the patch itself is small");
    let summary = inspect_patch(&patch).unwrap();
    assert_eq!(
        summary.files[0].binary_size,
        Some(evo::tree::BinarySize::Literal(2 << 30))
    );
    let cap = evo::tree::DEFAULT_MAX_APPLIED_BYTES;
    let err = evo::tree::check_applied_size(&summary, &fx.tree, cap).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("2147483648 bytes"), "{message}");
    assert!(message.contains("`blob.bin`"), "{message}");
    assert!(message.contains("max_applied_bytes"), "{message}");
    // The real size passes, and is what is counted.
    let small = inspect_patch(&declaring(4096)).unwrap();
    assert_eq!(
        evo::tree::check_applied_size(&small, &fx.tree, cap).unwrap(),
        4096
    );
}

/// Copying a large file of the tree writes it again: the copy counts at the copied file's size.
#[test]
fn a_copy_counts_the_copied_file_and_text_counts_its_added_lines() {
    let big = "y".repeat(10_000) + "\n";
    let fx = tree_common::fixture_from(tree_common::repo_with(&[("big.txt", &big)]));
    let copy = "diff --git a/big.txt b/copy.txt\nsimilarity index 100%\ncopy from big.txt\n\
                copy to copy.txt\n";
    let summary = inspect_patch(copy.as_bytes()).unwrap();
    let size = evo::tree::applied_size(&summary, &fx.tree).unwrap();
    assert_eq!(size.bytes, 10_001);
    assert!(evo::tree::check_applied_size(&summary, &fx.tree, 10_000).is_err());
    let text = patch_of(&[("a.txt", "1\n")], |dir| {
        write(dir, "a.txt", "1\n22\n333\n")
    });
    let summary = inspect_patch(&text).unwrap();
    assert_eq!(
        evo::tree::applied_size(&summary, &fx.tree).unwrap().bytes,
        7
    );
}
