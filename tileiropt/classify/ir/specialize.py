"""The specializations a kernel is lowered with: argument types and constexpr values.

Exact when they come from a project (its dtypes) or a capture (the launches' own types); otherwise
assumed, from the source:

- pointers: float tensors take the dtype being checked (fp32 first; fp16 and bf16 too when the TTIR
  holds an operation whose support depends on the dtype); a pointer whose loaded values index
  memory or are cast to an integer (labels, offsets, `cu_seqlens`) is `*i64`; the target of a
  compare-and-swap with integer literals (a lock) and a histogram's input are `*i32`;
- scalars: `fp32` when named like a float (`eps`, `scale`, ...) or annotated so, else `i32`;
- constexprs: the literal values of a launch in the file (one specialization per distinct launch, up
  to `MAX_LAUNCH_VARIANTS`), else the autotuner's first config, else the default; the rest is
  guessed (flags `True`, dtypes `tl.float32`, sizes 16), and the guesses are named in the result.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tileiropt.classify.discovery import KernelInfo
from tileiropt.classify.ir.lowering import Specialization
from tileiropt.classify.names import call_name

FLOAT_DTYPES = ("fp32", "fp16", "bf16")
MAX_LAUNCH_VARIANTS = 3
GUESSED_SIZE = 16  # a power of two tl.arange and tl.dot accept; small, so guessed loops unroll little
_FLOAT_SCALAR = re.compile(r"eps|scale|alpha|beta|gamma|temperature|softcap|smoothing|momentum|lr$|^lr_|decay|"
                           r"sigma|slope|factor|ratio|lambda|coef|dropout|^p$|_p$|weight$", re.IGNORECASE)
_FLAG = re.compile(r"^(HAS|HAVE|IS|USE|ENABLE|EVEN|RETURN|DO|APPLY|WITH|SAVE|COMPUTE|NEED|SKIP|STORE|LOAD|"
                   r"CAUSAL|TRAINING|FUSED|FUSE|INPLACE|IN_PLACE|ADD|ACC|RECOMPUTE|OUTPUT)(_|$)|_(FLAG|ENABLED)$",
                   re.IGNORECASE)
_POINTER_NAME = re.compile(r"(^|_)ptrs?$|^ptr_", re.IGNORECASE)
_DTYPE = re.compile(r"dtype|DTYPE|_TYPE$")
_ANNOTATION_TYPES = {"tl.float32": "fp32", "tl.float16": "fp16", "tl.bfloat16": "bf16", "tl.int32": "i32",
                     "tl.int64": "i64", "float": "fp32", "int": "i32", "bool": "i1", "tl.int1": "i1"}
_TRITON_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
                  "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "i1", "float64": "fp64"}


def ir_dtype(name: str) -> str | None:
    """A project's or a capture's float dtype name ("bfloat16", "torch.float16") as the IR check lowers it
    ("bf16"); None for other dtypes (integer tensors keep their own guessed type)."""
    short = _TRITON_DTYPES.get(str(name).removeprefix("torch.").strip())
    return short if short in FLOAT_DTYPES else None


class NotLowerable(Exception):
    """The kernel's parameters cannot be typed from the source (the reason is the message)."""


def specializations(kernel: KernelInfo, node: ast.FunctionDef, pointers: set[str], aliases: dict[str, str],
                    float_dtype: str = "fp32") -> list[Specialization]:
    """Specializations of `kernel` with float tensors as `float_dtype`."""
    index_pointers, histogram_inputs = _index_pointers(node, pointers, aliases)
    lock_pointers = _lock_pointers(node, aliases) | histogram_inputs
    signature: dict[str, str] = {}
    for param in kernel.params:
        annotation = (param.annotation or "").replace(" ", "")
        if param.is_constexpr:
            signature[param.name] = "constexpr"
        elif "tensor_descriptor" in annotation or "TensorDescriptor" in annotation or param.name.endswith("_desc"):
            raise NotLowerable(f"parameter {param.name} is a host tensor descriptor (its block shape is set by "
                               "the caller)")
        elif param.name in pointers or _POINTER_NAME.search(param.name):
            signature[param.name] = ("*i32" if param.name in lock_pointers
                                     else "*i64" if param.name in index_pointers else f"*{float_dtype}")
        elif annotation in _ANNOTATION_TYPES:
            signature[param.name] = _ANNOTATION_TYPES[annotation]
        elif _FLOAT_SCALAR.search(param.name):
            signature[param.name] = "fp32"
        else:
            signature[param.name] = "i32"
    constexpr_names = [p.name for p in kernel.params if p.is_constexpr]
    variants = _constexpr_variants(kernel, constexpr_names, aliases)
    result = []
    for index, (values, guessed) in enumerate(variants):
        label = float_dtype if len(variants) == 1 else f"{float_dtype}, launch {index + 1}"
        result.append(Specialization(label=label, signature=signature, constexprs=values, guessed=tuple(guessed)))
    return result


