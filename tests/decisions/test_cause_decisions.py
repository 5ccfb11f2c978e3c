"""Whose failure it is: the cause told where a failure is observed (`harness.blame`), and the exit code of each
(`errors`). Frames and deaths are built here; exceptions are raised from files of the test's own."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tileiropt.errors import CAUSE_PRECEDENCE, ExitCode, cause_exit_code, verdicts_exit_code
from tileiropt.harness.blame import (
    KERNEL_STAGE,
    REFERENCE_STAGE,
    Death,
    Frame,
    Owners,
    blame_death,
    blame_exception,
    blame_frames,
    stderr_frames,
)
from tileiropt.harness.exception_sites import PACKAGE_FOLDER
from tileiropt.schema import Cause

TOOL_FILE = str(PACKAGE_FOLDER / "capture" / "replay.py")
USER = "/work/lib/ops.py"
THIRD = "/usr/lib/python3/site-packages/torch/functional.py"


def _frames(*files: str) -> list[Frame]:
    return [Frame(file, 10 + i, f"f{i}") for i, file in enumerate(files)]


@pytest.mark.parametrize(("files", "stage", "cause"), [
    ((TOOL_FILE, USER), KERNEL_STAGE, Cause.KERNEL),  # raised in the user's code
    ((TOOL_FILE, USER, THIRD), KERNEL_STAGE, Cause.KERNEL),  # a third party called by the user's code
    ((TOOL_FILE,), KERNEL_STAGE, Cause.TOOL),  # raised in tileiropt's own frame
    ((USER, TOOL_FILE), KERNEL_STAGE, Cause.TOOL),  # the user's code called back into the tool, which raised
    ((TOOL_FILE, THIRD), KERNEL_STAGE, Cause.UNKNOWN),  # a third party called by the tool: no evidence either way
    ((), KERNEL_STAGE, Cause.UNKNOWN),  # no traceback
    ((TOOL_FILE, THIRD), REFERENCE_STAGE, Cause.REFERENCE),  # the project's reference, wherever its code is
    ((TOOL_FILE,), REFERENCE_STAGE, Cause.TOOL),  # ... unless the tool itself raised
])
def test_the_frames_tell_who_raised(files: tuple[str, ...], stage: str, cause: Cause) -> None:
    blame = blame_frames(_frames(*files), Owners(["/work/lib"]), stage=stage, what="ValueError raised")
    assert blame.cause == cause
    if cause == Cause.UNKNOWN:
        assert blame.why.startswith("could not tell whose failure")


FAULT = 'Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n' \
        f'  File "/work/lib/ops.py", line 9 in crash\n  File "{TOOL_FILE}", line 40 in call\n'
TRACEBACK = f'Traceback (most recent call last):\n  File "{TOOL_FILE}", line 5, in main\n' \
            'RuntimeError: boom\n'


@pytest.mark.parametrize(("death", "cause", "words"), [
    (Death(-9, [], timed_out=30.0), Cause.TIMEOUT, "ran past its time limit"),
    (Death(-int(signal.SIGKILL), ["some output"]), Cause.UNKNOWN, "killed by SIGKILL"),
    (Death(1, ["loading..."]), Cause.UNKNOWN, "exited with code 1"),
    (Death(-int(signal.SIGSEGV), FAULT.splitlines()), Cause.KERNEL, "crashed (SIGSEGV) in the kernel's own code"),
    (Death(1, TRACEBACK.splitlines()), Cause.TOOL, "an error of tileiropt"),
    (Death(1, ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]), Cause.OUT_OF_MEMORY,
     "out of memory"),
    (Death(None, [], words="no worker took it"), Cause.UNKNOWN, "could not tell whose failure"),
])
def test_a_dead_worker_is_evidence(death: Death, cause: Cause, words: str) -> None:
    blame = blame_death(death, ["/work/lib"], during="the config BLOCK=64")
    assert blame.cause == cause and words in blame.why, blame


def test_faulthandler_frames_read_innermost_last() -> None:
    frames = stderr_frames(FAULT.splitlines())
    assert [f.file for f in frames] == [TOOL_FILE, "/work/lib/ops.py"]


def _raise_from(tmp_path: Path, body: str) -> BaseException:
    module = tmp_path / "user_code.py"
    module.write_text(f"def run():\n    {body}\n")
    namespace: dict[str, object] = {}
    exec(compile(module.read_text(), str(module), "exec"), namespace)  # noqa: S102 - the test's own file
    try:
        namespace["run"]()  # type: ignore[operator]
    except BaseException as exc:  # noqa: BLE001 - what was raised is the test's subject
        return exc
    raise AssertionError("did not raise")


@pytest.mark.parametrize(("body", "stage", "cause"), [
    ("raise ValueError('bad shape')", KERNEL_STAGE, Cause.KERNEL),
    ("raise ValueError('bad shape')", REFERENCE_STAGE, Cause.REFERENCE),
    ("import no_such_extension_module_here", KERNEL_STAGE, Cause.ENVIRONMENT),
    ("raise MemoryError()", KERNEL_STAGE, Cause.OUT_OF_MEMORY),
    ("raise RuntimeError('DefaultCPUAllocator: can\\'t allocate memory')", KERNEL_STAGE, Cause.OUT_OF_MEMORY),
    ("raise RuntimeError('No device were detected on your machine !')", KERNEL_STAGE, Cause.ENVIRONMENT),
    ("raise AssertionError('Torch not compiled with CUDA enabled')", KERNEL_STAGE, Cause.ENVIRONMENT),
])
def test_an_exception_is_told_by_its_type_then_its_frames(tmp_path: Path, body: str, stage: str,
                                                          cause: Cause) -> None:
    exc = _raise_from(tmp_path, body)
    assert blame_exception(exc, [str(tmp_path)], stage=stage, reference_is_original=False).cause == cause


def test_a_handled_exception_is_not_why(tmp_path: Path) -> None:
    """An exception the code caught and handled (`__context__`) is not followed; one it was raised from is."""
    module = tmp_path / "probe.py"
    module.write_text("import json\n\n\ndef run():\n    try:\n        json.loads('not json')\n"
                      "    except ValueError:\n        raise RuntimeError('no usable input') from None\n")
    namespace: dict[str, object] = {}
    exec(compile(module.read_text(), str(module), "exec"), namespace)  # noqa: S102 - the test's own file
    with pytest.raises(RuntimeError) as raised:
        namespace["run"]()  # type: ignore[operator]
    assert raised.value.__context__ is not None  # the handled JSON error, raised inside the json package
    blame = blame_exception(raised.value, [str(tmp_path)], stage=KERNEL_STAGE)
    assert blame.cause == Cause.KERNEL and blame.evidence[-1].endswith("probe.py:8 in run"), blame.evidence


def test_the_tool_s_own_exception_types() -> None:
    from tileiropt.capture.replay import PinningError
    from tileiropt.harness.fault_injection import InjectedFault, before_call

    assert blame_exception(PinningError("x"), [], stage=KERNEL_STAGE).cause == Cause.TOOL
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TILEIROPT_INJECT_FAULT", "k")
        with pytest.raises(InjectedFault) as raised:
            before_call("k")
    assert blame_exception(raised.value, [], stage=KERNEL_STAGE).cause == Cause.TOOL


@pytest.mark.parametrize(("cause", "code"), [
    (Cause.KERNEL, ExitCode.FAILED), (Cause.REFERENCE, ExitCode.BAD_INPUT), (Cause.COMPILER, ExitCode.COMPILER),
    (Cause.ENVIRONMENT, ExitCode.ENVIRONMENT), (Cause.TOOL, ExitCode.TOOL),
    (Cause.NONDETERMINISM, ExitCode.NONDETERMINISM), (Cause.TIMEOUT, ExitCode.TIMEOUT),
    (Cause.OUT_OF_MEMORY, ExitCode.OUT_OF_MEMORY), (Cause.UNKNOWN, ExitCode.UNKNOWN), (None, ExitCode.FAILED),
])
def test_one_exit_code_per_cause(cause: Cause | None, code: ExitCode) -> None:
    assert cause_exit_code(cause) == code


def test_a_run_s_code_is_its_first_cause_in_order() -> None:
    assert set(CAUSE_PRECEDENCE) == {c.value for c in Cause}
    assert verdicts_exit_code([]) == ExitCode.OK
    assert verdicts_exit_code([Cause.UNKNOWN, Cause.TOOL]) == ExitCode.TOOL
    assert verdicts_exit_code([Cause.TOOL, Cause.KERNEL]) == ExitCode.FAILED  # the user's code first
    assert verdicts_exit_code([Cause.TIMEOUT, None]) == ExitCode.FAILED  # a verdict without a cause: a plain no
