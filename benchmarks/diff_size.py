"""How much `apply` adds to a file, beside what NVIDIA added to the same file in its own TileIR port.

    python benchmarks/diff_size.py --upstream DIR [--fork DIR] [--library DIR ...] [--json OUT]

--upstream: Triton's tutorials as upstream wrote them (the fork's base commit, 6cc450502); --fork: the same files
as NVIDIA's Triton-to-tile-IR fork ported them (50ec1da08); --library: a package folder (liger-kernel's `ops/`),
applied in library mode (its files import one helper module, `_tileir.py`, which is counted once).

Counts added lines of code: lines of the new file that the original does not have (a changed line counts as
added), less blank lines and comments. Each added line is put in one group by what it belongs to: the gate
(`is_tileir()`, its constexprs, or the import of the package's helper), the TMA runtime (dispatch
helpers), a dot kernel's descriptor form (its `<name>_tileir` TMA twin), other copied kernels, and the rest
(config lists, launch hints, rewrites in place). Per file also: kernels copied (every twin but a descriptor form),
autotuners added, rewrites in place, launch hints.

Goals: a library file without dot kernels adds at most 40 lines, one with dot kernels at most 100 outside its
descriptor forms; tutorials 03 and 09 at most 100 outside their descriptor forms, every other tutorial at most
max(25, 2x NVIDIA's port). Prints Markdown with the tool's own time.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tileiropt.apply.apply import NoKernelFound, helper_source, transform_source  # noqa: E402
from tileiropt.errors import UserError  # noqa: E402
from tileiropt.harness.gate import GATE_NAME, HELPER_MODULE, OTHER_NAME, helper_import_level  # noqa: E402
from tileiropt.releases import get_release  # noqa: E402

DOT_TUTORIALS = ("03", "09")  # at most DOT_FILE_GOAL added lines outside their descriptor forms
DOT_FILE_GOAL = 100
NO_DOT_FILE_GOAL = 40
TUTORIAL_FLOOR = 25  # every other tutorial: at most max(25, 2x NVIDIA's added lines)
GROUPS = ("gate", "runtime", "descriptor", "copied", "rest")


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


def groups(after: str, lines: list[int], dot_kernels: set[str]) -> Counter:
    """The added lines by group (`GROUPS`)."""
    spans: list[tuple[int, int, str]] = []
    for node in ast.walk(ast.parse(after)):
        if isinstance(node, ast.FunctionDef) and node.name in (GATE_NAME, OTHER_NAME):
            spans.append((node.lineno, node.end_lineno or node.lineno, "gate"))
        elif isinstance(node, ast.ImportFrom) and node.module == HELPER_MODULE:
            spans.append((node.lineno, node.end_lineno or node.lineno, "gate"))
        elif isinstance(node, ast.Assign) and "constexpr(" in ast.unparse(node.value) and any(
                isinstance(target, ast.Name) and target.id.isupper() for target in node.targets):
            spans.append((node.lineno, node.end_lineno or node.lineno, "gate"))  # TILEIR, LOG2E
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.startswith(("_tileiropt", "_TileIROpt")):
            spans.append((node.lineno, node.end_lineno or node.lineno, "runtime"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(a.asname and a.asname.startswith("_tileiropt")
                                                                    for a in node.names):
            spans.append((node.lineno, node.end_lineno or node.lineno, "runtime"))
        elif isinstance(node, ast.FunctionDef) and node.name.endswith(("_tileir", "_tileir_pointer")) \
                and node.name not in (GATE_NAME, OTHER_NAME):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            descriptor = node.name.endswith("_tileir") and node.name.removesuffix("_tileir") in dot_kernels
            spans.append((first, node.end_lineno or node.lineno, "descriptor" if descriptor else "copied"))
    counted: Counter = Counter()
    for line in lines:
        counted[next((g for start, end, g in spans if start <= line <= end), "rest")] += 1
    return counted


def shape(result, dot_kernels: set[str]) -> dict:
    """What the rewrite of one file did: added lines by group, kernels copied, autotuners added, rewrites in place,
    launch hints."""
    from tileiropt.apply.audit import hint_autotunes

    added = added_lines(result.source, result.new_source)
    counted = groups(result.new_source, added, dot_kernels)
    hints = len(re.findall(r"\*\*\(\{[^{}]*\} if \w+(?:\(\))? else \{\}\)", result.new_source)) - len(
        re.findall(r"\*\*\(\{[^{}]*\} if \w+(?:\(\))? else \{\}\)", result.source))  # launch hints
    twins = [node.name for node in ast.walk(ast.parse(result.new_source)) if isinstance(node, ast.FunctionDef)
             and node.name.endswith(("_tileir", "_tileir_pointer")) and node.name not in (GATE_NAME, OTHER_NAME)
             and node.name not in
             {n.name for n in ast.walk(ast.parse(result.source)) if isinstance(n, ast.FunctionDef)}]
    return {"added": len(added), **{g: counted[g] for g in GROUPS},
            "copied_kernels": sum(1 for name in twins if not (name.endswith("_tileir")
                                                              and name.removesuffix("_tileir") in dot_kernels)),
            "descriptor_forms": sum(1 for name in twins if name.endswith("_tileir")
                                    and name.removesuffix("_tileir") in dot_kernels),
            "autotuners_added": len(hint_autotunes(result.new_source)),
            "rewrites_in_place": result.new_source.count(" if TILEIR else ") - result.source.count(" if TILEIR else ")
            - hints,
            "launch_hints": hints,
            "dot": bool(dot_kernels)}


def _dot_kernels(result) -> set[str]:
    return {kernel.kernel for kernel in result.kernels if kernel.kernel_class == "dot"}


def measure_file(original: Path, fork: Path | None, release: str) -> dict:
    before = original.read_text(encoding="utf-8")
    started = time.perf_counter()
    try:
        result = transform_source(before, str(original), release=get_release(release))
    except NoKernelFound:
        return {"file": original.name, "kernels": 0}
    except UserError as exc:
        return {"file": original.name, "error": str(exc)}
    seconds = time.perf_counter() - started
    nvidia = len(added_lines(before, fork.read_text(encoding="utf-8"))) if fork and fork.is_file() else None
    return {"file": original.name, "nvidia": nvidia, **shape(result, _dot_kernels(result)),
            "apply_s": round(seconds, 3), "imports_helper": helper_import_level(result.new_source) == 0}


def goal(row: dict, tutorial: bool) -> str:
    if "added" not in row:
        return "-"
    outside = row["added"] - row["descriptor"]
    if tutorial and row["file"][:2] in DOT_TUTORIALS or not tutorial and row["dot"]:
        limit = DOT_FILE_GOAL
    elif tutorial:
        limit = max(TUTORIAL_FLOOR, 2 * (row.get("nvidia") or 0))
    else:
        limit = NO_DOT_FILE_GOAL
    return f"{outside} <= {limit}: {'met' if outside <= limit else 'not met'}"


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
            rows.append({"file": str(Path(result.path).relative_to(folder)), **shape(result, _dot_kernels(result))})
            added = set(added_lines(result.source, result.new_source))
            for node in ast.parse(result.new_source).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.lineno in added:
                    definitions[node.name] += 1
        helper_lines = len(code_lines(helper.read_text(encoding="utf-8"))) if helper and helper.is_file() else 0
    return {"folder": str(folder), "rows": rows, "helper_lines": helper_lines, "apply_s": round(seconds, 2),
            "duplicated": sorted(name for name, count in definitions.items() if count > 1)}


HEADER = ["| file | NVIDIA's port | tileiropt | descriptor forms | kernels copied | autotuners added | "
          "rewrites in place | launch hints | outside descriptor forms vs goal |",
          "|---|---|---|---|---|---|---|---|---|"]


def _row(row: dict, tutorial: bool) -> str:
    if "added" not in row:
        return f"| {row['file']} | | {row.get('error', 'no kernel')} | | | | | | |"
    nvidia = "" if not tutorial else "not ported" if row.get("nvidia") is None else f"+{row['nvidia']}"
    return (f"| {row['file']} | {nvidia} | +{row['added']} | {row['descriptor_forms']} (+{row['descriptor']}) | "
            f"{row['copied_kernels']} | {row['autotuners_added']} | {row['rewrites_in_place']} | "
            f"{row['launch_hints']} | {goal(row, tutorial)} |")


def markdown(tutorials: list[dict], libraries: list[dict]) -> str:
    out = []
    if tutorials:
        out += HEADER + [_row(row, True) for row in tutorials]
        importing = [r["file"] for r in tutorials if r.get("imports_helper")]
        if importing:
            out.append(f"\nPlus the helper module written beside them, `_tileir.py` (the TMA dispatch, once for the "
                       f"folder): {len(code_lines(helper_source()))} lines, imported by {', '.join(importing)}.")
        out.append(f"\napply: {sum(r.get('apply_s', 0) for r in tutorials):.2f} s for {len(tutorials)} files")
    for library in libraries:
        rows = library["rows"]
        total = sum(r["added"] for r in rows)
        met = sum(goal(r, False).endswith(": met") for r in rows)
        out += ["", f"Library `{library['folder']}`: {len(rows)} files changed, apply {library['apply_s']} s; "
                f"+{total} lines in its files, helper module `_tileir.py` {library['helper_lines']} lines (once); "
                f"kernels copied {sum(r['copied_kernels'] for r in rows)}, autotuners added "
                f"{sum(r['autotuners_added'] for r in rows)}, rewrites in place "
                f"{sum(r['rewrites_in_place'] for r in rows)}, launch hints {sum(r['launch_hints'] for r in rows)}; "
                f"goal met by {met} of {len(rows)} files; "
                f"functions defined in more than one file: {', '.join(library['duplicated']) or 'none'}.", ""]
        out += HEADER + [_row(row, False) for row in sorted(rows, key=lambda r: r["file"])]
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
    libraries = [measure_library(folder.resolve(), args.release) for folder in args.library]
    print(markdown(tutorials, libraries))
    print(f"\nThe tool's own time: {time.perf_counter() - started:.1f} s in all.")
    if args.json:
        args.json.write_text(json.dumps({"tutorials": tutorials, "libraries": libraries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
