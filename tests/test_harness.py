"""Units of the validation harness: inputs, references, structure checks, comparison, scaling,
records, and (under the interpreter, in this process) config items and launch recording."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest
import torch

from tileiropt.errors import ExitCode
from tileiropt.harness import harness
from tileiropt.harness.harness import HarnessError, Reference
from tileiropt.harness.provenance import Provenance
from tileiropt.harness.scaling import MAX_ELEMENTS, describe_scaling, scale_for_interpreter
from tileiropt.project.spec import parse_project
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS
from tileiropt.validate.records import ValidateRun, ValidationRecord, load_validate_run, save_validate_run

from shared import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "validate"


# --------------------------------------------------------------------------- inputs


def test_inputs_are_deterministic_per_seed_and_typed_per_name():
    shapes = {"x": [4, 8], "idx": [16], "mask": [5]}
    dtypes = {"x": "bfloat16", "idx": "int32", "mask": "bool"}
    a = harness.build_inputs(shapes, dtypes, seed=3)
    b = harness.build_inputs(shapes, dtypes, seed=3)
    c = harness.build_inputs(shapes, dtypes, seed=4)
    for name in shapes:
        assert torch.equal(a[name], b[name])
        assert list(a[name].shape) == shapes[name]
    assert not torch.equal(a["x"], c["x"])
    assert a["x"].dtype == torch.bfloat16 and a["idx"].dtype == torch.int32 and a["mask"].dtype == torch.bool


def test_int_inputs_respect_ranges_and_default_range():
    inputs = harness.build_inputs({"a": [2000], "b": [2000]}, {"a": "int64", "b": "int16"},
                                  ranges={"a": [-3, 2]})
    assert int(inputs["a"].min()) == -3 and int(inputs["a"].max()) == 1
    assert int(inputs["b"].min()) >= 0 and int(inputs["b"].max()) <= 15


def test_clone_inputs_protects_the_originals():
    inputs = harness.build_inputs({"x": [10]}, {"x": "float32"})
    copy = harness.clone_inputs(inputs)
    copy["x"].add_(1.0)
    assert not torch.equal(copy["x"], inputs["x"])


def test_upcast_widens_half_types_only():
    assert harness.upcast(torch.ones(2, dtype=torch.bfloat16)).dtype == torch.float32
    assert harness.upcast(torch.ones(2, dtype=torch.float16)).dtype == torch.float32
    assert harness.upcast(torch.ones(2, dtype=torch.float64)).dtype == torch.float64
    assert harness.upcast(torch.ones(2, dtype=torch.int32)).dtype == torch.int32


def test_written_inputs_names_the_tensor_a_call_changed():
    before = {"x": torch.tensor([1.0, float("nan")]), "y": torch.tensor([2.0, 3.0])}
    after = harness.clone_inputs(before)
    assert harness.written_inputs(before, after) == []
    after["y"][0] = 5.0
    assert harness.written_inputs(before, after) == ["y"]


# --------------------------------------------------------------------------- references


def test_reference_forms_are_recognised():
    assert Reference.parse("original").kind == "original"
    assert Reference.parse("refs:scaled").kind == "function"
    assert Reference.parse("torch.nn.functional:silu").kind == "function"
    assert Reference.parse("x[:, 0] + y").kind == "expression"
    with pytest.raises(HarnessError, match="not a Python expression"):
        Reference.parse("x +")


def test_expression_reference_sees_torch_F_args_and_dims():
    reference = Reference.parse("F.relu(x) * alpha + N")
    fn = reference.resolve()
    inputs = {"x": torch.tensor([-1.0, 2.0])}
    out, _ = harness.evaluate_reference(fn, reference.kind, inputs, {"alpha": 2.0}, {"N": 10})
    assert out.tolist() == [10.0, 14.0]


def test_expression_reference_runs_upcast_and_meta_gives_native_dtype():
    reference = Reference.parse("x.sum(-1)")
    fn = reference.resolve()
    inputs = harness.build_inputs({"x": [4, 8]}, {"x": "bfloat16"})
    out, used = harness.evaluate_reference(fn, reference.kind, inputs, {}, {})
    assert out.dtype == torch.float32 and used["x"].dtype == torch.float32
    meta = harness.expected_structure(fn, inputs, {}, {})
    assert meta.dtype == torch.bfloat16 and meta.device.type == "meta" and list(meta.shape) == [4]


def test_an_expression_reference_makes_its_new_tensors_on_the_inputs_device():
    ref = Reference.parse("x + torch.arange(N, dtype=x.dtype)")  # written without a device
    fn = ref.resolve()
    structure = harness.expected_structure(fn, {"x": torch.zeros(4)}, {}, {"N": 4})  # runs on meta tensors
    assert structure is not None and structure.device.type == "meta" and structure.shape == (4,)
    out, _ = harness.evaluate_reference(fn, ref.kind, {"x": torch.ones(4)}, {}, {"N": 4})
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_function_reference_is_imported_and_retried_natively(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    inputs = {"x": torch.ones(3, dtype=torch.float16)}
    scaled = Reference.parse("refs:scaled")
    out, _ = harness.evaluate_reference(scaled.resolve(), scaled.kind, inputs, {"alpha": 2.0}, {})
    assert out.tolist() == [3.0, 3.0, 3.0]
    half = Reference.parse("refs:half_only")
    out, used = harness.evaluate_reference(half.resolve(), half.kind, inputs, {}, {})
    assert out.dtype == torch.float16 and used["x"].dtype == torch.float16
    with pytest.raises(HarnessError, match="has no attribute"):
        Reference.parse("refs:missing").resolve()
    with pytest.raises(HarnessError, match="cannot import"):
        Reference.parse("no_such_module_xyz:fn").resolve()


def test_original_reference_calls_the_original_entry_on_native_inputs():
    reference = Reference.parse("original")
    with pytest.raises(HarnessError):
        reference.resolve()
    fn = reference.resolve(lambda inputs, args, dims: inputs["x"] * 2)  # the original's entry call
    inputs = {"x": torch.ones(2, dtype=torch.bfloat16)}
    out, _ = harness.evaluate_reference(fn, reference.kind, inputs, {}, {})
    assert out.dtype == torch.bfloat16 and out.tolist() == [2.0, 2.0]


# --------------------------------------------------------------------------- structure and comparison


def test_check_structure_reports_dtype_shape_and_arity():
    expected = (torch.empty(4, 2, dtype=torch.bfloat16, device="meta"), torch.empty(4, device="meta"))
    assert harness.check_structure((torch.zeros(4, 2, dtype=torch.bfloat16), torch.zeros(4)), expected) is None
    assert "dtype float32, expected bfloat16" in harness.check_structure(
        (torch.zeros(4, 2), torch.zeros(4)), expected)
    assert "shape [4, 3], expected [4, 2]" in harness.check_structure(
        (torch.zeros(4, 3, dtype=torch.bfloat16), torch.zeros(4)), expected)
    assert "1 items, expected 2" in harness.check_structure((torch.zeros(4, 2, dtype=torch.bfloat16),), expected)
    assert "expected a tensor" in harness.check_structure(None, torch.empty(1, device="meta"))
    assert harness.check_structure(torch.zeros(4), torch.empty(4, dtype=torch.float16), check_dtype=False) is None


def test_compare_locates_the_first_mismatch():
    expected = torch.zeros(3, 4)
    actual = expected.clone()
    actual[2, 1] = 0.5
    actual[2, 3] = 0.25
    result = harness.compare(actual, expected, atol=1e-3, rtol=1e-3)
    assert not result.ok
    assert result.mismatches == 2 and result.elements == 12
    assert result.first_mismatch == [2, 1] and result.mismatch_in == "out"
    assert result.max_abs == pytest.approx(0.5)
    assert "first at (2, 1)" in result.reason


def test_compare_tolerances_and_relative_error():
    expected = torch.tensor([1.0, 100.0])
    assert harness.compare(torch.tensor([1.005, 100.5]), expected, atol=1e-2, rtol=1e-2).ok
    result = harness.compare(torch.tensor([1.0, 103.0]), expected, atol=1e-2, rtol=1e-2)
    assert not result.ok and result.first_mismatch == [1]
    assert result.max_rel == pytest.approx(0.03, rel=1e-4)


def test_compare_nan_and_inf_positions_must_match():
    nan, inf = float("nan"), float("inf")
    expected = torch.tensor([nan, inf, -inf, 1.0])
    assert harness.compare(torch.tensor([nan, inf, -inf, 1.0]), expected, 1e-4, 1e-4).ok
    assert harness.compare(torch.tensor([0.0, inf, -inf, 1.0]), expected, 1e-4, 1e-4).first_mismatch == [0]
    assert harness.compare(torch.tensor([nan, -inf, -inf, 1.0]), expected, 1e-4, 1e-4).first_mismatch == [1]
    assert harness.compare(torch.tensor([nan, inf, -inf, nan]), expected, 1e-4, 1e-4).first_mismatch == [3]


def test_compare_recurses_into_tuples_dicts_and_scalars():
    expected = {"a": (torch.zeros(2), 1.5), "b": [torch.ones(3, dtype=torch.int32)]}
    good = {"a": (torch.zeros(2), 1.5), "b": [torch.ones(3, dtype=torch.int32)]}
    assert harness.compare(good, expected, 1e-4, 1e-4).ok
    bad = {"a": (torch.zeros(2), 1.5), "b": [torch.tensor([1, 2, 1], dtype=torch.int32)]}
    result = harness.compare(bad, expected, 1e-4, 1e-4)
    assert not result.ok and result.mismatch_in == "out['b'][0]" and result.first_mismatch == [1]
    scalar = harness.compare({"a": (torch.zeros(2), 2.5), "b": expected["b"]}, expected, 1e-4, 1e-4)
    assert not scalar.ok and scalar.mismatch_in == "out['a'][1]"
    assert not harness.compare([torch.zeros(2)], expected, 1e-4, 1e-4).ok


def test_compare_half_output_against_float32_reference():
    expected = torch.randn(64, generator=torch.Generator().manual_seed(0))
    assert harness.compare(expected.to(torch.bfloat16), expected, 2e-2, 2e-2).ok
    assert not harness.compare(expected.to(torch.bfloat16), expected, 1e-5, 1e-5).ok


def test_default_tolerances_follow_the_loosest_input_dtype():
    project = parse_project({"kernel": [{"path": "refs.py", "entry": "scaled", "inputs": {"x": [4]},
                                         "args": {"alpha": 2.0}, "dtypes": ["bfloat16", "float32"]}]}, None, FIXTURES)
    spec = project.kernels[0]
    assert spec.tolerances(spec.dtypes[0]) == (2e-2, 2e-2)
    assert spec.tolerances(spec.dtypes[1]) == (1e-4, 1e-4)


# --------------------------------------------------------------------------- importing


def test_import_kernel_module_unique_names_and_sibling_imports():
    a = harness.import_kernel_module(FIXTURES / "uses_sibling.py")
    b = harness.import_kernel_module(FIXTURES / "other" / "uses_sibling.py")
    assert a is not b and a.__name__ != b.__name__
    assert harness.import_kernel_module(FIXTURES / "uses_sibling.py") is a
    x = torch.ones(2)
    assert harness.entry_function(a, "triple")(x).tolist() == [3.0, 3.0]
    assert harness.entry_function(b, "triple")(x).tolist() == [30.0, 30.0]
    with pytest.raises(HarnessError, match="has no function 'nope'"):
        harness.entry_function(a, "nope")


def test_a_bare_top_level_call_that_raises_is_remembered_and_the_module_still_defines(tmp_path, monkeypatch):
    from tileiropt.harness import stand_ins

    monkeypatch.setattr(stand_ins, "FAILED_CALLS", {})
    script = tmp_path / "self_checked.py"
    script.write_text("import sys\n\ndef check():\n    assert 1 == 2, 'self-check; one\\ntwo'\n\n\ncheck()\n"
                      "VALUE = 3\nsys.exit(0)\nsys.exit('usage: self_checked.py')\nAFTER_EXIT = 4\n")
    module = harness.import_kernel_module(script)
    assert module.VALUE == 3 and module.AFTER_EXIT == 4  # sys.exit(non-zero) is a call that raised too
    assert stand_ins.failed_calls(str(script)) == [  # sys.exit(0) is a clean end; one line per failure
        "AssertionError: self-check; one (at self_checked.py:4)",
        "SystemExit: usage: self_checked.py (at self_checked.py:10)"]
    note = stand_ins.note([str(tmp_path)])
    assert "the module's own call at self_checked.py:7 raised AssertionError: self-check; one" in note
    assert "\n" not in note
    assert not (tmp_path / "__pycache__").exists()  # the guarded code is never cached where a plain import looks
    other = tmp_path / "fine.py"
    other.write_text("def f():\n    return 1\n\n\nf()\nX = f()\n")
    assert harness.import_kernel_module(other).X == 1 and len(stand_ins.FAILED_CALLS) == 2
    broken = tmp_path / "broken.py"  # a call that raises, then an unguarded statement that fails the import
    broken.write_text("int('x')\nassert False\n")
    for _ in range(2):
        with pytest.raises(AssertionError):
            harness.import_kernel_module(broken)
    assert stand_ins.failed_calls(str(broken)) == []  # its definitions were not used: nothing claims they were


def test_out_of_resources_and_exception_description():
    from triton.runtime.errors import OutOfResources

    assert harness.out_of_resources(OutOfResources(327680, 232448, "shared memory"))
    assert not harness.out_of_resources(RuntimeError("out of resource"))
    long = RuntimeError("at 5:32:\n" + "\n".join(f"line {i}" for i in range(20)) + "\nAttributeError: cause")
    text = harness.describe_exception(long)
    assert text.startswith("RuntimeError: at 5:32:") and text.endswith("AttributeError: cause")
    assert text.count("\n") == 6


def test_needs_cuda_recognises_cpu_only_torch_errors():
    assert harness.needs_cuda(RuntimeError("PyTorch was compiled without CUDA support"))
    assert harness.needs_cuda(AssertionError("Torch not compiled with CUDA enabled"))
    assert not harness.needs_cuda(ValueError("shapes differ"))


# --------------------------------------------------------------------------- scaling


def test_scaling_halves_the_largest_named_dim_until_small():
    scaled = scale_for_interpreter({"a": ["M", "K"], "b": ["K", "N"]}, {"M": 512, "N": 512, "K": 512},
                                   "2 * M * N * K")
    total = sum(math.prod(s) for s in scaled.shapes.values())
    assert total <= MAX_ELEMENTS
    assert scaled.shapes["a"][1] == scaled.shapes["b"][0]  # K stays consistent
    assert scaled.scaled_from == {"a": [512, 512], "b": [512, 512]}
    assert "from a=512x512, b=512x512 to" in describe_scaling(scaled.scaled_from, scaled.shapes)


def test_scaling_keeps_small_shapes_and_small_dims():
    small = scale_for_interpreter({"x": ["N"]}, {"N": 1000})
    assert small.scaled_from is None and small.shapes == {"x": [1000]}
    attention = scale_for_interpreter({"q": ["Z", "H", "S", "D"]}, {"Z": 2, "H": 4, "S": 4096, "D": 64})
    assert attention.dims["D"] == 64 and attention.dims["Z"] == 2 and attention.dims["S"] < 4096


def test_scaling_literal_sizes_everywhere_they_occur():
    scaled = scale_for_interpreter({"x": [1024, 4096], "w": [4096]}, {})
    assert scaled.shapes["x"][1] == scaled.shapes["w"][0]
    assert sum(math.prod(s) for s in scaled.shapes.values()) <= MAX_ELEMENTS


def test_scaling_flops_bound():
    scaled = scale_for_interpreter({"a": ["M", "K"]}, {"M": 64, "K": 64, "N": 1 << 20}, "2 * M * N * K",
                                   max_flops=1 << 26)
    assert 2 * scaled.dims["M"] * scaled.dims["N"] * scaled.dims["K"] <= 1 << 26


# --------------------------------------------------------------------------- records


def _record(status: str, **kw) -> ValidationRecord:
    return ValidationRecord(kernel="k", variant="original", backend="interpret", config="(launch)",
                            status=status, **kw)


def test_exit_codes_follow_the_statuses():
    assert ValidateRun([_record(PASS), _record(NOT_RUN)], ["interpret"]).exit_code() == ExitCode.OK
    assert ValidateRun([_record(PASS), _record(FAIL)], ["interpret"]).exit_code() == ExitCode.FAILED
    assert ValidateRun([_record(ERROR), _record(NOT_RUN)], ["interpret"]).exit_code() == ExitCode.FAILED
    assert ValidateRun([_record(NOT_RUN)], ["tileir"]).exit_code() == ExitCode.NOT_RUN
    assert ValidateRun([], []).exit_code() == ExitCode.NOT_RUN


def test_records_round_trip_through_validate_json(tmp_path):
    record = _record(FAIL, max_abs=float("nan"), max_rel=float("inf"), mismatches=1, elements=4,
                     first_mismatch=[0, 3], shapes={"x": [1, 4]},
                     provenance=Provenance(compiled_backend="interpreter", kernels={"k": "interpreter"}))
    run = ValidateRun([record], ["interpret"], command=["tileiropt", "validate"], environment={"python": "3"})
    path = save_validate_run(run, tmp_path / "artifacts")
    assert json.loads(path.read_text())["records"][0]["max_abs"] == "nan"
    loaded = load_validate_run(tmp_path / "artifacts")
    assert math.isnan(loaded.records[0].max_abs) and math.isinf(loaded.records[0].max_rel)
    assert loaded.records[0].first_mismatch == [0, 3]
    assert loaded.records[0].provenance.kernels == {"k": "interpreter"}
    assert loaded.command == ["tileiropt", "validate"] and loaded.exit_code() == ExitCode.FAILED


def test_load_validate_run_errors_are_user_errors(tmp_path):
    from tileiropt.errors import UserError

    with pytest.raises(UserError, match="run `tileiropt validate` first"):
        load_validate_run(tmp_path)
    (tmp_path / "validate.json").write_text("{not json")
    with pytest.raises(UserError, match="cannot read"):
        load_validate_run(tmp_path)


# --------------------------------------------------------------------------- configs and launches (interpreter)


@pytest.fixture
def interpreted(monkeypatch):
    """Kernels decorated during the test are interpreted (Triton reads the variable at decoration)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_config_items_pin_one_config_at_a_time_and_record_launches(interpreted):
    from tileiropt.harness.configs import config_items, label_after_run, pinned_item
    from tileiropt.harness.launches import LaunchRecorder

    module = harness.import_kernel_module(FIXTURES / "two_tuners.py")
    items = config_items(module)
    assert [(i.autotuner, i.index) for i in items] == [
        (None, 0), ("double_kernel", 1), ("negate_kernel", 1), ("negate_kernel", 2)]
    x = torch.arange(100, dtype=torch.float32)
    with pinned_item(module, items[0]), LaunchRecorder(module) as launches:
        module.first_only(x)
    assert launches.autotuners == {"double_kernel"}
    assert launches.kernels == {"double_kernel": "interpreter"}
    assert label_after_run(module, items[0], launches.autotuners).startswith("double_kernel: BLOCK_SIZE=32")
    with pinned_item(module, items[3]), LaunchRecorder(module) as launches:
        doubled, negated = module.both(x)
    assert launches.autotuners == {"double_kernel", "negate_kernel"}
    assert torch.equal(negated, -x) and torch.equal(doubled, 2 * x)
    assert len(module.negate_kernel.configs) == 3  # restored after pinning
    assert "run" not in vars(module.negate_kernel)  # the recorder removed its wrapper


