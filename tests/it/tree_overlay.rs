//! Overlaying harness files: where each one lands, its digest, that it stays out of candidates'
//! diffs, and the refusals (different content already there, two files on one path).

use crate::util::tree_common;

use std::fs;
use std::path::PathBuf;

use evo::tree::{TreeError, copy_overlay, digest_file};
use sha2::{Digest, Sha256};
use tempfile::TempDir;
use tree_common::{fixture, git, is_executable, read, set_mode, write};

fn sha(content: &str) -> String {
    hex::encode(Sha256::digest(content.as_bytes()))
}

#[test]
fn digest_file_is_the_sha256_of_the_content() {
    let dir = TempDir::new().expect("tempdir");
    write(dir.path(), "abc", "abc");
    assert_eq!(
        digest_file(&dir.path().join("abc")).expect("digest"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert!(digest_file(&dir.path().join("missing")).is_err());
}

#[test]
fn files_keep_their_path_under_base_dir_or_land_at_the_root_by_name() {
    let fx = fixture(&[("src/a.c", "a\n")]);
    let outside = TempDir::new().expect("tempdir");
    let base = outside.path().join("campaign");
    write(&base, "bench/main.c", "int bench;\n");
    write(outside.path(), "harness/run.sh", "#!/bin/sh\n");
    set_mode(outside.path(), "harness/run.sh", 0o755);
    let elsewhere = TempDir::new().expect("tempdir");
    write(elsewhere.path(), "cfg.txt", "cfg\n");
    let files = [
        PathBuf::from("bench/main.c"),
        PathBuf::from("../harness/run.sh"),
        elsewhere.path().join("cfg.txt"),
    ];

    let copied = copy_overlay(&files, &fx.tree, &base).expect("overlay");
    let placed: Vec<(String, String)> = copied
        .iter()
        .map(|f| (f.dest_rel.display().to_string(), f.sha256.clone()))
        .collect();
    assert_eq!(
        placed,
        [
            ("bench/main.c".to_string(), sha("int bench;\n")),
            ("run.sh".to_string(), sha("#!/bin/sh\n")),
            ("cfg.txt".to_string(), sha("cfg\n")),
        ]
    );
    assert_eq!(copied[1].source, outside.path().join("harness/run.sh"));
    assert_eq!(read(&fx.tree.root, "bench/main.c"), "int bench;\n");
    assert!(is_executable(&fx.tree.root, "run.sh"));
    git(&fx.tree.root, &["add", "-A"]);
    assert_eq!(
        git(&fx.tree.root, &["status", "--porcelain"]),
        "",
        "overlay files are excluded"
    );
}

#[test]
fn an_identical_file_is_accepted_and_a_different_one_refused() {
    let fx = fixture(&[("bench/main.c", "same\n")]);
    let base = TempDir::new().expect("tempdir");
    write(base.path(), "bench/main.c", "same\n");
    let same = copy_overlay(&[PathBuf::from("bench/main.c")], &fx.tree, base.path()).expect("same");
    assert_eq!(same[0].sha256, sha("same\n"));

    write(base.path(), "bench/main.c", "different\n");
    let err = copy_overlay(&[PathBuf::from("bench/main.c")], &fx.tree, base.path())
        .expect_err("different content");
    assert!(matches!(err, TreeError::Overlay { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("bench/main.c") && message.contains("other content"),
        "{message}"
    );
    assert_eq!(read(&fx.tree.root, "bench/main.c"), "same\n");
}

#[test]
fn two_files_on_one_path_and_a_missing_file_are_refused() {
    let fx = fixture(&[("a.txt", "a\n")]);
    let base = TempDir::new().expect("tempdir");
    let other = TempDir::new().expect("tempdir");
    write(base.path(), "x.c", "1\n");
    write(other.path(), "x.c", "2\n");
    let twice = [PathBuf::from("x.c"), other.path().join("x.c")];
    let err = copy_overlay(&twice, &fx.tree, base.path()).expect_err("same destination");
    assert!(err.to_string().contains("would land on `x.c`"), "{err}");

    let err = copy_overlay(&[PathBuf::from("nope.c")], &fx.tree, base.path()).expect_err("missing");
    assert!(err.to_string().contains("nope.c"), "{err}");
    assert!(!fx.tree.root.join("nope.c").exists());
    assert!(
        fs::symlink_metadata(fx.tree.root.join("x.c")).is_ok(),
        "the first one was copied"
    );
}

#[test]
fn a_build_artifact_is_digested_only_as_a_regular_file_inside_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(root.join("bin/prog"), b"binary").unwrap();
    assert_eq!(
        evo::tree::digest_tree_file(&root, &root.join("bin/prog")).unwrap(),
        evo::tree::digest_file(&root.join("bin/prog")).unwrap()
    );
    // A link to a secret outside the tree, a link to an endless device, a FIFO no one writes:
    // each is refused without being read (the FIFO would block for ever).
    let secret = dir.path().join("signing.key");
    std::fs::write(&secret, b"secret").unwrap();
    std::os::unix::fs::symlink(&secret, root.join("bin/outside")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("bin/zero")).unwrap();
    let fifo = root.join("bin/fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for name in ["outside", "zero", "fifo"] {
        let path = root.join("bin").join(name);
        assert!(
            evo::tree::digest_tree_file(&root, &path).is_err(),
            "{name} was digested"
        );
    }
}
