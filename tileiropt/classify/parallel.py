"""Classifying many files at once: worker processes, started only where enough files need classifying."""

from __future__ import annotations

import atexit
import concurrent.futures
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tileiropt.classify.ir import interpreter_off
from tileiropt.classify.ir.sandbox import Registry
from tileiropt.classify.lint_cache import file_result
from tileiropt.classify.rules import ALL_RULES
from tileiropt.classify.rules.base import Rule
from tileiropt.releases import Release, get_release

if TYPE_CHECKING:
    from tileiropt.classify.classify import FileResult


PARALLEL_FILES = 24  # fewer files than this to classify are classified in this process (a worker costs a start)
FILES_PER_WORKER = 8  # at least this many files in all for each worker process
FILES_PER_JOB = 4  # files a worker takes at once
MAX_JOBS = 16


class Workers:
    """Worker processes, started once `PARALLEL_FILES` files need classifying (never for an unchanged re-run): at
    most `jobs`, and no more than one per `FILES_PER_WORKER` of the files that may need it; each takes
    `FILES_PER_JOB` files at a time. `jobs` < 2: none. Where `TRITON_INTERPRET` is on in this process and the IR
    check runs (`isolated`), every file goes to the workers, one at least, which drop the variable before they
    import Triton (`interpreter_off`): the IR check never lowers through the interpreter."""

    def __init__(self, release: Release, ir: bool, dtypes: list[str] | None, jobs: int):
        self.release, self.ir, self.dtypes, self.jobs = release, ir, dtypes, jobs
        self.isolated = ir and interpreter_off.on()
        self.pool: concurrent.futures.ProcessPoolExecutor | None = None
        self.sent: list[tuple[list[Path], concurrent.futures.Future[list[dict[str, Any]]]]] = []

    def offer(self, todo: list[Path], codes: dict[Path, list[str]], unread: int) -> None:
        """Send the files of `todo` to the workers, a job's worth at a time (all once no file is `unread`: the
        files whose cache key is still to be read), once there are enough of them (any, when `isolated`); what
        is sent leaves `todo`."""
        if self.pool is None:
            jobs = min(self.jobs, (len(todo) + unread) // FILES_PER_WORKER)
            if self.isolated:
                jobs = max(jobs, 1)
                if not todo:
                    return
            elif jobs < 2 or len(todo) < PARALLEL_FILES:
                return
            import multiprocessing

            context = multiprocessing.get_context("spawn")  # no fork of a process that may hold Triton's threads
            self.pool = concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                                                               initializer=_start_worker)
        while len(todo) >= FILES_PER_JOB or (not unread and todo):
            chunk, todo[:] = todo[:FILES_PER_JOB], todo[FILES_PER_JOB:]
            job = ([(str(p), codes[p]) for p in chunk], self.release.version, self.ir, self.dtypes)
            self.sent.append((chunk, self.pool.submit(_classify_chunk, job)))

    def results(self) -> dict[Path, FileResult]:
        return {path: file_result(data) for chunk, future in self.sent for path, data in zip(chunk, future.result())}

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


def _start_worker() -> None:
    """A worker's first act, before it imports Triton: `TRITON_INTERPRET` dropped (its IR check lowers with Triton's
    front end, see `interpreter_off`); and it ends without tearing its heap down object by object (a second or more
    with Triton's lowered modules in it): its results are sent before it exits, and the system frees its memory."""
    interpreter_off.drop()
    atexit.register(os._exit, 0)


def rules_of(codes: list[str]) -> list[Rule]:
    wanted = set(codes)
    return [rule for rule in ALL_RULES if rule.code in wanted]


_REGISTRIES: dict[tuple[str, bool, tuple[str, ...] | None], Registry] = {}  # a worker's, kept across its jobs


def _classify_chunk(job: tuple[list[tuple[str, list[str]]], str, bool, list[str] | None]) -> list[dict[str, Any]]:
    """A job of a worker: its files with their rule codes (see `Workers`), as JSON; one registry for the worker's
    jobs of one release and dtypes."""
    files, version, ir, dtypes = job
    from tileiropt.classify.classify import IROptions

    key = (version, ir, tuple(dtypes) if dtypes is not None else None)
    options = IROptions(registry=_REGISTRIES.setdefault(key, Registry()), dtypes=dtypes) if ir else None
    from tileiropt.classify.classify import IROptions, classify_file  # the worker's own import: that module uses this

    release = get_release(version)
    return [classify_file(Path(path), rules=rules_of(codes), release=release, ir=options).to_json()
            for path, codes in files]
