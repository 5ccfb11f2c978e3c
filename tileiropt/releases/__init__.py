"""What each CUDA Tile IR release supports, as data: one TOML file per release.

The files beside this module (`13.1.toml`, `13.4.toml`, `13.5.toml`, ...) name their sources. A user adds a
release without code: a TOML file of the same shape in a folder named by `TILEIROPT_RELEASES`
(folders separated by the path separator); a user file with the version of a bundled one replaces it.

A file may start from another release: `inherits = "13.4"` takes every table of that release and
replaces only what the file sets (a key of `[targets]`, `[tuning]`, `[fallback]`, `[math]`, or one
feature of `[features]` as a whole). `[[changes]]` lists what a release adds, each with its source.

Public API: `Release` (one release), `known_releases()`, `get_release(version)`, `newest()`,
`resolve_release(requested, detected)` (the release every phase follows, and why).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tileiropt.errors import UserError

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

RELEASES_ENV = "TILEIROPT_RELEASES"
BUNDLED = Path(__file__).parent
STATUSES = ("supported", "partial", "unsupported")
SEVERITIES = ("error", "warning", "perf")  # the lint's (tileiropt.classify.rules.base.SEVERITIES)
NUM_WARPS_MEANINGS = ("ignored", "hint")

# Every feature a release file must rate; rules and the IR check look them up by these names.
FEATURES = {
    "inline_asm": "tl.inline_asm_elementwise (tt.elementwise_inline_asm)",
    "gather": "tl.gather (tt.gather)",
    "dot_scaled": "tl.dot_scaled (tt.dot_scaled)",
    "extern_elementwise": "libdevice / extern calls (tt.extern_elementwise)",
    "map_elementwise": "tl.map_elementwise (tt.map_elementwise)",
    "unsplat": "a one-element tensor to a scalar (tt.unsplat)",
    "erf": "erf (math.erf)",
    "histogram": "tl.histogram (tt.histogram)",
    "atomic_rmw_16bit": "atomic read-modify-write on bfloat16 / float16 (tt.atomic_rmw)",
    "atomic_cas_16bit": "atomic compare-and-swap on float16/bfloat16 (tt.atomic_cas)",
    "rtz_downcast": "round-toward-zero float downcast (fp_downcast_rounding='rtz')",
    "tma_gather_scatter": "TMA gather/scatter on a tensor descriptor (tt.descriptor_gather/_scatter)",
    "tma_reduce": "TMA reduce on a tensor descriptor (tt.descriptor_reduce)",
    "tma_padding": "a non-zero TMA padding value",
    "i64_descriptor_coordinates": "64-bit tensor-descriptor coordinates",
    "block_pointer": "block pointers (tl.make_block_ptr / tl.advance)",
    "unstructured_control_flow": "unstructured control flow (cf.br / cf.cond_br, e.g. an early return)",
    "noinline": "noinline JIT functions (@triton.jit(noinline=True))",
}


@dataclass(frozen=True)
class Feature:
    status: str  # "supported" | "partial" | "unsupported"
    note: str = ""
    options: dict[str, Any] = field(default_factory=dict)  # e.g. mapped_symbols, supported_kinds, severity

    def items(self, key: str) -> list[str]:
        return [str(item) for item in self.options.get(key, [])]

    @property
    def severity(self) -> str | None:
        """The severity of a use the lint cannot decide more closely ("perf": it runs, emulated and slow);
        None: the rule's own."""
        value = self.options.get("severity")
        return str(value) if value is not None else None


@dataclass(frozen=True)
class Change:
    """Something a release adds that no lint feature rates (a new target, a new op), with its source."""

    what: str
    source: str


