"""Kernel files as their owners write them: module-level driver queries, warmup launches, self-tests and
benchmark sweeps at import; kernels inside packages with relative imports, launched from another module or from
an autograd Function; positional calls whose arguments follow the dims; the interpreter's limits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tileiropt.classify.modules import locate_module, package_name_for
from tileiropt.errors import UserError
from tileiropt.harness.entry_ref import EntryRef
from tileiropt.project.entries import parse_call, signature_problem
from tileiropt.project.spec import parse_project
from tileiropt.report.artifacts import load_artifacts
from tileiropt.report.build import build_report
from tileiropt.run.pipeline import run_pipeline
from tileiropt.schema import ERROR, NOT_RUN, PASS
from tileiropt.validate.run import validate_project

from shared import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "real"

RMS = {"name": "tutorial_rms", "path": "tutorial_style.py", "call": "rms_norm(x, (N,), w, 1e-6)",
       "reference": "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w",
       "inputs": {"x": ["M", "N"], "w": ["N"]}, "dims": {"M": 4, "N": 1 << 17}}
SOFTMAX = {"name": "tutorial_softmax", "path": "tutorial_style.py", "entry": "softmax",
           "reference": "torch.softmax(x, dim=-1)", "inputs": {"x": [64, 100]}}
GELU_API = {"name": "gelu_api", "path": "pkgs/kitchen/ops/gelu.py", "entry": "kitchen.api:fast_gelu",
            "reference": "F.gelu(x, approximate='tanh')", "inputs": {"x": [1000]}, "atol": 1e-4}
GELU_FUNCTION = {"name": "gelu_function", "path": "pkgs/kitchen/ops/gelu.py", "call": "GeluFunction.apply(x, 'tanh')",
                 "reference": "F.gelu(x, approximate='tanh')", "inputs": {"x": [1000]}, "atol": 1e-4}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    target = tmp_path_factory.mktemp("real") / "real"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture(scope="module")
def piped(folder, tmp_path_factory):
    """`run` over the tutorial-style file and the package, with a marker the benchmark sweep would write."""
    marker = tmp_path_factory.mktemp("marker") / "benchmark-ran"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TILEIROPT_FIXTURE_BENCH_MARKER", str(marker))
        project = parse_project({"kernel": [RMS, SOFTMAX, GELU_API, GELU_FUNCTION]}, None, folder)
        result = run_pipeline(project, command=["tileiropt", "run"])
    return result, load_artifacts(Path(result.artifacts)), marker


def _records(artifacts, kernel, backend="interpret", variant="original"):
    return [r for r in artifacts.validate.records
            if r.kernel == kernel and r.backend == backend and r.variant == variant]


def test_tutorial_style_file_runs_under_the_interpreter(piped):
    result, artifacts, marker = piped
    assert result.exit_code == 0 and not result.stopped
    for kernel in ("tutorial_rms", "tutorial_softmax"):
        for backend, variant in (("interpret", "original"), ("interpret", "optimized"),
                                 ("tileir-code-on-interpret", "optimized")):
            records = _records(artifacts, kernel, backend, variant)
            ran = [r for r in records if r.repeat is None]
            assert ran and all(r.status == PASS for r in ran), (kernel, backend, variant, records)
            # a config that differs from one above only in hints computes the same on the interpreter: said, not run
            assert all(r.status == NOT_RUN for r in records if r not in ran)
    reason = _records(artifacts, "tutorial_softmax")[0].reason
    assert "module-level benchmark not run (tutorial_style.py:" in reason
    assert "interpreter stand-ins: capability, driver, first config, warmup" in reason


def test_module_level_benchmark_never_runs(piped):
    assert not piped[2].exists()


def test_dim_dependent_call_follows_the_interpreter_scaled_dims(piped):
    (record, *_) = _records(piped[1], "tutorial_rms")
    assert record.scaled_from == {"x": [4, 1 << 17], "w": [1 << 17]}
    assert record.shapes["x"][1] == record.shapes["w"][0] < 1 << 17


def test_rewrites_run_with_the_tileir_code_on(piped):
    (record, *_) = _records(piped[1], "tutorial_softmax", "tileir-code-on-interpret", "optimized")
    assert record.status == PASS and "softmax_kernel" in record.provenance.kernels  # its rewrite is in place


def test_package_kernel_is_imported_by_its_dotted_name_and_the_optimized_module_replaces_it(piped):
    artifacts = piped[1]
    for kernel in ("gelu_api", "gelu_function"):
        assert all(r.status == PASS for r in artifacts.validate.records if r.kernel == kernel and
                   r.backend != "tileir" and r.repeat is None), kernel
    # The wrapper lives in kitchen.api, which imports kitchen.ops.gelu: with the TileIR code on, it launched the
    # optimized kernel, so the package used the optimized module, not a sibling file nothing imports.
    # (launched without autotuner, its launch keeps its options and passes the TileIR hint: one record)
    records = _records(artifacts, "gelu_api", "tileir-code-on-interpret", "optimized")
    assert "_gelu_kernel" in records[0].provenance.kernels and [r.config for r in records] == ["(launch)"]


def test_coverage_names_rewritten_kernels_no_entry_launches(piped):
    report = build_report(piped[1])
    (rms,) = [k for k in report.kernels if k.name == "tutorial_rms"]
    findings = {c.kernel: c for c in rms.coverage}
    assert findings["softmax_kernel"].validated
    assert not findings["rms_norm_backward_kernel"].validated
    assert findings["rms_norm_backward_kernel"].finding == \
        "`rms_norm_backward_kernel` rewritten, not validated: no entry launches it"


def test_missing_dependency_and_interpreter_limit(folder):
    project = parse_project({"kernel": [
        {"name": "broken", "path": "pkgs/broken/ops.py", "entry": "copy", "reference": "x", "inputs": {"x": [100]}},
        {"name": "scalar_to", "path": "scalar_to.py", "entry": "add_eps", "reference": "x + eps",
         "inputs": {"x": [100]}, "args": {"eps": 0.5}},
    ]}, None, folder)
    run = validate_project(project, backends=["interpret"])
    broken, scalar = run.records
    assert broken.status == ERROR and "it needs the module 'tileiropt_fixture_missing_dependency', which is not " \
                                      "installed" in broken.reason
    assert scalar.status == PASS  # a float argument is an fp32 scalar under the interpreter, as when compiled


def test_interpreter_limits_are_named():
    from tileiropt.harness.harness import interpreter_limit

    assert interpreter_limit(AttributeError("'float' object has no attribute 'to'")).startswith(
        "a method of a Python scalar")
    assert interpreter_limit(ValueError("wrong values")) is None


# --------------------------------------------------------------------------- static: entries and calls


def test_package_names_and_module_lookup():
    gelu = FIXTURES / "pkgs" / "kitchen" / "ops" / "gelu.py"
    assert package_name_for(gelu) == ("kitchen.ops.gelu", (FIXTURES / "pkgs").resolve())
    assert package_name_for(FIXTURES / "scalar_to.py") == (None, FIXTURES.resolve())
    assert locate_module("kitchen.ops.gelu", [FIXTURES / "pkgs"]) == gelu.resolve()
    assert locate_module("kitchen.nope", [FIXTURES / "pkgs"]) is None
    assert EntryRef.parse("kitchen.api:fast_gelu") == EntryRef("kitchen.api", ("fast_gelu",))
    assert EntryRef.parse("LayerNorm.apply") == EntryRef(None, ("LayerNorm", "apply"))
    assert EntryRef.parse("not valid") is None


def test_call_signatures_are_checked_against_the_source():
    style = FIXTURES / "tutorial_style.py"
    assert signature_problem(style, ("RMSNorm", "apply"), 4, []) is None
    assert "missing a required argument: 'eps'" in signature_problem(style, ("RMSNorm", "apply"), 3, [])
    assert "unexpected keyword argument 'y'" in signature_problem(style, ("softmax",), 0, ["x", "y"])
    assert signature_problem(style, ("softmax",), 5, [], starred=True) is None
    assert parse_call("f(x, *rest)").starred and parse_call("x + 1") == "must be a call, like " \
                                                                           "layer_norm(x, (N,), w, b, 1e-5)"


@pytest.mark.parametrize(("kernel", "key", "message"), [
    ({**RMS, "call": "rms_norm(x, (N,), w)"}, "kernel[0].call", "missing a required argument: 'eps'"),
    ({**RMS, "call": "rms_norm(x, (N,), w, epsilon)"}, "kernel[0].call", "the call reads 'epsilon'"),
    ({**RMS, "call": "rms_norm(x,"}, "kernel[0].call", "not a Python expression"),
    ({**SOFTMAX, "args": {"dim": 1}}, "kernel[0].entry", "unexpected keyword argument 'dim'"),
    ({**SOFTMAX, "entry": "kitchen.nowhere:fn"}, "kernel[0].entry", "cannot find module 'kitchen.nowhere'"),
    ({key: v for key, v in SOFTMAX.items() if key != "path"} | {"module": "nope.mod"}, "kernel[0].module",
     "cannot find module 'nope.mod'"),
])
def test_calls_that_cannot_bind_are_bad_input_at_load(kernel, key, message):
    with pytest.raises(UserError) as info:
        parse_project({"kernel": [kernel]}, None, FIXTURES)
    assert f"[{key}]" in str(info.value) and message in str(info.value)


def test_module_key_finds_the_file_and_an_installed_package_writes_outside_it(monkeypatch, tmp_path):
    project = parse_project({"kernel": [{**GELU_FUNCTION, "path": None, "module": "kitchen.ops.gelu"}]}
                            | {"project": {"artifacts": "out"}}, None, FIXTURES / "pkgs")
    (spec,) = project.kernels
    assert spec.path == (FIXTURES / "pkgs" / "kitchen" / "ops" / "gelu.py").resolve()
    assert spec.module == "kitchen.ops.gelu" and spec.optimized_path == spec.path.with_name("gelu_tileir.py")
    monkeypatch.syspath_prepend(str(FIXTURES / "pkgs"))  # an installed package: found on sys.path
    outside = parse_project({"kernel": [{**GELU_FUNCTION, "path": None, "module": "kitchen.ops.gelu"}]},
                            None, tmp_path)
    assert outside.kernels[0].optimized_path == tmp_path / ".tileiropt" / "optimized" / "kitchen" / "ops" / \
        "gelu_tileir.py"
