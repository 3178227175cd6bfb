"""The truth protocol shared by scripts/measure-truth and scripts/validate: trees built with a
workload's own build, timed runs interleaved in rounds on fresh seeds, the ratio of means with a
bootstrap interval. It shares no code with evo: a truth evo does not share."""

import hashlib
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

RESAMPLES = 10_000


def cache_dir(name: str) -> Path:
    """A folder of evo's cache outside the clone (`EVO_CACHE_DIR`, else ~/.cache/evo)."""
    base = os.environ.get("EVO_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "evo"
    )
    return Path(base) / name


def overlay_files(workload_file: Path, workload) -> list:
    """(source, destination relative to the tree root) of each overlay file, as evo lands them:
    a file under the workload file's folder keeps its path relative to it, any other lands at
    the root under its name (docs/workloads.md)."""
    here = workload_file.parent.resolve()
    out = []
    for raw in workload.get("overlay", []):
        src = (here / raw).resolve()
        try:
            rel = src.relative_to(here)
        except ValueError:
            rel = Path(src.name)
        out.append((src, rel))
    return out


def build_tree(repo: Path, commit: str, patch, overlay, build, folder: Path) -> bool:
    """`git archive` of `commit` in `folder` (made anew unless already built from the same
    inputs), the overlay copied in, `patch` applied, then the build command. False when the
    build fails."""
    marker = folder / ".truth-built"
    key = json.dumps([commit, patch.read_text() if patch else "",
                      [(str(r), s.read_text(errors="replace")) for s, r in overlay],
                      build["command"]])
    if marker.exists() and marker.read_text() == key:
        return True
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    for src, rel in overlay:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, folder / rel)
    if patch:
        subprocess.run(["git", "apply", str(patch)], cwd=folder, check=True)
    done = subprocess.run(build["command"], shell=True, cwd=folder / build.get("cwd", "."),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        print(f"build failed in {folder}:\n{done.stderr[-2000:]}", file=sys.stderr)
        return False
    marker.write_text(key)
    return True


def artifact_digests(folder: Path, build) -> dict:
    """sha256 of each declared artifact (relative to the build's cwd, as evo reads them)."""
    base = folder / build.get("cwd", ".")
    out = {}
    for name in build.get("artifacts", []):
        path = base / name
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    return out


def run_once(folder: Path, scenario, seed: int):
    """(wall s, user+sys s, stdout bytes) of one timed run; exits on a failed run."""
    command = scenario["run"].replace("{seed}", str(seed))
    env = dict(os.environ, **scenario.get("env", {}))
    start = time.perf_counter()
    proc = subprocess.Popen(command, shell=True, cwd=folder / scenario.get("cwd", "."), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{command} in {folder} exited {code}")
    return wall, usage.ru_utime + usage.ru_stime, out


def fresh_seed() -> int:
    """A seed in evo's range (unsigned 64-bit), from the system's random source."""
    return int.from_bytes(os.urandom(8), "little")


def interleaved(arms: dict, scenario, runs: int, log: Path):
    """`runs` rounds, each on a fresh seed, every arm once in an order shuffled per round;
    each run written to `log` as it finishes. Returns {arm: {"wall": [...], "cpu": [...]}}."""
    rng = random.Random()
    times = {n: {"wall": [], "cpu": []} for n in arms}
    with log.open("w") as f:
        for r in range(runs):
            seed = fresh_seed()
            order = list(arms)
            rng.shuffle(order)
            for n in order:
                wall, cpu, _ = run_once(arms[n], scenario, seed)
                times[n]["wall"].append(wall)
                times[n]["cpu"].append(cpu)
                f.write(json.dumps({"round": r, "seed": seed, "arm": n, "wall_s": wall,
                                    "cpu_s": cpu}) + "\n")
                f.flush()
            print(f"round {r + 1}/{runs}", file=sys.stderr, flush=True)
    return times


def mean(xs):
    return sum(xs) / len(xs)


def bootstrap(base, arm, rng):
    """95% percentile interval of mean(base) / mean(arm), rounds resampled whole."""
    n = len(base)
    ratios = []
    for _ in range(RESAMPLES):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(mean([base[i] for i in idx]) / mean([arm[i] for i in idx]))
    ratios.sort()
    return ratios[int(0.025 * RESAMPLES)], ratios[int(0.975 * RESAMPLES) - 1]


def call(lo, hi):
    if lo > 1.0:
        return "faster"
    if hi < 1.0:
        return "slower"
    return "no difference resolved"


def effect(base, arm, seed=20261205):
    """The ratio of means baseline / arm with its bootstrap interval and call."""
    lo, hi = bootstrap(base, arm, random.Random(seed))
    return {"ratio_of_means": mean(base) / mean(arm), "ci95": [lo, hi], "call": call(lo, hi),
            "mean_s": mean(arm)}