@dataclass(frozen=True)
class Release:
    version: str  # "13.4"
    title: str
    sources: list[str]
    architectures: list[str]  # what this release's tileiras compiles for ("sm_90", "sm_100", ...)
    validated: list[str]  # what the Triton fork on this release is validated on
    occupancy: tuple[int, int]  # accepted range of the occupancy hint
    num_warps: str  # "ignored" | "hint"
    num_warps_note: str
    exp_to_exp2: bool  # does `tl.exp` need the exp2 rewrite to run fast
    fallback_variable: str | None  # the variable that turns runtime fallback to PTX on; None: no fallback
    fallback_note: str
    approx_variable: str
    ftz_variable: str
    features: dict[str, Feature]
    path: str  # the file it was read from
    inherits: str | None = None  # the release this file starts from
    changes: tuple[Change, ...] = ()  # what this release adds (its own file only)
    # the occupancy a kernel launched with fixed options gets at its launch, by kernel class (none: no hint)
    launch_occupancy: tuple[tuple[str, int], ...] = ()

    def launch_hint(self, kernel_class: str) -> int | None:
        """The occupancy a fixed launch of a `kernel_class` kernel gets under the gate; None: TileIR's default."""
        value = dict(self.launch_occupancy).get(kernel_class)
        return value if value is not None and value > 1 and self.clamp_occupancy([value]) else None

    @property
    def key(self) -> tuple[int, ...]:
        return version_key(self.version)

    def feature(self, name: str) -> Feature:
        return self.features[name]

    def status(self, name: str) -> str:
        return self.features[name].status

    def targets(self, capability: str | None) -> bool:
        """True when this release's compiler targets a GPU of `capability` ("9.0")."""
        return capability is not None and f"sm_{capability.replace('.', '')}" in self.architectures

    def label(self) -> str:
        return f"CUDA Tile IR {self.version}"

    def clamp_occupancy(self, values: list[int]) -> list[int]:
        low, high = self.occupancy
        return [v for v in values if low <= v <= high]


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def _error(path: Path, message: str) -> UserError:
    return UserError(message, file=str(path), hint="see tileiropt/releases/13.4.toml for the expected shape")


def _parse(path: Path) -> dict[str, Any]:
    """A release file's TOML, with a well-formed `version` (the key files are merged by)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise _error(path, f"cannot read the release file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise _error(path, f"not valid TOML: {exc}") from None
    version = data.get("version")
    if not isinstance(version, str):
        raise _error(path, "missing key version" if version is None else "version has the wrong type")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", version):
        raise _error(path, f"version must look like 13.4, got {version!r}")
    return data


MERGED_TABLES = ("targets", "tuning", "fallback", "math", "features")


def _inherit(path: Path, data: dict[str, Any], raw: dict[str, tuple[Path, dict[str, Any]]],
             chain: tuple[str, ...] = ()) -> dict[str, Any]:
    """`data` over the release it inherits from (recursively): tables merged one level deep."""
    base_version = data.get("inherits")
    if base_version is None:
        return data
    if not isinstance(base_version, str) or base_version not in raw:
        raise _error(path, f"inherits {base_version!r}, which is not a known release; known: {', '.join(raw)}")
    if base_version in chain or base_version == data["version"]:
        raise _error(path, f"inherits {base_version!r} in a loop ({' -> '.join((*chain, data['version']))})")
    base_path, base_data = raw[base_version]
    base = _inherit(base_path, base_data, raw, (*chain, data["version"]))
    merged = {key: value for key, value in base.items() if key not in ("inherits", "changes", "title", "sources")}
    for key, value in data.items():
        if key in MERGED_TABLES and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _build(path: Path, data: dict[str, Any]) -> Release:
    def need(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
        if key not in table:
            raise _error(path, f"missing key {where}{key}")
        value = table[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise _error(path, f"{where}{key} has the wrong type ({type(value).__name__})")
        return value

    version = need(data, "version", str, "")
    targets = need(data, "targets", dict, "")
    tuning = need(data, "tuning", dict, "")
    fallback = need(data, "fallback", dict, "")
    math = need(data, "math", dict, "")
    occupancy = need(tuning, "occupancy", list, "tuning.")
    if len(occupancy) != 2 or not all(type(v) is int and v >= 1 for v in occupancy) or occupancy[0] > occupancy[1]:
        raise _error(path, f"tuning.occupancy must be [low, high] with 1 <= low <= high, got {occupancy!r}")
    num_warps = need(tuning, "num_warps", str, "tuning.")
    launch_occupancy = tuning.get("launch_occupancy", {})
    if not isinstance(launch_occupancy, dict) or not all(
            type(v) is int and occupancy[0] <= v <= occupancy[1] for v in launch_occupancy.values()):
        raise _error(path, f"tuning.launch_occupancy must map kernel classes to occupancies in {occupancy!r}, "
                           f"got {launch_occupancy!r}")
    if num_warps not in NUM_WARPS_MEANINGS:
        raise _error(path, f"tuning.num_warps must be one of {', '.join(NUM_WARPS_MEANINGS)}, got {num_warps!r}")
    features_table = need(data, "features", dict, "")
    features: dict[str, Feature] = {}
    for name in FEATURES:
        entry = features_table.get(name)
        if entry is None:
            raise _error(path, f"features.{name} is missing (rate every feature: {', '.join(STATUSES)})")
        if isinstance(entry, str):
            entry = {"status": entry}
        if not isinstance(entry, dict):
            raise _error(path, f"features.{name} must be a status string or a table")
        status = entry.get("status")
        if status not in STATUSES:
            raise _error(path, f"features.{name}.status must be one of {', '.join(STATUSES)}, got {status!r}")
        options = {k: v for k, v in entry.items() if k not in ("status", "note")}
        if options.get("severity", "error") not in SEVERITIES:
            raise _error(path, f"features.{name}.severity must be one of {', '.join(SEVERITIES)}, "
                               f"got {options['severity']!r}")
        features[name] = Feature(status=status, note=str(entry.get("note", "")), options=options)
    unknown = sorted(set(features_table) - set(FEATURES))
    if unknown:
        raise _error(path, f"unknown feature(s) {', '.join(unknown)}; known: {', '.join(FEATURES)}")
    variable = fallback.get("variable")
    changes = []
    for index, change in enumerate(data.get("changes", [])):
        if not (isinstance(change, dict) and isinstance(change.get("what"), str)
                and isinstance(change.get("source"), str)):
            raise _error(path, f"changes[{index}] must be a table with `what` and `source` strings")
        changes.append(Change(what=change["what"], source=change["source"]))
    return Release(
        version=version,
        title=str(data.get("title", f"CUDA Tile IR {version}")),
        sources=[str(s) for s in need(data, "sources", list, "")],
        architectures=[str(a) for a in need(targets, "architectures", list, "targets.")],
        validated=[str(a) for a in targets.get("validated", [])],
        occupancy=(occupancy[0], occupancy[1]),
        num_warps=num_warps,
        num_warps_note=str(tuning.get("num_warps_note", "")),
        exp_to_exp2=bool(need(tuning, "exp_to_exp2", bool, "tuning.")),
        fallback_variable=str(variable) if variable else None,
        fallback_note=str(fallback.get("note", "")),
        approx_variable=str(math.get("approx", "TILEIR_ENABLE_APPROX")),
        ftz_variable=str(math.get("ftz", "TILEIR_ENABLE_FTZ")),
        features=features,
        path=str(path),
        inherits=str(data["inherits"]) if data.get("inherits") else None,
        changes=tuple(changes),
        launch_occupancy=tuple(sorted((str(k), int(v)) for k, v in launch_occupancy.items())),
    )


def _folders(env: dict[str, str] | os._Environ) -> list[Path]:
    extra = [Path(p) for p in env.get(RELEASES_ENV, "").split(os.pathsep) if p.strip()]
    for folder in extra:
        if not folder.is_dir():
            raise UserError(f"{RELEASES_ENV} names {folder}, which is not a folder",
                            hint="point it at a folder of release TOML files, or unset it")
    return [BUNDLED, *extra]


@functools.lru_cache(maxsize=8)
def _load(folders: tuple[Path, ...]) -> dict[str, Release]:
    raw: dict[str, tuple[Path, dict[str, Any]]] = {}
    for folder in folders:
        for path in sorted(folder.glob("*.toml")):
            data = _parse(path)
            raw[data["version"]] = (path, data)  # a later folder's file replaces an earlier one's
    releases = {version: _build(path, _inherit(path, data, raw)) for version, (path, data) in raw.items()}
    return dict(sorted(releases.items(), key=lambda item: version_key(item[0])))


def known_releases() -> dict[str, Release]:
    """Every known release, oldest first: the bundled files, then the user's (`TILEIROPT_RELEASES`)."""
    return _load(tuple(_folders(os.environ)))


