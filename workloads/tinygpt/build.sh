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
# wrapper) are compiled there once per machine. The tinygpt crate itself is not: Cargo hashes a
# path package relative to its workspace root, so every tree's tinygpt gets the SAME artifact
# names and fingerprint there, and a tree whose sources are older than the fingerprint left by
# another tree would be taken as up to date and get that tree's binary. So, holding an exclusive
# flock on the target directory, the script removes tinygpt's own artifacts (`cargo clean -p
# tinygpt`, a few MB; the dependencies stay), builds (about 5 s for tinygpt alone) and copies the
# binary into this tree before releasing the lock: trees building at the same time (evo builds
# the baseline and a candidate in parallel) wait for each other and each gets its own binary.
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
profile_args=(--release)
if ((sanitize)); then
  target_dir=${TINYGPT_TARGET_DIR:-$cache/cargo-target/tinygpt-asan}
  # -Zsanitizer needs an explicit --target (so build scripts and proc macros stay uninstrumented).
  profile_args+=(--target "$host")
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
# Cargo's JSON messages name the executable it just built from this tree's sources.
cargo clean --quiet -p tinygpt "${profile_args[@]}"
messages=$(cargo build "${profile_args[@]}" --locked --message-format=json-render-diagnostics "$@")
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
