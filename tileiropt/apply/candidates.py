"""The rule that turns a kernel's own configs into TileIR candidates and caps them: every combination of the
kernel's own rows with the TileIR levers (occupancy, num_ctas, num_stages, larger tiles), at most `cap` kept,
greedily covering every value of every lever first, then a fixed-seed sample. `apply` writes the result out
literally; a list the file builds by code is crossed with a covering set of lever combinations instead.
"""

from __future__ import annotations

import itertools
import random


def candidates(rows, occupancy, num_ctas, num_stages, tiles=None, cap=16):
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
        for values in itertools.product(*(tiles[name] for name in sized)):
            combo = {**fixed, **dict(zip(sized, values))}
            ordered = (tuple((k, combo[k]) for k in kwargs), num_warps)
            if ordered not in resized:
                resized.append(ordered)
    candidates = [(kwargs, occ, ctas, stages, warps)
                  for (kwargs, warps), occ, ctas, stages
                  in itertools.product(resized, occupancy, num_ctas, num_stages)]
    axes = [("occupancy", o) for o in occupancy] + [("num_ctas", c) for c in num_ctas]
    axes += [("num_stages", s) for s in num_stages]
    axes += [(name, v) for name, values in tiles.items() for v in values]
    return cover(candidates, axes, cap)


def cover(candidates, axes, cap):
    """At most `cap` candidates, greedily covering every (lever, value) pair, then a fixed-seed sample."""
    if len(candidates) <= cap:
        return candidates
    order = list(range(len(candidates)))
    random.Random(0).shuffle(order)
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