def newest() -> Release:
    return list(known_releases().values())[-1]


def get_release(version: str) -> Release:
    """The release named `version` ("13.4"); a one-line error listing the known ones otherwise."""
    releases = known_releases()
    text = str(version).strip()
    if text in releases:
        return releases[text]
    raise UserError(f"unknown CUDA Tile IR release {text!r}; known: {', '.join(releases)}",
                    hint=f"pick a known release, or describe it in a TOML file in a folder named by {RELEASES_ENV}")


def nearest_release(version: str) -> Release | None:
    """The newest known release not newer than `version` (a detected 13.3 follows 13.1); None when older."""
    wanted = version_key(version)
    fitting = [r for r in known_releases().values() if r.key[:2] <= wanted[:2]]
    return fitting[-1] if fitting else None


@dataclass(frozen=True)
class Choice:
    release: Release
    origin: str  # "requested" | "project" | "detected (...)" | "newest known"

    def describe(self) -> str:
        return f"{self.release.label()} ({self.origin})"


def resolve_release(requested: str | None = None, detected: str | None = None,
                    detected_via: str = "detected") -> Choice:
    """The release a command follows: the one asked for, else the detected one, else the newest known."""
    if requested:
        return Choice(get_release(requested), "requested")
    if detected:
        release = nearest_release(detected)
        if release is not None:
            exact = release.version == ".".join(str(p) for p in version_key(detected)[:2])
            origin = f"{detected_via} {detected}" + ("" if exact else f", following {release.version}")
            return Choice(release, origin)
    return Choice(newest(), "newest known; none detected")