def test_config_items_for_plain_and_best_config(interpreted):
    from tileiropt.harness.configs import config_items
    from tileiropt.schema import AUTOTUNED, LAUNCH

    plain = harness.import_kernel_module(FIXTURES / "off_by_one.py")
    assert [i.label for i in config_items(plain)] == [LAUNCH]
    tuned = harness.import_kernel_module(FIXTURES / "bad_config.py")
    assert len(config_items(tuned)) == 3
    assert [i.label for i in config_items(tuned, best_config=True)] == [AUTOTUNED]


def test_compiled_backend_is_read_from_kernels_and_caches():
    from types import SimpleNamespace

    from tileiropt.harness.launches import cached_backends, compiled_backend

    tileir = SimpleNamespace(metadata=SimpleNamespace(target=SimpleNamespace(backend="tileir", arch=100)))
    cuda = SimpleNamespace(metadata={"target": {"backend": "cuda"}})
    assert compiled_backend(tileir) == "tileir" and compiled_backend(cuda) == "cuda"
    assert compiled_backend(None) is None
    jit = SimpleNamespace(device_caches={0: ({"key": cuda}, {}, SimpleNamespace(backend="tileir"), None, None)})
    assert cached_backends(jit) == {"cuda"}  # the compiled kernel wins over the device target
    empty = SimpleNamespace(device_caches={0: ({}, {}, SimpleNamespace(backend="tileir"), None, None)})
    assert cached_backends(empty) == {"tileir"}
    assert cached_backends(SimpleNamespace()) == set()


