"""apply: before/after rewrites, idempotence, the structural guarantee (PTX path unchanged) and
the TileIR space under a simulated TileIR backend."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from collections import Counter
from pathlib import Path

import libcst as cst
import pytest
import triton
from conftest import gate_of
from typer.testing import CliRunner

from tileiropt.apply.apply import apply_file, transform_source
from tileiropt.cli import app
from tileiropt.errors import UserError
from tileiropt.harness.autotuners import autotuners, config_label, function_name
from tileiropt.harness.gate import GATE_MARKER
from tileiropt.harness.gate_off import gate_off
from tileiropt.releases import get_release

from shared import EXAMPLES, ROOT, write_rewrite

EXAMPLE_FILES = sorted(p for p in EXAMPLES.glob("*.py") if not p.stem.endswith("_tileir"))

AUTOTUNED = textwrap.dedent('''
    import triton
    import triton.language as tl


    def hook(nargs):
        pass


    @triton.autotune(
        configs=[triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=4, pre_hook=hook)],
        key=["M", "N"],
    )
    @triton.jit
    def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        acc = tl.dot(tl.load(a_ptr), tl.load(b_ptr))
        tl.store(c_ptr, tl.exp(acc))
''')

HINT_ONLY = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n_elements, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n_elements)
        tl.store(y_ptr + offs, x * 2, mask=offs < n_elements)


    def scale(x, y):
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, num_warps=4)
        return y
''')


def _classes(kind: str):
    return lambda info, kernel: kind


def _statements(source: str) -> list[str]:
    module = cst.parse_module(source)
    return [module.code_for_node(statement) for statement in module.body]


def assert_original_preserved(before: str, after: str) -> None:
    """Every top-level statement of the original appears, byte-identical and in order, in the output as the gate
    off reads it (an in-place rewrite `(a if TILEIR else b)` read as `b`)."""
    after = gate_off(after)
    position = 0
    for statement in _statements(before):
        found = after.find(statement, position)
        assert found >= 0, f"statement not preserved:\n{statement[:300]}"
        position = found + len(statement)


# ----------------------------------------------------------------------------- before / after


def test_autotuned_kernel_gets_its_rewrite_in_place_and_configs_in_its_own_list() -> None:
    result = transform_source(AUTOTUNED, "dot.py", classify=_classes("dot"), max_configs=8)
    out = result.new_source
    assert GATE_MARKER in out
    assert_original_preserved(AUTOTUNED, out)
    assert "def dot_kernel_tileir" not in out  # no copy of the kernel for a rewrite
    assert "tl.exp2(acc * LOG2E) if TILEIR else tl.exp(acc)" in out
    assert "TILEIR = triton.language.constexpr(is_tileir())" in out
    assert "LOG2E = triton.language.constexpr(1.4426950408889634)" in out
    block = out[out.index("\n    dot_kernel.configs = dot_kernel.configs + ["):]
    assert "for c in dot_kernel.configs\n" in block and "pre_hook=c.pre_hook)" in block
    assert block.count("), (") + block.count("),\n") + 1 >= 8  # 8 lever combinations: 1 own config x 8
    (report,) = result.kernels
    assert report.twin is None and report.configs_added == 8
    assert any("tl.exp(x) -> tl.exp2" in c.what and "in place" in c.what and c.line == 17 for c in report.changes)


def test_a_kernel_without_autotuner_keeps_its_launch_with_a_literal_hint_and_no_autotuner() -> None:
    result = transform_source(HINT_ONLY, "scale.py", classify=_classes("elementwise"), release=get_release("13.4"))
    out = result.new_source
    assert_original_preserved(HINT_ONLY, out)
    assert "autotune" not in out
    assert ('scale_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, num_warps=4,\n' + ' ' * 41 +
            '**({"occupancy": 4} if TILEIR else {}))\n') in out  # past 100 columns: a line of its own
    (report,) = result.kernels
    (change,) = report.changes
    assert change.what.startswith("occupancy 4 at its launch under the gate (L") and "no autotuner added" in change.what
    assert "num_warps" in change.why and "--hint-autotune scale_kernel" in change.why
    assert report.configs_added == 0
    assert gate_off(out).count("scale_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, num_warps=4)\n") == 1


def test_hint_autotune_all_passes_over_a_kernel_writing_its_inputs_unless_named() -> None:
    source = HINT_ONLY.replace("tl.store(y_ptr + offs", "tl.store(x_ptr + offs")
    every = transform_source(source, "s.py", classify=_classes("elementwise"), hint_autotune=("all",))
    assert "autotune" not in every.new_source and "occupancy" in every.new_source
    assert any("writes its own inputs (x_ptr)" in s and "--hint-autotune scale_kernel" in s
               for s in every.kernels[0].skipped)
    named = transform_source(source, "s.py", classify=_classes("elementwise"), hint_autotune=("scale_kernel",))
    assert "restore_value=['x_ptr']" in named.new_source and "**({" not in named.new_source


def test_hint_only_autotune_respects_launch_options() -> None:
    result = transform_source(HINT_ONLY, "scale.py", classify=_classes("elementwise"), hint_autotune=("all",))
    out = result.new_source
    assert_original_preserved(HINT_ONLY, out)
    block = out[out.index("    scale_kernel = triton.autotune(\n"):]
    block = block[: block.index(")(scale_kernel)\n")]
    assert "key=['n_elements']" in block
    assert "num_warps=None" in block  # the launch passes it
    assert "restore_value" not in block


def test_in_place_kernel_restores_its_buffer_between_trials() -> None:
    source = HINT_ONLY.replace("tl.store(y_ptr + offs", "tl.store(x_ptr + offs")
    out = transform_source(source, "s.py", classify=_classes("elementwise"),
                           hint_autotune=("scale_kernel",)).new_source
    assert "restore_value=['x_ptr']" in out


def test_atomics_and_unresolvable_configs_are_left_alone_with_reasons() -> None:
    atomic = HINT_ONLY.replace("tl.store(y_ptr + offs, x * 2, mask=offs < n_elements)", "tl.atomic_add(y_ptr, 1)")
    result = transform_source(atomic, "a.py", classify=_classes("reduction"), hint_autotune=("all",))
    assert not result.changed
    assert "atomics" in result.kernels[0].skipped[0]
    dynamic = AUTOTUNED.replace('configs=[triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=4, pre_hook=hook)]',
                                "configs=make_configs(torch.cuda.device_count())")
    result = transform_source(dynamic, "d.py", classify=_classes("dot"))
    (change,) = [c for c in result.kernels[0].changes if "crossed at import" in c.what]
    assert "only known at run time" in change.why or "built by code" in change.why
    # a list built by code: its first configs, as many as keep the crossing within max_configs (16)
    assert "for d in dot_kernel.configs[:i])][:3]\n        for o, n, s in [" in result.new_source


def test_no_kernel_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no Triton kernel found"):
        transform_source("x = 1\n", "plain.py")
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    result = CliRunner().invoke(app, ["apply", str(bad)])
    assert result.exit_code == 2
    assert "bad.py" in result.output and "Traceback" not in result.output


def test_a_folder_file_that_only_mentions_triton_is_passed_over_but_named_it_is_an_error(tmp_path: Path) -> None:
    # a sibling backend of a package: it imports the Triton one and jit-compiles with another DSL
    other = tmp_path / "other_backend.py"
    other.write_text("from pkg.triton_ops import softmax_triton\n\n@cute.jit\ndef softmax(x):\n    return x\n")
    folder = CliRunner().invoke(app, ["apply", str(tmp_path), "--json"])
    assert folder.exit_code == 0, folder.output
    assert json.loads(folder.stdout)["errors"] == [] and not (tmp_path / "other_backend_tileir.py").exists()
    named = CliRunner().invoke(app, ["apply", str(other)])
    assert named.exit_code == 2 and "no Triton kernel found" in named.output


def test_apply_writes_beside_never_overwrites_and_keeps_backup(tmp_path: Path) -> None:
    src = tmp_path / "scale.py"
    src.write_text(HINT_ONLY)
    result = apply_file(src, classify=_classes("elementwise"))
    assert result.output == str(tmp_path / "scale_tileir.py")
    assert src.read_text() == HINT_ONLY
    with pytest.raises(UserError, match="overwrite the input"):
        apply_file(src, output=src)
    apply_file(src, in_place=True, classify=_classes("elementwise"))
    assert (tmp_path / "scale.py.orig").read_text() == HINT_ONLY
    assert GATE_MARKER in src.read_text()


def test_cli_diff_dry_run_and_json(tmp_path: Path) -> None:
    src = tmp_path / "scale.py"
    src.write_text(HINT_ONLY)
    runner = CliRunner()
    diff = runner.invoke(app, ["apply", str(src), "--dry-run", "--diff"])
    assert diff.exit_code == 0, diff.output
    assert "+def is_tileir():" in diff.output
    assert all(line[:1] in " +-@" for line in diff.output.splitlines()), "diff lines must not be wrapped"
    assert not (tmp_path / "scale_tileir.py").exists()
    alone = runner.invoke(app, ["apply", str(src), "--diff"])  # a diff writes nothing, as ruff's --diff
    assert alone.exit_code == 0 and alone.output == diff.output and not (tmp_path / "scale_tileir.py").exists()
    as_json = runner.invoke(app, ["apply", str(src), "--json"])
    assert as_json.exit_code == 0
    import json

    record = json.loads(as_json.stdout)
    (kernel,) = record["files"][0]["kernels"]
    assert kernel["kernel"] == "scale_kernel" and kernel["configs_added"] == 0
    assert "at its launch under the gate" in kernel["changes"][0]["what"]
    asked = json.loads(runner.invoke(app, ["apply", str(src), "--json", "--dry-run", "--hint-autotune", "all"]).stdout)
    assert asked["files"][0]["kernels"][0]["configs_added"] > 0
    assert (tmp_path / "scale_tileir.py").exists()


# ----------------------------------------------------------------------------- examples and liger


def _liger_files() -> list[Path]:
    try:
        import liger_kernel
    except ImportError:
        return []
    root = Path(liger_kernel.__file__).parent
    return sorted(p for p in root.rglob("*.py") if "triton.jit" in p.read_text(encoding="utf-8"))


LIGER_FILES = _liger_files()


@pytest.mark.parametrize("path", EXAMPLE_FILES + LIGER_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_idempotent_and_original_preserved(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    result = transform_source(source, str(path))
    cst.parse_module(result.new_source)  # the output parses
    assert_original_preserved(source, result.new_source)
    again = transform_source(result.new_source, str(path))
    assert again.new_source == result.new_source


def _import_path(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def _config_lists(module: types.ModuleType) -> dict[str, list[str]]:
    return {name: [config_label(c) for c in tuner.configs] for name, tuner in autotuners(module).items()}


@pytest.mark.parametrize("path", EXAMPLE_FILES + LIGER_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_ptx_path_unchanged_on_import(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With standard Triton on CPU the output defines the same autotuners with the same configs."""
    monkeypatch.delenv("ENABLE_TILE", raising=False)
    monkeypatch.syspath_prepend(str(path.parent))
    relative = any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(ast.parse(path.read_bytes())))
    try:
        original = _import_path(path, f"_orig_{path.stem}")
    except ImportError as exc:  # only two causes may skip: anything else fails the test
        if relative:  # relative imports: it imports only inside its package
            pytest.skip(f"imports only inside its package: {exc}")
        if "'triton" in str(exc):  # a module or name this Triton lacks (the file targets another Triton or backend)
            pytest.skip(f"needs another Triton: {exc}")
        raise
    out = tmp_path / f"{path.stem}_tileir.py"
    new_source = transform_source(path.read_text(encoding="utf-8"), str(path)).new_source
    write_rewrite(out, new_source)
    optimized = _import_path(out, f"_opt_{path.stem}")
    if GATE_MARKER in new_source:
        assert gate_of(optimized) is False  # the gate is off on standard Triton without the harness
    else:
        assert new_source == path.read_text(encoding="utf-8")  # nothing written: the file itself
    before, after = _config_lists(original), _config_lists(optimized)
    assert {name: after.get(name) for name in before} == before  # same autotuners, same configs
    assert set(after) == set(before)  # twins are defined only under the gate: none exists with it off
    for name, obj in vars(original).items():
        if name in autotuners(original) or type(obj).__name__ in ("JITFunction", "InterpretedFunction"):
            assert function_name(getattr(optimized, name)) == function_name(obj)


