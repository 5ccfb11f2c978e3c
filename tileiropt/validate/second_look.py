"""A second look at a replay expected bit-exact that differs: the original run once more on the same inputs tells
whether the kernel disagrees with itself (nondeterminism) or, its code being the same in both files, the tool's
replay differs (the tool's error)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libcst as cst

from tileiropt.harness import harness
from tileiropt.harness.gate_off import gate_off
from tileiropt.validate.cases import Case


@dataclass
class SecondLook:
    """The comparison to keep, what the second look found (for the record's reason), the original's own spread on
    the same inputs (> 0: it disagrees with itself), and whether the difference is the tool's replay."""

    result: harness.Comparison
    note: str = ""
    spread: float = 0.0
    tool_error: bool = False


def own_spread(function: Callable[..., Any], expected: object, inputs: dict[str, Any], case: Case) -> float:
    """How far the original, run once more on the same inputs, lands from its first run (`expected`; comparing
    reads the values, which waits for the device)."""
    again, _ = harness.evaluate_reference(function, "original", inputs, case.args, case.dims)
    return harness.compare(again, expected, 0.0, 0.0).max_abs or 0.0


def same_kernel_code(path: str, original: str | None, kernel: str) -> bool:
    """Whether the kernel's function is the same source in both files (or the files are byte-identical), the
    optimized one read as the gate off compiles it (an in-place rewrite `a if TILEIR else b` read as `b`)."""
    if not original:
        return False
    try:
        texts = [Path(p).read_text(encoding="utf-8") for p in (path, original)]
        texts[0] = gate_off(texts[0]) if texts[0] != texts[1] else texts[0]
    except (OSError, UnicodeDecodeError, cst.ParserSyntaxError):
        return False
    if texts[0] == texts[1]:
        return True

    def source(text: str) -> str | None:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        found = [ast.get_source_segment(text, node) for node in ast.walk(tree)
                 if isinstance(node, ast.FunctionDef) and node.name == kernel]
        return found[0] if len(found) == 1 else None

    first = source(texts[0])
    return first is not None and first == source(texts[1])
