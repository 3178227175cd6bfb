//! Safety checks before applying: every way a patch could leave its tree, touch git metadata or
//! protected files, or write through a symlink is refused with the path and the reason; an
//! ordinary patch passes.

use crate::util::tree_common;

use evo::tree::{PatchError, Refusal, check_patch_safety, inspect_patch};
use tree_common::{Fixture, commit_all, fixture_from, patch_of, repo_with, symlink};

fn fixture() -> Fixture {
    let repo = repo_with(&[
        ("src/main.c", "int main(void) { return 0; }\n"),
        ("bench/run.sh", "#!/bin/sh\n"),
        ("tests/t.c", "test\n"),
        ("workload.json", "{}\n"),
    ]);
    symlink(repo.path(), "etc_link", "/etc");
    symlink(repo.path(), "src_link", "src");
    commit_all(repo.path(), "links");
    fixture_from(repo)
}

fn protected() -> Vec<String> {
    ["bench/**", "tests/**", "workload.json"]
        .map(String::from)
        .to_vec()
}

fn new_file(path: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..257cc56\n\
         --- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+foo\n"
    )
}

fn edit_file(path: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n\
         --- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{{}}\n+{{\"x\": 1}}\n"
    )
}

fn new_link(path: &str, target: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..1111111\n\
         --- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )
}