def test_tileir_records_flag_kernels_compiled_by_another_backend():
    from types import SimpleNamespace

    from tileiropt.harness.backends import PTX, TILEIR
    from tileiropt.validate.cases import Case
    from tileiropt.validate.worker import CaseRunner

    case = Case(id=0, kernel="k", variant="optimized", path="k_tileir.py", entry="k", reference="original",
                shapes={"x": [4]}, dtypes={"x": "float32"}, atol=1e-4, rtol=1e-4)
    fell_back = SimpleNamespace(kernels={"k": "cuda"}, launched={}, received={}, backend_summary=lambda: "cuda")
    native = SimpleNamespace(kernels={"k": "tileir"}, launched={}, received={}, backend_summary=lambda: "tileir")
    assert CaseRunner(case, TILEIR, False, Provenance(), None).provenance(fell_back).fallback
    assert not CaseRunner(case, TILEIR, False, Provenance(), None).provenance(native).fallback
    assert not CaseRunner(case, PTX, False, Provenance(), None).provenance(fell_back).fallback


def test_a_replaying_import_keeps_a_scripts_definitions_and_leaves_its_program_out(tmp_path: Path) -> None:
    script = tmp_path / "script_with_program.py"
    script.write_text(
        "import os\n"
        "CALLS = []  # read by a definition: kept\n"
        "WIDTH = 4\n"
        "LIMIT = WIDTH * 2  # read by a definition through LIMIT: both kept\n"
        "def selftest(n):\n    CALLS.append(('selftest', n))\n    return LIMIT\n"
        "x = [1, 2, 3]  # the script's data: left out\n"
        "selftest(1)\n"
        "print('running the script part')\n"
        "os.environ.setdefault('TILEIROPT_TEST_SETUP_CALL', '1')  # a call of an import: kept\n"
        "if True:\n    selftest(2)\n    def late():\n        return x\n"
        "result = selftest(3)\n"
        "assert result == 8\n")
    os.environ.pop("TILEIROPT_TEST_SETUP_CALL", None)
    with harness.MODULE_CALLS.only_definitions():
        module = harness.import_kernel_module(script)
    assert module.CALLS == [] and module.selftest(0) == 8 and module.CALLS == [("selftest", 0)]
    assert not hasattr(module, "result") and callable(module.late)
    assert os.environ.pop("TILEIROPT_TEST_SETUP_CALL") == "1"
    assert module.x == [1, 2, 3]  # `late` reads it, so it stays
    sys.modules.pop(harness.module_name_for(script.resolve()), None)
    whole = harness.import_kernel_module(script)  # validation of a project's entry runs the script whole
    assert whole.CALLS == [("selftest", 1), ("selftest", 2), ("selftest", 3)]