# ----------------------------------------------------------------------------- simulated TileIR


class _TileIRConfig(triton.Config):
    """A triton.Config that accepts occupancy, as nvtriton's does."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None,
                 ir_override=None, occupancy=None):
        super().__init__(kwargs, num_warps=num_warps, num_stages=num_stages, num_ctas=num_ctas, maxnreg=maxnreg,
                         pre_hook=pre_hook, ir_override=ir_override)
        self.occupancy = occupancy


@pytest.fixture
def simulated_tileir(monkeypatch: pytest.MonkeyPatch):
    fake = types.ModuleType("triton.backends.tileir")
    fake.__spec__ = importlib.machinery.ModuleSpec("triton.backends.tileir", None)
    monkeypatch.setitem(sys.modules, "triton.backends.tileir", fake)
    monkeypatch.setenv("ENABLE_TILE", "1")
    monkeypatch.setattr(triton, "Config", _TileIRConfig)


def test_simulated_tileir_space(simulated_tileir, tmp_path: Path) -> None:
    src = tmp_path / "dot.py"
    src.write_text(AUTOTUNED)
    apply_file(src, classify=_classes("dot"), max_configs=12)
    module = _import_path(tmp_path / "dot_tileir.py", "_sim_dot")
    assert gate_of(module) is True
    tuner = autotuners(module)["dot_kernel"]
    assert function_name(tuner) == "dot_kernel"  # its own autotuner: the rewrite is in place
    assert module.TILEIR  # the gate's constexpr, which the in-place rewrite reads
    own, added = tuner.configs[:1], tuner.configs[1:]
    assert own[0].kwargs == {"BLOCK_M": 32, "BLOCK_N": 32}
    assert len(added) == 12
    assert {c.occupancy for c in added} == {1, 2, 4}
    assert {c.num_ctas for c in added} == {1, 2}
    assert {c.num_stages for c in added} == {2, 3, 4, 5, 6}
    assert all(set(c.kwargs) == {"BLOCK_M", "BLOCK_N"} for c in added)  # the kernel's own names
    assert {c.kwargs["BLOCK_M"] for c in added} == {32, 128, 256}  # the own size and the larger tiles
    assert all(c.pre_hook is module.hook for c in added)  # the kernel's pre_hook is wired


def test_simulated_tileir_hint_only(simulated_tileir, tmp_path: Path) -> None:
    src = tmp_path / "scale.py"
    src.write_text(HINT_ONLY)
    apply_file(src, classify=_classes("elementwise"), hint_autotune=("all",))
    module = _import_path(tmp_path / "scale_tileir.py", "_sim_scale")
    tuner = autotuners(module)["scale_kernel"]
    assert tuner.keys == ["n_elements"]
    assert {c.occupancy for c in tuner.configs} == {1, 2, 4, 8, 16}
    assert all(c.kwargs == {} and c.num_warps is None for c in tuner.configs)


def test_forced_tileir_code_drops_rejected_hints(tmp_path: Path, tileir_code_forced: None) -> None:
    src = tmp_path / "dot.py"
    src.write_text(AUTOTUNED)
    apply_file(src, classify=_classes("dot"), max_configs=12)
    module = _import_path(tmp_path / "dot_tileir.py", "_forced_dot")
    tuner = autotuners(module)["dot_kernel"]
    assert function_name(tuner) == "dot_kernel"
    added = tuner.configs[1:]
    assert added and all(c.num_ctas == 1 and not hasattr(c, "occupancy") for c in added)
    assert all(set(c.tileir_dropped) <= {"occupancy", "num_ctas", "num_warps"} for c in added)
    raised = [c for c in added if "num_warps" in c.tileir_dropped]  # a hint to TileIR: PTX compiles what the tile needs
    assert all(c.num_warps > c.tileir_hints["num_warps"] for c in raised)


def test_kernel_parameters_named_like_launch_options_are_left_to_the_launch(
        tmp_path: Path, tileir_code_forced: None) -> None:
    """A kernel taking `num_stages` / `num_ctas` as its own arguments gets hint configs that set neither."""
    source = HINT_ONLY.replace("n_elements, BLOCK: tl.constexpr)",
                               "n_elements, num_stages, num_ctas, BLOCK: tl.constexpr)")
    source = source.replace("(x, y, n, BLOCK=256, num_warps=4)", "(x, y, n, 2, 1, BLOCK=256, num_warps=4)")
    out = transform_source(source, "s.py", classify=_classes("elementwise"), hint_autotune=("all",)).new_source
    block = out[out.index("scale_kernel = triton.autotune(\n"):]
    assert "num_warps=None, num_stages=None, occupancy=occupancy, num_ctas=None)" in block[: block.index(")(scale")]
    (tmp_path / "s_tileir.py").write_text(out)
    module = _import_path(tmp_path / "s_tileir.py", "_launch_option_params")
    configs = autotuners(module)["scale_kernel"].configs
    assert all({"num_stages", "num_ctas", "num_warps"}.isdisjoint(c.all_kwargs()) for c in configs)


def test_apply_on_a_folder_skips_hidden_folders_outputs_and_files_without_kernels(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text("import torch\n")
    (tmp_path / "pkg" / "scale.py").write_text(HINT_ONLY)
    hidden = tmp_path / ".venv" / "lib" / "site-packages"
    hidden.mkdir(parents=True)
    (hidden / "kern.py").write_text(HINT_ONLY)
    result = CliRunner().invoke(app, ["apply", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "pkg" / "scale_tileir.py").exists()
    assert not (hidden / "kern_tileir.py").exists()
    again = CliRunner().invoke(app, ["apply", str(tmp_path), "--json"])  # the output is not taken as an input
    import json

    assert [f["file"] for f in json.loads(again.stdout)["files"]] == [str(tmp_path / "pkg" / "scale.py")]


def test_prepared_file_is_not_copied_and_modes_and_encodings_are_kept(tmp_path: Path) -> None:
    src = tmp_path / "scale.py"
    src.write_text(HINT_ONLY)
    first = apply_file(src, classify=_classes("elementwise"))
    again = apply_file(Path(first.output), classify=_classes("elementwise"))
    assert again.already_prepared and again.written == []
    assert not (tmp_path / "scale_tileir_tileir.py").exists()
    src.chmod(0o755)
    apply_file(src, in_place=True, classify=_classes("elementwise"))
    assert src.stat().st_mode & 0o777 == 0o755 and (tmp_path / "scale.py.orig").stat().st_mode & 0o777 == 0o755
    latin = tmp_path / "latin.py"
    latin.write_bytes(("# -*- coding: latin-1 -*-\n# caf\u00e9\r\n" + HINT_ONLY).encode("latin-1"))
    out = Path(apply_file(latin, classify=_classes("elementwise")).output)
    text = out.read_bytes().decode("latin-1")
    assert "caf\u00e9\r\n" in text and GATE_MARKER in text


def test_unwritable_output_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "scale.py"
    src.write_text(HINT_ONLY)
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(app, ["apply", str(src), "-o", str(blocker / "out.py")])
    assert result.exit_code == 2 and "cannot write" in result.output and "Traceback" not in result.output


def test_kernels_crossed_with_one_lever_list_share_it_by_name() -> None:
    second = AUTOTUNED[AUTOTUNED.index("@triton.autotune"):].replace("dot_kernel", "other_kernel")
    source = AUTOTUNED + "\n\n" + second
    result = transform_source(source, "two.py", classify=_classes("dot"))
    out = result.new_source
    assert out.count("TILEIR_LEVERS = [") == 1 and out.index("TILEIR_LEVERS = [") < out.index("def dot_kernel")
    assert "for c in dot_kernel.configs for o, n, s, t in TILEIR_LEVERS" in out
    assert "for c in other_kernel.configs for o, n, s, t in TILEIR_LEVERS" in out
    namespace: dict = {}
    exec(compile(out[out.index("TILEIR_LEVERS = ["):].split("\n\n")[0], "two.py", "exec"), namespace)  # noqa: S102
    assert all(len(row) == 4 for row in namespace["TILEIR_LEVERS"])  # (occupancy, num_ctas, num_stages, tiles)
    alone = transform_source(AUTOTUNED, "one.py", classify=_classes("dot")).new_source
    assert "TILEIR_LEVERS" not in alone and "for o, n, s, t in [" in alone  # one kernel: its list stays inline


_SHARED_LIST = '''
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK": 32}, num_warps=4), triton.Config({"BLOCK": 64}, num_warps=4)]
SAME = CONFIGS  # a second name for the one list


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.autotune(configs=SAME, key=["n"])
@triton.jit
def shift_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
'''


def test_autotuners_sharing_one_config_list_each_get_their_own_crossing(tmp_path: Path,
                                                                         tileir_code_forced: None) -> None:
    """The author's list is never extended in place: a second autotuner holding it would cross the first's
    TileIR configs again (a list shared by six kernels grew to 3 * 6**6 configs each)."""
    from tileiropt.harness.loading import load_kernel_module

    source = tmp_path / "shared.py"
    source.write_text(_SHARED_LIST)
    result = transform_source(_SHARED_LIST, str(source))
    added = {k.kernel: k.configs_added for k in result.kernels}["double_kernel"]  # the literal list: counted
    optimized = tmp_path / "shared_tileir.py"
    write_rewrite(optimized, result.new_source)
    module = load_kernel_module(str(optimized), str(source), None, "double_kernel")
    assert len(module.CONFIGS) == 2 and module.SAME is module.CONFIGS  # the author's list as written
    assert len(module.double_kernel.configs) == 2 + added
    crossed = len(module.shift_kernel.configs) - 2  # its 2 own configs, each with the covering combinations
    assert crossed % 2 == 0 and 0 < crossed <= 16  # within the cap: not the first kernel's 2 + added crossed again


_ASM_HELPER = '''
import triton
import triton.language as tl


@triton.jit
def _pack(x):
    return tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def _through(x):
    return _pack(x) + 1


@triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def pack_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, _through(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
'''


def test_a_kernel_whose_helper_tileir_rejects_gets_no_tileir_code() -> None:
    """A helper is linted on its own; the kernel that calls it (here through another helper) is rejected with it."""
    result = transform_source(_ASM_HELPER, "pack.py")
    report = {k.kernel: k for k in result.kernels}["pack_kernel"]
    assert not report.changes and not result.changed
    assert len(report.skipped) == 1
    assert report.skipped[0].startswith("no TileIR code added: it calls _pack, which has TIR001 (error) at L")


_CALL_FORM = '''
import triton
import triton.language as tl


def own_configs():
    return [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})]


@triton.jit
def _scale_kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


_scale = triton.heuristics({"EVEN": lambda args: args["n"] % 64 == 0})(_scale_kernel)
scale_tuned = triton.autotune(configs=own_configs(), key=["n"])(_scale)
scale_small = triton.autotune(configs=own_configs()[:1], key=["n"])(_scale)
after = 1
'''


def test_autotuners_made_by_a_call_get_the_tileir_configs_after_they_are_bound(tmp_path: Path,
                                                                              tileir_code_forced: None) -> None:
    from tileiropt.harness.loading import load_kernel_module

    result = transform_source(_CALL_FORM, str(tmp_path / "call_form.py"))
    report = {k.kernel: k for k in result.kernels}["_scale_kernel"]
    assert [c.what.split(" = ")[0] for c in report.changes if "crossed at import" in c.what] == [
        "TileIR configs crossed at import from at most 3 distinct own configs (the first) of scale_tuned",
        "TileIR configs crossed at import from at most 3 distinct own configs (the first) of scale_small"]
    out = result.new_source
    block = out.index("# TileIR code for _scale_kernel")
    assert out.index("scale_small = triton.autotune(") < block < out.index("\n\n\nafter = 1\n")
    assert "    scale_tuned.configs = scale_tuned.configs + [" in out
    source, optimized = tmp_path / "call_form.py", tmp_path / "call_form_tileir.py"
    source.write_text(_CALL_FORM)
    optimized.write_text(out)
    module = load_kernel_module(str(optimized), str(source), None, "scale_tuned")
    own = len(module.own_configs())
    crossed = (len(module.scale_tuned.configs) - own) // own
    assert crossed > 0 and len(module.scale_tuned.configs) == own * (1 + crossed)
    assert len(module.scale_small.configs) == 1 + crossed  # each autotuner crosses its own list


def test_apply_says_written_only_where_it_wrote(tmp_path: Path) -> None:
    source = tmp_path / "k.py"
    source.write_text(AUTOTUNED)
    dry = CliRunner().invoke(app, ["apply", str(source), "--dry-run"])
    assert dry.exit_code == 0 and "(dry run: nothing written)" in dry.output
    assert "written for" not in dry.output and not (tmp_path / "k_tileir.py").exists()
    broken = tmp_path / "broken.py"
    broken.write_text("x = (\n")
    failed = CliRunner().invoke(app, ["apply", str(broken)])
    assert failed.exit_code == 2 and "written for" not in failed.output and "┏" not in failed.output  # no table


_LARGE_OWN = '''
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 8192})], key=["n"])
@triton.jit
def wide_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''


def test_a_larger_tile_never_shrinks_the_authors_own(tmp_path: Path, tileir_code_forced: None) -> None:
    from tileiropt.harness.loading import load_kernel_module

    source = tmp_path / "wide.py"
    source.write_text(_LARGE_OWN)
    result = transform_source(_LARGE_OWN, str(source))
    (report,) = result.kernels
    assert "left out: their tile would be smaller than the config's own" in report.changes[-1].what
    optimized = tmp_path / "wide_tileir.py"
    write_rewrite(optimized, result.new_source)
    configs = load_kernel_module(str(optimized), str(source), None, "wide_kernel").wide_kernel.configs
    assert len(configs) == 2 + report.configs_added  # the count apply reports is the count at import
    from_small = [c.kwargs["BLOCK"] for c in configs[2:]][:report.configs_added - 1]  # the 256 config's, in order
    from_wide = [c.kwargs["BLOCK"] for c in configs[2:]][report.configs_added - 1:]
    assert min(from_small) == 256 and max(from_small) > 256  # its own size, and larger ones
    assert from_wide == [8192]  # only the row without a tile: every larger tile of the list would shrink it


def test_a_single_files_tma_dispatch_is_written_once_beside_it_and_goes_with_it(tmp_path: Path) -> None:
    """The dispatch its descriptor twin needs lives in `_tileir.py` beside the optimized file (imported under the
    gate), written with it, and copied beside the user's file when the optimized one replaces it."""
    from tileiropt.apply.apply import copy_helper, helper_copy, helper_source

    user = tmp_path / "user"
    user.mkdir()
    (user / "matmul.py").write_text((EXAMPLES / "matmul.py").read_text())
    out = tmp_path / "out" / "matmul_tileir.py"
    out.parent.mkdir()
    result = apply_file(user / "matmul.py", output=out)
    assert result.written == [str(out), str(out.parent / "_tileir.py")]
    assert 'runpy.run_path(os.path.join(_tileiropt_folder, "_tileir.py"))' in result.new_source  # from its path:
    assert "os.path.dirname(os.path.abspath(__file__))" in result.new_source  # no other `_tileir` stands in
    assert "class _tileiropt_tma_dispatch" not in result.new_source  # not a copy per file
    assert (out.parent / "_tileir.py").read_text() == helper_source()
    assert helper_copy(out, user / "matmul.py") == (out.parent / "_tileir.py", user / "_tileir.py")
    assert copy_helper(out, user / "matmul.py") == user / "_tileir.py"
    (user / "_tileir.py").write_text("# the user's own module\n")
    with pytest.raises(UserError):  # never over a module of the user's own
        copy_helper(out, user / "matmul.py")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "_tileir.py").write_text("# theirs\n")
    with pytest.raises(UserError, match="not a file tileiropt wrote"):  # neither file, where the helper cannot go
        apply_file(user / "matmul.py", output=elsewhere / "matmul_tileir.py")
    assert not (elsewhere / "matmul_tileir.py").exists()


