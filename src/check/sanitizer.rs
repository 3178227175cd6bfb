//! Finds the report a sanitizer or a Rust overflow check left on stderr (docs/design.md §4.4,
//! §2.2.7), so the sanitizer lane can reject a candidate by name even when the sanitized
//! program's output still matches, and the receipt can quote the first lines of the report.
//!
//! Recognized, in the order they appear on stderr (the first one wins):
//! - `==PID==ERROR: AddressSanitizer: …` (also HWAddressSanitizer), `LeakSanitizer`,
//!   `UndefinedBehaviorSanitizer`, `MemorySanitizer`, `ThreadSanitizer` after `ERROR: `;
//!   `MemorySanitizer` and `ThreadSanitizer` also after `WARNING: `, which is how they report.
//! - UBSan's `file.c:12:5: runtime error: …` (the prefix must end in `:line:column`, so a Go
//!   `panic: runtime error:` is not taken for UBSan).
//! - Rust panics, old (`thread 'main' panicked at 'msg', src/main.rs:3:5`) and new
//!   (`thread 'main' panicked at src/main.rs:3:5:` then the message on the next line) formats,
//!   with or without a thread id after the name. `attempt to … with overflow` is an arithmetic
//!   overflow; any other panic (index out of bounds, unwrap on None, …) is a panic.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Lines of the report kept in the excerpt, starting at its first line.
const EXCERPT_LINES: usize = 10;
const EXCERPT_BYTES: usize = 4 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SanitizerKind {
    AddressSanitizer,
    LeakSanitizer,
    UndefinedBehavior,
    RustOverflow,
    RustPanic,
    MemorySanitizer,
    ThreadSanitizer,
}

impl fmt::Display for SanitizerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SanitizerKind::AddressSanitizer => "AddressSanitizer",
            SanitizerKind::LeakSanitizer => "LeakSanitizer",
            SanitizerKind::UndefinedBehavior => "UndefinedBehaviorSanitizer",
            SanitizerKind::RustOverflow => "Rust arithmetic overflow",
            SanitizerKind::RustPanic => "Rust panic",
            SanitizerKind::MemorySanitizer => "MemorySanitizer",
            SanitizerKind::ThreadSanitizer => "ThreadSanitizer",
        })
    }
}

/// The first sanitizer report on a stderr, with its opening lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SanitizerReport {
    pub kind: SanitizerKind,
    /// Up to 10 lines starting at the report's first line.
    pub excerpt: String,
}

/// The first report on `stderr`, if any.
pub fn find_sanitizer_report(stderr: &str) -> Option<SanitizerReport> {
    let lines: Vec<&str> = stderr.lines().collect();
    lines.iter().enumerate().find_map(|(i, line)| {
        let next = lines.get(i + 1).copied();
        let kind = sanitizer_header(line)
            .or_else(|| ubsan_runtime_error(line))
            .or_else(|| rust_panic(line, next))?;
        Some(SanitizerReport {
            kind,
            excerpt: excerpt(lines.get(i..).unwrap_or_default()),
        })
    })
}