def test_definitions_that_do_not_import_alone_are_imported_whole(tmp_path: Path) -> None:
    script = tmp_path / "script_needing_its_program.py"
    script.write_text("exec('WIDTH = 4')\nclass Shape:\n    size = WIDTH  # read at import: needs the exec\n")
    with harness.MODULE_CALLS.only_definitions():
        module = harness.import_kernel_module(script)
    assert module.Shape.size == 4


def _kept_definitions(source: str) -> str:
    """What a worker keeps of a script's `source` (`script_definitions.definitions_only`), as source."""
    import ast

    from tileiropt.harness.script_definitions import definitions_only

    return ast.unparse(ast.Module(body=definitions_only(ast.parse(source).body), type_ignores=[]))


def test_a_scripts_program_is_left_out_without_falling_back_to_the_whole(tmp_path: Path) -> None:
    """Like tutorial 03: a function's own locals named like the script's data, an `if` over the script's results."""
    source = ("import math\n"
              "SCALE = 2\n"
              "def kernel(a, b):\n    return (a + b) * SCALE\n"
              "def bench():\n    a = 1\n    b = 2\n    return kernel(a, b)  # its own a and b\n"
              "a = [1] * 10\nb = [2] * 10\n"
              "out = kernel(a[0], b[0])\n"
              "if out == 6:\n    print('the self-check passed')\n"
              "else:\n    raise SystemExit('the self-check failed')\n"
              "if math.pi > 3:\n    def helper():\n        return SCALE\n")
    kept = _kept_definitions(source)
    assert "a = [1] * 10" not in kept and "out =" not in kept and "print(" not in kept and "SystemExit" not in kept
    assert "SCALE = 2" in kept and "def helper" in kept and "if math.pi > 3" in kept
    namespace: dict = {}
    exec(compile(kept, "<kept>", "exec"), namespace)  # noqa: S102 - the test's own source
    assert namespace["bench"]() == 6 and namespace["helper"]() == 2


