"""Records written as they finish, and re-runs that reuse what did not change.

Every finished record is appended at once to a journal beside the records file
(``<artifacts>/validate.journal.jsonl``, ``bench.journal.jsonl``): a crash or an interrupt loses
nothing finished. Saving the records file supersedes the journal (it is removed).

Each unit of work (a validation case, a bench row) has an *input key*: a digest of everything its
result depends on -- the job as sent to the worker, the backend, the SHA-256 of the files it runs
(original and optimized), the tool's own source, Triton's and torch's versions, the GPU. A re-run
reuses the earlier result of a key that finished without an error (from the records file and the
journal); `--fresh` redoes everything.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from tileiropt.contract.store import JOURNAL_MARK, clear_journal, journal_path
from tileiropt.output import to_jsonable


@functools.cache
def tool_digest() -> str:
    """SHA-256 over the tool's own Python sources: a changed tool reruns everything."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# What a capture observed in a tensor's memory, not what the program gave it: `nonnegative` of an output buffer
# from torch.empty() is whatever the allocator left there. It never decides whether a result can be reused.
VOLATILE_KEYS = frozenset({"nonnegative"})


def _stable(value: object) -> object:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    return value


def input_key(parts: dict[str, Any]) -> str:
    """A short digest of `parts` (JSON-able; key order does not matter; volatile observations left out)."""
    text = json.dumps(_stable(to_jsonable(parts)), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Journal:
    """An append-only JSON Lines file of finished results (thread-safe; each line flushed at once)."""

    def __init__(self, artifacts: Path | str, name: str):
        self.path = journal_path(artifacts, name)
        self.lock = threading.Lock()
        self.failed: str | None = None  # why it could not be written (the run goes on without it)

    def append(self, kind: str, data: object) -> None:
        line = json.dumps({"journal": JOURNAL_MARK, kind: to_jsonable(data)}) + "\n"
        with self.lock:
            if self.failed:
                return
            try:
                if self.path.is_symlink():
                    raise OSError(f"{self.path} is a symbolic link")
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as handle:
                    handle.write(line)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:
                self.failed = str(exc)

    def clear(self) -> None:
        with self.lock:
            clear_journal(self.path.parent, self.path.name.removesuffix(".journal.jsonl"))


def read_journal(artifacts: Path | str, name: str) -> list[dict[str, Any]]:
    """The journal's entries, in order; a torn last line (a crash mid-write) or a foreign line is skipped."""
    path = journal_path(artifacts, name)
    entries: list[dict[str, Any]] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return entries
    for line in lines:
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(entry, dict) and entry.get("journal") == JOURNAL_MARK:
            entries.append(entry)
    return entries


R = TypeVar("R")


@dataclass
class Earlier(Generic[R]):
    """Results of earlier runs by input key: what a re-run may reuse."""

    results: dict[str, list[R]] = field(default_factory=dict)  # key -> its records or rows
    complete: set[str] = field(default_factory=set)  # keys whose work finished (not cut by a crash)
    source: str = ""  # which run they came from, for the notes

    def add(self, key: str | None, result: R, done: bool = True) -> None:
        if not key:
            return
        self.results.setdefault(key, []).append(result)
        if done:
            self.complete.add(key)

    def reusable(self, key: str, failed: Callable[[R], bool]) -> list[R] | None:
        """The earlier results of `key` when it finished and none of them `failed(result)`; else None."""
        found = self.results.get(key)
        if not found or key not in self.complete or any(failed(r) for r in found):
            return None
        return found
