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
from typing import Any

from tileiropt.analysis.classify import classify_file
from tileiropt.entries import package_name_for
from tileiropt.errors import UserError
from tileiropt.library import mirrored_output
from tileiropt.output import save_record_file
from tileiropt.project_model import DEFAULT_TIMEOUT_S, KernelSpec
from tileiropt.runtime import capture_hook as hook
from tileiropt.runtime import capture_site
from tileiropt.runtime.machine import versions
from tileiropt.runtime.program_failure import ProgramFailure, read_failure
from tileiropt.runtime.provenance import file_digest
from tileiropt.runtime.resume import input_key, tool_digest
from tileiropt.runtime.workers import keep_bytecode
from tileiropt.schema import SCHEMA_VERSION

CAPTURE_FILE = "capture.json"
DEFAULT_BUDGET_S = 120.0
DEFAULT_CAP = 3  # distinct launches kept per kernel
DEFAULT_QUIET_S = 10.0  # once every kernel has a launch: stop after this long without a new signature
_GRACE_S = 20.0  # past the budget, before the program is killed from outside
_MIN_TESTS_BUDGET_S = 10.0  # what must be left of the budget to try the file's own tests after the script


@dataclass
class CaptureResult:
    """What a capture run saw."""

    command: list[str]
    launches: list[dict[str, Any]]  # distinct launches, in order
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

    def kernels(self) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for launch in self.launches:
            found.setdefault(f"{launch['kernel']}@{launch['file']}", []).append(launch)
        return found

    def never_launched(self) -> list[str]:
        return [key for key in self.expected if key not in self.counts]

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "command": self.command, "exit_code": self.exit_code,
                "ended": self.ended, "seconds": round(self.seconds, 2), "started": self.started,
                "inputs": self.inputs, "reused": self.reused, "sources": self.sources, "counts": self.counts,
                "expected": self.expected,
                "atomics": self.atomics, "launches": self.launches, "never_launched": self.never_launched(),
                "failure": self.failure.to_json() if self.failure else None, "library": self.library}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaptureResult:
        return cls(command=list(data["command"]), launches=list(data["launches"]), counts=dict(data["counts"]),
                   expected=list(data["expected"]), atomics=dict(data["atomics"]), exit_code=data.get("exit_code"),
                   ended=str(data.get("ended", "")), seconds=float(data.get("seconds", 0.0)),
                   started=str(data.get("started", "")), inputs=data.get("inputs"),
                   sources=dict(data.get("sources") or {}),
                   failure=ProgramFailure.from_json(data.get("failure")),
                   library=data["library"] if isinstance(data.get("library"), str) else None)


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
                    budget: float = DEFAULT_BUDGET_S, cap: int = DEFAULT_CAP, cwd: Path | None = None) -> CaptureResult:
    """`run_capture` of the command, or of the first target as a script; when that script launches none of the
    targets' kernels and the file has tests of its own (`own_tests_command`), of those tests, within what is left
    of the budget. The result's `ended` says which ran."""
    result = run_capture(targets, command, interpret=interpret, budget=budget, cap=cap, cwd=cwd)
    tests = own_tests_command(targets[0]) if command is None and not result.launches else None
    if tests is None or budget - result.seconds < _MIN_TESTS_BUDGET_S:
        return result
    first, spent, failed = result.ended, result.seconds, result.failure
    result = run_capture(targets, tests, interpret=interpret, budget=budget - spent, cap=cap, cwd=cwd)
    result.ended = f"run as a script it launched no kernel ({first}), so its own tests ran: {result.ended}"
    result.seconds += spent
    result.failure = result.failure or failed  # the script's own failure is still the program's
    return result


