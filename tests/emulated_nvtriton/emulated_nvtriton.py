"""An emulated nvtriton for tests: standard Triton presenting the Python surface of NVIDIA's Triton-to-tile-IR fork
(read at commit 50ec1da08), so the tool's TileIR path runs before any Blackwell GPU does. Never part of what users
install; everything it makes carries `EMULATED_MARK`, and the tool reads that mark.

With `ENABLE_TILE=1` (see `sitecustomize.py` beside this file), `install()` follows these behaviours of the fork:

- `triton.backends.tileir` importable, with `errors.HitFallback` (third_party/tileir/backend/errors.py).
- `triton.Config(..., opt_level=3, occupancy=None)` accepted, `all_kwargs()` adding `opt_level` and `occupancy` only
  when the active target's backend is "tileir" (python/triton/runtime/autotuner.py, `Config.__init__`,
  `Config.all_kwargs`).
- The active driver reports `GPUTarget("tileir", capability, warp_size)` (third_party/tileir/backend/driver.py,
  `TileIRDriver.get_current_target`), and a "tileir" compiler backend takes that target
  (third_party/tileir/backend/compiler.py, `TileIRBackend.supports_target`): kernels compile through PTX underneath,
  so numerics are real, and their metadata's target backend is "tileir".
- `TileIROptions` fields the CUDA backend lacks (`occupancy`, `opt_level`, and `matrix_instr_nonkdim`,
  `enable_autogen_alias_mem_token`, kept "for compatibility with other backend") are compile options
  (compiler.py, `TileIROptions`): taken, and ignored by the PTX compile underneath.
- A construct the fork's README lists as unsupported (inline asm, `math.erf`, 16-bit `atomic_cas`) fails to compile
  as the fork's `call_tileiras` fails (compiler.py): `RuntimeError("`tileiras` failed with error code 1 ...")`. The
  fork's autotuner (autotuner.py, `_bench`) skips only OutOfResources, CompileTimeAssertionFailure and PTXASError, so
  such a launch fails; an oversized config raises PTX's own OutOfResources, which it skips.
- The cache of a kernel compiled for TileIR holds `<kernel>.tileIR` (compiler.py, `add_stages`: the "tileIR" stage;
  the fork's CI tells the backends apart by it): here the TTIR the fork would translate.
- `TRITON_TILEIR_RUNTIME_FALLBACK=1` (the 13.4 line's README): a kernel tileiras refuses is compiled for PTX instead,
  silently; its metadata's target backend is then "cuda" and its cache has no `.tileIR`. The 50ec1da08 snapshot has
  no fallback; without the variable a refusal fails the launch.
On a machine without a GPU, the kernels run under Triton's interpreter (`TRITON_INTERPRET=1`), with the module and
`Config` emulated, and the same three constructs refused as tileiras refuses them.
"""

from __future__ import annotations

import dataclasses
import importlib.machinery
import os
import re
import sys
import types
from typing import Any

EMULATED_MARK = "TILEIROPT_EMULATED_TILEIR"
EMULATED_TEXT = "emulated TileIR: tileiropt's test emulator, standard Triton underneath (not the TileIR compiler)"
TILEIR_ONLY_OPTIONS = ("occupancy", "opt_level", "matrix_instr_nonkdim", "enable_autogen_alias_mem_token")
UNSUPPORTED = {  # README "unsupported" constructs -> the TTIR text that shows them
    "inline asm": re.compile(r"tt\.elementwise_inline_asm"),
    "math.erf": re.compile(r"math\.erf"),
    "16-bit atomic_cas": re.compile(r"tt\.atomic_cas.*(f16|bf16)"),
}


def install() -> None:
    """Make this process's standard Triton look like nvtriton with ENABLE_TILE=1 (see the module docstring)."""
    import triton

    if getattr(triton, EMULATED_MARK, False):
        return
    setattr(triton, EMULATED_MARK, True)
    _backend_module()
    _fork_config(triton.Config)
    if os.environ.get("TRITON_INTERPRET") == "1":
        _interpreter_refuses()
    else:
        _tileir_driver_and_compiler()


def refusal(construct: str) -> RuntimeError:
    """The error the fork's `call_tileiras` raises when tileiras exits non-zero (compiler.py)."""
    return RuntimeError(f"`tileiras` failed with error code 1\n`tileiras` stderr:\n{construct} is not supported "
                        f"({EMULATED_TEXT})\n")


def _interpreter_refuses() -> None:
    """Under the interpreter: the constructs tileiras refuses raise as its failure does, where they execute."""
    from triton.runtime.interpreter import InterpreterBuilder

    def refuse(construct: str, method: Any, applies: Any = lambda *args: True) -> Any:
        def refused(self: Any, *args: Any) -> Any:
            if applies(*args):
                raise refusal(construct)
            return method(self, *args)
        return refused

    def sixteen_bit(ptr: Any, cmp: Any, val: Any, *rest: Any) -> bool:
        return getattr(val.dtype.scalar, "primitive_bitwidth", 0) == 16 and val.dtype.scalar.is_floating()

    builder = InterpreterBuilder
    builder.create_erf = refuse("math.erf", builder.create_erf)
    builder.create_inline_asm = refuse("inline asm", builder.create_inline_asm)
    builder.create_atomic_cas = refuse("16-bit atomic_cas", builder.create_atomic_cas, sixteen_bit)


