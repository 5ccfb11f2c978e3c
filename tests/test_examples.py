"""The example kernels in `examples/` are correct under Triton's interpreter, config by config.

Triton decides at decoration time whether a kernel is interpreted, so the checks run in one
child process started with TRITON_INTERPRET=1 (this file is its script: see `main`). The
child runs every wrapper on small shapes, ragged ones included, once per autotune config
(pinned), against a float32 torch reference, and prints one JSON record per run. It also
evaluates each `reference` expression of `examples/tileiropt.toml` against its entry at
small dims, so the project file is checked as well. The tests in the parent read the records.

Interpreter limits that shape the cases: Triton 3.9's interpreter gets arithmetic and
`tl.dot` on bfloat16 values wrong, so bfloat16 runs only through kernels that compute in
float32 (the norms, SwiGLU, the row sum), never through vector_add, matmul or attention.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared import EXAMPLES, ROOT

EXAMPLE_NAMES = ["vector_add", "swiglu", "softmax", "layer_norm", "rms_norm", "row_sum", "matmul",
                 "attention"]
AUTOTUNED = {"swiglu", "rms_norm", "matmul", "attention"}

# Tolerances (atol, rtol) of a kernel output, in its dtype, against the float32 reference.
TOLERANCES = {"float32": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}

# Project-file check: swept dims take a ragged size, the others are capped (HEAD_DIM 64 stays).
PROJECT_SWEPT_SIZE = 67
PROJECT_DIM_CAP = 64


# --------------------------------------------------------------------------- the child process


def _cases() -> dict:
    """example -> (entry, [(input shapes, extra args)], dtypes, reference over float32 inputs)."""
    import torch
    import torch.nn.functional as F

    def attention_ref(q, k, v, sm_scale):
        return torch.softmax(q @ k.transpose(-1, -2) * sm_scale, dim=-1) @ v

    def rms_norm_ref(x, weight, eps):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

    def qkv(shape):
        return {"q": shape, "k": shape, "v": shape}

    return {
        "vector_add": ("add", [({"x": [1000], "y": [1000]}, {}), ({"x": [100, 70], "y": [100, 70]}, {})],
                       ["float32", "float16"], lambda x, y: x + y),
        "swiglu": ("swiglu", [({"a": [100, 70], "b": [100, 70]}, {}), ({"a": [5000], "b": [5000]}, {})],
                   ["bfloat16", "float32"], lambda a, b: F.silu(a) * b),
        "softmax": ("softmax", [({"x": [100, 70]}, {}), ({"x": [3, 1000]}, {})],
                    ["float16", "float32"], lambda x: torch.softmax(x, dim=-1)),
        "layer_norm": ("layer_norm",
                       [({"x": [4, 25, 70], "weight": [70], "bias": [70]}, {"eps": 1e-5}),
                        ({"x": [5, 2100], "weight": [2100], "bias": [2100]}, {"eps": 1e-5})],
                       ["bfloat16", "float32"],
                       lambda x, weight, bias, eps: F.layer_norm(x, x.shape[-1:], weight, bias, eps)),
        "rms_norm": ("rms_norm",
                     [({"x": [100, 70], "weight": [70]}, {"eps": 1e-6}),
                      ({"x": [2, 3, 300], "weight": [300]}, {"eps": 1e-6})],
                     ["bfloat16", "float32"], rms_norm_ref),
        "row_sum": ("row_sum", [({"x": [100, 70]}, {}), ({"x": [7, 2500]}, {}), ({"x": [2, 3, 5]}, {})],
                    ["float32", "bfloat16"], lambda x: x.sum(dim=-1)),
        "matmul": ("matmul", [({"a": [100, 70], "b": [70, 50]}, {}), ({"a": [33, 129], "b": [129, 65]}, {})],
                   ["float16"], lambda a, b: a @ b),
        "attention": ("attention",
                      [(qkv([1, 2, 100, 64]), {"sm_scale": 0.125}),
                       (qkv([2, 1, 37, 16]), {"sm_scale": 0.25})],
                      ["float16"], attention_ref),
    }


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _random_inputs(shapes: dict, dtypes: dict, seed: int) -> dict:
    import torch

    generator = torch.Generator().manual_seed(seed)
    return {name: torch.randn(shape, generator=generator).to(getattr(torch, dtypes[name]))
            for name, shape in shapes.items()}


def _compare(record: dict, out, expected, dtype, atol: float, rtol: float) -> None:
    """Fill `record` with the outcome of comparing `out` (any dtype) with a float32 `expected`."""
    import torch

    record["dtype_ok"] = out.dtype == dtype
    record["shape_ok"] = tuple(out.shape) == tuple(expected.shape)
    record["ok"] = record["dtype_ok"] and record["shape_ok"]
    if record["shape_ok"]:
        error = (out.float() - expected).abs()
        record["max_abs_error"] = float(error.max()) if error.numel() else 0.0
        record["ok"] = record["ok"] and bool(torch.allclose(out.float(), expected, atol=atol, rtol=rtol))


def _run_example(name: str, entry: str, shapes_args: list, dtypes: list, reference) -> list[dict]:
    import torch

    from tileiropt.harness.autotuners import autotuners, config_label, pinned

    module = _load(EXAMPLES / f"{name}.py")
    tuners = list(autotuners(module).values())
    if len(tuners) > 1:
        raise RuntimeError(f"{name}: expected at most one autotuner, found {len(tuners)}")
    configs = tuners[0].configs if tuners else [None]
    records = []
    for config in configs:
        for shapes, args in shapes_args:
            for dtype_name in dtypes:
                inputs = _random_inputs(shapes, dict.fromkeys(shapes, dtype_name), seed=0)
                record = {"example": name, "n_configs": len(tuners[0].configs) if tuners else 0,
                          "config": config_label(config) if config else "", "dtype": dtype_name,
                          "shapes": shapes}
                guard = pinned(tuners[0], config) if config is not None else contextlib.nullcontext()
                try:
                    with guard:
                        out = getattr(module, entry)(**inputs, **args)
                    expected = reference(**{k: v.float() for k, v in inputs.items()}, **args)
                    _compare(record, out, expected, getattr(torch, dtype_name), *TOLERANCES[dtype_name])
                except Exception as exc:  # reported to the parent, which fails the test
                    record["ok"] = False
                    record["error"] = f"{type(exc).__name__}: {exc}"
                records.append(record)
    return records


def _run_project_references() -> list[dict]:
    """Each kernel of the project file at small dims, per dtype variant, against its reference."""
    import torch
    import torch.nn.functional as F

    from tileiropt.harness.autotuners import autotuners, pinned
    from tileiropt.project.spec import load_project

    records = []
    for spec in load_project(EXAMPLES).kernels:
        dims = {d: PROJECT_SWEPT_SIZE if d in spec.sweep else min(size, PROJECT_DIM_CAP)
                for d, size in spec.dims.items()}
        module = _load(spec.path)
        tuners = list(autotuners(module).values())
        for dtypes in spec.dtypes:
            record = {"kernel": spec.name, "dims": dims, "dtypes": dtypes}
            inputs = _random_inputs(spec.shapes(dims), dtypes, seed=spec.seed)
            out_dtype = next(iter(inputs.values())).dtype
            with contextlib.ExitStack() as stack:
                for tuner in tuners:  # the first config: every config is covered by the cases above
                    stack.enter_context(pinned(tuner, tuner.configs[0]))
                try:
                    out = getattr(module, spec.entry)(**inputs, **spec.args)
                    scope = {**{k: v.float() for k, v in inputs.items()}, **spec.args}
                    expected = eval(spec.reference, {"torch": torch, "F": F}, scope)
                    _compare(record, out, expected.float(), out_dtype, *spec.tolerances(dtypes))
                except Exception as exc:  # reported to the parent, which fails the test
                    record["ok"] = False
                    record["error"] = f"{type(exc).__name__}: {exc}"
            records.append(record)
    return records


def main() -> None:
    """Child entry point: one JSON line per run."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise SystemExit("run with TRITON_INTERPRET=1")
    for name, (entry, shapes_args, dtypes, reference) in _cases().items():
        for record in _run_example(name, entry, shapes_args, dtypes, reference):
            print(json.dumps(record), flush=True)
    for record in _run_project_references():
        print(json.dumps(record), flush=True)


