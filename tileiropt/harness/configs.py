"""The autotune configs of a module, as a list of items to run one at a time.

Item 0 pins every autotuner to its first config. Then, for each autotuner, one item per other
config, pinned while every other autotuner stays on its first config. An item whose autotuner
the entry never launches is dropped once a run has shown which autotuners launch.
A module without autotuners has one item, LAUNCH; `--best-config` has one item, AUTOTUNED,
with nothing pinned.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tileiropt.harness.autotuners import autotuners, config_label, pinned
from tileiropt.schema import AUTOTUNED, LAUNCH


@dataclass(frozen=True)
class ConfigItem:
    label: str
    autotuner: str | None = None  # the module attribute whose config this item varies
    index: int = 0  # that autotuner's config index
    pin: bool = True  # False for AUTOTUNED: let the autotuner choose


def _name_prefix(tuners: dict[str, Any], name: str) -> str:
    return f"{name}: " if len(tuners) > 1 else ""


def config_items(module: ModuleType, best_config: bool = False) -> list[ConfigItem]:
    tuners = autotuners(module)
    if not tuners:
        return [ConfigItem(LAUNCH, pin=False)]
    if best_config:
        return [ConfigItem(AUTOTUNED, pin=False)]
    first = "; ".join(f"{_name_prefix(tuners, n)}{config_label(t.configs[0])}" for n, t in tuners.items())
    items = [ConfigItem(first)]
    for name, tuner in tuners.items():
        for index, config in enumerate(tuner.configs[1:], start=1):
            items.append(ConfigItem(f"{_name_prefix(tuners, name)}{config_label(config)}", name, index))
    return items


@contextlib.contextmanager
def pinned_item(module: ModuleType, item: ConfigItem) -> Iterator[None]:
    """Pin every autotuner of `module` as `item` says (nothing for LAUNCH and AUTOTUNED)."""
    with contextlib.ExitStack() as stack:
        if item.pin:
            for name, tuner in autotuners(module).items():
                index = item.index if name == item.autotuner else 0
                stack.enter_context(pinned(tuner, tuner.configs[index]))
        yield


@contextlib.contextmanager
def first_configs(module: ModuleType) -> Iterator[None]:
    """Pin every autotuner of `module` to its first config (how a reference module runs)."""
    with contextlib.ExitStack() as stack:
        for tuner in autotuners(module).values():
            stack.enter_context(pinned(tuner, tuner.configs[0]))
        yield


def label_after_run(module: ModuleType, item: ConfigItem, launched: set[str]) -> str:
    """The item's label, naming only the autotuners that really launched (and, for
    AUTOTUNED, the config each one chose)."""
    tuners = autotuners(module)
    if not tuners or not launched:
        return item.label if item.label != AUTOTUNED else LAUNCH
    if item.label == AUTOTUNED:
        chosen = []
        for name in tuners:
            if name in launched:
                best = getattr(tuners[name], "best_config", None)
                chosen.append(f"{_name_prefix(tuners, name)}{config_label(best) if best else '?'}")
        return f"{AUTOTUNED} " + "; ".join(chosen)
    if item.autotuner is None:
        return "; ".join(f"{_name_prefix(tuners, n)}{config_label(t.configs[0])}"
                         for n, t in tuners.items() if n in launched)
    return item.label
