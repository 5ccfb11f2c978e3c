"""A helper defined twice under an `if` on an environment variable (`if os.environ.get("FAST") == "1": def log
... else: def log ...`): classify analyses the definition the module makes in this environment, so a fast-math
branch the user never turned on is not blamed on the kernels that call the helper."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tileiropt.classify.classify import classify_paths
from tileiropt.classify.discovery import scan
from tileiropt.classify.environment import decide, names_read

from shared import package

HELPERS = '''\
import os
import triton
import triton.language as tl
from triton.language.extra import libdevice

if os.environ.get("PKG_FAST_OPS", "0") == "1":
    @triton.jit
    def log(x):
        return libdevice.fast_logf(x.to(tl.float32))
else:
    @triton.jit
    def log(x):
        return tl.log(x.to(tl.float32))
'''

KERNEL = '''\
import triton
import triton.language as tl
from .op import log


@triton.jit
def loss_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, log(tl.load(x_ptr + offs, mask=mask, other=1.0)), mask=mask)
'''


@pytest.mark.parametrize(("test", "environ", "expected"), [
    ('os.environ.get("A", "0") == "1"', {}, False),
    ('os.environ.get("A", "0") == "1"', {"A": "1"}, True),
    ('os.getenv("A") is None', {}, None),  # `is`: not evaluated
    ('"A" in os.environ', {"A": ""}, True),
    ('"A" not in os.environ', {"A": ""}, False),
    ('os.environ["A"] == "x"', {}, None),  # a KeyError at import: undecided
    ('os.environ.get("A", "").lower() in ("1", "true")', {"A": "TRUE"}, True),
    ('int(os.environ.get("A", "0")) > 0', {"A": "2"}, None),  # an order comparison: undecided
    ('bool(int(os.environ.get("A", "0")))', {"A": "2"}, True),
    ('not os.environ.get("A")', {}, True),
    ('os.environ.get("A") and HAS_TRITON', {}, False),  # a falsy first operand decides without the rest
    ('HAS_TRITON and os.environ.get("A")', {"A": "1"}, None),
    ('os.environ.get("A") == "1" or os.environ.get("B") == "1"', {"B": "1"}, True),
    ('torch.cuda.is_available()', {}, None),
    ('environ.get("A", "1") != "0"', {}, True),
])
def test_environment_tests_are_decided_as_the_module_decides_them(test: str, environ: dict, expected) -> None:
    node = ast.parse(test, mode="eval").body
    assert decide(node, environ) is expected


def test_the_variables_a_source_reads_are_named() -> None:
    source = 'import os\nX = os.environ.get("PKG_A")\nif "PKG_B" in os.environ: pass\nos.getenv(\'PKG_C\', "1")\n'
    assert names_read(source) == ["PKG_A", "PKG_B", "PKG_C"]


def test_discovery_keeps_the_definition_this_environment_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PKG_FAST_OPS", raising=False)
    kernels = scan(HELPERS, "op.py").module.kernels
    assert [(k.name, k.line) for k in kernels] == [("log", 12)]
    monkeypatch.setenv("PKG_FAST_OPS", "1")
    assert [(k.name, k.line) for k in scan(HELPERS, "op.py").module.kernels] == [("log", 8)]


def test_a_kernel_calling_the_helper_is_blamed_only_where_the_fast_branch_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEIROPT_CACHE_DIR", str(tmp_path / "cache"))
    folder = package(tmp_path, op=HELPERS, ops=KERNEL)

    def findings() -> list[str]:
        [result] = classify_paths([folder / "ops.py"])
        return [f.code for kernel in result.kernels for f in kernel.findings]

    monkeypatch.delenv("PKG_FAST_OPS", raising=False)
    assert "TIR004" not in findings()
    monkeypatch.setenv("PKG_FAST_OPS", "1")
    assert "TIR004" in findings()  # the lint cache keyed the variable: not the unset run's entry


def test_apply_gives_no_tileir_code_to_a_kernel_classify_finds_rejected_as_run_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The error is in a helper of another module: `apply` asks classify, as `run` does, so both write the same code
    for the kernel; the syntax-level lint sees into the imported helper too."""
    from tileiropt.apply.command import apply_paths

    monkeypatch.setenv("TILEIROPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PKG_FAST_OPS", "1")
    folder = package(tmp_path, op=HELPERS, ops=KERNEL + "\n\ndef loss(x, out):\n    loss_kernel[(1,)](x, out, "
                     "x.numel(), BLOCK=1024)\n    return out\n")
    syntax_only, _ = apply_paths([folder / "ops.py"], dry_run=True)
    linted, _ = apply_paths([folder / "ops.py"], dry_run=True, lint=True)
    [kernel] = linted[0].kernels
    assert any("TIR004" in s and "would reject" in s for s in kernel.skipped), kernel.skipped
    assert not linted[0].changed
    assert not syntax_only[0].changed


@pytest.mark.parametrize(("test", "expected"), [
    ('os.environ.get("ENABLE_TILE", "0") == "1"', True),  # the lint is for what TileIR compiles
    ('os.environ.get("TRITON_INTERPRET") == "1"', None),  # set by tileiropt per process
    ('"TRITON_INTERPRET" in os.environ', None),
])
def test_variables_tileiropt_sets_are_read_as_the_tileir_backend_runs(test: str, expected,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENABLE_TILE", raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert decide(ast.parse(test, mode="eval").body) is expected


@pytest.mark.parametrize(("test", "expected"), [
    ("IS_NVIDIA_BLACKWELL", True),  # TileIR is enabled on Blackwell GPUs
    ("not utils.IS_BLACKWELL", False),
    ("is_blackwell()", True),
    ("IS_NVIDIA_BLACKWELL and os.environ.get('ENABLE_TILE') == '1'", True),
    ("IS_HOPPER", None),  # another GPU's name decides nothing
    ("check_shared_mem('blackwell')", None),  # a call with arguments asks something else of the device
    ("NOT_BLACKWELL", None),  # names that only mention Blackwell ask something else
    ("BLACKWELL_UNSUPPORTED", None),
    ("IS_PRE_BLACKWELL", None),
    ("not HAS_BLACKWELL_FIX", None),
    ("is_blackwell_unsupported()", None),
    ("os.environ.get('ARCH') == IS_BLACKWELL", None),  # a comparison's operand is no truth test
    ("int(IS_BLACKWELL) > 0", None),
])
def test_a_test_naming_the_gpu_tileir_runs_on_is_read_as_tileir_runs(test: str, expected) -> None:
    assert decide(ast.parse(test, mode="eval").body) is expected


_BY_DEVICE = '''
import triton
import triton.language as tl
from pkg.utils import IS_NVIDIA_BLACKWELL

if IS_NVIDIA_BLACKWELL:
    @triton.jit
    def k(x_ptr):
        tl.store(x_ptr, 2.0)
else:
    @triton.jit
    def k(x_ptr):
        tl.store(x_ptr, 1.0)
'''


def test_a_kernel_chosen_by_the_device_is_the_blackwell_one_without_a_branch_finding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the Blackwell definition runs where TileIR does: it is the one analysed, and no TIR203 says that the
    tool took the first of two alternatives it could not tell apart."""
    monkeypatch.setenv("TILEIROPT_CACHE_DIR", str(tmp_path / "cache"))
    assert [(k.name, k.line) for k in scan(_BY_DEVICE, "by_device.py").module.kernels] == [("k", 8)]
    path = tmp_path / "by_device.py"
    path.write_text(_BY_DEVICE)
    [result] = classify_paths([path])
    assert [f.code for kernel in result.kernels for f in kernel.findings if f.code == "TIR203"] == []
