"""What the tool itself costs: time per phase and per job of `tileiropt run`, for tutorials and a library run.

Runs `tileiropt run` on each tutorial given (each in a folder of its own with a Triton cache of its own, cold for
the first run; no arguments; first run then an unchanged re-run) and, with --library, on liger-kernel's `ops/`
folder driven by `liger_ops_exercise.py`; then reads each run's `run.json` and prints, as JSON lines:

- per run: wall time, the unit `python -c "import torch, triton"`, and per phase its seconds, the workers it
  started and their start-up seconds;
- per phase, its jobs of the engine summed: how many, their seconds, the worker start-ups they paid, and the
  workers' own split (import, prepare, items, inputs, first_call = compile + autotune, measure, pairs);
- bench seconds per captured launch.

    python benchmarks/tool_cost.py [TUTORIAL.py ...] [--library] [--work DIR] [--timeout S] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import library  # noqa: E402 - the sibling benchmark scripts, run from this folder
import tutorials  # noqa: E402


def job_summary(phase: dict) -> dict:
    """A phase's jobs summed: count, seconds, worker start-ups paid, and the workers' split by part."""
    jobs = [job for job in phase.get("jobs") or [] if isinstance(job, dict)]
    parts: defaultdict[str, float] = defaultdict(float)
    for job in jobs:
        for name, seconds in (job.get("parts") or {}).items():
            parts[name] += float(seconds)
    return {"jobs": len(jobs), "seconds": round(sum(float(j.get("seconds") or 0) for j in jobs), 2),
            "worker_starts": sum(j.get("worker_start_s") is not None for j in jobs),
            "worker_start_s": round(sum(float(j.get("worker_start_s") or 0) for j in jobs), 2),
            "parts_s": {name: round(value, 2) for name, value in sorted(parts.items())},
            "by_backend": dict(Counter(str(j.get("backend")) for j in jobs))}


def cost(folder: Path) -> dict:
    """The cost recorded in `folder`'s run.json (its last run)."""
    run = json.loads((folder / ".tileiropt" / "run.json").read_text(encoding="utf-8"))
    phases = [p for p in run.get("phases") or [] if isinstance(p, dict)]
    capture = folder / ".tileiropt" / "capture.json"
    launches = len(json.loads(capture.read_text(encoding="utf-8")).get("launches") or []) if capture.is_file() else 0
    bench = next((p for p in phases if p.get("phase") == "bench"), {})
    return {
        "run_s": run.get("seconds"),
        "phases": {p["phase"]: {"seconds": p.get("seconds"), "workers": p.get("workers", 0),
                                "worker_start_s": p.get("worker_start_s", 0.0)} for p in phases},
        "jobs": {p["phase"]: job_summary(p) for p in phases if p.get("jobs")},
        "captured_launches": launches,
        "bench_s_per_launch": round(float(bench.get("seconds") or 0) / launches, 2) if launches else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="tutorial files")
    parser.add_argument("--library", action="store_true", help="also liger-kernel's ops/ in library mode")
    parser.add_argument("--work", type=Path, default=None, help="parent of the run folders (default: temporary)")
    parser.add_argument("--timeout", type=float, default=580.0, help="seconds per `tileiropt run` of a tutorial")
    parser.add_argument("--runs", type=int, default=2, help="1: the first run only; 2: and an unchanged re-run")
    parser.add_argument("--out", type=Path, default=None, help="also append the JSON lines to this file")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tool-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    lines = [{"import_torch_triton_s": round(tutorials.import_cost(), 2)}]
    print(json.dumps(lines[-1]), flush=True)
    for file in args.files:
        folder = work / file.stem
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        tutorials.copy_tutorial(file, folder)
        for index in range(args.runs):
            # the program's own Triton cache: fresh for the first run (a cold cache), kept for the re-run
            env = {**os.environ, "TRITON_CACHE_DIR": str(folder / "triton-cache")}
            result = tutorials.run_once(folder, file.name, args.timeout, [], env)
            found = cost(folder) if (folder / ".tileiropt" / "run.json").is_file() else {}
            lines.append({"tutorial": file.name, "run": index + 1, "wall_s": result["seconds"],
                          "exit_code": result["exit_code"], **found})
            print(json.dumps(lines[-1]), flush=True)
    if args.library:
        folder = work / "liger-ops"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / "liger_ops_exercise.py", folder / "exercise.py")
        for index in range(args.runs):
            result = library.run_once(folder, ["python", "exercise.py"], ["--fresh"] if index == 0 else [])
            found = cost(folder) if (folder / ".tileiropt" / "run.json").is_file() else {}
            lines.append({"library": "liger_kernel/ops", "run": index + 1, "wall_s": result["seconds"],
                          "exit_code": result["exit_code"], **found})
            print(json.dumps(lines[-1]), flush=True)
    if args.out:
        tutorials.append_lines(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
