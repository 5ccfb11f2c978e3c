"""Progress of a long validate or bench: counts and an estimate on a terminal, a line per kernel in a pipe.

Work is counted in units (validation cases, bench rows) planned per kernel. On a terminal one status line
is kept up to date ("validate: 37/120 cases, 4/31 kernels, 1m12s, about 2m50s left"); when stderr is a
pipe or a file, one line is written per kernel as it finishes, with the same counts, so a CI log shows
where a long run is. Units reused from an earlier run count as done but not toward the rate.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console


def duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Thread-safe; `plan` first, then `record` per result and `finished` per unit."""

    def __init__(self, phase: str, unit: str, console: Console, tty: bool | None = None,
                 on_status: Callable[[str], None] | None = None):
        """`on_status`: on a terminal, where the status line goes (default: a status line of its own)."""
        self.phase, self.unit, self.console = phase, unit, console
        self.tty = console.is_terminal if tty is None else tty
        self.on_status = on_status
        self.lock = threading.Lock()
        self.left: dict[str, int] = {}
        self.total = self.done = self.reused = 0
        self.statuses: dict[str, Counter] = {}
        self.started = time.monotonic()
        self.status: Any = None
        self.lines: list[str] = []  # what was written in a pipe (kept for tests)

    # ------------------------------------------------------------------ events

    def plan(self, units: dict[str, int]) -> None:
        with self.lock:
            for kernel, count in units.items():
                self.left[kernel] = self.left.get(kernel, 0) + count
                self.total += count
            if self.tty and self.on_status is not None:
                self.on_status(self.summary())
            elif self.tty and self.status is None and self.total:
                self.status = self.console.status(self.summary())
                self.status.start()

    def record(self, kernel: str, status: str) -> None:
        with self.lock:
            self.statuses.setdefault(kernel, Counter())[status] += 1

    def finished(self, kernel: str, reused: bool = False) -> None:
        with self.lock:
            self.done += 1
            self.reused += reused
            if kernel in self.left:
                self.left[kernel] -= 1
            if self.tty:
                if self.on_status is not None:
                    self.on_status(self.summary())
                elif self.status is not None:
                    self.status.update(self.summary())
            elif self.left.get(kernel) == 0:
                counts = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.get(kernel, Counter()).items()))
                line = f"{self.phase}: {kernel} done" + (f": {counts}" if counts else "") + f" [{self.summary()}]"
                self.lines.append(line)
                self.console.print(line, markup=False, highlight=False, soft_wrap=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self.lock:
            if self.status is not None:
                self.status.stop()
                self.status = None

    # ------------------------------------------------------------------ text

    def say_interrupted(self, count: int, what: str, saved: Path) -> None:
        """The line after Ctrl-C or SIGTERM: what finished was saved, and how to go on."""
        self.console.print(f"interrupted: {count} {what} that finished saved to {saved}; run "
                           "again to go on from there (finished ones are reused)", markup=False, soft_wrap=True)

    def summary(self) -> str:
        kernels_done = sum(1 for left in self.left.values() if left <= 0)
        elapsed = time.monotonic() - self.started
        text = (f"{self.phase}: {self.done}/{self.total} {self.unit}, {kernels_done}/{len(self.left)} kernels, "
                f"{duration(elapsed)}")
        ran = self.done - self.reused
        if 0 < ran and self.done < self.total:
            text += f", about {duration(elapsed / ran * (self.total - self.done))} left"
        return text


def phase_progress(phase: str, unit: str, console: Console | None,
                   on_event: Callable[[str, str], None]) -> Progress | None:
    """A phase's progress on `console` (None: none, only the phase's events), its status line through the phase's
    events (`on_event(phase, text)`)."""
    if console is None:
        return None
    return Progress(phase, unit, console, on_status=lambda text: on_event(phase, text))
