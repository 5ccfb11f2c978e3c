"""Lint kernel files for each CUDA Tile IR release, with and without the IR check, and compare.

    python benchmarks/classify_releases.py PATH [PATH ...] [--releases 13.1,13.4] [--out result.json]

For every release: the release-dependent findings (TIR0xx) per rule from the syntax-tree rules alone
and with the IR check, the findings the IR check adds and removes (by file, kernel, code and line),
how many kernels were lowered, and the wall time per file with the IR check on (one process, files in
order; the first file also pays for Triton's first lowering). Prints Markdown; --out keeps the records.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tileiropt.classify.classify import IROptions, classify_file, collect_files  # noqa: E402
from tileiropt.classify.rules import ALL_RULES  # noqa: E402
from tileiropt.releases import get_release  # noqa: E402


def _keys(results) -> set[tuple[str, str, str, int, str]]:
    return {(r.file, k.kernel, f.code, f.line, f.severity) for r in results for k in r.kernels
            for f in k.findings if f.code < "TIR100"}


def run(paths: list[Path], release_names: list[str]) -> dict:
    files = collect_files(paths)
    out: dict = {"files": [str(f) for f in files], "releases": {}}
    for name in release_names:
        release = get_release(name)
        syntax = [classify_file(f, rules=ALL_RULES, release=release) for f in files]
        options = IROptions()
        timed, times = [], {}
        started = time.perf_counter()
        for f in files:
            t0 = time.perf_counter()
            timed.append(classify_file(f, rules=ALL_RULES, release=release, ir=options))
            times[str(f)] = time.perf_counter() - t0
        total = time.perf_counter() - started
        before, after = _keys(syntax), _keys(timed)
        status = Counter(k.ir["status"] for r in timed for k in r.kernels if k.ir)
        out["releases"][name] = {
            "syntax_by_rule": dict(sorted(Counter(k[2] for k in before).items())),
            "ir_by_rule": dict(sorted(Counter(k[2] for k in after).items())),
            "added_by_ir": sorted(after - before),
            "removed_by_ir": sorted(before - after),
            "kernels": sum(len(r.kernels) for r in timed),
            "ir_status": dict(status),
            "seconds_total": round(total, 3),
            "seconds_per_file": {k: round(v, 3) for k, v in times.items()},
        }
    return out


def markdown(data: dict) -> str:
    lines = []
    for name, r in data["releases"].items():
        lines.append(f"### CUDA Tile IR {name}: {r['kernels']} kernels in {len(data['files'])} files, "
                     f"{r['seconds_total']:.2f} s with the IR check (IR: {r['ir_status']})")
        codes = sorted(set(r["syntax_by_rule"]) | set(r["ir_by_rule"]))
        lines.append("| rule | syntax only | with IR check |")
        lines.append("|---|---:|---:|")
        for code in codes:
            lines.append(f"| {code} | {r['syntax_by_rule'].get(code, 0)} | {r['ir_by_rule'].get(code, 0)} |")
        for label, key in (("added by the IR check", "added_by_ir"), ("removed by the IR check", "removed_by_ir")):
            items = r[key]
            lines.append(f"\n{label} ({len(items)}):")
            for file, kernel, code, line, severity in items[:40]:
                lines.append(f"- {file}:{line} {kernel} {code} {severity}")
            if len(items) > 40:
                lines.append(f"- ... {len(items) - 40} more")
        slow = sorted(r["seconds_per_file"].items(), key=lambda kv: -kv[1])[:5]
        lines.append("\nslowest files: " + ", ".join(f"{Path(k).name} {v:.2f} s" for k, v in slow) + "\n")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--releases", default="13.1,13.4")
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    data = run(options.paths, [r.strip() for r in options.releases.split(",") if r.strip()])
    print(markdown(data))
    if options.out:
        options.out.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
