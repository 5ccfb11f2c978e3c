"""What the user's program said when it failed: its exit status, the exception and the file:line where it was
raised, and the last lines of its output -- read from the output a capture kept.

A Python traceback gives the exception (its last line) and the frames (`File "x.py", line 12, in f`); pytest
gives frames as `x.py:12: in f` and the exception as `E   ModuleNotFoundError: ...`. The place named is the
innermost frame in the user's own code (not in the standard library or an installed package), else the innermost.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import sysconfig
from dataclasses import asdict, dataclass
from typing import Any

from tileiropt.harness.blame import needs_a_device
from tileiropt.schema import Cause

TAIL_LINES = 12  # the output's last lines kept in the record and shown
_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
_PYTEST_FRAME = re.compile(r"^(?P<file>[^\s:][^:]*\.py):(?P<line>\d+): ")
_PYTEST_EXCEPTION = re.compile(r"^E\s+(?P<text>[A-Za-z_][\w.]*(?::.*)?)$")
_EXCEPTION = re.compile(r"^(?P<text>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failed)\b(?::.*)?)$")
MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


@dataclass
class ProgramFailure:
    exit_code: int | None
    exception: str  # "NotImplementedError: scale is not finished", or "" when the output names none
    where: str  # "two.py:27" (relative to the folder the program ran in when inside it), or ""
    output: list[str]  # the output's last lines
    needs_gpu: bool = False  # it failed for want of a GPU (or its driver)
    cause: str | None = None  # whose failure (a `schema.Cause`), told where it was read (`program_cause`)

    def summary(self) -> str:
        """One line: the exception and where (with the fix for a module that is not installed), else the exit
        status and the output's last line."""
        status = exit_status(self.exit_code)
        if self.exception:
            where = f" at {self.where}" if self.where else ""
            missing = MISSING_MODULE.match(self.exception)
            fix = f"; the program needs it: pip install {missing.group(1).split('.')[0]}" if missing else ""
            return f"{self.exception[:300]}{where} ({status}{fix})"
        last = next((line for line in reversed(self.output) if line.strip()), "no output")
        return f"{status} ({last.strip()[:200]})"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> ProgramFailure | None:
        if not isinstance(data, dict):
            return None
        output = data.get("output")
        code = data.get("exit_code")
        return cls(exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                   exception=str(data.get("exception") or ""), where=str(data.get("where") or ""),
                   output=[str(line) for line in output] if isinstance(output, list) else [],
                   needs_gpu=data.get("needs_gpu") is True,
                   cause=str(data["cause"]) if data.get("cause") in {c.value for c in Cause} else None)


def _library_paths() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= {sys.prefix, sys.base_prefix}
    paths.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the tool's own recorder frames
    return tuple(os.path.realpath(p) for p in paths if p)


def _shown(file: str, cwd: str | None) -> str:
    """`file` relative to `cwd` when inside it, else as written."""
    if cwd and os.path.isabs(file):
        real, base = os.path.realpath(file), os.path.realpath(cwd)
        if real.startswith(base + os.sep):
            return os.path.relpath(real, base)
    return file


def _innermost_own(frames: list[tuple[str, str]], cwd: str | None) -> str:
    """The innermost frame outside the standard library and installed packages, else the innermost."""
    libraries = _library_paths()
    for file, line in reversed(frames):
        real = os.path.realpath(os.path.join(cwd or "", file))
        if not file.startswith("<") and not real.startswith(libraries):
            return f"{_shown(file, cwd)}:{line}"
    return f"{_shown(frames[-1][0], cwd)}:{frames[-1][1]}" if frames else ""


def read_failure(output: str, exit_code: int | None, cwd: str | None = None) -> ProgramFailure:
    """The failure the output shows: the last exception raised and its innermost own frame."""
    lines = output.splitlines()
    exception, frames = "", []
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")),
                default=None)
    if start is not None:  # a Python traceback: frames, then the exception line
        for line in lines[start + 1:]:
            match = _PY_FRAME.match(line)
            if match:
                frames.append((match["file"], match["line"]))
            elif not line.startswith((" ", "\t")) and line.strip():
                exception = line.strip()
                break
    else:  # pytest: `file.py:12: in f` frames and `E   Error: message`
        for line in lines:
            match = _PYTEST_FRAME.match(line)
            if match:
                frames.append((match["file"], match["line"]))
            found = _PYTEST_EXCEPTION.match(line)
            if found and not exception:
                exception = found["text"].strip()
        if not exception:
            exception = next((m["text"] for line in reversed(lines) if (m := _EXCEPTION.match(line.strip()))), "")
    text = "\n".join(lines[-200:])
    needs_gpu = needs_a_device(text)
    return ProgramFailure(exit_code=exit_code, exception=exception, where=_innermost_own(frames, cwd),
                          output=[line[:400] for line in lines[-TAIL_LINES:]], needs_gpu=needs_gpu,
                          cause=program_cause(exception, frames, text, needs_gpu, cwd))


_OUT_OF_MEMORY = re.compile(r"out of memory|can't allocate memory|OutOfMemoryError|MemoryError")


def program_cause(exception: str, frames: list[tuple[str, str]], text: str, needs_gpu: bool, cwd: str | None
                  ) -> str:
    """Whose failure the program's is, from what its output shows: the machine (no GPU, a module not installed), out
    of memory, tileiropt's own recorder (its innermost frame), the program's own code (a traceback into it), or
    unknown (no traceback: a signal, an exit without one)."""
    if needs_gpu or MISSING_MODULE.match(exception):
        return Cause.ENVIRONMENT
    if _OUT_OF_MEMORY.search(exception or text):
        return Cause.OUT_OF_MEMORY
    if frames:
        innermost = os.path.realpath(os.path.join(cwd or "", frames[-1][0]))
        tool = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
        return Cause.TOOL if innermost.startswith(tool) else Cause.KERNEL
    return Cause.UNKNOWN


def exit_status(code: int | None) -> str:
    """"exit status 2", "killed by SIGKILL" (a negative code is the signal that ended it), or "no exit status"."""
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
