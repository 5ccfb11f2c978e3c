"""TileIR config spaces: per-class hint ranges from `templates/spaces.toml`, mapped onto a
kernel's own meta-parameter names, and capped to a budget with coverage of every value."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tileiropt.apply.candidates import candidates
from tileiropt.classify.source import read_regular_file
from tileiropt.errors import UserError
from tileiropt.project.model import DEFAULT_MAX_CONFIGS
from tileiropt.project.template import read_template
from tileiropt.releases import Release

KERNEL_CLASSES = ("dot", "norm", "elementwise", "reduction")
HINTS = ("occupancy", "num_ctas", "num_stages")
MAX_LEVER_VALUES = 32  # values per lever in a spaces file
MAX_LEVER_VALUE = 1 << 16
MAX_COMBINATIONS = 100_000  # candidates per kernel row before capping
MAX_SPACES_BYTES = 1024 * 1024

# Role of a block-size meta-parameter, read from its name: BLOCK_SIZE_M, BLOCK_M, BM, TILE_M ...
_ROLE_PATTERNS = {
    "M": re.compile(r"^(BLOCK|TILE)(_SIZE)?_?M$|^BM$", re.IGNORECASE),
    "N": re.compile(r"^(BLOCK|TILE)(_SIZE)?_?N$|^BN$", re.IGNORECASE),
    "K": re.compile(r"^(BLOCK|TILE)(_SIZE)?_?K$|^BK$", re.IGNORECASE),
    "BLOCK": re.compile(r"^(X?BLOCK|TILE)(_SIZE)?$|^BS$", re.IGNORECASE),
}


@dataclass
class Space:
    """The hint ranges and tile sizes searched for one kernel class."""

    occupancy: list[int]
    num_ctas: list[int]
    num_stages: list[int]
    tiles: dict[str, list[int]] = field(default_factory=dict)


def space_for_release(space: Space, release: Release) -> Space:
    """`space` with the occupancy values `release` accepts (its range; the lowest when none is left)."""
    occupancy = release.clamp_occupancy(space.occupancy) or [release.occupancy[0]]
    return Space(occupancy, list(space.num_ctas), list(space.num_stages), dict(space.tiles))


@dataclass(frozen=True)
class TileIRConfig:
    """One config to add under the gate: meta-parameters plus TileIR hints."""

    kwargs: tuple[tuple[str, Any], ...]
    occupancy: int
    num_ctas: int | None  # None: left to the launch, which passes its own
    num_stages: int | None
    num_warps: int | None = None

    def kwargs_dict(self) -> dict[str, Any]:
        return dict(self.kwargs)


def role_of(name: str) -> str | None:
    for role, pattern in _ROLE_PATTERNS.items():
        if pattern.match(name):
            return role
    return None


def _int_list(value: object, where: str) -> list[int]:
    if (not isinstance(value, list) or not value or len(value) > MAX_LEVER_VALUES
            or not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_LEVER_VALUE for v in value)):
        shown = repr(value) if len(repr(value)) < 80 else repr(value)[:77] + "..."
        raise UserError(f"[{where}] must be a list of 1 to {MAX_LEVER_VALUES} integers in 1..{MAX_LEVER_VALUE}, "
                        f"got {shown}")
    return list(dict.fromkeys(value))


def parse_spaces(data: dict, source: str) -> dict[str, Space]:
    spaces: dict[str, Space] = {}
    for cls, table in data.items():
        if cls not in KERNEL_CLASSES:
            raise UserError(f"[{cls}] is not a kernel class", file=source,
                            hint=f"use one of {', '.join(KERNEL_CLASSES)}")
        if not isinstance(table, dict):
            raise UserError(f"[{cls}] must be a table", file=source)
        unknown = set(table) - {*HINTS, "tiles"}
        if unknown:
            raise UserError(f"[{cls}.{sorted(unknown)[0]}] unknown key", file=source,
                            hint="allowed: occupancy, num_ctas, num_stages, tiles")
        tiles = table.get("tiles", {})
        if not isinstance(tiles, dict) or any(role not in _ROLE_PATTERNS for role in tiles):
            raise UserError(f"[{cls}.tiles] must map roles {', '.join(_ROLE_PATTERNS)} to sizes", file=source)
        try:
            spaces[cls] = Space(
                occupancy=_int_list(table.get("occupancy", [1]), f"{cls}.occupancy"),
                num_ctas=_int_list(table.get("num_ctas", [1]), f"{cls}.num_ctas"),
                num_stages=_int_list(table.get("num_stages", [3]), f"{cls}.num_stages"),
                tiles={role: _int_list(v, f"{cls}.tiles.{role}") for role, v in tiles.items()},
            )
            space = spaces[cls]
            combinations = len(space.occupancy) * len(space.num_ctas) * len(space.num_stages)
            for sizes in space.tiles.values():
                combinations *= len(sizes)
            if combinations > MAX_COMBINATIONS:
                raise UserError(f"[{cls}] spans {combinations} combinations; at most {MAX_COMBINATIONS}",
                                hint="keep fewer values per lever (the cap then picks at most --max-configs)")
        except UserError as exc:
            exc.file = source
            raise
    missing = [c for c in KERNEL_CLASSES if c not in spaces]
    if missing:
        raise UserError(f"no space for class {missing[0]!r}", file=source, hint=f"add a [{missing[0]}] table")
    return spaces


def load_spaces(path: Path | None = None) -> dict[str, Space]:
    """The shipped spaces, or the user's file given with --spaces."""
    if path is None:
        text = read_template("spaces.toml")
        source = "templates/spaces.toml"
    else:
        source = str(path)
        try:
            text = read_regular_file(Path(path), "spaces file", MAX_SPACES_BYTES).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"cannot decode: {exc.reason} at byte {exc.start}", file=source,
                            hint="save the spaces file as UTF-8 (TOML is UTF-8)") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"invalid TOML: {exc}", file=source) from None
    return parse_spaces(data, source)


