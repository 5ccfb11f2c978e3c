"""Library scale: `tileiropt run` over liger-kernel's ops, captured from `liger_ops_exercise.py`, then again.

Writes a project into FOLDER (default: a temporary one): `capture = "python exercise.py"` over every file of
`liger_kernel/ops/` that defines a Triton kernel, so each distinct launch of a liger kernel is one kernel of
the project (validated by replay against the original, benchmarked at its captured shapes on a GPU).
Then runs `tileiropt run` twice and prints, per run: kernels, records, wall time, records reused; and the
second run's time as a share of the first's.

    python benchmarks/liger_scale.py [--folder DIR] [--extra "..."] [--runs N] [--scales 1 2 4] [--cap 6]
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
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ops_files() -> list[Path]:
    import liger_kernel

    ops = Path(liger_kernel.__file__).resolve().parent / "ops"
    return sorted(p for p in ops.glob("*.py") if "@triton.jit" in p.read_text(encoding="utf-8", errors="replace"))


def write_project(folder: Path, budget: float, scales: list[int] | None = None, cap: int = 3) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "liger_ops_exercise.py", folder / "exercise.py")
    files = ", ".join(json.dumps(str(p)) for p in ops_files())
    command = "python exercise.py" + (" --scales " + " ".join(map(str, scales)) if scales else "")
    (folder / "tileiropt.toml").write_text(
        "[project]\n"
        f'capture = "{command}"\ncapture_files = [{files}]\ncapture_budget = {budget}\ncapture_cap = {cap}\n')


def run_once(folder: Path, extra: list[str]) -> dict:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tileiropt", "run", str(folder), "--json", *extra],
                          capture_output=True, text=True)
    seconds = time.monotonic() - started
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"tileiropt run failed (exit {done.returncode})") from None
    validate = json.loads((folder / ".tileiropt" / "validate.json").read_text())
    bench_file = folder / ".tileiropt" / "bench.json"
    bench = json.loads(bench_file.read_text()) if bench_file.exists() else {"rows": [], "reused": 0}
    statuses: dict[str, int] = {}
    for record in validate["records"]:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    return {"exit_code": done.returncode, "seconds": round(seconds, 1), "kernels": len(result["kernels"]),
            "records": len(validate["records"]), "statuses": statuses, "reused": validate.get("reused", 0),
            "bench_rows": len(bench["rows"]), "bench_reused": bench.get("reused", 0),
            "phases": {p["phase"]: [p["status"], p["seconds"]] for p in result["phases"]}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--budget", type=float, default=300.0, help="capture budget, seconds")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--scales", type=int, nargs="+", default=None,
                        help="run every op at these feature-width multiples (more distinct launches), e.g. 1 2 4")
    parser.add_argument("--cap", type=int, default=3, help="distinct launches kept per kernel (capture_cap)")
    parser.add_argument("--extra", default="", help="more `tileiropt run` options, e.g. \"--executor local\"")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="liger-scale-"))
    write_project(folder, args.budget, args.scales, args.cap)
    print(f"project: {folder / 'tileiropt.toml'} ({len(ops_files())} liger ops files)", flush=True)
    if args.runs == 0:  # only the project
        return 0
    results = []
    for index in range(args.runs):
        extra = shlex.split(args.extra) + (["--fresh"] if index == 0 else [])
        result = run_once(folder, extra)
        results.append(result)
        print(json.dumps({"run": index + 1, **result}), flush=True)
    if len(results) > 1:
        print(f"second run: {results[1]['seconds'] / results[0]['seconds']:.0%} of the first's wall time, "
              f"{results[1]['reused']} of {results[1]['records']} validation records reused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