def test_the_dispatch_module_runs_from_the_files_own_folder_whatever_else_is_named_tileir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tileir_code_forced: None) -> None:
    """With the gate on, the optimized file runs the `_tileir.py` beside it, even where another `_tileir` module
    comes first on sys.path or was imported already."""
    out = tmp_path / "out" / "matmul_tileir.py"
    out.parent.mkdir()
    apply_file(EXAMPLES / "matmul.py", output=out)
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "_tileir.py").write_text("DECOY = True\n")
    monkeypatch.syspath_prepend(str(decoy))
    monkeypatch.setitem(sys.modules, "_tileir", types.ModuleType("_tileir"))
    module = _import_path(out, "_opt_matmul_beside")
    assert type(module.matmul_kernel).__name__ == "_tileiropt_tma_dispatch"


def test_the_gate_is_followed_by_two_blank_lines_whatever_spacing_the_file_had() -> None:
    source = ("import triton\nimport triton.language as tl\n\n# the kernel\n@triton.jit\ndef k(x_ptr):\n"
              "    tl.store(x_ptr, tl.load(x_ptr) * 2)\n\n\ndef run(x):\n    k[(1,)](x)\n")
    new = transform_source(source, "k.py").new_source
    gate_end = "TILEIR = is_tileir()\n"  # the launch's hint reads it
    assert gate_end + "\n\n# the kernel\n@triton.jit" in new


