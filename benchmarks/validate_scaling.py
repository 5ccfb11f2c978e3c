"""One kernel's configs validated over 1, 2, 4 ... GPUs: does `tileiropt validate` scale with the GPUs it is given?

    python benchmarks/validate_scaling.py examples --kernel matmul [--max-configs 192] [--gpus 0 0,1 0,1,2,3]

Copies the project's folder, writes the kernel's optimized file once (`tileiropt apply --max-configs N`: the
TileIR configs crossed with the kernel's own), then times `tileiropt validate --kernel K --variant optimized
--backend <backend> --json` for each set of GPUs (`CUDA_VISIBLE_DEVICES`), each from a cold Triton cache and with
the records removed, so every call compiles and runs every config again. The machine's facts are probed once
before (`tileiropt check`; not in any figure).

Prints one JSON line per call (the GPUs, the validate command's own seconds, the wall seconds, the workers and
their start-up, the records by status, the jobs) and a last line with each set's best time and its speed-up over
the first set. Made for the measure "validate of a kernel with >= 50 configs >= 1.8x faster on 2 GPUs than on 1,
>= 3x on 4". `--backend tileir-code-on-interpret --gpus ""` runs the same steps on a CPU (Triton's interpreter). The
figures of one call are in docs/validate.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def tool(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tileiropt", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def base_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["TILEIROPT_CACHE_DIR"] = str(work / "tool-cache")  # the machine's facts: probed once, by `prepare`
    env["PYTHONUNBUFFERED"] = "1"
    return env


def prepare(project: Path, kernel: str, work: Path, max_configs: int, env: dict[str, str],
            timeout: float) -> Path:
    """A copy of the project's folder holding the kernel's optimized file (the machine's facts probed)."""
    from tileiropt.errors import UserError
    from tileiropt.project.spec import load_project

    source = project if project.is_dir() else project.parent
    folder = work / "project"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns(".tileiropt", "__pycache__", "*_tileir.py"))
    try:
        spec = load_project(folder).select([kernel])[0]
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None
    applied = tool(["apply", str(spec.path), "--max-configs", str(max_configs), "--json"], folder, env, timeout)
    if applied.returncode != 0:
        raise SystemExit(f"error: `tileiropt apply {spec.path.name}` exit {applied.returncode}: "
                         f"{applied.stderr.strip()[-500:]}")
    tool(["check", "--json"], folder, env, timeout)
    return folder


def one_call(folder: Path, kernel: str, gpus: str, backend: str, env: dict[str, str], work: Path,
             timeout: float) -> dict:
    """`validate` of the optimized file on `gpus`, from a cold Triton cache and no earlier records."""
    for name in ("validate.json", "validate.journal.jsonl"):
        (folder / ".tileiropt" / name).unlink(missing_ok=True)
    cache = work / "triton-cache"
    shutil.rmtree(cache, ignore_errors=True)
    call_env = {**env, "CUDA_VISIBLE_DEVICES": gpus, "TRITON_CACHE_DIR": str(cache)}
    started = time.monotonic()
    done = tool(["validate", "--kernel", kernel, "--variant", "optimized", "--backend", backend, "--json"], folder,
                call_env, timeout)
    wall = round(time.monotonic() - started, 1)
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"gpus": gpus, "exit_code": done.returncode, "wall_s": wall, "error": done.stderr.strip()[-500:]}
    records = result.get("records", [])
    return {"gpus": gpus, "exit_code": done.returncode, "validate_s": result.get("seconds"), "wall_s": wall,
            "workers": result.get("workers"), "slots": result.get("slots"),
            "worker_start_s": round(sum(j.get("worker_start_s") or 0 for j in result.get("jobs", [])), 1),
            "jobs": len(result.get("jobs", [])), "records": dict(Counter(r["status"] for r in records))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path, help="a project folder or file (tileiropt.toml)")
    parser.add_argument("--kernel", required=True, help="the kernel of the project whose configs are validated")
    parser.add_argument("--max-configs", type=int, default=192, help="TileIR configs apply adds at most")
    parser.add_argument("--gpus", nargs="+", default=["0", "0,1"], help="CUDA_VISIBLE_DEVICES of each call")
    parser.add_argument("--repeats", type=int, default=1, help="calls per set of GPUs")
    parser.add_argument("--backend", default="tileir-code-on-ptx", help="the backend validate runs on")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds each call may take")
    args = parser.parse_args()
    if not args.project.exists():
        parser.error(f"{args.project}: no such file or folder")
    work = Path(tempfile.mkdtemp(prefix="validate-scaling-"))
    env = base_env(work)
    folder = prepare(args.project.resolve(), args.kernel, work, args.max_configs, env, args.timeout)
    best: dict[str, float] = {}
    for _ in range(args.repeats):
        for gpus in args.gpus:
            row = one_call(folder, args.kernel, gpus, args.backend, env, work, args.timeout)
            print(json.dumps(row), flush=True)
            if isinstance(row.get("validate_s"), (int, float)):
                best[gpus] = min(best.get(gpus, float("inf")), float(row["validate_s"]))
    if best:
        first = best.get(args.gpus[0])
        print(json.dumps({"best_validate_s": best, "speedup_over_first": {
            gpus: round(first / seconds, 2) for gpus, seconds in best.items() if first and seconds}}))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
