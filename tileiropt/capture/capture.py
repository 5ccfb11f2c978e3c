"""Capture real launches: run a program that exercises the kernels and record each launch of each kernel
defined in the target files (see `capture_hook`), then turn the distinct launches into kernel specs that
`validate` replays against the original kernel and `bench` times -- no shapes, dtypes or reference to write.

The program is the kernel file itself run as a script (and when that launches none of its kernels, the
file's own tests, `pytest -q file.py`, where it defines any), or a command (`pytest tests/test_ops.py -k rms`,
`python bench.py`). It runs in its own session with the recorder on PYTHONPATH; it is ended when every
kernel of the targets has its fill of distinct launches, or has a launch and nothing new came for a quiet
period (a sweep repeating itself), or the time budget is spent; its whole process group is killed
afterwards (also when this process is interrupted), so nothing is left behind. Without a GPU it runs under the Triton
interpreter with the tool's stand-ins (module-level benchmarks are not run).
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

from tileiropt.capture import hook
from tileiropt.capture import site as capture_site
from tileiropt.capture import worker_gpus as worker_gpus_plugin
from tileiropt.capture.keys import KernelKey
from tileiropt.capture.program_failure import ProgramFailure, read_failure
from tileiropt.capture.watch import ProgramWatch, last_line, stuck_at
from tileiropt.capture.worker_gpus import BEFORE_ENV, GPUS_ENV
from tileiropt.check.device import Device
from tileiropt.check.machine import Machine, versions
from tileiropt.classify.classify import classify_files
from tileiropt.classify.modules import package_name_for
from tileiropt.contract.store import Store
from tileiropt.engine.executors import visible_gpus
from tileiropt.engine.progress import duration
from tileiropt.engine.resume import input_key, tool_digest
from tileiropt.engine.workers import keep_bytecode
from tileiropt.errors import UserError
from tileiropt.harness.provenance import file_digest
from tileiropt.project.launch import CapturedLaunch, kernel_labels
from tileiropt.project.library import mirrored_output
from tileiropt.project.model import DEFAULT_STALL_S, DEFAULT_TIMEOUT_S, CaptureRequest, KernelSpec, Project
from tileiropt.schema import SCHEMA_VERSION

WORKER_GPUS_PLUGIN = "tileiropt_worker_gpus"  # a pytest plugin (written beside the sitecustomize): each xdist worker
# its own GPU; a module of its own there, so a Python that cannot import tileiropt still finds it

CAPTURE_FILE = "capture.json"
DEFAULT_CAP = 3  # distinct launches kept per kernel
DEFAULT_QUIET_S = 10.0  # a kernel file's own run, every kernel launched: stop after this long without a new one
LONG_QUIET_S = 60.0  # a kernel file's own run: stop after this long without a new launch signature
POLL_S = 0.25  # how often the tool reads what the program recorded
PROGRESS_EVERY_S = 1.0


@dataclass
class CaptureResult:
    """What a capture run saw."""

    FILE: ClassVar[str] = CAPTURE_FILE

    command: list[str]
    launches: list[CapturedLaunch]  # distinct launches, in order
    counts: dict[str, int] = field(default_factory=dict)  # "kernel@file" -> launches seen (duplicates included)
    expected: list[str] = field(default_factory=list)  # "kernel@file" of every entry kernel of the targets
    atomics: dict[str, bool] = field(default_factory=dict)  # "kernel@file" -> updates memory with atomics
    exit_code: int | None = None
    ended: str = ""  # why the program ended
    seconds: float = 0.0
    stderr_tail: str = ""
    started: str = ""  # when the program was run (UTC, ISO 8601)
    inputs: str | None = None  # the input key (`capture_inputs`): what a re-run compares
    sources: dict[str, str | None] = field(default_factory=dict)  # the program's imported files -> SHA-256
    reused: bool = False  # taken from the artifacts' capture.json: the same inputs, not run again
    failure: ProgramFailure | None = None  # the program failed on its own (not ended by the capture)
    library: str | None = None  # library mode: the folder whose kernel files were the targets
    cut: str = ""  # why the tool ended a program that had not finished (budget, no progress); "" when it finished
    where: str = ""  # where a cut program was (`file:line in function`, from its stacks)
    stacks: dict[str, str] = field(default_factory=dict)  # pid -> every thread's stack, when cut
    outside: dict[str, dict[str, Any]] = field(default_factory=dict)  # kernels launched that the targets do not define
    processes: int = 0  # processes of the program that loaded the recorder (pytest-xdist workers too)
    last_output: str = ""  # the program's last output line
    made_by_call: list[str] = field(default_factory=list)  # library files whose kernels only a call makes

    def kernels(self) -> dict[str, list[CapturedLaunch]]:
        found: dict[str, list[CapturedLaunch]] = {}
        for launch in self.launches:
            found.setdefault(str(KernelKey.of(launch)), []).append(launch)
        return found

    def never_launched(self) -> list[str]:
        return [key for key in self.expected if key not in self.counts]

    def never_launched_text(self, most: int = 8) -> str:
        """The kernels never launched, each with its file (`add.py:_kernel`), or their count when there are many
        (the report lists them all)."""
        parsed = [KernelKey.parse(key) for key in self.never_launched()]
        if len(parsed) > most:
            files = len({path for _, path in parsed})
            return f"{len(parsed)} kernel(s) in {files} file(s) (listed in the report)"
        return ", ".join(f"{Path(path).name}:{kernel}" for kernel, path in parsed)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "command": self.command, "exit_code": self.exit_code,
                "ended": self.ended, "seconds": round(self.seconds, 2), "started": self.started,
                "inputs": self.inputs, "reused": self.reused, "sources": self.sources, "counts": self.counts,
                "expected": self.expected,
                "atomics": self.atomics, "launches": [launch.to_json() for launch in self.launches],
                "never_launched": self.never_launched(),
                "failure": self.failure.to_json() if self.failure else None, "library": self.library,
                "cut": self.cut, "where": self.where, "stacks": self.stacks, "outside": self.outside,
                "processes": self.processes, "last_output": self.last_output, "made_by_call": self.made_by_call}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaptureResult:
        return cls(command=list(data["command"]), counts=dict(data["counts"]),
                   launches=[CapturedLaunch.from_json(launch) for launch in data["launches"]],
                   expected=list(data["expected"]), atomics=dict(data["atomics"]), exit_code=data.get("exit_code"),
                   ended=str(data.get("ended", "")), seconds=float(data.get("seconds", 0.0)),
                   started=str(data.get("started", "")), inputs=data.get("inputs"),
                   sources=dict(data.get("sources") or {}),
                   failure=ProgramFailure.from_json(data.get("failure")),
                   library=data["library"] if isinstance(data.get("library"), str) else None,
                   cut=str(data.get("cut") or ""), where=str(data.get("where") or ""),
                   stacks=dict(data.get("stacks") or {}), outside=dict(data.get("outside") or {}),
                   processes=int(data.get("processes") or 0), last_output=str(data.get("last_output") or ""),
                   made_by_call=[str(f) for f in data.get("made_by_call") or []])


def program_command(targets: list[Path], command: list[str] | None) -> list[str]:
    """The command to run: the first target as a script, or the user's command with `python`/`pytest`
    bound to this interpreter (so the recorder and the tool's environment are the ones in use)."""
    if not command:
        return [sys.executable, str(targets[0])]
    head, *rest = command
    if Path(head).name in ("python", "python3", Path(sys.executable).name):
        return [sys.executable, *rest]
    if Path(head).name == "pytest":
        return [sys.executable, "-m", "pytest", *rest]
    return list(command)


def own_tests_command(file: Path) -> list[str] | None:
    """``pytest -q <file>`` when the file defines tests of its own (a top-level ``def test*`` that is not a
    kernel, or a ``class Test*``, as Triton's attention tutorial does, whose script part only benchmarks) and
    pytest is installed; else None."""
    import ast
    import importlib.util

    try:
        tree = ast.parse(file.read_bytes(), filename=str(file))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None
    def is_test(node: ast.stmt) -> bool:  # what pytest collects from a file: test_* functions, Test* classes
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node.name.startswith("test") and not any("jit" in ast.unparse(d) for d in node.decorator_list)
        return isinstance(node, ast.ClassDef) and node.name.startswith("Test")

    if not any(is_test(node) for node in tree.body):
        return None
    if importlib.util.find_spec("pytest") is None:
        return None
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(file)]


