//! Lane probes (docs/design.md §2.2.3): code a patch adds that can tell which lane it runs in.
//! evo runs the same candidate in several lanes — the timed runs, the differential check, the
//! sanitizer build, callgrind's count — and trusts that it behaves the same in each. Code that
//! asks "am I under a sanitizer, under valgrind, being timed, run by evo?" can do the work where
//! it is counted and skip it where it is timed, or compile undefined behaviour only where no
//! sanitizer looks. The lanes cannot see that; the patch can be read for it.
//!
//! Every added line (`+`) of every text file of the patch is scanned for the probes below; a hit
//! fails the `lane probes` gate with its file, line and the line itself (escaped). In C, C++,
//! CUDA and Rust files the patch changes in place (not files it adds or renames, whose extension
//! says nothing of how they are read), the comments of a line are left out first (a comment can
//! tell nothing), but only where no reading of the line by the compiler could make them code (see
//! [`code_of_line`]); everywhere else the whole line is scanned. A workload that
//! needs one legitimately allows it by name (`"allow_probes": ["posix_fadvise"]`), and the gate's
//! detail, in the result and the receipt, says what was allowed. This is a tripwire, not a
//! proof: obfuscated code (a computed symbol name, a syscall by number) can evade it, and the
//! other defences (the sandbox, the disagreement rule of §3.12.1) do not rely on it.

use crate::spec::values::escape_controls;

/// One thing a patch may not add without the workload's leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// The name shown and allowed (`allow_probes`).
    pub name: &'static str,
    /// What the probe can tell.
    pub detects: &'static str,
    needle: &'static str,
    /// Matched without regard to ASCII case.
    any_case: bool,
    /// The character before the match may not be part of an identifier.
    word_start: bool,
    /// The character after the match may not be part of an identifier.
    word_end: bool,
}

const fn probe(name: &'static str, detects: &'static str, needle: &'static str) -> Probe {
    Probe {
        name,
        detects,
        needle,
        any_case: false,
        word_start: false,
        word_end: false,
    }
}

/// `probe` matched as a whole identifier.
const fn word(name: &'static str, detects: &'static str, needle: &'static str) -> Probe {
    Probe {
        word_start: true,
        word_end: true,
        ..probe(name, detects, needle)
    }
}

const SANITIZER: &str = "a sanitizer build";
const VALGRIND: &str = "valgrind (the instruction count)";
const PRELOAD: &str = "a preloaded library (valgrind, a sanitizer)";
const EVO: &str = "evo's own lanes";
const SELF: &str = "how it is being run";
const CACHE: &str = "or changes the page cache and memory state";
const TIMING: &str = "instrumentation from its own slowdown";
const BUILD: &str = "how it was compiled";

