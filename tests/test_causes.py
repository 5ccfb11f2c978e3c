"""Whose failure it is, end to end: one fault-injection fixture per cause (tests/fixtures/causes, its README), run
as a user runs them (`tileiropt run` on their project file, on the interpreter), each verdict naming its cause in its
own words and exit code. The cause is set where the failure is observed, never read back from a message: the last
test keeps the packages that judge records free of comparisons with a record's text."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tileiropt.errors import ExitCode
from tileiropt.harness.fault_injection import FAULT_ENV

from shared import ROOT, TEST_FIXTURES

# kernel -> (its cause, words its verdict must hold, the exit code its verdict alone gives)
EXPECTED = {
    "kernel_bug": ("kernel", "the original fails its own check", ExitCode.FAILED),
    "reference_raises": ("reference", "the project's reference raised, not the kernel", ExitCode.BAD_INPUT),
    "needs_ext": ("environment", "this machine cannot run the original", ExitCode.ENVIRONMENT),
    "exits_quietly": ("unknown", "whose failure it is could not be told", ExitCode.UNKNOWN),
    "order_dependent_sum": ("nondeterminism", "the original disagrees with itself on the same inputs", ExitCode.OK),
    "killed": ("unknown", "killed by SIGKILL", ExitCode.UNKNOWN),
    "tool_fault": ("tool", "an error of tileiropt, not of the kernel", ExitCode.TOOL),
    "sleeps": ("timeout", "did not finish in the time allowed", ExitCode.TIMEOUT),
    "allocates_too_much": ("out-of-memory", "ran out of memory", ExitCode.OUT_OF_MEMORY),
}


def _run(folder: Path, *kernels: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, FAULT_ENV: "tool_fault", "PYTHONPATH": str(ROOT)}
    selected = [arg for kernel in kernels for arg in ("--kernel", kernel)]
    return subprocess.run([sys.executable, "-m", "tileiropt", "run", "tileiropt.toml", *selected], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def causes_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    folder = tmp_path_factory.mktemp("causes") / "causes"
    shutil.copytree(TEST_FIXTURES / "causes", folder, ignore=shutil.ignore_patterns(".tileiropt", "__pycache__"))
    return folder, _run(folder)


def test_every_fixture_s_verdict_names_its_cause_in_its_own_words(causes_run) -> None:
    from tileiropt.report.verdict import ATTENTION, KernelVerdict
    from tileiropt.schema import Cause

    folder, done = causes_run
    verdicts = json.loads((folder / ".tileiropt" / "run.json").read_text())["verdicts"]
    found = {}
    for kernel, (_, words, code) in EXPECTED.items():
        verdict = verdicts[kernel]
        found[kernel] = (verdict.get("cause"), words in verdict["text"])
        typed = KernelVerdict(verdict["bucket"], verdict["text"], cause=Cause(verdict["cause"]))
        assert typed.exit_code == code, (kernel, verdict)
        assert (verdict["bucket"] == ATTENTION) is (code != ExitCode.OK), (kernel, verdict)
    assert found == {kernel: (cause, True) for kernel, (cause, _, _) in EXPECTED.items()}, verdicts
    # the run's one code: the kernel's own failure first (README: exit codes)
    assert done.returncode == ExitCode.FAILED, done.stderr[-2000:]


def test_a_crash_shows_its_evidence_and_never_blames_the_kernel_without_it(causes_run) -> None:
    folder, _ = causes_run
    records = json.loads((folder / ".tileiropt" / "validate.json").read_text())["records"]
    by_kernel = {r["kernel"]: r for r in records if r["variant"] == "original"}
    killed = by_kernel["killed"]
    assert killed["cause"] == "unknown" and "could not tell whose failure" in killed["reason"]
    tool = by_kernel["tool_fault"]
    assert tool["cause"] == "tool" and tool["evidence"][-1].startswith("tileiropt/harness/fault_injection.py:")
    report = (folder / ".tileiropt" / "report.md").read_text()
    assert "tileiropt/harness/fault_injection.py" in report  # the failing call's last frames, shown
    bug = by_kernel["kernel_bug"]
    assert bug["cause"] == "kernel" and bug["status"] == "fail"


def test_one_cause_alone_gives_its_exit_code(tmp_path: Path) -> None:
    folder = tmp_path / "causes"
    shutil.copytree(TEST_FIXTURES / "causes", folder, ignore=shutil.ignore_patterns(".tileiropt", "__pycache__"))
    done = _run(folder, "tool_fault")
    assert done.returncode == ExitCode.TOOL, done.stderr[-2000:]


PACKAGES_THAT_JUDGE = ("report", "run", "validate", "bench", "contract")
TEXT_FIELDS = {"reason", "detail", "failures", "error", "text", "message", "why", "note"}


def _text_comparisons(tree: ast.AST) -> list[int]:
    """Lines where a record's text field (`x.reason`, `x["reason"]`, ...) is compared: `==`, `in`, `startswith`."""
    def is_text(node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in TEXT_FIELDS
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            return node.slice.value in TEXT_FIELDS
        return False

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(is_text(side) for side in [node.left, *node.comparators]) and \
                not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith", "find", "count") and is_text(node.func.value):
            lines.append(node.lineno)
    return lines


def test_no_decision_compares_a_record_s_text() -> None:
    """Messages are for people: the packages that judge records decide on statuses and causes, never on words."""
    found = []
    for package in PACKAGES_THAT_JUDGE:
        for path in sorted((ROOT / "tileiropt" / package).glob("*.py")):
            found += [f"{path.relative_to(ROOT)}:{line}" for line in _text_comparisons(ast.parse(path.read_text()))]
    assert found == []


def test_the_text_comparison_finder_finds_one() -> None:
    tree = ast.parse("if record.reason.startswith('x'): pass\nok = 'y' in r['reason']\nfine = r.status == 'pass'\n")
    assert _text_comparisons(tree) == [1, 2]