def parse_command(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UserError(f"capture command is not valid shell syntax: {exc}", hint="quote it as a shell would") \
            from None


def target_kernels(targets: list[Path]) -> tuple[list[str], dict[str, bool]]:
    """From one classification of each target: `kernel@file` of every entry kernel (helpers are launched by
    no one), and for every kernel whether it updates memory with atomics."""
    expected, atomics = [], {}
    for target in targets:
        real = os.path.realpath(target)
        for record in classify_file(target, rules=[]).kernels:
            key = f"{record.kernel}@{real}"
            atomics[key] = bool(record.atomic_lines)
            if record.is_entry:
                expected.append(key)
    return expected, atomics


def run_capture(targets: list[Path], command: list[str] | None = None, *, interpret: bool,
                budget: float = DEFAULT_BUDGET_S, cap: int = DEFAULT_CAP, cwd: Path | None = None,
                grace: float = _GRACE_S, quiet: float = DEFAULT_QUIET_S) -> CaptureResult:
    """Run the program with the recorder and collect the distinct launches of the targets' kernels."""
    for target in targets:
        if not target.is_file():
            raise UserError("kernel file not found", file=str(target))
    argv = program_command(targets, command)
    expected, atomics = target_kernels(targets)
    with tempfile.TemporaryDirectory(prefix="tileiropt-capture-") as folder:
        (Path(folder) / "sitecustomize.py").write_text(inspect.getsource(capture_site), encoding="utf-8")
        out = Path(folder) / "launches.jsonl"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([folder, *filter(None, [env.get("PYTHONPATH")])])
        env.update({hook.OUT_ENV: str(out), hook.FILES_ENV: os.pathsep.join(str(t.resolve()) for t in targets),
                    hook.CAP_ENV: str(cap), hook.KERNELS_ENV: os.pathsep.join(expected),
                    hook.BUDGET_ENV: str(budget), hook.QUIET_ENV: str(quiet), "MPLBACKEND": "Agg",
                    "PYTHONUNBUFFERED": "1"})
        if interpret:
            env.update({"TRITON_INTERPRET": "1", hook.STAND_INS_ENV: "1"})
        keep_bytecode(env)
        started = time.monotonic()
        started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        stderr_path = Path(folder) / "output.txt"  # stdout and stderr: the tail says why a program ended
        with open(stderr_path, "wb") as stderr:
            try:
                process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                           stdout=stderr, stderr=stderr, start_new_session=True)
            except OSError as exc:
                raise UserError(f"cannot start the capture command: {exc.strerror or exc}",
                                hint=f"check the command: {shlex.join(argv)}") from None
            killed = False
            previous = _on_sigterm_raise()
            try:
                process.wait(timeout=budget + grace)
            except subprocess.TimeoutExpired:
                killed = True
            finally:  # also on Ctrl-C or SIGTERM of this process: the program's whole group goes too
                _kill_group(process)
                if previous is not None:
                    signal.signal(signal.SIGTERM, previous)
        result = _read(out, argv, expected)
        result.atomics = atomics
        result.seconds = time.monotonic() - started
        result.started = started_at
        result.exit_code = None if killed else process.returncode
        if killed:
            result.ended = f"killed after the time budget ({budget:g} s)"
        elif not result.ended:
            result.ended = "the program finished" if process.returncode == 0 else \
                f"the program exited with status {process.returncode}"
        output = stderr_path.read_text(encoding="utf-8", errors="replace")
        result.stderr_tail = output[-2000:]
        if not killed and not result.ended.startswith("stopped") and process.returncode != 0:
            result.failure = read_failure(output[-200_000:], process.returncode, str(cwd or Path.cwd()))
    return result


