"""The code written into generated files and run in subprocesses, imported and exercised as the modules it lives
in: the gate (`gate`), the TMA runtime (`launch_runtime`), the harness's TileIR surface (`tileir_surface`), the
capture `sitecustomize` (`capture_site`), the import audit's subprocess (`audit_importer`), and how text is copied."""

from __future__ import annotations

import ast
import inspect
import io
import json
import sys
import types
from pathlib import Path

import pytest
import triton
import triton.language as tl

from tileiropt.apply import audit_importer, launch_runtime
from tileiropt.apply.copied_source import copied_source
from tileiropt.apply.tma_runtime import RUNTIME_MARKER, RUNTIME_SOURCE
from tileiropt.capture import hook as capture_hook
from tileiropt.capture import site as capture_site
from tileiropt.harness import tileir_surface
from tileiropt.harness.gate import extended_autotuners, gate_source
from tileiropt.validate.config_repeats import not_attached

from shared import TEST_FIXTURES


def _tuned():
    @triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=4, pre_hook=print)], key=["n"])
    @triton.jit
    def tuned(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr, n)

    return tuned


# ------------------------------------------------------------------------------------------- the copies


def test_the_runtime_copy_holds_no_docstring_no_future_and_no_package_import() -> None:
    text = copied_source(launch_runtime)
    tree = ast.parse(text)
    assert not isinstance(tree.body[0], ast.Expr)
    imports = [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert imports == ["from math import prod as _tileiropt_prod", "import triton as _tileiropt_triton"]
    assert "\n\n\n\n" not in text and text.endswith("\n") and not text.endswith("\n\n")


def test_the_gate_and_the_runtime_are_standalone(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RUNTIME_SOURCE.lstrip().startswith(RUNTIME_MARKER)
    assert RUNTIME_SOURCE.endswith(copied_source(launch_runtime))
    namespace: dict = {}
    exec(compile(gate_source() + RUNTIME_SOURCE, "<gate>", "exec"), namespace)  # standalone: nothing of ours
    assert "tileiropt" not in {getattr(v, "__module__", "") or "" for v in namespace.values()}
    monkeypatch.delenv("ENABLE_TILE", raising=False)
    assert namespace["is_tileir"]() is False
    monkeypatch.setenv("ENABLE_TILE", "1")  # standard Triton with ENABLE_TILE=1 still compiles through PTX
    assert namespace["is_tileir"]() is False


# ------------------------------------------------------------------------------------ the harness's surface


def test_the_surface_turns_the_gate_on_and_drops_only_the_tileir_hints(tileir_code_forced: None) -> None:
    import os

    namespace: dict = {}
    exec(compile(gate_source(), "<gate>", "exec"), namespace)
    assert namespace["is_tileir"]() is True and tileir_surface.is_stand_in() and tileir_surface.tileir_code_on()
    assert os.environ["ENABLE_TILE"] == "1"
    config = triton.Config({"BLOCK": 64}, num_warps=8, num_stages=3, occupancy=2, num_ctas=2)
    assert (config.kwargs, config.num_ctas, config.num_stages, config.num_warps) == ({"BLOCK": 64}, 1, 3, 8)
    assert config.tileir_dropped == {"occupancy": 2, "num_ctas": 2} and "occupancy" not in config.all_kwargs()
    assert triton.Config({}, num_warps=None, num_ctas=None, occupancy=1).num_ctas is None  # left to the launch
    own = triton.Config({"BLOCK": 64}, num_ctas=2)  # the user's own config (no TileIR hint): untouched
    assert own.num_ctas == 2 and not hasattr(own, "tileir_dropped")
    assert tileir_surface.tileir_configs([own, config]) == [config]


def test_the_surface_compiles_a_tileir_config_with_the_warps_its_tile_needs(tileir_code_forced: None) -> None:
    from tileiropt.harness.autotuners import config_label

    big = triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=2, num_stages=3, occupancy=2)
    assert big.num_warps == 8 and big.tileir_hints == {"occupancy": 2, "num_warps": 2}
    assert big.tileir_dropped == {"occupancy": 2, "num_warps": 2} and big.all_kwargs()["num_warps"] == 8
    assert config_label(big) == "BLOCK_K=64, BLOCK_M=256, BLOCK_N=128, num_warps=2, num_stages=3, num_ctas=1, " \
        "occupancy=2"  # the config as the file gives it
    small = triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=2, occupancy=1)
    assert small.num_warps == 2 and "num_warps" not in small.tileir_hints  # two warps hold a 64x64 tile
    own = triton.Config({"BLOCK_M": 256, "BLOCK_N": 128}, num_warps=2)  # the user's own config: untouched
    assert own.num_warps == 2 and config_label(own).startswith("BLOCK_M=256, BLOCK_N=128, num_warps=2")


