//! The sanitizer lane's compilers (docs/design.md §2.2.7): shell scripts named `cc`, `gcc`,
//! `clang`, `c++`, `g++` and `clang++`, each running the real compiler of that name with the
//! workload's `sanitize.flags` appended, so the sanitized binary comes from the candidate's own
//! build configuration (its Makefile edits, `-D` flags and new files) with instrumentation no
//! flag of the build can undo: appended flags come last, and the last of `-fsanitize=` /
//! `-fno-sanitize=` wins.
//!
//! Before a compile that names a source file, the script preprocesses it with the same
//! arguments (the compiler's own view: macros expanded, `_Pragma` turned into `#pragma`) and
//! refuses it, exiting [`REFUSED`], when the text turns instrumentation off: a `no_sanitize` or
//! `no_address_safety_analysis` attribute, an `optimize` attribute or pragma, a clang attribute
//! pragma, or a definition hooking the sanitizer runtime's reports or options. A flag that
//! exempts files from instrumentation (`-fsanitize-ignorelist=`, `-fsanitize-blacklist=`) is
//! refused too. The build then fails with the script's message, and so does the `sanitizers`
//! gate. The scripts also refuse a compile whose preprocessed text differs with and without the
//! flags in a file that is neither a system header (below `/usr/`) nor, by its content, one of
//! the baseline tree's files: code of the candidate's that takes another path where a sanitizer
//! is compiled in would leave what is timed unchecked, however the build names or copies it.
//!
//! What this does not stop: a build that calls a compiler by its absolute path, or one of the
//! compiler's own programs, bypasses the scripts (docs/design.md §2.2.7 says what is checked
//! of that).

use std::path::{Path, PathBuf};

/// The exit code of a compile the scripts refuse.
pub const REFUSED: i32 = 97;

/// The compilers wrapped, by the name a build calls them.
pub const NAMES: &[&str] = &["cc", "gcc", "clang", "c++", "g++", "clang++"];

/// What in the preprocessed text turns instrumentation off (an extended regular expression for
/// `grep -E`); none of it appeared in the common C and C++ headers of gcc 12 tried with the
/// sanitizer flags on (docs/design.md §2.2.7 lists them).
pub const OPT_OUTS: &str = "no_sanitize|no_address_safety_analysis|\
disable_sanitizer_instrumentation|__attribute__.*[^A-Za-z0-9_]_*optimize_*[[:space:]]*\\(|\
gnu::_*optimize|#[[:space:]]*pragma[[:space:]]+(GCC[[:space:]]+optimize|clang[[:space:]]+\
(attribute|optimize))|__(asan|ubsan|lsan|msan|tsan)_default_options|__ubsan_handle_|\
__asan_on_error|__sanitizer_set_death_callback";

/// `'text'` for `sh`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The name of the file beside the scripts that lists the hex sha256 of each of the baseline
/// tree's files, one per line ([`write`]).
pub const KNOWN: &str = "baseline-files.sha256";

