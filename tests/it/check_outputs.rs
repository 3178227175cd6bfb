//! The differential check as the pipeline uses it: comparison rules on real-looking outputs,
//! sanitizer reports in the formats the tools print, and `{seed}` filling.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use evo::check::{
    Comparison, Mismatch, SanitizerKind, compare_outputs, fill_seed, find_sanitizer_report,
    has_seed,
};
use evo::spec::values::Tolerance;
use evo::spec::workload::Compare;
use proptest::prelude::*;

fn tolerance(abs: f64, rel: f64) -> Compare {
    let tol: Tolerance = serde_json::from_value(serde_json::json!({ "abs": abs, "rel": rel }))
        .expect("a valid tolerance");
    Compare::Tolerance(tol)
}

fn default_tolerance() -> Compare {
    let tol: Tolerance =
        serde_json::from_str(r#"{"abs":1e-6,"rel":1e-4}"#).expect("a valid tolerance");
    Compare::Tolerance(tol)
}

fn same(rule: &Compare, a: &str, b: &str) -> bool {
    compare_outputs(rule, a.as_bytes(), b.as_bytes()).is_same()
}

fn mismatch(rule: &Compare, a: &[u8], b: &[u8]) -> Mismatch {
    match compare_outputs(rule, a, b) {
        Comparison::Differs(m) => m,
        Comparison::Same => panic!(
            "expected a mismatch between {:?} and {:?}",
            String::from_utf8_lossy(a),
            String::from_utf8_lossy(b)
        ),
    }
}

// --- exact -------------------------------------------------------------------------------------

#[test]
fn exact_same_bytes_are_same() {
    assert_eq!(
        compare_outputs(&Compare::Exact, b"step 1 loss 2.5\n", b"step 1 loss 2.5\n"),
        Comparison::Same
    );
    assert!(compare_outputs(&Compare::Exact, b"", b"").is_same());
}

#[test]
fn exact_catches_a_one_digit_change() {
    let m = mismatch(&Compare::Exact, b"a 1\nb 2\nc 3\n", b"a 1\nb 2\nc 4\n");
    assert_eq!(m.line, 3);
    assert_eq!(m.summary, "byte 11 (line 3, column 3) differs");
    assert!(m.diff.contains("\n-c 3\n+c 4\n"), "{}", m.diff);
}

#[test]
fn exact_does_not_forgive_formatting() {
    assert!(!same(&Compare::Exact, "1.0\n", "1.00\n"));
}

#[test]
fn exact_compares_non_utf8_bytes() {
    let base = b"hdr\n\xff\xfe\x00\x01\n".to_vec();
    assert!(compare_outputs(&Compare::Exact, &base, &base).is_same());
    let mut cand = base.clone();
    cand[5] = 0xfd;
    let m = mismatch(&Compare::Exact, &base, &cand);
    assert_eq!(m.line, 2);
    assert_eq!(m.summary, "byte 6 (line 2, column 2) differs");
    assert!(m.diff.contains("-\u{fffd}"), "lossy display: {}", m.diff);
}

#[test]
fn exact_reports_extra_output() {
    let base = "x\n".repeat(10);
    let cand = base.clone() + &"y".repeat(200);
    let m = mismatch(&Compare::Exact, base.as_bytes(), cand.as_bytes());
    assert_eq!(
        m.summary,
        "candidate output is 200 bytes longer (the first 20 bytes are the same)"
    );
    assert_eq!(m.line, 11);
}

// --- tolerance ---------------------------------------------------------------------------------

#[test]
fn tolerance_accepts_within_rel_and_rejects_beyond() {
    let rule = tolerance(0.0, 1e-6);
    assert!(same(&rule, "loss 1.0\n", "loss 1.0000001\n"));
    let m = mismatch(&rule, b"loss 1.0\n", b"loss 1.001\n");
    assert_eq!(
        m.summary,
        "line 1: 1.0 vs 1.001 differs by 0.001 (abs tol 0, rel tol 1e-6)"
    );
}

#[test]
fn tolerance_accepts_within_abs() {
    let rule = tolerance(1e-3, 0.0);
    assert!(same(&rule, "x 0.0000\n", "x 0.0009\n"));
    assert!(!same(&rule, "x 0.0000\n", "x 0.0011\n"));
}

#[test]
fn text_between_numbers_must_match_even_when_numbers_do() {
    let rule = default_tolerance();
    let m = mismatch(&rule, b"loss 1.0 ok\n", b"loss 1.0 OK\n");
    assert_eq!(m.line, 1);
    assert!(
        m.summary.starts_with("line 1: text differs"),
        "{}",
        m.summary
    );
    assert!(!same(&rule, "a=1, b=2\n", "a=1; b=2\n"));
    assert!(!same(&rule, "1 2\n", "1  2\n"), "whitespace is text");
}

#[test]
fn token_count_differences_are_caught() {
    let rule = default_tolerance();
    let m = mismatch(&rule, b"1 2 3\n", b"1 2 3 4\n");
    assert!(
        m.summary.starts_with("line 1: text differs"),
        "{}",
        m.summary
    );
    let m = mismatch(&rule, b"1 2 3", b"1 2");
    assert_eq!(
        m.summary,
        "line 1: candidate output ends where baseline has text \" \""
    );
    let m = mismatch(&rule, b"1 2", b"1 2 3");
    assert_eq!(
        m.summary,
        "line 1: candidate output has text \" \" after the baseline output ends"
    );
    assert!(!same(&rule, "3\n", "x\n"), "number against text");
}

#[test]
fn scientific_notation_is_one_number() {
    let rule = default_tolerance();
    assert!(same(&rule, "grad 1.5e-3\n", "grad 1.50001E-03\n"));
    assert!(same(&rule, "big 2e10\n", "big 20000000000\n"));
    let m = mismatch(&rule, b"grad 1.5e-3\n", b"grad 1.6e-3\n");
    assert!(m.summary.contains("1.5e-3 vs 1.6e-3"), "{}", m.summary);
}

#[test]
fn negative_numbers_keep_their_sign() {
    let rule = tolerance(1e-6, 1e-4);
    assert!(same(&rule, "delta -0.5\n", "delta -0.50001\n"));
    let m = mismatch(&rule, b"delta -0.5\n", b"delta 0.5\n");
    assert!(
        m.summary.contains("-0.5 vs 0.5 differs by 1"),
        "{}",
        m.summary
    );
}

#[test]
fn minus_after_a_letter_or_digit_is_text() {
    let rule = tolerance(10.0, 0.0);
    // `x-1` is the text `x-` and the number 1: a sign flip there changes the text.
    assert!(!same(&rule, "x-1\n", "x+1\n"));
    assert!(same(&rule, "x-1\n", "x-2\n"), "1 vs 2 is within abs 10");
    // `2-3` is 2, `-`, 3: changing the operator is a text difference.
    assert!(!same(&rule, "2-3\n", "2+3\n"));
    // In an exponent the sign belongs to the number: 1e-3 vs 1e+3 differ by ~1000.
    assert!(!same(&rule, "1e-3\n", "1e+3\n"));
}

#[test]
fn infinities_and_nans() {
    let rule = default_tolerance();
    assert!(same(&rule, "inf -inf nan\n", "inf -inf nan\n"));
    assert!(
        same(&rule, "x inf y\n", "x Infinity y\n"),
        "the same infinity"
    );
    assert!(same(&rule, "x nan\n", "x NaN\n"), "both NaN");
    assert!(same(&rule, "x nan\n", "x -nan\n"), "glibc prints -nan");
    assert!(!same(&rule, "x inf\n", "x -inf\n"));
    assert!(!same(&rule, "x inf\n", "x 1e308\n"));
    assert!(!same(&rule, "x nan\n", "x 0\n"));
}

#[test]
fn summary_names_the_line_of_the_first_real_mismatch() {
    let rule = tolerance(0.0, 1e-3);
    let base = "epoch 1 loss 2.0000\nepoch 2 loss 1.5000\nepoch 3 loss 1.2500\nepoch 4 loss 1.1\n";
    // Line 2 is within tolerance, line 3 is not.
    let cand = "epoch 1 loss 2.0000\nepoch 2 loss 1.5001\nepoch 3 loss 1.2600\nepoch 4 loss 1.1\n";
    let m = mismatch(&rule, base.as_bytes(), cand.as_bytes());
    assert_eq!(m.line, 3);
    assert_eq!(
        m.summary,
        "line 3: 1.2500 vs 1.2600 differs by 0.01 (abs tol 0, rel tol 0.001)"
    );
    assert!(m.diff.contains("\n-epoch 3 loss 1.2500\n"), "{}", m.diff);
    assert!(m.diff.contains("\n+epoch 3 loss 1.2600\n"), "{}", m.diff);
}

#[test]
fn comparison_round_trips_through_json() {
    let c = compare_outputs(&Compare::Exact, b"a\n", b"b\n");
    let json = serde_json::to_string(&c).expect("serializes");
    let back: Comparison = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back, c);
}