def test_an_optimized_file_run_without_a_path_takes_the_dispatch_module_from_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tileir_code_forced: None) -> None:
    """Code run without a module's `__file__` (a notebook cell pasted from the optimized file, `exec`)."""
    out = tmp_path / "matmul_tileir.py"
    apply_file(EXAMPLES / "matmul.py", output=out)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "_pasted_matmul"}  # no __file__; Triton reads the kernel's source by its name
    exec(compile(out.read_text(), str(out), "exec"), namespace)  # noqa: S102 - the generated code under test
    assert type(namespace["matmul_kernel"]).__name__ == "_tileiropt_tma_dispatch"


SHADOWED = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr, TILEIR: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + offs, mask=offs < n, other=-float("inf"))
    y = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + offs, y / tl.sum(y, axis=0), mask=offs < n)


def softmax(x, TILEIR=True):
    out = torch.empty_like(x)
    softmax_kernel[(1,)](out, x, x.numel(), BLOCK=1024, TILEIR=TILEIR)
    return out
'''


def test_the_gate_value_avoids_a_parameter_of_the_same_name() -> None:
    """A kernel parameter or a wrapper's local named TILEIR would shadow the gate's value: the in-place rewrite
    and the launch's hint would read the author's True on PTX."""
    out = transform_source(SHADOWED, "shadowed.py", release=get_release("13.4")).new_source
    assert "TILEIR_ON = triton.language.constexpr(is_tileir())" in out
    assert "if TILEIR_ON else tl.exp(" in out and '**({"occupancy": 2} if TILEIR_ON else {})' in out
    assert "TILEIR=TILEIR" in out  # the author's argument, as it was


LATE_IMPORT = '''\
import torch


