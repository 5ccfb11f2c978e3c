"""classify of a library's files that no captured launch needs, beside the later phases.

A library run validates the launched kernels only; the other files of the library are classified for the
report (the library's kernels by class, its lint) and need not hold validation up. `BackgroundClassify` classifies
them in a thread of its own (on many files, in worker processes, one a core: validation's workers wait on the GPU
most of the time) while apply, validate and bench go on; `join` waits for their results.
"""

from __future__ import annotations

import threading
from pathlib import Path

from tileiropt.classify.classify import FileResult, classify_paths
from tileiropt.classify.model import FileModels
from tileiropt.releases import Release


class BackgroundClassify:
    """`classify_paths(paths)` in a thread, started at once; `join` gives them after `first` (the results of the
    files classified before them), and `inputs` keys the whole record."""

    def __init__(self, paths: list[Path], release: Release, first: list[FileResult], inputs: str):
        self.first = first
        self.inputs = inputs
        self._results: list[FileResult] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(paths, release), name="tileiropt-classify",
                                        daemon=True)
        self._thread.start()

    def _run(self, paths: list[Path], release: Release) -> None:
        try:  # its own file models: the run's are apply's, in the main thread; no launch says their dtypes
            self._results = classify_paths(paths, release=release, dtypes=None, models=FileModels())
        except BaseException as exc:  # raised again in the thread that joins
            self._error = exc

    def join(self) -> list[FileResult]:
        """`first`, then the results of `paths` in order, once every one is classified."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self.first + self._results