// --- the diff ----------------------------------------------------------------------------------

#[test]
fn diff_shows_the_first_difference_with_headers() {
    let base: String = (1..=200).map(|i| format!("value {i}\n")).collect();
    let cand = base.replace("value 120\n", "value 12O\n");
    let m = mismatch(&Compare::Exact, base.as_bytes(), cand.as_bytes());
    assert_eq!(m.line, 120);
    assert!(
        m.diff
            .starts_with("--- baseline\n+++ candidate\n@@ -117,7 +117,7 @@\n"),
        "{}",
        m.diff
    );
    assert!(m.diff.contains("\n-value 120\n+value 12O\n"), "{}", m.diff);
}

#[test]
fn diff_is_capped_and_fast_for_huge_outputs_that_differ_everywhere() {
    let mut base = String::new();
    let mut cand = String::new();
    for i in 0..100_000u64 {
        let _ = writeln!(base, "row {i} value {}", i * 7 % 1009);
        let _ = writeln!(cand, "row {i} value {}", i * 11 % 1013);
    }
    let started = Instant::now();
    let m = mismatch(&Compare::Exact, base.as_bytes(), cand.as_bytes());
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert!(m.diff.lines().count() <= 45, "{}", m.diff);
    assert!(m.diff.len() <= 4 * 1024 + 200, "{} bytes", m.diff.len());
    assert!(m.diff.contains("… (truncated)"), "{}", m.diff);
    assert!(m.diff.contains("\n-row 1 value 7\n"), "{}", m.diff);
    assert!(m.diff.contains("\n+row 1 value 11\n"), "{}", m.diff);
    assert_eq!(m.line, 2);
}