fn excerpt(lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines.iter().take(EXCERPT_LINES) {
        let room = EXCERPT_BYTES.saturating_sub(out.len() + 1);
        if line.len() > room {
            let mut cut = room;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push_str(line.get(..cut).unwrap_or_default());
            out.push_str("…\n");
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `==123==ERROR: AddressSanitizer: heap-buffer-overflow …` and its siblings.
fn sanitizer_header(line: &str) -> Option<SanitizerKind> {
    let (severity, rest) = ["ERROR: ", "WARNING: "].iter().find_map(|marker| {
        line.find(marker)
            .map(|at| (*marker, line.get(at + marker.len()..).unwrap_or_default()))
    })?;
    let name = rest.split_once(": ").map(|(name, _)| name)?;
    let kind = match name {
        "AddressSanitizer" | "HWAddressSanitizer" => SanitizerKind::AddressSanitizer,
        "LeakSanitizer" => SanitizerKind::LeakSanitizer,
        "UndefinedBehaviorSanitizer" => SanitizerKind::UndefinedBehavior,
        "MemorySanitizer" => SanitizerKind::MemorySanitizer,
        "ThreadSanitizer" => SanitizerKind::ThreadSanitizer,
        _ => return None,
    };
    let warns = matches!(
        kind,
        SanitizerKind::MemorySanitizer | SanitizerKind::ThreadSanitizer
    );
    (severity == "ERROR: " || warns).then_some(kind)
}

/// `t.c:12:5: runtime error: signed integer overflow: …`
fn ubsan_runtime_error(line: &str) -> Option<SanitizerKind> {
    let (location, _) = line.split_once(": runtime error: ")?;
    let mut parts = location.rsplitn(3, ':');
    let column = parts.next()?;
    let row = parts.next()?;
    let file = parts.next()?;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (numeric(column) && numeric(row) && !file.is_empty())
        .then_some(SanitizerKind::UndefinedBehavior)
}

/// `thread 'main' panicked at …`, with the message on this line (old format) or the next (new).
fn rust_panic(line: &str, next: Option<&str>) -> Option<SanitizerKind> {
    let rest = line.strip_prefix("thread '")?;
    let (_, after) = rest.split_once(" panicked at ")?;
    let message = match after.strip_prefix('\'') {
        Some(quoted) => quoted
            .rsplit_once("', ")
            .map_or(quoted, |(message, _)| message),
        None => next.unwrap_or_default(),
    };
    Some(if is_overflow(message) {
        SanitizerKind::RustOverflow
    } else {
        SanitizerKind::RustPanic
    })
}

/// The messages of Rust's arithmetic overflow checks (`attempt to add with overflow`, …).
fn is_overflow(message: &str) -> bool {
    const OPS: [&str; 8] = [
        "add",
        "subtract",
        "multiply",
        "negate",
        "shift left",
        "shift right",
        "divide",
        "calculate the remainder",
    ];
    message.strip_prefix("attempt to ").is_some_and(|rest| {
        OPS.iter().any(|op| {
            rest.strip_prefix(op)
                .is_some_and(|r| r.trim_end() == " with overflow")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_needs_a_known_name_and_severity() {
        assert_eq!(
            sanitizer_header("==1==ERROR: AddressSanitizer: SEGV on unknown address"),
            Some(SanitizerKind::AddressSanitizer)
        );
        assert_eq!(
            sanitizer_header("==1==ERROR: HWAddressSanitizer: tag-mismatch"),
            Some(SanitizerKind::AddressSanitizer)
        );
        assert_eq!(
            sanitizer_header("==1==WARNING: AddressSanitizer failed to allocate 0x10 bytes"),
            None
        );
        assert_eq!(
            sanitizer_header("==1==WARNING: ASan doesn't fully support makecontext/swapcontext"),
            None
        );
        assert_eq!(sanitizer_header("ERROR: FooSanitizer: bar"), None);
        assert_eq!(sanitizer_header("error: could not compile `x`"), None);
    }

    #[test]
    fn ubsan_needs_a_location() {
        assert!(ubsan_runtime_error("t.c:12:5: runtime error: load of null pointer").is_some());
        assert!(
            ubsan_runtime_error("panic: runtime error: index out of range [3] with length 3")
                .is_none()
        );
        assert!(ubsan_runtime_error(":1:2: runtime error: x").is_none());
    }

    #[test]
    fn overflow_messages() {
        assert!(is_overflow("attempt to shift left with overflow"));
        assert!(is_overflow(
            "attempt to calculate the remainder with overflow"
        ));
        assert!(!is_overflow("attempt to divide by zero"));
        assert!(!is_overflow("attempt to add with overflowing hopes"));
        assert!(!is_overflow(
            "index out of bounds: the len is 3 but the index is 10"
        ));
    }

    #[test]
    fn a_huge_first_line_is_cut_not_dropped() {
        let stderr = format!(
            "==1==ERROR: AddressSanitizer: SEGV {}\nnext\n",
            "é".repeat(5000)
        );
        let report = find_sanitizer_report(&stderr).expect("a report");
        assert!(
            report
                .excerpt
                .starts_with("==1==ERROR: AddressSanitizer: SEGV é")
        );
        assert!(report.excerpt.len() <= EXCERPT_BYTES + 4);
    }

    #[test]
    fn panic_at_the_last_line_has_no_message() {
        assert_eq!(
            rust_panic("thread 'main' panicked at src/main.rs:1:1:", None),
            Some(SanitizerKind::RustPanic)
        );
    }
}
