//! Whether a sanitized artifact was compiled with the sanitizer flags, read from the artifact
//! itself (docs/design.md §2.2.7). evo's compilers (`pipeline::compilers`) append the flags to
//! every compile that goes through them, but a build that calls a compiler by its absolute path,
//! or `cc1` directly, goes around them. What it made still says how it was compiled: the scripts
//! also append `-g -grecord-gcc-switches`, so every compile unit they made carries its command
//! line (`DW_AT_producer`) and the addresses of its code. Every function of the artifact must lie
//! in a unit whose command line enables each of the workload's sanitizers after its last
//! `-fno-sanitize=`; a function in no unit (compiled without `-g`, or stripped of its debug
//! information) or in a unit compiled otherwise is named.
//!
//! The C runtime's start-up code has no unit; its functions are known by name (`_start`,
//! `frame_dummy`, …) and, where local, by the file symbol before them (`crtstuff.c`), each at
//! most once; so are AddressSanitizer's registrations of a unit's globals, by gcc's name for them
//! and a size no larger than they are (a small local function of a build's own so named passes).
//! What this does not see: a build that writes a unit's command line itself (a
//! compile by absolute path with the sanitizer flags and an opt-out attribute the scripts would
//! have refused), and a sanitizer runtime linked in statically (refused as uninstrumented).

use std::borrow::Cow;

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};

/// What the scripts append after the workload's flags, so each unit records its command line.
pub const RECORD_FLAGS: &str = "-g -grecord-gcc-switches";

/// Functions of the C runtime's start-up files, which have no compile unit: global ones by name
/// alone (a second definition would not link), local ones in the file named with them.
const START_UP_GLOBAL: &[&str] = &["_start", "_init", "_fini", "_dl_relocate_static_pie"];
const START_UP_LOCAL: &[(&str, &str)] = &[
    // A shared library's `_init` and `_fini` are local, after the linker's nameless file symbol.
    ("", "_init"),
    ("", "_fini"),
    ("crtstuff.c", "deregister_tm_clones"),
    ("crtstuff.c", "register_tm_clones"),
    ("crtstuff.c", "__do_global_dtors_aux"),
    ("crtstuff.c", "__do_global_ctors_aux"),
    ("crtstuff.c", "frame_dummy"),
];

/// The largest of the constructors and destructors AddressSanitizer adds to a unit with globals
/// (`_sub_I_00099_1`, `_sub_D_00099_0`), which gcc gives no debug information: 17 and 35 bytes
/// with gcc 12 on x86-64.
const ASAN_REGISTRATION_MAX: u64 = 64;

/// Whether a local function without a unit is one of AddressSanitizer's registrations of a unit's
/// globals, by gcc's name for them and their size.
fn asan_registration(name: &str, size: u64) -> bool {
    let Some(rest) = name
        .strip_prefix("_sub_I_")
        .or_else(|| name.strip_prefix("_sub_D_"))
    else {
        return false;
    };
    let numbered = rest.split('_').count() == 2
        && rest
            .split('_')
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    numbered && size <= ASAN_REGISTRATION_MAX
}

/// How many functions a report names before it counts the rest.
const NAMED: usize = 5;

/// The sanitizers `flags` leave enabled, in the order named: each `-fsanitize=` adds its list,
/// each `-fno-sanitize=` removes its list (`all` removes everything).
pub fn sanitizers(flags: &str) -> Vec<String> {
    let mut on: Vec<String> = Vec::new();
    for token in flags.split_whitespace() {
        if let Some(list) = token.strip_prefix("-fsanitize=") {
            for name in list.split(',').filter(|n| !n.is_empty()) {
                if !on.iter().any(|o| o == name) {
                    on.push(name.to_string());
                }
            }
        } else if let Some(list) = token.strip_prefix("-fno-sanitize=") {
            for name in list.split(',') {
                if name == "all" {
                    on.clear();
                }
                on.retain(|o| o != name);
            }
        }
    }
    on
}

/// Whether a unit's recorded command line enables every one of `wanted` after its last
/// `-fno-sanitize=` (which could have turned off a part of one of them).
fn enables(producer: &str, wanted: &[String]) -> bool {
    let tokens: Vec<&str> = producer.split_whitespace().collect();
    let after =
        (tokens.iter().rposition(|t| t.starts_with("-fno-sanitize="))).map_or(0, |last| last + 1);
    let on = sanitizers(&tokens[after..].join(" "));
    wanted.iter().all(|w| on.contains(w))
}

/// A compile unit: its command line as recorded and the address ranges of its code.
struct Unit {
    producer: String,
    ranges: Vec<(u64, u64)>,
}