def capture_program(targets: list[Path], command: list[str] | None, *, interpret: bool,
                    budget: float | None = None, cap: int = DEFAULT_CAP, cwd: Path | None = None,
                    stall: float | None = DEFAULT_STALL_S, stop_when_captured: bool = True,
                    on_progress: Callable[[str], None] | None = None,
                    worker_gpus: list[str] | None = None) -> CaptureResult:
    """`run_capture` of the command, or of the first target as a script; when that script launches none of the
    targets' kernels and the file has tests of its own (`own_tests_command`), of those tests, within what is left
    of the budget. The result's `ended` says which ran."""
    capture = functools.partial(run_capture, interpret=interpret, cap=cap, cwd=cwd, stall=stall,
                                stop_when_captured=stop_when_captured, on_progress=on_progress,
                                worker_gpus=worker_gpus)
    result = capture(targets, command, budget=budget)
    tests = own_tests_command(targets[0]) if command is None and not result.launches and not result.cut else None
    if tests is None:
        return result
    first, spent, failed = result.ended, result.seconds, result.failure
    result = capture(targets, tests, budget=None if budget is None else max(budget - spent, 1.0))
    result.ended = f"run as a script it launched no kernel ({first}), so its own tests ran: {result.ended}"
    result.seconds += spent
    result.failure = result.failure or failed  # the script's own failure is still the program's
    return result


