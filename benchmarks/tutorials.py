"""Triton's tutorials, zero-config: `tileiropt run <tutorial>.py` on each file, unmodified, then an unchanged re-run.

Each tutorial is copied into a folder of its own (so its records and optimized file stay apart) and run with no
arguments: its launches are captured from its own run, replayed on the original and the optimized kernels, and
benchmarked where a GPU is present. Printed per tutorial, as one JSON line: exit code, wall time of the first run
and of the re-run, time per phase, kernels by verdict, kernels stopped and why, the program's own failure. The
cost of `python -c "import torch, triton"` on the same machine is measured first, as the unit of the CPU goals.

    python benchmarks/tutorials.py FILE.py [FILE.py ...] [--timeout S] [--runs N] [--out results.jsonl] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def import_cost() -> float:
    """Seconds of `python -c "import torch, triton"` (the second of two runs: files in the page cache)."""
    seconds = 0.0
    for _ in range(2):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "import torch, triton"], check=True)
        seconds = time.monotonic() - started
    return seconds


def copy_tutorial(file: Path, folder: Path) -> None:
    """The tutorial into `folder`, with the folders beside it that its source names (the Triton-to-tile-IR fork's
    06 puts its `tileir/` companion on sys.path)."""
    shutil.copy(file, folder / file.name)
    source = file.read_text(encoding="utf-8", errors="replace")
    for sibling in sorted(file.parent.iterdir()):
        if sibling.is_dir() and not sibling.name.startswith((".", "_")) and \
                (f'"{sibling.name}"' in source or f"'{sibling.name}'" in source):
            shutil.copytree(sibling, folder / sibling.name, dirs_exist_ok=True)


def append_lines(path: Path, lines: list[dict]) -> None:
    """Append the results as JSON lines to `path`."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


def run_once(folder: Path, name: str, timeout: float, extra: list[str], env: dict[str, str] | None = None) -> dict:
    """One `tileiropt run NAME --json` in `folder` (`env`: the variables it runs with; default this process's)."""
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "tileiropt", "run", name, "--json", *extra], cwd=folder,
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"exit_code": None, "seconds": round(time.monotonic() - started, 1), "why": f"timeout {timeout:g} s"}
    seconds = round(time.monotonic() - started, 1)
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"exit_code": done.returncode, "seconds": seconds, "why": done.stderr.strip().splitlines()[-1:]}
    program = result.get("program") or {}
    return {
        "exit_code": done.returncode, "seconds": seconds,
        "phases": {p["phase"]: [p["status"], p["seconds"], p.get("workers", 0), p.get("worker_start_s", 0.0)]
                   for p in result.get("phases", [])},
        "verdicts": dict(Counter(v["bucket"] for v in result.get("verdicts", {}).values())),
        "stopped": {k: f"{v['phase']}: {v['reason'][:160]}" for k, v in result.get("stopped", {}).items()},
        "program_failure": program.get("summary"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--timeout", type=float, default=580.0, help="seconds per `tileiropt run`")
    parser.add_argument("--runs", type=int, default=2, help="1: the first run only; 2: and an unchanged re-run")
    parser.add_argument("--out", type=Path, default=None, help="also append the JSON lines to this file")
    parser.add_argument("--work", type=Path, default=None, help="parent of the tutorials' folders (default: temp)")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more `tileiropt run` options")
    args = parser.parse_args()
    unit = import_cost()
    lines = [{"import_torch_triton_s": round(unit, 2)}]
    print(json.dumps(lines[0]), flush=True)
    for file in args.files:
        if args.work is not None:
            args.work.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"tutorial-{file.stem}-", dir=args.work))
        copy_tutorial(file, folder)
        runs = [run_once(folder, file.name, args.timeout, args.extra)]
        if args.runs > 1 and runs[0].get("exit_code") is not None:
            runs.append(run_once(folder, file.name, args.timeout, args.extra))
        line = {"tutorial": file.name, "first": runs[0], **({"rerun": runs[1]} if len(runs) > 1 else {}),
                "first_over_import": round(runs[0]["seconds"] / unit, 1)}
        lines.append(line)
        print(json.dumps(line), flush=True)
    if args.out:
        append_lines(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
