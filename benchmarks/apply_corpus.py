"""`apply` over a corpus of kernel files: what changed, what was left alone and why, and the promises kept.

    python benchmarks/apply_corpus.py PATH [PATH ...] [--release 13.4] [--no-import] [--out result.json]

For every Python file under PATH that defines a Triton kernel (others are skipped): the rewrite's time, its
kernels changed or left alone (reasons counted by their leading words), hint-only autotunes keyed on a
pointer or wrapping a kernel's own autotuner (`tileiropt.apply.audit.bad_keys`), and any exception other
than the tool's one-line errors (a traceback). Unless --no-import, every generated file is imported in the
original's place with the TileIR code on and off (`audit.import_check`): import errors and kernel objects with
two autotuners. Prints Markdown; --out keeps the details. Nothing is written next to the inputs.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tileiropt.apply.apply import NoKernelFound, transform_source  # noqa: E402
from tileiropt.apply.audit import bad_keys, import_check  # noqa: E402
from tileiropt.classify.classify import collect_files  # noqa: E402
from tileiropt.classify.modules import package_name_for  # noqa: E402
from tileiropt.errors import UserError  # noqa: E402
from tileiropt.releases import get_release  # noqa: E402


def reason_kind(text: str) -> str:
    """The leading words of a left-alone reason, numbers and names dropped, so equal causes count together."""
    text = re.sub(r"^line \d+: ", "", text)  # per-access TMA notes: "line 239: tl.load kept (...): why"
    head = ": ".join(re.split(r": ", text)[:2])  # "no hint autotune: atomics (line 200) accumulate ..."
    return re.sub(r"\s+", " ", re.sub(r"`[^`]*`|\(line \d+\)|\d+", "", head)).strip()[:90]


def run(paths: list[Path], release: str, imports: bool) -> dict:
    files = collect_files(paths)
    out: dict = {"files": 0, "skipped_no_kernel": 0, "changed_files": 0, "kernels": 0, "kernels_changed": 0,
                 "left_alone": Counter(), "not_done": Counter(), "bad_keys": [], "tracebacks": [], "refused": [],
           "seconds": {},
                 "imports": {}}
    generated = []
    with tempfile.TemporaryDirectory(prefix="apply-corpus-") as folder:
        for path in files:
            source = path.read_text(encoding="utf-8", errors="replace")
            started = time.perf_counter()
            try:
                result = transform_source(source, str(path), release=get_release(release))
                problems = bad_keys(source, result.new_source, str(path)) if result.changed else []
            except NoKernelFound:
                out["skipped_no_kernel"] += 1
                continue
            except UserError as exc:  # a file the tool refuses in one line (syntax error, too deep, ...)
                out["refused"].append(f"{path}: {exc}")
                continue
            except Exception:  # noqa: BLE001 - counted: the tool promises none
                out["tracebacks"].append(f"{path}: {traceback.format_exc(limit=3)}")
                continue
            out["seconds"][str(path)] = time.perf_counter() - started
            out["files"] += 1
            out["changed_files"] += bool(result.changed)
            for kernel in result.kernels:
                out["kernels"] += 1
                if kernel.changes:
                    out["kernels_changed"] += 1
                    out["not_done"].update(reason_kind(s) for s in kernel.skipped)
                else:
                    out["left_alone"].update({reason_kind(s) for s in kernel.skipped} or {"nothing to change"})
            if result.changed:
                out["bad_keys"] += problems
                target = Path(folder) / f"{len(generated)}_{path.stem}_tileir.py"
                target.write_text(result.new_source, encoding="utf-8")
                generated.append({"generated": str(target), "original": str(path),
                                  "module": package_name_for(path)[0]})
        if imports and generated:
            for gate in ("1", "0"):
                rows = import_check(generated, gate)
                out["imports"][gate] = {
                    "imported": sum("original_fails" not in r for r in rows),
                    "original_fails": sum("original_fails" in r for r in rows),
                    "errors": [f"{r['original']}: {r['error']}" for r in rows if "error" in r],
                    "twice": [f"{r['original']}: {r['twice']}" for r in rows if r.get("twice")]}
    return out


def markdown(out: dict, release: str) -> str:
    times = sorted(out["seconds"].values())
    lines = [f"CUDA Tile IR {release}: {out['files']} files with kernels ({out['skipped_no_kernel']} without, "
             f"skipped), {out['changed_files']} changed; {out['kernels']} kernels, {out['kernels_changed']} changed, "
             f"{out['kernels'] - out['kernels_changed']} left alone",
             f"time per file: median {statistics.median(times) * 1000:.0f} ms, p90 "
             f"{times[int(0.9 * (len(times) - 1))] * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms, total "
             f"{sum(times):.1f} s" if times else "time per file: no file",
             f"hint autotunes keyed on a pointer or around a kernel's own autotuner: {len(out['bad_keys'])}",
             f"tracebacks: {len(out['tracebacks'])}; files refused in one line: {len(out['refused'])}", "",
             "| kernels left alone | reason |", "|---|---|"]
    lines += [f"| {n} | {why} |" for why, n in out["left_alone"].most_common()]
    lines += ["", "| changed kernels with a part not done | reason |", "|---|---|"]
    lines += [f"| {n} | {why} |" for why, n in out["not_done"].most_common()]
    for gate, row in out["imports"].items():
        lines.append(f"\nimports with the TileIR code {'on' if gate == '1' else 'off'}: {row['imported']} imported "
                     f"({row['original_fails']} originals do not import here), errors {len(row['errors'])}, "
                     f"kernels with two autotuners {len(row['twice'])}")
        lines += [f"- {e}" for e in row["errors"] + row["twice"]]
    lines += [f"- {p}" for p in out["bad_keys"] + out["tracebacks"] + out["refused"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--release", default="13.4")
    parser.add_argument("--no-import", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    out = run(args.paths, args.release, not args.no_import)
    print(markdown(out, args.release))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, default=list), encoding="utf-8")


if __name__ == "__main__":
    main()