/// Every compile unit of `file`'s debug information.
fn units(file: &object::File<'_>) -> Result<Vec<Unit>, String> {
    let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, gimli::Error> {
        Ok(match file.section_by_name(id.name()) {
            Some(section) => section.uncompressed_data().map_err(|_| gimli::Error::Io)?,
            None => Cow::Borrowed(&[]),
        })
    };
    let bad = |e: gimli::Error| format!("its debug information cannot be read ({e})");
    let sections = gimli::DwarfSections::load(load).map_err(bad)?;
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, endian));
    let mut units = Vec::new();
    let mut headers = dwarf.units();
    while let Some(header) = headers.next().map_err(bad)? {
        let unit = dwarf.unit(header).map_err(bad)?;
        let mut entries = unit.entries();
        let producer = match entries.next_dfs().map_err(bad)? {
            Some((_, root)) => match root.attr_value(gimli::DW_AT_producer).map_err(bad)? {
                Some(value) => dwarf
                    .attr_string(&unit, value)
                    .map_err(bad)?
                    .to_string_lossy()
                    .into_owned(),
                None => String::new(),
            },
            None => String::new(),
        };
        let mut ranges = Vec::new();
        let mut iter = dwarf.unit_ranges(&unit).map_err(bad)?;
        while let Some(r) = iter.next().map_err(bad)? {
            ranges.push((r.begin, r.end));
        }
        units.push(Unit { producer, ranges });
    }
    Ok(units)
}

/// Whether `bytes` are an ELF executable or shared library, the files [`uninstrumented`] reads.
pub fn is_program(bytes: &[u8]) -> bool {
    object::File::parse(bytes).is_ok_and(|f| {
        matches!(
            f.kind(),
            object::ObjectKind::Executable | object::ObjectKind::Dynamic
        )
    })
}

