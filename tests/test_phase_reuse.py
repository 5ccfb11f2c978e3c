"""An unchanged re-run reuses classify.json and apply.json; a changed kernel file, release or optimized file,
or a record of another shape, makes the phase run again."""

from __future__ import annotations

import json
from pathlib import Path

from tileiropt.apply.phase import apply_inputs, earlier_apply
from tileiropt.classify.phase import classify_inputs
from tileiropt.contract.phase_records import ClassifyRecord
from tileiropt.contract.store import Store
from tileiropt.harness.provenance import file_digest


def earlier_classify(folder: Path, inputs: str) -> dict | None:
    return Store(folder).reuse(ClassifyRecord, inputs)


def test_classify_is_reused_only_for_the_same_files_release_and_dtypes(tmp_path: Path) -> None:
    kernel = tmp_path / "k.py"
    kernel.write_text("import triton\n")
    inputs = classify_inputs([kernel], "13.4", ["fp16"])
    document = {"schema_version": 1, "release": None, "kernels": [],
                "files": [{"file": str(kernel), "status": "pass", "message": None, "kernels": 0}], "summary": {},
                "inputs": inputs}
    (tmp_path / "classify.json").write_text(json.dumps(document))
    assert earlier_classify(tmp_path, inputs) == document
    assert classify_inputs([kernel], "13.5", ["fp16"]) != inputs
    assert classify_inputs([kernel], "13.4", ["bf16"]) != inputs
    kernel.write_text("import triton  # edited\n")
    assert earlier_classify(tmp_path, classify_inputs([kernel], "13.4", ["fp16"])) is None
    (tmp_path / "classify.json").write_text(json.dumps({**document, "files": [{"status": "pass"}]}))
    assert earlier_classify(tmp_path, inputs) is None  # a record of another shape is never trusted
    (tmp_path / "classify.json").write_text(json.dumps({**document, "kernels": {}}))
    assert earlier_classify(tmp_path, inputs) is None


def test_apply_is_reused_only_while_its_outputs_are_as_written(tmp_path: Path) -> None:
    kernel, output = tmp_path / "k.py", tmp_path / "k_tileir.py"
    kernel.write_text("import triton\n")
    output.write_text("# rewritten\n")
    inputs = apply_inputs([(kernel, output)], 16, "13.4")
    written = {"file": str(kernel), "status": "pass", "output": str(output), "changed": True,
               "already_prepared": False, "written": [str(output)], "kernels": []}
    document = {"schema_version": 1, "dry_run": False, "release": None, "files": [written], "errors": [],
                "inputs": inputs, "outputs": {str(output): file_digest(output)}}
    (tmp_path / "apply.json").write_text(json.dumps(document))
    assert earlier_apply(Store(tmp_path), inputs) == document
    assert apply_inputs([(kernel, output)], 8, "13.4") != inputs  # another config cap
    output.write_text("# edited by hand\n")
    assert earlier_apply(Store(tmp_path), inputs) is None  # an optimized file changed since: written again
    output.unlink()
    assert earlier_apply(Store(tmp_path), inputs) is None  # or set aside
    (tmp_path / "apply.json").write_text(json.dumps({**document, "dry_run": True}))
    assert earlier_apply(Store(tmp_path), inputs) is None  # a dry run wrote nothing
    (tmp_path / "apply.json").write_text(json.dumps({**document, "files": [{**written, "changed": "yes"}]}))
    assert earlier_apply(Store(tmp_path), inputs) is None  # a record of another shape
