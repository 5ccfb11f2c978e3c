"""Library mode on liger-kernel: `tileiropt run <liger_kernel/ops> -- python exercise.py`, then the same again.

In a work folder (default: a temporary one) the driver `liger_ops_exercise.py` calls liger-kernel's public ops,
forward and backward; `tileiropt run` captures their launches of every kernel defined under the package's `ops/`
folder (no project file), validates, benches and reports them as one run. Printed per run, as one JSON line:
kernels found in the library, kernels launched, captured launches, validation records by status, verdicts,
time per phase and in all; then the unchanged re-run's time as a share of the first's.

    python benchmarks/library.py [--folder DIR] [--runs N] [--scales 1 2] [--budget S] [--extra "..."]
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ops_folder() -> Path:
    import liger_kernel

    return Path(liger_kernel.__file__).resolve().parent / "ops"


def run_once(folder: Path, command: list[str], extra: list[str]) -> dict:
    """One `tileiropt run` in `folder`; what it found, ran and decided, and what it cost."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tileiropt", "run", str(ops_folder()), "--json", *extra, "--",
                           *command], cwd=folder, capture_output=True, text=True)
    seconds = time.monotonic() - started
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"tileiropt run failed (exit {done.returncode})") from None
    artifacts = folder / ".tileiropt"
    capture = json.loads((artifacts / "capture.json").read_text()) if (artifacts / "capture.json").exists() else {}
    validate_file = artifacts / "validate.json"
    records = json.loads(validate_file.read_text())["records"] if validate_file.exists() else []
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
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--runs", type=int, default=2, help="runs: the first with --fresh, then unchanged re-runs")
    parser.add_argument("--scales", type=int, nargs="+", default=None,
                        help="run every op at these feature-width multiples (more distinct launches), e.g. 1 2")
    parser.add_argument("--budget", type=float, default=300.0, help="capture budget, seconds")
    parser.add_argument("--extra", default="", help="more `tileiropt run` options, e.g. \"--executor local\"")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="library-"))
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "liger_ops_exercise.py", folder / "exercise.py")
    command = ["python", "exercise.py"] + (["--scales", *map(str, args.scales)] if args.scales else [])
    print(f"library: {ops_folder()}; work folder: {folder}; command: {shlex.join(command)}", flush=True)
    results = []
    for index in range(args.runs):
        extra = ["--capture-budget", str(args.budget), *shlex.split(args.extra)] + (["--fresh"] if index == 0 else [])
        result = run_once(folder, command, extra)
        results.append(result)
        print(json.dumps({"run": index + 1, **result}), flush=True)
    if len(results) > 1 and results[0]["seconds"]:
        print(f"unchanged re-run: {results[1]['seconds']:.1f} s, {results[1]['seconds'] / results[0]['seconds']:.0%} "
              f"of the first run's {results[0]['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
