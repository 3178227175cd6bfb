//! `evo init` on the layouts of real open-source projects, each reproduced by a small fixture
//! of our own (tests/fixtures/init-*): the files it writes must carry a patch through `evo
//! confirm` to a verdict on the real build, with tests that compile programs, the artifacts the
//! build makes, a sanitizer lane and build-configuration globs covering every build file.
//!
//! - `init-make-lz4`: an lz4-like C library: a top-level Makefile calling `lib/`, `programs/`
//!   and `tests/` Makefiles, shared settings in `Makefile.inc`, and a `test` target that
//!   compiles test programs and writes data next to them (which a read-only tree refuses).
//! - `init-cmake-deflate`: a libdeflate-like CMake project: a library, a benchmark program and
//!   ctest tests in their own folders, settings in `cmake/*.cmake`.
//! - `init-cargo-workspace`: a virtual workspace with `crates/*` members, a library crate and a
//!   benchmark binary crate whose `[[bin]]` is not named after the package.

use std::path::Path;

use serde_json::Value;

use super::init::{assert_valid_files, cmake_present, confirm_in, init_in};
use crate::util::{self, text, write};

const C_FLAGS: &str = "-g -fsanitize=address,undefined -fno-sanitize-recover=all";

/// Every path of `files` is matched by one of the workload's `config_files`, compiled as evo
/// compiles them (`*` within one folder, `**` across folders).
fn assert_config_files_cover(globs: &[String], files: &[&str]) {
    let mut set = globset::GlobSetBuilder::new();
    for g in globs {
        set.add(
            globset::GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .unwrap(),
        );
    }
    let set = set.build().unwrap();
    let missed: Vec<&&str> = files.iter().filter(|f| !set.is_match(f)).collect();
    assert!(missed.is_empty(), "config_files {globs:?} miss {missed:?}");
}

/// The confirmation reached a verdict on the real build: no gate failed, the tests and the
/// sanitizer lane ran and passed, and every proposed artifact was digested in both trees.
fn assert_judged(repo: &Path, out: &std::process::Output, artifacts: &[String]) -> Value {
    let (_, r) = util::first_result(&repo.join(".evo"))
        .unwrap_or_else(|| panic!("no result.json\n{}", text(out)));
    for gate in r["gates"].as_array().unwrap() {
        assert_ne!(gate["status"], "failed", "{gate:#}\n{}", text(out));
    }
    let status = |name: &str| {
        (r["gates"].as_array().unwrap().iter())
            .find(|g| g["name"] == name)
            .map(|g| g["status"].clone())
    };
    assert_eq!(status("tests"), Some("passed".into()), "{}", text(out));
    assert_eq!(status("sanitizers"), Some("passed".into()), "{}", text(out));
    assert_eq!(r["sanitizer_lane_ran"], true);
    for artifact in artifacts {
        for tree in ["baseline", "candidate"] {
            let digested = (r["artifacts"].as_array().unwrap().iter())
                .any(|a| a["path"] == artifact.as_str() && a["tree"] == tree);
            assert!(
                digested,
                "`{artifact}` not digested in the {tree} tree: {:#}",
                r["artifacts"]
            );
        }
    }
    util::real_verdict(&r, out, &["accepted", "inconclusive"]);
    r
}

