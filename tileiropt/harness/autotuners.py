"""Find the Triton kernels and autotuners a module defines, and pin one config at a time.

An autotuner holding a single config launches it without benchmarking: that is how every
config is validated on its own, and how autotuned kernels run under TRITON_INTERPRET=1
(the benchmarker needs a GPU driver).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any

from triton.runtime.autotuner import Autotuner, Config, Heuristics

try:  # the interpreter wraps kernels in InterpretedFunction, a JITFunction look-alike
    from triton.runtime.interpreter import InterpretedFunction
except ImportError:  # pragma: no cover - very old Triton
    InterpretedFunction = ()
from triton.runtime.jit import JITFunction, KernelInterface

JIT_TYPES = (JITFunction,) + ((InterpretedFunction,) if isinstance(InterpretedFunction, type) else ())
KERNEL_TYPES = (*JIT_TYPES, Autotuner, Heuristics)


def chain(obj: object) -> list[object]:
    """The kernel object and what it wraps, outermost first: through `.fn` (an autotuner, heuristics, a package's
    entry object) and an attribute holding the one autotuner a wrapper forwards to; it ends at the JIT function."""
    found: list[object] = []
    while obj is not None and len(found) < 16 and all(obj is not seen for seen in found):
        found.append(obj)
        if isinstance(obj, JITFunction) or type(obj).__name__ == "InterpretedFunction":
            break
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict):
            break
        held = [value for value in attributes.values() if isinstance(value, Autotuner)]
        obj = held[0] if len(held) == 1 and not isinstance(obj, Autotuner) else attributes.get(
            "fn", attributes.get("__wrapped__"))
        if not isinstance(obj, KernelInterface) and not hasattr(obj, "__dict__"):
            break
    return found


def find_autotuner(obj: object) -> Autotuner | None:
    """The outermost Autotuner in the kernel object's chain, or None."""
    return next((link for link in chain(obj) if isinstance(link, Autotuner)), None)


def innermost(obj: object) -> object:
    """The JIT function under any stack of autotune/heuristics/package wrappers."""
    return chain(obj)[-1]


def function_name(obj: object) -> str:
    """The Python name of the kernel function behind a Triton wrapper."""
    fn = innermost(obj)
    inner = getattr(fn, "fn", fn)
    return getattr(inner, "__name__", repr(inner))


def kernel_objects(module: ModuleType) -> dict[str, Any]:
    """Module attribute name -> Triton kernel object (JIT function, autotuner, heuristics, or a package's
    wrapper object around one: a `KernelInterface` or anything whose chain reaches a JIT function)."""
    found = {}
    for name, value in vars(module).items():
        if isinstance(value, (*KERNEL_TYPES, KernelInterface)):
            found[name] = value
        elif not isinstance(value, type) and hasattr(value, "__dict__") and "fn" in vars(value):
            if isinstance(innermost(value), KERNEL_TYPES):
                found[name] = value
    return found


def autotuners(module: ModuleType) -> dict[str, Autotuner]:
    """Module attribute name -> the autotuner bound under it (through heuristics and package wrappers)."""
    found: dict[str, Autotuner] = {}
    for name, obj in kernel_objects(module).items():
        tuner = find_autotuner(obj)
        if tuner is not None:
            found[name] = tuner
    return found


def tma_dispatches(module: ModuleType) -> dict[str, Any]:
    """Module attribute name -> the TMA dispatch bound under it (directly, or under an autotuner
    or heuristics). A dispatch (written by `apply` for dot kernels) launches the TMA twin or the
    pointer kernel per call; its `.last_path` is "tma" or "pointer", `.last_reason` why not TMA."""
    found: dict[str, Any] = {}
    for name, obj in vars(module).items():
        if isinstance(obj, (Autotuner, Heuristics)) or "last_path" in getattr(obj, "__dict__", {}):
            dispatch = next((o for o in chain(obj) if "last_path" in getattr(o, "__dict__", {})), None)
            if dispatch is not None:
                found[name] = dispatch
    return found


def config_label(config: Config) -> str:
    """A stable, readable label for a triton.Config: its kwargs, then its launch options, as the file gives them
    (where the TileIR code is forced on, the hints the stand-in drops or changes are in `.tileir_hints`)."""
    parts = [f"{k}={v}" for k, v in sorted(getattr(config, "kwargs", {}).items())]
    given = getattr(config, "tileir_hints", None) or {}
    for option in ("num_warps", "num_stages", "num_ctas", "maxnreg", "occupancy"):
        value = given[option] if option in given else getattr(config, option, None)
        if value is not None:
            parts.append(f"{option}={value}")
    return ", ".join(parts)


class PrunedByKernel(Exception):
    """The kernel's own pruner (`prune_configs_by={"early_config_prune": ...}`) drops the pinned config."""


