//! Tests of the lane-probe scan: each cheat of the review's class, found on the line it adds.

use super::*;

/// A patch adding `lines` to `kernels.c` after its first line.
fn adding(lines: &[&str]) -> String {
    let mut patch = format!(
        "diff --git a/kernels.c b/kernels.c\nindex 1111111..2222222 100644\n--- a/kernels.c\n\
         +++ b/kernels.c\n@@ -1,2 +1,{} @@\n #include <math.h>\n",
        2 + lines.len()
    );
    for line in lines {
        patch.push_str(&format!("+{line}\n"));
    }
    patch.push_str(" int x;\n");
    patch
}

fn names(scan: &ProbeScan) -> Vec<&'static str> {
    scan.hits.iter().map(|h| h.probe).collect()
}

/// The review's sanitizer cheat: undefined behaviour compiled only without a sanitizer.
#[test]
fn a_sanitizer_feature_macro_is_found_with_its_file_and_line() {
    let patch = adding(&["#ifndef __SANITIZE_ADDRESS__", "  x = a[n];", "#endif"]);
    let scan = scan_probes(patch.as_bytes(), &[]);
    assert_eq!(names(&scan), ["__SANITIZE_"]);
    let hit = &scan.hits[0];
    assert_eq!((hit.file.as_str(), hit.line), ("kernels.c", 2));
    assert_eq!(hit.text, "#ifndef __SANITIZE_ADDRESS__");
    for line in [
        "#if __has_feature(address_sanitizer)",
        "#[cfg(not(sanitize = \"address\"))]",
        "__attribute__((no_sanitize(\"undefined\")))",
    ] {
        assert!(
            !scan_probes(adding(&[line]).as_bytes(), &[]).hits.is_empty(),
            "{line}"
        );
    }
}

/// The review's counter cheat: the work done only under valgrind.
#[test]
fn valgrind_client_requests_and_preloads_are_found() {
    for line in [
        "#include <valgrind/valgrind.h>",
        "if (RUNNING_ON_VALGRIND) work();",
        "const char *p = getenv(\"LD_PRELOAD\");",
        "if (strstr(maps, \"vgpreload\")) return;",
        "FILE *f = fopen(\"/proc/self/maps\", \"r\");",
        "if (getenv(\"EVO_ENV_PAD\")) skip();",
    ] {
        let scan = scan_probes(adding(&[line]).as_bytes(), &[]);
        assert!(!scan.hits.is_empty(), "{line}");
    }
}

/// Cache-state probes, and the workload's leave to use one.
#[test]
fn mincore_is_found_unless_the_workload_allows_it() {
    let patch = adding(&["mincore(addr, len, vec);"]);
    let scan = scan_probes(patch.as_bytes(), &[]);
    assert_eq!(names(&scan), ["mincore"]);
    let allowed = scan_probes(patch.as_bytes(), &["mincore".to_string()]);
    assert!(allowed.hits.is_empty());
    assert_eq!(allowed.allowed.len(), 1);
    assert!(is_probe_name("mincore") && !is_probe_name("posix_fadvise"));
    assert!(is_probe_name("fadvise"));
}

#[test]
fn a_getenv_of_a_computed_name_is_found_and_a_literal_one_is_not() {
    let scan = scan_probes(adding(&["char *v = getenv(name);"]).as_bytes(), &[]);
    assert_eq!(names(&scan), [COMPUTED_GETENV]);
    let scan = scan_probes(
        adding(&["char *v = getenv(\"OMP_NUM_THREADS\");"]).as_bytes(),
        &[],
    );
    assert!(scan.hits.is_empty(), "{:?}", scan.hits);
}

/// Removed and context lines are not the candidate's additions; neither are words that only
/// contain a probe (`environment`, `clock_speed`).
#[test]
fn only_added_lines_and_whole_words_count() {
    let patch = "diff --git a/k.c b/k.c\nindex 1111111..2222222 100644\n--- a/k.c\n+++ b/k.c\n\
                 @@ -1,3 +1,3 @@\n int rdtsc_was_here;\n-mincore(a, b, c);\n+int environment, \
                 clock_speed;\n int y;\n";
    let scan = scan_probes(patch.as_bytes(), &[]);
    assert!(scan.hits.is_empty(), "{:?}", scan.hits);
}

