"""Kernels inside module-level blocks (`if HAS_TRITON:`, `try:` / `except ImportError:`, `with ...:`), as
packages that keep Triton optional write them: discovered with their branch, a name another branch binds
noted once (TIR203), rewritten in place by apply (the output imports with and without Triton and computes what
the original does), captured and replayed like any kernel."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tileiropt import __version__
from tileiropt.apply.apply import transform_source
from tileiropt.apply.config_values import Unresolvable, resolve_configs
from tileiropt.classify.blocks import alternatives, module_statements
from tileiropt.classify.classify import classify_source
from tileiropt.classify.discovery import discover, scan_file
from tileiropt.classify.source import SourceText
from tileiropt.harness.gate import GATE_MARKER
from tileiropt.project import entries
from tileiropt.releases import get_release

from shared import ROOT, TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "branches"
OPS = FIXTURES / "optional_ops.py"
EXPECTED = FIXTURES / "optional_ops_tileir.expected"  # apply's output, the version as VERSION
ASKED = ("all",)  # hint-only autotuners asked for: their placement inside blocks is what is shown
RELEASE = get_release("13.4")


# ----------------------------------------------------------------------------- discovery


def test_kernels_inside_blocks_are_discovered_with_their_branch() -> None:
    scanned = scan_file(OPS)
    found = [(k.name, k.first_line, k.line, k.condition, [launch.line for launch in k.launches])
             for k in scanned.module.kernels]
    assert found == [("shift_kernel", 23, 25, "if HAS_TRITON", [40]),
                     ("softplus_kernel", 30, 31, "if HAS_TRITON", [46]),
                     ("halve_kernel", 63, 64, "with contextlib.suppress(NameError)", [72])]
    shift = scanned.module.kernels[0]
    assert shift.autotune is not None and shift.autotune.configs_kind == "name"
    assert [c.kwargs for c in shift.autotune.configs] == [{"BLOCK": "64"}, {"BLOCK": "128"}]  # the list in the `if`
    # the Triton branch's definitions, not the `else:` fallbacks of the same names
    assert {name: node.lineno for name, node in scanned.functions.items()} == {
        "shift_kernel": 25, "softplus_kernel": 31, "shift": 37, "softplus": 43, "halve_kernel": 64, "halve": 69}
    assert scanned.module.module_functions["softplus_kernel"] == 31
    assert [(d.line, d.kind, d.condition) for d in scanned.module.definitions["softplus_kernel"]] == [
        (31, "kernel", "if HAS_TRITON"), (51, "function", "else of if HAS_TRITON")]


BLOCK_KINDS = '''\
import os
from typing import TYPE_CHECKING

import triton
import triton.language as tl

try:
    @triton.jit
    def in_try(x_ptr):
        tl.store(x_ptr, 1.0)
except ImportError:
    @triton.jit
    def in_except(x_ptr):
        tl.store(x_ptr, 2.0)
else:
    @triton.jit
    def in_try_else(x_ptr):
        tl.store(x_ptr, 3.0)
finally:
    @triton.jit
    def in_finally(x_ptr):
        tl.store(x_ptr, 4.0)

if TYPE_CHECKING:
    pass
elif os.environ.get("WIDE"):
    @triton.jit
    def in_elif(x_ptr):
        tl.store(x_ptr, 5.0)
else:
    with open(os.devnull) as sink:
        @triton.jit
        def in_else_with(x_ptr):
            tl.store(x_ptr, 6.0)


def factory():
    @triton.jit
    def in_function(x_ptr):
        tl.store(x_ptr, 7.0)
    return in_function
'''


def test_every_block_kind_names_its_condition_and_functions_stay_as_they_were() -> None:
    kernels = discover(BLOCK_KINDS, "kinds.py").kernels
    assert [(k.name, k.condition) for k in kernels] == [
        ("in_try", "try"), ("in_except", "except ImportError"), ("in_try_else", "else of try"),
        ("in_finally", "finally"), ("in_elif", "elif os.environ.get(\"WIDE\")"),
        ("in_else_with", "else of elif os.environ.get(\"WIDE\") > with open(os.devnull)"),
        ("in_function", None)]  # inside a function: found as before, not a module-level kernel
    assert "in_function" not in discover(BLOCK_KINDS, "kinds.py").module_functions


def test_which_arms_are_alternatives() -> None:
    tree = ast.parse(BLOCK_KINDS)
    branch = {s.name: b for s, b in module_statements(tree, SourceText(BLOCK_KINDS)) if isinstance(s, ast.FunctionDef)}
    assert alternatives(branch["in_try"], branch["in_except"])  # the body and a handler
    assert not alternatives(branch["in_try"], branch["in_try_else"])  # `else` runs after the body
    assert not alternatives(branch["in_except"], branch["in_finally"])  # `finally` runs with every arm
    assert alternatives(branch["in_elif"], branch["in_else_with"])  # `elif` and its `else`
    assert not alternatives(branch["in_try"], branch["in_elif"])  # two separate blocks both run
    assert not alternatives(branch["in_try"], branch["in_try"])


# ----------------------------------------------------------------------------- classify: TIR203


def test_a_fallback_of_the_same_name_is_one_note_and_the_triton_kernel_is_analysed() -> None:
    result = classify_source(OPS.read_text(), str(OPS), release=RELEASE)
    records = {r.kernel: r for r in result.kernels}
    assert [r.kernel for r in result.kernels] == ["shift_kernel", "softplus_kernel", "halve_kernel"]
    assert records["softplus_kernel"].line == 31 and records["softplus_kernel"].pointer_params == ["x_ptr", "out_ptr"]
    (finding,) = [f for r in result.kernels for f in r.findings if f.code == "TIR203"]
    assert (finding.severity, finding.line) == ("perf", 31)
    assert finding.message == (
        "softplus_kernel is a Triton kernel under `if HAS_TRITON` (line 31) and a plain-Python function under "
        "`else of if HAS_TRITON` (line 51): classify and apply use the Triton kernel; the other branch runs "
        "without TileIR code")
    assert finding.hint == ("a fallback for machines without Triton needs no change: `# noqa: TIR203` on the "
                            "`def` line silences it")
    silenced = OPS.read_text().replace("def softplus_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):",
                                       "def softplus_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: TIR203")
    assert not [f for r in classify_source(silenced, "s.py", release=RELEASE).kernels for f in r.findings]


TWO_KERNELS = '''\
import os

import triton
import triton.language as tl

if os.environ.get("WIDE"):
    @triton.jit
    def fill_kernel(x_ptr):
        tl.store(x_ptr, 2.0)
elif os.environ.get("NARROW"):
    @triton.jit
    def fill_kernel(x_ptr, y_ptr):
        tl.store(y_ptr, tl.load(x_ptr))
'''


def test_two_kernels_of_one_name_on_two_branches_one_note_the_first_analysed() -> None:
    result = classify_source(TWO_KERNELS, "two.py", release=RELEASE)
    (record,) = result.kernels
    assert (record.kernel, record.line, record.pointer_params) == ("fill_kernel", 8, ["x_ptr"])
    (finding,) = record.findings
    assert (finding.code, finding.line) == ("TIR203", 8)
    assert finding.message == (
        "fill_kernel is a Triton kernel under `if os.environ.get(\"WIDE\")` (line 8) and a different Triton kernel "
        "under `elif os.environ.get(\"NARROW\")` (line 12): classify and apply use the kernel at line 8; the other "
        "branch runs without TileIR code")
    assert finding.hint == "give each kernel its own name and bind the shared name to one of them after the block"
    report = transform_source(TWO_KERNELS, "two.py", release=RELEASE).kernels
    assert [r.kernel for r in report] == ["fill_kernel"]
    assert report[0].skipped[-1] == ("the Triton kernel of fill_kernel at line 12 (under `elif "
                                     "os.environ.get(\"NARROW\")`) left alone: another branch of the block (TIR203)")


def test_sequential_top_level_redefinitions_are_not_branches() -> None:
    source = ("import triton\nimport triton.language as tl\n\n"
              "@triton.jit\ndef fill_kernel(x_ptr):\n    tl.store(x_ptr, 2.0)\n\n"
              "@triton.jit\ndef fill_kernel(x_ptr, y_ptr):\n    tl.store(y_ptr, tl.load(x_ptr))\n")
    result = classify_source(source, "seq.py", release=RELEASE)
    assert [(r.kernel, r.line) for r in result.kernels] == [("fill_kernel", 5), ("fill_kernel", 9)]  # as before
    assert not [f for r in result.kernels for f in r.findings]


# ----------------------------------------------------------------------------- config lists on branches


def test_a_config_list_assigned_on_two_branches_is_derived_at_import() -> None:
    source = ("import triton\nif A:\n    CONFIGS = [triton.Config({'BLOCK': 64})]\n"
              "else:\n    CONFIGS = [triton.Config({'BLOCK': 32})]\n")
    configs = ast.parse("CONFIGS", mode="eval").body
    with pytest.raises(Unresolvable) as caught:
        resolve_configs(ast.parse(source), configs, {"triton"})
    assert str(caught.value) == ("CONFIGS is assigned more than once, inside module-level blocks: which one applies "
                                 "depends on the branch taken at import")
    once = "import triton\nif A:\n    CONFIGS = [triton.Config({'BLOCK': 64})]\n"
    assert [c.kwargs for c in resolve_configs(ast.parse(once), configs, {"triton"})] == [{"BLOCK": 64}]


# ----------------------------------------------------------------------------- apply


def _elide_gate(new_source: str) -> str:
    """The output with the tool's version as VERSION: the golden file pins what goes where."""
    return new_source.replace(__version__, "VERSION")