#[test]
fn tolerance_diff_on_huge_output_is_capped_too() {
    let mut base = String::new();
    let mut cand = String::new();
    for i in 0..100_000u64 {
        let _ = writeln!(base, "{i} {}", i as f64 * 0.5);
        let _ = writeln!(cand, "{i} {}", i as f64 * 0.5 + 1.0);
    }
    let started = Instant::now();
    let m = mismatch(&default_tolerance(), base.as_bytes(), cand.as_bytes());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(m.line, 1);
    assert!(m.diff.lines().count() <= 45);
    assert!(m.diff.contains("\n-0 0\n-1 0.5\n"), "{}", m.diff);
    assert!(
        m.diff.contains("more baseline lines)\n+0 1\n+1 1.5\n"),
        "{}",
        m.diff
    );
}

// --- properties --------------------------------------------------------------------------------

/// Outputs made of numbers separated by text that starts and ends with a non-word byte, so that
/// every number is a token of its own before and after perturbation.
fn number_lines(nonzero: bool) -> impl Strategy<Value = Vec<(String, f64, bool)>> {
    let value = (1.0f64..10.0, -30i32..30, any::<bool>())
        .prop_map(|(m, e, neg)| if neg { -m } else { m } * 10f64.powi(e));
    let value = if nonzero {
        value.boxed()
    } else {
        prop_oneof![9 => value, 1 => Just(0.0)].boxed()
    };
    prop::collection::vec(
        ("[ =:,;\n\t][a-z ]{0,4}[ =:,;\n]", value, any::<bool>()),
        1..20,
    )
}