/// The old guess ran `make test` in the built tree, which is read-only: the test target's
/// compile of `datagen` failed and evo stopped with "the baseline itself fails".
#[test]
fn an_lz4_like_make_layout_tests_on_a_writable_copy_and_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("rlz");
    util::fixture_repo("init-make-lz4", &repo);
    let out = init_in(&repo, &["--run", "./programs/rlz {seed} 3000000"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = assert_valid_files(&repo);
    let w = &plan.workload;
    assert_eq!(w.build.command, "make");
    assert_eq!(w.build.artifacts, ["lib/librlz.a", "programs/rlz"]);
    let test = &w.test.command.as_slice()[0];
    assert!(
        test.contains("make -C") && test.ends_with("exit $s"),
        "{test}"
    );
    let san = w.sanitize.as_ref().expect("a sanitizer lane");
    assert_eq!(
        (san.build.as_str(), san.flags.as_deref()),
        ("make", Some(C_FLAGS))
    );
    assert_config_files_cover(
        &w.config_files,
        &[
            "Makefile",
            "Makefile.inc",
            "lib/Makefile",
            "programs/Makefile",
            "tests/Makefile",
            "x/y.mk",
        ],
    );
    // Every artifact was read from the Makefiles: nothing left to check but the run's own.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("build.artifacts"), "{stdout}");
    // The encoder rescans each run from its start at every step; the patch compares once.
    let patch = dir.path().join("scan.patch");
    let rescan = "            for (size_t k = 0; k < run; k++) {\n                if (src[i + k] != src[i + run]) same = 0;\n            }";
    write(
        &patch,
        &util::patch_by_editing(
            &repo,
            &[(
                "lib/rlz.c",
                rescan,
                "            if (src[i] != src[i + run]) same = 0;",
            )],
        ),
    );
    let out = confirm_in(&repo, &patch);
    assert_judged(&repo, &out, &w.build.artifacts);
}

/// The old guess proposed no artifacts and no sanitizer lane for CMake.
#[test]
fn a_libdeflate_like_cmake_layout_gets_its_library_and_program_and_is_judged() {
    if !cmake_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("cks");
    util::fixture_repo("init-cmake-deflate", &repo);
    let out = init_in(
        &repo,
        &["--run", "./build/programs/cks-bench {seed} 2000000"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = assert_valid_files(&repo);
    let w = &plan.workload;
    // The test program is ctest's, not something the timed runs use.
    assert_eq!(
        w.build.artifacts,
        ["build/lib/libcks.a", "build/programs/cks-bench"]
    );
    let san = w.sanitize.as_ref().expect("a sanitizer lane");
    assert_eq!(san.build, w.build.command);
    assert_eq!(san.flags.as_deref(), Some(C_FLAGS));
    assert_config_files_cover(
        &w.config_files,
        &[
            "CMakeLists.txt",
            "lib/CMakeLists.txt",
            "tests/CMakeLists.txt",
            "cmake/Warnings.cmake",
        ],
    );
    // Adler's sums reduced once per 5552 bytes instead of after every byte.
    let per_byte = "    for (size_t i = 0; i < n; i++) {\n        /* Reduces after every byte. */\n        a = (a + p[i]) % MOD;\n        b = (b + a) % MOD;\n    }";
    let per_block = "    size_t i = 0;\n    while (i < n) {\n        size_t end = n - i > 5552 ? i + 5552 : n;\n        for (; i < end; i++) {\n            a += p[i];\n            b += a;\n        }\n        a %= MOD;\n        b %= MOD;\n    }";
    let patch = dir.path().join("block.patch");
    write(
        &patch,
        &util::patch_by_editing(&repo, &[("lib/cks.c", per_byte, per_block)]),
    );
    let out = confirm_in(&repo, &patch);
    assert_judged(&repo, &out, &w.build.artifacts);
}

/// The old guess took the root's `[package] name` for the binary: a virtual workspace has none,
/// so the timed command was a placeholder and no artifact or sanitizer lane was proposed.
#[test]
fn a_cargo_workspace_times_its_bench_binary_and_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("wshash");
    util::fixture_repo("init-cargo-workspace", &repo);
    let out = init_in(&repo, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = assert_valid_files(&repo);
    let w = &plan.workload;
    assert_eq!(w.build.artifacts, ["target/release/wsbench"]);
    assert_eq!(w.scenarios[0].run, "./target/release/wsbench");
    let san = w.sanitize.as_ref().expect("a sanitizer lane");
    assert!(
        san.build.contains("-Zsanitizer=address") && san.flags.is_none(),
        "{san:?}"
    );
    assert_config_files_cover(
        &w.config_files,
        &[
            "Cargo.toml",
            "Cargo.lock",
            "crates/hashes/Cargo.toml",
            "crates/bench/Cargo.toml",
            "crates/bench/build.rs",
        ],
    );
    // The timed command with a seed and a size, as the TODO list asks.
    let out = init_in(
        &repo,
        &[
            "--force",
            "--run",
            "./target/release/wsbench {seed} 1000000",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let prefixes = "        let mut h = 0u64;\n        for k in 1..=16 {\n            h ^= wshash::fnv1a(&words[..n * k / 16]);\n        }";
    let running = "        let (mut h, mut state, mut done) = (0u64, wshash::BASIS, 0);\n        for k in 1..=16 {\n            let end = n * k / 16;\n            state = wshash::fnv1a_from(state, &words[done..end]);\n            done = end;\n            h ^= state;\n        }";
    let patch = dir.path().join("running.patch");
    write(
        &patch,
        &util::patch_by_editing(&repo, &[("crates/bench/src/main.rs", prefixes, running)]),
    );
    let out = confirm_in(&repo, &patch);
    assert_judged(&repo, &out, &w.build.artifacts);
}
