"""How much `apply` adds to a file, beside what NVIDIA added to the same file in its own TileIR port.

    python benchmarks/diff_size.py --upstream DIR [--fork DIR] [--library DIR ...] [--json OUT]

--upstream: Triton's tutorials as upstream wrote them (the fork's base commit, 6cc450502); --fork: the same files
as NVIDIA's Triton-to-tile-IR fork ported them (50ec1da08); --library: a package folder (liger-kernel's `ops/`),
applied in library mode (its files import one helper module, `_tileir.py`, which is counted once).

Counts added lines of code: lines of the new file that the original does not have, less blank lines and comments.
Each added line of tileiropt's output is put in one group by what it belongs to: the gate (`is_tileir()` or the
import of the package's helper), the TMA runtime (dispatch and 2-CTA guard helpers), twin kernel bodies (the
`<name>_tileir` functions), and configs (the rest: config lists, bindings). Goals (issue text): outside twin
bodies, at most 2x NVIDIA's added lines on 03, 06, 08, 09, and at most 25 added lines for a file whose kernels only
gain configs; no function defined twice across one library's files. Prints Markdown with the tool's own time.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tileiropt.apply.apply import NoKernelFound, transform_source  # noqa: E402
from tileiropt.apply.gate import GATE_NAME, HELPER_MODULE, OTHER_NAME  # noqa: E402
from tileiropt.errors import UserError  # noqa: E402
from tileiropt.releases import get_release  # noqa: E402

GOAL_FILES = ("03", "06", "08", "09")  # where NVIDIA tuned: at most 2x its added lines outside twin bodies
CONFIGS_ONLY_GOAL = 25


def code_lines(text: str) -> set[int]:
    """Line numbers (1-based) holding code: not blank, not a comment."""
    return {number for number, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.strip().startswith("#")}


def added_lines(before: str, after: str) -> list[int]:
    """Line numbers of `after` that `before` does not have (a line diff), code only."""
    code = code_lines(after)
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    added = []
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("insert", "replace"):
            added += [j + 1 for j in range(j1, j2) if j + 1 in code]
    return added


def groups(after: str, lines: list[int]) -> Counter:
    """The added lines by group: gate, runtime, twins, configs."""
    spans: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(after)):
        if isinstance(node, ast.FunctionDef) and node.name in (GATE_NAME, OTHER_NAME):
            spans.append((node.lineno, node.end_lineno or node.lineno, "gate"))
        elif isinstance(node, ast.ImportFrom) and node.module == HELPER_MODULE:
            spans.append((node.lineno, node.end_lineno or node.lineno, "gate"))
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.startswith(("_tileiropt", "_TileIROpt")):
            spans.append((node.lineno, node.end_lineno or node.lineno, "runtime"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(a.asname and a.asname.startswith("_tileiropt")
                                                                    for a in node.names):
            spans.append((node.lineno, node.end_lineno or node.lineno, "runtime"))
        elif isinstance(node, ast.FunctionDef) and node.name.endswith(("_tileir", "_tileir_pointer")):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            spans.append((first, node.end_lineno or node.lineno, "twins"))
    counted: Counter = Counter()
    for line in lines:
        group = next((g for start, end, g in spans if start <= line <= end), "configs")
        counted[group] += 1
    return counted


def measure_file(original: Path, fork: Path | None, release: str) -> dict:
    before = original.read_text(encoding="utf-8")
    started = time.perf_counter()
    try:
        after = transform_source(before, str(original), release=get_release(release)).new_source
    except NoKernelFound:
        return {"file": original.name, "kernels": 0}
    except UserError as exc:
        return {"file": original.name, "error": str(exc)}
    seconds = time.perf_counter() - started
    added = added_lines(before, after)
    counted = groups(after, added)
    nvidia = len(added_lines(before, fork.read_text(encoding="utf-8"))) if fork and fork.is_file() else None
    return {"file": original.name, "nvidia": nvidia, "tileiropt": len(added), **{g: counted[g] for g in
            ("gate", "configs", "runtime", "twins")}, "apply_s": round(seconds, 3)}


def goal(row: dict) -> str:
    if "tileiropt" not in row:
        return "-"
    outside = row["tileiropt"] - row["twins"]
    if row["file"][:2] in GOAL_FILES and row.get("nvidia") is not None:
        limit = 2 * row["nvidia"]
        return f"{outside} <= {limit}: {'met' if outside <= limit else 'not met'}"
    if row["twins"] == 0 and row["runtime"] == 0:
        return f"{outside} <= {CONFIGS_ONLY_GOAL}: {'met' if outside <= CONFIGS_ONLY_GOAL else 'not met'}"
    return f"{outside} (twins: no goal)"


def measure_library(folder: Path, release: str) -> dict:
    """Library mode over `folder` (a package): per file the added lines, the helper module counted once, and the
    functions defined in more than one optimized file."""
    from tileiropt.apply.apply import apply_library

    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        results, helper = apply_library(folder, Path(out), release=get_release(release))
        seconds = time.perf_counter() - started
        rows, definitions = [], Counter()
        for result in results:
            if not result.changed:
                continue
            added = added_lines(result.source, result.new_source)
            counted = groups(result.new_source, added)
            rows.append({"file": str(Path(result.path).relative_to(folder)), "tileiropt": len(added),
                         **{g: counted[g] for g in ("gate", "configs", "runtime", "twins")}})
            for node in ast.parse(result.new_source).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.lineno in set(added):
                    definitions[node.name] += 1
        helper_lines = len(code_lines(helper.read_text(encoding="utf-8"))) if helper and helper.is_file() else 0
    return {"folder": str(folder), "rows": rows, "helper_lines": helper_lines, "apply_s": round(seconds, 2),
            "duplicated": sorted(name for name, count in definitions.items() if count > 1)}


def markdown(tutorials: list[dict], libraries: list[dict]) -> str:
    out = []
    if tutorials:
        out += ["| file | NVIDIA's port | tileiropt | gate | configs | TMA runtime | twins | outside twins vs goal "
                "| apply s |", "|---|---|---|---|---|---|---|---|---|"]
        for row in tutorials:
            if "tileiropt" not in row:
                out.append(f"| {row['file']} | | {row.get('error', 'no kernel')} | | | | | | |")
                continue
            nvidia = "not ported" if row["nvidia"] is None else f"+{row['nvidia']}"
            out.append(f"| {row['file']} | {nvidia} | +{row['tileiropt']} | {row['gate']} | {row['configs']} | "
                       f"{row['runtime']} | {row['twins']} | {goal(row)} | {row['apply_s']} |")
    for library in libraries:
        rows = library["rows"]
        worst = max(rows, key=lambda r: r["tileiropt"] - r["twins"], default=None)
        total = sum(r["tileiropt"] for r in rows)
        out += ["", f"Library `{library['folder']}` ({len(rows)} files changed, apply {library['apply_s']} s): "
                f"+{total} lines in its files, helper module `_tileir.py` {library['helper_lines']} lines (once); "
                f"per file outside twins: median {sorted(r['tileiropt'] - r['twins'] for r in rows)[len(rows) // 2]}"
                f", most {worst['tileiropt'] - worst['twins']} ({worst['file']}); "
                f"functions defined in more than one file: {', '.join(library['duplicated']) or 'none'}."
                if rows else f"Library `{library['folder']}`: no file changed."]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", type=Path)
    parser.add_argument("--fork", type=Path)
    parser.add_argument("--library", type=Path, action="append", default=[])
    parser.add_argument("--release", default="13.4")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    tutorials = [measure_file(path, args.fork / path.name if args.fork else None, args.release)
                 for path in sorted(args.upstream.glob("0*.py"))] if args.upstream else []
    libraries = [measure_library(folder, args.release) for folder in args.library]
    print(markdown(tutorials, libraries))
    print(f"\nThe tool's own time: {time.perf_counter() - started:.1f} s in all.")
    if args.json:
        args.json.write_text(json.dumps({"tutorials": tutorials, "libraries": libraries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
