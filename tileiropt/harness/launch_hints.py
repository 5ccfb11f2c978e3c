"""TileIR hints written at a kernel's launch, under the gate, as literals: how `apply` writes them and how the
tool's own replay reads them back from an optimized file.

A kernel its author launches with fixed options (no autotuner) keeps its launch; `apply` adds one argument to each
launch site it finds in the file (`kernel[grid](...)`, or `kernel.warmup(...)`, which compiles it ahead):

    kernel[grid](x, y, n, BLOCK=1024, num_warps=4, **({"occupancy": 4} if TILEIR else {}))

`TILEIR` is the gate's value, taken once at import (`TILEIR = triton.language.constexpr(is_tileir())`): a launch
pays no call of the gate (1.4 us a launch on the 2-core machine, against 0.1 us for the constant). With the gate off
the splat is empty and the launch is the author's. The tool's replay launches the innermost JIT
function itself (`capture/replay.py`), below every launch site, so it reads the literal back from the file's
source (`launch_hints`) to launch the optimized side as the file does; the TileIR surface drops the hints again
where the backend is PTX (`tileir_surface`).
"""

from __future__ import annotations

import ast
import functools
from types import ModuleType

LAUNCH_HINTS = ("occupancy",)  # the hints a launch gets (num_stages and num_warps stay the author's)


def hint_splat(hints: dict[str, int], flag: str) -> str:
    """The keyword splat a launch site gets: `**({"occupancy": 4} if TILEIR else {})` (`flag`: the gate's value)."""
    items = ", ".join(f"{name!r}: {value!r}".replace("'", '"') for name, value in hints.items())
    return f"**({{{items}}} if {flag} else {{}})"


def _literal_hints(node: ast.expr) -> dict[str, int] | None:
    """The hints of a splat written by `hint_splat` (any flag name; a call of the gate, as earlier versions wrote
    it), or None for another expression."""
    gated = isinstance(node, ast.IfExp) and (isinstance(node.test, ast.Name) or (
        isinstance(node.test, ast.Call) and isinstance(node.test.func, ast.Name) and not node.test.args))
    if not (gated and isinstance(node, ast.IfExp) and isinstance(node.body, ast.Dict)
            and isinstance(node.orelse, ast.Dict) and not node.orelse.keys):
        return None
    hints: dict[str, int] = {}
    for key, value in zip(node.body.keys, node.body.values):
        if not (isinstance(key, ast.Constant) and key.value in LAUNCH_HINTS and isinstance(value, ast.Constant)
                and type(value.value) is int):
            return None
        hints[key.value] = value.value
    return hints or None


@functools.lru_cache(maxsize=64)
def _sites(source: str) -> dict[str, list[dict[str, int]]]:
    """Kernel name -> the hints of each of its launch sites that has them, in source order."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, list[tuple[tuple[int, int], dict[str, int]]]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Subscript, ast.Attribute))
                and isinstance(node.func.value, ast.Name)):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr != "warmup":
            continue
        for keyword in node.keywords:
            hints = _literal_hints(keyword.value) if keyword.arg is None else None
            if hints:
                found.setdefault(node.func.value.id, []).append(((node.lineno, node.col_offset), hints))
    return {name: [hints for _, hints in sorted(sites, key=lambda site: site[0])] for name, sites in found.items()}


def launch_hints(module: ModuleType, kernel: str) -> dict[str, int]:
    """The TileIR hints the optimized module's launch sites of `kernel` pass under the gate (the first site's,
    where sites differ); {} for a module without them (an original file, or one whose source cannot be read)."""
    path = getattr(module, "__file__", None)
    try:
        with open(path, encoding="utf-8") as handle:  # type: ignore[arg-type]
            source = handle.read()
    except (OSError, TypeError, UnicodeDecodeError):
        return {}
    if "if " not in source or "occupancy" not in source:
        return {}
    sites = _sites(source).get(kernel, [])
    return dict(sites[0]) if sites else {}