def test_apply_rewrites_kernels_in_place_inside_their_blocks() -> None:
    result = transform_source(OPS.read_text(), str(OPS), release=RELEASE, hint_autotune=ASKED)
    assert _elide_gate(result.new_source) == EXPECTED.read_text()
    reports = {r.kernel: r for r in result.kernels}
    assert [c.what for c in reports["halve_kernel"].changes][-1] == (
        "TileIR code placed inside `with contextlib.suppress(NameError)`, right after the kernel")
    assert reports["softplus_kernel"].skipped == [
        "the plain-Python definition of softplus_kernel at line 51 (under `else of if HAS_TRITON`) left alone: "
        "another branch of the block (TIR203)"]
    assert not reports["shift_kernel"].skipped


def test_a_module_importing_triton_unconditionally_keeps_the_gate_at_the_top_level() -> None:
    source = OPS.read_text().replace("try:\n    import triton\n    import triton.language as tl\n\n"
                                     "    HAS_TRITON = True\nexcept ImportError:\n    HAS_TRITON = False\n",
                                     "import triton\nimport triton.language as tl\n\nHAS_TRITON = True\n")
    new_source = transform_source(source, "plain.py", release=RELEASE).new_source
    after_marker = new_source[new_source.index(GATE_MARKER):]
    assert "try:\n    import triton as _tileiropt_triton\n" not in new_source
    assert "\ndef is_tileir():\n" in after_marker  # at the top level, as for any file
    assert new_source.index(GATE_MARKER) < new_source.index("\nif HAS_TRITON:\n")