/// The refusal for `patch`, checked to name `path` in its message.
fn refusal(fx: &Fixture, patch: &str, path: &str) -> Refusal {
    let summary = inspect_patch(patch.as_bytes()).expect("inspect");
    let err = check_patch_safety(&summary, &fx.tree, &protected()).expect_err(patch);
    let message = err.to_string();
    assert!(message.contains(&format!("`{path}`")), "{message}");
    match err {
        PatchError::Refused {
            path: named,
            reason,
        } => {
            assert_eq!(named, path);
            assert!(message.contains(&reason.to_string()));
            reason
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn paths_leaving_the_tree_or_touching_git_metadata_are_refused() {
    let fx = fixture();
    assert_eq!(
        refusal(&fx, &new_file("../outside.txt"), "../outside.txt"),
        Refusal::ParentDir
    );
    assert_eq!(
        refusal(&fx, &new_file("src/../../x"), "src/../../x"),
        Refusal::ParentDir
    );
    assert_eq!(
        refusal(
            &fx,
            &new_file(".git/hooks/post-checkout"),
            ".git/hooks/post-checkout"
        ),
        Refusal::GitDir
    );
    assert_eq!(
        refusal(&fx, &new_file("src/.GIT/config"), "src/.GIT/config"),
        Refusal::GitDir
    );
    let absolute = new_file("/tmp/evo-absolute");
    assert_eq!(
        refusal(&fx, &absolute, "/tmp/evo-absolute"),
        Refusal::Absolute
    );
}

#[test]
fn protected_paths_are_refused_by_old_and_new_name() {
    let fx = fixture();
    let message = |path: &str, pattern: &str| {
        (
            path.to_string(),
            Refusal::Protected {
                pattern: pattern.into(),
            },
        )
    };
    let edit = patch_of(&[("bench/run.sh", "#!/bin/sh\n")], |dir| {
        tree_common::write(dir, "bench/run.sh", "#!/bin/sh\nexit 0\n")
    });
    let rename_into = patch_of(&[("src/main.c", "a\nb\nc\n")], |dir| {
        std::fs::create_dir_all(dir.join("tests")).expect("mkdir");
        std::fs::rename(dir.join("src/main.c"), dir.join("tests/main.c")).expect("mv");
    });
    let rename_out = patch_of(&[("tests/t.c", "a\nb\nc\n")], |dir| {
        std::fs::rename(dir.join("tests/t.c"), dir.join("t.c")).expect("mv")
    });
    let cases = [
        (
            String::from_utf8_lossy(&edit).into_owned(),
            message("bench/run.sh", "bench/**"),
        ),
        (
            edit_file("workload.json"),
            message("workload.json", "workload.json"),
        ),
        (
            String::from_utf8_lossy(&rename_into).into_owned(),
            message("tests/main.c", "tests/**"),
        ),
        (
            String::from_utf8_lossy(&rename_out).into_owned(),
            message("tests/t.c", "tests/**"),
        ),
    ];
    for (patch, (path, expected)) in cases {
        assert_eq!(refusal(&fx, &patch, &path), expected, "{patch}");
    }
}

#[test]
fn writing_through_a_symlink_of_the_tree_is_refused() {
    let fx = fixture();
    let link = |l: &str| Refusal::ThroughTreeSymlink { link: l.into() };
    assert_eq!(
        refusal(&fx, &new_file("etc_link/passwd"), "etc_link/passwd"),
        link("etc_link")
    );
    assert_eq!(
        refusal(&fx, &new_file("src_link/x.c"), "src_link/x.c"),
        link("src_link")
    );
    let as_file = "diff --git a/etc_link b/etc_link\nindex 1111111..2222222 100644\n\
                   --- a/etc_link\n+++ b/etc_link\n@@ -1 +1 @@\n-/etc\n+/etc2\n";
    assert_eq!(refusal(&fx, as_file, "etc_link"), link("etc_link"));
}

#[test]
fn a_symlink_the_patch_creates_cannot_be_written_through_or_point_outside() {
    let fx = fixture();
    let through = new_link("ln", "src") + &new_file("ln/evil.c");
    assert_eq!(
        refusal(&fx, &through, "ln/evil.c"),
        Refusal::ThroughNewSymlink { link: "ln".into() }
    );

    let target = |t: &str| t.to_string();
    let cases = [
        (
            "ln",
            "/etc/passwd",
            Refusal::AbsoluteSymlink {
                target: target("/etc/passwd"),
            },
        ),
        (
            "src/ln",
            "../../x",
            Refusal::EscapingSymlink {
                target: target("../../x"),
            },
        ),
        (
            "ln",
            "src/../..",
            Refusal::EscapingSymlink {
                target: target("src/../.."),
            },
        ),
        (
            "ln",
            "etc_link",
            Refusal::EscapingSymlink {
                target: target("etc_link"),
            },
        ),
        (
            "ln",
            "src_link/../..",
            Refusal::EscapingSymlink {
                target: target("src_link/../.."),
            },
        ),
        (
            "ln",
            ".git/config",
            Refusal::SymlinkIntoGitDir {
                target: target(".git/config"),
            },
        ),
    ];
    for (path, link_target, expected) in cases {
        assert_eq!(
            refusal(&fx, &new_link(path, link_target), path),
            expected,
            "{path} -> {link_target}"
        );
    }
}

#[test]
fn an_ordinary_patch_passes() {
    let fx = fixture();
    let patch = patch_of(&[("src/main.c", "int main(void) { return 0; }\n")], |dir| {
        tree_common::write(dir, "src/main.c", "int main(void) { return 1; }\n");
        tree_common::write(dir, "docs/new.md", "# new\n");
        symlink(dir, "src/alias.c", "main.c");
        symlink(dir, "up", "src/../src/main.c");
        symlink(dir, "via_link", "src_link/main.c");
    });
    let summary = inspect_patch(&patch).expect("inspect");
    check_patch_safety(&summary, &fx.tree, &protected()).expect("safe");
    check_patch_safety(&summary, &fx.tree, &["**/*.md".to_string()]).expect_err("md protected");
}

#[test]
fn an_invalid_protected_glob_is_named() {
    let fx = fixture();
    let summary = inspect_patch(new_file("a.txt").as_bytes()).expect("inspect");
    let err = check_patch_safety(&summary, &fx.tree, &["src/[".to_string()]).expect_err("bad glob");
    assert!(err.to_string().contains("`src/[`"), "{err}");
}

#[test]
fn hunk_lines_that_look_like_file_headers_are_not_paths() {
    let fx = fixture();
    let before = "select 1;\n-- /etc/passwd\n-- ../../x\nselect 2;\n";
    let patch = patch_of(&[("q.sql", before)], |dir| {
        tree_common::write(dir, "q.sql", "select 1;\n++ /abs\n++ .git/x\nselect 2;\n")
    });
    let text = String::from_utf8_lossy(&patch);
    assert!(
        text.contains("\n--- /etc/passwd\n") && text.contains("\n+++ /abs\n"),
        "{text}"
    );
    let summary = inspect_patch(&patch).expect("inspect");
    assert_eq!(summary.header_paths, ["q.sql"]);
    check_patch_safety(&summary, &fx.tree, &protected()).expect("a SQL comment is not a path");
}

// Files a build tool reads by itself (review #25.3).

fn places<'a>(
    cwds: &'a [Option<String>],
    config_files: &'a [String],
) -> evo::tree::BuildPlaces<'a> {
    static PROTECTED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    evo::tree::BuildPlaces {
        cwds,
        protected: PROTECTED.get_or_init(protected),
        config_files,
    }
}

fn build_file_refusal(fx: &Fixture, patch: &str, cwds: &[Option<String>]) -> Option<Refusal> {
    let summary = inspect_patch(patch.as_bytes()).expect("inspect");
    check_patch_safety(&summary, &fx.tree, &protected()).expect("safe by path");
    match evo::tree::check_build_files(&summary, &fx.tree, places(cwds, &[])) {
        Ok(()) => None,
        Err(PatchError::Refused { reason, .. }) => Some(reason),
        Err(other) => panic!("expected a refusal, got {other:?}"),
    }
}

/// The review's cheat: only a `GNUmakefile` added beside the declared `Makefile`, which make
/// reads first; no protected path is in the patch. Its siblings in the class: a CMake list and a
/// Cargo configuration above the folder the build runs in.
#[test]
fn a_new_file_a_build_tool_reads_by_itself_is_refused_near_where_the_workload_runs() {
    let fx = fixture();
    let root = [None];
    let src = [Some("src".to_string())];
    for (patch, cwds, tool) in [
        (new_file("GNUmakefile"), &root[..], "make"),
        (new_file("src/CMakeLists.txt"), &src[..], "CMake"),
        // Cargo reads `.cargo/config.toml` in every folder above the one it runs in.
        (new_file(".cargo/config.toml"), &src[..], "Cargo"),
        // Below where the build runs: a recursive make or a workspace glob picks it up.
        (new_file("src/sub/Makefile"), &src[..], "make"),
        // valgrind reads `./.valgrindrc` where the counted run starts.
        (new_file("src/.valgrindrc"), &src[..], "valgrind"),
        // Above protected tests, however far from the build: pytest reads it for them.
        (new_file("conftest.py"), &src[..], "pytest"),
    ] {
        let reason = build_file_refusal(&fx, &patch, cwds).unwrap_or_else(|| panic!("{patch}"));
        match &reason {
            Refusal::ImplicitBuildFile { tool: named, .. } => assert_eq!(named, tool),
            other => panic!("{other:?}"),
        }
        assert!(reason.to_string().contains("config_files"), "{reason}");
    }
}

#[test]
fn build_files_the_baseline_has_or_the_workload_lists_or_far_away_are_not_refused() {
    let fx = fixture();
    let src = [Some("src".to_string())];
    // The tree has no Makefile here, but the workload lists it as configuration.
    let summary = inspect_patch(new_file("src/GNUmakefile").as_bytes()).unwrap();
    let listed = ["src/GNUmakefile".to_string()];
    evo::tree::check_build_files(&summary, &fx.tree, places(&src, &listed)).unwrap();
    // A folder unrelated to every command and protected path.
    assert_eq!(
        build_file_refusal(&fx, &new_file("docs/Makefile"), &src),
        None
    );
    // An ordinary source file.
    assert_eq!(build_file_refusal(&fx, &new_file("src/fast.c"), &src), None);
    // An edit of a file the baseline has (here the workload file itself, not protected in
    // this check) is the project's own configuration, judged by the lanes.
    assert_eq!(
        build_file_refusal(&fx, &edit_file("src/main.c"), &src),
        None
    );
}
