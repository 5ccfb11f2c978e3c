"""Worker processes, shared by validate and bench: start, read events, time out, kill, shut down.

A worker is a subprocess (`python -m <module>`) that reads JSON lines on stdin (its set-up, then one job per
line until its input ends: `tileiropt.run.job_worker`) and writes one JSON event per line on stdout. Each
runs in its own session (its own process group): Ctrl-C in the terminal never reaches it, and `kill()`
ends it with everything it started. Every live worker is registered, so `stop_all()` (on SIGINT/SIGTERM,
see `stopping_on_signals`) ends them all within a moment; once stopping, no runner starts a new worker.

Where a worker runs is the `Launcher`'s business: here, pinned to one GPU (`CUDA_VISIBLE_DEVICES`), or
as a SLURM job step (`tileiropt.engine.executors`).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from tileiropt.cache import cache_dir
from tileiropt.harness.backends import Backend, backend_env
from tileiropt.harness.blame import STDERR_KEPT, Death
from tileiropt.harness.provenance import Provenance

STARTUP_TIMEOUT_S = 120.0  # importing torch and triton in a fresh worker
SENTINEL = "tileiropt.engine.sentinel"

_LIVE: set[WorkerProcess] = set()
_LIVE_LOCK = threading.Lock()
STOPPING = threading.Event()  # set by stop_all(): runners start no new worker and leave what is left


@dataclass
class Launcher:
    """How a worker process is started: the command in front of `python -m module`, and environment."""

    prefix: list[str] = field(default_factory=list)  # e.g. ["srun", "--ntasks=1", ...]; empty: a local process
    env: dict[str, str] = field(default_factory=dict)  # e.g. {"CUDA_VISIBLE_DEVICES": "1"}
    name: str = "local"  # where it runs, for records: "local", "gpu 1", "slurm"

    def command(self, module: str) -> list[str]:
        """The worker behind a sentinel (`tileiropt.engine.sentinel`): a kernel that kills its parent kills
        the sentinel, never the tool."""
        return [*self.prefix, sys.executable, "-m", SENTINEL, module]


LOCAL = Launcher()


class WorkerProcess:
    """A running worker: its events on a queue, the tail of its stderr kept for crash reports."""

    def __init__(self, backend: Backend, job: dict[str, Any] | None,
                 module: str = "tileiropt.run.job_worker", extra_env: dict[str, str] | None = None,
                 launcher: Launcher | None = None):
        """`job`: written as one line, then the input is closed; None: the input stays open for `send()`."""
        launcher = launcher or LOCAL
        env = backend_env(backend)
        env.update(launcher.env)
        env.update(extra_env or {})
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["MPLBACKEND"] = "Agg"  # a kernel file that plots at import never opens a window
        keep_bytecode(env)
        self.launcher = launcher
        self.created = time.monotonic()
        self.hello: Provenance | None = None  # what its "hello" said (None until then)
        self.hello_seconds: float | None = None  # from its start to its "hello": torch, Triton and CUDA imported
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_KEPT)
        with _LIVE_LOCK:
            if STOPPING.is_set():
                raise Stopped()
            self.proc = subprocess.Popen(
                launcher.command(module),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, text=True, encoding="utf-8", errors="replace", start_new_session=True,
            )
            _LIVE.add(self)
        self._input: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        threading.Thread(target=self._write_input, daemon=True).start()
        if job is not None:
            self.send(job)
            self.close_input()

    def send(self, message: dict[str, Any]) -> None:
        """Queue one JSON line for the worker's input. A writer thread delivers it, so a worker that does not
        read (hanging in its start-up) never blocks the caller, whose timeouts go on running."""
        self._input.put(json.dumps(message) + "\n")

    def close_input(self) -> None:
        """No more input: a streaming worker finishes what it has and says "done"."""
        self._input.put(None)

    def _write_input(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (line := self._input.get()) is not None:
                stdin.write(line)
                stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it is gone; its event stream ends and says why
        finally:
            with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                stdin.close()

    def _read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                self.stderr.append(line.rstrip())
                continue
            if isinstance(event, dict):
                if event.get("event") == "hello" and self.hello_seconds is None:  # when it came, not when read
                    self.hello_seconds = time.monotonic() - self.created
                self.events.put(event)
        self.events.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.strip():
                self.stderr.append(line.rstrip())

    def next_event(self, timeout: float) -> dict[str, Any] | None:
        """The next event; None when the worker's output ended. Raises queue.Empty on timeout."""
        return self.events.get(timeout=timeout)

    def kill(self) -> None:
        """End the worker and anything it started (its own process group)."""
        _kill_group(self.proc)
        self.proc.wait()
        self.forget()

    def forget(self) -> None:
        """The worker is done with: whatever it started (the user's entry may start processes) ends with it."""
        if self.proc.poll() is not None:
            _kill_group(self.proc)  # the group outlives its leader while a member lives
        self._input.put(None)  # the writer thread ends too
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def death(self, timed_out: float | None = None) -> Death:
        """How it ended, with its stderr tail: the evidence a job kind tells the cause from (`harness.blame`)."""
        words = f"timeout after {timed_out:g}s" if timed_out is not None else self.exit_description()
        return Death(self.proc.returncode, list(self.stderr), timed_out=timed_out, started=self.hello is not None,
                     words=words)

    def exit_description(self) -> str:
        """"crashed: SIGSEGV" or "crashed (exit code 1): <last stderr line>"."""
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.returncode
        self.forget()
        time.sleep(0.05)  # let the stderr reader catch the last lines
        if STOPPING.is_set():
            return "interrupted"
        last = self.stderr[-1] if self.stderr else ""
        if rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"crashed: {name}" + (f" ({last})" if last else "")
        return f"crashed (exit code {rc})" + (f": {last}" if last else "")