def target_kernels(targets: list[Path]) -> tuple[list[str], dict[str, bool]]:
    """From one classification of each target (no rule, no IR check; through the lint cache, and over worker
    processes for a library's many files): `kernel@file` of every entry kernel (helpers are launched by no one),
    and for every kernel whether it updates memory with atomics."""
    expected, atomics = [], {}
    for target, result in zip(targets, classify_files(list(targets), lambda _: [], ir=False), strict=True):
        real = os.path.realpath(target)
        for record in result.kernels:
            key = str(KernelKey(record.kernel, real))
            atomics[key] = bool(record.atomic_lines)
            if record.is_entry:
                expected.append(key)
    return expected, atomics


def run_capture(targets: list[Path], command: list[str] | None = None, *, interpret: bool,
                budget: float | None = None, cap: int = DEFAULT_CAP, cwd: Path | None = None,
                quiet: float = DEFAULT_QUIET_S, stall: float | None = DEFAULT_STALL_S,
                worker_gpus: list[str] | None = None,
                stop_when_captured: bool = True,
                on_progress: Callable[[str], None] | None = None) -> CaptureResult:
    """Run the program with the recorder and collect the distinct launches of the targets' kernels.

    `stop_when_captured`: a kernel file's own run, ended once every kernel has its fill (a library's command runs
    to its end). `budget`: seconds the program may run (None: no limit). `stall`: seconds without output and
    without a launch after which the program is stuck (None: never). A program ended by either is cut: the
    result's `cut` says why and `where` where it was (from every thread's stack, kept in `stacks`). `worker_gpus`:
    each pytest-xdist worker of the program gets one of these GPUs (`worker_gpus.py`)."""
    for target in targets:
        if not target.is_file():
            raise UserError("kernel file not found", file=str(target), hint="check the path")
    argv = program_command(targets, command)
    expected, atomics = target_kernels(targets)
    with tempfile.TemporaryDirectory(prefix="tileiropt-capture-") as folder:
        (Path(folder) / "sitecustomize.py").write_text(inspect.getsource(capture_site), encoding="utf-8")
        settings = Path(folder) / "settings.json"  # a file, not the environment: no limit on the targets' number
        settings.write_text(json.dumps({
            "folder": folder, "files": [os.path.realpath(t) for t in targets], "cap": cap, "expected": expected,
            "stop_when_captured": stop_when_captured, "quiet": quiet, "long_quiet": LONG_QUIET_S,
            "stand_ins": interpret}), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([folder, *filter(None, [env.get("PYTHONPATH")])])
        env.update({hook.SETTINGS_ENV: str(settings), "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"})
        # the program as it works today, on PTX, whatever the shell says: under ENABLE_TILE=1 with nvtriton a kernel
        # TileIR refuses would end it before its first launch, and a file that asks its backend would launch with
        # another backend's configs than those validated and timed on PTX
        env["ENABLE_TILE"] = "0"
        if interpret:
            env["TRITON_INTERPRET"] = "1"
        if worker_gpus:
            (Path(folder) / f"{WORKER_GPUS_PLUGIN}.py").write_text(inspect.getsource(worker_gpus_plugin), "utf-8")
            env[GPUS_ENV] = ",".join(worker_gpus)
            env[BEFORE_ENV] = env.get("CUDA_VISIBLE_DEVICES", "")
            for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
                env.pop(name, None)  # an xdist worker running the tool is not one of the program's workers
            env["PYTEST_PLUGINS"] = ",".join(filter(None, [env.get("PYTEST_PLUGINS"), WORKER_GPUS_PLUGIN]))
        keep_bytecode(env)
        started = time.monotonic()
        started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        output_path = Path(folder) / "output.txt"  # stdout and stderr: the tail says why a program ended
        watch = ProgramWatch(Path(folder), cap)
        with open(output_path, "wb") as output:
            try:
                process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                           stdout=output, stderr=output, start_new_session=True)
            except OSError as exc:
                raise UserError(f"cannot start the capture command: {exc.strerror or exc}",
                                hint=f"check the command: {shlex.join(argv)}") from None
            previous = _on_sigterm_raise()
            try:
                cut, stacks = _follow(process, watch, output_path, expected, started, budget, stall, on_progress)
            finally:  # also on Ctrl-C or SIGTERM of this process: the program's whole group goes too
                _kill_group(process)
                if previous is not None:
                    signal.signal(signal.SIGTERM, previous)
        watch.poll()
        result = CaptureResult(command=argv, launches=watch.launches, counts=watch.counts(), expected=expected,
                               atomics=atomics, outside=watch.outside(), processes=len(watch.pids))
        result.sources = {path: file_digest(path) for path in sorted(watch.sources)}
        result.seconds = time.monotonic() - started
        result.started = started_at
        output_text = output_path.read_text(encoding="utf-8", errors="replace")
        result.stderr_tail = output_text[-2000:]
        result.last_output = last_line(output_path)
        if cut:
            result.cut, result.stacks = cut, stacks
            result.where = stuck_at(stacks, str(cwd or Path.cwd())) or (
                f"its last output line: {result.last_output}" if result.last_output else "")
            result.ended = f"cut: {cut}"
            return result
        result.exit_code = process.returncode
        if watch.stopped:
            result.ended = f"stopped: {watch.stopped}"
        else:
            result.ended = "the program finished" if process.returncode == 0 else \
                f"the program exited with status {process.returncode}"
            if process.returncode != 0:
                result.failure = read_failure(output_text[-200_000:], process.returncode, str(cwd or Path.cwd()))
    return result