fn render(parts: &[(String, f64, bool)], factor: impl Fn(usize) -> f64) -> String {
    let mut out = String::new();
    for (i, (sep, v, sci)) in parts.iter().enumerate() {
        let x = v * factor(i);
        out.push_str(sep);
        if *sci {
            let _ = write!(out, "{x:e}");
        } else {
            let _ = write!(out, "{x}");
        }
    }
    out.push('\n');
    out
}

proptest! {
    #[test]
    fn any_output_is_same_as_itself(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        prop_assert!(compare_outputs(&Compare::Exact, &bytes, &bytes).is_same());
        prop_assert!(compare_outputs(&default_tolerance(), &bytes, &bytes).is_same());
        prop_assert!(compare_outputs(&tolerance(0.0, 0.0), &bytes, &bytes).is_same());
    }

    #[test]
    fn textual_output_is_same_as_itself(text in "[-+0-9.eEinfaINFA x_\n]{0,200}") {
        prop_assert!(compare_outputs(&tolerance(0.0, 0.0), text.as_bytes(), text.as_bytes()).is_same());
    }

    #[test]
    fn never_panics_and_line_is_in_range(
        a in prop::collection::vec(prop_oneof![Just(b'\n'), Just(b'1'), Just(b'-'), Just(b'.'), Just(b'e'), any::<u8>()], 0..200),
        b in prop::collection::vec(prop_oneof![Just(b'\n'), Just(b'1'), Just(b'-'), Just(b'.'), Just(b'e'), any::<u8>()], 0..200),
    ) {
        for rule in [Compare::Exact, default_tolerance()] {
            if let Comparison::Differs(m) = compare_outputs(&rule, &a, &b) {
                let lines = a.iter().chain(&b).filter(|x| **x == b'\n').count() + 1;
                prop_assert!(m.line >= 1 && m.line <= lines);
                prop_assert!(!m.summary.contains('\n'));
                prop_assert!(m.diff.starts_with("--- baseline\n+++ candidate\n") || m.diff.starts_with("(no line diff"));
            }
        }
        prop_assert_eq!(compare_outputs(&Compare::Exact, &a, &b).is_same(), a == b);
    }

    #[test]
    fn perturbing_below_rel_is_same(
        parts in number_lines(false),
        rel_exp in -9i32..-2,
        shares in prop::collection::vec(-0.9f64..0.9, 20),
    ) {
        let rel = 10f64.powi(rel_exp);
        let base = render(&parts, |_| 1.0);
        let cand = render(&parts, |i| 1.0 + shares[i] * rel);
        let verdict = compare_outputs(&tolerance(0.0, rel), base.as_bytes(), cand.as_bytes());
        prop_assert!(verdict.is_same(), "{:?}\n{}\n{}", verdict, base, cand);
    }

    #[test]
    fn perturbing_above_twice_rel_differs(
        parts in number_lines(true),
        rel_exp in -9i32..-2,
        shares in prop::collection::vec((2.01f64..4.0, any::<bool>()), 20),
    ) {
        let rel = 10f64.powi(rel_exp);
        let base = render(&parts, |_| 1.0);
        let factor = |i: usize| {
            let (share, down) = shares[i];
            if down { 1.0 - share * rel } else { 1.0 + share * rel }
        };
        let cand = render(&parts, factor);
        match compare_outputs(&tolerance(0.0, rel), base.as_bytes(), cand.as_bytes()) {
            Comparison::Differs(m) => {
                prop_assert_eq!(m.line, 1 + parts[0].0.matches('\n').count());
                prop_assert!(m.summary.contains("differs by"), "{}", m.summary);
            }
            Comparison::Same => prop_assert!(false, "should differ:\n{}\n{}", base, cand),
        }
    }
}

// --- sanitizers --------------------------------------------------------------------------------

