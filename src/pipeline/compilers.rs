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
//! gate.
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

/// The script standing in for the compiler at `real`, appending `flags`.
pub fn script(real: &Path, flags: &str) -> String {
    format!(
        r#"#!/bin/sh
# evo's sanitizer lane: {real} with the sanitizer flags appended, after a search of each
# source's preprocessed text for anything that turns instrumentation off.
real={real_q}
flags={flags_q}
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
  # shellcheck disable=SC2086
  found=$("$real" -E "$@" $flags 2>/dev/null | grep -E {pattern} | head -n 3)
  [ -z "$found" ] && return 0
  echo "evo sanitizer lane: refused: the preprocessed source turns instrumentation off:" >&2
  echo "$found" >&2
  return 1
}}
scan "$@" || exit {REFUSED}
# shellcheck disable=SC2086
exec "$real" "$@" $flags
"#,
        real = real.display(),
        real_q = quote(&real.display().to_string()),
        flags_q = quote(flags),
        pattern = quote(OPT_OUTS),
    )
}

/// Writes a script for each of [`NAMES`] found on `path` (a `PATH` value) into `dir` (created
/// anew), and returns the folder; a name found nowhere is left out.
pub fn write(dir: &Path, path: &str, flags: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    for name in NAMES {
        let Some(real) = std::env::split_paths(path)
            .map(|d| d.join(name))
            .find(|p| p.is_file() && !p.starts_with(dir))
        else {
            continue;
        };
        let file = dir.join(name);
        std::fs::write(&file, script(&real, flags))?;
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
        let dir = tempfile::tempdir().unwrap();
        let path = std::env::var("PATH").unwrap();
        let tools = write(&dir.path().join("bin"), &path, flags).unwrap();
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
}
