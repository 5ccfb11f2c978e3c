"""The command line this tool was started with, as a user can paste it again: `tileiropt ...` where that name runs
this very installation, else `<python> -m tileiropt ...` (started as `python -m tileiropt` with no `tileiropt` of
its own on PATH)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def started_as_module() -> bool:
    """Whether this process is `python -m tileiropt`."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == "tileiropt.__main__"


def tool_words() -> list[str]:
    """How to start this tool again: `tileiropt`, or this Python with `-m tileiropt`."""
    on_path = shutil.which("tileiropt")
    if not started_as_module():  # the installed command (or a program that imports the tool)
        started = Path(sys.argv[0])
        if started.name != "tileiropt" or (on_path is not None and _same_file(on_path, started)):
            return ["tileiropt"]
        return [str(started.absolute())]  # `.venv/bin/tileiropt` with another one, or none, on PATH
    if on_path is not None and Path(on_path).parent == Path(sys.executable).parent:
        return ["tileiropt"]  # `python -m tileiropt` where `tileiropt` is the same installation's command
    return [sys.executable, "-m", "tileiropt"]


def _same_file(a: str | Path, b: str | Path) -> bool:
    if Path(a).absolute() == Path(b).absolute():
        return True
    try:
        return Path(a).samefile(b)
    except OSError:
        return False


def invoked_command() -> list[str]:
    """This process's command line, runnable as recorded."""
    return [*tool_words(), *sys.argv[1:]]
