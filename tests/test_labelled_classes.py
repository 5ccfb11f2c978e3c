"""Classification accuracy on a hand-labelled set: liger-kernel, Triton's tutorials and the examples.

The labels (tests/data/kernel_classes.toml) were written by reading each kernel's body, before the
classifier was run on it; only names and classes are stored, no kernel code. The set present on this
machine is classified at syntax level (the IR check decides findings, never the class), every labelled
kernel must be found, and at least 95% must get their label. docs/classification.md has the counts,
the confusion and what makes each remaining miss.

Parts: liger-kernel (a dev dependency) runs wherever it is installed; the tutorials run where a copy of
them sits in `.tut/` at the repository root (git-ignored, not shipped) or in $TILEIROPT_TUTORIALS; the
examples always run.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from tileiropt.classify.classify import CLASSES, classify_paths

from shared import ROOT

REPO = ROOT
LABELS_FILE = Path(__file__).parent / "data" / "kernel_classes.toml"
TARGET_ACCURACY = 0.95


def _labels() -> list[dict[str, str]]:
    with LABELS_FILE.open("rb") as handle:
        return tomllib.load(handle)["kernel"]


def _liger_root() -> Path | None:
    """The folder that holds the installed `liger_kernel` package (found without importing it: no torch)."""
    spec = importlib.util.find_spec("liger_kernel")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent.parent


def _tutorials_root() -> Path | None:
    folder = Path(os.environ.get("TILEIROPT_TUTORIALS") or REPO / ".tut")
    return folder if folder.is_dir() and any(folder.glob("0*.py")) else None


def _resolve(file: str) -> Path | None:
    """Where a labelled file lives on this machine; None when its source is absent."""
    source, _, rest = file.partition("/")
    if source == "liger_kernel":
        root = _liger_root()
        return root / file if root else None
    if source == "tutorials":
        root = _tutorials_root()
        return root / rest if root else None
    if source == "examples":
        return REPO / file
    raise AssertionError(f"unknown source in {LABELS_FILE.name}: {file}")


def _source(file: str) -> str:
    return file.split("/", 1)[0]


@pytest.fixture(scope="module")
def predicted() -> dict[tuple[str, str], str]:
    """(file, kernel) -> class for every file of the labelled set present here."""
    files = sorted({entry["file"] for entry in _labels() if _resolve(entry["file"]) is not None})
    paths = {str(_resolve(file)): file for file in files}
    result: dict[tuple[str, str], str] = {}
    for file_result in classify_paths(list(paths), ir=False):
        file = paths[file_result.file]
        for record in file_result.kernels:
            result[(file, record.kernel)] = record.kernel_class
    return result


def test_labels_are_well_formed() -> None:
    entries = _labels()
    keys = [(e["file"], e["kernel"]) for e in entries]
    assert len(keys) == len(set(keys)), "a kernel is labelled twice"
    assert {e["class"] for e in entries} <= set(CLASSES)
    assert {_source(e["file"]) for e in entries} == {"liger_kernel", "tutorials", "examples"}
    assert all(set(e) <= {"file", "kernel", "class", "why"} for e in entries)


@pytest.mark.parametrize("source", ["liger_kernel", "tutorials", "examples"])
def test_every_labelled_kernel_is_found(predicted, source: str) -> None:
    entries = [e for e in _labels() if _source(e["file"]) == source]
    if _resolve(entries[0]["file"]) is None:
        reason = {"liger_kernel": "liger-kernel is not installed (pip install -e .[dev])",
                  "tutorials": "Triton's tutorials are not in .tut/ (nor in $TILEIROPT_TUTORIALS)"}[source]
        pytest.skip(reason)
    missing = [(e["file"], e["kernel"]) for e in entries if (e["file"], e["kernel"]) not in predicted]
    assert missing == []
    # and every JIT function of those files is labelled: a new kernel in a labelled file is not left out
    files = {e["file"] for e in entries}
    labelled = {(e["file"], e["kernel"]) for e in entries}
    unlabelled = sorted(key for key in predicted if key[0] in files and key not in labelled)
    assert unlabelled == []


def test_accuracy_on_the_labelled_set(predicted) -> None:
    present = [e for e in _labels() if (e["file"], e["kernel"]) in predicted]
    assert present, "no labelled kernel present"
    misses = [e for e in present if predicted[(e["file"], e["kernel"])] != e["class"]]
    accuracy = 1 - len(misses) / len(present)
    confusion = Counter(f"{e['class']}->{predicted[(e['file'], e['kernel'])]}" for e in misses)
    detail = "\n".join(f"  {e['file']}::{e['kernel']}: labelled {e['class']}, classified "
                       f"{predicted[(e['file'], e['kernel'])]} ({e.get('why', '')})" for e in misses)
    assert accuracy >= TARGET_ACCURACY, (
        f"accuracy {accuracy:.3f} ({len(present) - len(misses)}/{len(present)}) below {TARGET_ACCURACY}; "
        f"confusion {dict(confusion)}; misses:\n{detail}")
