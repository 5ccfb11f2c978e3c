"""Audit what `apply` wrote: the structural promises of a generated file, checked from its text and by importing it.

- `bad_keys(source, new_source, path)`: every hint-only autotune the rewrite added must be keyed on integer size
  parameters only (a tensor in a key re-tunes for every new tensor and keeps it alive), and must never wrap a
  kernel that already has an autotuner of its own. Read from the syntax trees; nothing runs.
- `import_check(items, gate)`: imports each generated file in the original's place (a package module by its
  dotted name) in a subprocess under the interpreter with the tool's stand-ins, with the TileIR code on
  (``gate="1"``) or off (``"0"``), and reports import errors and kernel objects with two autotuners in their chain.

`tests/test_generated_imports.py` holds every rewrite of liger-kernel, the examples and the package fixtures to
these; `benchmarks/apply_corpus.py` counts them over any folder of kernel files.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from typing import Any

HINT_AUTOTUNE = "_tileiropt_hint_autotune"


def autotuned(source: str) -> set[str]:
    """Kernels decorated with an autotuner: Triton's, or any decorator call taking ``configs=``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and (
                        "autotune" in ast.unparse(decorator.func)
                        or any(k.arg == "configs" for k in decorator.keywords)):
                    found.add(node.name)
    return found


def hint_autotunes(new_source: str) -> list[tuple[str, list[str]]]:
    """(kernel, key) of every hint-only autotune in a generated file."""
    found = []
    for node in ast.walk(ast.parse(new_source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == HINT_AUTOTUNE:
            kernel = ast.unparse(node.args[0]).removesuffix("_tileir")
            keys = [ast.literal_eval(k.value) for k in node.keywords if k.arg == "key"]
            found.append((kernel, list(keys[0]) if keys else []))
    return found


def bad_keys(source: str, new_source: str, path: str) -> list[str]:
    """What breaks the promises, one line each (empty when none): a key naming a pointer or a non-size
    parameter, an empty key, a hint autotune around a kernel that has its own autotuner."""
    from tileiropt.analysis.classify import classify_source

    records = {r.kernel: r for r in classify_source(source, path, rules=[]).kernels}
    tuned = autotuned(source)
    problems = []
    for kernel, key in hint_autotunes(new_source):
        record = records.get(kernel)
        if record is None:
            problems.append(f"{path}: {kernel}: hint autotune of an unknown kernel")
            continue
        if not key:
            problems.append(f"{path}: {kernel}: hint autotune with no key")
        pointers = sorted(set(key) & set(record.pointer_params))
        if pointers:
            problems.append(f"{path}: {kernel}: keyed on pointer(s) {pointers}")
        others = sorted(set(key) - set(record.size_params) - set(pointers))
        if others:
            problems.append(f"{path}: {kernel}: keyed on non-size parameter(s) {others}")
        if kernel in tuned:
            problems.append(f"{path}: {kernel}: a second autotuner around its own")
    return problems


_IMPORTER = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from tileiropt.runtime.stand_ins import install_interpreter_device, skip_module_benchmarks
install_interpreter_device(); skip_module_benchmarks()
from tileiropt.runtime import stand_ins
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
        extra = stand_ins.raised_only_in(item["generated"], item["original"])
        if extra:
            row["error"] = "a top-level call raised only in the generated file: " + "; ".join(w for w, _ in extra)[:300]
    except BaseException as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    results.append(row)
print(json.dumps(results))
"""


def import_check(items: list[dict[str, Any]], gate: str, timeout: float = 600) -> list[dict[str, Any]]:
    """Per item (``generated``, ``original``, ``module``: dotted name or None): ``original_fails`` when the
    original itself does not import here, else ``error`` (the generated file's import failed) or ``twice``
    (kernel objects with two autotuners). Raises RuntimeError when the importer itself fails."""
    env = {**os.environ, "TILEIROPT_FORCE_TILEIR": gate, "TRITON_INTERPRET": "1"}
    payload = json.dumps([{k: item[k] for k in ("generated", "original", "module")} for item in items])
    done = subprocess.run([sys.executable, "-c", _IMPORTER], input=payload, capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"the import check failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
