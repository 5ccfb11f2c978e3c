"""The IR-level compatibility check: each kernel's TTIR, per specialization, against a release.

A syntax tree cannot see dtypes, the libdevice symbol a call becomes, or which branch a constexpr
selects; the TTIR shows all three. For every entry kernel of a file, `check_file` rebuilds the JIT
functions without running the file (`sandbox`), lowers each specialization (`specialize`, `lowering`)
and reports the ops the release does not support at the user's source line -- in the kernel, in a
helper of the same file, or, for a helper in another module, at the kernel's line that calls it.

The syntax-tree rules still run. On the source lines the TTIR covers, the IR's verdict replaces theirs
for the features it can see (`IR_FEATURES`); lines it did not lower (a branch the specialization did
not take) keep the syntax findings. Memory-model and performance rules are syntax-only.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tileiropt.classify.discovery import Scan
from tileiropt.classify.facts import TL, FactsBuilder
from tileiropt.classify.ir import lowering, specialize, ttir
from tileiropt.classify.ir.lowering import LoweringError, Specialization
from tileiropt.classify.ir.sandbox import Registry, SandboxError
from tileiropt.classify.ir.specialize import FLOAT_DTYPES, NotLowerable
from tileiropt.classify.rules import ALL_RULES, Finding, Rule
from tileiropt.releases import Release
from tileiropt.schema import NOT_RUN, PASS

# Features whose use the TTIR shows exactly; their syntax findings give way to the IR's on lowered lines.
IR_FEATURES = frozenset({"inline_asm", "gather", "dot_scaled", "extern_elementwise", "map_elementwise", "unsplat",
                         "erf", "histogram", "atomic_rmw_16bit", "atomic_cas_16bit", "rtz_downcast",
                         "tma_gather_scatter", "tma_reduce", "block_pointer", "unstructured_control_flow",
                         "noinline"})
_PTR_TYPE = re.compile(r"!tt\.ptr<(\w+)>")
_TENSOR_ELEMENT = re.compile(r"x(\w+)>\s*$")


def _rule_for(feature: str) -> Rule:
    for rule in ALL_RULES:
        if rule.feature == feature or (feature in ("tma_gather_scatter", "tma_reduce") and rule.code == "TIR010"):
            return rule
    raise KeyError(feature)


@dataclass
class Hit:
    """An op the release does not (fully) support, at a source location."""

    feature: str
    file: str | None
    line: int | None
    function: str
    message: str
    severity: str  # "error" | "warning" | "perf" (a partial feature that runs emulated)


@dataclass
class KernelIR:
    """What the IR check did for one entry kernel."""

    kernel: str
    status: str  # PASS: lowered and checked; NOT_RUN: not lowered (`needed` says whether it had to be)
    reason: str | None = None
    needed: bool = True  # False: the kernel calls nothing the syntax tree cannot decide, so it was not lowered
    specializations: list[str] = field(default_factory=list)
    guessed: list[str] = field(default_factory=list)  # constexprs lowered with guessed values
    assumed: bool = True  # dtypes guessed (not from a project or a capture)
    lines: dict[str, set[int]] = field(default_factory=dict)  # file -> source lines the TTIR covers
    hits: list[Hit] = field(default_factory=list)
    seconds: float = 0.0
    calls: dict[str, list[tuple[str, str | None, int | None]]] = field(default_factory=dict)  # tt.call sites

    def call_line(self, function: str, path: str) -> int | None:
        """The line in `path` (the kernel's file) of the call that leads from the kernel to `function`."""
        parents: dict[str, tuple[str, str | None, int | None]] = {}
        queue = [self.kernel]
        while queue:
            caller = queue.pop(0)
            for callee, file, line in self.calls.get(caller, []):
                if callee not in parents and callee != self.kernel:
                    parents[callee] = (caller, file, line)
                    queue.append(callee)
        current, line = function, None
        while current in parents:
            caller, file, at = parents[current]
            if file is not None and same_file(file, path):
                line = at
            current = caller
        return line

    def summary(self) -> dict:
        return {"status": self.status, "reason": self.reason, "needed": self.needed,
                "specializations": self.specializations, "guessed_constexprs": self.guessed,
                "dtypes_assumed": self.assumed, "seconds": round(self.seconds, 4)}


@dataclass
class FileIR:
    kernels: dict[str, KernelIR]
    unavailable: str | None = None  # why no kernel of the file was lowered (this Triton cannot)


# Triton functions that lower to operations every release supports, whatever the dtypes: a kernel calling
# only these (and same-file helpers calling only these) gains nothing from lowering; its syntax check is exact.
PLAIN = frozenset(TL + n for n in (
    "load", "store", "arange", "program_id", "num_programs", "zeros", "zeros_like", "full", "full_like", "where",
    "sum", "max", "min", "maximum", "minimum", "exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "abs",
    "cdiv", "dot", "cast", "constexpr", "static_assert", "static_range", "range", "multiple_of", "max_contiguous",
    "max_constancy", "assume", "broadcast_to", "broadcast", "expand_dims", "sigmoid", "fma", "argmax", "argmin",
    "cumsum", "cumprod", "softmax", "floor", "ceil", "cos", "sin", "div_rn", "fdiv", "clamp", "trans", "permute",
    "make_tensor_descriptor", "device_print", "static_print", "debug_barrier", "pointer_type", "swizzle2d",
    "num_warps", "xor_sum", "umulhi", "device_assert", "static_assert", "zeros", "math.exp", "math.exp2",
    "math.log", "math.log2", "math.sqrt", "math.rsqrt", "math.abs", "math.fma", "math.floor", "math.ceil",
    "math.cos", "math.sin", "math.div_rn", "math.fdiv", "math.sqrt_rn", "math.umulhi", "math.max", "math.min",
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
    "float32", "float64", "float8e4nv", "float8e5", "float8e4b15"))
PLAIN_METHODS = frozenset({"to", "load", "store", "sum", "max", "min", "argmax", "argmin", "cumsum", "trans",
                           "permute", "broadcast_to", "expand_dims", "cast", "exp", "exp2", "log", "sqrt",
                           "abs", "__getitem__"})
PYTHON_BUILTINS = frozenset({"range", "len", "min", "max", "int", "float", "isinstance", "getattr", "hasattr",
                             "print", "bool", "abs"})


def ir_relevant(name: str, scanned: Scan, builder: FactsBuilder) -> str | None:
    """Why lowering `name` could change a verdict (the first call that is not plain), or None."""
    seen: set[str] = set()
    queue = [name]
    while queue:
        current = queue.pop()
        if current in seen or current not in builder.functions:
            continue
        seen.add(current)
        node = builder.functions[current]
        for sub in ast.walk(node):
            if isinstance(sub, ast.Return) and sub is not (node.body[-1] if node.body else None):
                return f"a return statement at line {sub.lineno}"
        facts = builder.facts(node)
        for call in facts.calls:
            if call.name is not None:
                if call.name not in PLAIN:
                    return f"{call.name.removeprefix(TL)} at line {call.line}"
            elif call.method is not None:
                if call.method not in PLAIN_METHODS:
                    return f".{call.method}() at line {call.line}"
            elif isinstance(call.node.func, ast.Name):
                callee = call.node.func.id
                if callee in builder.functions:
                    queue.append(callee)
                elif callee not in PYTHON_BUILTINS:
                    return f"{callee} (defined in another module) at line {call.line}"
            else:
                return f"a call at line {call.line}"
        for decorator in scanned.layers(current, node):  # `k = triton.jit(k, noinline=True)` too
            if isinstance(decorator, ast.Call) and any(k.arg == "noinline" for k in decorator.keywords):
                return f"noinline at line {decorator.lineno}"
    return None


def check_file(scanned: Scan, pointers: dict[str, set[str]], release: Release, registry: Registry | None = None,
               dtypes: list[str] | None = None, builder: FactsBuilder | None = None) -> FileIR:
    """Lower every entry kernel of `scanned` and check its ops against `release`.

    `pointers`: kernel -> its pointer parameters (from the parameter analysis). `dtypes`: the float
    dtypes to lower with (a project's, as "fp16"/"bf16"/...); None: fp32, then fp16 and bf16 where the
    TTIR holds a dtype-sensitive op.
    """
    unavailable = lowering.available()
    if unavailable:
        return FileIR({}, unavailable)
    registry = registry or Registry()
    sandbox = registry.sandbox(scanned.module.path, scanned)
    results: dict[str, KernelIR] = {}
    for kernel, node in zip(scanned.module.kernels, scanned.kernel_nodes, strict=True):
        if not kernel.is_entry:
            continue
        started = time.perf_counter()
        result = KernelIR(kernel.name, NOT_RUN, assumed=dtypes is None)
        if builder is not None and ir_relevant(kernel.name, scanned, builder) is None:
            result.needed = False
            result.reason = "calls only operations every release supports for every dtype"
            results[kernel.name] = result
            continue
        try:
            fn = sandbox.function(kernel.name) if sandbox is not None else None
            if fn is None:
                raise SandboxError("the file could not be read again")
            _check_kernel(result, fn, kernel, node, pointers.get(kernel.name, set()), scanned, release, dtypes)
        except (SandboxError, NotLowerable, LoweringError) as exc:
            result.status, result.reason = NOT_RUN, str(exc)
        except Exception as exc:  # another Triton version's front end: this kernel's IR check did not run
            result.status, result.reason = NOT_RUN, f"internal: {type(exc).__name__}: {exc}"[:300]
        result.seconds = time.perf_counter() - started
        results[kernel.name] = result
    return FileIR(results)


def _check_kernel(result: KernelIR, fn, kernel, node, pointers: set[str], scanned: Scan, release: Release,
                  dtypes: list[str] | None) -> None:
    aliases = scanned.module.aliases
    queue = list(dtypes) if dtypes else [FLOAT_DTYPES[0]]
    lowered: list[tuple[Specialization, list[ttir.Op], dict[str, ttir.Function]]] = []
    failures: list[str] = []
    done: set[str] = set()
    while queue:
        dtype = queue.pop(0)
        if dtype in done:
            continue
        done.add(dtype)
        for spec in specialize.specializations(kernel, node, pointers, aliases, float_dtype=dtype):
            try:
                text = lowering.lower(fn, spec)
            except LoweringError as exc:
                failures.append(f"{spec.label}: {exc}")
                continue
            ops, functions = ttir.parse(text)
            lowered.append((spec, ops, functions))
            result.guessed = sorted(set(result.guessed) | set(spec.guessed))
            if dtypes is None and dtype == FLOAT_DTYPES[0] and _atomics_through_casts(ops, release):
                queue += [d for d in FLOAT_DTYPES[1:] if d not in done and d not in queue]

    if not lowered:
        raise LoweringError(failures[0] if failures else "no specialization lowered")
    result.status = PASS
    result.specializations = [spec.label for spec, _, _ in lowered]
    seen: dict[tuple[str, str | None, int | None, str], list[str]] = {}
    hits: dict[tuple[str, str | None, int | None, str], Hit] = {}
    for spec, ops, functions in lowered:
        for op in ops:
            if op.file is not None and op.line is not None:
                result.lines.setdefault(op.file, set()).add(op.line)
        for function in functions.values():
            result.calls.setdefault(function.name, list(function.calls))
        found = list(_hits(ops, functions, release))
        if result.assumed:  # the dtypes were guessed: what a 16-bit caller would break is a warning
            found += _caller_dtype_hits(ops, release)
        for hit in found:
            key = (hit.feature, hit.file, hit.line, hit.message)
            seen.setdefault(key, []).append(spec.label)
            hits.setdefault(key, hit)
    labels = [spec.label for spec, _, _ in lowered]
    for key, hit in hits.items():
        where = seen[key]
        if len(set(where)) < len(set(labels)):  # only some specializations: name them
            hit.message += f" (when lowered as {', '.join(where)})"
            if result.assumed:
                hit.severity = "warning"  # the dtypes were guessed: it depends on what the caller passes
        result.hits.append(hit)


def _atomics_through_casts(ops: list[ttir.Op], release: Release) -> bool:
    """Atomics on a pointer cast inside Triton (fp32 atomic max/min become integer atomics on a bitcast
    pointer): what a 16-bit tensor would lower to cannot be read from the fp32 TTIR, so fp16 and bf16 are
    lowered too -- only when the release lacks some 16-bit atomic."""
    if release.status("atomic_rmw_16bit") == "supported" and release.status("atomic_cas_16bit") == "supported":
        return False
    return any(op.name in ("tt.atomic_rmw", "tt.atomic_cas") and ttir.pointer_origin(ops, op) == "cast"
               for op in ops)


def _caller_dtype_hits(ops: list[ttir.Op], release: Release) -> Iterable[Hit]:
    """Atomics lowered on fp32 tensors that a caller's 16-bit tensors would make unsupported: with dtypes
    assumed, a warning (the pointer is a kernel argument, so the caller picks the dtype); a pointer cast to
    fp32 in the kernel fixes the dtype and is fine."""
    label = release.label()
    rmw, cas = release.feature("atomic_rmw_16bit"), release.feature("atomic_cas_16bit")
    names = "/".join(rmw.items("dtypes"))
    for op in ops:
        if op.name not in ("tt.atomic_rmw", "tt.atomic_cas") or _pointee(op.text) != "f32":
            continue
        if op.name == "tt.atomic_rmw":
            kind = op.text.split("tt.atomic_rmw", 1)[1].strip().split(",")[0].strip()
            if rmw.status == "supported" or (rmw.status == "partial" and kind in rmw.items("supported_kinds")):
                continue
            what, feature = f"atomic {kind}", "atomic_rmw_16bit"
        else:
            if cas.status == "supported":
                continue
            what, feature, names = "atomic compare-and-swap", "atomic_cas_16bit", "/".join(cas.items("dtypes"))
        if ttir.pointer_origin(ops, op) == "argument":
            yield Hit(feature, op.file, op.line, op.function,
                      f"{what} on a tensor argument: not supported by {label} when the caller passes {names} "
                      "(dtypes assumed fp32; give the project's dtypes or a capture to decide)", "warning")


def _hits(ops: list[ttir.Op], functions: dict[str, ttir.Function], release: Release) -> Iterable[Hit]:
    label = release.label()
    first_branch: dict[str, ttir.Op] = {}
    for op in ops:
        found = _op_hit(op, release)
        if found is not None:
            feature, message, severity = found
            verdict = f"slow on {label}" if severity == "perf" else f"not supported by {label}"
            yield Hit(feature, op.file, op.line, op.function, f"{message}: {verdict}", severity)
        if op.name == "cf.cond_br" and op.function not in first_branch:
            first_branch[op.function] = op
    status = release.status("unstructured_control_flow")
    returns: dict[str, list[ttir.Op]] = {}
    for op in ops:
        if op.name == "tt.return":
            returns.setdefault(op.function, []).append(op)
    for function, op in first_branch.items():
        if status == "unsupported":
            early = returns.get(function, [])[:-1]  # every return but the function's last is an early one
            at = early[0] if early else op
            what = "an early return" if early else "a branch to another block"
            yield Hit("unstructured_control_flow", at.file, at.line, function,
                      f"{what} becomes cf.cond_br: unstructured control flow is not supported by {label}", "error")
    if release.status("noinline") != "supported":
        for defined in functions.values():
            for callee, file, line in defined.calls:
                if functions.get(callee) is not None and functions[callee].noinline:
                    yield Hit("noinline", file, line, defined.name,
                              f"call to noinline function {callee.split('__')[0]}: not supported by {label}", "error")


def _op_hit(op: ttir.Op, release: Release) -> tuple[str, str, str] | None:
    """(feature, what, severity) when `op` uses something the release does not fully support."""
    simple = {"tt.elementwise_inline_asm": ("inline_asm", "inline assembly (tt.elementwise_inline_asm)"),
              "tt.gather": ("gather", "tt.gather"), "tt.map_elementwise": ("map_elementwise", "tt.map_elementwise"),
              "tt.unsplat": ("unsplat", "tt.unsplat (a one-element tensor to a scalar)"),
              "math.erf": ("erf", "math.erf"), "tt.histogram": ("histogram", "tt.histogram"),
              "tt.descriptor_gather": ("tma_gather_scatter", "TMA gather (tt.descriptor_gather)"),
              "tt.descriptor_scatter": ("tma_gather_scatter", "TMA scatter (tt.descriptor_scatter)"),
              "tt.make_tensor_ptr": ("block_pointer", "block pointer (tt.make_tensor_ptr)"),
              "tt.advance": ("block_pointer", "block pointer (tt.advance)")}
    if op.name in simple:
        feature, what = simple[op.name]
        status = release.status(feature)
        if status == "supported":
            return None
        rated = release.feature(feature)
        severity = "error" if status == "unsupported" else (rated.severity or "warning")
        return feature, what + (f" ({rated.note})" if rated.note else ""), severity
    if op.name == "tt.extern_elementwise":
        symbol = re.search(r'symbol\s*=\s*"([^"]+)"', op.text)
        name = symbol.group(1) if symbol else "?"
        support = release.feature("extern_elementwise")
        if support.status == "supported" or name in support.items("mapped_symbols"):
            return None
        return "extern_elementwise", f"libdevice {name} (tt.extern_elementwise)", "error"
    if op.name == "tt.atomic_rmw":
        kind = op.text.split("tt.atomic_rmw", 1)[1].strip().split(",")[0].strip()
        element = _pointee(op.text)
        support = release.feature("atomic_rmw_16bit")
        if element in support.items("dtypes") and not (support.status == "partial"
                                                       and kind in support.items("supported_kinds")):
            return "atomic_rmw_16bit", f"atomic {kind} on {element} (tt.atomic_rmw)", "error"
        return None
    if op.name == "tt.atomic_cas":
        element = _pointee(op.text)
        if element in release.feature("atomic_cas_16bit").items("dtypes"):
            return "atomic_cas_16bit", f"atomic compare-and-swap on {element} (tt.atomic_cas)", "error"
        return None
    if op.name == "tt.fp_to_fp" and "rtz" in op.text:
        support = release.feature("rtz_downcast")
        target = _TENSOR_ELEMENT.search(op.text) or re.search(r"to\s+(\w+)\s*$", op.text)
        element = target.group(1) if target else "?"
        if support.status == "supported" or (support.status == "partial"
                                             and element not in support.items("unsupported_targets")):
            return None
        return "rtz_downcast", f"round-toward-zero conversion to {element} (tt.fp_to_fp)", "error"
    if op.name == "tt.dot_scaled":
        support = release.feature("dot_scaled")
        formats = re.findall(r"(?:lhs|rhs)\s*=\s*(\w+)", op.text)
        scales = op.text.count(" scale ")
        if support.status == "supported" or (support.status == "partial" and len(set(formats)) == 1 and scales == 2
                                             and formats[0] in support.items("formats")):
            return None
        return "dot_scaled", f"scaled dot {' x '.join(formats)} with {scales} scale(s) (tt.dot_scaled)", "error"
    if op.name == "tt.descriptor_reduce":
        support = release.feature("tma_reduce")
        kind = op.text.split("tt.descriptor_reduce", 1)[1].strip().split(",")[0].strip()
        floating = bool(re.search(r"x(f16|bf16|f32|f64)>", op.text))
        if support.status == "supported" or (support.status == "partial" and not (
                floating and kind in support.items("unsupported_float_kinds"))):
            return None
        return "tma_reduce", f"TMA reduce {kind} (tt.descriptor_reduce)", "error"
    return None


def _pointee(text: str) -> str | None:
    match = _PTR_TYPE.search(text)
    return match.group(1) if match else None


# --------------------------------------------------------------------------- merging with the syntax findings


def ir_finding(hit: Hit, path: str) -> Finding:
    """A Finding at the user's line in `path` for an IR hit (a helper elsewhere is named in the message)."""
    rule = _rule_for(hit.feature)
    message = hit.message
    if hit.file is not None and not same_file(hit.file, path):
        message += f" (in {Path(hit.file).name}:{hit.line})"
    return Finding(code=rule.code, severity=hit.severity, line=hit.line or 0, message=message, hint=rule.hint,
                   via="ir")


def same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


# Features whose spelling in the source is certain: the IR check adds findings (a helper in another module) but
# never removes the syntax rule's. Triton 3.8's front end emulates block pointers with plain pointers before
# the TTIR (tl.make_block_ptr is deprecated there), so a TTIR lowered by it shows none while the fork's front
# end (Triton 3.6 / 3.7) emits tt.make_tensor_ptr.
SOURCE_CERTAIN = frozenset({"block_pointer"})


def ir_codes() -> frozenset[str]:
    """Rule codes the IR check decides on lowered lines."""
    return frozenset(_rule_for(feature).code for feature in IR_FEATURES - SOURCE_CERTAIN)


def source_certain_codes() -> frozenset[str]:
    """Rule codes whose syntax findings stand on lowered lines (an IR hit on the same line adds nothing)."""
    return frozenset(_rule_for(feature).code for feature in SOURCE_CERTAIN)
