"""Kernels tuned by a package's own machinery (an Autotuner subclass with a disk cache, an entry object
forwarding `run()` to its own autotuner), `@triton.heuristics` above `@triton.autotune`, a wrapper holding
no autotuner, a kernel's own pruner, a config a compile-time assertion rejects, and a GEMM whose config
function branches on the backend: `apply` never wraps an autotuner twice, the generated file imports with
the TileIR code on, and validation pins each config of the package's autotuner like Triton's own."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tileiropt.apply.apply import transform_source
from tileiropt.project.spec import parse_project
from tileiropt.report.artifacts import load_artifacts
from tileiropt.run.pipeline import run_pipeline
from tileiropt.schema import NOT_RUN, PASS

from shared import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "real" / "pkgs" / "tuned"


def _kernel(name: str, entry: str, reference: str, inputs: dict, **extra) -> dict:
    return {"name": name, "path": "tuned/ops.py", "entry": f"tuned.ops:{entry}", "reference": reference,
            "inputs": inputs, **extra}


KERNELS = [
    _kernel("scale", "scale", "x * 2.0", {"x": [1000]}),
    _kernel("softmax", "softmax", "torch.softmax(x, dim=-1)", {"x": [6, 100]}, atol=1e-5),
    _kernel("add_bias", "add_bias", "x + b", {"x": [1000], "b": [1000]}),
    _kernel("relu", "relu", "torch.relu(x)", {"x": [1000]}),
    _kernel("square", "square", "x * x", {"x": [1000]}),
    _kernel("cube", "cube", "x * x * x", {"x": [1000]}, atol=1e-5),
    {"name": "matmul", "path": "tuned/matmul.py", "entry": "tuned.matmul:matmul", "reference": "a @ b",
     "inputs": {"a": [40, 32], "b": [32, 48]}, "atol": 1e-3, "rtol": 1e-3},
]


def test_apply_adds_to_package_autotuners_and_keys_on_sizes() -> None:
    result = transform_source((FIXTURES / "ops.py").read_text(), str(FIXTURES / "ops.py"))
    out = result.new_source
    by_name = {k.kernel: k for k in result.kernels}
    assert "for d in scale_kernel.configs[:i])][:3]\n            for o, n, s, t in TILEIR_LEVERS" in out  # a package's
    assert "for d in softmax_kernel.configs[:i])][:4]\n            for o, n, s in [" in out  # entry(...) forwards run()
    assert "except (AttributeError, TypeError):  # its autotuner keeps its config list fixed" in out
    # heuristics above autotune: its autotuner is .fn
    assert "    add_bias_kernel.fn.configs = add_bias_kernel.fn.configs + [" in out
    assert "relu_kernel = triton.autotune(" not in out
    assert by_name["relu_kernel"].hint_through == ["passthrough()"]  # its launch hint: measured where it runs
    for kernel in ("scale_kernel", "softmax_kernel", "add_bias_kernel", "square_kernel", "cube_kernel"):
        assert f"{kernel} = triton.autotune(" not in out, kernel
    assert any("disk_autotune(...)" in c.what for c in by_name["scale_kernel"].changes)
    matmul = transform_source((FIXTURES / "matmul.py").read_text(), str(FIXTURES / "matmul.py"))
    assert "for d in matmul_kernel_tileir.configs[:i])][:3]\n        for o, n, s, t in [" in matmul.new_source
    assert "'BLOCK_M': 128" in matmul.new_source  # the config function's names are read, its values never run


@pytest.fixture(scope="module")
def piped(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pkgs")
    shutil.copytree(FIXTURES, folder / "tuned")
    cache = tmp_path_factory.mktemp("tuned-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNED_CACHE_DIR", str(cache))
        project = parse_project({"kernel": KERNELS}, None, folder)
        result = run_pipeline(project, command=["tileiropt", "run"])
    return result, load_artifacts(Path(result.artifacts))


def _records(artifacts, kernel, backend):
    return [r for r in artifacts.validate.records if r.kernel == kernel and r.backend == backend]


def test_every_kernel_passes_with_the_tileir_code_on(piped) -> None:
    result, artifacts = piped
    assert result.exit_code == 0, [(r.kernel, r.backend, r.variant, r.config, r.status, r.reason)
                                   for r in artifacts.validate.records if r.status not in (PASS, NOT_RUN)]
    for kernel in [k["name"] for k in KERNELS]:
        on = _records(artifacts, kernel, "tileir-code-on-interpret")
        assert on and any(r.status == PASS for r in on), kernel
        assert all(r.status in (PASS, NOT_RUN) for r in on), [(r.config, r.status, r.reason) for r in on]


def test_package_autotuner_configs_are_pinned_one_by_one(piped) -> None:
    _, artifacts = piped
    original = [r for r in _records(artifacts, "scale", "interpret") if r.variant == "original"]
    assert sorted(r.config for r in original if r.status == PASS) == [
        "scale_kernel: BLOCK=128, num_warps=4, num_stages=3, num_ctas=1",
        "scale_kernel: BLOCK=256, num_warps=4, num_stages=3, num_ctas=1"]
    derived = [r for r in _records(artifacts, "scale", "tileir-code-on-interpret") if r.status == PASS]
    assert len(derived) > 2 and any("num_stages=2" in r.config for r in derived)


def _block(label: str) -> str:
    return re.search(r"BLOCK=\d+", label).group(0)


def test_pruned_and_skipped_configs_are_not_failures(piped) -> None:
    _, artifacts = piped
    square = {_block(r.config): r for r in _records(artifacts, "square", "interpret") if r.variant == "original"}
    assert square["BLOCK=1024"].status == NOT_RUN and "pruned by the kernel" in square["BLOCK=1024"].reason
    cube = {_block(r.config): r for r in _records(artifacts, "cube", "interpret") if r.variant == "original"}
    assert cube["BLOCK=1024"].status == NOT_RUN and "skipped by the autotuner" in cube["BLOCK=1024"].reason
    assert cube["BLOCK=128"].status == PASS


def test_a_wrapper_without_autotuner_gets_its_hint_at_the_launch_to_be_measured(piped) -> None:
    _, artifacts = piped
    on = _records(artifacts, "relu", "tileir-code-on-interpret")
    assert all(r.status == PASS for r in on)
    through = [k.hint_through for f in artifacts.apply.files for k in f.kernels if k.kernel == "relu_kernel"]
    assert through == [["passthrough()"]], through