/// What in the ELF file `bytes` was not compiled with every sanitizer of `wanted`, one line per
/// function (at most [`NAMED`], then a count), or why the file cannot say; empty when all of it
/// was, and when the file is not an executable or a shared library (a script says nothing of how
/// anything was compiled).
pub fn uninstrumented(bytes: &[u8], wanted: &[String]) -> Vec<String> {
    if !is_program(bytes) {
        return Vec::new();
    }
    let Ok(file) = object::File::parse(bytes) else {
        return Vec::new();
    };
    let units = match units(&file) {
        Ok(units) => units,
        Err(why) => return vec![why],
    };
    let text_sections: Vec<object::SectionIndex> = (file.sections())
        .filter(|s| s.kind() == SectionKind::Text)
        .map(|s| s.index())
        .collect();
    let mut found = Vec::new();
    let mut start_up_seen: Vec<&str> = Vec::new();
    let mut current_file = String::new();
    let mut functions = 0usize;
    for symbol in file.symbols() {
        if symbol.kind() == SymbolKind::File {
            current_file = symbol.name().unwrap_or("").to_string();
            continue;
        }
        let in_text = (symbol.section_index()).is_some_and(|i| text_sections.contains(&i));
        if symbol.kind() != SymbolKind::Text || !symbol.is_definition() || !in_text {
            continue;
        }
        functions += 1;
        let name = symbol.name().unwrap_or("?");
        let address = symbol.address();
        let unit =
            (units.iter()).find(|u| u.ranges.iter().any(|&(b, e)| b <= address && address < e));
        match unit {
            Some(u) if enables(&u.producer, wanted) => {}
            Some(u) => found.push(format!(
                "`{name}`: compiled as `{}`",
                if u.producer.is_empty() {
                    "(no command line recorded)"
                } else {
                    u.producer.as_str()
                }
            )),
            None => {
                let start_up = if symbol.is_global() {
                    START_UP_GLOBAL.contains(&name)
                } else {
                    START_UP_LOCAL.contains(&(current_file.as_str(), name))
                };
                if start_up && !start_up_seen.contains(&name) {
                    start_up_seen.push(name);
                    continue;
                }
                if !symbol.is_global() && asan_registration(name, symbol.size()) {
                    continue;
                }
                found.push(format!(
                    "`{name}`: in no compile unit of the debug information"
                ));
            }
        }
    }
    if functions == 0 {
        return vec![
            "it has no symbol table (stripped): what its code was compiled with cannot be read"
                .into(),
        ];
    }
    if found.len() > NAMED {
        let more = found.len() - NAMED;
        found.truncate(NAMED);
        found.push(format!("and {more} more function(s)"));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    const FLAGS: &str = "-fsanitize=address,undefined -fno-sanitize-recover=all";

    fn cc(dir: &Path, args: &str) {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("cc {args}"))
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "cc {args}: {out:?}");
    }

    /// `main` in a.c and `g` (with a static helper) in b.c, b.c compiled with `b_flags`, linked
    /// with the sanitizers; what [`uninstrumented`] finds in the program.
    fn program(b_flags: &str, link_extra: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(
            p.join("a.c"),
            "int g(int);\nint main(int c, char **v) { (void)v; return g(c); }\n",
        )
        .unwrap();
        std::fs::write(
            p.join("b.c"),
            "static int h(int x) { return x * 3; }\nint g(int x) { return h(x) + 1; }\n",
        )
        .unwrap();
        cc(p, &format!("-O2 -c a.c {FLAGS} {RECORD_FLAGS}"));
        cc(p, &format!("-O2 -c b.c {b_flags}"));
        cc(p, &format!("a.o b.o -o prog {FLAGS} {link_extra}"));
        uninstrumented(&std::fs::read(p.join("prog")).unwrap(), &sanitizers(FLAGS))
    }

    #[test]
    fn the_sanitizers_a_command_line_leaves_on() {
        assert_eq!(sanitizers(FLAGS), ["address", "undefined"]);
        assert_eq!(
            sanitizers("-fsanitize=address -fno-sanitize=all -fsanitize=undefined"),
            ["undefined"]
        );
        assert!(enables(
            "GNU C17 12.2.0 -O2 -fsanitize=address,undefined -g",
            &sanitizers(FLAGS)
        ));
        // A part of one turned off after it: the unit is not fully instrumented.
        assert!(!enables(
            "GNU C17 -fsanitize=undefined -fno-sanitize=signed-integer-overflow",
            &sanitizers("-fsanitize=undefined")
        ));
        assert!(enables(
            "GNU C17 -fno-sanitize=undefined -fsanitize=undefined",
            &sanitizers("-fsanitize=undefined")
        ));
    }

    #[test]
    fn a_program_compiled_throughout_with_the_flags_passes() {
        assert_eq!(
            program(&format!("{FLAGS} {RECORD_FLAGS}"), ""),
            Vec::<String>::new()
        );
    }

    /// The attack: one file compiled around evo's compilers (no flags, or its own without the
    /// sanitizers, or the flags undone). Its functions are named.
    #[test]
    fn code_compiled_without_the_flags_is_named() {
        let found = program("", "").join("\n");
        assert!(found.contains("`g`: in no compile unit"), "{found}");
        let found = program(
            &format!("-g -grecord-gcc-switches {FLAGS} -fno-sanitize=undefined"),
            "",
        )
        .join("\n");
        assert!(found.contains("`g`: compiled as `GNU C"), "{found}");
        assert!(!found.contains("`main`"), "{found}");
        let found = program(&format!("{FLAGS} {RECORD_FLAGS}"), "-s");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("stripped"), "{found:?}");
    }

    /// A shared library built throughout with the flags passes: its `_init` and `_fini` come
    /// from the C runtime's crti.o, local and after the linker's nameless file symbol (found by a
    /// newcomer's sanitizer lane on cJSON's `libcjson.so`, refused as code compiled around evo's
    /// compilers). Its own code compiled without the flags is still named.
    #[test]
    fn a_shared_library_compiled_with_the_flags_passes() {
        let library = |flags: &str| {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path();
            std::fs::write(p.join("l.c"), "int g(int x) { return x * 3 + 1; }\n").unwrap();
            cc(p, &format!("-O2 -fPIC -c l.c {flags}"));
            cc(p, &format!("-shared l.o -o libl.so {FLAGS}"));
            uninstrumented(
                &std::fs::read(p.join("libl.so")).unwrap(),
                &sanitizers(FLAGS),
            )
        };
        assert_eq!(
            library(&format!("{FLAGS} {RECORD_FLAGS}")),
            Vec::<String>::new()
        );
        let found = library("").join("\n");
        assert!(found.contains("`g`: in no compile unit"), "{found}");
        // The attack on the exemption: the build's own uninstrumented code under the start-up
        // name, local, in a file of its own (a constructor, so nothing else of the file shows).
        // Two layers name it: its file is not the linker's nameless one, and a second `_fini` is
        // never exempt; the assertion fails only with both off (tried).
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(p.join("l.c"), "int g(int x) { return x * 3 + 1; }\n").unwrap();
        std::fs::write(
            p.join("m.c"),
            "static void __attribute__((constructor, used)) _fini(void) { }\n",
        )
        .unwrap();
        cc(p, &format!("-O0 -fPIC -c l.c {FLAGS} {RECORD_FLAGS}"));
        cc(p, "-O0 -fPIC -c m.c");
        cc(p, &format!("-shared l.o m.o -o libl.so {FLAGS}"));
        let found = uninstrumented(
            &std::fs::read(p.join("libl.so")).unwrap(),
            &sanitizers(FLAGS),
        )
        .join("\n");
        assert!(found.contains("`_fini`: in no compile unit"), "{found}");
    }

    #[test]
    fn what_is_not_a_program_says_nothing() {
        assert!(uninstrumented(b"#!/bin/sh\nexec ./prog \"$@\"\n", &sanitizers(FLAGS)).is_empty());
    }
}