def test_an_optimized_file_keeps_the_tools_code_whole_and_leaves_the_script_part_out(tmp_path: Path) -> None:
    """The gate and every `if is_tileir():` block stay (with what they read), even for a kernel that only the
    script part launches; the script's own program is left out as in its original."""
    from tileiropt.harness.gate import GATE_MARKER

    script = tmp_path / "k_tileir.py"
    script.write_text(f"# ({GATE_MARKER})\n"
                      "RAN = []\n"
                      "def ran():\n    return RAN\n"
                      "def _tileiropt_attach(kernel, configs):\n    return (kernel, configs)\n"
                      "def is_tileir():\n    return True\n"
                      "CONFIGS = [1, 2]  # read only by the tool's block: kept with it\n"
                      "def kernel():\n    return 'k'\n"
                      "if is_tileir():\n    kernel = _tileiropt_attach(kernel, CONFIGS)\n"
                      "    def twin():\n        data = 1  # its own local, named like the script's data\n"
                      "        return data\n"
                      "data = [0] * 10  # the script's data: left out\n"
                      "_tileiropt_attach(kernel, None)  # a bare call of the tool's: kept\n"
                      "RAN.append('the script part')  # the program: left out\n"
                      "kernel()\n")
    with harness.MODULE_CALLS.only_definitions():
        module = harness.import_kernel_module(script)
    assert module.ran() == [] and module.is_tileir() is True
    assert module.kernel[1] == [1, 2] and module.kernel[0]() == "k"
    assert module.twin() == 1 and not hasattr(module, "data")


