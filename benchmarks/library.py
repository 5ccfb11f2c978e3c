"""Library mode on liger-kernel: `tileiropt run <liger_kernel/ops> -- python exercise.py`, then the same again.

In a work folder (default: a temporary one) the driver `liger_ops_exercise.py` calls liger-kernel's public ops,
forward and backward; `tileiropt run` captures their launches of every kernel defined under the package's `ops/`
folder (no project file), validates, benches and reports them as one run. Printed per run, as one JSON line:
kernels found in the library, kernels launched, captured launches, validation records by status, verdicts,
time per phase and in all, the report's lines (`report.md`, and `report-kernels.md` beside it); then the
unchanged re-run's time as a share of the first's.

`--mirrors N` runs it at the size of a large operator library from real code: the package is copied into the work
folder (first on the program's PYTHONPATH) and its `ops/` files copied N more times into `ops/mirror_<i>/` (each
copy a file of its own to the lint cache: a first line names the copy); the program still launches the package's
own files, the mirrors are the library's kernels it never launches. `--command` runs another program instead of
the driver (a test suite: `--command "pytest -q -n 4 test/transformers"`, run from the work folder).

    python benchmarks/library.py [--folder DIR] [--runs N] [--scales 1 2] [--budget S] [--extra "..."]
                                 [--mirrors N] [--command "..."]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import suite_time  # noqa: E402 - the sibling benchmark script, run from this folder


def ops_folder() -> Path:
    import liger_kernel

    return Path(liger_kernel.__file__).resolve().parent / "ops"


def mirrored_package(folder: Path, mirrors: int) -> Path:
    """liger-kernel copied under `folder/pkg`, its `ops/` files copied `mirrors` more times into
    `ops/mirror_<i>/`: the copy's `ops/` folder."""
    package = folder / "pkg" / "liger_kernel"
    if package.exists():
        shutil.rmtree(package)
    shutil.copytree(ops_folder().parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    ops = package / "ops"
    originals = [p for p in ops.rglob("*.py") if "mirror_" not in p.as_posix()]
    for index in range(mirrors):
        for source in originals:
            target = ops / f"mirror_{index}" / source.relative_to(ops)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"# mirror {index} of liger_kernel/ops/{source.relative_to(ops)}\n"
                              + source.read_text(encoding="utf-8"), encoding="utf-8")
    return ops


def run_once(folder: Path, command: list[str], extra: list[str], library: Path | None = None) -> dict:
    """One `tileiropt run` in `folder`; what it found, ran and decided, and what it cost."""
    library = library or ops_folder()
    env = {**os.environ, "TILEIROPT_CACHE_DIR": str(folder / "tool-cache")}  # cold at the first run: see main
    if library != ops_folder():  # the program imports the copy
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(library.parents[1]), env.get("PYTHONPATH")]))
    result = suite_time.run_tool(library, command, folder, extra, env)
    if "phases" not in result:
        raise SystemExit(f"tileiropt run failed (exit {result['exit_code']}): {result.get('error', '')}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--runs", type=int, default=2, help="runs: the first with --fresh, then unchanged re-runs")
    parser.add_argument("--scales", type=int, nargs="+", default=None,
                        help="run every op at these feature-width multiples (more distinct launches), e.g. 1 2")
    parser.add_argument("--budget", type=float, default=300.0, help="capture budget, seconds")
    parser.add_argument("--extra", default="", help="more `tileiropt run` options, e.g. \"--executor local\"")
    parser.add_argument("--mirrors", type=int, default=0, help="copies of ops/ added to a copy of the package")
    parser.add_argument("--command", default="", help="the program instead of the driver, run from the work folder")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="library-"))
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "liger_ops_exercise.py", folder / "exercise.py")
    command = shlex.split(args.command) if args.command else \
        ["python", "exercise.py"] + (["--scales", *map(str, args.scales)] if args.scales else [])
    library = mirrored_package(folder, args.mirrors) if args.mirrors else ops_folder()
    shutil.rmtree(folder / "tool-cache", ignore_errors=True)  # the tool's caches (lint, references): cold
    print(f"library: {library}; work folder: {folder}; command: {shlex.join(command)}", flush=True)
    results = []
    for index in range(args.runs):
        extra = ["--capture-budget", str(args.budget), *shlex.split(args.extra)] + (["--fresh"] if index == 0 else [])
        result = run_once(folder, command, extra, library)
        results.append(result)
        print(json.dumps({"run": index + 1, **result}), flush=True)
    if len(results) > 1 and results[0]["seconds"]:
        print(f"unchanged re-run: {results[1]['seconds']:.1f} s, {results[1]['seconds'] / results[0]['seconds']:.0%} "
              f"of the first run's {results[0]['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