def cdiv(a, b):
    return (a + b - 1) // b


import triton
import triton.language as tl


@triton.jit
def exp_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


def run(x):
    exp_kernel[(cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128)
    return x
'''


def test_the_gate_constants_import_triton_where_the_file_imports_it_below_a_def(tmp_path: Path) -> None:
    original = tmp_path / "late.py"
    original.write_text(LATE_IMPORT)
    out = tmp_path / "late_tileir.py"
    apply_file(original, output=out)
    text = out.read_text()
    assert text.index("import triton as _tileiropt_triton") < text.index("TILEIR = _tileiropt_triton.language")
    code = f"import torch, runpy; m = runpy.run_path({str(out)!r}); print(float(m['run'](torch.zeros(300)).sum()))"
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    env.pop("ENABLE_TILE", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "300.0", done.stderr[-2000:]


_MANY_OWN = '''
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BK": bk, "BV": bv}, num_warps=w, num_stages=s)
             for bk in [32, 64] for bv in [32, 64, 128] for w in [2, 4, 8] for s in [2, 3, 4]],
    key=["n"],
)
@triton.jit
def state_kernel(x_ptr, n, BK: tl.constexpr, BV: tl.constexpr):
    offs = tl.program_id(0) * BK * BV + tl.arange(0, BK * BV)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''


