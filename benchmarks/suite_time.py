"""A library's own test suite, alone and under `tileiropt run`: is the whole run within the suite's own time?

Runs, from `--cwd`, the test command given after `--` twice, each from a cold Triton cache of its own:

1. **alone**: the command as the user runs it, on the GPUs `--gpus` names (`CUDA_VISIBLE_DEVICES`); with `--spread`
   each pytest-xdist worker gets a GPU of its own by the same plugin `tileiropt run --spread-gpus` uses
   (`tileiropt.capture.worker_gpus`), so both runs share the GPUs alike;
2. **under the tool**: `tileiropt run <library> --json --fresh [--spread-gpus] -- <command>` on the same GPUs, with
   a cold tool cache.

Prints one JSON line per step as it ends (wall seconds, exit code, the command's last output line, where its whole
output was kept; for the tool's run every phase's seconds, the launches it captured and the verdicts) and a last
line with the ratio of the two. Made for
the issue's measure "a library through every phase in <= 1.3x the suite's own time on one GPU, and in less than
the suite's own time alone when spread over 4":

    python benchmarks/suite_time.py --library pkg/liger_kernel/ops --cwd work --gpus 0 -- pytest -q -n 16 test/...
    python benchmarks/suite_time.py --library site-packages/torchao --cwd work --gpus 0,1,2,3 --spread \\
        -- pytest -q -n 16 test/...

`--skip-alone` runs only the tool (the suite's own time known from an earlier call), `--skip-tool` only the suite;
`--timeout S` caps each step.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def base_env(gpus: str, work: Path, name: str) -> dict[str, str]:
    """The environment of one step: the GPUs, a Triton cache and a tool cache of its own (cold), the tool on
    the path."""
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = gpus
    env["TRITON_CACHE_DIR"] = str(work / name / "triton-cache")
    env["TILEIROPT_CACHE_DIR"] = str(work / name / "tool-cache")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def alone(command: list[str], cwd: Path, gpus: str, spread: bool, work: Path, timeout: float) -> dict:
    """The suite as the user runs it (spread: one GPU per xdist worker, as the tool's plugin gives it)."""
    env = base_env(gpus, work, "alone")
    if spread:
        env["PYTEST_PLUGINS"] = ",".join(filter(None, [env.get("PYTEST_PLUGINS"), "tileiropt.capture.worker_gpus"]))
        env["TILEIROPT_WORKER_GPUS"] = gpus
        env["TILEIROPT_GPUS_BEFORE"] = gpus
    log = work / "alone" / "output.txt"  # the whole output, for its failures and durations
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as output:
        try:
            code: int | str = subprocess.run(command, cwd=cwd, env=env, stdout=output, stderr=subprocess.STDOUT,
                                             timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    return {"step": "alone", "gpus": gpus, "spread": spread, "seconds": round(time.monotonic() - started, 1),
            "exit_code": code, "last_line": last_line(log.read_text(encoding="utf-8", errors="replace")),
            "output": str(log)}


def run_tool(library: Path, command: list[str], cwd: Path, extra: list[str], env: dict[str, str],
             timeout: float | None = None) -> dict:
    """One `tileiropt run <library> --json <extra> -- <command>` in `cwd`: what it captured, decided and cost."""
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "tileiropt", "run", str(library), "--json", *extra, "--",
                               *command], cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"exit_code": "timeout", "seconds": round(time.monotonic() - started, 1)}
    seconds = time.monotonic() - started
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"exit_code": done.returncode, "seconds": round(seconds, 1), "error": last_line(done.stderr)}
    artifacts = cwd / ".tileiropt"
    capture = _read(artifacts / "capture.json")
    records = _read(artifacts / "validate.json").get("records", [])
    return {
        "exit_code": done.returncode, "seconds": round(seconds, 1),
        "kernels_in_library": len(capture.get("expected", [])),
        "kernels_launched": len(capture.get("counts", {})),
        "captured_launches": len(capture.get("launches", [])),
        "records": dict(Counter(r["status"] for r in records)),
        "verdicts": dict(Counter(v["bucket"] for v in result.get("verdicts", {}).values())),
        "stopped": len(result.get("stopped", {})),
        "phases": {p["phase"]: [p["status"], p["seconds"], p.get("workers", 0), p.get("worker_start_s", 0.0)]
                   for p in result["phases"]},
        "classify": next((p.get("detail") for p in result["phases"] if p["phase"] == "classify"), None),
        "report_lines": {name: len((artifacts / name).read_text(encoding="utf-8").splitlines())
                         for name in ("report.md", "report-kernels.md") if (artifacts / name).is_file()},
    }


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", type=Path, required=True, help="the kernel folder `tileiropt run` covers")
    parser.add_argument("--cwd", type=Path, default=Path.cwd(), help="where the test command runs")
    parser.add_argument("--gpus", default="0", help="CUDA_VISIBLE_DEVICES of both steps, e.g. 0,1,2,3")
    parser.add_argument("--spread", action="store_true", help="one GPU per xdist worker (--spread-gpus)")
    parser.add_argument("--skip-alone", action="store_true", help="run only the tool")
    parser.add_argument("--skip-tool", action="store_true", help="run only the suite alone")
    parser.add_argument("--extra", default="", help="more `tileiropt run` options")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds each step may take")
    parser.add_argument("--work", type=Path, default=None, help="folder of the steps' caches (default: temporary)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the test command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the test command after --")
    work = args.work or Path(tempfile.mkdtemp(prefix="suite-time-"))
    cwd = args.cwd.resolve()
    results = {}
    if not args.skip_alone:
        results["alone"] = alone(command, cwd, args.gpus, args.spread, work, args.timeout)
        print(json.dumps(results["alone"]), flush=True)
    if args.skip_tool:
        return 0
    extra = ["--fresh", *(["--spread-gpus"] if args.spread else []), *args.extra.split()]
    env = base_env(args.gpus, work, "tool")
    results["tool"] = {"step": "tool", "gpus": args.gpus, "spread": args.spread,
                       **run_tool(args.library.resolve(), command, cwd, extra, env, args.timeout)}
    print(json.dumps(results["tool"]), flush=True)
    if "alone" in results and isinstance(results["tool"].get("seconds"), float) and results["alone"]["seconds"]:
        print(json.dumps({"ratio": round(results["tool"]["seconds"] / results["alone"]["seconds"], 2),
                          "alone_s": results["alone"]["seconds"], "tool_s": results["tool"]["seconds"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
