"""The noise corpus's files (scripts/record-noise): an `evo bench` report turned into one CSV row
per run, the manifest that says what each CSV holds, and a summary of σ per recording.

    noise.py csv REPORT.json OUT.csv
    noise.py manifest MANIFEST.json FILE.csv --workload W --load L --command C --min-effect E
             --started T --ended T --load-before X --load-after Y --commit H
    noise.py summary MANIFEST.json

CSV columns: phase (`aa` for evo's A/A pairs, `pairs` for its comparison pairs; both arms run
the same command either way), pair (0-based within its phase), first (the arm that ran first),
seed, arm (`baseline` or `candidate`, evo's labels), wall_s, user_s, sys_s, voluntary_cs,
involuntary_cs, steal_s (empty where the kernel gave none).
"""

import csv
import json
import math
import os
import platform
import statistics
import sys

COLUMNS = ["phase", "pair", "first", "seed", "arm", "wall_s", "user_s", "sys_s",
           "voluntary_cs", "involuntary_cs", "steal_s"]


def to_csv(report_path, out_path):
    report = json.load(open(report_path))
    tmp = out_path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for phase, key in (("aa", "aa_pairs"), ("pairs", "pairs")):
            for i, p in enumerate(report[key]):
                first = "baseline" if p["order"] == "baseline_first" else "candidate"
                for arm in ("baseline", "candidate"):
                    run = p[arm]
                    if run["status"] != {"kind": "exited", "code": 0}:
                        sys.exit(f"{report_path}: {phase} pair {i}: the {arm} run did not succeed")
                    ru = run["rusage"]
                    steal = run.get("steal_s")
                    w.writerow([phase, i, first, p["seed"], arm, f"{run['wall_s']:.6f}",
                                f"{ru['user_s']:.6f}", f"{ru['sys_s']:.6f}", ru["voluntary_cs"],
                                ru["involuntary_cs"], "" if steal is None else f"{steal:.6f}"])
    os.replace(tmp, out_path)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def add_to_manifest(manifest_path, file, args):
    opts = dict(zip(args[0::2], args[1::2]))
    need = ["--workload", "--load", "--command", "--min-effect", "--started", "--ended",
            "--load-before", "--load-after", "--commit"]
    missing = [k for k in need if k not in opts]
    if missing or len(args) % 2:
        sys.exit(f"noise.py manifest: missing {', '.join(missing) or 'a value'}")
    manifest = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {
        "what": "A/A timing noise recorded by scripts/record-noise; replayed by the calibration "
                "benchmark (EVO_CALIB_TABLES=real)", "recordings": []}
    entry = {
        "file": file, "workload": opts["--workload"], "load": opts["--load"],
        "command": opts["--command"], "min_effect": float(opts["--min-effect"]),
        "started": opts["--started"], "ended": opts["--ended"],
        "load_1min_before": float(opts["--load-before"]),
        "load_1min_after": float(opts["--load-after"]),
        "cpus": os.cpu_count(), "cpu": cpu_model(), "evo_commit": opts["--commit"],
    }
    manifest["recordings"] = [r for r in manifest["recordings"] if r["file"] != file] + [entry]
    manifest["recordings"].sort(key=lambda r: r["file"])
    tmp = manifest_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(tmp, manifest_path)


def pair_logs(rows, metric):
    """ln(baseline / candidate) per pair, in recorded order."""
    time = {"wall": lambda r: float(r["wall_s"]),
            "cpu": lambda r: float(r["user_s"]) + float(r["sys_s"])}[metric]
    runs = {}
    for r in rows:
        runs.setdefault((r["phase"], int(r["pair"])), {})[r["arm"]] = time(r)
    order = sorted(runs, key=lambda k: (k[0] != "aa", k[1]))
    return [math.log(runs[k]["baseline"] / runs[k]["candidate"]) for k in order]


def summary(manifest_path):
    manifest = json.load(open(manifest_path))
    here = os.path.dirname(manifest_path)
    print("| recording | pairs | median run | σ wall (sd / MAD) | σ user+sys (sd / MAD) | load before–after |")
    print("|---|---|---|---|---|---|")
    for rec in manifest["recordings"]:
        rows = list(csv.DictReader(open(os.path.join(here, rec["file"]))))
        walls = [float(r["wall_s"]) for r in rows]
        cells = []
        for metric in ("wall", "cpu"):
            logs = pair_logs(rows, metric)
            m = statistics.median(logs)
            mad = 1.4826 * statistics.median(abs(x - m) for x in logs)
            cells.append(f"{100 * statistics.stdev(logs):.2f}% / {100 * mad:.2f}%")
        print(f"| {rec['file']} | {len(rows) // 2} | {statistics.median(walls):.3f} s | {cells[0]} "
              f"| {cells[1]} | {rec['load_1min_before']:.2f}–{rec['load_1min_after']:.2f} |")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    what = sys.argv[1]
    if what == "csv" and len(sys.argv) == 4:
        to_csv(sys.argv[2], sys.argv[3])
    elif what == "manifest" and len(sys.argv) >= 4:
        add_to_manifest(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif what == "summary":
        summary(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
