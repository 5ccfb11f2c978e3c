"""The tool's own cache folder (measured peaks, workers' bytecode): never inside a user's project."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "TILEIROPT_CACHE_DIR"


def cache_dir() -> Path:
    """$TILEIROPT_CACHE_DIR, else $XDG_CACHE_HOME/tileiropt, else ~/.cache/tileiropt."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tileiropt"