# --------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module")
def interpreter_records() -> dict[str, list[dict]]:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, __file__], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    records: dict[str, list[dict]] = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        key = record["example"] if "example" in record else f"project:{record['kernel']}"
        records.setdefault(key, []).append(record)
    return records


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_matches_reference_for_every_config(name: str, interpreter_records: dict) -> None:
    records = interpreter_records.get(name)
    assert records, f"{name}: no run recorded"
    failures = [r for r in records if not r["ok"]]
    assert not failures, json.dumps(failures, indent=1)
    # Every config of the autotuner ran, each on every case.
    n_configs = records[0]["n_configs"]
    assert len({r["config"] for r in records}) == max(n_configs, 1)
    if name in AUTOTUNED:
        assert n_configs >= 2, f"{name} should be autotuned over several configs"
    else:
        assert n_configs == 0, f"{name} should not be autotuned"


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_project_reference_matches_entry(name: str, interpreter_records: dict) -> None:
    records = interpreter_records.get(f"project:{name}")
    assert records, f"{name}: not in the project file, or not run"
    failures = [r for r in records if not r["ok"]]
    assert not failures, json.dumps(failures, indent=1)


def test_project_file_loads_and_entries_exist() -> None:
    from tileiropt.project.spec import load_project

    project = load_project(EXAMPLES)
    assert sorted(k.name for k in project.kernels) == sorted(EXAMPLE_NAMES)
    for kernel in project.kernels:
        assert kernel.path.parent == EXAMPLES
        assert kernel.reference, f"{kernel.name}: no reference"
        tree = ast.parse(kernel.path.read_text(encoding="utf-8"))
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert kernel.entry in functions, f"{kernel.name}: no function {kernel.entry} in {kernel.path.name}"
        # Entries are called with the inputs and args as keyword arguments.
        params = {a.arg for a in functions[kernel.entry].args.args}
        missing = (set(kernel.inputs) | set(kernel.args)) - params
        assert not missing, f"{kernel.name}: {kernel.entry} has no parameter {sorted(missing)}"
        for name, shape in kernel.shapes().items():
            assert all(isinstance(d, int) and d > 0 for d in shape), f"{kernel.name}.{name}: {shape}"
    flops = {k.name: k.flops for k in project.kernels if k.flops}
    assert {"matmul", "attention"} <= set(flops)


def test_examples_import_only_torch_triton_and_stdlib() -> None:
    allowed = {"torch", "triton"} | set(sys.stdlib_module_names)
    for name in EXAMPLE_NAMES:
        tree = ast.parse((EXAMPLES / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{name}.py imports {sorted(roots - allowed)}"


if __name__ == "__main__":
    main()