const ASAN: &str = "\
=================================================================
==48213==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000034 at pc 0x55d0c8a1b2f3 bp 0x7ffd4a1c3e10 sp 0x7ffd4a1c3e00
READ of size 4 at 0x602000000034 thread T0
    #0 0x55d0c8a1b2f2 in pair_distance /home/alice/tree/pairs.c:41:18
    #1 0x55d0c8a1b6a9 in main /home/alice/tree/pairs.c:88:5
    #2 0x7f3b9a429d8f in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58:16
    #3 0x7f3b9a429e3f in __libc_start_main_impl ../csu/libc-start.c:392:3
    #4 0x55d0c8a1a3c4 in _start (/home/alice/tree/pairs+0x23c4)

0x602000000034 is located 0 bytes to the right of 4-byte region [0x602000000030,0x602000000034)
allocated by thread T0 here:
    #0 0x7f3b9a8b4867 in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:145
SUMMARY: AddressSanitizer: heap-buffer-overflow /home/alice/tree/pairs.c:41:18 in pair_distance
==48213==ABORTING
";

const LSAN: &str = "\
pairs: 700 points, checksum 0x5f3a

=================================================================
==9021==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 5600 bytes in 1 object(s) allocated from:
    #0 0x7f1c2a6b4867 in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:145
    #1 0x5581b0e0a2d1 in load_points /home/alice/tree/pairs.c:23:22

SUMMARY: AddressSanitizer: 5600 byte(s) leaked in 1 allocation(s).
";

const UBSAN: &str = "\
pairs: 700 points
pairs.c:57:21: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'
    #0 0x55f2d1c4a3b1 in accumulate /home/alice/tree/pairs.c:57:21
    #1 0x55f2d1c4a6d0 in main /home/alice/tree/pairs.c:90:9
SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior pairs.c:57:21 in
";

const RUST_OVERFLOW_NEW: &str = "\
   Compiling gpt v0.1.0 (/home/alice/tree)
thread 'main' panicked at src/data.rs:112:23:
attempt to add with overflow
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
";

const RUST_OVERFLOW_OLD: &str = "\
thread 'main' panicked at 'attempt to multiply with overflow', src/main.rs:3:5
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
";

const RUST_OVERFLOW_THREAD_ID: &str = "\
thread 'prefetch' (48211) panicked at src/batch.rs:40:9:
attempt to subtract with overflow
";

const RUST_INDEX: &str = "\
warning: unused variable: `x`
thread 'main' panicked at src/batch.rs:77:18:
index out of bounds: the len is 64 but the index is 64
stack backtrace:
   0: rust_begin_unwind
";

const RUST_UNWRAP_OLD: &str = "\
thread '<unnamed>' panicked at 'called `Option::unwrap()` on a `None` value', src/prefetch.rs:19:40
";

const TSAN: &str = "\
==================
WARNING: ThreadSanitizer: data race (pid=31337)
  Write of size 8 at 0x7b0400000010 by thread T2:
    #0 worker /home/alice/tree/counter.c:14:11 (counter+0xd0e1)

  Previous read of size 8 at 0x7b0400000010 by main thread:
    #0 main /home/alice/tree/counter.c:29:3 (counter+0xd1c3)

SUMMARY: ThreadSanitizer: data race /home/alice/tree/counter.c:14:11 in worker
==================
ThreadSanitizer: reported 1 warnings
";

const MSAN: &str = "\
==20417==WARNING: MemorySanitizer: use-of-uninitialized-value
    #0 0x55a1e0b7c2a5 in reduce /home/alice/tree/pairs.c:66:9
    #1 0x55a1e0b7c6f3 in main /home/alice/tree/pairs.c:91:12

SUMMARY: MemorySanitizer: use-of-uninitialized-value /home/alice/tree/pairs.c:66:9 in reduce
Exiting
";

