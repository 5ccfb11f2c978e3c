"""classify.json and apply.json as typed records: written with the same keys in the same order, read back with
every field's JSON type checked, a damaged record refused in one line (and named by the report)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tileiropt.contract.phase_records import (
    ApplyKernel,
    Change,
    apply_from_dict,
    apply_record,
    classify_from_dict,
    record_dict,
)
from tileiropt.output import save_record_file
from tileiropt.report.artifacts import APPLY_FILE, CLASSIFY_FILE, load_artifacts


def _result(**overrides: object) -> SimpleNamespace:
    kernel = ApplyKernel("k", 12, "dot", twin="k_tileir", configs_added=8,
                         changes=[Change(20, "TileIR configs added", "dot kernel")],
                         skipped=["TMA left alone: masked loads"])
    fields = {"path": "/p/k.py", "output": "/p/k_tileir.py", "changed": True, "already_prepared": False,
              "written": ["/p/k_tileir.py"], "kernels": [kernel],
              "host": [Change(4, '`target.backend in ("cuda", "tileir")`', "nvtriton's backend is tileir")]}
    return SimpleNamespace(**{**fields, **overrides})


def _document() -> dict:
    errors = [SimpleNamespace(path="/p/bad.py", error="cannot parse")]
    record = apply_record([_result()], errors, dry_run=False, release={"version": "13.4", "origin": "newest"})
    return record_dict(record)


def test_apply_record_is_written_as_documented() -> None:
    document = _document()
    assert list(document) == ["schema_version", "dry_run", "release", "files", "errors"]
    (written,) = document["files"]
    assert list(written) == ["file", "status", "output", "changed", "already_prepared", "written", "kernels",
                            "host_changes"]
    assert written["kernels"][0] == {"kernel": "k", "line": 12, "class": "dot", "twin": "k_tileir",
                                     "configs_added": 8, "configs_added_at_most": None,
                                     "changes": [{"line": 20, "what": "TileIR configs added", "why": "dot kernel"}],
                                     "skipped": ["TMA left alone: masked loads"], "hint_through": []}
    assert written["host_changes"] == [{"line": 4, "what": '`target.backend in ("cuda", "tileir")`',
                                        "why": "nvtriton's backend is tileir"}]
    assert document["errors"] == [{"file": "/p/bad.py", "status": "error", "error": "cannot parse"}]
    prepared = record_dict(apply_record([_result(already_prepared=True, changed=False)], [], dry_run=True,
                                        release=None))
    assert prepared["files"][0]["status"] == "not-run"


def test_apply_record_reads_back_typed_and_ignores_the_keys_run_adds() -> None:
    document = {**_document(), "inputs": "key", "outputs": {"/p/k_tileir.py": "sha"}}
    record = apply_from_dict(json.loads(json.dumps(document)))
    kernel = record.files[0].kernels[0]
    assert isinstance(kernel, ApplyKernel) and kernel.kernel_class == "dot" and kernel.changes[0].line == 20
    assert record_dict(record) == _document()


@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: d["files"][0].update(changed="yes"), "ApplyFile.changed must be true or false, got str"),
    (lambda d: d["files"][0]["kernels"][0].pop("class"), "kernel_class"),
    (lambda d: d["files"][0]["kernels"][0]["changes"][0].update(line="20"), "Change.line must be a number"),
    (lambda d: d.update(files={}), "ApplyRecord.files must be a list"),
    (lambda d: d["errors"].append(7), "ApplyError must be an object, got int"),
])
def test_a_damaged_apply_record_is_refused_naming_the_field(damage, message: str) -> None:
    document = _document()
    damage(document)
    with pytest.raises(TypeError, match=message):
        apply_from_dict(document)


def test_classify_record_keeps_its_kernels_as_objects() -> None:
    document = {"schema_version": 1, "release": None, "summary": {"kernels": 1},
                "kernels": [{"kernel": "k", "class": "dot", "findings": []}],
                "files": [{"file": "/p/k.py", "status": "pass", "message": None, "kernels": 1}]}
    record = classify_from_dict(document)
    assert record.files[0].kernels == 1 and record.kernels[0]["class"] == "dot"
    assert record_dict(record) == document
    with pytest.raises(TypeError, match="ClassifyFile.message must be a string or null"):
        classify_from_dict({**document, "files": [{**document["files"][0], "message": 3}]})


def test_the_report_names_a_damaged_record(tmp_path: Path) -> None:
    save_record_file({**_document(), "files": "none"}, tmp_path, APPLY_FILE)
    save_record_file({"schema_version": 1, "release": None, "kernels": [], "files": [], "summary": {}}, tmp_path,
                     CLASSIFY_FILE)
    found = load_artifacts(tmp_path)
    assert found.apply is None and found.classify is not None
    assert found.problems[APPLY_FILE] == "unreadable record: TypeError: ApplyRecord.files must be a list, got str"