def _write_rewritten(tmp_path: Path) -> Path:
    out = tmp_path / "optional_ops_tileir.py"
    out.write_text(transform_source(OPS.read_text(), str(OPS), release=RELEASE, hint_autotune=ASKED).new_source)
    return out


_RUN = r"""
import importlib.util, json, os, sys
if sys.argv[3] == "no-triton":
    sys.modules["triton"] = None  # `import triton` raises ImportError, as on a machine without Triton
else:
    os.environ["TRITON_INTERPRET"] = "1"
    from tileiropt.harness.stand_ins import install_interpreter_device
    install_interpreter_device()
    if os.environ.get("TILEIROPT_FORCE_TILEIR") == "1":  # the harness turns the TileIR code on
        from tileiropt.harness.tileir_surface import force_tileir_code
        force_tileir_code()
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

original, rewritten = load(sys.argv[1], "original_ops"), load(sys.argv[2], "rewritten_ops")
x = torch.linspace(-3.0, 3.0, 300)
calls = {"shift": lambda m: m.shift(x, 2.0), "softplus": lambda m: m.softplus(x)}
if hasattr(original, "halve"):
    calls["halve"] = lambda m: m.halve(x)
result = {"has_triton": rewritten.HAS_TRITON, "gate": rewritten.is_tileir(),
          "halve_defined": hasattr(rewritten, "halve")}
if result["has_triton"]:
    from tileiropt.harness.autotuners import autotuners, function_name
    result["softplus_kernel"] = function_name(rewritten.softplus_kernel)
    result["configs"] = {name: len(t.configs) for name, t in autotuners(rewritten).items()}
for name, call in calls.items():
    a, b = call(original), call(rewritten)
    result[name] = [bool(torch.equal(a, b)), float((a - b).abs().max())]
print(json.dumps(result))
"""