/// A line that looks like a file header inside a hunk is still an added line.
#[test]
fn an_added_line_that_looks_like_a_header_is_scanned() {
    let patch = adding(&["++ b/x.c ptrace(PTRACE_TRACEME, 0, 0, 0);"]);
    assert_eq!(names(&scan_probes(patch.as_bytes(), &[])), ["ptrace"]);
}

#[test]
fn a_quoted_line_is_escaped_and_cut() {
    let long = format!("rdtsc(); /* \u{1b}[2J {} */", "x".repeat(400));
    let scan = scan_probes(adding(&[&long]).as_bytes(), &[]);
    let text = &scan.hits[0].text;
    assert!(
        !text.contains('\u{1b}') && text.contains("\\u{1b}"),
        "{text}"
    );
    assert!(text.chars().count() <= SHOWN_CHARS + 12, "{text}");
    assert!(hits_text(&scan.hits).starts_with("kernels.c:2: `rdtsc`"));
}

/// The bundled candidates, real speedups and negative controls alike, add no lane probe: the
/// gate must not stop what other gates are there to judge.
#[test]
fn the_bundled_candidates_add_no_lane_probe() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("campaigns");
    let mut seen = 0;
    for folder in ["c_kernels", "cpu_bundle", "calibration"] {
        for entry in std::fs::read_dir(root.join(folder)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "patch") {
                continue;
            }
            let scan = scan_probes(&std::fs::read(&path).unwrap(), &[]);
            assert!(
                scan.hits.is_empty(),
                "{}: {}",
                path.display(),
                hits_text(&scan.hits)
            );
            seen += 1;
        }
    }
    assert!(seen >= 15);
}

/// What the workload allowed is said in the gate's detail (in the result and the receipt).
#[test]
fn the_gate_detail_names_what_was_allowed_and_what_failed() {
    let patch = adding(&["posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);"]);
    let failed = gate_detail(&scan_probes(patch.as_bytes(), &[]))
        .unwrap_err()
        .to_string();
    assert!(failed.contains("kernels.c:2: `fadvise`") && failed.contains("allow_probes"));
    let allowed = scan_probes(patch.as_bytes(), &["fadvise".to_string()]);
    let passed = gate_detail(&allowed).unwrap();
    assert!(
        passed.contains("allow_probes") && passed.contains("kernels.c:2"),
        "{passed}"
    );
    let clean = adding(&["x += 1;"]);
    assert_eq!(
        gate_detail(&scan_probes(clean.as_bytes(), &[])).unwrap(),
        "no added line probes the lane it runs in"
    );
}

/// A patch to `file` whose one hunk is `lines`, each already marked `+` or ` `.
fn hunk(file: &str, lines: &[&str]) -> String {
    let old = lines.iter().filter(|l| !l.starts_with('+')).count();
    let mut patch = format!(
        "diff --git a/{file} b/{file}\n--- a/{file}\n+++ b/{file}\n@@ -1,{old} +1,{} @@\n",
        lines.len()
    );
    for line in lines {
        patch.push_str(line);
        patch.push('\n');
    }
    patch
}

fn hits_in(file: &str, lines: &[&str]) -> Vec<&'static str> {
    names(&scan_probes(hunk(file, lines).as_bytes(), &[]))
}

/// libdeflate's real decompression speedup (72b2ce0) adds `/* Discard any readahead bits ... */`:
/// a comment can tell nothing, so comments of C, C++, CUDA and Rust files are left out.
#[test]
fn a_probe_named_in_a_comment_is_not_code() {
    for (file, lines) in [
        (
            "lib/decompress_template.h",
            &["+\t/* Discard any readahead bits and check for excessive overread. */"][..],
        ),
        (
            "a.c",
            &["+x = 1; // the kernel's readahead does the rest"][..],
        ),
        (
            "a.rs",
            &[
                "+/// Reads ahead (not with readahead(2), which would tell the page cache).",
                "+fn f() {}",
            ][..],
        ),
        (
            "a.cpp",
            &["+y = 2; /* mincore */ z = 3; /* and valgrind */"][..],
        ),
        (
            "a.c",
            &[
                "+/*",
                "+ * Under valgrind this is slower: clock_gettime and rdtsc are not used.",
                "+ */",
                "+int x;",
            ][..],
        ),
        (
            "a.c",
            &[
                " /* context opens the comment",
                "+   readahead is not called here",
                " */",
            ][..],
        ),
    ] {
        assert_eq!(
            hits_in(file, lines),
            Vec::<&str>::new(),
            "{file}: {lines:?}"
        );
    }
}

