"""Where an exception happened in the user's code: its chain of causes, and the deepest frame outside the
libraries (torch, triton, this package). Shared by the harness, which describes a kernel's failure, and the
stand-ins, which remember where a script's top-level call raised.
"""

from __future__ import annotations

import importlib.util
import traceback
from collections.abc import Iterator
from pathlib import Path

PACKAGE_FOLDER = Path(__file__).resolve().parents[1]


def library_folders() -> tuple[str, ...]:
    """The folders of this package, torch and triton (found, not imported), each ending with a slash."""
    folders = [PACKAGE_FOLDER]
    for name in ("torch", "triton"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            folders.append(Path(spec.origin).resolve().parent)
    return tuple(str(folder) + "/" for folder in folders)


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and its causes (``__cause__``, else ``__context__``), each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def exception_location(exc: BaseException) -> str | None:
    """``file.py:line`` of the deepest frame in the user's code (not torch, triton or tileiropt),
    following the exception's causes: the kernel line the interpreter failed on, or the launch."""
    libraries = library_folders()
    found = None
    for current in exception_chain(exc):
        for frame in traceback.extract_tb(current.__traceback__):
            name = str(Path(frame.filename).resolve()) if not frame.filename.startswith("<") else ""
            if name and not name.startswith(libraries):
                found = frame
    return f"{Path(found.filename).name}:{found.lineno}" if found else None
