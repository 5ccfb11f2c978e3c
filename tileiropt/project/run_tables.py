"""The project file's run tables: `[executor]` (where the workers run) and `[project]`'s capture keys (the command a
run captures, its library folder and limits), each checked as it is read (exit 2 naming the key)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tileiropt.engine.executors import EXECUTORS, Executor
from tileiropt.errors import MAX_SECONDS, UserError, check_seconds
from tileiropt.project.library import library_files
from tileiropt.project.model import DEFAULT_STALL_S, CaptureRequest
from tileiropt.project.where import Where, parse_command, unknown_keys

_EXECUTOR_KEYS = {"kind", "gpus", "partition", "time", "gpus_per_task", "tasks", "srun_args"}


def executor_table(table: object, where: Where) -> Any:
    """`[executor] kind = "slurm"`, `partition`, `time`, `gpus_per_task`, `tasks`, `srun_args`; or `gpus` for
    this host. Checked here (exit 2 naming the key); whether srun exists is checked when it is used."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise where.error("executor", "must be a table")
    unknown_keys(table, _EXECUTOR_KEYS, where, "executor")
    kind = table.get("kind", "local")
    if kind not in EXECUTORS:
        raise where.error("executor.kind", f"unknown executor {kind!r}", f"use one of {', '.join(EXECUTORS)}")
    for key in ("partition", "time"):
        if key in table and not (isinstance(table[key], str) and table[key].strip()):
            raise where.error(f"executor.{key}", f"must be a non-empty string, got {table[key]!r}")
    for key, low, high in (("tasks", 1, 4096), ("gpus_per_task", 0, 64)):
        value = table.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
            raise where.error(f"executor.{key}", f"must be an integer in [{low}, {high}], got {value!r}")
    for key in ("srun_args", "gpus"):
        value = table.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value)):
            raise where.error(f"executor.{key}", f"must be a list of strings, got {value!r}")
    return Executor(kind=kind, gpus=[str(g) for g in table["gpus"]] if "gpus" in table else None,
                    partition=table.get("partition"), time=table.get("time"),
                    gpus_per_task=table.get("gpus_per_task"), tasks=table.get("tasks", 4),
                    srun_args=[str(a) for a in table.get("srun_args", [])])


def capture_request(project: dict, root: Path, where: Where) -> CaptureRequest | None:
    """`[project] capture = "pytest tests/test_ops.py"` (+ `capture_files`, `capture_budget`, `capture_cap`)."""
    if "capture" not in project:
        for key in ("capture_files", "capture_budget", "capture_stall", "capture_cap", "library", "include",
                    "exclude"):
            if key in project:
                raise where.error(f"project.{key}", "needs `capture`", "add capture = \"<command>\"")
        return None
    command = project["capture"]
    if not isinstance(command, str) or not command.strip():
        raise where.error("project.capture", f"must be a command string, got {command!r}",
                          'e.g. capture = "pytest tests/test_ops.py -k rms"')
    files = project.get("capture_files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise where.error("project.capture_files", "must be a list of kernel file paths")
    paths = [(root / f).resolve() for f in files]
    for path, name in zip(paths, files, strict=True):
        if not path.is_file():
            raise where.error("project.capture_files", f"{name}: kernel file not found",
                              "fix the path (relative to the project file)")
    library = library_table(project, root, where)
    if library is not None:
        paths += [p for p in library.kernel_files if p not in paths]
    budget = project.get("capture_budget")
    stall = project.get("capture_stall", DEFAULT_STALL_S)
    for key, value in (("capture_budget", budget), ("capture_stall", stall)):
        try:
            if value is not None:
                check_seconds(key, value)
        except UserError:
            raise where.error(f"project.{key}", f"must be seconds in (0, {MAX_SECONDS:g}], got {value!r}") \
                from None
    cap = project.get("capture_cap", 3)
    if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= 1000:
        raise where.error("project.capture_cap", f"must be an integer in [1, 1000], got {cap!r}",
                          "the distinct launches kept per kernel, e.g. capture_cap = 6")
    return CaptureRequest(files=paths, command=parse_command(command), cap=cap, stall=float(stall),
                          budget=float(budget) if budget is not None else None,
                          library=library.folder if library is not None else None,
                          made_by_call=library.made_by_call if library is not None else [])


def library_table(project: dict, root: Path, where: Where) -> Any:
    """`library = "src/pkg"` (+ `include`, `exclude` globs): the kernel files of a library folder, or None."""
    if "library" not in project:
        for key in ("include", "exclude"):
            if key in project:
                raise where.error(f"project.{key}", "needs `library`", 'add library = "src/mypkg"')
        return None
    folder = project["library"]
    if not isinstance(folder, str) or not folder.strip():
        raise where.error("project.library", f"must be a folder path, got {folder!r}", 'e.g. library = "src/mypkg"')
    globs = {}
    for key in ("include", "exclude"):
        value = project.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise where.error(f"project.{key}", f"must be a list of globs, got {value!r}", 'e.g. ["ops/*.py"]')
        globs[key] = value
    if not (root / folder).is_dir():
        raise where.error("project.library", f"{folder}: folder not found")
    found = library_files(root / folder, globs["include"] or None, globs["exclude"] or None)
    if not found.kernel_files:
        raise where.error("project.library", f"{folder}: no Python file defines a Triton kernel",
                          "give the folder of the kernel files, or widen `include`")
    return found
