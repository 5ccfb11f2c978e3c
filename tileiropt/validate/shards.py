"""A case's config items spread over several jobs, so that one kernel's many configs use every worker of every GPU.

A case (one kernel file, variant, dtype set and backend) runs each of its kernel's autotune configs as an item, one
after another inside one worker. When the phase has fewer cases than slots, a case of an autotuned kernel on a GPU
backend becomes `shards` jobs of its own: each imports the file and computes the reference (the run's reference
cache shares it), then runs only its share of the items (`owners`). The records are the same as one job's, in the
same order (by item); an item that repeats another's compiled code (`worker.dropped_hint_duplicates`) goes to the
job that runs the one it repeats, so its record can say so. A case's input key is complete only when every one of
its jobs finished (`ShardCount`).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterable
from pathlib import Path

from tileiropt.harness.tileir_surface import held_tile
from tileiropt.validate.cases import Case

MAX_SHARDS = 64  # a worker's later jobs of a case find its file imported and its reference's kernels compiled
JOBS_PER_SLOT = 4  # small shares: a worker that drew cheap configs takes more, and no job holds several costly ones


def owners(count: int, repeats: dict[int, int], shards: int, costs: list[float] | None = None) -> list[int]:
    """Per item (of `count`), the shard that runs it: the items that compile code of their own dealt costliest first
    (`costs`: an estimate per item, `compile_cost`), each round of the deal in the other direction (the shards that
    start first get the costliest configs, and no shard gets all the next costliest), items of one cost in an order
    shuffled with a fixed seed (a config list crossed with lever combinations has a period, and its costly configs
    would otherwise fall to one job); each repeat (`repeats`: item -> the earlier item it repeats) to the shard of
    the item it repeats."""
    own = [index for index in range(count) if index not in repeats]
    random.Random(count).shuffle(own)
    if costs is not None:
        own.sort(key=lambda index: -costs[index])  # stable: the shuffle orders items of one cost
    owner = [0] * count
    width = max(1, shards)
    for dealt, index in enumerate(own):
        turn, place = divmod(dealt, width)
        owner[index] = place if turn % 2 == 0 else width - 1 - place
    for index in sorted(repeats):
        owner[index] = owner[repeats[index]]
    return owner


def compile_cost(kwargs: dict[str, object], num_warps: int | None) -> float:
    """How costly a config is to compile and run, for the deal's order only: the tile its warps hold
    (`tileir_surface.held_tile`) per warp. Measured on an H200, PTX: a 256x128 tile at two warps compiles in 16-21 s,
    a 128x128 one at four in 2-4 s, most configs in about 1 s."""
    return held_tile(kwargs) / max(1, num_warps or 4)


def shard_count(candidates: int, slots: int, cases: int) -> int:
    """Jobs per candidate case: four for each of the `slots` the phase's `cases` leave idle (workers that finish
    early take the rest: items differ in cost, one config's compile up to 20 s where most take 1), at most
    `MAX_SHARDS`; 1 when the cases fill the slots already (or there is one slot)."""
    if candidates == 0 or slots <= 1 or cases >= slots:
        return 1
    return max(1, min(MAX_SHARDS, math.ceil(JOBS_PER_SLOT * slots / candidates)))


def autotuned(path: str, memo: dict[str, bool]) -> bool:
    """Whether the file at `path` may hold an autotuner (its text names `autotune`): a case of a kernel without one
    has a single item, which no split can spread."""
    if path not in memo:
        try:
            memo[path] = "autotune" in Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            memo[path] = False
    return memo[path]


def split_cases(cases: list[Case], shards: int, first_id: int) -> tuple[list[Case], dict[int, int]]:
    """`cases` with each one split into `shards` jobs (new ids from `first_id`); and each new job's id -> the
    id of the case it is part of."""
    if shards <= 1:
        return cases, {}
    split: list[Case] = []
    part_of: dict[int, int] = {}
    next_id = first_id
    for case in cases:
        for shard in range(shards):
            job = case if shard == 0 else dataclasses.replace(case, id=next_id)
            if shard:
                part_of[next_id] = case.id
                next_id += 1
            job.shard, job.shards = shard, shards
            split.append(job)
    return split, part_of


class ShardCount:
    """Per input key, the jobs of its case still running: the key is complete when the last one finished, and
    never when one was cut short."""

    def __init__(self, jobs: Iterable[tuple[str, int]]):
        self.left: dict[str, int] = {}
        self.cut: set[str] = set()
        for key, shards in jobs:
            self.left[key] = self.left.get(key, 0) + shards

    def ended(self, key: str, finished: bool) -> bool:
        """A job of `key`'s case ended; True when that completes the case."""
        if not finished:
            self.cut.add(key)
        self.left[key] = self.left.get(key, 1) - 1
        return self.left[key] <= 0 and key not in self.cut