/// Every probe, in the order they are looked for on a line.
pub const PROBES: &[Probe] = &[
    probe("__SANITIZE_", SANITIZER, "__SANITIZE_"),
    probe("_sanitizer", SANITIZER, "_sanitizer"),
    probe("no_sanitize", SANITIZER, "no_sanitize"),
    probe("sanitize(", SANITIZER, "sanitize("),
    probe("sanitize =", SANITIZER, "sanitize ="),
    probe("sanitize=", SANITIZER, "sanitize="),
    probe("__asan", SANITIZER, "__asan"),
    probe("__ubsan", SANITIZER, "__ubsan"),
    probe("__tsan", SANITIZER, "__tsan"),
    probe("__msan", SANITIZER, "__msan"),
    probe("__lsan", SANITIZER, "__lsan"),
    probe("__hwasan", SANITIZER, "__hwasan"),
    probe("SAN_OPTIONS", SANITIZER, "SAN_OPTIONS"),
    probe("-fsanitize", SANITIZER, "-fsanitize"),
    probe("-fno-sanitize", SANITIZER, "-fno-sanitize"),
    Probe {
        any_case: true,
        ..probe("valgrind", VALGRIND, "valgrind")
    },
    Probe {
        any_case: true,
        ..probe("callgrind", VALGRIND, "callgrind")
    },
    Probe {
        any_case: true,
        ..probe("cachegrind", VALGRIND, "cachegrind")
    },
    probe("vgpreload", PRELOAD, "vgpreload"),
    probe("LD_PRELOAD", PRELOAD, "LD_PRELOAD"),
    probe("LD_AUDIT", PRELOAD, "LD_AUDIT"),
    word("dl_iterate_phdr", PRELOAD, "dl_iterate_phdr"),
    word("dlinfo", PRELOAD, "dlinfo"),
    word("_r_debug", PRELOAD, "_r_debug"),
    Probe {
        word_start: true,
        ..probe("EVO_", EVO, "EVO_")
    },
    probe("/proc/", SELF, "/proc/"),
    word("environ", SELF, "environ"),
    probe("env::vars", SELF, "env::vars"),
    word("getppid", SELF, "getppid"),
    word("ptrace", SELF, "ptrace"),
    word("prctl", SELF, "prctl"),
    word("personality", SELF, "personality"),
    word("sched_getaffinity", SELF, "sched_getaffinity"),
    word("sched_getcpu", SELF, "sched_getcpu"),
    word("getrlimit", SELF, "getrlimit"),
    word("prlimit", SELF, "prlimit"),
    word("getrusage", SELF, "getrusage"),
    word("mincore", CACHE, "mincore"),
    word("fincore", CACHE, "fincore"),
    probe("fadvise", CACHE, "fadvise"),
    probe("madvise", CACHE, "madvise"),
    word("readahead", CACHE, "readahead"),
    word("cachestat", CACHE, "cachestat"),
    probe("clflush", CACHE, "clflush"),
    probe("drop_caches", CACHE, "drop_caches"),
    word("mlock", CACHE, "mlock"),
    word("mlockall", CACHE, "mlockall"),
    probe("rdtsc", TIMING, "rdtsc"),
    probe("rdpmc", TIMING, "rdpmc"),
    word("perf_event_open", TIMING, "perf_event_open"),
    word("clock_gettime", TIMING, "clock_gettime"),
    word("gettimeofday", TIMING, "gettimeofday"),
    Probe {
        word_start: true,
        ..probe("clock()", TIMING, "clock()")
    },
    probe("Instant::now", TIMING, "Instant::now"),
    probe("SystemTime::now", TIMING, "SystemTime::now"),
    probe("std::chrono", TIMING, "std::chrono"),
    word("__OPTIMIZE__", BUILD, "__OPTIMIZE__"),
    word("__NO_INLINE__", BUILD, "__NO_INLINE__"),
    word("NDEBUG", BUILD, "NDEBUG"),
    word("debug_assertions", BUILD, "debug_assertions"),
];

/// Environment reads whose name is not a string literal (a computed name hides what is asked).
const ENV_READS: &[&str] = &["getenv(", "secure_getenv(", "env::var(", "env::var_os("];

/// The name of the computed-name environment read, for `allow_probes`.
pub const COMPUTED_GETENV: &str = "getenv of a computed name";

/// One probe found on an added line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeHit {
    pub probe: &'static str,
    pub detects: &'static str,
    pub file: String,
    /// The line's number in the new file.
    pub line: u32,
    /// The added line, control characters escaped, cut to [`SHOWN_CHARS`].
    pub text: String,
}

/// The most characters of a line quoted.
pub const SHOWN_CHARS: usize = 160;

/// Whether `name` is a probe `allow_probes` may name.
pub fn is_probe_name(name: &str) -> bool {
    name == COMPUTED_GETENV || PROBES.iter().any(|p| p.name == name)
}

/// What the scan found: the hits that fail the gate, and those the workload allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeScan {
    pub hits: Vec<ProbeHit>,
    pub allowed: Vec<ProbeHit>,
}

/// Scans the added lines of `patch`; a hit whose probe is in `allow` goes to `allowed`.
pub fn scan_probes(patch: &[u8], allow: &[String]) -> ProbeScan {
    let mut scan = ProbeScan::default();
    let mut in_comment = false;
    for added in new_side_lines(patch) {
        if added.first_of_hunk {
            in_comment = false;
        }
        let text = String::from_utf8_lossy(added.text);
        let code = if added.in_place && comments_known(&added.file) {
            code_of_line(&text, &mut in_comment)
        } else {
            text.to_string()
        };
        if !added.added {
            continue;
        }
        for (name, detects) in probes_on(&code) {
            let hit = ProbeHit {
                probe: name,
                detects,
                file: escape_controls(&added.file),
                line: added.line,
                text: shown_line(&text),
            };
            if allow.iter().any(|a| a == name) {
                scan.allowed.push(hit);
            } else {
                scan.hits.push(hit);
            }
        }
    }
    scan
}

fn shown_line(text: &str) -> String {
    let trimmed = text.trim();
    let cut: String = trimmed.chars().take(SHOWN_CHARS).collect();
    let more = if cut.len() < trimmed.len() { "…" } else { "" };
    format!("{}{more}", escape_controls(&cut))
}

