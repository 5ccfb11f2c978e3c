"""Lint settings from the files around the code: `[tool.tileiropt]` in pyproject.toml, and the release a
project file (tileiropt.toml) names.

As ruff does, each file takes the nearest pyproject.toml above it that has a `[tool.tileiropt]` table
(a pyproject.toml without one is passed over):

    [tool.tileiropt]
    select = ["TIR0", "TIR1"]            # codes or prefixes (default: every rule)
    ignore = ["TIR202"]
    per-file-ignores = { "tests/*" = ["TIR101"], "legacy.py" = ["TIR0"] }   # globs from that folder
    tileir_version = "13.4"

Rule selection is layered as ruff layers it: the file's `select` (when given) picks the rules and its
`ignore` drops some; then the command line's `--select` (when given) picks again from every rule and
its `--ignore` drops more; `per-file-ignores` drop the rules it names for the files it matches.
The release: `--tileir-version`, else `[project] tileir_version` of the nearest tileiropt.toml, else
`tileir_version` here, else the detected one; files that ask for different releases are bad input
(one release per run).
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tileiropt.classify.rules import ALL_RULES, Rule, select_rules
from tileiropt.errors import UserError
from tileiropt.releases import get_release

T = TypeVar("T")

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

TABLE = "tool.tileiropt"
KEYS = ("select", "ignore", "per-file-ignores", "tileir_version")


@dataclass(frozen=True)
class PyprojectConfig:
    """One `[tool.tileiropt]` table (path None: none was found, every default)."""

    path: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    tileir_version: str | None = None

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path is not None else None

    def ignored_for(self, file: Path) -> list[str]:
        """The codes `per-file-ignores` drops for `file`."""
        if self.folder is None or not self.per_file_ignores:
            return []
        resolved = file.resolve()
        try:
            relative = resolved.relative_to(self.folder).as_posix()
        except ValueError:
            relative = resolved.as_posix()
        return [code for pattern, codes in self.per_file_ignores if _glob_matches(pattern, relative, resolved.name)
                for code in codes]


def _glob_matches(pattern: str, relative: str, name: str) -> bool:
    """A per-file-ignores glob against a path relative to the config's folder; a glob without `/` also
    matches the file name alone (`"test_*.py"` anywhere below)."""
    return fnmatch.fnmatch(relative, pattern) or ("/" not in pattern and fnmatch.fnmatch(name, pattern))


def _matches(rule: Rule, prefixes: Iterable[str]) -> bool:
    return any(rule.code.startswith(prefix) for prefix in prefixes)


def _error(path: Path, key: str, message: str) -> UserError:
    return UserError(f"[{TABLE}] {key}: {message}", file=str(path),
                     hint="see docs/linting.md for the keys (select, ignore, per-file-ignores, tileir_version)")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read: {exc}", file=str(path), hint="fix or remove the file") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"not valid TOML: {exc}", file=str(path), hint="fix the TOML syntax") from None


def _codes(path: Path, key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _error(path, key, f"must be a list of rule codes or prefixes, got {value!r}")
    for code in value:
        if not any(rule.code.startswith(code.strip().upper()) for rule in ALL_RULES) or not code.strip():
            raise _error(path, key, f"no lint rule matches {code!r} (codes look like TIR001, prefixes like TIR0)")
    return tuple(code.strip().upper() for code in value)


def parse_pyproject(path: Path) -> PyprojectConfig | None:
    """The `[tool.tileiropt]` table of a pyproject.toml; None when it has none."""
    table = _read_toml(path).get("tool", {}).get("tileiropt")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise _error(path, "", "must be a table")
    unknown = sorted(set(table) - set(KEYS) - {"per_file_ignores"})
    if unknown:
        raise _error(path, unknown[0], f"unknown key; known: {', '.join(KEYS)}")
    per_file = table.get("per-file-ignores", table.get("per_file_ignores", {}))
    if not isinstance(per_file, dict):
        raise _error(path, "per-file-ignores", "must be a table of glob = [codes]")
    version = table.get("tileir_version")
    if version is not None:

        if not isinstance(version, str):
            raise _error(path, "tileir_version", f"must be a release string like \"13.4\", got {version!r}")
        try:
            get_release(version)
        except UserError as exc:
            raise _error(path, "tileir_version", exc.message) from None
    return PyprojectConfig(
        path=path.resolve(),
        select=_codes(path, "select", table["select"]) if "select" in table else None,
        ignore=_codes(path, "ignore", table.get("ignore", [])),
        per_file_ignores=tuple((str(glob), _codes(path, f"per-file-ignores.{glob!r}", codes))
                               for glob, codes in per_file.items()),
        tileir_version=version,
    )


def project_release(path: Path) -> str | None:
    """`[project] tileir_version` of a tileiropt.toml (the whole file is checked by the commands that run it)."""
    version = _read_toml(path).get("project", {}).get("tileir_version")
    if version is not None and not isinstance(version, str):
        raise UserError(f"[project.tileir_version] must be a release string like \"13.4\", got {version!r}",
                        file=str(path))
    return version


@functools.lru_cache(maxsize=512)
def _pyproject_in(folder: Path) -> PyprojectConfig | None:
    candidate = folder / "pyproject.toml"
    return parse_pyproject(candidate) if candidate.is_file() else None


@functools.lru_cache(maxsize=512)
def _project_in(folder: Path) -> tuple[str, Path] | None:
    candidate = folder / "tileiropt.toml"
    if not candidate.is_file():
        return None
    version = project_release(candidate)
    return (version, candidate) if version else None


def _walk_up(start: Path, look: Callable[[Path], T | None]) -> T | None:
    folder = start.resolve()
    folder = folder if folder.is_dir() else folder.parent
    for candidate in (folder, *folder.parents):
        found = look(candidate)
        if found is not None:
            return found
    return None


def nearest_pyproject(path: Path) -> PyprojectConfig:
    """The `[tool.tileiropt]` table that governs `path` (a file or folder); an empty one when none does."""
    return _walk_up(path, _pyproject_in) or PyprojectConfig()


def nearest_project_release(path: Path) -> tuple[str, Path] | None:
    """(tileir_version, tileiropt.toml) of the nearest project file above `path` that names a release."""
    return _walk_up(path, _project_in)


def forget_cached_files() -> None:
    """Read the files again on the next call (they may have changed: tests, long-lived processes)."""
    _pyproject_in.cache_clear()
    _project_in.cache_clear()


@dataclass
class LintSettings:
    """The settings of one classify run: per file, the rules; for the run, the release asked for."""

    select: list[str] | None = None  # the command line's
    ignore: list[str] | None = None
    tileir_version: str | None = None
    _rules: dict[tuple[Any, ...], list[Rule]] = field(default_factory=dict)

    def config_for(self, file: Path) -> PyprojectConfig:
        return nearest_pyproject(file)

    def __post_init__(self) -> None:
        select_rules(ALL_RULES, self.select, self.ignore)  # unknown codes on the command line: bad input now
        self.select = [code.strip().upper() for code in self.select or [] if code.strip()] or None
        self.ignore = [code.strip().upper() for code in self.ignore or [] if code.strip()]

    def rules_for(self, file: Path) -> list[Rule]:
        """The file's pyproject layer, then the command line's, then its per-file-ignores (see the module)."""
        config = self.config_for(file)
        per_file = tuple(config.ignored_for(file))
        key = (config.path, per_file)
        if key not in self._rules:
            chosen = [r for r in ALL_RULES if config.select is None or _matches(r, config.select)]
            chosen = [r for r in chosen if not _matches(r, config.ignore)]
            if self.select:
                chosen = [r for r in ALL_RULES if _matches(r, self.select)]
            self._rules[key] = [r for r in chosen if not _matches(r, [*(self.ignore or []), *per_file])]
        return self._rules[key]

    def release_for(self, files: list[Path]) -> tuple[str, str] | None:
        """(release, the file that names it) the files ask for; None: none does. The command line's is not
        looked at here. A one-line error when the files ask for different releases."""
        asked: dict[str, str] = {}
        for file in files:
            project = nearest_project_release(file)
            if project is not None:
                asked.setdefault(project[0], str(project[1]))
                continue
            config = self.config_for(file)
            if config.tileir_version:
                asked.setdefault(config.tileir_version, f"{config.path} [{TABLE}]")
        if len(asked) > 1:
            raise UserError("the files ask for different CUDA Tile IR releases: "
                            + "; ".join(f"{version} ({where})" for version, where in sorted(asked.items())),
                            hint="one release per run: pass --tileir-version, or classify them separately")
        return next(iter(asked.items()), None)
