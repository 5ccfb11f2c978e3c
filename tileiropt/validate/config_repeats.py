"""Which config items of a case compute, or compile, what an earlier one did (run once, the others say so), what each
item costs to compile, and which TileIR configs a package's autotuner did not take."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tileiropt.harness.autotuners import autotuners, find_autotuner
from tileiropt.harness.configs import ConfigItem
from tileiropt.harness.gate import extended_autotuners
from tileiropt.harness.tileir_surface import tileir_code_on, tileir_configs
from tileiropt.validate.shards import compile_cost

if TYPE_CHECKING:
    from triton import Config


def not_attached(module: ModuleType, path: str) -> dict[str, str]:
    """Kernel name -> why the TileIR configs the file's TileIR blocks add are not in its autotuner's list (a
    package's autotuner keeping its list fixed): read after the import, with the TileIR code on or off."""
    if not tileir_code_on():
        return {}
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    missing = {}
    for name in sorted(extended_autotuners(source)):
        tuner = find_autotuner(getattr(module, name, None))
        if tuner is None:
            missing[name] = "no autotuner found"
        elif not tileir_configs(tuner.configs):
            missing[name] = f"its autotuner ({type(tuner).__name__}) does not take new configs"
    return missing


def interpreted_duplicates(module: ModuleType, items: list[ConfigItem]) -> dict[int, int]:
    """Item index -> the earlier item it repeats under the interpreter: the same autotuner config's meta-parameters
    and pre-hook (what the interpreter computes with), the hints aside. Item 0 holds every autotuner's first config."""
    return _duplicates(module, items, _computed_with)


def _computed_with(name: str, config: Config) -> tuple[str, str, int]:
    return name, repr(sorted((getattr(config, "kwargs", None) or {}).items())), id(getattr(config, "pre_hook", None))


def dropped_hint_duplicates(module: ModuleType, items: list[ConfigItem]) -> dict[int, int]:
    """Item index -> the earlier item it repeats on PTX with the TileIR code forced on: the config Triton gets,
    its TileIR hints dropped or raised (`tileir_surface`), equal in every field Triton compiles with, so the same
    code. Item 0 holds every autotuner's first config."""
    return _duplicates(module, items, _compiled_with)


def _compiled_with(name: str, config: Config) -> tuple[Any, ...]:
    options = tuple(getattr(config, option, None) for option in ("num_warps", "num_stages", "num_ctas", "maxnreg"))
    return (*_computed_with(name, config), options, getattr(config, "ir_override", None))


def item_costs(module: ModuleType, items: list[ConfigItem]) -> list[float]:
    """Per item, its config's `compile_cost` (the deal's order across a case's jobs); an item that pins no config
    (the autotuner's own choice, a launch) counts as the costliest: it may compile any of them."""
    tuners = autotuners(module)
    costs = []
    for item in items:
        tuner = tuners.get(item.autotuner) if item.pin and item.autotuner is not None else None
        if tuner is None or item.index >= len(tuner.configs):
            costs.append(math.inf)
            continue
        config = tuner.configs[item.index]
        costs.append(compile_cost(getattr(config, "kwargs", None) or {}, getattr(config, "num_warps", None)))
    return costs


def _duplicates(module: ModuleType, items: list[ConfigItem],
                key: Callable[[str, Config], tuple[object, ...]]) -> dict[int, int]:
    tuners = autotuners(module)
    seen: dict[Any, int] = {}
    for name, tuner in tuners.items():
        seen.setdefault(key(name, tuner.configs[0]), 0)
    found = {}
    for index, item in enumerate(items):
        if not item.pin or item.autotuner is None or item.autotuner not in tuners:
            continue
        computed = key(item.autotuner, tuners[item.autotuner].configs[item.index])
        if computed in seen:
            found[index] = seen[computed]
        else:
            seen[computed] = index
    return found