def test_a_setup_call_reading_the_scripts_data_goes_with_it_and_a_flag_stays_with_its_block() -> None:
    source = ("import torch\nimport os\n"
              "x = torch.zeros(3)\ny = x + 1\n"
              "torch.testing.assert_close(y, x + 1)  # reads the script's data: left out with it\n"
              "for k in range(2):\n    torch.manual_seed(k)\n"
              "os.environ.setdefault('TILEIROPT_UNUSED_SETUP', '1')  # reads nothing of the script: kept\n"
              "HAS_TMA = hasattr(torch, 'float8_e5m2')\n"
              "if HAS_TMA:\n    BLOCK = 128\nelse:\n    BLOCK = 64\n"
              "def block():\n    return BLOCK\n")
    kept = _kept_definitions(source)
    assert "x = torch.zeros" not in kept and "assert_close" not in kept and "manual_seed" not in kept
    assert "os.environ.setdefault" in kept and "HAS_TMA = " in kept and "BLOCK = 64" in kept
    namespace: dict = {}
    exec(compile(kept, "<kept>", "exec"), namespace)  # noqa: S102 - the test's own source
    assert namespace["block"]() in (64, 128)
    os.environ.pop("TILEIROPT_UNUSED_SETUP", None)


def test_an_authors_own_is_tileir_in_a_condition_is_the_script_not_the_tools_code() -> None:
    source = ("import torch\n"
              "def is_tileir():\n    return False\n"
              "def matmul(a, b):\n    return a @ b\n"
              "a = torch.ones(2, 2)\n"
              "if torch.cuda.is_available() or is_tileir():  # the author's: its script part is left out\n"
              "    out = matmul(a, a)\n    print(out)\n"
              "if is_tileir():  # as the tool writes its blocks: kept whole\n    TILE_CONFIGS = [1, 2]\n")
    kept = _kept_definitions(source)
    assert "matmul(a, a)" not in kept and "a = torch.ones" not in kept and "print(out)" not in kept
    assert "TILE_CONFIGS = [1, 2]" in kept


