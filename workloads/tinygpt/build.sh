#!/usr/bin/env bash
# Builds the release tinygpt against the cached PyTorch 2.13.0 wheel, installing it first if it is
# not there yet (scripts/setup-torch; fast when it is). Extra arguments go to `cargo build`.
# Honours CARGO_TARGET_DIR; run.sh looks for the binary in the same place.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
eval "$("$here/../../scripts/setup-torch" --env)"
cd "$here"
exec cargo build --release --locked "$@"