/// The probes on one line, each once.
fn probes_on(text: &str) -> Vec<(&'static str, &'static str)> {
    let mut found: Vec<(&'static str, &'static str)> = PROBES
        .iter()
        .filter(|p| matches(p, text))
        .map(|p| (p.name, p.detects))
        .collect();
    if computed_env_read(text) {
        found.push((COMPUTED_GETENV, "what it is asked under a name it hides"));
    }
    found
}

fn is_ident(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn matches(p: &Probe, text: &str) -> bool {
    let (hay, needle) = if p.any_case {
        (text.to_ascii_lowercase(), p.needle.to_ascii_lowercase())
    } else {
        (text.to_string(), p.needle.to_string())
    };
    hay.match_indices(&needle).any(|(at, m)| {
        let before = hay[..at].chars().next_back();
        let after = hay[at + m.len()..].chars().next();
        !(p.word_start && is_ident(before) || p.word_end && is_ident(after))
    })
}

/// `getenv(x)` where `x` does not start with a string literal.
fn computed_env_read(text: &str) -> bool {
    ENV_READS.iter().any(|call| {
        text.match_indices(call).any(|(at, m)| {
            let before = text[..at].chars().next_back();
            let rest = text[at + m.len()..].trim_start();
            !is_ident(before) && !rest.starts_with('"') && !rest.starts_with(')')
        })
    })
}

/// Files whose comments [`code_of_line`] can leave out: C, C++, CUDA and Rust, whose comments
/// are `//` and `/* */` and whose string and character literals all need a `"` or a `'`.
fn comments_known(file: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "c", "h", "cc", "cp", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "inl", "ipp", "tcc",
        "cu", "cuh", "rs",
    ];
    let name = file.rsplit('/').next().unwrap_or(file);
    name.rsplit_once('.')
        .is_some_and(|(_, ext)| EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
}

/// The code of one line of a C, C++, CUDA or Rust file, its comments replaced by a space;
/// `in_comment` says whether a block comment is open, before the line and after it.
///
/// The scan sees a hunk, not the file, so it cannot know whether the compiler is inside a string
/// when a line begins (a Rust string spans lines; so does a C++ raw string, or a C string
/// continued with a backslash). It therefore leaves a comment out only where that cannot matter:
///
/// - a line holding a `"`, ending in a backslash, or holding the trigraph `??/` (a backslash to
///   some compilers) is scanned whole, and closes what the scan thought an open comment. Without
///   a `"` the compiler cannot leave a string on this line, so a line the scan thinks commented is
///   either a comment or string data to the compiler, never code; without a line splice no
///   `*\`+`/` ends a comment where the scan does not see it;
/// - after a `'` (a character literal, or a Rust lifetime the scan cannot tell from one) the rest
///   of the line is code.
///
/// Whatever the scan cannot read this way is scanned as code: it may flag a comment, never miss
/// code.
fn code_of_line(line: &str, in_comment: &mut bool) -> String {
    if line.contains('"') || line.trim_end().ends_with('\\') || line.contains("??/") {
        *in_comment = false;
        return line.to_string();
    }
    let mut code = String::with_capacity(line.len());
    let mut rest = line;
    loop {
        if *in_comment {
            match rest.find("*/") {
                Some(at) => {
                    code.push(' ');
                    rest = &rest[at + 2..];
                    *in_comment = false;
                }
                None => return code,
            }
            continue;
        }
        let next = ["//", "/*", "'"]
            .iter()
            .filter_map(|m| rest.find(m).map(|at| (at, *m)))
            .min();
        match next {
            Some((at, "//")) => {
                code.push_str(&rest[..at]);
                return code;
            }
            Some((at, "/*")) => {
                code.push_str(&rest[..at]);
                code.push(' ');
                rest = &rest[at + 2..];
                *in_comment = true;
            }
            _ => {
                code.push_str(rest);
                return code;
            }
        }
    }
}

/// A line of the new side of a hunk of a text file (added or context), with its number in the
/// new file.
struct NewLine<'a> {
    file: String,
    line: u32,
    text: &'a [u8],
    /// An added (`+`) line, not context.
    added: bool,
    /// The hunk's first line: what came before it is not in the patch.
    first_of_hunk: bool,
    /// The file is changed where it was (`--- a/X`, `+++ b/X`): it existed in the baseline under
    /// this name, not added or renamed by the patch.
    in_place: bool,
}