#[test]
fn every_sanitizer_kind_is_found_at_its_first_line() {
    let cases = [
        (
            ASAN,
            SanitizerKind::AddressSanitizer,
            "==48213==ERROR: AddressSanitizer: heap-buffer-overflow",
        ),
        (
            LSAN,
            SanitizerKind::LeakSanitizer,
            "==9021==ERROR: LeakSanitizer: detected memory leaks",
        ),
        (
            UBSAN,
            SanitizerKind::UndefinedBehavior,
            "pairs.c:57:21: runtime error: signed integer overflow",
        ),
        (
            RUST_OVERFLOW_NEW,
            SanitizerKind::RustOverflow,
            "thread 'main' panicked at src/data.rs:112:23:\nattempt to add with overflow\n",
        ),
        (
            RUST_OVERFLOW_OLD,
            SanitizerKind::RustOverflow,
            "thread 'main' panicked at 'attempt to multiply with overflow'",
        ),
        (
            RUST_OVERFLOW_THREAD_ID,
            SanitizerKind::RustOverflow,
            "thread 'prefetch' (48211) panicked at",
        ),
        (
            RUST_INDEX,
            SanitizerKind::RustPanic,
            "thread 'main' panicked at src/batch.rs:77:18:\nindex out of bounds",
        ),
        (
            RUST_UNWRAP_OLD,
            SanitizerKind::RustPanic,
            "thread '<unnamed>' panicked at 'called `Option::unwrap()`",
        ),
        (
            TSAN,
            SanitizerKind::ThreadSanitizer,
            "WARNING: ThreadSanitizer: data race (pid=31337)",
        ),
        (
            MSAN,
            SanitizerKind::MemorySanitizer,
            "==20417==WARNING: MemorySanitizer: use-of-uninitialized-value",
        ),
    ];
    for (stderr, kind, start) in cases {
        let report = find_sanitizer_report(stderr)
            .unwrap_or_else(|| panic!("no report found in:\n{stderr}"));
        assert_eq!(report.kind, kind, "{stderr}");
        assert!(
            report.excerpt.starts_with(start),
            "{kind:?}: {}",
            report.excerpt
        );
        assert!(report.excerpt.lines().count() <= 10, "{}", report.excerpt);
    }
}

#[test]
fn asan_excerpt_is_the_first_ten_lines_of_the_report() {
    let report = find_sanitizer_report(ASAN).expect("a report");
    let expected: Vec<&str> = ASAN.lines().skip(1).take(10).collect();
    assert_eq!(report.excerpt, expected.join("\n") + "\n");
}

#[test]
fn first_report_wins() {
    let stderr = format!("{UBSAN}{ASAN}");
    let report = find_sanitizer_report(&stderr).expect("a report");
    assert_eq!(report.kind, SanitizerKind::UndefinedBehavior);
}

#[test]
fn clean_stderr_has_no_report() {
    let clean = "\
   Compiling gpt v0.1.0 (/home/alice/tree)
warning: unused variable: `scratch`
  --> src/train.rs:41:9
   |
41 |     let scratch = vec![0.0f32; n];
   |         ^^^^^^^ help: if this is intentional, prefix it with an underscore: `_scratch`
    Finished `release` profile [optimized] target(s) in 12.31s
==1==WARNING: ASan doesn't fully support makecontext/swapcontext functions and may produce false positives in some cases!
step 100 loss 2.31 (no runtime error: all good)
panic: runtime error: index out of range [3] with length 3 (from a Go helper, not UBSan)
";
    assert_eq!(find_sanitizer_report(clean), None);
    assert_eq!(find_sanitizer_report(""), None);
}

#[test]
fn sanitizer_kind_serializes_in_snake_case() {
    let json = serde_json::to_string(&SanitizerKind::UndefinedBehavior).expect("serializes");
    assert_eq!(json, "\"undefined_behavior\"");
}

// --- seeds -------------------------------------------------------------------------------------

#[test]
fn fill_seed_replaces_every_placeholder_and_nothing_else() {
    let cmd = "./bench/run.sh 700 {seed} --out=/tmp/{seed}.txt ${HOME} {} {{x}}";
    assert!(has_seed(cmd));
    assert_eq!(
        fill_seed(cmd, 18_446_744_073_709_551_615),
        "./bench/run.sh 700 18446744073709551615 --out=/tmp/18446744073709551615.txt ${HOME} {} {{x}}"
    );
    assert!(!has_seed("./bench/run.sh 700"));
    assert_eq!(fill_seed("./bench/run.sh 700", 5), "./bench/run.sh 700");
}
