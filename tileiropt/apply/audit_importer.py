"""The subprocess of `audit.import_check`: `python -m tileiropt.apply.audit_importer`, under the
Triton interpreter (the parent sets TRITON_INTERPRET=1, which Triton reads at import) with the tool's
stand-ins, TileIR code on or off as the parent's TILEIROPT_FORCE_TILEIR says.

Reads a JSON list of items (``generated``, ``original``, ``module``: dotted name or None) on stdin;
imports each original, then its generated file in the original's place; prints one JSON list, a row
per item: ``original_fails``, or ``twice`` (kernel objects with two autotuners in their chain) and
``error`` when the generated file's import failed or raised where the original did not.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from triton.runtime import Autotuner

from tileiropt.harness import stand_ins
from tileiropt.harness.autotuners import chain, kernel_objects
from tileiropt.harness.gate import FORCE_ENV
from tileiropt.harness.loading import load_kernel_module
from tileiropt.harness.tileir_surface import force_tileir_code


def check_item(item: dict[str, Any]) -> dict[str, Any]:
    """The row of one item: its original's import failure, or the generated file's problems."""
    row: dict[str, Any] = {"original": item["original"]}
    try:
        load_kernel_module(item["original"], item["original"], item["module"], "x")
    except BaseException as exc:  # any failure of the user's module is a finding
        row["original_fails"] = f"{type(exc).__name__}: {exc}"[:200]
        return row
    try:
        module = load_kernel_module(item["generated"], item["original"], item["module"], "x")
        row["twice"] = [name for name, obj in kernel_objects(module).items()
                        if sum(isinstance(o, Autotuner) for o in chain(obj)) > 1]
        extra = stand_ins.raised_only_in(item["generated"], item["original"])
        if extra:
            row["error"] = ("a top-level call raised only in the generated file: "
                            + "; ".join(what for what, _ in extra)[:300])
    except BaseException as exc:  # any failure of the generated module is a finding
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return row


def main() -> None:
    """Check every item read from stdin; print the rows as one JSON line."""
    stand_ins.install_interpreter_device()
    stand_ins.skip_module_benchmarks()
    if os.environ.get(FORCE_ENV) == "1":
        force_tileir_code()
    items = json.loads(sys.stdin.read())
    print(json.dumps([check_item(item) for item in items]))


if __name__ == "__main__":
    main()
