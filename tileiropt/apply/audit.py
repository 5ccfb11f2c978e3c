"""Audit what `apply` wrote: the structural promises of a generated file, checked from its text and by importing it.

- `bad_keys(source, new_source, path)`: every hint-only autotune the rewrite added must be keyed on integer size
  parameters only (a tensor in a key re-tunes for every new tensor and keeps it alive), and must never wrap a
  kernel that already has an autotuner of its own. Read from the syntax trees; nothing runs.
- `import_check(items, gate)`: imports each generated file in the original's place (a package module by its
  dotted name) in a subprocess (`audit_importer`) under the interpreter with the tool's stand-ins, with the
  TileIR code on (``gate="1"``) or off (``"0"``), and reports import errors and kernel objects with two
  autotuners in their chain.

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

from tileiropt.classify.classify import classify_source
from tileiropt.harness.gate import FORCE_ENV, twinned

IMPORTER = "tileiropt.apply.audit_importer"  # the subprocess of import_check


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
    """(kernel, key) of every hint-only autotune in a generated file: `triton.autotune(configs=..., key=...)(kernel)`
    called as an expression (a decorator is the file's own)."""
    found = []
    for node in ast.walk(ast.parse(new_source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and len(node.args) == 1 and isinstance(
                node.args[0], ast.Name) and ast.unparse(node.func.func).endswith("autotune"):
            kernel = twinned(node.args[0].id)
            keys = [ast.literal_eval(k.value) for k in node.func.keywords if k.arg == "key"]
            found.append((kernel, list(keys[0]) if keys else []))
    return found


def bad_keys(source: str, new_source: str, path: str) -> list[str]:
    """What breaks the promises, one line each (empty when none): a key naming a pointer or a non-size
    parameter, an empty key, a hint autotune around a kernel that has its own autotuner."""
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


def import_check(items: list[dict[str, Any]], gate: str, timeout: float = 600) -> list[dict[str, Any]]:
    """Per item (``generated``, ``original``, ``module``: dotted name or None): ``original_fails`` when the
    original itself does not import here, else ``error`` (the generated file's import failed) or ``twice``
    (kernel objects with two autotuners). Raises RuntimeError when the importer itself fails."""
    env = {**os.environ, FORCE_ENV: gate, "TRITON_INTERPRET": "1"}
    env.pop("ENABLE_TILE", None)
    payload = json.dumps([{k: item[k] for k in ("generated", "original", "module")} for item in items])
    done = subprocess.run([sys.executable, "-m", IMPORTER], input=payload, capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"the import check failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
