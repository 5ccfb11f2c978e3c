"""The validation harness: import a kernel file, build its inputs, evaluate its reference, compare.

Everything here runs inside one backend's worker process (see `worker.py`); nothing chooses a
backend. The pieces are small and independent so `bench` can reuse them:

- `import_kernel_module(path)`: import a file like a script, under a name unique to its path; a bare call
  at its top level that raises (a tutorial's self-test, `sys.exit(main())`) is remembered, not fatal.
- `build_inputs(...)`: seeded, deterministic tensors; `clone_inputs` before every call.
- `Reference`: a torch expression, ``"pkg.mod:fn"`` or ``"original"``; `expected_structure`
  evaluates it on ``device="meta"`` tensors to learn the output dtypes and shapes.
- `check_structure` and `compare`: dtype/shape check, then a recursive numeric comparison.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import math
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F

from tileiropt.harness import stand_ins
from tileiropt.harness.blame import needs_a_device
from tileiropt.harness.entry_ref import reference_kind
from tileiropt.harness.exception_sites import exception_chain
from tileiropt.harness.script_definitions import definitions_only
from tileiropt.schema import Cause

DEFAULT_INT_RANGE = (0, 16)


class HarnessError(Exception):
    """A problem with the kernel file, its entry or its reference (not with the kernel's numbers). `cause`: whose it
    is, where the raiser knows (the reference, the tool's replay); None: told by the frames (`harness.blame`)."""

    def __init__(self, message: str, cause: Cause | None = None):
        super().__init__(message)
        self.cause = cause


# --------------------------------------------------------------------------- importing


def module_name_for(path: Path | str) -> str:
    """A module name unique to `path`, so an original and its optimized file coexist."""
    path = Path(path).resolve()
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", path.stem)
    return f"tileiropt_kernel_{stem}_{digest}"


def import_kernel_module(path: Path | str, search_paths: Iterable[Path | str] = ()) -> ModuleType:
    """Import the file at `path` like a script (its folder importable); reuse it once imported."""
    path = Path(path).resolve()
    name = module_name_for(path)
    if name in sys.modules:
        return sys.modules[name]
    for folder in reversed([path.parent, *map(Path, search_paths)]):  # the file's own folder ends up first
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, path, loader=_GuardedLoader(name, str(path)))
    if spec is None or spec.loader is None:
        raise HarnessError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[name]
        if MODULE_CALLS.skip:  # its definitions alone did not import: the whole script, as its users run it
            with MODULE_CALLS.only_definitions(False):
                return import_kernel_module(path, search_paths)
        stand_ins.import_failed(str(path))
        raise
    except BaseException:
        del sys.modules[name]
        stand_ins.import_failed(str(path))
        raise
    return module


class ModuleCalls:
    """Whether a script imported now runs whole (`skip` False) or as its definitions only
    (`harness/script_definitions.py`): a worker replaying captured launches, or timing them, skips the script part
    (``y = softmax(x)``, ``test_layer_norm(...)``, prints), which the capture ran already and no definition needs.
    A script whose definitions alone do not import is imported whole after all. An optimized file keeps the
    TileIR code the tool inserted whole (it attaches configs, twins and dispatch at module level), and leaves out
    the same script part as its original: the program ran in the capture, and its own self-check is compared only
    where the original ran whole beside it (`stand_ins.raised_only_in`)."""

    skip = False

    @contextlib.contextmanager
    def only_definitions(self, skip: bool = True) -> Iterator[None]:
        before, self.skip = self.skip, skip
        try:
            yield
        finally:
            self.skip = before


MODULE_CALLS = ModuleCalls()


class _GuardedLoader(importlib.machinery.SourceFileLoader):
    """Imports a script with each bare module-level call (``test_layer_norm(1151, 8192, torch.float16)``,
    ``sys.exit(main())``) inside ``try``: when it raises, the failure is remembered
    (`stand_ins.module_call_failed`) and the rest of the module still defines its kernels and wrappers, which
    are all a worker needs. Line numbers stay the file's own, so tracebacks and Triton's source lookup agree."""

    def get_code(self, fullname: str) -> Any:
        """Compiled from the source every time: never read from or written to a bytecode cache, which a plain
        import of the same file shares."""
        source = self.get_data(self.path)
        tree = ast.parse(source, filename=self.path)
        if MODULE_CALLS.skip:  # an optimized file's own code stays whole (`script_definitions.tool_code`)
            tree.body = definitions_only(tree.body)
        else:
            stand_ins.GUARDED_IMPORTS.add(os.path.realpath(self.path))  # its calls' failures can be compared
        tree.body = _guarded_statements(tree.body)
        return compile(tree, self.path, "exec", dont_inherit=True)


def _guarded_statements(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Each bare call guarded, inside module-level `if` / `else` arms too (`if HAS_TRITON: warm_up()` runs before
    the kernels after it are defined). Not inside `try` or `with`: their own handlers or context managers
    (`contextlib.suppress`) decide what a failure there does."""
    for statement in statements:
        if isinstance(statement, ast.If):
            statement.body = _guarded_statements(statement.body)
            statement.orelse = _guarded_statements(statement.orelse)
    return [_guarded(statement) for statement in statements]


def _guarded(statement: ast.stmt) -> ast.stmt:
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return statement
    failed = ast.parse(
        "__import__('tileiropt.harness.stand_ins', fromlist=['_']).module_call_failed("
        f"__file__, {statement.lineno}, _tileiropt_error)").body
    for node in (n for part in failed for n in ast.walk(part)):
        ast.copy_location(node, statement)
    guard = ast.Try(
        body=[statement],
        handlers=[ast.ExceptHandler(
            type=ast.Tuple(elts=[ast.Name(name, ast.Load()) for name in ("Exception", "SystemExit")], ctx=ast.Load()),
            name="_tileiropt_error", body=failed)],
        orelse=[], finalbody=[])
    return ast.fix_missing_locations(ast.copy_location(guard, statement))


def entry_function(module: ModuleType, entry: str) -> Callable[..., Any]:
    fn = getattr(module, entry, None)
    if fn is None:
        raise HarnessError(f"{Path(module.__file__ or '?').name} has no function {entry!r}")
    if not callable(fn):
        raise HarnessError(f"{entry!r} in {Path(module.__file__ or '?').name} is not callable")
    return fn


# --------------------------------------------------------------------------- inputs


def torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise HarnessError(f"unknown dtype {name!r}")
    return dtype


def build_inputs(
    shapes: Mapping[str, list[int]],
    dtypes: Mapping[str, str],
    *,
    seed: int = 0,
    ranges: Mapping[str, tuple[int, int] | list[int]] | None = None,
    device: str | torch.device = "cpu",
) -> dict[str, torch.Tensor]:
    """Seeded inputs in `shapes` order: floats ~ N(0, 1), ints uniform in [lo, hi), bools 50/50.

    Drawn on the CPU from one generator, then moved to `device`, so every device and every
    process gets the same values.
    """
    generator = torch.Generator(device="cpu").manual_seed(int(seed))
    ranges = ranges or {}
    inputs = {}
    for name, shape in shapes.items():
        dtype = torch_dtype(dtypes.get(name, "float32"))
        if dtype == torch.bool:
            tensor = torch.randint(0, 2, tuple(shape), generator=generator).bool()
        elif dtype.is_floating_point:
            tensor = torch.randn(tuple(shape), generator=generator, dtype=torch.float32).to(dtype)
        else:
            lo, hi = ranges.get(name, DEFAULT_INT_RANGE)
            tensor = torch.randint(int(lo), int(hi), tuple(shape), generator=generator, dtype=torch.int64).to(dtype)
        inputs[name] = tensor.to(device)
    return inputs


def clone_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Fresh copies, so a kernel that writes into its inputs cannot change the next call's."""
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def upcast(value: object) -> object:
    """float32 copies of tensors narrower than 32-bit floats (fp16, bf16, fp8), clones of the rest."""
    if isinstance(value, torch.Tensor):
        if value.dtype.is_floating_point and value.element_size() < 4:
            return value.to(torch.float32)
        return value.clone()
    return value


def meta_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Shape- and dtype-only twins of the inputs (no memory, no compute)."""
    return {k: torch.empty(v.shape, dtype=v.dtype, device="meta") if isinstance(v, torch.Tensor) else v
            for k, v in inputs.items()}


def written_inputs(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Names of the tensors a call changed (NaN-aware), for kernels that write in place."""
    changed = []
    for name, old in before.items():
        new = after.get(name)
        if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and old.shape == new.shape:
            if not torch.equal(old.to(new.device), new) and not (
                    old.dtype.is_floating_point and torch.allclose(old.to(new.device), new, 0, 0, equal_nan=True)):
                changed.append(name)
    return changed


def call_entry(fn: Callable[..., Any], inputs: Mapping[str, Any], args: Mapping[str, Any]) -> Any:
    """Call a kernel wrapper with the inputs and args as keyword arguments."""
    return fn(**inputs, **args)


def synchronize(device: str | torch.device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------------------------- references


@dataclass
class Reference:
    """What a kernel's output must equal: a torch expression, a function, or the original file."""

    text: str
    kind: str  # "expression" | "function" | "original"

    @classmethod
    def parse(cls, text: str) -> Reference:
        text = text.strip()
        try:
            return cls(text, reference_kind(text))
        except ValueError as exc:
            raise HarnessError(str(exc), Cause.REFERENCE) from None

    def resolve(self, original: Callable[..., Any] | None = None) -> Callable[..., Any]:
        """A callable taking (inputs, args, dims) and returning the reference output; `original` is the
        untransformed file's entry call (see `loading.entry_call`)."""
        if self.kind == "original":
            if original is None:
                raise HarnessError('reference "original" needs the untransformed kernel file')
            return original
        if self.kind == "function":
            function = import_function(self.text)
            return lambda inputs, args, dims: call_entry(function, inputs, args)
        code = compile(self.text, "<reference>", "eval")

        def evaluate(inputs: Mapping[str, Any], args: Mapping[str, Any], dims: Mapping[str, int]) -> Any:
            scope = {"__builtins__": builtins, "torch": torch, "F": F, "math": math, **dims, **args, **inputs}
            return eval(code, scope)  # noqa: S307 - the user's own reference (one scope: lambdas see the names)

        return evaluate


def import_function(text: str) -> Callable[..., Any]:
    """``"package.module:function"`` (the function may be dotted: ``"mod:Class.method"``)."""
    module_name, _, attr_path = text.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise HarnessError(f"reference {text!r}: cannot import {module_name!r}: {exc}", Cause.REFERENCE) from None
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            raise HarnessError(f"reference {text!r}: {module_name!r} has no attribute {attr_path!r}", Cause.REFERENCE)
        obj = getattr(obj, part)
    if not callable(obj):
        raise HarnessError(f"reference {text!r} is not callable", Cause.REFERENCE)
    return obj


def evaluate_reference(reference: Callable[..., Any], kind: str, inputs: Mapping[str, Any],
                       args: Mapping[str, Any], dims: Mapping[str, int]) -> tuple[Any, dict[str, Any]]:
    """(output, the inputs it ran on). Expressions and functions run on float32-upcast copies for
    accuracy (a function that rejects them is retried on native copies); "original" runs natively.
    The inputs are returned so an in-place reference can be compared with an in-place kernel."""
    if kind == "original":
        used = clone_inputs(inputs)
        return reference(used, args, dims), used
    used = {k: upcast(v) for k, v in inputs.items()}
    try:
        with inputs_device(used) if kind == "expression" else contextlib.nullcontext():
            return reference(used, args, dims), used
    except Exception:
        if kind != "function":
            raise
        used = clone_inputs(inputs)
        return reference(used, args, dims), used


def inputs_device(inputs: Mapping[str, Any]) -> Any:
    """A context in which new tensors are made on the inputs' device, so an expression reference written on a
    CPU (``torch.arange(1, N + 1)``) runs beside GPU or meta inputs."""
    device = next((v.device for v in inputs.values() if isinstance(v, torch.Tensor)), None)
    return torch.device(device) if device is not None else contextlib.nullcontext()


def expected_structure(reference: Callable[..., Any], inputs: Mapping[str, Any], args: Mapping[str, Any],
                       dims: Mapping[str, int]) -> Any | None:
    """The reference evaluated on meta tensors of the native dtypes: the expected output dtypes
    and shapes, without compute. None when the reference cannot run on meta tensors."""
    meta = meta_inputs(inputs)
    try:
        with inputs_device(meta):
            return reference(meta, args, dims)
    except Exception:
        return None


# --------------------------------------------------------------------------- structure check


def _where(path: str) -> str:
    return path or "output"


def check_structure(actual: object, expected: object, path: str = "out", *, check_dtype: bool = True) -> str | None:
    """The first way `actual` differs from `expected` in kind, length, keys, shape or dtype; or None."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return f"{_where(path)} is {type(actual).__name__}, expected a tensor"
        if tuple(actual.shape) != tuple(expected.shape):
            return f"{_where(path)} has shape {list(actual.shape)}, expected {list(expected.shape)}"
        if check_dtype and actual.dtype != expected.dtype:
            return (f"{_where(path)} has dtype {str(actual.dtype).removeprefix('torch.')}, "
                    f"expected {str(expected.dtype).removeprefix('torch.')}")
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)):
            return f"{_where(path)} is {type(actual).__name__}, expected a {type(expected).__name__}"
        if len(actual) != len(expected):
            return f"{_where(path)} has {len(actual)} items, expected {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            problem = check_structure(a, e, f"{path}[{i}]", check_dtype=check_dtype)
            if problem:
                return problem
        return None
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return f"{_where(path)} is {type(actual).__name__}, expected a dict"
        if set(actual) != set(expected):
            return f"{_where(path)} has keys {sorted(map(str, actual))}, expected {sorted(map(str, expected))}"
        for key in expected:
            problem = check_structure(actual[key], expected[key], f"{path}[{key!r}]", check_dtype=check_dtype)
            if problem:
                return problem
        return None
    if expected is None and actual is not None:
        return f"{_where(path)} is {type(actual).__name__}, expected None"
    if isinstance(actual, torch.Tensor) and not isinstance(expected, torch.Tensor) and expected is not None:
        return f"{_where(path)} is a tensor, expected {type(expected).__name__}"
    return None


# --------------------------------------------------------------------------- comparison


@dataclass
class Comparison:
    ok: bool
    reason: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    mismatches: int = 0
    elements: int = 0
    first_mismatch: list[int] | None = None
    mismatch_in: str | None = None

    def add(self, other: Comparison) -> None:
        self.max_abs = max(self.max_abs, other.max_abs)
        self.max_rel = max(self.max_rel, other.max_rel)
        self.mismatches += other.mismatches
        self.elements += other.elements
        if self.ok and not other.ok:
            self.ok = False
            self.reason = other.reason
            self.first_mismatch = other.first_mismatch
            self.mismatch_in = other.mismatch_in


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat % size if size else 0)
        flat = flat // size if size else 0
    return list(reversed(index))


def compare_tensors(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float,
                    path: str = "out") -> Comparison:
    """Elementwise |a - e| <= atol + rtol * |e|; NaN and inf positions (and inf signs) must match.

    Floats are compared in float32 (float64 when either side is float64); integers and bools
    exactly. Reports the max absolute and relative errors over finite pairs.
    """
    if tuple(actual.shape) != tuple(expected.shape):
        return Comparison(False, f"{path} has shape {list(actual.shape)}, expected {list(expected.shape)}")
    expected = expected.to(actual.device)
    elements = actual.numel()
    floating = actual.dtype.is_floating_point or expected.dtype.is_floating_point
    if not floating:
        bad = actual.to(torch.int64) != expected.to(torch.int64)
        diff = (actual.to(torch.int64) - expected.to(torch.int64)).abs()
        max_abs = float(diff.max()) if elements else 0.0
        max_rel = 0.0
    else:
        wide = torch.float64 if torch.float64 in (actual.dtype, expected.dtype) else torch.float32
        a, e = actual.to(wide), expected.to(wide)
        a_nan, e_nan = torch.isnan(a), torch.isnan(e)
        a_inf, e_inf = torch.isinf(a), torch.isinf(e)
        finite = torch.isfinite(a) & torch.isfinite(e)
        diff = torch.where(finite, (a - e).abs(), torch.zeros_like(a))
        bad = (a_nan != e_nan) | ((a_inf | e_inf) & (a != e)) | (finite & (diff > atol + rtol * e.abs()))
        max_abs = float(diff.max()) if elements else 0.0
        nonzero = finite & (e != 0)
        rel = torch.where(nonzero, diff / torch.where(nonzero, e.abs(), torch.ones_like(e)), torch.zeros_like(a))
        max_rel = float(rel.max()) if elements else 0.0
    mismatches = int(bad.sum())
    if not mismatches:
        return Comparison(True, max_abs=max_abs, max_rel=max_rel, elements=elements)
    flat = int(torch.argmax(bad.flatten().to(torch.uint8)))
    index = _unravel(flat, tuple(actual.shape))
    got, want = actual.flatten()[flat].item(), expected.flatten()[flat].item()
    reason = (f"{mismatches} of {elements} elements of {path} differ; first at {tuple(index)}: "
              f"got {got:.6g}, expected {want:.6g}" if floating else
              f"{mismatches} of {elements} elements of {path} differ; first at {tuple(index)}: "
              f"got {got}, expected {want}")
    return Comparison(False, reason, max_abs, max_rel, mismatches, elements, index, path)


def compare(actual: object, expected: object, atol: float, rtol: float, path: str = "out") -> Comparison:
    """Compare outputs recursively: tensors, tuples and lists, dicts, numbers, None."""
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return Comparison(False, f"{path} is {type(actual).__name__}, expected a tensor", mismatch_in=path)
        if not isinstance(expected, torch.Tensor):
            if isinstance(expected, (int, float, bool)):
                expected = torch.tensor(expected)
            else:
                return Comparison(False, f"{path} is a tensor, expected {type(expected).__name__}",
                                  mismatch_in=path)
        return compare_tensors(actual, expected, atol, rtol, path)
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            problem = check_structure(actual, expected, path) or f"{path} differs in structure"
            return Comparison(False, problem, mismatch_in=path)
        total = Comparison(True)
        for i, (a, e) in enumerate(zip(actual, expected)):
            total.add(compare(a, e, atol, rtol, f"{path}[{i}]"))
        return total
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping) or set(actual) != set(expected):
            problem = check_structure(actual, expected, path) or f"{path} differs in structure"
            return Comparison(False, problem, mismatch_in=path)
        total = Comparison(True)
        for key in expected:
            total.add(compare(actual[key], expected[key], atol, rtol, f"{path}[{key!r}]"))
        return total
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return compare_tensors(torch.tensor(float(actual), dtype=torch.float64),
                               torch.tensor(float(expected), dtype=torch.float64), atol, rtol, path)
    if actual == expected:
        return Comparison(True)
    return Comparison(False, f"{path} is {actual!r}, expected {expected!r}", mismatch_in=path)


# --------------------------------------------------------------------------- error messages


def describe_exception(exc: BaseException, max_lines: int = 6, max_chars: int = 800) -> str:
    """The exception's type and first lines (and its last line, where Triton's compile errors put
    the cause after the source excerpt): enough to locate the problem."""
    text = str(exc).strip()
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines - 1], "...", lines[-1]]
    head = "\n".join(lines)
    if len(head) > max_chars:
        head = head[:max_chars] + "..."
    return f"{type(exc).__name__}: {head}" if head else type(exc).__name__


def autotuner_skip(exc: BaseException) -> str | None:
    """Why Triton's autotuner would skip a config that raised `exc` (it times such a config as infinite):
    out of resources, a failed compile-time assertion (``tl.static_assert``; under the interpreter an
    AssertionError raised from it), a ptxas error. None for any other failure."""
    assertion = "a compile-time assertion (tl.static_assert) fails for this config"
    names = {cls.__name__ for cls in type(exc).__mro__}
    if out_of_resources(exc):
        return "the config does not fit this device"
    if "CompileTimeAssertionFailure" in names:
        return assertion
    if "PTXASError" in names:
        return "ptxas rejects this config"
    for current in exception_chain(exc):
        if any(frame.name == "_new_static_assert" for frame in traceback.extract_tb(current.__traceback__)):
            return assertion
    return None


_TILEIRAS_FAILED = re.compile(r"`tileiras` failed")


def tileir_rejection(exc: BaseException) -> str | None:
    """The TileIR compiler's refusal of a kernel, described, or None: nvtriton's `call_tileiras` raises
    `RuntimeError("`tileiras` failed with error code N ... `tileiras` stderr: ...")` (later lines of the fork name it
    `TileirasError`); its autotuner does not skip such a config, so the launch fails."""
    found = [current for current in exception_chain(exc) if _TILEIRAS_FAILED.search(str(current))
             or "TileirasError" in {cls.__name__ for cls in type(current).__mro__}]
    return describe_exception(found[-1], max_lines=8) if found else None  # the compiler's own, not a wrapper


def out_of_resources(exc: BaseException) -> bool:
    """True for Triton's OutOfResources (shared memory, registers): the autotuner skips such configs."""
    return any(cls.__name__ == "OutOfResources" for cls in type(exc).__mro__)


def needs_cuda(exc: BaseException) -> bool:
    """True when the exception says the code asked for a GPU this machine lacks (`blame.NO_DEVICE`)."""
    return needs_a_device(f"{type(exc).__name__}: {exc}")


# What Triton's interpreter cannot do that compiled Triton can: (pattern of the error, what it is).
_INTERPRETER_LIMITS = (
    (r"'(int|float|bool)' object has no attribute '(to|cast|dtype)'",
     "a method of a Python scalar (compiled Triton makes the scalar a tensor; the interpreter keeps a number)"),
    (r"libdevice", "a libdevice function the interpreter does not implement"),
    (r"inline_asm|inline asm", "inline assembly"),
    (r"has no attribute '(warmup|_init_handles|n_regs)'", "compiled-kernel metadata (JITFunction.warmup)"),
)


def interpreter_limit(exc: BaseException) -> str | None:
    """What of the interpreter's limits the exception (or its causes) shows, or None for a real error."""
    for current in exception_chain(exc):
        text = f"{type(current).__name__}: {current}"
        for pattern, what in _INTERPRETER_LIMITS:
            if re.search(pattern, text):
                return what
    return None