def _follow(process: subprocess.Popen, watch: ProgramWatch, output: Path, expected: list[str], started: float,
            budget: float | None, stall: float | None,
            on_progress: Callable[[str], None] | None) -> tuple[str, dict[str, str]]:
    """Wait for the program while reading what it records: (why it was cut, or "", and its stacks when cut)."""
    last_progress, size, shown = started, 0, 0.0
    while True:
        try:
            process.wait(timeout=POLL_S)
            return "", {}
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        grew = watch.poll()
        if watch.stopped:  # a process of a kernel file's own run has every kernel: the rest of the group goes
            return "", {}
        try:
            new_size = output.stat().st_size
        except OSError:
            new_size = size
        if grew or new_size != size:
            last_progress, size = now, new_size
        if on_progress is not None and now - shown >= PROGRESS_EVERY_S:
            shown = now
            on_progress(progress_line(watch, expected, now - started, last_line(output)))
        if budget is not None and now - started > budget:
            return f"the capture budget of {budget:g} s was spent", watch.stacks(process.pid)
        if stall is not None and now - last_progress > stall:
            return f"no progress for {stall:g} s (no output, no launch)", watch.stacks(process.pid)


def cut_summary(cut: str, where: str) -> str:
    """One line on a program the tool cut: why, where it was, and what that means for the run."""
    place = f", at {where}" if where else ""
    return (f"the command did not finish: {cut}{place}; the coverage is partial (kernels it had not launched yet "
            "are not covered) and the run is not a pass")


