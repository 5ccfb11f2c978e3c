"""Kernels made by assignment at module level (`k = triton.jit(k)`, the heuristics, autotuner or the file's own
wrapper applied by further assignments): found by classify with their configs and launches, rewritten by apply
like decorated ones (configs into the autotuner the assignments apply, hints at the launches, math in place), and
the optimized file runs on the interpreter as the original does with the gate off."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt import __version__
from tileiropt.apply.apply import apply_file, transform_source
from tileiropt.classify.classify import classify_paths
from tileiropt.classify.discovery import discover, discover_file
from tileiropt.cli import app
from tileiropt.harness.gate_off import gate_off
from tileiropt.releases import get_release

from shared import ROOT, TEST_FIXTURES, write_rewrite

FIXTURE = TEST_FIXTURES / "assigned" / "assigned_kernels.py"
GOLDEN = TEST_FIXTURES / "assigned" / "assigned_kernels_tileir.expected"


def _transform(source: str, path: str = "assigned_kernels.py", **options):
    return transform_source(source, path, release=get_release("13.4"), **options)


# ----------------------------------------------------------------------------- classify


def test_discovery_finds_each_kernel_made_by_assignment_with_its_configs_and_launches() -> None:
    module = discover_file(FIXTURE)
    kernels = {k.name: k for k in module.kernels}
    assert list(kernels) == ["_gelu_add_kernel", "_row_sum_kernel", "_scale_kernel", "_negate_py"]
    assert {k.made_by for k in kernels.values()} == {"assignment"}

    gelu = kernels["_gelu_add_kernel"]
    assert gelu.jit_decorator == "triton.jit(_gelu_add_kernel)" and gelu.autotune is None
    assert list(gelu.heuristics) == ["BLOCK"] and gelu.heuristics["BLOCK"].startswith("lambda args:")
    assert [(site.line, site.launched_as) for site in gelu.launches] == [(27, None)]
    assert gelu.bound_to is None and gelu.names == ["_gelu_add_kernel"] and gelu.is_entry

    rows = kernels["_row_sum_kernel"]
    assert rows.autotune is not None and rows.autotune.configs_kind == "list"
    assert [c.kwargs for c in rows.autotune.configs] == [{"BLOCK_N": "64"}, {"BLOCK_N": "128"}]
    assert [c.options for c in rows.autotune.configs] == [{"num_warps": "2"}, {"num_warps": "4"}]
    assert rows.autotune.key == ["n_cols"] and rows.autotune.package is None and rows.autotune.line == 41
    assert rows.launch_arguments == {"x_ptr", "out_ptr", "n_cols", "stride"}
    assert [site.line for site in rows.launches] == [49]

    scale = kernels["_scale_kernel"]
    assert scale.autotune is not None and scale.autotune.package == "tuned"  # the file's own autotuning wrapper
    assert scale.autotune.config_names == ["BLOCK"] and scale.autotune.key == ["n"] and not scale.wrappers

    negate = kernels["_negate_py"]  # `negate_kernel = triton.jit(_negate_py)`: launched under its bound name
    assert negate.bound_to == "negate_kernel" and negate.names == ["negate_kernel"]
    assert [(site.line, site.launched_as, site.kwargs) for site in negate.launches] == [
        (93, "negate_kernel", {"BLOCK": "512", "num_warps": "4"})]
    # the bindings as the module makes them: the def is a kernel, the assignments values
    assert [(d.line, d.kind) for d in module.definitions["_scale_kernel"]] == [
        (63, "kernel"), (69, "value"), (70, "value")]
    assert [(d.line, d.kind) for d in module.definitions["negate_kernel"]] == [(87, "value")]


def test_classify_gives_each_its_class_and_says_how_it_was_made() -> None:
    (result,) = classify_paths([FIXTURE], ir=False)
    records = {r.kernel: r for r in result.kernels}
    assert {name: (r.kernel_class, r.made_by, r.bound_to) for name, r in records.items()} == {
        "_gelu_add_kernel": ("elementwise", "assignment", None),
        "_row_sum_kernel": ("reduction", "assignment", None),
        "_scale_kernel": ("elementwise", "assignment", None),
        "_negate_py": ("elementwise", "assignment", "negate_kernel"),
    }
    assert all(r.is_entry and not r.findings for r in records.values())
    keys = list(records["_negate_py"].to_json())
    assert keys[-2:] == ["made_by", "bound_to"] and keys[:4] == ["file", "kernel", "line", "class"]  # new keys last


def test_a_decorated_kernels_json_keeps_its_keys(tmp_path: Path) -> None:
    decorated = tmp_path / "decorated.py"
    decorated.write_text(f"{_HEADER}@triton.jit\n{_BODY}")
    (result,) = classify_paths([decorated], ir=False)
    (record,) = result.kernels
    assert record.made_by == "decorator" and "made_by" not in record.to_json()


def test_the_classify_command_lists_them_in_its_json_and_says_how_in_its_evidence() -> None:
    done = CliRunner().invoke(app, ["classify", str(FIXTURE), "--json", "--no-ir"])
    assert done.exit_code == 0, done.output
    kernels = json.loads(done.stdout)["kernels"]
    assert [(k["kernel"], k["class"], k["made_by"], k["bound_to"]) for k in kernels] == [
        ("_gelu_add_kernel", "elementwise", "assignment", None), ("_row_sum_kernel", "reduction", "assignment", None),
        ("_scale_kernel", "elementwise", "assignment", None), ("_negate_py", "elementwise", "assignment",
                                                               "negate_kernel")]
    verbose = CliRunner().invoke(app, ["classify", str(FIXTURE), "-v", "--no-ir"])
    assert verbose.exit_code == 0, verbose.output
    assert "_negate_py: elementwise (confidence 0.90, strategy: occupancy + num_stages, made by assignment as " \
           "negate_kernel)" in " ".join(verbose.output.split())


_HEADER = "import triton\nimport triton as tr\nimport triton.language as tl\nfrom triton import jit\n\n\n"
_BODY = "def k(x_ptr, n, BLOCK: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n\n\n"


@pytest.mark.parametrize("made, jit", [
    ("k = triton.jit(k)", "triton.jit(k)"),
    ("k = jit(k)", "jit(k)"),
    ("k = tr.jit(k, debug=True)", "tr.jit(k, debug=True)"),
    ('k = triton.jit(do_not_specialize=["n"])(k)', 'triton.jit(do_not_specialize=["n"])'),
    ("k: object = triton.jit(k)", "triton.jit(k)"),
    ("k = triton.autotune(configs=[triton.Config({'BLOCK': 64})], key=['n'])(triton.runtime.jit.jit(k))",
     "triton.runtime.jit.jit(k)"),
])
def test_every_spelling_of_the_jit_applied_by_assignment(made: str, jit: str) -> None:
    module = discover(f"{_HEADER}{_BODY}{made}\n", "k.py")
    (kernel,) = module.kernels
    assert (kernel.name, kernel.made_by, kernel.jit_decorator) == ("k", "assignment", jit)


@pytest.mark.parametrize("source", [
    "from numba import jit as nj\nk = nj(k)\n",  # another library's jit
    "import inspect\nsig = inspect.signature(k)\n",  # a call over the def that makes no kernel
    "def wrap(fn):\n    return fn\n\n\nk = wrap(k)\n",  # a wrapper with no jit under it
    "def make():\n    return triton.jit(k)\n",  # inside a function: made by a call, not at module level
])
def test_no_kernel_where_no_triton_jit_is_applied_at_module_level(source: str) -> None:
    assert discover(f"{_HEADER}{_BODY}{source}", "k.py").kernels == []


def test_a_decorated_kernel_stays_as_it_was_found() -> None:
    module = discover(f"{_HEADER}@triton.jit\n{_BODY}tuned = triton.autotune(configs=[], key=['n'])(k)\n", "k.py")
    (kernel,) = module.kernels
    assert (kernel.made_by, kernel.autotune, kernel.bound_names, kernel.names) == ("decorator", None, [], ["k"])


def test_the_chain_stacks_its_layers_as_decorators_would() -> None:
    source = textwrap.dedent("""
        _k_jit = triton.jit(k)
        _k_tuned = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])(_k_jit)
        k = triton.heuristics({"EVEN": lambda args: args["n"] % 64 == 0})(_k_tuned)
        k = libentry()(k)
        small = triton.autotune(configs=[triton.Config({"BLOCK": 32})], key=["n"])(_k_tuned)


        def run(x):
            _k_jit[(1,)](x, 8, BLOCK=8)
            k[(1,)](x, 8)
            small[(1,)](x, 8)
        """)
    scanned = discover(f"{_HEADER}{_BODY}def libentry():\n    return lambda fn: fn\n\n\n{source}", "k.py")
    (kernel,) = scanned.kernels
    assert kernel.autotune is not None and kernel.autotune.config_names == ["BLOCK"]
    assert list(kernel.heuristics) == ["EVEN"] and kernel.wrappers == ["libentry()"]
    assert kernel.bound_to is None and kernel.names == ["_k_jit", "_k_tuned", "k", "small"]
    assert [site.launched_as for site in kernel.launches] == ["_k_jit", None, "small"]


# ----------------------------------------------------------------------------- apply


def test_apply_puts_each_kernels_tileir_code_where_its_assignments_made_it() -> None:
    source = FIXTURE.read_text()
    result = _transform(source)
    out = result.new_source
    reports = {k.kernel: k for k in result.kernels}
    assert list(reports) == ["_gelu_add_kernel", "_row_sum_kernel", "_scale_kernel", "_negate_py"]
    assert all(not k.skipped for k in reports.values())
    # the configs go into the autotuner the assignment made, after the assignment (never after the def)
    tuned = out.index(")(triton.jit(_row_sum_kernel))\n")
    block = out.index("# TileIR code for _row_sum_kernel (tileiropt)")
    assert out.index("def _row_sum_kernel(") < tuned < block < out.index("def row_sum(")
    assert "    _row_sum_kernel.configs = _row_sum_kernel.configs + [\n" in out
    assert reports["_row_sum_kernel"].configs_added == 16
    # the file's own autotuning wrapper: crossed at import, as for `@tuned(configs=...)` over a def
    assert out.index("_scale_kernel = tuned(configs=") < out.index("# TileIR code for _scale_kernel") < out.index(
        "def scale(")
    assert "        _scale_kernel.configs = _scale_kernel.configs + [\n" in out
    assert any("of tuned(...) on _scale_kernel" in c.what for c in reports["_scale_kernel"].changes)
    # math in place inside the def; hints at the launches under the name they use
    assert "(tl.exp2((-1.702 * y) * LOG2E) if TILEIR else tl.exp(-1.702 * y))" in out
    assert "_gelu_add_kernel[lambda meta: (triton.cdiv(n, meta[\"BLOCK\"]),)](x, y, out, n,\n" in out
    assert 'negate_kernel[(triton.cdiv(n, 512),)](x, out, n, BLOCK=512, num_warps=4,\n' \
           '                                          **({"occupancy": 4} if TILEIR else {}))' in out
    assert [c.what.split(":")[0] for c in reports["_negate_py"].changes] == [
        "occupancy 4 at its launch under the gate (L93)"]
    # with the gate off every line of the original is there, in order: only lines were added
    removed = [line for line in difflib.ndiff(source.splitlines(), gate_off(out).splitlines()) if line[:2] == "- "]
    assert removed == []


def test_apply_writes_exactly_the_golden_file() -> None:
    written = _transform(FIXTURE.read_text()).new_source.replace(__version__, "VERSION")
    if os.environ.get("TILEIROPT_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(written)
    assert written == GOLDEN.read_text(), "the rewrite of kernels made by assignment changed"


def test_a_second_apply_changes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "assigned_kernels.py"
    source.write_text(FIXTURE.read_text())
    first = apply_file(source)
    assert first.changed and first.output is not None
    optimized = Path(first.output)
    again = apply_file(optimized, output=tmp_path / "again.py")
    assert again.already_prepared and again.new_source == optimized.read_text() and not again.changed


def test_asked_hint_only_autotuners_bind_the_name_the_file_launches() -> None:
    out = _transform(FIXTURE.read_text(), hint_autotune=("_negate_py",)).new_source
    block = out.index("# TileIR code for _negate_py (tileiropt)")
    assert out.index("negate_kernel = triton.jit(_negate_py)") < block < out.index("def negate(")
    assert out[block:].split("\n")[2] == "    negate_kernel = triton.autotune("
    assert "    )(negate_kernel)\n" in out[block:]


_BLOCKED_DOT = '''
import triton
import triton.language as tl

try:
    HAS_TRITON = True
except ImportError:
    HAS_TRITON = False

if HAS_TRITON:
    def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

    _mm_kernel = triton.jit(_mm_kernel)
    _mm_kernel = triton.heuristics({"BLOCK_K": lambda args: 32})(
        triton.autotune(configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 64})], key=["M", "N", "K"])(_mm_kernel))
    _mm_small = triton.autotune(configs=[triton.Config({"BLOCK_M": 32, "BLOCK_N": 32})], key=["M"])(_mm_kernel)

    def matmul(a, b, c):
        _mm_kernel[(1, 1)](a, b, c, 64, 64, 64, 64, 1, 64, 1, 64, 1)
'''


def test_what_apply_cannot_do_for_a_kernel_made_by_assignment_it_says() -> None:
    result = _transform(_BLOCKED_DOT, "mm.py")
    (report,) = result.kernels
    assert report.kernel_class == "dot" and report.configs_added > 0
    assert report.skipped == [
        "no TileIR code for _mm_small (line 31): a second object made over the kernel beside _mm_kernel, which gets it",
        "no TMA twin: the kernel is made by assignment (triton.jit(_mm_kernel) at module level), which a copy of its "
        "def would not carry; its loads stay pointer loads (its other TileIR code is added)"]
    out = result.new_source
    # inside the block that makes it, after its last assignment; its autotuner under the heuristics: `.fn`
    assert "\n        _mm_kernel.fn.configs = _mm_kernel.fn.configs + [\n" in out
    assert out.index("(_mm_kernel))\n") < out.index("    # TileIR code for _mm_kernel") < out.index("    _mm_small =")
    assert any(c.what == "TileIR code placed inside `if HAS_TRITON`, right after the assignment binding _mm_kernel"
               for c in report.changes)
    assert "_tileir" not in out.split("# TileIR code for _mm_kernel")[1].split("_mm_small")[0].replace(
        "is_tileir", "")  # no twin
    assert not any(line.strip() == "" and line for line in out.splitlines())  # no indented blank line


# ----------------------------------------------------------------------------- running it


_DRIVE = '''
import contextlib
import importlib.util
import json
import sys

from tileiropt.harness.autotuners import autotuners, pinned

spec = importlib.util.spec_from_file_location("assigned_module", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
tuners = autotuners(module)
runs = {}
for which in ("first", "last"):  # the interpreter on a CPU cannot time configs: each autotuner pinned to one
    with contextlib.ExitStack() as stack:
        for tuner in tuners.values():
            stack.enter_context(pinned(tuner, tuner.configs[0 if which == "first" else -1]))
        found = module.results()
    module.check(found)
    runs[which] = {name: value.tolist() for name, value in found.items()}
print(json.dumps({"configs": {name: len(t.configs) for name, t in tuners.items()}, "runs": runs}))
'''


def _run(script: Path, module: Path, forced: bool = False) -> dict:
    command = [sys.executable, *(["-m", "tileiropt.harness.tileir_surface"] if forced else []), str(script),
               str(module)]
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    env.pop("ENABLE_TILE", None)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_optimized_file_runs_on_the_interpreter_as_the_original_does(tmp_path: Path) -> None:
    original = tmp_path / "assigned_kernels.py"
    original.write_text(FIXTURE.read_text())
    optimized = write_rewrite(tmp_path / "assigned_kernels_tileir.py", _transform(original.read_text()).new_source)
    script = tmp_path / "drive.py"
    script.write_text(_DRIVE)
    before, gate_off_run = _run(script, original), _run(script, optimized)
    assert before == gate_off_run  # the gate off: the same configs, the same results, bit for bit
    assert before["configs"] == {"_row_sum_kernel": 2, "_scale_kernel": 2}
    forced = _run(script, optimized, forced=True)  # the TileIR code on: its configs there, each wrapper right
    assert forced["configs"] == {"_row_sum_kernel": 18, "_scale_kernel": 12}
    assert forced["runs"]["first"]["negate"] == before["runs"]["first"]["negate"]


def test_a_noinline_jit_applied_by_assignment_is_flagged(tmp_path: Path) -> None:
    path = tmp_path / "noinline.py"
    path.write_text(f"{_HEADER}def _twice(x):\n    return x * 2\n\n\n_twice = triton.jit(_twice, noinline=True)\n\n\n"
                    "def k(x_ptr):\n    tl.store(x_ptr, _twice(tl.load(x_ptr)))\n\n\nk = triton.jit(k)\n")
    (result,) = classify_paths([path], ir=False)
    records = {r.kernel: r for r in result.kernels}
    assert [(f.code, f.line) for f in records["_twice"].findings] == [("TIR016", 11)]
    assert records["k"].calls == ["_twice"] and not records["_twice"].is_entry


_FALLBACK = '''
import triton
import triton.language as tl

try:
    HAS_TRITON = True
except ImportError:
    HAS_TRITON = False

if HAS_TRITON:
    def _inc_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
    _inc_kernel = triton.jit(_inc_kernel)

    def inc(x):
        _inc_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256)
else:
    def _inc_kernel(x_ptr, n, BLOCK=0):
        raise RuntimeError("Triton is needed")
'''


def test_a_kernel_made_by_assignment_inside_a_block_beside_its_fallback() -> None:
    (kernel,) = discover(_FALLBACK, "inc.py").kernels
    assert (kernel.line, kernel.condition, kernel.made_by) == (11, "if HAS_TRITON", "assignment")
    result = _transform(_FALLBACK, "inc.py")
    (report,) = result.kernels
    assert report.skipped == ["the plain-Python definition of _inc_kernel at line 19 (under `else of if HAS_TRITON`) "
                              "left alone: another branch of the block (TIR203)"]
    assert "        _inc_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK=256,\n" \
           '                                                    **({"occupancy": 4} if TILEIR else {}))\n' \
           "else:\n" in result.new_source


def test_a_run_captures_validates_them_like_decorated_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "assigned_kernels.py").write_text(FIXTURE.read_text())
    (tmp_path / "drive.py").write_text("import assigned_kernels as m\n\nm.check(m.results())\n")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["run", "assigned_kernels.py", "--json", "--", "python", "drive.py"])
    assert done.exit_code == 0, done.output[-3000:]
    records = json.loads((tmp_path / ".tileiropt" / "validate.json").read_text())["records"]
    ran = {(r["kernel"], r["variant"], r["backend"]): r["status"] for r in records if r["backend"] != "tileir"}
    assert ran == {(kernel, variant, backend): "pass"
                   for kernel in ("_gelu_add_kernel", "_row_sum_kernel", "_scale_kernel", "_negate_py")
                   for variant, backend in (("original", "interpret"), ("optimized", "interpret"),
                                            ("optimized", "tileir-code-on-interpret"))}


def test_a_library_file_whose_kernels_are_all_made_by_assignment_is_a_kernel_file(tmp_path: Path) -> None:
    """Library mode finds such a file (no decorator anywhere in it) as it finds a decorated one; another library's
    `jit` applied the same way is not Triton's."""
    from tileiropt.project.library import library_files

    package = tmp_path / "lib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(FIXTURE.read_text())
    (package / "numba_ops.py").write_text("import numba\n\n\ndef k(x):\n    return x\n\n\nk = numba.jit(k)\n")
    found = library_files(package)
    assert [p.name for p in found.kernel_files] == ["ops.py"]
