#!/usr/bin/env bash
# Builds the release tinygpt against the cached PyTorch 2.13.0 wheel (scripts/setup-torch installs
# it first if it is not there; fast when it is) and copies the binary to bin/tinygpt in this tree,
# where run.sh runs it.
#
#   ./build.sh              the normal release build
#   ./build.sh --sanitize   AddressSanitizer + overflow checks (RUSTC_BOOTSTRAP=1 on the stable
#                           toolchain), appended to the rustflags the tree's Cargo configuration
#                           declares, for evo's sanitizer lane; same place, bin/tinygpt
#
# Extra arguments go to `cargo build`.
#
# The Cargo target directory is shared by every tree on the machine and lives outside the clone:
#   ${EVO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evo}/cargo-target/tinygpt        (release)
#   ${EVO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evo}/cargo-target/tinygpt-asan   (sanitizer)
# (TINYGPT_TARGET_DIR overrides it.) The registry dependencies (tch, torch-sys and its C++
# wrapper) are compiled there once per machine. The tinygpt crate itself is not: Cargo hashes a
# path package relative to its workspace root, so every tree's tinygpt gets the SAME artifact
# names and fingerprint there, and a tree whose sources are older than the fingerprint left by
# another tree would be taken as up to date and get that tree's binary. So, holding an exclusive
# flock on the target directory, the script removes tinygpt's own artifacts (`cargo clean -p
# tinygpt`, a few MB; the dependencies stay), builds (about 5 s for tinygpt alone) and copies the
# binary into this tree before releasing the lock: trees building at the same time (unsandboxed,
# evo builds the baseline and a candidate in parallel) wait for each other and each gets its own
# binary.
#
# The sanitizer build does not compile torch-sys's C++ wrapper (libtch.a) a second time. With
# RUSTFLAGS carrying -Zsanitizer, the cc crate would compile the wrapper instrumented, and that
# compile is most of a cold sanitizer build (about 11 of 14 minutes on a 2-core machine). The
# wrapper is a thin layer over libtorch, which is not instrumented either way, so instrumenting it
# finds nothing in the workload's own code. Instead, holding the release directory's lock, the
# script runs the release build in the release target directory (seconds when it ran before;
# it compiles this tree's tinygpt there too, about 5 s, which the next release build cleans),
# copies the libtch.a it made, and gives the sanitizer build torch-sys's link lines through
# Cargo's build-script override (`target.<host>.tch`, torch-sys declaring `links = "tch"`), so
# Cargo does not run that build script there. The Rust code, tinygpt's and every Rust
# dependency's, is instrumented as before.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

sanitize=0
if [[ ${1:-} == --sanitize ]]; then
  sanitize=1
  shift
fi

eval "$("$here/../../scripts/setup-torch" --env)"

cache=${EVO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evo}
host=$(rustc -vV | sed -n 's/^host: //p')
release_dir=${TINYGPT_TARGET_DIR:-$cache/cargo-target/tinygpt}
profile_args=(--release)
override=()
if ((sanitize)); then
  target_dir=${TINYGPT_TARGET_DIR:-$cache/cargo-target/tinygpt-asan}
  # -Zsanitizer needs an explicit --target (so build scripts and proc macros stay uninstrumented).
  profile_args+=(--target "$host")
  export RUSTC_BOOTSTRAP=1
else
  target_dir=$release_dir