def _run(original: Path, rewritten: Path, mode: str, force: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TILEIROPT_FORCE_TILEIR", "ENABLE_TILE")}
    if force is not None:
        env["TILEIROPT_FORCE_TILEIR"] = force
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _RUN, str(original), str(rewritten), mode], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_rewritten_file_runs_and_equals_the_original_under_the_interpreter(tmp_path: Path) -> None:
    rewritten = _write_rewritten(tmp_path)
    on = _run(OPS, rewritten, "interpret", "1")  # the TileIR code on: the blocks inside `if`/`with` ran
    assert on["gate"] is True and on["has_triton"] is True and on["halve_defined"] is True
    assert on["softplus_kernel"] == "softplus_kernel"  # its rewrite in place, its hint tuner inside `if HAS_TRITON:`
    assert set(on["configs"]) == {"shift_kernel", "softplus_kernel", "halve_kernel"}
    assert on["configs"]["shift_kernel"] > 2 and on["configs"]["halve_kernel"] > 1  # TileIR configs attached
    assert on["shift"] == [True, 0.0] and on["halve"] == [True, 0.0]
    assert not on["softplus"][0] and on["softplus"][1] < 1e-5  # exp2 in place: equal up to rounding
    off = _run(OPS, rewritten, "interpret", None)  # gate off: the original module exactly
    assert off["gate"] is False and off["softplus_kernel"] == "softplus_kernel"
    assert off["configs"] == {"shift_kernel": 2}
    assert off["shift"] == off["softplus"] == off["halve"] == [True, 0.0]


def test_rewritten_file_imports_and_falls_back_without_triton(tmp_path: Path) -> None:
    rewritten = _write_rewritten(tmp_path)
    result = _run(OPS, rewritten, "no-triton", "1")
    assert result == {"has_triton": False, "gate": False, "halve_defined": False,
                      "shift": [True, 0.0], "softplus": [True, 0.0]}


# ----------------------------------------------------------------------------- capture and replay

_REPLAY = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from tileiropt.harness.stand_ins import install_interpreter_device
install_interpreter_device()
import torch
from tileiropt.harness.harness import import_kernel_module
from tileiropt.capture.replay import build_inputs, launcher

from tileiropt.project.launch import CapturedLaunch
launches = [CapturedLaunch.from_json(item) for item in json.loads(open(sys.argv[1]).read())]
modules = [import_kernel_module(path) for path in sys.argv[2:]]  # the original, then the rewritten file
result = {}
for launch in launches:
    outputs = [launcher(module, launch)(build_inputs(launch, 0, "cpu"), {}, {}) for module in modules]
    result[launch.kernel] = all(torch.equal(outputs[0][k], out[k]) for out in outputs[1:] for k in outputs[0])
