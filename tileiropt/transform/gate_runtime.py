"""The gate's own code, copied into every transformed file after `gate_shared` (`gate` writes this module's
text, less this docstring and its package imports, whose code the gate copies before it).

At import it decides whether the TileIR code runs (`_TILEIR`: the TileIR backend is active, or
TILEIROPT_FORCE_TILEIR=1) and which hints this Triton's `Config` takes. The functions attach TileIR configs
to a kernel's autotuner: those `apply` wrote out (`_tileiropt_add_configs`), those derived at import from
the autotuner's own configs (`_tileiropt_derive_configs`), or a hint-only autotune for a kernel launched with
its own block sizes (`_tileiropt_hint_autotune`). Hints the active backend rejects are dropped, and a kernel
the code could not attach to is named in `_TILEIROPT_NOT_ATTACHED` with the reason.
"""

import inspect as _tileiropt_inspect
import os as _tileiropt_os

from tileiropt.transform.gate_shared import (
    _tileiropt_backend_is_tileir,
    _tileiropt_candidates,
    _tileiropt_code_on,
    _tileiropt_find_autotuner,
    _tileiropt_name,
    _tileiropt_plain_kernel,
    _tileiropt_triton,
)

_TILEIR_BACKEND = _tileiropt_backend_is_tileir(_tileiropt_os.environ)
_TILEIR = _tileiropt_code_on(_TILEIR_BACKEND, _tileiropt_os.environ)
_TILEIR_CONFIG_HINTS = set(_tileiropt_inspect.signature(_tileiropt_triton.Config.__init__).parameters)


def _tileiropt_config(kwargs, *, occupancy=1, num_ctas=1, num_stages=None, num_warps=None, pre_hook=None):
    """A triton.Config carrying TileIR hints; hints this backend rejects go to `.tileir_dropped`."""
    options = {"num_stages": num_stages, "num_warps": num_warps, "pre_hook": pre_hook}
    dropped = {}
    if _TILEIR_BACKEND and "occupancy" in _TILEIR_CONFIG_HINTS:
        options["occupancy"] = occupancy
    else:
        dropped["occupancy"] = occupancy
    # num_ctas=None leaves it to the launch (which passes its own); only TileIR takes 2-CTA mode
    options["num_ctas"] = num_ctas if _TILEIR_BACKEND or num_ctas is None else 1
    if not _TILEIR_BACKEND and num_ctas not in (None, 1):
        dropped["num_ctas"] = num_ctas
    config = _tileiropt_triton.Config(dict(kwargs), **options)
    config.tileir_dropped = dropped
    return config


def _tileiropt_config_key(config):
    return (tuple(sorted(config.all_kwargs().items(), key=str)), getattr(config, "occupancy", None))


def _tileiropt_configs(rows, occupancy, num_ctas, num_stages, tiles, cap):
    """The capped TileIR candidates over `rows` (see _tileiropt_candidates) as configs."""
    return [_tileiropt_config(dict(kwargs), occupancy=occ, num_ctas=ctas, num_stages=stages, num_warps=warps)
            for kwargs, occ, ctas, stages, warps in _tileiropt_candidates(rows, occupancy, num_ctas, num_stages,
                                                                          tiles, cap)]


# Why TileIR code could not be attached at import (kernel name -> reason); empty when all of it was.
_TILEIROPT_NOT_ATTACHED = {}


def _tileiropt_add_configs(kernel, configs):
    """Append TileIR configs after the kernel autotuner's own, sharing their pre_hook; drop duplicates.
    The autotuner may sit under @triton.heuristics or inside a package's wrapper."""
    autotuner = _tileiropt_find_autotuner(kernel)
    if autotuner is None:
        _TILEIROPT_NOT_ATTACHED[_tileiropt_name(kernel)] = "no autotuner found"
        return kernel
    own = list(autotuner.configs)
    hooks = {config.pre_hook for config in own}
    shared_hook = hooks.pop() if len(hooks) == 1 else None
    seen = {_tileiropt_config_key(config) for config in own}
    for config in configs:
        if config.pre_hook is None:
            config.pre_hook = shared_hook
        key = _tileiropt_config_key(config)
        if key not in seen:
            seen.add(key)
            own.append(config)
    try:  # a package's autotuner may keep its list fixed: the kernel then runs as it is, never a failed import
        autotuner.configs = own
    except (AttributeError, TypeError) as error:
        _TILEIROPT_NOT_ATTACHED[_tileiropt_name(kernel)] = (
            f"its autotuner ({type(autotuner).__name__}) does not take new configs: {error}")
    return kernel


def _tileiropt_derive_configs(kernel, *, occupancy, num_ctas, num_stages, tiles=None, cap=16):
    """TileIR configs derived at import from the autotuner's own config list (built by code the
    tool does not run), added to that autotuner."""
    autotuner = _tileiropt_find_autotuner(kernel)
    if autotuner is None:
        _TILEIROPT_NOT_ATTACHED[_tileiropt_name(kernel)] = "no autotuner found"
        return kernel
    rows = []
    for config in autotuner.configs:
        row = (dict(config.kwargs), config.num_warps)
        if row not in rows:
            rows.append(row)
    return _tileiropt_add_configs(kernel, _tileiropt_configs(rows, occupancy, num_ctas, num_stages, tiles, cap))


def _tileiropt_hint_autotune(kernel, key, *, occupancy, num_ctas, num_stages, cap=16, restore_value=()):
    """TileIR hints (no meta-parameters) for a kernel launched with its own block sizes: added to the
    autotuner the kernel already has (a package's own), else an autotuner around the JIT function.
    A wrapper of unknown kind is left alone: wrapping it could pass launch options twice."""
    if _tileiropt_find_autotuner(kernel) is not None:
        return _tileiropt_derive_configs(kernel, occupancy=occupancy, num_ctas=num_ctas, num_stages=num_stages,
                                         cap=cap)
    if not _tileiropt_plain_kernel(kernel):
        _TILEIROPT_NOT_ATTACHED[_tileiropt_name(kernel)] = (
            f"wrapped by {type(kernel).__name__}, which holds no autotuner")
        return kernel
    configs = _tileiropt_configs([({}, None)], occupancy, num_ctas, num_stages, None, cap)
    return _tileiropt_triton.autotune(configs=configs, key=list(key), restore_value=list(restore_value))(kernel)
