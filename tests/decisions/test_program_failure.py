"""The user's program: what failed, and where.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# --------------------------------------------------------------------------- the user's program: what failed, where

PY_TRACEBACK = """collected nothing
Traceback (most recent call last):
  File "/work/proj/two.py", line 27, in <module>
    main()
  File "/work/proj/two.py", line 20, in main
    scale(x)
  File "{torch}/functional.py", line 9, in scale
    raise NotImplementedError("scale is not finished")
NotImplementedError: scale is not finished
"""
PYTEST_OUTPUT = """==== ERRORS ====
tests/test_ops.py:3: in <module>
    import missing_pkg
E   ModuleNotFoundError: No module named 'missing_pkg'
1 error in 3.09s
"""


@pytest.mark.parametrize(("output", "code", "summary", "needs_gpu"), [
    ("", 1, "exit status 1 (no output)", False),
    ("first\nlast line\n\n", 2, "exit status 2 (last line)", False),
    ("", -9, "killed by SIGKILL (no output)", False),
    ("", -11, "killed by SIGSEGV (no output)", False),
    ("", None, "no exit status (no output)", False),
    (PYTEST_OUTPUT, 2, "ModuleNotFoundError: No module named 'missing_pkg' at tests/test_ops.py:3 (exit status 2; "
     "the program needs it: pip install missing_pkg)", False),
    ("ModuleNotFoundError: No module named 'pkg.sub'\n", 1,
     "ModuleNotFoundError: No module named 'pkg.sub' (exit status 1; the program needs it: pip install pkg)", False),
    ("RuntimeError: Found no NVIDIA driver on your system\n", 1,
     "RuntimeError: Found no NVIDIA driver on your system (exit status 1)", True),
    ("AssertionError: Torch not compiled with CUDA enabled\n", 1,
     "AssertionError: Torch not compiled with CUDA enabled (exit status 1)", True),
])
def test_program_failure_summary(output: str, code: int | None, summary: str, needs_gpu: bool) -> None:
    from tileiropt.capture.program_failure import read_failure

    failure = read_failure(output, code, "/work/proj")
    assert (failure.summary(), failure.needs_gpu) == (summary, needs_gpu)


def test_program_failure_names_the_innermost_frame_outside_installed_packages() -> None:
    import sysconfig

    from tileiropt.capture.program_failure import read_failure

    output = PY_TRACEBACK.format(torch=sysconfig.get_paths()["purelib"] + "/torch")
    failure = read_failure(output, 1, "/work/proj")
    assert failure.summary() == "NotImplementedError: scale is not finished at two.py:20 (exit status 1)"
    assert failure.output[-1] == "NotImplementedError: scale is not finished"
    assert read_failure(output, 1, "/elsewhere").where == "/work/proj/two.py:20"


def test_program_failure_never_names_the_tools_own_recorder_as_the_place() -> None:
    from pathlib import Path

    import tileiropt
    from tileiropt.capture.program_failure import read_failure

    hook = Path(tileiropt.__file__).parent / "capture" / "hook.py"
    output = (f'Traceback (most recent call last):\n  File "/work/proj/07.py", line 40, in <module>\n    run()\n'
              f'  File "{hook}", line 384, in recording\n    return launch()\n'
              "FileNotFoundError: [Errno 2] No such file or directory: 'libdevice.10.bc'\n")
    assert read_failure(output, 1, "/work/proj").where == "07.py:40"


@pytest.mark.parametrize(("atomics", "backend", "status"), [
    (False, "ptx", "fail"), (False, "interpret", "fail"),
    (True, "interpret", "fail"),  # the interpreter runs programs one after another: its atomics are deterministic
    (True, "ptx", "pass"),  # on a GPU a self-check summing through atomics may fail on one run only
])
def test_an_optimized_file_whose_own_self_check_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       atomics: bool, backend: str, status: str) -> None:
    from tileiropt.harness import stand_ins
    from tileiropt.harness.backends import BACKENDS
    from tileiropt.harness.provenance import Provenance
    from tileiropt.schema import PASS
    from tileiropt.validate.cases import Case
    from tileiropt.validate.judge import Judged
    from tileiropt.validate.run import file_uses_atomics
    from tileiropt.validate.worker import CaseRunner

    original = tmp_path / "k.py"
    # a kernel's atomic call decides, not the word
    update = "tl.atomic_add(p, 1)" if atomics else "tl.store(p, 1)  # no atomic_add here"
    original.write_text(f"import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(p):\n    {update}\n")
    monkeypatch.setattr(stand_ins, "raised_only_in", lambda path, orig: [("AssertionError", "k_tileir.py:9")])
    case = Case(id=0, kernel="k", variant="optimized", path=str(tmp_path / "k_tileir.py"), entry="k",
                reference="original", shapes={}, dtypes={}, atol=0.0, rtol=0.0, original_path=str(original),
                file_atomics=file_uses_atomics(str(original)))  # as the parent plans it
    record = CaseRunner(case, BACKENDS[backend], False, Provenance(), None).record("cfg", Judged(PASS))
    assert record["status"] == status
    assert record["reason"].startswith("the optimized file's own top-level call raised where the original's did not: "
                                       "AssertionError (at k_tileir.py:9)")
    assert ("not counted as a failure" in record["reason"]) is (status == "pass")


