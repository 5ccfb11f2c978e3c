"""TileIR hints at a kernel's launch: `apply` writes them as a gated literal, the tool's replay reads them back
from the optimized file, and the TileIR surface drops them where the backend is PTX."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tileiropt.apply.apply import transform_source
from tileiropt.harness.gate_off import gate_off
from tileiropt.harness.launch_hints import hint_splat, launch_hints
from tileiropt.harness.tileir_surface import _launch_drops_hints
from tileiropt.releases import get_release

from shared import EXAMPLES, TEST_FIXTURES

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path) -> types.ModuleType:
    module = types.ModuleType(path.stem)
    module.__file__ = str(path)
    return module


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layer_norm", "row_sum"])
def test_the_hints_apply_writes_are_read_back_and_the_gate_off_reads_the_original(name: str, tmp_path: Path) -> None:
    source = (EXAMPLES / f"{name}.py").read_text()
    result = transform_source(source, f"{name}.py", release=get_release("13.4"))
    written = tmp_path / f"{name}_tileir.py"
    written.write_text(result.new_source)
    (kernel,) = [k for k in result.kernels if any("at its launch" in c.what for c in k.changes)]
    expected = {"elementwise": 4, "norm": 2, "reduction": 2}[kernel.kernel_class]
    assert launch_hints(_module(written), kernel.kernel) == {"occupancy": expected}
    assert launch_hints(_module(EXAMPLES / f"{name}.py"), kernel.kernel) == {}  # the original has none
    assert "autotune(" not in result.new_source.replace(source, "")  # no autotuner where the author chose none
    off = gate_off(result.new_source)
    launch_lines = [line for line in source.splitlines() if f"{kernel.kernel}[" in line]
    assert launch_lines and all(line in off.splitlines() for line in launch_lines)


def test_a_splat_of_another_shape_is_not_read_as_hints(tmp_path: Path) -> None:
    path = tmp_path / "k.py"
    path.write_text("k[(1,)](x, **opts)\nk[(1,)](x, **({'occupancy': n} if on() else {}))\n"
                    "k[(1,)](x, **({'num_warps': 4} if on() else {}))\n"
                    f"j[(1,)](x, {hint_splat({'occupancy': 8}, 'gate')})\n")
    assert launch_hints(_module(path), "k") == {}
    assert launch_hints(_module(path), "j") == {"occupancy": 8}


def test_a_release_without_a_class_start_value_writes_no_launch_hint() -> None:
    source = (EXAMPLES / "matmul.py").read_text()
    result = transform_source(source, "matmul.py", release=get_release("13.4"))
    assert "if TILEIR else {})" not in result.new_source  # a dot kernel: occupancy 1, TileIR's default


def test_the_surface_drops_a_launch_s_hints_unless_the_kernel_takes_a_parameter_of_that_name() -> None:
    class Jit:
        def __init__(self, arg_names: list[str]):
            self.arg_names = arg_names

        def run(self, *args, grid, warmup, **kwargs):
            return args, kwargs

    _launch_drops_hints(Jit)
    _launch_drops_hints(Jit)  # once: the second call changes nothing
    assert Jit(["x"]).run(1, grid=(1,), warmup=False, occupancy=4, num_warps=8) == ((1,), {"num_warps": 8})
    assert Jit(["x", "occupancy"]).run(1, grid=(1,), warmup=False, occupancy=4) == ((1,), {"occupancy": 4})


def test_the_optimized_example_runs_with_its_launch_hint_under_the_tileir_surface(tmp_path: Path) -> None:
    """A program launching through the optimized file's own launch site, the TileIR code forced on (the gate answers
    yes, the splat passes occupancy), runs and is right on the interpreter."""
    source = (EXAMPLES / "vector_add.py").read_text()
    (tmp_path / "vector_add_tileir.py").write_text(transform_source(source, "vector_add.py").new_source)
    (tmp_path / "drive.py").write_text(
        "import torch\nimport vector_add_tileir as m\n"
        "assert m.is_tileir()\n"
        "x, y = torch.rand(3000), torch.rand(3000)\n"
        "assert torch.equal(m.add(x, y), x + y)\nprint('ok')\n")
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, "-m", "tileiropt.harness.tileir_surface", str(tmp_path / "drive.py")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_kernel_compiled_ahead_through_warmup_gets_its_hint_there(tmp_path: Path) -> None:
    source = (EXAMPLES / "vector_add.py").read_text().replace(
        "add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)",
        "compiled = add_kernel.warmup(x, y, out, n_elements, BLOCK_SIZE=1024,\n"
        "                               grid=(1,))\n    compiled[(4, 1, 1)](x, y, out, n_elements)")
    result = transform_source(source, "vector_add.py", release=get_release("13.4"))
    (kernel,) = result.kernels
    assert [c.what for c in kernel.changes] == [
        'occupancy 4 at its launch under the gate (L35 (.warmup)): **({"occupancy": 4} if TILEIR else {}); '
        "no autotuner added"]
    warmup = ("compiled = add_kernel.warmup(x, y, out, n_elements, BLOCK_SIZE=1024,\n"
              "                               grid=(1,), **({\"occupancy\": 4} if TILEIR else {}))")
    assert warmup in result.new_source
    assert gate_off(result.new_source).count(source.split("def add(")[1]) == 1  # the gate off: the author's text
    written = tmp_path / "vector_add_tileir.py"
    written.write_text(result.new_source)
    assert launch_hints(_module(written), "add_kernel") == {"occupancy": 4}


def test_every_launch_layout_reads_back_as_written_with_the_gate_off() -> None:
    source = (TEST_FIXTURES / "launch_hints" / "layouts.py").read_text()
    result = transform_source(source, "layouts.py", release=get_release("13.4"))
    body = result.new_source[result.new_source.index("def a("):]
    assert gate_off(result.new_source).endswith(source[source.index("def a("):])  # byte for byte
    assert transform_source(result.new_source, "layouts.py").new_source == result.new_source
    assert "BLOCK=1024, **({\"occupancy\": 4} if TILEIR else {}),)" in body  # the trailing comma stays last
    assert "occupancy=2); add_kernel" in body and body.count("occupancy=2") == 1  # its own occupancy: left alone
    assert "add_kernel[(1,)](x, y, out, n, **opts)\n" in body  # its own options may hold it: left alone
    assert body.count("# the input") == 1 and body.count("# launch it") == 1  # comments never copied
    assert body.count('**({"occupancy": 4} if TILEIR else {})') == 4


def test_a_hint_through_a_package_s_wrapper_is_measured_to_reach_the_kernel(tmp_path: Path) -> None:
    """A kernel behind a launch wrapper of its package gets its hint at the launch like any other; whether the
    wrapper passes it on is measured where the TileIR code runs (the options its JIT function received), never
    guessed: a wrapper that drops it leaves the kernel not tuned, saying what was measured."""
    import json
    import shutil

    folder = tmp_path / "wrapped_launch"
    shutil.copytree(TEST_FIXTURES / "wrapped_launch", folder)
    done = subprocess.run([sys.executable, "-m", "tileiropt", "run", "tileiropt.toml"], cwd=folder, text=True,
                          capture_output=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    verdicts = json.loads((folder / ".tileiropt" / "run.json").read_text())["verdicts"]
    assert verdicts["scale"]["bucket"] == "proven"  # PassesOptions hands occupancy to the kernel
    assert verdicts["shift"]["bucket"] == "untuned"
    assert "occupancy does not reach `shift_kernel` through KeepsArguments (measured: " in verdicts["shift"]["text"]
    report = (folder / ".tileiropt" / "report.md").read_text()
    assert "checked: `scale_kernel`: its launch's occupancy reaches the kernel through PassesOptions" in report
    records = json.loads((folder / ".tileiropt" / "validate.json").read_text())["records"]
    forced = [r for r in records if r["backend"] == "tileir-code-on-interpret"]
    assert {tuple(r["provenance"]["options"].get(k, ())) for r in forced for k in r["provenance"]["options"]} == \
        {("occupancy",), ()}
