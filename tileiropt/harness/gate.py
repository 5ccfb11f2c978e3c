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

from tileiropt import __version__
from tileiropt.schema import GATE_MARKER

GATE_NAME = "is_tileir"
OTHER_NAME = "tileir_backend_active"  # when the file defines an `is_tileir` of its own (the fork's tutorials)
HELPER_MODULE = "_tileir"  # a library's shared module: <package>/_tileir.py
FORCE_ENV = "TILEIROPT_FORCE_TILEIR"  # the tool's workers: turn the TileIR code on (harness/tileir_surface.py)


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
    (`name.configs += [...]`, `name.fn.configs += ...`, inside `if <gate>():`): where validation checks they took."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute) and \
                node.target.attr == "configs":
            base = node.target.value
            while isinstance(base, ast.Attribute) and base.attr == "fn":
                base = base.value
            if isinstance(base, ast.Name):
                found.add(base.id)
    return found


def helper_import_level(source: str | bytes) -> int | None:
    """The dots of a transformed library file's import of the package's helper module (`from .._tileir import
    is_tileir`: 2), or None when it imports none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return next((node.level for node in tree.body
                 if isinstance(node, ast.ImportFrom) and node.level and node.module == HELPER_MODULE), None)
