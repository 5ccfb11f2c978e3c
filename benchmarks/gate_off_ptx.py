"""Proof that an optimized package compiles, with the gate off, to the very PTX of the original.

    python benchmarks/gate_off_ptx.py --package DIR [--release 13.4] [--json OUT] -- python drive.py [args]

Copies the package folder twice into a scratch folder: as it is, and with `tileiropt apply` in library mode written
over its kernel files (the helper module `_tileir.py` beside them, as `run --in-place` leaves it). Runs the command
once against each copy (first on `PYTHONPATH`), each with an empty Triton cache of its own and the gate off
(`ENABLE_TILE` unset), so every kernel the program launches is compiled afresh. Then reads the PTX of every compiled
kernel from the two caches and compares them kernel by kernel, by SHA-256 of the PTX without its debug lines
(`.loc`, `.file`, the `.debug_*` sections: the optimized file's line numbers differ). The rewrites apply made are
listed per kind (rewrites in place, launch hints, configs added, descriptor twins), so each kind is shown covered by
kernels that ran. Needs a GPU (PTX is compiled only there). Prints Markdown with the tool's own time.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tileiropt.apply.apply import apply_library  # noqa: E402
from tileiropt.releases import get_release  # noqa: E402

DEBUG = re.compile(r"^\s*(\.loc|\.file)\b|^\s*//")


def normalized(ptx: str) -> str:
    """The PTX without debug lines and sections: what the GPU runs, not where the source lines were."""
    out, skipping = [], False
    for line in ptx.splitlines():
        if line.lstrip().startswith(".section") and ".debug" in line:
            skipping = True
        if skipping:
            skipping = line.strip() != "}"
            continue
        if not DEBUG.match(line) and line.strip():
            out.append(line.rstrip())
    return "\n".join(out)


def cache_ptx(cache: Path) -> dict[str, set[str]]:
    """Kernel name -> the digests of its compiled PTX (one per specialization) in a Triton cache folder."""
    found: dict[str, set[str]] = collections.defaultdict(set)
    for path in cache.rglob("*.ptx"):
        text = path.read_text(encoding="utf-8", errors="replace")
        match = re.search(r"\.entry\s+(\w+)", text)
        name = match.group(1) if match else path.stem
        found[name].add(hashlib.sha256(normalized(text).encode()).hexdigest()[:16])
    return found


def run(command: list[str], package_parent: Path, cache: Path, timeout: float) -> tuple[int, float, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ENABLE_TILE", "TRITON_INTERPRET")}
    env["TRITON_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join([str(package_parent), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    return done.returncode, time.perf_counter() - started, (done.stdout + done.stderr)[-1500:]


def rewrite_kinds(results: list) -> dict[str, list[str]]:
    """Kind of rewrite -> the kernels apply gave it."""
    kinds: dict[str, list[str]] = collections.defaultdict(list)
    for result in results:
        for kernel in result.kernels:
            for change in kernel.changes:
                what = change.what
                kind = ("rewrite in place" if "in place" in what and "->" in what else
                        "launch hint" if "at its launch" in what else
                        "descriptor twin" if what.startswith("twin ") else
                        "configs added" if "TileIR configs" in what else None)
                if kind and kernel.kernel not in kinds[kind]:
                    kinds[kind].append(kernel.kernel)
    return kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, required=True, help="the package folder (its name is imported)")
    parser.add_argument("--release", default="13.4")
    parser.add_argument("--timeout", type=float, default=480)
    parser.add_argument("--json", type=Path)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="gate_off_ptx_"))
    package = args.package.resolve()
    original, optimized = scratch / "original", scratch / "optimized"
    for side in (original, optimized):
        shutil.copytree(package, side / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    applied_at = time.perf_counter()
    out = scratch / "applied"
    results, helper = apply_library(optimized / package.name, out, release=get_release(args.release))
    for result in results:  # written over the copy's kernel files, as `run --in-place` leaves them
        if result.changed:
            Path(result.path).write_text(result.new_source, encoding="utf-8")
    if helper is not None:  # the package's helper module, at the package's top (`apply.helper_level`)
        shutil.copy(helper, optimized / package.name / helper.name)
    apply_s = time.perf_counter() - applied_at
    sides = {}
    for name, folder in (("original", original), ("optimized", optimized)):
        code, seconds, tail = run(command, folder, scratch / f"cache_{name}", args.timeout)
        sides[name] = {"exit": code, "seconds": round(seconds, 1), "kernels": cache_ptx(scratch / f"cache_{name}"),
                       "tail": tail}
    before, after = sides["original"]["kernels"], sides["optimized"]["kernels"]
    same = sorted(k for k in before if after.get(k) == before[k])
    differ = sorted(k for k in before if k in after and after[k] != before[k])
    only = sorted(set(before) ^ set(after))
    kinds = rewrite_kinds(results)
    lines = [f"`{' '.join(command)}` against `{package.name}` ({len(results)} kernel files, "
             f"{sum(r.changed for r in results)} changed by apply in {apply_s:.1f} s), gate off, cold Triton caches:",
             "", f"- original: exit {sides['original']['exit']}, {sides['original']['seconds']} s, "
                 f"{len(before)} kernels compiled",
             f"- optimized: exit {sides['optimized']['exit']}, {sides['optimized']['seconds']} s, "
             f"{len(after)} kernels compiled",
             f"- identical PTX: {len(same)} kernels; different: {len(differ)} {differ[:10]}; "
             f"compiled on one side only: {len(only)} {only[:10]}", "",
             "| rewrite kind | kernels given it | of them compiled here | identical PTX with the gate off |",
             "|---|---|---|---|"]
    for kind, kernels in sorted(kinds.items()):
        ran = [k for k in kernels if k in before]
        lines.append(f"| {kind} | {len(kernels)} | {len(ran)} | {sum(k in same for k in ran)} of {len(ran)} |")
    lines.append(f"\nThe tool's own time: {time.perf_counter() - started:.1f} s in all.")
    print("\n".join(lines))
    for name, side in sides.items():
        if side["exit"]:
            print(f"\n{name} exit {side['exit']}:\n{side['tail']}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({"same": same, "differ": differ, "only": only, "kinds": kinds,
                                         "digests": {k: sorted(v) for k, v in before.items()},
                                         "sides": {n: {k: v for k, v in s.items() if k != "kernels"}
                                                   for n, s in sides.items()}}, indent=1))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0 if not differ and all(s["exit"] == 0 for s in sides.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