def pruned_reason(exc: BaseException) -> str | None:
    return str(exc) if isinstance(exc, PrunedByKernel) else None


def same_config(a: Config, b: Config) -> bool:
    if a is b:
        return True
    return all(getattr(a, k, None) == getattr(b, k, None)
               for k in ("kwargs", "num_warps", "num_stages", "num_ctas", "maxnreg"))


def resets(tuner: object) -> list[str]:
    """The arguments an autotuner zeroes after tuning (`reset_to_zero`); none where the package gave its own
    pre_hook, which takes the place of Triton's reset (it never zeroes them then)."""
    if getattr(tuner, "user_defined_pre_hook", False):
        return []
    return list(getattr(tuner, "reset_to_zero", None) or ())


def own_run(tuner: Autotuner) -> bool:
    """Whether the autotuner's class replaces `Autotuner.run` (a package's own tuning strategy and cache, whose
    state a swapped config list would break)."""
    return getattr(type(tuner), "run", None) is not Autotuner.run


def run_at(tuner: Autotuner, config: Config) -> Callable[..., Any]:
    """A `run` launching `config` through the tuner's own kernel (`tuner.fn`) as `Autotuner.run` does for a
    single config, its pre_hook first: how a package's Autotuner subclass is pinned through what every autotuner
    exposes, without its own strategy."""
    def run(*args: object, **kwargs: object) -> Any:
        tuner.nargs = dict(zip(tuner.arg_names, args))
        tuner.best_config = config
        try:
            if config.pre_hook is not None:
                config.pre_hook({**tuner.nargs, **kwargs, **config.all_kwargs()})
            return tuner.fn.run(*args, **kwargs, **config.all_kwargs())
        finally:
            tuner.nargs = None

    return run


@contextlib.contextmanager
def pinned(autotuner: Autotuner, config: Config) -> Iterator[Autotuner]:
    """Run `autotuner` with exactly `config` (no benchmarking), restoring it afterwards. When the kernel has
    its own pruner, each launch first asks it about the whole config list, as the autotuner would: a config it
    drops raises PrunedByKernel instead of running."""
    saved_configs, saved_cache = autotuner.configs, dict(getattr(autotuner, "cache", {}))
    prune = getattr(autotuner, "early_config_prune", None)
    saved_run = vars(autotuner).get("run")
    autotuner.configs = [config]
    autotuner.cache = {}
    if own_run(autotuner):
        autotuner.run = run_at(autotuner, config)
    if prune is not None and len(saved_configs) > 1:
        launch = autotuner.run

        def run(*args: object, **kwargs: object) -> Any:
            kept = prune(list(saved_configs), dict(zip(autotuner.arg_names, args)), **kwargs)
            if not any(same_config(c, config) for c in kept or ()):
                raise PrunedByKernel(f"pruned by the kernel's own early_config_prune "
                                     f"({getattr(prune, '__name__', 'pruner')})")
            return launch(*args, **kwargs)

        autotuner.run = run
    try:
        yield autotuner
    finally:
        autotuner.configs = saved_configs
        autotuner.cache = saved_cache
        if saved_run is None:
            vars(autotuner).pop("run", None)
        else:
            autotuner.run = saved_run


CONFIG_LIST = "<configs>"  # in `tuner_caches`: the original autotuner's config list, by index, for caches of indices


def tuner_caches(tuner: Autotuner) -> dict[str, dict[Any, Any]]:
    """An autotuner's choices: Triton's `cache` (key -> config) and, for a package's own autotuner, each dict it
    holds of configs or of indices into its config list (its own cache, filled from its disk file or its run)."""
    caches = {"cache": dict(getattr(tuner, "cache", {}) or {})}
    if isinstance(tuner, Autotuner) and own_run(tuner):
        for attribute, value in vars(tuner).items():
            if attribute != "cache" and isinstance(value, dict) and value and all(
                    isinstance(v, Config) or (isinstance(v, int) and not isinstance(v, bool))
                    for v in value.values()):
                caches[attribute] = dict(value)
        caches[CONFIG_LIST] = dict(enumerate(getattr(tuner, "configs", [])))
    return caches


def mapped_cache(cache: dict[Any, Any], configs: Iterable[Config],
                 tuned_configs: dict[int, Any] | None) -> dict[Any, Any] | None:
    """`cache` in terms of another autotuner's configs: a config becomes the equal one of `configs`, an index the
    index of the config equal to the one it named in the original's list; None when one has no equal."""
    configs = list(configs)
    mapped = {}
    for key, chosen in cache.items():
        if isinstance(chosen, int):
            named = (tuned_configs or {}).get(chosen)
            index = next((i for i, c in enumerate(configs) if named is not None and same_config(c, named)), None)
            if index is None:
                return None
            mapped[key] = index
        else:
            own = next((c for c in configs if same_config(c, chosen)), None)
            if own is None:
                return None
            mapped[key] = own
    return mapped
