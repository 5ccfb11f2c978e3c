"""The TileIR surface on standard Triton, for the tool's own processes: how an optimized file's TileIR code is
turned on under PTX or the interpreter ("TileIR code forced on"), so its rewritten bodies and configs are proven
correct where the TileIR backend is not. None of this is ever written into a user's file.

An optimized file gates its TileIR code on `is_tileir()`: `ENABLE_TILE=1` and `triton.backends.tileir`
importable (nvtriton forces its TileIR driver on that variable). `force_tileir_code()`, called in a worker whose
backend forces the TileIR code on, after `import triton` and before any user module is imported:

- keeps the backend Triton chose at import (the worker starts with ENABLE_TILE=0): the driver is made now;
- then sets ENABLE_TILE=1 and, where nvtriton is not installed, makes `triton.backends.tileir` importable as an
  empty module marked as the tool's stand-in (`STAND_IN_MARK`), so `is_tileir()` answers yes;
- makes `triton.Config` take the TileIR hints the active backend rejects: a config given `occupancy` or
  `opt_level` (only TileIR configs are) drops them, and a `num_ctas` above 1 (2-CTA mode is TileIR's; under PTX
  it would be a cluster launch the kernel was not written for). Each such config keeps what it was given in
  `.tileir_hints` and what was dropped or changed in `.tileir_dropped`; the user's own configs are untouched;
- compiles such a config with at least the warps its tile needs (`stand_in_warps`): TileIR takes `num_warps` only
  as a hint (13.1 ignores it, 13.4 passes it on as the worker warps a CTA), so what the config computes does not
  depend on it, while PTX compiles a 256x128 dot tile at two warps for 16-21 s (an H200), a 128x128 one at four in
  2-4 s.
  The value given is kept in `.tileir_hints` and shown in the config's label;
- makes a JIT launch drop the hints a launch site passes under the gate (`launch_hints.py`:
  `**({"occupancy": 4} if is_tileir() else {})`), which PTX refuses ("Keyword argument occupancy was specified
  but unrecognised"); a kernel parameter of that name is passed as always.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import math
import os
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from triton import Config
    from triton.runtime.jit import JITFunction

BACKEND_MODULE = "triton.backends.tileir"
STAND_IN_MARK = "TILEIROPT_STAND_IN"  # set on the stand-in module: what imports it is not nvtriton
HINTS = ("occupancy", "opt_level")  # Config keywords only the TileIR backend takes
WARP_TILE = 4096  # a dot tile's elements per warp above which PTX's compile slows steeply (see `stand_in_warps`)
MOST_WARPS = 8


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an empty `triton.backends.tileir` (marked) where nvtriton's is not installed."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(name, self) if name == BACKEND_MODULE else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        setattr(module, STAND_IN_MARK, "tileiropt's stand-in: standard Triton, TileIR code forced on")


def force_tileir_code() -> None:
    """Turn an optimized file's TileIR code on in this process, on the backend Triton already chose."""
    import triton

    try:  # the driver is chosen on first use: choose it now, while ENABLE_TILE is still the backend's
        triton.runtime.driver.active.get_current_target()
    except Exception:  # the interpreter on a machine without a GPU: nothing to choose
        pass
    os.environ["ENABLE_TILE"] = "1"
    if importlib.util.find_spec(BACKEND_MODULE) is None and not any(
            isinstance(finder, _StandInFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _StandInFinder())
    _config_drops_hints(triton.Config)
    _launch_drops_hints(triton.runtime.JITFunction)


def _launch_drops_hints(jit_class: type[JITFunction]) -> None:
    """Make `jit_class.run` drop the TileIR hints a launch passes (see the module docstring); once."""
    original = jit_class.run
    if getattr(original, "_tileiropt_drops_hints", False):
        return

    def run(self: JITFunction, *args: object, **kwargs: object) -> Any:
        for name in HINTS:
            if name in kwargs and name not in (getattr(self, "arg_names", None) or ()):
                del kwargs[name]
        return original(self, *args, **kwargs)

    run._tileiropt_drops_hints = True  # type: ignore[attr-defined]
    jit_class.run = run


def _config_drops_hints(config_class: type[Config]) -> None:
    """Make `config_class.__init__` take and drop the TileIR hints (see the module docstring); once."""
    original = config_class.__init__
    if getattr(original, "_tileiropt_drops_hints", False):
        return

    def __init__(self: Config, kwargs: dict[str, object], *args: object, **options: Any) -> None:
        hints = {name: options.pop(name) for name in HINTS if name in options}
        dropped = {name: value for name, value in hints.items() if value is not None}
        if hints and (options.get("num_ctas") or 1) > 1:
            dropped["num_ctas"] = hints["num_ctas"] = options["num_ctas"]
            options["num_ctas"] = 1
        original(self, kwargs, *args, **options)
        if hints:
            warps = stand_in_warps(self.kwargs, self.num_warps)
            if warps != self.num_warps:
                dropped["num_warps"] = hints["num_warps"] = self.num_warps
                self.num_warps = warps
            self.tileir_hints, self.tileir_dropped = hints, dropped

    __init__._tileiropt_drops_hints = True  # type: ignore[attr-defined]
    config_class.__init__ = __init__


def held_tile(kwargs: dict[str, object]) -> int:
    """The tile a config's warps hold: the product of its two largest block sizes (power-of-two meta-parameters of
    16 and more: most often a dot's M and N, whose accumulator lives in registers; a larger K or group size counts
    alike, which only overstates the tile); 1 where it has none."""
    sizes = sorted((value for value in kwargs.values()
                    if type(value) is int and value >= 16 and value & (value - 1) == 0), reverse=True)
    return math.prod(sizes[:2])


def stand_in_warps(kwargs: dict[str, object], num_warps: int | None) -> int | None:
    """The warps PTX compiles a TileIR config with: those given, raised until each warp holds at most `WARP_TILE`
    elements of the tile (at most `MOST_WARPS`). Measured on an H200, PTX: a 256x128 tile compiles in 16-21 s at
    two warps, a 128x128 one in 2-4 s at four. None (the launch's default) is left as it is."""
    if num_warps is None:
        return None
    needed = 1 << max(0, math.ceil(math.log2(max(1, held_tile(kwargs)) / WARP_TILE)))
    return max(num_warps, min(MOST_WARPS, needed))


def tileir_code_on() -> bool:
    """The gate's answer in this process (`harness/gate.py`): ENABLE_TILE=1 and `triton.backends.tileir`
    importable, nvtriton's or the stand-in."""
    try:
        return os.environ.get("ENABLE_TILE") == "1" and importlib.util.find_spec(BACKEND_MODULE) is not None
    except (ImportError, ValueError):
        return False


def is_stand_in() -> bool:
    """Whether `triton.backends.tileir` in this process is the tool's stand-in, not nvtriton's."""
    module = sys.modules.get(BACKEND_MODULE)
    if module is not None:
        return hasattr(module, STAND_IN_MARK)
    try:
        spec = importlib.util.find_spec(BACKEND_MODULE)
    except (ImportError, ValueError):
        return False
    return spec is not None and isinstance(spec.loader, _StandInFinder)


def tileir_configs(configs: Iterable[Config]) -> list[Config]:
    """The configs of a list that carry TileIR hints: given them under the surface, or holding them under nvtriton."""
    return [config for config in configs
            if getattr(config, "tileir_hints", None) or getattr(config, "occupancy", None) is not None]


def main(argv: list[str] | None = None) -> int:
    """`python -m tileiropt.harness.tileir_surface <script.py> [args...]`: run a program with the TileIR code of the
    optimized files it imports turned on (the backend stays the one Triton chooses: PTX, or the interpreter under
    TRITON_INTERPRET=1), as the tool's own checks run it."""
    import runpy

    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m tileiropt.harness.tileir_surface <script.py> [args...]", file=sys.stderr)
        return 2
    os.environ["ENABLE_TILE"] = "0"
    force_tileir_code()
    sys.argv = list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
    runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
