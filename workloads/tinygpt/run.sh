#!/usr/bin/env bash
# Runs this tree's bin/tinygpt (built by ./build.sh or ./build.sh --sanitize) with libtorch on the
# loader path (the binary has no rpath). Timed runs go through this, so it stays cheap: it reads
# the env file scripts/setup-torch wrote and starts no Python. Arguments go to tinygpt unchanged;
# see `./run.sh --help`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
env_file=${EVO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evo}/torch-2.13.0/evo-torch.env
if [[ ! -f $env_file ]]; then
  echo "run.sh: $env_file not found; run scripts/setup-torch (or ./build.sh) first" >&2
  exit 1
fi
lib=
while IFS='=' read -r key value; do
  if [[ $key == EVO_TORCH_LIB ]]; then lib=$value; fi
done <"$env_file"
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=$here/bin/tinygpt
if [[ ! -x $bin ]]; then
  echo "run.sh: $bin not found; build it with ./build.sh" >&2
  exit 1
fi
exec "$bin" "$@"