def _constexpr_variants(kernel: KernelInfo, names: list[str],
                        aliases: dict[str, str]) -> list[tuple[dict[str, Any], list[str]]]:
    """Distinct constexpr assignments: one per launch with different literal values, guesses filling gaps."""
    params = [p.name for p in kernel.params]
    base: dict[str, Any] = {}
    for param in kernel.params:
        if param.is_constexpr and param.default is not None:
            ok, value = _value(param.default, aliases)
            if ok:
                base[param.name] = value
    if kernel.autotune is not None and kernel.autotune.configs:
        for name, text in kernel.autotune.configs[0].kwargs.items():
            ok, value = _value(text, aliases)
            if ok and name in names:
                base[name] = value
    launches: list[dict[str, Any]] = []
    for launch in kernel.launches:
        values: dict[str, Any] = {}
        for index, text in enumerate(launch.args[: len(params)]):
            if params[index] in names:
                ok, value = _value(text, aliases)
                if ok:
                    values[params[index]] = value
        for name, text in launch.kwargs.items():
            if name in names:
                ok, value = _value(text, aliases)
                if ok:
                    values[name] = value
        if values and values not in launches:
            launches.append(values)
    variants = []
    for launch_values in (launches[:MAX_LAUNCH_VARIANTS] or [{}]):
        values = {**base, **launch_values}
        guessed = [name for name in names if name not in values]
        for name in guessed:
            values[name] = _guess(name)
        variants.append((values, guessed))
    return variants


def _value(text: str, aliases: dict[str, str]) -> tuple[bool, Any]:
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        pass
    name = call_name(node, aliases) if isinstance(node, (ast.Attribute, ast.Name)) else None
    if name and name.startswith("triton.language.") and name.rsplit(".", 1)[-1] in _TRITON_DTYPES:
        import triton.language as tl

        return True, getattr(tl, name.rsplit(".", 1)[-1])
    return False, None


def _guess(name: str) -> Any:
    if _DTYPE.search(name):
        import triton.language as tl

        return tl.float32
    if _FLAG.search(name):
        return True
    return GUESSED_SIZE


def _loaded_from(node: ast.FunctionDef, pointers: set[str], aliases: dict[str, str]) -> dict[str, set[str]]:
    """Local name -> the pointer parameters whose loaded values it holds (through assignments)."""
    origin: dict[str, set[str]] = {}
    for _ in range(3):  # a few passes settle chains of assignments in loops
        for sub in ast.walk(node):
            if not isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or sub.value is None:
                continue
            sources: set[str] = set()
            for part in ast.walk(sub.value):
                if isinstance(part, ast.Call) and (call_name(part, aliases) or "").endswith(".load") and part.args:
                    sources |= {n.id for n in ast.walk(part.args[0]) if isinstance(n, ast.Name) and n.id in pointers}
                elif isinstance(part, ast.Name) and part.id in origin:
                    sources |= origin[part.id]
            if not sources:
                continue
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        origin.setdefault(name.id, set()).update(sources)
    return origin


def _index_pointers(node: ast.FunctionDef, pointers: set[str],
                    aliases: dict[str, str]) -> tuple[set[str], set[str]]:
    """(pointers whose loaded values become addresses, integers or gather indices -- labels, offsets, sequence
    starts --, pointers whose loaded values feed tl.histogram, which takes 32-bit integers)."""
    origin = _loaded_from(node, pointers, aliases)

    def sources(expression: ast.expr, direct_loads: bool = False) -> set[str]:
        found: set[str] = set()
        for part in ast.walk(expression):
            if isinstance(part, ast.Name) and part.id in origin:
                found |= origin[part.id]
            elif direct_loads and isinstance(part, ast.Call) and part.args \
                    and (call_name(part, aliases) or "").endswith(".load"):
                found |= {n.id for n in ast.walk(part.args[0]) if isinstance(n, ast.Name) and n.id in pointers}
        return found

    index: set[str] = set()
    histogram: set[str] = set()
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call) or not sub.args:
            continue
        name = call_name(sub, aliases) or ""
        if name.startswith("triton.language.") and name.rsplit(".", 1)[-1] in ("load", "store") or \
                name.startswith("triton.language.atomic_"):
            index |= sources(sub.args[0])
        elif name == "triton.language.gather" and len(sub.args) > 1:
            index |= sources(sub.args[1], direct_loads=True)
        elif name == "triton.language.histogram":
            histogram |= sources(sub.args[0], direct_loads=True)
        elif isinstance(sub.func, ast.Attribute) and sub.func.attr == "to":
            target = call_name(sub.args[0], aliases) or ""
            if target.rsplit(".", 1)[-1].startswith(("int", "uint")):
                index |= sources(sub.func.value)
    return index | histogram, histogram


def _lock_pointers(node: ast.FunctionDef, aliases: dict[str, str]) -> set[str]:
    """Targets of `tl.atomic_cas(p, 0, 1)` / `tl.atomic_xchg(p, 1)` with integer literals: lock words."""
    locks: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and call_name(sub, aliases) in ("triton.language.atomic_cas",
                                                                     "triton.language.atomic_xchg") and sub.args:
            values = sub.args[1:]
            if values and all(isinstance(v, ast.Constant) and type(v.value) is int for v in values):
                locks |= {n.id for n in ast.walk(sub.args[0]) if isinstance(n, ast.Name)}
    return locks