/// The new side (context and added lines) of every hunk of `patch`, read from its
/// `@@ -a,b +c,d @@` counts so a hunk line that looks like a header (`+++ x`, an added `++ x`)
/// is still a line.
fn new_side_lines(patch: &[u8]) -> Vec<NewLine<'_>> {
    let mut out = Vec::new();
    let mut file = String::new();
    let mut old_file: Option<String> = None;
    let mut in_place = false;
    let (mut old_left, mut new_left, mut number) = (0u32, 0u32, 0u32);
    let mut first = false;
    for raw in patch.split(|b| *b == b'\n') {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if old_left > 0 || new_left > 0 {
            let mut push = |added: bool, text| {
                out.push(NewLine {
                    file: file.clone(),
                    line: number,
                    text,
                    added,
                    first_of_hunk: std::mem::take(&mut first),
                    in_place,
                });
            };
            match line.first() {
                Some(b'+') => {
                    push(true, &line[1..]);
                    new_left = new_left.saturating_sub(1);
                    number += 1;
                }
                Some(b'-') => old_left = old_left.saturating_sub(1),
                Some(b'\\') => {}
                _ => {
                    push(false, line.get(1..).unwrap_or_default());
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                    number += 1;
                }
            }
            continue;
        }
        if let Some(path) = line.strip_prefix(b"--- ") {
            old_file = Some(header_path(path, "a/"));
        } else if let Some(path) = line.strip_prefix(b"+++ ") {
            file = header_path(path, "b/");
            in_place = old_file.take().is_some_and(|old| old == file);
        } else if line.starts_with(b"@@ ") {
            if let Some((old, new, start)) = hunk_counts(line) {
                (old_left, new_left, number) = (old, new, start);
                first = true;
            }
        }
    }
    out
}

/// The path of a `--- a/X` or `+++ b/X` header line (after the marker), without `prefix`.
fn header_path(path: &[u8], prefix: &str) -> String {
    let path = String::from_utf8_lossy(path);
    let path = path.split('\t').next().unwrap_or("").trim_matches('"');
    path.strip_prefix(prefix).unwrap_or(path).to_string()
}

/// `@@ -a,b +c,d @@`: the old and new line counts (1 when absent) and the new start.
fn hunk_counts(line: &[u8]) -> Option<(u32, u32, u32)> {
    let text = std::str::from_utf8(line).ok()?;
    let mut parts = text.split_whitespace().skip(1);
    let range = |part: &str| -> Option<(u32, u32)> {
        let (start, count) = match part.split_once(',') {
            Some((s, c)) => (s.parse().ok()?, c.parse().ok()?),
            None => (part.parse().ok()?, 1),
        };
        Some((start, count))
    };
    let (_, old) = range(parts.next()?.strip_prefix('-')?)?;
    let (start, new) = range(parts.next()?.strip_prefix('+')?)?;
    Some((old, new, start))
}

/// The gate's detail for hits (one line: the PR text shows a detail's first line).
pub fn hits_text(hits: &[ProbeHit]) -> String {
    let shown: Vec<String> = hits
        .iter()
        .take(5)
        .map(|h| {
            format!(
                "{}:{}: `{}` (can tell {}) in `{}`",
                h.file, h.line, h.probe, h.detects, h.text
            )
        })
        .collect();
    let more = match hits.len() {
        n if n > 5 => format!("; and {} more", n - 5),
        _ => String::new(),
    };
    format!("{}{more}", shown.join("; "))
}

/// A patch that fails the `lane probes` gate: the probes it adds that the workload does not
/// allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the patch adds code that can tell which lane it runs in (timed, checked, sanitized, \
     counted), so it could behave otherwise where it is judged: {}; a workload that needs one \
     lists it in `allow_probes`",
    hits_text(hits)
)]
pub struct LaneProbed {
    pub hits: Vec<ProbeHit>,
}

/// The `lane probes` gate's detail: `Ok` when nothing unallowed was found (naming what the
/// workload allowed), `Err` with the hits otherwise.
pub fn gate_detail(scan: &ProbeScan) -> Result<String, LaneProbed> {
    if !scan.hits.is_empty() {
        return Err(LaneProbed {
            hits: scan.hits.clone(),
        });
    }
    if scan.allowed.is_empty() {
        return Ok("no added line probes the lane it runs in".to_string());
    }
    Ok(format!(
        "no added line probes the lane it runs in, but for what the workload allows \
         (allow_probes): {}",
        hits_text(&scan.allowed)
    ))
}

#[cfg(test)]
#[path = "probes_tests.rs"]
mod tests;
