"""Code shared by the tool and the gate it writes into every transformed file (the text of this
module, less this docstring, is copied into the gate): standard library and `triton` only.

- The gate's decision: whether the TileIR backend is active, and whether the TileIR code runs.

- The one rule that turns a kernel's own configs into TileIR candidates and caps them. `apply` runs
  it when it can read a kernel's configs from the file (they are then written out literally); the
  gate runs it at import when the configs are built by code the tool does not run (a config function
  that branches on the backend, a package's own autotuner reading tuned configs from disk).
- How to find the autotuner a kernel object is or wraps (`@triton.heuristics` above it, a package's
  entry object forwarding `run()` to its own): the gate adds TileIR configs *to* it, never wraps it
  in a second one; validation pins its configs one by one and reads the compiled backend through
  the same chain.
"""

import importlib.util as _tileiropt_importlib_util
import itertools as _tileiropt_itertools
import random as _tileiropt_random

import triton as _tileiropt_triton


def _tileiropt_backend_is_tileir(environ):
    """The CUDA Tile IR backend is the active one: ENABLE_TILE=1 *and* nvtriton's TileIR backend is importable
    (nvtriton forces its TileIR driver on that variable). Either alone is not enough: standard Triton with
    ENABLE_TILE=1, or nvtriton with it unset, compiles through PTX, which rejects TileIR hints."""
    if environ.get("ENABLE_TILE") != "1":
        return False
    try:
        return _tileiropt_importlib_util.find_spec("triton.backends.tileir") is not None
    except (ImportError, ValueError):
        return False


def _tileiropt_code_on(backend_is_tileir, environ):
    """The TileIR code (twins, configs) runs on the TileIR backend, or anywhere with TILEIROPT_FORCE_TILEIR=1
    (validation proves the rewritten bodies on PTX and the interpreter, dropping the hints they reject)."""
    return backend_is_tileir or environ.get("TILEIROPT_FORCE_TILEIR") == "1"


def _tileiropt_candidates(rows, occupancy, num_ctas, num_stages, tiles=None, cap=16):
    """TileIR candidates over the kernel's own configs, capped to `cap`.

    rows: (meta-parameter dict, num_warps) of each own config. tiles: meta-parameter name -> the
    sizes to try instead of the own values. Every (row, occupancy, num_ctas, num_stages) combination
    is a candidate (kwargs as a tuple of pairs, occupancy, num_ctas, num_stages, num_warps); at most
    `cap` are kept, greedily covering every value of every lever first, then a fixed-seed sample."""
    tiles = tiles or {}
    resized = []
    for kwargs, num_warps in rows:
        sized = [name for name in tiles if name in kwargs]
        fixed = {k: v for k, v in kwargs.items() if k not in sized}
        for values in _tileiropt_itertools.product(*(tiles[name] for name in sized)):
            combo = {**fixed, **dict(zip(sized, values))}
            ordered = (tuple((k, combo[k]) for k in kwargs), num_warps)
            if ordered not in resized:
                resized.append(ordered)
    candidates = [(kwargs, occ, ctas, stages, warps)
                  for (kwargs, warps), occ, ctas, stages
                  in _tileiropt_itertools.product(resized, occupancy, num_ctas, num_stages)]
    axes = [("occupancy", o) for o in occupancy] + [("num_ctas", c) for c in num_ctas]
    axes += [("num_stages", s) for s in num_stages]
    axes += [(name, v) for name, values in tiles.items() for v in values]
    return _tileiropt_cover(candidates, axes, cap)


def _tileiropt_cover(candidates, axes, cap):
    """At most `cap` candidates, greedily covering every (lever, value) pair, then a fixed-seed sample."""
    if len(candidates) <= cap:
        return candidates
    order = list(range(len(candidates)))
    _tileiropt_random.Random(0).shuffle(order)
    wanted = set(axes)

    def pairs(i):
        kwargs, occ, ctas, stages, _ = candidates[i]
        found = {("occupancy", occ), ("num_ctas", ctas), ("num_stages", stages), *kwargs}
        return found & wanted

    chosen, uncovered = [], set(wanted)
    while uncovered and len(chosen) < cap:
        best = max((i for i in order if i not in chosen), key=lambda i: len(pairs(i) & uncovered))
        gain = pairs(best) & uncovered
        if not gain:
            break
        chosen.append(best)
        uncovered -= gain
    for i in order:
        if len(chosen) >= cap:
            break
        if i not in chosen:
            chosen.append(i)
    return [candidates[i] for i in sorted(chosen)]


def _tileiropt_chain(kernel):
    """The kernel object and what it wraps, outermost first: through `.fn` (an autotuner, heuristics,
    a package's entry object) and an attribute holding the one autotuner a wrapper forwards to; it
    ends at the JIT function."""
    runtime = _tileiropt_triton.runtime
    chain, obj = [], kernel
    while obj is not None and len(chain) < 16 and all(obj is not seen for seen in chain):
        chain.append(obj)
        if isinstance(obj, runtime.JITFunction) or type(obj).__name__ == "InterpretedFunction":
            break
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict):
            break
        held = [value for value in attributes.values() if isinstance(value, runtime.Autotuner)]
        obj = held[0] if len(held) == 1 and not isinstance(obj, runtime.Autotuner) else attributes.get(
            "fn", attributes.get("__wrapped__"))
        if not isinstance(obj, runtime.KernelInterface) and not hasattr(obj, "__dict__"):
            break
    return chain


def _tileiropt_find_autotuner(kernel):
    """The outermost triton Autotuner in the kernel's chain, or None."""
    return next((obj for obj in _tileiropt_chain(kernel) if isinstance(obj, _tileiropt_triton.runtime.Autotuner)),
                None)


def _tileiropt_plain_kernel(kernel):
    """A JIT function, possibly under @triton.heuristics: safe to wrap in an autotuner."""
    while isinstance(kernel, _tileiropt_triton.runtime.Heuristics):
        kernel = kernel.fn
    return isinstance(kernel, _tileiropt_triton.runtime.KernelInterface) and not isinstance(
        kernel, _tileiropt_triton.runtime.Autotuner) and type(kernel).__module__.startswith("triton.")


def _tileiropt_name(kernel):
    """The kernel function's name, through any wrappers."""
    inner = _tileiropt_chain(kernel)[-1]
    return getattr(inner, "__name__", None) or getattr(getattr(inner, "fn", None), "__name__", "kernel")
