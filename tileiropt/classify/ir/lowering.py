"""Lower a rebuilt JIT function to TTIR for one specialization, on any machine (no GPU needed).

`lower(fn, spec)` runs Triton's front end only (`ASTSource(...).make_ir(...)` for a Blackwell CUDA
target): it builds the TTIR module the TileIR backend starts from, with every op's types and source
location. It never compiles for a device and never launches anything. A lowering that runs past
`TIMEOUT_S` (a huge `tl.static_range`, say) is stopped where the platform allows it (the main thread
of a POSIX process).
"""

from __future__ import annotations

import functools
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

from tileiropt.classify.ir import interpreter_off

if TYPE_CHECKING:
    from triton.runtime.jit import JITFunction

TIMEOUT_S = 2.0
TARGET = ("cuda", 100, 32)  # sm_100: the TTIR a Blackwell compile starts from


class LoweringError(Exception):
    """Triton could not lower the kernel for this specialization (message: Triton's own, one line)."""


@dataclass(frozen=True)
class Specialization:
    """One set of argument types and constexpr values to lower a kernel with."""

    label: str  # "fp32", "bf16", "project float16", ...
    signature: dict[str, str]  # parameter -> "*fp32" | "i32" | "fp32" | "constexpr"
    constexprs: dict[str, Any]
    guessed: tuple[str, ...] = field(default=())  # constexprs whose value is a guess


@functools.lru_cache(maxsize=1)
def _backend() -> tuple[Any, Any, Any]:
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    target = GPUTarget(*TARGET)
    backend = make_backend(target)
    return target, backend, backend.parse_options({})


def available() -> str | None:
    """None when this Triton can lower kernels here; else why not (one line)."""
    refused = interpreter_off.unusable()  # never lower through the interpreter (see `interpreter_off`)
    if refused:
        return refused
    try:
        from triton._C.libtriton import ir  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401

        _backend()
    except Exception as exc:  # any failure means: no IR check with this Triton
        return f"this Triton cannot lower kernels to TTIR here ({type(exc).__name__}: {exc})"
    return None


def lower(fn: JITFunction, spec: Specialization) -> str:
    """The TTIR text (with locations) of `fn` under `spec`; LoweringError with Triton's reason."""
    from triton._C.libtriton import ir
    from triton.compiler import ASTSource

    target, backend, options = _backend()
    try:
        with _deadline(TIMEOUT_S), _quiet():
            source = ASTSource(fn, dict(spec.signature), dict(spec.constexprs))
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            module = source.make_ir(target, options, backend.get_codegen_implementation(options),
                                    backend.get_module_map(), context)
            return module.str()
    except _Timeout:
        raise LoweringError(f"lowering took longer than {TIMEOUT_S:g} s") from None
    except RecursionError:
        raise LoweringError("nested too deeply to lower") from None
    except Exception as exc:  # Triton's CompilationError and friends: the kernel does not lower as guessed
        if _caused_by_timeout(exc):  # Triton wraps what its code generator raised
            raise LoweringError(f"lowering took longer than {TIMEOUT_S:g} s") from None
        raise LoweringError(_one_line(exc)) from None


def _caused_by_timeout(exc: BaseException) -> bool:
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 16:
        if isinstance(current, _Timeout) or "_Timeout()" in str(current):
            return True
        current = current.__cause__ or current.__context__
        seen += 1
    return False


def _one_line(exc: Exception) -> str:
    """`CompilationError at 4:27: <message>`; where the error is in a JIT helper the kernel calls (Triton then
    prints only the kernel's calling line, the helper's error chained as its cause), the helper's name, place and
    message: `CompilationError at 4:27 (in helper, at 2:11): AttributeError(...)`."""
    where, message = _where_and_message(exc)
    inner: BaseException = exc
    for _ in range(16):  # down the chain of errors in helpers, to the one that says what went wrong
        if getattr(inner, "error_message", None) is not None or inner.__cause__ is None:
            break
        inner = inner.__cause__
    if inner is not exc:
        inner_where, message = _where_and_message(inner)
        helper = re.search(r"^\s*def (\w+)\(", str(inner), re.M)
        where += f" (in {helper.group(1) if helper else 'a helper'}" + (f", {inner_where})" if inner_where else ")")
    return f"{type(exc).__name__} {where}: {message}".replace("  ", " ")[:300]


def _where_and_message(exc: BaseException) -> tuple[str, str]:
    """Triton's CompilationError prints `at L:C:`, the source around the error, then its message last (none when
    the error is a helper's, chained as the cause)."""
    explicit = getattr(exc, "error_message", None)
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip().strip("^~ ")]
    where = lines[0].rstrip(":") if lines and lines[0].startswith("at ") else ""
    message = str(explicit) if explicit is not None else lines[-1] if lines else type(exc).__name__
    return where, message


class _Timeout(Exception):
    pass


@contextmanager
def _quiet() -> Iterator[None]:
    """Silence what MLIR prints itself (a module dump when verification fails) on the process's stdout and
    stderr: Triton's exception carries the reason."""
    import os
    import sys

    try:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
    except (OSError, ValueError, AttributeError):
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise _Timeout after `seconds` (main thread of a POSIX process only; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: FrameType | None) -> None:
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
