"""Whose failure it is, told where it is observed: from an exception's type and the frames of its traceback, or from
how a worker process ended (its signal or exit code, and the traceback its stderr holds). The cause is decided here
once and travels in the record (`schema.Cause`); no later code reads it back from a message.

The frames say who raised: tileiropt's own package (TOOL), the user's files or their package (the kernel, or the
project's reference where the reference was being computed), Triton's compiler (COMPILER), or a third party, in
which case the nearest caller that is the user's or the tool's decides. Third-party exception text is read only for
what the type does not tell (an allocator's "out of memory", a missing CUDA driver). Where the evidence does not
tell, the cause is UNKNOWN and says what was seen: a failure is never the kernel's without evidence.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import signal
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tileiropt.harness.exception_sites import PACKAGE_FOLDER, exception_chain
from tileiropt.schema import Cause

FRAMES_KEPT = 6  # the last frames of the failing call a record keeps as its evidence
STDERR_KEPT = 60  # lines of a dead worker's stderr a record keeps

KERNEL_STAGE, REFERENCE_STAGE, IMPORT_STAGE = "kernel", "reference", "import"

_COMPILER_TYPES = {"CompilationError", "CompileTimeAssertionFailure", "PTXASError", "OutOfResources",
                   "TileirasError", "MLIRCompilationError"}
_OUT_OF_MEMORY = re.compile(r"out of memory|can't allocate memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation",
                            re.IGNORECASE)
# What programs and libraries say when this machine has no GPU they can use (torch, Triton's driver, CUDA, a
# library's own device probe): the one list the validation's, the bench's and the capture's judgements read.
NO_DEVICE = re.compile(r"Torch not compiled with CUDA|compiled without CUDA|no NVIDIA driver|Found no NVIDIA driver|"
                       r"No CUDA GPUs are available|Please check that your driver is complete|0 active drivers|"
                       r"CUDA driver version is insufficient|no CUDA-capable device|libcuda\.so cannot found|cuInit|"
                       r"cuda.*(not available|unavailable)|needs a GPU|"
                       r"no (cuda |gpu |nvidia |accelerator )?devices? (were |was |is )?(detected|found|available)",
                       re.IGNORECASE)


def needs_a_device(text: str) -> bool:
    """Whether a failure's words say this machine lacks a GPU (or its driver): `NO_DEVICE`."""
    return NO_DEVICE.search(text) is not None
_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<name>\S+)| in (?P<name2>\S+))?')
_CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL}


@dataclass(frozen=True)
class Blame:
    """A failure's cause and what it was told from (the failing call's last frames, a dead worker's stderr)."""

    cause: Cause
    why: str = ""  # the cause in words, for the record's reason ("raised in the kernel's own code at k.py:12")
    evidence: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{_short_path(self.file)}:{self.line} in {self.name}"


def _short_path(file: str) -> str:
    """A frame's file as people read it: inside an installed package, from the package; tileiropt's own from its
    folder; else relative to the current folder where it is below it."""
    path = Path(file)
    with contextlib.suppress(ValueError, OSError):
        return str(path.resolve().relative_to(PACKAGE_FOLDER.parent))
    parts = path.parts
    for anchor in ("site-packages", "dist-packages"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) + 1:])
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return file


def _folder_of(package: str) -> str | None:
    spec = importlib.util.find_spec(package)
    return str(Path(spec.origin).resolve().parent) + "/" if spec is not None and spec.origin else None


class Owners:
    """Who a source file belongs to: the tool, the user (their files and package folders), Triton's compiler, or a
    third party."""

    TOOL, USER, COMPILER, THIRD_PARTY = "tool", "user", "compiler", "third party"

    def __init__(self, own: Iterable[str]):
        self.own = tuple(str(Path(p).resolve()) for p in own if p)
        triton = _folder_of("triton")
        self.compiler = tuple(f"{triton}{part}/" for part in ("compiler", "backends", "_C")) if triton else ()
        self.tool = str(PACKAGE_FOLDER) + "/"

    def of(self, file: str) -> str:
        if file.startswith("<"):
            return self.THIRD_PARTY
        resolved = str(Path(file).resolve())
        if any(resolved == own or resolved.startswith(own.rstrip("/") + "/") for own in self.own):
            return self.USER  # before the tool's folder: a user's file may be a tileiropt fixture
        if resolved.startswith(self.tool):
            return self.TOOL
        if resolved.startswith(self.compiler):
            return self.COMPILER
        return self.THIRD_PARTY


