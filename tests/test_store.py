"""The artifact store: each record type names its file and reads itself back; a record is reused only for the same
inputs and when it reads as its type; saving a record whose results went to a journal removes that journal."""

from __future__ import annotations

import json
from pathlib import Path

from tileiropt.bench.records import BenchRun
from tileiropt.contract.phase_records import ClassifyRecord
from tileiropt.contract.store import JOURNAL_MARK, Store, journal_path
from tileiropt.validate.records import ValidateRun, ValidationRecord

DOCUMENT = {"schema_version": 1, "release": None, "kernels": [], "files": [], "summary": {}, "inputs": "abc"}


def test_a_record_is_saved_under_its_types_file_and_loaded_back(tmp_path: Path) -> None:
    store = Store(tmp_path)
    run = ValidateRun(records=[ValidationRecord("k", "original", "interpret", "c", "pass")], backends=["interpret"])
    assert store.save(ValidateRun, run) == tmp_path / "validate.json"
    loaded = store.load(ValidateRun)
    assert loaded is not None and [r.kernel for r in loaded.records] == ["k"]
    assert store.load(ClassifyRecord) is None  # never saved
    (tmp_path / "classify.json").write_text("{not json")
    assert store.load(ClassifyRecord) is None and store.document(ClassifyRecord) is None


def test_a_record_is_reused_only_for_the_same_inputs_and_shape(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.save(ClassifyRecord, DOCUMENT)
    assert store.reuse(ClassifyRecord, "abc") == json.loads((tmp_path / "classify.json").read_text())
    assert store.reuse(ClassifyRecord, "other") is None
    store.save(ClassifyRecord, {**DOCUMENT, "files": "none"})  # another shape: never trusted
    assert store.reuse(ClassifyRecord, "abc") is None


def test_saving_supersedes_the_journal_of_what_finished(tmp_path: Path) -> None:
    journal = journal_path(tmp_path, "validate")
    journal.write_text(json.dumps({"journal": JOURNAL_MARK}) + "\n")
    foreign = journal_path(tmp_path, "bench")
    foreign.write_text("a file of the user's\n")  # not the tool's journal: kept
    Store(tmp_path).save(ValidateRun, ValidateRun(records=[], backends=[]))
    Store(tmp_path).save(BenchRun, BenchRun(rows=[]))
    assert not journal.exists() and foreign.read_text() == "a file of the user's\n"