def _configs_at_import(folder: Path, source: str, kernel: str, max_configs: int = 16):
    """`apply` of `source` (as `<kernel>.py`), and the configs its kernel's autotuner holds when the written file is
    imported with the TileIR code forced on."""
    from tileiropt.harness.loading import load_kernel_module

    original = folder / f"{kernel}.py"
    original.write_text(source)
    result = transform_source(source, str(original), max_configs=max_configs)
    optimized = folder / f"{kernel}_tileir.py"
    write_rewrite(optimized, result.new_source)
    return result, getattr(load_kernel_module(str(optimized), str(original), None, kernel), kernel).configs


def test_a_long_own_list_is_crossed_within_the_cap(tmp_path: Path, tileir_code_forced: None) -> None:
    result, configs = _configs_at_import(tmp_path, _MANY_OWN, "state_kernel")
    (report,) = result.kernels
    assert 0 < report.configs_added <= 16  # 54 own configs crossed whole would make over 200
    (change,) = [c for c in report.changes if "added to the autotune space" in c.what]
    assert "of its 54 own configs (those at " in change.what and "at most 16 added" in change.why
    added = configs[54:]
    assert len(added) == report.configs_added  # the count apply reports is the count at import
    per_row = Counter((tuple(sorted(c.kwargs.items())), c.num_warps) for c in added)
    combinations = int(re.search(r"crossed with (\d+) combinations", change.what).group(1))
    assert set(per_row.values()) == {combinations}  # own configs alike but for num_stages are crossed once each
    assert {c.num_warps for c in added} == {2, 4, 8}  # every num_warps value of the own list
    assert {c.kwargs["BK"] for c in added} >= {32, 64}


