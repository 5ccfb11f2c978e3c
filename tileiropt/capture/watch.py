"""What the tool sees of a captured program while it runs: the launch files its processes write (one per process,
`capture_hook.launches_file`), merged into one list of distinct launches; its launch counts; its output's last
line; and, when it is stuck or cut, every thread's stack of every process that loaded the recorder.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tileiropt.capture import hook
from tileiropt.capture.keys import KernelKey
from tileiropt.capture.program_failure import _innermost_own, _library_paths
from tileiropt.project.launch import CapturedLaunch

_LAUNCHES = re.compile(r"^launches-(\d+)\.jsonl$")
_STACK_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)')
STACK_LINES = 60  # of each process's stacks kept in the record


@dataclass
class _ProcessFile:
    offset: int = 0
    partial: bytes = b""
    launches: dict[str, int] = field(default_factory=dict)  # its latest counts
    outside: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class ProgramWatch:
    """Reads the program's launch files as they grow (`poll`); merges what every process recorded."""

    folder: Path
    cap: int
    files: dict[int, _ProcessFile] = field(default_factory=dict)  # pid -> what was read of its file
    launches: list[CapturedLaunch] = field(default_factory=list)  # distinct launches, in order, `cap` per kernel
    signatures: dict[str, set[str]] = field(default_factory=dict)
    stopped: str = ""  # a process ended the program: every kernel of a kernel file's own run captured
    sources: set[str] = field(default_factory=set)  # every process that finished lists its imported files
    finished: set[int] = field(default_factory=set)  # pids that wrote their last line (they have exited)

    def poll(self) -> bool:
        """Read what was written since the last poll; whether anything was."""
        grew = False
        for path in self.folder.iterdir():
            match = _LAUNCHES.match(path.name)
            if match is None:
                continue
            state = self.files.setdefault(int(match[1]), _ProcessFile())
            try:
                with open(path, "rb") as handle:
                    handle.seek(state.offset)
                    data = handle.read()
            except OSError:
                continue
            if not data:
                continue
            grew = True
            state.offset += len(data)
            lines = (state.partial + data).split(b"\n")
            state.partial = lines.pop()  # a line still being written
            for raw in lines:
                if self._take(state, raw):
                    self.finished.add(int(match[1]))
        return grew

    def _take(self, state: _ProcessFile, raw: bytes) -> bool:
        """Take one line; whether it was its process's last (it finished, or ended the program)."""
        try:
            item = json.loads(raw)
        except ValueError:
            return False  # a line cut by the program's end
        if "kernel" in item:
            try:
                launch = CapturedLaunch.from_json(item)
            except (TypeError, ValueError):  # LaunchFormatError among them
                return False  # not what the recorder writes: no launch to replay
            key = str(KernelKey.of(launch))
            seen = self.signatures.setdefault(key, set())
            signature = launch.signature if launch.signature is not None else str(len(seen))
            if signature not in seen and len(seen) < self.cap:
                seen.add(signature)
                self.launches.append(replace(launch, signature=None))
            return False
        counts = item.get("status", item)
        state.launches = dict(counts.get("launches") or state.launches)
        state.outside = dict(counts.get("outside") or state.outside)
        self.sources.update(item.get("sources") or [])
        if "stopped" in item:
            self.stopped = str(item["stopped"])
        return "stopped" in item or "finished" in item

    # what the processes counted -----------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """`kernel@file` -> launches seen by every process (duplicates included)."""
        total: dict[str, int] = {}
        for state in self.files.values():
            for key, count in state.launches.items():
                total[key] = total.get(key, 0) + int(count)
        for launch in self.launches:  # a launch written before its process's first counts
            total.setdefault(str(KernelKey.of(launch)), 1)
        return total

    def outside(self) -> dict[str, dict[str, Any]]:
        """Kernels launched that no target file defines, with where they were defined and their launches."""
        merged: dict[str, dict[str, Any]] = {}
        for state in self.files.values():
            for key, item in state.outside.items():
                entry = merged.setdefault(key, {**item, "launches": 0})
                entry["launches"] += int(item.get("launches", 0))
        return dict(sorted(merged.items()))

    @property
    def pids(self) -> list[int]:
        return sorted(self.files)

    # where the program is -------------------------------------------------------------------------
    def stacks(self, main_pid: int, wait: float = 2.0) -> dict[str, str]:
        """Every thread's stack of every process of the program (its process group, `main_pid`) that loaded the
        recorder and has not finished (faulthandler, on STACKS_SIGNAL): pid -> text, the program's own process
        first. A pid that finished, or is now another program's, is never signalled."""
        self.poll()
        pids = []
        for pid in sorted(set(self.files) - self.finished, key=lambda pid: pid != main_pid):
            try:
                if os.getpgid(pid) != main_pid:
                    continue  # it exited and its pid is another program's now
            except (ProcessLookupError, PermissionError):
                continue
            pids.append(pid)
        sizes = {}
        for pid in list(pids):
            path = Path(hook.stacks_file(str(self.folder), pid))
            sizes[pid] = path.stat().st_size if path.exists() else 0
            try:
                os.kill(pid, hook.STACKS_SIGNAL)
            except (ProcessLookupError, PermissionError):
                pids.remove(pid)
        deadline = time.monotonic() + wait
        texts: dict[str, str] = {}
        for pid in pids:
            path = Path(hook.stacks_file(str(self.folder), pid))
            while time.monotonic() < deadline and (not path.exists() or path.stat().st_size <= sizes[pid]):
                time.sleep(0.05)
            time.sleep(0.05)  # the dump is written thread by thread
            try:
                text = path.read_bytes()[sizes[pid]:].decode("utf-8", "replace").strip()
            except OSError:
                continue
            if text:
                texts[str(pid)] = _current_thread_first(text)
        return texts


def _current_thread_first(text: str) -> str:
    """The interrupted ("Current") thread's block first, then the others, cut to STACK_LINES lines."""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
    blocks.sort(key=lambda block: not block.startswith("Current thread"))
    return "\n".join("\n".join(blocks).splitlines()[:STACK_LINES])


def stuck_at(stacks: dict[str, str], cwd: str | None) -> str:
    """Where the program was, from its stacks: the innermost frame of each process's interrupted ("Current")
    thread in the user's own code (`file:line in function`); the first process with one (a pytest-xdist worker in
    a test rather than its controller waiting on it), else the first process's innermost frame."""
    places = []
    libraries = _library_paths()
    for text in stacks.values():
        blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text)
        current = next((b for b in blocks if b.startswith("Current thread")), blocks[0] if blocks else "")
        frames = [m for m in (_STACK_FRAME.match(line) for line in current.splitlines()) if m]
        own = [m for m in frames if not m["file"].startswith("<")
               and not os.path.realpath(os.path.join(cwd or "", m["file"])).startswith(libraries)]
        if own:
            return f"{_innermost_own([(own[0]['file'], own[0]['line'])], cwd)} in {own[0]['function']}"
        if frames:
            places.append(f"{_innermost_own([(frames[0]['file'], frames[0]['line'])], cwd)} in {frames[0]['function']}")
    return places[0] if places else ""


def last_line(output: Path) -> str:
    """The program's last non-empty output line (its end only is read), for the progress line."""
    try:
        with open(output, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in re.split(r"[\r\n]", tail) if line.strip()]
    return lines[-1][-160:] if lines else ""