/// The script standing in for the compiler at `real`, appending `flags`; a compile whose
/// preprocessed text differs under `flags` in a file outside `/usr/` whose content's sha256 is not
/// a line of `known` is refused.
pub fn script(real: &Path, flags: &str, known: &Path) -> String {
    format!(
        r#"#!/bin/sh
# evo's sanitizer lane: {real} with the sanitizer flags appended, after a search of each
# source's preprocessed text for anything that turns instrumentation off.
real={real_q}
flags={flags_q}
known={known_q}
for a do
  case $a in
    -fsanitize-ignorelist=*|-fsanitize-blacklist=*)
      echo "evo sanitizer lane: refused: $a exempts code from instrumentation" >&2
      exit {REFUSED};;
  esac
done
scan() {{
  count=$#
  skip=0
  source=0
  for a do
    if [ "$skip" = 1 ]; then skip=0; continue; fi
    case $a in
      -o|-MF|-MT|-MQ) skip=1; continue;;
      -c|-S|-M|-MM|-MD|-MMD|-MP|-o?*) continue;;
      *.c|*.cc|*.cp|*.cpp|*.cxx|*.c++|*.C|*.i|*.ii) source=1;;
    esac
    set -- "$@" "$a"
  done
  shift "$count"
  [ "$source" = 1 ] || return 0
  t=$(mktemp -d) || {{ echo "evo sanitizer lane: refused: no temporary folder" >&2; return 1; }}
  # The compiler's view with the flags, once: searched for opt-outs, then compared.
  # shellcheck disable=SC2086
  "$real" -E "$@" $flags > "$t/sanitized.i" 2>/dev/null
  found=$(grep -E {pattern} "$t/sanitized.i" | head -n 3)
  if [ -n "$found" ]; then
    echo "evo sanitizer lane: refused: the preprocessed source turns instrumentation off:" >&2
    echo "$found" >&2
    rm -rf "$t"
    return 1
  fi
  # Each line of the compiler's view, after the file it comes from (its line markers); blank
  # lines and markers left out, so only text that differs counts.
  tag='/^# [0-9]+ "/ {{ f = $3; gsub(/"/, "", f); next }} /^[[:space:]]*$/ {{ next }} {{ print f "\t" $0 }}'
  "$real" -E "$@" 2>/dev/null | awk "$tag" > "$t/plain"
  awk "$tag" "$t/sanitized.i" > "$t/sanitized"
  diff "$t/plain" "$t/sanitized" | sed -n 's/^[<>] //p' > "$t/differ"
  # Where text differs, the file must be a system header or hold what one of the baseline's
  # files holds (the baseline's own code, whatever its name now); the compiler's pseudo-files
  # (`<built-in>`, `<command-line>`) hold no text of anyone's.
  hit=
  cut -f1 "$t/differ" | sort -u > "$t/files"
  while IFS= read -r f; do
    case $f in '<'*) continue;; esac
    r=$(realpath -m -- "$f")
    case $r in /usr/*) continue;; esac
    h=$(sha256sum < "$r" 2>/dev/null | cut -d' ' -f1)
    if [ -z "$h" ] || ! grep -qx "$h" "$known"; then hit="$hit $f"; fi
  done < "$t/files"
  if [ -n "$hit" ]; then
    echo "evo sanitizer lane: refused: code that is not the baseline's compiles to other code under the sanitizer flags ($hit):" >&2
    head -n 6 "$t/differ" >&2
    rm -rf "$t"
    return 1
  fi
  rm -rf "$t"
  return 0
}}
scan "$@" || exit {REFUSED}
# shellcheck disable=SC2086
exec "$real" "$@" $flags
"#,
        real = real.display(),
        real_q = quote(&real.display().to_string()),
        flags_q = quote(&format!("{flags} {}", super::instrumented::RECORD_FLAGS)),
        known_q = quote(&known.display().to_string()),
        pattern = quote(OPT_OUTS),
    )
}

/// Writes a script for each of [`NAMES`] found on `path` (a `PATH` value) into `dir` (created
/// anew), with `known` (the hex sha256 of each of the baseline tree's files) in [`KNOWN`] beside
/// them, and returns the folder; a name found nowhere is left out.
pub fn write(
    dir: &Path,
    path: &str,
    flags: &str,
    known: &std::collections::BTreeSet<String>,
) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let list = dir.join(KNOWN);
    let lines: String = known.iter().map(|h| format!("{h}\n")).collect();
    std::fs::write(&list, lines)?;
    for name in NAMES {
        let Some(real) = std::env::split_paths(path)
            .map(|d| d.join(name))
            .find(|p| p.is_file() && !p.starts_with(dir))
        else {
            continue;
        };
        let file = dir.join(name);
        std::fs::write(&file, script(&real, flags, &list))?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The scripts for this machine's compilers (the suite needs a C compiler, README).
    fn tools(flags: &str) -> (tempfile::TempDir, PathBuf) {
        tools_knowing(flags, &[])
    }

    /// As [`tools`], with `known` the contents of the baseline tree's files.
    fn tools_knowing(flags: &str, known: &[&str]) -> (tempfile::TempDir, PathBuf) {
        use sha2::{Digest, Sha256};
        let dir = tempfile::tempdir().unwrap();
        let known = known
            .iter()
            .map(|text| hex::encode(Sha256::digest(text.as_bytes())))
            .collect();
        let path = std::env::var("PATH").unwrap();
        let tools = write(&dir.path().join("bin"), &path, flags, &known).unwrap();
        assert!(tools.join("cc").is_file(), "no `cc` on the PATH");
        (dir, tools)
    }

    fn compile(tools: &Path, dir: &Path, source: &str, args: &[&str]) -> std::process::Output {
        std::fs::write(dir.join("a.c"), source).unwrap();
        Command::new(tools.join("cc"))
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
    }

    const UB: &str = "#include <stdio.h>\n#include <limits.h>\n\
        int main(int c, char **v) { (void)v; int x = INT_MAX; x += c; printf(\"%d\\n\", x); return 0; }\n";

    #[test]
    fn a_build_s_own_flags_cannot_undo_the_appended_ones() {
        let (dir, tools) = tools("-fsanitize=undefined -fno-sanitize-recover=all");
        let out = compile(
            &tools,
            dir.path(),
            UB,
            &["-O2", "-fno-sanitize=undefined", "-o", "a", "a.c"],
        );
        assert!(out.status.success(), "{out:?}");
        let run = Command::new(dir.path().join("a")).output().unwrap();
        assert!(
            !run.status.success(),
            "the overflow was not caught: {run:?}"
        );
        assert!(String::from_utf8_lossy(&run.stderr).contains("signed integer overflow"));
    }

    #[test]
    fn an_opt_out_hidden_behind_a_macro_or_a_pragma_is_refused() {
        let (dir, tools) = tools("-fsanitize=undefined");
        for source in [
            "#define QUIET __attribute__((no_sanitize(\"undefined\")))\nQUIET int f(int x) { return x + 1; }\n",
            "#define N(a, b) a##b\n__attribute__((N(no_, sanitize_address))) int f(int x) { return x; }\n",
            "_Pragma(\"GCC optimize(\\\"O0\\\")\") int f(int x) { return x; }\n",
            "__attribute__((optimize(\"no-sanitize\"))) int f(int x) { return x; }\n",
            "const char *__ubsan_default_options(void) { return \"halt_on_error=0\"; }\n",
        ] {
            let out = compile(&tools, dir.path(), source, &["-c", "-o", "a.o", "a.c"]);
            assert_eq!(out.status.code(), Some(REFUSED), "{source}\n{out:?}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("turns instrumentation off"));
        }
        let out = compile(
            &tools,
            dir.path(),
            "int f(int x) { return x; }\n",
            &["-fsanitize-ignorelist=x.txt", "-c", "a.c"],
        );
        assert_eq!(out.status.code(), Some(REFUSED), "{out:?}");
        // Plain code, a `-D` flag and a dependency file go through.
        let out = compile(
            &tools,
            dir.path(),
            "int f(int x) { return x + N; }\n",
            &["-DN=2", "-MD", "-MF", "a.d", "-c", "-o", "a.o", "a.c"],
        );
        assert!(out.status.success(), "{out:?}");
        assert!(dir.path().join("a.o").is_file() && dir.path().join("a.d").is_file());
    }

    /// The attack: code of the candidate's that takes another path where a sanitizer is
    /// compiled in (a macro the sanitizer flags define, however spelled), so the sanitized binary
    /// never runs what is timed. With every file's content known (as if all were the baseline's:
    /// the comparison switched off), every one compiles.
    #[test]
    fn code_that_is_not_the_baseline_s_and_compiles_otherwise_under_the_sanitizer_is_refused() {
        let sources = [
            "int f(int x) {\n#ifdef __SANITIZE_ADDRESS__\n return x;\n#else\n return x * 2;\n#endif\n}\n",
            "#define S(a) __SANITIZE_##a##__\n#if defined(__SANITIZE_ADDRESS__)\n#define FAST 0\n#else\n#define FAST 1\n#endif\nint f(int x) { return FAST ? x * 2 : x; }\n",
            "#include \"k.h\"\nint f(int x) { return K * x; }\n",
        ];
        let header = "#ifdef __SANITIZE_ADDRESS__\n#define K 1\n#else\n#define K 2\n#endif\n";
        let flags = "-fsanitize=address";
        let mut everything = sources.to_vec();
        everything.push(header);
        for (known, off) in [(&[][..], false), (&everything[..], true)] {
            let (dir, tools) = tools_knowing(flags, known);
            std::fs::write(dir.path().join("k.h"), header).unwrap();
            for source in sources {
                let out = compile(
                    &tools,
                    dir.path(),
                    source,
                    &["-O2", "-c", "-o", "a.o", "a.c"],
                );
                if off {
                    assert!(out.status.success(), "{source}\n{out:?}");
                    continue;
                }
                assert_eq!(out.status.code(), Some(REFUSED), "{source}\n{out:?}");
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    err.contains("compiles to other code under the sanitizer"),
                    "{err}"
                );
            }
        }
        // The baseline's own header and file compile, whatever differs in them; a file of the
        // candidate's that the flags leave alone compiles; one that takes the difference from
        // the baseline's header is refused (the text that differs is its own).
        let (dir, tools) = tools_knowing(flags, &[header, sources[2]]);
        std::fs::write(dir.path().join("k.h"), header).unwrap();
        let out = compile(&tools, dir.path(), sources[2], &["-c", "a.c"]);
        assert!(out.status.success(), "{out:?}");
        let out = compile(
            &tools,
            dir.path(),
            "int f(int x) { return x + 1; }\n",
            &["-c", "a.c"],
        );
        assert!(out.status.success(), "{out:?}");
        let own = "#include \"k.h\"\nint g(int x) { return K + x; }\n";
        let out = compile(&tools, dir.path(), own, &["-c", "a.c"]);
        assert_eq!(out.status.code(), Some(REFUSED), "{out:?}");
        // A copy of the candidate's file under another name, outside the tree (as a build can
        // write one to /tmp), is refused as well: it is told apart by content, not by name.
        let elsewhere = tempfile::tempdir().unwrap();
        let copy = elsewhere.path().join("copy.c");
        std::fs::write(&copy, sources[0]).unwrap();
        let out = Command::new(tools.join("cc"))
            .args(["-c", "-o"])
            .arg(elsewhere.path().join("copy.o"))
            .arg(&copy)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(REFUSED), "{out:?}");
    }
}
