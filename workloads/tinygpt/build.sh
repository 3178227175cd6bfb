#!/usr/bin/env bash
# Builds the release tinygpt against the cached PyTorch 2.13.0 wheel (scripts/setup-torch installs
# it first if it is not there; fast when it is) and copies the binary to bin/tinygpt in this tree,
# where run.sh runs it.
#
#   ./build.sh              the normal release build
#   ./build.sh --sanitize   AddressSanitizer + overflow checks (RUSTC_BOOTSTRAP=1 on the stable
#                           toolchain), for evo's sanitizer lane; same place, bin/tinygpt
#
# Extra arguments go to `cargo build`.
#
# The Cargo target directory is shared by every tree on the machine and lives outside the clone:
#   ${EVO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evo}/cargo-target/tinygpt        (release)
#   ${EVO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evo}/cargo-target/tinygpt-asan   (sanitizer)
# (TINYGPT_TARGET_DIR overrides it.) The registry dependencies (tch, torch-sys and its C++
# wrapper) are compiled there once per machine; each tree's own crate has its own path, so Cargo
# keeps its artifacts apart. An exclusive flock on the target directory is held around
# `cargo build` AND the copy of the binary, so trees building at the same time (evo builds the
# baseline and a candidate in parallel) cannot take each other's binary.
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
cargo_args=(build --release --locked --message-format=json-render-diagnostics)
if ((sanitize)); then
  target_dir=${TINYGPT_TARGET_DIR:-$cache/cargo-target/tinygpt-asan}
  # -Zsanitizer needs an explicit --target (so build scripts and proc macros stay uninstrumented).
  cargo_args+=(--target "$host")
  export RUSTC_BOOTSTRAP=1
  export RUSTFLAGS="-Zsanitizer=address -Coverflow-checks=on"
else
  target_dir=${TINYGPT_TARGET_DIR:-$cache/cargo-target/tinygpt}
  unset RUSTFLAGS
fi
unset CARGO_BUILD_TARGET CARGO_ENCODED_RUSTFLAGS
export CARGO_TARGET_DIR=$target_dir
mkdir -p "$target_dir" "$here/bin"

cd "$here"
exec 9>"$target_dir.lock"
flock 9
# Cargo's JSON messages name the executable it built for THIS tree's package (the uplifted
# target/release/tinygpt is shared by all trees, so it is not used).
messages=$(cargo "${cargo_args[@]}" "$@")
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