def test_crossed_rows_keeps_the_whole_list_when_it_fits() -> None:
    from tileiropt.apply.config_values import ConfigValue
    from tileiropt.apply.plan import crossed_rows, crossed_source
    from tileiropt.apply.spaces import TileIRConfig

    values = [ConfigValue({"B": 64}, num_warps=4), ConfigValue({"B": 128}, num_warps=8)]
    combos = [TileIRConfig((), occupancy, 1, 3, None) for occupancy in (1, 2)]
    assert crossed_rows(values, combos, 16) == [0, 1]
    assert crossed_source("k.configs", [0, 1], 2) == "k.configs"
    assert crossed_rows(values, combos, 2) == [0]  # the author's first: one own config at least
    wider = [values[0], ConfigValue({"B": 128, "G": 8}, num_warps=8)]
    assert crossed_rows(wider, combos, 2) == [0]  # the first, though the second holds more values
    assert crossed_source("k.configs", [0], 2) == "k.configs[:1]"
    assert crossed_source("k.configs", [1], 2) == "[c for i, c in enumerate(k.configs) if i in (1,)]"
    alike = [ConfigValue({"B": 64}, num_stages=2), ConfigValue({"B": 64}, num_stages=3)]
    assert crossed_rows(alike, combos, 16) == [0]  # the crossing sets num_stages: the second would repeat the first


