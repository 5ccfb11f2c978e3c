"""Where a Python file sits as a module: its dotted name and the folder to import it from (walking up the
``__init__.py`` files), and the file of a dotted module name, found without importing anything. Read by classify
(the lint cache's keys, the IR check's sandbox), the capture and the project file alike."""

from __future__ import annotations

import sys
from pathlib import Path

_MAX_PACKAGE_DEPTH = 32


def package_name_for(path: Path) -> tuple[str | None, Path]:
    """(dotted module name, the folder to import it from) for a file inside a package; (None, its folder)
    for a file outside any package."""
    path = Path(path).resolve()
    parts = [path.stem] if path.name != "__init__.py" else []
    folder = path.parent
    depth = 0
    while (folder / "__init__.py").is_file() and depth < _MAX_PACKAGE_DEPTH:
        parts.insert(0, folder.name)
        folder = folder.parent
        depth += 1
    if depth == 0 or not all(p.isidentifier() for p in parts):
        return None, path.parent
    return ".".join(parts), folder


def locate_module(dotted: str, roots: list[Path]) -> Path | None:
    """The source file of a dotted module name under `roots`, then `sys.path` (no import)."""
    relative = Path(*dotted.split("."))
    for root in [*roots, *(Path(p) for p in sys.path if p)]:
        for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
            try:
                if candidate.is_file():
                    return candidate.resolve()
            except OSError:
                continue
    return None