def progress_line(watch: ProgramWatch, expected: list[str], elapsed: float, last: str) -> str:
    """"1m12s, 3,456 launches, 12/320 kernels captured | <the program's last output line>"."""
    counts = watch.counts()
    captured = len({KernelKey.of(launch) for launch in watch.launches})
    text = (f"{duration(elapsed)}, {sum(counts.values()):,} launches, {captured}/{len(expected)} kernels captured")
    return f"{text} | {last}" if last else text


def _on_sigterm_raise() -> Any:
    """While a capture runs, SIGTERM raises (so `finally` ends the program's group); the old handler."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, terminate)


def _kill_group(process: subprocess.Popen) -> None:
    """End the program and everything it started (its own process group): SIGTERM first, so its processes run
    their exit handlers (each writes its last line), then SIGKILL to what is left after a few seconds."""
    group = process.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except (ProcessLookupError, PermissionError):
            break  # nothing left of the group
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            process.poll()  # reap the leader, or the group never empties
            try:
                os.killpg(group, 0)
            except (ProcessLookupError, PermissionError):
                break
            time.sleep(0.05)
        else:
            continue
        break
    if process.poll() is None:
        process.kill()
        process.wait()


def capture_specs(result: CaptureResult, root: Path, artifacts: Path, timeout: float | None = None,
                  library: Path | None = None) -> list[Any]:
    """One kernel spec per distinct captured launch (`<kernel>#<n>`; `<file stem>.<kernel>` where files share a
    kernel name), validated against the original kernel by replay and benchmarked at the captured shapes. In
    library mode the optimized files mirror the library's layout under the artifacts."""
    labels = kernel_labels(result.launches)
    per_kernel = Counter(labels)
    counters: Counter[str] = Counter()
    specs = []
    for launch, base in zip(result.launches, labels):
        path = Path(launch.file)
        launch = launch.with_atomics(result.atomics.get(str(KernelKey.of(launch)), False))
        counters[base] += 1
        name = base if per_kernel[base] == 1 else f"{base}#{counters[base]}"
        optimized = mirrored_output(path, library, artifacts) \
            if library is not None and path.resolve().is_relative_to(library.resolve()) else None
        tensors = launch.tensors()  # passed by position or by keyword: a wrapper may name every argument
        dotted, _ = package_name_for(path)
        specs.append(KernelSpec(
            name=name, path=path, entry=launch.kernel, reference="original",
            inputs={k: list(v.shape) for k, v in tensors.items()},
            dtypes=[{k: v.dtype for k, v in tensors.items()}],
            timeout=timeout or DEFAULT_TIMEOUT_S, sizes=[], module=dotted, root=root, artifacts=artifacts,
            launch=launch, optimized=optimized,
        ))
    return specs



def _named_files(argv: list[str], cwd: Path) -> list[Path]:
    """The files a command names (a script, test files, `tests/test_x.py::test_y`, a folder's .py files)."""
    found: list[Path] = []
    for arg in argv[1:]:
        if arg.startswith("-"):
            continue
        path = cwd / arg.split("::")[0]
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += sorted(p for p in path.rglob("*.py")
                            if not any(part.startswith(".") or part == "__pycache__" for part in p.parts))
    return found


