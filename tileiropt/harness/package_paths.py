"""Where a kernel file's package lives on disk, without importing it (the parent reads this; torch stays out)."""

from __future__ import annotations

from pathlib import Path


def _root_of(original: Path, name: str) -> Path:
    """The folder `name` is imported from: above the top package of the original file."""
    levels = name.count(".") + (1 if original.name == "__init__.py" else 0)
    return original.resolve().parents[levels]


def package_folder(original: Path, module: str | None) -> Path | None:
    """The folder of the top package holding `original` (None outside a package)."""
    if not module or "." not in module:
        return None
    return _root_of(original, module) / module.split(".")[0]
