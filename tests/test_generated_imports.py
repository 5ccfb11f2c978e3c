"""Every file `apply` writes for real kernels -- liger-kernel's ops (installed as a dev dependency), our
examples and the package fixtures -- imports with the TileIR code on and with it off wherever the original
imports, no kernel object ends up with two autotuners in its chain, and no autotuner is keyed on a
parameter the kernel uses as an address. Imports run under the interpreter with the tool's stand-ins,
in one subprocess per gate setting."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tileiropt.analysis.classify import classify_source
from tileiropt.entries import package_name_for
from tileiropt.errors import UserError
from tileiropt.transform.apply import transform_source

ROOT = Path(__file__).parent.parent
FIXTURE_PACKAGES = Path(__file__).parent / "fixtures" / "real" / "pkgs"


def _sources() -> list[Path]:
    files = sorted((ROOT / "examples").glob("*.py")) + sorted((FIXTURE_PACKAGES / "tuned").glob("*.py"))
    try:
        import liger_kernel
    except ImportError:
        return files
    return files + sorted(p for p in (Path(liger_kernel.__file__).parent / "ops").rglob("*.py")
                          if "_ascend" not in p.parts)  # Ascend NPU kernels: not importable with CUDA Triton


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("generated")
    items = []
    for path in _sources():
        source = path.read_text(encoding="utf-8")
        try:
            result = transform_source(source, str(path))
        except UserError:  # no Triton kernel in the file
            continue
        if not result.changed:
            continue
        dotted, _ = package_name_for(path)
        target = out / f"{len(items)}_{path.stem}_tileir.py"
        target.write_text(result.new_source, encoding="utf-8")
        items.append({"generated": str(target), "original": str(path), "module": dotted,
                      "source": source, "new_source": result.new_source})
    assert len(items) > 20
    return items


_IMPORTER = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from tileiropt.runtime.stand_ins import install_interpreter_device, skip_module_benchmarks
install_interpreter_device(); skip_module_benchmarks()
from tileiropt.runtime.autotuners import chain, kernel_objects
from tileiropt.runtime.loading import load_kernel_module
from triton.runtime import Autotuner
results = []
for item in json.loads(sys.stdin.read()):
    row = {"original": item["original"]}
    try:
        load_kernel_module(item["original"], item["original"], item["module"], "x")
    except BaseException as exc:
        row["original_fails"] = f"{type(exc).__name__}: {exc}"[:200]
        results.append(row)
        continue
    try:
        module = load_kernel_module(item["generated"], item["original"], item["module"], "x")
        row["twice"] = [name for name, obj in kernel_objects(module).items()
                        if sum(isinstance(o, Autotuner) for o in chain(obj)) > 1]
    except BaseException as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    results.append(row)
print(json.dumps(results))
"""


@pytest.mark.parametrize("gate", ["1", "0"])
def test_generated_files_import_with_the_gate_on_and_off(generated, gate: str) -> None:
    env = {**os.environ, "TILEIROPT_FORCE_TILEIR": gate, "TRITON_INTERPRET": "1"}
    payload = json.dumps([{k: item[k] for k in ("generated", "original", "module")} for item in generated])
    done = subprocess.run([sys.executable, "-c", _IMPORTER], input=payload, capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    imported = [row for row in rows if "original_fails" not in row]
    assert len(imported) > 20, rows
    assert [row for row in imported if "error" in row] == []
    assert [(row["original"], row["twice"]) for row in imported if row["twice"]] == []


def test_no_autotuner_is_keyed_on_a_pointer_or_wrapped_twice(generated) -> None:
    for item in generated:
        records = {r.kernel: r for r in classify_source(item["source"], item["original"], rules=[]).kernels}
        tree = ast.parse(item["new_source"])
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id == "_tileiropt_hint_autotune":
                target = ast.unparse(node.args[0]).removesuffix("_tileir")
                record = records[target]
                (key,) = [ast.literal_eval(k.value) for k in node.keywords if k.arg == "key"]
                assert key and not set(key) & set(record.pointer_params), (item["original"], target, key)
                assert set(key) <= set(record.size_params)
                assert record.kernel not in _autotuned(item["source"]), (item["original"], target)


def _autotuned(source: str) -> set[str]:
    """Kernels decorated with an autotuner (Triton's, or a decorator call taking `configs=`)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and (
                        "autotune" in ast.unparse(decorator.func)
                        or any(k.arg == "configs" for k in decorator.keywords)):
                    found.add(node.name)
    return found