def tileir_configs(space: Space, rows: list[tuple[dict[str, Any], int | None]], names: list[str], *,
                   num_ctas: Sequence[int | None] | None = None, num_stages: Sequence[int | None] | None = None,
                   cap: int = DEFAULT_MAX_CONFIGS) -> list[TileIRConfig]:
    """The TileIR candidates over a kernel's own (meta-parameters, num_warps) rows, capped with coverage of every
    value (`candidates`); the levers default to the space's."""
    chosen = candidates(rows, space.occupancy, num_ctas or space.num_ctas, num_stages or space.num_stages,
                                   tile_sizes(space, names), cap)
    return [TileIRConfig(*candidate) for candidate in chosen]


def covering_combinations(space: Space, num_ctas: list[int], tiles: dict[str, list[int]], at_least: int = 0
                          ) -> list[TileIRConfig]:
    """The fewest lever combinations (occupancy, num_ctas, num_stages, larger tiles) the cover rule finds that hold
    every value of every lever, or `at_least` of them (never more than every combination): what a kernel's own
    config list is crossed with."""
    own_or_tiles: dict[str, list[int | None]] = {  # None: the own config's size
        name: [None, *sizes] for name, sizes in tiles.items()}
    rows = [({name: None for name in own_or_tiles}, None)]
    values: list[Sequence[int | None]] = [space.occupancy, num_ctas, space.num_stages, *own_or_tiles.values()]
    wanted = sum(map(len, values))
    cap = max(*map(len, values), at_least, 1)
    while True:
        chosen = candidates(rows, space.occupancy, num_ctas, space.num_stages, own_or_tiles, cap)
        held = {("o", c[1]) for c in chosen} | {("n", c[2]) for c in chosen} | {("s", c[3]) for c in chosen}
        if len(held | {pair for c in chosen for pair in c[0]}) >= wanted or len(chosen) < cap:
            return [TileIRConfig(*candidate) for candidate in chosen]
        cap += 1


def build_space(
    space: Space,
    existing: list[dict[str, Any]],
    tunable_names: list[str],
    *,
    num_warps: list[int | None] | None = None,
    allow_num_ctas: bool = True,
    cap: int = DEFAULT_MAX_CONFIGS,
) -> list[TileIRConfig]:
    """The TileIR configs for one kernel.

    `existing` are the meta-parameter dicts of the kernel's own configs (literal values); a
    meta-parameter whose role the class space sizes (M/N/K/BLOCK) takes the template's larger
    tiles, every other one keeps the values the kernel already uses. `tunable_names` are the
    kernel's meta-parameter names set by its configs (never a name the kernel lacks).
    """
    rows = [({k: row[k] for k in [*tunable_names, *row] if k in row}, (num_warps or [None])[0])
            for row in existing or [{}]]
    return tileir_configs(space, rows, tunable_names, num_ctas=space.num_ctas if allow_num_ctas else [1], cap=cap)


def tile_sizes(space: Space, names: list[str]) -> dict[str, list[int]]:
    """The class space's larger tile sizes for the meta-parameters whose role it sizes (M/N/K/BLOCK)."""
    return {name: space.tiles[role] for name in names if (role := role_of(name)) is not None and role in space.tiles}