def _backend_module() -> None:
    package = types.ModuleType("triton.backends.tileir")
    package.__spec__ = importlib.machinery.ModuleSpec("triton.backends.tileir", None, is_package=True)
    package.__path__ = []  # a package: `triton.backends.tileir.errors` imports
    setattr(package, EMULATED_MARK, EMULATED_TEXT)
    errors = types.ModuleType("triton.backends.tileir.errors")
    errors.__spec__ = importlib.machinery.ModuleSpec("triton.backends.tileir.errors", None)

    from triton.errors import TritonError

    class HitFallback(TritonError):  # third_party/tileir/backend/errors.py
        def __init__(self, required: Any, name: str):
            self.required, self.name = required, name

        def __str__(self) -> str:
            return f"HitFallback: {self.name}, Required: {self.required}."

    errors.HitFallback = HitFallback
    package.errors = errors
    sys.modules["triton.backends.tileir"] = package
    sys.modules["triton.backends.tileir.errors"] = errors


def _target_backend() -> str | None:
    import triton

    try:
        return triton.runtime.driver.active.get_current_target().backend
    except Exception:  # no driver on this machine (the interpreter)
        return None


def _fork_config(config: type) -> None:
    """Config.__init__ and all_kwargs as the fork defines them (python/triton/runtime/autotuner.py)."""
    original_init, original_all = config.__init__, config.all_kwargs

    def __init__(self: Any, kwargs: Any, num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: Any = None, pre_hook: Any = None, ir_override: Any = None, opt_level: int = 3,
                 occupancy: Any = None) -> None:
        original_init(self, kwargs, num_warps=num_warps, num_stages=num_stages, num_ctas=num_ctas, maxnreg=maxnreg,
                      pre_hook=pre_hook, ir_override=ir_override)
        self.opt_level, self.occupancy = opt_level, occupancy

    def all_kwargs(self: Any) -> dict:
        found = original_all(self)
        if _target_backend() == "tileir":
            found.update({k: v for k, v in (("opt_level", self.opt_level), ("occupancy", self.occupancy))
                          if v is not None})
        return found

    config.__init__, config.all_kwargs = __init__, all_kwargs


def _tileir_driver_and_compiler() -> None:
    """On a GPU: the driver reports the "tileir" target and a "tileir" backend compiles through PTX underneath."""
    import triton
    from triton.backends import Backend, backends
    from triton.backends.compiler import GPUTarget

    try:
        from triton.backends.nvidia.compiler import CUDABackend, CUDAOptions
        inner = triton.runtime.driver.active
        inner.get_current_target()
    except Exception:  # no CUDA driver: the interpreter runs the kernels
        return

    @dataclasses.dataclass(frozen=True)
    class EmulatedTileIROptions(CUDAOptions):  # the fork's TileIROptions fields the CUDA options lack
        occupancy: int = 1
        opt_level: int = 3
        matrix_instr_nonkdim: int = 0
        enable_autogen_alias_mem_token: bool = True

    class EmulatedTileIRDriver:
        """The CUDA driver, reporting the fork's target (driver.py, TileIRDriver.get_current_target)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(inner, name)

        def get_current_target(self) -> Any:
            cuda = inner.get_current_target()
            return GPUTarget("tileir", cuda.arch, cuda.warp_size)

    class EmulatedTileIRBackend(CUDABackend):
        """Compiles a "tileir" target through PTX; rejects what the fork's tileiras rejects."""

        @staticmethod
        def supports_target(target: Any) -> bool:
            return target.backend == "tileir"

        def parse_options(self, opts: dict) -> Any:
            options = super().parse_options({**opts, "num_ctas": 1})  # TileIR's 2-CTA mode is no PTX cluster
            fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
            extra = {k: opts[k] for k in TILEIR_ONLY_OPTIONS if opts.get(k) is not None}
            return EmulatedTileIROptions(**fields, **extra)

        def add_stages(self, stages: dict, options: Any, language: Any = None) -> None:
            if language is None:
                super().add_stages(stages, options)
            else:
                super().add_stages(stages, options, language)
            make_ttir = stages["ttir"]

            def ttir(src: Any, metadata: dict) -> Any:
                module = make_ttir(src, metadata)
                text = str(module)
                for construct, pattern in UNSUPPORTED.items():
                    if pattern.search(text):
                        raise refusal(construct)
                return module

            later = list(stages.items())
            stages.clear()
            for name, stage in later:
                stages[name] = ttir if name == "ttir" else stage
                if name == "ttir":  # written to the cache as <kernel>.tileIR, passed on unchanged
                    stages["tileIR"] = lambda module, metadata: module

    backends["tileir"] = Backend(compiler=EmulatedTileIRBackend, driver=type(inner))
    triton.runtime.driver.set_active(EmulatedTileIRDriver())
    _runtime_fallback(inner)


def _runtime_fallback(inner: Any) -> None:
    """TRITON_TILEIR_RUNTIME_FALLBACK=1: a kernel tileiras refuses compiles for PTX instead, silently (the 13.4
    line's README); a JIT function takes `triton.compiler.compile` when it first binds a device."""
    import triton.compiler

    compile_for_tileir = triton.compiler.compile

    def compile_with_fallback(src: Any, target: Any = None, options: Any = None, **more: Any) -> Any:
        try:
            return compile_for_tileir(src, target=target, options=options, **more)
        except RuntimeError as exc:
            if os.environ.get("TRITON_TILEIR_RUNTIME_FALLBACK") != "1" or "`tileiras` failed" not in str(exc):
                raise
            options = {k: v for k, v in (options or {}).items() if k not in TILEIR_ONLY_OPTIONS}
            return compile_for_tileir(src, target=inner.get_current_target(), options=options, **more)

    triton.compiler.compile = compile_with_fallback