def _on_sigterm_raise() -> Any:
    """While a capture runs, SIGTERM raises (so `finally` ends the program's group); the old handler."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, terminate)


def _kill_group(process: subprocess.Popen) -> None:
    """End the program and everything it started (its own process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            continue
    if process.poll() is None:
        process.kill()
        process.wait()


def _read(out: Path, argv: list[str], expected: list[str]) -> CaptureResult:
    result = CaptureResult(command=argv, launches=[], expected=expected)
    if not out.is_file():
        return result
    sources: set[str] = set()  # every process of the program that loaded the recorder lists its own
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a line cut by the program's end
        if "kernel" in item:
            result.launches.append(item)
        else:
            result.counts.update(item.get("launches", {}))
            sources.update(item.get("sources") or [])
            if "stopped" in item:
                result.ended = f"stopped: {item['stopped']}"
    result.sources = {path: file_digest(path) for path in sorted(sources)}
    for launch in result.launches:
        result.counts.setdefault(f"{launch['kernel']}@{launch['file']}", 1)
    return result




def capture_specs(result: CaptureResult, root: Path, artifacts: Path, timeout: float | None = None,
                  library: Path | None = None) -> list[Any]:
    """One kernel spec per distinct captured launch (`<kernel>#<n>`; `<file stem>.<kernel>` where files share a
    kernel name), validated against the original kernel by replay and benchmarked at the captured shapes. In
    library mode the optimized files mirror the library's layout under the artifacts."""
    files_of: dict[str, set[str]] = {}
    for launch in result.launches:
        files_of.setdefault(launch["kernel"], set()).add(launch["file"])

    def label(launch: dict[str, Any]) -> str:
        kernel = launch["kernel"]
        return kernel if len(files_of[kernel]) == 1 else f"{Path(launch['file']).stem}.{kernel}"

    per_kernel = Counter(label(launch) for launch in result.launches)
    counters: Counter[str] = Counter()
    specs = []
    for launch in result.launches:
        path = Path(launch["file"])
        launch = {**launch, "atomics": result.atomics.get(f"{launch['kernel']}@{launch['file']}", False)}
        base = label(launch)
        counters[base] += 1
        name = base if per_kernel[base] == 1 else f"{base}#{counters[base]}"
        optimized = mirrored_output(path, library, artifacts) \
            if library is not None and path.resolve().is_relative_to(library.resolve()) else None
        tensors = {a["name"]: a.get("tensor") or a["descriptor"]["base"] for a in launch["args"]
                   if "tensor" in a or "descriptor" in a}
        dotted, _ = package_name_for(path)
        specs.append(KernelSpec(
            name=name, path=path, entry=launch["kernel"], reference="original",
            inputs={k: list(v["shape"]) for k, v in tensors.items()},
            dtypes=[{k: v["dtype"] for k, v in tensors.items()}],
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
                            if not any(part.startswith(".") or part == "__pycache__" for part in p.parts))[:5000]
    return found


def capture_inputs(request: Any, cwd: Path, device: dict[str, Any]) -> str:
    """The input key of a capture: the command and where it runs, the SHA-256 of the kernel files and of the
    files the command names, the budget and cap, the tool's source, Triton's and torch's versions, the GPU (or
    the interpreter). A re-run with the same key reuses the saved launches instead of running the program."""
    argv = program_command(request.files, request.command)
    return input_key({"command": argv, "cwd": str(cwd.resolve()), "budget": request.budget, "cap": request.cap,
                      "files": {str(p): file_digest(p) for p in request.files},
                      "named": {str(p): file_digest(p) for p in _named_files(argv, cwd)},
                      "tool": tool_digest(), "versions": versions(),
                      "device": [device.get("name"), device.get("capability")]})


def earlier_capture(artifacts: Path, inputs: str) -> CaptureResult | None:
    """The saved capture when its inputs are `inputs`, every file the program imported is unchanged, and it
    captured something; else None."""
    path = Path(artifacts) / CAPTURE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("inputs") != inputs or not data.get("launches") or not data.get("sources"):
            return None  # no list of what it imported (it was killed from outside): run it again
        result = CaptureResult.from_json(data)
        if any(file_digest(path) != digest for path, digest in result.sources.items()):
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    result.reused = True
    return result


def add_captured_kernels(project: Any, machine: Any, timeout: float | None = None, fresh: bool = False,
                         before_program: Callable[[], None] | None = None) -> tuple[CaptureResult, list[Any]]:
    """Run the project's capture (`[project] capture = "..."`) and add one kernel spec per distinct launch to
    `project.kernels` (names already taken are kept as they are); saves capture.json. An unchanged re-run
    (`capture_inputs`) takes the saved launches instead (`fresh`: run the program again). `before_program`: called
    just before the program runs (not when its launches are reused). (result, added specs)."""
    request = project.capture
    cwd = Path(project.root) if project.root else Path.cwd()
    inputs = capture_inputs(request, cwd, machine.device)
    result = None if fresh else earlier_capture(project.artifacts, inputs)
    if result is None:
        if before_program is not None:
            before_program()
        result = capture_program(request.files, request.command, interpret=not machine.has_gpu,
                                 budget=request.budget, cap=request.cap, cwd=project.root)
        result.inputs = inputs
    result.library = str(request.library) if request.library is not None else None
    save_record_file(result.to_json(), project.artifacts, CAPTURE_FILE)
    taken = {s.name for s in project.kernels}
    specs = [s for s in capture_specs(result, project.root, project.artifacts, timeout, request.library)
             if s.name not in taken]
    project.kernels += specs
    return result, specs


def with_captured_kernels(project: Any, machine: Any, fresh: bool = False) -> Any:
    """For `validate` and `bench` on a project that asks for a capture: capture first (on this machine's GPU,
    or under the interpreter), so its kernels are the launches the program makes. The project, extended."""
    if project.capture is None:
        return project
    result, specs = add_captured_kernels(project, machine, fresh=fresh)
    if not project.kernels:
        raise UserError(f"the capture launched no kernel of the target files ({result.ended})",
                        file=str(project.file) if project.file else None,
                        hint="check `capture` runs the kernels (tileiropt run shows the program's output)")
    return project
