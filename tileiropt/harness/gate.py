"""The gate written into a transformed file: one `is_tileir()` function, as NVIDIA's own port of Triton's tutorials
writes it, deciding without touching CUDA (a GPU-less machine and `TRITON_INTERPRET=1` import the file as before).

TileIR code is active when `ENABLE_TILE=1` and `triton.backends.tileir` is importable (nvtriton installs its TileIR
driver on that variable; standard Triton with ENABLE_TILE=1, or nvtriton without it, compiles through PTX, which
rejects TileIR hints). Everything else the tool needs to check the file (turning the TileIR code on under PTX or the
interpreter, dropping hints those reject) lives in the tool's harness (`harness/tileir_surface.py`), never here.

A library's optimized files import the gate from one small module of the package (`HELPER_MODULE`) instead of
each holding a copy.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tileiropt import __version__
from tileiropt.schema import GATE_MARKER

GATE_NAME = "is_tileir"
OTHER_NAME = "tileir_backend_active"  # when the file defines an `is_tileir` of its own (the fork's tutorials)
HELPER_MODULE = "_tileir"  # a library's shared module: <package>/_tileir.py
FORCE_ENV = "TILEIROPT_FORCE_TILEIR"  # the tool's workers: turn the TileIR code on (harness/tileir_surface.py)
TWIN_SUFFIX = "_tileir"  # `<kernel>_tileir`: a kernel's TileIR twin (descriptors, math rewrites), behind the gate
POINTER_SUFFIX = "_pointer"  # `<kernel>_tileir_pointer`: the pointer kernel under a twin's per-launch dispatch


def optimized_name(stem: str) -> str:
    """The file name of the optimized copy of a kernel file `<stem>.py`: `<stem>_tileir.py`."""
    return f"{stem}{TWIN_SUFFIX}.py"


def optimized_original(path: Path) -> Path | None:
    """The kernel file `path` is the optimized copy of (`x.py` for `x_tileir.py`), when it is one and `x.py` is
    beside it; else None."""
    if not path.stem.endswith(TWIN_SUFFIX):
        return None
    original = path.with_name(path.stem.removesuffix(TWIN_SUFFIX) + ".py")
    return original if original.exists() else None


def twin_names(kernel: str) -> tuple[str, str]:
    """The names apply gives `kernel`'s twin and the pointer kernel under its dispatch."""
    return kernel + TWIN_SUFFIX, kernel + TWIN_SUFFIX + POINTER_SUFFIX


def twinned(name: str) -> str:
    """The kernel a launched name stands for: itself, or the kernel whose twin (or pointer kernel) it is."""
    return name.removesuffix(POINTER_SUFFIX).removesuffix(TWIN_SUFFIX) if name.endswith(
        (TWIN_SUFFIX, TWIN_SUFFIX + POINTER_SUFFIX)) else name


def gate_name(module_names: set[str]) -> str:
    """The gate's name in a file whose module-level names are `module_names`."""
    return OTHER_NAME if GATE_NAME in module_names else GATE_NAME


def gate_comment() -> str:
    return f"# CUDA Tile IR backend: ENABLE_TILE=1 with nvtriton installed ({GATE_MARKER} {__version__})"


def gate_source(name: str = GATE_NAME) -> str:
    """The gate as written into a single file (or a library's helper module)."""
    return (f"{gate_comment()}\n"
            f"def {name}():\n"
            "    import importlib.util\n"
            "    import os\n\n"
            f'    return os.environ.get("ENABLE_TILE") == "1" and importlib.util.find_spec("triton.backends.tileir") '
            "is not None\n")


def extended_autotuners(source: str) -> set[str]:
    """The module-level kernel names whose autotuner a transformed file's TileIR blocks give configs
    (`name.configs = name.configs + [...]`, `name.fn.configs = ...`, or `+=` as earlier releases of the tool wrote,
    inside `if <gate>():`): where validation checks they took."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.AugAssign):
            targets = [node.target]
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp) and \
                isinstance(node.value.op, ast.Add) and isinstance(node.value.left, ast.Attribute) and \
                node.value.left.attr == "configs":  # `x.configs = x.configs + [...]`, not an author's own list
            targets = node.targets
        for target in targets:
            if not (isinstance(target, ast.Attribute) and target.attr == "configs"):
                continue
            base = target.value
            while isinstance(base, ast.Attribute) and base.attr == "fn":
                base = base.value
            if isinstance(base, ast.Name):
                found.add(base.id)
    return found


def helper_import_level(source: str | bytes) -> int | None:
    """The dots of a transformed file's import of the helper module: a library file's relative import of its
    package's (`from .._tileir import is_tileir`: 2), 0 for a single file's run of the one beside it (its TMA
    runtime, `runpy.run_path(... "_tileir.py")` under the gate); None when it imports none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    level = next((node.level for node in tree.body
                  if isinstance(node, ast.ImportFrom) and node.level and node.module == HELPER_MODULE), None)
    if level is not None:
        return level
    beside = f"{HELPER_MODULE}.py"  # a single file runs it from its path, under the gate
    gated = [node for node in tree.body if isinstance(node, ast.If)]
    return 0 if any(isinstance(inner, ast.Constant) and inner.value == beside
                    for node in gated for inner in ast.walk(node)) else None