def test_a_launchs_inputs_are_drawn_once_per_worker_and_every_build_gets_its_own_copy(monkeypatch) -> None:
    """The next case or row of the same launch copies the kept storages: the same values, never the same memory (a
    kernel writes into its inputs), values from `spec["values"]` laid over, and at most `KEPT` launches kept."""
    from tileiropt.capture import replay
    from tileiropt.project.launch import CapturedLaunch

    launch = CapturedLaunch.from_json({"kernel": "k", "file": "k.py", "args": [
        {"name": "x", "tensor": {"shape": [4, 3], "stride": [3, 1], "extent": 12, "dtype": "float16"}},
        {"name": "idx", "tensor": {"shape": [2], "stride": [1], "extent": 2, "dtype": "int32", "values": [5, 7]}}],
        "grid": [1, 1, 1]})
    drawn: list[int] = []
    real_draw = replay.draw
    monkeypatch.setattr(replay, "draw", lambda launch, seed: drawn.append(seed) or real_draw(launch, seed))
    monkeypatch.setattr(replay, "DRAWN", replay.DrawnStorages())
    first = replay.build_inputs(launch, 0, "cpu")
    first["x"].fill_(0)  # the kernel wrote into its input
    second = replay.build_inputs(launch, 0, "cpu")
    assert drawn == [0] and second["x"].abs().sum() > 0 and second["x"].dtype == torch.float16
    assert second["idx"].tolist() == [5, 7] and second["x"].stride() == (3, 1)
    again = real_draw(launch, 0)  # the values a fresh draw gives
    assert torch.equal(second["x"], torch.as_strided(again[0][2], [4, 3], [3, 1]))
    for seed in (1, 2):
        replay.build_inputs(launch, seed, "cpu")
    replay.build_inputs(launch, 0, "cpu")  # pushed out by seeds 1 and 2: drawn again
    assert drawn == [0, 1, 2, 0] and len(replay.DRAWN.kept) == replay.DrawnStorages.KEPT
    monkeypatch.setattr(replay.DrawnStorages, "MAX_BYTES", 8)  # larger than this: drawn each time, not kept
    replay.build_inputs(launch, 3, "cpu")
    replay.build_inputs(launch, 3, "cpu")
    assert drawn[-2:] == [3, 3]