_STARTS: list[float] = []  # seconds from a worker's start to its "hello" (imports done), since the last take
_STARTS_LOCK = threading.Lock()


def take_worker_starts() -> list[float]:
    """The start-up times of the workers that said hello since the last call (a phase's cost of starting them)."""
    with _STARTS_LOCK:
        taken = list(_STARTS)
        _STARTS.clear()
    return taken


def keep_bytecode(env: dict[str, str]) -> None:
    """Where the installed packages carry no bytecode (read-only installs, images built with
    PYTHONDONTWRITEBYTECODE=1), let a worker keep the bytecode of what it imports in the tool's cache folder
    (`PYTHONPYCACHEPREFIX`, unless the user set one): every worker imports torch and the user's package anew, and
    each would otherwise compile them all again, seconds per worker. Where they carry it (pip compiles it at
    install), the environment is left as it is: a prefix would make Python pass over that bytecode and compile
    torch again into an empty cache, 3 s of each worker's first start."""
    if env.get("PYTHONPYCACHEPREFIX") or installed_bytecode():
        return
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir() / "bytecode")
    env.pop("PYTHONDONTWRITEBYTECODE", None)


@functools.cache
def installed_bytecode(package: str = "torch") -> bool:
    """Whether the installed sources carry their bytecode beside them (`package`'s `__init__`'s, as a sample of the
    install); True when it is not found (nothing to judge: Python is left as it is)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        return True
    source = Path(spec.origin)
    return (source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc").is_file()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Stopped(Exception):
    """Raised instead of starting a worker once `stop_all()` was called."""


def stop_all() -> None:
    """Start no new worker, and end every live one with its whole process group."""
    with _LIVE_LOCK:
        STOPPING.set()
        workers = list(_LIVE)
    for worker in workers:
        _kill_group(worker.proc)
    for worker in workers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.proc.wait(timeout=5)
        worker.forget()


STOP_GRACE_S = 30.0  # from the first Ctrl-C or SIGTERM to the tool's exit, whatever its clean-up is doing
INTERRUPTED_EXIT = 130  # ExitCode.INTERRUPTED
_SIGNALLED = threading.Event()


def _end_now(reason: str) -> None:
    """Say why on stderr with every thread's stack (for a bug report), end every worker's group (without the
    lock: its holder may be the thread that is stuck) and exit at once."""
    import faulthandler

    sys.stderr.write(f"tileiropt: {reason}: every worker is ended and the tool exits now (the threads' stacks "
                     "follow, for a bug report)\n")
    sys.stderr.flush()
    with contextlib.suppress(Exception):
        faulthandler.dump_traceback(all_threads=True)
    for worker in list(_LIVE):
        _kill_group(worker.proc)
    os._exit(INTERRUPTED_EXIT)


_STOPPED = threading.Event()  # set when the signal's clean-up is over (`stopping_on_signals` exited)


def _deadline(seconds: float) -> None:
    """Give the clean-up after a signal `seconds`; past them, end everything. A clean-up that ends in time (the
    context exits) ends this."""
    if not _STOPPED.wait(seconds):
        _end_now(f"still stopping {seconds:g} s after the signal")


@contextlib.contextmanager
def stopping_on_signals() -> Iterator[None]:
    """While inside: Ctrl-C and SIGTERM raise KeyboardInterrupt, which ends every worker before it propagates
    (finished records are kept by the caller). A SIGINT the shell or a parent set to be ignored (a background job)
    stays ignored. The clean-up that follows, until this context exits, gets `STOP_GRACE_S`; a second signal, or
    the grace running out, ends the tool and its workers at once. Outside the main thread: only the clean-up."""
    STOPPING.clear()
    _SIGNALLED.clear()
    _STOPPED.clear()
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        def interrupt(signum: int, frame: FrameType | None) -> None:
            if _SIGNALLED.is_set():
                _end_now(f"signal {signum} again while stopping")
            _SIGNALLED.set()
            threading.Thread(target=_deadline, args=(STOP_GRACE_S,), name="tileiropt-stop-deadline",
                             daemon=True).start()
            raise KeyboardInterrupt(f"signal {signum}")

        for each in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(each) is not signal.SIG_IGN:  # ignored by the parent: the convention holds
                previous[each] = signal.signal(each, interrupt)
    try:
        yield
    except KeyboardInterrupt:
        stop_all()
        raise
    finally:
        _STOPPED.set()  # a deadline started by a signal ends here: the clean-up is over
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class WorkerEvents:
    """The events of one worker, with the handling every phase shares.

    Iterating yields (kind, event) for the phase's own events and "hello" (it sets `provenance` first);
    "done" is taken here. The iteration ends when the worker says "done" (`finished`),
    when its output ends (it exited; `cause` says how) or when no event comes within
    `timeout()` seconds, asked before each wait (it is killed; `cause` is "timeout after Ns").
    """

    def __init__(self, worker: WorkerProcess, timeout: Callable[[], float]):
        self.worker = worker
        self.timeout = timeout
        self.provenance: Provenance | None = None  # from "hello"; None when the worker never started
        self.finished = False
        self.cause = ""
        self.death: Death | None = None  # how the worker ended, where it did not say "done"

    def __iter__(self) -> Iterator[tuple[str | None, dict[str, Any]]]:
        while True:
            timeout = self.timeout()
            try:
                event = self.worker.next_event(timeout)
            except queue.Empty:
                self.worker.kill()
                self.cause = "interrupted" if STOPPING.is_set() else f"timeout after {timeout:g}s"
                self.death = self.worker.death(timeout)
                return
            if event is None:
                self.death = self.worker.death()
                self.cause = self.death.words
                return
            kind = event.get("event")
            if kind == "hello":
                with _STARTS_LOCK:
                    _STARTS.append(self.worker.hello_seconds or 0.0)
                self.provenance = self.worker.hello = Provenance(**(event.get("provenance") or {}))
                yield kind, event
            elif kind == "done":
                self.finished = True
                self.worker.proc.wait()
                self.worker.forget()
                return
            else:
                yield kind, event


def run_in_slots(tasks: list[Callable[[Launcher], Any]], launchers: list[Launcher]) -> list[Any]:
    """Run `tasks` with one thread per launcher (a GPU, a SLURM step slot, a CPU worker slot): each thread takes
    the next task and runs it with its launcher. Results in the tasks' order (None for a task never started
    because of a stop). KeyboardInterrupt in the calling thread ends every worker before it propagates."""
    STOPPING.clear()  # a new run (an earlier one in this process may have been stopped)
    results: list[Any] = [None] * len(tasks)
    waiting = collections.deque(range(len(tasks)))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def loop(launcher: Launcher) -> None:
        while not STOPPING.is_set():
            with lock:
                if not waiting:
                    return
                index = waiting.popleft()
            try:
                results[index] = tasks[index](launcher)
            except Stopped:
                return
            except BaseException as exc:  # surfaced in the calling thread
                errors.append(exc)
                return

    threads = [threading.Thread(target=loop, args=(launcher,), daemon=True) for launcher in launchers[:len(tasks)]]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)  # short waits: Ctrl-C and SIGTERM are handled at once
    except KeyboardInterrupt:
        stop_all()
        for thread in threads:
            thread.join(10)
        raise
    if errors:
        raise errors[0]
    return results