def capture_inputs(request: CaptureRequest, cwd: Path, device: Device) -> str:
    """The input key of a capture: the command and where it runs, the SHA-256 of the kernel files and of the
    files the command names, the budget and cap, the tool's source, Triton's and torch's versions, the GPU (or
    the interpreter). A re-run with the same key reuses the saved launches instead of running the program."""
    argv = program_command(request.files, request.command)
    return input_key({"command": argv, "cwd": str(cwd.resolve()), "budget": request.budget, "cap": request.cap,
                      "stall": request.stall, "spread_gpus": visible_gpus() if request.spread_gpus else None,
                      "files": {str(p): file_digest(p) for p in request.files},
                      "named": {str(p): file_digest(p) for p in _named_files(argv, cwd)},
                      "tool": tool_digest(), "versions": versions(),
                      "device": device.key()})


def earlier_capture(artifacts: Path, inputs: str) -> CaptureResult | None:
    """The saved capture when its inputs are `inputs`, every file the program imported is unchanged, and it
    captured something; else None."""
    found = Store(artifacts).reused(CaptureResult, inputs)
    if found is None:
        return None
    result = found[1]
    if not result.launches or not result.sources or result.cut:
        return None  # cut, or no list of what it imported (it was killed from outside): run it again
    try:
        if any(file_digest(path) != digest for path, digest in result.sources.items()):
            return None
    except (OSError, ValueError, TypeError):
        return None
    result.reused = True
    return result


def add_captured_kernels(project: Project, machine: Machine, timeout: float | None = None, fresh: bool = False,
                         before_program: Callable[[], None] | None = None,
                         on_progress: Callable[[str], None] | None = None) -> tuple[CaptureResult, list[KernelSpec]]:
    """Run the project's capture (`[project] capture = "..."`) and add one kernel spec per distinct launch to
    `project.kernels` (names already taken are kept as they are); saves capture.json. An unchanged re-run
    (`capture_inputs`) takes the saved launches instead (`fresh`: run the program again). `before_program`: called
    just before the program runs (not when its launches are reused). (result, added specs)."""
    request = project.capture
    assert request is not None, "add_captured_kernels: the project asks for no capture"
    cwd = Path(project.root) if project.root else Path.cwd()
    inputs = capture_inputs(request, cwd, machine.device)
    result = None if fresh else earlier_capture(project.artifacts, inputs)
    if result is None:
        if before_program is not None:
            before_program()
        result = capture_program(request.files, request.command, interpret=not machine.has_gpu,
                                 budget=request.budget, cap=request.cap, cwd=project.root, stall=request.stall,
                                 stop_when_captured=request.command is None, on_progress=on_progress,
                                 worker_gpus=visible_gpus() if request.spread_gpus and machine.has_gpu else None)
        result.inputs = inputs
    result.library = str(request.library) if request.library is not None else None
    result.made_by_call = [str(f) for f in request.made_by_call]
    Store(project.artifacts).save(CaptureResult, result.to_json())
    taken = {s.name for s in project.kernels}
    specs = [s for s in capture_specs(result, project.root, project.artifacts, timeout, request.library)
             if s.name not in taken]
    project.kernels += specs
    return result, specs


def with_captured_kernels(project: Project, machine: Machine, fresh: bool = False) -> Project:
    """For `validate` and `bench` on a project that asks for a capture: capture first (on this machine's GPU,
    or under the interpreter), so its kernels are the launches the program makes. The project, extended."""
    if project.capture is None:
        return project
    result, specs = add_captured_kernels(project, machine, fresh=fresh)
    if result.cut:
        project.capture.cut = cut_summary(result.cut, result.where)
    if not project.kernels:
        raise UserError(f"the capture launched no kernel of the target files ({result.ended})",
                        file=str(project.file) if project.file else None,
                        hint="check `capture` runs the kernels (tileiropt run shows the program's output)")
    return project
