"""classify of a library's files that no captured launch needs, beside the later phases.

A library run validates the launched kernels only; the other files of the library are classified for the
report (the library's kernels by class, its lint) and need not hold validation up. `BackgroundClassify` classifies
them in a thread of its own (on many files, in worker processes, one a core: validation's workers wait on the GPU
most of the time) while apply, validate and bench go on; `join` waits for their results.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tileiropt.classify.classify import FileResult, classify_paths
from tileiropt.classify.model import FileModels
from tileiropt.releases import Release


class BackgroundClassify:
    """`classify_paths(paths)` in a thread, started at once."""

    def __init__(self, paths: list[Path], release: Release, dtypes: list[str] | None):
        self.paths = paths
        self.seconds = 0.0
        self._results: list[FileResult] = []
        self._error: BaseException | None = None
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, args=(release, dtypes), name="tileiropt-classify",
                                        daemon=True)
        self._thread.start()

    def _run(self, release: Release, dtypes: list[str] | None) -> None:
        try:  # its own file models: the run's are apply's, in the main thread
            self._results = classify_paths(self.paths, release=release, dtypes=dtypes, models=FileModels())
        except BaseException as exc:  # raised again in the thread that joins
            self._error = exc
        finally:
            self.seconds = round(time.monotonic() - self._started, 3)

    def join(self) -> list[FileResult]:
        """The results of `paths`, in order, once every one is classified."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._results
