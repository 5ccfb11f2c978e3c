"""Does paired timing see a 5% slowdown, and never a no-change? Planted files, benched repeatedly (GPU).

    python benchmarks/paired_timing.py --out paired.json [--repeats 3] [--sizes 4194304,16777216,67108864]

Writes a project in a temporary folder: one memory-bound kernel (`y = 2 x`, float32) and three
"optimized" files for it, set with the project's `optimized` key:

- `same`: a byte-for-byte copy (no change: must never be flagged),
- `slow5`: the same launch plus a second one over N/20 elements (5% more memory traffic),
- `slow10`: plus one over N/10 elements (10% more).

Then runs `tileiropt bench --json` `--repeats` times and counts, per planted file and size, the
paired verdicts (`slower` / `same` / `unclear` / `faster`) and the ratios with their 95% intervals.
Needs a CUDA GPU; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


    def scale(x, y):
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)
    {extra}''')

EXTRA = textwrap.dedent('''
    def _planted(x, y, parts):
        n = x.numel() // parts
        scale_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096)


    _plain = scale


    def scale(x, y):  # noqa: F811 - the planted slowdown: the same launch and a {percent}% extra one
        _plain(x, y)
        _planted(x, y, {parts})
    ''')

PLANTS = {"same": None, "slow5": 20, "slow10": 10}  # name -> the extra launch covers N/parts (--plants)


def write_project(folder: Path, sizes: list[int], plants: dict[str, int | None]) -> None:
    (folder / "scale.py").write_text(KERNEL.format(extra=""))
    kernels = []
    for name, parts in plants.items():
        extra = "" if parts is None else EXTRA.format(parts=parts, percent=100 // parts)
        (folder / f"scale_{name}.py").write_text(KERNEL.format(extra=extra))
        kernels.append(textwrap.dedent(f"""
            [[kernel]]
            name = "{name}"
            path = "scale.py"
            entry = "scale"
            optimized = "scale_{name}.py"
            reference = "original"
            inputs = {{ x = ["N"], y = ["N"] }}
            dims = {{ N = 4096 }}
            sweep = ["N"]
            """))
    (folder / "tileiropt.toml").write_text(
        f"[project]\nartifacts = \".tileiropt\"\n\n[defaults]\nsizes = {sizes}\ndtypes = \"float32\"\n"
        f"timeout = 300\n" + "".join(kernels))


def bench_once(folder: Path) -> list[dict]:
    # --fresh: each repeat measures again (an unchanged re-run would reuse the first run's rows)
    result = subprocess.run([sys.executable, "-m", "tileiropt", "bench", str(folder), "--json", "--fresh"],
                            capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    if result.returncode not in (0, 1):
        raise SystemExit(f"bench failed ({result.returncode}): {result.stderr[-2000:]}")
    rows = json.loads(result.stdout)["rows"]
    return [{"kernel": r["kernel"], "size": r["size"], **{k: r["paired"][k] for k in
             ("ratio", "ci_low", "ci_high", "verdict", "rounds")}, "gpu": r["paired"].get("gpu")}
            for r in rows if r.get("paired")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="4194304,16777216,67108864")
    parser.add_argument("--plants", default="same:0,slow5:20,slow10:10",
                        help="name:parts, the extra launch covering N/parts elements (0: an identical copy)")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    plants = {name: (int(parts) or None) for name, parts in (p.split(":") for p in options.plants.split(","))}
    with tempfile.TemporaryDirectory(prefix="tileiropt-paired-") as tmp:
        folder = Path(tmp)
        write_project(folder, sizes, plants)
        runs = [bench_once(folder) for _ in range(options.repeats)]
    verdicts: dict[tuple[str, int], Counter] = {}
    ratios: dict[tuple[str, int], list[str]] = {}
    for run in runs:
        for p in run:
            key = (p["kernel"], p["size"])
            verdicts.setdefault(key, Counter())[p["verdict"]] += 1
            ratios.setdefault(key, []).append(f"{p['ratio']:.3f} [{p['ci_low']:.3f}-{p['ci_high']:.3f}]")
    print("| planted | size | verdicts | ratios [95% interval] |")
    print("|---|---:|---|---|")
    for (kernel, size), counts in sorted(verdicts.items()):
        print(f"| {kernel} | {size} | {dict(counts)} | {', '.join(ratios[(kernel, size)])} |")
    if options.out:
        options.out.write_text(json.dumps({"sizes": sizes, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
