"""The code copied into generated files and subprocesses, imported and exercised as the modules it lives in:
the gate's own code (`gate_runtime`), the TMA runtime (`launch_runtime`), the capture `sitecustomize`
(`capture_site`), the import audit's subprocess (`audit_importer`), and how their text is copied."""

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

from tileiropt.runtime import capture_hook, capture_site
from tileiropt.transform import audit_importer, gate_runtime, gate_shared, launch_runtime
from tileiropt.transform.copied_source import copied_source
from tileiropt.transform.gate import ACTIVE_FLAG, GATE_SOURCE
from tileiropt.transform.tma_runtime import RUNTIME_MARKER, RUNTIME_SOURCE


@triton.jit
def _plain(x_ptr, n):
    tl.store(x_ptr, n)


def _tuned():
    @triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=4, pre_hook=print)], key=["n"])
    @triton.jit
    def tuned(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr, n)

    return tuned


# ------------------------------------------------------------------------------------------- the copies


def test_the_copies_hold_no_docstring_no_future_and_no_package_import() -> None:
    for module, all_imports in ((gate_shared, False), (gate_runtime, False), (launch_runtime, True)):
        text = copied_source(module, all_imports=all_imports)
        tree = ast.parse(text)
        assert not isinstance(tree.body[0], ast.Expr), module.__name__
        imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        assert all(not isinstance(node, ast.ImportFrom) for node in imports)  # no __future__, no tileiropt
        assert "tileiropt." not in "".join(ast.unparse(node) for node in imports)
        assert not all_imports or not imports
        assert "\n\n\n\n" not in text and text.endswith("\n") and not text.endswith("\n\n")


def test_the_gate_and_the_runtime_are_the_modules_text() -> None:
    assert copied_source(gate_shared) in GATE_SOURCE and copied_source(gate_runtime) in GATE_SOURCE
    assert RUNTIME_SOURCE.lstrip().startswith(RUNTIME_MARKER)
    assert RUNTIME_SOURCE.endswith(copied_source(launch_runtime, all_imports=True))
    namespace: dict = {}
    exec(compile(GATE_SOURCE + RUNTIME_SOURCE, "<gate>", "exec"), namespace)  # standalone: nothing imported
    assert "tileiropt" not in {getattr(v, "__module__", "") or "" for v in namespace.values()}
    assert namespace[ACTIVE_FLAG] is gate_runtime._TILEIR  # same environment, same decision
    assert {name for name in vars(gate_runtime) if name.startswith("_tileiropt_")} <= set(namespace)


# -------------------------------------------------------------------------------------------- the gate


def test_a_config_drops_the_hints_a_ptx_backend_rejects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate_runtime, "_TILEIR_BACKEND", False)
    config = gate_runtime._tileiropt_config({"BLOCK": 64}, occupancy=2, num_ctas=2, num_stages=3, num_warps=8)
    assert (config.kwargs, config.num_ctas, config.num_stages, config.num_warps) == ({"BLOCK": 64}, 1, 3, 8)
    assert config.tileir_dropped == {"occupancy": 2, "num_ctas": 2}
    assert gate_runtime._tileiropt_config({}, num_ctas=None).num_ctas is None  # left to the launch


def test_a_config_keeps_num_ctas_on_the_tileir_backend_and_occupancy_where_config_takes_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate_runtime, "_TILEIR_BACKEND", True)
    monkeypatch.setattr(gate_runtime, "_TILEIR_CONFIG_HINTS", set())  # this Triton's Config: no occupancy
    config = gate_runtime._tileiropt_config({"BLOCK": 64}, occupancy=2, num_ctas=2)
    assert config.num_ctas == 2 and config.tileir_dropped == {"occupancy": 2}


def test_configs_are_added_to_the_own_autotuner_once_sharing_its_pre_hook() -> None:
    tuned = _tuned()
    own = tuned.configs[0]
    added = [gate_runtime._tileiropt_config({"BLOCK": 64}, num_warps=4),
             gate_runtime._tileiropt_config({"BLOCK": 64}, num_warps=4)]
    assert gate_runtime._tileiropt_add_configs(tuned, added) is tuned
    assert [c.kwargs for c in tuned.configs] == [{"BLOCK": 32}, {"BLOCK": 64}]
    assert tuned.configs[0] is own and tuned.configs[1].pre_hook is print


def test_configs_derived_from_the_own_ones_cover_the_levers() -> None:
    tuned = gate_runtime._tileiropt_derive_configs(_tuned(), occupancy=[1, 2], num_ctas=[1], num_stages=[None],
                                                   tiles={"BLOCK": [32, 64]})
    assert sorted(c.kwargs["BLOCK"] for c in tuned.configs) == [32, 32, 64]  # own, then 32 and 64 (occupancy dropped)


def test_a_hint_autotune_wraps_a_plain_kernel_and_names_what_it_cannot_attach_to() -> None:
    wrapped = gate_runtime._tileiropt_hint_autotune(_plain, ["n"], occupancy=[1], num_ctas=[1], num_stages=[None])
    assert isinstance(wrapped, triton.runtime.Autotuner) and wrapped.fn is _plain
    holder = types.SimpleNamespace(fn=types.SimpleNamespace())
    assert gate_runtime._tileiropt_hint_autotune(holder, ["n"], occupancy=[1], num_ctas=[1],
                                                 num_stages=[None]) is holder
    assert "holds no autotuner" in gate_runtime._TILEIROPT_NOT_ATTACHED.pop("kernel")


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
    monkeypatch.setattr(launch_runtime, "_tileiropt_ensure_allocator", lambda: None)  # no GPU scratch here
    tma, pointer = _Kernel(["a", "sm", "sk"]), _Kernel(["a", "sm", "sk"])
    dispatch = launch_runtime._tileiropt_tma_dispatch(tma, pointer, OPERANDS)
    assert dispatch.run(_Tensor(256), 64, 1) == "ran" and dispatch.last_path == "tma"
    assert dispatch.run(_Tensor(258), 64, 1) == "ran" and dispatch.last_path == "pointer"
    assert dispatch.last_reason == "a is not 16-byte aligned"
    assert (len(tma.launches), len(pointer.launches)) == (1, 1)
    dispatch.configs = ["pinned"]  # attribute writes go to both kernels, reads to the TMA one
    assert dispatch.configs == pointer.configs == ["pinned"]


def test_the_cta_guard_divides_the_programs_and_clamps_the_grid() -> None:
    kernel = _Kernel(["x", "NUM_SMS"])
    guard = launch_runtime._TileIROptCtaGuard(kernel, "NUM_SMS")
    guard.run("x", 132, grid=(1000, 2), num_ctas=2)
    (args, kwargs), = kernel.launches
    assert args == ("x", 66) and kwargs["grid"]({}) == (66, 2)
    guard.run("x", NUM_SMS=132, grid=(10,), num_ctas=1)  # one CTA: untouched
    assert kernel.launches[-1] == (("x",), {"NUM_SMS": 132, "grid": (10,), "num_ctas": 1})


def test_the_guard_goes_under_the_autotuner() -> None:
    tuned = _tuned()
    inner = tuned.fn
    assert launch_runtime._tileiropt_guard_ctas(tuned, "n") is tuned
    assert isinstance(tuned.fn, launch_runtime._TileIROptCtaGuard) and tuned.fn.fn is inner


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