def test_a_launch_of_gigabytes_is_drawn_on_its_own_device_each_time_and_not_kept(monkeypatch) -> None:
    """Over `ON_DEVICE_BYTES` the storages are drawn by the device's own generator where the launch runs (on the
    CPU: the very values the kept path gives), each build its own memory, nothing kept for the next."""
    from tileiropt.capture import replay
    from tileiropt.project.launch import CapturedLaunch

    launch = CapturedLaunch.from_json({"kernel": "k", "file": "k.py", "args": [
        {"name": "x", "tensor": {"shape": [4, 3], "stride": [3, 1], "extent": 12, "dtype": "float16"}},
        {"name": "idx", "tensor": {"shape": [2], "stride": [1], "extent": 2, "dtype": "int32", "values": [5, 7]}}],
        "grid": [1, 1, 1]})
    assert replay.drawn_bytes(launch) == 12 * 2 + 2 * 4
    monkeypatch.setattr(replay, "DRAWN", replay.DrawnStorages())
    kept = replay.build_inputs(launch, 0, "cpu")
    monkeypatch.setattr(replay, "DRAWN", replay.DrawnStorages())
    monkeypatch.setattr(replay, "ON_DEVICE_BYTES", 16)
    where: list[str] = []
    real_draw = replay.draw
    monkeypatch.setattr(replay, "draw", lambda launch, seed, device="cpu": where.append(device)
                        or real_draw(launch, seed, device))
    first, second = replay.build_inputs(launch, 0, "cpu"), replay.build_inputs(launch, 0, "cpu")
    assert where == ["cpu", "cpu"] and not replay.DRAWN.kept
    assert torch.equal(first["x"], kept["x"]) and first["idx"].tolist() == [5, 7]
    first["x"].fill_(0)  # the kernel wrote into its input: the next build is its own memory
    assert second["x"].abs().sum() > 0


def test_a_record_names_the_stand_ins_its_own_case_reached_not_another_kernels(monkeypatch) -> None:
    from tileiropt.harness import stand_ins

    package = "/pkg/ops"
    monkeypatch.setattr(stand_ins, "REACHED", {"libdevice.tanh": {(f"{package}/geglu.py", 44)},
                                               "capability": {(f"{package}/utils.py", 9)}})
    stand_ins.begin()  # a new case: geglu's tanh and utils' capability were reached by earlier cases
    own = [f"{package}/cross_entropy.py"]
    assert stand_ins.note([package], own) == ""
    stand_ins._SINCE.add("capability")  # reached again by this case's code (a wrapper in utils.py)
    assert stand_ins.note([package], own) == "interpreter stand-ins: capability (emulated sm_90 device)"
    assert "libdevice.tanh" in stand_ins.note([package])  # without its own files: the whole package, as before


@pytest.mark.gpu
def test_a_launch_of_gigabytes_is_drawn_on_the_gpu_the_same_each_time() -> None:
    """On a GPU, a launch over `ON_DEVICE_BYTES` is drawn there: the same values for every build (the original's
    and the optimized file's rows compare on them), each its own memory."""
    from tileiropt.capture import replay
    from tileiropt.project.launch import CapturedLaunch

    elements = replay.ON_DEVICE_BYTES // 2 + 1024
    launch = CapturedLaunch.from_json({"kernel": "k", "file": "k.py", "args": [
        {"name": "x", "tensor": {"shape": [elements], "stride": [1], "extent": elements, "dtype": "bfloat16"}},
        {"name": "y", "tensor": {"shape": [elements], "stride": [1], "extent": elements, "dtype": "float32"}}],
        "grid": [1, 1, 1]})
    first, second = replay.build_inputs(launch, 7, "cuda"), replay.build_inputs(launch, 7, "cuda")
    assert first["x"].is_cuda and first["x"].dtype == torch.bfloat16 and first["x"].data_ptr() != second["x"].data_ptr()
    assert torch.equal(first["x"], second["x"]) and torch.equal(first["y"], second["y"])
    assert not torch.equal(first["y"], replay.build_inputs(launch, 8, "cuda")["y"])