fi
unset CARGO_BUILD_TARGET CARGO_ENCODED_RUSTFLAGS RUSTFLAGS
if ((sanitize)); then
  # The sanitized build is the release build's configuration with the sanitizer flags appended
  # last: the rustflags the tree's Cargo configuration declares (`build.rustflags`, from every
  # .cargo/config.toml Cargo reads for this folder) come first, so a flag or `--cfg` the
  # candidate declares is in the sanitized binary too, and none of them can undo the two
  # appended. Target-specific rustflags (`target.<triple>.rustflags`, `target.<cfg>.rustflags`)
  # are refused: Cargo would use them instead of `build.rustflags` and this script does not
  # evaluate `cfg()` keys.
  # A configuration Cargo cannot read stops the sanitized build: without it the build would not
  # be the candidate's configuration.
  config=$(cd "$here" && cargo -Zunstable-options config get --format json) || {
    echo "build.sh: cannot read the tree's Cargo configuration (cargo config get)" >&2
    exit 1
  }
  flags=$(printf '%s' "$config" | python3 -c '
import json, sys
text = sys.stdin.read().strip()
config = json.loads(text) if text else {}
targets = config.get("target", {})
if any(isinstance(t, dict) and "rustflags" in t for t in targets.values()):
    sys.exit("build.sh: the sanitizer build cannot follow target-specific rustflags; declare build.rustflags instead")
declared = config.get("build", {}).get("rustflags", [])
if isinstance(declared, str):
    declared = declared.split()
print("\x1f".join(declared + ["-Zsanitizer=address", "-Coverflow-checks=on"]), end="")
') || exit 1
  export CARGO_ENCODED_RUSTFLAGS=$flags
fi
export CARGO_TARGET_DIR=$target_dir
mkdir -p "$target_dir" "$here/bin"

cd "$here"
exec 9>"$target_dir.lock"
flock 9

# The sanitizer build's torch-sys link lines, from an uninstrumented torch-sys build in the
# release directory (see the top of this file). Prints `--config` arguments, one per line.
wrapper_override() {
  local messages out_dir output wrapper line lib search lines=() libtorch_lib=
  # The whole release build, as a release build.sh runs it (with `-p torch-sys` Cargo would
  # resolve other features and run torch-sys's build script again); its environment must be the
  # release build's too, or the build script's `rerun-if-env-changed` would compile the wrapper
  # again.
  messages=$(env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u RUSTC_BOOTSTRAP \
    CARGO_TARGET_DIR="$release_dir" \
    cargo build --release --locked --message-format=json-render-diagnostics)
  out_dir=$(printf '%s\n' "$messages" | grep '"reason":"build-script-executed"' |
    grep '"package_id":"[^"]*torch-sys' | sed -n 's/.*"out_dir":"\([^"]*\)".*/\1/p' | tail -n 1)
  output=$(dirname "$out_dir")/output
  if [[ -z $out_dir || ! -f $out_dir/libtch.a || ! -f $output ]]; then
    echo "build.sh: torch-sys left no libtch.a in the release target dir" >&2
    return 1
  fi
  wrapper=$target_dir/tch-wrapper
  mkdir -p "$wrapper"
  cmp -s "$out_dir/libtch.a" "$wrapper/libtch.a" || cp -f "$out_dir/libtch.a" "$wrapper/libtch.a"
  # Cargo's own quoting is TOML's: every value below is a path or a library name, quoted as a
  # TOML literal string (no quote or newline can be in them; refuse if one is).
  toml() {
    [[ $1 != *"'"* && $1 != *$'\n'* ]] || { echo "build.sh: unusable link value: $1" >&2; return 1; }
    printf "'%s'" "$1"
  }
  local libs=() paths=()
  while IFS= read -r line; do
    line=${line#cargo::}
    line=${line#cargo:}
    case $line in
      rustc-link-lib=*) lib=${line#rustc-link-lib=}; libs+=("$(toml "$lib")") ;;
      rustc-link-search=*)
        search=${line#rustc-link-search=}
        [[ $search == *"=$out_dir" || $search == "$out_dir" ]] && search=native=$wrapper
        paths+=("$(toml "$search")") ;;
      libtorch_lib=* | metadata=libtorch_lib=*) libtorch_lib=${line#*libtorch_lib=} ;;
    esac
  done <"$output"
  ((${#libs[@]})) || { echo "build.sh: torch-sys's build output names no library" >&2; return 1; }
  local key="target.$host.tch"
  lines+=("$key.rustc-link-lib=[$(IFS=,; echo "${libs[*]}")]")
  lines+=("$key.rustc-link-search=[$(IFS=,; echo "${paths[*]}")]")
  [[ -n $libtorch_lib ]] && lines+=("$key.libtorch_lib=$(toml "$libtorch_lib")")
  printf '%s\n' "${lines[@]}"
}
if ((sanitize)); then
  if [[ $release_dir != "$target_dir" ]]; then
    exec 8>"$release_dir.lock"
    flock 8
  fi
  while IFS= read -r line; do
    override+=(--config "$line")
  done < <(wrapper_override)
  ((${#override[@]})) || exit 1
  # tinygpt's own line tables, which the release profile leaves out (Cargo.toml says why), so a
  # sanitizer report names the file and line.
  override+=(--config 'profile.release.package.tinygpt.debug="line-tables-only"')
  if [[ $release_dir != "$target_dir" ]]; then
    flock -u 8
  fi
fi
# Cargo's JSON messages name the executable it just built from this tree's sources.
cargo clean --quiet -p tinygpt "${profile_args[@]}"
messages=$(cargo build "${profile_args[@]}" "${override[@]}" --locked \
  --message-format=json-render-diagnostics "$@")
exe=$(printf '%s\n' "$messages" | grep '"reason":"compiler-artifact"' | grep '"executable":"' |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
if [[ -z $exe || ! -x $exe ]]; then
  echo "build.sh: cargo reported no tinygpt executable" >&2
  exit 1
fi
cp -f "$exe" "$here/bin/tinygpt.tmp"
mv -f "$here/bin/tinygpt.tmp" "$here/bin/tinygpt"
flock -u 9
echo "build.sh: built $([[ $sanitize == 1 ]] && echo 'sanitized ')bin/tinygpt (target dir $target_dir)" >&2