/// The attacks on leaving comments out: each makes code look like a comment to a scan that reads
/// one line at a time, or hides it behind a string the scan does not see; each must still be
/// found. (Remove the `"`, backslash or `'` rule from `code_of_line` and one of these passes.)
#[test]
fn code_that_only_looks_commented_is_still_scanned() {
    for (file, lines) in [
        // `//` inside a string: the call after the string is code.
        ("a.c", &["+s = \"//\"; readahead(fd, 0, 1 << 20);"][..]),
        // A Rust string opened above the hunk closes on this line: `// ` is string data and the
        // call is code.
        (
            "a.rs",
            &["+// \"; unsafe { libc::mincore(p, n, v.as_mut_ptr()) };"][..],
        ),
        // A raw string holding `//`.
        ("a.rs", &["+let s = r#\"a\"//\"#; readahead(fd);"][..]),
        // A block comment's end spliced across lines with a backslash (C translation phase 2).
        ("a.c", &["+/* x *\\", "+/ readahead(fd, 0, 1); /* */"][..]),
        // A line comment continued by a backslash, then a line the compiler reads as code... or
        // not: the scan reads it as code either way.
        ("a.c", &["+// note \\", "+readahead(fd, 0, 1);"][..]),
        // A character literal holding the comment's marker.
        ("a.c", &["+c = '//'; readahead(fd, 0, 1);"][..]),
        // Code after a block comment on the same line.
        ("a.c", &["+/* hint */ readahead(fd, 0, 1);"][..]),
        // A block comment opened by a line with a `\"` is not trusted to be one.
        ("a.rs", &["+let _ = \"\"; /* ", "+ readahead(fd); */"][..]),
        // A trigraph backslash (`??/`) splices lines for some compilers.
        ("a.c", &["+/* x *??/", "+/ readahead(fd, 0, 1); /* */"][..]),
        // Not a C-family file: its comments are not known, the line is scanned whole.
        ("run.py", &["+# readahead"][..]),
        ("Makefile", &["+# -fsanitize=address off here"][..]),
    ] {
        assert!(!hits_in(file, lines).is_empty(), "{file}: {lines:?}");
    }
}

/// Each hunk starts the comment state afresh: a comment opened in one hunk does not cover the
/// next, whose lines between are not in the patch.
#[test]
fn a_comment_state_does_not_cross_hunks() {
    let patch = "diff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -1,1 +1,2 @@\n int a;\n+/* open\n\
                 @@ -9,1 +10,2 @@\n int b;\n+readahead(fd, 0, 1);\n";
    assert_eq!(names(&scan_probes(patch.as_bytes(), &[])), ["readahead"]);
}

/// A file the patch adds or renames may not be what its extension says: a Python or shell script
/// named `h.c`, run by the candidate's code, reads `//` as division or a path, not a comment. Its
/// lines are scanned whole. (Drop the `in_place` condition and both are missed.)
#[test]
fn comments_are_left_out_only_in_files_changed_in_place() {
    let line = "+x = 4 // 2; os.posix_fadvise(fd, 0, 0, 4)";
    let added = format!(
        "diff --git a/tools/h.c b/tools/h.c\nnew file mode 100644\n--- /dev/null\n\
         +++ b/tools/h.c\n@@ -0,0 +1,1 @@\n{line}\n"
    );
    let renamed = format!(
        "diff --git a/tools/h.py b/tools/h.c\nsimilarity index 90%\nrename from tools/h.py\n\
         rename to tools/h.c\n--- a/tools/h.py\n+++ b/tools/h.c\n@@ -1,1 +1,1 @@\n-x = 1\n{line}\n"
    );
    for patch in [added, renamed] {
        assert_eq!(
            names(&scan_probes(patch.as_bytes(), &[])),
            ["fadvise"],
            "{patch}"
        );
    }
    // The same line in a file changed where it was is read as C: its comment is left out.
    assert_eq!(hits_in("tools/h.c", &[line]), Vec::<&str>::new());
}