def explicit_chain(exc: BaseException) -> list[BaseException]:
    """The exception and those it was raised from (`raise ... from ...`: `__cause__`), outer to inner. An exception
    it was raised while handling (`__context__`) is not followed: one a library caught and handled is not why."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__
    return chain


def exception_frames(exc: BaseException) -> list[Frame]:
    """The frames of the innermost exception `exc` was raised from (`explicit_chain`) that has a traceback, outer to
    inner: where the failure began (the kernel's line under Triton's interpreter, which re-raises it from its own)."""
    found: list[Frame] = []
    for current in explicit_chain(exc):
        frames = [Frame(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(current.__traceback__)]
        if frames:
            found = frames
    return found


def stderr_frames(lines: Sequence[str]) -> list[Frame]:
    """The frames of the last traceback in a process's stderr (Python's "Traceback ..." or faulthandler's
    "Current thread ... (most recent call first)"), outer to inner."""
    start, newest_first = None, False
    for index, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            start, newest_first = index, False
        elif "most recent call first" in line:
            start, newest_first = index, True
    if start is None:
        return []
    frames = []
    for line in lines[start + 1:]:
        match = _FRAME_LINE.match(line)
        if match:
            frames.append(Frame(match["file"], int(match["line"]), match["name"] or match["name2"] or "?"))
        elif frames and not line.startswith(" "):
            break
    return frames[::-1] if newest_first else frames


def blame_frames(frames: Sequence[Frame], owners: Owners, *, stage: str, what: str) -> Blame:
    """The cause told by the frames of a failing call (outer to inner): who did `what` ("ValueError raised", "the
    worker crashed (SIGSEGV)")."""
    evidence = [str(f) for f in frames[-FRAMES_KEPT:]]
    if not frames:
        return Blame(Cause.UNKNOWN, f"could not tell whose failure: {what}, with no traceback", evidence)
    innermost = frames[-1]
    owner = owners.of(innermost.file)
    if owner == Owners.TOOL:
        return Blame(Cause.TOOL, f"an error of tileiropt, not of the kernel: {what} in its own code at {innermost}",
                     evidence)
    if stage == REFERENCE_STAGE:  # the project's reference, wherever its code lives (a torch expression, a module)
        return Blame(Cause.REFERENCE, f"{what} in the reference (at {innermost})", evidence)
    if owner == Owners.COMPILER:
        return Blame(Cause.COMPILER, f"{what} in Triton's compiler (at {innermost})", evidence)
    caller = next((f for f in reversed(frames) if owners.of(f.file) in (Owners.USER, Owners.TOOL)), None)
    if owner == Owners.USER or (caller is not None and owners.of(caller.file) == Owners.USER):
        where = innermost if owner == Owners.USER else caller
        return Blame(Cause.KERNEL, f"{what} in the kernel's own code (at {where})", evidence)
    called = f", called from tileiropt at {caller}" if caller is not None else ""
    return Blame(Cause.UNKNOWN, f"could not tell whose failure: {what} in a third party at {innermost}{called}",
                 evidence)


def blame_exception(exc: BaseException, own: Iterable[str], *, stage: str, reference_is_original: bool = True
                    ) -> Blame:
    """The cause of an exception raised at `stage` (KERNEL_STAGE, REFERENCE_STAGE, IMPORT_STAGE) of a call into the
    files and folders `own` (the user's). `reference_is_original`: the reference is the original kernel, whose
    failure is the kernel's, not a separate reference's."""
    from tileiropt.harness.harness import HarnessError  # the harness imports this module

    frames = exception_frames(exc)
    evidence = [str(f) for f in frames[-FRAMES_KEPT:]]
    names = {cls.__name__ for current in exception_chain(exc) for cls in type(current).__mro__}
    text = " ".join(f"{type(c).__name__}: {c}" for c in exception_chain(exc))
    if "PinningError" in names:
        return Blame(Cause.TOOL, "an error of tileiropt, not of the kernel: its replay failed before the kernel ran",
                     evidence)
    if names & _COMPILER_TYPES or "`tileiras` failed" in text:
        which = "the TileIR compiler" if "Tileiras" in " ".join(names) or "tileiras" in text else "Triton's compiler"
        return Blame(Cause.COMPILER, f"{which} rejected it", evidence)
    if names & {"OutOfMemoryError", "MemoryError"} or _OUT_OF_MEMORY.search(text):
        return Blame(Cause.OUT_OF_MEMORY, "an allocation failed: out of memory", evidence)
    if needs_a_device(text):
        return Blame(Cause.ENVIRONMENT, "this machine has no usable GPU for it", evidence)
    missing = next((c for c in exception_chain(exc) if isinstance(c, ModuleNotFoundError)), None)
    if missing is not None:  # a module this machine lacks: not installed, or an extension never built here
        return Blame(Cause.ENVIRONMENT, f"the module {missing.name!r} is not installed (or built) here", evidence)
    if isinstance(exc, HarnessError) and exc.cause is not None:
        return Blame(exc.cause, str(exc), evidence)
    owners = Owners(own)
    effective = REFERENCE_STAGE if stage == REFERENCE_STAGE and not reference_is_original else KERNEL_STAGE
    return blame_frames(frames, owners, stage=effective, what=f"{type(exc).__name__} raised")


@dataclass(frozen=True)
class Death:
    """How a worker process ended, as the engine saw it."""

    returncode: int | None
    stderr: list[str]
    timed_out: float | None = None  # the seconds it was given, where it was killed for taking longer
    started: bool = True  # it said hello (its imports were done)
    words: str = ""  # how the engine says it ("crashed: SIGSEGV (...)", "timeout after 30s", "no worker took it")

    @property
    def signal_name(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    def how(self) -> str:
        """"was stopped after 30s (its time limit)", "was killed by SIGKILL", "exited with code 1"."""
        if self.timed_out is not None:
            return f"was stopped after {self.timed_out:g}s (its time limit)"
        if self.signal_name:
            return f"was killed by {self.signal_name}"
        return f"exited with code {self.returncode}"


def lost_worker(words: str) -> Death:
    """A job that no worker ran to its end for a reason the engine states (`words`), with no process to examine."""
    return Death(returncode=None, stderr=[], words=words)


def blame_death(death: Death, own: Iterable[str], *, during: str) -> Blame:
    """The cause of a worker's death `during` (what it was doing: "the config BLOCK=64", "the file's import"): a
    timeout is TIMEOUT; a crash whose stderr holds a traceback is told by its frames; a kill with no traceback, or an
    exit without one, is UNKNOWN, with the evidence."""
    tail = death.stderr[-STDERR_KEPT:] or [f"the worker {death.how()}, with nothing on its stderr"]
    if death.returncode is None and death.timed_out is None and not death.stderr:  # no process: the engine's words
        return Blame(Cause.UNKNOWN, f"could not tell whose failure ({during})", [])
    if death.timed_out is not None:
        return Blame(Cause.TIMEOUT, f"it ran past its time limit in {during}", tail)
    text = "\n".join(tail)
    if _OUT_OF_MEMORY.search(text):
        return Blame(Cause.OUT_OF_MEMORY, f"out of memory in {during}", tail)
    frames = stderr_frames(tail)
    crashed = death.returncode is not None and death.returncode < 0 and \
        -death.returncode in {int(s) for s in _CRASH_SIGNALS}
    if frames:
        what = f"the process crashed ({death.signal_name})" if crashed else f"the worker {death.how()}"
        told = blame_frames(frames, Owners(own), stage=KERNEL_STAGE, what=what)
        return Blame(told.cause, f"{told.why}, in {during}", tail)
    if death.signal_name == "SIGKILL":
        return Blame(Cause.UNKNOWN, f"could not tell whose failure: the worker was killed by SIGKILL in {during} (the "
                                    "system's out-of-memory killer or another process), with no traceback", tail)
    return Blame(Cause.UNKNOWN, f"could not tell whose failure: the worker {death.how()} in {during}, with no "
                                "traceback", tail)