print(json.dumps(result))
"""


def test_launches_of_kernels_inside_blocks_are_captured_and_replayed(tmp_path: Path) -> None:
    from tileiropt.capture.capture import run_capture

    folder = tmp_path / "pkg"
    folder.mkdir()
    ops = folder / "optional_ops.py"
    ops.write_text(OPS.read_text())
    captured = run_capture([ops], interpret=True, cap=1, budget=120, cwd=folder)
    assert captured.ended == "stopped: every kernel captured", (captured.ended, captured.stderr_tail)
    assert sorted(launch.kernel for launch in captured.launches) == ["halve_kernel", "shift_kernel",
                                                                        "softplus_kernel"]
    spec = tmp_path / "launches.json"
    spec.write_text(json.dumps([launch.to_json() for launch in captured.launches]))
    rewritten = _write_rewritten(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("TILEIROPT_FORCE_TILEIR", "ENABLE_TILE")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _REPLAY, str(spec), str(ops), str(rewritten)], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "shift_kernel": True, "softplus_kernel": True, "halve_kernel": True}


# ----------------------------------------------------------------------------- entries and the guarded import


def test_a_wrapper_inside_a_block_is_a_module_level_name() -> None:
    assert entries.name_missing(OPS, "halve") is None and entries.name_missing(OPS, "softplus") is None
    assert entries.name_missing(OPS, "cube") == "'cube' is not defined at module level in optional_ops.py"
    assert entries.signature_problem(OPS, ("halve",), 2, []) == (
        "the call does not fit halve(x): too many positional arguments")
    assert entries.signature_problem(OPS, ("shift",), 5, []) is None  # two branches' shift(): not checked


def test_a_failing_call_inside_a_module_level_if_does_not_hide_the_kernels_after_it(tmp_path: Path) -> None:
    from tileiropt.harness import stand_ins
    from tileiropt.harness.harness import import_kernel_module

    source = OPS.read_text().replace("if HAS_TRITON:\n", "if HAS_TRITON:\n    int('warm-up needs a GPU')\n", 1)
    path = tmp_path / "self_check_ops.py"
    path.write_text(source)
    module = import_kernel_module(path)
    assert hasattr(module, "softplus_kernel") and hasattr(module, "shift")
    assert [what for what, _ in stand_ins._failed(str(path))] == [
        "ValueError: invalid literal for int() with base 10: 'warm-up needs a GPU'"]


_TRY_RUN = r"""
import importlib.util, json, os, sys
if sys.argv[2] == "no-triton":
    sys.modules["triton"] = None
else:
    os.environ["TRITON_INTERPRET"] = "1"
    from tileiropt.harness.stand_ins import install_interpreter_device
    install_interpreter_device()
    if os.environ.get("TILEIROPT_FORCE_TILEIR") == "1":  # the harness turns the TileIR code on
        from tileiropt.harness.tileir_surface import force_tileir_code
        force_tileir_code()
import torch
spec = importlib.util.spec_from_file_location("try_ops_tileir", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps({"gate": module.is_tileir(), "kernel": type(getattr(module, "twice_kernel", None)).__name__,
                  "sum": float(module.twice(torch.ones(100)).sum())}))
"""


@pytest.mark.parametrize("mode, expected", [
    ("interpret", {"gate": True, "kernel": "InterpretedFunction", "sum": 200.0}),  # its launch passes the hint
    ("no-triton", {"gate": False, "kernel": "NoneType", "sum": 200.0}),  # the `except ImportError:` fallback
])
def test_kernels_in_the_try_that_imports_triton_get_a_gate_needing_no_triton(tmp_path: Path, mode: str,
                                                                            expected: dict) -> None:
    source = (FIXTURES / "try_ops.py").read_text()
    new_source = transform_source(source, "try_ops.py", release=RELEASE).new_source
    assert 'if TILEIR else {})' in new_source and "autotune" not in new_source
    gate = new_source.index(GATE_MARKER)
    assert "_tileiropt_triton" not in new_source  # the gate is the standard library only: nothing to guard
    assert gate < new_source.index("\ntry:\n    import triton\n")  # before the block that defines the kernel
    out = tmp_path / "try_ops_tileir.py"
    out.write_text(new_source)
    env = {k: v for k, v in os.environ.items() if k != "ENABLE_TILE"}
    env.update({"TILEIROPT_FORCE_TILEIR": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])})
    done = subprocess.run([sys.executable, "-c", _TRY_RUN, str(out), mode], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == expected