@pytest.mark.parametrize(("kwargs", "given", "warps"), [
    ({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, 2, 2),  # 4,096 elements a warp at most: as given
    ({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, 2, 4),
    ({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64}, 2, 8),
    ({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64}, 4, 8),  # never past eight
    ({"BLOCK_M": 256, "BLOCK_N": 128}, 16, 16),  # never fewer than given
    ({"BLOCK_SIZE": 65536}, 4, 8),  # a row's block: the tile of one size
    ({"GROUP": 8, "N": 3}, 1, 1),  # no block size
    ({"BLOCK_M": 256, "BLOCK_N": 256}, None, None),  # the launch's default: left to it
])
def test_stand_in_warps_raise_the_given_warps_to_what_the_tile_needs(kwargs: dict, given: int | None,
                                                                     warps: int | None) -> None:
    assert tileir_surface.stand_in_warps(kwargs, given) == warps


def test_the_surface_is_gone_after_the_test() -> None:
    assert not tileir_surface.is_stand_in()
    with pytest.raises(TypeError):
        triton.Config({"BLOCK": 64}, occupancy=2)  # standard Triton's own Config again


_FIXED = """
import triton
import triton.language as tl
from tunerpkg.tuner import fixed_autotune  # a package autotuner whose config list is fixed


@triton.jit
def inner(x, BLOCK: tl.constexpr):
    pass


kern = fixed_autotune([triton.Config({"BLOCK": 32})], key_of=lambda named: (0,))(inner)
took = triton.autotune(configs=[triton.Config({"BLOCK": 32})], key=[])(inner)
if is_tileir():
    try:
        kern.configs += [triton.Config({"BLOCK": 64}, occupancy=2)]
    except (AttributeError, TypeError):
        pass
    took.configs += [triton.Config({"BLOCK": 64}, occupancy=2)]
"""


def test_validation_names_an_autotuner_that_did_not_take_the_configs(tmp_path: Path, tileir_code_forced: None,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.harness.loading import load_kernel_module

    monkeypatch.syspath_prepend(str(TEST_FIXTURES / "suites" / "tunerpkg"))
    path = tmp_path / "fixed_tileir.py"
    path.write_text(gate_source() + _FIXED)
    assert extended_autotuners(path.read_text()) == {"kern", "took"}
    module = load_kernel_module(str(path), str(path), None, "x")
    assert not_attached(module, str(path)) == {"kern": "its autotuner (FixedConfigsTuner) does not take new configs"}


# ----------------------------------------------------------------------------------------- the runtime


class _Tensor:
    def __init__(self, address: int, size: int = 2):
        self.address, self.size = address, size

    def data_ptr(self) -> int:
        return self.address

    def element_size(self) -> int:
        return self.size

    def untyped_storage(self):
        return types.SimpleNamespace(nbytes=lambda: 1 << 20)


class _Kernel:
    def __init__(self, arg_names: list[str]):
        self.arg_names, self.launches, self.configs = arg_names, [], ["own"]

    def run(self, *args, **kwargs):
        self.launches.append((args, kwargs))
        return "ran"


OPERANDS = [("a", (("sm",), ("sk",)), (), "n", None)]


def test_tma_flags_follow_the_launch_arguments() -> None:
    assert launch_runtime._tileiropt_tma_flags(OPERANDS, {"a": _Tensor(256), "sm": 64, "sk": 1}) == ({}, "")
    flags, reason = launch_runtime._tileiropt_tma_flags(OPERANDS, {"a": _Tensor(264), "sm": 64, "sk": 1})
    assert flags is None and reason == "a is not 16-byte aligned"


def test_the_dispatch_launches_the_twin_only_where_tma_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch_runtime._tileiropt_triton, "set_allocator", lambda allocator: None)  # no GPU here
    tma, pointer = _Kernel(["a", "sm", "sk"]), _Kernel(["a", "sm", "sk"])
    dispatch = launch_runtime._tileiropt_tma_dispatch(tma, pointer, OPERANDS)
    assert dispatch.run(_Tensor(256), 64, 1) == "ran" and dispatch.last_path == "tma"
    assert dispatch.run(_Tensor(258), 64, 1) == "ran" and dispatch.last_path == "pointer"
    assert dispatch.last_reason == "a is not 16-byte aligned"
    assert (len(tma.launches), len(pointer.launches)) == (1, 1)
    dispatch.configs = ["pinned"]  # attribute writes go to both kernels, reads to the TMA one
    assert dispatch.configs == pointer.configs == tma.configs == ["pinned"]
    assert dispatch[(4,)](_Tensor(256), 64, 1) == "ran" and tma.launches[-1][1] == {"grid": (4,), "warmup": False}


# ------------------------------------------------------------------------------------ capture and audit


def test_the_sitecustomize_is_the_module_and_installs_the_recorder(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    calls = []
    monkeypatch.setattr(capture_hook, "install", lambda: calls.append("installed"))
    capture_site.start_recorder()
    assert calls == ["installed"]

    def broken() -> None:
        raise OSError("no room")

    monkeypatch.setattr(capture_hook, "install", broken)
    capture_site.start_recorder()  # never raises into the user's program
    assert capsys.readouterr().err == "tileiropt capture: the recorder is not installed (OSError: no room)\n"
    assert 'if __name__ == "sitecustomize":' in inspect.getsource(capture_site)


def test_the_import_audit_reports_each_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "orig.py").write_text("VALUE = 1\n")
    (tmp_path / "gen.py").write_text("VALUE = 1 / 0\n")
    (tmp_path / "bad.py").write_text("import not_a_module_here\n")
    row = audit_importer.check_item({"generated": str(tmp_path / "gen.py"), "original": str(tmp_path / "orig.py"),
                                     "module": None})
    assert row["error"] == "ZeroDivisionError: division by zero"
    row = audit_importer.check_item({"generated": str(tmp_path / "gen.py"), "original": str(tmp_path / "bad.py"),
                                     "module": None})
    assert row["original_fails"].startswith("ModuleNotFoundError")
    items = [{"generated": str(tmp_path / "orig.py"), "original": str(tmp_path / "orig.py"), "module": None}]
    monkeypatch.setattr(audit_importer.stand_ins, "install_interpreter_device", lambda: None)
    monkeypatch.setattr(audit_importer.stand_ins, "skip_module_benchmarks", lambda: None)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(items)))
    audit_importer.main()
    assert json.loads(capsys.readouterr().out) == [{"original": str(tmp_path / "orig.py"), "twice": []}]