_BUILT_BY_CODE = '''
import triton
import triton.language as tl

STAGES = [2, 3, 4]


def configs():
    return [triton.Config({"BLOCK_M": m}, num_warps=w, num_stages=s) for m in [32, 64] for w in [4, 8] for s in STAGES]


@triton.autotune(configs=configs(), key=["n"])
@triton.jit
def rows_kernel(x_ptr, n, BLOCK_M: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''


def test_a_list_built_by_code_is_crossed_in_its_first_distinct_configs(tmp_path: Path,
                                                                        tileir_code_forced: None) -> None:
    """Its first configs differ only in num_stages, which the crossing sets itself: each is crossed once."""
    added = _configs_at_import(tmp_path, _BUILT_BY_CODE, "rows_kernel")[1][12:]
    per_row = Counter((c.kwargs["BLOCK_M"], c.num_warps) for c in added)
    assert len(per_row) == len(added) // max(per_row.values()) and len(per_row) > 1, per_row
    assert set(per_row) <= {(32, 4), (32, 8), (64, 4), (64, 8)} and (32, 8) in per_row


_BRANCHED = _BUILT_BY_CODE.replace("STAGES = [2, 3, 4]",
                                   "import os\n\nSTAGES = [2, 3, 4] if os.environ.get('S') else [2]")


def test_a_list_the_tool_cannot_read_is_counted_at_most(tmp_path: Path, tileir_code_forced: None) -> None:
    result, configs = _configs_at_import(tmp_path, _BRANCHED, "rows_kernel")
    (report,) = result.kernels
    assert report.configs_added == 0  # derived at import
    assert 0 < len(configs) - 4 <= report.configs_added_at_most <= 16  # 4 own configs; what import adds, at most


def test_own_configs_a_larger_tile_would_make_alike_are_not_both_crossed() -> None:
    """BLOCK 32 and 64 at one num_warps both become BLOCK 128 under a larger tile: crossing both would add the same
    config twice, which the autotuner would compile and time twice."""
    from tileiropt.apply.config_values import ConfigValue
    from tileiropt.apply.plan import crossed_rows
    from tileiropt.apply.spaces import TileIRConfig

    values = [ConfigValue({"BLOCK": 32}), ConfigValue({"BLOCK": 64}), ConfigValue({"BLOCK": 64}, num_warps=8)]
    combos = [TileIRConfig((("BLOCK", None),), 1, 1, 3), TileIRConfig((("BLOCK", 128),), 2, 1, 3)]
    assert crossed_rows(values, combos, 16) == [0, 2]  # the second would repeat the first's BLOCK=128 config
    result = transform_source(_SHARED_LIST, "shared.py")
    (report,) = [k for k in result.kernels if k.kernel == "double_kernel"]
    assert any("1 of its 2 own configs (those at 0)" in change.what for change in report.changes), report.changes
